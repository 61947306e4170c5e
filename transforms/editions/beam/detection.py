"""Burst detection in Beam: story changes -> originals stamped with their first-seen time -> 5- and 30-minute
sliding windows per story -> the Breaking and developing rules (plain Python: :mod:`transforms.editions.bursts.bursts`) ->
pulses for the ranker, and burst polls (fetch requests) for ingest (:class:`DetectBursts`)."""

from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.coders import PickleCoder, VarIntCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms import trigger, window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.typehints import KV
from apache_beam.utils.timestamp import Duration, Timestamp

from stores import StoreConfig
from transforms.authority import AuthorityWatcher
from transforms.common import MINUTE_MS
from transforms.editions.bursts import bursts
from transforms.editions.bursts.coverage import CoverageMemory, coverage_events, original_event
from transforms.editions.vocabulary.config import default_config
from transforms.editions.vocabulary.params import BurstParams
from transforms.publishers import default_registry
from transforms.timers import arm, arm_earliest, to_ms


class ExtractOriginalsFn(beam.DoFn):
    """Originals of story changes, stamped with their first-seen time. Unreadable changes are counted and skipped
    here (RankEditions dead-letters them: one dead letter per change, not one per stage)."""

    def __init__(self, registry, label_map: dict, store_config: StoreConfig | None = None, publishers_path=None):
        self.registry, self.label_map = registry, label_map
        self.store_config, self.publishers_path = store_config, publishers_path
        self.bad = Metrics.counter("bursts", "changes_malformed")

    def setup(self):  # the computed authority (re-read when published) decides who is a strong publisher
        self.watcher = AuthorityWatcher(self.publishers_path, self.store_config) if self.store_config else None
        self.registry = self.watcher.registry if self.watcher else self.registry

    def process(self, change):
        if self.watcher is not None and self.watcher.poll():
            self.registry = self.watcher.registry
        try:
            for story_id, obs, first_seen in bursts.originals_of(change, self.registry, self.label_map):
                yield window.TimestampedValue((story_id, obs), first_seen / 1000.0)
        except (KeyError, TypeError, ValueError, AttributeError):
            self.bad.inc()


class BurstCountFn(beam.CombineFn):
    """Originals (distinct articles), publishers and strong publishers of one story in one window."""

    def __init__(self, strong_authority: float):
        self.strong = strong_authority

    def create_accumulator(self):
        return bursts.new_counts()

    def add_input(self, acc, obs):
        return bursts.add_original(acc, obs, self.strong)

    def merge_accumulators(self, accs):
        return bursts.merge_counts(accs)

    def extract_output(self, acc):
        return bursts.counts_output(acc)


class JudgeWindowFn(beam.DoFn):
    """Apply the Breaking (5-min) or developing (30-min) rule to a window's counts; emit a pulse when it holds."""

    def __init__(self, kind: str, params: BurstParams):
        self.kind = kind
        self.params = params
        self.judged = Metrics.counter("bursts", f"{kind}_windows")
        self.fired = Metrics.counter("bursts", f"{kind}_pulses")

    def process(self, element, win=beam.DoFn.WindowParam):
        story_id, counts = element
        self.judged.inc()
        pulse = bursts.judge_window(self.kind, story_id, counts, int(round(float(win.end) * 1000)), self.params)
        if pulse is not None:
            self.fired.inc()
            yield pulse


def window_ends(at_ms: int, size_min: float, period_min: float) -> list[int]:
    """The ends (ms) of the sliding windows of ``size_min`` every ``period_min`` minutes (offset 0) that hold an
    element at ``at_ms``: Beam's SlidingWindows.assign, in whole microseconds as Beam computes them. The float
    seconds an original is stamped with (first-seen / 1000.0) land on the same windows: a first-seen on a minute
    boundary is whole seconds (exact), and one off it is at least a millisecond from every window boundary."""
    t = at_ms * 1000
    size, period = Duration.of(size_min * 60).micros, Duration.of(period_min * 60).micros
    return [int(round((s + size) / 1000000 * 1000)) for s in range(t - t % period, t - size, -period)]


