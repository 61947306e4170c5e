"""Click history follows merges (transforms/covisit/survivors.py): a survivor inherits the co-visitation counts and
the user-cluster counts of the story merged into it, once, through the published aliases map."""

from __future__ import annotations

import json
import time

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.transforms.window import TimestampedValue

from stores import StoreConfig, open_stores
from stores.covisit import open_covisit_store
from stores.userclusters import open_user_cluster_store
from transforms.common import HOUR_MS, MINUTE_MS
from transforms.covisit.beam import CovisitNeighbours
from transforms.covisit.counts import Neighbours, Params
from transforms.covisit.survivors import Survivors, follow_merges, hand_over
from transforms.editions.publish.aliases import aliases_item

T0 = 1_767_225_600_000
A, B, X, Y = 1001, 1002, 2001, 2002  # A is merged into B; X is read with A, Y with B


def read(reader, story, at):
    return {
        "schema_version": 1,
        "event_id": f"{reader}-{story}-{at}",
        "reader_id": reader,
        "kind": "READ",
        "edition": "us-en",
        "story_id": story,
        "article_id": None,
        "at": at,
        "dwell_ms": 30_000,
    }


class Rows:
    """A covisit store in a dict."""

    def __init__(self, rows):
        self.rows = dict(rows)

    def get_many(self, ids):
        return {i: self.rows[i] for i in ids if i in self.rows}

    def get(self, i):
        return self.rows.get(i)

    def put(self, i, items, at):
        if items:
            self.rows[i] = (list(items), at)
        else:
            self.rows.pop(i, None)


def test_a_survivor_takes_in_the_absorbed_row_once_and_neighbours_are_renamed():
    survivors = ({A: B}, {B: [A]})
    n = Neighbours({Y: 1.0, A: 0.5}, ref_at=T0 + HOUR_MS)
    store = Rows({A: ([(X, 2.0), (B, 1.0)], T0)})
    assert follow_merges(n, B, survivors, store, Params()) == 0
    assert n.counts == pytest.approx({Y: 1.0, X: 2.0 * 0.5 ** (1 / 24)})  # decayed; B is not its own neighbour
    assert A not in store.rows and n.inherited == {A}
    store.put(A, [(X, 9.0)], T0 + 2 * HOUR_MS)  # the absorbed story counted later pairs: never taken twice
    follow_merges(n, B, survivors, store, Params())
    assert n.counts[X] == pytest.approx(2.0 * 0.5 ** (1 / 24)) and n.ref_at == T0 + HOUR_MS
    other = Neighbours({A: 3.0, X: 1.0}, ref_at=T0)
    follow_merges(other, Y, survivors, store, Params())
    assert other.counts == {B: 3.0, X: 1.0}


def test_an_absorbed_story_hands_its_counts_over_through_its_row():
    survivors = ({A: B}, {B: [A]})
    a, store = Neighbours({X: 2.0}, ref_at=T0), Rows({})
    follow_merges(a, A, survivors, store, Params())
    store.put(A, a.top(), a.ref_at)
    hand_over(a, A, survivors)
    a.counts[Y] = 1.0  # a pair counted after the write
    follow_merges(a, A, survivors, store, Params())  # the row comes back first: nothing is lost
    store.put(A, a.top(), a.ref_at)
    b = Neighbours()
    follow_merges(b, B, survivors, store, Params())
    assert b.counts == {X: 2.0, Y: 1.0}


def test_survivors_rereads_the_map_only_when_its_pointer_moved(tmp_path):
    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    clock = [0.0]
    survivors = Survivors(stores.pointers, stores.snapshots, ttl_s=60, clock=lambda: clock[0])
    assert survivors.get() == ({}, {})
    publish_aliases(stores, {A: B, 7: B}, T0)
    assert survivors.get() == ({}, {})  # within the ttl
    clock[0] = 61
    assert survivors.get() == ({A: B, 7: B}, {B: [7, A]})


def publish_aliases(stores, alias: dict, now: int) -> None:
    item = aliases_item(alias, now)
    stores.snapshots.put(item["path"], json.dumps(item["doc"]).encode())
    assert stores.pointers.compare_and_set("aliases", stores.pointers.get("aliases"), item["version"])


def test_the_job_moves_covisit_and_cluster_counts_to_the_survivor(tmp_path):
    cfg = StoreConfig(data_dir=str(tmp_path / "c"))
    publish_aliases(open_stores(cfg), {A: B}, T0)
    clusters = open_user_cluster_store(cfg)
    now = int(time.time() * 1000)
    for r in ("r0", "r1", "r2", "r3"):
        clusters.put_membership(r, [11], now)
    evs = []
    for r in range(3):  # read A (before the merge reached the origin) with X
        evs += [read(f"r{r}", A, T0 + r * MINUTE_MS), read(f"r{r}", X, T0 + r * MINUTE_MS + 1000)]
    evs += [read("r3", B, T0 + 10 * MINUTE_MS), read("r3", Y, T0 + 10 * MINUTE_MS + 1000)]
    with TestPipeline(runner=FnApiRunner(), options=PipelineOptions([])) as p:
        _ = (
            p
            | beam.Create(evs)
            | beam.Map(lambda e: TimestampedValue(e, e["at"] / 1000))
            | CovisitNeighbours(cfg, clusters=True)
        )
    got = {s: dict(items) for s, (items, _) in open_covisit_store(cfg).get_many([A, B, X, Y]).items()}
    assert set(got) == {B, X, Y}  # A's row went to B
    assert set(got[B]) == {X, Y} and got[B][X] == pytest.approx(3.0, abs=0.05)
    assert set(got[X]) == {B} and got[X][B] == pytest.approx(3.0, abs=0.05)  # X's neighbour A is now B
    (items, total, _) = clusters.get_counts([11])[11]
    assert dict(items) == pytest.approx({B: 4.0, X: 3.0, Y: 1.0}, abs=0.05) and total == pytest.approx(8.0, abs=0.05)
