"""Topic pages (shared endpoint): ``GET /v1/topics/{topic_id}?edition=&limit=``.

Reads the edition's candidate pool in the in-memory catalog (:class:`serving.state.catalog.PreparedPool`), never a store.
A topic id is ``entity:{id}`` (an alias-table entity id of the pool's ``entities``, e.g. ``entity:org:isro``),
``place:{code}`` (a region or city code of the pool's ``places`` -- cities of the editions file's gazetteer,
transforms/editions/overlays/topics.py -- or the place's entity id ``place:{code}``) or ``topic:{name}`` (a section of the pool's ``topics``).
The page lists the edition's live stories about it, ranked by the edition's own score (pool order), each with the
pool's representative card: the same story items as For you without rank and reason.

Pre-built or on demand: every cycle the editions stage pre-builds the pages of the edition's followed and trending
topics (transforms/editions/overlays/topics.py, at most 40 per edition) and publishes them as snapshots under
``topic/{edition}/{id}``; the pool lists which ids it pre-built (``topic_pages``). For an id in that list whose
snapshot the watcher holds, the page is the snapshot's (:class:`serving.state.catalog.PreparedTopic`: the same fields and
story items, in the same order, as the on-demand render of that pool); any other id (the long tail) is rendered on
demand from the pool. Either way the page holds the pool's stories about the id, so the two cannot disagree.

Shared like a section page (serving/http/conventions.py): identical bytes for every reader, no Cookie or Authorization,
strong ETag with 304, CORS for any origin; the edge TTL is shorter (``NEWSROOM_TOPIC_S_MAXAGE``, 30 s) than a
section's because most topic pages are built on demand and none is purged on every cycle. A rendered body is
built at most once per (edition, pool version, topic id, limit, snapshot version) and kept in a bounded LRU
(:class:`TopicPages`).

Local pages (the design: local sections built on demand at most once a minute, cached 5 minutes at the edge): a
city page is ``place:{city}`` whose value is a gazetteer city of the edition's region (editions.json
``local_places`` as codes, serving/api/editions.py ``local_cities``). Its edge TTL is ``NEWSROOM_LOCAL_S_MAXAGE``
(300 s), and it is rendered at most once per :data:`LOCAL_RENDER_S` (60 s) per (edition, city, limit): pool
versions published within that minute (one a minute normally, several when the stage catches up) reuse the body,
which says the pool version it was built from. Why it may lag a minute: a city's stories change slowly, and one
body a minute keeps its ETag (and the edge's copy) stable. Takedowns are not made to wait: a reused body is checked
against the current pool when the pool changed (every story it lists still there with the same item bytes), and
rebuilt at once when one is not.
Storylines: an entity or place page also lists the storylines of its entity from the storyline index
(``storylines``, newest first, serving/api/storylines.py ``topic_storylines``), including storylines whose stories
all left the live pool; a topic whose entity has storylines but no live story answers with them and no story.
404 ``unknown_topic`` when no live story and no storyline is about the id; 400 ``invalid_topic`` for a malformed
id.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

import numpy as np
import orjson
from flask import request

from schemas.pages import MAX_LIMIT
from serving.api.storylines import topic_storylines
from serving.http import conventions as http
from serving.state.catalog import place_entity
from serving.state.context import services
from transforms.articles.entities import topic_name

bp = http.shared_blueprint("topics", __name__)

KINDS = ("entity", "place", "topic")
# One definition for the handler and the OpenAPI document (ECMA-262 and Python read this class the same way).
TOPIC_ID_PATTERN = "^(entity|place|topic):[^\\u0000-\\u001f\\u007f/]{1,200}$"
TOPIC_ID = re.compile(TOPIC_ID_PATTERN)
EDITION = re.compile(r"^[a-z]{2}-[a-z]{2,3}$")
PAGE_SCHEMA = "newsroom.topic_page/v1"
DEFAULT_LIMIT = 20
CACHE_ENTRIES = 1024
CACHE_BYTES = 16 * 1024 * 1024  # a 100-story page is ~50 KB: the bytes bound the cache before the entry count does
LOCAL_RENDER_S = 60.0  # a city page is rendered at most this often (module docstring); its edge TTL is 300 s


def is_city(cities: Mapping[str, frozenset], edition: str, topic_id: str) -> bool:
    """A local page: ``place:{code}`` with ``code`` a gazetteer city of the edition's region."""
    return topic_id.startswith("place:") and topic_id[6:] in cities.get(edition, ())


