"""gunicorn worker of the origin: gthread, but a request reaches a thread only once it has fully arrived.

Why (issue 12, class 9): gunicorn's gthread worker hands a connection to a thread as soon as its first byte
arrives, and the thread then blocks until the request head (and body) is complete. 24 clients each sending a byte
of header every second held all 2 x 8 threads, and shared pages stopped answering. Here the worker's poller (its
main thread, non-blocking sockets) reads the request head, and the body when its length is known (Content-Length
up to :data:`BODY_PREREAD_MAX`, or a chunked body up to its terminating chunk), into a buffer; only then is the
connection queued to the thread pool, whose parser reads the buffered bytes first. So a slow client costs a
buffer and a poller entry, never a thread.

Limits (all per connection):

- ``NEWSROOM_HEADER_TIMEOUT_S`` (default 10): the whole request (head and buffered body) must arrive within this
  many seconds of the connection opening or of its first byte on a kept-alive connection; otherwise it is closed.
- :data:`HEAD_MAX` (64 KiB): a head larger than this is answered 431 and closed.
- Bodies larger than :data:`BODY_PREREAD_MAX` are handed over after the head: the origin answers 413 for them
  without reading (serving.create_app's MAX_CONTENT_LENGTH), so no thread waits on their bytes either.

The number of connections per worker stays bounded by gunicorn's ``worker_connections``; idle kept-alive
connections by ``keepalive``. Everything else (keep-alive, graceful shutdown, the thread pool) is gthread's own.

Hot shared GETs never reach a thread either. Once the poller holds a whole request that is a plain
``GET /v1/editions...`` (HTTP/1.1, no body, no Cookie, no Authorization, exactly one request in the buffer, every
header line well formed) it asks the app's fast layer (:meth:`serving.fastpath.FastSharedPages.answer`, the same
code that answers them under WSGI) and, when that answers, writes the response itself (non-blocking; a response
the socket does not take at once is finished when it becomes writable, within the header timeout). Why: behind
the CDN most origin requests are these pages, and handing each to a thread cost a queue hop, a context switch
and gunicorn's Python HTTP parser and response writer, several times the ~6 us the fast layer needs
(benchmarks/serve_bench.py: origin vs nginx). Anything else, and every request when an access log is configured
(gunicorn's access log needs its request and response objects), takes the thread path unchanged. Headers are the
thread path's: the app's, plus ``Server``, ``Date`` and ``Connection`` as gunicorn writes them
(tests/serving/test_poller_fastpath.py compares both paths on a real gunicorn).
"""

from __future__ import annotations

import errno
import os
import re
import selectors
import time
from collections import deque
from email.utils import formatdate
from functools import partial

from gunicorn.workers.gthread import TConn, ThreadWorker

HEAD_MAX = 64 * 1024
BODY_PREREAD_MAX = 1024 * 1024 + 64 * 1024  # the largest body the origin takes (push: 1 MiB) plus slack
HEADER_TIMEOUT_S = float(os.environ.get("NEWSROOM_HEADER_TIMEOUT_S", "10"))
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*([0-9]{1,15})[ \t]*(?:\r\n|$)")
_CHUNKED = re.compile(rb"\r\ntransfer-encoding:[^\r\n]*chunked")
_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
# A header line the poller may read itself: RFC 9110 token, colon, value without control characters (no obs-fold).
_HEADER_LINE = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[ \t]*[^\x00-\x08\x0a-\x1f\x7f]*$")
_TARGET = re.compile(rb"^/v1/editions[A-Za-z0-9/_.~-]*(?:\?[A-Za-z0-9=&_.~-]*)?$")


def simple_get(buf: bytes | bytearray) -> tuple[str, str, str | None, bool] | None:
    """``(path, query, if_none_match, close)`` when ``buf`` is exactly one plain HTTP/1.1 GET of a
    ``/v1/editions`` path with no body, Cookie or Authorization and only well-formed header lines; else None (the
    thread path, with gunicorn's full parser, answers it)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0 or end + 4 != len(buf):
        return None
    lines = bytes(buf[:end]).split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or parts[0] != b"GET" or parts[2] != b"HTTP/1.1" or not _TARGET.match(parts[1]):
        return None
    inm, close = None, False
    for line in lines[1:]:
        if not _HEADER_LINE.match(line):
            return None
        name, _, value = line.partition(b":")
        name = name.lower()
        if name in (b"cookie", b"authorization", b"content-length", b"transfer-encoding", b"expect", b"upgrade"):
            return None
        if name == b"if-none-match":
            if inm is not None:
                return None
            inm = value.strip().decode("latin-1")
        elif name == b"connection":
            close = b"close" in value.lower()
    path, _, query = parts[1].decode("ascii").partition("?")
    return path, query, inm, close


def http_response(status: str, headers: list, body: bytes, close: bool, date: str) -> bytes:
    """The bytes gunicorn would write for this WSGI answer (status line, its Server/Date/Connection headers)."""
    head = [
        f"HTTP/1.1 {status}",
        "Server: gunicorn",
        f"Date: {date}",
        "Connection: " + ("close" if close else "keep-alive"),
    ]
    head += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def request_complete(buf: bytes | bytearray) -> bool | None:
    """True when ``buf`` holds a whole request (or as much as we pre-read of it), False when more must come, None
    when the head is too large to accept."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None if len(buf) > HEAD_MAX else False
    if end > HEAD_MAX:
        return None
    head = bytes(buf[:end]).lower()
    body = len(buf) - (end + 4)
    m = _CONTENT_LENGTH.search(head)
    if m is not None:
        length = int(m.group(1))
        return length > BODY_PREREAD_MAX or body >= length
    if _CHUNKED.search(head):
        return body > BODY_PREREAD_MAX or bytes(buf[-5:]) == b"0\r\n\r\n"
    return True


