"""Publishing in Beam: every snapshot item validated, stored and pointed to (:class:`PublishSnapshots`, the plain
:class:`~transforms.editions.publish.snapshots.SnapshotPublisher`), and the merged-story aliases map (:class:`TrackAliases`,
one key, kept incrementally: transforms/editions/publish/aliases.py)."""

from __future__ import annotations

import random
from typing import Any

import apache_beam as beam
from apache_beam.coders import PickleCoder, TupleCoder, VarIntCoder
from apache_beam.transforms import window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.typehints import KV

from stores import StoreConfig, open_stores
from stores.controls import open_control_store
from transforms.common import MINUTE_MS
from transforms.editions.beam.counters import Counters
from transforms.editions.publish.aliases import (
    EXPIRED,
    KEEP_MS,
    SET,
    AliasIndex,
    alias_event,
    aliases_item,
    is_expire,
    is_merge,
    published_aliases,
)
from transforms.editions.publish.breaking import BREAKING, candidates, hot_candidate
from transforms.editions.publish.snapshots import SnapshotPublisher
from transforms.timers import arm, arm_earliest, rearm_pending, to_ms


class PublishSnapshotFn(beam.DoFn):
    """Validate -> put -> compare-and-set, one snapshot item at a time (:class:`~transforms.editions.publish.snapshots.SnapshotPublisher`)."""

    def __init__(self, store_config: StoreConfig, confirm_shrink_cycles: int = 15):
        self.store_config = store_config
        self.confirm_shrink_cycles = confirm_shrink_cycles

    def setup(self):
        self.stores = open_stores(self.store_config)
        self.counters = Counters("snapshots")
        self.publisher = SnapshotPublisher(
            self.stores,
            self.confirm_shrink_cycles,
            self.counters,
            controls=open_control_store(self.store_config),
        )

    def process(self, item):
        result = self.publisher.publish(item)
        yield result
        # Breaking stories of a page just published, and a top page's hottest stories (tag "breaking")
        for kv in candidates(item, result) + hot_candidate(item, result):
            yield beam.pvalue.TaggedOutput(BREAKING, kv)

    def finish_bundle(self):
        self.publisher.maybe_retire()  # story pointers of long-expired stories (stores/retention.py)
        self.counters.flush()  # the bundle's counts (Counters sums them)


class PublishSnapshots(beam.PTransform):
    """Snapshot items -> stored objects and moved pointers: ``.results`` (one per item) and ``["breaking"]``
    (``(edition, candidate)`` of :func:`~transforms.editions.publish.breaking.candidates` and :func:`~transforms.editions.publish.breaking.hot_candidate`).

    Args:
        store_config: where the snapshot and pointer stores live (the job passes ``store_config(options)``).
        confirm_shrink_cycles: cycles a > 50 % shrink must persist before it is published.
    """

    def __init__(self, store_config: StoreConfig, confirm_shrink_cycles: int = 15):
        super().__init__()
        self.store_config = store_config
        self.confirm_shrink_cycles = confirm_shrink_cycles

    def expand(self, items):
        fn = PublishSnapshotFn(self.store_config, self.confirm_shrink_cycles)
        return items | "ValidateStoreAndPoint" >> beam.ParDo(fn).with_outputs(BREAKING, main="results")


