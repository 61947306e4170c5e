"""A crash loses nothing: every page ingest claimed reaches the article store exactly once, after a ``kill -9`` of
the ingest job or of the stories job (``newsroom run`` as a whole: tests/devtools/test_run_crash.py).

Why it could be lost: a claimed page is "seen", so nothing fetches it again; if its RawItem then never reaches the
article store (the stories job had acknowledged it when it was killed; the Pub/Sub emulator lost it; ingest was
killed between the claim and the publish and the feed no longer lists the item) it was gone for good. The outbox
(stores/feeds.py) holds each claimed page until the stories job settles it, and ingest republishes what is still
held after ``--replay_after_s``.

The crashes are real: the job runs in a child process with one step made to hang at the moment that matters, and
the test kills its process group with SIGKILL there. The sample world serves the pages (at 1x, about 40 public
articles); the stories job runs with the hash embedder (seconds).
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
from stores import StoreConfig, open_store
from stores.feeds import open_feed_store
from transforms.articles.urls import article_id, clean

REPO = Path(__file__).resolve().parents[2]
WORLD_AT = 1000.0  # seconds of the world already released: ~40 public articles
GRACE_S = 2.0  # --replay_after_s of every ingest run here
FAR = 10**15  # a due time after every entry's

STORIES_HANGS_AFTER_ONE = r"""
import sys, time
from pathlib import Path
from transforms.articles import dedupe

marker, real, calls = Path(sys.argv[1]), dedupe.decide, []

def decide(store, article):  # the first article is stored; the job is killed while deciding the second
    if calls:
        marker.write_text(article["fetched_url"])
        time.sleep(3600)
    calls.append(article["fetched_url"])
    return real(store, article)

dedupe.decide = decide
from pipelines.stories import run
run(sys.argv[2:])
"""

INGEST_HANGS_AFTER_CLAIM = r"""
import os, sys, threading, time
from pathlib import Path
from pipelines.ingest_options import IngestOptions
from pipelines.ingest_local import LocalIngest
from transforms.ingest.fetcher import Fetcher

marker, real = Path(sys.argv[1]), Fetcher.fetch

def mark(url):  # whole or not at all: the fetch workers get here at once, and two writes tore the URL
    tmp = marker.with_name(f"{marker.name}.{threading.get_ident()}")
    tmp.write_text(url)
    os.replace(tmp, marker)
overrides = dict(kv.split("=", 1) for kv in sys.argv[2].split(","))

def fetch(self, url, *a, **kw):  # the feed is fetched; its pages are claimed, then the job is killed
    if url == "http://dailyherald.test/rss.xml" or url.endswith("/robots.txt"):
        return real(self, url, *a, **kw)
    mark(url)
    time.sleep(3600)

Fetcher.fetch = fetch
LocalIngest.from_options(IngestOptions(sys.argv[3:]), host_overrides=overrides).run(max_run_s=120)
"""


class World:
    """The sample world at 1x with WORLD_AT seconds released, and the ingest flags that poll it."""

    def __init__(self, tmp_path: Path, config: StoreConfig, feeds=None):
        open_store("bus", config).ensure_subscription("items-raw", "stories-items-raw")  # as `newsroom run` does
        self.world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
        registry = tmp_path / "feeds.json"
        chosen = [f for f in self.world.feeds() if feeds is None or f["url"] in feeds]
        registry.write_text(json.dumps({"feeds": chosen}))
        self.overrides = ",".join(f"{h}={t}" for h, t in self.world.host_overrides.items())
        self.argv = [
            *store_argv(config),
            f"--feeds={registry}",
            "--min_host_delay_s=0",
            f"--replay_after_s={GRACE_S}",
        ]

    def ingest(self, seconds: float, argv=None) -> dict:
        from pipelines.ingest_local import LocalIngest
        from pipelines.ingest_options import IngestOptions

        ingest = LocalIngest.from_options(IngestOptions(argv or self.argv), host_overrides=self.world.host_overrides)
        try:
            return ingest.run(max_run_s=seconds)
        finally:
            ingest.stop()

    def stop(self) -> None:
        self.world.stop()


def store_argv(config: StoreConfig) -> list[str]:
    from tests.pipelines.test_stories_job import store_argv as argv

    return argv(config)


def held_urls(config: StoreConfig) -> set[str]:
    """The claimed pages the outbox still holds (not yet settled by the stories job)."""
    return {e["discovery"]["url"] for e in open_feed_store(config).due(FAR, limit=10_000)}


def stored(config: StoreConfig, urls) -> dict[str, dict]:
    """url -> its article in the article store (absent: not stored)."""
    articles = open_store("articles", config)
    found = {u: articles.get(article_id(clean(u))) for u in urls}
    return {u: a for u, a in found.items() if a is not None}


def run_child(script: str, args: list[str], marker: Path, timeout_s: float = 120) -> str:
    """Run ``script`` in its own process group until it writes ``marker``, then SIGKILL the group (the crash).
    Returns what the marker says."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(marker), *args], cwd=str(REPO), env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), f"the child never reached the crash point (exit {child.poll()})"
        time.sleep(0.3)
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:  # it had exited (the assertion above says how)
            pass
        child.wait(timeout=10)
    return marker.read_text()


