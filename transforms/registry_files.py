"""Publisher and feed files: what ``newsroom publishers import|export`` and ``newsroom feeds import|export`` read and
write (the formats are documented in docs/operations.md, "Publishers and feeds").

Publishers: JSON, either the packaged registry's document ``{"publishers": [row, ...]}`` (other top-level keys such
as ``version`` and ``doc`` are ignored), a bare array of rows, or JSON lines (one row per line). A row::

    {"publisher_id": "daily-herald", "name": "The Daily Herald", "hosts": ["dailyherald.example"],
     "region": "us", "language": "en", "timezone": "America/New_York", "authority": 0.85,
     "topic_authority": {"business": 0.9}, "is_wire": false, "tier": "authoritative",
     "feeds": [{"url": "https://dailyherald.example/rss.xml", "kind": "rss"}], "owner": "", "city": ""}

Required: publisher_id, name, hosts, region ("" = international), language. Feeds: JSON (``{"feeds": [...]}``, a
bare array, JSON lines of ``{url, publisher_id?, tier?, kind?, enabled?}``, or a publishers document, whose rows'
``feeds`` are taken) or OPML 2.0 (``<outline xmlUrl=... type="rss">``, nested outlines allowed; the optional
attributes ``publisher_id``, ``tier`` and ``enabled="false"`` are ours).

Every row is checked before anything is written: a bad row is reported as ``line N: reason`` (the line of the file
where the row starts), all of them at once, so one pass over the file fixes them.
"""

from __future__ import annotations

import json
import re
from xml.sax.saxutils import quoteattr

from transforms.common import MAX_URL_CHARS, url_too_long
from transforms.publishers import PublisherRegistry, gazetteer_cities

REQUIRED = ("publisher_id", "name", "hosts", "region", "language")
OPTIONAL = ("timezone", "authority", "topic_authority", "is_wire", "tier", "feeds", "owner", "city")
TIERS = ("authoritative", "long_tail")
FEED_FIELDS = ("url", "publisher_id", "tier", "kind", "enabled")

_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(rf"{_LABEL}(\.{_LABEL})*(:[0-9]{{1,5}})?")
_LANG = re.compile(r"[a-z]{2,3}")
_REGION = re.compile(r"([a-z]{2})?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class RowError(ValueError):
    """A file's rows that cannot be imported: ``errors`` is [(line, reason)], in file order."""

    def __init__(self, errors: list[tuple[int, str]]):
        super().__init__("; ".join(f"line {n}: {r}" for n, r in errors))
        self.errors = errors


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _array_rows(text: str, pos: int, dec: json.JSONDecoder) -> list[tuple[int, object]]:
    """[(line, value)] of the JSON array starting at ``text[pos] == "["``."""
    rows, pos = [], _skip(text, pos + 1)
    if text[pos : pos + 1] == "]":
        return rows
    while True:
        value, end = dec.raw_decode(text, pos)
        rows.append((_line(text, pos), value))
        pos = _skip(text, end)
        if text[pos : pos + 1] == "]":
            return rows
        if text[pos : pos + 1] != ",":
            raise ValueError(f"line {_line(text, pos)}: expected ',' or ']' in the array")
        pos = _skip(text, pos + 1)


def _member_rows(text: str, key: str, dec: json.JSONDecoder) -> list[tuple[int, object]] | None:
    """The rows of the array under top-level ``key`` of the JSON object ``text`` (None: no such key)."""
    pos = _skip(text, _skip(text, 0) + 1)
    while text[pos : pos + 1] not in ("}", ""):
        name, pos = dec.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos : pos + 1] != ":":
            raise ValueError(f"line {_line(text, pos)}: expected ':'")
        pos = _skip(text, pos + 1)
        if name == key and text[pos : pos + 1] == "[":
            return _array_rows(text, pos, dec)
        _, pos = dec.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos : pos + 1] == ",":
            pos = _skip(text, pos + 1)
    return None


