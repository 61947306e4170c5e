"""The feed routes (serving/web/feeds.py builds the documents): one per page kind, each answering from the page's
own data with the page's cache headers; an unknown page is the pages' 404, an origin not loaded yet a 503."""

from __future__ import annotations

from urllib.parse import quote

import orjson
from flask import request

from serving.api.stories import EDITION, STORY_ID, story_entry, unavailable
from serving.api.storylines import LANGUAGE, STORYLINE_ID, storyline_doc
from serving.state.context import services
from serving.web.feeds import FORMAT, answer, items_of_cards, items_of_stories
from serving.web.messages import messages
from serving.web.pages import SECTION, edition_view, story_labels, topic_title, topics_pool, with_counts
from serving.web.shell import bp, lang_of, not_found, not_ready, section_title
from stores.base import StoreError


@bp.get("/e/<edition>/<section>/feed.<fmt>")
def section_feed(edition: str, section: str, fmt: str):
    ext = services()
    cat = ext.holder.current
    if not EDITION.match(edition) or not SECTION.match(section) or not FORMAT.match(fmt):
        return not_found("There is no such feed.")
    page = cat.pages.get((edition, section))
    if page is None:
        return not_ready() if not cat.ready else not_found("There is no such feed.")
    lang = lang_of(edition)
    t = messages(lang)
    meta = {
        "title": f"{section_title(section, t)} · {edition.upper()} · Newsroom",
        "page": f"/e/{edition}/" + ("" if section == "top" else section),
        "self": request.path,
        "lang": lang,
        "updated": page.cycle,
    }
    key = ("section", edition, section, page.version)
    return answer(
        fmt, key, meta, lambda: items_of_stories(edition_view(cat, page), lang), ext.section_cache_control(page)
    )


@bp.get("/e/<edition>/topics/<topic_id>/feed.<fmt>")
def topic_feed(edition: str, topic_id: str, fmt: str):
    from serving.api import topics

    ext = services()
    cat = ext.holder.current
    if not EDITION.match(edition) or not topics.TOPIC_ID.match(topic_id) or not FORMAT.match(fmt):
        return not_found("There is no such feed.")
    pool, missing = topics_pool(ext, cat, edition)
    if missing is not None:
        return missing
    found = topics.lookup(ext, cat, pool, edition, topic_id, topics.MAX_LIMIT)
    if found is None:
        return not_found("There is no such feed.")
    body, json_etag = found
    lang = lang_of(edition)
    doc = orjson.loads(body)

    def items():
        for s in doc["stories"]:
            s["labels"] = story_labels(s)
        return items_of_stories(with_counts(cat, doc["stories"]), lang)

    meta = {
        "title": f"{topic_title(topic_id, messages(lang))[0]} · {edition.upper()} · Newsroom",
        "page": f"/e/{edition}/topics/{quote(topic_id, safe=':')}",
        "self": request.path,
        "lang": lang,
        "updated": doc.get("cycle"),
    }
    return answer(
        fmt, ("topic", edition, topic_id, json_etag), meta, items, topics.cache_control(ext, edition, topic_id)
    )


@bp.get("/stories/<story_id>/feed.<fmt>")
def story_feed(story_id: str, fmt: str):
    ext = services()
    cat = ext.holder.current
    if not STORY_ID.match(story_id) or not FORMAT.match(fmt):
        return not_found("There is no such feed.")
    try:
        entry = story_entry(ext, cat, cat.aliases.get(story_id, story_id))
    except StoreError as exc:
        return unavailable(story_id, exc)
    if entry is None:
        return not_ready() if not cat.ready else not_found("There is no such story (or it has expired).")
    story = entry.current
    lang = story.language or "en"
    meta = {
        "title": f"{messages(lang)('full_coverage')}: {story.title}",
        "page": f"/stories/{story.story_id}",
        "self": request.path,
        "lang": lang,
        "updated": orjson.loads(story.cards[0]).get("published_at") if story.cards else None,
    }
    key = ("story", story.story_id, story.version)
    return answer(fmt, key, meta, lambda: items_of_cards(list(story.cards), lang), ext.story_cache_control)


@bp.get("/storylines/<language>/<storyline_id>/feed.<fmt>")
def storyline_feed(language: str, storyline_id: str, fmt: str):
    ext = services()
    cat = ext.holder.current
    if not LANGUAGE.match(language) or not STORYLINE_ID.match(storyline_id) or not FORMAT.match(fmt):
        return not_found("There is no such feed.")
    try:
        sl = storyline_doc(ext, cat, language, storyline_id)
    except StoreError:
        return not_ready()
    if sl is None or sl.merged_into is not None:
        return not_ready() if not cat.ready else not_found("There is no such storyline.")

    def items():
        out = []
        for raw in sl.episodes[:50]:
            e = orjson.loads(raw)
            sid = e["story_id"]
            summary = messages(language).coverage(e.get("article_count") or 0, e.get("publisher_count") or 0)
            out.append(
                {
                    "id": f"/stories/{sid}",
                    "title": e.get("title") or "",
                    "link": f"/stories/{sid}",
                    "coverage": f"/stories/{sid}",
                    "published": e.get("first_at"),
                    "summary": summary,
                    "categories": [],
                    "author": "Newsroom",
                }
            )
        return out

    meta = {
        "title": f"{messages(language)('storyline')}: {sl.title}",
        "page": f"/storylines/{language}/{storyline_id}",
        "self": request.path,
        "lang": language,
        "updated": sl.updated_at,
    }
    return answer(fmt, ("storyline", language, storyline_id, sl.etag_base), meta, items, ext.story_cache_control)
