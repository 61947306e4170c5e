"""Encode and decode every Newsroom message with fastavro.

Reads the ``schemas/avro/*.avsc`` contracts; writes schemaless Avro binary (the encoding Pub/Sub expects for a
topic with an Avro schema attached). Every record is validated before it is written and after it is read: an
invalid record raises :class:`CodecError` naming the schema and the offending field.

Timestamps (``timestamp-millis``) are plain ``int`` milliseconds since the epoch in Python: the codec strips the
logical types so that records compare equal across a round trip and nothing depends on datetime objects.
"""

from __future__ import annotations

import copy
import functools
import io
import json
from importlib import resources
from typing import Any

import fastavro
from fastavro.validation import ValidationError, validate

NAMESPACE = "newsroom.v1"

# Message name -> schema file. Order matters: StoryChange embeds Article.
MESSAGES = {
    "RawItem": "raw_item.avsc",
    "Article": "article.avsc",
    "StoryChange": "story_change.avsc",
    "FetchRequest": "fetch_request.avsc",
    "ReadEvent": "read_event.avsc",
    "DeadLetter": "dead_letter.avsc",
    "Breaking": "breaking.avsc",
    "StorylineChange": "storyline_change.avsc",
}


class CodecError(ValueError):
    """A message that does not match its schema, or bytes that do not decode."""


