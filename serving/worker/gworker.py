"""gunicorn worker of the origin: gthread whose threads never touch a socket.

Why (tests/security/test_slow_clients.py): gunicorn's gthread worker hands a connection to a thread as
soon as its first byte arrives, and the thread then blocks on the socket until the request has arrived and until
its response has been taken. Slow or hostile clients (trickled headers, a body that never ends, pipelined requests
whose responses are never read) held every thread and shared pages stopped answering. Here the worker's poller (its
main thread, non-blocking sockets) does every read and write:

1. it reads until :func:`serving.worker.framing.frame` says the buffer holds one whole request (or all it will read of a
   request that breaks a limit), under the header timeout;
2. a hot shared GET the poller understands completely (:func:`simple_get`) is answered from the app's fast layer
   (:meth:`serving.worker.fastpath.FastSharedPages.answer`, the same code that answers it under WSGI); anything else goes
   to a thread, which runs gunicorn's own parser and gthread's ``handle_request`` over those bytes in memory
   (:class:`MemorySocket`: the end of the bytes is the end of input, and the response is collected);
3. the poller writes the response under the write timeout, then serves the next pipelined request in its buffer
   (with a fresh header deadline) or keeps the connection alive.

So the fast path is a cache in front of gunicorn's HTTP handling, never a second parser with fewer limits: every
request it does not answer reaches gunicorn's parser with gunicorn's limits; :func:`simple_get` accepts only
requests that parser accepts with the same meaning (tests/security/test_http_fuzz.py compares them). A slow client
costs a buffer and a poller entry, never a thread. Limits (each named in serving/worker/gunicorn.conf.py):

- ``NEWSROOM_HEADER_TIMEOUT_S`` (default 10): a request (head and body) must arrive within this many seconds of
  the connection opening, of its first byte on a kept-alive connection, or of the previous response on a
  pipelined one; otherwise the connection is closed.
- ``NEWSROOM_WRITE_TIMEOUT_S`` (default 30): a response must be taken by the client within this many seconds.
- serving/worker/framing.py: a Content-Length over ~1 MiB, bare LF, malformed head framing: handed to gunicorn's parser
  as they stand, answered by it (or by the app: 413) and the connection closed at once; a malformed or oversized
  chunked body and a head over 64 KiB are answered by the poller itself (:func:`refusal`: 400 / 413 / 431), since
  the app would meet a body error only while reading the body, and gunicorn's parser, given a head cut at 64 KiB,
  closes without an answer.
- A connection closed after its last response is half-closed and what the client still sends is discarded for at
  most :data:`LINGER_S` / :data:`LINGER_MAX` (gunicorn's graceful close, in the poller), so the client reads the
  answer rather than a reset.
- gunicorn's ``limit_request_line``, ``limit_request_fields``, ``limit_request_field_size``: its parser, and
  :func:`simple_get` (stricter or equal).
- ``worker_connections``: when full, a new connection evicts the connection that has waited longest for its
  request (then the oldest idle kept-alive one), so idle sockets cannot lock new clients out; ``keepalive`` bounds
  idle kept-alive connections as in gthread.

Not supported: HTTP/2 (gunicorn's h2c settings; the origin speaks HTTP/1.1 to the CDN) and TLS (Cloud Run ends TLS).
Every request takes the thread path when an access log is configured (gunicorn's access log needs its request and
response objects).
"""

from __future__ import annotations

import errno
import os
import re
import selectors
import socket
import time
from email.utils import formatdate
from functools import partial

from gunicorn import http, util
from gunicorn.workers.gthread import TConn, ThreadWorker

from serving.worker import framing

HEADER_TIMEOUT_S = float(os.environ.get("NEWSROOM_HEADER_TIMEOUT_S", "10"))
WRITE_TIMEOUT_S = float(os.environ.get("NEWSROOM_WRITE_TIMEOUT_S", "30"))
# After a last response: half-close, then discard what the client still sends for at most this long / this much,
# so a client still sending a refused body reads the answer instead of a reset (gunicorn's close_graceful, bounded).
LINGER_S = 2.0
LINGER_MAX = 4 * 1024 * 1024
# gunicorn's defaults for limit_request_line, limit_request_fields, limit_request_field_size
GUNICORN_LIMITS = (4094, 100, 8190)
# A header line the poller may read itself: RFC 9110 token, colon, value without control characters (no obs-fold).
_HEADER_LINE = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[ \t]*[^\x00-\x08\x0a-\x1f\x7f]*$")
REASONS = {400: "Bad Request", 413: "Content Too Large", 431: "Request Header Fields Too Large"}
_TARGET = re.compile(rb"^/v1/editions[A-Za-z0-9/_.~-]*(?:\?[A-Za-z0-9=&_.~-]*)?$")


