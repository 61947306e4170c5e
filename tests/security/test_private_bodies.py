"""Private POST bodies: size limits answered 413 before parsing, a per-reader write budget held
in the store (every worker sees it), bounded ids, and reads with one timestamp all kept."""

from __future__ import annotations

import time

import orjson
import pytest

from serving.http.auth import issue_token
from stores import StoreConfig, open_stores
from stores.profiles import open_profile_store
from tests.serving.helpers import EDITION, TOKEN_SECRET, make_app, publish_world


@pytest.fixture
def world(tmp_path):
    config = StoreConfig(data_dir=str(tmp_path / "data"))
    stores = open_stores(config)
    publish_world(stores, pool_size=30)
    return stores, config


@pytest.fixture
def app(world):
    stores, config = world
    app = make_app(stores, open_profile_store(config))
    yield app
    app.extensions["newsroom"].close()


def auth(reader: str) -> dict:
    return {"Authorization": f"Bearer {issue_token(TOKEN_SECRET, reader)}", "Content-Type": "application/json"}


def event(i: int, at: int, **kw) -> dict:
    return {"event_id": f"e-{i}", "kind": "READ", "edition": EDITION, "story_id": "7300000000000000001", "at": at, **kw}


def test_oversized_bodies_are_refused_before_parsing(app):
    client = app.test_client()
    big = orjson.dumps({"events": [event(0, int(time.time() * 1000), article_id="a" * (2 * 1024 * 1024))]})
    r = client.post("/v1/events", data=big, headers=auth("alice"))
    assert r.status_code == 413 and r.headers["Cache-Control"] == "private, no-store"
    r = client.post("/v1/me/follows", data=b'{"kind":"topic","value":"' + b"x" * 100_000 + b'"}', headers=auth("alice"))
    assert r.status_code == 413
    # Werkzeug's own guard for a body without the endpoint's check (MAX_CONTENT_LENGTH set by create_app).
    assert app.config["MAX_CONTENT_LENGTH"] <= 2 * 1024 * 1024
    app.extensions["newsroom"].folder.drain()
    assert (app.extensions["newsroom"].profiles.get("alice") or {}).get("reads", []) == []


def test_ids_are_bounded(app):
    client = app.test_client()
    now = int(time.time() * 1000)
    long_id = "e" * 129
    batch = {"events": [event(0, now, event_id=long_id), event(1, now, article_id="a" * 5000), event(2, now)]}
    r = client.post("/v1/events", data=orjson.dumps(batch), headers=auth("bob"))
    assert r.status_code == 202
    doc = r.get_json()
    assert doc["accepted"] == 1 and [x["index"] for x in doc["rejected"]] == [0, 1]
    app.extensions["newsroom"].folder.drain()
    reads = app.extensions["newsroom"].profiles.get("bob")["reads"]
    assert [x["event_id"] for x in reads] == ["e-2"]


def test_reads_with_the_same_timestamp_are_all_kept(app):
    client = app.test_client()
    now = int(time.time() * 1000)
    batch = {"events": [event(i, now, story_id=str(7300000000000000001 + (i % 3))) for i in range(10)]}
    r = client.post("/v1/events", data=orjson.dumps(batch), headers=auth("carol"))
    assert r.status_code == 202 and r.get_json()["accepted"] == 10
    app.extensions["newsroom"].folder.drain()
    reads = app.extensions["newsroom"].profiles.get("carol")["reads"]
    assert sorted(x["event_id"] for x in reads) == sorted(f"e-{i}" for i in range(10))
    # Replaying the same batch stores nothing new (idempotent by event id).
    client.post("/v1/events", data=orjson.dumps(batch), headers=auth("carol"))
    app.extensions["newsroom"].folder.drain()
    assert len(app.extensions["newsroom"].profiles.get("carol")["reads"]) == 10


def test_one_readers_flood_is_limited_by_a_budget_every_worker_shares(world):
    """Two apps on one store stand for two gunicorn workers (or two instances): the budget is the store's."""
    stores, config = world
    workers = [
        make_app(stores, open_profile_store(config), NEWSROOM_READER_RATE=0.5, NEWSROOM_READER_BURST=10)
        for _ in range(2)
    ]
    try:
        now = int(time.time() * 1000)
        statuses = []
        for i in range(40):
            c = workers[i % 2].test_client()
            body = orjson.dumps({"events": [event(i, now - i)]})
            statuses.append(c.post("/v1/events", data=body, headers=auth("mallory")).status_code)
        assert statuses.count(202) <= 11 and statuses.count(429) >= 29  # burst 10 (+1 refilled at most)
        r429 = (
            workers[0]
            .test_client()
            .post("/v1/events", data=orjson.dumps({"events": [event(99, now)]}), headers=auth("mallory"))
        )
        assert r429.status_code == 429 and int(r429.headers["Retry-After"]) >= 1
        assert r429.headers["Cache-Control"] == "private, no-store"
        # Another reader is unaffected, on either worker.
        for w in workers:
            ok = w.test_client().post(
                "/v1/events", data=orjson.dumps({"events": [event(1, now)]}), headers=auth("dave")
            )
            assert ok.status_code == 202
        # Reads (GET) are not charged: For you still answers the flooding reader.
        assert (
            workers[1].test_client().get(f"/v1/feed/for-you?edition={EDITION}", headers=auth("mallory")).status_code
            == 200
        )
    finally:
        for w in workers:
            w.extensions["newsroom"].close()


def test_the_budget_refills(world):
    stores, config = world
    profiles = open_profile_store(config)
    t = 1_780_000_000_000
    granted = [profiles.take_token("r", 1.0, 3, t)[0] for _ in range(5)]
    assert granted == [True, True, True, False, False]
    assert profiles.take_token("r", 1.0, 3, t + 1000)[0] is True
    assert profiles.take_token("r", 1.0, 3, t + 1000)[0] is False
    ok, wait = profiles.take_token("r", 1.0, 3, t + 1500)
    assert not ok and 0 < wait <= 1.0
