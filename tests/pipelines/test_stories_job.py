"""The stories job end to end: raw items on the bus -> articles -> stories -> pages, pools and pointers.

The raw items are the sample world's articles (devtools/world), rendered as the ingest job would have fetched them,
with first-seen times compressed (10 virtual seconds per second). The hash embedder keeps the runs fast.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time

import pytest

from schemas import codec
from stores import StoreConfig, open_stores

SPEED = 10.0


def raw_item(world, a: dict) -> dict:
    """The RawItem ingest would have produced for the world's article ``a``: fetched 1.5 s after its release."""
    from devtools.world.server import _rfc822

    rel = world.released_ms(a)
    return codec.check(
        "RawItem",
        {
            "item_id": hashlib.sha256(a["url"].encode()).hexdigest()[:32],
            "source": "FEED",
            "feed_url": None,
            "publisher_id": a["pub"],
            "fetched_url": a["url"],
            "final_url": a["url"],
            "http_status": 200,
            "headers": {"content-type": "text/html; charset=utf-8"},
            "body": world.render_article(a, rel + 1000),
            "fetched_at": rel + 1500,
            "first_seen_at": rel,
            "entry": {
                "guid": a["url"],
                "title": a["headline"],
                "link": a["url"],
                "published": _rfc822(rel),
                "summary": None,
                "language": a["lang"],
                "categories": [a.get("section") or ""],
            },
        },
    )


def world_items(start_ms: int) -> list[dict]:
    """RawItem records of the sample world's public articles, released from ``start_ms`` on."""
    from devtools.world.server import SampleWorld

    world = SampleWorld(speed=SPEED, start_s=start_ms / 1000.0)
    try:
        # robots-disallowed members pages: the ingest job never fetches them
        items = [raw_item(world, a) for a in world.articles.values() if not a.get("members")]
        return sorted(items, key=lambda i: i["first_seen_at"])
    finally:
        world._server.server_close()


def store_argv(config: StoreConfig) -> list[str]:
    argv = [f"--backend={config.backend}", f"--data_dir={config.data_dir}"]
    if config.namespace:
        argv.append(f"--namespace={config.namespace}")
    if config.bus:
        argv += [f"--bus={config.bus}", f"--project={config.gcp_project}"]
    if config.backend == "gcp":
        argv += [
            f"--bigtable_instance={config.bigtable_instance}",
            f"--snapshot_bucket={config.bucket}",
            f"--project={config.gcp_project}",
        ]
    return argv


def pages(stores, pointer: str) -> dict:
    edition, section = pointer.split("/")
    return {
        h["version"]: json.loads(stores.snapshots.get(f"pages/{edition}/{section}/v{h['version']}.json"))
        for h in stores.pointers.history(pointer)
    }


def quake_first_breaking(history: dict):
    for v in sorted(history):
        top = history[v]["stories"]
        if top and "breaking" in top[0]["labels"] and "Calder Bay" in top[0]["representative"]["title"]:
            return v
    return None


