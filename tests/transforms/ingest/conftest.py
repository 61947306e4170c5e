"""Fixtures of the ingest tests: the sample world on a free loopback port, a fetcher pointed at it, a network guard.

``no_foreign_connections`` (autouse): every socket connect is checked; anything but 127.0.0.1 / ::1 fails the test
and is recorded, so a test proves that 10.0.0.1 or 169.254.169.254 were never contacted (only loopback traffic
is allowed on this machine).
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from devtools.world.server import SampleWorld
from transforms.ingest.fetcher import Fetcher, FetcherConfig
from transforms.ingest.guard import AddressGuard

# The world's virtual clock stands here during a test (speed 1): articles with at <= WORLD_AT are public, the
# next regular release is 10+ s away, and tests release the rest with world.release_now().
WORLD_AT = 1000.0


@pytest.fixture(autouse=True)
def no_foreign_connections(monkeypatch):
    attempts: list = []
    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        attempts.append(host)
        if isinstance(address, tuple) and host not in ("127.0.0.1", "::1", "localhost"):
            raise AssertionError(f"test tried to connect to {address!r}: only loopback is allowed")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    return attempts


@pytest.fixture
def world():
    w = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    yield w
    w.stop()


def world_fetcher(world, **config) -> Fetcher:
    cfg = dict(min_host_delay_s=0.0, connect_timeout_s=2.0, read_timeout_s=5.0, total_timeout_s=10.0)
    cfg.update(config)
    return Fetcher(FetcherConfig(**cfg), AddressGuard(world.host_overrides, resolver=fake_resolver))


def fake_resolver(host: str, port: int) -> list[str]:
    """DNS stand-in: nothing real is ever resolved in these tests."""
    table = {
        "metadata.test": ["169.254.169.254"],
        "intranet.test": ["10.0.0.1"],
        "localhost": ["127.0.0.1"],
        "sneaky.test": ["93.184.216.34", "10.0.0.1"],
        "mapped.test": ["::ffff:127.0.0.1"],
        "public.test": ["93.184.216.34"],
    }
    if host not in table:
        raise socket.gaierror(f"unknown host {host}")
    return table[host]


@pytest.fixture
def fetcher(world):
    f = world_fetcher(world)
    yield f
    f.close()


class _Redirector(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    routes: dict = {}

    def log_message(self, *a):
        pass

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/robots.txt":
            body = b"User-agent: *\nAllow: /\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if path.startswith("/slow"):
            time.sleep(2.0)
        target = self.routes.get(path)
        if target:
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"<html><body>ok</body></html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def redirector():
    """A loopback server (host ``redirector.test`` via override) whose /to-* paths redirect into forbidden space."""
    _Redirector.routes = {
        "/to-metadata": "http://169.254.169.254/latest/meta-data/",
        "/to-private": "http://10.0.0.1/admin",
        "/to-loopback-literal": "http://127.0.0.1:9/",
        "/to-metadata-name": "http://metadata.test/latest/",
        "/to-mapped": "http://[::ffff:10.0.0.1]/",
        "/loop": "/loop",
    }
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Redirector)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()
