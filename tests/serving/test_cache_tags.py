"""Every shared answer carries the cache tag a purge of its pointer invalidates (stores/cdn.py ``cache_tag``): the
Flask routes and the fast path alike, JSON and web pages, every query string of a page under one tag. Private
answers carry none."""

from __future__ import annotations

import pytest

from stores.cdn import cache_tag, public_paths
from tests.serving.helpers import EDITION, STORY, TOKEN_SECRET, make_app, publish_world


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from stores import StoreConfig, open_stores

    stores = open_stores(StoreConfig(data_dir=str(tmp_path_factory.mktemp("tags"))))
    publish_world(stores)
    app = make_app(stores, None)
    yield app.test_client()
    app.extensions["newsroom"].close()


@pytest.mark.parametrize("pointer", [f"{EDITION}/top", f"{EDITION}/tech", f"story/{STORY}"])
def test_the_pages_of_a_pointer_carry_the_tags_its_purge_invalidates(client, pointer):
    for path in public_paths(pointer):
        for query in ("", "?limit=3"):
            r = client.get(path + query)
            assert r.status_code == 200, (path, r.status_code)
            assert r.headers["Cache-Tag"] == cache_tag(path), path + query


def test_the_fast_path_sends_the_same_tag_as_flask(client):
    path = f"/v1/editions/{EDITION}/sections/top"
    answer = client.application.wsgi_app.answer(path, "limit=3", None)  # serving/worker/fastpath.py answers it
    assert answer is not None and dict(answer[1])["Cache-Tag"] == cache_tag(path)
    assert client.application.wsgi_app.answer(path, "limit=3&utm=x", None) is None  # Flask answers this one
    assert client.get(path + "?limit=3&utm=x").headers["Cache-Tag"] == cache_tag(path)


def test_private_answers_carry_no_tag(client):
    from serving.http.auth import issue_token

    r = client.get(
        f"/v1/feed/for-you?edition={EDITION}", headers={"Authorization": f"Bearer {issue_token(TOKEN_SECRET, 'a')}"}
    )
    assert r.status_code == 200 and "Cache-Tag" not in r.headers


def test_tags_are_one_per_path_and_agree_encoded_or_not():
    assert cache_tag("/v1/topics/entity:calder%20bay") == cache_tag("/v1/topics/entity:calder bay")
    assert len({cache_tag(p) for p in public_paths(f"{EDITION}/top") + public_paths(f"story/{STORY}")}) == 5


def test_a_top_page_showing_a_breaking_story_gets_the_short_breaking_ttl(tmp_path):
    """A safety net under the purge: while an edition's top page shows a Breaking story its top-stories pages (API
    and web; the fast path too) carry ``NEWSROOM_BREAKING_S_MAXAGE`` (10 s) instead of 60 s, so a Breaking
    update reaches readers in seconds even where the purge goes by path (minutes: a project without cache tags).
    Other sections, and top pages without Breaking, keep the page TTL."""
    from devtools import samples
    from stores import StoreConfig, open_stores
    from tests.serving.helpers import PAGE_CC, publish

    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    publish_world(stores)
    top = samples.edition_page(EDITION, "top", 2, n_stories=30)
    top["stories"][3]["labels"] = ["breaking"]
    publish(stores, top)
    app = make_app(stores, None)
    client = app.test_client()
    short = "public, s-maxage=10"
    for path in public_paths(f"{EDITION}/top"):
        for query in ("", "?limit=5", "?limit=5&utm=x"):  # fast path and Flask
            assert client.get(path + query).headers["Cache-Control"] == short, path + query
    for path in public_paths(f"{EDITION}/tech") + public_paths("gb-en/top"):
        assert client.get(path).headers["Cache-Control"] == PAGE_CC, path
    app.extensions["newsroom"].close()
