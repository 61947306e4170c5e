"""The per-language story writer (transforms/stories/writer/cluster.py): order, determinism, ids, expiry, copies, recovery."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from stores import open_stores
from tests.transforms.stories.synth import DIM, HOUR, MIN, T0, TEST_CONFIG, article, make_articles
from transforms.stories.backfill.assignments import fold
from transforms.stories.vocabulary import ids as idmod
from transforms.stories.writer.apply import apply_in_order
from transforms.stories.writer.cluster import StoreBehind, StoryClusterer


def run(arts, **kw):
    w = StoryClusterer("en", config=TEST_CONFIG, exact_index=True, **kw)
    return w, [o.to_dict() for o in w.run(arts)]


def changes(outs):
    return [o["change"] for o in outs]


def test_clusters_synthetic_events_exactly(synthetic):
    arts, gold = synthetic
    _, outs = run(arts)
    assign, stories, _ = fold(changes(outs))
    by_story = collections.defaultdict(set)
    for a, s in assign.items():
        by_story[s].add(gold[a])
    assert len(assign) == len(arts)
    assert all(len(events) == 1 for events in by_story.values())  # no story mixes events
    assert len(by_story) == len(set(gold.values()))  # and no event is split


def test_decisions_follow_first_seen_order_not_arrival(synthetic):
    arts, _ = synthetic
    _, a = run(arts)
    _, b = run(list(reversed(arts)))
    assert changes(a) == changes(b)
    decided = [c["article_id"] for c in changes(a) if c["kind"] in ("NEW_STORY", "ASSIGN")]
    at = {x.article_id: x.order_key for x in arts}
    assert decided == sorted(decided, key=at.get)


def test_two_runs_give_identical_ids_and_change_ids(synthetic):
    arts, _ = synthetic
    _, a = run(arts)
    _, b = run(arts)
    assert a == b
    seqs = [c["seq"] for c in changes(a)]
    assert seqs == list(range(1, len(seqs) + 1))  # gap-free
    assert len({c["change_id"] for c in changes(a)}) == len(seqs)


def test_duplicated_input_changes_nothing(synthetic):
    arts, _ = synthetic
    _, once = run(arts)
    w, twice = run(arts + arts)
    assert twice == once
    assert w.stats["duplicate"] == len(arts)


def test_duplicate_after_decision_is_not_assigned_again(synthetic):
    arts, _ = synthetic
    w = StoryClusterer("en", config=TEST_CONFIG, exact_index=True)
    last = max(a.first_seen_at for a in arts[:10])
    w.run(arts[:10], until=last + HOUR)  # decided, stories still live
    w.add(arts[0])
    more = w.advance(last + 10 * HOUR)
    assert not [o for o in more if o.change["kind"] in ("NEW_STORY", "ASSIGN")]


def test_story_ids_are_time_ordered_64_bit_and_carry_the_language():
    rng = np.random.default_rng(1)
    arts = [
        article(f"a{i}", rng.standard_normal(DIM), T0 + i * 3 * HOUR, terms=(f"t{i}",), entities=(f"n{i}",))
        for i in range(5)
    ]
    w, outs = run(arts)
    new = [c for c in changes(outs) if c["kind"] == "NEW_STORY"]
    ids = [c["story_id"] for c in new]
    assert ids == sorted(ids) and len(set(ids)) == 5
    for c in new:
        assert 0 < c["story_id"] < 2**63
        assert idmod.first_seen_ms(c["story_id"]) == c["at"]
        assert idmod.id_language_code(c["story_id"]) == idmod.language_code("en")


def test_same_millisecond_stories_get_distinct_ids():
    rng = np.random.default_rng(2)
    arts = [article(f"a{i}", rng.standard_normal(DIM), T0, terms=(f"t{i}",), entities=(f"n{i}",)) for i in range(4)]
    _, outs = run(arts)
    ids = [c["story_id"] for c in changes(outs) if c["kind"] == "NEW_STORY"]
    assert len(set(ids)) == 4
    assert ids == sorted(ids)
    assert {idmod.first_seen_ms(i) for i in ids} == {T0}
    # other languages never collide with these ids
    assert idmod.mint(T0, "es", 0) not in ids


def test_story_expires_48h_after_its_last_article():
    v = np.ones(DIM)
    arts = [article("a", v, T0), article("b", v, T0 + 5 * HOUR)]
    w, outs = run(arts)
    exp = [c for c in changes(outs) if c["kind"] == "EXPIRE"]
    assert len(exp) == 1
    assert exp[0]["at"] == T0 + 5 * HOUR + 48 * HOUR
    assert not w.stories
    # an article after expiry starts a new story even though it is identical
    w.add(article("c", v, T0 + 60 * HOUR))
    later = [o.change for o in w.advance(T0 + 61 * HOUR)]
    assert [c["kind"] for c in later if c["article_id"] == "c"] == ["NEW_STORY"]


def test_a_syndicated_copy_joins_its_originals_story_and_adds_no_weight():
    rng = np.random.default_rng(3)
    orig = article("orig", rng.standard_normal(DIM), T0, terms=("quake",), entities=("chile",))
    other = article("copy", rng.standard_normal(DIM), T0 + MIN, terms=("zzz",), entities=("yyy",), copy_of="orig")
    w, outs = run([orig, other])
    cs = changes(outs)
    assert cs[1]["kind"] == "ASSIGN" and cs[1]["is_copy"] and cs[1]["story_id"] == cs[0]["story_id"]
    assert cs[1]["centroid"] == cs[0]["centroid"]
    assert outs[1]["story_meta"]["originals"] == 1 and outs[1]["story_meta"]["articles"] == 2


def test_untimed_articles_pay_the_unknown_time_penalty():
    v = np.ones(DIM)
    w = StoryClusterer("en", config=TEST_CONFIG, exact_index=True)
    w.run([article("a", v, T0)], until=T0)
    s = next(iter(w.stories.values()))
    untimed = article("b", v + 0.01, T0 + 1000, time_known=False)
    timed = article("k", v + 0.01, T0 + 1000)
    gap_penalty = TEST_CONFIG.time_weight * (1000 / HOUR) / TEST_CONFIG.expire_hours
    expected = w.score_article(timed, s)[0] + gap_penalty - TEST_CONFIG.unknown_time_penalty
    assert w.score_article(untimed, s)[0] == pytest.approx(expected)


def test_recovery_from_the_store_gives_the_same_assignments(tmp_path):
    arts, _ = make_articles(n_events=8, per_event=10, seed=11)
    _, uninterrupted = run(arts)

    store = open_stores_at(tmp_path).stories
    w = StoryClusterer("en", config=TEST_CONFIG, exact_index=True)
    for a in arts:
        w.add(a)
    mid = sorted(a.first_seen_at for a in arts)[len(arts) // 2]
    first = [o.to_dict() for o in w.advance(mid)]
    apply_in_order(store, first)
    token = w.state_token()
    queued = w.queued()
    del w  # the worker dies; its in-memory index and stories are gone

    fresh = StoryClusterer.restore(store, "en", token, config=TEST_CONFIG, exact_index=True)
    assert fresh.seq == token["seq"] and fresh.stories
    for a in queued:  # Beam keeps the queue in its bag state
        fresh.add(a)
    rest = [o.to_dict() for o in fresh.advance(2**62)]
    assert changes(first + rest) == changes(uninterrupted)
    assign, _, _ = fold(changes(first + rest))  # raises if an article were assigned twice
    assert len(assign) == len(arts)


def test_restore_refuses_a_store_that_is_behind(tmp_path):
    arts, _ = make_articles(n_events=2, per_event=3)
    w = StoryClusterer("en", config=TEST_CONFIG, exact_index=True)
    outs = [o.to_dict() for o in w.run(arts)]
    store = open_stores_at(tmp_path).stories
    apply_in_order(store, outs[:-2])
    with pytest.raises(StoreBehind):
        StoryClusterer.restore(store, "en", w.state_token(), config=TEST_CONFIG)


def open_stores_at(path):
    from stores import StoreConfig

    return open_stores(StoreConfig(backend="embedded", data_dir=str(path / "newsroom")))


def test_incremental_profile_keys_equal_a_full_rebuild():
    """Story profiles keep their top keys between joins and re-rank only those and the keys that rose: the result
    must be what ranking every key gives, at any point of a run."""
    import dataclasses as dc

    from transforms.stories.writer.cluster import Story

    arts, _ = make_articles(n_events=4, per_event=40, seed=12)
    w = StoryClusterer("en", config=dc.replace(TEST_CONFIG, profile_terms=3, profile_entities=2), exact_index=True)
    checked = 0
    for _i, a in enumerate(arts):
        w.run([a], until=a.first_seen_at)
        for s in w.stories.values():
            w.lex.profile(s)  # keeps (and later updates) the story's top keys
            fresh = Story(s.story_id, s.language, s.csum, s.ct)
            for m in sorted(s.members.values(), key=lambda m: m.article_id):
                fresh.add(m)
            assert w.lex.profile(s) == w.lex.profile(fresh)
            checked += 1
    assert checked > 100
