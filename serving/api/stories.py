"""Full coverage of one story (shared endpoint): ``GET /v1/stories/{story_id}?edition=&cursor=&limit=``.

Reads the in-memory catalog; a story the catalog does not hold in memory (unreferenced by any page or pool and not
updated for ``NEWSROOM_STORY_RETAIN_S``, see :mod:`serving.state.watcher`) but whose pointer is listed is loaded on demand
from the snapshot store into a bounded LRU (:func:`story_entry`): the one shared request that may read a store, and
only for a story that exists (an unknown id is a 404 without any store read; a store failure is a 503). Articles are ordered by (published_at desc, article_id asc); a page ends with a
``next_cursor`` that carries (story id, story version, keyset of the last article served), signed
(:mod:`serving.http.cursor`).

Cursor and versions (the design choice): a cursor is bound to the story version it was minted on. While that
version is held (the current one, or a superseded one for ``NEWSROOM_STORY_GRACE_S``, default 10 min) the next page
comes from exactly that version, so a reader paging through coverage never sees an article twice or misses one even
when new articles arrive mid-pagination. Once the version is gone (or the cursor comes from a newer version another
origin process already holds), the keyset is applied to the current version instead and the answer says so: its
``story_version`` is the version actually paged and the header ``Newsroom-Cursor-Rebased: v{old}`` is set. Because
the keyset is (published_at, article_id), the rebased page still never repeats an article the reader has seen.
A cursor for another story, or a forged one, is a 400.

Merged ids answer 301 to the survivor (aliases are resolved at load, so always one hop); ``edition`` and ``limit``
are kept, a cursor is dropped (it was bound to the merged story).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlencode

import orjson
from flask import Response, request

from schemas.pages import MAX_LIMIT
from serving.api.storylines import linked_storyline
from serving.http import conventions as http
from serving.http import cursor as cursors
from serving.state.catalog import STORY_PAGE_SIZE, Catalog, StoryEntry
from serving.state.context import services
from stores.base import StoreError

log = logging.getLogger(__name__)
bp = http.shared_blueprint("stories", __name__)

STORY_ID = re.compile(r"^[0-9]{1,20}$")
EDITION = re.compile(r"^[a-z]{2}-[a-z]{2,3}$")


def story_entry(ext, cat: Catalog, story_id: str) -> StoryEntry | None:
    """The story from memory, else on demand (serving.state.watcher.PointerWatcher.story). Raises StoreError."""
    entry = cat.stories.get(story_id)
    if entry is not None:
        return entry
    return ext.watcher.story(cat, story_id)


def unavailable(story_id: str, exc: Exception):
    """503 for a story that exists but could not be loaded from the snapshot store just now."""
    log.warning("story %s not loadable on demand: %s", story_id, exc)
    return http.retry_later("story_unavailable", f"story {story_id} is temporarily unavailable")


@bp.get("/v1/stories/<story_id>")
def story_page(story_id: str):
    ext = services()
    cat = ext.holder.current
    if not STORY_ID.match(story_id):
        return http.problem(
            404,
            "unknown_story",
            f"no story {story_id!r}: story ids are decimal 64-bit integers",
            cache_control=http.NEGATIVE,
        )
    args = request.args
    edition = args.get("edition")
    if edition is not None and not EDITION.match(edition):
        return http.problem(400, "invalid_edition", f"edition must look like 'us-en', got {edition!r}")
    try:
        limit = http.parse_limit(args.get("limit"), MAX_LIMIT) or STORY_PAGE_SIZE
    except ValueError as exc:
        return http.problem(400, "invalid_limit", str(exc))
    survivor = cat.aliases.get(story_id)
    if survivor is not None:
        query = {k: v for k, v in (("edition", edition), ("limit", args.get("limit"))) if v is not None}
        location = f"/v1/stories/{survivor}" + (f"?{urlencode(query)}" if query else "")
        doc = {"status": 301, "detail": f"story {story_id} was merged into {survivor}", "survivor": survivor}
        resp = Response(orjson.dumps(doc), status=301, content_type=http.JSON)
        resp.headers["Cache-Control"] = ext.story_cache_control
        resp.headers["Location"] = location
        return resp
    try:
        entry = story_entry(ext, cat, story_id)
    except StoreError as exc:
        return unavailable(story_id, exc)
    if entry is None:
        if not cat.ready:
            return http.not_ready()
        return http.problem(404, "unknown_story", f"no story {story_id}", cache_control=http.NEGATIVE)
    if edition is not None and edition not in cat.editions:
        return http.problem(404, "unknown_edition", f"no edition {edition}", cache_control=http.NEGATIVE)
    story, start, rebased = entry.current, 0, None
    raw = args.get("cursor")
    if raw:
        try:
            sid, version, neg_ms, article_id = cursors.decode(ext.cursor_secret, "story", raw)
            if sid != story_id:
                raise cursors.CursorError(f"cursor belongs to story {sid}, not {story_id}")
        except (cursors.CursorError, ValueError, TypeError) as exc:
            return http.problem(400, "invalid_cursor", f"invalid cursor: {exc}")
        held = entry.version(version)
        if held is None:
            rebased = version
        else:
            story = held
        start = story.start_after(-neg_ms, article_id)
    end = start + limit
    next_cursor = None
    if end < len(story.keys):
        neg_ms, article_id = story.keys[end - 1]
        next_cursor = cursors.encode(ext.cursor_secret, "story", [story_id, story.version, neg_ms, article_id])
    storyline = linked_storyline(ext, cat, story)
    body = story.render(start, limit, edition, next_cursor, storyline)
    etag = f'"{story.etag_base}-{start}-{limit}-{edition or ""}' + (f'-{storyline}"' if storyline else '"')
    resp = http.shared_response(body, etag, ext.story_cache_control)
    if rebased is not None:
        resp.headers["Newsroom-Cursor-Rebased"] = f"v{rebased}"
    return resp
