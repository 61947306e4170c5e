"""The pointer watcher: pages follow their pointers, bad snapshots never go live, and the last loaded pages keep
serving when the stores go away (requests never read a store)."""

from __future__ import annotations

import threading
import time

import orjson
import pytest

from devtools import samples
from serving.state.watcher import RELEASE_EVERY_S, classify
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
    # A pointer store that lists fewer names stands in for a page pointer gone from the listing (story pointers are
    # retired for real below: test_retired_story_pointer_leaves_memory).
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


# ------------------------------------------------------------------------------------------------------- story memory

OLD = samples.story_id(600)  # no page or pool links to ids from 300 up: unreferenced
HOUR_S = 3600.0


def _at(ext, wall_s: float, mono_s: float) -> None:
    """Put the watcher's clocks at a given wall time (story ages) and monotonic time (the release pass)."""
    ext.watcher.wall_clock = lambda: wall_s
    ext.watcher.clock = lambda: mono_s


def _coverage_time_s(doc) -> float:
    from serving.state.catalog import _ms

    return _ms(doc["updated_at"]) / 1000


def test_retired_story_pointer_leaves_memory(app, client, world):
    ext = app.extensions["newsroom"]
    doc = samples.story_coverage(OLD, 1, samples.coverage_articles(OLD, 4))
    _at(ext, _coverage_time_s(doc) + HOUR_S, 1e6)  # fresh: held although unreferenced
    publish(world, doc)
    assert ext.watcher.poll_once()
    assert OLD in ext.holder.current.stories and client.get(f"/v1/stories/{OLD}").status_code == 200
    assert world.pointers.retire(f"story/{OLD}", 1)
    assert ext.watcher.poll_once()
    cat = ext.holder.current
    assert OLD not in cat.stories and f"story/{OLD}" not in cat.loaded
    assert client.get(f"/v1/stories/{OLD}").status_code == 404
    assert len(ext.watcher.story_cache) == 0
    # a replay of the retired version cannot bring it back; the origin stays as it is
    assert world.pointers.compare_and_set(f"story/{OLD}", None, 1) is False
    ext.watcher.poll_once()
    assert OLD not in ext.holder.current.stories


def test_old_unreferenced_story_leaves_memory_and_is_served_on_demand(app, client, world):
    ext = app.extensions["newsroom"]
    doc = samples.story_coverage(OLD, 1, samples.coverage_articles(OLD, 45))
    t0 = _coverage_time_s(doc)
    _at(ext, t0 + HOUR_S, 1e6)
    publish(world, doc)
    ext.watcher.poll_once()
    assert OLD in ext.holder.current.stories
    held = client.get(f"/v1/stories/{OLD}?limit=10")
    page2 = client.get(f"/v1/stories/{OLD}?limit=10&cursor={held.json['next_cursor']}")
    _at(ext, t0 + 47 * HOUR_S, 1e6 + RELEASE_EVERY_S)  # the release pass runs
    ext.watcher.poll_once()
    assert OLD in ext.holder.current.stories  # 47 h: still within NEWSROOM_STORY_RETAIN_S
    _at(ext, t0 + 49 * HOUR_S, 1e6 + 1.5 * RELEASE_EVERY_S)
    ext.watcher.poll_once()
    assert OLD in ext.holder.current.stories  # past retention, but the release pass is not due yet
    _at(ext, t0 + 49 * HOUR_S, 1e6 + 2 * RELEASE_EVERY_S)
    ext.watcher.poll_once()
    cat = ext.holder.current
    assert OLD not in cat.stories and cat.loaded[f"story/{OLD}"] == 1  # pointer known, story not held
    assert STORY in cat.stories  # as old, but the top page links to it: held
    real = ext.watcher.snapshots
    reads = []

    class Counting:
        def get(self, path):
            reads.append(path)
            return real.get(path)

    ext.watcher.snapshots = Counting()
    again = client.get(f"/v1/stories/{OLD}?limit=10")
    assert again.status_code == 200 and again.data == held.data and again.headers["ETag"] == held.headers["ETag"]
    cursor_page = client.get(f"/v1/stories/{OLD}?limit=10&cursor={held.json['next_cursor']}")
    assert cursor_page.data == page2.data  # cursors minted while it was held keep paging
    assert reads == [f"stories/{OLD}/v1.json"]  # one load, then the LRU
    ext.watcher.snapshots = Unreachable()
    assert client.get(f"/v1/stories/{OLD}").status_code == 200  # from the LRU
    assert client.get(f"/stories/{OLD}").status_code == 200  # the HTML Full Coverage page too
    unknown = samples.story_id(700)
    assert client.get(f"/v1/stories/{unknown}").status_code == 404  # no pointer: no store read at all
    assert ext.watcher.snapshots.calls == 0
    # a page linking to it again brings it back into memory on the next poll
    ext.watcher.snapshots = real
    publish(world, samples.edition_page(EDITION, "tech", 2, n_stories=3, first_story=600))
    ext.watcher.poll_once()
    assert OLD in ext.holder.current.stories


def test_old_unreferenced_story_is_never_held_even_on_first_load(world, profiles):
    doc = samples.story_coverage(OLD, 1, samples.coverage_articles(OLD, 3))  # dated 2025: older than 48 h
    publish(world, doc)
    app = make_app(world, profiles)
    cat = app.extensions["newsroom"].holder.current
    assert OLD not in cat.stories and cat.loaded[f"story/{OLD}"] == 1
    assert STORY in cat.stories  # referenced by the top page
    assert app.test_client().get(f"/v1/stories/{OLD}").status_code == 200


def test_on_demand_stories_are_bounded_by_the_lru(world, profiles):
    ids = [samples.story_id(610 + i) for i in range(6)]
    for sid in ids:
        publish(world, samples.story_coverage(sid, 1, samples.coverage_articles(sid, 3)))
    app = make_app(world, profiles, NEWSROOM_STORY_LRU=3)
    ext, client = app.extensions["newsroom"], app.test_client()
    assert not set(ids) & set(ext.holder.current.stories)
    for sid in ids:
        assert client.get(f"/v1/stories/{sid}").status_code == 200
    cache = ext.watcher.story_cache
    assert len(cache) == 3 and cache.loads == 6
    assert client.get(f"/v1/stories/{ids[-1]}").status_code == 200 and cache.hits == 1  # most recent: a hit
    assert client.get(f"/v1/stories/{ids[0]}").status_code == 200 and cache.loads == 7  # evicted: loaded again
    assert len(cache) == 3
    assert client.get("/readyz").json["stories_on_demand"] == 3


def test_story_store_failure_on_demand_is_a_503(world, profiles):
    publish(world, samples.story_coverage(OLD, 1, samples.coverage_articles(OLD, 3)))
    app = make_app(world, profiles)
    ext = app.extensions["newsroom"]
    ext.watcher.snapshots = Unreachable()
    r = app.test_client().get(f"/v1/stories/{OLD}")
    assert r.status_code == 503 and r.headers["Retry-After"] and "no-store" in r.headers["Cache-Control"]
    assert r.json["code"] == "story_unavailable"
