"""The ingest job's Beam graph (pipelines.ingest.build_pipeline) on the Pub/Sub emulator, streaming on
BundleBasedDirectRunner: fetch requests read with Pub/Sub's streaming source, raw items published in batches.

The registry ticks come from a heartbeat subscription instead of PeriodicImpulse (which the direct runner cannot
run; LOCAL_STACK.md); everything else is the graph that Dataflow runs.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

from devtools.world.server import SampleWorld
from stores import StoreConfig, open_stores

WORLD_AT = 1000.0
FEED = "http://wirepress.test/feeds/world.xml"
HELD_BACK = "calder-bay-quake-injuries-power"  # released during the test, found by the requested poll


def _wait_for(bus, subscription, topic, predicate, timeout_s: float) -> list[dict]:
    """Pull (and ack) records until ``predicate(records so far)`` holds or the time is up; returns them all."""
    got: list[dict] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not predicate(got):
        msgs = bus.pull(subscription, 100, timeout=1.0)
        got += [bus.decode(topic, m) for m in msgs]
        if msgs:
            bus.ack(subscription, [m.ack_id for m in msgs])
    return got


class FlakyFeedStore:
    """The feed store, failing as an unreachable store would (a transient StoreError) twice while the requested
    poll is processed: its first checkpoint of a feed state that has seen ``slug`` (in ScheduleFeedFn, after the
    poll) and its first claim of the page ``slug`` (in FetchPageFn, before the fetch)."""

    def __init__(self, inner, slug: str, faults: list):
        self.inner, self.slug, self.faults = inner, slug, faults

    def _fail_once(self, what: str):
        from stores.base import StoreError

        if what not in self.faults:
            self.faults.append(what)
            raise StoreError(f"injected: the feed store did not answer ({what})")

    def put_state(self, url, state):
        if any(self.slug in g for g in (state.get("guids") or {})):
            self._fail_once("put_state")
        return self.inner.put_state(url, state)

    def claim(self, key, owner, now_ms=None):
        if self.slug in key:
            self._fail_once("claim")
        return self.inner.claim(key, owner, now_ms)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.emulator
@pytest.mark.timeout(240)
def test_a_fetch_request_gives_a_raw_item_and_a_failed_one_is_retried_not_lost(emulator_stack, tmp_path, monkeypatch):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner

    from pipelines.ingest import build_pipeline
    from pipelines.ingest_options import IngestOptions, resolve
    from stores.beam_io import HEARTBEAT_ATTRIBUTE, ReadBus, ensure_subscription
    from transforms.ingest import beam as ingest_beam

    world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT)
    world.articles[HELD_BACK]["at"] = 10**9  # not public yet
    world.start()
    config = StoreConfig(
        backend="embedded",
        data_dir=str(tmp_path / "data"),
        bus="pubsub",
        project=emulator_stack.project,
        namespace=f"t{uuid.uuid4().hex[:10]}",
    )
    feeds = tmp_path / "feeds.json"
    feeds.write_text(json.dumps({"feeds": [f for f in world.feeds() if f["url"] == FEED]}))
    argv = [
        f"--data_dir={config.data_dir}",
        "--bus=pubsub",
        f"--project={config.gcp_project}",
        f"--namespace={config.namespace}",
        f"--feeds={feeds}",
        "--min_host_delay_s=0",
        "--host_overrides=" + ",".join(f"{h}={t}" for h, t in world.host_overrides.items()),
        "--streaming",
    ]
    stores = open_stores(config)
    bus = stores.bus
    ensure_subscription(config, "fetch-requests", "ingest-fetch-requests")
    ensure_subscription(config, "fetch-requests", "test-ticks")
    bus.ensure_subscription("items-raw", "test-items")
    bus.ensure_subscription("dead-letter-ingest", "test-dead")

    faults: list = []
    real_store = ingest_beam.shared_feed_store
    monkeypatch.setattr(
        ingest_beam, "shared_feed_store", lambda ctx: FlakyFeedStore(real_store(ctx), HELD_BACK, faults)
    )

    from stores import gcp

    batches: list[int] = []  # sizes of the publish calls to items-raw
    real_publish_many = gcp.PubSubBus.publish_many

    def spy(self, topic, items):
        items = list(items)
        if topic == "items-raw":
            batches.append(len(items))
        return real_publish_many(self, topic, items)

    monkeypatch.setattr(gcp.PubSubBus, "publish_many", spy)

    stop = threading.Event()

    def heartbeat():  # moves the Pub/Sub watermark and, through test-ticks, reloads the registry
        while not stop.wait(0.5):
            bus.publish("fetch-requests", b"", {HEARTBEAT_ATTRIBUTE: "1"})

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    options = IngestOptions(argv)
    p = beam.Pipeline(runner=BundleBasedDirectRunner(), options=PipelineOptions(argv))
    ticks = p | "TestTicks" >> ReadBus(config, "fetch-requests", "test-ticks")
    build_pipeline(p, resolve(options), registry_ticks=ticks)
    result = p.run()
    try:
        now = world.clock.now_ms()
        public = {a["url"] for a in world.articles.values() if a["pub"] == "wirepress" and world.is_public(a, now)}
        first = _wait_for(bus, "test-items", "items-raw", lambda got: {i["fetched_url"] for i in got} >= public, 90)
        assert {i["fetched_url"] for i in first} >= public, "the registry's first poll published no raw items"
        assert not faults
        assert len(public) >= 2 and max(batches) > 1 and len(batches) < len(first), batches  # published in batches

        world.release_now(HELD_BACK)
        request = {
            "schema_version": 1,
            "request_id": "ping-1",
            "kind": "PING",
            "feed_url": FEED,
            "url": None,
            "publisher_id": "wirepress",
            "priority": 0,
            "reason": "ping",
            "requested_at": int(time.time() * 1000),
            "expires_at": None,
        }
        bus.publish_record("fetch-requests", request)
        bus.publish("fetch-requests", b"\x00not a request")  # dead-lettered, the rest goes on
        later = _wait_for(
            bus, "test-items", "items-raw", lambda got: any(i["fetched_url"].endswith(HELD_BACK) for i in got), 90
        )
        assert [i["source"] for i in later if i["fetched_url"].endswith(HELD_BACK)] == ["PING"]
        assert faults == ["put_state", "claim"], "the injected failures did not happen: the test proves nothing"
        dead = _wait_for(bus, "test-dead", "dead-letter-ingest", lambda got: got, 30)
        dead += _wait_for(bus, "test-dead", "dead-letter-ingest", lambda got: False, 2)
        assert {d["reason"] for d in dead} == {"bad_fetch_request"}, dead
        assert len(world.requests_for("wirepress.test", f"/news/{HELD_BACK}")) == 1  # fetched once
    finally:
        result.cancel()
        stop.set()
        beat.join(timeout=5)
        world.stop()
