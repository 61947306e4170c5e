"""The polite, guarded HTTP fetcher used for feeds, robots.txt, WebSub subscriptions and article pages.

Reads URLs; writes :class:`FetchResult` (status, final URL, lower-cased headers, body bytes, or an error reason).
Never raises for network or policy failures: the reason code (``blocked_address``, ``dns_error``,
``robots_disallowed``, ``too_large``, ``timeout``, ``connection_error``, ``too_many_redirects``, ``bad_scheme``,
``url_too_long``) goes to the caller, which dead-letters it.

- Address guard (:mod:`transforms.ingest.guard`) on the first URL and on every redirect hop; the connection goes to
  the vetted IP (urllib3 pool on the IP, Host header and TLS SNI / certificate check on the name).
- One connection pool per (scheme, host, port, address); a minimum delay between two requests to the same host
  (the larger of ``min_host_delay_s`` and the site's robots.txt Crawl-delay, capped at 30 s) shared by every
  thread of the process. Across workers, the ingest job keys page fetches by host so that one worker owns a host.
- Deadline: the whole fetch (every redirect hop, the robots.txt fetches it triggers, connect, request, headers and
  body) ends by one wall-clock deadline, ``total_timeout_s`` (default 20 s) after the call, whatever the server
  does. Per-read timeouts alone cannot do that: a server that sends one byte every few seconds (in the headers or
  the body) never lets a read time out, and held fetches for minutes. Two mechanisms: (1) each hop's connect and
  read timeouts are capped at the time left, and the body loop checks the deadline between reads; (2) a watchdog
  thread (:class:`DeadlineWatchdog`, one per process) shuts the connection's socket down when the deadline passes,
  which ends a blocked header or body read at once (a trickle keeps every single read short, so (1) alone is not
  enough). DNS resolution is bounded by the time left too (guard.py). The result is ``timeout`` with detail
  ``total deadline of N s exceeded``. Time spent waiting for the
  host's politeness slot (our own Crawl-delay/min delay, not the server's doing) is added to the deadline.
  Body limit (default 5 MiB): a larger body is refused, not truncated (a cut article would be a wrong article).
- One hostile host cannot stall ingest for long: a feed poll runs in the ingest loop, so the deadline bounds the
  loop's stall to ``total_timeout_s`` per poll of that feed, and the schedule backs a failing feed off.
- Redirects followed by hand, at most ``max_redirects`` (default 5), only to http/https. No hop goes to a URL over
  ``transforms.common.MAX_URL_CHARS`` (2,048): ``url_too_long``, whether the caller or a Location header named it.
- robots.txt (urllib.robotparser) checked for pages, cached per origin for ``robots_ttl_s`` (default 1 h). Per
  RFC 9309: 4xx means no restrictions, 5xx or unreachable means disallow everything (retried after 5 min).
- Retry policy: the fetcher does not retry; callers retry transient failures (timeouts, 5xx) a bounded number of
  times and dead-letter the rest.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
import urllib.robotparser
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import certifi
import urllib3

from transforms.common import URL_TOO_LONG, url_excerpt, url_too_long
from transforms.ingest.guard import AddressGuard, BlockedAddress

DEFAULT_USER_AGENT = "NewsroomBot/0.1 (news aggregator; polite crawler)"  # no address known: none made up
CRAWLER_PAGE = "/about/crawler"  # the origin's page for publishers: what the crawler does, how to opt out
USER_AGENT_ENV = "NEWSROOM_USER_AGENT"


def user_agent_for(public_base: str | None, env: dict | None = None) -> str:
    """The User-Agent of the ingest job: ``$NEWSROOM_USER_AGENT`` when set, else the bot's name with the
    operator's own page for publishers, ``{public_base}/about/crawler`` (the origin serves it; in production the
    site's domain, locally the local origin), else no address at all rather than a placeholder's."""
    import os

    env = os.environ if env is None else env
    if env.get(USER_AGENT_ENV):
        return env[USER_AGENT_ENV]
    if public_base:
        return f"NewsroomBot/0.1 (+{public_base.rstrip('/')}{CRAWLER_PAGE}; news aggregator; polite crawler)"
    return DEFAULT_USER_AGENT


REDIRECT_CODES = (301, 302, 303, 307, 308)
TRANSIENT_REASONS = ("timeout", "connection_error", "http_5xx")


@dataclass
class FetchResult:
    url: str
    final_url: str
    status: int = 0
    headers: dict = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None  # reason code when the fetch failed
    detail: str = ""
    redirects: int = 0
    fetched_at_ms: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None and 200 <= self.status < 300

    @property
    def transient(self) -> bool:
        return self.error in ("timeout", "connection_error") or 500 <= self.status < 600


@dataclass(frozen=True)
class FetcherConfig:
    user_agent: str = DEFAULT_USER_AGENT
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 10.0
    total_timeout_s: float = 20.0
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 5
    min_host_delay_s: float = 1.0
    robots_ttl_s: float = 3600.0
    respect_robots: bool = True
    ca_certs: str | None = None  # CA bundle for https (default: certifi's)


class DeadlineWatchdog:
    """Shuts a fetch's socket down when its wall-clock deadline passes (one daemon thread per process).

    ``watch(deadline, sock)`` returns an entry; ``cancel(entry)`` forgets it; ``entry.fired`` tells whether the
    watchdog cut the connection. Why a thread and not socket timeouts: a socket timeout bounds one ``recv``, and a
    trickling server makes every ``recv`` return within it. ``shutdown(SHUT_RDWR)`` on the file descriptor makes the
    blocked ``recv`` (plain or TLS) return at once; the fetcher then reports ``timeout``. The base-class
    ``socket.socket.shutdown`` is called so that a TLS socket's state is not touched from this thread.
    """

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._cv = threading.Condition()
        self._heap: list = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    class Entry:
        __slots__ = ("deadline", "sock", "fired", "cancelled")

        def __init__(self, deadline: float, sock):
            self.deadline, self.sock, self.fired, self.cancelled = deadline, sock, False, False

    def watch(self, deadline: float, sock) -> DeadlineWatchdog.Entry:
        entry = self.Entry(deadline, sock)
        with self._cv:
            heapq.heappush(self._heap, (deadline, next(self._seq), entry))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="fetch-deadlines", daemon=True)
                self._thread.start()
            self._cv.notify()
        return entry

    def cancel(self, entry: DeadlineWatchdog.Entry | None) -> None:
        if entry is not None:
            with self._cv:
                entry.cancelled, entry.sock = True, None

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cv.wait(30.0)
                    if not self._heap:
                        self._thread = None
                        return
                    continue
                wait = self._heap[0][0] - self.clock()
                if wait > 0:
                    self._cv.wait(wait)
                    continue
                _, _, entry = heapq.heappop(self._heap)
                sock, entry.sock = entry.sock, None
                entry.fired = sock is not None
            if sock is not None:
                try:
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except (OSError, TypeError, ValueError):
                    pass  # already closed: the read it would have cut has ended anyway


WATCHDOG = DeadlineWatchdog()
_CURRENT = threading.local()  # the deadline of the fetch running on this thread (read by the connections)


def _watch_connection(conn) -> None:
    """Called by our connection classes when a response is about to be read: put the socket under the deadline."""
    deadline = getattr(_CURRENT, "deadline", None)
    sock = getattr(conn, "sock", None)
    if deadline is None or sock is None:
        return
    entry = WATCHDOG.watch(deadline, sock)
    _CURRENT.entries.append(entry)


class _HTTPConnection(urllib3.connection.HTTPConnection):
    def getresponse(self, *args, **kwargs):
        _watch_connection(self)
        return super().getresponse(*args, **kwargs)


class _HTTPSConnection(urllib3.connection.HTTPSConnection):
    def getresponse(self, *args, **kwargs):
        _watch_connection(self)
        return super().getresponse(*args, **kwargs)


class HostGate:
    """Minimum delay between two requests to one host, across threads."""

    def __init__(self, clock=time.monotonic, sleep=time.sleep):
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}
        self.clock, self.sleep = clock, sleep

    def wait(self, host: str, delay_s: float) -> float:
        with self._lock:
            now = self.clock()
            at = max(now, self._next.get(host, 0.0))
            self._next[host] = at + delay_s
        wait = at - now
        if wait > 0:
            self.sleep(wait)
        return wait


class RobotsCache:
    def __init__(self, fetcher: Fetcher, ttl_s: float, clock=time.monotonic):
        self.fetcher, self.ttl_s, self.clock = fetcher, ttl_s, clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, urllib.robotparser.RobotFileParser | None, bool]] = {}

    def _origin(self, url: str) -> str:
        p = urlsplit(url)
        return f"{p.scheme}://{p.netloc.lower()}"

    def rules(self, url: str) -> tuple[urllib.robotparser.RobotFileParser | None, bool]:
        """(parser or None, disallow_all)."""
        origin = self._origin(url)
        now = self.clock()
        with self._lock:
            hit = self._cache.get(origin)
        if hit and hit[0] > now:
            return hit[1], hit[2]
        res = self.fetcher.fetch(origin + "/robots.txt", check_robots=False, max_bytes=512 * 1024)
        parser, disallow_all, ttl = None, False, self.ttl_s
        if res.error in ("blocked_address", "dns_error", "bad_scheme", "bad_url"):
            disallow_all, ttl = True, 300.0
        elif res.error or res.status >= 500:
            disallow_all, ttl = True, 300.0  # RFC 9309: unreachable -> assume complete disallow, retry soon
        elif res.status == 200:
            parser = urllib.robotparser.RobotFileParser()
            parser.parse(res.body.decode("utf-8", "replace").splitlines())
        # any other 4xx / 3xx loop: no restrictions
        with self._lock:
            self._cache[origin] = (now + ttl, parser, disallow_all)
        return parser, disallow_all

    def allowed(self, url: str, user_agent: str) -> bool:
        parser, disallow_all = self.rules(url)
        if disallow_all:
            return False
        return parser is None or parser.can_fetch(user_agent, url)

    def crawl_delay(self, url: str, user_agent: str) -> float:
        origin = self._origin(url)
        with self._lock:
            hit = self._cache.get(origin)
        if not hit or hit[1] is None:
            return 0.0
        try:
            return float(hit[1].crawl_delay(user_agent) or 0.0)
        except (TypeError, ValueError):
            return 0.0


class Fetcher:
    """Thread-safe. Create one per worker process (``setup()``), share it across threads."""

    def __init__(
        self, config: FetcherConfig | None = None, guard: AddressGuard | None = None, gate=None, clock=time.time
    ):
        self.config = config or FetcherConfig()
        self.guard = guard or AddressGuard()
        self.gate = gate or HostGate()
        self.clock = clock
        self.robots = RobotsCache(self, self.config.robots_ttl_s)
        self._pools: dict[tuple, urllib3.connectionpool.HTTPConnectionPool] = {}
        self._lock = threading.Lock()
        self.requests_sent = 0

    def close(self) -> None:
        with self._lock:
            for pool in self._pools.values():
                pool.close()
            self._pools.clear()

    def _pool(self, scheme: str, host: str, ip: str, port: int):
        key = (scheme, host, ip, port)
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                timeout = urllib3.Timeout(connect=self.config.connect_timeout_s, read=self.config.read_timeout_s)
                if scheme == "https":
                    pool = urllib3.HTTPSConnectionPool(
                        ip,
                        port,
                        maxsize=2,
                        block=False,
                        timeout=timeout,
                        retries=False,
                        server_hostname=host,
                        assert_hostname=host,
                        cert_reqs="CERT_REQUIRED",
                        ca_certs=self.config.ca_certs or certifi.where(),
                    )
                else:
                    pool = urllib3.HTTPConnectionPool(ip, port, maxsize=2, block=False, timeout=timeout, retries=False)
                # Our connection classes put each response's socket under the fetch's deadline (DeadlineWatchdog).
                pool.ConnectionCls = _HTTPSConnection if scheme == "https" else _HTTPConnection
                self._pools[key] = pool
            return pool

    def fetch(
        self,
        url: str,
        headers: dict | None = None,
        check_robots: bool = True,
        max_bytes: int | None = None,
        method: str = "GET",
        body: bytes | None = None,
    ) -> FetchResult:
        """Fetch ``url`` (following redirects) within ``total_timeout_s`` of wall-clock time. Never raises."""
        outer = getattr(_CURRENT, "deadline", None)  # a robots.txt fetch runs inside a page fetch's deadline
        deadline = time.monotonic() + self.config.total_timeout_s
        if outer is not None:
            deadline = min(deadline, outer)
        saved = (outer, getattr(_CURRENT, "entries", None))
        _CURRENT.deadline, _CURRENT.entries = deadline, []
        try:
            return self._fetch(url, headers, check_robots, max_bytes, method, body)
        finally:
            for entry in _CURRENT.entries:
                WATCHDOG.cancel(entry)
            _CURRENT.deadline, _CURRENT.entries = saved

    def _deadline_hit(self) -> bool:
        return any(e.fired for e in _CURRENT.entries) or time.monotonic() >= _CURRENT.deadline

    def _timeout(self, result: FetchResult) -> FetchResult:
        return self._fail(result, "timeout", f"total deadline of {self.config.total_timeout_s:g} s exceeded")

    def _fetch(self, url, headers, check_robots, max_bytes, method, body) -> FetchResult:
        """The redirect loop: each hop is connect (guard, robots, politeness), send, then read or redirect."""
        limit = max_bytes or self.config.max_bytes
        result = FetchResult(url=url, final_url=url, fetched_at_ms=int(self.clock() * 1000))
        current = url
        for hop in range(self.config.max_redirects + 1):
            result.final_url, result.redirects = current, hop
            if self._deadline_hit():
                return self._timeout(result)
            target = self._connect(result, current, check_robots)
            if isinstance(target, FetchResult):
                return target
            resp = self._send(result, target, method, body, headers)
            if isinstance(resp, FetchResult):
                return resp
            step = self._read(result, resp, limit, current, method, body)
            if isinstance(step, FetchResult):
                return step
            current, method, body = step  # a redirect: the next hop
        return self._fail(result, "too_many_redirects", f"more than {self.config.max_redirects}")

    def _connect(self, result: FetchResult, current: str, check_robots: bool):
        """``(parts, host, target)`` for a hop to ``current``: scheme and port checked, the address resolved through
        the guard, robots.txt obeyed, the host's politeness delay waited. A FetchResult when the hop fails."""
        if url_too_long(current):
            return self._fail(result, URL_TOO_LONG, url_excerpt(current))
        parts = urlsplit(current)
        if parts.scheme not in ("http", "https"):
            return self._fail(result, "bad_scheme", current[:300])
        host = parts.hostname or ""
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return self._fail(result, "bad_url", current)
        try:
            target = self.guard.resolve(host, port, timeout=max(0.0, _CURRENT.deadline - time.monotonic()))
        except BlockedAddress as exc:
            if exc.reason == "timeout":
                return self._timeout(result)
            return self._fail(result, exc.reason, exc.detail)
        if check_robots and self.config.respect_robots and not self.robots.allowed(current, self.config.user_agent):
            if self._deadline_hit():
                return self._timeout(result)
            return self._fail(result, "robots_disallowed", current)
        delay = self.config.min_host_delay_s
        if check_robots:
            delay = max(delay, min(30.0, self.robots.crawl_delay(current, self.config.user_agent)))
        waited = self.gate.wait(host, delay)
        if waited > 0:  # our own politeness, not the server's doing: it does not eat the deadline
            _CURRENT.deadline += waited
        return parts, host, target

    def _send(self, result: FetchResult, hop: tuple, method: str, body: bytes | None, headers: dict | None):
        """The response of one request to the guarded address (not yet read), within what is left of the deadline;
        a FetchResult when it fails."""
        parts, host, target = hop
        req_headers = {
            "User-Agent": self.config.user_agent,
            "Accept-Encoding": "identity",
            "Host": parts.netloc.split("@")[-1],
        }
        req_headers.update(headers or {})
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        left = _CURRENT.deadline - time.monotonic()
        if left <= 0:
            return self._timeout(result)
        timeout = urllib3.Timeout(
            connect=min(self.config.connect_timeout_s, left), read=min(self.config.read_timeout_s, left)
        )
        try:
            pool = self._pool(parts.scheme, host, target.ip, target.port)
            self.requests_sent += 1
            return pool.urlopen(
                method,
                path,
                body=body,
                headers=req_headers,
                redirect=False,
                retries=False,
                preload_content=False,
                assert_same_host=False,
                timeout=timeout,
            )
        except urllib3.exceptions.TimeoutError as exc:
            return self._timeout(result) if self._deadline_hit() else self._fail(result, "timeout", str(exc)[:200])
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if self._deadline_hit():
                return self._timeout(result)
            return self._fail(result, "connection_error", str(exc)[:200])

    def _read(self, result: FetchResult, resp, limit: int, current: str, method: str, body: bytes | None):
        """Reads ``resp`` within the size limit and the deadline: the filled ``result`` (or a failed one), or for a
        redirect ``(next url, method, body)``. A connection left in an unknown state is closed, never reused."""
        cut = False
        try:
            status = resp.status
            resp_headers = {k.lower(): v for k, v in resp.headers.items()}
            if status in REDIRECT_CODES and resp_headers.get("location"):
                cut = True  # never read a redirect's body: it could trickle too
                method, body = ("GET", None) if status in (301, 302, 303) else (method, body)
                return urljoin(current, resp_headers["location"]), method, body
            declared = resp_headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > limit:
                cut = True
                return self._fail(result, "too_large", f"content-length {declared} > {limit}")
            chunks, size = [], 0
            while True:
                if self._deadline_hit():
                    cut = True
                    return self._timeout(result)
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    cut = True
                    return self._fail(result, "too_large", f"body > {limit} bytes")
                chunks.append(chunk)
            if self._deadline_hit():  # the watchdog cut the body short: never return a truncated page
                cut = True
                return self._timeout(result)
        except urllib3.exceptions.TimeoutError as exc:
            cut = True
            return self._timeout(result) if self._deadline_hit() else self._fail(result, "timeout", str(exc)[:200])
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            cut = True
            if self._deadline_hit():
                return self._timeout(result)
            return self._fail(result, "connection_error", str(exc)[:200])
        finally:
            if cut:
                resp.close()  # the connection is in an unknown state (or shut down): do not reuse it
            resp.release_conn()
        result.status = status
        result.headers = resp_headers
        result.body = b"".join(chunks)
        result.fetched_at_ms = int(self.clock() * 1000)
        return result

    @staticmethod
    def _fail(result: FetchResult, reason: str, detail: str) -> FetchResult:
        result.error, result.detail = reason, detail
        return result
