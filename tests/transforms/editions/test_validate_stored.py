"""documents.validate checks the schema on the document as stored without parsing it whole
(documents._valid_as_stored): the same verdicts and messages as validating ``json.loads(canonical_bytes(doc))``,
and a pool whose entries were all found valid before is not parsed again (only its new values are)."""

from __future__ import annotations

import copy

import pytest

from transforms.editions.vocabulary import documents as docs


@pytest.fixture
def pool(world, make_ranker):
    for s in range(12):
        world.story(s + 1, [f"paper-{s}", "capital-post"], world.T0 - (s + 1) * 5 * world.MIN)
    return make_ranker(world).cycle(world.T0).pool


def _bad_docs(pool: dict) -> list[dict]:
    bad = []
    for change in (
        lambda d: d["stories"][0].update(score="high"),  # not a number
        lambda d: d["stories"][0].update(score=True),
        lambda d: d["stories"][1].update(rank=0),
        lambda d: d["stories"][0]["representative"].update(url=7),  # a card value of the wrong type
        lambda d: d["stories"][0].pop("story_id"),  # a required entry field missing
        lambda d: d.update(version="7"),  # a top-level value of the wrong type
        lambda d: d.update(extra=1),  # not allowed
    ):
        doc = copy.deepcopy(pool)
        doc["stories"] = [dict(e, rank=i + 1) for i, e in enumerate(doc["stories"])]
        change(doc)
        bad.append(doc)
    return bad


def test_the_same_documents_are_rejected_with_the_same_message(pool):
    docs.validate("candidate_pool", pool)  # its values are remembered as valid first
    for doc in _bad_docs(pool):
        assert not docs._valid_as_stored("candidate_pool", doc)
        with pytest.raises(docs.SnapshotRejected) as full:
            docs.validate("candidate_pool", doc, data=docs.canonical_bytes(doc))  # bytes given: parsed whole
        with pytest.raises(docs.SnapshotRejected) as stored:
            docs.validate("candidate_pool", doc)
        assert (
            (stored.value.reason, str(stored.value))
            == (full.value.reason, str(full.value))
            == ("schema", str(full.value))
        )


def test_a_pool_seen_before_is_not_parsed_again(pool, monkeypatch):
    docs.validate("candidate_pool", pool)
    later = dict(pool, version=pool["version"] + 1, stories=[dict(e, score=e["score"] / 2) for e in pool["stories"]])
    parsed = []
    real = docs.json.loads
    monkeypatch.setattr(docs.json, "loads", lambda text, *a, **k: parsed.append(len(text)) or real(text, *a, **k))
    assert docs.validate("candidate_pool", later) == docs.canonical_bytes(later)
    assert max(parsed, default=0) < 100  # the new version number only, not the document


def _doc(**values) -> dict:
    entry = {"story_id": "7", "rank": 1, "score": 0.5, "labels": ("developing",), "tiny": 1e-05, "name": "Zürich"}
    entry.update(values)
    return {"schema": "s", "edition": "us-en", "version": 3, "cycle": "c", "stories": [entry]}


def test_the_content_digest_is_equal_exactly_when_the_json_values_are(monkeypatch):
    doc = _doc()
    stored = docs.json.loads(docs.canonical_bytes(doc))  # what the publisher reads back (lists, parsed floats)
    assert docs.content_digest(doc) == docs.content_digest(stored)
    assert docs.content_digest(doc) == docs.content_digest(_doc(score=9.0) | {"version": 4})  # minute values aside
    different = [_doc(tiny=1e-06), _doc(rank=2), _doc(labels=()), _doc(name="Zurich"), _doc(tiny=0)]
    assert len({docs.content_digest(d) for d in [doc, *different]}) == 1 + len(different)
    assert docs.content_digest(_doc(tiny=1)) != docs.content_digest(_doc(tiny=1.0))  # 1 and 1.0 are other JSON
    assert docs.content_digest(_doc(image=None)) == docs.content_digest(
        docs.json.loads(docs.canonical_bytes(_doc(image=None)))
    )
    for bad in (float("nan"), float("inf")):  # refused as the canonical bytes refuse them, never read as null
        with pytest.raises(ValueError):
            docs.content_digest(_doc(image=bad))
    monkeypatch.setattr(docs, "canonical_bytes", lambda d: pytest.fail("written canonically to be digested"))
    docs.content_digest(doc)  # a document without null is not written canonically to be digested


def test_a_document_holding_null_is_written_canonically_once_for_its_digest_and_its_bytes(monkeypatch):
    """documents.digest_and_bytes: the whole document's canonical bytes prove the digest (no NaN or infinity behind
    orjson's null) and are handed on to be stored; NaN and infinity are still refused where content_digest refuses
    them, and a document without null is not written canonically at all."""
    doc = _doc(image=None)
    assert docs.digest_and_bytes(doc) == (docs.content_digest(doc), docs.canonical_bytes(doc))
    assert docs.digest_and_bytes(_doc()) == (docs.content_digest(_doc()), None)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError):
            docs.digest_and_bytes(_doc(image=bad))
        score = _doc(image=None, score=bad)  # left out of the digest; the canonical bytes refuse it: none handed on
        assert docs.digest_and_bytes(score) == (docs.content_digest(score), None)
    written = []
    real = docs.canonical_bytes
    monkeypatch.setattr(docs, "canonical_bytes", lambda d: written.append(d) or real(d))
    docs.digest_and_bytes(doc)
    assert written == [doc]


def test_bytes_written_with_the_digest_are_validated_as_the_documents_own(pool, monkeypatch):
    """validate ``canonical``: the bytes are returned without being written again, and every bad document is still
    rejected with the same reason and message (the schema is checked on the document as stored)."""
    docs.validate("candidate_pool", pool)
    for doc in _bad_docs(pool):
        with pytest.raises(docs.SnapshotRejected) as full:
            docs.validate("candidate_pool", doc, data=docs.canonical_bytes(doc))
        with pytest.raises(docs.SnapshotRejected) as given:
            docs.validate("candidate_pool", doc, canonical=docs.canonical_bytes(doc))
        assert (given.value.reason, str(given.value)) == (full.value.reason, str(full.value))
    data = docs.canonical_bytes(pool)
    monkeypatch.setattr(docs, "canonical_bytes", lambda d: pytest.fail("written again"))
    assert docs.validate("candidate_pool", pool, canonical=data) is data


def test_an_entry_found_valid_parsed_is_not_validated_again_as_stored(pool, monkeypatch):
    docs._VALID_ENTRIES.clear()
    docs.validate("candidate_pool", pool, data=docs.canonical_bytes(pool))  # bytes given: the parsed checks
    validator = docs._entry_validator("candidate_pool")
    monkeypatch.setattr(type(validator), "is_valid", lambda *a, **k: pytest.fail("an entry validated twice"))
    assert docs._valid_as_stored("candidate_pool", pool)  # one memo key for both checks
