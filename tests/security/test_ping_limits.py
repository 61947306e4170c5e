"""Issue 12, class 6 (publisher pings): one triggered poll per canonical feed per 30 s across every worker (the
window is a token bucket in the feed store, not process memory), URL variants are one feed, and unknown feeds
neither trigger a poll nor create state."""

from __future__ import annotations

import json

import pytest

from stores import StoreConfig, open_stores
from stores.feeds import open_feed_store
from stores.profiles import open_profile_store
from tests.serving.helpers import make_app
from transforms.ingest import websub

PING_FEED = "http://agenciasur.test/rss/ultima-hora.xml"
T0 = 1_780_000_000_000


class Clock:
    now = T0

    def __call__(self):
        return self.now


@pytest.fixture
def env(tmp_path):
    cfg = StoreConfig(data_dir=str(tmp_path / "data"))
    stores = open_stores(cfg)
    stores.bus.ensure_subscription("fetch-requests", "t-requests")
    clock = Clock()

    def worker():  # one origin worker: its own app, its own feed-store connection, the same data dir
        return make_app(
            stores,
            open_profile_store(cfg),
            WEBSUB_SUBSCRIPTIONS=open_feed_store(cfg),
            NEWSROOM_PING_KEYS={"agencia-sur": "k"},
            NEWSROOM_CLOCK=clock,
        )

    workers = [worker(), worker()]

    class E:
        pass

    e = E()
    e.workers, e.bus, e.clock, e.cfg, e.stores = workers, stores.bus, clock, cfg, stores
    yield e
    for w in workers:
        w.extensions["newsroom"].close()


def ping(app, feed, at):
    body = json.dumps({"feed_url": feed, "at": at}).encode()
    headers = {websub.PING_PUBLISHER_HEADER: "agencia-sur", websub.PING_SIGNATURE_HEADER: websub.sign("k", body)}
    return app.test_client().post("/v1/ping", data=body, headers=headers)


def requests(env):
    msgs = env.bus.pull("t-requests", 1000, timeout=0.05)
    env.bus.ack("t-requests", [m.ack_id for m in msgs])
    return [env.bus.decode("fetch-requests", m) for m in msgs]


def bucket_rows(env) -> int:
    import sqlite3

    conn = sqlite3.connect(env.cfg.embedded_db)
    try:
        return conn.execute("SELECT COUNT(*) FROM rate_buckets WHERE bucket LIKE 'ping:%'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def test_forty_pings_over_two_workers_trigger_one_poll(env):
    statuses = [ping(env.workers[i % 2], PING_FEED, T0).status_code for i in range(40)]
    assert statuses.count(202) == 1 and statuses.count(429) == 39
    assert len(requests(env)) == 1
    env.clock.now = T0 + 30_000
    assert [ping(w, PING_FEED, env.clock.now).status_code for w in env.workers] == [202, 429]


VARIANTS = [
    PING_FEED + "?utm_source=x{i}",
    "HTTP://AGENCIASUR.TEST/rss/ultima-hora.xml#frag{i}",
    "http://agenciasur.test:80/rss/ultima-hora.xml?fbclid={i}",
    "http://AgenciaSur.test/rss/ultima-hora.xml?utm_medium={i}",
    "  http://agenciasur.test/rss/ultima-hora.xml#{i}",
]


def test_url_variants_are_one_feed(env):
    statuses = [ping(env.workers[i % 2], VARIANTS[i % 5].format(i=i), T0).status_code for i in range(25)]
    assert statuses.count(202) == 1, statuses
    (req,) = requests(env)
    assert req["feed_url"] == PING_FEED  # the canonical feed is polled, not the variant
    assert bucket_rows(env) == 1


def test_unknown_feeds_on_the_publishers_host_trigger_nothing_and_store_nothing(env):
    feeds = open_feed_store(env.cfg)
    before = len(feeds.list_feeds())
    statuses = [
        ping(env.workers[i % 2], f"http://agenciasur.test/rss/other-{i}.xml", T0).status_code for i in range(25)
    ]
    assert set(statuses) == {403}
    assert requests(env) == []
    assert bucket_rows(env) == 0 and len(feeds.list_feeds()) == before
    assert all(feeds.get_state(f"http://agenciasur.test/rss/other-{i}.xml") is None for i in range(25))


def test_a_feed_registered_in_the_feed_store_can_be_pinged(env):
    feeds = open_feed_store(env.cfg)
    url = "http://agenciasur.test/rss/deportes.xml"
    assert ping(env.workers[0], url, T0).status_code == 403
    feeds.put_feed({"url": url, "publisher_id": "agencia-sur", "tier": 2, "kind": "rss", "enabled": True})
    assert ping(env.workers[1], url + "?utm_campaign=z", T0).status_code == 202
    assert [r["feed_url"] for r in requests(env)] == [url]
