"""Topic pages (GET /v1/topics/{id}) and entity follows: a shared page of an edition's live stories about an entity,
place or topic, ranked by the edition's own score, built on demand from the pool at most once per (pool version,
id, limit); and an entity follow lifts its stories in For you with reason follows:entity/{id}."""

from __future__ import annotations

import jsonschema
import orjson
import pytest

from serving.api import openapi, topics
from tests.serving.helpers import EDITION, publish_topic_pages

TOPIC_CC = "public, s-maxage=30"
PROBLEM = "application/problem+json"


def pool(app):
    return app.extensions["newsroom"].holder.current.pools[EDITION]


def validator():
    doc = openapi.document()
    return jsonschema.Draft202012Validator({"$ref": "#/components/schemas/TopicPage", "components": doc["components"]})


def url(topic_id: str, **query) -> str:
    query = {"edition": EDITION, **query}
    return f"/v1/topics/{topic_id}?" + "&".join(f"{k}={v}" for k, v in query.items())


@pytest.mark.parametrize(
    "topic_id,kind,index",
    [
        ("entity:org:isro", "entity", "by_entity"),
        ("place:lagos", "place", "by_place"),
        ("topic:science", "topic", "by_topic"),
    ],
)
def test_topic_page_lists_the_pools_stories_about_it_by_the_editions_score(app, client, topic_id, kind, index):
    p = pool(app)
    value = topic_id.split(":", 1)[1]
    about = set(getattr(p, index)[value].tolist())
    if kind == "place":  # the region code or the place's entity id
        about |= set(p.by_entity["place:" + value].tolist())
    expected = sorted(about, key=lambda i: (-float(p.base[i]), i))
    r = client.get(url(topic_id, limit=10))
    assert r.status_code == 200, r.data
    assert r.headers["Cache-Control"] == TOPIC_CC
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert "Set-Cookie" not in r.headers and "Vary" not in r.headers
    doc = orjson.loads(r.data)
    validator().validate(doc)
    assert (doc["topic"], doc["kind"], doc["value"], doc["edition"]) == (topic_id, kind, value, EDITION)
    assert doc["name"] == {"entity": "ISRO", "place": "Lagos", "topic": "Science"}[kind]  # a name, not the id
    assert doc["pool_version"] == p.version and doc["story_count"] == len(expected)
    assert [s["story_id"] for s in doc["stories"]] == [p.story_ids[i] for i in expected[:10]]
    first = doc["stories"][0]
    assert first["representative"] == orjson.loads(p.item_bytes[expected[0]] + b"}")["representative"]
    if kind == "entity":
        assert all(value in p.entities[p.index[s["story_id"]]] for s in doc["stories"])


def test_topic_page_is_identical_for_everyone_with_a_strong_etag_and_304(app, client):
    a = app.test_client(use_cookies=False).get(url("entity:place:pune"))
    b = client.get(url("entity:place:pune"))
    assert a.status_code == b.status_code == 200
    assert a.data == b.data and a.headers["ETag"] == b.headers["ETag"]
    etag = a.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    r = client.get(url("entity:place:pune"), headers={"If-None-Match": etag})
    assert r.status_code == 304 and r.data == b""
    assert r.headers["ETag"] == etag and r.headers["Cache-Control"] == TOPIC_CC
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    other = client.get(url("entity:place:pune", limit=3))
    assert other.status_code == 200 and other.headers["ETag"] != etag
    assert len(orjson.loads(other.data)["stories"]) == 3


def test_topic_pages_are_built_once_per_pool_version_id_and_limit(app, client):
    pages = app.extensions["newsroom"].topic_pages
    start = pages.builds
    for _ in range(3):
        assert client.get(url("topic:science", limit=5)).status_code == 200
    assert pages.builds == start + 1
    assert client.get(url("topic:science", limit=6)).status_code == 200
    assert pages.builds == start + 2


def test_topic_page_cache_is_bounded():
    class Pool:
        edition, cycle = EDITION, "2025-03-01T12:00:00Z"

        def __init__(self, version):
            self.version = version
            self.by_topic = self.by_entity = self.by_place = {}

    cache = topics.TopicPages(size=3)
    for v in range(10):
        assert cache.get(Pool(v), "topic:x", 5) is None
    assert len(cache._items) == 3 and cache.builds == 10


