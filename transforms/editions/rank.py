"""RankEditions: a stateful DoFn keyed by edition that folds story changes and burst pulses into a StoryBook and
ranks the edition on an event-time timer at every minute boundary.

Reads StoryChange records (decoded dicts, schemas/avro/story_change.avsc) and burst pulses
(:class:`~transforms.editions.bursts.DetectBursts`); writes snapshot items (``{"kind", "path", "pointer",
"version", "doc", "min_stories"}``) for every page (edition x section), the edition's candidate pool and the
coverage of page/pool stories whose coverage changed. :class:`~transforms.editions.publish.PublishSnapshots`
validates and stores them.

Why a minute timer in event time: cycle T ranks exactly the events with event time < T (a change's ``at`` is its
article's first-seen time; a pulse's is its window end - 1 ms). The timer fires when the watermark passes T, so
streaming and backfill (where the watermark jumps to the end and the timers fire in order) rank the same events at
every T and publish the same pages. Events that arrive for a later minute wait in the inbox.

State (per edition key):
    INBOX     bag of events not yet folded (and, between compactions, some already folded: skipped by id)
    LOG       bag of folded events: the book is rebuilt from it after a worker restart
    MEMORY    EditionMemory (smoothing, last pages, publisher impressions, coverage versions, last cycle)
    RECEIVED  events ever added to INBOX (lets a timer skip reading INBOX when nothing arrived)
    NEXT      the cycle the timer is set for
    CYCLE     the event-time timer
The book itself lives in a per-instance cache (numpy columns; too big to serialise every minute). The cache is
trusted only when its last cycle equals MEMORY's; otherwise it is rebuilt from LOG in canonical order, and the fold
is order-independent (:mod:`transforms.editions.book`), so a rebuilt book ranks the same. Timer callbacks are
idempotent: timers were seen firing twice, and the second firing of cycle T both must not rank again and replaces
the timer the first one set for T + 1 min, so it re-arms that timer from NEXT. Once an hour (at the top of the
hour, a data-defined moment) LOG is compacted to the events of stories still live when most of it is dead.

The chain of timers stops when the edition has no live story, or after ``idle_cycles`` minutes without a story
change (the last good pages keep serving); the next event restarts it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import apache_beam as beam
from apache_beam.coders import PickleCoder, VarIntCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.typehints import KV

from schemas.pages import page_path, pool_path, story_path
from transforms import common
from transforms.common import DEAD_LETTER
from transforms.editions.book import StoryBook, compact_change, event_sort_key
from transforms.editions.config import default_config, subset
from transforms.editions.cycle import CycleCache, CycleOutput, EditionMemory, run_cycle
from transforms.editions.params import HOUR_MS, MINUTE_MS, RankParams
from transforms.publishers import default_registry
from transforms.timers import arm, arm_earliest, rearm_pending, to_ms

log = logging.getLogger(__name__)


def snapshot_items(out: CycleOutput, config) -> list[dict]:
    """The snapshot items of one edition's cycle, pages first (deterministic order)."""
    items = []
    for sec_id, doc in out.pages.items():
        items.append(
            {
                "kind": "edition_page",
                "path": page_path(out.edition, sec_id, doc["version"]),
                "pointer": f"{out.edition}/{sec_id}",
                "version": doc["version"],
                "doc": doc,
                "min_stories": config.section(sec_id).min_stories,
            }
        )
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
    return items


def dead_letter(stage: str, reason: str, detail: str, key, payload, at: int) -> dict:
    """A DeadLetter record of an unreadable story change (payload re-encoded as a StoryChange where it can be)."""
    return common.dead_letter(stage, reason, detail, key, payload, at, message="StoryChange")


class RouteChangeFn(beam.DoFn):
    """KV(edition, compact event) for every edition of the change's language, stamped with the change's time.
    A change that cannot be read is counted and dead-lettered (tag ``dead_letter``), never raised."""

    def __init__(self, config):
        self.config = config
        self.bad = Metrics.counter("editions", "changes_malformed")
        self.unrouted = Metrics.counter("editions", "changes_without_edition")

    def process(self, change):
        try:
            event = compact_change(change)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self.bad.inc()
            key = change.get("change_id") if isinstance(change, dict) else None
            at = change.get("at") if isinstance(change, dict) and isinstance(change.get("at"), int) else 0
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                dead_letter("editions", "malformed_change", f"{type(exc).__name__}: {exc}", key, change, at),
            )
            return
        if event["kind"] == "LINK":  # the link writer's language is "mul": the story may be in any edition
            editions = self.config.editions
        else:
            editions = self.config.editions_for_language(event["language"])
        if not editions:
            self.unrouted.inc()  # a language no edition shows: nothing to rank (not an error)
        for e in editions:
            yield beam.window.TimestampedValue((e.id, event), event["at"] / 1000.0)


def route_pulse(pulse: dict, config):
    for e in config.editions_for_language(pulse.get("language") or ""):
        yield beam.window.TimestampedValue((e.id, pulse), pulse["at"] / 1000.0)


