"""Deletes and pauses are versions end to end: a read POSTed just before DELETE /v1/me/profile, folded
after it, does not bring the profile back; a read POSTed while paused is not kept after a quick resume; a control
accepted before the delete and applied after it is refused (409 profile_deleted). The store-level races on both
backends are in tests/stores/test_profiles.py."""

from __future__ import annotations

import time

from tests.serving.test_foryou import pool, post_reads


def test_a_read_sent_before_a_profile_delete_is_not_folded_after_it(app, client, auth):
    ext = app.extensions["newsroom"]
    stories = list(pool(app).story_ids[40:43])
    assert post_reads(client, auth("ora"), stories).status_code == 202
    assert client.delete("/v1/me/profile", headers=auth("ora")).status_code == 204
    ext.folder.drain()  # the fold runs after the delete (the probe: wait, then GET showed "reads": 1)
    me = client.get("/v1/me/profile", headers=auth("ora")).json
    assert me["reads"] == 0 and me["revision"] == 0
    assert ext.profiles.get("ora") is None and ext.folder.dropped == 3
    time.sleep(0.002)
    post_reads(client, auth("ora"), stories[:1], kind="CLICK")  # accepted after the delete: a new history
    ext.folder.drain()
    assert client.get("/v1/me/profile", headers=auth("ora")).json["reads"] == 1


def test_a_read_sent_while_paused_is_dropped_after_a_quick_resume(app, client, auth):
    ext = app.extensions["newsroom"]
    stories = list(pool(app).story_ids[44:47])
    assert client.post("/v1/me/history/pause", headers=auth("pia")).json["paused"] is True
    post_reads(client, auth("pia"), stories)
    assert client.post("/v1/me/history/resume", headers=auth("pia")).json["paused"] is False
    ext.folder.drain()
    doc = ext.profiles.get("pia")
    assert doc["reads"] == [] and doc["interest"]["vector"] is None
    time.sleep(0.002)
    post_reads(client, auth("pia"), stories[:1], kind="CLICK")
    ext.folder.drain()
    assert len(ext.profiles.get("pia")["reads"]) == 1


def test_a_control_accepted_before_the_delete_is_refused_after_it(app, client, auth, monkeypatch):
    from stores import profile_versions

    assert (
        client.post("/v1/me/follows", json={"kind": "topic", "value": "science"}, headers=auth("quy")).status_code
        == 200
    )
    assert client.delete("/v1/me/profile", headers=auth("quy")).status_code == 204
    real = profile_versions.now_ms
    monkeypatch.setattr(profile_versions, "now_ms", lambda: real() - 5_000)  # accepted 5 s ago, applied now
    for method, path, body in [
        ("post", "/v1/me/follows", {"kind": "topic", "value": "sport"}),
        ("post", "/v1/me/hidden-sources", {"source": "wire"}),
        ("post", "/v1/me/history/pause", None),
    ]:
        r = getattr(client, method)(path, json=body, headers=auth("quy"))
        assert r.status_code == 409 and r.json["code"] == "profile_deleted", r.json
        assert r.headers["Cache-Control"] == "private, no-store"
    monkeypatch.setattr(profile_versions, "now_ms", real)
    assert client.get("/v1/me/profile", headers=auth("quy")).json["revision"] == 0
    assert app.extensions["newsroom"].profiles.followed_topics() == {}


def test_a_batch_retried_after_the_delete_brings_nothing_back(app, client, auth, monkeypatch):
    """The fold failed on the store, the reader deleted the profile, then the folder retried the batch."""
    from stores.base import StoreError

    ext = app.extensions["newsroom"]
    post_reads(client, auth("rui"), list(pool(app).story_ids[48:50]))
    real = ext.profiles.append_reads

    def down(*a, **kw):
        raise StoreError("store unavailable")

    monkeypatch.setattr(ext.profiles, "append_reads", down)
    assert ext.folder.drain() == 0 and ext.folder.dropped == 0  # kept for a retry
    retried = []

    def spy(reader, reads, **kw):
        retried.append(len(reads))
        return real(reader, reads, **kw)

    monkeypatch.setattr(ext.profiles, "append_reads", spy)
    assert client.delete("/v1/me/profile", headers=auth("rui")).status_code == 204
    assert ext.folder.drain() == 0
    assert retried == [2] and ext.profiles.get("rui") is None and ext.folder.dropped == 2
