"""Syndicated copies (MinHash + LSH): copies grouped with their original, independent reports kept apart."""

from __future__ import annotations

import pytest

from transforms.articles import syndication
from transforms.articles.syndication import Entry, SyndicationIndex, jaccard, signature


def _article(kit, aid, publisher, paragraphs, seen, language="en"):
    return {
        "article_id": aid,
        "publisher_id": publisher,
        "language": language,
        "body": "\n".join(paragraphs),
        "first_seen_at": seen,
        "section": "world",
    }


@pytest.fixture
def texts(kit):
    wire = kit.WIRE_REPORT
    copy = wire[:4] + kit.LOCAL_EXTRA[:1] + wire[4:] + kit.LOCAL_EXTRA[1:]  # local text woven in
    words = lambda ps: sum(len(p.split()) for p in ps)  # noqa: E731
    extra = words(kit.LOCAL_EXTRA) / words(wire)
    assert 0.18 <= extra <= 0.25, extra  # "20 % extra local text"
    return wire, copy


def test_copy_with_local_text_is_grouped_with_its_original(kit, texts):
    wire, copy = texts
    assert jaccard(signature("\n".join(wire)), signature("\n".join(copy))) >= 0.7
    index = SyndicationIndex()
    original, _ = index.assign(_article(kit, "w1", "wirepress", wire, kit.T0))
    assert (original["copy_of"], original["syndication_group"]) == (None, None)  # alone so far
    local, _ = index.assign(_article(kit, "h1", "daily-herald", copy, kit.T0 + 600_000))
    assert local["copy_of"] == "w1"
    assert local["syndication_group"] == "w1"


def test_independent_reports_of_one_event_are_not_grouped(kit, texts):
    wire, _ = texts
    a, b = "\n".join(kit.INDEPENDENT_A), "\n".join(kit.INDEPENDENT_B)
    assert jaccard(signature(a), signature(b)) < 0.2
    assert jaccard(signature(a), signature("\n".join(wire))) < 0.2
    index = SyndicationIndex()
    index.assign(_article(kit, "w1", "wirepress", wire, kit.T0))
    ra, _ = index.assign(_article(kit, "p1", "pacific-times", kit.INDEPENDENT_A, kit.T0 + 1000))
    rb, _ = index.assign(_article(kit, "c1", "capital-post", kit.INDEPENDENT_B, kit.T0 + 2000))
    for r in (ra, rb):
        assert (r["copy_of"], r["syndication_group"]) == (None, None)


def test_wire_copy_is_the_original_even_when_it_arrives_later(kit, texts):
    wire, copy = texts
    index = SyndicationIndex()
    index.assign(_article(kit, "h1", "daily-herald", copy, kit.T0))
    w, _ = index.assign(_article(kit, "w1", "wirepress", wire, kit.T0 + 1000))
    assert (w["copy_of"], w["syndication_group"]) == (None, "h1")  # joins the group as its original
    later, _ = index.assign(_article(kit, "g1", "springfield-gazette", copy, kit.T0 + 2000))
    assert (later["copy_of"], later["syndication_group"]) == ("w1", "h1")


def test_without_wire_the_most_authoritative_earliest_is_the_original(kit, texts):
    _, copy = texts
    index = SyndicationIndex()
    index.assign(_article(kit, "g1", "springfield-gazette", copy, kit.T0))  # authority 0.35
    index.assign(_article(kit, "l1", "london-chronicle", copy, kit.T0 + 1000))  # 0.85
    index.assign(_article(kit, "h1", "daily-herald", copy, kit.T0 + 2000))  # 0.85, later
    x, _ = index.assign(_article(kit, "n1", "northern-echo", copy, kit.T0 + 3000))
    assert x["copy_of"] == "l1" and x["syndication_group"] == "g1"


def test_window_is_48_hours_of_first_seen_time(kit, texts):
    wire, copy = texts
    index = SyndicationIndex()
    index.assign(_article(kit, "w1", "wirepress", wire, kit.T0))
    late, _ = index.assign(_article(kit, "h1", "daily-herald", copy, kit.T0 + 49 * kit.HOUR))
    assert (late["copy_of"], late["syndication_group"]) == (None, None)
    assert len(index) == 1  # w1 evicted


def test_short_bodies_are_not_grouped(kit):
    index = SyndicationIndex()
    brief = ["Markets closed higher on Friday."]
    index.assign(_article(kit, "a", "wirepress", brief, kit.T0))
    out, entry = index.assign(_article(kit, "b", "daily-herald", brief, kit.T0 + 1))
    assert entry is None and out["copy_of"] is None


def test_same_input_order_gives_the_same_groups_and_a_restored_index_agrees(kit, texts):
    wire, copy = texts
    stream = [
        _article(kit, "h1", "daily-herald", copy, kit.T0),
        _article(kit, "p1", "pacific-times", kit.INDEPENDENT_A, kit.T0 + 10),
        _article(kit, "w1", "wirepress", wire, kit.T0 + 20),
        _article(kit, "c1", "capital-post", kit.INDEPENDENT_B, kit.T0 + 30),
        _article(kit, "g1", "springfield-gazette", copy, kit.T0 + 40),
        _article(kit, "l1", "london-chronicle", wire[:6] + kit.LOCAL_EXTRA, kit.T0 + 50),
    ]

    def run(items, index=None):
        index = index or SyndicationIndex()
        return [index.assign(dict(a))[0] for a in items], index

    first, idx = run(stream)
    second, _ = run(stream)
    assert first == second
    # a worker restart: rebuild from the persisted entries, then continue
    head, idx_head = run(stream[:3])
    persisted = [e.to_tuple() for e in idx_head.entries()]
    restored = SyndicationIndex()
    restored.restore([Entry.from_tuple(t) for t in persisted], idx_head.newest_seen)
    tail, _ = run(stream[3:], restored)
    assert head + tail == first


def test_parameters_are_the_designed_ones():
    assert (syndication.NUM_PERM, syndication.BANDS, syndication.ROWS, syndication.THRESHOLD) == (120, 20, 6, 0.7)
    assert syndication.BANDS * syndication.ROWS == syndication.NUM_PERM
