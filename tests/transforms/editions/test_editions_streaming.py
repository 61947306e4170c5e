"""The editions stage in streaming (TestStream on BundleBasedDirectRunner): pages minute by minute, late data."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import TimestampedValue

from stores import StoreConfig, open_stores
from transforms.editions.beam import DetectBursts, PublishEditions
from transforms.editions.bursts.bursts import judge_breaking
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import BurstParams
from transforms.editions.vocabulary.settings import RankSettings
from transforms.publishers import default_registry

IDLE = 8


def streaming_pipeline():
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    return beam.Pipeline(runner=BundleBasedDirectRunner(), options=options)


def minute_stream(changes, MIN, tail: int = 0):
    """Elements of each minute, then the watermark to the next minute boundary; ``tail`` more minutes without
    input (the ranking's timers must fire while the watermark is finite: output of timers that fire only when it
    jumps to infinity reaches assert_that after its final pane)."""
    stream = TestStream()
    by_minute: dict[int, list] = {}
    for c in changes:
        by_minute.setdefault(c["at"] // MIN, []).append(c)
    first, last = min(by_minute), max(by_minute)
    for m in range(first, last + 1 + tail):
        batch = [TimestampedValue(c, c["at"] / 1000.0) for c in by_minute.get(m, [])]
        if batch:
            stream.add_elements(batch)
        stream.advance_watermark_to((m + 1) * MIN / 1000.0)
    return stream.advance_watermark_to_infinity()


def reference_pulses(world, config):
    """The Breaking rule applied to every 5-minute window ending on a minute, as DetectBursts does."""
    registry, p = default_registry(), BurstParams.from_config(config)
    labels = {k: v for k, v in config.label_sections().items() if v != "top"}
    originals = [c for c in world.changes if c["kind"] in ("NEW_STORY", "ASSIGN") and not c["is_copy"]]
    ends = {((c["at"] // world.MIN) + k) * world.MIN for c in originals for k in range(1, 6)}
    out = []
    for end in sorted(ends):
        per_story: dict[int, list] = {}
        for c in originals:
            if end - 5 * world.MIN <= c["at"] < end:
                per_story.setdefault(c["story_id"], []).append(c)
        for sid, cs in per_story.items():
            strong = set()
            for c in cs:
                pub = registry.get(c["article"]["publisher_id"])
                sec = labels.get((c["article"]["section"] or "").lower())
                if pub and pub.authority_for(sec) > p.strong_authority:
                    strong.add(pub.publisher_id)
            if judge_breaking(len(cs), len(strong), "world", p)[0]:
                out.append((sid, end))
    return out


def test_pages_minute_by_minute_match_the_plain_python_ranker(world, make_ranker, tmp_path):
    T, MIN = world.T0, world.MIN
    for s in range(6):
        world.story(
            100 + s,
            ["daily-herald", "capital-post", f"paper-{s}"],
            T - 12 * MIN + 2 * s * MIN,
            section=["world", "business", "politics"][s % 3],
        )
    world.story(7, world.AUTHORITATIVE_EN[:5] * 2, T + 2 * MIN, step=20_000, title="Dam bursts upstream of the city")
    world.merge(100, 101, T + 6 * MIN)
    changes = world.sorted_changes()
    config = load_config()

    # the reference: the same cycles in plain Python, with the pulses the Breaking rule gives
    ref = make_ranker(world, "us-en", idle_cycles=IDLE)
    for sid, end in reference_pulses(world, config):
        ref.breaking(sid, end)
    first = (min(c["at"] for c in changes) // MIN + 1) * MIN
    last_event = max(c["at"] for c in changes)
    expected, now = [], first
    while True:
        out = ref.cycle(now)
        page = out.pages["top"]["stories"]
        expected.append(
            (now // MIN, [s["story_id"] for s in page], [s["story_id"] for s in page if "breaking" in s["labels"]])
        )
        if now - last_event >= IDLE * MIN:
            break
        now += MIN
    burst_minute = (T + 6 * MIN) // MIN  # originals at 12:02:00 .. 12:05:00: the window [12:01, 12:06) holds all 10
    by_minute = {m: (ids, brk) for m, ids, brk in expected}
    assert by_minute[burst_minute][0][0] == "7" and by_minute[burst_minute][1] == ["7"]
    assert by_minute[burst_minute - 1][1] == []
    assert "101" in by_minute[(T + 6 * MIN) // MIN][0] and "101" not in by_minute[(T + 7 * MIN) // MIN][0]

    p = streaming_pipeline()
    store = StoreConfig(data_dir=str(tmp_path))
    out = (
        p
        | minute_stream(changes, MIN, tail=30 + 10 + IDLE + 2)  # 30-min windows + 10 min lateness hold it
        | PublishEditions(store, RankSettings(editions_only=["us-en"], overrides={"idle_cycles": IDLE}))
    )
    tops = (
        out["items"]
        | beam.Filter(lambda it: it["pointer"] == "us-en/top")
        | beam.Map(
            lambda it: (
                it["version"],
                [s["story_id"] for s in it["doc"]["stories"]],
                [s["story_id"] for s in it["doc"]["stories"] if "breaking" in s["labels"]],
            )
        )
    )
    assert_that(tops, equal_to(expected))  # one page per minute, each equal to the plain-Python cycle
    p.run().wait_until_finish()

    stores = open_stores(store)
    history = [h["version"] for h in stores.pointers.history("us-en/top")]
    assert history == sorted(history) and burst_minute in history  # the pointer moved forward, minute by minute
    live = json.loads(stores.snapshots.get(f"pages/us-en/top/v{stores.pointers.get('us-en/top')}.json"))
    assert live["stories"][0]["story_id"] == "7"


def test_a_burst_completed_by_late_originals_is_still_detected(world):
    T, MIN = world.T0, world.MIN
    arts = world.story(7, world.AUTHORITATIVE_EN[:5] * 2, T, step=20_000, title="Bridge collapses during rush hour")
    on_time, late = arts[:8], arts[8:]
    stream = (
        TestStream()
        .add_elements([TimestampedValue(c, c["at"] / 1000.0) for c in on_time])
        .advance_watermark_to((T + 5 * MIN) / 1000.0)  # the window [12:00, 12:05) closes with 8 originals
        .add_elements([TimestampedValue(c, c["at"] / 1000.0) for c in late])  # 2 late originals (within lateness)
        .advance_watermark_to_infinity()
    )
    p = streaming_pipeline()
    bursts = p | stream | DetectBursts()
    breaking = (
        bursts["pulses"] | beam.Filter(lambda pl: pl["kind"] == "breaking") | beam.Map(lambda pl: pl["window_end"])
    )
    # on time, the windows ending 12:04 and 12:05 held 8 originals; their late panes hold all 10: breaking
    assert_that(breaking, equal_to([T + 4 * MIN, T + 5 * MIN]))
    p.run().wait_until_finish()
