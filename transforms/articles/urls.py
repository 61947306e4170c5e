"""Canonical URLs: which URL names an article, and how we know.

Reads: the fetched (final) URL, the page's own claims (``<link rel=canonical>``, ``og:url``, JSON-LD ``url`` /
``mainEntityOfPage`` of the main article object, the Twitter card's ``twitter:url``), and the publisher registry. Writes: ``(canonical_url,
canonical_source)``; ``article_id = sha256(canonical_url)[:32]``.

Order of evidence: rel=canonical, then og:url, then JSON-LD, then twitter:url (the weakest claim a page makes
about itself, but a claim: some CMSs fill only the Twitter card), then the fetched URL cleaned. Each candidate is
resolved against the fetched URL, unwrapped from redirect wrappers (google.com/url?q=, l.facebook.com/l.php?u=
...), mapped from AMP to the main URL, stripped of tracking parameters (courlan's tracker rules plus the common
publisher-specific ones below) and of its fragment, and its host lower-cased.

A candidate is refused when it
- is a bare relative reference (``href="8003098"``: neither a URL nor a path from the site's root), which
  resolved against the fetched URL names a page that does not exist (``relative_rejected``), or
- points to the site's home page while the page itself is deeper (a common CMS default that would merge every
  article of the site into one), or
- points to another publisher (``cross-host``): a syndicated copy often names the wire's URL as canonical. Taking it
  would give the copy the original's article_id (one store row overwritten by another publisher's text) and lose
  the copy's own publisher. A cross-host canonical is accepted only when both hosts belong to one publisher in the
  registry (or share a registrable domain), or when the page was served by an AMP cache or a known redirector,
  whose pages always name their origin. Every refusal is recorded in ``canonical_source`` as
  ``<chosen source>;cross_host_rejected:<host>`` (or ``homepage_rejected``), so the decision can be audited.

``canonical_source`` values: rel_canonical, og_url, json_ld, twitter_url, amp_mapped, fetched_url_cleaned, self_reference (a
share widget's URL, only for saved pages without a fetched URL), none (no URL at all),
optionally followed by ``;cross_host_rejected:<host>``, ``;homepage_rejected``, ``;relative_rejected`` or
``;cross_host_same_publisher``.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import parse_qsl, unquote, urlencode, urljoin, urlsplit, urlunsplit

import courlan
from courlan.clean import TRACKERS_RE as _TRACKERS_RE

from transforms.common import url_too_long

# Parameters courlan's tracker rules miss but which never identify an article.
_EXTRA_TRACKERS = re.compile(
    r"^(?:hpt|cmp|cmpid|ito|mbid|smid|smtyp|share|shared|icid|ocid|ncid|amp|_amp|outputtype|_ga|_gl|ftag|spm|"
    r"__twitter_impression|guccounter|guce_referrer|guce_referrer_sig|s_cid|sr_share|rss|feedtype|"
    r"ns_[a-z_]+|at_[a-z_]+|wt\.[a-z_]+|sc_[a-z_]+|fb_[a-z_]+|_hsenc|_hsmi|mc_[a-z]+|oref|cmpgn|int_[a-z_]+|"
    r"trk|trkcampaign|trkemail|iid|ir|newsletter|nl|utm|intcmp|cid)$",
    re.I,
)
# Redirect wrappers: host (suffix) -> query parameters that hold the target.
_WRAPPERS = {
    "google.com": ("url", "q", "u"),
    "l.facebook.com": ("u",),
    "lm.facebook.com": ("u",),
    "facebook.com": ("u",),
    "l.instagram.com": ("u",),
    "out.reddit.com": ("url",),
    "bing.com": ("url", "u"),
    "duckduckgo.com": ("uddg",),
    "slack-redir.net": ("url",),
    "t.umblr.com": ("z",),
    "href.li": (),
    "news.google.com": ("url",),
    "flipboard.com": ("url",),
    "feedproxy.google.com": (),
    "linkedin.com": ("url",),
    "safelinks.protection.outlook.com": ("url",),
}
_AMP_CACHE = re.compile(r"\.cdn\.ampproject\.org$|^cdn\.ampproject\.org$|\.ampproject\.net$", re.I)
_REDIRECTOR_HOSTS = re.compile(
    r"(^|\.)(feedproxy\.google\.com|feeds\.feedburner\.com|news\.google\.com|t\.co|bit\.ly|ow\.ly|"
    r"flipboard\.com|cdn\.ampproject\.org|ampproject\.net|google\.com)$",
    re.I,
)
# A page's claim about its own URL is an absolute URL (og:url must be; RFC 6596 asks it of rel=canonical), a
# scheme-relative one or a root-relative path. A bare reference (``href="8003098"``, a CMS id) is not resolved
# against the fetched URL: it would name a sibling that does not exist (cleveland.com's article pages).
_ABSOLUTE_OR_ROOTED = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|/)", re.I)
_SECOND_LEVEL = {"co", "com", "org", "net", "gov", "ac", "edu", "ne", "or", "go", "gob", "nic", "mil"}


def article_id(canonical_url: str) -> str:
    return hashlib.sha256(canonical_url.encode("utf-8")).hexdigest()[:32]


def host_of(url: str | None) -> str:
    try:
        return (urlsplit(url or "").hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


def registrable(host: str) -> str:
    """eTLD+1, approximately (no public suffix list: 'news.bbc.co.uk' -> 'bbc.co.uk')."""
    host = host.lower().strip(".")
    if host.startswith("www."):
        host = host[4:]
    parts = host.split(".")
    if len(parts) >= 3 and len(parts[-1]) == 2 and parts[-2] in _SECOND_LEVEL:
        return ".".join(parts[-3:])
    return ".".join(parts[-2:])


def unwrap(url: str) -> str:
    """Follow redirect wrappers that carry their target in the URL (at most 3 levels)."""
    for _ in range(3):
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        target = None
        for suffix, params in _WRAPPERS.items():
            if host == suffix or host.endswith("." + suffix):
                q = dict(parse_qsl(parts.query, keep_blank_values=False))
                for p in params:
                    v = q.get(p)
                    if v and re.match(r"https?://", unquote(v), re.I):
                        target = unquote(v) if "%" in v[:12] else v
                        break
                break
        if host.endswith("cdn.ampproject.org") or host.endswith(".ampproject.net"):
            m = re.match(r"^/[a-z]/(s/)?(.+)$", parts.path)
            if m:
                target = ("https://" if m.group(1) else "http://") + m.group(2)
                if parts.query:
                    target += "?" + parts.query
        if not target:
            return url
        url = target
    return url


def is_amp_url(url: str) -> bool:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    path = parts.path.lower()
    q = parts.query.lower()
    return bool(
        host.startswith("amp.")
        or _AMP_CACHE.search(host)
        or re.search(r"(^|/)amp/?$", path)
        or path.startswith("/amp/")
        or re.search(r"[./]amp\.html?$", path)
        or path.endswith(".amp")
        or re.search(r"(^|&)(amp|_amp|outputtype=amp|amp=1|amp=true)(&|=|$)", q)
    )


def amp_to_main(url: str) -> str:
    """The main (non-AMP) URL of an AMP URL; unchanged when it does not look like AMP."""
    url = unwrap(url)
    parts = urlsplit(url)
    host = parts.netloc
    if host.lower().startswith("amp."):
        host = "www." + host[4:]  # amp.theguardian.com -> www.theguardian.com (the usual pairing)
    path = parts.path
    path = re.sub(r"/amp(/?)$", r"\1", path, flags=re.I)  # ".../story/amp" -> ".../story", ".../amp/" -> ".../"
    if path.lower().startswith("/amp/"):
        path = path[4:]
    path = re.sub(r"[./]amp(\.html?)$", r"\1", path, flags=re.I)  # "story.amp.html" -> "story.html"
    path = re.sub(r"\.amp$", "", path, flags=re.I)
    query = urlencode(
        [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if k.lower() not in ("amp", "_amp", "outputtype")
        ]
    )
    return urlunsplit((parts.scheme, host, path or "/", query, ""))


def clean_query(query: str) -> str:
    """Drop tracking parameters (courlan's tracker rules plus ours); keep the order and blank values of the rest,
    which some sites need to serve the article (``news_view.html?idx=8576&page=1&bc=03``)."""
    if not query:
        return ""
    kept = []
    for part in query.split("&"):
        if not part:
            continue
        name = unquote(part.split("=", 1)[0]).strip().lower()
        if not name or _TRACKERS_RE.search(name) or _EXTRA_TRACKERS.match(name):
            continue
        kept.append(part)
    return "&".join(kept)


def clean(url: str) -> str | None:
    """Tracking parameters, fragment and default port removed; scheme and host lower-cased. None if invalid or
    longer than transforms.common.MAX_URL_CHARS (a page's canonical claim that long is passed over, like an invalid
    one; a fetched URL that long was never fetched)."""
    if not url or url_too_long(url):
        return None
    url = url.strip()
    if url.startswith("//"):
        url = "https:" + url
    try:
        url = unwrap(courlan.scrub_url(url) or url)
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname or "." not in parts.hostname:
            return None
        # courlan normalises scheme, host, port and path; the query is cleaned here, order-preserving.
        base = courlan.normalize_url(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), strict=False)
    except (ValueError, AttributeError, UnicodeError):
        return None
    b = urlsplit(base)
    return urlunsplit((b.scheme, b.netloc, b.path or "/", clean_query(parts.query), ""))


def _same_owner(a: str, b: str, registry) -> bool:
    if registrable(a) == registrable(b):
        return True
    if registry is not None:
        pa, pb = registry.for_host(a), registry.for_host(b)
        return pa.known and pb.known and pa.publisher_id == pb.publisher_id
    return False


def _is_homepage(url: str) -> bool:
    p = urlsplit(url)
    return p.path in ("", "/") and not p.query


def canonical(
    page_url: str | None,
    candidates: list[tuple[str, str | None]],
    registry=None,
    fallbacks: list[tuple[str, str | None]] = (),
) -> tuple[str | None, str]:
    """Choose the canonical URL.

    Args:
        page_url: the URL the page was served from (final URL after redirects); None when unknown (saved pages).
        candidates: ``[(source, url_or_None), ...]`` in order of preference (rel_canonical, og_url, json_ld).
        registry: a PublisherRegistry, to accept cross-host canonicals between hosts of one publisher.
        fallbacks: weaker self-references (share-widget URLs), used only when ``page_url`` is unknown and no
            candidate is usable.

    Without a page URL, the page's own host is taken from og:url when rel=canonical and og:url name different
    publishers: a syndicating portal (msn.com ...) typically keeps og:url on itself and points rel=canonical at
    the original publisher, and the cross-host rule then applies as if the page had been fetched from og:url.
    """
    notes: list[str] = []
    page_clean = clean(page_url) if page_url else None
    page_host = host_of(page_clean)
    if not page_clean:
        hosts = {src: host_of(clean(u or "")) for src, u in candidates if u}
        og_host, canon_host = hosts.get("og_url"), hosts.get("rel_canonical")
        if og_host and canon_host and not _same_owner(og_host, canon_host, registry):
            page_host = og_host
    served_by_proxy = bool(page_url and _REDIRECTOR_HOSTS.search(host_of(page_url)))
    for source, raw in candidates:
        if not raw or not isinstance(raw, str):
            continue
        raw = raw.strip()
        if not _ABSOLUTE_OR_ROOTED.match(raw):
            notes.append("relative_rejected")
            continue
        if page_url:
            try:
                raw = urljoin(page_url, raw)
            except ValueError:
                continue
        url = clean(raw)
        if not url:
            continue
        if is_amp_url(url):
            url = clean(amp_to_main(url)) or url
        host = host_of(url)
        if page_clean and _is_homepage(url) and not _is_homepage(page_clean):
            notes.append("homepage_rejected")
            continue
        if page_host:
            if host != page_host and not served_by_proxy and not _same_owner(host, page_host, registry):
                notes.append(f"cross_host_rejected:{host}")
                continue
            if host != page_host and registrable(host) != registrable(page_host) and not served_by_proxy:
                notes.append("cross_host_same_publisher")
        return url, ";".join([source] + _dedupe(notes))
    if page_clean:
        if is_amp_url(page_clean) or is_amp_url(page_url or ""):
            mapped = clean(amp_to_main(page_url)) or page_clean
            return mapped, ";".join(["amp_mapped"] + _dedupe(notes))
        return page_clean, ";".join(["fetched_url_cleaned"] + _dedupe(notes))
    for source, raw in fallbacks:
        url = clean(raw or "")
        if url and not _is_homepage(url):
            if is_amp_url(url):
                url = clean(amp_to_main(url)) or url
            return url, ";".join([source] + _dedupe(notes))
    return None, ";".join(["none"] + _dedupe(notes))


def _dedupe(notes: list[str]) -> list[str]:
    seen, out = set(), []
    for n in notes:
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def same_url(a: str | None, b: str | None) -> bool:
    """Equality ignoring scheme, a leading ``www.`` and a trailing slash (the benchmark's URL comparison)."""

    def key(u: str | None) -> str:
        u = (u or "").strip()
        u = re.sub(r"^[a-z]+://", "", u, flags=re.I)
        u = re.sub(r"^www\.", "", u, flags=re.I)
        return u.rstrip("/")

    return bool(a and b) and key(a) == key(b)
