"""Section front pages as a feed kind (``"kind": "front"``): the links of an HTML front that look like articles.

Why: a publisher with no feed or sitemap is otherwise invisible. Its section fronts (home page, /world, /sport)
are polled like feeds (same schedule, same fetcher, same seen set: see :func:`transforms.ingest.poller.poll_feed`);
this module turns the fetched bytes into a :class:`transforms.ingest.feeds.ParsedFeed` whose entries are the
article-shaped links, so the poller's guid diff hands only unseen ones to the article fetcher.

The rule (:func:`is_article_link`), for a link resolved against the front's URL:

1. http(s), same registrable site as the front (courlan.extract_domain: ``www.`` and other subdomains of the
   same site count, other sites do not), not the front itself;
2. courlan says it is neither a navigation page (``is_navigation_page``: tag/, category/, author/, page/2, ...)
   nor not crawlable (``is_not_crawlable``: login, register, feeds, ...), and its path has no file extension
   other than .html/.htm/.shtml/.php/.aspx (no .jpg, .pdf);
3. its path has an article shape: a date (``/2019/10/03/``, ``/2019-10-03``, ``/20191003``), a number of at
   least 5 digits (an id: ``/story/12345678``, ``-a7c9012`` counts if it has 5 digits), or a last segment that is
   a slug of at least 3 words (``/world/markets-fall-on-rate-fears``) or of 2 words ending in .html.
   Section and hub pages (``/world``, ``/sport/football``, ``/us-news``) have none of these.

Measured on the real article pages of ../shared/data/pages (111 pages with a known URL; tests/transforms/ingest/
test_fronts.py pins floors under these): an article page's own URL is an article, the same-site links inside its
``<nav>`` / ``role="navigation"`` elements are navigation. Recall on the own URLs: 107/111 = 0.96 (misses: a
4-digit id ``/article/3834/1``, two-word slugs ``/success-mindset/``, an old CNN path without a slug). Of 3,709
navigation links 3,145 are dropped (0.85); the 564 kept are not all errors: in a sample of 34 of them 11 were real
stories that menus list (sfgate, mysanantonio "article/...-14845200.php"), so about 0.90 of true navigation is
dropped and the rule's precision on menu links is about 1/3 (what a front offers is mostly articles, so the
precision over a whole front is far higher; a wrong keep costs one page fetch that the article stage rejects).
The numbers were measured once, not tuned to this set (its README asks not to).

Entries have no title in their fingerprint (anchor text on a front changes with the teaser; it would read as a
correction and refetch the page): the anchor text goes to ``summary``. No date: the page gives the date.
"""

from __future__ import annotations

import re
from urllib.parse import urldefrag, urljoin, urlsplit

import courlan
import lxml.html
from lxml import etree

from transforms import markup
from transforms.ingest.feeds import Entry, FeedError, ParsedFeed

MAX_LINKS = 2000  # links read from one front; a real front has a few hundred
_DATE = re.compile(r"/(19|20)\d{2}[/-](0?[1-9]|1[0-2])([/-](0?[1-9]|[12]\d|3[01]))?(/|$|-)|/(19|20)\d{6}(/|$|[-_.])")
_ID = re.compile(r"\d{5,}")
_PAGE_EXT = re.compile(r"\.(s?html?|php|aspx?)$", re.I)
_ANY_EXT = re.compile(r"\.[a-z0-9]{1,5}$", re.I)
_WORD_SPLIT = re.compile(r"[-_+]+")
# Site furniture that is slug-shaped but never an article (any path segment equal to or starting with one).
_UTILITY = re.compile(
    r"(^|/)(terms|privacy|cookie|about|contact|subscri|newsletter|careers|jobs|advertis|help|faq|sitemap|"
    r"accessibility|legal|imprint|impressum|publicidade|trabalhe|shows?|specials|playlist|hc)([-_/.]|$)",
    re.I,
)


def _site(url: str) -> str | None:
    try:
        return courlan.extract_domain(url, fast=True)
    except Exception:  # courlan on a malformed host: no site, so not the front's
        return None


def is_article_link(url: str, front_url: str) -> bool:
    """True when ``url`` (absolute) is article-shaped and on the site of ``front_url`` (the rule above)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    site = _site(url)
    if site is None or site != _site(front_url) or url.rstrip("/") == front_url.rstrip("/"):
        return False
    if courlan.is_navigation_page(url) or courlan.is_not_crawlable(url):
        return False
    path = parts.path.rstrip("/")
    last = path.rsplit("/", 1)[-1]
    if _ANY_EXT.search(last) and not _PAGE_EXT.search(last):
        return False
    if _UTILITY.search(path):
        return False
    if _DATE.search(path + "/") or _ID.search(path):
        return True
    words = [len([w for w in _WORD_SPLIT.split(_PAGE_EXT.sub("", seg)) if w]) for seg in path.split("/")]
    return words[-1] >= 3 or max(words) >= 4 or (words[-1] >= 2 and bool(_PAGE_EXT.search(last)))


def front_links(body: bytes, url: str) -> list[tuple[str, str]]:
    """(absolute URL without fragment, anchor text) of each ``<a href>`` of the page, in page order, deduplicated."""
    try:
        doc = lxml.html.fromstring(bytes(body))
    except (etree.ParserError, ValueError) as exc:
        raise FeedError("malformed_front", str(exc)[:200]) from exc
    base = url
    for b in doc.iter("base"):
        if b.get("href"):
            base = urljoin(url, b.get("href").strip())
            break
    seen: dict[str, str] = {}
    for a in doc.iter("a"):
        href = (a.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:", "mailto:", "tel:")):
            continue
        link = urldefrag(urljoin(base, href))[0]
        if link not in seen:
            seen[link] = " ".join(a.text_content().split())[:300]
        if len(seen) >= MAX_LINKS:
            break
    return list(seen.items())


def parse_front(body: bytes, url: str) -> ParsedFeed:
    """The article-shaped links of the front page ``body`` fetched from ``url`` as feed entries (guid = link)."""
    if not isinstance(body, (bytes, bytearray)):
        raise TypeError("parse_front takes the fetched bytes, never a URL")
    if not body.strip():
        raise FeedError("empty_feed", url)
    crowded = markup.hostile_detail(body)  # lxml's HTML parser: quadratic in an element's attributes
    if crowded:
        raise FeedError(markup.REASON, crowded)
    entries = [
        Entry(guid=link, link=link, summary=text or None)
        for link, text in front_links(body, url)
        if is_article_link(link, url)
    ]
    return ParsedFeed(kind="front", entries=entries)
