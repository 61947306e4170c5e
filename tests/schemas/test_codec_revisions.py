"""Schema revisions of the schemaless codec: a field appended with ``"since": N`` and a default keeps every record
written before it readable (a reader of revision N decodes revision N-1 bytes with the defaults), while new bytes
carry the field. The revision-1 bytes are pinned in tests/schemas/data/revision1.json, written by main's codec
before the first appended field (paywall and stated publication time)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas import codec
from tests.conftest import make_sample

REVISION1 = json.loads((Path(__file__).parent / "data" / "revision1.json").read_text())


def test_article_bytes_of_revision_1_decode_with_the_new_fields_defaults():
    record = codec.decode("Article", bytes.fromhex(REVISION1["Article"]))
    assert record["accessible_for_free"] is True  # unstated: schema.org's default, free
    assert record["stated_published_at"] is None
    assert record == codec.check("Article", make_sample("Article"))


def test_a_story_change_of_revision_1_decodes_its_embedded_article_with_defaults():
    record = codec.decode("StoryChange", bytes.fromhex(REVISION1["StoryChange"]))
    assert record["article"]["accessible_for_free"] is True
    assert record == codec.check("StoryChange", make_sample("StoryChange"))


def test_new_records_carry_the_appended_fields():
    art = make_sample("Article", accessible_for_free=False, stated_published_at=1_767_225_600_000)
    data = codec.encode("Article", art)
    assert len(data) > len(bytes.fromhex(REVISION1["Article"]))
    back = codec.decode("Article", data)
    assert back["accessible_for_free"] is False and back["stated_published_at"] == 1_767_225_600_000
    change = codec.decode("StoryChange", codec.encode("StoryChange", make_sample("StoryChange", article=art)))
    assert change["article"]["accessible_for_free"] is False


def test_garbage_is_still_an_error_naming_a_field():
    data = bytes.fromhex(REVISION1["Article"])
    with pytest.raises(codec.CodecError, match="trailing bytes"):
        # no revision reads it exactly: the newest reads revision 2's fields (no stated time, free) and two null image
        # sizes, then is left with bytes over
        codec.decode("Article", data + b"\x00\x01\x00\x00\x02\x04\x06\x08")
    with pytest.raises(codec.CodecError, match="cannot decode"):
        codec.decode("Article", data[:-5])


def test_every_appended_field_has_a_default_and_comes_after_the_older_fields():
    for name in codec.MESSAGES:
        since = [f.get("since", 1) for f in json.loads(codec.schema_text(name))["fields"]]
        assert since == sorted(since), name  # a field of revision N is appended, never inserted
        for f in json.loads(codec.schema_text(name))["fields"]:
            if f.get("since", 1) > 1:
                assert "default" in f, (name, f["name"])