def simple_get(buf: bytes | bytearray, limits: tuple[int, int, int] = GUNICORN_LIMITS):
    """``(path, query, if_none_match, close)`` when ``buf`` is exactly one plain HTTP/1.1 GET of a
    ``/v1/editions`` path with no body, Cookie or Authorization, only well-formed header lines and within gunicorn's
    ``limits`` (request line, header count, header line size); else None (the thread path, with gunicorn's full
    parser, answers it)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0 or end + 4 != len(buf):
        return None
    line_max, fields_max, field_max = limits
    lines = bytes(buf[:end]).split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(lines[0]) > line_max or len(lines) - 1 > fields_max:
        return None
    if len(parts) != 3 or parts[0] != b"GET" or parts[2] != b"HTTP/1.1" or not _TARGET.match(parts[1]):
        return None
    inm, close = None, False
    for line in lines[1:]:
        if len(line) + 2 > field_max or not _HEADER_LINE.match(line):
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


WHY = {400: "malformed chunked body", 413: "chunked body too large", 431: "request head over 64 KiB or 100 lines"}


def refusal(status: int) -> bytes:
    """The poller's own answer to a request it refuses (serving/worker/framing.py); the connection closes after it."""
    body = f"{status} {REASONS[status]}: {WHY[status]}\n".encode()
    head = f"HTTP/1.1 {status} {REASONS[status]}\r\nServer: gunicorn\r\nConnection: close\r\n"
    head += f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def _recv(conn) -> bytes | None:
    """What the poller reads from a ready client socket: its bytes, b"" when the client is gone (end of input or a
    socket error: both close it), or None when nothing is there after all (a spurious wake-up: wait again)."""
    try:
        return conn.sock.recv(65536)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


class MemorySocket:
    """What a thread's gunicorn parser and response writer see instead of the client's socket: the request bytes
    the poller read (then end of input), and a buffer the response is written into."""

    def __init__(self, data: bytes):
        self.data, self.pos, self.out = data, 0, bytearray()

    def recv(self, n: int) -> bytes:
        chunk = self.data[self.pos : self.pos + n]
        self.pos += len(chunk)
        return chunk

    def unread(self) -> int:
        return len(self.data) - self.pos

    def sendall(self, data) -> None:
        self.out += data

    def send(self, data) -> int:
        self.out += data
        return len(data)

    def sendfile(self, file, offset: int = 0, count: int | None = None) -> int:
        file.seek(offset)
        data = file.read() if count is None else file.read(count)
        self.out += data
        return len(data)

    def gettimeout(self):
        return None

    def settimeout(self, _value) -> None:
        pass

    def setblocking(self, _flag) -> None:
        pass

    def shutdown(self, _how) -> None:
        pass

    def close(self) -> None:
        pass


class _Job:
    """The connection as gthread's ``handle_request`` sees it on a thread."""

    def __init__(self, sock: MemorySocket, conn):
        self.sock, self.client, self.server = sock, conn.client, conn.server


