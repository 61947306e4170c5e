"""The For you feed invariants (DESIGN.md section 7), each pinned on the embedded stores:

- pages never repeat an item and never skip one, across pages while the edition's pool moves underneath;
- privacy is re-checked at read time, and unknown means closed: with the profile store down and nothing cached the
  page is non-personal and flagged, never a guess;
- a re-rank past its budget gives a deterministic newest-first page flagged ``degraded``;
- per-publisher and per-topic caps hold in the top of the feed;
- a reader can delete the whole profile.
"""

from __future__ import annotations

import copy
import time

import orjson
import pytest

from devtools import samples
from serving.personal import feed, ranking
from stores.base import StoreError
from tests.serving.helpers import EDITION, make_app, publish, publish_world

FEED = f"/v1/feed/for-you?edition={EDITION}"


@pytest.fixture
def small(stores, profiles):
    """An origin whose us-en pool holds 100 candidates (so a reader can page to the end within MAX_DEPTH)."""
    publish_world(stores, pool_size=100)
    app = make_app(stores, profiles)
    yield app
    app.extensions["newsroom"].close()


def page(client, headers, cursor=None, limit=20):
    url = f"{FEED}&limit={limit}" + (f"&cursor={cursor}" if cursor else "")
    r = client.get(url, headers=headers)
    assert r.status_code == 200, r.data
    return orjson.loads(r.data)


def rest_of_feed(client, headers, cursor, limit=20):
    items = []
    while cursor:
        doc = page(client, headers, cursor, limit)
        items += doc["items"]
        cursor = doc["next_cursor"]
    return items


def current_pool(app):
    return app.extensions["newsroom"].holder.current.pools[EDITION]


def move_pool(app, stores, new_ids: int, drop: list[str]) -> dict:
    """Publish the next pool version: ``new_ids`` new stories scored above everything, ``drop`` gone."""
    old = current_pool(app)
    doc = samples.candidate_pool(EDITION, old.version, n=len(old.story_ids))
    doc = copy.deepcopy(doc)
    doc["version"] = old.version + 1
    top = max(s["score"] for s in doc["stories"])
    fresh = []
    for k in range(new_ids):
        s = copy.deepcopy(doc["stories"][k])
        s["story_id"] = samples.story_id(5000 + k)
        s["score"] = top + 10 - k
        s["representative"] = dict(s["representative"], article_id=f"a-new-{k}")
        fresh.append(s)
    doc["stories"] = fresh + [s for s in doc["stories"] if s["story_id"] not in drop]
    publish(stores, doc)
    app.extensions["newsroom"].watcher.poll_once()
    assert current_pool(app).version == doc["version"]
    return doc


def test_no_item_twice_and_none_skipped_while_the_pool_moves(small, stores, auth):
    client = small.test_client()
    first = page(client, auth("alice"), limit=30)
    shown = [i["story_id"] for i in first["items"]]
    dropped = [samples.story_id(60), samples.story_id(61)]
    assert not set(dropped) & set(shown)
    v2 = move_pool(small, stores, new_ids=3, drop=dropped)  # three new stories above everything on page 1
    rest = rest_of_feed(client, auth("alice"), first["next_cursor"], limit=20)
    ids = shown + [i["story_id"] for i in rest]
    assert len(ids) == len(set(ids)), "an item came twice"
    # every story of the pool the reader pages through is shown exactly once: none skipped
    assert set(ids) == set(shown) | {s["story_id"] for s in v2["stories"]}
    assert [i["rank"] for i in first["items"] + rest] == list(range(1, len(ids) + 1))


def test_a_cursor_survives_two_pool_versions(small, stores, auth):
    client = small.test_client()
    first = page(client, auth("alice"), limit=25)
    move_pool(small, stores, new_ids=2, drop=[])
    second = page(client, auth("alice"), first["next_cursor"], limit=25)
    move_pool(small, stores, new_ids=4, drop=[])
    third = page(client, auth("alice"), second["next_cursor"], limit=25)
    ids = [i["story_id"] for d in (first, second, third) for i in d["items"]]
    assert len(ids) == len(set(ids)) == 75


def test_a_hidden_source_is_rechecked_on_the_next_page(small, auth):
    client = small.test_client()
    first = page(client, auth("alice"))
    p = current_pool(small)
    later = rest_of_feed(client, auth("bob"), page(client, auth("bob"))["next_cursor"])
    source = p.rep_publisher[p.index[later[0]["story_id"]]]
    r = client.post("/v1/me/hidden-sources", json={"source": source}, headers=auth("alice"))
    assert r.status_code == 200
    rest = rest_of_feed(client, auth("alice"), first["next_cursor"])
    assert rest and all(p.rep_publisher[p.index[i["story_id"]]] != source for i in rest)


def test_profile_store_down_gives_a_flagged_non_personal_page(small, stores, profiles, auth, monkeypatch):
    client = small.test_client()
    r = client.post("/v1/me/follows", json={"kind": "topic", "value": "science"}, headers=auth("alice"))
    assert r.status_code == 200
    neutral = page(client, auth("bob"))
    assert neutral["degraded"] is None
    # another process (nothing cached) while the profile store cannot be read
    other = make_app(stores, profiles)
    try:

        def down(reader_id):
            raise StoreError("profiles: unreachable")

        monkeypatch.setattr(other.extensions["newsroom"].profile_cache.store, "get", down)
        doc = page(other.test_client(), auth("alice"))
        assert doc["degraded"] == "profile_unavailable"
        assert [i["story_id"] for i in doc["items"]] == [i["story_id"] for i in neutral["items"]]
        assert not any(i["reason"].startswith("follows:") for i in doc["items"])
    finally:
        other.extensions["newsroom"].close()


