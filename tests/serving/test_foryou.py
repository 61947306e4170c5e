"""For you: private, a reason per item, follows lift stories, hidden sources never appear, events fold into the
profile, history controls, and load shedding that leaves shared pages answering."""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import orjson
import pytest

from serving.api import openapi
from serving.http.auth import issue_token
from serving.personal import ranking
from tests.serving.helpers import EDITION, TOKEN_SECRET, make_app

FEED = f"/v1/feed/for-you?edition={EDITION}"
REASON = re.compile(
    r"^(top_story|popular|interest|recent|edition|readers_like_you|follows:(topic|source|entity)/.+|local:.+|similar_to:[0-9]+|also_read:[0-9]+)$"
)


def item_validator():
    doc = openapi.document()
    schema = {"$ref": "#/components/schemas/ForYouFeed", "components": doc["components"]}
    return jsonschema.Draft202012Validator(schema)


def whole_feed(client, headers, limit=50):
    items, url = [], f"{FEED}&limit={limit}"
    while True:
        r = client.get(url, headers=headers)
        assert r.status_code == 200, r.data
        doc = orjson.loads(r.data)
        items += doc["items"]
        if not doc["next_cursor"]:
            return items
        url = f"{FEED}&limit={limit}&cursor={doc['next_cursor']}"


def pool(app):
    return app.extensions["newsroom"].holder.current.pools[EDITION]


def test_for_you_is_private_and_every_item_has_a_reason(client, auth):
    r = client.get(FEED, headers=auth("alice"))
    assert r.status_code == 200
    assert r.headers["Cache-Control"] == "private, no-store"
    assert "ETag" not in r.headers and "Set-Cookie" not in r.headers
    doc = orjson.loads(r.data)
    item_validator().validate(doc)
    assert len(doc["items"]) == 20
    assert all(REASON.match(i["reason"]) for i in doc["items"])
    assert [i["rank"] for i in doc["items"]] == list(range(1, 21))
    assert [i["reason"] for i in doc["items"][:1]] == ["top_story"]


def test_feed_pages_do_not_overlap(app, client, auth):
    items = whole_feed(client, auth("alice"))
    ids = [i["story_id"] for i in items]
    assert len(ids) == len(set(ids)) == len(pool(app).story_ids)
    assert [i["rank"] for i in items] == list(range(1, len(items) + 1))


@pytest.mark.parametrize(
    "headers,status",
    [
        ({}, 401),
        ({"Authorization": "Basic abc"}, 401),
        ({"Authorization": "Bearer nope"}, 401),
        ({"Authorization": "Bearer " + issue_token("other-secret", "alice")}, 401),
        ({"Authorization": "Bearer " + issue_token(TOKEN_SECRET, "alice", ttl_s=-10)}, 401),
    ],
)
def test_for_you_needs_a_valid_token(client, headers, status):
    r = client.get(FEED, headers=headers)
    assert r.status_code == status
    assert r.headers["Cache-Control"] == "private, no-store"
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


def test_errors_stay_private(client, auth):
    for url in ("/v1/feed/for-you?edition=zz-zz", "/v1/feed/for-you", f"{FEED}&limit=0", f"{FEED}&cursor=bad"):
        r = client.get(url, headers=auth("alice"))
        assert r.status_code in (400, 404), url
        assert r.headers["Cache-Control"] == "private, no-store", url