class BufferingThreadWorker(ThreadWorker):
    """gthread with the request read by the poller (see the module docstring)."""

    def init_process(self):
        self.reading: deque = deque()
        super().init_process()

    def accept(self, listener):
        try:
            client_sock, client_addr = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, client_sock, client_addr, listener.getsockname())  # non-blocking
        self._start_reading(conn)

    def on_client_socket_readable(self, conn, client):
        """A kept-alive connection has a new request coming: read it in the poller too."""
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        self._start_reading(conn)

    def _start_reading(self, conn) -> None:
        conn.prebuf = bytearray()
        conn.head_deadline = time.monotonic() + HEADER_TIMEOUT_S
        self.reading.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))

    def _stop_reading(self, conn) -> None:
        try:
            self.poller.unregister(conn.sock)
        except (OSError, KeyError, ValueError):
            pass
        try:
            self.reading.remove(conn)
        except ValueError:
            pass

    def _drop(self, conn, reply: bytes = b"") -> None:
        self._stop_reading(conn)
        if reply:
            try:
                conn.sock.send(reply)
            except OSError:
                pass
        self.nr_conns -= 1
        conn.close()

    def _on_readable(self, conn, _sock) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        conn.prebuf += data
        done = request_complete(conn.prebuf)
        if done is None:
            self._drop(conn, _TOO_LARGE)
        elif done:
            self._stop_reading(conn)
            if not self._answer_in_poller(conn):
                conn.data_ready = True
                self.enqueue_req(conn)

    def _fast_layer(self):
        """The app's :class:`serving.fastpath.FastSharedPages`, or None (fast path off, or access logging on)."""
        fast = getattr(self, "_fast", False)
        if fast is False:
            from serving.fastpath import FastSharedPages

            layer = getattr(self.wsgi, "wsgi_app", None)
            fast = layer if isinstance(layer, FastSharedPages) and not self.cfg.accesslog else None
            self._fast = fast
        return fast

    def _answer_in_poller(self, conn) -> bool:
        fast = self._fast_layer()
        req = simple_get(conn.prebuf) if fast is not None else None
        found = fast.answer(req[0], req[1], req[2]) if req is not None else None
        if found is None:
            return False
        self.nr += 1
        if self.nr >= self.max_requests and self.alive:
            self.log.info("Autorestarting worker after current request.")
            self.alive = False
        close = req[3] or not self.alive or not self.cfg.keepalive or len(self.keepalived_conns) >= self.max_keepalived
        now = int(time.time())
        if getattr(self, "_date_at", None) != now:
            self._date_at, self._date = now, formatdate(now, usegmt=True)
        conn.prebuf = None
        self._write(conn, memoryview(http_response(*found, close, self._date)), close)
        return True

    def _write(self, conn, data: memoryview, close: bool, _sock=None) -> None:
        """Send what the socket takes now; finish when it is writable again (bounded by the header deadline)."""
        try:
            sent = conn.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._drop(conn)
            return
        rest = data[sent:]
        first = _sock is None
        if rest:
            if first:
                self.reading.append(conn)  # its head deadline now bounds the write
                self.poller.register(conn.sock, selectors.EVENT_WRITE, partial(self._write, conn, rest, close))
            else:
                self.poller.modify(conn.sock, selectors.EVENT_WRITE, partial(self._write, conn, rest, close))
            return
        if not first:
            self._stop_reading(conn)
        if close:
            self.nr_conns -= 1
            conn.close()
            return
        conn.set_timeout()  # kept alive exactly as gthread's finish_request does
        self.keepalived_conns.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_client_socket_readable, conn))

    def murder_pending(self):
        super().murder_pending()
        now = time.monotonic()
        while self.reading and self.reading[0].head_deadline <= now:
            self._drop(self.reading[0])

    def handle(self, conn):
        buf = getattr(conn, "prebuf", None)
        if buf:
            conn.prebuf = None
            conn.sock.setblocking(True)
            conn.init()
            conn.parser.unreader.unread(bytes(buf))
        return super().handle(conn)
