"""Ordering: the local ingest checkpoints a feed's state only after the items that poll
discovered are durably published (outbox order), so a crash between the poll and the publishing loses nothing.

The crash is real: the first ingest runs in a child process whose page fetches hang after the poll, and the test
kills it (SIGKILL) there. A restart on the same data directory must publish every item of the feed; duplicates
would be fine (the stories job dedupes), losses are not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtools.world.server import SampleWorld
from schemas import codec
from stores import StoreConfig, open_store

WORLD_AT = 1000.0  # articles with at <= WORLD_AT are public; the next release is 10+ s away
FEED = "http://dailyherald.test/rss.xml"
REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import os, sys, threading, time
from pathlib import Path
from transforms.ingest import poller
from pipelines.ingest_options import IngestOptions
from pipelines.ingest_local import LocalIngest

marker = Path(sys.argv[1])
real = poller.fetch_page

def hang(fetcher, discovery, store, now_ms, **_):
    # the poll is done and an item is being fetched: crash here. Written whole (several fetch workers get here
    # at once, and two writes into one file tore a URL: tests/pipelines/test_crash_replay.py)
    tmp = marker.with_name(f"{marker.name}.{threading.get_ident()}")
    tmp.write_text(discovery.url)
    os.replace(tmp, marker)
    time.sleep(3600)

poller.fetch_page = hang
LocalIngest.from_options(IngestOptions(sys.argv[2:])).run(max_run_s=120)
"""


def published_urls(data_dir) -> list[str]:
    bus = open_store("bus", StoreConfig(data_dir=str(data_dir)))
    bus.ensure_topic("items-raw")
    rows = bus.db.connect().execute("SELECT data FROM bus_messages WHERE topic='items-raw' ORDER BY id").fetchall()
    return [codec.decode("RawItem", r[0])["fetched_url"] for r in rows]


@pytest.mark.timeout(120)
def test_a_crash_between_poll_and_publish_loses_no_item(tmp_path):
    from pipelines.ingest_local import LocalIngest
    from pipelines.ingest_options import IngestOptions

    world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    try:
        feeds = tmp_path / "feeds.json"
        feeds.write_text(json.dumps({"feeds": [f for f in world.feeds() if f["url"] == FEED]}))
        data = tmp_path / "data"
        argv = [
            f"--data_dir={data}",
            f"--feeds={feeds}",
            "--min_host_delay_s=0",
            "--fetch_workers=1",
            "--host_overrides=" + ",".join(f"{h}={t}" for h, t in world.host_overrides.items()),
        ]
        expected = sorted(
            a["url"]
            for a in world.articles.values()
            if a["pub"] == "daily-herald" and world.is_public(a, world.clock.now_ms())
        )
        assert len(expected) >= 2

        marker = tmp_path / "fetching"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(marker), *argv], cwd=str(REPO), env=env, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 60
            while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert marker.exists(), f"the first ingest never reached a page fetch (exit {child.poll()})"
            time.sleep(0.3)  # let the loop go on past the poll (it would checkpoint there if it were going to)
        finally:
            os.killpg(child.pid, signal.SIGKILL)  # the crash
            child.wait(timeout=10)
        assert published_urls(data) == []  # nothing got out before the crash

        restarted = LocalIngest.from_options(IngestOptions(argv))
        stats = restarted.run(max_run_s=3.0)
        restarted.stop()
        got = published_urls(data)
        assert sorted(set(got)) == expected, (stats, got)  # every item published after the restart: none lost

        again = LocalIngest.from_options(IngestOptions(argv))  # and now that they are out, the checkpoint holds them
        again.run(max_run_s=1.5)
        again.stop()
        assert sorted(set(published_urls(data))) == expected and len(published_urls(data)) == len(got)
    finally:
        world.stop()


@pytest.mark.timeout(60)
def test_a_failed_publish_is_retried_and_the_checkpoint_waits_for_it(tmp_path):
    from pipelines.ingest_local import LocalIngest
    from pipelines.ingest_options import IngestOptions
    from stores.base import StoreError
    from stores.feeds import open_feed_store

    world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    try:
        feeds = tmp_path / "feeds.json"
        feeds.write_text(json.dumps({"feeds": [f for f in world.feeds() if f["url"] == FEED]}))
        data = tmp_path / "data"
        argv = [f"--data_dir={data}", f"--feeds={feeds}", "--min_host_delay_s=0", "--fetch_workers=1"]
        ingest = LocalIngest.from_options(IngestOptions(argv), host_overrides=world.host_overrides)
        real = ingest.bus.publish_record
        checkpoints_while_failing = []

        def flaky(topic, record, **kw):
            if topic.endswith("items-raw") and not checkpoints_while_failing:
                checkpoints_while_failing.append(open_feed_store(StoreConfig(data_dir=str(data))).get_state(FEED))
                raise StoreError("injected: the bus did not take the message")
            return real(topic, record, **kw)

        ingest.bus.publish_record = flaky
        stats = ingest.run(max_run_s=3.0)
        ingest.stop()
        assert checkpoints_while_failing == [None]  # no checkpoint while an item of the poll was not out
        assert stats["publish_retries"] == 1
        expected = sorted(
            a["url"]
            for a in world.articles.values()
            if a["pub"] == "daily-herald" and world.is_public(a, world.clock.now_ms())
        )
        assert sorted(set(published_urls(data))) == expected
        assert open_feed_store(StoreConfig(data_dir=str(data))).get_state(FEED)  # checkpointed once all were out
    finally:
        world.stop()
