"""Topic pages (shared endpoint): ``GET /v1/topics/{topic_id}?edition=&limit=``.

Reads the edition's candidate pool in the in-memory catalog (:class:`serving.catalog.PreparedPool`), never a store.
A topic id is ``entity:{id}`` (an alias-table entity id of the pool's ``entities``, e.g. ``entity:org:isro``),
``place:{code}`` (a region or city code of the pool's ``places`` -- cities of the editions file's gazetteer,
transforms/editions/topics.py -- or the place's entity id ``place:{code}``) or ``topic:{name}`` (a section of the pool's ``topics``).
The page lists the edition's live stories about it, ranked by the edition's own score (pool order), each with the
pool's representative card: the same story items as For you without rank and reason.

Pre-built or on demand: every cycle the editions stage pre-builds the pages of the edition's followed and trending
topics (transforms/editions/topics.py, at most 40 per edition) and publishes them as snapshots under
``topic/{edition}/{id}``; the pool lists which ids it pre-built (``topic_pages``). For an id in that list whose
snapshot the watcher holds, the page is the snapshot's (:class:`serving.catalog.PreparedTopic`: the same fields and
story items, in the same order, as the on-demand render of that pool); any other id (the long tail) is rendered on
demand from the pool. Either way the page holds the pool's stories about the id, so the two cannot disagree.

Shared like a section page (serving/http.py): identical bytes for every reader, no Cookie or Authorization,
strong ETag with 304, CORS for any origin; the edge TTL is shorter (``NEWSROOM_TOPIC_S_MAXAGE``, 30 s) than a
section's because most topic pages are built on demand and none is purged on every cycle. A rendered body is
built at most once per (edition, pool version, topic id, limit, snapshot version) and kept in a bounded LRU
(:class:`TopicPages`).
404 ``unknown_topic`` when no live story is about the id; 400 ``invalid_topic`` for a malformed id.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict

import numpy as np
import orjson
from flask import Blueprint, request

from schemas.pages import MAX_LIMIT
from serving import http
from serving.catalog import place_entity
from serving.context import services

bp = Blueprint("topics", __name__)
bp.before_request(http.shared_preflight)
bp.before_request(http.reject_personal_headers)
bp.after_request(http.shared_cors)

KINDS = ("entity", "place", "topic")
# One definition for the handler and the OpenAPI document (ECMA-262 and Python read this class the same way).
TOPIC_ID_PATTERN = "^(entity|place|topic):[^\\u0000-\\u001f\\u007f/]{1,200}$"
TOPIC_ID = re.compile(TOPIC_ID_PATTERN)
EDITION = re.compile(r"^[a-z]{2}-[a-z]{2,3}$")
PAGE_SCHEMA = "newsroom.topic_page/v1"
DEFAULT_LIMIT = 20
CACHE_ENTRIES = 1024
CACHE_BYTES = 16 * 1024 * 1024  # a 100-story page is ~50 KB: the bytes bound the cache before the entry count does


def stories_about(pool, kind: str, value: str) -> np.ndarray:
    """Candidate indices of the pool's stories about (kind, value), by the edition's own score (ties: pool order).
    A place is its region code in the pool's ``places`` or its entity id (``place:{value}``) in ``entities``."""
    if kind == "place":
        parts = [x for x in (pool.by_place.get(value), pool.by_entity.get(place_entity(value))) if x is not None]
        idx = np.unique(np.concatenate(parts)) if parts else None
    else:
        idx = (pool.by_entity if kind == "entity" else pool.by_topic).get(value)
    if idx is None or not len(idx):
        return np.zeros(0, dtype=np.intp)
    return idx[np.argsort(-pool.base[idx], kind="stable")]


def render_prebuilt(page, limit: int) -> tuple[bytes, str]:
    """The body and strong ETag of a pre-built topic page (:class:`serving.catalog.PreparedTopic`)."""
    items = b",".join(item + b"}" for item in page.items[:limit])
    body = orjson.dumps(page.head)[:-1] + b',"stories":[' + items + b"]}"
    return body, f'"{hashlib.sha256(body).hexdigest()[:20]}"'


