"""Storyline pages: on-demand load, keyset cursor newest first across versions, shared cache headers, 301 for a
merged storyline, 404 without a store read for an unknown one."""

from __future__ import annotations

from datetime import timedelta

import orjson

from devtools import samples
from schemas.pages import validate_page
from serving.http import cursor as cursors
from tests.serving.helpers import CURSOR_SECRET, STORY_CC, make_app, publish

SL = samples.story_id(7000)
URL = f"/v1/storylines/en/{SL}"


def walk(client, url, limit):
    docs = []
    r = client.get(f"{url}?limit={limit}")
    while True:
        assert r.status_code == 200, r.data
        assert r.headers["Cache-Control"] == STORY_CC
        doc = orjson.loads(r.data)
        validate_page("storyline_page", doc)
        docs.append(doc)
        if doc["next_cursor"] is None:
            return docs
        r = client.get(f"{url}?limit={limit}&cursor={doc['next_cursor']}")


def order(episodes):
    return [(e["first_at"], int(e["story_id"])) for e in episodes]


def test_storyline_pages_list_every_episode_once_newest_first(world, profiles):
    publish(world, samples.storyline(SL, 3, 9))
    app = make_app(world, profiles)
    try:
        client = app.test_client()
        docs = walk(client, URL, 4)
        episodes = [e for d in docs for e in d["episodes"]]
        assert len(docs) == 3 and docs[0]["episode_count"] == 9
        assert len({e["story_id"] for e in episodes}) == 9
        assert order(episodes) == sorted(order(episodes), reverse=True)
        first = client.get(f"{URL}?limit=4")
        assert client.get(f"{URL}?limit=4").data == first.data  # the same bytes for every reader
        assert client.get(f"{URL}?limit=4", headers={"If-None-Match": first.headers["ETag"]}).status_code == 304
        assert client.get(URL, headers={"Authorization": "Bearer x"}).status_code == 400  # no personal header
    finally:
        app.extensions["newsroom"].close()


def test_the_poll_does_not_fetch_storylines_and_an_unknown_one_reads_no_store(world, profiles):
    publish(world, samples.storyline(SL, 3, 2))
    app = make_app(world, profiles)
    try:
        ext = app.extensions["newsroom"]
        assert ext.watcher.storyline_cache.loads == 0
        client = app.test_client()
        gets = []
        real = world.snapshots.get
        world.snapshots.get = lambda path: gets.append(path) or real(path)
        assert client.get(f"/v1/storylines/en/{samples.story_id(7001)}").status_code == 404
        assert client.get("/v1/storylines/english/1").status_code == 404
        assert gets == []
        assert client.get(URL).status_code == 200 and len(gets) == 1
        assert client.get(URL).status_code == 200 and len(gets) == 1  # the LRU holds it
    finally:
        app.extensions["newsroom"].close()


def test_the_cursor_continues_on_a_newer_version_without_repeats(world, profiles):
    publish(world, samples.storyline(SL, 3, 6))
    app = make_app(world, profiles)
    try:
        ext = app.extensions["newsroom"]
        client = app.test_client()
        page1 = orjson.loads(client.get(f"{URL}?limit=3").data)
        newer = samples.storyline(SL, 4, 6)
        newer["episodes"].insert(0, dict(newer["episodes"][0], story_id=samples.story_id(6000)))
        newer["episodes"][0]["first_at"] = samples.iso(samples.BASE_TIME + timedelta(days=3))
        publish(world, newer)
        ext.watcher.poll_once()
        page2 = orjson.loads(client.get(f"{URL}?limit=3&cursor={page1['next_cursor']}").data)
        assert page2["storyline_version"] == 4
        seen = [e["story_id"] for e in page1["episodes"] + page2["episodes"]]
        assert len(seen) == len(set(seen)) == 6
        other = cursors.encode(CURSOR_SECRET.encode(), "storyline", ["en", "1", 0, 1])
        assert client.get(f"{URL}?cursor={other}").status_code == 400
        assert client.get(f"{URL}?cursor=forged.cursor").status_code == 400
    finally:
        ext.close()


def test_a_merged_storyline_redirects_to_its_survivor(world, profiles):
    absorbed = samples.storyline(samples.story_id(7002), 5, 2)
    absorbed["merged_into"] = SL
    publish(world, absorbed)
    app = make_app(world, profiles)
    try:
        r = app.test_client().get(f"/v1/storylines/en/{absorbed['storyline_id']}?limit=5")
        assert r.status_code == 301 and r.headers["Location"] == f"{URL}?limit=5"
        assert r.headers["Cache-Control"] == STORY_CC
    finally:
        app.extensions["newsroom"].close()