class BufferingThreadWorker(ThreadWorker):
    """gthread with every socket read and write done by the poller (see the module docstring)."""

    def init_process(self):
        self.reading: dict = {}  # connections waiting for (the rest of) a request, oldest first
        self.writing: dict = {}  # connections whose response the client has not taken yet, oldest first
        self.lingering: dict = {}  # connections answered for the last time, closing (see LINGER_S)
        cfg = self.cfg  # read once: every gunicorn setting read is a lookup through its Config object
        self.limits = (cfg.limit_request_line, cfg.limit_request_fields, cfg.limit_request_field_size)
        self.keepalive_on = bool(cfg.keepalive)
        super().init_process()

    def set_accept_enabled(self, enabled):
        """A full worker keeps accepting while alive: :meth:`accept` evicts the longest-waiting connection."""
        super().set_accept_enabled(enabled or self.alive)

    def accept(self, listener):
        try:
            client_sock, client_addr = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        if self.nr_conns >= self.worker_connections and not self._evict_one():
            util.close(client_sock)  # every connection is being served: the client retries
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, client_sock, client_addr, listener.getsockname())  # non-blocking
        conn.inbuf, conn.closed, conn.want, conn.watched = bytearray(), False, 0, False
        self._read(conn)

    def _evict_one(self) -> bool:
        """Close a closing connection, else the one that has waited longest for its request, else the oldest
        kept-alive one."""
        for waiting in (self.lingering, self.reading):
            if waiting:
                self._close(next(iter(waiting)))
                return True
        if self.keepalived_conns:
            conn = self.keepalived_conns.popleft()
            self._unregister(conn)
            self.nr_conns -= 1
            conn.close()
            return True
        return False

    def on_client_socket_readable(self, conn, client):
        """A kept-alive connection has a new request coming: read it in the poller."""
        self.keepalived_conns.remove(conn)
        self._read(conn)
        self._on_readable(conn, client)

    def _read(self, conn) -> None:
        conn.deadline = time.monotonic() + HEADER_TIMEOUT_S
        self.reading[conn] = None
        self._watch(conn, selectors.EVENT_READ, partial(self._on_readable, conn))

    def _watch(self, conn, events: int, callback) -> None:
        """Register the socket, or change its registration: from read to read that costs no system call (selectors
        only swap the callback), so a kept-alive connection answered in the poller costs no epoll_ctl at all."""
        if conn.watched:
            self.poller.modify(conn.sock, events, callback)
        else:
            self.poller.register(conn.sock, events, callback)
            conn.watched = True

    def _unregister(self, conn) -> None:
        if not conn.watched:
            return
        conn.watched = False
        try:
            self.poller.unregister(conn.sock)
        except (OSError, KeyError, ValueError):
            pass

    def _close(self, conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        self.reading.pop(conn, None)
        self.writing.pop(conn, None)
        self.lingering.pop(conn, None)
        self._unregister(conn)
        self.nr_conns -= 1
        conn.close()

    def _on_readable(self, conn, _sock) -> None:
        try:
            data = _recv(conn)
            if data is None:
                return
            if not data:
                self._close(conn)
                return
            conn.inbuf += data
            if len(conn.inbuf) < conn.want and b"\n" not in data:
                return  # nothing serving/worker/framing.py decides on has arrived
            self._advance(conn)
        except Exception:  # nothing may escape the poller: it would end the worker and every connection on it
            self.log.exception("Error reading a request")
            self._close(conn)

    def _advance(self, conn) -> None:
        """Serve the next request in the connection's buffer once it is all there; read more otherwise."""
        n, whole = framing.frame(conn.inbuf, self.limits[0], self.limits[1])
        if whole is None:
            conn.want = n
            if conn not in self.reading:
                self._read(conn)
            return
        conn.want = 0
        raw = bytes(conn.inbuf[:n])
        del conn.inbuf[:n]
        self.reading.pop(conn, None)
        if whole is not True and whole is not False:  # a body the poller refuses itself (serving/worker/framing.py)
            self._send(conn, memoryview(refusal(whole)), True)
            return
        if whole and self._answer_in_poller(conn, raw):
            return
        self._unregister(conn)  # pipelined bytes wait in the socket until this response is written
        fs = self.tpool.submit(self._serve, conn, raw, not whole)
        fs.add_done_callback(lambda fut: self.method_queue.defer(self._served, conn, fut))

    def _fast_layer(self):
        """The app's :class:`serving.worker.fastpath.FastSharedPages`, or None (fast path off, or access logging on)."""
        fast = getattr(self, "_fast", False)
        if fast is False:
            from serving.worker.fastpath import FastSharedPages

            layer = getattr(self.wsgi, "wsgi_app", None)
            fast = layer if isinstance(layer, FastSharedPages) and not self.cfg.accesslog else None
            self._fast = fast
        return fast

    def _answer_in_poller(self, conn, raw: bytes) -> bool:
        fast = self._fast_layer()
        req = simple_get(raw, self.limits) if fast is not None else None
        if req is None:
            return False
        try:
            found = fast.answer(req[0], req[1], req[2])
        except Exception:  # the thread path (Flask) answers what the fast layer could not
            self.log.exception("Fast layer failed on %r", req[:2])
            return False
        if found is None:
            return False
        self.nr += 1
        if self.nr >= self.max_requests and self.alive:
            self.log.info("Autorestarting worker after current request.")
            self.alive = False
        close = req[3] or not self.alive or not self.keepalive_on or len(self.keepalived_conns) >= self.max_keepalived
        now = int(time.time())
        if getattr(self, "_date_at", None) != now:
            self._date_at, self._date = now, formatdate(now, usegmt=True)
        self._send(conn, memoryview(http_response(*found, close, self._date)), close)
        return True

    def _serve(self, conn, raw: bytes, close: bool) -> tuple[bool, bytearray]:
        """On a thread: gunicorn's parser and gthread's request handling over ``raw``; (keep alive, response)."""
        sock = MemorySocket(raw)
        parser = http.get_parser(self.cfg, sock, conn.client)
        req = None
        try:
            req = next(parser)
            if close:
                req.must_close = True  # the poller read only part of it: nothing after it is a request
            keep = self.handle_request(req, _Job(sock, conn))
        except (http.errors.NoMoreData, StopIteration):
            return False, sock.out
        except Exception as e:
            self.handle_error(req, sock, conn.client, e)
            return False, sock.out
        try:
            drained = parser.finish_body()
        except Exception:
            drained = False
        return bool(keep and drained and not sock.unread() and not parser.unreader.buf.getvalue()), sock.out

    def _served(self, conn, fut) -> None:
        try:
            keep, out = fut.result()
        except Exception:
            keep, out = False, b""
        try:
            self._send(conn, memoryview(out), not keep)
        except Exception:
            self.log.exception("Error writing a response")
            self._close(conn)

    def _send(self, conn, data: memoryview, close: bool) -> None:
        """Send what the socket takes now; the rest when it is writable again, within the write timeout."""
        try:
            sent = conn.sock.send(data) if data else 0
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._close(conn)
            return
        if sent < len(data):
            conn.deadline = time.monotonic() + WRITE_TIMEOUT_S
            self.writing[conn] = None
            self._watch(conn, selectors.EVENT_WRITE, partial(self._on_writable, conn, data[sent:], close))
            return
        self._sent(conn, close)

    def _on_writable(self, conn, data: memoryview, close: bool, _sock) -> None:
        try:
            sent = conn.sock.send(data)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        if sent < len(data):
            self.poller.modify(conn.sock, selectors.EVENT_WRITE, partial(self._on_writable, conn, data[sent:], close))
            return
        del self.writing[conn]
        self._sent(conn, close)

    def _sent(self, conn, close: bool) -> None:
        """After a response: close, serve the next pipelined request, or keep the connection alive."""
        if close or not self.alive:
            self._linger(conn)
        elif conn.inbuf:
            self._advance(conn)
        elif len(self.keepalived_conns) >= self.max_keepalived:
            self._close(conn)
        else:
            conn.set_timeout()  # kept alive exactly as gthread's finish_request does
            self.keepalived_conns.append(conn)
            self._watch(conn, selectors.EVENT_READ, partial(self.on_client_socket_readable, conn))

    def _linger(self, conn) -> None:
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(conn)
            return
        conn.deadline, conn.drained = time.monotonic() + LINGER_S, 0
        self.lingering[conn] = None
        self._watch(conn, selectors.EVENT_READ, partial(self._on_linger, conn))

    def _on_linger(self, conn, _sock) -> None:
        data = _recv(conn)
        if data is None:
            return
        conn.drained += len(data)
        if not data or conn.drained > LINGER_MAX:
            self._close(conn)

    def murder_pending(self):
        super().murder_pending()
        now = time.monotonic()
        for waiting in (self.reading, self.writing, self.lingering):
            while waiting and next(iter(waiting)).deadline <= now:
                self._close(next(iter(waiting)))
