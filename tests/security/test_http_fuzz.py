"""A bounded fuzz of the origin's HTTP layer (serving/worker/gworker.py, serving/worker/framing.py).

1. In process, seeded: every request the poller would answer itself (:func:`serving.worker.gworker.simple_get`) is one
   gunicorn's parser accepts with the same method, path, query and If-None-Match, and the poller's framing
   (:func:`serving.worker.framing.frame`) ends every request where gunicorn's parser ends it; no input makes either raise.
2. On a real ``newsroom serve`` (one worker, two threads, 127.0.0.1), on both paths (the poller's, and the thread
   path an access log forces): malformed request lines, headers, bodies, chunked encodings and pipelined mixes of
   them. Each answer is a 4xx or a correct response (never a 5xx but gunicorn's 501 for a transfer coding it does
   not implement), every connection ends within its deadline, and the one worker is the same one afterwards.

Bounded: a fixed seed, a fixed number of cases, socket timeouts on every read, a few seconds per origin.
"""

from __future__ import annotations

import random
import re
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest
from gunicorn.config import Config
from gunicorn.http.parser import RequestParser

from serving.worker.framing import CHUNKS_MAX, frame
from serving.worker.gworker import MemorySocket, simple_get
from stores import StoreConfig, open_stores
from tests.serving.helpers import EDITION, STORY, publish_world, running_origin

PAGE = f"/v1/editions/{EDITION}/sections/top"
TARGETS = [PAGE, PAGE + "?limit=5", "/v1/editions", f"/v1/editions/{EDITION}", f"/v1/stories/{STORY}", "/healthz"]
PIECES = [
    b"\r\n",
    b"\n",
    b"\r",
    b" ",
    b"\t",
    b":",
    b"\x00",
    b"\x7f",
    b"\xff",
    b"0",
    b"9" * 40,
    b"%00",
    b"?",
    b"#",
    b"Content-Length: 5",
    b"Content-Length: -1",
    b"Content-Length: 1e3",
    b"Transfer-Encoding: chunked",
    b"Transfer-Encoding: gzip",
    b"Connection: close",
    b"Expect: 100-continue",
    b"Cookie: a=b",
    b"If-None-Match: *",
    b"X-" + b"a" * 9000 + b": v",
    b"GET",
    b"HTTP/1.1",
    b"HTTP/1.0",
    b"HTTP/2.0",
    b"0\r\n\r\n",
    b"5\r\nab",
]
STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")
ALLOWED = {100, 200, 202, 204, 304} | set(range(400, 432)) | {501}  # 501: a transfer coding gunicorn lacks


def base_request(rng: random.Random) -> bytes:
    target = rng.choice(TARGETS)
    headers = [b"Host: origin.test", b"User-Agent: fuzz"]
    if rng.random() < 0.3:
        headers.append(b'If-None-Match: "x"')
    if rng.random() < 0.3:
        body = b'{"feed_url": "http://x.test/f.xml"}'
        if rng.random() < 0.5:
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:7], body[7:]))
            return (
                b"POST /v1/ping HTTP/1.1\r\n"
                + b"\r\n".join([*headers, b"Transfer-Encoding: chunked"])
                + (b"\r\n\r\n" + chunks + b"0\r\n\r\n")
            )
        cl = b"Content-Length: %d" % len(body)
        return b"POST /v1/ping HTTP/1.1\r\n" + b"\r\n".join([*headers, cl]) + b"\r\n\r\n" + body
    return b"GET " + target.encode() + b" HTTP/1.1\r\n" + b"\r\n".join(headers) + b"\r\n\r\n"


def mutate(rng: random.Random, raw: bytes) -> bytes:
    out = bytearray(raw)
    for _ in range(rng.randint(0, 3)):
        op, at = rng.random(), rng.randrange(len(out) + 1)
        if op < 0.4:
            out[at:at] = rng.choice(PIECES)
        elif op < 0.7 and out:
            del out[at : at + rng.randint(1, 8)]
        elif out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
    return bytes(out)


