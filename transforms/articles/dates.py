"""Times in UTC: parse what feeds, sitemaps and pages state, choose the publication time, reject the future.

Reads: date strings (RFC 822 from feeds, W3C/ISO 8601 from sitemaps and JSON-LD, free text from meta tags), the
page's structured data (see :mod:`transforms.articles.structured`), the publisher's IANA zone, and the parsed tree
(htmldate, as the last resort). Writes: int milliseconds since the epoch, UTC.

Rules (DESIGN.md section 2):
- A time with a zone is converted to UTC; a time without one is read in the publisher's zone (a date alone is its
  midnight there).
- Evidence order: JSON-LD ``datePublished`` of the main article, publication meta tags (article:published_time,
  og, Dublin Core, parsely, sailthru ...), microdata ``itemprop=datePublished``, the feed entry's date, then
  htmldate's reading of the page (original date, URL, visible text) as a guess.
- A stated time more than ``FUTURE_SKEW_MS`` (10 min) after the fetch is a lie or a bug: the page goes to the dead
  letter as ``future_date``. A zone-less time gets 14 h more (the widest UTC offset): being a few hours "ahead" there
  usually means the publisher's zone is wrong in the registry, not that the article is from the future; such a
  time is clamped by ``published = min(stated, first_seen)``. htmldate's guesses are never grounds for rejection
  (they are bounded by the fetch time instead).
- Times before 1995 are ignored as garbage (the web's news archive starts there).
"""

from __future__ import annotations

import email.utils
import functools
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from transforms.common import HOUR_MS, MINUTE_MS

FUTURE_SKEW_MS = 10 * MINUTE_MS
ZONELESS_EXTRA_MS = 14 * HOUR_MS
MIN_MS = int(datetime(1995, 1, 1, tzinfo=UTC).timestamp() * 1000)

PUBLISHED_META = (
    "article:published_time",
    "og:article:published_time",
    "og:published_time",
    "article.published",
    "published_time",
    "datepublished",
    "pubdate",
    "publishdate",
    "publish-date",
    "publish_date",
    "article_date_original",
    "originalpublicationdate",
    "sailthru.date",
    "parsely-pub-date",
    "dc.date.issued",
    "dcterms.issued",
    "dc.date.created",
    "dcterms.created",
    "dc.date",
    "dcterms.date",
    "date",
    "citation_publication_date",
    "rnews:datepublished",
    "cxenseparse:recs:publishtime",
    "weibo:article:create_at",
    "bt:pubdate",
    "pdate",
    "displaydate",
)
MODIFIED_META = (
    "article:modified_time",
    "og:updated_time",
    "og:article:modified_time",
    "datemodified",
    "dcterms.modified",
    "last-modified",
    "lastmod",
)

_ISO_FIX = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[T ](\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)\s*(Z|[+-]\d{2}:?\d{2}|[+-]\d{2}|UTC|GMT)?$", re.I
)
_COMPACT = re.compile(r"^(\d{4})(\d{2})(\d{2})(?:T?(\d{2})(\d{2})(\d{2})?)?(Z|[+-]\d{4})?$")
_DATE_ONLY = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")
_EPOCH = re.compile(r"^\d{10}(\d{3})?$")
_RFC822 = re.compile(
    r"^(?:[A-Za-z]{3,9},?\s*)?\d{1,2}\s+[A-Za-z]{3,9}\.?\s+\d{2,4}(?:\s+\d{1,2}:\d{2}(?::\d{2})?)?(?:\s+\S+)?\s*$"
)


@functools.lru_cache(maxsize=256)
def zone(name: str | None):
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


@dataclass(frozen=True)
class Parsed:
    ms: int
    zoned: bool  # False: the string had no zone and the publisher's was assumed