def test_archived_episodes_keep_their_story_pages_through_the_publishers_retirement(world, profiles):
    """A storyline page links every episode; the origin loads a story on demand only while its pointer is listed,
    so the publisher must not retire the story pointer of an episode of a storyline with several episodes (the
    archive), also after a restart; a story of no such storyline is retired 48 h after it left the live set."""
    from transforms.editions.publish.snapshots import PointerRetention, SnapshotPublisher

    hour = 3600.0
    clock = [1_000_000.0]
    retention = PointerRetention(retain_s=48 * hour, retire_every_s=0)

    def publisher():
        return SnapshotPublisher(world, languages=("en",), retention=retention, clock=lambda: clock[0])

    def item(kind, pointer, doc):
        return {"kind": kind, "pointer": pointer, "version": doc["version"], "doc": doc, "min_stories": 0}

    pub = publisher()
    storyline = samples.storyline(SL, 3, 2)
    episodes = [e["story_id"] for e in storyline["episodes"]]
    alone = samples.story_id(6000)
    for sid in (*episodes, alone):
        cov = samples.story_coverage(sid, 2, samples.coverage_articles(sid, 3))
        assert pub.publish(item("story_coverage", f"story/{sid}", cov))["outcome"] == "published"
    pointer = f"storyline/en/{SL}"
    assert pub.publish(item("storyline", pointer, storyline))["outcome"] == "published"
    clock[0] += 49 * hour  # every one of them left the live set long ago
    retired = pub.maybe_retire()
    assert f"story/{alone}" in retired
    assert not {f"story/{sid}" for sid in episodes} & set(retired)
    listed = world.pointers.versions("story/")
    assert all(f"story/{sid}" in listed for sid in episodes) and f"story/{alone}" not in listed
    clock[0] += hour
    restarted = publisher()  # knows nothing it published: it reads the listed storylines back
    restarted.maybe_retire()
    clock[0] += 49 * hour
    assert not {f"story/{sid}" for sid in episodes} & set(restarted.maybe_retire())
    app = make_app(world, profiles)
    try:
        client = app.test_client()
        for sid in episodes:
            assert client.get(f"/v1/stories/{sid}").status_code == 200, sid
            assert client.get(f"/stories/{sid}").status_code == 200, sid
        assert client.get(f"/v1/stories/{alone}").status_code == 404
    finally:
        app.extensions["newsroom"].close()


def test_an_episode_retired_before_its_storyline_was_kept_gets_its_story_page_back(world, profiles):
    """A story's pointer retires 48 h after it left the live set, but a later story can join its storyline weeks
    later: once the publisher writes the storyline with both episodes, the first episode's pointer is brought back
    to its last version, so the storyline page's link to it answers 200 again."""
    from transforms.editions.publish.snapshots import PointerRetention, SnapshotPublisher

    hour = 3600.0
    clock = [1_000_000.0]
    retention = PointerRetention(retain_s=48 * hour, retire_every_s=0)
    pub = SnapshotPublisher(world, languages=("en",), retention=retention, clock=lambda: clock[0])

    def item(kind, pointer, doc):
        return {"kind": kind, "pointer": pointer, "version": doc["version"], "doc": doc, "min_stories": 0}

    both = samples.storyline(SL, 30, 2)
    second, first = both["episodes"]  # newest first
    cov = samples.story_coverage(first["story_id"], 2, samples.coverage_articles(first["story_id"], 3))
    assert pub.publish(item("story_coverage", f"story/{first['story_id']}", cov))["outcome"] == "published"
    alone = dict(both, version=3, episodes=[first])
    pointer = f"storyline/en/{SL}"
    assert pub.publish(item("storyline", pointer, alone))["outcome"] == "published"
    clock[0] += 49 * hour
    assert f"story/{first['story_id']}" in pub.maybe_retire()  # a one-episode storyline keeps no story
    clock[0] += 14 * 24 * hour  # weeks later a second story joins the storyline
    cov = samples.story_coverage(second["story_id"], 5, samples.coverage_articles(second["story_id"], 3))
    assert pub.publish(item("story_coverage", f"story/{second['story_id']}", cov))["outcome"] == "published"
    joined = {"kind": "storyline", "pointer": pointer, "version": 30, "doc": dict(both, episodes=[second])}
    joined.update(min_stories=0, left=[], sources=[])
    assert pub.publish(joined)["outcome"] == "published"  # merged with the live version: both episodes
    pub.maybe_retire()
    assert world.pointers.get(f"story/{first['story_id']}") == 2
    app = make_app(world, profiles)
    try:
        client = app.test_client()
        for sid in (first["story_id"], second["story_id"]):
            assert client.get(f"/v1/stories/{sid}").status_code == 200, sid
        assert {e["story_id"] for e in orjson.loads(client.get(URL).data)["episodes"]} == {
            first["story_id"],
            second["story_id"],
        }
    finally:
        app.extensions["newsroom"].close()
