"""Stories as feeds: RSS 2.0 and Atom 1.0 for every edition section, topic, storyline and Full Coverage page.

Reads the same catalog entries as the HTML pages (serving/web/pages.py, storylines.py); writes XML. Routes:
``/e/{edition}/{section}/feed.{rss|atom}`` (``top`` is the front page), ``/e/{edition}/topics/{topic}/feed.{...}``
(a city's page is its place topic), ``/storylines/{language}/{id}/feed.{...}`` and ``/stories/{id}/feed.{...}``.
A list page gives one item per story (headline, the representative's link, the story's sources, labels and Full
Coverage link), never one per article: a reader subscribes to clustered stories. Full Coverage and a storyline
give one item per article or episode. Each page links its feeds (``<link rel="alternate">``, :func:`feed_links`);
each feed answers with its page's cache headers and an ETag (a shared object like the page, edge-cached).

The XML is built with ElementTree (every text escaped, always well-formed); item links go through the same
http(s)-only filter as the pages (``safe_url``), relative links are made absolute against the request's host.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from email.utils import format_datetime
from urllib.parse import quote

import orjson
from flask import request

from serving.web.messages import messages
from serving.web.shell import bp, cached, shared

FORMATS = {"rss": "application/rss+xml; charset=utf-8", "atom": "application/atom+xml; charset=utf-8"}
FORMAT = re.compile(r"^(rss|atom)$")
ATOM_NS = "http://www.w3.org/2005/Atom"
MAX_ITEMS = 50


def feed_links(path: str, title: str) -> list[tuple[str, str, str]]:
    """(type, href, title) of a page's feeds, for ``<link rel="alternate">`` in its head."""
    base = path.rstrip("/")
    return [(FORMATS[f].split(";")[0], f"{base}/feed.{f}", f"{title} ({f.upper()})") for f in FORMATS]


def _ts(iso: str | None) -> datetime:
    try:
        return datetime.fromisoformat(str(iso).replace("Z", "+00:00")).astimezone(UTC)
    except (TypeError, ValueError):
        return datetime(1970, 1, 1, tzinfo=UTC)


def story_item(story: dict, lang: str) -> dict:
    """One feed item of a ranked story: its headline, representative link, sources and labels."""
    from serving.web.shell import safe_url

    t = messages(lang)
    rep = story["representative"]
    labels = [t(f"label.{x}") if t.has(f"label.{x}") else x for x in story.get("labels") or ()]
    labels += [t(f"label.{x}") if t.has(f"label.{x}") else x for x in rep.get("labels") or ()]
    sources = [rep.get("publisher") or rep.get("publisher_name") or rep.get("publisher_id") or ""]
    sources += [c.get("publisher") or c.get("publisher_name") or "" for c in story.get("supporting") or ()]
    parts = []
    if story.get("article_count"):
        parts.append(t.coverage(story["article_count"], story.get("publisher_count") or 1))
    parts.append(", ".join(dict.fromkeys(s for s in sources if s)))
    if labels:
        parts.append(" · ".join(labels))
    if rep.get("lede"):
        parts.append(rep["lede"])
    return {
        "id": f"/stories/{story['story_id']}",
        "title": rep.get("title") or "",
        "link": safe_url(rep.get("url")) or f"/stories/{story['story_id']}",
        "coverage": f"/stories/{story['story_id']}",
        "published": rep.get("published_at"),
        "summary": " — ".join(p for p in parts if p),
        "categories": labels,
        "author": sources[0],
    }


def article_item(card: dict, lang: str) -> dict:
    from serving.web.shell import safe_url

    t = messages(lang)
    labels = [t(f"label.{x}") if t.has(f"label.{x}") else x for x in card.get("labels") or ()]
    publisher = card.get("publisher") or card.get("publisher_name") or card.get("publisher_id") or ""
    return {
        "id": article_urn(card.get("article_id")),
        "title": card.get("title") or "",
        "link": safe_url(card.get("url")) or "",
        "coverage": None,
        "published": card.get("published_at"),
        "summary": " · ".join([publisher, *labels]),
        "categories": labels,
        "author": publisher,
    }


def article_urn(article_id) -> str:
    """An article's item id: the same IRI on every host and in every story it moves to (a merge keeps it, so a
    reader's feed reader does not show it twice); ``quote`` keeps it one URN whatever the id holds."""
    return "urn:newsroom:article:" + quote(str(article_id), safe="")