def test_a_followed_topics_story_rises(app, client, auth):
    p = pool(app)
    before = whole_feed(client, auth("alice"))
    position = {i["story_id"]: n for n, i in enumerate(before)}
    # a story of topic "science" ranked low in the neutral feed
    target = next(i["story_id"] for i in reversed(before[:150]) if "science" in p.topics[p.index[i["story_id"]]])
    r = client.post("/v1/me/follows", json={"kind": "topic", "value": "science"}, headers=auth("alice"))
    assert r.status_code == 200 and r.json["follows"]["topics"] == ["science"]
    after = whole_feed(client, auth("alice"))
    moved = {i["story_id"]: n for n, i in enumerate(after)}
    assert moved[target] < position[target]
    item = after[moved[target]]
    assert item["reason"] == "follows:topic/science"
    # the personal slots are now science stories, as many as the topic cap lets into the first CAP_DEPTH positions
    science = [i for i in after[: ranking.CAP_DEPTH] if "science" in p.topics[p.index[i["story_id"]]]]
    assert len(science) == ranking.MAX_PER_TOPIC
    personal = [i for i in after[ranking.CAP_DEPTH : 30] if i["reason"] != "top_story"]
    assert all(i["reason"] == "follows:topic/science" for i in personal)
    # another reader is unaffected
    assert whole_feed(client, auth("bob")) == before


def test_a_hidden_source_never_appears(app, client, auth):
    p = pool(app)
    before = whole_feed(client, auth("alice"))
    hidden = before[0]["representative"]["publisher_id"]  # the publisher of the top story itself
    assert client.post("/v1/me/hidden-sources", json={"source": hidden}, headers=auth("alice")).status_code == 200
    after = whole_feed(client, auth("alice"))
    assert all(i["representative"]["publisher_id"] != hidden for i in after)
    assert len(after) == len(p.story_ids) - len(p.by_rep_publisher[hidden])
    assert after[0]["reason"] == "top_story"  # the slot is filled by the next top story
    assert client.delete(f"/v1/me/hidden-sources?source={hidden}", headers=auth("alice")).status_code == 200
    assert whole_feed(client, auth("alice")) == before


def test_follow_source_and_place_reasons(client, auth):
    client.post("/v1/me/follows", json={"kind": "place", "value": "lagos"}, headers=auth("carol"))
    client.post("/v1/me/follows", json={"kind": "source", "value": "pub-7"}, headers=auth("carol"))
    feed = whole_feed(client, auth("carol"))[:60]
    reasons = {i["reason"] for i in feed}
    assert "local:lagos" in reasons and "follows:source/pub-7" in reasons
    named = {i["reason"]: i["reason_name"] for i in feed}
    assert named["local:lagos"] == "Lagos" and named["follows:source/pub-7"] is None  # a name, never the code
    r = client.delete("/v1/me/follows?kind=place&value=lagos", headers=auth("carol"))
    assert r.json["follows"]["places"] == []
    assert (
        client.post("/v1/me/follows", json={"kind": "planet", "value": "x"}, headers=auth("carol")).status_code == 400
    )


def test_fewer_like_this_removes_the_story_and_demotes_similar_ones(app, client, auth):
    p = pool(app)
    before = whole_feed(client, auth("dan"))
    target = next(i for i in before if i["reason"] != "top_story")
    topic = p.topics[p.index[target["story_id"]]][0]
    r = client.post(
        "/v1/me/fewer-like-this", json={"story_id": target["story_id"], "edition": EDITION}, headers=auth("dan")
    )
    assert r.status_code == 200 and r.json["fewer_like"] == [target["story_id"]]
    after = whole_feed(client, auth("dan"))
    assert target["story_id"] not in {i["story_id"] for i in after}

    def share(items):
        top = [i for i in items[:40] if i["reason"] != "top_story"]
        return sum(topic in p.topics[p.index[i["story_id"]]] for i in top) / len(top)

    assert share(after) < share(before)


def post_reads(client, headers, story_ids, kind="READ", start=None):
    now = start or int(time.time() * 1000) - 60_000
    events = [
        {
            "event_id": f"e-{sid}-{kind}",
            "kind": kind,
            "edition": EDITION,
            "story_id": sid,
            "at": now + k,
            "dwell_ms": 40_000,
        }
        for k, sid in enumerate(story_ids)
    ]
    return client.post("/v1/events", json={"events": events}, headers=headers)


