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
"""

from __future__ import annotations

import errno
import os
import re
import selectors
import time
from collections import deque
from functools import partial

from gunicorn.workers.gthread import TConn, ThreadWorker

HEAD_MAX = 64 * 1024
BODY_PREREAD_MAX = 1024 * 1024 + 64 * 1024  # the largest body the origin takes (push: 1 MiB) plus slack
HEADER_TIMEOUT_S = float(os.environ.get("NEWSROOM_HEADER_TIMEOUT_S", "10"))
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*([0-9]{1,15})[ \t]*(?:\r\n|$)")
_CHUNKED = re.compile(rb"\r\ntransfer-encoding:[^\r\n]*chunked")
_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


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
            conn.data_ready = True
            self.enqueue_req(conn)

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
