"""Local sign-in (serving/web/signin.py) and the reader's controls kept out of the shared bytes.

A reader signs in on a local stack without pasting a token: ``/sign-in`` is a private page, ``POST /sign-in/token``
answers a token only to a same-origin JSON request, and neither exists where the token secret is not the local
one. Shared pages stay the same bytes whoever asks: signed in or out, with a cookie or a bearer header, and after
the reader changed follows and hidden sources."""

from __future__ import annotations

import pytest

from serving.http import conventions as http
from serving.http.auth import HmacTokenVerifier
from serving.web import signin
from tests.serving.helpers import EDITION, STORY, TOKEN_SECRET, make_app, publish_topic_pages

JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    "cfg, on",
    [
        ({}, True),  # embedded backend, local secrets: a local stack
        ({"NEWSROOM_TOKEN_SECRET": "set"}, False),  # a secret someone set: not the generated local one
        ({"NEWSROOM_TOKEN_SECRET": "set", "NEWSROOM_LOCAL_SIGN_IN": True}, True),
        ({"NEWSROOM_LOCAL_SIGN_IN": False}, False),
        ({"NEWSROOM_BACKEND": "gcp", "NEWSROOM_LOCAL_SIGN_IN": True}, False),  # never outside the embedded backend
        ({"NEWSROOM_TOKEN_VERIFIER": object(), "NEWSROOM_LOCAL_SIGN_IN": True}, False),
    ],
)
def test_when_local_sign_in_exists(cfg, on, tmp_path):
    base = {"NEWSROOM_BACKEND": "embedded", "NEWSROOM_LOCAL_SIGN_IN": "auto", "NEWSROOM_DATA_DIR": str(tmp_path)}
    assert signin.enabled({**base, **cfg}) is on


def test_newsroom_run_passes_the_local_secret_and_still_has_sign_in(tmp_path):
    from serving import local_secrets

    secret = local_secrets(str(tmp_path))["token"]  # what devtools/run.py hands its origin
    cfg = {"NEWSROOM_BACKEND": "embedded", "NEWSROOM_DATA_DIR": str(tmp_path), "NEWSROOM_LOCAL_SIGN_IN": "auto"}
    assert signin.enabled({**cfg, "NEWSROOM_TOKEN_SECRET": secret}) is True
    assert signin.enabled({**cfg, "NEWSROOM_TOKEN_SECRET": "another"}) is False


@pytest.fixture
def local(world, profiles):
    app = make_app(world, profiles, NEWSROOM_LOCAL_SIGN_IN=True)
    yield app
    app.extensions["newsroom"].close()


def test_the_sign_in_page_is_private(local):
    r = local.test_client().get("/sign-in?next=/e/us-en/tech")
    assert r.status_code == 200 and r.headers["Cache-Control"] == http.PRIVATE
    assert "Set-Cookie" not in r.headers and "script-src 'self'" in r.headers["Content-Security-Policy"]
    html = r.data.decode()
    assert 'data-next="/e/us-en/tech"' in html and "/signin.js" in html and "<script>" not in html


@pytest.mark.parametrize("nxt", ["//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:x", ""])
def test_next_never_leaves_the_origin(nxt):
    assert signin.safe_next(nxt) == "/"


def test_a_same_origin_json_request_gets_a_token_for_that_reader(local):
    r = local.test_client().post(
        "/sign-in/token",
        json={"reader": "ana"},
        headers={"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"},
    )
    assert r.status_code == 200 and r.headers["Cache-Control"] == http.PRIVATE and "Set-Cookie" not in r.headers
    doc = r.get_json()
    assert doc["reader_id"] == "local:ana" and HmacTokenVerifier(TOKEN_SECRET).verify(doc["token"]) == "local:ana"
    profile = local.test_client().get("/v1/me/profile", headers={"Authorization": f"Bearer {doc['token']}"})
    assert profile.status_code == 200 and profile.get_json()["reader_id"] == "local:ana"