class TrackAliasesFn(beam.DoFn):
    """Single key: MERGE and EXPIRE events -> at the minute boundary after one, the aliases map if it changed.

    The map is an :class:`~transforms.editions.publish.aliases.AliasIndex` held by the DoFn instance between firings, so a
    firing costs O(its new events and their own aliases), not O(history); the state is its journal, read back only
    when the instance's copy is not the state's (a cold worker, a retried bundle, the key moved).

    State: PENDING (bag of events not applied yet), JOURNAL (bag of the index's delta records), HELD (token, length):
    the token is random, rewritten at each change (the instance's copy is valid only while it matches), the length
    counts JOURNAL's records (it is rewritten compacted when over twice the index's size), NEXT (time the timer is
    set for), LAST (last cycle). Timer: CYCLE (event time). Expired groups are dropped at a firing an event
    caused, never by a timer of their own: a bounded run's watermark jumps to the end of time, where every story
    has expired, and must not end on an empty map (the story pointers it redirects to are retired by wall clock).
    ``replay`` (a bounded, complete input): the first firing runs the later ones itself, in order (see
    :class:`TrackAliases`).
    """

    PENDING = BagStateSpec("pending", PickleCoder())
    JOURNAL = BagStateSpec("journal", PickleCoder())
    HELD = ReadModifyWriteStateSpec("held", TupleCoder((VarIntCoder(), VarIntCoder())))
    NEXT = ReadModifyWriteStateSpec("next", VarIntCoder())
    LAST = ReadModifyWriteStateSpec("last", VarIntCoder())
    CYCLE = TimerSpec("cycle", TimeDomain.WATERMARK)

    def __init__(self, keep_ms: int = KEEP_MS, store_config: StoreConfig | None = None, replay: bool = False):
        self.keep_ms, self.store_config, self.replay = keep_ms, store_config, replay

    def setup(self):
        self._held: tuple[int, AliasIndex] | None = None  # (token, index) of the last firing's state
        self._stores = open_stores(self.store_config) if self.store_config is not None else None

    def process(
        self,
        element,
        pending=beam.DoFn.StateParam(PENDING),
        nxt=beam.DoFn.StateParam(NEXT),
        last=beam.DoFn.StateParam(LAST),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        _, e = element
        pending.add(e)
        arm_earliest(timer, nxt, max((int(e["at"]) // MINUTE_MS + 1) * MINUTE_MS, (last.read() or 0) + MINUTE_MS))

    @on_timer(CYCLE)
    def on_cycle(
        self,
        ts=beam.DoFn.TimestampParam,
        pending=beam.DoFn.StateParam(PENDING),
        journal=beam.DoFn.StateParam(JOURNAL),
        held=beam.DoFn.StateParam(HELD),
        nxt=beam.DoFn.StateParam(NEXT),
        last=beam.DoFn.StateParam(LAST),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        now = to_ms(ts)
        if now <= (last.read() or 0):  # a timer that fires twice: keep the one set for the next event
            rearm_pending(timer, nxt, now)
            return
        token, length = held.read() or (None, 0)
        index, seeded = self._index(journal, token)
        waiting = list({e["id"]: e for e in pending.read()}.values())  # replays of a change collapse here
        while True:
            future = [e for e in waiting if e["at"] >= now]
            deltas = index.apply(e for e in waiting if e["at"] < now) + index.prune(now)
            if seeded or deltas:
                length = self._record(index, seeded + deltas, journal, held, length)
                seeded = []
            if any(op != EXPIRED for op, _, _ in deltas):
                yield aliases_item(index.alias, now)
            waiting, due = future, (min(e["at"] for e in future) // MINUTE_MS + 1) * MINUTE_MS if future else None
            # A replay runs the firings the timer would make, in order, in this one: every event is already in
            # PENDING (a bounded input), so one bundle commits the state once, not once a firing.
            if not self.replay or due is None:
                break
            now = due
        pending.clear()
        for e in waiting:
            pending.add(e)
        last.write(now)
        arm(timer, nxt, due)

    def _index(self, journal, current: int | None) -> tuple[AliasIndex, list]:
        """The instance's index if it is the state's, else the journal replayed (a cold start: O(the map)); with
        no state at all (a new job, a relaunch after a drain), the map published last, whose records are returned
        to be journaled (their survivors' EXPIRE clocks start when their EXPIRE comes)."""
        if self._held is not None and current is not None and self._held[0] == current:
            return self._held[1], []
        if current is not None or self._stores is None:
            return AliasIndex.replay(journal.read() if current is not None else (), self.keep_ms), []
        published = published_aliases(self._stores.pointers, self._stores.snapshots)
        index = AliasIndex.replay([(SET, k, v) for k, v in sorted(published.items())], self.keep_ms)
        return index, index.compacted()

    def _record(self, index: AliasIndex, deltas: list, journal, held, length: int) -> int:
        """Append the deltas to the journal (rewritten compacted when it is over twice the index's size); returns
        the journal's length."""
        size = length + len(deltas)
        if size > 2 * index.journal_size() + 64:
            journal.clear()
            deltas = index.compacted()
            size = len(deltas)
        for d in deltas:
            journal.add(d)
        token = random.getrandbits(62)
        held.write((token, size))
        self._held = (token, index)
        return size


class TrackAliases(beam.PTransform):
    """StoryChange records -> aliases snapshot items (one per minute in which the map changed).

    ``keep_ms``: how long a survivor's aliases outlive its EXPIRE (transforms/editions/publish/aliases.py);
    ``store_config``: the stores whose published map a tracker without state starts from (None: from nothing);
    ``replay``: a bounded, complete input (the backfill's ``--snapshots``): the minutes' firings run to the end in
    the first one (the same maps, one state commit); False: one timer firing a minute, as streaming needs."""

    def __init__(self, keep_ms: int = KEEP_MS, store_config: StoreConfig | None = None, replay: bool = False):
        super().__init__()
        self.keep_ms, self.store_config, self.replay = keep_ms, store_config, replay

    def expand(self, changes):
        return (
            changes
            | "KeepMergesAndExpiries" >> beam.Filter(lambda c: is_merge(c) or is_expire(c))
            | "KeyEventsTogether"
            >> beam.Map(
                lambda c: window.TimestampedValue(("aliases", alias_event(c)), c["at"] / 1000.0)
            ).with_output_types(KV[str, Any])
            | "EventsToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
            | "EmitAliasesMap" >> beam.ParDo(TrackAliasesFn(self.keep_ms, self.store_config, self.replay))
        )