def test_reads_fold_into_the_profile_and_explain_items(app, client, auth):
    p = pool(app)
    football = [sid for sid in p.story_ids if "football" in p.topics[p.index[sid]]][10:16]
    r = post_reads(client, auth("erin"), football)
    assert r.status_code == 202 and r.json == {"accepted": 6, "rejected": []}
    assert r.headers["Cache-Control"] == "private, no-store"
    ext = app.extensions["newsroom"]
    assert ext.folder.drain() == 6
    stored = ext.profiles.get("erin")
    assert len(stored["reads"]) == 6 and stored["interest"]["mass"] > 5
    feed = whole_feed(client, auth("erin"))
    # past the capped positions (at most MAX_PER_TOPIC football stories among the first CAP_DEPTH)
    assert (
        sum("football" in p.topics[p.index[i["story_id"]]] for i in feed[: ranking.CAP_DEPTH]) <= ranking.MAX_PER_TOPIC
    )
    personal = [i for i in feed[ranking.CAP_DEPTH : 30] if i["reason"] != "top_story"]
    assert all(i["reason"].startswith("similar_to:") for i in personal)
    assert all("football" in p.topics[p.index[i["story_id"]]] for i in personal)
    assert {i["reason"].split(":")[1] for i in personal} <= set(football)
    ranks = {i["story_id"]: n for n, i in enumerate(feed)}
    assert min(ranks[s] for s in football) > 20  # read stories are pushed down
    # replaying the same batch changes nothing
    post_reads(client, auth("erin"), football)
    ext.folder.drain()
    assert ext.profiles.get("erin")["interest"] == stored["interest"]
    # profile summary
    me = client.get("/v1/me/profile", headers=auth("erin")).json
    assert me["reads"] == 6 and me["paused"] is False


def test_events_are_validated_one_by_one(client, auth):
    now = int(time.time() * 1000)
    good = {"event_id": "g1", "kind": "IMPRESSION", "edition": EDITION, "story_id": "7300000000000000001", "at": now}
    bad = [
        {"event_id": "b1", "kind": "LIKE", "edition": EDITION, "at": now},  # unknown kind
        {"event_id": "b2", "kind": "READ", "edition": EDITION, "at": now + 3_600_000},  # future
        {"event_id": "b3", "kind": "READ", "edition": EDITION, "at": now, "reader_id": "mallory"},  # someone else
        {"event_id": "b4", "kind": "READ", "edition": EDITION, "at": now, "colour": "red"},  # unknown field
        {"kind": "READ", "edition": EDITION, "at": now},  # missing event_id
        "not an object",
    ]
    r = client.post("/v1/events", json={"events": [good] + bad}, headers=auth("fay"))
    assert r.status_code == 202
    assert r.json["accepted"] == 1 and [x["index"] for x in r.json["rejected"]] == [1, 2, 3, 4, 5, 6]
    assert "kind" in r.json["rejected"][0]["error"] and "reader_id" in r.json["rejected"][2]["error"]
    assert client.post("/v1/events", json={"events": bad}, headers=auth("fay")).status_code == 400
    assert client.post("/v1/events", json={"events": []}, headers=auth("fay")).status_code == 400
    assert client.post("/v1/events", data="nope", headers=auth("fay")).status_code == 400
    assert client.post("/v1/events", json={"events": [good]}).status_code == 401


def test_pause_and_delete_history(app, client, auth):
    p = pool(app)
    ext = app.extensions["newsroom"]
    post_reads(client, auth("gus"), list(p.story_ids[20:23]))
    ext.folder.drain()
    assert client.post("/v1/me/history/pause", headers=auth("gus")).json["paused"] is True
    post_reads(client, auth("gus"), list(p.story_ids[30:33]))
    ext.folder.drain()
    assert len(ext.profiles.get("gus")["reads"]) == 3  # nothing recorded while paused
    assert client.post("/v1/me/history/resume", headers=auth("gus")).json["paused"] is False
    r = client.delete("/v1/me/history", headers=auth("gus"))
    assert r.status_code == 200 and r.json["reads"] == 0
    stored = ext.profiles.get("gus")
    assert stored["reads"] == [] and stored["interest"]["vector"] is None
    feed = whole_feed(client, auth("gus"))
    assert not any(i["reason"].startswith("similar_to") for i in feed)


