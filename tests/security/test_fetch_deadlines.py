"""Fetch deadlines: a server that trickles its headers or body one byte at a time cannot hold a fetch past the
fetcher's total deadline (on 60feb56 such fetches took 117 s, 124 s and 540 s through a redirect, with a 20 s
limit).

A real TCP server on 127.0.0.1 (one thread per connection, every connection closed after ``TRICKLE_CAP_S``) sends
one byte every ``BYTE_EVERY_S``: each single read returns well within the read timeout, so only a deadline on the
whole fetch can end it. Loopback is reachable only through the guard's operator override (``trickle.test`` ->
127.0.0.1:port), exactly as in tests/transforms/ingest; without the override the guard still refuses it.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from transforms.ingest.fetcher import Fetcher, FetcherConfig
from transforms.ingest.guard import AddressGuard

BYTE_EVERY_S = 0.1
TRICKLE_CAP_S = 8.0  # the server gives up after this (keeps a failing run bounded)
DEADLINE_S = 1.5
MARGIN_S = 1.0


class TrickleServer:
    """Paths: /body (headers at once, then a 1 MB body byte by byte), /headers (a status line, then header bytes
    one by one, never ending them), /redirect (a trickled 302 to /body), /robots.txt (trickled), /ok (normal)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    def _accept(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _trickle(self, conn, data: bytes, started: float) -> None:
        for i in range(len(data)):
            if self.stop.is_set() or time.monotonic() - started > TRICKLE_CAP_S:
                return
            conn.sendall(data[i : i + 1])
            time.sleep(BYTE_EVERY_S)

    def _serve(self, conn):
        started = time.monotonic()
        try:
            conn.settimeout(5.0)
            request = b""
            while b"\r\n\r\n" not in request and len(request) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                request += chunk
            path = request.split(b" ", 2)[1].decode()
            if path == "/ok":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok")
            elif path == "/body":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000000\r\n\r\n")
                self._trickle(conn, b"x" * 1_000_000, started)
            elif path == "/headers":
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                self._trickle(conn, b"X-Slow: " + b"a" * 1_000_000, started)
            elif path == "/redirect":
                self._trickle(conn, b"HTTP/1.1 302 Found\r\nLocation: /body\r\nContent-Length: 0\r\n\r\n", started)
            elif path == "/robots.txt":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n")
                self._trickle(conn, b"#" * 100000, started)
            else:
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        except OSError:
            pass  # the client (or its deadline) hung up: what we want
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()
        self.accepter.join(2)
        for t in self.threads:
            t.join(TRICKLE_CAP_S + 2)


@pytest.fixture
def trickle():
    srv = TrickleServer()
    yield srv
    srv.close()


def _fetcher(srv, **config) -> Fetcher:
    cfg = dict(
        min_host_delay_s=0.0,
        connect_timeout_s=1.0,
        read_timeout_s=1.0,  # > BYTE_EVERY_S: no single read ever times out
        total_timeout_s=DEADLINE_S,
        respect_robots=False,
    )
    cfg.update(config)
    return Fetcher(FetcherConfig(**cfg), AddressGuard({"trickle.test": f"127.0.0.1:{srv.port}"}))


@pytest.mark.parametrize("path", ["/body", "/headers", "/redirect"])
def test_trickling_server_cannot_hold_a_fetch_past_the_deadline(trickle, path):
    f = _fetcher(trickle)
    t0 = time.monotonic()
    res = f.fetch(f"http://trickle.test{path}", check_robots=False)
    took = time.monotonic() - t0
    f.close()
    assert res.error == "timeout" and "deadline" in res.detail, (res.error, res.detail)
    assert res.body == b""  # never a truncated page
    assert res.transient  # callers retry a bounded number of times, then dead-letter
    assert took < DEADLINE_S + MARGIN_S, f"{path}: fetch took {took:.1f} s with a {DEADLINE_S} s deadline"


def test_a_trickled_robots_txt_counts_against_the_page_deadline(trickle):
    f = _fetcher(trickle, respect_robots=True)
    t0 = time.monotonic()
    res = f.fetch("http://trickle.test/ok")
    took = time.monotonic() - t0
    f.close()
    assert res.error == "timeout", (res.error, res.detail)
    assert took < DEADLINE_S + MARGIN_S, f"fetch took {took:.1f} s with a {DEADLINE_S} s deadline"


def test_the_watchdog_leaves_healthy_fetches_and_pooled_connections_alone(trickle):
    f = _fetcher(trickle, total_timeout_s=0.5)
    for _ in range(3):  # deadlines of finished fetches must not cut the next request on a reused connection
        res = f.fetch("http://trickle.test/ok", check_robots=False)
        assert res.ok and res.body == b"ok", (res.error, res.detail)
        time.sleep(0.6)
    f.close()


def test_one_trickling_host_does_not_stall_fetches_of_other_hosts(trickle):
    """Fetches of a healthy host proceed while a hostile one is being fetched in parallel."""
    f = _fetcher(trickle)
    guard = AddressGuard({"trickle.test": f"127.0.0.1:{trickle.port}", "healthy.test": f"127.0.0.1:{trickle.port}"})
    f.guard = guard
    slow = threading.Thread(target=f.fetch, args=("http://trickle.test/body",), kwargs={"check_robots": False})
    slow.start()
    t0 = time.monotonic()
    res = f.fetch("http://healthy.test/ok", check_robots=False)
    assert res.ok and time.monotonic() - t0 < 1.0
    slow.join(DEADLINE_S + MARGIN_S + 1)
    assert not slow.is_alive()
    f.close()


def test_the_guard_still_refuses_loopback_without_an_operator_override(trickle):
    f = Fetcher(FetcherConfig(min_host_delay_s=0, respect_robots=False), AddressGuard())
    res = f.fetch(f"http://127.0.0.1:{trickle.port}/ok", check_robots=False)
    assert res.error == "blocked_address"


def test_a_slow_dns_answer_counts_against_the_deadline():
    def slow_resolver(host, port):
        time.sleep(DEADLINE_S + 3)
        return ["93.184.216.34"]

    f = Fetcher(
        FetcherConfig(min_host_delay_s=0, total_timeout_s=DEADLINE_S, respect_robots=False),
        AddressGuard(resolver=slow_resolver),
    )
    t0 = time.monotonic()
    res = f.fetch("http://slow-dns.test/", check_robots=False)
    assert res.error == "timeout" and "deadline" in res.detail
    assert time.monotonic() - t0 < DEADLINE_S + MARGIN_S
