"""Every message of schemas.codec round-trips; malformed messages are rejected with an error naming the field."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas import codec

NAMES = sorted(codec.MESSAGES)


# ------------------------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("name", NAMES)
def test_sample_round_trips(name, sample_record):
    record = sample_record(name)
    data = codec.encode(name, record)
    assert isinstance(data, bytes)
    assert codec.decode(name, data) == codec.check(name, record) == record


@pytest.mark.parametrize("name", NAMES)
def test_defaults_are_filled(name, sample_record):
    schema = json.loads(codec.schema_text(name))
    defaults = {f["name"]: f["default"] for f in schema["fields"] if "default" in f}
    minimal = {k: v for k, v in sample_record(name).items() if k not in defaults}
    decoded = codec.decode(name, codec.encode(name, minimal))
    for k, v in defaults.items():
        assert decoded[k] == (v.encode("latin-1") if isinstance(v, str) and _type_of(schema, k) == "bytes" else v)


def _type_of(schema, field):
    return next(f["type"] for f in schema["fields"] if f["name"] == field)


def _strategy(schema, named):
    """A hypothesis strategy producing valid Python values for an Avro (JSON) schema node."""
    if isinstance(schema, str):
        if schema in named:
            return _strategy(named[schema], named)
        return {
            "null": st.none(),
            "boolean": st.booleans(),
            "int": st.integers(-(2**31), 2**31 - 1),
            "long": st.integers(-(2**63), 2**63 - 1),
            "float": st.floats(width=32, allow_nan=False),
            "double": st.floats(allow_nan=False),
            "bytes": st.binary(max_size=40),
            "string": st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
        }[schema]
    if isinstance(schema, list):
        return st.one_of([_strategy(b, named) for b in schema])
    kind = schema["type"]
    if kind == "record":  # fields with a default may be left out (the codec fills them in, at any depth)
        return st.fixed_dictionaries(
            {f["name"]: _strategy(f["type"], named) for f in schema["fields"] if "default" not in f},
            optional={f["name"]: _strategy(f["type"], named) for f in schema["fields"] if "default" in f},
        )
    if kind == "enum":
        return st.sampled_from(schema["symbols"])
    if kind == "array":
        return st.lists(_strategy(schema["items"], named), max_size=3)
    if kind == "map":
        return st.dictionaries(st.text(max_size=10), _strategy(schema["values"], named), max_size=3)
    return _strategy(kind, named)


def _named():
    named = {}

    def collect(node):
        if isinstance(node, dict):
            if node.get("type") in ("record", "enum"):
                named[node["name"]] = node
                named[f"{codec.NAMESPACE}.{node['name']}"] = node
            for v in node.values():
                collect(v)
        elif isinstance(node, list):
            for v in node:
                collect(v)

    for n in codec.MESSAGES:
        collect(json.loads(codec.schema_text(n)))
    return named


NAMED = _named()


@pytest.mark.parametrize("name", NAMES)
def test_generated_records_round_trip(name):
    @settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_strategy(json.loads(codec.schema_text(name)), NAMED))
    def round_trip(record):
        full = codec.check(name, record)
        assert set(full) == set(codec.field_names(name))
        assert all(full[k] == v for k, v in record.items() if not isinstance(v, dict))
        assert codec.decode(name, codec.encode(name, record)) == full

    round_trip()


# --------------------------------------------------------------------------------------------- invalid records


def _required(name):
    return [f["name"] for f in json.loads(codec.schema_text(name))["fields"] if "default" not in f]


@pytest.mark.parametrize("name", NAMES)
def test_missing_required_field_is_named(name, sample_record):
    for field in _required(name):
        record = sample_record(name)
        del record[field]
        with pytest.raises(codec.CodecError, match=rf"\b{field}\b.*required|required.*\b{field}\b"):
            codec.encode(name, record)


@pytest.mark.parametrize("name", NAMES)
def test_wrong_type_is_named(name, sample_record):
    schema = json.loads(codec.schema_text(name))
    wrong = {"string": 12, "bytes": 12, "int": "12", "long": "12", "boolean": "yes", "double": "x", "float": "x"}
    checked = 0
    for f in schema["fields"]:
        t = f["type"]
        base = t.get("type") if isinstance(t, dict) else t
        if isinstance(base, str) and base in wrong:
            record = sample_record(name, **{f["name"]: wrong[base]})
            with pytest.raises(codec.CodecError, match=rf"{name}\.{f['name']}\b"):
                codec.encode(name, record)
            checked += 1
    assert checked >= 2


def test_bool_is_not_an_int_and_nested_paths_are_named(sample_record):
    with pytest.raises(codec.CodecError, match=r"Article\.version"):
        codec.encode("Article", sample_record("Article", version=True))
    bad = sample_record("StoryChange")
    bad["article"]["entities"][1]["kind"] = "CITY"
    with pytest.raises(codec.CodecError, match=r"StoryChange\.article\.entities\[1\]\.kind.*CITY"):
        codec.encode("StoryChange", bad)
    with pytest.raises(codec.CodecError, match=r"RawItem\.headers"):
        codec.encode("RawItem", sample_record("RawItem", headers={"etag": 5}))
    with pytest.raises(codec.CodecError, match=r"StoryChange\.centroid\[1\]"):
        codec.encode("StoryChange", sample_record("StoryChange", centroid=[0.5, "x"]))


def test_nested_records_get_defaults_and_reject_unknown_fields(sample_record):
    change = sample_record("StoryChange")
    change["article"] = {k: v for k, v in change["article"].items() if k not in ("entities", "is_opinion", "copy_of")}
    full = codec.check("StoryChange", change)
    assert (full["article"]["entities"], full["article"]["is_opinion"], full["article"]["copy_of"]) == ([], False, None)
    assert codec.decode("StoryChange", codec.encode("StoryChange", change)) == full
    change["article"]["headline"] = "typo of title"
    with pytest.raises(codec.CodecError, match=r"StoryChange\.article: unknown field.*headline"):
        codec.encode("StoryChange", change)
    raw = sample_record("RawItem")
    del raw["entry"]["categories"]
    raw["entry"]["author"] = "x"
    with pytest.raises(codec.CodecError, match=r"RawItem\.entry: unknown field.*author"):
        codec.encode("RawItem", raw)


def test_bytes_default_is_bytes(sample_record):
    letter = {k: v for k, v in sample_record("DeadLetter").items() if k != "payload"}
    assert codec.decode("DeadLetter", codec.encode("DeadLetter", letter))["payload"] == b""


@pytest.mark.parametrize(
    "name, field, value",
    [
        ("RawItem", "source", "TWITTER"),
        ("StoryChange", "kind", "DELETE"),
        ("FetchRequest", "kind", "push"),
        ("ReadEvent", "kind", None),
    ],
)
def test_bad_enum_is_named(name, field, value, sample_record):
    with pytest.raises(codec.CodecError, match=rf"{name}\.{field}\b"):
        codec.encode(name, sample_record(name, **{field: value}))


@pytest.mark.parametrize("name", NAMES)
def test_unknown_field_is_named(name, sample_record):
    with pytest.raises(codec.CodecError, match="unknown field.*bogus_field"):
        codec.encode(name, sample_record(name, bogus_field=1))


def test_not_a_dict_and_unknown_message():
    with pytest.raises(codec.CodecError, match="expected a dict"):
        codec.encode("Article", ["not", "a", "dict"])
    with pytest.raises(codec.CodecError, match="unknown message type"):
        codec.encode("Nope", {})
    with pytest.raises(codec.CodecError, match="expected bytes"):
        codec.decode("Article", "a string")


# ---------------------------------------------------------------------------------------------- invalid bytes


@pytest.mark.parametrize("name", NAMES)
def test_truncated_bytes_are_rejected_naming_the_field(name, sample_record):
    data = codec.encode(name, sample_record(name))
    fields = codec.field_names(name)
    for cut in (1, len(data) // 2, len(data) - 1):
        with pytest.raises(codec.CodecError, match=rf"{name}\.({'|'.join(fields)}): cannot decode") as info:
            codec.decode(name, data[:-cut])
        assert "truncated" in str(info.value)
    # cutting the last byte breaks the last field
    with pytest.raises(codec.CodecError, match=rf"{name}\.{fields[-1]}:"):
        codec.decode(name, data[:-1])


@pytest.mark.parametrize("name", NAMES)
def test_trailing_bytes_are_rejected(name, sample_record):
    data = codec.encode(name, sample_record(name))
    last = codec.field_names(name)[-1]
    with pytest.raises(codec.CodecError, match=rf"2 trailing bytes after the last field {name}\.{last}"):
        codec.decode(name, data + b"\x02\x04")


def test_corrupt_enum_index_and_utf8_are_named(sample_record):
    # FetchRequest: schema_version (zigzag int 1 = 0x02), request_id (string), kind (enum index) ...
    good = codec.encode("FetchRequest", sample_record("FetchRequest"))
    rid_len = len(sample_record("FetchRequest")["request_id"])
    kind_at = 1 + 1 + rid_len
    bad_enum = good[:kind_at] + b"\x7e" + good[kind_at + 1 :]  # index 63: no such symbol
    with pytest.raises(codec.CodecError, match=r"FetchRequest\.kind"):
        codec.decode("FetchRequest", bad_enum)
    bad_utf8 = good[:2] + b"\xff" + good[3:]  # first byte of request_id
    with pytest.raises(codec.CodecError, match=r"FetchRequest\.request_id"):
        codec.decode("FetchRequest", bad_utf8)


def test_decoded_bytes_of_another_schema_are_rejected(sample_record):
    data = codec.encode("ReadEvent", sample_record("ReadEvent"))
    with pytest.raises(codec.CodecError):
        codec.decode("Article", data)


def test_attributes_name_the_schema():
    assert codec.attributes("Article") == {"schema": "newsroom.v1.Article"}
