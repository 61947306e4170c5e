"""The served documents: cards, pages, pools, story coverage and aliases; their canonical bytes and validation.

Reads ranked stories (:mod:`transforms.editions.cycle.run`); writes nothing (PublishSnapshots stores the bytes).

- Canonical JSON: sorted keys, no whitespace, UTF-8, floats rounded to 6 significant digits; times are RFC 3339
  UTC strings derived from event times only (``generated_at`` is the cycle time, never the wall clock), so a
  backfill run twice over the same input writes byte-identical objects.
- Versions: a page's, pool's and aliases map's version is the cycle's minute number (ms since epoch // 60,000):
  deterministic, increasing, and the same in backfill and streaming; a replayed cycle rewrites the same path with
  the same bytes (PublishSnapshots treats that as done). A story coverage object's version is the story's
  data-defined version (see :mod:`transforms.editions.book.storybook`).
- The 64-d pool vector is a fixed Rademacher random projection of the story centroid (entries +-1/8 drawn from
  sha256 in counter mode, keyed by the input dimension), L2-normalised and rounded to 4 decimals. Johnson-
  Lindenstrauss keeps cosines roughly (+-0.1 at 64 d) which is all For you needs to match a reader's 64-d interest
  vector (built from the same pool vectors); hashing instead of a seeded RNG keeps it identical across numpy
  versions and machines.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from datetime import UTC, datetime

import jsonschema
import numpy as np
import orjson
from referencing import Registry, Resource

from schemas.pages import PAGES, PageError, schema, validate_page
from transforms.common import DAY_MS

PROJECTION_DIM = 64
PAGE_SCHEMA = "newsroom.edition_page/v1"
POOL_SCHEMA = "newsroom.candidate_pool/v1"
COVERAGE_SCHEMA = "newsroom.story_coverage/v1"
ALIASES_SCHEMA = "newsroom.aliases/v1"


@functools.lru_cache(maxsize=4096)
def _day(day: int) -> str:
    return datetime.fromtimestamp(day * 86400, tz=UTC).strftime("%Y-%m-%dT")


def iso(ms) -> str:
    """RFC 3339 UTC with millisecond precision when there is any (strftime once per day, then arithmetic; the last
    65,536 answers remembered: a rank cycle asks for the same story and article times in every edition)."""
    return _iso(int(ms))


@functools.lru_cache(maxsize=65536)
def _iso(ms: int) -> str:
    day, rest = divmod(ms, DAY_MS)
    sec, milli = divmod(rest, 1000)
    h, sec = divmod(sec, 3600)
    m, sec = divmod(sec, 60)
    if milli:
        return f"{_day(day)}{h:02d}:{m:02d}:{sec:02d}.{milli:03d}Z"
    return f"{_day(day)}{h:02d}:{m:02d}:{sec:02d}Z"


def round_sig(x: float, digits: int = 6) -> float:
    return float(f"{float(x):.{digits}g}")


def round_sigs(values: list, digits: int = 6) -> list[float]:
    """:func:`round_sig` of every value (one call for a document's scores, not one per entry: the same floats)."""
    spec = f".{digits}g"
    return [float(format(float(x), spec)) for x in values]


def canonical_bytes(doc: dict) -> bytes:
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


# document level (pool_version: topic pages; concentration: the pool's monitoring figures, which move every minute
# as the day's impression counts grow -- not what a reader sees, so alone they do not make a new pool version)
VOLATILE = ("version", "cycle", "generated_at", "pool_version", "concentration")
VOLATILE_ENTRY = ("score",)  # story level (ranks are kept: an order change is a change)


def content_digest(doc: dict) -> str:
    """Digest of what a reader sees, without version, cycle times and scores: an unchanged page is not rewritten.

    Compared in-process only (never stored): the digests of two documents are equal exactly when their JSON
    values are. The text hashed is orjson's (sorted keys; ~4x faster than the canonical bytes, and a change-only
    replay digests ~80,000 documents), or the canonical one where orjson cannot write the value (a key that is not
    a string, an integer over 64 bits). Either text is a JSON text of the value, so equal texts mean equal values
    whichever way each was written. orjson's is one only while the value holds no NaN or infinity, which orjson
    writes as ``null`` where the canonical bytes refuse them (ValueError); so a text holding ``null`` (nearly every
    page: ``image_url``) is hashed only once the digested part is proven free of them: written canonically here,
    or by the whole document's canonical bytes (:func:`digest_and_bytes`)."""
    top, text, unproven = _digest_text(doc)
    if unproven:
        canonical_bytes(top)  # the proof only: raises ValueError for a NaN or infinity orjson wrote as null
    return hashlib.sha256(text).hexdigest()


def digest_and_bytes(doc: dict) -> tuple[str, bytes | None]:
    """(:func:`content_digest` of ``doc``, its :func:`canonical_bytes` or None), the document written canonically
    once for both: when orjson's text of what is digested holds ``null``, the digest needs the proof that no NaN
    or infinity hides there, and the canonical bytes of the whole document are that proof as well as what the
    publisher stores (SnapshotPublisher takes them with the item: :func:`validate`'s ``canonical``). None when no
    proof was needed (the publisher writes the bytes if it stores the document), or when the canonical bytes
    refuse the document: then the proof is content_digest's own, which raises as it does (a NaN score, which the
    digest leaves out, does not stop the digest; the publisher refuses it if it writes the document)."""
    top, text, unproven = _digest_text(doc)
    data = None
    if unproven:
        try:
            data = canonical_bytes(doc)
        except (TypeError, ValueError):
            canonical_bytes(top)  # the proof of the digested part alone, as content_digest makes it
    return hashlib.sha256(text).hexdigest(), data


def _digest_text(doc: dict) -> tuple[dict, bytes, bool]:
    """(what :func:`content_digest` hashes as a value, its JSON text, whether that text still needs the proof that
    no ``null`` in it stands for a NaN or infinity: orjson's text holding ``null``)."""
    top = {k: v for k, v in doc.items() if k not in VOLATILE and k != "stories"}
    if "stories" in doc:
        top["stories"] = [{k: v for k, v in e.items() if k not in VOLATILE_ENTRY} for e in doc["stories"]]
    try:
        text = orjson.dumps(top, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError is one: the canonical text, which raises where JSON cannot write it
        return top, canonical_bytes(top), False
    return top, text, b"null" in text


@functools.lru_cache(maxsize=8)
def projection_matrix(dim_in: int, dim_out: int = PROJECTION_DIM) -> np.ndarray:
    need = dim_in * dim_out
    chunks, counter = [], 0
    while sum(len(c) for c in chunks) * 8 < need:
        chunks.append(hashlib.sha256(f"newsroom-projection/{dim_in}x{dim_out}/{counter}".encode()).digest())
        counter += 1
    bits = np.unpackbits(np.frombuffer(b"".join(chunks), np.uint8))[:need]
    return (bits.astype(np.float64) * 2.0 - 1.0).reshape(dim_in, dim_out) / np.sqrt(dim_out)


def project(centroids: np.ndarray) -> np.ndarray:
    """(k, d) centroids -> (k, 64) unit vectors rounded to 4 decimals."""
    c = np.asarray(centroids, np.float64)
    if c.ndim != 2 or c.shape[0] == 0:
        return np.zeros((0, PROJECTION_DIM))
    v = c @ projection_matrix(c.shape[1])
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return np.round(v / np.where(n > 0, n, 1.0), 4)


# ------------------------------------------------------------------------------------------------- validation
class SnapshotRejected(ValueError):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@functools.cache
def _pages_registry() -> Registry:
    """Every page schema by its ``$id``: what the validators below resolve their references against."""
    registry = Registry()
    for name in PAGES:
        d = schema(name)
        registry = registry.with_resource(d["$id"], Resource.from_contents(d))
    return registry


@functools.cache
def _entry_validator(kind: str):
    """A validator of one element of ``kind``'s ``stories`` array: the schema's own items subschema, by $ref."""
    registry = _pages_registry()
    root = schema(kind)
    ref = {"$ref": f"{root['$id']}#/properties/stories/items"}
    cls = jsonschema.validators.validator_for(root)
    return cls(ref, registry=registry, format_checker=cls.FORMAT_CHECKER)


_TOP_KEYWORDS = {
    "$schema",
    "$id",
    "$defs",
    "title",
    "description",
    "type",
    "required",
    "additionalProperties",
    "properties",
}
_VALID_PROPERTIES: dict[str, set] = {}  # kind -> (property, JSON value) pairs already found valid (bounded below)
# (kind, property, JSON value) of the values that change every minute (``VOLATILE``) found valid: a minute's version
# and cycle times are the same in every document of every edition that minute; a small set, emptied when full
_VALID_VOLATILE: set = set()
_VOLATILE_LIMIT = 4096


@functools.cache
def _property_validators(kind: str) -> dict | None:
    """Per top-level property of ``kind``'s schema, a validator of its subschema; None unless the top level is an
    object schema made of properties only (``type``, ``required``, ``additionalProperties: false``, annotations):
    then a document is valid exactly when each property is valid against its subschema, every required one is
    there and no other is."""
    root = schema(kind)
    if set(root) - _TOP_KEYWORDS or root.get("type") != "object" or root.get("additionalProperties") is not False:
        return None
    registry = _pages_registry()
    cls = jsonschema.validators.validator_for(root)
    out = {}
    for key, sub in root.get("properties", {}).items():
        out[key] = _subschema_validator(cls, root, f"#/properties/{key}", sub, registry)
    return out


_OBJECT_KEYWORDS = {"title", "description", "type", "required", "additionalProperties", "properties"}


@functools.cache
def _nested_validators(kind: str) -> dict:
    """Per top-level property of ``kind`` whose subschema (local references inlined) is itself an object made of
    properties only, as :func:`_property_validators` asks of the top level (the pool's ``concentration``): a
    validator per property of it and its required properties. Such a value is valid exactly when it is an object,
    every required property is there, no other is and each is valid; so it is checked property by property
    (:func:`_object_valid`), and a value of which one figure moved every minute validates that figure alone, not
    the object (~80 us a pool)."""
    if _property_validators(kind) is None:
        return {}
    root = schema(kind)
    registry = _pages_registry()
    cls = jsonschema.validators.validator_for(root)
    out = {}
    for key, sub in root.get("properties", {}).items():
        sub = _inlined(sub, root.get("$defs", {}))
        if not isinstance(sub, dict) or set(sub) - _OBJECT_KEYWORDS or sub.get("type") != "object":
            continue
        props, required = sub.get("properties"), sub.get("required", [])
        if sub.get("additionalProperties") is not False or not isinstance(props, dict) or not props:
            continue
        if not isinstance(required, list) or any(not isinstance(r, str) for r in required):
            continue
        pointer = f"#/properties/{key}/properties"
        validators = {k: _subschema_validator(cls, root, f"{pointer}/{k}", v, registry) for k, v in props.items()}
        out[key] = (validators, tuple(required))
    return out


_DATA_KEYWORDS = ("const", "enum", "default", "examples")  # their values are JSON data, not subschemas


def _inlined(subschema, defs: dict, depth: int = 0):
    """``subschema`` with each reference ``{"$ref": "#/$defs/NAME"}`` (alone in its object, where it means exactly
    the schema it names) replaced by that schema, inlined in turn; None when any other ``$`` keyword is left ($id,
    $anchor, a remote or recursive reference...): then the subschema is validated through a reference instead."""
    if isinstance(subschema, list):
        out = [_inlined(v, defs, depth) for v in subschema]
        return None if any(v is None for v in out) else out
    if not isinstance(subschema, dict):
        return subschema
    ref = subschema.get("$ref")
    if set(subschema) == {"$ref"} and isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref[len("#/$defs/") :])
        return _inlined(target, defs, depth + 1) if isinstance(target, dict) and depth < 8 else None
    out = {}
    for key, value in subschema.items():
        if key.startswith("$"):
            return None
        if key in _DATA_KEYWORDS or key == "properties" and not isinstance(value, dict):
            out[key] = value
        elif key == "properties":
            props = {name: _inlined(v, defs, depth) for name, v in value.items()}
            if any(v is None for v in props.values()):
                return None
            out[key] = props
        else:
            out[key] = _inlined(value, defs, depth)
            if out[key] is None and value is not None:
                return None
    return out


def _subschema_validator(cls, root: dict, pointer: str, subschema, registry):
    """A validator of the subschema of ``root`` at ``pointer`` (``#/properties/x``): the subschema itself, its local
    references (``#/$defs/...``) inlined (:func:`_inlined`), when nothing else in it refers anywhere: it judges every
    value as the reference would, several times faster a call (a reference is resolved through the registry at
    every call); else a ``$ref`` to it."""
    inlined = _inlined(subschema, root.get("$defs", {}))
    if inlined is not None:
        return cls(inlined, format_checker=cls.FORMAT_CHECKER)
    return cls({"$ref": f"{root['$id']}{pointer}"}, registry=registry, format_checker=cls.FORMAT_CHECKER)


def _validate_top(kind: str, top: dict) -> None:
    """:func:`schemas.pages.validate_page` of a document's top level (its stories emptied), property by property
    (:func:`_property_validators`): a property's value found valid before is not validated again; what changes
    every minute (version, cycle times, concentration: ``VOLATILE``) is kept apart in a small set emptied when
    full (``_VALID_VOLATILE``: the minute's values recur in every document of the minute). Any error: the whole
    document is validated, so the message is validate_page's own."""
    validators = _property_validators(kind)
    if validators is None or not isinstance(top, dict):
        validate_page(kind, top)
        return
    required = schema_required(kind)
    if any(k not in top for k in required) or any(k not in validators for k in top):
        validate_page(kind, top)
        return
    if not _top_valid(kind, top, validators):
        validate_page(kind, top)
        raise PageError(f"{kind} invalid at its top level")  # not reached: validate_page raised


@functools.cache
def schema_required(kind: str) -> tuple:
    """The required top-level properties of ``kind``'s schema."""
    return tuple(schema(kind).get("required", ()))


@functools.cache
def _stories_limit(kind: str) -> int | None:
    """``maxItems`` of ``kind``'s stories array (the schema file read once, not once per document)."""
    return schema(kind)["properties"]["stories"].get("maxItems")


_VALID_ENTRIES: dict[str, set] = {}  # kind -> keys of entries already found valid (bounded below)
_VALID_LIMIT = 400_000


def _entry_key(entry: dict) -> bytes:
    """An entry's key in ``_VALID_ENTRIES``: a JSON text of it without score and rank, sorted (orjson's; json's where
    orjson cannot write it, e.g. an integer over 64 bits). One key for the parsed and the as-stored checks, so an
    entry found valid by either is not validated again by the other. A stored document holds no NaN (its canonical
    bytes refuse it), so orjson's ``null`` for one never meets a key."""
    rest = dict(entry)
    rest.pop("score", None)
    rest.pop("rank", None)
    try:
        return orjson.dumps(rest, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(rest, sort_keys=True).encode()


def _validate_schema(kind: str, parsed: dict) -> None:
    """jsonschema validation of a stored document, as :func:`schemas.pages.validate_page` does, done in parts.

    A pool holds ~1,000 entries and changes mostly in its scores every minute; validating it whole costs ~0.4 s of
    CPU, ~70 pools a minute. So a document with a ``stories`` array is validated as its top level (with the array
    emptied) plus each entry against the schema's items subschema, and an entry whose content without its score
    and rank was valid before is not validated again; its score (a number) and rank (an integer >= 1) are checked
    here with the schema's constraints. ``maxItems`` of the array is checked too. Equivalent to validating the whole
    document (the schemas have no constraint spanning entries).
    """
    if "stories" not in parsed or not isinstance(parsed.get("stories"), list):
        validate_page(kind, parsed)
        return
    stories = parsed["stories"]
    _validate_top(kind, dict(parsed, stories=[]))
    limit = _stories_limit(kind)
    if limit is not None and len(stories) > limit:
        raise PageError(f"{kind} invalid at stories: {len(stories)} entries, more than {limit}")
    seen = _VALID_ENTRIES.setdefault(kind, set())
    if len(seen) > _VALID_LIMIT:
        seen.clear()
    validator = _entry_validator(kind)
    for i, entry in enumerate(stories):
        if not isinstance(entry, dict):
            raise PageError(f"{kind} invalid at stories/{i}: not an object")
        score, rank = entry.get("score"), entry.get("rank")
        if "score" in entry and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise PageError(f"{kind} invalid at stories/{i}/score: {score!r} is not of type 'number'")
        if "rank" in entry and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            raise PageError(f"{kind} invalid at stories/{i}/rank: {rank!r} is not an integer >= 1")
        key = _entry_key(entry)
        if key in seen:
            continue
        errors = sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path))
        if errors:
            err = errors[0]
            path = "/".join(str(p) for p in err.absolute_path)
            raise PageError(f"{kind} invalid at stories/{i}{'/' + path if path else ''}: {err.message}")
        seen.add(key)