def _strip_logical(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_logical(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_strip_logical(v) for v in node]
    return node


def schema_text(name: str) -> str:
    """The .avsc text of a message, as published (for Pub/Sub schema resources and Terraform)."""
    return resources.files("schemas").joinpath("avro", MESSAGES[name]).read_text(encoding="utf-8")


def _at_revision(node: Any, revision: int) -> Any:
    """A schema as of ``revision``: without the record fields whose ``since`` is later (see :data:`REVISION`)."""
    if isinstance(node, list):
        return [_at_revision(v, revision) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _at_revision(v, revision) for k, v in node.items() if k != "since"}
    if node.get("type") == "record" and "fields" in node:
        out["fields"] = [_at_revision(f, revision) for f in node["fields"] if f.get("since", 1) <= revision]
    return out


def _latest_revision() -> int:
    def since(node: Any) -> int:
        if isinstance(node, dict):
            return max([int(node.get("since", 1))] + [since(v) for v in node.values()])
        if isinstance(node, list):
            return max([since(v) for v in node], default=1)
        return 1

    return max(since(json.loads(schema_text(name))) for name in MESSAGES)


# Schema evolution. The codec is schemaless (Pub/Sub's binary Avro: no writer schema travels with the bytes), so a
# reader must know which revision wrote a record. A field may only be *appended* to a record, with a default and
# ``"since": N`` (the revision that added it; absent = 1). Decoding tries the newest revision, then each older one
# (the same .avsc without the later fields), and the first that reads the bytes exactly wins; the missing fields
# take their defaults. So records written before a field existed (stores, replays, the log) stay readable. The
# other direction is a deploy order, not a codec feature: a reader of revision N-1 rejects revision N bytes
# (trailing bytes -> dead letter), so readers (and the Pub/Sub schema) are updated before the writers.
REVISION = _latest_revision()


@functools.cache
def _parsed_revision(revision: int) -> dict[str, Any]:
    named: dict[str, Any] = {}
    out = {}
    for name in MESSAGES:
        raw = _at_revision(_strip_logical(json.loads(schema_text(name))), revision)
        out[name] = fastavro.parse_schema(raw, named_schemas=named)
    return out


def _parsed() -> dict[str, Any]:
    return _parsed_revision(REVISION)


def parsed_schema(name: str) -> Any:
    try:
        return _parsed()[name]
    except KeyError:
        raise CodecError(f"unknown message type {name!r}; known: {', '.join(MESSAGES)}") from None


def field_names(name: str) -> list[str]:
    return [f["name"] for f in json.loads(schema_text(name))["fields"]]


def check(name: str, record: dict) -> dict:
    """Validate ``record`` against message ``name``; return it with defaults filled in.

    Raises CodecError naming the field on any mismatch, including unknown fields (a typo is not silently dropped).
    """
    if not isinstance(record, dict):
        raise CodecError(f"{name}: expected a dict, got {type(record).__name__}")
    if name not in MESSAGES:
        raise CodecError(f"unknown message type {name!r}; known: {', '.join(MESSAGES)}")
    schema = _named_json()[name]
    full = _complete(schema, record, name, _named_json())
    problem = _find_problem(schema, full, name, _named_json())
    if problem:
        raise CodecError(f"{name}: invalid field {problem}")
    try:
        validate(full, parsed_schema(name), raise_errors=True)
    except ValidationError as exc:  # a case _find_problem does not know: still name what fastavro names
        errors = getattr(exc, "errors", None) or [str(exc)]
        raise CodecError(f"{name}: invalid field: {str(errors[0]).replace(NAMESPACE + '.', '')}") from None
    return full


def _complete(schema: Any, value: Any, path: str, named: dict) -> Any:
    """``value`` with the defaults of every (nested) record filled in, the way a decoder returns it. Raises
    CodecError for unknown or missing fields of a record at any depth; other mismatches are left to
    _find_problem."""
    if isinstance(schema, str):
        return _complete(named[schema], value, path, named) if schema in named else value
    if isinstance(schema, list):  # union: our unions are ["null", X]
        if value is None:
            return value
        branches = [b for b in schema if b != "null"]
        return _complete(branches[0], value, path, named) if len(branches) == 1 else value
    kind = schema.get("type")
    if kind == "record" and isinstance(value, dict):
        known = {f["name"]: f for f in schema["fields"]}
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise CodecError(f"{path}: unknown field(s) {', '.join(map(str, unknown))}")
        out = {}
        for fname, f in known.items():
            if fname in value:
                out[fname] = _complete(f["type"], value[fname], f"{path}.{fname}", named)
            elif "default" in f:
                out[fname] = _default(f)
            else:
                raise CodecError(f"{path}.{fname}: required field is missing")
        return out
    if kind == "array" and isinstance(value, (list, tuple)):
        return [_complete(schema["items"], v, f"{path}[{i}]", named) for i, v in enumerate(value)]
    if kind == "map" and isinstance(value, dict):
        return {k: _complete(schema["values"], v, f"{path}[{k!r}]", named) for k, v in value.items()}
    return value


def _default(f: dict) -> Any:
    """A field's default as a Python value. Avro writes bytes defaults as JSON strings of code points 0-255."""
    value = copy.deepcopy(f["default"])
    base = f["type"].get("type") if isinstance(f["type"], dict) else f["type"]
    if base == "bytes" and isinstance(value, str):
        return value.encode("latin-1")
    return value


@functools.cache
def _named_json() -> dict[str, dict]:
    """Named types (records, enums) by short and full name, for walking nested schemas."""
    named: dict[str, dict] = {}

    def collect(node):
        if isinstance(node, dict):
            if node.get("type") in ("record", "enum") and "name" in node:
                named[node["name"]] = node
                named[f"{NAMESPACE}.{node['name']}"] = node
            for v in node.values():
                collect(v)
        elif isinstance(node, list):
            for v in node:
                collect(v)

    for n in MESSAGES:
        collect(json.loads(schema_text(n)))
    return named


_PRIMITIVES = {
    "string": (str,),
    "bytes": (bytes, bytearray),
    "int": (int,),
    "long": (int,),
    "float": (int, float),
    "double": (int, float),
    "boolean": (bool,),
}


def _find_problem(schema: Any, value: Any, path: str, named: dict) -> str | None:
    """The dotted path of the first value that does not fit, with what was expected; None if it fits."""
    if isinstance(schema, str):
        if schema == "null":
            return None if value is None else f"{path} (expected null, got {type(value).__name__})"
        if schema in _PRIMITIVES:
            ok = isinstance(value, _PRIMITIVES[schema]) and not (schema != "boolean" and isinstance(value, bool))
            return None if ok else f"{path} (expected {schema}, got {type(value).__name__} {value!r:.60})"
        return _find_problem(named[schema], value, path, named)
    if isinstance(schema, list):  # union: our unions are ["null", X]
        if value is None and "null" in schema:
            return None
        branches = [b for b in schema if b != "null"]
        problems = [_find_problem(b, value, path, named) for b in branches]
        return None if any(p is None for p in problems) else problems[0]
    kind = schema.get("type")
    if kind == "record":
        if not isinstance(value, dict):
            return f"{path} (expected a {schema['name']} record, got {type(value).__name__})"
        for f in schema["fields"]:
            if f["name"] not in value and "default" in f:
                continue
            if f["name"] not in value:
                return f"{path}.{f['name']} (required field is missing)"
            p = _find_problem(f["type"], value[f["name"]], f"{path}.{f['name']}", named)
            if p:
                return p
        return None
    if kind == "enum":
        return None if value in schema["symbols"] else f"{path} (expected one of {schema['symbols']}, got {value!r})"
    if kind == "array":
        if not isinstance(value, (list, tuple)):
            return f"{path} (expected an array, got {type(value).__name__})"
        for i, v in enumerate(value):
            p = _find_problem(schema["items"], v, f"{path}[{i}]", named)
            if p:
                return p
        return None
    if kind == "map":
        if not isinstance(value, dict):
            return f"{path} (expected a map, got {type(value).__name__})"
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{path} (map key {k!r} is not a string)"
            p = _find_problem(schema["values"], v, f"{path}[{k!r}]", named)
            if p:
                return p
        return None
    return _find_problem(kind, value, path, named)


def encode(name: str, record: dict) -> bytes:
    """Validate and encode one message as schemaless Avro binary."""
    full = check(name, record)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed_schema(name), full)
    return buf.getvalue()


