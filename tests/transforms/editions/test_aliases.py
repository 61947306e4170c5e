"""The incremental aliases index (transforms/editions/publish/aliases.py): the same map as the old whole-map rewrite
(resolve_aliases) on random merge sequences, a journal that rebuilds it exactly, aliases that go with their survivor,
and the Beam tracker publishing the bounded map."""

from __future__ import annotations

import random

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that

from transforms.common import EXPIRE, MERGE, MINUTE_MS
from transforms.editions.beam.publishing import TrackAliases
from transforms.editions.publish.aliases import AliasIndex, resolve_aliases

T0 = 1_700_000_000_000 // MINUTE_MS * MINUTE_MS


def _merge(i: int, absorbed: int, survivor: int, at: int) -> dict:
    return {"id": f"m{i}", "kind": MERGE, "story_id": survivor, "other_story_id": absorbed, "seq": i, "at": at}


def _expire(i: int, sid: int, at: int) -> dict:
    return {"id": f"x{i}", "kind": EXPIRE, "story_id": sid, "other_story_id": 0, "seq": i, "at": at}


def _random_merges(rng: random.Random, n: int, ids: int) -> list[dict]:
    out = []
    for i in range(n):
        a, b = rng.sample(range(1, ids + 1), 2)
        out.append(_merge(i, a, b, T0 + rng.randrange(0, 60) * MINUTE_MS))
    return out


def test_the_index_equals_the_old_rewrite_on_random_merge_sequences():
    rng = random.Random(7)
    for trial in range(200):
        merges = _random_merges(rng, rng.randrange(1, 60), rng.choice((5, 20, 80)))
        merges.sort(key=lambda m: (m["at"], m["seq"], m["id"]))
        index = AliasIndex()
        cut = 0
        while cut < len(merges):  # applied in batches, as cycles do, each compared with the old path
            step = rng.randrange(1, 8)
            index.apply(merges[cut : cut + step])
            cut += step
            assert index.alias == resolve_aliases(merges[:cut]), (trial, cut)
        assert all(v not in index.alias for v in index.alias.values())  # one hop
        assert {k for g in index.absorbed_by.values() for k in g} == set(index.alias)
        assert all(index.alias[k] == s for s, g in index.absorbed_by.items() for k in g)


def test_a_chain_resolves_to_its_last_survivor_and_a_replayed_merge_changes_nothing():
    index = AliasIndex()
    assert index.merge(2, 1) == [("set", 2, 1)]
    assert index.merge(3, 2) == [("set", 3, 1)]  # into an absorbed story: its survivor
    assert index.merge(1, 9) == [("set", 2, 9), ("set", 3, 9), ("set", 1, 9)]  # only 1's own group moves
    assert index.alias == {1: 9, 2: 9, 3: 9}
    assert index.merge(1, 9) == [] and index.merge(9, 2) == []  # a replay; a merge into itself


def test_a_survivors_aliases_go_keep_ms_after_its_expire_unless_a_merge_revives_it():
    index = AliasIndex(keep_ms=10 * MINUTE_MS)
    index.apply([_merge(1, 2, 1, T0), _merge(2, 4, 3, T0), _merge(3, 6, 5, T0)])
    index.apply([_expire(4, 1, T0 + MINUTE_MS), _expire(5, 3, T0 + MINUTE_MS), _expire(6, 7, T0)])
    index.apply([_merge(7, 8, 3, T0 + 2 * MINUTE_MS)])  # 3 lives on
    assert index.prune(T0 + 10 * MINUTE_MS) == []
    assert index.next_prune() == T0 + 11 * MINUTE_MS
    assert index.prune(T0 + 11 * MINUTE_MS) == [("drop", 2, 0)]
    assert index.alias == {4: 3, 6: 5, 8: 3} and index.next_prune() is None