def test_a_stale_cached_profile_still_hides_sources_when_the_store_is_down(small, auth, monkeypatch):
    client = small.test_client()
    p = current_pool(small)
    source = p.rep_publisher[p.index[page(client, auth("bob"))["items"][1]["story_id"]]]
    assert client.post("/v1/me/hidden-sources", json={"source": source}, headers=auth("alice")).status_code == 200
    cache = small.extensions["newsroom"].profile_cache
    cache.ttl_s = -1.0  # every cached entry is past its TTL from now on
    cache.view("alice")

    def down(reader_id):
        raise StoreError("profiles: unreachable")

    monkeypatch.setattr(cache.store, "get", down)
    doc = page(client, auth("alice"), limit=50)
    assert doc["degraded"] is None
    assert all(p.rep_publisher[p.index[i["story_id"]]] != source for i in doc["items"])


def test_a_rank_past_its_budget_gives_the_recency_fallback(small, auth):
    client = small.test_client()
    ext = small.extensions["newsroom"]
    p = current_pool(small)
    source = p.rep_publisher[int(p.recency[0])]
    assert client.post("/v1/me/hidden-sources", json={"source": source}, headers=auth("alice")).status_code == 200
    ext.rank_budget_s = -1.0  # any re-rank is over budget
    a = page(client, auth("alice"))
    b = page(client, auth("alice"))
    assert a["degraded"] == "rank_timeout" and a == b  # deterministic
    assert {i["reason"] for i in a["items"]} == {"recent"}
    times = [(i["representative"]["published_at"], i["story_id"]) for i in a["items"]]
    assert [t for t, _ in times] == sorted((t for t, _ in times), reverse=True)
    assert all(p.rep_publisher[p.index[i["story_id"]]] != source for i in a["items"])  # hidden still hidden
    rest = rest_of_feed(client, auth("alice"), a["next_cursor"])
    ids = [i["story_id"] for i in a["items"] + rest]
    assert len(ids) == len(set(ids))


def test_publisher_and_topic_caps_in_the_top_of_the_feed(stores, profiles, auth):
    publish_world(stores, pool_size=100)
    doc = samples.candidate_pool(EDITION, 2, n=100)
    for k, s in enumerate(doc["stories"][:12]):  # one publisher's cards lead, all on one topic
        s["representative"] = dict(s["representative"], publisher_id="pub-big")
        s["topics"] = ["science"]
        s["score"] = 2000.0 - k
    publish(stores, doc)
    app = make_app(stores, profiles)
    try:
        items = page(app.test_client(), auth("alice"), limit=30)["items"]
        p = current_pool(app)
        head = items[: ranking.CAP_DEPTH]
        assert sum(i["representative"]["publisher_id"] == "pub-big" for i in head) == ranking.MAX_PER_PUBLISHER
        for topic in {t for i in head for t in p.topics[p.index[i["story_id"]]]}:
            assert sum(topic in p.topics[p.index[i["story_id"]]] for i in head) <= ranking.MAX_PER_TOPIC
        # held back, not dropped: the capped stories lead right after the capped positions
        after = [i["representative"]["publisher_id"] for i in items[ranking.CAP_DEPTH : ranking.CAP_DEPTH + 3]]
        assert after == ["pub-big"] * 3
    finally:
        app.extensions["newsroom"].close()


def test_a_reader_can_delete_the_whole_profile(small, auth):
    client = small.test_client()
    ext = small.extensions["newsroom"]
    r = client.post("/v1/me/follows", json={"kind": "topic", "value": "science"}, headers=auth("alice"))
    assert r.status_code == 200
    p = current_pool(small)
    at = int(time.time() * 1000) - 60_000
    event = {"event_id": "e1", "kind": "READ", "edition": EDITION, "story_id": p.story_ids[5], "at": at}
    assert client.post("/v1/events", json={"events": [event]}, headers=auth("alice")).status_code == 202
    assert ext.folder.drain() == 1 and ext.profiles.get("alice")["reads"]
    r = client.delete("/v1/me/profile", headers=auth("alice"))
    assert r.status_code == 204 and r.headers["Cache-Control"] == "private, no-store"
    assert ext.profiles.get("alice") is None
    prof = client.get("/v1/me/profile", headers=auth("alice")).json
    assert prof["follows"]["topics"] == [] and prof["reads"] == 0
    assert page(client, auth("alice"))["items"] == page(client, auth("nobody"))["items"]


def test_the_cursor_is_bounded_and_tamper_evident(small, auth):
    client = small.test_client()
    doc = page(client, auth("alice"), limit=50)
    assert len(doc["next_cursor"]) < 400
    forged = doc["next_cursor"][:-2] + ("AA" if not doc["next_cursor"].endswith("AA") else "BB")
    assert client.get(f"{FEED}&cursor={forged}", headers=auth("alice")).status_code == 400
    assert feed.MAX_DEPTH * 8 < 4000  # even all-absent hashes keep a request line under gunicorn's limit
