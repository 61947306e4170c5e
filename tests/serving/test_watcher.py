"""The pointer watcher: pages follow their pointers, bad snapshots never go live, and the last loaded pages keep
serving when the stores go away (requests never read a store)."""

from __future__ import annotations

import threading
import time

import orjson
import pytest

from devtools import samples
from serving.watcher import classify
from stores.base import StoreError
from tests.serving.helpers import EDITION, STORY, make_app, publish, shared_urls

TOP = f"/v1/editions/{EDITION}/sections/top"


class Unreachable:
    """A store whose every call fails the way a dead backend does."""

    def __init__(self):
        self.calls = 0

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            self.calls += 1
            raise StoreError(f"{name}: connection refused")

        return fail


def test_pointer_move_is_served_after_the_next_poll(app, client, world):
    v1 = client.get(TOP)
    publish(world, samples.edition_page(EDITION, "top", 2, n_stories=12))
    assert client.get(TOP).data == v1.data  # nothing changes until the watcher polls
    assert app.extensions["newsroom"].watcher.poll_once()
    v2 = client.get(TOP)
    assert orjson.loads(v2.data)["version"] == 2 and v2.headers["ETag"] != v1.headers["ETag"]
    # rollback = moving the pointer back
    world.pointers.rollback(f"{EDITION}/top")
    app.extensions["newsroom"].watcher.poll_once()
    assert client.get(TOP).data == v1.data


def test_invalid_or_missing_snapshot_never_goes_live(app, client, world):
    v1 = client.get(TOP).data
    bad = samples.edition_page(EDITION, "top", 2, n_stories=5)
    bad["stories"][0]["rank"] = 0  # schema: rank >= 1
    world.snapshots.put(f"pages/{EDITION}/top/v2.json", orjson.dumps(bad))
    world.pointers.compare_and_set(f"{EDITION}/top", 1, 2)
    assert app.extensions["newsroom"].watcher.poll_once()  # the stores answered; the object was refused
    assert client.get(TOP).data == v1
    world.pointers.compare_and_set(f"{EDITION}/top", 2, 3)  # pointer to an object that does not exist
    app.extensions["newsroom"].watcher.poll_once()
    assert client.get(TOP).data == v1
    publish(world, samples.edition_page(EDITION, "top", 4, n_stories=5))
    app.extensions["newsroom"].watcher.poll_once()
    assert orjson.loads(client.get(TOP).data)["version"] == 4


def test_pages_keep_serving_after_the_stores_go_away(world, profiles, auth):
    app = make_app(world, profiles)
    client = app.test_client()
    before = {url: client.get(url).data for url in shared_urls()}
    feed_before = client.get(f"/v1/feed/for-you?edition={EDITION}", headers=auth("r1"))
    assert feed_before.status_code == 200
    ext = app.extensions["newsroom"]
    dead_pointers, dead_snapshots, dead_profiles = Unreachable(), Unreachable(), Unreachable()
    ext.watcher.pointers, ext.watcher.snapshots = dead_pointers, dead_snapshots
    ext.profile_cache.store = dead_profiles
    ext.profile_cache.clock = lambda: time.monotonic() + 3600  # cached profiles expired: the store read fails
    assert ext.watcher.poll_once() is False
    assert dead_pointers.calls == 1
    for url, body in before.items():
        r = client.get(url)
        assert r.status_code == 200 and r.data == body, url
    assert dead_snapshots.calls == 0  # shared requests never touched a store
    assert client.get("/readyz").status_code == 200
    assert "connection refused" in client.get("/readyz").json["last_error"]
    feed = client.get(f"/v1/feed/for-you?edition={EDITION}", headers=auth("r1"))
    assert feed.status_code == 200 and feed.data == feed_before.data  # last cached profile, same ranking
    assert client.get(f"/v1/feed/for-you?edition={EDITION}", headers=auth("someone-new")).status_code == 200
    assert dead_profiles.calls == 2


def test_requests_read_no_store_at_all(world, profiles):
    """Stronger than the above: stores replaced before any request; every shared endpoint still answers."""
    app = make_app(world, profiles)
    ext = app.extensions["newsroom"]
    ext.stores = ext.watcher.pointers = ext.watcher.snapshots = Unreachable()
    client = app.test_client()
    for url in shared_urls():
        assert client.get(url).status_code == 200, url
    assert ext.watcher.pointers.calls == 0


def test_swap_is_atomic_under_concurrent_reads(app, world):
    """Readers racing pointer moves always get a complete page whose ETag matches its bytes' version."""
    ext = app.extensions["newsroom"]
    errors = []
    stop = threading.Event()

    def read():
        client = app.test_client()
        while not stop.is_set():
            r = client.get(TOP)
            doc = orjson.loads(r.data)
            page = ext.holder.current.pages[(EDITION, "top")]
            if len(doc["stories"]) != 3 * doc["version"] + 27:
                errors.append(("torn page", doc["version"]))
            if doc["version"] == page.version and r.headers["ETag"] != page.body(None)[1]:
                errors.append(("etag", doc["version"]))

    threads = [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for v in range(2, 8):
            publish(world, samples.edition_page(EDITION, "top", v, n_stories=3 * v + 27))
            ext.watcher.poll_once()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:5]
    assert ext.holder.current.pages[(EDITION, "top")].version == 7


def test_vanished_pointer_drops_its_page(app, client, world):
    # The embedded store has no delete: a watcher with a pointer store that lists fewer names stands in for it.
    ext = app.extensions["newsroom"]
    real = ext.watcher.pointers

    class Fewer:
        def names(self, prefix=""):
            return [n for n in real.names(prefix) if n != f"{EDITION}/tech"]

        def get(self, name):
            return real.get(name)

    ext.watcher.pointers = Fewer()
    ext.watcher.poll_once()
    assert client.get(f"/v1/editions/{EDITION}/sections/tech").status_code == 404
    assert client.get(TOP).status_code == 200


@pytest.mark.parametrize(
    "name,expected",
    [
        ("us-en/top", ("edition_page", "pages/us-en/top/v3.json")),
        ("pool/us-en", ("candidate_pool", "pools/us-en/v3.json")),
        (f"story/{STORY}", ("story_coverage", f"stories/{STORY}/v3.json")),
        ("aliases", ("aliases", "aliases/v3.json")),
        ("feeds/x/y", None),
    ],
)
def test_pointer_names_map_to_snapshot_paths(name, expected):
    assert classify(name, 3) == expected
