"""The local publisher world: every sample publisher's site on one threaded HTTP server on 127.0.0.1.

Reads devtools/world/content.py (articles) and transforms/data/publishers.json (publishers and their feeds);
serves, by virtual host (the Host header: ``dailyherald.test`` ...), on one port:

- article pages ``/news/{id}`` (rel=canonical, Open Graph, JSON-LD NewsArticle with datePublished, dateModified,
  author, articleSection; the publishers of content.PAYWALLED state ``isAccessibleForFree`` false), AMP copies ``/amp/news/{id}``, redirect wrappers ``/go/{id}`` (301), members pages
  ``/members/{id}`` (disallowed by robots.txt), ``/robots.txt``, a home page;
- the feeds of publishers.json: RSS 2.0, Atom 1.0 and news sitemaps, the newest 30 released items each;
- real conditional GET: strong ETags (hash of the bytes), Last-Modified (newest release), If-None-Match before
  If-Modified-Since, 304 with no body; special feeds: ``contentfarm.test/feed.xml`` gets a new ETag on every
  request (same items), ``northernecho.test/feeds/sport.xml`` is broken XML;
- a WebSub hub on ``wirepress.test/websub/hub`` (subscribe with intent verification, then signed POST deliveries
  of the topic feed to each subscriber's callback when new items are released);
- optional publisher pings: for publishers given a key, a signed POST to ``ping_url`` when they release items.

A clock releases articles over time: virtual time runs ``speed`` times faster than the wall clock from ``start``;
an article with ``at`` = t virtual seconds is public from ``start + t / speed`` (wall) on, and its stated
publication time is that instant. The server only ever sends traffic to loopback callbacks (hub deliveries, pings).

Given a ``seed``, the world never runs dry: after the scripted articles it releases generated events, follow-ups
and corrections for as long as it runs (devtools/world/generated.py, a function of the seed). Given a
``state_path`` (``newsroom run``: ``{data_dir}/world.json``), its start time, speed and seed are kept there and a
restarted world resumes that clock instead of starting a new one: every item it had released keeps its dates, so
the feeds list the same items with the same fingerprints and the ingest job fetches none of them again (a new
clock re-dated every item, which ingest rightly took for corrections and fetched again). A restarted world given
another speed goes on at that pace from its restart (the change is kept there too; everything released before keeps
its dates): ``newsroom run --speed 0.001`` on a data directory all but stops its world.

API for the main job and tests::

    world = start_world(speed=10.0)          # started, on a free port
    world = start_world(speed=10.0, seed=1, state_path="world.json")  # endless news, resumable clock
    world.base_url                           # "http://127.0.0.1:PORT"
    world.host_overrides                     # {"dailyherald.test": "127.0.0.1:PORT", ...} for the fetcher
    world.feeds()                            # feed registry entries [{url, publisher_id, tier, kind}]
    world.release_times()                    # {article url: released at (ms)} of what is public so far
    world.stop()
"""

from __future__ import annotations

import email.utils
import hashlib
import html
import ipaddress
import json
import logging
import threading
import time
import urllib.parse
import urllib.request
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from devtools.world import demo, generated
from devtools.world.content import ARTICLES, OLD_SITEMAP_ENTRY, PAYWALLED
from devtools.world.demo import IMAGE_H, IMAGE_W, article_image, image_url
from transforms.ingest import websub
from transforms.publishers import PublisherRegistry

log = logging.getLogger(__name__)

FEED_ITEMS = 30
HUB_PATH = "/websub/hub"
ETAG_CHURN_FEEDS = {"http://contentfarm.test/feed.xml"}
BROKEN_FEEDS = {"http://northernecho.test/feeds/sport.xml"}
HUB_FEEDS = {"http://wirepress.test/feeds/world.xml": "http://wirepress.test" + HUB_PATH}
TRACKING = "utm_source=rss&utm_medium=feed&utm_campaign=newsroom"


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _http_date(ms: int) -> str:
    return email.utils.formatdate(ms / 1000, usegmt=True)


def _rfc822(ms: int) -> str:
    return email.utils.formatdate(ms / 1000, usegmt=True)


def _esc(text: str) -> str:
    return html.escape(text or "", quote=True)


