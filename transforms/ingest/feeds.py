"""Parse fetched feed bytes: RSS and Atom with feedparser, news sitemaps with defusedxml.

Reads bytes the fetcher already downloaded (feedparser is never handed a URL, so it never fetches anything
itself); writes :class:`ParsedFeed` with one :class:`Entry` per item. Malformed input raises :class:`FeedError`
with a short reason code (``malformed_feed``, ``not_a_feed``, ``malformed_sitemap``, ``hostile_markup``) for the
dead-letter output. ``hostile_markup``: an element with more than 256 attributes, refused by a linear scan before
any parser runs (transforms/markup.py: feedparser's cost grows with the square of an element's attributes).

News sitemaps (https://www.google.com/schemas/sitemap-news/0.9): only entries of the last 2 days, at most 1,000,
dates in W3C format. RSS and Atom entries older than ``max_age_ms`` (2 days by default) are dropped too: a feed
polled for the first time must not flood the pipeline with last month's archive.

Schedule hints (read here, applied by :mod:`transforms.ingest.schedule`): RSS ``<ttl>`` (minutes), ``<skipHours>``
(hours 0-23, GMT) and ``<skipDays>`` (English day names, GMT), and a sitemap's ``<changefreq>`` (the most frequent
value its entries give, as minutes). feedparser exposes ``ttl`` but flattens ``skipHours``/``skipDays`` to their
last child, so those two are read with a defusedxml parse of the channel, only when the bytes contain them. A
malformed or out-of-range hint is ignored (a hint is never worth a dead letter).

Identity of an item: RSS guid / Atom id, else its link. The *fingerprint* (title + updated date) tells a corrected
entry (same guid, new headline) from an unchanged one: a corrected headline is a new version of the same article.
"""

from __future__ import annotations

import calendar
import hashlib
import re
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime

import feedparser
from defusedxml import ElementTree as SafeET
from defusedxml.common import DefusedXmlException

from transforms import markup
from transforms.common import DAY_MS, MAX_URL_CHARS

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
MAX_SITEMAP_ENTRIES = 1000
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# <changefreq> as minutes; "always" and "never" give no hint ("always" asks for no slowing at all; "never" is
# about archived pages, not about the sitemap listing new ones).
CHANGEFREQ_MIN = {"hourly": 60, "daily": 1440, "weekly": 10080, "monthly": 43200, "yearly": 525600}
MAX_TTL_MIN = 7 * 1440
DEFAULT_MAX_AGE_MS = 2 * DAY_MS


class FeedError(ValueError):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass
class Entry:
    guid: str
    link: str
    title: str | None = None
    published: str | None = None  # as written by the feed
    published_ms: int | None = None
    updated: str | None = None
    summary: str | None = None
    language: str | None = None
    categories: list = field(default_factory=list)

    @property
    def fingerprint(self) -> str:
        text = f"{self.title or ''}\x1f{self.updated or ''}"
        return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]

    def to_feed_entry(self) -> dict:
        """The RawItem ``entry`` record."""
        return {
            "guid": self.guid,
            "title": self.title,
            "link": self.link,
            "published": self.published,
            "summary": (self.summary or None) and self.summary[:2000],
            "language": self.language,
            "categories": [str(c) for c in self.categories][:20],
        }


@dataclass
class ParsedFeed:
    kind: str  # rss | atom | sitemap
    entries: list
    hub: str | None = None
    self_url: str | None = None
    language: str | None = None
    dropped_old: int = 0
    ttl_min: int | None = None  # RSS <ttl>, or the sitemap's most frequent <changefreq>, in minutes
    skip_hours: tuple = ()  # RSS <skipHours>: GMT hours 0-23, sorted
    skip_days: tuple = ()  # RSS <skipDays>: 0 = Monday .. 6 = Sunday, sorted

    @property
    def digest(self) -> str:
        h = hashlib.sha1()
        for guid, fp in sorted((e.guid, e.fingerprint) for e in self.entries):
            h.update(f"{guid}\x1f{fp}\x1e".encode())
        return h.hexdigest()[:16]


# "[^<>]": a "<" ends a target, so each "<" is read once (with "[^>]", every "<" of a header of 60,000 of them
# rescanned to the end: seconds per header, quadratic).
_LINK_RE = re.compile(r"<([^<>]*)>\s*((?:;\s*[^;,]+)*)")


def parse_link_header(value: str | None) -> dict:
    """``Link: <https://hub>; rel="hub", <https://self>; rel="self"`` -> {"hub": ..., "self": ...}."""
    out: dict = {}
    for m in _LINK_RE.finditer(value or ""):
        url, params = m.group(1).strip(), m.group(2)
        rel = re.search(r'rel\s*=\s*"?([^";]+)"?', params or "")
        if rel:
            for r in rel.group(1).split():
                out.setdefault(r.lower(), url)
    return out


