"""Reader state in the origin: a short-TTL profile cache and the background folder of read events.

Reads and writes the profile store (:mod:`stores.profiles`): the only store the request path may touch, and only
for private For you requests (a profile is not a shared page).

ProfileCache: ``NEWSROOM_PROFILE_TTL_S`` (default 30 s) per process, at most ``max_entries`` readers (LRU). A
reader's own controls write through (the change shows on the next request to the same process); folded reads and
changes made through another process show within the TTL. If the store cannot be read, the last cached profile is
served even past its TTL (its hidden sources still apply), else a view marked ``known=False``: privacy unknown, so
For you fails closed to a non-personal page flagged ``degraded`` (serving/api/foryou.py), it does not fail.

EventFolder: POST /v1/events only validates and enqueues (bounded queue; full -> 503, the client retries). A daemon
thread drains the queue every ``flush_s`` (default 1 s) or ``batch`` events (default 500), groups them by reader,
and per reader does one profile update and one append of reads: a read or click moves the interest vector toward
the story's 64-d vector (found in the in-memory pools) with :func:`serving.personal.ranking.fold_interest`; impressions are
validated and counted but change nothing yet. Each event carries the time POST /v1/events accepted it; events
accepted while the reader was paused or before the reader's last delete (of the profile or of the history) are
dropped, checked by the store atomically with its writes (stores/profile_versions.py), so a fold that runs after a
delete or a quick resume, or a retried batch, never brings them back. Replays are idempotent for reads
(the read cell is keyed by its time, and event ids already among the stored reads are skipped). A batch that fails
on the store is retried (3 tries, then dropped and counted). With a ``bus`` (``NEWSROOM_PUBLISH_READS``, on by
default: the bus of the origin's stores), the reads the store kept are then published to the
``read-events`` topic, where the co-visitation job (pipelines/covisit.py) reads them; a failed publish is logged and
counted (``publish_failed``), never fails the fold (co-visitation is best effort; the job is idempotent by event id,
so a retried batch publishing again is harmless).

CovisitCache: the co-visitation neighbours (stores/covisit.py, written by the co-visitation job) of the reader's
most recent reads, for For you's "Readers of X also read this" term. Cached per story (the lists are shared by every
reader) for ``NEWSROOM_PROFILE_TTL_S``, at most ``max_entries`` stories (LRU), stories without a list included; one
``get_many`` per request for the stories not cached. Fail-open: if the store cannot be read, the stale cached
lists are used and the rest count as "no co-visitation" (the feed is ranked without that term, not degraded).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from serving.personal.ranking import COVISIT_READS, Covisit, ProfileView, fold_interest, read_weight
from stores.base import StoreError
from stores.profile_versions import accepted_at_of, read_admitted

log = logging.getLogger(__name__)


class ProfileCache:
    def __init__(self, store, ttl_s: float = 30.0, max_entries: int = 50_000, clock=time.monotonic):
        self.store = store
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, ProfileView, dict | None]] = OrderedDict()
        self.misses = 0
        self.store_errors = 0

    def _put(self, reader_id: str, doc: dict | None) -> ProfileView:
        view = ProfileView.from_profile(reader_id, doc)
        with self._lock:
            self._entries[reader_id] = (self.clock() + self.ttl_s, view, doc)
            self._entries.move_to_end(reader_id)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return view

    def view(self, reader_id: str) -> ProfileView:
        now = self.clock()
        with self._lock:
            hit = self._entries.get(reader_id)
            if hit is not None and hit[0] > now:
                self._entries.move_to_end(reader_id)
                return hit[1]
        self.misses += 1
        try:
            doc = self.store.get(reader_id)
        except Exception as exc:  # StoreError or a client error: degrade, do not fail
            self.store_errors += 1
            log.warning("profile store unreachable for a For you request: %s", exc)
            return hit[1] if hit is not None else ProfileView(reader_id=reader_id, known=False)
        return self._put(reader_id, doc)

    def cached(self, reader_id: str) -> ProfileView | None:
        """The cached view while it is within its TTL, without touching the store (For you under load); None if
        there is none or it expired. Never past the TTL: a reader who deleted the profile through another process
        is promised that no process applies it longer than NEWSROOM_PROFILE_TTL_S (foryou.delete_profile)."""
        now = self.clock()
        with self._lock:
            hit = self._entries.get(reader_id)
        return hit[1] if hit is not None and hit[0] > now else None

    def doc(self, reader_id: str) -> dict | None:
        """The full cached document (reads included), loading it if needed."""
        self.view(reader_id)
        with self._lock:
            hit = self._entries.get(reader_id)
        return hit[2] if hit else None

    def write_through(self, reader_id: str, profile: dict) -> ProfileView:
        """After a control changed the profile document: keep the reads we had, replace the rest."""
        with self._lock:
            hit = self._entries.get(reader_id)
        doc = dict(profile)
        doc["reads"] = (hit[2] or {}).get("reads", []) if hit else []
        return self._put(reader_id, doc)

    def invalidate(self, reader_id: str) -> None:
        with self._lock:
            self._entries.pop(reader_id, None)


class CovisitCache:
    def __init__(self, store, ttl_s: float = 30.0, max_entries: int = 100_000, clock=time.monotonic, wall=time.time):
        self.store = store
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.clock = clock
        self.wall = wall
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, tuple, int]] = OrderedDict()  # story -> (expires, list, at)
        self.misses = 0
        self.store_errors = 0

    def lists(self, story_ids) -> dict[str, tuple[tuple, int]]:
        """``{story_id: ((neighbour_id, count), ...), at)}`` for each story (an empty tuple when it has none)."""
        now = self.clock()
        out, stale, todo = {}, {}, []
        with self._lock:
            for sid in story_ids:
                hit = self._entries.get(sid)
                if hit is not None and hit[0] > now:
                    self._entries.move_to_end(sid)
                    out[sid] = (hit[1], hit[2])
                else:
                    todo.append(sid)
                    if hit is not None:
                        stale[sid] = (hit[1], hit[2])
        if not todo:
            return out
        self.misses += len(todo)
        try:
            got = self.store.get_many(int(s) for s in todo)
        except Exception as exc:  # StoreError or a client error: fail open to what we have
            self.store_errors += 1
            log.warning("co-visitation store unreachable for a For you request: %s", exc)
            out.update(stale)
            return out
        with self._lock:
            for sid in todo:
                items, at = got.get(int(sid), ((), 0))
                entry = (tuple((str(n), float(c)) for n, c in items), int(at))
                self._entries[sid] = (now + self.ttl_s, *entry)
                self._entries.move_to_end(sid)
                out[sid] = entry
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return out

    def boost(self, view: ProfileView) -> Covisit | None:
        """The co-visitation candidates of the reader's COVISIT_READS newest reads (None: no reads, no lists)."""
        recent = view.reads[:COVISIT_READS]
        if not recent:
            return None
        return Covisit.from_lists(recent, self.lists(recent), int(self.wall() * 1000))