@pytest.mark.parametrize(
    "kw, status",
    [
        ({"json": {"reader": "ana"}, "headers": {"Sec-Fetch-Site": "cross-site"}}, 403),
        ({"json": {"reader": "ana"}, "headers": {"Origin": "https://evil.example"}}, 403),
        ({"data": "reader=ana", "content_type": "application/x-www-form-urlencoded"}, 415),  # a cross-site form
        ({"data": '{"reader": "ana"}', "content_type": "text/plain"}, 415),
        ({"json": {"reader": "a b"}}, 400),
        ({"json": {"reader": "x" * 65}}, 400),
        ({"json": ["ana"]}, 400),
        ({"data": '{"reader": "' + "x" * 70_000 + '"}', "content_type": "application/json"}, 413),
    ],
)
def test_anything_else_gets_no_token(local, kw, status):
    r = local.test_client().post("/sign-in/token", **kw)
    assert r.status_code == status and "token" not in (r.get_json() or {})
    assert r.headers["Cache-Control"] == http.PRIVATE


def test_without_local_secrets_there_is_no_sign_in(client):
    assert client.get("/sign-in").status_code == 404
    assert client.post("/sign-in/token", json={"reader": "ana"}, headers=JSON).status_code == 404
    assert "/sign-in" not in client.get(f"/e/{EDITION}/").data.decode()  # and no page links it


def _pages(world) -> list[str]:
    publish_topic_pages(world, {"entity:org:who": 3})
    return [
        f"/e/{EDITION}/",
        f"/e/{EDITION}/tech",
        f"/e/{EDITION}/topics",
        f"/e/{EDITION}/topics/entity:org:who",
        f"/e/{EDITION}/for-you",
        f"/stories/{STORY}",
    ]


def test_shared_pages_are_the_same_bytes_signed_in_and_out(local, world):
    pages = _pages(world)
    local.extensions["newsroom"].watcher.poll_once()
    c = local.test_client()
    out = {u: c.get(u) for u in pages}
    assert all(r.status_code == 200 for r in out.values()), {u: r.status_code for u, r in out.items()}
    assert 'id="reader-signin" href="/sign-in?next=' in out[f"/e/{EDITION}/"].data.decode()
    tok = c.post("/sign-in/token", json={"reader": "ben"}).get_json()["token"]
    bearer = {"Authorization": f"Bearer {tok}"}
    assert c.post("/v1/me/follows", json={"kind": "topic", "value": "tech"}, headers=bearer).status_code == 200
    assert c.post("/v1/me/hidden-sources", json={"source": "pub-1"}, headers=bearer).status_code == 200
    for headers in (bearer, {"Cookie": f"newsroom={tok}"}, {**bearer, "Cookie": "a=b"}):
        for url in pages:
            r = c.get(url, headers=headers)
            assert (r.status_code, r.data, r.headers["ETag"], r.headers["Cache-Control"]) == (
                200,
                out[url].data,
                out[url].headers["ETag"],
                out[url].headers["Cache-Control"],
            ), url
            assert "Set-Cookie" not in r.headers and r.headers["Cache-Control"].startswith("public")


def test_pages_carry_what_the_controls_need_and_nothing_personal(local, world):
    _pages(world)
    local.extensions["newsroom"].watcher.poll_once()
    c = local.test_client()
    top = c.get(f"/e/{EDITION}/").data.decode()
    assert 'id="foryou-slice"' in top and " hidden>" in top.split('id="foryou-slice"', 1)[1].split("\n", 1)[0]
    assert 'data-publisher-id="' in top and 'data-version="1" data-section="top" data-poll-s="60"' in top
    tech = c.get(f"/e/{EDITION}/tech").data.decode()
    assert 'data-follow-kind="topic" data-follow-value="tech" data-follow-name="Tech"' in tech
    topic = c.get(f"/e/{EDITION}/topics/entity:org:who").data.decode()
    assert 'data-follow-kind="entity" data-follow-value="org:who"' in topic
    assert "/reader.js" in top and "/reader.js" in tech and "/reader.js" in topic