@dataclass
class _Cached:
    book: StoryBook
    pending: dict  # event id -> event, not folded yet
    inbox_seen: int
    last_cycle: int
    inbox_size: int = 0
    cycle_cache: CycleCache = field(default_factory=CycleCache)  # cards and links reused between cycles


class RankEditionsFn(beam.DoFn):
    """Keyed by edition id: fold events, rank at every minute boundary, emit snapshot items (see module doc)."""

    INBOX = BagStateSpec("inbox", PickleCoder())
    LOG = BagStateSpec("log", PickleCoder())
    MEMORY = ReadModifyWriteStateSpec("memory", PickleCoder())
    RECEIVED = ReadModifyWriteStateSpec("received", VarIntCoder())
    NEXT = ReadModifyWriteStateSpec("next", VarIntCoder())
    CYCLE = TimerSpec("cycle", TimeDomain.WATERMARK)

    def __init__(
        self,
        editions_path: str | None = None,
        publishers_path: str | None = None,
        editions_only: list[str] | None = None,
        overrides: dict | None = None,
        replay: bool = False,
    ):
        self.editions_path = editions_path
        self.publishers_path = publishers_path
        self.editions_only = editions_only
        self.overrides = overrides or {}
        self.replay = replay
        self.events_in = Metrics.counter("editions", "events_received")
        self.events_folded = Metrics.counter("editions", "events_folded")
        self.events_late = Metrics.counter("editions", "events_late")
        self.events_bad = Metrics.counter("editions", "events_bad")
        self.cycles = Metrics.counter("editions", "cycles")
        self.rebuilds = Metrics.counter("editions", "book_rebuilds")
        self.duplicate_timers = Metrics.counter("editions", "duplicate_timer_firings")
        self.cycle_ms = Metrics.distribution("editions", "cycle_ms")

    def setup(self):
        self.config = subset(default_config(self.editions_path), self.editions_only)
        self.registry = default_registry(self.publishers_path)
        self.params = RankParams.from_config(self.config, **self.overrides)
        self._cache: dict[str, _Cached] = {}

    # ---------------------------------------------------------------------------------------------- input
    def process(
        self,
        element,
        inbox=beam.DoFn.StateParam(INBOX),
        received=beam.DoFn.StateParam(RECEIVED),
        nxt=beam.DoFn.StateParam(NEXT),
        memory=beam.DoFn.StateParam(MEMORY),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        _, event = element
        self.events_in.inc()
        inbox.add(event)
        received.write((received.read() or 0) + 1)
        cycle = (int(event["at"]) // MINUTE_MS + 1) * MINUTE_MS
        current = nxt.read()
        if current is None or cycle < current:
            mem = memory.read()
            if mem is not None and cycle <= mem.last_cycle:
                self.events_late.inc()
                cycle = mem.last_cycle + MINUTE_MS
            arm_earliest(timer, nxt, cycle)

    # ---------------------------------------------------------------------------------------------- cycle
    @on_timer(CYCLE)
    def on_cycle(
        self,
        key=beam.DoFn.KeyParam,
        ts=beam.DoFn.TimestampParam,
        inbox=beam.DoFn.StateParam(INBOX),
        event_log=beam.DoFn.StateParam(LOG),
        memory=beam.DoFn.StateParam(MEMORY),
        received=beam.DoFn.StateParam(RECEIVED),
        nxt=beam.DoFn.StateParam(NEXT),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        now = to_ms(ts)
        mem = memory.read() or EditionMemory()
        if now <= mem.last_cycle:
            self.duplicate_timers.inc()  # set the minute chain's next firing again (transforms/timers.py)
            rearm_pending(timer, nxt, now)
            return
        try:
            edition = self.config.edition(key)
        except KeyError:
            log.warning("events for unknown edition %s dropped", key)
            nxt.clear()
            return
        cached = self._book(key, mem, inbox, event_log, received)
        nxt_cycle = now
        while True:
            items, nxt_cycle = self._cycle(key, edition, cached, mem, nxt_cycle, inbox, event_log)
            yield from items
            # A replay runs the minute chain to its end in this firing: the same cycles the timers would run,
            # in the same order, without one timer round per minute (every input is already in INBOX).
            if not self.replay or nxt_cycle is None:
                break
        memory.write(mem)
        arm(timer, nxt, nxt_cycle)

    def _cycle(self, key, edition, cached: _Cached, mem: EditionMemory, now: int, inbox, event_log):
        """Fold the events due before ``now``, rank ``now``; returns (snapshot items, the next cycle or None)."""
        t0 = time.perf_counter()
        due = sorted((e for e in cached.pending.values() if e["at"] < now), key=event_sort_key)
        folded = []
        bad_before = cached.book.bad_events
        for e in due:
            del cached.pending[e["id"]]
            if cached.book.apply(e):
                folded.append(e)
                if e["type"] == "change":  # activity is story changes; pulses are derived from them
                    mem.last_event_at = max(mem.last_event_at, int(e["at"]))
        for e in folded:
            event_log.add(e)
        self.events_folded.inc(len(folded))
        if cached.book.bad_events > bad_before:
            self.events_bad.inc(cached.book.bad_events - bad_before)
        if len(cached.pending) * 2 < cached.inbox_size:  # most of INBOX is folded: rewrite it with what is left
            inbox.clear()
            for e in sorted(cached.pending.values(), key=event_sort_key):
                inbox.add(e)
            cached.inbox_size = len(cached.pending)

        out = run_cycle(cached.book, edition, self.config, self.params, mem, now, cache=cached.cycle_cache)
        cached.last_cycle = now
        self.cycles.inc()
        items = snapshot_items(out, self.config)
        if now % HOUR_MS == 0:
            self._compact(key, cached, event_log, now)
        live = bool(cached.book.live_mask(now, self.params.live_window_ms).any())
        idle = now - mem.last_event_at >= self.params.idle_cycles * MINUTE_MS
        nxt_cycle = None
        if live and not idle:
            nxt_cycle = now + MINUTE_MS
        elif cached.pending:
            first_due = (min(e["at"] for e in cached.pending.values()) // MINUTE_MS + 1) * MINUTE_MS
            nxt_cycle = max(now + MINUTE_MS, first_due)
        self.cycle_ms.update(int((time.perf_counter() - t0) * 1000))
        return items, nxt_cycle

    def _book(self, key, mem: EditionMemory, inbox, event_log, received) -> _Cached:
        n_received = received.read() or 0
        cached = self._cache.get(key)
        if cached is None or cached.last_cycle != mem.last_cycle:
            self.rebuilds.inc()
            edition = self.config.edition(key)
            book = StoryBook(self.config, self.registry, edition.language)
            for e in sorted(event_log.read(), key=event_sort_key):
                book.apply(e)
            cached = _Cached(book, {}, -1, mem.last_cycle)
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

    def _compact(self, key, cached: _Cached, event_log, now: int) -> None:
        book = cached.book
        live_ids = book.live_story_ids(now, self.params.live_window_ms)
        events = list(event_log.read())

        def keep(e):
            ids = [e.get("story_id"), e.get("other_story_id")]
            return any(i is not None and book.resolve(int(i)) in live_ids for i in ids)

        kept = [e for e in events if keep(e)]
        if len(kept) * 2 > len(events):
            return
        event_log.clear()
        kept.sort(key=event_sort_key)
        fresh = StoryBook(self.config, self.registry, book.language)
        for e in kept:
            event_log.add(e)
            fresh.apply(e)
        cached.book = fresh
        cached.cycle_cache = CycleCache()  # its entries are keyed by rows of the old book
        log.info("edition %s: compacted the event log %d -> %d events", key, len(events), len(kept))


class RankEditions(beam.PTransform):
    """``{"changes": StoryChange dicts, "pulses": burst pulses}`` -> ``{"items": snapshot items (pages, pools,
    coverage), "dead_letter": DeadLetter records of unreadable changes}``.

    Args:
        editions_path / publishers_path: the editions file and publisher registry (default: packaged).
        editions_only: rank only these editions (tests, small local runs); default all.
        overrides: ranking parameters replacing the file's (tests).
        replay: the input is bounded and complete (a backfill): each edition's minute chain runs to its end in one
            timer firing instead of one timer round per minute. Default False (streaming: a firing cannot know
            events that have not arrived yet).
    """

    def __init__(self, editions_path=None, publishers_path=None, editions_only=None, overrides=None, replay=False):
        super().__init__()
        self.editions_path = editions_path
        self.publishers_path = publishers_path
        self.editions_only = editions_only
        self.overrides = overrides
        self.replay = replay

    def expand(self, inputs):
        config = subset(default_config(self.editions_path), self.editions_only)
        # Typed keys: the stateful DoFn's key coder must be deterministic (StrUtf8Coder, not a pickler).
        routed = inputs["changes"] | "RouteChangesToEditions" >> beam.ParDo(RouteChangeFn(config)).with_output_types(
            KV[str, Any]
        ).with_outputs(DEAD_LETTER, main="events")
        parts = [routed.events]
        if inputs.get("pulses") is not None:
            parts.append(
                inputs["pulses"]
                | "RoutePulsesToEditions" >> beam.FlatMap(route_pulse, config).with_output_types(KV[str, Any])
            )
        items = (
            parts
            | "FlattenEditionEvents" >> beam.Flatten()
            | "EventsToGlobalWindow" >> beam.WindowInto(beam.window.GlobalWindows())
            | "RankEachEdition"
            >> beam.ParDo(
                RankEditionsFn(
                    self.editions_path, self.publishers_path, self.editions_only, self.overrides, self.replay
                )
            )
        )
        return {"items": items, DEAD_LETTER: routed[DEAD_LETTER]}
