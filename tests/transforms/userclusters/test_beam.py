"""The per-cluster click counts kept online by the co-visitation stage (CovisitNeighbours with clusters on):
each accepted read of a member counts once in each of its clusters, with the co-visitation decay; duplicates,
re-reads, impressions, non-members and an abnormal reader's reads past the bar do not."""

from __future__ import annotations

import time

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.transforms.window import TimestampedValue

from stores import StoreConfig
from stores.covisit import open_covisit_store
from stores.userclusters import open_user_cluster_store
from transforms.common import MINUTE_MS
from transforms.covisit.beam import CovisitNeighbours
from transforms.covisit.counts import Params

T0 = 1_767_225_600_000
S1, S2 = 7_394_201_113_445_597_184, 42


def read(reader, story, at, eid=None, kind="READ"):
    return {
        "schema_version": 1,
        "event_id": eid or f"{reader}-{story}-{at}",
        "reader_id": reader,
        "kind": kind,
        "edition": "us-en",
        "story_id": story,
        "article_id": None,
        "at": at,
        "dwell_ms": 30_000,
    }


def run(cfg, evs, clusters=True):
    with TestPipeline(runner=FnApiRunner(), options=PipelineOptions([])) as p:
        _ = (
            p
            | beam.Create(evs)
            | beam.Map(lambda e: TimestampedValue(e, e["at"] / 1000))
            | CovisitNeighbours(cfg, Params(max_per_hour=10), clusters=clusters)
        )


def test_accepted_reads_of_members_count_once_per_cluster(tmp_path):
    cfg = StoreConfig(data_dir=str(tmp_path / "c"))
    store = open_user_cluster_store(cfg)
    now = int(time.time() * 1000)
    store.put_membership("a", [11, 22], now)
    store.put_membership("b", [11], now)
    store.put_membership("bot", [33], now)
    evs = [
        read("a", S1, T0, eid="a1"),
        read("a", S2, T0 + MINUTE_MS),
        read("b", S1, T0 + 2 * MINUTE_MS),
        read("a", S1, T0, eid="a1"),  # the same event again (a redelivery): ignored
        read("a", S1, T0 + 3 * MINUTE_MS),  # a re-read inside the window: not a new click
        read("b", S2, T0 + 4 * MINUTE_MS, kind="IMPRESSION"),  # not a read
        read("c", S1, T0 + 5 * MINUTE_MS),  # in no cluster
    ]
    evs += [read("bot", 1000 + i, T0 + i * 1000) for i in range(15)]  # 15 reads in 15 s: over 10 an hour
    run(cfg, evs)
    got = store.get_counts([11, 22, 33])
    items, total, at = got[11]
    assert dict(items) == pytest.approx({S1: 2.0, S2: 1.0}, abs=5e-3) and total == pytest.approx(3.0, abs=5e-3)
    assert at == T0 + 2 * MINUTE_MS
    items, total, _ = got[22]
    assert dict(items) == pytest.approx({S1: 1.0, S2: 1.0}, abs=5e-3) and total == pytest.approx(2.0, abs=5e-3)
    bot_items, bot_total, _ = got[33]
    assert len(bot_items) == 10 and bot_total == pytest.approx(10.0, abs=0.01)  # up to the bar, then nothing
    assert open_covisit_store(cfg).get(S1) is not None  # co-visitation is written as before
    logged = dict(store.scan_clicks(0))  # the accepted reads, in the click log the daily job reads
    assert logged["a"] == [str(S1), str(S2)] and logged["b"] == [str(S1)] and logged["c"] == [str(S1)]
    assert len(logged["bot"]) == 10  # up to the bar, like the counts


def test_without_cluster_counts_nothing_is_written(tmp_path):
    cfg = StoreConfig(data_dir=str(tmp_path / "off"))
    store = open_user_cluster_store(cfg)
    store.put_membership("a", [11], int(time.time() * 1000))
    run(cfg, [read("a", S1, T0), read("a", S2, T0 + 1)], clusters=False)
    assert store.get_counts([11]) == {} and open_covisit_store(cfg).get(S1) is not None
