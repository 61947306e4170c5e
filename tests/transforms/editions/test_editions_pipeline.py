"""The editions stage in Beam (batch, FnApiRunner): bursts -> RankEditions -> PublishSnapshots into a store."""

from __future__ import annotations

import json
import os

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that

from schemas import codec
from stores import StoreConfig, open_stores
from transforms.editions.beam import PublishEditions
from transforms.editions.bursts.bursts import judge_breaking, poisson_tail
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import BurstParams
from transforms.editions.vocabulary.settings import RankSettings

QUIET = {"idle_cycles": 15}  # stop the minute timers 15 cycles after the last event (keeps batch runs short)


def burst_world(world):
    """An ordinary news hour, then at 12:10-12:13 a burst: 10 originals from 5 authoritative publishers; and a
    story of 50 syndicated copies from low-authority sites at 12:05-12:09."""
    T, MIN = world.T0, world.MIN
    for s in range(8):
        world.story(
            100 + s,
            ["daily-herald", "capital-post", "london-chronicle", f"paper-{s}"],
            T - 30 * MIN + s * MIN,
            section=["world", "business", "politics", "sports"][s % 4],
        )
    quake = world.story(
        7,
        world.AUTHORITATIVE_EN[:5] * 2,
        T + 10 * MIN,
        step=20_000,
        title="Strong earthquake shakes the coast, officials say",
        section="world",
    )
    orig = world.add(8, world.article("springfield-gazette", T + 4 * MIN, title="Celebrity spotted at a diner"))
    for k in range(50):
        world.add(
            8,
            world.article(
                f"copysite-{k}",
                T + 5 * MIN + k * 5_000,
                copy_of=orig["article_id"],
                title="Celebrity spotted at a diner",
            ),
            is_copy=True,
        )
    return quake


def run_batch(changes, data_dir, editions=("us-en",), check_fetch=None):
    config = StoreConfig(data_dir=str(data_dir))
    p = beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions())
    out = (
        p | beam.Create(changes) | PublishEditions(config, RankSettings(editions_only=list(editions), overrides=QUIET))
    )
    if check_fetch is not None:
        assert_that(out["fetch_requests"], check_fetch, label="CheckFetchRequests")
    p.run().wait_until_finish()
    return open_stores(config)


def pages_by_version(stores, pointer):
    edition, section = pointer.split("/")
    out = {}
    for h in stores.pointers.history(pointer):
        v = h["version"]
        out[v] = json.loads(stores.snapshots.get(f"pages/{edition}/{section}/v{v}.json"))
    return out


def test_a_burst_is_breaking_and_on_top_in_the_same_cycle_while_copies_are_not(world, tmp_path):
    burst_world(world)
    T, MIN = world.T0, world.MIN

    def check_fetch(fetch):  # the burst asked the ingest job to poll the matching publishers' feeds sooner
        assert fetch and {r["kind"] for r in fetch} == {"BURST"}
        assert {"daily-herald", "wirepress"} <= {r["publisher_id"] for r in fetch}
        for r in fetch:
            codec.check("FetchRequest", r)
            assert r["requested_at"] == T + 14 * MIN and r["priority"] > 0
        assert len({r["request_id"] for r in fetch}) == len(fetch)  # one request per publisher, once per burst

    stores = run_batch(world.sorted_changes(), tmp_path, check_fetch=check_fetch)
    pages = pages_by_version(stores, "us-en/top")
    minute = world.T0 // world.MIN
    # the 5-minute window ending 12:14 is the first to hold all 10 originals (12:10:00 .. 12:13:00)
    assert minute + 14 in pages, sorted(pages)
    at_burst = pages[minute + 14]["stories"]
    assert at_burst[0]["story_id"] == "7" and "breaking" in at_burst[0]["labels"]
    for v, page in pages.items():
        ids = [s["story_id"] for s in page["stories"]]
        if v < minute + 14:
            assert all("breaking" not in s["labels"] for s in page["stories"]), v
        if "8" in ids:
            entry = page["stories"][ids.index("8")]
            assert "breaking" not in entry["labels"] and ids.index("8") > 0, v  # 50 copies: never breaking, never top
            assert entry["publisher_count"] == 1


