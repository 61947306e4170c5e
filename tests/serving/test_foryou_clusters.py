"""For you's population sources: "readers like you" from the MinHash user clusters (its own reason, the paper's
score, fail-open, private: never in a shared page, dropped with the profile or the history) and trend blending
(Liu et al.: a reader's topic mix over the edition's current trend changes the order as documented)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from serving.personal import ranking
from serving.personal.clusters import W_TREND, trend_term
from serving.state.catalog import PreparedPool
from stores.userclusters import open_user_cluster_store
from tests.serving.helpers import EDITION, make_app, shared_urls
from tests.serving.test_foryou import FEED, pool, post_reads, whole_feed

CLUSTER_A, CLUSTER_B = 7_000_000_000_000_000_011, 7_000_000_000_000_000_022


def now_ms() -> int:
    return int(time.time() * 1000)


def seed_clusters(app, world, reader: str) -> list[str]:
    """The reader in two clusters whose members clicked three of the edition's lowest-scored stories."""
    p = pool(app)
    low = [p.story_ids[int(i)] for i in p.base.argsort()][:3]
    store = open_user_cluster_store(world.config)
    store.put_membership(reader, [CLUSTER_A, CLUSTER_B], now_ms())
    store.put_counts(CLUSTER_A, [(int(low[0]), 6.0), (int(low[1]), 3.0)], 10.0, now_ms())
    store.put_counts(CLUSTER_B, [(int(low[2]), 4.0)], 8.0, now_ms())
    return low


def test_readers_like_you_is_a_candidate_source_with_its_own_reason(app, client, auth, world):
    low = seed_clusters(app, world, "ann")
    read = pool(app).story_ids[40]
    post_reads(client, auth("ann"), [read])
    post_reads(client, auth("bob"), [read])  # the same profile, in no cluster
    app.extensions["newsroom"].folder.drain()
    r = client.get(f"{FEED}&limit=50", headers=auth("ann"))
    assert r.status_code == 200 and r.json["degraded"] is None
    for cid in (CLUSTER_A, CLUSTER_B):  # the reason names no cluster
        assert str(cid) not in r.get_data(as_text=True)
    ann, bob = whole_feed(client, auth("ann")), whole_feed(client, auth("bob"))
    reasons = {i["story_id"]: i["reason"] for i in ann}
    ann_rank = {i["story_id"]: n for n, i in enumerate(ann)}
    bob_rank = {i["story_id"]: n for n, i in enumerate(bob)}
    for sid in low:
        assert reasons[sid] == "readers_like_you" and ann_rank[sid] < 20 < bob_rank[sid]
    # the paper's score: 0.6 of cluster A's clicks beat 0.5 of B's and 0.3 of A's
    assert ann_rank[low[0]] < ann_rank[low[2]] < ann_rank[low[1]]


def test_deleting_the_profile_or_the_history_drops_the_membership(app, client, auth, world):
    low = seed_clusters(app, world, "cy")
    store = open_user_cluster_store(world.config)
    assert client.delete("/v1/me/profile", headers=auth("cy")).status_code == 204
    assert store.membership("cy", now_ms()) == []
    assert not any(i["reason"] == "readers_like_you" for i in whole_feed(client, auth("cy")))
    seed_clusters(app, world, "di")
    post_reads(client, auth("di"), [pool(app).story_ids[41]])  # the job clusters readers with reads
    app.extensions["newsroom"].folder.drain()
    assert any(i["story_id"] in low and i["reason"] == "readers_like_you" for i in whole_feed(client, auth("di")))
    assert client.delete("/v1/me/history", headers=auth("di")).status_code == 200
    assert store.membership("di", now_ms()) == []
    assert not any(i["reason"] == "readers_like_you" for i in whole_feed(client, auth("di")))


def test_a_membership_from_a_run_that_started_before_the_delete_is_not_used(app, client, auth, world):
    """The daily job scans the reads, the reader deletes the profile (memberships go with it), then the job writes
    the membership it computed from the erased reads: it is never used, not even once the reader reads again."""
    ext = app.extensions["newsroom"]
    store = open_user_cluster_store(world.config)
    post_reads(client, auth("ed"), [pool(app).story_ids[42]])
    ext.folder.drain()
    run_started = now_ms()
    time.sleep(0.002)
    assert client.delete("/v1/me/profile", headers=auth("ed")).status_code == 204
    low = seed_clusters(app, world, "ed")
    store.put_membership("ed", [CLUSTER_A, CLUSTER_B], run_started)  # the late write of the run
    assert not any(i["reason"] == "readers_like_you" for i in whole_feed(client, auth("ed")))
    time.sleep(0.002)
    post_reads(client, auth("ed"), [pool(app).story_ids[43]])  # a new profile after the delete
    ext.folder.drain()
    ext.cluster_cache.forget("ed")  # drops the cached answers (and the stored membership, written again below)
    store.put_membership("ed", [CLUSTER_A, CLUSTER_B], run_started)
    assert not any(i["story_id"] in low and i["reason"] == "readers_like_you" for i in whole_feed(client, auth("ed")))
    ext.cluster_cache.forget("ed")
    store.put_membership("ed", [CLUSTER_A, CLUSTER_B], now_ms())  # the next run, after the delete: used
    assert any(i["story_id"] in low and i["reason"] == "readers_like_you" for i in whole_feed(client, auth("ed")))