class WorldClock:
    """Virtual time from wall time: ``speed`` times faster than the wall clock from ``start_s``, then at each of
    ``changes`` (``[wall s, virtual s, speed]``, in order: a resumed world given another speed) at that pace from
    that instant. Piecewise, so a change of pace keeps the date of everything released before it."""

    def __init__(self, start_s: float | None = None, speed: float = 10.0, changes=()):
        self.start_s = time.time() if start_s is None else start_s
        self.pieces = [(float(self.start_s), 0.0, float(speed))] + [
            (float(w), float(v), float(s)) for w, v, s in changes
        ]
        self.speed = self.pieces[-1][2]  # the pace now

    def release_ms(self, at_virtual_s: float) -> int:
        wall, virtual, speed = self.pieces[0]
        for piece in self.pieces[1:]:
            if piece[1] > at_virtual_s:
                break
            wall, virtual, speed = piece
        return int((wall + (at_virtual_s - virtual) / speed) * 1000)

    def virtual_s(self, wall_s: float) -> float:
        wall, virtual, speed = self.pieces[0]
        for piece in self.pieces[1:]:
            if piece[0] > wall_s:
                break
            wall, virtual, speed = piece
        return virtual + (wall_s - wall) * speed

    def now_ms(self) -> int:
        return int(time.time() * 1000)