def test_for_you_is_shed_first_under_overload(world, profiles, auth, monkeypatch):
    app = make_app(
        world, profiles, NEWSROOM_FORYOU_MAX_INFLIGHT=1, NEWSROOM_FORYOU_MAX_WAITING=1, NEWSROOM_FORYOU_WAIT_S=0.02
    )
    from serving.api import foryou

    real_rank = foryou.rank

    def slow_rank(*args, **kwargs):  # stands in for a CPU-starved re-rank
        time.sleep(0.2)
        return real_rank(*args, **kwargs)

    monkeypatch.setattr(foryou, "rank", slow_rank)
    headers = auth("hal")
    barrier = threading.Barrier(12)

    def private():
        barrier.wait()
        return app.test_client().get(FEED, headers=headers)

    def shared():
        barrier.wait()
        t0 = time.perf_counter()
        rs = [app.test_client().get(f"/v1/editions/{EDITION}/sections/top") for _ in range(20)]
        return rs, time.perf_counter() - t0

    with ThreadPoolExecutor(12) as pool_:
        privates = [pool_.submit(private) for _ in range(8)]
        shareds = [pool_.submit(shared) for _ in range(4)]
        private_rs = [f.result() for f in privates]
        shared_rs = [f.result() for f in shareds]
    codes = sorted(r.status_code for r in private_rs)
    assert codes == [200] * 8, codes  # a signed-in reader is never answered 503 while the shared page is up
    rungs = [r.json["degraded"] for r in private_rs]
    # the slot holders re-ranked (past the budget here: rank_timeout), the rest stepped down the ladder
    assert rungs.count("rank_timeout") >= 1 and rungs.count("edition_list") + rungs.count("cached_candidates") >= 5
    for r in private_rs:
        assert r.headers["Cache-Control"] == "private, no-store"
    for rs, elapsed in shared_rs:
        assert all(r.status_code == 200 for r in rs)
        assert elapsed < 2.0  # no shared request waited behind the slow private ones
    assert app.extensions["newsroom"].shedder.shed >= 5


def overloaded_app(world, profiles):
    """One private slot, one waiter, 20 ms of wait: a test holding the slot makes every request shed."""
    return make_app(
        world, profiles, NEWSROOM_FORYOU_MAX_INFLIGHT=1, NEWSROOM_FORYOU_MAX_WAITING=1, NEWSROOM_FORYOU_WAIT_S=0.02
    )


def test_ladder_rung_1_is_the_full_rerank_with_no_degraded_header(world, profiles, auth):
    app = overloaded_app(world, profiles)
    r = app.test_client().get(FEED, headers=auth("ivy"))
    assert r.status_code == 200 and r.json["degraded"] is None and "Newsroom-Degraded" not in r.headers


def test_ladder_rung_2_reranks_the_cached_profile_without_collaborative_sources(world, profiles, auth):
    from serving.personal.ranking import FeedSlice, rank
    from stores.covisit import open_covisit_store

    app = overloaded_app(world, profiles)
    client, ext, p = app.test_client(), app.extensions["newsroom"], pool(app)
    read = p.story_ids[40]
    low = [p.story_ids[int(i)] for i in p.base.argsort()]
    also = [s for s in low if s != read][:3]  # the edition's lowest-scored stories, lifted by co-visitation in rung 1
    open_covisit_store(world.config).put(int(read), [(int(s), 50.0) for s in also], int(time.time() * 1000))
    post_reads(client, auth("jon"), [read])
    ext.folder.drain()
    full = client.get(f"{FEED}&limit=50", headers=auth("jon"))
    assert full.json["degraded"] is None  # rung 1 (and it warms the profile cache)
    assert any(i["reason"].startswith("also_read") for i in full.json["items"])  # the collaborative source is on
    view = ext.profile_cache.cached("jon")
    with ext.shedder.slot():
        r = client.get(FEED, headers=auth("jon"))
    assert r.status_code == 200 and r.json["degraded"] == "cached_candidates"
    assert r.headers["Newsroom-Degraded"] == "cached_candidates"
    item_validator().validate(r.json)
    want = [p.story_ids[i] for i, _ in rank(p, view, FeedSlice(0, 20))]
    assert [i["story_id"] for i in r.json["items"]] == want
    assert not any(i["reason"].startswith("also_read") for i in r.json["items"])


