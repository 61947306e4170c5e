"""Ranking in Beam: route story changes, storyline changes and burst pulses to their editions, then one stateful
DoFn per edition key folds them and ranks at every minute boundary (:class:`RankEditionsFn`, the work done by the
plain :class:`~transforms.editions.ranker.rank.EditionRanker`, whose module docstring gives the state layout and why a
minute timer in event time)."""

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

from stores import StoreConfig
from stores.controls import open_control_store
from stores.profiles import open_profile_store
from stores.takedowns import open_takedown_store
from transforms.authority import AuthorityWatcher
from transforms.common import DEAD_LETTER, LINK, MINUTE_MS
from transforms.editions.beam.counters import Counters
from transforms.editions.book.storybook import compact_change
from transforms.editions.book.storylines import compact_storyline, is_storyline_change
from transforms.editions.cycle.collector import space_worker_collections
from transforms.editions.cycle.run import EditionMemory
from transforms.editions.overlays.controls import ControlReader
from transforms.editions.overlays.phases import OverlayReaders
from transforms.editions.overlays.takedowns import TakedownReader
from transforms.editions.overlays.topics import FollowedTopics
from transforms.editions.ranker.rank import EditionRanker, EditionState
from transforms.editions.vocabulary.changes import change_dead_letter, editions_of
from transforms.editions.vocabulary.config import default_config, subset
from transforms.editions.vocabulary.params import RankParams
from transforms.editions.vocabulary.settings import RankSettings
from transforms.timers import arm, arm_earliest, rearm_pending, to_ms

log = logging.getLogger(__name__)


class RouteChangeFn(beam.DoFn):
    """KV(edition, compact event) for every edition of the change (:func:`~transforms.editions.vocabulary.changes.editions_of`), stamped with the
    change's time. A change that cannot be read is counted and dead-lettered (tag ``dead_letter``), never raised.

    ``languages`` (a side input, a replay only: :func:`story_languages` of the whole input): only the editions of
    these languages. An edition's stories come from the changes of its language alone (a LINK or a storyline's
    MERGE, SPLIT or DETACH, which every edition receives, only names stories), so with none in the input its
    book never holds a story and every page it would propose is empty; without the LINKs and storyline changes it
    holds no state and never fires (58 of the 73 editions on an English-only month)."""

    def __init__(self, config):
        self.config = config
        self.bad = Metrics.counter("editions", "changes_malformed")
        self.unrouted = Metrics.counter("editions", "changes_without_edition")

    def process(self, change, languages=None):
        try:
            event = compact_storyline(change) if is_storyline_change(change) else compact_change(change)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, change_dead_letter(change, exc))
            return
        editions = editions_of(event, self.config)
        if languages is not None:
            editions = [e for e in editions if e.language in languages]
        if not editions:
            self.unrouted.inc()  # a language no edition shows: nothing to rank (not an error)
        for e in editions:
            yield window.TimestampedValue((e.id, event), event["at"] / 1000.0)


def story_languages(change) -> list[str]:
    """The language of a story change (none for a LINK, whose "mul" names no edition's stories; none for a
    storyline change or an unreadable record)."""
    if not isinstance(change, dict) or is_storyline_change(change) or change.get("kind") == LINK:
        return []
    language = change.get("language")
    return [language] if isinstance(language, str) else []


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
    :mod:`transforms.editions.ranker.rank`, whose :class:`~transforms.editions.ranker.rank.EditionRanker` does the work.
    ``settings``: which editions and registry, and how the chain runs (:class:`~transforms.editions.vocabulary.settings.RankSettings`);
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
        self.metrics = Counters("editions")

    def setup(self):
        s = self.settings
        space_worker_collections()  # the collector between cycles as within them (cycle/collector.py)
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
        self.tally = {
            "cycles": 0,
            "cycles_steady": 0,
            "cycles_skipped": 0,
        }  # this worker's minutes, for the replay's log line

        def count(name: str, n: int = 1) -> None:
            self.metrics(name, n)
            if name in self.tally:
                self.tally[name] += n

        self.ranker = EditionRanker(
            self.config,
            self.authority.registry,
            self.params,
            count,
            readers=readers,
            change_only=s.change_only,
            fast_forward=s.replay,  # with change_only: proven steady minutes not ranked (ranker/skip.py)
        )

    def finish_bundle(self):
        self.metrics.flush()  # the bundle's counts (Counters sums them)

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
        state = EditionState(key, edition, cached, mem, inbox, event_log)
        nxt_cycle = now
        before = dict(self.tally)
        replay = self.settings.replay
        while True:
            items, nxt_cycle = self.ranker.cycle(state, nxt_cycle)
            yield from items
            # A replay runs the minute chain to its end in this firing: the same cycles the timers would run,
            # in the same order, without one timer round per minute (every input is already in INBOX).
            if not replay or nxt_cycle is None:
                break
        memory.write(mem)
        arm(timer, nxt, nxt_cycle)
        if replay:
            ranked, steady, skipped = (self.tally[k] - before[k] for k in ("cycles", "cycles_steady", "cycles_skipped"))
            log.info(
                "edition %s: %d minutes ranked, %d steady (built nothing), %d of them skipped",
                key,
                ranked,
                steady,
                skipped,
            )


class RankEditions(beam.PTransform):
    """``{"changes": StoryChange dicts, "pulses": burst pulses, "storylines": StorylineChange records (optional: the
    top page's one-story-per-storyline rule)}`` -> ``{"items": snapshot items (pages, pools,
    coverage), "dead_letter": DeadLetter records of unreadable changes}``.

    Args:
        settings: which editions and registry, parameter overrides, replay and change-only
            (:class:`~transforms.editions.vocabulary.settings.RankSettings`). A replay routes to the editions of
            the input's story languages only (:class:`RouteChangeFn`).
        store_config: where the editorial controls (stores/controls.py) are read every cycle; None: none applied.
    """

    def __init__(self, settings: RankSettings = RankSettings(), store_config: StoreConfig | None = None):
        super().__init__()
        self.settings = settings
        self.store_config = store_config

    def expand(self, inputs):
        config = subset(default_config(self.settings.editions_path), self.settings.editions_only)
        side = {}
        if self.settings.replay:  # the whole input is there: only the editions of its stories' languages
            languages = (
                inputs["changes"]
                | "StoryLanguages" >> beam.FlatMap(story_languages)
                | "DistinctStoryLanguages" >> beam.Distinct()
            )
            side["languages"] = beam.pvalue.AsList(languages)
        # Typed keys: the stateful DoFn's key coder must be deterministic (StrUtf8Coder, not a pickler).
        routed = inputs["changes"] | "RouteChangesToEditions" >> beam.ParDo(
            RouteChangeFn(config), **side
        ).with_output_types(KV[str, Any]).with_outputs(DEAD_LETTER, main="events")
        parts, dead = [routed.events], routed[DEAD_LETTER]
        if inputs.get("storylines") is not None:
            routed_sl = inputs["storylines"] | "RouteStorylinesToEditions" >> beam.ParDo(
                RouteChangeFn(config), **side
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