def json_rows(text: str, key: str) -> list[tuple[int, object]]:
    """[(line, row)] of a document ``{key: [...]}``, a bare array, or JSON lines. ValueError naming the line of a
    syntax error."""
    dec = json.JSONDecoder()
    start = _skip(text, 0)
    if start == len(text):
        return []
    try:
        whole, error = json.loads(text), None
    except json.JSONDecodeError as exc:
        whole, error = None, exc
    if isinstance(whole, list):
        return _array_rows(text, start, dec)
    if isinstance(whole, dict) and isinstance(whole.get(key), list):
        return _member_rows(text, key, dec) or []
    lines = text.splitlines()
    first = next(n for n, line in enumerate(lines) if line.strip())
    try:
        json.loads(lines[first])
    except json.JSONDecodeError:
        if error is not None:  # one document spread over lines: its own syntax error
            raise ValueError(f"line {error.lineno}: not JSON: {error.msg}") from None
    rows = []  # JSON lines (a file holding one object is one line of them)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"line {n}: not JSON: {exc.msg} (expected a {{{key!r}: [...]}} document, an array "
                "or one JSON object per line)"
            ) from None
    return rows


def _text(value, field: str, limit: int = 200) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit or _CONTROL.search(value):
        raise ValueError(f"{field} must be a non-empty string of at most {limit} characters without control characters")
    return value


def _share(value, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{field} must be a number from 0 to 1, got {value!r}")
    return float(value)


def _check_fields(row: dict) -> dict:
    """The row's fields checked one by one; ValueError for the first bad one."""
    unknown = sorted(set(row) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (known: {', '.join(REQUIRED + OPTIONAL)})")
    missing = [f for f in REQUIRED if f not in row]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    out = dict(row)
    if not isinstance(row["publisher_id"], str) or not _ID.fullmatch(row["publisher_id"]):
        raise ValueError("publisher_id must be 1-64 of a-z 0-9 . _ - (starting with a letter or digit)")
    _text(row["name"], "name")
    hosts = row["hosts"]
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) and _HOST.fullmatch(h) for h in hosts):
        raise ValueError(f"hosts must be a non-empty list of lower-case host names, got {hosts!r}"[:300])
    if not isinstance(row["region"], str) or not _REGION.fullmatch(row["region"]):
        raise ValueError(f"region must be an ISO 3166-1 alpha-2 code in lower case or '', got {row['region']!r}")
    if not isinstance(row["language"], str) or not _LANG.fullmatch(row["language"]):
        raise ValueError(f"language must be an ISO 639 code in lower case, got {row['language']!r}")
    if "timezone" in row:
        _check_zone(row["timezone"])
    if "authority" in row:
        out["authority"] = _share(row["authority"], "authority")
    topics = row.get("topic_authority", {})
    if not isinstance(topics, dict):
        raise ValueError("topic_authority must be an object {section: 0..1}")
    out["topic_authority"] = {str(k): _share(v, f"topic_authority[{k!r}]") for k, v in topics.items()}
    if not isinstance(row.get("is_wire", False), bool):
        raise ValueError("is_wire must be true or false")
    if row.get("tier", "long_tail") not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, got {row.get('tier')!r}")
    feeds = row.get("feeds", [])
    if not isinstance(feeds, list):
        raise ValueError("feeds must be a list of {url, kind}")
    out["feeds"] = [_publisher_feed(f) for f in feeds]
    for field in ("owner", "city"):
        if not isinstance(row.get(field, ""), str) or (row.get(field) and not _ID.fullmatch(row[field])):
            raise ValueError(f"{field} must be an id (a-z 0-9 . _ -) or ''")
    return out


def _check_zone(zone) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ValueError(f"timezone must be an IANA zone such as Europe/Paris, got {zone!r}") from None


