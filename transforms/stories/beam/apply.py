"""ApplyStoryChanges: the writer outputs of each language applied to the story store (stores/base.py StoryStore,
through the embedded or the Google Cloud backend) in seq order (transforms/stories/writer/apply.py), out-of-order ones
buffered until the gap is filled, replays skipped; yields the applied StoryChanges. Keyed by language: the only
writer of the story store for its language.
"""

from __future__ import annotations

import typing

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec

from transforms.stories.beam.common import STAGE
from transforms.stories.writer.apply import AHEAD, NEXT, REPLAY, apply_output, sequence_step


class ApplyStoryChangesFn(beam.DoFn):
    """Applies writer outputs of one language to the story store in seq order; yields the applied StoryChanges."""

    PENDING = BagStateSpec("pending", PickleCoder())
    PENDING_COUNT = ReadModifyWriteStateSpec("pending_count", PickleCoder())

    def __init__(self, store_config):
        self.store_config = store_config
        self.applied = Metrics.counter(STAGE, "changes_applied")
        self.replayed = Metrics.counter(STAGE, "changes_replayed")
        self.held = Metrics.counter(STAGE, "changes_held_out_of_order")

    def setup(self):
        from stores import open_store

        self._stories = open_store("stories", self.store_config)

    def process(
        self,
        element,
        pending=beam.DoFn.StateParam(PENDING),
        count=beam.DoFn.StateParam(PENDING_COUNT),
    ):
        language, out = element
        store = self._stories
        seq = int(out["change"]["seq"])
        step = sequence_step(seq, store.writer_seq(language))
        if step == REPLAY:
            self.replayed.inc()
            return
        if step == AHEAD:
            pending.add(out)
            count.write((count.read() or 0) + 1)
            self.held.inc()
            return
        apply_output(store, out, strict=True)
        self.applied.inc()
        yield out["change"]
        if count.read():
            rest = sorted(pending.read(), key=lambda o: int(o["change"]["seq"]))
            pending.clear()
            kept = 0
            for o in rest:
                step = sequence_step(int(o["change"]["seq"]), store.writer_seq(language))
                if step == REPLAY:
                    continue
                if step == NEXT:
                    apply_output(store, o, strict=True)
                    self.applied.inc()
                    yield o["change"]
                else:
                    pending.add(o)
                    kept += 1
            count.write(kept)


class ApplyStoryChanges(beam.PTransform):
    """Writer outputs -> the story store (idempotent, in seq order per language); returns the applied changes."""

    def __init__(self, store_config):
        super().__init__()
        self.store_config = store_config

    def expand(self, pcoll):
        return (
            pcoll
            | "KeyByWriter"
            >> beam.Map(lambda o: (o["change"]["language"], o)).with_output_types(tuple[str, typing.Any])
            | "ApplyInSeqOrder" >> beam.ParDo(ApplyStoryChangesFn(self.store_config))
        )