def vector_of(catalog, edition: str, story_id: str):
    """The story's 64-d vector from the edition's pool (or any pool holding it), as a list; None if unknown."""
    pools = [catalog.pools.get(edition)] + [p for e, p in catalog.pools.items() if e != edition]
    for pool in pools:
        if pool is None:
            continue
        i = pool.index.get(story_id)
        if i is not None and pool.vectors[i].any():
            return pool.vectors[i].tolist()
    return None


@dataclass(frozen=True)
class FoldSettings:
    """How the folder batches: at most ``batch`` events per fold, a fold at least every ``flush_s`` seconds, at most
    ``queue_max`` events waiting (then POST /v1/events answers 503)."""

    batch: int = 500
    flush_s: float = 1.0
    queue_max: int = 10_000

    @classmethod
    def from_config(cls, cfg) -> FoldSettings:
        return cls(
            batch=int(cfg["NEWSROOM_EVENTS_BATCH"]),
            flush_s=float(cfg["NEWSROOM_EVENTS_FLUSH_S"]),
            queue_max=int(cfg["NEWSROOM_EVENTS_QUEUE_MAX"]),
        )


class EventFolder:
    def __init__(
        self,
        store,
        holder,
        cache: ProfileCache | None = None,
        settings: FoldSettings = FoldSettings(),
        bus=None,
        topic: str = "read-events",
    ):
        self.store = store
        self.bus = bus
        self.topic = topic
        self.published = 0
        self.publish_failed = 0
        self.holder = holder
        self.cache = cache
        self.batch = settings.batch
        self.flush_s = settings.flush_s
        self.queue: queue.Queue = queue.Queue(maxsize=settings.queue_max)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.folded = 0
        self.dropped = 0
        self.failed_batches = 0
        self._retry: list[tuple[int, list[dict]]] = []

    def submit(self, events: list[dict]) -> bool:
        """Enqueue validated ReadEvent records; False (nothing enqueued) when the queue cannot take them all."""
        if self.queue.maxsize and self.queue.qsize() + len(events) > self.queue.maxsize:
            return False
        for e in events:
            try:
                self.queue.put_nowait(e)
            except queue.Full:
                return False
        return True

    def drain(self) -> int:
        """Fold everything queued now (the thread's loop body; tests call it directly). Returns events folded."""
        events = []
        while len(events) < self.batch:
            try:
                events.append(self.queue.get_nowait())
            except queue.Empty:
                break
        todo = [(0, events)] if events else []
        todo += self._retry
        self._retry = []
        done = 0
        for tries, batch in todo:
            try:
                done += self.fold(batch)
            except (StoreError, OSError) as exc:
                if tries + 1 >= 3:
                    self.dropped += len(batch)
                    self.failed_batches += 1
                    log.error("dropping %d read events after 3 failed folds: %s", len(batch), exc)
                else:
                    self._retry.append((tries + 1, batch))
        return done

    def fold(self, events: list[dict]) -> int:
        """Fold a batch, one reader at a time. Each event carries the time it was accepted (``accepted_at``, set by
        POST /v1/events): the store drops, atomically with its writes, what was accepted before the reader's delete or
        during a pause (stores/profile_versions.py), so a batch folded late or retried never brings anything back."""
        by_reader: dict[str, list[dict]] = {}
        for e in events:
            by_reader.setdefault(e["reader_id"], []).append(e)
        folded = 0
        outgoing: list[dict] = []
        for reader, evs in by_reader.items():
            n, written = self._fold_reader(reader, evs)
            folded += n
            outgoing += written
            if self.cache is not None:
                self.cache.invalidate(reader)
        self.folded += folded
        self._publish(outgoing)
        return folded

    def _fold_reader(self, reader: str, evs: list[dict]) -> tuple[int, list[dict]]:
        """Fold one reader's events: the interest moves and the reads, each checked by the store against the
        reader's delete and pause versions. Returns the number of events folded and the reads written (the ones
        published for co-visitation)."""
        catalog = self.holder.current
        now = int(time.time() * 1000)
        current = self.store.get(reader) or {}
        seen = {r.get("event_id") for r in current.get("reads") or []}
        fresh = [e for e in evs if e["event_id"] not in seen]
        evs = sorted((e for e in fresh if read_admitted(current, accepted_at_of(e, now))), key=lambda e: e["at"])
        self.dropped += len(fresh) - len(evs)
        reads, moves = [], []
        for e in evs:
            if e["kind"] == "IMPRESSION" or e.get("story_id") is None:
                continue
            sid = str(e["story_id"])
            reads.append(
                {
                    "event_id": e["event_id"],
                    "story_id": sid,
                    "article_id": e.get("article_id"),
                    "at": e["at"],
                    "kind": e["kind"],
                    "edition": e["edition"],
                    "accepted_at": accepted_at_of(e, now),
                }
            )
            vec = vector_of(catalog, e["edition"], sid)
            w = read_weight(e["kind"], e.get("dwell_ms"))
            if vec is not None and w > 0:
                moves.append((vec, e["at"], w, accepted_at_of(e, now)))
        if moves:

            def apply(doc, moves=moves):
                interest, moved = doc.get("interest"), False
                for vec, at, w, accepted in moves:
                    if read_admitted(doc, accepted):  # the stored version, checked inside the store's write
                        interest, moved = fold_interest(interest, vec, at, w), True
                if not moved:
                    return None
                doc["interest"] = interest
                return doc

            self.store.update(reader, apply)
        written = {r["event_id"] for r in self.store.append_reads(reader, reads)} if reads else set()
        self.dropped += len(reads) - len(written)
        return len(evs) - (len(reads) - len(written)), [e for e in evs if e["event_id"] in written]

    def _publish(self, events: list[dict]) -> None:
        if self.bus is None or not events:
            return
        from schemas import codec

        try:
            # received_at: our clock, not the client's ``at`` (accepted up to 30 days back), so the covisit job judges
            # abnormal readers and caps a reader's pairs by arrival (transforms/covisit/counts.py)
            attrs = {**codec.attributes("ReadEvent"), "received_at": str(int(time.time() * 1000))}
            records = [{k: v for k, v in e.items() if k != "accepted_at"} for e in events]
            self.bus.publish_many(self.topic, [(codec.encode("ReadEvent", e), attrs) for e in records])
            self.published += len(events)
        except Exception as exc:  # the bus down: co-visitation misses these reads; the profiles have them
            self.publish_failed += len(events)
            log.warning("could not publish %d read events to %s: %s", len(events), self.topic, exc)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="newsroom-event-folder", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            deadline = time.monotonic() + self.flush_s
            while self.queue.qsize() < self.batch and not self._stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._stop.wait(min(left, 0.05))
            try:
                while self.drain() and self.queue.qsize() >= self.batch:
                    pass
            except Exception:
                log.exception("event folder crashed on a batch")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        try:
            self.drain()  # fold what is left (best effort)
        except Exception:
            log.exception("final fold failed")
