"""API conventions: discovery of the loaded editions, RFC 9457 problem+json errors everywhere,
CORS on the shared GETs only, and an OpenAPI document whose operations carry stable unique operationIds."""

from __future__ import annotations

import re

import orjson
import pytest

from devtools import samples
from serving.api import openapi
from tests.serving.helpers import EDITION, PAGE_CC, STORY, make_app

PROBLEM = "application/problem+json"
PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def assert_problem(r, status: int, code: str) -> dict:
    assert r.status_code == status, (r.status_code, r.data[:300])
    assert r.headers["Content-Type"] == PROBLEM, r.headers.get("Content-Type")
    doc = orjson.loads(r.data)
    assert set(doc) >= PROBLEM_KEYS, doc
    assert doc["status"] == status and doc["code"] == code, doc
    assert doc["type"] == f"https://newsroom.example/problems/{code}"
    assert doc["title"] and doc["detail"]
    return doc


# --- discovery --------------------------------------------------------------------------------------------------


def test_editions_index_lists_every_loaded_edition(client):
    r = client.get("/v1/editions")
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
    assert r.headers["Cache-Control"] == PAGE_CC
    assert r.headers["ETag"].startswith('"')
    doc = r.json
    assert [e["edition"] for e in doc["editions"]] == ["gb-en", "us-en"]
    us = doc["editions"][1]
    assert us["pool_version"] == 1 and us["cycle"] == "2025-03-01T12:01:00Z"
    assert us["sections"] == [
        {"section": "top", "version": 1, "url": "/v1/editions/us-en/sections/top"},
        {"section": "tech", "version": 1, "url": "/v1/editions/us-en/sections/tech"},
    ]
    assert us["version_url"] == "/v1/editions/us-en/version"
    assert doc["editions"][0]["pool_version"] is None  # gb-en has pages but no pool


def test_edition_document_and_304(client):
    r = client.get(f"/v1/editions/{EDITION}")
    assert r.status_code == 200 and r.headers["Cache-Control"] == PAGE_CC
    assert r.json == client.get("/v1/editions").json["editions"][1]
    again = client.get(f"/v1/editions/{EDITION}", headers={"If-None-Match": r.headers["ETag"]})
    assert again.status_code == 304 and again.data == b"" and again.headers["ETag"] == r.headers["ETag"]
    for url in ("/v1/editions", f"/v1/editions/{EDITION}"):
        sections = [s["url"] for e in [client.get(url).json] for s in e.get("sections", [])]
        for u in sections:
            assert client.get(u).status_code == 200, u


def test_discovery_moves_with_the_pointers(app, client, world):
    before = client.get(f"/v1/editions/{EDITION}")
    samples.publish(world.pointers, world.snapshots, samples.edition_page(EDITION, "top", 2, n_stories=30))
    app.extensions["newsroom"].watcher.poll_once()
    after = client.get(f"/v1/editions/{EDITION}")
    assert after.headers["ETag"] != before.headers["ETag"]
    assert after.json["sections"][0] == {"section": "top", "version": 2, "url": f"/v1/editions/{EDITION}/sections/top"}
    assert client.get("/v1/editions").json["editions"][1] == after.json


def test_unknown_edition_is_a_cached_404_problem(client):
    r = client.get("/v1/editions/zz-zz")
    assert_problem(r, 404, "unknown_edition")
    assert r.headers["Cache-Control"] == "public, max-age=0, s-maxage=10"


def test_discovery_rejects_personal_headers(app):
    c = app.test_client(use_cookies=False)
    for url in ("/v1/editions", f"/v1/editions/{EDITION}"):
        r = c.get(url, headers={"Cookie": "a=b"})
        assert_problem(r, 400, "personal_headers")
        assert r.headers["Cache-Control"] == "no-store"


def test_discovery_before_the_first_load_is_503(stores, profiles):
    app = make_app(stores, profiles)  # the world fixture is not used: nothing published
    try:
        c = app.test_client()
        # a configured edition is "not live yet" (tests/serving/test_first_run.py), the index not loaded
        for url, code in (("/v1/editions", "not_ready"), (f"/v1/editions/{EDITION}", "warming_up")):
            r = c.get(url)
            assert_problem(r, 503, code)
            assert r.headers["Retry-After"] and r.headers["Cache-Control"] == "no-store"
    finally:
        app.extensions["newsroom"].close()


# --- problem+json -----------------------------------------------------------------------------------------------


def test_flask_own_404_and_405_are_problems(client):
    r = client.get("/v1/nothing/here")
    assert_problem(r, 404, "not_found")
    assert r.headers["Cache-Control"] == "public, max-age=0, s-maxage=10"
    r = client.post(f"/v1/editions/{EDITION}/version")
    assert_problem(r, 405, "method_not_allowed")
    assert "GET" in r.headers["Allow"]


