"""Malformed input: 400, never 500, and /openapi.json tells the truth about it."""

from __future__ import annotations

import json
import time

import pytest

from serving.api import openapi
from serving.http.auth import issue_token
from stores import StoreConfig, open_stores
from stores.profiles import open_profile_store
from tests.serving.helpers import EDITION, TOKEN_SECRET, make_app, publish_world
from transforms.ingest import websub

PING_FEED = "http://agenciasur.test/rss/ultima-hora.xml"


@pytest.fixture
def app(tmp_path):
    config = StoreConfig(data_dir=str(tmp_path / "data"))
    stores = open_stores(config)
    publish_world(stores, pool_size=30)
    app = make_app(stores, open_profile_store(config), NEWSROOM_PING_KEYS={"agencia-sur": "k"})
    yield app
    app.extensions["newsroom"].close()


AUTH = {"Authorization": f"Bearer {issue_token(TOKEN_SECRET, 'alice')}", "Content-Type": "application/json"}


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/events", b'{"events":' + b"[" * 1000 + b"]" * 1000 + b"}"),
        ("/v1/events", b'{"events":[' + b'{"a":' * 1000 + b"1" + b"}" * 1000 + b"]}"),
        ("/v1/events", b'{"events": [{"event_id": "e", "kind": "READ", "edition": "us-en", "at": 1e400}]}'),
        ("/v1/events", b'{"events": [{"event_id": ["e"], "kind": "READ", "edition": "us-en", "at": 1}]}'),
        ("/v1/events", b"\xff\xfe not json"),
        ("/v1/me/follows", b'{"kind": ["topic"], "value": "x"}'),
        ("/v1/me/follows", b'{"kind": {"a": 1}, "value": "x"}'),
        ("/v1/me/follows", b'{"kind": "topic", "value": ["x"]}'),
        ("/v1/me/fewer-like-this", b'{"story_id": "7300000000000000001", "edition": ["us-en"]}'),
        ("/v1/me/fewer-like-this", b'{"story_id": ["7300000000000000001"]}'),
        ("/v1/me/fewer-like-this", b'{"story_id": "7300000000000000001", "edition": {"x": 1}}'),
        ("/v1/me/hidden-sources", b'{"source": [1, 2]}'),
        ("/v1/me/follows", b"[" * 5000 + b"]" * 5000),
    ],
)
def test_malformed_private_bodies_answer_400(app, path, body):
    r = app.test_client().post(path, data=body, headers=AUTH)
    assert r.status_code == 400, (r.status_code, r.get_data(as_text=True)[:300])
    assert r.get_json()["status"] == 400


@pytest.mark.parametrize("at", [b"1e400", b"-1e400", b"NaN", b'"soon"', b"[1]", b"true", b"1e300"])
def test_ping_with_an_impossible_time_answers_400(app, at):
    body = b'{"feed_url": "' + PING_FEED.encode() + b'", "at": ' + at + b"}"
    headers = {websub.PING_PUBLISHER_HEADER: "agencia-sur", websub.PING_SIGNATURE_HEADER: websub.sign("k", body)}
    r = app.test_client().post("/v1/ping", data=body, headers=headers)
    assert r.status_code == 400, r.get_data(as_text=True)


def test_ping_with_a_list_for_the_feed_answers_400(app):
    body = json.dumps({"feed_url": [PING_FEED], "at": int(time.time() * 1000)}).encode()
    headers = {websub.PING_PUBLISHER_HEADER: "agencia-sur", websub.PING_SIGNATURE_HEADER: websub.sign("k", body)}
    assert app.test_client().post("/v1/ping", data=body, headers=headers).status_code == 400


def test_the_document_says_what_the_origin_does(app):
    doc = openapi.document()
    client = app.test_client()
    # Future events: accepted up to 5 minutes ahead (clock skew), refused beyond; the document says so.
    now = int(time.time() * 1000)
    ev = lambda i, at: {"event_id": f"f{i}", "kind": "READ", "edition": EDITION, "at": at}  # noqa: E731
    r = client.post("/v1/events", json={"events": [ev(1, now + 60_000), ev(2, now + 3_600_000)]}, headers=AUTH)
    assert r.status_code == 202 and r.get_json()["accepted"] == 1 and r.get_json()["rejected"][0]["index"] == 1
    desc = doc["components"]["schemas"]["ReadEventIn"]["description"]
    assert "more than 5 minutes in the future" in desc
    # Every operation with a body documents 413; every private write documents 429; every path parameter's
    # operation documents the 404 that routing answers for a value the route does not match.
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in ("post", "put", "patch") and (op.get("requestBody") or op.get("security")):
                assert "413" in op["responses"], (method, path)
            if op.get("security") and method != "get":
                assert "429" in op["responses"], (method, path)
            if "{" in path:
                assert "404" in op["responses"], (method, path)
    assert client.post("/v1/me/follows", data=b"x" * 70_000, headers=AUTH).status_code == 413
    # A path value the route cannot take is a 404 (routing), which the document lists.
    assert client.get("/v1/editions/us-en/sections/a/b").status_code == 404
