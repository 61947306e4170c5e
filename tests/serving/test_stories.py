"""Story pages: keyset cursor bound to the story version, stability across versions, merged ids."""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest

from devtools import samples
from schemas.pages import validate_page
from serving.http import cursor as cursors
from tests.serving.helpers import CURSOR_SECRET, MERGED, MERGED_CHAIN, STORY, STORY_CC, make_app, publish


def pages(client, url, limit=10):
    """Every page of a story, following next_cursor; returns (docs, responses)."""
    docs, resps = [], []
    r = client.get(f"{url}?limit={limit}")
    while True:
        assert r.status_code == 200, r.data
        doc = orjson.loads(r.data)
        validate_page("story_page", doc)
        docs.append(doc)
        resps.append(r)
        if doc["next_cursor"] is None:
            return docs, resps
        r = client.get(f"{url}?limit={limit}&cursor={doc['next_cursor']}")


def keys(articles):
    return [(a["published_at"], a["article_id"]) for a in articles]


def test_story_pages_cover_the_story_once_in_keyset_order(client):
    docs, resps = pages(client, f"/v1/stories/{STORY}", limit=10)
    arts = [a for d in docs for a in d["articles"]]
    assert len(docs) == 5 and len(arts) == 45 == docs[0]["article_count"]
    assert len({a["article_id"] for a in arts}) == 45
    # published_at desc, article_id asc on ties (the fixture has pairs with equal published_at)
    assert keys(arts) == sorted(keys(arts), key=lambda k: (-samples_ms(k[0]), k[1]))
    assert all(r.headers["Cache-Control"] == STORY_CC for r in resps)
    assert len({r.headers["ETag"] for r in resps}) == 5


def samples_ms(ts):
    from serving.state.catalog import _ms

    return _ms(ts)


def test_cursor_is_stable_when_new_articles_arrive(app, client, world):
    url = f"/v1/stories/{STORY}"
    first = orjson.loads(client.get(f"{url}?limit=10").data)
    cursor = first["next_cursor"]
    before = client.get(f"{url}?limit=10&cursor={cursor}")
    # A new version: 3 newer articles, 2 inserted in the middle of the old ordering, one old article gone.
    old = samples.coverage_articles(STORY, 45)
    newer = samples.coverage_articles(STORY, 3, start=samples.BASE_TIME + timedelta(hours=1), prefix="n")
    middle = samples.coverage_articles(STORY, 2, start=samples.BASE_TIME - timedelta(minutes=70), prefix="m")
    publish(world, samples.story_coverage(STORY, 2, newer + middle + old[:-1]))
    app.extensions["newsroom"].watcher.poll_once()
    assert orjson.loads(client.get(url).data)["story_version"] == 2
    # The cursor keeps paging version 1: same bytes as before the new version was loaded.
    after = client.get(f"{url}?limit=10&cursor={cursor}")
    assert after.status_code == 200 and after.data == before.data
    assert orjson.loads(after.data)["story_version"] == 1
    assert "Newsroom-Cursor-Rebased" not in after.headers
    # Paging v1 to the end from that cursor yields exactly v1's remaining articles.
    rest, c = [], cursor
    while c:
        d = orjson.loads(client.get(f"{url}?limit=10&cursor={c}").data)
        rest += d["articles"]
        c = d["next_cursor"]
    v1 = sorted(keys(old), key=lambda k: (-samples_ms(k[0]), k[1]))
    assert keys(first["articles"] + rest) == v1


def test_cursor_rebases_explicitly_when_its_version_is_gone(world, profiles):
    app = make_app(world, profiles, NEWSROOM_STORY_GRACE_S=0.0)
    client = app.test_client()
    url = f"/v1/stories/{STORY}"
    first = orjson.loads(client.get(f"{url}?limit=10").data)
    seen = {a["article_id"] for a in first["articles"]}
    old = samples.coverage_articles(STORY, 45)
    middle = samples.coverage_articles(STORY, 2, start=samples.BASE_TIME - timedelta(minutes=300), prefix="m")
    publish(world, samples.story_coverage(STORY, 2, middle + old))
    app.extensions["newsroom"].watcher.poll_once()  # v1 superseded with no grace: gone at the next poll
    app.extensions["newsroom"].watcher.poll_once()
    r = client.get(f"{url}?limit=100&cursor={first['next_cursor']}")
    assert r.status_code == 200
    assert r.headers["Newsroom-Cursor-Rebased"] == "v1"
    doc = orjson.loads(r.data)
    assert doc["story_version"] == 2
    got = [a["article_id"] for a in doc["articles"]]
    assert not seen & set(got)  # keyset: nothing the reader already saw comes back
    assert set(got) == {a["article_id"] for a in old + middle} - seen  # and nothing older is skipped


@pytest.mark.parametrize(
    "make",
    [
        lambda: "garbage",
        lambda: cursors.encode(b"other-secret", "story", [STORY, 1, 0, "x"]),  # forged
        lambda: cursors.encode(CURSOR_SECRET.encode(), "story", [samples.story_id(1), 1, 0, "x"]),  # other story
        lambda: cursors.encode(CURSOR_SECRET.encode(), "foryou", ["us-en", 1, 10]),  # other kind
    ],
)
def test_bad_cursors_are_400(client, make):
    r = client.get(f"/v1/stories/{STORY}?cursor={make()}")
    assert r.status_code == 400 and "cursor" in r.json["detail"] and r.json["code"] == "invalid_cursor"
    assert r.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("merged", [MERGED, MERGED_CHAIN])
def test_merged_ids_redirect_to_the_survivor_in_one_hop(client, merged):
    r = client.get(f"/v1/stories/{merged}?edition=us-en&limit=5&cursor=abc")
    assert r.status_code == 301
    assert r.headers["Location"] == f"/v1/stories/{STORY}?edition=us-en&limit=5"
    assert r.headers["Cache-Control"] == STORY_CC
    follow = client.get(r.headers["Location"])
    assert follow.status_code == 200  # one hop: the target is a story, not another redirect
    assert orjson.loads(follow.data)["story_id"] == STORY


def test_story_edition_is_echoed_and_checked(client):
    assert orjson.loads(client.get(f"/v1/stories/{STORY}?edition=us-en").data)["edition"] == "us-en"
    assert orjson.loads(client.get(f"/v1/stories/{STORY}").data)["edition"] is None
    assert client.get(f"/v1/stories/{STORY}?edition=US").status_code == 400
    assert client.get(f"/v1/stories/{STORY}?edition=zz-zz").status_code == 404


def test_unknown_and_malformed_story_ids_are_404(client):
    assert client.get("/v1/stories/123").status_code == 404
    assert client.get("/v1/stories/abc").status_code == 404