class BurstWindowsFn(beam.DoFn):
    """A bounded run (the backfill): one story's originals, all of them -> the pulses of its 5-minute (Breaking)
    and 30-minute (developing) sliding windows: the windows :class:`BurstCountFn` and :class:`JudgeWindowFn`
    count and judge in streaming, each built once with every original it holds (a bounded input's one on-time
    pane), without Beam's per-window trigger bookkeeping (about a CPU second per month of BASIL-like input).

    Originals are counted in first-seen order (then article id): the counts do not depend on the order but for
    a duplicate article, where the first counted wins (:func:`~transforms.editions.bursts.bursts.add_original`).
    The pulses carry the timestamp a window's output has (its end - 1 us)."""

    def __init__(self, params: BurstParams):
        self.params = params
        self.judged = {k: Metrics.counter("bursts", f"{k}_windows") for k in ("breaking", "developing")}
        self.fired = {k: Metrics.counter("bursts", f"{k}_pulses") for k in ("breaking", "developing")}

    def process(self, element):
        story_id, observations = element
        p = self.params
        observations = sorted(observations, key=lambda o: (o["first_seen_at"], o["article_id"]))
        for kind, size_min in (("breaking", p.window_min), ("developing", p.velocity_window_min)):
            counts: dict[int, dict] = {}
            for obs in observations:
                for end in window_ends(int(obs["first_seen_at"]), size_min, p.period_min):
                    acc = counts.get(end)
                    if acc is None:
                        acc = counts[end] = bursts.new_counts()
                    bursts.add_original(acc, obs, p.strong_authority)
            self.judged[kind].inc(len(counts))
            for end in sorted(counts):
                pulse = bursts.judge_window(kind, story_id, bursts.counts_output(counts[end]), end, p)
                if pulse is not None:
                    self.fired[kind].inc()
                    yield window.TimestampedValue(pulse, Timestamp(micros=end * 1000 - 1))


