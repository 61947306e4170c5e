"""Burst pull: a breaking pulse moves the feeds of the publishers in the story's region,
covering it or a linked story, or that covered its entities before, to the 1-minute lane for an hour, bounded in
count; from the Breaking rule's pulse to the feed's poll schedule."""

from __future__ import annotations

import random

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that

from schemas import codec
from tests.transforms.editions.conftest import AUTHORITATIVE_EN, HOUR, MIN, T0, World
from transforms.editions.beam import DetectBursts
from transforms.editions.bursts import bursts, coverage
from transforms.editions.vocabulary.config import default_config
from transforms.editions.vocabulary.params import BurstParams
from transforms.ingest import poller
from transforms.ingest import schedule as sch
from transforms.ingest.registry import feeds_by_publisher, load_feeds, request_targets
from transforms.publishers import default_registry

P = BurstParams()
REGISTRY = default_registry()
QUAKE = 7


def scenario():
    """Past coverage, a Spanish twin and an English burst.

    - two hours before: mumbai-daily (region in, long tail) wrote about "calder-bay" and "harbour-authority";
      le-quotidien (fr) about calder-bay too (French: no link);
    - 12:09: el-diario-central (es) covers the Spanish story 60, linked to the burst at 12:12;
    - 12:10-12:13: the burst, 10 originals of 5 authoritative English publishers (regions us, gb, international),
      naming calder-bay.
    """
    en, es, fr = World("en"), World("es"), World("fr")
    en.add(50, en.article("mumbai-daily", T0 - 2 * HOUR, places=("calder-bay", "harbour-authority")))
    fr.add(70, fr.article("le-quotidien", T0 - 2 * HOUR, places=("calder-bay",)))
    es.add(60, es.article("el-diario-central", T0 + 9 * MIN, places=("calder-bay",)))
    en.story(QUAKE, AUTHORITATIVE_EN[:5] * 2, T0 + 10 * MIN, step=20_000, places=("calder-bay",), section="world")
    link = en.link(QUAKE, 60, T0 + 12 * MIN)
    link["language"] = "mul"
    changes = en.changes + es.changes + fr.changes
    return sorted(changes, key=lambda c: (c["at"], c["change_id"]))


def memory_and_pulse(changes):
    """The burst stage in plain Python: the coverage memory and the first breaking pulse of the 5-minute windows."""
    config = default_config()
    label_map = {k: v for k, v in config.label_sections().items() if v != "top"}
    events, obs_of = [], []
    for ch in changes:
        events += coverage.coverage_events(ch)
        for sid, obs, fs in bursts.originals_of(ch, REGISTRY, label_map):
            events.append(coverage.original_event(sid, obs))
            obs_of.append((sid, obs, fs))
    memory = coverage.CoverageMemory()
    memory.fold(events)
    for end in range(T0 + 10 * MIN, T0 + 20 * MIN, MIN):
        acc = bursts.new_counts()
        for sid, obs, fs in obs_of:
            if sid == QUAKE and end - P.window_min * MIN <= fs < end:
                bursts.add_original(acc, obs, P.strong_authority)
        pulse = bursts.judge_window("breaking", QUAKE, bursts.counts_output(acc), end, P)
        if pulse is not None:
            return memory, pulse
    raise AssertionError("no breaking window")


def test_a_breaking_pulse_moves_entity_and_linked_coverage_feeds_to_the_one_minute_lane_for_an_hour():
    memory, pulse = memory_and_pulse(scenario())
    end = pulse["window_end"]
    requests, _, _ = bursts.due_polls([pulse], end, {}, REGISTRY, P, memory)
    pulled = {r["publisher_id"] for r in requests}
    for r in requests:
        codec.check("FetchRequest", r)
    assert "mumbai-daily" in pulled  # covered the story's place before (not its region, not authoritative)
    assert "el-diario-central" in pulled  # covers the linked Spanish story
    assert {"le-quotidien", "berliner-blatt"}.isdisjoint(pulled)  # French and German: no linked story in them
    assert {"daily-herald", "london-chronicle", "wirepress"} <= pulled  # covering / region / wire, as before

    # The ingest job: the request names a publisher; each of its feeds takes it, and polls at once.
    req = next(r for r in requests if r["publisher_id"] == "mumbai-daily")
    targets = request_targets(req, feeds_by_publisher(load_feeds("default")))
    assert targets and all(r["feed_url"] == url for url, r in targets)
    url, feed_req = targets[0]
    st = sch.FeedState(feed_url=url)  # a quiet long-tail feed: about one item an hour, polled every 30 min
    st.recent_items, st.recent_hours, st.recent_at_ms, st.last_poll_ms = 6.0, 6.0, end - 30 * MIN, end - 30 * MIN
    st.next_poll_ms = end + 25 * MIN
    policy = sch.SchedulePolicy()
    assert poller.apply_request(st, feed_req, policy, end)  # poll now
    now, intervals = end, []
    while now < end + 2 * HOUR:
        sch.record_response(st, now, sch.PollResponse(304, '"e"'))
        nxt = sch.plan_next_poll(st, "long_tail", policy, now, 0)
        intervals.append((now, nxt - now))
        now = nxt
    in_lane = [iv for t, iv in intervals if t < end + 60 * MIN]
    after = [iv for t, iv in intervals if t >= end + 60 * MIN]
    assert set(in_lane) == {1 * MIN} and len(in_lane) == 60  # the 1-minute lane for the hour after the window
    assert after and min(after) >= 20 * MIN  # then back to its own pace