def _to_ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def parse(value, tz: str | None = "UTC") -> Parsed | None:
    """Parse one date/time string (RFC 822, W3C/ISO 8601, epoch, or free text). None when it is not a time."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(int(value))
    if not isinstance(value, str):
        return None
    s = " ".join(value.split())
    if not s or len(s) > 100:
        return None
    local = zone(tz)
    try:
        if _EPOCH.match(s):
            n = int(s)
            return Parsed(n if len(s) == 13 else n * 1000, True)
        m = _DATE_ONLY.match(s)
        if m:
            d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            return Parsed(_to_ms(datetime(d.year, d.month, d.day, tzinfo=local)), False)
        m = _ISO_FIX.match(s)
        if m:
            day, clock, z = m.groups()
            clock = clock.replace(",", ".")
            if len(clock.split(":")[0]) == 1:
                clock = "0" + clock
            if z and z.upper() in ("Z", "UTC", "GMT"):
                z = "+00:00"
            elif z and len(z) == 3:
                z = z + ":00"
            elif z and ":" not in z:
                z = z[:3] + ":" + z[3:]
            dt = datetime.fromisoformat(f"{day}T{clock}{z or ''}")
            return _finish(dt, local)
        m = _COMPACT.match(s)
        if m and 1990 < int(m.group(1)) < 2100:
            y, mo, d, hh, mm, ss, z = m.groups()
            dt = datetime(int(y), int(mo), int(d), int(hh or 0), int(mm or 0), int(ss or 0))
            if z:
                dt = dt.replace(tzinfo=UTC if z == "Z" else _offset(z))
            return _finish(dt, local)
        try:
            dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
            return _finish(dt, local)
        except ValueError:
            pass
        if _RFC822.match(s):
            try:
                dt = email.utils.parsedate_to_datetime(s)
                if dt is not None:
                    zoned = dt.tzinfo is not None and not re.search(r"-0000\s*$", s)
                    return _finish(dt, local) if zoned else _finish(dt.replace(tzinfo=None), local)
            except (TypeError, ValueError, IndexError, OverflowError):
                pass
        return _free_text(s, local)
    except (ValueError, OverflowError, OSError):
        return None


def _offset(z: str):
    sign = 1 if z[0] == "+" else -1
    return timezone(sign * timedelta(hours=int(z[1:3]), minutes=int(z[3:5])))


def _finish(dt: datetime, local) -> Parsed:
    if dt.tzinfo is None:
        return Parsed(_to_ms(dt.replace(tzinfo=local)), False)
    return Parsed(_to_ms(dt), True)


def _free_text(s: str, local) -> Parsed | None:
    """Human-written dates ("01:38:07 PM IST Nov 20, 2019"): dateutil (fast, English), then dateparser (200+
    locales, but ~100 ms per call on a miss: the last resort)."""
    if not re.search(r"\d", s):
        return None
    try:
        import warnings

        from dateutil import parser as du_parser

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unknown zone abbreviations ("IST") -> naive -> publisher's zone
            # numeric dates with dashes are year-first ("14-12-29" is 2014-12-29, not 2029-12-14)
            yearfirst = bool(re.match(r"^\d{2}-\d{1,2}-\d{1,2}\b", s))
            dt = du_parser.parse(s, fuzzy=False, default=datetime(1900, 1, 1), yearfirst=yearfirst)
        if 1990 < dt.year < 2100:
            return _finish(dt, local)
    except (ImportError, ValueError, OverflowError, TypeError):
        pass
    try:
        import dateparser
    except ImportError:  # pragma: no cover
        return None
    try:
        dt = dateparser.parse(s, settings={"PREFER_DAY_OF_MONTH": "first", "RETURN_AS_TIMEZONE_AWARE": False})
    except Exception:  # noqa: BLE001 - dateparser raises a zoo of errors on odd input
        return None
    if dt is None:
        return None
    return _finish(dt, local)


@dataclass(frozen=True)
class Published:
    stated_ms: int | None  # what the page/feed says, UTC (None: nothing usable)
    source: str  # json_ld, meta:<name>, microdata, feed, htmldate, none
    zoned: bool
    modified_ms: int | None


def _ok(p: Parsed | None, max_ms: int | None) -> bool:
    return p is not None and p.ms >= MIN_MS and (max_ms is None or p.ms <= max_ms)


def choose(
    pm, entry_published: str | None, tz: str | None, now_ms: int | None, tree=None, url: str | None = None
) -> Published:
    """Pick the stated publication time; raise Rejected('future_date') for a stated time in the future.

    Args:
        pm: PageMeta of the page (None when only feed metadata is known).
        entry_published: the feed entry's date string.
        tz: the publisher's IANA zone, for zone-less times.
        now_ms: the reference "now" (the fetch time for a RawItem); None disables the future check.
        tree: the parsed page, for htmldate's guess when nothing is stated (htmldate reads, it does not modify).
    """
    from transforms.articles.page import Rejected

    candidates: list[tuple[str, object]] = []
    modified = None
    if pm is not None:
        art = pm.article or {}
        for key in ("datePublished", "dateCreated", "uploadDate"):
            if art.get(key):
                candidates.append(("json_ld", _first(art.get(key))))
                break
        for name in PUBLISHED_META:
            v = pm.meta.get(name)
            if v:
                candidates.append((f"meta:{name}", v))
        v = pm.itemprops.get("datePublished") or pm.itemprops.get("dateCreated")
        if v:
            candidates.append(("microdata", v))
        mod = _first(art.get("dateModified")) or pm.first(*MODIFIED_META) or pm.itemprops.get("dateModified")
        mp = parse(mod, tz) if mod else None
        modified = mp.ms if _ok(mp, None) else None
    if entry_published:
        candidates.append(("feed", entry_published))

    for source, value in candidates:
        p = parse(value, tz)
        if p is None or p.ms < MIN_MS:
            continue
        if now_ms is not None:
            limit = now_ms + FUTURE_SKEW_MS + (0 if p.zoned else ZONELESS_EXTRA_MS)
            if p.ms > limit:
                raise Rejected("future_date", f"{source} says {value!r}, fetched at {iso(now_ms)}")
        if modified is not None and now_ms is not None and modified > now_ms + FUTURE_SKEW_MS + ZONELESS_EXTRA_MS:
            modified = None
        return Published(p.ms, source, p.zoned, modified)

    if tree is not None:
        guess = _htmldate(tree, url, now_ms, tz)
        if guess is not None:
            return Published(guess.ms, "htmldate", guess.zoned, modified)
    return Published(None, "none", True, modified)


def _first(v):
    if isinstance(v, list):
        return v[0] if v else None
    if isinstance(v, dict):
        return v.get("@value")
    return v


def _htmldate(tree, url: str | None, now_ms: int | None, tz: str | None) -> Parsed | None:
    try:
        import htmldate
    except ImportError:  # pragma: no cover
        return None
    max_dt = datetime.fromtimestamp(now_ms / 1000, tz=UTC) if now_ms else datetime.now(UTC)
    try:
        found = htmldate.find_date(
            tree,
            extensive_search=True,
            original_date=True,
            outputformat="%Y-%m-%dT%H:%M:%S%z",
            url=url,
            max_date=max_dt.replace(tzinfo=None) + timedelta(days=1),
        )
    except Exception:  # noqa: BLE001 - a guess must never fail the page
        return None
    if not found:
        return None
    p = parse(found, tz)
    if p is None or p.ms < MIN_MS or (now_ms is not None and p.ms > now_ms + FUTURE_SKEW_MS + ZONELESS_EXTRA_MS):
        return None
    return p


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