def test_the_ladder_never_applies_a_cached_profile_past_its_ttl():
    """Rung 2 reads the cache without the store, but never an entry past its TTL: a profile deleted through another
    process must stop applying within NEWSROOM_PROFILE_TTL_S, load or not."""
    from serving.personal.readers import ProfileCache

    class Store:
        def get(self, reader_id):
            return {"reader_id": reader_id, "follows": []}

    now = [100.0]
    cache = ProfileCache(Store(), ttl_s=30.0, clock=lambda: now[0])
    assert cache.cached("ann") is None
    cache.view("ann")
    assert cache.cached("ann") is not None
    now[0] += 31.0
    assert cache.cached("ann") is None


def test_ladder_rung_3_is_the_edition_list_when_no_profile_is_cached(world, profiles, auth):
    app = overloaded_app(world, profiles)
    client, ext, p = app.test_client(), app.extensions["newsroom"], pool(app)
    with ext.shedder.slot():
        r = client.get(f"{FEED}&limit=10", headers=auth("kai"))
        assert r.status_code == 200 and r.json["degraded"] == "edition_list"
        assert r.headers["Newsroom-Degraded"] == "edition_list"
        item_validator().validate(r.json)
        assert [i["story_id"] for i in r.json["items"]] == list(p.story_ids[:10])
        assert {i["reason"] for i in r.json["items"]} == {"edition"}
        nxt = client.get(f"{FEED}&limit=10&cursor={r.json['next_cursor']}", headers=auth("kai"))
        assert [i["story_id"] for i in nxt.json["items"]] == list(p.story_ids[10:20])  # the cursor still holds
    assert ext.profile_cache.misses == 0  # no store read under load
    assert client.post("/v1/me/history/pause", headers=auth("kai")).status_code in (200, 204)


def test_readers_of_a_story_also_read_lifts_its_neighbours(app, client, auth, world):
    from stores.covisit import open_covisit_store

    p = pool(app)
    read, other = p.story_ids[40], p.story_ids[41]
    low = [p.story_ids[int(i)] for i in p.base.argsort()]
    also = [s for s in low if s not in (read, other)][:3]  # the edition's lowest-scored stories
    open_covisit_store(world.config).put(int(read), [(int(s), 50.0) for s in also], int(time.time() * 1000))
    post_reads(client, auth("ivy"), [read])
    post_reads(client, auth("jay"), [other])  # the same kind of profile, without co-visitation
    app.extensions["newsroom"].folder.drain()
    ivy, jay = whole_feed(client, auth("ivy")), whole_feed(client, auth("jay"))
    item_validator().validate(
        {
            "schema": "newsroom.for_you/v1",
            "edition": EDITION,
            "pool_version": 1,
            "degraded": None,
            "items": ivy[:50],
            "next_cursor": None,
        }
    )
    reasons = {i["story_id"]: i["reason"] for i in ivy}
    ivy_rank = {i["story_id"]: n for n, i in enumerate(ivy)}
    jay_rank = {i["story_id"]: n for n, i in enumerate(jay)}
    for sid in also:
        assert reasons[sid] == f"also_read:{read}" and ivy_rank[sid] < 20 < jay_rank[sid]


