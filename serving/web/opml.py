"""OPML export of a signed-in reader's follows: ``GET /v1/me/follows.opml?edition=us-en&format=rss|atom``.

What a reader takes to a feed reader (FreshRSS, Miniflux, NetNewsWire import OPML subscription lists): one
``<outline type="rss">`` per followed section, city or place, entity and storyline ("Follow" on a storyline page:
``{"kind": "storyline", "value": "{language}/{id}"}``), each with its feed (of this edition for the first three)
(serving/web/feeds.py: one item per story, never N copies) as ``xmlUrl`` (RSS 2.0, or Atom with ``format=atom``)
and its page as ``htmlUrl``, named as the page names it, in the edition's language. A followed section of the
edition is its section feed, any other ``topic`` follow its ``topic:{id}`` page's feed; a followed source
(publisher) has no feed of ours and is not listed (its own site has one). URLs are absolute on the request's host,
percent-encoded like the pages' hrefs.

Private like the reader's other ``/v1/me/*`` endpoints (serving/api/foryou.py ``private``): a bearer token, the
reader's profile read from the store, ``Cache-Control: private, no-store``; the URL is on the routes that bypass the
CDN (terraform/modules/origin ``personal_paths`` ``/v1/me/*``, devtools/edge_nginx.conf ``^/v1/(feed|me|events)``),
so no edge ever keeps one reader's list. Problems as the API's: 400 ``invalid_edition`` / ``invalid_parameter``,
401, 404 ``unknown_edition``, 503. OPML 2.0 (http://opml.org/spec2.opml), built with ElementTree (every attribute
escaped, always well-formed); ``tests/serving/test_opml.py`` parses it with listparser.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from email.utils import format_datetime
from urllib.parse import quote

from flask import Blueprint, Response, request

from serving.api.editions import is_configured
from serving.api.foryou import EDITION, private
from serving.api.storylines import storyline_doc
from serving.http import conventions as http
from serving.state.context import services
from serving.web.messages import messages
from serving.web.pages import topic_title
from serving.web.shell import lang_of, section_title
from stores.base import StoreError

bp = Blueprint("opml", __name__)
OPML = "text/x-opml; charset=utf-8"
FORMAT = re.compile(r"^(rss|atom)$")
STORYLINE = re.compile(r"^([a-z]{2,3})/([0-9]{1,20})$")


@bp.after_request
def _private(resp: Response) -> Response:
    resp.headers["Cache-Control"] = http.PRIVATE
    return resp


def outlines(follows: dict, edition: str, sections, t, storyline=None) -> list[dict]:
    """The export's feeds, sections first, then places (cities and regions), entities and storylines, each kind in
    the order followed: ``{"name", "page"}`` (the page's path; its feed is ``{page}/feed.{format}``), each page once.
    ``storyline(language, id) -> (title, id)``: a followed storyline's title (None: unknown, named by the
    catalogue's word) and id (a merged one's survivor)."""
    out, seen = [], set()

    def add(name: str, page: str) -> None:
        if page not in seen:
            seen.add(page)
            out.append({"name": name, "page": page})

    for value in follows.get("topics") or ():
        if value in sections and value != "top":
            add(section_title(value, t), f"/e/{edition}/{quote(value, safe='')}")
        else:
            add(topic_title(f"topic:{value}", t)[0], _topic_page(edition, f"topic:{value}"))
    for kind, field in (("place", "places"), ("entity", "entities")):
        for value in follows.get(field) or ():
            add(topic_title(f"{kind}:{value}", t)[0], _topic_page(edition, f"{kind}:{value}"))
    for value in follows.get("storylines") or ():
        m = STORYLINE.match(value)
        if m is None:  # not "{language}/{id}": no storyline page to export
            continue
        language, sid = m.groups()
        title, sid = storyline(language, sid) if storyline else (None, sid)
        add(f"{t('storyline')}: {title}" if title else t("storyline"), f"/storylines/{language}/{sid}")
    return out


def _storyline(ext, cat, language: str, storyline_id: str) -> tuple[str | None, str]:
    """(title, id) of a followed storyline, loaded on demand like its page (the LRU): a merged one is its
    survivor's; the title None when unknown or unreadable."""
    try:
        sl = storyline_doc(ext, cat, language, storyline_id)
        if sl is not None and sl.merged_into is not None:
            storyline_id = sl.merged_into
            sl = storyline_doc(ext, cat, language, storyline_id)
    except StoreError:
        return None, storyline_id
    return (sl.title if sl is not None and sl.merged_into is None else None), storyline_id


def _topic_page(edition: str, topic_id: str) -> str:
    return f"/e/{edition}/topics/{quote(topic_id, safe=':')}"


def render_opml(title: str, language: str, feeds: list[dict], fmt: str, host_url: str) -> bytes:
    """The OPML 2.0 document of ``feeds`` (:func:`outlines`), absolute on ``host_url``."""
    base = host_url.rstrip("/")
    root = ET.Element("opml", {"version": "2.0"})
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = title
    ET.SubElement(head, "dateCreated").text = format_datetime(datetime.now(UTC))
    ET.SubElement(head, "docs").text = "http://opml.org/spec2.opml"
    body = ET.SubElement(root, "body")
    for f in feeds:
        attrs = {"type": "rss", "text": f["name"], "title": f["name"], "xmlUrl": f"{base}{f['page']}/feed.{fmt}"}
        attrs.update({"htmlUrl": base + f["page"], "language": language})
        if fmt == "rss":
            attrs["version"] = "RSS2"
        ET.SubElement(body, "outline", attrs)
    if not feeds:  # OPML 2.0: a body holds at least one outline
        ET.SubElement(body, "outline", {"text": messages(language)("opml.empty")})
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="utf-8", xml_declaration=False)


@bp.get("/v1/me/follows.opml")
@private
def follows_opml(reader: str):
    ext = services()
    cat = ext.holder.current
    edition = request.args.get("edition")
    if not edition or not EDITION.match(edition):
        return http.problem(400, "invalid_edition", "edition is required and must look like 'us-en'")
    fmt = request.args.get("format") or "rss"
    if not FORMAT.match(fmt):
        return http.problem(400, "invalid_parameter", "format must be rss or atom")
    if edition not in cat.editions and not is_configured(ext, edition):
        if not cat.ready:
            return http.not_ready()
        return http.problem(404, "unknown_edition", f"no edition {edition}")
    doc = ext.profiles.get(reader) or {}
    t = messages(lang_of(edition))
    sections = set(ext.configured.get(edition) or ()) | {s for (e, s) in cat.pages if e == edition}
    feeds = outlines(doc.get("follows") or {}, edition, sections, t, functools.partial(_storyline, ext, cat))
    body = render_opml(f"Newsroom · {edition.upper()}", lang_of(edition), feeds, fmt, request.host_url)
    resp = Response(body, content_type=OPML)
    resp.headers["Content-Disposition"] = f'attachment; filename="newsroom-follows-{edition}.opml"'
    return resp
