"""ClusterStories / ApplyStoryChanges in Beam: batch (FnApiRunner) and streaming (TestStream on
BundleBasedDirectRunner) give the same decisions as the plain-Python writer; duplicates change nothing."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import TimestampedValue

from stores import StoreConfig, open_store
from tests.transforms.stories.synth import TEST_CONFIG, make_articles
from transforms.stories.beam import DEAD_LETTER, ApplyStoryChanges, ClusterStories
from transforms.stories.writer.cluster import StoryClusterer

_COLLECTED: dict[str, list] = {}


def _collect(x, key):
    _COLLECTED.setdefault(key, []).append(x)


def decision(o: dict) -> tuple:
    c = o["change"]
    return (c["language"], c["seq"], c["kind"], c["story_id"], c["other_story_id"], c["article_id"], c["change_id"])


def expected(arts) -> list[tuple]:
    out = []
    for lang in sorted({a.language for a in arts}):
        w = StoryClusterer(lang, config=TEST_CONFIG, exact_index=True)
        out += [decision(o.to_dict()) for o in w.run([a for a in arts if a.language == lang])]
    return out


def articles():
    en, _ = make_articles(n_events=5, per_event=6, seed=21)
    es, _ = make_articles(n_events=3, per_event=5, seed=22, language="es")
    return en + es


def store_config(tmp_path, name):
    return StoreConfig(backend="embedded", data_dir=str(tmp_path / name))


def batch_pipeline():
    return TestPipeline(runner=FnApiRunner(), options=PipelineOptions([]))


def streaming_pipeline():
    opts = PipelineOptions([])
    opts.view_as(StandardOptions).streaming = True
    return TestPipeline(runner="BundleBasedDirectRunner", options=opts)


def test_batch_matches_the_plain_writer_and_applies_to_the_store(tmp_path):
    arts = articles()
    cfg = store_config(tmp_path, "batch")
    with batch_pipeline() as p:
        outs = (
            p
            | beam.Create([a.to_dict() for a in arts])
            | beam.Map(lambda d: TimestampedValue(d, d["first_seen_at"] / 1000))
            | ClusterStories(cfg, config=TEST_CONFIG, exact_index=True)
        )
        assert_that(outs.outputs | "Decisions" >> beam.Map(decision), equal_to(expected(arts)))
        assert_that(outs[DEAD_LETTER], equal_to([]), label="NoDeadLetters")
        outs.outputs | ApplyStoryChanges(cfg)
    stories = open_store("stories", cfg)
    exp = expected(arts)
    for lang in ("en", "es"):
        assert stories.writer_seq(lang) == max(e[1] for e in exp if e[0] == lang)
        assert stories.live_stories(lang) == []  # everything expired at the end of input


def test_streaming_teststream_gives_identical_assignments(tmp_path):
    arts = articles()
    times = sorted({a.first_seen_at for a in arts})
    # arrivals in a shuffled order, in three bursts; the watermark only passes what has arrived
    rng = np.random.default_rng(5)
    cut1, cut2 = times[len(times) // 3], times[2 * len(times) // 3]
    ts = TestStream()
    for lo, hi in ((None, cut1), (cut1, cut2), (cut2, None)):
        burst = [a for a in arts if (lo is None or a.first_seen_at > lo) and (hi is None or a.first_seen_at <= hi)]
        burst = [burst[i] for i in rng.permutation(len(burst))]
        ts = ts.add_elements([TimestampedValue(a.to_dict(), a.first_seen_at / 1000) for a in burst])
        if hi is not None:
            ts = ts.advance_watermark_to(hi / 1000)
    ts = ts.advance_watermark_to_infinity()
    cfg = store_config(tmp_path, "stream")
    key = str(tmp_path)
    # Collected by a side effect and compared after the run: under BundleBasedDirectRunner the watermark downstream
    # of event-time timers re-armed in their own callback is not held back, so an assert_that on the output would
    # run before the last timers (the expiries, 48 h of event time later) have fired.
    p = streaming_pipeline()
    outs = p | ts | ClusterStories(cfg, config=TEST_CONFIG, exact_index=True)
    outs.outputs | "Decisions" >> beam.Map(decision) | "Collect" >> beam.Map(_collect, key)
    p.run().wait_until_finish()
    assert sorted(_COLLECTED.pop(key)) == sorted(expected(arts))


def test_every_input_duplicated_changes_nothing(tmp_path):
    arts = articles()
    cfg = store_config(tmp_path, "dup")
    with batch_pipeline() as p:
        outs = (
            p
            | beam.Create([a.to_dict() for a in arts] * 2)
            | beam.Map(lambda d: TimestampedValue(d, d["first_seen_at"] / 1000))
            | ClusterStories(cfg, config=TEST_CONFIG, exact_index=True)
        )
        assert_that(outs.outputs | "Decisions" >> beam.Map(decision), equal_to(expected(arts)))


def test_a_malformed_article_is_dead_lettered_not_raised(tmp_path):
    arts = articles()[:3]
    bad = {"article_id": "broken", "language": "en"}  # no time, no vector
    cfg = store_config(tmp_path, "bad")
    with batch_pipeline() as p:
        outs = (
            p
            | beam.Create([a.to_dict() for a in arts] + [bad])
            | ClusterStories(cfg, config=TEST_CONFIG, exact_index=True)
        )
        assert_that(
            outs[DEAD_LETTER] | beam.Map(lambda d: (d["reason"], d["key"])), equal_to([("bad_article", "broken")])
        )


@pytest.mark.parametrize("shuffle_seed", [1, 2])
def test_apply_story_changes_is_idempotent_and_order_independent(tmp_path, shuffle_seed):
    arts = articles()
    outputs = []
    for lang in ("en", "es"):
        w = StoryClusterer(lang, config=TEST_CONFIG, exact_index=True)
        outputs += [o.to_dict() for o in w.run([a for a in arts if a.language == lang])]
    rng = np.random.default_rng(shuffle_seed)
    shuffled = [outputs[i] for i in rng.permutation(len(outputs))]
    cfg = store_config(tmp_path, f"apply{shuffle_seed}")
    with batch_pipeline() as p:
        applied = p | beam.Create(shuffled + shuffled[:7]) | ApplyStoryChanges(cfg)
        assert_that(applied | beam.Map(lambda c: c["change_id"]), equal_to([o["change"]["change_id"] for o in outputs]))
    stories = open_store("stories", cfg)
    assert stories.writer_seq("en") == max(o["change"]["seq"] for o in outputs if o["change"]["language"] == "en")
    assert not stories.mark_change(outputs[0]["change"]["change_id"])  # already recorded


def test_link_stories_in_beam_links_translations(tmp_path):
    from tests.transforms.stories.synth import T0, translated_events
    from transforms.stories.beam import LinkStories

    rng = np.random.default_rng(4)
    outputs = []
    for lang in ("en", "nl"):
        arts = translated_events(lang, rng)
        w = StoryClusterer(lang, config=TEST_CONFIG, exact_index=True)
        outputs += [o.to_dict() for o in w.run(arts, until=T0 + 5000)]
    by_article = {o["change"]["article_id"]: o["change"]["story_id"] for o in outputs}
    want = sorted(tuple(sorted((by_article[f"en{e}"], by_article[f"nl{e}"]))) for e in range(3))
    with batch_pipeline() as p:
        links = (
            p | beam.Create(outputs) | beam.Map(lambda o: TimestampedValue(o, o["change"]["at"] / 1000)) | LinkStories()
        )
        assert_that(
            links | beam.Map(lambda o: (o["change"]["story_id"], o["change"]["other_story_id"])), equal_to(want)
        )


def test_link_stories_keeps_its_view_across_ticks(tmp_path):
    """English stories before the first tick, their Dutch translations after it: the view compacted at the first
    tick must still hold the English stories for the second tick to link them."""
    from tests.transforms.stories.synth import T0, translated_events
    from transforms.stories.beam import LinkStories, LinkStoriesFn

    rng = np.random.default_rng(6)
    outputs = []
    for lang, start in (("en", T0), ("nl", T0 + 2 * LinkStoriesFn.EVERY_MS)):
        arts = translated_events(lang, rng, start)
        w = StoryClusterer(lang, config=TEST_CONFIG, exact_index=True)
        outputs += [o.to_dict() for o in w.run(arts, until=start + 5000)]
    by_article = {o["change"]["article_id"]: o["change"]["story_id"] for o in outputs}
    want = sorted(tuple(sorted((by_article[f"en{e}"], by_article[f"nl{e}"]))) for e in range(3))
    stream = TestStream().advance_watermark_to(T0 / 1000 - 1)
    for o in sorted(outputs, key=lambda o: o["change"]["at"]):
        if o["change"]["language"] == "nl" and o is next(x for x in outputs if x["change"]["language"] == "nl"):
            stream = stream.advance_watermark_to((T0 + LinkStoriesFn.EVERY_MS * 1.5) / 1000)  # first tick fires
        stream = stream.add_elements([TimestampedValue(o, o["change"]["at"] / 1000)])
    stream = stream.advance_watermark_to_infinity()
    key = str(tmp_path)
    p = streaming_pipeline()  # collected by a side effect, as above: timers re-armed in their own callback
    links = p | stream | LinkStories()
    (
        links
        | beam.Map(lambda o: (o["change"]["story_id"], o["change"]["other_story_id"], o["change"]["at"]))
        | beam.Map(_collect, key)
    )
    p.run().wait_until_finish()
    got = sorted(_COLLECTED.pop(key))
    assert [g[:2] for g in got] == want
    assert {g[2] for g in got} == {T0 // LinkStoriesFn.EVERY_MS * LinkStoriesFn.EVERY_MS + 3 * LinkStoriesFn.EVERY_MS}


def test_bounded_mode_decides_the_same_in_one_firing(tmp_path):
    arts = articles()
    cfg = store_config(tmp_path, "bounded")
    with batch_pipeline() as p:
        outs = (
            p
            | beam.Create([a.to_dict() for a in arts])
            | beam.Map(lambda d: TimestampedValue(d, d["first_seen_at"] / 1000))
            | ClusterStories(cfg, config=TEST_CONFIG, exact_index=True, bounded=True)
        )
        assert_that(outs.outputs | "Decisions" >> beam.Map(decision), equal_to(expected(arts)))