def _abs(url: str | None) -> str:
    if not url:
        return request.host_url
    if url.startswith(("http://", "https://", "urn:")):
        return url
    return request.host_url.rstrip("/") + url


def render_feed(fmt: str, meta: dict, items: list[dict]) -> bytes:
    """The feed document. ``meta``: title, page (its HTML page's path), self (this feed's path), lang, updated."""
    updated = _ts(meta.get("updated"))
    if fmt == "rss":
        rss = ET.Element("rss", {"version": "2.0", "xmlns:atom": ATOM_NS})
        ch = ET.SubElement(rss, "channel")
        for tag, text in (("title", meta["title"]), ("link", _abs(meta["page"])), ("description", meta["title"])):
            ET.SubElement(ch, tag).text = text
        ET.SubElement(ch, "language").text = meta["lang"]
        ET.SubElement(ch, "lastBuildDate").text = format_datetime(updated)
        ET.SubElement(ch, "atom:link", {"href": _abs(meta["self"]), "rel": "self", "type": FORMATS["rss"][:19]})
        for it in items[:MAX_ITEMS]:
            el = ET.SubElement(ch, "item")
            ET.SubElement(el, "title").text = it["title"]
            ET.SubElement(el, "link").text = _abs(it["link"] or meta["page"])
            ET.SubElement(el, "guid", {"isPermaLink": "false"}).text = _abs(it["id"])
            ET.SubElement(el, "description").text = it["summary"]
            ET.SubElement(el, "pubDate").text = format_datetime(_ts(it["published"]))
            for c in it["categories"]:
                ET.SubElement(el, "category").text = c
            if it["coverage"]:
                ET.SubElement(el, "comments").text = _abs(it["coverage"])
        root = rss
    else:
        root = ET.Element("feed", {"xmlns": ATOM_NS, "xml:lang": meta["lang"]})
        ET.SubElement(root, "id").text = _abs(meta["self"])
        ET.SubElement(root, "title").text = meta["title"]
        ET.SubElement(root, "updated").text = updated.isoformat().replace("+00:00", "Z")
        ET.SubElement(ET.SubElement(root, "author"), "name").text = "Newsroom"
        ET.SubElement(root, "link", {"rel": "self", "href": _abs(meta["self"]), "type": FORMATS["atom"][:20]})
        ET.SubElement(root, "link", {"rel": "alternate", "href": _abs(meta["page"]), "type": "text/html"})
        for it in items[:MAX_ITEMS]:
            el = ET.SubElement(root, "entry")
            ET.SubElement(el, "id").text = _abs(it["id"])
            ET.SubElement(el, "title").text = it["title"]
            ET.SubElement(el, "updated").text = _ts(it["published"]).isoformat().replace("+00:00", "Z")
            ET.SubElement(ET.SubElement(el, "author"), "name").text = it["author"] or "Newsroom"
            ET.SubElement(el, "link", {"rel": "alternate", "href": _abs(it["link"] or meta["page"])})
            if it["coverage"]:
                ET.SubElement(el, "link", {"rel": "related", "href": _abs(it["coverage"]), "type": "text/html"})
            ET.SubElement(el, "summary").text = it["summary"]
            for c in it["categories"]:
                ET.SubElement(el, "category", {"term": c})
        root = root
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="utf-8", xml_declaration=False)


def answer(fmt: str, key: tuple, meta: dict, items_of, cache_control: str):
    """The feed response: rendered once per catalog and host (links are absolute), the page's cache headers."""
    from serving.state.context import services

    cat = services().holder.current

    def body() -> str:
        return render_feed(fmt, meta, items_of()).decode()

    data, etag = cached(cat, ("feed", fmt, request.host, *key), body)
    return shared(data, etag, cache_control, content_type=FORMATS[fmt])


def items_of_stories(stories: list[dict], lang: str) -> list[dict]:
    return [story_item(s, lang) for s in stories]


def items_of_cards(cards: list[bytes | dict], lang: str) -> list[dict]:
    out = []
    for c in cards[:MAX_ITEMS]:
        card = orjson.loads(c) if isinstance(c, (bytes, str)) else c
        out.append(article_item(card, lang))
    return out


@bp.app_template_global("feed_links")
def _feed_links_global(path: str, title: str) -> list[tuple[str, str, str]]:
    return feed_links(path, title)
