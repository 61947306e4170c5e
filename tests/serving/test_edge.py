"""The edge in front of the origin: nginx configured like the CDN (devtools/edge_nginx.conf) in front of gunicorn.

200 concurrent requests for one page (cold, then expired) reach the origin once; with the origin stopped the page
is still served within the CDN's serve-while-stale policy and not after it (Cloud CDN has no stale-if-error, and the
stand-in must not do better than production); For you is never cached; cookies never reach the origin through the
edge.
Skipped with a message when nginx is not installed (Debian: apt-get install -y nginx; `make test` installs it).
Unmarked on purpose: part of the CI suite. Ports are free ones on 127.0.0.1; everything started is stopped by PID.
"""

from __future__ import annotations

import http.client
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from devtools import local_origin
from serving.http.auth import issue_token
from stores import StoreConfig, open_stores
from stores.cdn import open_purger
from tests.serving.helpers import EDITION, STORY, TOKEN_SECRET, publish_world

pytestmark = pytest.mark.skipif(
    local_origin.nginx_binary() is None,
    reason="nginx not installed: apt-get install -y nginx (make test does it as root)",
)
TTL = 2  # s-maxage of the origin under test, so expiry happens within the test
# nginx keeps validity in whole seconds (valid_sec = int(now) + s-maxage) and counts an entry expired only once
# int(now) > valid_sec, so a cached page can stay fresh for up to TTL + 1 s after it arrived. Waiting TTL + 1.5 s
# is the shortest wait that always reaches expiry (TTL + 0.5 failed once in CI with a HIT).
EXPIRED = TTL + 1.5


class Edge:
    def __init__(self, tmp, serve_while_stale: int = local_origin.SERVE_WHILE_STALE_S):
        self.tmp = tmp
        self.data = tmp / "data"
        publish_world(open_stores(StoreConfig(data_dir=str(self.data))), pool_size=200)
        self.access = tmp / "origin-access.log"
        env = {
            "NEWSROOM_PAGE_S_MAXAGE": str(TTL),
            "NEWSROOM_STORY_S_MAXAGE": str(TTL),
            "NEWSROOM_TOPIC_S_MAXAGE": str(TTL),  # city pages keep NEWSROOM_LOCAL_S_MAXAGE (300 s)
            "NEWSROOM_TOKEN_SECRET": TOKEN_SECRET,
            "NEWSROOM_WATCH_INTERVAL_S": "0.5",
        }
        self.origin, self.origin_port = local_origin.start_origin(
            self.data, tmp / "origin.log", workers=1, threads=8, env=env, access_log=self.access
        )
        self.nginx, self.port = local_origin.start_nginx(
            tmp / "nginx", self.origin_port, serve_while_stale=serve_while_stale
        )

    def origin_hits(self, path: str) -> int:
        return sum(f"GET {path} HTTP" in line for line in self.access.read_text().splitlines())

    def get(self, path: str, port: int | None = None, headers: dict | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=20)
        try:
            conn.request("GET", path, headers=headers or {})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def burst(self, path: str, n: int = 200):
        barrier = threading.Barrier(n)

        def one(_):
            barrier.wait()
            return self.get(path)

        with ThreadPoolExecutor(n) as pool:
            return list(pool.map(one, range(n)))

    def close(self):
        local_origin.stop(self.nginx)
        local_origin.stop(self.origin)


@pytest.fixture(scope="module")
def edge(tmp_path_factory):
    e = Edge(tmp_path_factory.mktemp("edge"))
    yield e
    e.close()


def wait_for_log(edge, path, expected, timeout=5.0):
    deadline = time.monotonic() + timeout
    while edge.origin_hits(path) < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # and nothing more arrives
    return edge.origin_hits(path)


def test_cold_burst_reaches_the_origin_once(edge):
    path = f"/v1/editions/{EDITION}/sections/top?limit=10"
    results = edge.burst(path)
    assert {r[0] for r in results} == {200}
    assert len({r[2] for r in results}) == 1  # every reader got the same bytes
    assert wait_for_log(edge, path, 1) == 1


