"""The Beam layer of the editions stage (with :mod:`.beam_bursts`, which holds DetectBursts and AnnounceBreaking).

story changes -> DetectBursts (pulses, burst polls) -> RankEditions (a minute timer per edition) -> snapshot items
-> PublishSnapshots (validate, store, move pointers) -> AnnounceBreaking (one Breaking record per story and
edition, CDN purges); TrackAliases adds the merged-story map. PublishEditions is
the whole stage, applied by pipelines/stories.py (streaming) and by the backfill's ``--snapshots``
(pipelines/backfill.py), which pass it what it needs: a transform never reads a job's options.

The logic is plain Python in the sibling modules, which say why it is so: :mod:`.bursts` (the Breaking rule, burst
polls), :mod:`.rank` (EditionRanker: the book, the minute cycle, the state layout), :mod:`.publish`
(SnapshotPublisher, the aliases map), :mod:`.changes` (story changes in, dead letters out).

Outputs of :class:`PublishEditions`: ``{"results": publish results, "breaking": Breaking records (once per story
and edition, :mod:`.breaking`), "fetch_requests": FetchRequest records,
"pulses": burst pulses, "items": snapshot items, "dead_letter": DeadLetter records of unreadable story changes}``.
"""

from __future__ import annotations

import logging
from typing import Any

import apache_beam as beam
from apache_beam.coders import PickleCoder, TupleCoder, VarIntCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms import window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.typehints import KV

from stores import StoreConfig, open_stores
from stores.controls import open_control_store
from stores.profiles import open_profile_store
from stores.takedowns import open_takedown_store
from transforms.authority import AuthorityWatcher
from transforms.common import DEAD_LETTER, MINUTE_MS
from transforms.editions.beam_bursts import AnnounceBreaking, DetectBursts
from transforms.editions.book import compact_change
from transforms.editions.breaking import BREAKING, candidates, hot_candidate
from transforms.editions.changes import change_dead_letter, change_of_output, editions_of
from transforms.editions.config import default_config, subset
from transforms.editions.controls import ControlReader
from transforms.editions.cycle import EditionMemory
from transforms.editions.overlays import OverlayReaders
from transforms.editions.params import RankParams
from transforms.editions.publish import SnapshotPublisher, aliases_item, is_merge, merge_event
from transforms.editions.rank import EditionRanker
from transforms.editions.settings import PublishSettings, RankSettings
from transforms.editions.storylines import compact_storyline, is_storyline_change
from transforms.editions.takedowns import TakedownReader
from transforms.editions.topics import FollowedTopics
from transforms.timers import arm, arm_earliest, rearm_pending, to_ms

log = logging.getLogger(__name__)


class _Metrics:
    """``count(name, n)`` over Beam counters of one namespace, made on first use; ``*_ms`` names are
    distributions."""

    def __init__(self, namespace: str):
        self.namespace = namespace
        self._made = {}

    def __call__(self, name: str, n: int = 1) -> None:
        m = self._made.get(name)
        if m is None:
            make = Metrics.distribution if name.endswith("_ms") else Metrics.counter
            m = self._made[name] = make(self.namespace, name)
        if name.endswith("_ms"):
            m.update(n)
        else:
            m.inc(n)


# ---------------------------------------------------------------------------------------------------- ranking
class RouteChangeFn(beam.DoFn):
    """KV(edition, compact event) for every edition of the change (:func:`~.changes.editions_of`), stamped with the
    change's time. A change that cannot be read is counted and dead-lettered (tag ``dead_letter``), never raised."""

    def __init__(self, config):
        self.config = config
        self.bad = Metrics.counter("editions", "changes_malformed")
        self.unrouted = Metrics.counter("editions", "changes_without_edition")

    def process(self, change):
        try:
            event = compact_storyline(change) if is_storyline_change(change) else compact_change(change)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, change_dead_letter(change, exc))
            return
        editions = editions_of(event, self.config)
        if not editions:
            self.unrouted.inc()  # a language no edition shows: nothing to rank (not an error)
        for e in editions:
            yield window.TimestampedValue((e.id, event), event["at"] / 1000.0)


def route_pulse(pulse: dict, config):
    for e in editions_of(pulse, config):
        yield window.TimestampedValue((e.id, pulse), pulse["at"] / 1000.0)


