"""The co-visitation job end to end: ReadEvents on the bus -> `newsroom covisit` -> neighbour lists in the store.

Embedded bus (bounded, FnApiRunner) and the Pub/Sub emulator (streaming, BundleBasedDirectRunner; Bigtable for the
gcp backend, SQLite with --bus=pubsub), as tests/pipelines/test_stories_job.py runs the stories job.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from schemas import codec
from stores import StoreConfig, open_stores
from stores.covisit import open_covisit_store
from tests.pipelines.test_stories_job import store_argv

A, B, C, D = 7_394_201_113_445_597_184, 7_394_201_113_445_597_185, 7_394_201_113_445_597_186, 42


def read(reader: str, story: int, at: int, n: int) -> dict:
    return codec.check(
        "ReadEvent",
        {
            "event_id": f"{reader}-{n}",
            "reader_id": reader,
            "kind": "READ",
            "edition": "us-en",
            "story_id": story,
            "article_id": None,
            "at": at,
            "dwell_ms": 20_000,
        },
    )


def reads(now: int) -> list[dict]:
    """Three readers read A then B (one of them also C); one reads D alone; every event is published twice."""
    out = []
    for r in range(3):
        out += [read(f"r{r}", A, now - 60_000, 1), read(f"r{r}", B, now - 30_000 + r, 2)]
    out += [read("r0", C, now - 10_000, 3), read("r9", D, now - 5_000, 1)]
    return out + [dict(e) for e in out]


def check(config: StoreConfig) -> dict:
    got = open_covisit_store(config).get_many([A, B, C, D])
    return {s: [n for n, _ in items] for s, (items, _) in got.items()}


WANT = {A: [B, C], B: [A, C], C: [A, B]}


def test_the_job_on_the_embedded_bus(embedded_store_config):
    from pipelines.covisit import run

    config = embedded_store_config
    stores = open_stores(config)
    stores.bus.ensure_subscription("read-events", "covisit-read-events")
    stores.bus.ensure_subscription("dead-letter", "test-dead")
    for e in reads(1_767_225_600_000):
        stores.bus.publish_record("read-events", e)
    stores.bus.publish("read-events", b"\x00not avro")  # dead-lettered, nothing else lost
    run(store_argv(config))
    got = open_covisit_store(config).get_many([A, B, C, D])
    assert {s: [n for n, _ in items] for s, (items, _) in got.items()} == WANT
    assert got[A][0][0][0] == B and abs(got[A][0][0][1] - 3.0) < 1e-3  # three readers; replays ignored
    dead = [stores.bus.decode("dead-letter", m) for m in stores.bus.pull("test-dead", 10, timeout=0.5)]
    assert [d["reason"] for d in dead] == ["undecodable_read_event"]


def test_bad_flags_are_refused_naming_the_flag(embedded_store_config):
    from pipelines.covisit import run

    with pytest.raises(ValueError, match="--top_k"):
        run(store_argv(embedded_store_config) + ["--top_k=500"])


# the pubsub-bus variant (the local main job's mode) is slow-marked to keep the clean-clone CI under 30 minutes: the
# main job's own end-to-end tests (tests/devtools/test_run.py, test_run_crash.py) run that mode in CI
@pytest.fixture(params=["gcp", pytest.param("pubsub-bus", marks=pytest.mark.slow)])
def streaming_config(request, tmp_path):
    if request.param == "gcp":
        return request.getfixturevalue("gcp_store_config")
    state = request.getfixturevalue("emulator_stack")
    return StoreConfig(
        backend="embedded",
        data_dir=str(tmp_path / "local"),
        bus="pubsub",
        project=state.project,
        namespace=f"t{uuid.uuid4().hex[:10]}",
    )


@pytest.mark.emulator
def test_the_streaming_job_on_the_emulators(streaming_config):
    """ReadEvents published to the emulator topic -> the streaming job -> neighbour lists in the store."""
    from pipelines.covisit import run
    from stores.beam_io import HEARTBEAT_ATTRIBUTE

    config = streaming_config
    stores = open_stores(config)
    stores.bus.ensure_subscription("read-events", "covisit-read-events")
    events = reads(int(time.time() * 1000))
    stores.bus.publish_many(
        "read-events", [(codec.encode("ReadEvent", e), codec.attributes("ReadEvent")) for e in events]
    )
    stop = threading.Event()

    def heartbeat():  # Pub/Sub's watermark follows the wall clock only while messages flow (LOCAL_STACK.md)
        while not stop.wait(1.0):
            stores.bus.publish("read-events", b"", {HEARTBEAT_ATTRIBUTE: "1"})

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    result = run(store_argv(config) + ["--flush_s=2"], wait=False)
    try:
        deadline, got = time.time() + 180, {}
        while time.time() < deadline:
            got = check(config)
            if got == WANT:
                break
            time.sleep(0.5)  # one read of four rows: a 2 s poll cost up to 2 s after the lists were there
        assert got == WANT
    finally:
        result.cancel()  # before the heartbeat stops: its pull returns at the next message, not after 30 s idle
        stop.set()
        beat.join(timeout=5)
