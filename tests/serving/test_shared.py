"""Shared endpoints: identical bytes for every reader, cache headers, ETags, rejection of personal headers."""

from __future__ import annotations

import orjson
import pytest

from devtools import samples
from schemas.pages import validate_page
from tests.serving.helpers import PAGE_CC, make_app, shared_urls

EDITION_URL = "/v1/editions/us-en/sections/top"


def test_two_readers_get_byte_identical_pages(app):
    alice = app.test_client()
    bob = app.test_client()
    alice.set_cookie("unused", "x")  # a client with a jar: the cookie must not even reach shared pages...
    alice.delete_cookie("unused")  # ...so clear it; rejection is tested below
    for url in shared_urls():
        a = alice.get(url, headers={"User-Agent": "alice/1", "Accept-Language": "fr", "X-Forwarded-For": "10.0.0.1"})
        b = bob.get(url, headers={"User-Agent": "bob/2", "Accept-Language": "en", "X-Forwarded-For": "10.9.9.9"})
        assert a.status_code == b.status_code == 200, url
        assert a.data == b.data, url
        assert a.headers == b.headers, url  # same headers too: nothing varies by reader
        assert "Set-Cookie" not in a.headers and "Vary" not in a.headers


def test_edition_page_is_the_schema_page_with_cache_headers(client):
    r = client.get(EDITION_URL)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/json"
    assert r.headers["Cache-Control"] == PAGE_CC
    assert r.headers["ETag"].startswith('"') and not r.headers["ETag"].startswith("W/")
    doc = orjson.loads(r.data)
    validate_page("edition_page", doc)
    assert [s["rank"] for s in doc["stories"]] == list(range(1, 31))


@pytest.mark.parametrize("limit", [1, 5, 7, 10, 29, 30, 100])
def test_limit_slices_the_same_page(client, limit):
    full = orjson.loads(client.get(EDITION_URL).data)
    r = client.get(f"{EDITION_URL}?limit={limit}")
    doc = orjson.loads(r.data)
    validate_page("edition_page", doc)
    assert doc["stories"] == full["stories"][:limit]
    assert {k: v for k, v in doc.items() if k != "stories"} == {k: v for k, v in full.items() if k != "stories"}


def test_etags_differ_per_limit_and_give_304(client):
    tags = {client.get(f"{EDITION_URL}?limit={k}").headers["ETag"] for k in (5, 6, 30)}
    assert len(tags) == 3
    etag = client.get(EDITION_URL).headers["ETag"]
    assert client.get(f"{EDITION_URL}?limit=30").headers["ETag"] == etag  # same bytes, same tag
    for inm in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        r = client.get(EDITION_URL, headers={"If-None-Match": inm})
        assert r.status_code == 304 and r.data == b"", inm
        assert r.headers["ETag"] == etag and r.headers["Cache-Control"] == PAGE_CC
    assert client.get(EDITION_URL, headers={"If-None-Match": '"stale"'}).status_code == 200


@pytest.mark.parametrize("bad", ["0", "101", "-1", "abc", "1.5", ""])
def test_bad_limit_is_400_and_not_cacheable(client, bad):
    r = client.get(f"{EDITION_URL}?limit={bad}")
    assert r.status_code == 400
    assert r.headers["Cache-Control"] == "no-store"
    assert r.headers["Content-Type"] == "application/problem+json"
    assert r.json["code"] == "invalid_limit" and "limit" in r.json["detail"]


@pytest.mark.parametrize("header", ["Cookie", "Authorization"])
def test_personal_headers_are_rejected_on_every_shared_endpoint(app, header, token):
    client = app.test_client(use_cookies=False)  # so that the raw Cookie header is sent as given
    value = "session=abc" if header == "Cookie" else f"Bearer {token('alice')}"
    for url in shared_urls():
        r = client.get(url, headers={header: value})
        assert r.status_code == 400, url
        assert r.headers["Cache-Control"] == "no-store", url  # a rejection must never be cached for all
        assert header in r.json["carried"]
        assert "Cookie" in r.json["detail"] and "Authorization" in r.json["detail"]
        assert r.json["code"] == "personal_headers" and r.headers["Content-Type"] == "application/problem+json"


def test_cookie_from_a_jar_is_rejected_too(app):
    client = app.test_client()
    client.set_cookie("sid", "123")
    assert client.get(EDITION_URL).status_code == 400


def test_version_endpoint_is_tiny_and_moves_with_pointers(app, client, world):
    r = client.get("/v1/editions/us-en/version")
    assert r.status_code == 200 and len(r.data) < 300
    assert r.json == {
        "edition": "us-en",
        "cycle": "2025-03-01T12:01:00Z",
        "sections": {"tech": 1, "top": 1},
        "pool_version": 1,
    }
    samples.publish(world.pointers, world.snapshots, samples.edition_page("us-en", "top", 2, n_stories=30))
    app.extensions["newsroom"].watcher.poll_once()
    r2 = client.get("/v1/editions/us-en/version")
    assert r2.json["sections"]["top"] == 2 and r2.headers["ETag"] != r.headers["ETag"]


def test_missing_pages_are_404_cached_briefly(client):
    for url in ("/v1/editions/us-en/sections/nope", "/v1/editions/xx-yy/version", "/v1/nothing"):
        r = client.get(url)
        assert r.status_code == 404, url
        assert r.headers["Cache-Control"] == "public, max-age=0, s-maxage=10"


def test_session_is_never_written(app):
    """A handler that tried to use the Flask session would fail: sessions are null, Set-Cookie is asserted away."""
    from flask import session

    @app.get("/v1/_test_session")
    def _touch():
        session["x"] = 1
        return "x"

    client = app.test_client()
    with pytest.raises(RuntimeError):  # the null session refuses writes
        client.get("/v1/_test_session")


def test_set_cookie_is_asserted_away(app):
    from flask import Response

    @app.get("/v1/_test_cookie")
    def _cookie():
        resp = Response("x")
        resp.set_cookie("a", "b")
        return resp

    with pytest.raises(AssertionError, match="Set-Cookie"):
        app.test_client().get("/v1/_test_cookie")


def test_not_ready_until_pages_are_loaded(stores, profiles):
    app = make_app(stores, profiles)  # nothing published: the poll works, but there is no page
    client = app.test_client()
    assert client.get("/readyz").status_code == 503
    r = client.get(EDITION_URL)
    assert r.status_code == 503 and r.headers["Retry-After"] and r.headers["Cache-Control"] == "no-store"
    assert client.get("/healthz").status_code == 200