def _valid_as_stored(kind: str, doc: dict) -> bool:
    """True when :func:`_validate_schema` of ``doc`` as stored (``json.loads(canonical_bytes(doc))``) would pass,
    proven without parsing the whole document: the same checks on the same memo keys, each value that was not
    found valid before validated as stored (``json.loads(json.dumps(value))``: JSON text determines the value).
    A pool stored at every change of its ~1,000 entries was parsed whole just to look its entries up in the memo.
    False when not proven (a value not valid, a type it does not expect): the caller validates in full, which
    raises the usual error."""
    validators, stories = _property_validators(kind), doc.get("stories")
    if validators is None or not isinstance(stories, (list, tuple)):
        return False
    top = dict(doc, stories=[])
    if any(k not in top for k in schema_required(kind)) or any(k not in validators for k in top):
        return False
    limit = _stories_limit(kind)
    if limit is not None and len(stories) > limit:
        return False
    try:
        return _top_valid(kind, top, validators) and _entries_valid(kind, stories)
    except (TypeError, ValueError):  # a key or value JSON cannot sort or spell: validated in full
        return False


_encode_str = json.encoder.encode_basestring_ascii  # json.dumps's own text of a string (ensure_ascii, its default)


def _json_text(value) -> str:
    """``json.dumps(value, sort_keys=True)``: the same text, without building an encoder for a plain string,
    integer, finite float, null or empty array (most top-level values: names, versions, times, the emptied stories;
    a pool's concentration figures), where json.dumps writes exactly these."""
    kind = type(value)
    if kind is str:
        return _encode_str(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if value is None:
        return "null"
    if (kind is list or kind is tuple) and not value:
        return "[]"
    return json.dumps(value, sort_keys=True)


def _top_valid(kind: str, top: dict, validators: dict) -> bool:
    """The property checks of ``top`` (a document's top level, stories emptied) as stored, on the memos of
    :func:`_validate_top` (which calls it on a parsed document): False at the first value not valid."""
    seen = _VALID_PROPERTIES.setdefault(kind, set())
    if len(seen) > _VALID_LIMIT:
        seen.clear()
    if len(_VALID_VOLATILE) > _VOLATILE_LIMIT:
        _VALID_VOLATILE.clear()
    nested = _nested_validators(kind)
    for key, value in top.items():
        memo = _VALID_VOLATILE if key in VOLATILE else seen
        parts = nested.get(key)
        if parts is not None and type(value) is dict and all(type(k) is str for k in value):
            if not _object_valid(kind, key, value, parts, memo):
                return False
            continue
        text = _json_text(value)
        item = (kind, key, text) if key in VOLATILE else (key, text)
        if item in memo:
            continue
        if not validators[key].is_valid(json.loads(text)):
            return False
        memo.add(item)
    return True


def _object_valid(kind: str, key: str, value: dict, parts: tuple, memo: set) -> bool:
    """The checks of top-level property ``key``'s object ``value`` (string keys: stored, the same keys) as stored,
    property by property (:func:`_nested_validators`): each required property there, none the schema does not
    name, each value found valid before (``memo``, by kind, property, its property and JSON text) or valid now.
    False at the first that is not: the caller validates in full."""
    validators, required = parts
    if any(k not in value for k in required) or any(k not in validators for k in value):
        return False
    for sub, v in value.items():
        text = _json_text(v)
        item = (kind, key, sub, text)
        if item in memo:
            continue
        if not validators[sub].is_valid(json.loads(text)):
            return False
        memo.add(item)
    return True


def _entries_valid(kind: str, stories) -> bool:
    """:func:`_validate_schema`'s checks of the entries as stored, on its memo of valid entries."""
    seen = _VALID_ENTRIES.setdefault(kind, set())
    if len(seen) > _VALID_LIMIT:
        seen.clear()
    validator = _entry_validator(kind)
    for entry in stories:
        if not isinstance(entry, dict):
            return False
        score, rank = entry.get("score"), entry.get("rank")
        if "score" in entry and (isinstance(score, bool) or not isinstance(score, (int, float))):
            return False
        if "rank" in entry and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            return False
        key = _entry_key(entry)
        if key in seen:
            continue
        if not _entry_properties_valid(kind, entry) and not validator.is_valid(json.loads(json.dumps(entry))):
            return False
        seen.add(key)
    return True


@functools.cache
def _entry_property_validators(kind: str) -> tuple[dict, tuple] | None:
    """Per property of ``kind``'s stories entries, a validator of its subschema, and the required properties; None
    unless the entry schema (the items subschema, or the ``$defs`` entry it refers to) is an object schema made of
    properties only, as :func:`_property_validators` asks of the top level."""
    root = schema(kind)
    items = root.get("properties", {}).get("stories", {}).get("items")
    pointer = "#/properties/stories/items"
    if isinstance(items, dict) and set(items) == {"$ref"} and str(items["$ref"]).startswith("#/$defs/"):
        name = items["$ref"][len("#/$defs/") :]
        items, pointer = root.get("$defs", {}).get(name), f"#/$defs/{name}"
    if not isinstance(items, dict) or set(items) - _TOP_KEYWORDS or items.get("type") != "object":
        return None
    if items.get("additionalProperties") is not False or "$ref" in items:
        return None
    registry = _pages_registry()
    cls = jsonschema.validators.validator_for(root)
    out = {
        key: _subschema_validator(cls, root, f"{pointer}/properties/{key}", sub, registry)
        for key, sub in items.get("properties", {}).items()
    }
    return out, tuple(items.get("required", ()))


_VALID_ENTRY_PROPERTIES: dict[str, set] = {}  # kind -> (property, JSON text) of entry values found valid (bounded)


def _entry_properties_valid(kind: str, entry: dict) -> bool:
    """True when ``entry`` as stored is proven valid property by property: every required property there, none the
    schema does not name, each value found valid before or valid now (as stored: through its JSON text). An entry
    new to the memo of whole entries (a story whose count or update time moved) mostly holds values seen before (its
    cards recur in every edition and minute), so only the new values are validated, not the whole entry (~0.7 ms).
    False when not proven: the caller validates the whole entry."""
    found = _entry_property_validators(kind)
    if found is None:
        return False
    validators, required = found
    if any(k not in entry for k in required) or any(k not in validators for k in entry):
        return False
    seen = _VALID_ENTRY_PROPERTIES.setdefault(kind, set())
    if len(seen) > _VALID_LIMIT:
        seen.clear()
    for key, value in entry.items():
        item = (key, _json_text(value))
        if item in seen:
            continue
        if not validators[key].is_valid(json.loads(item[1])):
            return False
        seen.add(item)
    return True


_REJECTED: dict[tuple, tuple[str, str]] = {}  # what documents were rejected for (:func:`validate`'s ``digest``)
_REJECTED_LIMIT = 100_000


def _volatile_valid(kind: str, doc: dict) -> bool:
    """Whether what ``content_digest`` leaves out of ``doc`` passes the schema: the top level's ``VOLATILE`` values
    (as stored: through JSON) and every entry's score (a finite number, as ``_validate_schema`` checks it). False
    when unsure (no per-property validators, an entry without a score): the caller validates in full."""
    validators = _property_validators(kind)
    stories = doc.get("stories", ())
    if validators is None or not isinstance(stories, (list, tuple)):
        return False
    for e in stories:
        score = e.get("score") if isinstance(e, dict) else None
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            return False
    for key in VOLATILE:
        if key not in doc:
            continue
        try:
            value = json.loads(json.dumps(doc[key], allow_nan=False))
        except (TypeError, ValueError):
            return False
        item = (kind, key, json.dumps(value, sort_keys=True))
        if item in _VALID_VOLATILE:
            continue
        if key not in validators or not validators[key].is_valid(value):
            return False
        _VALID_VOLATILE.add(item)
    return True


def validate(
    kind: str,
    doc: dict,
    previous_count: int | None = None,
    min_stories: int = 1,
    data: bytes | None = None,
    digest: str | None = None,
    canonical: bytes | None = None,
) -> bytes:
    """Raise :class:`SnapshotRejected` unless ``doc`` may go live; returns its canonical bytes (``data``,
    ``canonical`` or computed).

    The schema is checked on the JSON that is stored (``data``, the canonical bytes; computed when not given):
    documents hold tuples where JSON has arrays. Pages, topic pages and pools: at least ``min_stories`` stories, a
    representative (with a title and a URL) for every story, and -- pages -- not fewer than half the stories of
    the version live now (``previous_count``).

    ``digest`` (:func:`content_digest` of ``doc``, which the publisher computes anyway): a document whose content
    (the same digest and top-level properties) was rejected before with the same ``previous_count`` and
    ``min_stories``, for any reason but the schema, is rejected again with the same reason and detail once what the
    digest leaves out (version, cycle times, scores) passes the schema (:func:`_volatile_valid`), without being
    serialised and validated again: every check but those reads the content only. A replay proposes such a page
    (a section below its minimum) at every minute it builds.

    ``canonical``: ``canonical_bytes(doc)`` written already (:func:`digest_and_bytes`, with the digest), used as the
    bytes computed here would be (the schema proven on ``doc`` as stored), not written again. The caller vouches
    that they are the bytes of this very document; ``data`` are bytes to check by parsing them.
    """
    memo = None
    if digest is not None:
        memo = (kind, digest, tuple(sorted(doc)), previous_count, min_stories)
        known = _REJECTED.get(memo)
        if known is not None and _volatile_valid(kind, doc):
            raise SnapshotRejected(*known)
    stored = data is None  # the bytes are the document's own: its schema is checked on it (_valid_as_stored)
    if data is None:
        data = canonical if canonical is not None else canonical_bytes(doc)
    try:
        _check(kind, doc, previous_count, min_stories, data, stored)
    except SnapshotRejected as exc:
        if memo is not None and exc.reason != "schema":
            if len(_REJECTED) > _REJECTED_LIMIT:
                _REJECTED.clear()
            _REJECTED[memo] = (exc.reason, exc.detail)
        raise
    return data


def _check(kind: str, doc: dict, previous_count: int | None, min_stories: int, data: bytes, stored: bool) -> None:
    """The checks of :func:`validate` on ``doc`` and its canonical bytes ``data``, in order (schema first); raises
    :class:`SnapshotRejected` with the first reason found. ``stored``: ``data`` is ``canonical_bytes(doc)``, so a
    schema proven valid on ``doc`` as stored (:func:`_valid_as_stored`) needs no parse of ``data``."""
    try:
        if not (stored and _valid_as_stored(kind, doc)):
            _validate_schema(kind, json.loads(data))
    except PageError as exc:
        raise SnapshotRejected("schema", str(exc)) from None
    if kind not in ("edition_page", "candidate_pool", "topic_page"):
        return
    stories = doc["stories"]
    if len(stories) < min_stories:
        raise SnapshotRejected("too_few_stories", f"{len(stories)} < {min_stories}")
    for s in stories:
        rep = s.get("representative") or {}
        if not rep.get("title") or not rep.get("url"):
            raise SnapshotRejected("no_representative", f"story {s.get('story_id')}")
    if kind == "edition_page" and previous_count:
        lost = previous_count - len(stories)
        if lost * 2 > previous_count:
            raise SnapshotRejected("lost_more_than_half", f"{previous_count} -> {len(stories)} stories")
