"""LinkStories: the streaming cross-language linker over every language's writer outputs (transforms/stories/links/links.py);
the backfill links its final stories instead (transforms/stories/backfill/local.py).
"""

from __future__ import annotations

import typing
import uuid

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer

from transforms.stories.beam.common import STAGE
from transforms.stories.links.links import StoryLinker
from transforms.timers import arm_earliest, to_ms


class LinkStoriesFn(beam.DoFn):
    """Single-key linker over every language's writer outputs; proposes links at each 10-minute event-time tick.

    State: ``SEEN`` (bag of the outputs observed, replayed into a fresh linker at each tick and after a restart;
    rewritten at each tick as the linker's snapshot, so it holds the live stories only), ``SEQ`` (the link writer's
    seq), ``LINKED`` (pairs already linked), timer ``TICK``.
    """

    SEEN = BagStateSpec("seen", PickleCoder())
    SEQ = ReadModifyWriteStateSpec("seq", PickleCoder())
    LINKED = ReadModifyWriteStateSpec("linked", PickleCoder())
    NEXT = ReadModifyWriteStateSpec("next", PickleCoder())
    TICK = TimerSpec("tick", TimeDomain.WATERMARK)
    EVERY_MS = 600_000

    def __init__(self, run_id: str | None = None, every_ms: int = EVERY_MS):
        if every_ms <= 0:
            raise ValueError(f"link interval must be > 0 ms, got {every_ms}")
        self.run_id = run_id or uuid.uuid4().hex
        self.every_ms = int(every_ms)
        self.links = Metrics.counter(STAGE, "links")

    def process(
        self,
        element,
        seen=beam.DoFn.StateParam(SEEN),
        nxt=beam.DoFn.StateParam(NEXT),
        tick=beam.DoFn.TimerParam(TICK),
    ):
        _, out = element
        seen.add(StoryLinker.compact(out))
        at = int(out["change"]["at"])
        arm_earliest(tick, nxt, (at // self.every_ms + 1) * self.every_ms)

    @on_timer(TICK)
    def on_tick(
        self,
        fired=beam.DoFn.TimestampParam,
        seen=beam.DoFn.StateParam(SEEN),
        seq=beam.DoFn.StateParam(SEQ),
        linked=beam.DoFn.StateParam(LINKED),
        nxt=beam.DoFn.StateParam(NEXT),
    ):
        now = to_ms(fired)
        linker = StoryLinker()
        for o in seen.read():
            linker.observe(o)
        linker.linked = set(linked.read() or [])
        linker.seq = seq.read() or 0
        changes = linker.link_changes(now)
        seq.write(linker.seq)
        live = set(linker.stories)
        linked.write(
            sorted(p for p in linker.linked if p[0] in live and p[1] in live)
        )  # a gone story never links again
        seen.clear()
        for o in linker.snapshot():
            seen.add(o)
        nxt.clear()
        self.links.inc(len(changes))
        for ch in changes:
            yield {"change": ch, "story_meta": None, "members": {}}


class LinkStories(beam.PTransform):
    """Writer outputs of every language -> LINK outputs of the ``mul`` link writer (apply them like any output).

    Args:
        every_ms: event-time interval of the link ticks (default 10 minutes; the sample world at --speed x runs
            ``600_000 / x`` so that its links come as often in its virtual time).

    The outputs are timestamped at their tick: the ranker (transforms/editions) folds a LINK like any story change,
    so story coverage and story pages list the linked story in the other language from that tick's cycle on.
    """

    def __init__(self, every_ms: int = LinkStoriesFn.EVERY_MS):
        super().__init__()
        self.every_ms = every_ms

    def expand(self, pcoll):
        return (
            pcoll
            | "OneLinker" >> beam.Map(lambda o: ("mul", o)).with_output_types(tuple[str, typing.Any])
            | "ProposeLinks" >> beam.ParDo(LinkStoriesFn(every_ms=self.every_ms))
        )
