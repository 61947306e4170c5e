"""The fast schema checks of documents.validate keep every verdict of the whole-document validation: a subschema
validated directly (its local references inlined, documents._subschema_validator) judges every value as the
reference into the schema does, and an entry proven valid property by property (documents._entry_properties_valid,
each value found valid once not validated again) is rejected, when it must be, as validate_page rejects it."""

from __future__ import annotations

import copy

import jsonschema
import pytest
from referencing import Registry, Resource

from schemas.pages import PAGES, PageError, schema, validate_page
from transforms.editions.vocabulary import documents as docs

CARD = {
    "article_id": "a1",
    "url": "https://paper.example/a1",
    "title": "A title",
    "publisher_id": "paper",
    "published_at": "2024-03-01T11:00:00Z",
    "first_seen_at": "2024-03-01T11:01:00Z",
    "labels": ["wire"],
}


def _page(*entries: dict) -> dict:
    return {
        "schema": "newsroom.edition_page/v1",
        "edition": "us-en",
        "section": "top",
        "version": 28_000_000,
        "cycle": "2024-03-01T12:00:00Z",
        "generated_at": "2024-03-01T12:00:00Z",
        "stories": list(entries),
    }


def _entry(**kw) -> dict:
    entry = {
        "story_id": "7",
        "rank": 1,
        "score": 0.5,
        "labels": ["developing"],
        "section": "world",
        "representative": dict(CARD),
        "supporting": [dict(CARD, article_id="a2")],
        "article_count": 2,
        "publisher_count": 1,
        "updated_at": "2024-03-01T11:30:00Z",
    }
    entry.update(kw)
    return {k: v for k, v in entry.items() if v is not None}


VALUES = [
    None, True, 0, 1, -1, 2.5, 20001, "", "x", "7", "2024-03-01T11:30:00Z", "yesterday", "us-en", "USA", [], ["wire"],
    ["breaking"], ["nope"], {}, dict(CARD), dict(CARD, url=7), dict(CARD, extra=1), [dict(CARD)] * 5,
    [dict(CARD), dict(CARD, title=None)], {"index": 0.5, "groups_index": 0.1, "day_groups_index": 0.2, "publishers": 3},
    {"index": 2, "groups_index": 0.1, "day_groups_index": 0.2, "publishers": 3},
]  # fmt: skip


def _reference(kind: str, pointer: str):
    registry = Registry()
    for name in PAGES:
        d = schema(name)
        registry = registry.with_resource(d["$id"], Resource.from_contents(d))
    root = schema(kind)
    cls = jsonschema.validators.validator_for(root)
    return cls({"$ref": f"{root['$id']}{pointer}"}, registry=registry, format_checker=cls.FORMAT_CHECKER)


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_a_subschema_validated_directly_judges_as_its_reference(kind):
    tops = docs._property_validators(kind) or {}
    entries = (docs._entry_property_validators(kind) or ({}, ()))[0]
    items = schema(kind).get("properties", {}).get("stories", {}).get("items", {})
    entry_at = items["$ref"][1:] if set(items) == {"$ref"} else "/properties/stories/items"
    checked = 0
    nested = [
        (f"#/properties/{k}/properties/{p}", v)
        for k, (validators, _) in docs._nested_validators(kind).items()
        for p, v in validators.items()
    ]
    for pointer, validator in (
        [(f"#/properties/{k}", v) for k, v in tops.items()]
        + nested
        + [(f"#{entry_at}/properties/{k}", v) for k, v in entries.items()]
    ):
        reference = _reference(kind, pointer)
        for value in VALUES:
            assert validator.is_valid(value) == reference.is_valid(value), (kind, pointer, value)
        checked += 1
    assert checked or kind in ("story_page", "storyline_page")


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e["representative"].update(url=7),  # a card value of the wrong type
        lambda e: e["representative"].update(published_at="yesterday"),  # not a date-time
        lambda e: e["supporting"].append(dict(CARD, extra=1)),  # a card property not allowed
        lambda e: e.update(supporting=[dict(CARD)] * 5),  # more supporting cards than allowed
        lambda e: e.update(updated_at="soon"),
        lambda e: e.update(article_count=0),  # below the minimum
        lambda e: e.update(labels=["nope"]),  # not a label
        lambda e: e.update(extra=1),  # an entry property not allowed
        lambda e: e.pop("publisher_count"),  # a required entry property missing
        lambda e: e.update(story_id="seven"),
    ],
)
def test_an_entry_with_a_bad_value_is_rejected_after_its_good_values_were_remembered(change):
    good = _entry()
    docs.validate("edition_page", _page(good))  # every value of a good entry is remembered first
    assert docs._entry_properties_valid("edition_page", _entry(article_count=3))  # new count, known cards
    bad = copy.deepcopy(good)
    change(bad)
    assert not docs._entry_properties_valid("edition_page", bad)
    assert not docs._valid_as_stored("edition_page", _page(bad))
    with pytest.raises(PageError) as full:
        validate_page("edition_page", docs.json.loads(docs.canonical_bytes(_page(bad))))
    with pytest.raises(docs.SnapshotRejected) as fast:
        docs.validate("edition_page", _page(bad))
    assert fast.value.reason == "schema" and str(full.value) in str(fast.value)


def counted_validations(monkeypatch, validators: dict) -> list:
    """Wrap every validator of ``validators`` (name -> jsonschema validator) so that each value it is asked about is
    appended to the list returned: which values a memo let through without validation (test_validate_top.py too)."""
    calls: list = []

    class Counted:
        def __init__(self, real):
            self.real = real

        def is_valid(self, value):
            calls.append(value)
            return self.real.is_valid(value)

    for key, validator in list(validators.items()):
        monkeypatch.setitem(validators, key, Counted(validator))
    return calls


def test_an_entry_value_is_remembered_only_once_valid(monkeypatch):
    monkeypatch.setattr(docs, "_VALID_ENTRY_PROPERTIES", {})  # what earlier tests found valid forgotten
    assert docs._entry_properties_valid("edition_page", _entry())
    calls = counted_validations(monkeypatch, docs._entry_property_validators("edition_page")[0])
    assert docs._entry_properties_valid("edition_page", _entry(article_count=9))
    assert calls == [9]  # only the new value is validated