def render(pool, topic_id: str, limit: int) -> tuple[bytes, str] | None:
    """The page body and its strong ETag, or None when no story of the pool is about the topic."""
    kind, value = topic_id.split(":", 1)
    order = stories_about(pool, kind, value)
    if not order.size:
        return None
    head = {
        "schema": PAGE_SCHEMA,
        "topic": topic_id,
        "kind": kind,
        "value": value,
        "edition": pool.edition,
        "pool_version": pool.version,
        "cycle": pool.cycle,
        "story_count": int(order.size),
    }
    items = b",".join(pool.item_bytes[i] + b"}" for i in order[:limit].tolist())
    body = orjson.dumps(head)[:-1] + b',"stories":[' + items + b"]}"
    return body, f'"{hashlib.sha256(body).hexdigest()[:20]}"'


class TopicPages:
    """Rendered topic pages by (edition, pool version, cycle, topic id, limit), least recently used evicted past
    ``size`` entries or ``max_bytes`` of bodies. Built under the lock, so each key is rendered at most once while it stays cached (a render is a join
    of at most MAX_LIMIT ready item slices). A new pool version makes new keys; old ones age out."""

    def __init__(self, size: int = CACHE_ENTRIES, max_bytes: int = CACHE_BYTES):
        self.size = size
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[tuple, tuple[bytes, str] | None] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0
        self.prebuilt = 0  # bodies taken from a pre-built snapshot (the rest were rendered from the pool)

    def get(self, pool, topic_id: str, limit: int, prebuilt=None) -> tuple[bytes, str] | None:
        """The page of ``topic_id``: from ``prebuilt`` (a PreparedTopic) when given, else rendered from ``pool``.
        The key holds the pool's fingerprint: a pool re-filtered after a takedown keeps its version, not its items,
        and its pre-built topic pages are re-filtered in the same poll (serving/watcher.py)."""
        key = (
            pool.edition,
            pool.version,
            pool.cycle,
            getattr(pool, "fingerprint", ""),
            topic_id,
            limit,
            prebuilt.version if prebuilt else None,
        )
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            page = render_prebuilt(prebuilt, limit) if prebuilt is not None else render(pool, topic_id, limit)
            self.builds += 1
            self.prebuilt += prebuilt is not None
            self._items[key] = page
            self.bytes += len(page[0]) if page else 0
            while len(self._items) > self.size or (self.bytes > self.max_bytes and len(self._items) > 1):
                _, old = self._items.popitem(last=False)
                self.bytes -= len(old[0]) if old else 0
            return page


def lookup(ext, cat, pool, edition: str, topic_id: str, limit: int) -> tuple[bytes, str] | None:
    """(body, ETag) of the topic page: the editions stage's snapshot while the pool lists it as pre-built this
    cycle, else rendered on demand from the pool; None when no live story is about it. The JSON API and the web
    page (serving/web.py) both answer from this."""
    prebuilt = cat.topics.get((edition, topic_id)) if topic_id in pool.topic_pages else None
    return ext.topic_pages.get(pool, topic_id, limit, prebuilt)


@bp.get("/v1/topics/<topic_id>")
def topic_page(topic_id: str):
    ext = services()
    cat = ext.holder.current
    if not TOPIC_ID.match(topic_id):
        return http.problem(
            400, "invalid_topic", f"topic id must be entity:{{id}}, place:{{code}} or topic:{{name}}, got {topic_id!r}"
        )
    edition = request.args.get("edition")
    if edition is None or not EDITION.match(edition):
        return http.problem(400, "invalid_edition", f"edition is required and looks like 'us-en', got {edition!r}")
    try:
        limit = http.parse_limit(request.args.get("limit"), MAX_LIMIT) or DEFAULT_LIMIT
    except ValueError as exc:
        return http.problem(400, "invalid_limit", str(exc))
    pool = cat.pools.get(edition)
    if pool is None:
        if edition in ext.configured:
            return http.warming_up(f"edition {edition}")
        if not cat.ready:
            return http.not_ready()
        return http.problem(404, "unknown_edition", f"no edition {edition}", cache_control=http.NEGATIVE)
    page = lookup(ext, cat, pool, edition, topic_id, limit)
    if page is None:
        return http.problem(
            404, "unknown_topic", f"no live story about {topic_id} in {edition}", cache_control=http.NEGATIVE
        )
    body, etag = page
    return http.shared_response(body, etag, ext.topic_cache_control)