def test_the_job_on_the_embedded_bus_whatever_the_hash_seed(embedded_store_config):
    """The bounded job (``python -m pipelines.stories``, as an operator runs it) on the embedded bus, under
    PYTHONHASHSEED=1: FnApiRunner orders stages by hash, and with LinkStories reading the writer's timer output a
    bounded run under seeds 1, 2, 3 and 5 of 1-6 decided no story at all (before 09f2266). A bounded run therefore does
    not link (--links auto); its refusal of --links=on is checked on the graph (tests/pipelines/test_graph_shapes.py).
    One run checks both (a second bounded run of the world for the seed alone cost CI ~15 s)."""
    import os
    import subprocess
    import sys

    config = embedded_store_config
    stores = open_stores(config)
    stores.bus.ensure_subscription("items-raw", "stories-items-raw")
    stores.bus.ensure_subscription("fetch-requests", "test-fetch")
    stores.bus.ensure_subscription("dead-letter", "test-dead")
    start = 1_709_294_400_000
    items = world_items(start)
    for item in items:
        stores.bus.publish_record("items-raw", item)
    stores.bus.publish("items-raw", b"\x00not avro")  # an unreadable message: dead-lettered, nothing else lost
    argv = [sys.executable, "-m", "pipelines.stories", *store_argv(config), "--embedder=hash"]
    argv.append("--editions_only=us-en,gb-en,es-es,de-de")
    done = subprocess.run(argv, env={**os.environ, "PYTHONHASHSEED": "1"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    assert stores.pointers.names("story/")  # stories decided
    history = pages(stores, "us-en/top")
    assert history, stores.pointers.names()
    v = quake_first_breaking(history)
    quake = [i["first_seen_at"] for i in items if "calder-bay" in i["fetched_url"] or "quake" in i["fetched_url"]]
    assert v is not None and v * 60_000 <= (max(quake) // 60_000 + 2) * 60_000  # on top, Breaking, within a minute
    for name in ("pool/us-en", "gb-en/top", "pool/es-es", "pool/de-de"):  # es/de: too few stories for a top page
        assert stores.pointers.get(name) is not None, name
    fetch = [stores.bus.decode("fetch-requests", m) for m in stores.bus.pull("test-fetch", 500, timeout=0.5)]
    assert fetch and {f["kind"] for f in fetch} == {"BURST"}
    dead = [stores.bus.decode("dead-letter", m) for m in stores.bus.pull("test-dead", 500, timeout=0.5)]
    assert "undecodable_raw_item" in {d["reason"] for d in dead}


# the pubsub-bus variant (the local main job's mode) is slow-marked to keep the clean-clone CI under 30 minutes: the
# main job's own end-to-end tests (tests/devtools/test_run.py, test_run_crash.py) run that mode in CI
@pytest.fixture(params=["gcp", pytest.param("pubsub-bus", marks=pytest.mark.slow)])
def streaming_config(request, tmp_path):
    """gcp: Pub/Sub, Bigtable and GCS emulators. pubsub-bus: the local main job's mode (``--bus=pubsub``): the
    Pub/Sub emulator with the embedded tables and snapshots."""
    if request.param == "gcp":
        return request.getfixturevalue("gcp_store_config")
    state = request.getfixturevalue("emulator_stack")
    import uuid

    return StoreConfig(
        backend="embedded",
        data_dir=str(tmp_path / "local"),
        bus="pubsub",
        project=state.project,
        namespace=f"t{uuid.uuid4().hex[:10]}",
    )


@pytest.mark.emulator
def test_the_streaming_job_on_the_emulators(streaming_config):
    """Pub/Sub -> the streaming job on BundleBasedDirectRunner -> pages in the snapshot store (GCS, or files with
    --bus=pubsub) and pointers moving (Bigtable, or SQLite)."""
    from pipelines.stories import run
    from stores.beam_io import HEARTBEAT_ATTRIBUTE

    config = streaming_config
    stores = open_stores(config)
    stores.bus.ensure_subscription("items-raw", "stories-items-raw")
    stores.bus.ensure_subscription("fetch-requests", "test-fetch")
    now = int(time.time() * 1000)
    items = world_items(now - int(1600 / SPEED * 1000))  # every article released by now, the last ~10 s ago
    stores.bus.publish_many("items-raw", [(codec.encode("RawItem", i), codec.attributes("RawItem")) for i in items])

    stop = threading.Event()

    def heartbeat():  # Pub/Sub's watermark follows the wall clock only while messages flow (LOCAL_STACK.md)
        while not stop.wait(1.0):
            stores.bus.publish("items-raw", b"", {HEARTBEAT_ATTRIBUTE: "1"})

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    result = run(store_argv(config) + ["--embedder=hash", "--editions_only=us-en"], wait=False)
    try:
        deadline = time.time() + 300
        history = {}
        while time.time() < deadline:
            if stores.pointers.get("us-en/top") is not None:
                history = pages(stores, "us-en/top")
                if quake_first_breaking(history) is not None and stores.pointers.get("pool/us-en"):
                    break
            time.sleep(1)  # a check is a few reads; polling every 5 s cost up to 5 s after the page was there
        assert history, "no us-en/top page was published within 5 minutes"
        assert quake_first_breaking(history) is not None
        v = stores.pointers.get("us-en/top")
        assert stores.snapshots.exists(f"pages/us-en/top/v{v}.json")  # the object the pointer names is in GCS
        assert [h["version"] for h in stores.pointers.history("us-en/top")] == sorted(history)
        assert stores.pointers.names("story/")  # story coverage objects and their pointers
        fetch = [stores.bus.decode("fetch-requests", m) for m in stores.bus.pull("test-fetch", 500, timeout=2)]
        assert fetch and {f["kind"] for f in fetch} == {"BURST"}
    finally:
        result.cancel()  # before the heartbeat stops: its pull returns at the next message, not after 30 s idle
        stop.set()
        beat.join(timeout=5)


TRANSLATED_PAIR = ("port-almera-solar-desalination-plant", "port-almera-desaladora-solar")


# slow-marked to keep the clean-clone CI under 30 minutes (~60 s): the same invariant (the world's translated pair
# linked both ways on the served story pages, through the streaming job on the Pub/Sub emulator) is asserted in CI by
# the main job's end-to-end test, tests/devtools/test_run.py
@pytest.mark.slow
@pytest.mark.emulator
@pytest.mark.timeout(600)
def test_the_streaming_job_links_a_translated_pair_on_the_served_story_pages(emulator_stack, tmp_path):
    """The world's translated pair (en, es) through the streaming job (Pub/Sub emulator, embedded tables):
    LinkStories links their stories, the LINK change reaches the ranker, and each one's served story page (the
    origin built on the job's stores) lists the other."""
    import uuid

    from pipelines.stories import run
    from schemas.pages import story_path
    from stores.beam_io import HEARTBEAT_ATTRIBUTE
    from stores.profiles import open_profile_store
    from tests.serving.helpers import make_app

    config = StoreConfig(
        backend="embedded",
        data_dir=str(tmp_path / "local"),
        bus="pubsub",
        project=emulator_stack.project,
        namespace=f"t{uuid.uuid4().hex[:10]}",
    )
    stores = open_stores(config)
    stores.bus.ensure_subscription("items-raw", "stories-items-raw")
    now = int(time.time() * 1000)
    items = [
        i
        for i in world_items(now - int(300 / SPEED * 1000) - 5_000)
        if i["fetched_url"].rsplit("/", 1)[-1] in TRANSLATED_PAIR
    ]  # first seen ~5 s ago
    assert len(items) == 2
    stores.bus.publish_many("items-raw", [(codec.encode("RawItem", i), codec.attributes("RawItem")) for i in items])

    stop = threading.Event()

    def heartbeat():
        while not stop.wait(1.0):
            stores.bus.publish("items-raw", b"", {HEARTBEAT_ATTRIBUTE: "1"})

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    result = run(
        store_argv(config) + ["--embedder=hash", "--editions_only=us-en,es-es", "--link_interval_s=5"], wait=False
    )

    def stories_of_pair() -> dict:
        found = {}
        for name, version in stores.pointers.versions("story/").items():
            sid = name.split("/", 1)[1]
            doc = json.loads(stores.snapshots.get(story_path(sid, version)))
            for card in doc["articles"]:
                slug = card["url"].rstrip("/").rsplit("/", 1)[-1]
                if slug in TRANSLATED_PAIR:
                    found[slug] = (sid, list(doc.get("links") or []))
        return found

    try:
        # Usually ~45 s; the local streaming runner slows down a lot on a loaded 2-core machine (a benchmark beside
        # the suite once kept one side's page unlinked past 240 s), so the deadline is generous: it costs nothing
        # when the links come.
        deadline = time.time() + 450
        found = {}
        while time.time() < deadline:
            found = stories_of_pair()
            if len(found) == 2 and all(links for _, links in found.values()):
                break
            time.sleep(3)
        (a, links_a), (b, links_b) = found[TRANSLATED_PAIR[0]], found[TRANSLATED_PAIR[1]]
        assert a != b and links_a == [b] and links_b == [a], found
        import sqlite3

        with sqlite3.connect(config.embedded_db) as db:  # ApplyLinks: the story store holds the link both ways
            stored = set(db.execute("SELECT story_id, other_id FROM story_links").fetchall())
        assert stored == {(int(a), int(b)), (int(b), int(a))}, stored
    finally:
        result.cancel()  # before the heartbeat stops: its pull returns at the next message, not after 30 s idle
        stop.set()
        beat.join(timeout=5)
    app = make_app(
        open_stores(StoreConfig(data_dir=config.data_dir, namespace=config.namespace)),
        open_profile_store(StoreConfig(data_dir=config.data_dir, namespace=config.namespace)),
    )
    try:
        client = app.test_client()
        assert client.get(f"/v1/stories/{a}").get_json()["links"] == [b]
        assert client.get(f"/v1/stories/{b}").get_json()["links"] == [a]
    finally:
        app.extensions["newsroom"].close()
