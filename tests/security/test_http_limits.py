"""The origin's HTTP limits hold on both paths of its gunicorn worker (serving/worker/gworker.py): the poller that answers
hot shared pages itself and the thread path behind it. A real ``newsroom serve`` (one worker, two threads) on
127.0.0.1; each test is one abuse an outside probe found. Every socket has a timeout, every loop a bound; a test
that needs the origin to react before its header timeout runs against an origin whose header timeout (20 s) is
far longer than the test's socket timeouts, so a wait for that timeout cannot pass for an answer."""

from __future__ import annotations

import socket
import time

import pytest

from stores import StoreConfig, open_stores
from tests.serving.helpers import EDITION, STORY, http_get, publish_world, running_origin

PAGE = f"/v1/editions/{EDITION}/sections/top"


def _origin(tmp_path, header_timeout: str):
    data = tmp_path / "data"
    publish_world(open_stores(StoreConfig(data_dir=str(data))), pool_size=20)
    return running_origin(data, env={"NEWSROOM_HEADER_TIMEOUT_S": header_timeout})


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    with _origin(tmp_path_factory.mktemp("limits"), "20") as port:
        yield port


@pytest.fixture
def short_origin(tmp_path):
    with _origin(tmp_path, "2") as port:
        yield port


def req(target: str = PAGE, *headers: str, method: str = "GET") -> bytes:
    return ("\r\n".join([f"{method} {target} HTTP/1.1", "Host: origin.test", *headers]) + "\r\n\r\n").encode()


def connect(port: int, timeout: float = 5) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def status_of(sock: socket.socket) -> int:
    """The status of the next response on ``sock`` (reads its head only)."""
    buf = b""
    while b"\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed after {buf!r}")
        buf += chunk
    return int(buf.split(b" ", 2)[1])


def answer(port: int, raw: bytes, timeout: float = 5) -> int:
    with connect(port, timeout) as s:
        s.sendall(raw)
        return status_of(s)


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes ``sock`` (EOF or reset) within ``seconds``; what it sends first is read."""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return False


def pages_answered(port: int) -> list:
    out = []
    for path in (PAGE, "/healthz", f"/v1/stories/{STORY}"):
        try:
            out.append(http_get(port, path, timeout=4)[0])
        except OSError as exc:
            out.append(repr(exc))
    return out


def test_a_limit_of_4301_digits_is_refused_and_the_worker_lives(origin):
    keep = connect(origin)
    keep.sendall(req())
    assert status_of(keep) == 200
    for _ in range(3):
        assert answer(origin, req(PAGE + "?limit=" + "9" * 4301)) in (400, 414)
    keep.settimeout(5)
    keep.recv(1 << 20)
    keep.sendall(req())  # same worker, same connection: it did not exit
    assert status_of(keep) == 200
    keep.close()


@pytest.mark.parametrize(
    "raw",
    [
        req(PAGE + "?limit=" + "0" * 4100 + "5"),  # request line over limit_request_line
        req(PAGE, "X-Pad: " + "a" * 8200),  # one header over limit_request_field_size
        req(PAGE, *(f"X-H{i}: v" for i in range(150))),  # more than limit_request_fields
    ],
    ids=["request-line", "header-size", "header-count"],
)
def test_the_poller_keeps_the_request_head_limits(origin, raw):
    assert answer(origin, raw) in (400, 414, 431)


def test_a_bare_lf_request_is_answered_at_once(origin):
    with connect(origin, timeout=4) as s:
        s.sendall(f"GET {PAGE} HTTP/1.1\nHost: origin.test\n\n".encode())
        try:
            assert status_of(s) == 400
        except ConnectionError:
            pass  # closed without an answer is acceptable too; waiting is not


def test_a_huge_content_length_without_body_is_refused_and_closed_at_once(origin):
    with connect(origin) as s:
        s.sendall(req("/v1/ping", "Content-Type: application/json", "Content-Length: 2000000000", method="POST"))
        assert status_of(s) == 413
        assert closed_within(s, 3), "the connection stays open waiting for a body it will never read"


def test_a_chunk_that_looks_like_the_last_one_does_not_hold_a_thread(origin):
    hostile = []
    for _ in range(3):  # more than the worker's two threads
        s = connect(origin)
        head = req("/v1/ping", "Content-Type: application/json", "Transfer-Encoding: chunked", method="POST")
        s.sendall(head + b"5\r\n0\r\n\r\n")  # a 5-byte chunk whose data is "0\r\n\r\n": the body is not over
        hostile.append(s)
    try:
        time.sleep(0.5)
        assert pages_answered(origin) == [200, 200, 200]
    finally:
        for s in hostile:
            s.close()


def test_pipelining_does_not_bypass_the_header_timeout(short_origin):
    hostile = []
    for _ in range(3):
        s = connect(short_origin)
        s.sendall(req(f"/v1/stories/{STORY}") + b"GET /healthz HTTP/1.1\r\nHost: x")  # a whole request, half of one
        hostile.append(s)
    try:
        assert pages_answered(short_origin) == [200, 200, 200]
        for s in hostile:
            assert closed_within(s, 8), "the second request got no header deadline"
    finally:
        for s in hostile:
            s.close()


def test_pipelining_clients_that_never_read_hold_no_thread(origin):
    burst = req(f"/v1/stories/{STORY}") * 4000  # far more response bytes than the socket buffers take
    hostile = []
    try:
        for _ in range(3):
            s = connect(origin)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.setblocking(False)
            try:
                s.send(burst)
            except BlockingIOError:
                pass
            hostile.append(s)
        time.sleep(1.5)
        assert pages_answered(origin) == [200, 200, 200]
    finally:
        for s in hostile:
            s.close()


def test_idle_sockets_beyond_worker_connections_do_not_stall_new_requests(origin):
    idle = []
    try:
        for _ in range(1100):  # more than worker_connections (1000) of the one worker
            idle.append(connect(origin))
        time.sleep(0.5)
        assert pages_answered(origin) == [200, 200, 200]
    finally:
        for s in idle:
            s.close()


@pytest.mark.parametrize("ended", [True, False], ids=["whole-head", "head-still-coming"])
def test_a_request_head_over_64_kib_is_answered_431(origin, ended):
    # Nine header lines of 7,500 bytes: each within gunicorn's own limits (8,190 bytes a line, 100 lines), together
    # over the 64 KiB the poller reads of a head (serving/worker/framing.py HEAD_MAX). The README promises 431; the head
    # used to be handed to gunicorn cut at 64 KiB, whose parser met the end of its input and closed in silence.
    raw = req(PAGE, *(f"X-Pad-{i}: " + "a" * 7500 for i in range(9)))
    assert len(raw) > 64 * 1024
    with connect(origin, timeout=5) as s:
        s.sendall(raw if ended else raw[:-4])  # without its blank line the head is still arriving
        assert status_of(s) == 431
        assert closed_within(s, 5)
    assert pages_answered(origin)[0] == 200  # the worker lives


def test_a_head_still_coming_with_more_lines_than_gunicorn_takes_is_answered_431(origin):
    raw = req(PAGE, *(f"X-H{i}: v" for i in range(150)))[:-4]  # 150 short lines, no blank line yet
    with connect(origin, timeout=5) as s:
        s.sendall(raw)
        assert status_of(s) == 431
        assert closed_within(s, 5)