class RequestPollsFn(beam.DoFn):
    """One key (the whole burst stage): fold originals, LINK and MERGE changes into the coverage memory, and turn
    each story's earliest breaking window (then one per ``fetch_repeat_min``) into fetch requests for the
    publishers the memory and the registry pull (:mod:`transforms.editions.bursts.coverage`: the rule and its bounds).

    Why one key: "covered this entity before" and "covered the linked story" cross stories and languages, so the
    memory cannot be split by story or language. Its cost per original is a bag append; the memory (bounded, 5-10
    MB at its caps) is read, folded and written once per timer firing, at most once a minute.

    Events and pulses wait in EVENTS and PULSES until the watermark passes the next minute boundary after them (or
    the pulse's window end: CYCLE, event time); a firing folds every waiting event, then takes the due pulses in
    window order: streaming and batch (where windows arrive in any order) request the same polls.
    State: EVENTS, PULSES (bags), MEMORY (the CoverageMemory and, per story, the window end of its last ask; pickled),
    NEXT (timer time).
    """

    EVENTS = BagStateSpec("events", PickleCoder())
    PULSES = BagStateSpec("pulses", PickleCoder())
    MEMORY = ReadModifyWriteStateSpec("memory", PickleCoder())
    NEXT = ReadModifyWriteStateSpec("next", VarIntCoder())
    CYCLE = TimerSpec("cycle", TimeDomain.WATERMARK)

    def __init__(self, params: BurstParams, publishers_path: str | None = None, store_config=None):
        self.params = params
        self.publishers_path, self.store_config = publishers_path, store_config
        self.requests = Metrics.counter("bursts", "fetch_requests")

    def setup(self):
        from transforms.publisher_store import live_registry

        self.live = live_registry(self.publishers_path, self.store_config) if self.store_config else None
        self.registry = default_registry(self.publishers_path)

    @property
    def current_registry(self):
        """The stored registry when the stages have stores (refreshed: transforms/publisher_store.py), else the file."""
        if self.live is None:
            return self.registry
        self.live.poll()
        return self.live.registry

    def process(
        self,
        element,
        events=beam.DoFn.StateParam(EVENTS),
        pulses=beam.DoFn.StateParam(PULSES),
        nxt=beam.DoFn.StateParam(NEXT),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        _, (kind, value) = element
        if kind == "pulse":
            pulses.add(value)
            arm_earliest(timer, nxt, int(value["window_end"]))
        else:
            events.add(value)
            arm_earliest(timer, nxt, (int(value[-1]) // MINUTE_MS + 1) * MINUTE_MS)

    @on_timer(CYCLE)
    def on_cycle(
        self,
        ts=beam.DoFn.TimestampParam,
        events=beam.DoFn.StateParam(EVENTS),
        pulses=beam.DoFn.StateParam(PULSES),
        memory=beam.DoFn.StateParam(MEMORY),
        nxt=beam.DoFn.StateParam(NEXT),
        timer=beam.DoFn.TimerParam(CYCLE),
    ):
        mem, last = memory.read() or (CoverageMemory(), {})
        waiting = list(events.read())
        if waiting:
            mem.fold(sorted(waiting, key=lambda ev: (ev[-1], repr(ev))))
            events.clear()
        requests, last, later = bursts.due_polls(
            list(pulses.read()), to_ms(ts), last, self.current_registry, self.params, mem
        )
        memory.write((mem, last))
        self.requests.inc(len(requests))
        yield from requests
        pulses.clear()
        for pl in later:
            pulses.add(pl)
        arm(timer, nxt, later[0]["window_end"] if later else None)


class DetectBursts(beam.PTransform):
    """StoryChange records -> ``{"pulses": burst pulses, "fetch_requests": FetchRequest records}``.

    Args:
        editions_path: editions file (default: the packaged one) -- burst parameters and section labels.
        publishers_path: publisher registry (default: the packaged one) -- authority, region, language.
        params: override the file's burst parameters (tests).
        store_config: stores whose computed authority (transforms/authority) overlays the registry's; None: file.
        polls: False: no burst pull (a backfill sends no fetch requests, and its whole input would wait in the
            pull's one key): ``fetch_requests`` is empty.
        bounded: the input is bounded and run in batch (the backfill): each story's originals are grouped once
            and its windows counted and judged in plain Python (:class:`BurstWindowsFn`). The same pulses as the
            streaming windows and trigger: in batch no element is late, so the late firings never happen and each
            window's one on-time pane holds every original it covers; Beam's trigger bookkeeping for every story
            and window (about a CPU second a month of input, in the runner) is not paid.
    """

    def __init__(
        self,
        editions_path: str | None = None,
        publishers_path: str | None = None,
        params=None,
        store_config: StoreConfig | None = None,
        polls: bool = True,
        bounded: bool = False,
    ):
        super().__init__()
        self.polls, self.bounded = polls, bounded
        self.editions_path = editions_path
        self.publishers_path = publishers_path
        self.params = params
        self.store_config = store_config

    def expand(self, changes):
        config = default_config(self.editions_path)
        p = self.params or BurstParams.from_config(config)
        registry = default_registry(self.publishers_path)
        label_map = {k: v for k, v in config.label_sections().items() if v != "top"}
        originals = changes | "ExtractOriginals" >> beam.ParDo(
            ExtractOriginalsFn(registry, label_map, self.store_config, self.publishers_path)
        )

        if self.bounded:  # every window once, with all its originals (BurstWindowsFn): the same pulses
            pulses = (
                originals
                | "OriginalsToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
                | "OriginalsPerStory" >> beam.GroupByKey()
                | "JudgeStoryWindows" >> beam.ParDo(BurstWindowsFn(p))
            )
            breaking = pulses | "BreakingPulses" >> beam.Filter(lambda pl: pl["kind"] == "breaking")
            return self._outputs(changes, originals, pulses, breaking if self.polls else pulses, p)

        def windowed(size_min: int):
            return beam.WindowInto(
                window.SlidingWindows(size_min * 60, p.period_min * 60),
                trigger=trigger.AfterWatermark(late=trigger.AfterCount(1)),
                accumulation_mode=trigger.AccumulationMode.ACCUMULATING,
                allowed_lateness=p.allowed_lateness_s,
            )

        breaking = (
            originals
            | "SlidingFiveMinutes" >> windowed(p.window_min)
            | "CountFiveMinutes" >> beam.CombinePerKey(BurstCountFn(p.strong_authority))
            | "JudgeBreaking" >> beam.ParDo(JudgeWindowFn("breaking", p))
        )
        developing = (
            originals
            | "SlidingThirtyMinutes" >> windowed(p.velocity_window_min)
            | "CountThirtyMinutes" >> beam.CombinePerKey(BurstCountFn(p.strong_authority))
            | "JudgeDeveloping" >> beam.ParDo(JudgeWindowFn("developing", p))
        )
        breaking = breaking | "BreakingToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
        developing = developing | "DevelopingToGlobalWindow" >> beam.WindowInto(window.GlobalWindows())
        pulses = (breaking, developing) | "FlattenPulses" >> beam.Flatten()
        return self._outputs(changes, originals, pulses, breaking, p)

    def _outputs(self, changes, originals, pulses, breaking, p) -> dict:
        """``{"pulses", "fetch_requests"}``: the burst pull over the coverage memory and the breaking pulses (none
        without ``polls``)."""
        if not self.polls:
            return {"pulses": pulses, "fetch_requests": breaking | "NoBurstPolls" >> beam.FlatMap(lambda pl: [])}
        # The coverage memory's inputs (originals, links, merges) and the breaking pulses, on one key.
        memory_events = (
            originals
            | "OriginalsToCoverage" >> beam.MapTuple(lambda sid, obs: ("", ("event", original_event(sid, obs)))),
            changes | "LinksToCoverage" >> beam.FlatMap(lambda ch: [("", ("event", e)) for e in coverage_events(ch)]),
        ) | "FlattenCoverageEvents" >> beam.Flatten()
        pulse_inputs = breaking | "KeyPulses" >> beam.Map(lambda pl: ("", ("pulse", pl)))
        fetch_requests = (
            (memory_events | "CoverageToGlobalWindow" >> beam.WindowInto(window.GlobalWindows()), pulse_inputs)
            | "FlattenPullInputs" >> beam.Flatten()
            | "OneBurstKey" >> beam.Map(lambda kv: kv).with_output_types(KV[str, Any])
            | "RequestBurstPolls" >> beam.ParDo(RequestPollsFn(p, self.publishers_path, self.store_config))
        )
        return {"pulses": pulses, "fetch_requests": fetch_requests}
