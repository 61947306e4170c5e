"""The purge interface (stores/cdn.py): which public paths a pointer's page is served at, and the embedded queue."""

import http.server
import json
import threading

import pytest

from stores import StoreConfig
from stores.cdn import (
    CloudCdnPurger,
    NullPurger,
    QueuedPurger,
    TokenBucket,
    cache_tag,
    open_purger,
    public_paths,
    widen,
)


def test_a_section_pointer_maps_to_its_api_and_web_paths():
    assert public_paths("us-en/world") == ["/v1/editions/us-en/sections/world", "/e/us-en/world"]
    assert "/e/us-en/" in public_paths("us-en/top")


def test_story_and_topic_pointers_map_to_their_pages_and_personal_pointers_to_nothing():
    assert public_paths("story/42") == ["/v1/stories/42", "/stories/42"]
    assert public_paths("topic/us-en/entity:org:isro") == [
        "/v1/topics/entity:org:isro",
        "/e/us-en/topics/entity:org:isro",
    ]
    assert public_paths("pool/us-en") == []
    assert public_paths("aliases") == []
    with pytest.raises(ValueError):
        public_paths("nonsense")


def test_the_embedded_purger_queues_deduplicated_requests_in_order(tmp_path):
    purger = open_purger(StoreConfig(data_dir=str(tmp_path)))
    assert isinstance(purger, QueuedPurger)
    first = purger.purge_pointers(["us-en/top", "us-en/top", "pool/us-en"], reason="takedown a1")
    assert first.paths == ("/v1/editions/us-en/sections/top", "/e/us-en/top", "/e/us-en/")
    purger.purge(["/v1/stories/7"], reason="rollback")
    queued = purger.pending()
    assert [r.reason for _, r in queued] == ["takedown a1", "rollback"]
    assert purger.pending(after_id=queued[0][0])[0][1].paths == ("/v1/stories/7",)
    assert purger.purge_pointers(["pool/us-en"], reason="x") is None


def test_a_purge_needs_a_reason_and_query_less_absolute_paths(tmp_path):
    purger = NullPurger()
    with pytest.raises(ValueError):
        purger.purge(["/v1/x"], reason="")
    with pytest.raises(ValueError):
        purger.purge(["/v1/x?limit=3"], reason="r")
    with pytest.raises(ValueError):
        purger.purge(["v1/x"], reason="r")


# ------------------------------------------------------------------------------------------------ rate limit
def test_widen_maps_paths_to_their_edition_or_family_prefix():
    paths = ["/v1/editions/us-en/sections/top", "/e/us-en/top", "/e/us-en/", "/v1/editions/gb-en/sections/x"]
    assert widen(paths) == ["/v1/editions/us-en/*", "/e/us-en/*", "/v1/editions/gb-en/*"]
    assert widen(["/v1/stories/7", "/stories/7", "/v1/topics/Q1"]) == ["/v1/stories/*", "/stories/*", "/v1/topics/*"]


def test_the_bucket_refills_at_its_rate_and_force_takes_what_is_left():
    now = [1000.0]
    bucket = TokenBucket(rate=2.0, burst=4.0, clock=lambda: now[0])
    assert bucket.take(3) and not bucket.take(2)  # 1 left
    assert bucket.take(2, force=True) is False  # taken anyway, down to 0
    now[0] += 1.0  # +2 tokens
    assert bucket.take(2) and not bucket.take(1)
    now[0] += 100.0
    assert bucket.take(4) and not bucket.take(1)  # capped at burst


def test_over_the_rate_a_purge_widens_to_the_edition_prefix_and_is_never_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("NEWSROOM_CDN_PURGE_RATE", "0.001")
    monkeypatch.setenv("NEWSROOM_CDN_PURGE_BURST", "5")
    config = StoreConfig(data_dir=str(tmp_path))
    a, b = open_purger(config), open_purger(config)  # two producers, one bucket (the SQLite file)
    first = a.purge_pointers(["us-en/top"], reason="breaking 1")  # 3 paths of 5 tokens
    assert not first.widened and len(first.paths) == 3
    second = b.purge_pointers(["us-en/world"], reason="breaking 2")  # 2 left: exactly enough
    assert not second.widened
    third = a.purge_pointers(["us-en/tech", "gb-en/top"], reason="takedown")  # empty bucket: widened, still sent
    assert third.widened and third.paths == ("/v1/editions/us-en/*", "/e/us-en/*", "/v1/editions/gb-en/*", "/e/gb-en/*")
    assert [r.paths for _, r in a.pending()] == [first.paths, second.paths, third.paths]


def test_open_purger_chooses_the_backend_and_names_missing_options(tmp_path, monkeypatch):
    monkeypatch.delenv("NEWSROOM_CDN_URL_MAP", raising=False)
    assert isinstance(open_purger(StoreConfig(data_dir=str(tmp_path)), cdn="none"), NullPurger)
    gcp = StoreConfig(backend="gcp", project="p1", bucket="b")
    with pytest.raises(ValueError, match="URL map"):
        open_purger(gcp)
    purger = open_purger(gcp, url_map="newsroom-api")
    assert isinstance(purger, CloudCdnPurger) and purger.url_map == "newsroom-api" and purger.project == "p1"
    with pytest.raises(ValueError, match="embedded"):
        open_purger(gcp, cdn="queue")


