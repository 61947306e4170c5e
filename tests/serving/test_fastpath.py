"""The WSGI fast path answers exactly what the Flask blueprints answer (bytes and headers), and defers the rest."""

from __future__ import annotations

import pytest

from tests.serving.helpers import EDITION, make_app

CASES = [
    ("/v1/editions/us-en/sections/top", {}),
    ("/v1/editions/us-en/sections/top?limit=1", {}),
    ("/v1/editions/us-en/sections/top?limit=7", {}),
    ("/v1/editions/us-en/sections/top?limit=100", {}),
    ("/v1/editions/us-en/sections/top?limit=0", {}),
    ("/v1/editions/us-en/sections/top?limit=101", {}),
    ("/v1/editions/us-en/sections/top?limit=%C2%B2", {}),
    ("/v1/editions/us-en/sections/top?limit=5&x=1", {}),
    ("/v1/editions/us-en/sections/top?x=1", {}),
    ("/v1/editions/us-en/sections/nope", {}),
    ("/v1/editions/US-en/sections/top", {}),
    ("/v1/editions/us-en/sections/tech", {"If-None-Match": 'W/"x", *'}),
    ("/v1/editions/us-en/version", {}),
    ("/v1/editions/us-en/version?x=1", {}),
    ("/v1/editions/zz-zz/version", {}),
    ("/v1/editions", {}),
    ("/v1/editions?x=1", {}),
    ("/v1/editions/", {}),
    ("/v1/editions/us-en", {}),
    ("/v1/editions/gb-en", {"If-None-Match": "*"}),
    ("/v1/editions/zz-zz", {}),
    ("/v1/editions/us-en?x=1", {}),
    ("/v1/editions/us-en/sections/top", {"Cookie": "a=b"}),
    ("/v1/editions/us-en/sections/top", {"Authorization": "Bearer x"}),
]


@pytest.fixture
def pair(world, profiles):
    fast = make_app(world, profiles)
    slow = make_app(world, profiles, NEWSROOM_FAST_PATH=False)
    return fast.test_client(use_cookies=False), slow.test_client(use_cookies=False)


@pytest.mark.parametrize("url,headers", CASES)
def test_fast_path_answers_like_flask(pair, url, headers):
    fast, slow = pair
    a, b = fast.get(url, headers=headers), slow.get(url, headers=headers)
    assert a.status_code == b.status_code
    assert a.data == b.data
    assert dict(a.headers) == dict(b.headers)


def test_fast_path_304_matches_flask(pair):
    fast, slow = pair
    etag = fast.get(f"/v1/editions/{EDITION}/sections/top?limit=5").headers["ETag"]
    a = fast.get(f"/v1/editions/{EDITION}/sections/top?limit=5", headers={"If-None-Match": etag})
    b = slow.get(f"/v1/editions/{EDITION}/sections/top?limit=5", headers={"If-None-Match": etag})
    assert a.status_code == b.status_code == 304
    assert a.data == b.data == b""
    assert a.headers["ETag"] == b.headers["ETag"] and a.headers["Cache-Control"] == b.headers["Cache-Control"]


def test_fast_path_is_taken(world, profiles, monkeypatch):
    app = make_app(world, profiles)
    calls = []
    inner = app.wsgi_app.wsgi_app
    app.wsgi_app.wsgi_app = lambda env, sr: calls.append(env["PATH_INFO"]) or inner(env, sr)
    client = app.test_client()
    client.get(f"/v1/editions/{EDITION}/sections/top?limit=3")
    client.get(f"/v1/editions/{EDITION}/version")
    client.get(f"/v1/editions/{EDITION}")
    client.get("/v1/editions")
    assert calls == []
    client.get(f"/v1/editions/{EDITION}/sections/top?limit=0")
    assert calls == [f"/v1/editions/{EDITION}/sections/top"]
