"""The pointer watcher: the only code in the origin that reads the pointer and snapshot stores.

Reads: every latest pointer (PointerStore: ``{edition}/{section}``, ``pool/{edition}``, ``story/{id}``, ``aliases``)
and, for each pointer that moved, its snapshot object (SnapshotStore, names in schemas/pages.py). Writes: a new
:class:`serving.catalog.Catalog` into the :class:`CatalogHolder` (one reference assignment).

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
  them keeps paging the same version (see serving/stories.py).
- The poll interval (default 2 s) bounds how stale the origin is behind a pointer move; the CDN's s-maxage adds to it.
  If the pointer store offers a bulk ``versions(prefix) -> {name: version}`` it is used (one scan); otherwise
  ``names()`` plus one ``get`` per pointer.
"""

from __future__ import annotations

import logging
import threading
import time

import orjson

from schemas import pages as page_schemas
from serving.catalog import Catalog, CatalogHolder, StoryEntry, edition_infos, editions_index, prepare
from serving.validation import validate
from stores.base import NotFound

log = logging.getLogger(__name__)


def classify(name: str, version: int) -> tuple[str, str] | None:
    """(schema kind, object path) of a pointer, or None for a pointer the origin does not serve."""
    if name == "aliases":
        return "aliases", page_schemas.aliases_path(version)
    head, _, rest = name.partition("/")
    if not rest or "/" in rest:
        return None
    if head == "pool":
        return "candidate_pool", page_schemas.pool_path(rest, version)
    if head == "story":
        return "story_coverage", page_schemas.story_path(rest, version)
    return "edition_page", page_schemas.page_path(head, rest, version)


class PointerWatcher:
    def __init__(
        self,
        holder: CatalogHolder,
        pointers,
        snapshots,
        interval_s: float = 2.0,
        story_grace_s: float = 600.0,
        validate: bool = True,
        clock=time.monotonic,
    ):
        self.holder = holder
        self.pointers = pointers
        self.snapshots = snapshots
        self.interval_s = interval_s
        self.story_grace_s = story_grace_s
        self.validate = validate
        self.clock = clock
        self._bad: dict[str, int] = {}  # name -> version that failed validation (not retried)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.on_swap = []  # callbacks(catalog) after each swap (e.g. For you caches keyed by pool version)

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
        if self.validate:
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
            wanted = {n: v for n, v in listed.items() if classify(n, v) is not None}
            nxt = _NextCatalog(self.holder.current)
            now = self.clock()
            transient = self._load_moved(nxt, wanted, now)
            nxt.expire_stories(now, self.story_grace_s)
            nxt.drop_vanished(wanted)  # only known because the listing succeeded
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

    def _load_moved(self, nxt: _NextCatalog, wanted: dict[str, int], now: float) -> str | None:
        """Fetch and add every object whose pointer moved; the last transient error, or None."""
        transient = None
        for name, version in sorted(wanted.items()):
            if nxt.loaded.get(name) == version or self._bad.get(name) == version:
                continue
            try:
                kind, obj = self._load(name, version)
            except (NotFound, page_schemas.PageError, ValueError, KeyError, TypeError) as exc:
                self._bad[name] = version
                self.holder.rejected += 1
                log.error("pointer %s -> v%s not loaded, previous version stays live: %s", name, version, exc)
                continue
            except Exception as exc:  # transient (store unreachable): retry next poll
                transient = f"{type(exc).__name__}: {exc}"
                log.warning("cannot fetch %s v%s yet: %s", name, version, transient)
                continue
            self._bad.pop(name, None)
            nxt.add(name, version, kind, obj, now)
        return transient

    # -- background thread ---------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="newsroom-pointer-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
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

    def __init__(self, cur: Catalog):
        self.loaded = dict(cur.loaded)
        self.pages, self.pools, self.stories = dict(cur.pages), dict(cur.pools), dict(cur.stories)
        self.aliases, self.aliases_version = cur.aliases, cur.aliases_version
        self.changed = False

    def add(self, name: str, version: int, kind: str, obj, now: float) -> None:
        self.changed = True
        self.loaded[name] = version
        if kind == "edition_page":
            self.pages[(obj.edition, obj.section)] = obj
        elif kind == "candidate_pool":
            self.pools[obj.edition] = obj
        elif kind == "story_coverage":
            old = self.stories.get(obj.story_id)
            previous = ()
            if old is not None:
                previous = ((old.current, now),) + old.previous
            self.stories[obj.story_id] = StoryEntry(current=obj, previous=previous)
        else:
            self.aliases, self.aliases_version = obj, version

    def expire_stories(self, now: float, grace_s: float) -> None:
        """Superseded story versions past their grace period go."""
        for sid, entry in list(self.stories.items()):
            if entry.previous:
                keep = tuple(p for p in entry.previous if now - p[1] <= grace_s)
                if len(keep) != len(entry.previous):
                    self.stories[sid] = StoryEntry(current=entry.current, previous=keep)
                    self.changed = True

    def drop_vanished(self, wanted: dict[str, int]) -> None:
        """Pointers that no longer exist."""
        for name in set(self.loaded) - set(wanted):
            self.changed = True
            del self.loaded[name]
            kind, _ = classify(name, 1)
            rest = name.split("/", 1)[-1]
            if kind == "edition_page":
                self.pages.pop(tuple(name.split("/")), None)
            elif kind == "candidate_pool":
                self.pools.pop(rest, None)
            elif kind == "story_coverage":
                self.stories.pop(rest, None)
            else:
                self.aliases, self.aliases_version = {}, None

    def build(self) -> Catalog:
        editions = edition_infos(self.pages, self.pools)
        return Catalog(
            pages=self.pages,
            pools=self.pools,
            stories=self.stories,
            aliases=self.aliases,
            aliases_version=self.aliases_version,
            editions=editions,
            index=editions_index(editions),
            loaded=self.loaded,
            built_at=time.time(),
        )