def test_pool_coverage_and_aliases_are_published(world, tmp_path):
    burst_world(world)
    world.merge(100, 101, world.T0 + 20 * world.MIN)
    stores = run_batch(world.sorted_changes(), tmp_path)
    names = stores.pointers.names()
    assert "pool/us-en" in names and "story/7" in names and "aliases" in names
    aliases = json.loads(stores.snapshots.get(f"aliases/v{stores.pointers.get('aliases')}.json"))
    assert aliases["aliases"] == {"101": "100"}
    cov = json.loads(stores.snapshots.get(f"stories/7/v{stores.pointers.get('story/7')}.json"))
    assert len(cov["articles"]) == 10 and cov["story_id"] == "7"
    top = pages_by_version(stores, "us-en/top")
    last = top[max(top)]["stories"]
    assert "101" not in {s["story_id"] for s in last}  # the merged story is gone from the page


def test_the_same_input_twice_gives_byte_identical_snapshots(world, tmp_path):
    burst_world(world)
    changes = world.sorted_changes()
    run_batch(changes, tmp_path / "a", editions=("us-en", "gb-en"))
    run_batch(list(reversed(changes)), tmp_path / "b", editions=("us-en", "gb-en"))  # any input order

    def tree(root):
        base = root / "snapshots"
        out = {}
        for dirpath, _, files in os.walk(base):
            for f in files:
                path = os.path.join(dirpath, f)
                out[os.path.relpath(path, base)] = open(path, "rb").read()
        return out

    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert len(a) > 20 and a.keys() == b.keys()
    assert all(a[k] == b[k] for k in a)
    pa, pb = (
        open_stores(StoreConfig(data_dir=str(tmp_path / "a"))),
        open_stores(StoreConfig(data_dir=str(tmp_path / "b"))),
    )
    assert {n: pa.pointers.get(n) for n in pa.pointers.names()} == {n: pb.pointers.get(n) for n in pb.pointers.names()}


def test_the_breaking_rule():
    p = BurstParams.from_config(load_config())
    assert judge_breaking(10, 5, "world", p)[0]
    assert not judge_breaking(9, 5, "world", p)[0]  # too few originals
    assert not judge_breaking(10, 4, "world", p)[0]  # too few authoritative publishers
    assert not judge_breaking(10, 5, "sports", p)[0]  # a busy topic's baseline: 10 in 5 min is not rare enough
    assert judge_breaking(12, 5, "sports", p)[0]
    assert poisson_tail(10, 0.8) == pytest.approx(1.433e-8, rel=1e-3)
    assert poisson_tail(0, 3.0) == 1.0 and poisson_tail(3, 0.0) == 0.0


def test_the_rankers_counts_reach_beams_metrics(world, tmp_path):
    """Counters sums the ranker's counts and hands them to Beam in finish_bundle (transforms/editions/beam/
    counters.py): a run's "editions" counters hold them (without the flush they would hold none)."""
    from apache_beam.metrics.metric import MetricsFilter

    burst_world(world)
    changes = world.sorted_changes()
    config = StoreConfig(data_dir=str(tmp_path))
    p = beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions())
    _ = p | beam.Create(changes) | PublishEditions(config, RankSettings(editions_only=["us-en"], overrides=QUIET))
    result = p.run()
    result.wait_until_finish()
    counters = {
        c.key.metric.name: c.committed
        for c in result.metrics().query(MetricsFilter().with_namespace("editions"))["counters"]
    }
    assert counters.get("events_received", 0) >= len(changes)  # every change, and the burst pulses
    assert counters.get("cycles", 0) > 0 and counters.get("events_folded", 0) > 0
