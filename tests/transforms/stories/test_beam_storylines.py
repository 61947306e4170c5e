"""The storyline stage in Beam (transforms/stories/beam/storylines.py): the streaming form decides as the backfill."""

from __future__ import annotations

import apache_beam as beam
import numpy as np

from tests.transforms.stories.synth import T0, TEST_CONFIG, article
from transforms.common import DAY_MS
from transforms.stories.storylines import storyline as sl
from transforms.stories.writer.cluster import StoryClusterer

DIM = 32


def test_streaming_stage_decides_as_the_backfill():
    """StorylinesFn under a TestStream (the watermark passing tick after tick) emits exactly the changes the
    backfill's fold makes over the same outputs."""
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    from apache_beam.testing.test_pipeline import TestPipeline
    from apache_beam.testing.test_stream import TestStream
    from apache_beam.transforms.window import TimestampedValue

    from transforms.stories.beam.storylines import Storylines

    rng = np.random.default_rng(9)
    mission = rng.normal(size=DIM)
    arts = []
    for ep in range(3):
        ev = mission + 0.7 * rng.normal(size=DIM)
        for i in range(2):
            at = T0 + ep * 3 * DAY_MS + i * 60_000
            arts.append(
                article(f"e{ep}-{i}", ev + 0.05 * rng.normal(size=DIM), at, entities=("artemis", "nasa", f"ep{ep}"))
            )
    outs = [o.to_dict() for o in StoryClusterer("en", config=TEST_CONFIG, exact_index=True).run(arts)]
    want, _ = sl.storyline_changes([sl.compact(o) for o in outs])
    assert any(c["kind"] == sl.ATTACH for c in want)
    stream = TestStream().advance_watermark_to(T0 / 1000 - 1)
    for o in sorted(outs, key=lambda o: (o["change"]["at"], o["change"]["seq"])):
        stream = stream.add_elements([TimestampedValue(o, o["change"]["at"] / 1000)])
        stream = stream.advance_watermark_to(o["change"]["at"] / 1000)
    stream = stream.advance_watermark_to_infinity()
    opts = PipelineOptions([])
    opts.view_as(StandardOptions).streaming = True
    p = TestPipeline(runner="BundleBasedDirectRunner", options=opts)
    (p | stream | Storylines() | beam.Map(_collect))
    p.run().wait_until_finish()
    assert sorted(_GOT, key=lambda c: c["seq"]) == want
    _GOT.clear()


_GOT: list = []


def _collect(change):
    _GOT.append(change)  # a module function: the runner pickles it by reference, so the list is this one