def test_the_journal_rebuilds_the_index_exactly_and_compacts():
    rng = random.Random(3)
    index, journal = AliasIndex(keep_ms=5 * MINUTE_MS), []
    for minute in range(300):
        at = T0 + minute * MINUTE_MS
        events = [_merge(minute * 10 + j, *rng.sample(range(1, 120), 2), at) for j in range(rng.randrange(0, 3))]
        events += [_expire(minute * 10 + 5, rng.randrange(1, 120), at)] if rng.random() < 0.5 else []
        journal += index.apply(events) + index.prune(at)
        if minute % 50 == 49:
            journal = index.compacted()
        again = AliasIndex.replay(journal, 5 * MINUTE_MS)
        assert (again.alias, again.absorbed_by, again.expires) == (index.alias, index.absorbed_by, index.expires)
        assert again.next_prune() == index.next_prune()
    assert len(index.compacted()) == index.journal_size() < 120


def _changes(events: list[dict]) -> list[dict]:
    return [dict(e, change_id=e["id"], language="en") for e in events]


@pytest.mark.parametrize("replay", [False, True])  # True: the firings run in the first one (the same maps)
def test_the_tracker_publishes_the_map_each_minute_it_changes_and_drops_a_retired_survivors_aliases(replay):
    events = [
        _merge(1, 2, 1, T0 + 5_000),
        _merge(2, 3, 2, T0 + MINUTE_MS + 5_000),  # a chain: 3 -> 1
        _merge(3, 3, 2, T0 + MINUTE_MS + 5_000) | {"id": "m2"},  # a replay
        _merge(4, 5, 4, T0 + 3 * MINUTE_MS),
        _expire(5, 1, T0 + 4 * MINUTE_MS),
        _expire(6, 99, T0 + 4 * MINUTE_MS),  # not a survivor: nothing
        _expire(7, 98, T0 + 20 * MINUTE_MS),  # any later event: its firing drops the expired group
    ]
    with TestPipeline() as p:
        items = p | beam.Create(_changes(events)) | TrackAliases(keep_ms=10 * MINUTE_MS, replay=replay)
        versions = items | beam.Map(lambda it: (it["version"] - T0 // MINUTE_MS, it["doc"]["aliases"]))
        got = versions | beam.combiners.ToList()

        def check(found):
            assert sorted(found[0]) == [
                (1, {"2": "1"}),
                (2, {"2": "1", "3": "1"}),
                (4, {"2": "1", "3": "1", "5": "4"}),
                (21, {"5": "4"}),  # 1 expired at minute 4, kept 10 minutes, dropped at the next firing
            ], found

        assert_that(got, check)


@pytest.mark.parametrize("replay", [False, True])
def test_a_tracker_without_state_starts_from_the_published_map(tmp_path, replay):
    """A relaunch after a drain (new state) keeps the redirects the origin serves: the first map it publishes
    holds the published aliases with the new merge, and they are journaled like any other."""
    import json

    from stores import StoreConfig, open_stores
    from transforms.editions.publish.aliases import aliases_item as item_of

    cfg = StoreConfig(data_dir=str(tmp_path / "s"))
    stores = open_stores(cfg)
    old = item_of({7: 8, 9: 8}, T0 - 60 * MINUTE_MS)
    stores.snapshots.put(old["path"], json.dumps(old["doc"]).encode())
    assert stores.pointers.compare_and_set("aliases", None, old["version"])
    events = [_merge(1, 2, 1, T0 + 5_000), _merge(2, 8, 1, T0 + MINUTE_MS + 5_000)]  # 8 absorbed: 7, 9 follow
    with TestPipeline() as p:
        items = p | beam.Create(_changes(events)) | TrackAliases(store_config=cfg, replay=replay)
        got = items | beam.Map(lambda it: it["doc"]["aliases"]) | beam.combiners.ToList()

        def check(found):
            assert sorted(found[0], key=len) == [
                {"2": "1", "7": "8", "9": "8"},
                {"2": "1", "7": "1", "8": "1", "9": "1"},
            ], found

        assert_that(got, check)