def parse_w3c_date(text: str | None) -> int | None:
    """W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, with time and zone) -> ms since epoch UTC; None if unparseable.
    A value without a zone is read as UTC here (the normaliser applies the publisher's zone to page times)."""
    if not text:
        return None
    t = text.strip()
    try:
        if re.fullmatch(r"\d{4}", t):
            dt = datetime(int(t), 1, 1, tzinfo=UTC)
        elif re.fullmatch(r"\d{4}-\d{2}", t):
            dt = datetime(int(t[:4]), int(t[5:7]), 1, tzinfo=UTC)
        else:
            dt = datetime.fromisoformat(t.replace("z", "Z"))
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(dt.timestamp() * 1000)


def _sniff(body: bytes) -> str:
    head = body[:4096].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if b"<urlset" in head or b"<sitemapindex" in head:
        return "sitemap"
    return "feed"


def parse_feed(
    body: bytes,
    url: str,
    now_ms: int,
    headers: dict | None = None,
    kind: str | None = None,
    max_age_ms: int = DEFAULT_MAX_AGE_MS,
) -> ParsedFeed:
    """Parse ``body`` (bytes fetched from ``url``). ``kind`` ("rss", "atom", "sitemap") is a hint; the bytes decide."""
    if not isinstance(body, (bytes, bytearray)):
        raise TypeError("parse_feed takes the fetched bytes, never a URL")
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    if not body.strip():
        raise FeedError("empty_feed", url)
    crowded = markup.hostile_detail(body, xml=True)
    if crowded:
        raise FeedError(markup.REASON, crowded)
    if kind == "sitemap" or _sniff(bytes(body)) == "sitemap":
        parsed = _parse_sitemap(bytes(body), url, now_ms, max_age_ms)
    else:
        parsed = _parse_syndication(bytes(body), url, now_ms, headers, max_age_ms)
    links = parse_link_header(headers.get("link"))
    parsed.hub = parsed.hub or links.get("hub")
    parsed.self_url = parsed.self_url or links.get("self")
    return parsed


def _parse_syndication(body: bytes, url: str, now_ms: int, headers: dict, max_age_ms: int) -> ParsedFeed:
    response_headers = {"content-location": url}
    if headers.get("content-type"):
        response_headers["content-type"] = headers["content-type"]
    with warnings.catch_warnings():
        # feedparser warns on every access to an entry's missing "updated" (it falls back to "published" and says the
        # fallback will go); we read both ourselves, so the warning says nothing to us.
        warnings.simplefilter("ignore", DeprecationWarning)
        return _syndication_entries(
            feedparser.parse(body, response_headers=response_headers, sanitize_html=False), body, now_ms, max_age_ms
        )


def _syndication_entries(d, body: bytes, now_ms: int, max_age_ms: int) -> ParsedFeed:
    version = d.get("version") or ""
    if not version:
        head = body[:1024].lower()
        if d.get("bozo") and (b"<rss" in head or b"<feed" in head or b"<rdf" in head):
            exc = d.get("bozo_exception")
            raise FeedError("malformed_feed", f"{type(exc).__name__}: {exc}"[:300])
        raise FeedError("not_a_feed", "no RSS or Atom root element")
    exc = d.get("bozo_exception")
    usable = [e for e in d.entries if e.get("link")]
    if d.get("bozo") and not usable and not isinstance(exc, feedparser.CharacterEncodingOverride):
        # Broken XML that yielded no item (a truncated or garbled feed): dead-letter it rather than report
        # "no news". A feed that parses with a few recoverable errors keeps the entries it yielded.
        raise FeedError("malformed_feed", f"{type(exc).__name__}: {exc}"[:300])
    kind = "atom" if version.startswith("atom") else "rss"
    hub = self_url = None
    for link in d.feed.get("links", []) or []:
        rel = (link.get("rel") or "").lower()
        if rel == "hub" and not hub:
            hub = link.get("href")
        elif rel == "self" and not self_url:
            self_url = link.get("href")
    feed_lang = d.feed.get("language")
    entries, dropped = [], 0
    for e in d.entries:
        link = e.get("link") or ""
        guid = _short_guid(e.get("id") or link)
        if not guid or not link:
            continue
        pp = e.get("published_parsed") or e.get("updated_parsed")
        published_ms = calendar.timegm(pp) * 1000 if pp else None
        if published_ms is not None and published_ms < now_ms - max_age_ms:
            dropped += 1
            continue
        entries.append(
            Entry(
                guid=guid,
                link=link,
                title=e.get("title"),
                published=e.get("published") or e.get("updated"),
                published_ms=published_ms,
                # Only an explicit <updated>/<atom:updated>: feedparser would otherwise alias pubDate, and a
                # re-dated entry is not a correction.
                updated=e.get("updated") if dict.__contains__(e, "updated") else None,
                summary=e.get("summary"),
                language=e.get("language") or feed_lang,
                categories=[t.get("term") for t in e.get("tags", []) or [] if t.get("term")],
            )
        )
    skip_hours, skip_days = _skip_hints(body)
    return ParsedFeed(
        kind=kind,
        entries=entries,
        hub=hub,
        self_url=self_url,
        language=feed_lang,
        dropped_old=dropped,
        ttl_min=_ttl_minutes(d.feed.get("ttl")) if kind == "rss" else None,
        skip_hours=skip_hours,
        skip_days=skip_days,
    )