class SampleWorld:
    def __init__(
        self,
        speed: float = 10.0,
        start_s: float | None = None,
        ping_url: str | None = None,
        ping_keys: dict | None = None,
        registry: PublisherRegistry | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        articles: list[dict] | None = None,
        seed: int | None = None,
        changes=(),
    ):
        if ipaddress.ip_address(host).is_loopback is False:
            raise ValueError("the sample world only listens on loopback")
        self.clock = WorldClock(start_s, speed, changes)
        self.registry = registry or PublisherRegistry.load()
        self.ping_url, self.ping_keys = ping_url, dict(ping_keys or {})
        self.articles = self._prepare(articles or ARTICLES)
        # generated news (None: the scripted articles only); the dict is replaced whole when it grows, so readers
        # iterating the previous one are never disturbed
        self.seed = seed
        self._generated_until = -1.0  # virtual s: events starting up to here are in self.articles (they start >= 0)
        self._gen_lock = threading.Lock()
        self.by_host = {}
        for p in self.registry:
            for h in p.hosts:
                self.by_host[h] = p
        self._lock = threading.Lock()
        self.requests: list[dict] = []  # {host, path, method, status, at}
        self.subscribers: dict[str, dict] = {}  # (topic|callback) -> {topic, callback, secret, lease_until}
        self.deliveries: list[dict] = []
        self.pings_sent: list[dict] = []
        self._announced: set = set()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://{host}:{self.port}"
        self._threads: list[threading.Thread] = []

    # -- content ----------------------------------------------------------------------------------------------
    def _prepare(self, articles: list[dict]) -> dict:
        by_id = {a["id"]: dict(a) for a in articles}
        for a in by_id.values():
            if a.get("copy_of"):
                src = by_id[a["copy_of"]]
                a.setdefault("headline", src["headline"])
                a.setdefault("paras", list(src["paras"]))
                a.setdefault("credit", self.registry.get(src["pub"]).name if self.registry.get(src["pub"]) else "")
            pub = self.registry.get(a["pub"])
            if pub is None:
                raise ValueError(f"article {a['id']}: unknown publisher {a['pub']}")
            a["host"] = pub.hosts[0]
            base = f"http://{a['host']}"
            a["url"] = f"{base}/members/{a['id']}" if a.get("members") else f"{base}/news/{a['id']}"
        return by_id

    def _extend(self, now_ms: int | None = None) -> None:
        """Add the generated events that start before ``now`` (+ a minute of virtual time)."""
        if self.seed is None:
            return
        now_ms = self.clock.now_ms() if now_ms is None else now_ms
        until = self.clock.virtual_s(now_ms / 1000) + 60
        if until <= self._generated_until:
            return
        with self._gen_lock:
            if until <= self._generated_until:
                return
            new = generated.articles_between(self.seed, self._generated_until, until)
            if new:
                self.articles = {**self.articles, **self._prepare(new)}
            self._generated_until = until

    def released_ms(self, a: dict) -> int:
        return self.clock.release_ms(a["at"])

    def is_public(self, a: dict, now_ms: int) -> bool:
        return self.released_ms(a) <= now_ms

    def headline(self, a: dict, now_ms: int) -> tuple[str, int]:
        """(headline, modified ms) at ``now_ms`` (after a correction the corrected one)."""
        c = a.get("correction")
        if c and self.clock.release_ms(c["at"]) <= now_ms:
            return c["headline"], self.clock.release_ms(c["at"])
        return a["headline"], self.released_ms(a)

    def feed_link(self, a: dict) -> str:
        base = f"http://{a['host']}"
        if a.get("amp"):
            return f"{base}/amp/news/{a['id']}"
        if a.get("redirect"):
            return f"{base}/go/{a['id']}"
        link = a["url"]
        if a.get("tracking"):
            link += "?" + TRACKING
        return link

    def public_items(self, publisher_id: str, now_ms: int) -> list[dict]:
        self._extend(now_ms)
        items = [a for a in self.articles.values() if a["pub"] == publisher_id and self.is_public(a, now_ms)]
        items.sort(key=lambda a: (self.released_ms(a), a["id"]), reverse=True)
        return items[:FEED_ITEMS]

    def feeds(self) -> list[dict]:
        out = []
        for p in self.registry:
            for f in p.feeds:
                out.append({"url": f["url"], "publisher_id": p.publisher_id, "tier": p.tier, "kind": f["kind"]})
        return out

    @property
    def host_overrides(self) -> dict:
        return dict.fromkeys(self.by_host, f"127.0.0.1:{self.port}")

    def release_times(self, now_ms: int | None = None) -> dict:
        now_ms = self.clock.now_ms() if now_ms is None else now_ms
        self._extend(now_ms)
        return {a["url"]: self.released_ms(a) for a in self.articles.values() if self.is_public(a, now_ms)}

    def virtual_now_s(self) -> float:
        return self.clock.virtual_s(time.time())

    def release_now(self, article_id: str) -> dict:
        """Make an article public now (tests). Its stated publication time becomes now."""
        a = self.articles[article_id]
        a["at"] = self.virtual_now_s() - 0.001
        return a

    def correct_now(self, article_id: str, headline: str) -> dict:
        """Correct an article's headline now (tests)."""
        a = self.articles[article_id]
        a["correction"] = {"at": self.virtual_now_s() - 0.001, "headline": headline}
        return a

    def article_by_url(self, url: str) -> dict | None:
        path = urllib.parse.urlsplit(url).path.rstrip("/")
        slug = path.rsplit("/", 1)[-1]
        self._extend()
        return self.articles.get(slug)

    # -- rendering -----------------------------------------------------------------------------------------------
    def render_feed(self, feed: dict, pub, now_ms: int) -> tuple[bytes, str, int]:
        """(body, content type, last-modified ms)."""
        items = self.public_items(pub.publisher_id, now_ms)
        last = max([self.headline(a, now_ms)[1] for a in items], default=self.clock.release_ms(-86400))
        url, kind = feed["url"], feed["kind"]
        if url in BROKEN_FEEDS:
            return (
                b'<?xml version="1.0"?><rss version="2.0"><channel><title>Sport</title><item><title>Unclosed',
                ("application/rss+xml"),
                last,
            )
        host = pub.hosts[0]
        if kind == "atom":
            entries = []
            for a in items:
                title, mod = self.headline(a, now_ms)
                entries.append(
                    f"<entry><id>tag:{host},2026:{a['id']}</id><title>{_esc(title)}</title>"
                    f'<link rel="alternate" href="{_esc(self.feed_link(a))}"/>'
                    f"<published>{_iso(self.released_ms(a))}</published><updated>{_iso(mod)}</updated>"
                    f"<author><name>{_esc(a['author'])}</name></author>"
                    f'<category term="{_esc(a["section"])}"/><summary>{_esc(a["paras"][0])}</summary></entry>'
                )
            body = (
                f'<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" '
                f'xml:lang="{pub.language}"><id>{_esc(url)}</id><title>{_esc(pub.name)}</title>'
                f'<link rel="self" href="{_esc(url)}"/><link rel="alternate" href="http://{host}/"/>'
                f"<updated>{_iso(last)}</updated>{''.join(entries)}</feed>\n"
            )
            return body.encode("utf-8"), "application/atom+xml; charset=utf-8", last
        if kind == "sitemap":
            urls = []
            for a in items:
                title, _ = self.headline(a, now_ms)
                urls.append(self._sitemap_url(pub, a["url"], title, self.released_ms(a)))
            old_ms = int(self.clock.start_s * 1000) - OLD_SITEMAP_ENTRY["days_ago"] * 86400_000
            urls.append(
                self._sitemap_url(pub, f"http://{host}{OLD_SITEMAP_ENTRY['path']}", OLD_SITEMAP_ENTRY["title"], old_ms)
            )
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
                'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">' + "".join(urls) + "</urlset>\n"
            )
            return body.encode("utf-8"), "application/xml; charset=utf-8", last
        hub = HUB_FEEDS.get(url)
        hub_link = f'<atom:link rel="hub" href="{_esc(hub)}"/>' if hub else ""
        rss_items = []
        for a in items:
            title, mod = self.headline(a, now_ms)
            rss_items.append(
                f"<item><title>{_esc(title)}</title><link>{_esc(self.feed_link(a))}</link>"
                f'<guid isPermaLink="false">{a["pub"]}-{a["id"]}</guid>'
                f"<pubDate>{_rfc822(self.released_ms(a))}</pubDate>"
                + (f"<atom:updated>{_iso(mod)}</atom:updated>" if mod != self.released_ms(a) else "")
                + f"<dc:creator>{_esc(a['author'])}</dc:creator><category>{_esc(a['section'])}</category>"
                f"<description>{_esc(a['paras'][0])}</description></item>"
            )
        build = _rfc822(last)
        body = (
            '<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" '
            'xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>'
            f"<title>{_esc(pub.name)}</title><link>http://{host}/</link>"
            f"<description>{_esc(pub.name)} news</description>"
            f"<language>{pub.language}</language><lastBuildDate>{build}</lastBuildDate>"
            f'<atom:link rel="self" href="{_esc(url)}"/>{hub_link}{"".join(rss_items)}</channel></rss>\n'
        )
        return body.encode("utf-8"), "application/rss+xml; charset=utf-8", last

    @staticmethod
    def _sitemap_url(pub, loc: str, title: str, ms: int) -> str:
        return (
            f"<url><loc>{_esc(loc)}</loc><news:news><news:publication><news:name>{_esc(pub.name)}</news:name>"
            f"<news:language>{pub.language}</news:language></news:publication>"
            f"<news:publication_date>{_iso(ms)}</news:publication_date><news:title>{_esc(title)}</news:title>"
            f"</news:news></url>"
        )

    def render_article(self, a: dict, now_ms: int, amp: bool = False) -> bytes:
        pub = self.registry.get(a["pub"])
        title, modified = self.headline(a, now_ms)
        published = self.released_ms(a)
        if a.get("future_days"):
            published += a["future_days"] * 86400_000
            modified = max(modified, published)
        ld = {
            "@context": "https://schema.org",
            "@type": "NewsArticle",
            "headline": title,
            "datePublished": _iso(published),
            "dateModified": _iso(modified),
            "author": [{"@type": "Person", "name": a["author"]}],
            "articleSection": a["section"],
            "inLanguage": a["lang"],
            "mainEntityOfPage": a["url"],
            "publisher": {"@type": "Organization", "name": pub.name},
            "description": a["paras"][0],
        }
        paid = a["pub"] in PAYWALLED
        if paid:
            ld["isAccessibleForFree"] = False
            ld["hasPart"] = {"@type": "WebPageElement", "isAccessibleForFree": False, "cssSelector": ".paywall"}
        credit = f'<p class="credit">By {_esc(a["author"])} ({_esc(a["credit"])})</p>' if a.get("credit") else ""
        paras = [f"<p>{_esc(p)}</p>" for p in a["paras"]]
        if paid:  # metered: the text is in the page, the part after the lede marked as the markup's .paywall
            paras = [paras[0], '<div class="paywall">', *paras[1:], "</div>"]
        paras = "".join(paras)
        others = [o for o in self.public_items(a["pub"], now_ms) if o["id"] != a["id"]][:4]
        related = "".join(
            f'<li><a href="{_esc(o["url"])}">{_esc(self.headline(o, now_ms)[0])}</a></li>' for o in others
        )
        html_tag = f'<html lang="{a["lang"]}" amp>' if amp else f'<html lang="{a["lang"]}">'
        doc = f"""<!doctype html>
{html_tag}
<head>
<meta charset="utf-8">
<title>{_esc(title)} | {_esc(pub.name)}</title>
<link rel="canonical" href="{_esc(a["url"])}">
{"" if amp else f'<link rel="amphtml" href="http://{a["host"]}/amp/news/{a["id"]}">' if a.get("amp") else ""}
<meta name="description" content="{_esc(a["paras"][0])}">
<meta property="og:type" content="article">
<meta property="og:title" content="{_esc(title)}">
<meta property="og:url" content="{_esc(a["url"])}">
<meta property="og:site_name" content="{_esc(pub.name)}">
<meta property="og:description" content="{_esc(a["paras"][0])}">
<meta property="og:locale" content="{a["lang"]}">
<meta property="og:image" content="{_esc(image_url(a))}">
<meta property="og:image:width" content="{IMAGE_W}">
<meta property="og:image:height" content="{IMAGE_H}">
<meta property="article:published_time" content="{_iso(published)}">
<meta property="article:modified_time" content="{_iso(modified)}">
<meta property="article:section" content="{_esc(a["section"])}">
<meta name="author" content="{_esc(a["author"])}">
<script type="application/ld+json">{json.dumps(ld, ensure_ascii=False)}</script>
</head>
<body>
<header><nav><a href="/">{_esc(pub.name)}</a> | <a href="/">Home</a> |
<a href="/">{_esc(a["section"].title())}</a></nav></header>
<main>
<article>
<h1>{_esc(title)}</h1>
<img src="{_esc(image_url(a))}" alt="{_esc(title)}" width="{IMAGE_W}" height="{IMAGE_H}">
<p class="byline">By <span class="author">{_esc(a["author"])}</span>,
<time datetime="{_iso(published)}">{_iso(published)}</time></p>
{credit}
{paras}
</article>
<aside><h2>More from {_esc(pub.name)}</h2><ul>{related}</ul></aside>
</main>
<footer><p>&copy; {_esc(pub.name)}. All rights reserved. <a href="/">Contact</a> | <a href="/">Privacy</a></p></footer>
</body>
</html>
"""
        return doc.encode("utf-8")

    # -- HTTP -------------------------------------------------------------------------------------------------
    def _handler_class(self):
        world = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "SampleWorld/1.0"

            def log_message(self, fmt, *args):  # quiet
                pass

            def do_GET(self):
                world._handle(self, "GET")

            def do_HEAD(self):
                world._handle(self, "HEAD")

            def do_POST(self):
                world._handle(self, "POST")

        return Handler

    def _record(self, host, path, method, status, headers=None):
        with self._lock:
            self.requests.append(
                {
                    "host": host,
                    "path": path,
                    "method": method,
                    "status": status,
                    "at": time.time(),
                    "user_agent": (headers or {}).get("User-Agent", ""),
                }
            )

    def requests_for(self, host: str | None = None, path: str | None = None, method: str = "GET") -> list[dict]:
        with self._lock:
            return [
                r
                for r in self.requests
                if (host is None or r["host"] == host) and (path is None or r["path"] == path) and r["method"] == method
            ]

    def _send(
        self, h, status: int, body: bytes = b"", ctype: str = "text/plain; charset=utf-8", headers=None, method="GET"
    ):
        # Logged before the response leaves, so a client that got it always finds it in the log.
        self._record(
            (h.headers.get("Host") or "").split(":")[0].lower(),
            urllib.parse.urlsplit(h.path).path,
            h.command,
            status,
            h.headers,
        )
        if getattr(h, "world_host", None):  # served by path (demo.py): links stay on this server
            if ctype.startswith("text/html"):
                body = demo.rewrite_body(body, h.world_host)
            if "Location" in (headers or {}):
                headers = {**headers, "Location": demo.path_form(headers["Location"]) or headers["Location"]}
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        if status == 304:
            h.end_headers()  # no body, no Content-Length
            return
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if method != "HEAD" and body:
            h.wfile.write(body)

    @staticmethod
    def _not_modified(h, etag: str | None, last_ms: int | None) -> bool:
        inm = h.headers.get("If-None-Match")
        if inm is not None:
            if etag is None:
                return False
            tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
            return "*" in tags or etag.removeprefix("W/") in tags
        ims = h.headers.get("If-Modified-Since")
        if ims and last_ms is not None:
            try:
                since = email.utils.parsedate_to_datetime(ims).timestamp()
            except (TypeError, ValueError):
                return False
            return int(last_ms / 1000) <= int(since)
        return False

    def _conditional(self, h, method, body: bytes, ctype: str, last_ms: int | None, etag: str | None = None):
        etag = etag or '"' + hashlib.sha1(body).hexdigest()[:20] + '"'
        headers = {"ETag": etag, "Cache-Control": "max-age=0"}
        if last_ms is not None:
            headers["Last-Modified"] = _http_date(last_ms)
        if self._not_modified(h, etag, last_ms):
            self._send(h, 304, headers=headers, method=method)
            return 304
        self._send(h, 200, body, ctype, headers, method)
        return 200

    def _handle(self, h, method: str):
        host = (h.headers.get("Host") or "").split(":")[0].lower()
        parts = urllib.parse.urlsplit(h.path)
        path = parts.path
        try:
            self._route(h, method, host, path, parts.query)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception:  # pragma: no cover - a bug in the world must show up, not kill the server
            log.exception("sample world error on %s%s", host, path)
            try:
                self._send(h, 500, b"internal error")
            except OSError:
                pass

    def _route(self, h, method, host, path, query) -> int:
        now = self.clock.now_ms()
        self._extend(now)
        pub = self.by_host.get(host)
        if pub is None and method != "POST":
            return self._demo_route(h, method, path, query)
        if pub is None:
            self._send(h, 404, b"unknown host", method=method)
            return 404
        if method == "POST":
            if path == HUB_PATH and any(v.startswith(f"http://{host}/") for v in HUB_FEEDS.values()):
                return self._hub_request(h)
            self._send(h, 405, b"method not allowed")
            return 405
        url = f"http://{host}{path}"
        if path == "/robots.txt":
            body = b"User-agent: *\nAllow: /\n"
            if host == "springfieldgazette.test":
                body = b"User-agent: *\nDisallow: /members/\n"
            self._send(h, 200, body, method=method)
            return 200
        for f in pub.feeds:
            if f["url"] == url:
                body, ctype, last = self.render_feed(f, pub, now)
                if url in ETAG_CHURN_FEEDS:
                    return self._conditional(h, method, body, ctype, None, etag=f'"{uuid.uuid4().hex}"')
                headers_link = HUB_FEEDS.get(url)
                if headers_link:
                    h_extra = {"Link": f'<{headers_link}>; rel="hub", <{url}>; rel="self"'}
                    etag = '"' + hashlib.sha1(body).hexdigest()[:20] + '"'
                    headers = {"ETag": etag, "Last-Modified": _http_date(last), **h_extra}
                    if self._not_modified(h, etag, last):
                        self._send(h, 304, headers=headers, method=method)
                        return 304
                    self._send(h, 200, body, ctype, headers, method)
                    return 200
                return self._conditional(h, method, body, ctype, last)
        segs = [s for s in path.split("/") if s]
        if len(segs) == 2 and segs[0] == "img" and segs[1].endswith(".svg"):
            a = self.articles.get(segs[1][:-4])
            if a is not None and a["host"] == host and self.is_public(a, now):
                body = article_image(a, self.headline(a, now)[0], pub.name)
                return self._conditional(h, method, body, "image/svg+xml", self.headline(a, now)[1])
            self._send(h, 404, b"not found", method=method)
            return 404
        if len(segs) == 2 and segs[0] in ("news", "members", "go"):
            a = self.articles.get(segs[1])
        elif len(segs) == 3 and segs[:2] == ["amp", "news"]:
            a = self.articles.get(segs[2])
        else:
            a = None
        if a is not None and a["host"] == host and self.is_public(a, now):
            if segs[0] == "go":
                self._send(h, 301, b"", headers={"Location": a["url"]}, method=method)
                return 301
            if (segs[0] == "members") != bool(a.get("members")):
                self._send(h, 404, b"not found", method=method)
                return 404
            body = self.render_article(a, now, amp=segs[0] == "amp")
            return self._conditional(h, method, body, "text/html; charset=utf-8", self.headline(a, now)[1])
        if path == "/":
            items = self.public_items(pub.publisher_id, now)
            links = "".join(f'<li><a href="{_esc(x["url"])}">{_esc(self.headline(x, now)[0])}</a></li>' for x in items)
            name = _esc(pub.name)
            head = f"<!doctype html><html><head><title>{name}</title></head>"
            # Section-front furniture (a front-page feed must drop it): navigation, a tag page, an author page,
            # another site's article.
            nav = (
                '<nav><a href="/">Home</a> <a href="/world">World</a> <a href="/sport/">Sport</a> '
                '<a href="/tag/elections">Elections</a> <a href="/author/jane-doe">Jane Doe</a> '
                '<a href="/about-us">About us</a> <a href="http://elsewhere.test/news/other-site-big-story">x</a></nav>'
            )
            body = f"{head}<body>{nav}<h1>{name}</h1><ul>{links}</ul></body></html>"
            last = max((self.headline(x, now)[1] for x in items), default=None)
            return self._conditional(h, method, body.encode("utf-8"), "text/html; charset=utf-8", last)
        self._send(h, 404, b"not found", method=method)
        return 404

    def _demo_route(self, h, method, path, query) -> int:
        """A request on the world's own address (no publisher's host): the index of the publishers, or a site by
        path, ``/world/{host}/{path}`` (demo.py), for a reader's browser."""
        if path == "/":
            return self._conditional(h, method, demo.index_page(self.registry), "text/html; charset=utf-8", None)
        target = demo.split_path(path)
        if target is None or target[0] not in self.by_host:
            self._send(h, 404, b"unknown host", method=method)
            return 404
        h.world_host = target[0]
        return self._route(h, method, target[0], target[1], query)

    # -- WebSub hub ---------------------------------------------------------------------------------------------
    def _hub_request(self, h) -> int:
        length = int(h.headers.get("Content-Length") or 0)
        form = urllib.parse.parse_qs(h.rfile.read(min(length, 65536)).decode("utf-8", "replace"))
        mode = (form.get("hub.mode") or [""])[0]
        topic = (form.get("hub.topic") or [""])[0]
        callback = (form.get("hub.callback") or [""])[0]
        secret = (form.get("hub.secret") or [None])[0]
        lease = int((form.get("hub.lease_seconds") or [str(websub.DEFAULT_LEASE_S)])[0])
        if mode not in ("subscribe", "unsubscribe") or topic not in HUB_FEEDS or not _loopback_url(callback):
            self._send(h, 400, b"bad subscription request")
            return 400
        self._send(h, 202, b"accepted")
        t = threading.Thread(target=self._verify_intent, args=(mode, topic, callback, secret, lease), daemon=True)
        t.start()
        return 202

    def _verify_intent(self, mode, topic, callback, secret, lease):
        challenge = uuid.uuid4().hex
        q = urllib.parse.urlencode(
            {"hub.mode": mode, "hub.topic": topic, "hub.challenge": challenge, "hub.lease_seconds": lease}
        )
        sep = "&" if "?" in callback else "?"
        try:
            with urllib.request.urlopen(callback + sep + q, timeout=5) as resp:
                ok = 200 <= resp.status < 300 and resp.read(1024).decode("utf-8", "replace") == challenge
        except OSError:
            ok = False
        key = f"{topic}|{callback}"
        with self._lock:
            if ok and mode == "subscribe":
                self.subscribers[key] = {
                    "topic": topic,
                    "callback": callback,
                    "secret": secret,
                    "lease_until": time.time() + lease,
                    "verified_at": time.time(),
                }
            elif ok and mode == "unsubscribe":
                self.subscribers.pop(key, None)

    def _deliver(self, topic: str):
        pub = self.by_host[urllib.parse.urlsplit(topic).hostname]
        feed = next(f for f in pub.feeds if f["url"] == topic)
        body, ctype, _ = self.render_feed(feed, pub, self.clock.now_ms())
        with self._lock:
            subs = [s for s in self.subscribers.values() if s["topic"] == topic and s["lease_until"] > time.time()]
        for s in subs:
            headers = {"Content-Type": ctype, "Link": f'<{HUB_FEEDS[topic]}>; rel="hub", <{topic}>; rel="self"'}
            if s["secret"]:
                headers[websub.SIGNATURE_HEADER] = websub.sign(s["secret"], body)
            req = urllib.request.Request(s["callback"], data=body, headers=headers, method="POST")
            status = _post_status(req)
            with self._lock:
                self.deliveries.append({"topic": topic, "callback": s["callback"], "status": status, "at": time.time()})

    def _ping(self, pub, feed_url: str):
        key = self.ping_keys.get(pub.publisher_id)
        if not key or not self.ping_url or not _loopback_url(self.ping_url):
            return
        body = json.dumps({"feed_url": feed_url, "publisher_id": pub.publisher_id, "at": self.clock.now_ms()}).encode()
        req = urllib.request.Request(
            self.ping_url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                websub.PING_PUBLISHER_HEADER: pub.publisher_id,
                websub.PING_SIGNATURE_HEADER: websub.sign(key, body),
            },
        )
        status = _post_status(req)
        with self._lock:
            self.pings_sent.append(
                {"publisher_id": pub.publisher_id, "feed_url": feed_url, "status": status, "at": time.time()}
            )

    def _announcer(self):
        """Pushes (WebSub) and pings when a publisher releases items."""
        while not self._stop.is_set():
            now = self.clock.now_ms()
            self._extend(now)
            fresh = [a for a in self.articles.values() if self.is_public(a, now) and a["id"] not in self._announced]
            pubs = set()
            for a in fresh:
                self._announced.add(a["id"])
                pubs.add(a["pub"])
            for pid in sorted(pubs):
                pub = self.registry.get(pid)
                for f in pub.feeds:
                    if f["url"] in HUB_FEEDS:
                        self._deliver(f["url"])
                    self._ping(pub, f["url"])
            self._stop.wait(0.1)

    # -- lifecycle -------------------------------------------------------------------------------------------------
    def start(self) -> SampleWorld:
        # What is public at start is not announced (it was announced before we were watching).
        now = self.clock.now_ms()
        self._extend(now)
        self._announced = {a["id"] for a in self.articles.values() if self.is_public(a, now)}
        for target in (self._server.serve_forever, self._announcer):
            t = threading.Thread(target=target, daemon=True, name=f"world-{target.__name__}")
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _post_status(req) -> int:
    """The HTTP status a WebSub delivery or a ping got (0: no answer): the world records it, never raises."""
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def _loopback_url(url: str) -> bool:
    try:
        host = urllib.parse.urlsplit(url).hostname or ""
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# Publishers of the sample world that ping the origin (POST /v1/ping) when they publish; the others are polled
# (and wirepress pushes through its WebSub hub).
PING_PUBLISHERS = ("agencia-sur", "berliner-blatt", "toronto-ledger")


