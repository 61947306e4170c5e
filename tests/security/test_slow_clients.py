"""Slow clients: connections that trickle their request must not stop the origin answering
shared pages. A real ``newsroom serve`` (gunicorn, serving/worker/gunicorn.conf.py) on 127.0.0.1 with one worker of two
threads, 24 sockets each sending a request head one byte at a time, and a normal reader asking for a page
meanwhile. On plain gthread (main before the fix) the two threads sit in the trickling clients' header reads and the
reader's request times out. Every loop here is bounded (deadlines), every process is stopped by its pid."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from stores import StoreConfig, open_stores
from tests.serving.helpers import EDITION, STORY, http_get, publish_world, running_origin

ROOT = Path(__file__).resolve().parents[2]
SLOW = 24
PAGE = f"/v1/editions/{EDITION}/sections/top"


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    """One origin for the module (as tests/security/test_http_limits.py has): the tests only read, and each closes
    every connection it opened, so a later test meets the origin as a fresh one would (~3 s of start each saved)."""
    data = tmp_path_factory.mktemp("slow") / "data"
    publish_world(open_stores(StoreConfig(data_dir=str(data))), pool_size=20)
    with running_origin(data, env={"NEWSROOM_HEADER_TIMEOUT_S": "20"}) as port:
        yield port


def test_trickling_clients_do_not_stop_shared_pages(origin):
    head = f"GET {PAGE} HTTP/1.1\r\nHost: origin.test\r\nUser-Agent: slow\r\nAccept: */*\r\n\r\n".encode()
    stop = threading.Event()
    socks = []
    for _ in range(SLOW):
        s = socket.create_connection(("127.0.0.1", origin), timeout=5)
        socks.append(s)

    def trickle():
        i = 0
        # bounded: at most len(head) - 4 bytes each (never completes the head), or until the test is done
        while not stop.is_set() and i < len(head) - 4:
            for s in socks:
                try:
                    s.send(head[i : i + 1])
                except OSError:
                    pass
            i += 1
            stop.wait(0.25)

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        time.sleep(1.5)  # every slow client has sent its first bytes: plain gthread has given them its threads
        answers = []
        for _ in range(3):
            try:
                answers.append(http_get(origin, PAGE, timeout=4)[0])
            except OSError as exc:
                answers.append(repr(exc))
        assert answers == [200, 200, 200]
    finally:
        stop.set()
        t.join(timeout=5)
        for s in socks:
            s.close()


def test_every_response_of_a_real_origin_says_nosniff(origin):
    for path in (PAGE, f"/v1/editions/{EDITION}/version", "/readyz", "/openapi.json"):
        status, headers, _ = http_get(origin, path, timeout=5)
        assert headers.get("X-Content-Type-Options") == "nosniff", (path, status)
    try:
        http_get(origin, "/no/such/path", timeout=5)
    except urllib.error.HTTPError as exc:
        assert exc.code == 404 and exc.headers.get("X-Content-Type-Options") == "nosniff"


def test_bodies_and_keep_alive_pass_through_the_buffering_worker(origin):
    """The worker pre-reads bodies too: a POST body reaches the app whole, and a kept-alive connection serves a
    second request (read by the poller again)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", origin, timeout=5)
    body = b'{"feed_url": "http://x.test/f.xml", "at": 1}'
    conn.request("POST", "/v1/ping", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    assert r.status == 401  # unsigned: the body was read and judged, not lost
    conn.request("GET", PAGE)
    r = conn.getresponse()
    assert r.status == 200 and r.read()
    conn.request("POST", "/v1/events", body=b"x" * (2 * 1024 * 1024), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status in (401, 413)  # no token: refused before any parsing; never a hang or a 500
    conn.close()


def _hostile(port: int, kind: int) -> socket.socket:
    """One hostile connection of five kinds: idle, a trickled head, a request then half of one (pipelined), a
    chunked body that never ends, and pipelined requests whose responses are never read."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    story = f"GET /v1/stories/{STORY} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    if kind == 1:
        s.send(b"GET /healthz HTTP/1.1\r\nHo")
    elif kind == 2:
        s.send(story + b"GET /healthz HTTP/1.1\r\nHost: x")
    elif kind == 3:
        s.send(b"POST /v1/ping HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n0\r\n\r\n")
    elif kind == 4:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setblocking(False)
        try:
            s.send(story * 2000)
        except BlockingIOError:
            pass
    return s


def test_healthz_and_story_pages_stay_answered_under_100_hostile_connections(origin):
    hostile = [_hostile(origin, i % 5) for i in range(100)]
    try:
        time.sleep(1.0)  # every hostile connection has sent what it will: plain gthread has given them its threads
        paths = ["/healthz", f"/v1/stories/{STORY}", PAGE] * 3
        answers = []
        for path in paths:
            try:
                answers.append(http_get(origin, path, timeout=4)[0])
            except OSError as exc:
                answers.append(repr(exc))
        assert answers == [200] * len(paths)
    finally:
        for s in hostile:
            s.close()
