"""The storyline stage in Beam: writer outputs of every language (and LINK outputs) -> StorylineChange records.

A thin layer over :mod:`transforms.stories.storylines.storyline` (the rule, the ticks, the writer). ``StorylinesFn`` is keyed
by one key (storylines span languages: one writer, one gap-free sequence):

- State: ``PENDING`` (bag of compact outputs not yet decided, :func:`~transforms.stories.storylines.storyline.compact`),
  ``WRITER`` (the pickled :class:`~transforms.stories.storylines.storyline.StorylineWriter`), ``NEXT`` (the armed tick);
  timer ``TICK`` (event time) at the tick boundary after the earliest pending output.
- When the watermark passes a tick T, the outputs due by T are folded tick by tick
  (:func:`~transforms.stories.storylines.storyline.storyline_changes`, exactly what the backfill runs over its outputs), the
  changes are emitted (timestamped at T), the rest stay pending and the timer is re-armed at their first tick.
  An output arriving after its tick fired (late data) is decided at the next tick.

Cost: a tick decides O(changed stories) (benchmarks/storyline_bench.py); the writer's checkpoint (``WRITER``) is
rewritten at each tick and grows with the stories within the decay horizon plus the storyline membership.
"""

from __future__ import annotations

import typing

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer

from transforms.stories.storylines import storyline as slmod
from transforms.timers import arm, arm_earliest, to_ms

STAGE = "storylines"


class StorylinesFn(beam.DoFn):
    PENDING = BagStateSpec("pending", PickleCoder())
    WRITER = ReadModifyWriteStateSpec("writer", PickleCoder())
    NEXT = ReadModifyWriteStateSpec("next", PickleCoder())
    TICK = TimerSpec("tick", TimeDomain.WATERMARK)

    def __init__(self, every_ms: int = slmod.EVERY_MS):
        if every_ms <= 0:
            raise ValueError(f"storyline tick interval must be > 0 ms, got {every_ms}")
        self.every_ms = int(every_ms)
        self.changes = Metrics.counter(STAGE, "storyline_changes")

    def process(
        self,
        element,
        pending=beam.DoFn.StateParam(PENDING),
        nxt=beam.DoFn.StateParam(NEXT),
        tick=beam.DoFn.TimerParam(TICK),
    ):
        _, out = element
        c = slmod.compact(out)
        pending.add(c)
        arm_earliest(tick, nxt, slmod.tick_of(c["change"]["at"], self.every_ms))

    @on_timer(TICK)
    def on_tick(
        self,
        fired=beam.DoFn.TimestampParam,
        pending=beam.DoFn.StateParam(PENDING),
        state=beam.DoFn.StateParam(WRITER),
        nxt=beam.DoFn.StateParam(NEXT),
        tick=beam.DoFn.TimerParam(TICK),
    ):
        now = to_ms(fired)
        due, rest = [], []
        for c in pending.read():
            (due if slmod.tick_of(c["change"]["at"], self.every_ms) <= now else rest).append(c)
        writer = state.read() or slmod.StorylineWriter()
        for c in due:  # late outputs (their tick has passed) are decided at this tick
            c["change"]["at"] = max(int(c["change"]["at"]), now - self.every_ms)
        changes, writer = slmod.storyline_changes(due, self.every_ms, writer)
        state.write(writer)
        pending.clear()
        for c in rest:
            pending.add(c)
        nxt.clear()
        arm(tick, nxt, min((slmod.tick_of(c["change"]["at"], self.every_ms) for c in rest), default=None))
        self.changes.inc(len(changes))
        yield from changes


class Storylines(beam.PTransform):
    """Writer outputs of every language (LINK outputs included) -> StorylineChange records, one gap-free sequence.

    Args:
        every_ms: event-time interval of the storyline ticks (default 10 minutes).
    """

    def __init__(self, every_ms: int = slmod.EVERY_MS):
        super().__init__()
        self.every_ms = every_ms

    def expand(self, pcoll):
        return (
            pcoll
            | "OneStorylineWriter" >> beam.Map(lambda o: ("storylines", o)).with_output_types(tuple[str, typing.Any])
            | "DecideStorylines" >> beam.ParDo(StorylinesFn(self.every_ms))
        )