def test_pull_is_capped_in_priority_order_and_does_not_depend_on_arrival_order():
    changes = scenario()
    memory, pulse = memory_and_pulse(changes)
    full = coverage.pull_publishers(pulse, memory, REGISTRY, 100)
    classes = [c for _, c in full]
    assert classes == sorted(classes)  # covering, region, entity coverage, authoritative
    assert {coverage.COVERING, coverage.REGION, coverage.ENTITY, coverage.AUTHORITATIVE} == set(classes)
    assert dict(full)["mumbai-daily"] == coverage.ENTITY and dict(full)["toronto-ledger"] == coverage.AUTHORITATIVE
    k = classes.index(coverage.ENTITY)
    capped = bursts.due_polls([pulse], pulse["window_end"], {}, REGISTRY, BurstParams(fetch_max_publishers=k), memory)
    assert [r["publisher_id"] for r in capped[0]] == [p for p, _ in full[:k]]  # the cap keeps the first k
    shuffled = list(changes)
    random.Random(4).shuffle(shuffled)
    memory2, _ = memory_and_pulse(shuffled)
    assert coverage.pull_publishers(pulse, memory2, REGISTRY, 100) == full


def test_memory_is_bounded_and_keeps_the_latest_coverage():
    m = coverage.CoverageMemory()
    events = [("original", 1, f"pub-{i:02d}", "en", ("e",), T0 + i) for i in range(30)]
    events += [("original", 2 + i, "pub-x", "en", (f"other-{i}",), T0) for i in range(coverage.MAX_ENTITIES + 10)]
    m.fold(events)
    assert len(m.entities["e"]) == coverage.PUBLISHERS_PER_ENTITY
    assert min(m.entities["e"]) == f"pub-{30 - coverage.PUBLISHERS_PER_ENTITY:02d}"  # the most recent kept
    assert len(m.entity_at) <= coverage.MAX_ENTITIES and len(m.stories) <= coverage.MAX_STORIES
    assert len(m.stories[1].publishers) == coverage.PUBLISHERS_PER_STORY


def test_detect_bursts_pulls_entity_and_linked_coverage_in_the_beam_graph():
    def check(fetch):
        pulled = {r["publisher_id"] for r in fetch}
        assert {"mumbai-daily", "el-diario-central"} <= pulled, sorted(pulled)
        assert "le-quotidien" not in pulled
        assert len(fetch) == len({r["request_id"] for r in fetch}) <= P.fetch_max_publishers
        assert {r["expires_at"] - r["requested_at"] for r in fetch} == {60 * MIN}

    p = beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions())
    out = p | beam.Create(scenario()) | DetectBursts()
    assert_that(out["fetch_requests"], check)
    p.run().wait_until_finish()


_PULSES: dict[bool, list] = {}  # the pulses each run saw (the embedded worker runs in this process)


def _keep(pulse: dict, bounded: bool) -> None:
    _PULSES.setdefault(bounded, []).append(repr(sorted(pulse.items())))


def test_a_bounded_run_detects_the_same_pulses_with_the_default_trigger():
    """DetectBursts(bounded=True) (the backfill) fires each window once by Beam's default trigger: in batch the same
    pulses as the streaming trigger with its late firings."""
    _PULSES.clear()
    for bounded in (False, True):
        p = beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions())
        out = p | beam.Create(scenario()) | DetectBursts(polls=False, bounded=bounded)
        out["pulses"] | beam.Map(_keep, bounded)
        p.run().wait_until_finish()
    assert _PULSES[True] and sorted(_PULSES[True]) == sorted(_PULSES[False])


def test_window_ends_are_the_sliding_windows_beam_assigns():
    """The bounded path (BurstWindowsFn) puts an original in the windows Beam's SlidingWindows would, from the float
    seconds the original is stamped with; on, just after and just before minute boundaries."""
    from apache_beam.transforms import window
    from apache_beam.utils.timestamp import Timestamp

    from transforms.editions.beam.detection import window_ends

    rng = random.Random(5)
    times = [T0, T0 + 1, T0 - 1, T0 + 59_999, T0 + 60_000, T0 + 123_456] + [
        T0 + rng.randrange(10**9) for _ in range(200)
    ]
    for size in (P.window_min, P.velocity_window_min):
        fn = window.SlidingWindows(size * 60, P.period_min * 60)
        for at in times:
            wins = fn.assign(window.WindowFn.AssignContext(Timestamp.of(at / 1000.0)))
            assert window_ends(at, size, P.period_min) == [int(round(float(w.end) * 1000)) for w in wins], at
