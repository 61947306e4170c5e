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


@functools.lru_cache(maxsize=None)
def _parsed() -> dict[str, Any]:
    named: dict[str, Any] = {}
    out = {}
    for name in MESSAGES:
        raw = _strip_logical(json.loads(schema_text(name)))
        out[name] = fastavro.parse_schema(raw, named_schemas=named)
    return out


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
    schema = _named_json()[name]
    known = {f["name"]: f for f in schema["fields"]}
    unknown = sorted(set(record) - set(known))
    if unknown:
        raise CodecError(f"{name}: unknown field(s) {', '.join(unknown)}")
    full = dict(record)
    for fname, f in known.items():
        if fname not in full:
            if "default" not in f:
                raise CodecError(f"{name}.{fname}: required field is missing")
            full[fname] = copy.deepcopy(f["default"])
    problem = _find_problem(schema, full, name, _named_json())
    if problem:
        raise CodecError(f"{name}: invalid field {problem}")
    try:
        validate(full, parsed_schema(name), raise_errors=True)
    except ValidationError as exc:  # a case _find_problem does not know: still name what fastavro names
        errors = getattr(exc, "errors", None) or [str(exc)]
        raise CodecError(f"{name}: invalid field: {str(errors[0]).replace(NAMESPACE + '.', '')}") from None
    return full


@functools.lru_cache(maxsize=None)
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
    buf = io.BytesIO(bytes(data))
    try:
        record = fastavro.schemaless_reader(buf, parsed_schema(name), None)
    except CodecError:
        raise
    except Exception as exc:  # fastavro raises EOFError, UnicodeDecodeError, IndexError, ... on garbage
        raise CodecError(f"{name}: cannot decode {len(data)} bytes: {type(exc).__name__}: {exc}") from None
    if buf.tell() != len(data):
        raise CodecError(f"{name}: {len(data) - buf.tell()} trailing bytes after the record")
    return check(name, record)


# Attribute set on every bus message so that a consumer (or a dead-letter replay) knows what it holds.
SCHEMA_ATTRIBUTE = "schema"


def attributes(name: str) -> dict[str, str]:
    return {SCHEMA_ATTRIBUTE: f"{NAMESPACE}.{name}"}