def stories_argv(config: StoreConfig) -> list[str]:
    return [*store_argv(config), "--embedder=hash", "--editions_only=us-en"]


def unstored_claims(config: StoreConfig, claimed: set[str], world: SampleWorld) -> list[str]:
    """The claimed pages that are not in the article store once under their canonical URL (version 1, unless the
    world corrected them), or are still held. What the stories job rightly does not store is not counted: a
    future-dated page (dead-lettered), a members page (robots.txt: ingest dead-letters it), and the exact text of a
    syndicated wire story under a second URL (a content duplicate: one member of each family of copies is stored,
    which one depends on arrival order)."""
    articles = open_store("articles", config)
    held = held_urls(config)
    family = {}  # copy family (the wire original's id) -> stored members
    bad, unstored = [], []
    for url in sorted(claimed):
        a = world.article_by_url(url)
        if a is None:
            bad.append(f"not an article of the world: {url}")
            continue
        got = articles.get(article_id(clean(a["url"])))
        if url in held:
            bad.append(f"held: {url}")
        elif got is None:
            unstored.append(a)
        elif got["version"] != 1 and not a.get("correction"):
            bad.append(f"version {got['version']}: {url}")  # a replay adds no version
        else:
            family.setdefault(a.get("copy_of") or a["id"], []).append(a["id"])
    for a in unstored:
        if not (a.get("future_days") or a.get("members") or (a.get("copy_of") or a["id"]) in family):
            bad.append(f"lost: {a['url']}")
    return bad


def assert_every_claim_stored_once(config: StoreConfig, claimed: set[str], world: SampleWorld) -> None:
    assert held_urls(config) == set()
    assert unstored_claims(config, claimed, world) == []


@pytest.mark.timeout(240)
def test_a_killed_stories_job_loses_no_claimed_page(tmp_path):
    from pipelines.stories import run

    config = StoreConfig(data_dir=str(tmp_path / "data"))
    world = World(tmp_path, config)
    try:
        world.ingest(4.0)
        claimed = held_urls(config)
        assert len(claimed) >= 20

        run_child(STORIES_HANGS_AFTER_ONE, stories_argv(config), tmp_path / "deciding")
        bus = open_store("bus", config)
        assert bus.pull("stories-items-raw", 1000, timeout=0.2) == []  # the job had taken every message off the bus
        assert 0 < len(stored(config, claimed)) < len(claimed)  # ... and stored only some: the rest was lost

        time.sleep(GRACE_S)
        stats = world.ingest(2.0)  # the restarted ingest republishes what the article store does not have
        assert stats.get("replayed", 0) >= len(claimed) - len(stored(config, claimed)), stats
        run(stories_argv(config))
        assert_every_claim_stored_once(config, claimed, world.world)
    finally:
        world.stop()