def cache_control(ext, edition: str, topic_id: str) -> str:
    """The topic page's Cache-Control: the local TTL for a city page, else the topic TTL."""
    return ext.local_cache_control if is_city(ext.local_cities, edition, topic_id) else ext.topic_cache_control


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
    """The body and strong ETag of a pre-built topic page (:class:`serving.state.catalog.PreparedTopic`)."""
    items = b",".join(item + b"}" for item in page.items[:limit])
    body = orjson.dumps(page.head)[:-1] + b',"stories":[' + items + b"]}"
    return body, f'"{hashlib.sha256(body).hexdigest()[:20]}"'


def render(pool, topic_id: str, limit: int) -> tuple[bytes, str] | None:
    """The page body and its strong ETag, or None when no story of the pool is about the topic."""
    kind, value = topic_id.split(":", 1)
    order = stories_about(pool, kind, value)
    if not order.size:
        return None
    head = _head(pool, topic_id, int(order.size))
    items = b",".join(pool.item_bytes[i] + b"}" for i in order[:limit].tolist())
    body = orjson.dumps(head)[:-1] + b',"stories":[' + items + b"]}"
    return body, f'"{hashlib.sha256(body).hexdigest()[:20]}"'


class TopicPages:
    """Rendered topic pages by (edition, pool version, cycle, topic id, limit), least recently used evicted past
    ``size`` entries or ``max_bytes`` of bodies. Built under the lock, so each key is rendered at most once while
    it stays cached (a render is a join of at most MAX_LIMIT ready item slices). A new pool version makes new keys;
    old ones age out. City pages (``cities``: edition -> city codes, :func:`is_city`) are keyed by (edition, topic
    id, limit) instead and rebuilt after :data:`LOCAL_RENDER_S` of ``clock`` or when :meth:`_still_valid` fails."""

    def __init__(
        self,
        size: int = CACHE_ENTRIES,
        max_bytes: int = CACHE_BYTES,
        cities: Mapping[str, frozenset] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.size = size
        self.max_bytes = max_bytes
        self.cities = cities or {}
        self.clock = clock
        self.bytes = 0
        self._items: OrderedDict[tuple, tuple[bytes, str] | None] = OrderedDict()
        self._local: dict[tuple, tuple] = {}  # city page key -> (built at, (pool version, fingerprint), listed)
        self._lock = threading.Lock()
        self.builds = 0
        self.prebuilt = 0  # bodies taken from a pre-built snapshot (the rest were rendered from the pool)

    def get(self, pool, topic_id: str, limit: int, prebuilt=None) -> tuple[bytes, str] | None:
        """The page of ``topic_id``: from ``prebuilt`` (a PreparedTopic) when given, else rendered from ``pool``.
        The key holds the pool's fingerprint: a pool re-filtered after a takedown keeps its version, not its items,
        and its pre-built topic pages are re-filtered in the same poll (serving/state/watcher.py)."""
        fingerprint = getattr(pool, "fingerprint", "")
        local = is_city(self.cities, pool.edition, topic_id)
        if local:
            key = (pool.edition, topic_id, limit)
        else:
            key = (
                pool.edition,
                pool.version,
                pool.cycle,
                fingerprint,
                topic_id,
                limit,
                getattr(prebuilt, "version", None),
            )
        with self._lock:
            if key in self._items and (not local or self._still_valid(key, pool)):
                self._items.move_to_end(key)
                return self._items[key]
            page = render_prebuilt(prebuilt, limit) if prebuilt is not None else render(pool, topic_id, limit)
            self.builds += 1
            self.prebuilt += prebuilt is not None
            stale = self._items.pop(key, None)  # a city page rebuilt under its key
            self.bytes -= len(stale[0]) if stale else 0
            self._items[key] = page
            self.bytes += len(page[0]) if page else 0
            if local:
                self._local[key] = (self.clock(), (pool.version, fingerprint), _listed(page))
            while len(self._items) > self.size or (self.bytes > self.max_bytes and len(self._items) > 1):
                old_key, old = self._items.popitem(last=False)
                self.bytes -= len(old[0]) if old else 0
                self._local.pop(old_key, None)
            return page

    def _still_valid(self, key: tuple, pool) -> bool:
        """A cached city page may be served: built less than LOCAL_RENDER_S ago, and, when the pool changed since
        it was last checked, every story it lists is in the pool with the same item (a taken-down story or card
        fails this). Checked once per pool change: O(listed stories)."""
        built, seen, listed = self._local[key]
        if self.clock() - built >= LOCAL_RENDER_S:
            return False
        now_seen = (pool.version, getattr(pool, "fingerprint", ""))
        if now_seen == seen:
            return True
        for story_id, item in listed:
            i = pool.index.get(story_id)
            if i is None or pool.item_bytes[i] != item:
                return False
        self._local[key] = (built, now_seen, listed)
        return True


def _listed(page: tuple[bytes, str] | None) -> tuple[tuple[str, bytes], ...]:
    """(story id, item bytes without the closing brace) of each story a rendered page lists."""
    if page is None:
        return ()
    return tuple((s["story_id"], orjson.dumps(s)[:-1]) for s in orjson.loads(page[0])["stories"])


def lookup(ext, cat, pool, edition: str, topic_id: str, limit: int) -> tuple[bytes, str] | None:
    """(body, ETag) of the topic page: the editions stage's snapshot while the pool lists it as pre-built this
    cycle, else rendered on demand from the pool, plus the storylines of its entity from the storyline index
    (:func:`with_storylines`); None when no live story is about it and no storyline either. The JSON API and the
    web page (serving/web/pages.py) both answer from this."""
    prebuilt = cat.topics.get((edition, topic_id)) if topic_id in pool.topic_pages else None
    page = ext.topic_pages.get(pool, topic_id, limit, prebuilt)
    storylines = topic_storylines(ext, cat, edition, topic_id)
    if not storylines:
        return page
    return with_storylines(page or archive_only(pool, topic_id), storylines)


def archive_only(pool, topic_id: str) -> tuple[bytes, str]:
    """The page of a topic no live story is about but whose entity has storylines: no story, ``story_count`` 0."""
    return orjson.dumps(_head(pool, topic_id, 0))[:-1] + b',"stories":[]}', ""


def _head(pool, topic_id: str, story_count: int) -> dict:
    """A topic page's fields before its stories (the same for a live and an archive-only page)."""
    kind, value = topic_id.split(":", 1)
    return {
        "schema": PAGE_SCHEMA,
        "topic": topic_id,
        "kind": kind,
        "value": value,
        "name": topic_name(topic_id, pool.edition.partition("-")[2] or None),
        "edition": pool.edition,
        "pool_version": pool.version,
        "cycle": pool.cycle,
        "story_count": story_count,
    }


def with_storylines(page: tuple[bytes, str], storylines: list[dict]) -> tuple[bytes, str]:
    """The page with ``storylines`` appended and its ETag over the new bytes (the index moves on its own clock)."""
    body = page[0][:-1] + b',"storylines":' + orjson.dumps(storylines) + b"}"
    return body, f'"{hashlib.sha256(body).hexdigest()[:20]}"'


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
            from serving.api import editions

            return editions.pending(ext, edition, f"edition {edition}")
        if not cat.ready:
            return http.not_ready()
        return http.problem(404, "unknown_edition", f"no edition {edition}", cache_control=http.NEGATIVE)
    page = lookup(ext, cat, pool, edition, topic_id, limit)
    if page is None:
        detail = f"no live story or storyline about {topic_id} in {edition}"
        return http.problem(404, "unknown_topic", detail, cache_control=http.NEGATIVE)
    body, etag = page
    return http.shared_response(body, etag, cache_control(ext, edition, topic_id))