def _publisher_feed(feed) -> dict:
    from transforms.ingest.registry import KINDS

    if not isinstance(feed, dict) or set(feed) - {"url", "kind"} or not isinstance(feed.get("url"), str):
        raise ValueError(f"a feed must be {{url, kind}}, got {feed!r}"[:300])
    if url_too_long(feed["url"]):
        raise ValueError(f"feed url over {MAX_URL_CHARS} characters ({len(feed['url'])})")
    if not feed["url"].startswith(("http://", "https://")):
        raise ValueError(f"feed url must be http(s): {feed['url']!r}"[:300])
    if feed.get("kind", "auto") not in KINDS:
        raise ValueError(f"feed kind must be one of {KINDS}, got {feed.get('kind')!r}")
    return {"url": feed["url"], "kind": feed.get("kind", "auto")}


def check_publishers(rows: list[tuple[int, object]], gazetteer: dict | None = None) -> list[dict]:
    """The rows, checked (fields, unique ids and hosts, cities against the gazetteer); RowError with every bad row."""
    gazetteer = gazetteer_cities() if gazetteer is None else gazetteer
    errors, out, ids, hosts = [], [], {}, {}
    for line, row in rows:
        try:
            if not isinstance(row, dict):
                raise ValueError(f"a publisher row is a JSON object, got {type(row).__name__}")
            checked = _check_fields(row)
            pid = checked["publisher_id"]
            if pid in ids:
                raise ValueError(f"publisher_id {pid!r} again (first on line {ids[pid]})")
            for h in checked["hosts"]:
                if h in hosts:
                    raise ValueError(f"host {h!r} already belongs to {hosts[h][0]!r} (line {hosts[h][1]})")
            PublisherRegistry.from_dicts([checked], gazetteer=gazetteer)  # the dataclass's own checks and the city
        except (ValueError, TypeError) as exc:
            errors.append((line, f"{_who(row)}{exc}"))
            continue
        ids[pid] = line
        hosts.update(dict.fromkeys(checked["hosts"], (pid, line)))
        out.append(checked)
    if errors:
        raise RowError(errors)
    return out


def _who(row) -> str:
    pid = row.get("publisher_id") if isinstance(row, dict) else None
    return f"publisher {str(pid)[:64]!r}: " if isinstance(pid, str) and pid else ""


def read_publishers(text: str, gazetteer: dict | None = None) -> list[dict]:
    """Checked publisher rows of a publishers file (module docstring); RowError / ValueError naming lines."""
    return check_publishers(json_rows(text, "publishers"), gazetteer)


def registry_file(path: str) -> PublisherRegistry:
    """The registry of a publishers file (a command's ``--publishers``), every row checked: OSError when it cannot
    be read, RowError / ValueError naming the bad lines."""
    with open(path, encoding="utf-8") as f:
        return PublisherRegistry.from_dicts(read_publishers(f.read()))


# feeds -------------------------------------------------------------------------------------------------------
def is_opml(text: str) -> bool:
    return text.lstrip().startswith("<")


