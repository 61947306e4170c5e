"""Takedowns in the editions stage (transforms/editions/overlays/takedowns.py, read by EditionRanker every cycle): the next
snapshots omit a tombstoned story (pages, pool, coverage) and a tombstoned article (a representative replaced by
the next card), every page stays valid, and an undo brings them back on the next cycle. On both backends."""

from __future__ import annotations

import json

import pytest

from schemas.pages import validate_page
from stores.takedowns import TakedownSet, Tombstone, open_takedown_store
from tests.transforms.editions.test_controls import Stage, busy_world, ids
from transforms.editions.overlays.takedowns import TakedownReader, apply_takedowns
from transforms.editions.vocabulary import documents as docs


def test_the_next_snapshot_omits_a_taken_down_story_and_article_and_an_undo_restores_them(store_config, world):
    T, MIN = world.T0, world.MIN
    busy_world(world)
    stage = Stage(world, store_config)
    top, _ = stage.cycle(T + MIN)
    gone_story = ids(top)[0]
    second = top["stories"][1]
    gone_article = second["representative"]["article_id"]
    store = open_takedown_store(store_config)
    store.set(Tombstone("story", gone_story, "court order", "alice", T))
    store.set(Tombstone("article", gone_article, "publisher request", "bob", T))
    top, results = stage.cycle(T + 2 * MIN)
    validate_page("edition_page", json.loads(docs.canonical_bytes(top)))
    assert results["us-en/top"] == "published"
    assert gone_story not in ids(top)
    cards = [c["article_id"] for s in top["stories"] for c in [s["representative"], *s.get("supporting", ())]]
    assert gone_article not in cards
    assert [s["rank"] for s in top["stories"]] == list(range(1, len(top["stories"]) + 1))
    store.clear("story", gone_story)
    store.clear("article", gone_article)
    for m in range(3, 6):
        top, _ = stage.cycle(T + m * MIN)
    assert gone_story in ids(top)


def test_the_cycle_output_is_filtered_pages_pool_and_coverage(ranked_out):
    out = ranked_out
    sid = out.pages["top"]["stories"][0]["story_id"]
    covered = [d["story_id"] for d in out.coverage]
    n = apply_takedowns(out, TakedownSet(stories=frozenset({sid} | set(covered[:1]))))
    assert n > 0
    assert sid not in [s["story_id"] for s in out.pages["top"]["stories"]]
    assert sid not in [s["story_id"] for s in out.pool["stories"]]
    assert covered[:1] == [] or covered[0] not in [d["story_id"] for d in out.coverage]
    assert apply_takedowns(out, TakedownSet()) == 0


class _Store:
    def __init__(self):
        self.generation_reads = self.set_reads = 0
        self.g = 1
        self.fail = False

    def generation(self):
        self.generation_reads += 1
        if self.fail:
            raise RuntimeError("bigtable blip")
        return self.g

    def taken_down(self):
        self.set_reads += 1
        return TakedownSet(stories=frozenset({str(self.g)}))


def test_the_reader_reads_the_set_only_when_the_generation_moved_and_keeps_it_on_errors():
    store = _Store()
    counts = {}
    read = TakedownReader(store, count=lambda name, n=1: counts.update({name: counts.get(name, 0) + n}))
    assert read().stories == {"1"} and read().stories == {"1"}
    assert (store.generation_reads, store.set_reads) == (2, 1)
    store.g = 2
    assert read().stories == {"2"} and store.set_reads == 2
    store.fail = True
    assert read().stories == {"2"} and counts == {"takedowns_unreadable": 1}


@pytest.fixture
def ranked_out(world, make_ranker):
    T, MIN = world.T0, world.MIN
    for s in range(12):
        world.story(s + 1, [f"paper-{s}", "capital-post"], T - (s + 1) * 5 * MIN)
    return make_ranker(world).cycle(T)