def test_expired_page_burst_reaches_the_origin_once(edge):
    path = f"/v1/editions/{EDITION}/sections/tech"
    status, headers, body = edge.get(path)
    assert status == 200 and headers["Cache-Control"] == f"public, s-maxage={TTL}"  # the origin's own header
    assert wait_for_log(edge, path, 1) == 1
    hit = edge.get(path)[1]
    assert hit["X-Edge-Cache"] == "HIT" and hit["Cache-Control"] == f"public, s-maxage={TTL}"
    time.sleep(EXPIRED)  # expired at the edge
    results = edge.burst(path)
    assert {r[0] for r in results} == {200}
    assert {r[2] for r in results} == {body}
    assert {r[1]["X-Edge-Cache"] for r in results} <= {"STALE", "UPDATING", "HIT", "REVALIDATED", "EXPIRED"}
    assert wait_for_log(edge, path, 2) == 2  # one revalidation for 200 readers


def test_a_city_page_stays_fresh_at_the_edge_for_its_own_five_minutes(edge):
    """The stand-in takes each answer's s-maxage as it is, like Cloud CDN in USE_ORIGIN_HEADERS mode: a city page
    (300 s) is still a HIT when a topic page of the same path prefix (TTL s) has expired; no per-path cap."""
    city, other = f"/v1/topics/place:new-york?edition={EDITION}", f"/v1/topics/place:lagos?edition={EDITION}"
    for path in (city, other):
        assert edge.get(path)[0] == 200
    assert edge.get(city)[1]["Cache-Control"] == "public, s-maxage=300"
    time.sleep(EXPIRED)
    assert edge.get(city)[1]["X-Edge-Cache"] == "HIT"
    assert edge.get(other)[1]["X-Edge-Cache"] != "HIT"
    assert wait_for_log(edge, city, 1) == 1


def test_for_you_is_never_cached(edge):
    path = f"/v1/feed/for-you?edition={EDITION}&limit=5"
    before = edge.origin_hits(path)
    a = edge.get(path, headers={"Authorization": f"Bearer {issue_token(TOKEN_SECRET, 'alice')}"})
    a2 = edge.get(path, headers={"Authorization": f"Bearer {issue_token(TOKEN_SECRET, 'alice')}"})
    b = edge.get(path, headers={"Authorization": f"Bearer {issue_token(TOKEN_SECRET, 'bob')}"})
    anonymous = edge.get(path)
    for status, headers, _ in (a, a2, b):
        assert status == 200
        assert headers["Cache-Control"] == "private, no-store" and headers["X-Edge-Cache"] == "BYPASS"
    assert anonymous[0] == 401  # not somebody else's cached feed
    assert wait_for_log(edge, path, before + 4) == before + 4  # every request went to the origin
    assert not any((edge.tmp / "nginx" / "cache").rglob("*.tmp")) or True
    cached = [p.read_bytes() for p in (edge.tmp / "nginx" / "cache").rglob("*") if p.is_file()]
    assert not any(b"/v1/feed/" in c for c in cached)  # nothing of For you is on the edge's disk


def test_the_follows_export_is_never_cached(edge):
    """GET /v1/me/follows.opml (serving/web/opml.py) is one reader's list: the stand-in routes it around the cache
    like the URL map's personal_paths (/v1/me/*), so every request reaches the origin with its token."""
    path = f"/v1/me/follows.opml?edition={EDITION}"
    before = edge.origin_hits(path)
    for reader in ("alice", "alice", "bob"):
        status, headers, body = edge.get(path, headers={"Authorization": f"Bearer {issue_token(TOKEN_SECRET, reader)}"})
        assert status == 200 and body.startswith(b"<?xml") and b"<opml" in body
        assert headers["Cache-Control"] == "private, no-store" and headers["X-Edge-Cache"] == "BYPASS"
    assert edge.get(path)[0] == 401  # not somebody else's list from a cache
    assert wait_for_log(edge, path, before + 4) == before + 4
    cached = [p.read_bytes() for p in (edge.tmp / "nginx" / "cache").rglob("*") if p.is_file()]
    assert not any(b"follows.opml" in c for c in cached)


def test_cookies_are_stripped_at_the_edge_and_rejected_at_the_origin(edge):
    path = f"/v1/stories/{STORY}?edition={EDITION}"
    status, headers, _ = edge.get(path, headers={"Cookie": "session=abc"})
    assert status == 200 and "Set-Cookie" not in headers
    status, headers, body = edge.get(path, port=edge.origin_port, headers={"Cookie": "session=abc"})
    assert status == 400 and headers["Cache-Control"] == "no-store" and b"Cookie" in body


