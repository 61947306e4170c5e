"""The feed store contract on both backends (embedded SQLite; Bigtable on the emulator, marked ``emulator``)."""

from __future__ import annotations

import threading

from stores.feeds import open_feed_store

FEED = "http://dailyherald.test/rss.xml"


def test_registry_entries_are_keyed_by_url(store_config):
    s = open_feed_store(store_config)
    s.put_feed({"url": FEED, "publisher_id": "daily-herald", "tier": "authoritative", "kind": "rss"})
    s.put_feed({"url": "http://b.test/feed", "publisher_id": "b"})
    s.put_feed({"url": FEED, "publisher_id": "daily-herald", "tier": "long_tail", "kind": "rss"})  # replaced
    feeds = {f["url"]: f for f in s.list_feeds()}
    assert set(feeds) == {FEED, "http://b.test/feed"} and feeds[FEED]["tier"] == "long_tail"
    s.delete_feed("http://b.test/feed")
    assert [f["url"] for f in s.list_feeds()] == [FEED]


def test_schedule_checkpoints_round_trip(store_config):
    s = open_feed_store(store_config)
    assert s.get_state(FEED) is None
    state = {"etag": '"abc"', "guids": {"g1": "f1"}, "next_poll_ms": 123}
    s.put_state(FEED, state)
    s.put_state(FEED, dict(state, next_poll_ms=456))
    assert open_feed_store(store_config).get_state(FEED) == dict(state, next_poll_ms=456)


def test_claims_are_create_if_absent_and_replay_safe(store_config):
    s = open_feed_store(store_config)
    assert s.claimed_by("http://x.test/a") is None
    assert s.claim("http://x.test/a", "d1", 1)
    assert s.claim("http://x.test/a", "d1", 2)  # the same discovery retried
    assert not s.claim("http://x.test/a", "d2", 3)  # another discovery of the same page
    assert open_feed_store(store_config).claimed_by("http://x.test/a") == "d1"


def test_racing_claims_have_one_winner(store_config):
    winners = []
    barrier = threading.Barrier(6)

    def worker(i):
        s = open_feed_store(store_config)
        barrier.wait()
        if s.claim("http://x.test/race", f"owner{i}", i):
            winners.append(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1


def test_websub_subscriptions(store_config):
    s = open_feed_store(store_config)
    s.put_subscription({"sub_id": "abc", "topic": FEED, "secret": "x", "state": "pending"})
    assert s.activate_subscription("nope", 60, 0) is None
    sub = s.activate_subscription("abc", 3600, 1_000)
    assert sub["state"] == "active" and sub["lease_expires_ms"] == 3_601_000
    assert [x["sub_id"] for x in s.list_subscriptions()] == ["abc"]
    assert s.get_subscription("abc")["secret"] == "x"


def test_ping_buckets_are_per_feed_and_shared(store_config):
    """The origin's ping window: one token per 30 s per feed, the same bucket for every handle."""
    a, b = open_feed_store(store_config), open_feed_store(store_config)
    url = "http://agenciasur.test/rss/ultima-hora.xml"
    a.put_feed({"url": url, "publisher_id": "agencia-sur", "tier": 1, "kind": "rss", "enabled": True})
    assert a.get_feed(url)["publisher_id"] == "agencia-sur" and a.get_feed(url + "x") is None
    t = 1_790_000_000_000
    assert a.take_ping_token(url, 1 / 30, 1, t) == (True, 0.0)
    ok, wait = b.take_ping_token(url, 1 / 30, 1, t + 1000)
    assert not ok and 28 < wait <= 29.1
    assert b.take_ping_token("http://other.test/feed.xml", 1 / 30, 1, t)[0] is True
    assert a.take_ping_token(url, 1 / 30, 1, t + 30_000)[0] is True


def _held(item: str, owner: str, first_seen_at: int, due: int) -> dict:
    return {"item": item, "owner": owner, "first_seen_at": first_seen_at, "due": due, "discovery": {"url": item}}


def test_the_outbox_holds_claimed_pages_until_settled(store_config):
    """Ingest holds every claimed page (stores/feeds.py: the outbox); the stories job settles what reached the
    article store; what stays held past its due time is what ingest republishes."""
    s = open_feed_store(store_config)
    s.hold(_held("i1", "o1", 1_000, 5_000))
    s.hold(_held("i1", "o2", 2_000, 6_000))  # a later correction of the same page
    s.hold(_held("i2", "o3", 1_500, 9_000))
    assert s.due(4_999) == []
    assert [(e["item"], e["owner"]) for e in s.due(6_000)] == [("i1", "o1"), ("i1", "o2")]
    assert s.due(9_000, limit=1)[0]["discovery"] == {"url": "i1"}
    assert s.settle("i1", 1_000) == 1  # the first version stored: the correction stays held
    assert [(e["item"], e["owner"]) for e in open_feed_store(store_config).due(10_000)] == [("i1", "o2"), ("i2", "o3")]
    s.hold(_held("i2", "o3", 1_500, 20_000))  # republished: due again later
    assert [e["item"] for e in s.due(10_000)] == ["i1"]
    s.release("i1", "o2")
    assert s.settle("i2", 1_499) == 0 and s.settle("i2", 1_500) == 1
    assert s.due(10**13) == []
