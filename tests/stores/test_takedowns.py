"""Takedown tombstones (stores/takedowns.py) on both backends (embedded SQLite; Bigtable emulator): set, read back,
undo, a generation that moves on every change (the readers' cheap "changed since"), and the document filters
every reader shares."""

from __future__ import annotations

import pytest

from stores.takedowns import TakedownSet, Tombstone, open_takedown_store

T = 1_709_294_400_000
ART = "3f0c6a1e9b2d4c8f7a6e5d4c3b2a1908"


@pytest.fixture
def takedowns(store_config):
    return open_takedown_store(store_config)


def test_tombstones_are_set_read_and_undone_and_the_generation_moves(takedowns):
    assert takedowns.generation() == 0
    assert takedowns.all() == [] and not takedowns.taken_down()
    takedowns.set(Tombstone("article", ART, "court order 2026-114", "alice", T, url="https://a.example/x"))
    g1 = takedowns.generation()
    assert g1 > 0
    takedowns.set(Tombstone("story", "42", "defamation", "bob", T + 1))
    g2 = takedowns.generation()
    assert g2 > g1
    assert [t.target for t in takedowns.all()] == [f"article:{ART}", "story:42"]
    assert takedowns.get("article", ART).url == "https://a.example/x"
    assert takedowns.taken_down() == TakedownSet(frozenset({ART}), frozenset({"42"}))
    assert takedowns.generation() == g2  # reads do not move it
    undone = takedowns.clear("story", "42")
    assert undone.who == "bob" and takedowns.generation() > g2
    assert takedowns.clear("story", "42") is None
    assert takedowns.taken_down() == TakedownSet(frozenset({ART}), frozenset())


def test_a_tombstone_needs_a_reason_a_kind_and_a_decimal_story_id():
    with pytest.raises(ValueError, match="reason"):
        Tombstone("article", ART, " ", "alice", T)
    with pytest.raises(ValueError, match="kind"):
        Tombstone("url", ART, "x", "alice", T)
    with pytest.raises(ValueError, match="decimal"):
        Tombstone("story", "abc", "x", "alice", T)


def card(aid):
    return {"article_id": aid, "publisher_id": "p-" + aid, "title": aid}


def test_filters_drop_taken_down_stories_and_articles_and_promote_a_supporting_card():
    page = {
        "edition": "us-en",
        "section": "top",
        "stories": [
            {"story_id": "1", "rank": 1, "representative": card("a1"), "supporting": [card("a2"), card("a3")]},
            {"story_id": "2", "rank": 2, "representative": card("b1"), "supporting": []},
            {"story_id": "3", "rank": 3, "representative": card("c1"), "supporting": []},
            {"story_id": "4", "rank": 4, "representative": card("d1"), "supporting": [card("d2")]},
        ],
    }
    gone = TakedownSet(frozenset({"a1", "c1", "d2"}), frozenset({"2"}))
    out = gone.filter("edition_page", page)
    assert [(e["story_id"], e["rank"], e["representative"]["article_id"]) for e in out["stories"]] == [
        ("1", 1, "a2"),
        ("4", 2, "d1"),
    ]
    assert [c["article_id"] for c in out["stories"][0]["supporting"]] == ["a3"]
    assert out["stories"][1]["supporting"] == []
    assert len(page["stories"]) == 4  # the input is not changed
    assert TakedownSet().filter("edition_page", page) is page
    story = {"story_id": "1", "articles": [card("a1"), card("a2")]}
    assert [a["article_id"] for a in gone.filter("story_coverage", story)["articles"]] == ["a2"]
    assert gone.filter("story_coverage", dict(story, story_id="2")) is None
    assert TakedownSet(frozenset({"a1", "a2"})).filter("story_coverage", story) is None


def test_a_topic_page_loses_its_taken_down_stories_and_goes_when_none_is_left():
    card = {"article_id": "a1"}
    topic = {
        "kind": "entity",
        "story_count": 3,
        "stories": [
            {"story_id": "1", "representative": card},
            {"story_id": "2", "representative": {"article_id": "b"}},
        ],
    }
    shown = TakedownSet(frozenset(), frozenset({"2"})).filter("topic_page", topic)
    assert [s["story_id"] for s in shown["stories"]] == ["1"] and shown["story_count"] == 2
    assert TakedownSet(frozenset({"a1", "b"}), frozenset()).filter("topic_page", topic) is None
    assert TakedownSet(frozenset({"zz"}), frozenset()).filter("topic_page", topic) is topic
