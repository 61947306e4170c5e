"""Local pages: a city page -- ``place:{city}`` whose value is a gazetteer city of the edition's
region (editions.json ``local_places``) -- is cached 5 minutes at the edge (``NEWSROOM_LOCAL_S_MAXAGE``, 300 s) and
rendered at most once a minute per (edition, city, limit), whatever the number of pool versions published in that
minute; a takedown still reaches it at once. Other topic pages keep the topic TTL and their per-version cache."""

from __future__ import annotations

import orjson

from devtools import samples
from schemas.pages import pool_path
from serving.api import topics
from serving.state.catalog import PreparedPool
from tests.serving.helpers import EDITION

LOCAL_CC = "public, s-maxage=300"
TOPIC_CC = "public, s-maxage=30"


def publish_pool(world, app, mutate) -> dict:
    """The edition's pool at its next version, after ``mutate(doc)``, loaded by the origin."""
    version = world.pointers.get(f"pool/{EDITION}")
    doc = orjson.loads(world.snapshots.get(pool_path(EDITION, version)))
    doc["version"] = version + 1
    mutate(doc)
    samples.publish(world.pointers, world.snapshots, doc)
    app.extensions["newsroom"].watcher.poll_once()
    assert app.extensions["newsroom"].holder.current.pools[EDITION].version == version + 1
    return doc


def with_chicago(doc):
    for s in doc["stories"][40:46]:
        s["places"] = [*s.get("places", []), "chicago"]


def test_a_city_page_is_cached_five_minutes_at_the_edge_other_places_keep_the_topic_ttl(app, world, client):
    publish_pool(world, app, with_chicago)
    for path in (f"/v1/topics/place:chicago?edition={EDITION}", f"/e/{EDITION}/topics/place:chicago"):
        r = client.get(path)
        assert r.status_code == 200 and r.headers["Cache-Control"] == LOCAL_CC, path
    # a region code and a city of another region's gazetteer (Lagos, ng) are not us-en's local pages
    for topic in ("place:lagos", "topic:science"):
        r = client.get(f"/v1/topics/{topic}?edition={EDITION}")
        assert r.status_code == 200 and r.headers["Cache-Control"] == TOPIC_CC, topic


def test_a_city_page_is_rendered_once_across_the_pool_versions_of_a_minute(app, world, client):
    pages = app.extensions["newsroom"].topic_pages
    publish_pool(world, app, with_chicago)
    start = pages.builds
    bodies = set()
    for cycle in range(3):  # three pool versions (a catch-up after a stall): same stories, new scores
        if cycle:
            publish_pool(world, app, lambda d: [s.update(score=s["score"] * 0.99) for s in d["stories"]])
        assert client.get(f"/v1/topics/place:chicago?edition={EDITION}").status_code == 200
        bodies.add(client.get(f"/v1/topics/place:chicago?edition={EDITION}").data)
        assert client.get(f"/v1/topics/topic:science?edition={EDITION}").status_code == 200
    assert len(bodies) == 1
    assert pages.builds - start == 1 + 3  # the city once; topic:science once per pool version


def minute_pool(version: int, drop: str | None = None) -> PreparedPool:
    """The same 20 stories (5 of them in Chicago) at pool ``version``, without the story ``drop``."""
    doc = samples.candidate_pool(EDITION, 1, n=20)
    for s in doc["stories"][:5]:
        s["places"] = [*s.get("places", []), "chicago"]
    doc["stories"] = [s for s in doc["stories"] if s["story_id"] != drop]
    return PreparedPool.build(dict(doc, version=version))


def test_a_city_page_is_rebuilt_after_a_minute_or_at_once_when_a_listed_story_is_taken_down():
    now = [1000.0]
    cache = topics.TopicPages(cities={EDITION: frozenset({"chicago"})}, clock=lambda: now[0])
    first = cache.get(minute_pool(1), "place:chicago", 20)
    now[0] += 59
    assert cache.get(minute_pool(2), "place:chicago", 20) == first and cache.builds == 1
    listed = [s["story_id"] for s in orjson.loads(first[0])["stories"]]
    gone = cache.get(minute_pool(2, drop=listed[0]), "place:chicago", 20)  # re-filtered: same version
    assert cache.builds == 2 and listed[0] not in gone[0].decode()
    now[0] += 61
    assert cache.get(minute_pool(3, drop=listed[0]), "place:chicago", 20) is not None and cache.builds == 3
    assert cache.get(minute_pool(3), "place:boston", 20) is None and cache.builds == 4  # not a city of the pool