def test_shared_errors_are_problems(client):
    assert_problem(client.get(f"/v1/editions/{EDITION}/sections/top?limit=0"), 400, "invalid_limit")
    assert_problem(client.get(f"/v1/editions/{EDITION}/sections/nope"), 404, "unknown_page")
    assert_problem(client.get("/v1/stories/123"), 404, "unknown_story")
    assert_problem(client.get(f"/v1/stories/{STORY}?cursor=forged"), 400, "invalid_cursor")
    assert_problem(client.get(f"/v1/stories/{STORY}?edition=nope"), 400, "invalid_edition")
    assert_problem(client.get(f"/v1/topics/nope?edition={EDITION}"), 400, "invalid_topic")
    assert_problem(client.get(f"/v1/topics/topic:nope?edition={EDITION}"), 404, "unknown_topic")


def test_private_errors_are_problems_and_keep_their_headers(client, auth):
    r = client.get(f"/v1/feed/for-you?edition={EDITION}")
    assert_problem(r, 401, "unauthorized")
    assert r.headers["WWW-Authenticate"].startswith("Bearer") and r.headers["Cache-Control"] == "private, no-store"
    r = client.get(f"/v1/feed/for-you?edition={EDITION}&cursor=bad", headers=auth("alice"))
    assert_problem(r, 400, "invalid_cursor")
    assert r.headers["Cache-Control"] == "private, no-store"
    r = client.post("/v1/me/follows", data=b"x" * (70 * 1024), headers=auth("alice"))
    assert_problem(r, 413, "body_too_large")
    r = client.post("/v1/events", json={"events": [{"kind": "nope"}]}, headers=auth("alice"))
    doc = assert_problem(r, 400, "no_valid_event")
    assert doc["rejected"][0]["index"] == 0


def test_rate_limited_is_a_problem_with_retry_after(world, profiles, auth):
    app = make_app(world, profiles, NEWSROOM_READER_BURST=1, NEWSROOM_READER_RATE=0.001)
    try:
        c = app.test_client()
        assert c.post("/v1/me/history/pause", headers=auth("bob")).status_code == 200
        r = c.post("/v1/me/history/pause", headers=auth("bob"))
        assert_problem(r, 429, "rate_limited")
        assert int(r.headers["Retry-After"]) >= 1
    finally:
        app.extensions["newsroom"].close()


def test_werkzeug_413_is_a_problem(world, profiles):
    app = make_app(world, profiles)
    try:
        limit = app.config["MAX_CONTENT_LENGTH"]
        r = app.test_client().post("/v1/ping", data=b"x" * (limit + 10))
        assert_problem(r, 413, "body_too_large")
    finally:
        app.extensions["newsroom"].close()


# --- CORS -------------------------------------------------------------------------------------------------------


SHARED = [
    "/v1/editions",
    f"/v1/editions/{EDITION}",
    f"/v1/editions/{EDITION}/version",
    f"/v1/editions/{EDITION}/sections/top",
    f"/v1/editions/{EDITION}/sections/top?limit=3",
    f"/v1/stories/{STORY}",
    f"/v1/topics/entity:org:isro?edition={EDITION}",
    "/openapi.json",
]


@pytest.mark.parametrize("url", SHARED)
def test_shared_gets_allow_any_origin(client, url):
    r = client.get(url, headers={"Origin": "https://reader.example"})
    assert r.status_code == 200
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert "ETag" in r.headers.get("Access-Control-Expose-Headers", "") or url == "/openapi.json"
    assert "Access-Control-Allow-Credentials" not in r.headers
    assert "Vary" not in r.headers  # the same answer for every Origin: nothing for the CDN to split on
    assert client.head(url).headers["Access-Control-Allow-Origin"] == "*"


def test_shared_errors_and_304_carry_cors_too(client):
    assert client.get("/v1/editions/zz-zz").headers["Access-Control-Allow-Origin"] == "*"
    assert client.get(f"/v1/topics/entity:nobody?edition={EDITION}").headers["Access-Control-Allow-Origin"] == "*"
    etag = client.get(f"/v1/editions/{EDITION}/version").headers["ETag"]
    r = client.get(f"/v1/editions/{EDITION}/version", headers={"If-None-Match": etag})
    assert r.status_code == 304 and r.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize("url", SHARED[:7])