def make_ping_keys(publishers=PING_PUBLISHERS) -> dict:
    """Fresh per-publisher ping keys: give the same dict to start_world(ping_keys=...) and to the origin
    (app.config["NEWSROOM_PING_KEYS"])."""
    import secrets

    return {p: secrets.token_hex(16) for p in publishers}


def start_world(speed: float | None = 10.0, state_path=None, seed: int | None = None, **kwargs) -> SampleWorld:
    """Start the sample world on a free loopback port and return it (``.base_url``, ``.stop()``). With
    ``state_path``, the clock (start, pace changes) and seed of the world that ran there before are resumed
    (:func:`world_state`): at ``speed`` from now on when given (None: at the pace it had); ``seed`` only applies to
    a new one."""
    if state_path is not None:
        state = world_state(state_path, speed, seed)
        kwargs["start_s"], speed, seed = state["start_s"], state["speed"], state["seed"]
        kwargs["changes"] = state["changes"]
    return SampleWorld(speed=10.0 if speed is None else speed, seed=seed, **kwargs).start()


def world_state(path, speed: float | None, seed: int | None, now_s: float | None = None) -> dict:
    """``{"start_s", "speed", "seed", "changes"}`` kept in ``path``: read when it exists (a rerun continues that
    world), else a new world starting now (at ``speed``, 10 when None), written there first. A resumed world
    given another ``speed`` goes on at it from ``now_s``: a change ``[wall s, virtual s, speed]`` is appended (and
    written), so what it released keeps its dates. A file that is not such a document is an error naming it
    (deleting it starts a new world, whose items ingest would fetch again as corrections)."""
    from pathlib import Path

    p = Path(path)
    now_s = time.time() if now_s is None else now_s
    if p.exists():
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
            state = {"start_s": float(doc["start_s"]), "speed": float(doc["speed"]), "seed": doc.get("seed")}
            state["changes"] = [[float(w), float(v), float(s)] for w, v, s in doc.get("changes", [])]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{p}: not a sample world state ({exc}); delete it to start a new world") from None
        clock = WorldClock(state["start_s"], state["speed"], state["changes"])
        if speed is None or float(speed) == clock.speed:
            return state
        if speed <= 0:
            raise ValueError(f"the sample world's speed must be > 0, not {speed}")
        state["changes"].append([now_s, clock.virtual_s(now_s), float(speed)])
    else:
        state = {"start_s": now_s, "speed": 10.0 if speed is None else float(speed), "seed": seed, "changes": []}
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(state), encoding="utf-8")
    tmp.replace(p)
    return state
