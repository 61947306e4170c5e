"""The pointer watcher: the only code in the origin that reads the pointer and snapshot stores.

Reads: every latest pointer (PointerStore: ``{edition}/{section}``, ``pool/{edition}``, ``story/{id}``, ``aliases``,
``topic/{edition}/{topic id}``, ``storyline/{language}/{id}``, ``storyline_index/{language}/{shard}``)
and, for each pointer that moved, its snapshot object (SnapshotStore, names in schemas/pages.py). Writes: a new
:class:`serving.state.catalog.Catalog` into the :class:`CatalogHolder` (one reference assignment).

Behaviour:

- A poll lists the pointers, fetches only the objects whose pointer moved, validates each against its JSON schema
  (the publisher validated it too; the origin never serves what it cannot vouch for), prepares it, then builds the
  next catalog from the previous one plus the changes and swaps it in. Nothing is served half-loaded.
- A pointer whose object is missing or invalid keeps its previous version live; that (name, version) is not fetched
  again (the publisher must move the pointer), a transient store error is retried on the next poll.
- When the stores cannot be reached the poll fails, is counted, and the current catalog stays: the last loaded
  pages keep serving for as long as the process lives. Pointers that vanish are dropped only after a successful
  listing.
- Superseded story versions stay reachable for ``story_grace_s`` (default 600 s) so that a keyset cursor minted on
  them keeps paging the same version (see serving/api/stories.py).
- The poll interval (default 2 s) bounds how stale the origin is behind a pointer move; the CDN's s-maxage adds to it.
  If the pointer store offers a bulk ``versions(prefix) -> {name: version}`` it is used (one scan); otherwise
  ``names()`` plus one ``get`` per pointer. Either way a poll lists every pointer (a row scan of the whole pointer
  table on Bigtable, one indexed SELECT on SQLite), so its cost grows with the number of live pointers: the
  producer retires story pointers (``PointerStore.retire``, :func:`stores.retention.expired_story_pointers`) to
  keep it flat; only objects whose pointer moved are fetched.

Memory (bounded however long it runs): a story whose pointer is retired (vanishes from the listing) leaves memory.
And whatever
the producer does, a story that no loaded edition page or pool references and whose document was not updated for
``story_retain_s`` (default 48 h, ``NEWSROOM_STORY_RETAIN_S``; compared with the story's ``updated_at`` on the wall
clock) is not held: its pointer version stays in ``Catalog.loaded`` (so it is not fetched again each poll) and
``GET /v1/stories/{id}`` loads it on demand from the snapshot store into a bounded LRU (:class:`StoryCache`,
``story_lru`` entries, default 2,000, ``NEWSROOM_STORY_LRU``; :meth:`PointerWatcher.story`). A story that a page or
pool references again is loaded back into memory on the next poll. Stories are loaded after pages and pools, so
an old unreferenced story is never held even on the first poll of a process.

Storylines (``storyline/{language}/{id}``) are never fetched by a poll: their archive grows without bound and a
reader opens few, so a poll only records their versions, and ``GET /v1/storylines/{language}/{id}`` loads the
listed version on demand into a bounded LRU (:meth:`PointerWatcher.storyline`), as old stories are. The shards of
the storyline index (``storyline_index/{language}/{shard}``) likewise, loaded when a topic page asks for one of
their entities (:meth:`PointerWatcher.storyline_index`).

Takedowns: with a takedown store (stores/takedowns.py), every poll also reads its generation (one
row / one SELECT) and, only when it moved, the whole tombstone set. Every object loaded is filtered with the set
held (:meth:`stores.takedowns.TakedownSet.filter`: taken-down stories leave pages, pools and memory, taken-down
articles leave cards and coverage, a taken-down representative is replaced by the next card) before it is
prepared. When the set changes, the objects it concerns are fetched again from the snapshot store and filtered
with the new set, in the same poll: every page and pool held (tens), the stories held that are taken down or hold
a taken-down article, and the objects an undone tombstone had filtered. The on-demand story LRU is emptied, and a
re-filtered story drops its superseded versions (a cursor on them restarts). So a takedown leaves the origin's
pages one poll after it is written (``interval_s``, 2 s), whatever the producer does; the producer omits it from
its next snapshots too (transforms/editions/overlays/takedowns.py), which is what keeps it out once the set is re-read on
a new process. A store error on the takedown read keeps the last set (counted as a failed poll's warning only).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

import orjson

from schemas import pages as page_schemas
from serving.state.catalog import Catalog, CatalogHolder, StoryCache, StoryEntry, edition_infos, editions_index, prepare
from serving.state.validation import validate
from stores.base import NotFound
from stores.takedowns import TakedownSet

log = logging.getLogger(__name__)

STORY = "story/"
STORYLINE = "storyline/"
STORYLINE_INDEX = "storyline_index/"
ON_DEMAND = (STORYLINE, STORYLINE_INDEX)  # pointers a poll never fetches: only their version is recorded
RELEASE_EVERY_S = 300.0  # how often the pass releasing old unreferenced stories runs (it visits every story held)


def classify(name: str, version: int) -> tuple[str, str] | None:
    """(schema kind, object path) of a pointer, or None for a pointer the origin does not serve."""
    if name == "aliases":
        return "aliases", page_schemas.aliases_path(version)
    head, _, rest = name.partition("/")
    if head == "storyline":  # storyline/{language}/{id}: loaded on demand only (PointerWatcher.storyline)
        language, _, sid = rest.partition("/")
        return ("storyline", page_schemas.storyline_path(language, sid, version)) if language and sid else None
    if head == "storyline_index":  # storyline_index/{language}/{shard}: loaded on demand (a topic page asks)
        language, _, shard = rest.partition("/")
        ok = language and shard.isdigit()
        return ("storyline_index", page_schemas.storyline_index_path(language, shard, version)) if ok else None
    if head == "topic":  # topic/{edition}/{topic id}: a topic page pre-built by the editions stage
        edition, _, topic = rest.partition("/")
        return ("topic_page", page_schemas.topic_path(edition, topic, version)) if edition and topic else None
    if not rest or "/" in rest:
        return None
    if head == "pool":
        return "candidate_pool", page_schemas.pool_path(rest, version)
    if head == "story":
        return "story_coverage", page_schemas.story_path(rest, version)
    return "edition_page", page_schemas.page_path(head, rest, version)


@dataclass(frozen=True)
class WatchSettings:
    """How the watcher polls and what it holds (module docstring): the poll interval, how long superseded story
    versions stay reachable, whether objects are validated against their schema, how long an unreferenced story
    stays in memory (inf: always), and the size of the on-demand story and storyline LRUs."""

    interval_s: float = 2.0
    story_grace_s: float = 600.0
    validate: bool = True
    story_retain_s: float = 48 * 3600.0
    story_lru: int = 2000

    @classmethod
    def from_config(cls, cfg) -> WatchSettings:
        return cls(
            interval_s=float(cfg["NEWSROOM_WATCH_INTERVAL_S"]),
            story_grace_s=float(cfg["NEWSROOM_STORY_GRACE_S"]),
            validate=bool(cfg["NEWSROOM_VALIDATE_PAGES"]),
            story_retain_s=float(cfg["NEWSROOM_STORY_RETAIN_S"]),
            story_lru=int(cfg["NEWSROOM_STORY_LRU"]),
        )


class PointerWatcher:
    def __init__(
        self,
        holder: CatalogHolder,
        pointers,
        snapshots,
        settings: WatchSettings = WatchSettings(),
        takedowns=None,
        clock=time.monotonic,
        wall_clock=time.time,
    ):
        self.holder = holder
        self.pointers = pointers
        self.snapshots = snapshots
        self.settings = settings
        self.clock = clock
        self.wall_clock = wall_clock
        self.story_cache = StoryCache(settings.story_lru)
        self.storyline_cache = StoryCache(settings.story_lru)  # storyline pages, loaded on demand only
        self._referenced: frozenset[str] = frozenset()  # story ids the current pages and pools link to
        self._released_at = float("-inf")
        self._graced: frozenset[str] = frozenset()  # story ids holding superseded versions (cursor grace)
        self._bad: dict[str, int] = {}  # name -> version that failed validation (not retried)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.on_swap = []  # callbacks(catalog) after each swap (e.g. For you caches keyed by pool version)
        self.takedowns = takedowns  # stores.takedowns.TakedownStore, or None: nothing filtered
        self.taken = TakedownSet()  # the tombstones every object loaded is filtered with
        self._takedown_generation: int | None = None
        self._filtered: dict[str, frozenset] = {}  # name -> the tombstone ids held when its object lost something

    # -- listing -------------------------------------------------------------------------------------------------
    def _list(self) -> dict[str, int]:
        bulk = getattr(self.pointers, "versions", None)
        if callable(bulk):
            return dict(bulk(""))
        out = {}
        for name in self.pointers.names():
            v = self.pointers.get(name)
            if v is not None:
                out[name] = v
        return out

    def _load(self, name: str, version: int):
        kind, path = classify(name, version)
        data = self.snapshots.get(path)
        doc = orjson.loads(data)
        if self.settings.validate:
            validate(kind, doc)
        if doc.get("version") != version:
            raise page_schemas.PageError(f"{path}: body says version {doc.get('version')}, pointer says {version}")
        if kind == "edition_page":
            edition, section = name.split("/")
            if (doc["edition"], doc["section"]) != (edition, section):
                raise page_schemas.PageError(f"{path}: body is {doc['edition']}/{doc['section']}")
        elif kind == "candidate_pool" and doc["edition"] != name.split("/", 1)[1]:
            raise page_schemas.PageError(f"{path}: body is the pool of {doc['edition']}")
        elif kind == "story_coverage" and doc["story_id"] != name.split("/", 1)[1]:
            raise page_schemas.PageError(f"{path}: body is story {doc['story_id']}")
        elif kind == "storyline" and f"{STORYLINE}{doc['language']}/{doc['storyline_id']}" != name:
            raise page_schemas.PageError(f"{path}: body is storyline {doc['language']}/{doc['storyline_id']}")
        elif kind == "storyline_index" and f"{STORYLINE_INDEX}{doc['language']}/{doc['shard']}" != name:
            raise page_schemas.PageError(f"{path}: body is storyline index {doc['language']}/{doc['shard']}")
        elif kind == "topic_page" and f"topic/{doc['edition']}/{doc['topic']}" != name:
            raise page_schemas.PageError(f"{path}: body is topic {doc['topic']} of {doc['edition']}")
        taken = self.taken
        if taken:
            shown = taken.filter(kind, doc)
            if shown is not doc:
                self._filtered[name] = taken.ids()
                if shown is None:
                    return kind, None  # a taken-down story: not served
                doc = shown
            else:
                self._filtered.pop(name, None)
        return kind, prepare(kind, doc)

    # -- one poll ------------------------------------------------------------------------------------------------
    def poll_once(self) -> bool:
        """Bring the catalog up to the pointers. True if the stores answered (even if some objects were bad)."""
        with self.holder.swap_lock:
            self.holder.polls += 1
            try:
                listed = self._list()
            except Exception as exc:  # any store failure: keep serving what we have
                self.holder.failures += 1
                self.holder.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("pointer listing failed, serving the last loaded catalog: %s", self.holder.last_error)
                return False
            cur = self.holder.current
            # what changed, by set operations on the listing (C speed: no Python work per unchanged pointer)
            moved = {n: v for n, v in listed.items() - cur.loaded.items() if classify(n, v) is not None}
            vanished = cur.loaded.keys() - listed.keys()
            nxt = _NextCatalog(cur, self._referenced, self._graced)
            for name, version in self._takedown_reloads(cur, listed).items():
                moved.setdefault(name, version)
                if name.startswith(STORY):
                    nxt.stories.pop(name[len(STORY) :], None)  # reloaded fresh: no unfiltered superseded versions
                    nxt.changed = True
            now = self.clock()
            transient = self._load_moved(nxt, moved, now)
            nxt.expire_stories(now, self.settings.story_grace_s)
            nxt.drop_vanished(vanished)  # only known because the listing succeeded
            for name in [n for n in self._bad if n not in listed]:
                del self._bad[name]  # retired or vanished: forget it
            for name in [n for n in self._filtered if n not in listed]:
                del self._filtered[name]
            if now - self._released_at >= RELEASE_EVERY_S and not math.isinf(self.settings.story_retain_s):
                if nxt.refs_changed:
                    nxt.reference()
                nxt.release_stories(self._retain_after_ms())
                self._released_at = now
            self._referenced, self._graced = nxt.referenced, nxt.graced
            if nxt.changed:
                self.holder.current = nxt.build()
                for cb in self.on_swap:
                    cb(self.holder.current)
            if transient:
                self.holder.last_error = transient
                self.holder.failures += 1
                return False
            self.holder.last_success = now
            self.holder.last_error = None
            return True

    def _takedown_reloads(self, cur: Catalog, listed: dict[str, int]) -> dict[str, int]:
        """When the tombstones changed: take the new set and return the listed objects to fetch and filter again
        (see the module docstring); {} when nothing changed or the store cannot be read (the last set stays)."""
        if self.takedowns is None:
            return {}
        try:
            generation = self.takedowns.generation()
            if generation == self._takedown_generation:
                return {}
            new = self.takedowns.taken_down()
        except Exception as exc:  # keep filtering with the set read last
            log.warning("takedowns unreadable, filtering with the last set read: %s: %s", type(exc).__name__, exc)
            return {}
        old, self.taken, self._takedown_generation = self.taken.ids(), new, generation
        added, lifted = new.ids() - old, old - new.ids()
        if not added and not lifted:
            return {}
        self.story_cache = StoryCache(self.story_cache.capacity)  # on-demand stories load filtered again
        self.storyline_cache = StoryCache(self.storyline_cache.capacity)
        names = {f"{e}/{s}" for e, s in cur.pages} | {f"pool/{e}" for e in cur.pools}
        names |= {f"topic/{e}/{t}" for e, t in cur.topics}
        names |= {n for n, ids in self._filtered.items() if ids & lifted}
        names |= {STORY + i.split(":", 1)[1] for i in added | lifted if i.startswith("story:")}
        articles = {i.split(":", 1)[1] for i in added if i.startswith("article:")}
        if articles:
            for sid, entry in cur.stories.items():
                if any(aid in articles for _, aid in entry.current.keys):
                    names.add(STORY + sid)
        log.info("takedowns changed (+%d, -%d): %d objects filtered again", len(added), len(lifted), len(names))
        return {n: listed[n] for n in names if n in listed}

    def _retain_after_ms(self) -> int:
        """Stories updated before this wall-clock time (ms) are held only while a page or pool references them
        (an infinite ``story_retain_s`` holds every story, the behaviour before retirement)."""
        if math.isinf(self.settings.story_retain_s):
            return -(1 << 62)
        return int((self.wall_clock() - self.settings.story_retain_s) * 1000)

    def _load_moved(self, nxt: _NextCatalog, moved: dict[str, int], now: float) -> str | None:
        """Fetch and add every object whose pointer moved, pages, pools and aliases first, then stories (so which
        stories are referenced is known), plus stories referenced again while not held; the last transient error,
        or None."""
        transient = None
        for name in sorted(moved):
            if name.startswith(ON_DEMAND):  # never fetched by a poll: its version is what an on-demand load reads
                nxt.loaded[name] = moved[name]
                nxt.changed = True
            elif not name.startswith(STORY):
                transient = self._load_one(nxt, name, moved[name], now) or transient
        if nxt.refs_changed:
            nxt.reference()
        stories = {n: v for n, v in moved.items() if n.startswith(STORY)}
        for sid in nxt.referenced - nxt.stories.keys():  # referenced, not held: load it back if it has a pointer
            version = nxt.loaded.get(STORY + sid)
            if version is not None:
                stories.setdefault(STORY + sid, version)
        retain_after = self._retain_after_ms()
        for name in sorted(stories):
            transient = self._load_one(nxt, name, stories[name], now, retain_after) or transient
        return transient

    def _load_one(self, nxt: _NextCatalog, name: str, version: int, now: float, retain_after: int = 0) -> str | None:
        """Fetch and add one object (unless known bad); a transient error's text, or None."""
        if self._bad.get(name) == version:
            return None
        try:
            kind, obj = self._load(name, version)
        except (NotFound, page_schemas.PageError, ValueError, KeyError, TypeError) as exc:
            self._bad[name] = version
            self.holder.rejected += 1
            log.error("pointer %s -> v%s not loaded, previous version stays live: %s", name, version, exc)
            return None
        except Exception as exc:  # transient (store unreachable): retry next poll
            transient = f"{type(exc).__name__}: {exc}"
            log.warning("cannot fetch %s v%s yet: %s", name, version, transient)
            return transient
        self._bad.pop(name, None)
        nxt.add(name, version, kind, obj, now, retain_after)
        return None

    # -- stories not held in memory ------------------------------------------------------------------------------
    def story(self, cat: Catalog, story_id: str) -> StoryEntry | None:
        """The story's entry: from the catalog, else (its pointer is listed but the story is not held) from the
        LRU or loaded now from the snapshot store. None: no such story (or its object is bad). A store failure
        raises (the caller answers 503)."""
        entry = cat.stories.get(story_id)
        if entry is not None:
            return entry
        name = f"story/{story_id}"
        version = cat.loaded.get(name)
        if version is None or self._bad.get(name) == version:
            return None

        def load() -> StoryEntry | None:
            try:
                _, obj = self._load(name, version)
            except (NotFound, page_schemas.PageError, ValueError, KeyError, TypeError) as exc:
                log.error("story %s v%s not loadable on demand: %s", story_id, version, exc)
                return None
            return StoryEntry(current=obj) if obj is not None else None  # None: taken down

        return self.story_cache.get(story_id, version, load)

    def storyline(self, cat: Catalog, language: str, storyline_id: str):
        """A storyline's prepared document (:class:`serving.state.catalog.PreparedStoryline`), from the LRU or loaded now
        from the snapshot store: storylines are never held by a poll (an archive grows without bound; a reader
        opens few). None: no such storyline (or its object is bad). A store failure raises (the caller: 503)."""
        return self._on_demand(cat, f"{STORYLINE}{language}/{storyline_id}", "storyline")

    def storyline_index(self, cat: Catalog, language: str, shard: int) -> dict | None:
        """One shard of a language's storyline index (transforms/editions/overlays/storyline_index.py), from the LRU or
        loaded now, as storylines are: ``{entity id: [entries newest first]}``, taken-down entries filtered out.
        None: no such shard (or its object is bad). A store failure raises."""
        return self._on_demand(cat, f"{STORYLINE_INDEX}{language}/{shard}", "storyline index")

    def _on_demand(self, cat: Catalog, name: str, what: str):
        """A listed object no poll holds (a storyline or an index shard), from the LRU or loaded now; a bad object is
        remembered as bad at its version (None, and no store read until it moves). A store failure raises."""
        version = cat.loaded.get(name)
        if version is None or self._bad.get(name) == version:
            return None

        def load():
            try:
                return self._load(name, version)[1]
            except (NotFound, page_schemas.PageError, ValueError, KeyError, TypeError) as exc:
                log.error("%s %s v%s not loadable: %s", what, name, version, exc)
                self._bad[name] = version
                return None

        return self.storyline_cache.get(name, version, load)

    # -- background thread ---------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="newsroom-pointer-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.settings.interval_s):
            try:
                self.poll_once()
            except Exception:  # never let the thread die: the origin would silently freeze its pages
                log.exception("pointer watcher poll crashed")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