def opml_rows(text: str) -> list[tuple[int, dict]]:
    """[(line, feed entry)] of the outlines that carry an ``xmlUrl`` (categories are skipped)."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False)
    try:
        root = etree.fromstring(text.encode("utf-8"), parser)
    except etree.XMLSyntaxError as exc:
        raise ValueError(f"line {exc.lineno}: not OPML (XML): {exc.msg}") from None
    if root.tag != "opml":
        raise ValueError(f"line {root.sourceline}: the root element is <{root.tag}>, not <opml>")
    rows = []
    for el in root.iter("outline"):
        url = el.get("xmlUrl")
        if url is None:
            if el.get("type") in ("rss", "atom") and not len(el):
                rows.append((el.sourceline, {"url": ""}))  # reported: a feed outline without its address
            continue
        entry = {"url": url, "kind": el.get("type") or "auto"}
        for attr in ("publisher_id", "tier"):
            if el.get(attr):
                entry[attr] = el.get(attr)
        if el.get("enabled") is not None:
            entry["enabled"] = el.get("enabled").lower() not in ("false", "0", "no")
        rows.append((el.sourceline, entry))
    return rows


def feed_rows(text: str) -> list[tuple[int, object]]:
    """[(line, entry)] of a feeds file: OPML, or JSON (a publishers document contributes its rows' feeds)."""
    if is_opml(text):
        return opml_rows(text)
    dec_doc = None
    try:
        dec_doc = json.loads(text)
    except json.JSONDecodeError:
        pass
    if isinstance(dec_doc, dict) and "publishers" in dec_doc:
        rows = check_publishers(json_rows(text, "publishers"))
        lines = [n for n, _ in json_rows(text, "publishers")]
        return [
            (n, dict(f, publisher_id=r["publisher_id"], tier=r.get("tier", "long_tail")))
            for n, r in zip(lines, rows, strict=True)
            for f in r["feeds"]
        ]
    return json_rows(text, "feeds")


def check_feeds(rows: list[tuple[int, object]], registry: PublisherRegistry) -> list[dict]:
    """Normalised feed entries ``{url, publisher_id, tier, kind, enabled}``; RowError with every bad row. A named
    publisher_id must be in ``registry`` (import the publishers first); without one, the host's publisher."""
    from transforms.ingest.registry import normalise

    errors, out, seen = [], [], {}
    for line, row in rows:
        try:
            if not isinstance(row, dict):
                raise ValueError(f"a feed row is a JSON object, got {type(row).__name__}")
            unknown = sorted(set(row) - set(FEED_FIELDS))
            if unknown:
                raise ValueError(f"unknown field {unknown[0]!r} (known: {', '.join(FEED_FIELDS)})")
            if not isinstance(row.get("url"), str) or not row["url"].strip():
                raise ValueError("no feed url (xmlUrl in OPML)")
            pid = row.get("publisher_id")
            if pid and registry.get(pid) is None:
                raise ValueError(f"publisher_id {pid!r} is not in the publisher registry (newsroom publishers import)")
            if row.get("tier") not in (None, *TIERS):
                raise ValueError(f"tier must be one of {TIERS}, got {row.get('tier')!r}")
            entry = normalise(row, registry)
            if entry["url"] in seen:
                raise ValueError(f"feed {entry['url']!r} again (first on line {seen[entry['url']]})")
        except (ValueError, TypeError) as exc:
            errors.append((line, str(exc)[:500]))
            continue
        seen[entry["url"]] = line
        out.append(entry)
    if errors:
        raise RowError(errors)
    return out


def read_feeds(text: str, registry: PublisherRegistry) -> list[dict]:
    """Checked feed entries of a feeds file (JSON or OPML); RowError / ValueError naming lines."""
    return check_feeds(feed_rows(text), registry)


# export ------------------------------------------------------------------------------------------------------
def publishers_json(rows: list[dict]) -> str:
    """The publishers document, one row per line (diff-friendly; what import reads back)."""
    body = ",\n".join("    " + json.dumps(r, sort_keys=True, ensure_ascii=False) for r in rows)
    return '{\n  "version": 1,\n  "publishers": [\n' + body + "\n  ]\n}\n"


def feeds_json(entries: list[dict]) -> str:
    body = ",\n".join("    " + json.dumps(e, sort_keys=True, ensure_ascii=False) for e in entries)
    return '{\n  "feeds": [\n' + body + "\n  ]\n}\n"


def feeds_opml(entries: list[dict], registry: PublisherRegistry, title: str = "Newsroom feeds") -> str:
    """OPML 2.0 of ``entries`` (the attributes :func:`opml_rows` reads back)."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<opml version="2.0">', f"  <head><title>{title}</title></head>"]
    lines.append("  <body>")
    for e in entries:
        pub = registry.get(e.get("publisher_id") or "")
        attrs = {
            "text": pub.name if pub else e.get("publisher_id") or e["url"],
            "type": e.get("kind") or "auto",
            "xmlUrl": e["url"],
            "publisher_id": e.get("publisher_id") or "",
            "tier": e.get("tier") or "",
        }
        if not e.get("enabled", True):
            attrs["enabled"] = "false"
        lines.append("    <outline " + " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items() if v) + "/>")
    lines += ["  </body>", "</opml>", ""]
    return "\n".join(lines)