@pytest.mark.timeout(240)
def test_a_killed_ingest_loses_no_claimed_page(tmp_path):
    """Killed between a page's claim and its publish, after which its feed no longer lists it (here: the feed left
    the registry): the restarted ingest polls nothing that would find it again, the outbox republishes it."""
    from pipelines.stories import run

    config = StoreConfig(data_dir=str(tmp_path / "data"))
    world = World(tmp_path, config, feeds={"http://dailyherald.test/rss.xml"})
    try:
        url = run_child(INGEST_HANGS_AFTER_CLAIM, [world.overrides, *world.argv], tmp_path / "fetching")
        assert open_feed_store(config).claimed_by(url) is not None  # claimed: no poll would fetch it again
        claimed = held_urls(config)  # the pages being fetched when it was killed (one per fetch worker)
        assert url in claimed and stored(config, claimed) == {}

        empty = tmp_path / "none.json"
        empty.write_text(json.dumps({"feeds": []}))
        time.sleep(GRACE_S)
        world.ingest(2.0, [*world.argv, f"--feeds={empty}"])
        run(stories_argv(config))
        assert_every_claim_stored_once(config, claimed, world.world)
    finally:
        world.stop()


@pytest.mark.emulator
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_streaming_stories_job_loses_no_claimed_page_on_the_emulators(gcp_store_config, tmp_path):
    """The same crash on the cloud's stores: Pub/Sub (whose messages the local streaming runner acknowledges as
    soon as it pulls them) and Bigtable (the feed store's outbox, the article store)."""
    import threading

    from pipelines.stories import run
    from stores.beam_io import HEARTBEAT_ATTRIBUTE

    config = gcp_store_config
    world = World(tmp_path, config)
    try:
        world.ingest(4.0)
        claimed = held_urls(config)
        assert len(claimed) >= 20

        run_child(STORIES_HANGS_AFTER_ONE, stories_argv(config), tmp_path / "deciding", timeout_s=240)
        assert 0 < len(stored(config, claimed)) < len(claimed)  # what the killed job had pulled was acknowledged

        time.sleep(GRACE_S)
        world.ingest(2.0)
        bus, stop = open_store("bus", config), threading.Event()
        beat = threading.Thread(  # the watermark and cancel() need messages flowing (LOCAL_STACK.md)
            target=lambda: [
                bus.publish("items-raw", b"", {HEARTBEAT_ATTRIBUTE: "1"}) for _ in iter(lambda: stop.wait(1.0), True)
            ],
            daemon=True,
        )
        beat.start()
        result = run(stories_argv(config), wait=False)
        try:
            deadline = time.monotonic() + 300
            while unstored_claims(config, claimed, world.world) and time.monotonic() < deadline:
                time.sleep(3)
            assert_every_claim_stored_once(config, claimed, world.world)
        finally:
            result.cancel()  # before the heartbeat stops: its pull returns at the next message, not after 30 s idle
            stop.set()
    finally:
        world.stop()


@pytest.mark.timeout(120)
def test_ingest_in_a_namespace_publishes_where_the_stories_job_reads(tmp_path):
    """The bus puts topic names in the config's namespace itself; the local ingest named them once more, so with a
    namespace its items went to a topic no subscription read (found by the emulator test above)."""
    config = StoreConfig(data_dir=str(tmp_path / "data"), namespace="ns1")
    world = World(tmp_path, config, feeds={"http://dailyherald.test/rss.xml"})
    try:
        world.ingest(3.0)
        claimed = held_urls(config)
        bus = open_store("bus", config)
        got = {bus.decode("items-raw", m)["fetched_url"] for m in bus.pull("stories-items-raw", 1000, timeout=0.5)}
        assert claimed and got == claimed
    finally:
        world.stop()


def test_ingest_counts_a_replayed_page_apart_from_a_new_one(tmp_path):
    """A page republished from the outbox is the same page fetched again, not a new one: on main both counted as
    ``pages_fetched`` only, so the soak (benchmarks/soak.py) summed its two runs' fetches and found more pages
    fetched than the world released. ``pages_new`` counts each page once; ``pages_replayed`` the republishing."""
    config = StoreConfig(data_dir=str(tmp_path / "data"))
    world = World(tmp_path, config, feeds={"http://dailyherald.test/rss.xml"})
    try:
        first = world.ingest(1.5)
        claimed = held_urls(config)
        assert claimed and first["pages_new"] == first["pages_fetched"] == len(claimed), first
        again = world.ingest(1.0, [*world.argv, "--replay_held_at_start"])  # a new bus: everything held, again
        assert again["pages_replayed"] == again["pages_fetched"] == len(claimed), again
        assert again.get("pages_new", 0) == 0, again
    finally:
        world.stop()