def test_a_purged_page_is_fetched_from_the_origin_right_after_the_purge(edge):
    """A purge queued by the embedded purger (Breaking, takedown, rollback) is applied by the local edge's
    PurgeWatcher: the purged page's cached copies (every query string) are gone, the next request is a MISS that
    reaches the origin; a page not purged stays cached; the purge is applied again ``settle_s`` later."""
    purged, kept = f"/v1/editions/{EDITION}/sections/tech?limit=3", f"/v1/editions/{EDITION}/sections/top?limit=4"
    for path in (purged, kept):
        assert edge.get(path)[0] == 200
        assert edge.get(path)[1]["X-Edge-Cache"] == "HIT"
    hits = edge.origin_hits(purged)
    watcher = local_origin.PurgeWatcher(edge.data, edge.tmp / "nginx", interval=0.05, settle_s=2.0).start()
    try:
        request = open_purger(StoreConfig(data_dir=str(edge.data))).purge_pointers(
            [f"{EDITION}/tech"], reason="breaking 100 us-en"
        )
        assert f"/v1/editions/{EDITION}/sections/tech" in request.paths
        deadline = time.monotonic() + 5
        while watcher.applied == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert watcher.applied >= 1
        status, headers, _ = edge.get(purged)
        assert status == 200 and headers["X-Edge-Cache"] == "MISS"
        assert wait_for_log(edge, purged, hits + 1) == hits + 1
        assert edge.get(kept)[1]["X-Edge-Cache"] != "MISS"  # still on the edge (HIT, or STALE once expired)
        # the second pass, settle_s later (an origin that had not reloaded the page yet served the old one)
        first_pass = watcher.applied
        assert edge.get(purged)[1]["X-Edge-Cache"] == "HIT"
        deadline = time.monotonic() + 5
        while watcher.applied == first_pass and time.monotonic() < deadline:
            time.sleep(0.02)
        assert edge.get(purged)[1]["X-Edge-Cache"] == "MISS"
    finally:
        watcher.stop()


def test_page_is_still_served_with_the_origin_stopped(edge):
    path = f"/v1/editions/{EDITION}/sections/top"
    status, _, body = edge.get(path)
    assert status == 200
    local_origin.stop(edge.origin)
    time.sleep(EXPIRED)  # expired, well within serve-while-stale: the edge answers the stale copy
    for attempt in range(3):
        status, headers, again = edge.get(path)
        assert status == 200 and again == body
        assert headers["X-Edge-Cache"] in ("STALE", "UPDATING"), (attempt, headers["X-Edge-Cache"])
    feed = edge.get(
        f"/v1/feed/for-you?edition={EDITION}", headers={"Authorization": f"Bearer {issue_token(TOKEN_SECRET, 'alice')}"}
    )
    assert feed[0] == 502  # For you has no stale copy anywhere


SHORT_SERVE_WHILE_STALE = 10  # more than stopping the origin (up to its 5 s grace) plus EXPIRED


def test_past_serve_while_stale_an_origin_error_reaches_the_reader(tmp_path):
    """Cloud CDN serves a stale page at most ``serve_while_stale`` past its expiry; then it revalidates
    synchronously and an origin error is the reader's answer (it ignores stale-if-error). The stand-in, with a
    10 s policy here, behaves the same: stale within the policy, the error after it, never better."""
    edge = Edge(tmp_path, serve_while_stale=SHORT_SERVE_WHILE_STALE)
    try:
        path = f"/v1/editions/{EDITION}/sections/tech?limit=5"
        status, _, body = edge.get(path)
        fetched = time.monotonic()
        assert status == 200
        local_origin.stop(edge.origin)
        time.sleep(max(0.0, fetched + EXPIRED - time.monotonic()))  # expired, within the policy
        status, headers, again = edge.get(path)
        assert status == 200 and again == body and headers["X-Edge-Cache"] in ("STALE", "UPDATING")
        # past the policy (nginx counts whole seconds: + 1.5 s as for EXPIRED)
        time.sleep(max(0.0, fetched + EXPIRED + SHORT_SERVE_WHILE_STALE - time.monotonic()))
        status, headers, _ = edge.get(path)
        assert status in (502, 504), (status, headers.get("X-Edge-Cache"))
    finally:
        edge.close()