class _NextCatalog:
    """The next catalog under construction: copies of the current one's maps, changed in place by one poll."""

    def __init__(self, cur: Catalog, referenced: frozenset[str] = frozenset(), graced: frozenset[str] = frozenset()):
        self.loaded = dict(cur.loaded)
        self.pages, self.pools, self.stories = dict(cur.pages), dict(cur.pools), dict(cur.stories)
        self.topics = dict(cur.topics)
        self.aliases, self.aliases_version = cur.aliases, cur.aliases_version
        self.changed = False
        self.referenced = referenced
        self.refs_changed = not cur.loaded  # a page or pool was added or dropped: ``referenced`` is out of date
        self.graced = set(graced)  # stories with superseded versions: all expire_stories has to visit

    def reference(self) -> None:
        """The story ids the loaded pages and pools link to (these stay in memory whatever their age)."""
        refs = {sid for page in self.pages.values() for sid in page.story_ids}
        for pool in self.pools.values():
            refs.update(pool.story_ids)
        self.referenced = frozenset(refs)
        self.refs_changed = False

    def add(self, name: str, version: int, kind: str, obj, now: float, retain_after: int = 0) -> None:
        self.changed = True
        self.loaded[name] = version
        if kind == "edition_page":
            self.pages[(obj.edition, obj.section)] = obj
            self.refs_changed = True
        elif kind == "candidate_pool":
            self.pools[obj.edition] = obj
            self.refs_changed = True
        elif kind == "topic_page":
            if obj is None:  # every story of it taken down: not held, the origin renders it from the pool (or 404)
                self.topics.pop(tuple(name.split("/", 2)[1:]), None)
                return
            self.topics[(obj.edition, obj.topic)] = obj
        elif kind == "story_coverage":
            if obj is None:  # taken down: not held (its version stays in ``loaded``, so it is not fetched again)
                self.stories.pop(name[len(STORY) :], None)
                return
            if obj.story_id not in self.referenced and obj.updated_ms < retain_after:
                self.stories.pop(obj.story_id, None)  # old and unreferenced: served on demand (PointerWatcher.story)
                return
            old = self.stories.get(obj.story_id)
            previous = ()
            if old is not None:
                previous = ((old.current, now),) + old.previous
                self.graced.add(obj.story_id)
            self.stories[obj.story_id] = StoryEntry(current=obj, previous=previous)
        else:
            self.aliases, self.aliases_version = obj, version

    def expire_stories(self, now: float, grace_s: float) -> None:
        """Superseded story versions past their grace period go."""
        for sid in list(self.graced):
            entry = self.stories.get(sid)
            if entry is None or not entry.previous:
                self.graced.discard(sid)
                continue
            keep = tuple(p for p in entry.previous if now - p[1] <= grace_s)
            if len(keep) != len(entry.previous):
                self.stories[sid] = StoryEntry(current=entry.current, previous=keep)
                self.changed = True
            if not keep:
                self.graced.discard(sid)

    def release_stories(self, retain_after: int) -> None:
        """Stories neither referenced nor updated since ``retain_after`` (ms) leave memory (their pointer version
        stays in ``loaded``). One pass over the stories held, which this keeps bounded."""
        old = [sid for sid, entry in self.stories.items() if entry.current.updated_ms < retain_after]
        for sid in old:
            if sid not in self.referenced:
                del self.stories[sid]
                self.graced.discard(sid)
                self.changed = True

    def drop_vanished(self, vanished) -> None:
        """Pointers that no longer exist (retired, or gone)."""
        for name in vanished:
            self.changed = True
            del self.loaded[name]
            kind, _ = classify(name, 1)
            rest = name.split("/", 1)[-1]
            if kind == "edition_page":
                self.pages.pop(tuple(name.split("/")), None)
                self.refs_changed = True
            elif kind == "candidate_pool":
                self.pools.pop(rest, None)
                self.refs_changed = True
            elif kind == "story_coverage":
                self.stories.pop(rest, None)
            elif kind == "topic_page":
                self.topics.pop(tuple(rest.split("/", 1)), None)
            elif kind in ("storyline", "storyline_index"):
                pass  # only its version was held
            else:
                self.aliases, self.aliases_version = {}, None

    def build(self) -> Catalog:
        editions = edition_infos(self.pages, self.pools)
        return Catalog(
            pages=self.pages,
            pools=self.pools,
            stories=self.stories,
            topics=self.topics,
            aliases=self.aliases,
            aliases_version=self.aliases_version,
            editions=editions,
            index=editions_index(editions),
            loaded=self.loaded,
            built_at=time.time(),
        )
