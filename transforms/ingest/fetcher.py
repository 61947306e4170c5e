"""The polite, guarded HTTP fetcher used for feeds, robots.txt, WebSub subscriptions and article pages.

Reads URLs; writes :class:`FetchResult` (status, final URL, lower-cased headers, body bytes, or an error reason).
Never raises for network or policy failures: the reason code (``blocked_address``, ``dns_error``,
``robots_disallowed``, ``too_large``, ``timeout``, ``connection_error``, ``too_many_redirects``, ``bad_scheme``)
goes to the caller, which dead-letters it.

- Address guard (:mod:`transforms.ingest.guard`) on the first URL and on every redirect hop; the connection goes to
  the vetted IP (urllib3 pool on the IP, Host header and TLS SNI / certificate check on the name).
- One connection pool per (scheme, host, port, address); a minimum delay between two requests to the same host
  (the larger of ``min_host_delay_s`` and the site's robots.txt Crawl-delay, capped at 30 s) shared by every
  thread of the process. Across workers, the ingest job keys page fetches by host so that one worker owns a host.
- Timeouts: connect and per-read timeouts plus a total deadline; body limit (default 5 MiB): a larger body is
  refused, not truncated (a cut article would be a wrong article).
- Redirects followed by hand, at most ``max_redirects`` (default 5), only to http/https.
- robots.txt (urllib.robotparser) checked for pages, cached per origin for ``robots_ttl_s`` (default 1 h). Per
  RFC 9309: 4xx means no restrictions, 5xx or unreachable means disallow everything (retried after 5 min).
- Retry policy: the fetcher does not retry; callers retry transient failures (timeouts, 5xx) a bounded number of
  times and dead-letter the rest.
"""

from __future__ import annotations

import threading
import time
import urllib.robotparser
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import certifi
import urllib3

from transforms.ingest.guard import AddressGuard, BlockedAddress

DEFAULT_USER_AGENT = "NewsroomBot/0.1 (+https://github.com/newsroom/newsroom; news aggregator; polite crawler)"
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
    def __init__(self, fetcher: "Fetcher", ttl_s: float, clock=time.monotonic):
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
        limit = max_bytes or self.config.max_bytes
        result = FetchResult(url=url, final_url=url, fetched_at_ms=int(self.clock() * 1000))
        current = url
        deadline = time.monotonic() + self.config.total_timeout_s
        for hop in range(self.config.max_redirects + 1):
            result.final_url, result.redirects = current, hop
            parts = urlsplit(current)
            if parts.scheme not in ("http", "https"):
                return self._fail(result, "bad_scheme", current)
            host = parts.hostname or ""
            try:
                port = parts.port or (443 if parts.scheme == "https" else 80)
            except ValueError:
                return self._fail(result, "bad_url", current)
            try:
                target = self.guard.resolve(host, port)
            except BlockedAddress as exc:
                return self._fail(result, exc.reason, exc.detail)
            if check_robots and self.config.respect_robots and not self.robots.allowed(current, self.config.user_agent):
                return self._fail(result, "robots_disallowed", current)
            delay = self.config.min_host_delay_s
            if check_robots:
                delay = max(delay, min(30.0, self.robots.crawl_delay(current, self.config.user_agent)))
            self.gate.wait(host, delay)
            req_headers = {
                "User-Agent": self.config.user_agent,
                "Accept-Encoding": "identity",
                "Host": parts.netloc.split("@")[-1],
            }
            req_headers.update(headers or {})
            path = parts.path or "/"
            if parts.query:
                path += "?" + parts.query
            try:
                pool = self._pool(parts.scheme, host, target.ip, target.port)
                self.requests_sent += 1
                resp = pool.urlopen(
                    method,
                    path,
                    body=body,
                    headers=req_headers,
                    redirect=False,
                    retries=False,
                    preload_content=False,
                    assert_same_host=False,
                )
            except urllib3.exceptions.TimeoutError as exc:
                return self._fail(result, "timeout", str(exc)[:200])
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                return self._fail(result, "connection_error", str(exc)[:200])
            try:
                status = resp.status
                resp_headers = {k.lower(): v for k, v in resp.headers.items()}
                if status in REDIRECT_CODES and resp_headers.get("location"):
                    resp.drain_conn()
                    current = urljoin(current, resp_headers["location"])
                    method, body = ("GET", None) if status in (301, 302, 303) else (method, body)
                    continue
                declared = resp_headers.get("content-length")
                if declared and declared.isdigit() and int(declared) > limit:
                    return self._fail(result, "too_large", f"content-length {declared} > {limit}")
                chunks, size = [], 0
                while True:
                    if time.monotonic() > deadline:
                        return self._fail(result, "timeout", "total deadline exceeded")
                    chunk = resp.read(65536)
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > limit:
                        return self._fail(result, "too_large", f"body > {limit} bytes")
                    chunks.append(chunk)
            except urllib3.exceptions.TimeoutError as exc:
                return self._fail(result, "timeout", str(exc)[:200])
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                return self._fail(result, "connection_error", str(exc)[:200])
            finally:
                resp.release_conn()
            result.status = status
            result.headers = resp_headers
            result.body = b"".join(chunks)
            result.fetched_at_ms = int(self.clock() * 1000)
            return result
        return self._fail(result, "too_many_redirects", f"more than {self.config.max_redirects}")

    @staticmethod
    def _fail(result: FetchResult, reason: str, detail: str) -> FetchResult:
        result.error, result.detail = reason, detail
        return result