def test_shared_pages_are_the_same_with_clusters_and_name_none(app, client, auth, world):
    before = {u: client.get(u).get_data() for u in shared_urls()}
    seed_clusters(app, world, "eve")
    whole_feed(client, auth("eve"))
    after = {u: client.get(u).get_data() for u in shared_urls()}
    assert after == before
    assert not any(str(CLUSTER_A).encode() in body for body in after.values())


def test_a_cluster_store_error_only_drops_the_term(world, profiles, auth):
    from stores.base import StoreError

    class Down:
        def membership(self, reader_id, now, after_ms=0):
            raise StoreError("bigtable unavailable")

        def delete_membership(self, reader_id):
            raise StoreError("bigtable unavailable")

    app = make_app(world, profiles, NEWSROOM_CLUSTER_STORE=Down())
    profiles.update("fay", lambda d: d)  # a stored reader: the only kind the daily job clusters
    try:
        client = app.test_client()
        r = client.get(FEED, headers=auth("fay"))
        assert r.status_code == 200 and r.json["degraded"] is None
        assert app.extensions["newsroom"].cluster_cache.store_errors == 1
        # deleting must not pretend: the memberships could not be deleted, so the profile is kept and 503 says retry
        assert client.delete("/v1/me/profile", headers=auth("fay")).status_code == 503
    finally:
        app.extensions["newsroom"].close()


def trend_pool(sport: set[int], world: set[int] = frozenset({10, 38, 39})) -> PreparedPool:
    """40 stories, score 100 - i, no vectors (no similarity term); topics sport, world, else tech; every story its
    own publisher (no cap)."""
    stories = []
    for i in range(40):
        topic = "sport" if i in sport else "world" if i in world else "tech"
        stories.append(
            {
                "story_id": str(1000 + i),
                "score": 100.0 - i,
                "section": topic,
                "topics": [topic],
                "publishers": [f"p{i}"],
                "places": [],
                "entities": [],
                "vector": None,
                "labels": [],
                "representative": {"publisher_id": f"p{i}", "published_at": "2025-03-01T12:00:00Z"},
            }
        )
    return PreparedPool.build({"edition": EDITION, "version": 1, "cycle": "c", "stories": stories})


def reader(stories) -> ranking.ProfileView:
    return ranking.ProfileView.from_profile("r", {"reads": [{"story_id": str(1000 + i)} for i in stories]})


def test_trend_blending_lifts_a_topic_the_reader_reads_beyond_the_trend_and_not_one_everybody_reads():
    """The same reads (two sport, two world) against two editions: where sport is rare, the reader's sport is
    genuine interest and sport story 11 passes world story 10 (world being what everybody reads); where sport is
    the trend and world rare, it is the other way round and 10 stays ahead."""
    view = reader([36, 37, 38, 39])
    rare = trend_pool({11, 36, 37}, {10, 38, 39} | set(range(12, 31)))  # world is the trend, sport rare
    common = trend_pool({11, 36, 37} | set(range(12, 31)))  # sport is the trend, world rare
    for p, first, second in ((rare, 11, 10), (common, 10, 11)):
        score = ranking._score(p, view, None).score
        assert score[first] > score[second], (p.topics[10], p.topics[11])
    neutral = ranking._score(rare, ranking.ProfileView(reader_id="new"), None).score
    assert neutral[10] > neutral[11]  # no reads: the edition's own order


def test_trend_term_is_bounded_zero_for_a_new_reader_and_follows_the_formula():
    p = trend_pool({11, 36, 37})
    assert trend_term(p, []) is None
    t = trend_term(p, [p.index["1036"], p.index["1037"]])
    assert float(t.max()) <= W_TREND and float(t.min()) >= -W_TREND
    sport = float(t[11])
    # I = (N * D / T + G) / (N + G) with N = 2, D = 1, T = sport's share of the pool's score (+ 0.05 each)
    base = p.base.astype(float) + 0.05
    share = sum(base[i] for i in (11, 36, 37)) / base.sum()
    i = (2 / share + 10) / 12
    assert sport == pytest.approx(W_TREND * (i - 1) / (i + 1), rel=1e-4)
    assert float(t[0]) == pytest.approx(W_TREND * (10 / 12 - 1) / (10 / 12 + 1), rel=1e-4)  # an unread topic
    assert np.count_nonzero(t) == 40
