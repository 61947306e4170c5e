"""The shell every reader web page is rendered in: the ``web`` blueprint, its security headers, rendering in the
edition's language, the per-catalog page cache and the shared (CDN-cacheable) response, and the answers every page
gives alike (404, warming up, not ready).

Public so the pages of the web room share it (serving/web/pages.py: editions, sections, topics, For you, stories;
serving/web/storylines.py; serving/web/signin.py) instead of reaching into one another's private helpers.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from urllib.parse import quote, urlsplit

from flask import Blueprint, Response, current_app, has_app_context, render_template, request

from serving.http import conventions as http
from serving.state.context import services
from serving.web.messages import language_name, messages

bp = Blueprint("web", __name__, template_folder="templates")

HTML = "text/html; charset=utf-8"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "Referrer-Policy": "strict-origin-when-cross-origin",
}
CACHE_MAX = 512  # rendered pages kept per catalog (~20-60 KB each; all re-rendered when the watcher swaps it)
SAFE_URL = re.compile(r"^https?://", re.IGNORECASE)
URL_SAFE = "%:/?#[]@!$&'()*+,;=~"  # RFC 3986 reserved characters and '%': kept as they are in a link

# Catalog -> {cache key: (body, etag)}. Catalogs are immutable and replaced whole, so a page rendered from one is
# valid for as long as that catalog is current; the weak keys let old catalogs (and their pages) go.
_rendered: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@bp.after_request
def _headers(resp: Response) -> Response:
    for k, v in SECURITY_HEADERS.items():
        resp.headers[k] = v
    world = current_app.config.get("NEWSROOM_WORLD_URL")
    if world:  # local demo: the cards' images come from the sample world (local_link)
        resp.headers["Content-Security-Policy"] = CSP.replace("img-src 'self'", f"img-src 'self' {world}")
    return resp


def etag_of(body: bytes) -> str:
    return f'"h{hashlib.sha256(body).hexdigest()[:20]}"'


def shared(body: bytes, etag: str, cache_control: str, content_type: str = HTML) -> Response:
    if http.etag_matches(request.environ.get("HTTP_IF_NONE_MATCH"), etag):
        resp = Response(status=304)
    else:
        resp = Response(body, content_type=content_type)
    resp.headers["ETag"] = etag
    resp.headers["Cache-Control"] = cache_control
    return resp


def cached(cat, key, render) -> tuple[bytes, str]:
    """(body, etag) of a page of ``cat``, rendered once per catalog."""
    pages = _rendered.get(cat)
    if pages is None:
        pages = _rendered.setdefault(cat, {})
    hit = pages.get(key)
    if hit is None:
        body = render().encode()
        hit = (body, etag_of(body))
        if len(pages) < CACHE_MAX:
            pages[key] = hit
    return hit


def render(template: str, lang: str = "en", **ctx) -> str:
    """A page in ``lang``: its interface strings come from the message catalogue (``t``, serving/web/messages.py)."""
    ext = services()  # the reader bar's settings: the same for every reader (serving/web/signin.py, reader.js)
    ctx = {"reader_signin": ext.local_sign_in, "version_poll_s": ext.version_poll_s, **ctx}
    if "editions" not in ctx:  # the edition switcher is on every page (base.html)
        ctx["editions"] = live_editions(ext.holder.current)
    return render_template(template, lang=lang, t=messages(lang), **ctx)


def _page(status: int, template: str, cache_control: str, **ctx) -> Response:
    resp = Response(render(template, **ctx), status=status, content_type=HTML)
    resp.headers["Cache-Control"] = cache_control
    return resp


def live_editions(cat) -> list[tuple[str, str, list[str]]]:
    """The edition switcher: (language code, its own name, editions) for every edition whose top page is live,
    grouped by language (codes in order, editions by id). An edition with only some sections published is not
    offered: its address would answer "no top stories"."""
    groups: dict[str, list[str]] = {}
    for edition, section in sorted(cat.pages):
        if section == "top":
            groups.setdefault(edition.partition("-")[2], []).append(edition)
    return [(lang, language_name(lang), groups[lang]) for lang in sorted(groups)]


def not_found(message: str, edition: str | None = None) -> Response:
    editions = live_editions(services().holder.current)
    lang = lang_of(edition) if edition else "en"
    return _page(
        404,
        "web/error.html",
        http.NEGATIVE,
        lang=lang,
        title=messages(lang)("not_found"),
        message=message,
        edition=edition,
        editions=editions,
    )


def warming_up(cat, edition: str, section: str = "top") -> Response:
    """A configured edition (or section) with no live page yet: 200, briefly cached, reloading itself (a meta
    refresh: no script), listing what of the edition is already live. Never a 404 or a 503 for something that
    exists: the URL ``newsroom run`` prints answers this from the origin's first second."""
    from serving.api.editions import has_publishers

    lang = lang_of(edition)
    t = messages(lang)
    live = sections_of(cat, edition)
    if not live and not has_publishers(services(), edition):  # it would warm up for ever: say why not
        return _page(
            404,
            "web/warming.html",
            http.NEGATIVE,
            lang=lang,
            title=t("no_publishers.title"),
            message=t("no_publishers.edition"),
            edition=edition,
            section=section,
            sections=[],
            refresh_s=None,
        )
    return _page(
        200,
        "web/warming.html",
        http.WARMING,
        lang=lang,
        title=t("warming.title"),
        message=t("warming.edition" if section == "top" or not live else "warming.section"),
        edition=edition,
        section=section,
        sections=[(s, section_title(s, t)) for s in live],
        refresh_s=int(current_app.config["NEWSROOM_RETRY_AFTER_S"]) * 2 + 1,
    )