def decode(name: str, data: bytes) -> dict:
    """Decode schemaless Avro binary into a validated record. Trailing or truncated bytes are errors."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CodecError(f"{name}: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    record, failure = _read(data, parsed_schema(name))
    for revision in range(REVISION - 1, 0, -1):  # written before a field was appended (see REVISION)
        if record is not None:
            break
        record, _ = _read(data, _parsed_revision(revision)[name])
    if record is None:
        raise _decode_error(name, data, failure)
    return check(name, record)


def _read(data: bytes, schema: Any) -> tuple[dict | None, Exception | int | None]:
    """The record ``schema`` reads from exactly ``data``; else None and the exception, or the trailing byte count."""
    buf = io.BytesIO(data)
    try:
        record = fastavro.schemaless_reader(buf, schema, None)
    except Exception as exc:  # fastavro raises EOFError, UnicodeDecodeError, IndexError, ... on garbage
        return None, exc
    if buf.tell() != len(data):
        return None, len(data) - buf.tell()
    return record, None


def _decode_error(name: str, data: bytes, failure: Exception | int) -> CodecError:
    """The error of bytes no revision reads, naming the field at fault (error path only: it re-reads prefixes)."""
    if isinstance(failure, int):
        last = _parsed_json_fields(name)[-1]
        return CodecError(
            f"{name}: {failure} trailing bytes after the last field {name}.{last} "
            f"(not a valid {name}, or written with another schema)"
        )
    where = _field_at_fault(name, data)
    where = f"{name}.{where}" if where else name
    return CodecError(
        f"{where}: cannot decode (input of {len(data)} bytes is truncated or not a valid {name}): "
        f"{type(failure).__name__}: {failure}"
    )


@functools.cache
def _parsed_json_fields(name: str) -> list[str]:
    return field_names(name)


@functools.cache
def _named_types() -> dict[str, Any]:
    named: dict[str, Any] = {}
    for n in MESSAGES:
        fastavro.parse_schema(_strip_logical(json.loads(schema_text(n))), named_schemas=named)
    return named


def _field_at_fault(name: str, data: bytes) -> str | None:
    """The first top-level field that cannot be read from ``data``: decode growing prefixes of the schema's
    fields (error path only) so that a truncated or corrupt message is reported with the field it breaks in."""
    raw = _strip_logical(json.loads(schema_text(name)))
    for k, f in enumerate(raw["fields"], 1):
        partial = dict(raw, name=f"{raw['name']}Prefix{k}", fields=raw["fields"][:k])
        try:
            schema = fastavro.parse_schema(partial, named_schemas=dict(_named_types()))
            fastavro.schemaless_reader(io.BytesIO(data), schema, None)
        except Exception:
            return f["name"]
    return None


# Attribute set on every bus message so that a consumer (or a dead-letter replay) knows what it holds.
SCHEMA_ATTRIBUTE = "schema"


def attributes(name: str) -> dict[str, str]:
    return {SCHEMA_ATTRIBUTE: f"{NAMESPACE}.{name}"}