def _short_guid(guid: str) -> str:
    """A guid over common.MAX_URL_CHARS is kept as its SHA-256 (``sha256:<hex>``): it is the key of the feed's guid
    memory, stored with the feed's state, and a publisher's megabyte of id must not be. Same guid, same key."""
    if len(guid) <= MAX_URL_CHARS:
        return guid
    return "sha256:" + hashlib.sha256(guid.encode("utf-8", "surrogatepass")).hexdigest()


def _ttl_minutes(text) -> int | None:
    """``<ttl>`` as a positive whole number of minutes (at most a week), else None."""
    try:
        ttl = int(str(text).strip())
    except (TypeError, ValueError):
        return None
    return min(ttl, MAX_TTL_MIN) if ttl > 0 else None


def _skip_hints(body: bytes) -> tuple[tuple, tuple]:
    """RSS ``<skipHours>`` / ``<skipDays>`` of the channel: (hours, days), each sorted and deduplicated; values out
    of range or unknown are dropped. Parsed only when the bytes name them; unparseable XML gives no hints."""
    low = body.lower()
    if b"<skiphours" not in low and b"<skipdays" not in low:
        return (), ()
    try:
        root = SafeET.fromstring(body, forbid_dtd=True)
    except (SafeET.ParseError, DefusedXmlException, ValueError):
        return (), ()
    channel = root.find("channel")
    if channel is None:
        return (), ()
    hours, days = set(), set()
    for h in channel.findall("skipHours/hour"):
        text = (h.text or "").strip()
        if text.isdigit() and 0 <= int(text) <= 24:
            hours.add(int(text) % 24)  # some feeds write 1-24 (24 = midnight)
    for d in channel.findall("skipDays/day"):
        name = (d.text or "").strip().lower()
        if name in DAYS:
            days.add(DAYS.index(name))
    return tuple(sorted(hours)), tuple(sorted(days))


def _parse_sitemap(body: bytes, url: str, now_ms: int, max_age_ms: int) -> ParsedFeed:
    try:
        root = SafeET.fromstring(body, forbid_dtd=True)
    except (SafeET.ParseError, DefusedXmlException, ValueError) as exc:
        raise FeedError("malformed_sitemap", f"{type(exc).__name__}: {exc}"[:300]) from None
    if root.tag != f"{{{SITEMAP_NS}}}urlset":
        raise FeedError("not_a_news_sitemap", root.tag[:100])
    dated = []
    dropped = 0
    freqs = set()
    for u in root.findall(f"{{{SITEMAP_NS}}}url"):
        loc = (u.findtext(f"{{{SITEMAP_NS}}}loc") or "").strip()
        freqs.add((u.findtext(f"{{{SITEMAP_NS}}}changefreq") or "").strip().lower())
        news = u.find(f"{{{NEWS_NS}}}news")
        if not loc or news is None:
            continue
        date_text = (news.findtext(f"{{{NEWS_NS}}}publication_date") or "").strip()
        ms = parse_w3c_date(date_text)
        if ms is None or ms < now_ms - max_age_ms:
            dropped += 1
            continue
        lang = news.findtext(f"{{{NEWS_NS}}}publication/{{{NEWS_NS}}}language")
        keywords = news.findtext(f"{{{NEWS_NS}}}keywords") or ""
        dated.append(
            Entry(
                guid=loc,
                link=loc,
                title=(news.findtext(f"{{{NEWS_NS}}}title") or "").strip() or None,
                published=date_text,
                published_ms=ms,
                updated=date_text,
                language=(lang or "").strip() or None,
                categories=[k.strip() for k in keywords.split(",") if k.strip()],
            )
        )
    dated.sort(key=lambda e: e.published_ms or 0, reverse=True)
    dropped += max(0, len(dated) - MAX_SITEMAP_ENTRIES)
    return ParsedFeed(
        kind="sitemap", entries=dated[:MAX_SITEMAP_ENTRIES], dropped_old=dropped, ttl_min=_changefreq_minutes(freqs)
    )


def _changefreq_minutes(freqs: set) -> int | None:
    """The most frequent ``<changefreq>`` the entries give, in minutes; None when none is given or one says
    "always" (a sitemap whose pages change on every access asks not to be slowed)."""
    if "always" in freqs:
        return None
    known = [CHANGEFREQ_MIN[f] for f in freqs if f in CHANGEFREQ_MIN]
    return min(known, default=None)