def not_ready() -> Response:
    resp = _page(503, "web/error.html", http.NO_STORE, title="Starting", message="Pages are not loaded yet.")
    resp.headers["Retry-After"] = str(current_app.config["NEWSROOM_RETRY_AFTER_S"])
    return resp


def lang_of(edition: str) -> str:
    """``us-en`` -> ``en-US`` (BCP 47 for the html lang attribute)."""
    country, _, language = edition.partition("-")
    return f"{language}-{country.upper()}"


def section_title(section: str, t=None) -> str:
    """The section's name in the page's language (the catalogue's ``section.{id}``), else its id's words."""
    t = t or messages("en")
    if t.has(f"section.{section}"):
        return t(f"section.{section}")
    return section.replace("-", " ").replace("_", " ").capitalize()


def sections_of(cat, edition: str) -> list[str]:
    found = sorted(s for (e, s) in cat.pages if e == edition)
    return (["top"] if "top" in found else []) + [s for s in found if s != "top"]


def safe_url(url) -> str | None:
    """An http(s) link for a page, percent-encoded (a space or a non-ASCII letter in a publisher's URL is encoded,
    an existing ``%XX`` kept), through :func:`local_link`; None for any other scheme."""
    if not (isinstance(url, str) and SAFE_URL.match(url)):
        return None
    return local_link(quote(url.strip(), safe=URL_SAFE))


def local_link(url: str) -> str:
    """In a local demo (``NEWSROOM_WORLD_URL``, set by ``newsroom run``): a link to a sample world host
    ``http://{host}.test/{path}`` -> ``{world}/world/{host}.test/{path}``, which a browser can open
    (devtools/world/demo.py serves it). Anything else, and everything in production, is unchanged."""
    world = current_app.config.get("NEWSROOM_WORLD_URL") if has_app_context() else ""
    if not world:
        return url
    parts = urlsplit(url)
    if parts.scheme != "http" or not (parts.hostname or "").endswith(".test"):
        return url
    query = f"?{parts.query}" if parts.query else ""
    return f"{str(world).rstrip('/')}/world/{parts.hostname}{parts.path or '/'}{query}"


def when(ts: str) -> str:
    """``2025-03-01T11:50:00Z`` -> ``2025-03-01 11:50 UTC``. Absolute on purpose: a shared page is the same bytes
    for every reader for its whole TTL (and in the CDN), so it cannot say "5 min ago"; ``reltime.js`` rewords each
    ``<time datetime data-relative>`` in the reader's browser, at the reader's clock. Without script the absolute
    time stays, which is still true."""
    return ts[:16].replace("T", " ") + " UTC" if len(ts) >= 16 else ts
