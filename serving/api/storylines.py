"""Storyline pages (shared endpoint): ``GET /v1/storylines/{language}/{storyline_id}?cursor=&limit=``.

One storyline's episodes (its stories in one language, live or long archived) newest first by (first_at desc,
story id desc), ``limit`` at most ``schemas.pages.MAX_LIMIT`` (default :data:`PAGE_SIZE`). The document is written
by the snapshot publisher (transforms/editions/overlays/storyline_pages.py) and loaded on demand from the snapshot store
into a bounded LRU (:meth:`serving.state.watcher.PointerWatcher.storyline`): a storyline whose pointer is not listed is a
404 without any store read, a store failure a 503, exactly like an old story's Full Coverage page.

Cursor: the keyset of the last episode served (first_at ms, story id), signed (:mod:`serving.http.cursor`) and bound to
the storyline, not to a version. Episodes only ever join at the new end or leave (a split, a takedown), so the next
page of any later version continues after the last episode seen, never repeating one. A cursor of another
storyline, or a forged one, is a 400. A merged storyline answers 301 to its survivor (``limit`` kept).

Same cache headers as story pages (``NEWSROOM_STORY_S_MAXAGE``), an ETag per (version, start, limit), no personal
header accepted, the same bytes for every reader.

Topic pages list the storylines of their entity from the storyline index (:func:`topic_storylines`, read by
serving/api/topics.py for the JSON page and so by the web page too), including storylines whose stories all left the
live pool.
"""

from __future__ import annotations

import logging
import re

import orjson
from flask import Response, request

from schemas.pages import MAX_LIMIT, storyline_index_shard
from serving.http import conventions as http
from serving.http import cursor as cursors
from serving.state.catalog import place_entity
from serving.state.context import services
from stores.base import StoreError

log = logging.getLogger(__name__)
bp = http.shared_blueprint("storylines", __name__)

STORYLINE_ID = re.compile(r"^[0-9]{1,20}$")
LANGUAGE = re.compile(r"^[a-z]{2,3}$")
PAGE_SIZE = 20
TOPIC_STORYLINES = 10  # storylines a topic page lists from the storyline index, newest first


def storyline_doc(ext, cat, language: str, storyline_id: str):
    """The prepared storyline (None: unknown). Raises StoreError when the snapshot store cannot be read."""
    return ext.watcher.storyline(cat, language, storyline_id)


def linked_storyline(ext, cat, story) -> str | None:
    """The storyline a story page links ("Follow this story over time") and its JSON names: the story's storyline
    when its page, in the story's language, lists more than one episode (a merged one: its survivor's, one hop);
    else None. The ranker names the storyline in the coverage document from what its book knows (a story that
    joined it, or more than one member), which a split, a detach, a story merge, a takedown or a storyline of
    other languages leaves at one episode on the page; the published storyline is the archive's own count. Loaded
    on demand like the storyline page itself (the LRU: a store read once per storyline version and process); a
    store failure links nothing (the link is never claimed unseen)."""
    sl_id = story.storyline_id
    if sl_id is None:
        return None
    try:
        sl = storyline_doc(ext, cat, story.language, sl_id)
        if sl is not None and sl.merged_into is not None:
            sl = storyline_doc(ext, cat, story.language, sl.merged_into)
    except StoreError as exc:
        log.warning("storyline %s/%s of story %s not loadable: %s", story.language, sl_id, story.story_id, exc)
        return None
    if sl is None or sl.merged_into is not None or len(sl.episodes) < 2:
        return None
    return sl.storyline_id


def topic_storylines(ext, cat, edition: str, topic_id: str) -> list[dict]:
    """The storylines of a topic's entity from the storyline index (transforms/editions/overlays/storyline_index.py), live
    or long out of the live pool, newest first: ``{"storyline_id", "language", "title", "updated_at"}``. An entity
    or place topic only (a section is no entity). A store failure lists none (the page's live stories still
    serve); the shard is loaded on demand into the storyline LRU, so a topic page costs no store read once held."""
    kind, _, value = topic_id.partition(":")
    if kind not in ("entity", "place"):
        return []
    entity = value if kind == "entity" else place_entity(value)
    language = edition.partition("-")[2]
    try:
        shard = ext.watcher.storyline_index(cat, language, storyline_index_shard(entity))
    except StoreError as exc:
        log.warning("storyline index of %s (%s) not loadable: %s", entity, language, exc)
        return []
    entries = (shard or {}).get(entity, ())[:TOPIC_STORYLINES]
    return [
        {"storyline_id": x["storyline_id"], "language": language, "title": x["title"], "updated_at": x["updated_at"]}
        for x in entries
    ]


@bp.get("/v1/storylines/<language>/<storyline_id>")
def storyline_page(language: str, storyline_id: str):
    ext = services()
    cat = ext.holder.current
    if not LANGUAGE.match(language) or not STORYLINE_ID.match(storyline_id):
        detail = f"no storyline {language!r}/{storyline_id!r}: a language code and a decimal 64-bit id"
        return http.problem(404, "unknown_storyline", detail, cache_control=http.NEGATIVE)
    args = request.args
    try:
        limit = http.parse_limit(args.get("limit"), MAX_LIMIT) or PAGE_SIZE
    except ValueError as exc:
        return http.problem(400, "invalid_limit", str(exc))
    try:
        sl = storyline_doc(ext, cat, language, storyline_id)
    except StoreError as exc:
        log.warning("storyline %s/%s not loadable on demand: %s", language, storyline_id, exc)
        return http.retry_later("storyline_unavailable", f"storyline {storyline_id} is temporarily unavailable")
    if sl is None:
        if not cat.ready:
            return http.not_ready()
        detail = f"no storyline {storyline_id} in {language}"
        return http.problem(404, "unknown_storyline", detail, cache_control=http.NEGATIVE)
    if sl.merged_into is not None:
        location = f"/v1/storylines/{language}/{sl.merged_into}"
        if args.get("limit") is not None:
            location += f"?limit={limit}"
        doc = {"status": 301, "detail": f"storyline {storyline_id} was merged into {sl.merged_into}"}
        resp = Response(orjson.dumps(dict(doc, survivor=sl.merged_into)), status=301, content_type=http.JSON)
        resp.headers["Cache-Control"] = ext.story_cache_control
        resp.headers["Location"] = location
        return resp
    start = 0
    raw = args.get("cursor")
    if raw:
        try:
            lang, sid, first_ms, story_id = cursors.decode(ext.cursor_secret, "storyline", raw)
            if (lang, sid) != (language, storyline_id):
                raise cursors.CursorError(f"cursor belongs to storyline {lang}/{sid}")
            start = sl.start_after(int(first_ms), int(story_id))
        except (cursors.CursorError, ValueError, TypeError) as exc:
            return http.problem(400, "invalid_cursor", f"invalid cursor: {exc}")
    end = start + limit
    next_cursor = None
    if end < len(sl.keys):
        neg_ms, neg_id = sl.keys[end - 1]
        next_cursor = cursors.encode(ext.cursor_secret, "storyline", [language, storyline_id, -neg_ms, -neg_id])
    body = sl.render(start, limit, next_cursor)
    return http.shared_response(body, f'"{sl.etag_base}-{start}-{limit}"', ext.story_cache_control)
