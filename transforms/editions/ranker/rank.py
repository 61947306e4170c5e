"""Ranking editions minute by minute: :class:`EditionRanker` folds story changes and burst pulses into a StoryBook
per edition and ranks it at every minute boundary; :func:`snapshot_items` turns a cycle into snapshot items.

Plain Python: the stateful DoFn that holds the state below and fires the minute timer is
:class:`~transforms.editions.beam.ranking.RankEditionsFn` (in :class:`~transforms.editions.beam.ranking.RankEditions`).

Reads StoryChange records (decoded dicts, schemas/avro/story_change.avsc) and burst pulses
(:class:`~transforms.editions.beam.detection.DetectBursts`); writes snapshot items (``{"kind", "path", "pointer",
"version", "doc", "min_stories"}``) for every page (edition x section), the edition's candidate pool and the
coverage of page/pool stories whose coverage changed, and the storylines that changed
(:mod:`transforms.editions.overlays.storyline_pages`). :class:`~transforms.editions.beam.publishing.PublishSnapshots`
validates and stores them.

Why a minute timer in event time: cycle T ranks exactly the events with event time < T (a change's ``at`` is its
article's first-seen time; a pulse's is its window end - 1 ms). The timer fires when the watermark passes T, so
streaming and backfill (where the watermark jumps to the end and the timers fire in order) rank the same events at
every T and publish the same pages. Events that arrive for a later minute wait in the inbox.

Late events (event time < a cycle already ranked: the linker's LINK is timestamped at its tick, one timer hop
after the changes it links, and a tick inside the minute of the story's latest article can reach the ranker after
that minute was ranked) are folded at the next cycle like the others, but their versioning time is that cycle's
(``version_at`` = T - 1 ms, kept on the event in LOG so that a rebuilt book versions them the same): a story page's
version is its latest event minute, which a late event of an already-published minute would not raise, so the
page would never be re-published with it. Without late events (a backfill, a run whose watermark holds) nothing
changes.

State (per edition key):
    INBOX     bag of events not yet folded (and, between compactions, some already folded: skipped by id)
    LOG       bag of folded events: the book is rebuilt from it after a worker restart
    MEMORY    EditionMemory (smoothing, last pages, publisher impressions, coverage versions, last cycle)
    CHAIN     (RECEIVED, NEXT) in one cell: events ever added to INBOX (lets a timer skip reading INBOX when
              nothing arrived) and the cycle the timer is set for (0: none); every event reads and writes both
    CYCLE     the event-time timer
The book itself lives in a per-instance cache (numpy columns; too big to serialise every minute). The cache is
trusted only when its last cycle equals MEMORY's; otherwise it is rebuilt from LOG in canonical order, and the fold
is order-independent (:mod:`transforms.editions.book.storybook`), so a rebuilt book ranks the same. Timer callbacks are
idempotent: timers were seen firing twice, and the second firing of cycle T both must not rank again and replaces
the timer the first one set for T + 1 min, so it re-arms that timer from NEXT. Once an hour (at the top of the
hour, a data-defined moment) LOG is compacted to the events of stories still live when most of it is dead.

The chain of timers stops when the edition has no live story, or after ``idle_cycles`` minutes without a story
change (the last good pages keep serving); the next event restarts it.

Name kept: ``rank.py`` (the stateful ranker) beside ``scoring.py`` (its maths); serving/personal/ranking.py is the For you
re-ranker of the origin. The package is part of each name (every import says ``transforms.editions.ranker.rank``), so a
rename would churn the stage's imports without saying more than the path does.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from schemas.pages import page_path, pool_path, story_path
from transforms.common import HOUR_MS, MINUTE_MS
from transforms.editions.book.storybook import StoryBook, event_sort_key
from transforms.editions.cycle.context import CycleCache, CycleContext
from transforms.editions.cycle.run import CycleOutput, EditionMemory, run_cycle
from transforms.editions.overlays.phases import OverlayReaders
from transforms.editions.overlays.topics import city_codes
from transforms.editions.ranker import skip
from transforms.editions.ranker.steady import SteadyWatch

log = logging.getLogger(__name__)


def page_minimum(section, pool_size: int) -> int:
    """The fewest stories a page of ``section`` may go live with, given the edition's pool size.

    Top stories (``match: all``) draw from the whole pool, so their minimum is the section's (5) or half the pool,
    rounded up, whichever is smaller: a small or young edition (the es, de and fr editions of a local run, a new
    language in production) is an edition with few stories, not a broken page. Half, not all, because a top page
    may rightly leave some pool stories out (held for corroboration, capped, taken down); fewer than half of a small
    pool is still refused as a defect. Topical sections keep their own minimum (3): a one-story "Sports" page reads
    as broken, and the edition's navigation lists only the sections that are live.
    """
    if section.match == "all":
        return max(1, min(section.min_stories, (pool_size + 1) // 2))
    return section.min_stories


def snapshot_items(out: CycleOutput, config) -> list[dict]:
    """The snapshot items of one edition's cycle, in a deterministic order: pages, topic pages, the pool, coverage,
    then the storylines (after the coverage they name)."""
    items = []
    pool_size = len(out.pool["stories"])
    for sec_id, doc in out.pages.items():
        items.append(
            {
                "kind": "edition_page",
                "path": page_path(out.edition, sec_id, doc["version"]),
                "pointer": f"{out.edition}/{sec_id}",
                "version": doc["version"],
                "doc": doc,
                "min_stories": page_minimum(config.section(sec_id), pool_size),
            }
        )
    items.extend(out.topic_pages)  # before the pool that lists them (transforms/editions/overlays/topics.py)
    items.append(
        {
            "kind": "candidate_pool",
            "path": pool_path(out.edition, out.pool["version"]),
            "pointer": f"pool/{out.edition}",
            "version": out.pool["version"],
            "doc": out.pool,
            "min_stories": 1,
        }
    )
    for doc in out.coverage:
        items.append(
            {
                "kind": "story_coverage",
                "path": story_path(doc["story_id"], doc["version"]),
                "pointer": f"story/{doc['story_id']}",
                "version": doc["version"],
                "doc": doc,
                "min_stories": 0,
            }
        )
    return items + out.storylines


class Pending(dict):
    """Event id -> event not folded yet, with the events also in a heap by time, so a cycle finds the events due
    before it (:meth:`due`) and the earliest time (:meth:`first_at`) in O(due + log n) instead of looking at every
    pending event: a replay holds its edition's whole input in INBOX from the start (~260 events for a month of
    BASIL), and each of its ~6,300 ranked minutes asked both. The heap is lazy: a deleted or replaced event stays
    in it until it comes to the top, where it is recognised (not the very event the dict holds) and dropped."""

    def __init__(self):
        super().__init__()
        self._heap: list = []  # (at, event id, push number, event): the number breaks ties, never the dicts
        self._pushed = 0

    def __setitem__(self, key, event) -> None:
        super().__setitem__(key, event)
        self._push(key, event)

    def _push(self, key, event) -> None:
        self._pushed += 1
        heapq.heappush(self._heap, (event["at"], key, self._pushed, event))

    def update(self, *args, **kwargs) -> None:
        for key, event in dict(*args, **kwargs).items():  # through __setitem__: every event in the heap too
            self[key] = event

    def setdefault(self, key, event=None):
        if key not in self:
            self[key] = event
        return self[key]

    def _clean(self) -> None:
        heap = self._heap
        while heap and self.get(heap[0][1]) is not heap[0][3]:
            heapq.heappop(heap)

    def due(self, now: int) -> list:
        """The events with ``at < now``, in canonical order (event_sort_key: a total order, so the same list as
        sorting every pending event and keeping those); they stay pending until deleted."""
        heap, out = self._heap, []
        self._clean()
        while heap and heap[0][0] < now:
            _, key, _, event = heapq.heappop(heap)
            if self.get(key) is event:
                out.append((key, event))
            self._clean()
        for key, event in out:  # still pending until the caller deletes them: back in the heap
            self._push(key, event)
        out = [event for _, event in out]
        return sorted(out, key=event_sort_key)

    def first_at(self):
        """The earliest ``at`` of a pending event (None when none is)."""
        self._clean()
        return self._heap[0][0] if self._heap else None


@dataclass
class _Cached:
    book: StoryBook
    pending: Pending  # event id -> event, not folded yet
    inbox_seen: int
    last_cycle: int
    inbox_size: int = 0
    cycle_cache: CycleCache = field(default_factory=CycleCache)  # cards and links reused between cycles
    steady: SteadyWatch = field(default_factory=SteadyWatch)  # the last full minute (change-only replay)


@dataclass(frozen=True)
class EditionState:
    """One edition's ranker state for a firing: its key and config, the worker's cached book, the MEM cell and the
    DoFn's INBOX and LOG bag states (or anything with ``read``, ``add`` and ``clear``). Frozen: a cycle changes
    what the parts hold, never which parts they are."""

    key: str
    edition: object
    cached: _Cached
    mem: EditionMemory
    inbox: object
    event_log: object


class EditionRanker:
    """The per-worker side of the ranker: one cached book per edition key, folded and ranked cycle by cycle.

    The state objects passed in (INBOX, LOG) are the DoFn's bag states, or anything with ``read``, ``add`` and
    ``clear``. ``count(name, n)`` receives ``events_folded``, ``events_bad``, ``cycles``, ``book_rebuilds``,
    ``controls_<kind>`` (editorial controls that took effect) and ``cycle_ms`` (a duration); default: nothing.
    ``readers`` (:class:`~transforms.editions.overlays.phases.OverlayReaders`): where every cycle reads its editorial
    controls (applied to its pages), takedowns (what they name is omitted from its snapshots, counted
    ``takedowns_applied``) and followed topics (the edition's followed and trending topic pages; None: no topic
    pages, the origin builds every one on demand); default: none of them. ``change_only``: a minute whose pages cannot
    differ from the last ones built builds no documents (:mod:`transforms.editions.ranker.steady`, counted
    ``cycles_steady``); the snapshots are byte-identical to building every minute. Default False (streaming).
    ``fast_forward`` (with ``change_only``, a replay only: every input is already there): the minutes after a
    steady one that are proven steady are not ranked (:mod:`transforms.editions.ranker.skip`, counted
    ``cycles_skipped``); the same bytes again. Default False.
    """

    def __init__(
        self,
        config,
        registry,
        params,
        count: Callable[[str, int], None] | None = None,
        readers: OverlayReaders = OverlayReaders(),
        change_only: bool = False,
        fast_forward: bool = False,
    ):
        self.config = config
        self.change_only = change_only  # steady minutes build nothing (transforms/editions/ranker/steady.py): a replay
        self.fast_forward = fast_forward and change_only  # proven steady minutes are not ranked (skip.py): a replay
        self.registry = registry
        self.params = params
        self._counter = count
        self.readers = readers  # controls, takedowns, followed topics: read every cycle (overlays.py)
        self.cities = city_codes(config)  # gazetteer cities: followable places with their own pages
        self._cache: dict[str, _Cached] = {}

    def set_registry(self, registry) -> None:
        """A new publisher registry (the authority job published new authority): every edition's book is rebuilt
        from its event log at its next cycle with it, the path a restarted worker takes."""
        self.registry = registry
        self._cache.clear()

    def _count(self, name: str, n: int = 1) -> None:
        if self._counter is not None:
            self._counter(name, n)

    def cycle(self, state: EditionState, now: int):
        """Fold the events due before ``now``, rank ``now``; returns (snapshot items, the next cycle or None)."""
        key, cached, mem, inbox, event_log = state.key, state.cached, state.mem, state.inbox, state.event_log
        t0 = time.perf_counter()
        due = cached.pending.due(now)
        folded = []
        bad_before = cached.book.bad_events
        for e in due:
            del cached.pending[e["id"]]
            if e["at"] < cached.last_cycle and "version_at" not in e:
                e = {**e, "version_at": now - 1}  # late (see the module docstring), recorded so in LOG
            if cached.book.apply(e):
                folded.append(e)
                if e["type"] == "change":  # activity is story changes; pulses are derived from them
                    mem.last_event_at = max(mem.last_event_at, int(e["at"]))
        for e in folded:
            event_log.add(e)
        self._count("events_folded", len(folded))
        if cached.book.bad_events > bad_before:
            self._count("events_bad", cached.book.bad_events - bad_before)
        if len(cached.pending) * 2 < cached.inbox_size:  # most of INBOX is folded: rewrite it with what is left
            self._rewrite_inbox(cached, inbox)

        ctx = self.context(key, state.edition, cached, mem, now)
        out = run_cycle(ctx)
        cached.last_cycle = now
        self._count("cycles")
        if out is None:  # a steady minute (transforms/editions/ranker/steady.py): nothing a reader sees can differ
            self._count("cycles_steady")
            items = []
        else:
            items = snapshot_items(out, self.config)
            if self.change_only:  # the pages and pool that repeat the last proposed are not proposed (steady.py)
                items = cached.steady.unproposed(items, mem, ctx.overlays.controls, out.page_digests)
        if now % HOUR_MS == 0 and self.compact(key, cached, event_log, now):
            self._rewrite_inbox(cached, inbox)  # a folded event left in INBOX is not in the fresh book's ``applied``
        if (
            self.fast_forward
            and cached.book is ctx.book
            and (out is None or (ctx.steady is not None and ctx.steady.repeats(ctx)))
        ):
            now = self._skip_steady(ctx, cached, mem)  # after a steady minute, or a full one the next repeats
        live = bool(cached.book.live_mask(now, self.params.live_window_ms).any())
        idle = now - mem.last_event_at >= self.params.idle_cycles * MINUTE_MS
        nxt_cycle = None
        if live and not idle:
            nxt_cycle = now + MINUTE_MS
        elif cached.pending:
            first_due = (cached.pending.first_at() // MINUTE_MS + 1) * MINUTE_MS
            nxt_cycle = max(now + MINUTE_MS, first_due)
        self._count("cycle_ms", int((time.perf_counter() - t0) * 1000))
        return items, nxt_cycle

    @staticmethod
    def _rewrite_inbox(cached: _Cached, inbox) -> None:
        inbox.clear()
        for e in sorted(cached.pending.values(), key=event_sort_key):
            inbox.add(e)
        cached.inbox_size = len(cached.pending)

    def _skip_steady(self, ctx: CycleContext, cached: _Cached, mem: EditionMemory) -> int:
        """After a steady minute of a replay: the minutes proven steady after it are skipped (their memory
        updates applied, counted ``cycles``, ``cycles_steady`` and ``cycles_skipped``); returns the last minute
        done (transforms/editions/ranker/skip.py)."""
        decided = ctx.steady.decided if ctx.steady is not None else None
        if decided is None:
            return ctx.now
        found = skip.horizon(ctx, decided, cached.pending, mem.last_event_at, ctx.overlays.controls)
        if found is None:
            return ctx.now
        h, ranked_h = found
        minutes = skip.skip(ctx, decided, h, ranked_h)
        cached.last_cycle = h
        for name in ("cycles", "cycles_steady", "cycles_skipped"):
            self._count(name, minutes)
        return h

    def context(self, key, edition, cached: _Cached, mem: EditionMemory, now: int) -> CycleContext:
        """The cycle's context: the overlay inputs read once for the minute (controls, takedowns, followed
        counts), the steady test of the change-only replay, the edition's cache and this ranker's counters."""
        overlays = self.readers.read(key, now, self.cities)
        steady = cached.steady.checker(mem, now, self.params, overlays) if self.change_only else None
        return CycleContext(
            cached.book,
            edition,
            self.config,
            self.params,
            mem,
            now,
            cache=cached.cycle_cache,
            steady=steady,
            overlays=overlays,
            counter=self._count,
        )

    def book(self, key, mem: EditionMemory, inbox, event_log, n_received: int) -> _Cached:
        """The edition's book: the cached one when it saw cycle ``mem.last_cycle``, else rebuilt from LOG; with
        the events of INBOX not folded yet (read only when ``n_received`` changed)."""
        cached = self._cache.get(key)
        if cached is None or cached.last_cycle != mem.last_cycle:
            self._count("book_rebuilds")
            edition = self.config.edition(key)
            book = StoryBook(self.config, self.registry, edition.language)
            for e in sorted(event_log.read(), key=event_sort_key):  # a compaction's SNAPSHOT first (at 0)
                book.apply(e)
            cached = _Cached(book, Pending(), -1, mem.last_cycle)
            self._cache[key] = cached
        if cached.inbox_seen != n_received:
            size = 0
            for e in inbox.read():
                size += 1
                if e["id"] not in cached.book.applied and e["id"] not in cached.pending:
                    cached.pending[e["id"]] = e
            cached.inbox_seen = n_received
            cached.inbox_size = size
        return cached

    def compact(self, key, cached: _Cached, event_log, now: int) -> bool:
        """Rewrite LOG with the events of stories still live and one SNAPSHOT per storyline holding a live story
        (transforms/editions/book/storylines.py), when that halves it; the fresh book built from them carries the
        old one's storyline changes not yet published, so a compaction changes no page."""
        book = cached.book
        live_ids = book.live_story_ids(now, self.params.live_window_ms)
        events = list(event_log.read())

        def keep(e):
            ids = [e.get("story_id"), e.get("other_story_id")]
            return e.get("type") != "storyline" and any(i is not None and book.resolve(int(i)) in live_ids for i in ids)

        def last_at(story_id):
            row = book.stories.row_of.get(story_id)
            return None if row is None else int(book.stories.newest_seen[row])

        def minute(story_id):
            row = book.stories.row_of.get(story_id)
            return 0 if row is None else int(book.stories.structural_minute[row])

        kept = sorted((e for e in events if keep(e)), key=event_sort_key)
        snapshots = book.storylines.snapshot(live_ids, last_at, minute, now)
        if (len(kept) + len(snapshots)) * 2 > len(events):
            return False
        event_log.clear()
        fresh = StoryBook(self.config, self.registry, book.language)
        for e in snapshots + kept:  # a SNAPSHOT first: the state before every event kept beside it
            event_log.add(e)
            fresh.apply(e)
        unpublished = book.storylines.take()  # not yet in a storyline page: the next built cycle publishes them
        fresh.storylines.touched, fresh.storylines.left, fresh.storylines.sources, fresh.storylines.merged = unpublished
        cached.book = fresh
        cached.cycle_cache = CycleCache()  # its entries are keyed by rows of the old book
        log.info("edition %s: compacted the event log %d -> %d events", key, len(events), len(kept) + len(snapshots))
        return True
