"""The co-visitation Beam stage (transforms/covisit/beam.py): on TestStream (BundleBasedDirectRunner, streaming)
and on FnApiRunner (bounded) it writes the same neighbour lists as the plain fold (transforms/covisit/counts.py),
replayed events included; an abnormal reader's reads pair nothing."""

from __future__ import annotations

import random

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms.window import TimestampedValue

from stores import StoreConfig
from stores.covisit import open_covisit_store
from transforms.common import HOUR_MS, MINUTE_MS
from transforms.covisit.beam import CovisitNeighbours
from transforms.covisit.counts import fold

T0 = 1_767_225_600_000
GROUPS = {"politics": [11, 12, 13, 14], "sport": [21, 22, 23], "science": [31, 32, 33, 34, 35]}


def read(reader, story, at, eid=None, kind="READ"):
    eid = eid or f"{reader}-{story}-{at}"
    return {
        "schema_version": 1,
        "event_id": eid,
        "reader_id": reader,
        "kind": kind,
        "edition": "us-en",
        "story_id": story,
        "article_id": None,
        "at": at,
        "dwell_ms": 30_000,
    }


def events() -> list[dict]:
    """40 readers over 12 h, each mostly within one interest group; one bot reading everything every 10 s."""
    rng = random.Random(3)
    out = []
    for r in range(40):
        group = list(GROUPS.values())[r % 3]
        start = T0 + rng.randrange(6 * HOUR_MS)
        for k in range(rng.randrange(2, 6)):
            story = rng.choice(group) if rng.random() < 0.85 else rng.choice([11, 21, 31])
            out.append(read(f"r{r}", story, start + k * rng.randrange(5, 90) * MINUTE_MS))
        if rng.random() < 0.2:
            out.append(read(f"r{r}", 99, start + 1, kind="IMPRESSION"))
    bot = [read("bot", [11, 21, 31, 35][i % 4], T0 + i * 10_000) for i in range(800)]
    return sorted(out + bot, key=lambda e: (e["at"], e["event_id"]))


def expected(evs) -> dict:
    return {s: [(k, round(c, 4)) for k, c in n.top()] for s, n in fold(evs).items()}


def stored(cfg) -> dict:
    got = open_covisit_store(cfg).get_many(sid for g in GROUPS.values() for sid in g)
    return {s: [(k, round(c, 4)) for k, c in items] for s, (items, _) in got.items()}


def test_expected_lists_pair_within_interest_groups_and_ignore_the_bot():
    exp = expected(events())
    assert exp and all(n != 99 for items in exp.values() for n, _ in items)
    assert {n for n, _ in exp[12]} <= set(GROUPS["politics"]) | {21, 31}
    bot_only = fold([e for e in events() if e["reader_id"] == "bot"])
    assert sum(len(n.counts) for n in bot_only.values()) <= 4 * 3  # the bot paired only its first reads


def test_teststream_writes_the_plain_folds_lists_and_replays_change_nothing(tmp_path):
    evs = events()
    replayed = [dict(e) for e in evs[::7]]  # redeliveries, arriving an hour of event time later
    stream = TestStream().advance_watermark_to(T0 / 1000 - 1)
    for start in range(0, 12 * HOUR_MS + 1, HOUR_MS):  # hourly bursts, the watermark following
        burst = [e for e in evs if T0 + start <= e["at"] < T0 + start + HOUR_MS]
        burst += [e for e in replayed if T0 + start - HOUR_MS <= e["at"] < T0 + start]
        if burst:
            stream = stream.add_elements([TimestampedValue(e, T0 / 1000 + start / 1000) for e in burst])
        stream = stream.advance_watermark_to((T0 + start + HOUR_MS) / 1000)
    stream = stream.advance_watermark_to_infinity()
    cfg = StoreConfig(data_dir=str(tmp_path / "stream"))
    opts = PipelineOptions([])
    opts.view_as(StandardOptions).streaming = True
    p = TestPipeline(runner="BundleBasedDirectRunner", options=opts)
    _ = p | stream | CovisitNeighbours(cfg, flush_ms=60_000)
    p.run().wait_until_finish()
    assert stored(cfg) == expected(evs)


@pytest.mark.parametrize("copies", [1, 2])
def test_bounded_run_writes_the_same_lists(tmp_path, copies):
    evs = events()
    cfg = StoreConfig(data_dir=str(tmp_path / "batch"))
    with TestPipeline(runner=FnApiRunner(), options=PipelineOptions([])) as p:
        _ = (
            p
            | beam.Create(sorted(evs * copies, key=lambda e: e["at"]))
            | beam.Map(lambda e: TimestampedValue(e, e["at"] / 1000))
            | CovisitNeighbours(cfg)
        )
    assert stored(cfg) == expected(evs)


def test_decode_copies_the_origins_receive_time_and_backdated_bursts_are_flagged(tmp_path):
    """The ``received_at`` attribute (the origin's clock) becomes the arrival the rate check goes by: 600 reads
    backdated a day apart... by the client's clock, arriving within a minute, pair only the first 120."""
    from schemas import codec
    from transforms.covisit.beam import DecodeReadEventFn

    now = T0 + 30 * 24 * HOUR_MS
    evs = [read("bot", 1000 + i, now - (600 - i) * HOUR_MS) for i in range(600)]
    msgs = [(codec.encode("ReadEvent", e), {"received_at": str(now + i * 100)}) for i, e in enumerate(evs)]
    decoded = list(DecodeReadEventFn().process(msgs[0]))
    assert decoded[0]["received_at"] == now
    cfg = StoreConfig(data_dir=str(tmp_path / "burst"))
    with TestPipeline(runner=FnApiRunner(), options=PipelineOptions([])) as p:
        _ = p | beam.Create(msgs) | beam.ParDo(DecodeReadEventFn()) | CovisitNeighbours(cfg)
    got = open_covisit_store(cfg).get_many(range(1000, 1600))
    assert got and max(got) < 1000 + 120  # nothing after the bar paired
