"""The origin's gunicorn poller answers hot shared GETs itself (serving/worker/gworker.py): which requests it takes, that
its answers are the thread path's byte for byte (bar the Date), that it keeps the connection alive or closes it as
asked, and that a response the socket does not take at once is finished later, not lost or truncated."""

from __future__ import annotations

import http.client
import selectors
import socket
from collections import deque

import pytest
from gunicorn.config import Config
from gunicorn.workers.gthread import TConn

from serving.worker.gworker import BufferingThreadWorker, simple_get
from stores import StoreConfig, open_stores
from tests.serving.helpers import EDITION, publish_world, running_origin

PAGE = f"/v1/editions/{EDITION}/sections/top"


def req(target: str = PAGE, *headers: str) -> bytes:
    return ("\r\n".join([f"GET {target} HTTP/1.1", "Host: x", *headers]) + "\r\n\r\n").encode()


@pytest.mark.parametrize(
    "raw, want",
    [
        (req(), (PAGE, "", None, False)),
        (req(PAGE + "?limit=5", 'If-None-Match: "abc"', "Connection: close"), (PAGE, "limit=5", '"abc"', True)),
        (req("/v1/editions"), ("/v1/editions", "", None, False)),
        (req(PAGE, "Cookie: a=b"), None),  # shared GETs with a cookie are refused by Flask (400)
        (req(PAGE, "Authorization: Bearer x"), None),
        (req(PAGE, "Content-Length: 3"), None),
        (req(PAGE, "Transfer-Encoding: chunked"), None),
        (req(PAGE, "Bad Header: x"), None),  # not a token before the colon: gunicorn's parser judges it
        (req(PAGE, "X: a\x01b"), None),
        (req(PAGE, 'If-None-Match: "a"', 'If-None-Match: "b"'), None),
        (req("/v1/me/foryou"), None),
        (req("/v1/stories/1"), None),
        (req(PAGE).replace(b"HTTP/1.1", b"HTTP/1.0"), None),
        (req(PAGE).replace(b"GET", b"HEAD"), None),
        (req() + req(), None),  # two requests: the poller frames them one at a time (serving/worker/framing.py)
        (req()[:-2], None),
    ],
)
def test_which_requests_the_poller_takes(raw, want):
    assert simple_get(raw) == want


class _Log:
    def info(self, *a, **k):
        pass


def _worker(app) -> BufferingThreadWorker:
    """A BufferingThreadWorker's poller state without its process loop (gthread's init_process never returns)."""
    w = BufferingThreadWorker.__new__(BufferingThreadWorker)
    w.cfg = Config()
    w.wsgi, w.log, w.alive, w.nr, w.nr_conns = app, _Log(), True, 0, 1
    w.max_requests, w.max_keepalived = 10**9, 100
    w.poller, w.reading, w.writing, w.keepalived_conns = selectors.DefaultSelector(), {}, {}, deque()
    w.lingering = {}
    w.limits, w.keepalive_on = (4094, 100, 8190), True
    w.worker_connections = 1000
    w.enqueued = []
    w.tpool = _Pool(w.enqueued)
    return w


class _Pool:
    """Records what would go to a thread (the request bytes) instead of running it."""

    def __init__(self, into: list):
        self.into = into

    def submit(self, fn, conn, raw, close):
        self.into.append(raw)
        return _Future()


class _Future:
    def add_done_callback(self, fn):
        pass


def _conn(w, server):
    conn = TConn(w.cfg, server, ("127.0.0.1", 1), ("127.0.0.1", 2))
    conn.inbuf, conn.closed, conn.want, conn.watched = bytearray(), False, 0, False
    return conn


def _pump(w, until, rounds: int = 200) -> None:
    for _ in range(rounds):
        if until():
            return
        for key, _ in w.poller.select(timeout=0.05):
            key.data(key.fileobj)
    assert until()


def _read_response(sock) -> http.client.HTTPResponse:
    resp = http.client.HTTPResponse(sock)
    resp.begin()
    return resp


def test_a_page_is_answered_in_the_poller_and_the_connection_kept_alive(app):
    w = _worker(app)
    server, client = socket.socketpair()
    conn = _conn(w, server)
    client.sendall(req())
    w._read(conn)
    _pump(w, lambda: conn in w.keepalived_conns)
    assert w.enqueued == [] and w.nr == 1
    resp = _read_response(client)
    expected = app.test_client().get(PAGE)
    assert resp.status == 200 and resp.read() == expected.data
    assert resp.getheader("Connection") == "keep-alive" and resp.getheader("ETag") == expected.headers["ETag"]
    # The next request on the connection goes through on_client_socket_readable to the poller again; one with a
    # cookie goes to a thread.
    client.sendall(req(PAGE, "Cookie: a=b"))
    _pump(w, lambda: w.enqueued == [req(PAGE, "Cookie: a=b")])
    server.close(), client.close()


def test_a_response_larger_than_the_socket_takes_is_finished_when_writable(app):
    w = _worker(app)
    server, client = socket.socketpair()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn = _conn(w, server)
    client.sendall(req(PAGE, "Connection: close"))
    w._read(conn)
    _pump(w, lambda: conn in w.writing)
    assert conn not in w.reading, "the rest of the response waits for the socket, under the write deadline"
    body = app.test_client().get(PAGE).data
    assert len(body) > 16384
    got = bytearray()
    client.setblocking(False)

    def drained() -> bool:
        try:
            while chunk := client.recv(65536):
                got.extend(chunk)
        except BlockingIOError:
            return False
        return True  # half-closed by the worker after the last byte

    _pump(w, drained, rounds=2000)
    assert got.endswith(body) and b"Connection: close" in got
    assert conn in w.lingering and conn not in w.writing and w.enqueued == []
    client.close()  # the worker closes its side once the client has
    _pump(w, lambda: w.nr_conns == 0 and not w.lingering)


def test_answers_of_both_paths_are_the_same_on_a_real_gunicorn(tmp_path):
    """One origin answers through the poller; another, with an access log (which turns the poller path off),
    through gthread's threads. Same stores: every response must be the same bar the Date header."""
    data = tmp_path / "data"
    publish_world(open_stores(StoreConfig(data_dir=str(data))), pool_size=20)
    targets = [PAGE, PAGE + "?limit=3", f"/v1/editions/{EDITION}/version", "/v1/editions", f"/v1/editions/{EDITION}"]
    answers = {}
    for path in ("poller", "thread"):
        access_log = tmp_path / "access.log" if path == "thread" else None
        with running_origin(data, access_log=access_log) as port:
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            got = []
            for target in targets:
                sock.sendall(req(target))
                resp = _read_response(sock)
                body = resp.read()
                headers = [(k, v) for k, v in resp.getheaders() if k != "Date"]
                got.append((resp.status, headers, body))
                etag = resp.getheader("ETag")
                sock.sendall(req(target, f"If-None-Match: {etag}"))
                resp = _read_response(sock)
                got.append((resp.status, [(k, v) for k, v in resp.getheaders() if k != "Date"], resp.read()))
            sock.close()
            answers[path] = got
    assert (tmp_path / "access.log").read_text().count("GET /v1/editions") == 2 * len(targets)
    assert [a[0] for a in answers["poller"]] == [200, 304] * len(targets)
    assert answers["poller"] == answers["thread"]
