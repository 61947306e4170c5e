"""ProfileStore contract on both backends (embedded SQLite; Bigtable emulator, marked emulator)."""

from __future__ import annotations

import threading

import pytest

from stores.profiles import READS_KEPT, empty_profile, open_profile_store


@pytest.fixture
def profiles(store_config):
    return open_profile_store(store_config)


def test_unknown_reader_is_none_and_update_creates(profiles):
    assert profiles.get("nobody") is None

    def follow(doc):
        doc["follows"]["topics"].append("science")
        return doc

    doc = profiles.update("ann", follow)
    assert doc["revision"] == 1 and doc["follows"]["topics"] == ["science"] and doc["updated_at"] > 0
    got = profiles.get("ann")
    assert got["follows"]["topics"] == ["science"] and got["reads"] == [] and got["revision"] == 1
    assert profiles.update("ann", lambda d: None)["revision"] == 1  # None: no write
    assert profiles.get("ann")["revision"] == 1


def test_updates_do_not_lose_concurrent_writes(profiles):
    def add(i):
        def fn(doc):
            doc["follows"]["topics"].append(f"t{i}")
            return doc

        return fn

    profiles.update("bea", lambda d: d)  # create the row first: both first-writer paths are tested below
    threads = [threading.Thread(target=profiles.update, args=("bea", add(i))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    doc = profiles.get("bea")
    assert sorted(doc["follows"]["topics"]) == sorted(f"t{i}" for i in range(8))
    assert doc["revision"] == 9


def test_concurrent_creates_do_not_lose_writes(profiles):
    def add(i):
        def fn(doc):
            doc["hidden_sources"].append(f"p{i}")
            return doc

        return fn

    threads = [threading.Thread(target=profiles.update, args=("cid", add(i))) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(profiles.get("cid")["hidden_sources"]) == [f"p{i}" for i in range(4)]


def test_reads_keep_the_newest_and_are_idempotent(profiles):
    reads = [
        {"event_id": f"e{i}", "story_id": str(i), "at": 1_000_000 + i, "kind": "READ"} for i in range(READS_KEPT + 30)
    ]
    profiles.append_reads("dee", reads[:100])
    profiles.append_reads("dee", reads[100:])
    profiles.append_reads("dee", reads[-5:])  # replay
    got = profiles.get("dee")["reads"]
    assert len(got) == READS_KEPT
    assert [r["event_id"] for r in got] == [f"e{i}" for i in range(READS_KEPT + 29, 29, -1)]  # newest first
    assert profiles.get("dee")["revision"] == 0  # reads alone do not make a profile document


def test_delete_history_and_delete(profiles):
    profiles.update("eve", lambda d: {**d, "paused": True})
    profiles.append_reads("eve", [{"event_id": "x", "story_id": "1", "at": 5, "kind": "READ"}])
    profiles.delete_history("eve")
    got = profiles.get("eve")
    assert got["reads"] == [] and got["paused"] is True
    profiles.delete("eve")
    assert profiles.get("eve") is None


def test_empty_profile_shape():
    doc = empty_profile()
    assert set(doc) == {"follows", "hidden_sources", "fewer", "interest", "paused", "revision", "updated_at"}
    assert sorted(doc)[-2:] == ["revision", "updated_at"]  # the Bigtable CAS predicate relies on this order


def test_reads_in_one_millisecond_are_all_kept(profiles):
    """Reads were keyed by time alone, so 10 reads in one ms kept one (on the probe: 10 accepted, 6
    stored). Keyed by (time, event id) now; a replay still rewrites the same cell."""
    reads = [{"event_id": f"same-{i}", "story_id": str(i), "at": 5_000_000, "kind": "READ"} for i in range(10)]
    profiles.append_reads("eve", reads)
    profiles.append_reads("eve", reads[:4])
    got = profiles.get("eve")["reads"]
    assert sorted(r["event_id"] for r in got) == sorted(f"same-{i}" for i in range(10))


def test_write_budget_is_shared_by_every_store_handle(profiles, store_config):
    """The per-reader token bucket lives in the store: a second handle (another worker) sees the same budget, and
    concurrent takes never grant more than the burst."""
    other = open_profile_store(store_config)
    t = 1_790_000_000_000
    granted = []
    lock = threading.Lock()

    def take(store):
        ok, _ = store.take_token("flood", 0.001, 6, t)
        with lock:
            granted.append(ok)

    threads = [threading.Thread(target=take, args=(profiles if i % 2 else other,)) for i in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert granted.count(True) == 6
    assert other.take_token("someone-else", 0.001, 6, t)[0] is True
    ok, wait = profiles.take_token("flood", 1.0, 6, t + 500)
    assert not ok and 0 < wait <= 1.0
    assert profiles.take_token("flood", 1.0, 6, t + 1000)[0] is True


def test_follower_counts_follow_every_change_and_forget(profiles):
    """Aggregated follower counts per topic id (the editions stage's topic pages read them): no reader id."""

    def follows(**f):
        return lambda p: {**p, "follows": {**p["follows"], **f}}

    profiles.update("a", follows(places=["pune"], topics=["science"]))
    profiles.update("b", follows(places=["place:pune"], entities=["org:isro"]))
    profiles.update("b", follows(sources=["wirepress"]))  # sources are not topics; nothing else changed
    assert profiles.followed_topics() == {"place:pune": 2, "topic:science": 1, "entity:org:isro": 1}
    assert list(profiles.followed_topics(limit=1)) == ["place:pune"]
    profiles.update("a", follows(topics=[]))
    profiles.delete("b")
    assert profiles.followed_topics() == {"place:pune": 1}


def test_follower_counts_survive_concurrent_follows(profiles):
    def follow(i):
        return lambda p: {**p, "follows": {**p["follows"], "topics": ["science", f"t{i % 2}"]}}

    threads = [threading.Thread(target=profiles.update, args=(f"r{i}", follow(i))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert profiles.followed_topics() == {"topic:science": 8, "topic:t0": 4, "topic:t1": 4}


def test_scan_reads_lists_every_reader_with_recent_reads_except_paused_ones(profiles):
    def read(n, at):
        return {"event_id": f"e{n}", "story_id": str(100 + n), "article_id": None, "at": at, "kind": "READ"}

    profiles.append_reads("b", [read(1, 1000), read(2, 5000)])
    profiles.append_reads("a", [read(3, 6000), {**read(4, 7000), "story_id": None}])
    profiles.append_reads("old", [read(5, 10)])
    profiles.append_reads("quiet", [read(6, 9000)])
    profiles.update("quiet", lambda d: {**d, "paused": True})
    profiles.update("nobody-read", lambda d: d)
    assert list(profiles.scan_reads()) == [("a", ["103"]), ("b", ["101", "102"]), ("old", ["105"])]
    assert list(profiles.scan_reads(since_ms=2000)) == [("a", ["103"]), ("b", ["102"])]
    profiles.delete("b")
    assert [r for r, _ in profiles.scan_reads(since_ms=2000)] == ["a"]