def test_preflight_on_shared(client, url):
    r = client.options(
        url,
        headers={
            "Origin": "https://reader.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "if-none-match",
        },
    )
    assert r.status_code == 204 and r.data == b""
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert set(r.headers["Access-Control-Allow-Methods"].replace(" ", "").split(",")) == {"GET", "HEAD", "OPTIONS"}
    assert "if-none-match" in r.headers["Access-Control-Allow-Headers"].lower()
    assert int(r.headers["Access-Control-Max-Age"]) > 0
    assert "Access-Control-Allow-Credentials" not in r.headers and "Vary" not in r.headers


PRIVATE = ["/v1/feed/for-you?edition=us-en", "/v1/me/profile", "/v1/events", "/v1/me/follows", "/healthz"]


@pytest.mark.parametrize("url", PRIVATE)
def test_private_endpoints_get_no_cors(client, auth, url):
    headers = {**auth("alice"), "Origin": "https://evil.example"}
    r = client.get(url, headers=headers) if url.startswith(("/v1/feed", "/v1/me/profile", "/healthz")) else None
    if r is not None:
        assert "Access-Control-Allow-Origin" not in r.headers
    pre = client.options(
        url.split("?")[0],
        headers={
            "Origin": "https://evil.example",
            "Access-Control-Request-Method": "POST" if "events" in url or "follows" in url else "GET",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert "Access-Control-Allow-Origin" not in pre.headers
    assert "Access-Control-Allow-Headers" not in pre.headers


# --- OpenAPI ----------------------------------------------------------------------------------------------------


def _operations():
    for path, item in openapi.document()["paths"].items():
        for method, op in item.items():
            yield method, path, op


def test_every_operation_has_a_unique_camelcase_operation_id():
    ids = [op.get("operationId") for _, _, op in _operations()]
    assert all(ids), [(m, p) for m, p, op in _operations() if not op.get("operationId")]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z][a-zA-Z0-9]*", i) for i in ids), ids


def test_errors_are_documented_as_problems():
    doc = openapi.document()
    assert "Problem" in doc["components"]["schemas"]
    # The JSON API answers errors as problems; the feeds (web paths beside the HTML pages they mirror) answer the
    # pages' HTML errors, and say so.
    for method, path, op in _operations():
        for status, resp in op["responses"].items():
            if int(status) >= 400:
                wanted = ["text/html"] if "/feed.{fmt}" in path else [PROBLEM]
                assert list(resp.get("content", {})) == wanted, (method, path, status)


def test_discovery_routes_are_documented():
    paths = openapi.document()["paths"]
    assert paths["/v1/editions"]["get"]["operationId"] == "listEditions"
    assert paths["/v1/editions/{edition}"]["get"]["operationId"] == "getEdition"
    assert "404" in paths["/v1/editions/{edition}"]["get"]["responses"]


def test_every_problem_code_used_in_serving_is_registered():
    """A code missing from serving.http.conventions.PROBLEMS would be a KeyError (500) on the error path: catch it here."""
    from pathlib import Path

    from serving.http import conventions as http

    root = Path(__file__).resolve().parents[2] / "serving"
    used = set()
    for path in root.rglob("*.py"):
        used |= set(re.findall(r"problem\(\s*\d{3},\s*\"([a-z_]+)\"", path.read_text()))
    assert used and used <= set(http.PROBLEMS), used - set(http.PROBLEMS)
    assert {"invalid_cursor", "unknown_edition", "not_ready", "rate_limited", "body_too_large", "unauthorized"} <= used


def test_push_errors_are_problems(client):
    assert_problem(client.get("/v1/websub/0000.nope?hub.challenge=x"), 404, "unknown_subscription")
    r = client.post("/v1/ping", data=b"{}")
    assert_problem(r, 401, "unauthorized")
    assert r.headers["Cache-Control"] == "no-store"


def test_one_page_size_cap_for_every_route_and_the_document(client):
    """``schemas.pages.MAX_LIMIT`` is the one cap: the document states it and both the Flask routes and the fast
    path accept it and refuse one more (a second definition drifting would fail here)."""
    from schemas.pages import MAX_LIMIT

    shared = ("/v1/editions/", "/v1/stories/", "/v1/topics/")  # the personal feed has its own, smaller cap
    limits = [
        p
        for _, path, op in _operations()
        if path.startswith(shared)
        for p in op.get("parameters", [])
        if p.get("name") == "limit"
    ]
    assert limits and {p["schema"]["maximum"] for p in limits} == {MAX_LIMIT}
    for url in (f"/v1/editions/{EDITION}/sections/top", f"/v1/stories/{STORY}"):
        assert client.get(f"{url}?limit={MAX_LIMIT}").status_code == 200, url
        assert_problem(client.get(f"{url}?limit={MAX_LIMIT + 1}"), 400, "invalid_limit")