def cases(seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    return [mutate(rng, base_request(rng)) for _ in range(n)]


def gunicorn_parse(raw: bytes):
    """(request, bytes it consumed with its body) from gunicorn's own parser over ``raw``, or None if it refuses."""
    sock = MemorySocket(raw)
    parser = RequestParser(Config(), sock, ("127.0.0.1", 1))
    try:
        req = next(parser)
        req.body.read()
    except Exception:
        return None
    return req, sock.pos - len(parser.unreader.buf.getvalue())


def test_the_poller_takes_only_what_gunicorn_accepts_and_frames_where_it_ends():
    for raw in cases(seed=21, n=800):
        for cut in (len(raw), len(raw) // 2):
            n, verdict = frame(raw[:cut], 4094)  # never raises, never claims more than it has
            assert verdict is None or 0 < n <= cut
        got = simple_get(raw)
        parsed = gunicorn_parse(raw)
        if got is not None:
            assert parsed is not None, raw
            req, used = parsed
            inm = next((v for k, v in req.headers if k == "IF-NONE-MATCH"), None)
            assert (req.method, req.path, req.query, inm) == ("GET", got[0], got[1], got[2]), raw
            assert used == len(raw)
        n, verdict = frame(raw, 4094)
        if parsed is not None and verdict is True:
            assert n == parsed[1], raw  # a whole request ends where gunicorn's parser ends it


def _exchange(port: int, raw: bytes) -> list[int]:
    """Send ``raw``, read until the server closes (or 4 s pass); the statuses of the responses it sent."""
    got = b""
    with socket.create_connection(("127.0.0.1", port), timeout=4) as s:
        try:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)  # no more requests: the server closes once it has answered what it read
            while chunk := s.recv(65536):
                got += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass
        except TimeoutError:
            got += b"HTTP/1.1 999 still open "  # the server kept a finished exchange open past its deadlines
    return [int(m) for m in STATUS.findall(got)]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz") / "data"
    publish_world(open_stores(StoreConfig(data_dir=str(data))), pool_size=20)
    return data


@pytest.mark.parametrize("path", ["poller", "thread"])
def test_malformed_and_pipelined_requests_get_4xx_or_correct_answers_and_the_worker_lives(world, path):
    access_log = world.parent / f"access-{path}.log" if path == "thread" else None
    env = {"NEWSROOM_HEADER_TIMEOUT_S": "1.5"}
    rng = random.Random(7)
    single = cases(seed=12, n=120)
    piped = [b"".join(rng.sample(single, rng.randint(2, 5))) + b"GET /healthz HTTP/1.1\r\nHost: x" for _ in range(30)]
    with running_origin(world, env=env, access_log=access_log) as port:
        keep = socket.create_connection(("127.0.0.1", port), timeout=5)
        keep.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert keep.recv(65536).startswith(b"HTTP/1.1 200")
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda raw: _exchange(port, raw), single + piped))
        statuses = {s for a in answers for s in a}
        assert statuses <= ALLOWED, statuses - ALLOWED
        assert 200 in statuses and statuses & set(range(400, 432))  # the fuzz reached both answers
        keep.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # the same worker still holds this connection
        assert keep.recv(65536).startswith(b"HTTP/1.1 200")
        keep.close()


def test_the_poller_does_not_rescan_what_cannot_change_its_answer():
    """A partial head names the length before which (without a new LF) the answer stays the same; a head with more
    lines than gunicorn takes, or a body of more chunks than CHUNKS_MAX, is decided before it ends: a trickling
    client cannot make the poller rescan its buffer without bound."""
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 100
    want, verdict = frame(head, 4094)
    assert verdict is None and want > len(head)
    many = b"GET / HTTP/1.1\r\n" + b"X: v\r\n" * 103
    assert frame(many, 4094)[1] == 431
    post = b"POST /v1/ping HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert frame(post + b"1\r\na\r\n" * (CHUNKS_MAX + 1), 4094)[1] == 413
    assert frame(post + b"1\r\na\r\n" * 10 + b"0\r\n\r\n", 4094) == (len(post) + 60 + 5, True)
    assert frame(post + b"5\r\n0\r\n\r\n", 4094)[1] is None  # a chunk whose data looks like the last chunk