def test_topic_page_cache_is_bounded_in_bytes(app):
    p = pool(app)
    cache = topics.TopicPages(size=100, max_bytes=20_000)
    sizes = [len(cache.get(p, "topic:science", k)[0]) for k in range(1, 30)]
    assert cache.bytes == sum(len(v[0]) for v in cache._items.values()) <= 20_000
    assert len(cache._items) < len(sizes)
    assert cache.get(p, "topic:science", 29) is not None and cache.builds == len(sizes)  # the newest is kept


def test_shared_topic_page_rejects_personal_headers(app):
    c = app.test_client(use_cookies=False)
    r = c.get(url("topic:science"), headers={"Authorization": "Bearer x"})
    assert r.status_code == 400 and r.headers["Cache-Control"] == "no-store"
    assert orjson.loads(r.data)["code"] == "personal_headers"


def test_preflight_on_topic_page(client):
    r = client.options(url("topic:science"), headers={"Origin": "https://x.example"})
    assert r.status_code == 204 and r.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize(
    "target,status,code",
    [
        (url("entity:org:no-such-entity"), 404, "unknown_topic"),
        (url("place:atlantis"), 404, "unknown_topic"),
        ("/v1/topics/topic:science?edition=xx-yy", 404, "unknown_edition"),
        (url("planet:mars"), 400, "invalid_topic"),
        (url("science"), 400, "invalid_topic"),
        (url("entity:"), 400, "invalid_topic"),
        ("/v1/topics/topic:science", 400, "invalid_edition"),
        (url("topic:science", limit=0), 400, "invalid_limit"),
    ],
)
def test_topic_page_errors_are_problems(client, target, status, code):
    r = client.get(target)
    assert r.status_code == status, r.data
    assert r.headers["Content-Type"] == PROBLEM
    assert orjson.loads(r.data)["code"] == code
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert r.headers["Cache-Control"] == ("public, max-age=0, s-maxage=10" if status == 404 else "no-store")


def test_following_an_entity_lifts_its_stories_with_its_reason(app, client, auth):
    p = pool(app)
    feed = f"/v1/feed/for-you?edition={EDITION}&limit=50"
    before = orjson.loads(client.get(feed, headers=auth("erin")).data)["items"]
    isro = {p.story_ids[i] for i in p.by_entity["org:isro"].tolist()}
    shown_before = [i for i in before[:20] if i["story_id"] in isro]
    r = client.post("/v1/me/follows", json={"kind": "entity", "value": "org:isro"}, headers=auth("erin"))
    assert r.status_code == 200 and r.json["follows"]["entities"] == ["org:isro"]
    after = orjson.loads(client.get(feed, headers=auth("erin")).data)["items"]
    lifted = [i for i in after[:20] if i["story_id"] in isro]
    assert len(lifted) > len(shown_before)
    assert {i["reason"] for i in lifted if i["reason"] != "top_story"} == {"follows:entity/org:isro"}
    assert client.get("/v1/me/profile", headers=auth("erin")).json["follows"]["entities"] == ["org:isro"]
    r = client.delete("/v1/me/follows?kind=entity&value=org:isro", headers=auth("erin"))
    assert r.status_code == 200 and r.json["follows"]["entities"] == []


@pytest.mark.parametrize("value", ["place:pune", "pune"])
def test_a_place_followed_by_name_or_entity_id_lifts_its_entity_stories_as_local(app, client, auth, value):
    p = pool(app)
    pune = {p.story_ids[i] for i in p.by_entity["place:pune"].tolist()}
    client.post("/v1/me/follows", json={"kind": "place", "value": value}, headers=auth("fay"))
    items = orjson.loads(client.get(f"/v1/feed/for-you?edition={EDITION}&limit=30", headers=auth("fay")).data)["items"]
    local = [i for i in items if i["reason"] == f"local:{value}"]
    assert local and all(i["story_id"] in pune for i in local)


# ------------------------------------------------------------------------ topic pages pre-built by the editions stage
def prebuild(app, world, followed: dict, mutate=None, max_pages: int = 40) -> dict:
    """Topic pages published as the editions stage does (helpers.publish_topic_pages); the watcher polls."""
    docs = publish_topic_pages(world, followed, mutate, max_pages)
    app.extensions["newsroom"].watcher.poll_once()
    return docs


