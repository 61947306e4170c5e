"""Publisher pings: one triggered poll per canonical feed per 30 s across every worker (the
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


def _signed(feed, at):
    body = json.dumps({"feed_url": feed, "at": at}).encode()
    return body, {websub.PING_PUBLISHER_HEADER: "agencia-sur", websub.PING_SIGNATURE_HEADER: websub.sign("k", body)}


def ping(app, feed, at):
    body, headers = _signed(feed, at)
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
    # forty distinct pings (the same body again would be a replay: 409, test_a_captured_ping_... below)
    statuses = [ping(env.workers[i % 2], PING_FEED, T0 + i).status_code for i in range(40)]
    assert statuses.count(202) == 1 and statuses.count(429) == 39
    assert len(requests(env)) == 1
    env.clock.now = T0 + 30_000
    assert [ping(w, PING_FEED, env.clock.now + i).status_code for i, w in enumerate(env.workers)] == [202, 429]


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


def test_a_captured_ping_replayed_after_the_window_is_refused(env):
    """A ping stays fresh for 5 min (clock skew), the feed's window is 30 s: a captured ping replayed 31 s later,
    to any worker, was accepted again. Each accepted ping is kept in a ledger in the feed store until it is stale
    anyway, and a replay is refused (409) without taking the feed's token: the publisher's next real ping works."""
    body, headers = _signed(PING_FEED, T0)
    assert env.workers[0].test_client().post("/v1/ping", data=body, headers=headers).status_code == 202
    for delay_s, worker in ((31, 1), (95, 0), (299, 1)):
        env.clock.now = T0 + delay_s * 1000
        r = env.workers[worker].test_client().post("/v1/ping", data=body, headers=headers)
        assert r.status_code == 409, (delay_s, r.get_json())
        assert r.get_json()["type"].endswith("replayed_ping")
    assert len(requests(env)) == 1
    assert ping(env.workers[0], PING_FEED, env.clock.now).status_code == 202  # a new ping: a new body
    env.clock.now = T0 + 301_000  # the captured one is now stale: refused for its age
    assert env.workers[1].test_client().post("/v1/ping", data=body, headers=headers).status_code == 400


def test_a_ping_throttled_with_429_may_be_retried_with_the_same_body(env):
    """Only accepted pings enter the ledger: a publisher retrying the very ping that got 429 after Retry-After is
    not taken for a replay."""
    assert ping(env.workers[0], PING_FEED, T0).status_code == 202
    body, headers = _signed(PING_FEED, T0 + 1000)
    env.clock.now = T0 + 1000
    assert env.workers[1].test_client().post("/v1/ping", data=body, headers=headers).status_code == 429
    env.clock.now = T0 + 31_000
    assert env.workers[1].test_client().post("/v1/ping", data=body, headers=headers).status_code == 202


def test_the_ping_ledger_is_bounded_by_the_ping_age(store_config):
    """The ledger forgets a ping after ``keep_ms`` (the origin keeps one until it would be refused as stale
    anyway): at most one entry per accepted ping of that stretch."""
    feeds = open_feed_store(store_config)
    url = "http://agenciasur.test/rss/ledger.xml"
    keep = websub.PING_MAX_AGE_MS
    assert feeds.record_ping(url, "d1", T0, keep) is True
    assert feeds.record_ping(url, "d1", T0 + 1, keep) is False  # a concurrent duplicate loses
    assert feeds.ping_seen(url, "d1") and not feeds.ping_seen(url, "d2")
    assert not feeds.ping_seen("http://agenciasur.test/rss/other.xml", "d1")  # per feed
    for i in range(2, 12):
        assert feeds.record_ping(url, f"d{i}", T0 + i * 30_000, keep) is True
    # d1 (T0) is more than keep old at T0 + 330 s: deleted (ping_seen does not look at ages); the rest is kept
    assert not feeds.ping_seen(url, "d1")
    assert all(feeds.ping_seen(url, f"d{i}") for i in range(2, 12))


def test_a_ping_dated_ahead_of_our_clock_cannot_be_replayed_either(env):
    """A ping may be dated up to 5 min ahead (clock skew): it stays fresh up to 10 min after it arrived, and so
    does its ledger entry."""
    body, headers = _signed(PING_FEED, T0 + 299_000)
    assert env.workers[0].test_client().post("/v1/ping", data=body, headers=headers).status_code == 202
    env.clock.now = T0 + 590_000
    assert env.workers[1].test_client().post("/v1/ping", data=body, headers=headers).status_code == 409