class Chain:
    """The ranker's RECEIVED and NEXT in one ReadModifyWrite cell, ``(events ever added to INBOX, the cycle the
    timer is set for or 0)``: every event reads and writes both, and one cell keeps the timer callback within the
    parameters Beam injects one by one. Reads like NEXT (``read``, ``write``, ``clear``) for transforms/timers.py."""

    def __init__(self, cell):
        self.cell = cell
        self.received, nxt = cell.read() or (0, 0)
        self.next = nxt or None

    def read(self) -> int | None:
        return self.next

    def write(self, when_ms: int) -> None:
        self.next = int(when_ms)
        self.cell.write((self.received, self.next))

    def clear(self) -> None:
        self.next = None
        self.cell.write((self.received, 0))

    def count_received(self) -> None:
        self.received += 1
        self.cell.write((self.received, self.next or 0))


class RankEditionsFn(beam.DoFn):
    """Keyed by edition id: fold events, rank at every minute boundary, emit snapshot items.

    The state (INBOX, LOG, MEMORY, CHAIN, timer CYCLE) and why a minute timer in event time: see
    :mod:`transforms.editions.rank`, whose :class:`~transforms.editions.rank.EditionRanker` does the work.
    ``settings``: which editions and registry, and how the chain runs (:class:`~.settings.RankSettings`);
    ``store_config``: where the controls, takedowns, follower counts and computed authority are read (None: none).
    """

    INBOX = BagStateSpec("inbox", PickleCoder())
    LOG = BagStateSpec("log", PickleCoder())
    MEMORY = ReadModifyWriteStateSpec("memory", PickleCoder())
    CHAIN = ReadModifyWriteStateSpec("chain", TupleCoder((VarIntCoder(), VarIntCoder())))
    CYCLE = TimerSpec("cycle", TimeDomain.WATERMARK)

    def __init__(self, settings: RankSettings = RankSettings(), store_config: StoreConfig | None = None):
        self.settings = settings
        self.store_config = store_config
        self.metrics = _Metrics("editions")

    def setup(self):
        s = self.settings
        self.config = subset(default_config(s.editions_path), s.editions_only)
        self.params = RankParams.from_config(self.config, **(s.overrides or {}))
        readers = OverlayReaders()
        if self.store_config is not None:  # controls, takedowns, follower counts: read every cycle (a replay: 30 s)
            refresh_s = 30.0 if s.replay else 0.0
            readers = OverlayReaders(
                controls=ControlReader(open_control_store(self.store_config), refresh_s=refresh_s, count=self.metrics),
                takedowns=TakedownReader(
                    open_takedown_store(self.store_config), refresh_s=refresh_s, count=self.metrics
                ),
                followed=FollowedTopics(open_profile_store(self.store_config)),  # topic pages (follower counts)
            )
        self.authority = AuthorityWatcher(s.publishers_path, self.store_config)  # computed, else the file
        self.tally = {"cycles": 0, "cycles_steady": 0}  # this worker's minutes, for the replay's log line

        def count(name: str, n: int = 1) -> None:
            self.metrics(name, n)
            if name in self.tally:
                self.tally[name] += n

        self.ranker = EditionRanker(
            self.config, self.authority.registry, self.params, count, readers=readers, change_only=s.change_only
        )

    def process(
        self,
        element,
        inbox=beam.DoFn.StateParam(INBOX),
        chain=beam.DoFn.StateParam(CHAIN),
        memory=beam.DoFn.StateParam(MEMORY),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        _, event = element
        self.metrics("events_received")
        inbox.add(event)
        nxt = Chain(chain)
        nxt.count_received()
        cycle = (int(event["at"]) // MINUTE_MS + 1) * MINUTE_MS
        current = nxt.read()
        if current is None or cycle < current:
            mem = memory.read()
            if mem is not None and cycle <= mem.last_cycle:
                self.metrics("events_late")
                cycle = mem.last_cycle + MINUTE_MS
            arm_earliest(timer, nxt, cycle)

    @on_timer(CYCLE)
    def on_cycle(
        self,
        key=beam.DoFn.KeyParam,
        ts=beam.DoFn.TimestampParam,
        inbox=beam.DoFn.StateParam(INBOX),
        event_log=beam.DoFn.StateParam(LOG),
        memory=beam.DoFn.StateParam(MEMORY),
        chain=beam.DoFn.StateParam(CHAIN),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        now = to_ms(ts)
        nxt = Chain(chain)
        mem = memory.read() or EditionMemory()
        if now <= mem.last_cycle:
            self.metrics("duplicate_timer_firings")  # set the minute chain's next firing again (transforms/timers.py)
            rearm_pending(timer, nxt, now)
            return
        try:
            edition = self.config.edition(key)
        except KeyError:
            log.warning("events for unknown edition %s dropped", key)
            nxt.clear()
            return
        if self.authority.poll():  # new computed authority: the books are rebuilt with it
            self.ranker.set_registry(self.authority.registry)
        cached = self.ranker.book(key, mem, inbox, event_log, nxt.received)
        nxt_cycle = now
        before = dict(self.tally)
        replay = self.settings.replay
        while True:
            items, nxt_cycle = self.ranker.cycle(key, edition, cached, mem, nxt_cycle, inbox, event_log)
            yield from items
            # A replay runs the minute chain to its end in this firing: the same cycles the timers would run,
            # in the same order, without one timer round per minute (every input is already in INBOX).
            if not replay or nxt_cycle is None:
                break
        memory.write(mem)
        arm(timer, nxt, nxt_cycle)
        if replay:
            ranked, steady = (self.tally[k] - before[k] for k in ("cycles", "cycles_steady"))
            log.info("edition %s: %d minutes ranked, %d steady (built nothing)", key, ranked, steady)


class RankEditions(beam.PTransform):
    """``{"changes": StoryChange dicts, "pulses": burst pulses, "storylines": StorylineChange records (optional: the
    top page's one-story-per-storyline rule)}`` -> ``{"items": snapshot items (pages, pools,
    coverage), "dead_letter": DeadLetter records of unreadable changes}``.

    Args:
        settings: which editions and registry, parameter overrides, replay and change-only
            (:class:`~.settings.RankSettings`).
        store_config: where the editorial controls (stores/controls.py) are read every cycle; None: none applied.
    """

    def __init__(self, settings: RankSettings = RankSettings(), store_config: StoreConfig | None = None):
        super().__init__()
        self.settings = settings
        self.store_config = store_config

    def expand(self, inputs):
        config = subset(default_config(self.settings.editions_path), self.settings.editions_only)
        # Typed keys: the stateful DoFn's key coder must be deterministic (StrUtf8Coder, not a pickler).
        routed = inputs["changes"] | "RouteChangesToEditions" >> beam.ParDo(RouteChangeFn(config)).with_output_types(
            KV[str, Any]
        ).with_outputs(DEAD_LETTER, main="events")
        parts, dead = [routed.events], routed[DEAD_LETTER]
        if inputs.get("storylines") is not None:
            routed_sl = inputs["storylines"] | "RouteStorylinesToEditions" >> beam.ParDo(
                RouteChangeFn(config)
            ).with_output_types(KV[str, Any]).with_outputs(DEAD_LETTER, main="events")
            parts.append(routed_sl.events)
            dead = (dead, routed_sl[DEAD_LETTER]) | "MergeRoutingDeadLetters" >> beam.Flatten()
        if inputs.get("pulses") is not None:
            parts.append(
                inputs["pulses"]
                | "RoutePulsesToEditions" >> beam.FlatMap(route_pulse, config).with_output_types(KV[str, Any])
            )
        fn = RankEditionsFn(self.settings, self.store_config)
        items = (
            parts
            | "FlattenEditionEvents" >> beam.Flatten()
            | "EventsToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
            | "RankEachEdition" >> beam.ParDo(fn)
        )
        return {"items": items, DEAD_LETTER: dead}


# ------------------------------------------------------------------------------------------------- publishing
class PublishSnapshotFn(beam.DoFn):
    """Validate -> put -> compare-and-set, one snapshot item at a time (:class:`~.publish.SnapshotPublisher`)."""

    def __init__(self, store_config: StoreConfig, confirm_shrink_cycles: int = 15):
        self.store_config = store_config
        self.confirm_shrink_cycles = confirm_shrink_cycles

    def setup(self):
        self.stores = open_stores(self.store_config)
        self.publisher = SnapshotPublisher(
            self.stores,
            self.confirm_shrink_cycles,
            _Metrics("snapshots"),
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


class PublishSnapshots(beam.PTransform):
    """Snapshot items -> stored objects and moved pointers: ``.results`` (one per item) and ``["breaking"]``
    (``(edition, candidate)`` of :func:`~.breaking.candidates` and :func:`~.breaking.hot_candidate`).

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
    """Single key: every MERGE; at the minute boundary after a new merge, emit the whole aliases map.

    State: MERGES (bag of merge events), NEXT (cycle the timer is set for), LAST (last cycle ranked),
    EMITTED (how many merges the last emitted map held). Timer: CYCLE (event time).
    """

    MERGES = BagStateSpec("merges", PickleCoder())
    NEXT = ReadModifyWriteStateSpec("next", VarIntCoder())
    LAST = ReadModifyWriteStateSpec("last", VarIntCoder())
    EMITTED = ReadModifyWriteStateSpec("emitted", VarIntCoder())
    CYCLE = TimerSpec("cycle", TimeDomain.WATERMARK)

    def process(
        self,
        element,
        merges=beam.DoFn.StateParam(MERGES),
        nxt=beam.DoFn.StateParam(NEXT),
        last=beam.DoFn.StateParam(LAST),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        _, m = element
        merges.add(m)
        arm_earliest(timer, nxt, max((int(m["at"]) // MINUTE_MS + 1) * MINUTE_MS, (last.read() or 0) + MINUTE_MS))

    @on_timer(CYCLE)
    def on_cycle(
        self,
        ts=beam.DoFn.TimestampParam,
        merges=beam.DoFn.StateParam(MERGES),
        nxt=beam.DoFn.StateParam(NEXT),
        last=beam.DoFn.StateParam(LAST),
        emitted=beam.DoFn.StateParam(EMITTED),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        now = to_ms(ts)
        if now <= (last.read() or 0):  # a timer that fires twice: keep the one set for the next merge
            rearm_pending(timer, nxt, now)
            return
        item, n_emitted, future = aliases_item(merges.read(), now, emitted.read() or 0)
        if item is not None:
            yield item
            emitted.write(n_emitted)
        last.write(now)
        arm(timer, nxt, (min(m["at"] for m in future) // MINUTE_MS + 1) * MINUTE_MS if future else None)


class TrackAliases(beam.PTransform):
    """StoryChange records -> aliases snapshot items (one per minute with a new merge)."""

    def expand(self, changes):
        return (
            changes
            | "KeepMerges" >> beam.Filter(is_merge)
            | "KeyMergesTogether"
            >> beam.Map(
                lambda c: window.TimestampedValue(("aliases", merge_event(c)), c["at"] / 1000.0)
            ).with_output_types(KV[str, Any])
            | "MergesToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
            | "EmitAliasesMap" >> beam.ParDo(TrackAliasesFn())
        )


# ---------------------------------------------------------------------------------------------- the whole stage
class ChangesOfOutputs(beam.PTransform):
    """Story writer outputs -> StoryChange records for the editions stage (:func:`~.changes.change_of_output`)."""

    def expand(self, outputs):
        return outputs | "ChangeOfOutput" >> beam.Map(change_of_output)


class PublishEditions(beam.PTransform):
    """StoryChange records -> pages, pools, coverage and aliases in the snapshot store, pointers moved. The input is
    a PCollection of StoryChange dicts, or ``{"changes": ..., "storylines": StorylineChange records}`` (the stories
    job's storyline stage; only the ranker reads them).

    Args:
        store_config: the stores (and namespace) to publish into; its editorial controls steer the pages.
        ranking: editions, registry, overrides, replay, change-only (:class:`~.settings.RankSettings`); the editions
            file and registry are also the burst detector's.
        publishing: shrink confirmation and the Breaking purges' CDN (:class:`~.settings.PublishSettings`).
        burst_params: a BurstParams replacing the file's (tests).
        burst_polls: False (the backfill, which sends no fetch requests): no burst pull, ``fetch_requests`` empty.
    """

    def __init__(
        self,
        store_config: StoreConfig,
        ranking: RankSettings = RankSettings(),
        publishing: PublishSettings = PublishSettings(),
        burst_params=None,
        burst_polls: bool = True,
    ):
        super().__init__()
        self.store_config, self.ranking, self.publishing = store_config, ranking, publishing
        self.burst_params, self.burst_polls = burst_params, burst_polls

    def expand(self, changes):
        storylines = None
        if isinstance(changes, dict):  # {"changes": StoryChange dicts, "storylines": StorylineChange records}
            changes, storylines = changes["changes"], changes.get("storylines")
        ranking, publishing = self.ranking, self.publishing
        bursts_out = changes | "DetectBursts" >> DetectBursts(
            ranking.editions_path, ranking.publishers_path, self.burst_params, self.store_config, self.burst_polls
        )
        inputs = {"changes": changes, "pulses": bursts_out["pulses"]}
        if storylines is not None:
            inputs["storylines"] = storylines  # to the ranker only: bursts and aliases are about stories
        ranked = inputs | "RankEditions" >> RankEditions(ranking, self.store_config)
        aliases = changes | "TrackAliases" >> TrackAliases()
        items = (ranked["items"], aliases) | "FlattenSnapshotItems" >> beam.Flatten()
        published = items | "PublishSnapshots" >> PublishSnapshots(self.store_config, publishing.confirm_shrink_cycles)
        breaking = published[BREAKING] | "AnnounceBreaking" >> AnnounceBreaking(
            self.store_config, publishing.cdn, publishing.cdn_url_map
        )
        return {
            "results": published.results,
            "breaking": breaking,
            "fetch_requests": bursts_out["fetch_requests"],
            "pulses": bursts_out["pulses"],
            "items": items,
            "dead_letter": ranked[DEAD_LETTER],
        }