def test_the_origin_serves_a_pre_built_topic_page_identical_to_the_one_it_would_build(app, world, client):
    prebuilt = prebuild(app, world, {"entity:org:isro": 5})
    assert "entity:org:isro" in prebuilt
    p = pool(app)
    assert "entity:org:isro" in p.topic_pages
    held = app.extensions["newsroom"].holder.current.topics[(EDITION, "entity:org:isro")]
    assert held.version == p.version
    pages = app.extensions["newsroom"].topic_pages
    before = pages.prebuilt
    for limit in (3, 100):
        r = client.get(url("entity:org:isro", limit=limit))
        assert r.status_code == 200 and r.headers["Cache-Control"] == TOPIC_CC
        validator().validate(orjson.loads(r.data))
        assert (r.data, r.headers["ETag"]) == topics.render(p, "entity:org:isro", limit)  # same bytes either way
        assert (
            client.get(url("entity:org:isro", limit=limit), headers={"If-None-Match": r.headers["ETag"]}).status_code
            == 304
        )
    assert pages.prebuilt == before + 2
    other = client.get(url("topic:science"))  # not pre-built this cycle: on demand
    assert other.status_code == 200 and pages.prebuilt == before + 2


def test_the_pre_built_snapshot_is_what_is_served_and_only_while_the_pool_lists_it(app, world, client):
    def first_story_only(doc):
        doc["stories"] = doc["stories"][:1]

    prebuild(app, world, {"entity:org:isro": 5}, mutate=first_story_only)
    doc = orjson.loads(client.get(url("entity:org:isro", limit=10)).data)
    assert len(doc["stories"]) == 1  # the snapshot's page, not a render of the pool
    prebuild(app, world, {"topic:science": 1}, max_pages=1)  # the next cycle did not pre-build it: not served
    assert "entity:org:isro" not in pool(app).topic_pages
    doc = orjson.loads(client.get(url("entity:org:isro", limit=10)).data)
    assert len(doc["stories"]) == min(10, doc["story_count"]) > 1


def test_a_city_of_the_gazetteer_has_its_page_and_is_followable_as_a_place(app, world, client, auth):
    """Cities are places of the pool entries (transforms/editions/overlays/topics.py add_cities): place:{city} is a page,
    and following the city lifts its stories in For you as local."""
    from devtools import samples
    from schemas.pages import pool_path

    version = world.pointers.get(f"pool/{EDITION}")
    doc = orjson.loads(world.snapshots.get(pool_path(EDITION, version)))
    doc["version"] = version + 1
    chicago = [s["story_id"] for s in doc["stories"][40:46]]
    for s in doc["stories"][40:46]:
        s["places"] = [*s.get("places", []), "chicago"]
    samples.publish(world.pointers, world.snapshots, doc)
    app.extensions["newsroom"].watcher.poll_once()
    page = client.get(url("place:chicago", limit=50))
    assert page.status_code == 200
    body = orjson.loads(page.data)
    assert [s["story_id"] for s in body["stories"]] == chicago and body["kind"] == "place"
    client.post("/v1/me/follows", json={"kind": "place", "value": "chicago"}, headers=auth("cy"))
    items = orjson.loads(client.get(f"/v1/feed/for-you?edition={EDITION}&limit=30", headers=auth("cy")).data)["items"]
    local = [i["story_id"] for i in items if i["reason"] == "local:chicago"]
    assert local and set(local) <= set(chicago)


def test_a_retired_topic_pointer_leaves_the_origin_and_the_page_is_built_on_demand(app, world, client):
    prebuild(app, world, {"entity:org:isro": 5})
    cat = app.extensions["newsroom"].holder.current
    name = f"topic/{EDITION}/entity:org:isro"
    assert world.pointers.retire(name, cat.loaded[name])
    app.extensions["newsroom"].watcher.poll_once()
    cat = app.extensions["newsroom"].holder.current
    assert (EDITION, "entity:org:isro") not in cat.topics and name not in cat.loaded
    before = app.extensions["newsroom"].topic_pages.prebuilt
    assert client.get(url("entity:org:isro", limit=7)).status_code == 200  # listed by the pool, served on demand
    assert app.extensions["newsroom"].topic_pages.prebuilt == before