def test_a_co_visitation_store_error_only_drops_the_term(world, profiles, auth):
    from stores.base import StoreError

    class Down:
        def get_many(self, ids):
            raise StoreError("bigtable unavailable")

    app = make_app(world, profiles, NEWSROOM_COVISIT_STORE=Down())
    try:
        client = app.test_client()
        post_reads(client, auth("kim"), [pool(app).story_ids[40]])
        app.extensions["newsroom"].folder.drain()
        r = client.get(FEED, headers=auth("kim"))
        assert r.status_code == 200 and r.json["degraded"] is None
        assert not any(i["reason"].startswith("also_read") for i in r.json["items"])
        assert app.extensions["newsroom"].covisit_cache.store_errors == 1
    finally:
        app.extensions["newsroom"].close()


def test_folded_reads_are_published_to_the_read_events_topic(app, client, auth, world):
    """The co-visitation job's input: the folded events, once each; a paused reader's are not published."""
    world.bus.ensure_subscription("read-events", "test-covisit")
    p = pool(app)
    ext = app.extensions["newsroom"]
    post_reads(client, auth("lou"), list(p.story_ids[50:53]))
    client.post("/v1/me/history/pause", headers=auth("max"))
    post_reads(client, auth("max"), list(p.story_ids[60:62]))
    ext.folder.drain()
    post_reads(client, auth("lou"), list(p.story_ids[50:53]))  # a replay: already folded, not published again
    ext.folder.drain()
    before = int(time.time() * 1000)
    msgs = world.bus.pull("test-covisit", 50, timeout=0.5)
    got = [world.bus.decode("read-events", m) for m in msgs]
    assert sorted((e["reader_id"], str(e["story_id"])) for e in got) == [("lou", s) for s in sorted(p.story_ids[50:53])]
    assert ext.folder.published == 3 and ext.folder.publish_failed == 0
    # the origin's receive time rides along (the covisit job judges readers by it, not by the client's ``at``)
    assert all(before - 60_000 <= int(m.attributes["received_at"]) <= before for m in msgs)


@pytest.mark.parametrize(
    "add, remove, field, what",
    [
        (("/v1/me/follows", "kind", "topic"), "/v1/me/follows?kind=topic&value=", "topics", "follows per kind"),
        (("/v1/me/hidden-sources", None, None), "/v1/me/hidden-sources?source=", "hidden_sources", "hidden sources"),
    ],
    ids=["follows", "hidden-sources"],
)
def test_profile_lists_are_bounded_and_idempotent(client, auth, monkeypatch, add, remove, field, what):
    """Follows of a kind and hidden sources share one rule: at most MAX_FOLLOWS (409 profile_limit past it, naming
    the list), adding a value already there and removing an absent one write nothing (the revision stays)."""
    from serving.api import foryou

    monkeypatch.setattr(foryou, "MAX_FOLLOWS", 2)
    path, kind_key, kind = add

    def post(value):
        body = {kind_key: kind, "value": value} if kind_key else {"source": value}
        return client.post(path, json=body, headers=auth("erin"))

    def listed(r):
        return r.json["follows"][field] if field != "hidden_sources" else r.json[field]

    assert listed(post("a")) == ["a"]
    r = post("b")
    assert listed(r) == ["a", "b"]
    assert post("b").json["revision"] == r.json["revision"]  # already there: nothing written
    full = post("c")
    assert full.status_code == 409 and full.json["code"] == "profile_limit", full.json
    assert f"at most 2 {what}" in full.json["detail"]
    gone = client.delete(remove + "a", headers=auth("erin"))
    assert gone.status_code == 200 and listed(gone) == ["b"]
    again = client.delete(remove + "a", headers=auth("erin"))
    assert again.status_code == 200 and again.json["revision"] == gone.json["revision"]
    assert listed(post("c")) == ["b", "c"]  # room again after the removal