# ------------------------------------------------------------------------------------------------ Cloud CDN
class _ComputeStub(http.server.BaseHTTPRequestHandler):
    """A Compute REST endpoint on loopback: records every request (path, JSON body) and answers an operation."""

    calls: list = []
    status = 200
    tag_status = None  # the answer to a cacheTags request, when not ``status`` (400: a project without tags)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append((self.path, body))
        tags = "cacheTags" in body and self.tag_status is not None
        self.send_response(self.tag_status if tags else self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"kind": "compute#operation", "name": "operation-1", "status": "RUNNING"}).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def compute():
    _ComputeStub.calls, _ComputeStub.status, _ComputeStub.tag_status = [], 200, None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ComputeStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _session():
    """The session class the purger uses by default (google-auth's AuthorizedSession), with no credentials."""
    from google.auth.credentials import AnonymousCredentials
    from google.auth.transport.requests import AuthorizedSession

    return AuthorizedSession(AnonymousCredentials())


BASE = "/compute/v1/projects/proj-1/global/urlMaps/newsroom-api/invalidateCache"


def test_cloud_cdn_purger_invalidates_exactly_the_pages_by_cache_tag(compute):
    """Cache tags are Cloud CDN's fastest invalidation (~10 s; by path: minutes, one a minute): one call with the
    tags of the pointer's paths, the tags the origin sends with those pages (tests/serving/test_cache_tags.py)."""
    _, endpoint = compute
    purger = CloudCdnPurger("proj-1", "newsroom-api", TokenBucket(1, 30), _session(), endpoint)
    request = purger.purge_pointers(["us-en/top"], reason="breaking 42")
    assert request.paths == ("/v1/editions/us-en/sections/top", "/e/us-en/top", "/e/us-en/")
    assert request.tags == tuple(cache_tag(p) for p in request.paths) and len(set(request.tags)) == 3
    assert _ComputeStub.calls == [(BASE, {"cacheTags": list(request.tags)})]


def test_cloud_cdn_purger_sends_at_most_ten_tags_a_call(compute):
    _, endpoint = compute
    purger = CloudCdnPurger("proj-1", "newsroom-api", None, _session(), endpoint)
    request = purger.purge_pointers([f"story/{i}" for i in range(8)], reason="hot stories")
    assert [len(body["cacheTags"]) for _, body in _ComputeStub.calls] == [10, 6]
    assert [t for _, body in _ComputeStub.calls for t in body["cacheTags"]] == list(request.tags)


def test_a_widened_purge_goes_by_path_prefix(compute, monkeypatch):
    _, endpoint = compute
    purger = CloudCdnPurger("proj-1", "newsroom-api", TokenBucket(1, 2), _session(), endpoint)
    request = purger.purge_pointers(["us-en/top"], reason="breaking 42")
    assert request.widened and request.tags == ()
    assert _ComputeStub.calls == [(BASE, {"path": "/v1/editions/us-en/*"}), (BASE, {"path": "/e/us-en/*"})]


def test_a_project_without_cache_tags_gets_the_same_purge_by_path(compute):
    _, endpoint = compute
    _ComputeStub.tag_status = 400
    purger = CloudCdnPurger("proj-1", "newsroom-api", TokenBucket(1, 30), _session(), endpoint)
    request = purger.purge_pointers(["us-en/top"], reason="breaking 42")
    assert _ComputeStub.calls == [(BASE, {"cacheTags": list(request.tags)})] + [
        (BASE, {"path": p}) for p in request.paths
    ]


def test_cloud_cdn_purger_sends_the_percent_encoded_path_readers_request(compute):
    """Topic ids may hold spaces and any script: the pointer's paths are percent-encoded (public_paths; the local
    edge decodes them to match nginx's decoded $uri), Cloud CDN gets the request path as a browser sends it."""
    _, endpoint = compute
    _ComputeStub.tag_status = 400  # by path (a project without cache tags)
    purger = CloudCdnPurger("proj-1", "newsroom-api", TokenBucket(1, 30), _session(), endpoint)
    request = purger.purge_pointers(["topic/in-hi/place:मुंबई", "topic/us-en/entity:calder bay"], reason="takedown")
    assert _ComputeStub.calls[0][1] == {"cacheTags": list(request.tags)}
    del _ComputeStub.calls[0]
    assert [c[1]["path"] for c in _ComputeStub.calls] == list(request.paths)
    assert [c[1]["path"] for c in _ComputeStub.calls][::2] == [
        "/v1/topics/place:%E0%A4%AE%E0%A5%81%E0%A4%82%E0%A4%AC%E0%A4%88",
        "/v1/topics/entity:calder%20bay",
    ]


def test_cloud_cdn_purger_raises_a_store_error_when_compute_refuses(compute):
    from stores import StoreError

    _, endpoint = compute
    _ComputeStub.status = 403
    purger = CloudCdnPurger("proj-1", "newsroom-api", None, _session(), endpoint)
    with pytest.raises(StoreError, match="HTTP 403"):
        purger.purge(["/v1/stories/1"], reason="takedown")
