"""Co-visitation counts, plain logic (transforms/covisit/counts.py): pairs within the window, decay, the bound per
story, idempotent replays, abnormal readers ignored."""

from __future__ import annotations

import random

import pytest

from transforms.common import HOUR_MS
from transforms.covisit.counts import (
    Increment,
    Neighbours,
    Params,
    ReaderState,
    decayed,
    fold,
    reader_step,
)

T0 = 1_767_225_600_000


def read(reader, story, at, eid=None, kind="READ"):
    eid = eid or f"{reader}-{story}-{at}"
    return {"event_id": eid, "reader_id": reader, "kind": kind, "edition": "us-en", "story_id": story, "at": at}


def lists(stories):
    return {s: n.top() for s, n in stories.items()}


def test_reads_within_the_window_pair_both_ways_and_later_ones_do_not():
    events = [read("r1", 1, T0), read("r1", 2, T0 + HOUR_MS), read("r1", 3, T0 + 8 * HOUR_MS)]
    got = lists(fold(events))
    assert got == {1: [(2, 1.0)], 2: [(1, 1.0)]}  # 3 is 7 h after 2 and 8 h after 1: outside the 6 h window


def test_impressions_and_rereads_pair_nothing_new():
    events = [
        read("r1", 1, T0),
        read("r1", 9, T0 + 1, kind="IMPRESSION"),
        read("r1", 2, T0 + 2),
        read("r1", 1, T0 + 3),  # a re-read of 1 inside the window: the pair (1, 2) counts once
    ]
    assert lists(fold(events)) == {1: [(2, 1.0)], 2: [(1, 1.0)]}


def test_counts_add_over_readers_and_halve_every_half_life():
    events = [read("r1", 1, T0), read("r1", 2, T0 + 1000), read("r2", 1, T0 + 24 * HOUR_MS)]
    events.append(read("r2", 2, T0 + 24 * HOUR_MS + 1000))
    got = fold(events)
    assert got[1].ref_at == T0 + 24 * HOUR_MS + 1000
    assert got[1].counts[2] == pytest.approx(1.5)  # the first pair decayed by one half-life, plus the new one
    assert decayed(1.5, got[1].ref_at, got[1].ref_at + 48 * HOUR_MS) == pytest.approx(0.375)
    assert decayed(1.0, T0, T0 - HOUR_MS) == 1.0  # never grows backwards


def test_an_out_of_order_increment_is_decayed_to_the_newest():
    n = Neighbours()
    n.add(Increment(1, 2, T0 + 24 * HOUR_MS))
    n.add(Increment(1, 3, T0))
    assert n.ref_at == T0 + 24 * HOUR_MS and n.counts[3] == pytest.approx(0.5) and n.counts[2] == 1.0


def test_each_story_keeps_only_its_top_k_neighbours():
    params = Params(top_k=5)
    n = Neighbours()
    for other in range(100, 105):  # five established neighbours, 10 reads together each
        for _ in range(10):
            n.add(Increment(1, other, T0), params)
    for other in range(200, 300):  # a hundred one-offs: never displace them, and the state stays bounded
        n.add(Increment(1, other, T0), params)
        assert len(n.counts) <= 2 * params.top_k
    assert [s for s, _ in n.top(params)] == [100, 101, 102, 103, 104]
    for _ in range(30):  # a newcomer read together often enough gets in
        n.add(Increment(1, 999, T0), params)
    assert n.top(params)[0] == (999, 30.0) and len(n.top(params)) == 5
    stories = fold(
        [read(f"r{i}", 1, T0 + i) for i in range(60)] + [read(f"r{i}", 1000 + i, T0 + i + 1) for i in range(60)]
    )
    assert len(stories[1].top()) == 50  # the default bound: 60 distinct neighbours, 50 kept


def test_replaying_the_same_events_changes_nothing():
    rng = random.Random(7)
    events = [read(f"r{rng.randrange(30)}", rng.randrange(40), T0 + rng.randrange(12 * HOUR_MS)) for _ in range(600)]
    once = lists(fold(events))
    shuffled = events * 3
    rng.shuffle(shuffled)
    assert lists(fold(shuffled)) == once
    state = ReaderState()
    e = read("r1", 5, T0)
    assert reader_step(state, e) == ([], "paired")
    assert reader_step(state, read("r1", 6, T0 + 1))[1] == "paired"
    assert reader_step(state, dict(e)) == ([], "duplicate")  # the same event id again
    assert reader_step(state, read("r1", 7, T0 + 2, eid=e["event_id"])) == ([], "duplicate")


def test_an_event_older_than_the_window_is_late_and_cannot_count_twice():
    state = ReaderState()
    reader_step(state, read("r1", 1, T0))
    reader_step(state, read("r1", 2, T0 + 7 * HOUR_MS))  # the first read and its event id fall out of the window
    assert reader_step(state, read("r1", 1, T0)) == ([], "late")


def test_a_reader_above_the_rate_bar_is_ignored():
    human = [read("h", s, T0 + s * 60_000) for s in range(1, 5)]
    bot = [read("bot", 500 + i, T0 + i * 10_000) for i in range(400)]  # 360 reads an hour
    bot += [read("bot", 1, T0 + 4000 * 1000), read("bot", 2, T0 + 4000 * 1000 + 5)]
    got = fold(human + bot)
    top = dict(got[1].top())
    assert set(top) == {2, 3, 4} and max(top.values()) <= 1.0  # the bot's (1, 2) pair was not counted
    # below the bar, the same reader pairs normally: only its first ~120 reads paired, at most MAX_PAIRS each
    assert all(s < 500 + 121 for s in got if s >= 500)
    state = ReaderState()
    outcomes = [reader_step(state, e)[1] for e in bot]
    assert outcomes.count("abnormal") >= len(bot) - 121
    assert len(state.reads) <= 120 * 6 + 1  # the state of an abnormal reader stays bounded


def test_params_are_checked():
    with pytest.raises(ValueError, match="window_ms"):
        Params(window_ms=0)


def arrived(event, at):
    """The event as the covisit job sees it: stamped with the origin's receive time (the ``received_at`` attribute)."""
    return {**event, "received_at": at}


def test_backdated_reads_are_judged_by_arrival_and_flagged():
    """30,000 reads backdated over the 30 days the origin accepts, all arriving within 10 minutes: by the client's
    ``at`` they are one read every 86 s (never over the bar); by arrival they are 3,000 a minute."""
    now = T0 + 30 * 24 * HOUR_MS
    state, outcomes, pairs = ReaderState(), [], 0
    for i in range(30_000):
        e = arrived(read("bot", 10_000 + i, now - 30 * 24 * HOUR_MS + i * 86_400), now + i * 20)
        incs, outcome = reader_step(state, e)
        outcomes.append(outcome)
        pairs += len(incs)
    assert outcomes[:120] == ["paired"] * 120
    assert outcomes[120:] == ["abnormal"] * (30_000 - 120)
    assert pairs <= 2 * 120 * 20  # what it paired before crossing the bar, bounded by MAX_PAIRS per read
    assert len(state.arrivals) <= 121  # the rate check's state stays bounded


def score(events, story=1, neighbour=2, now=None):
    state, n = ReaderState(), Neighbours()
    for e in events:
        for inc in reader_step(state, e)[0]:
            if inc.story == story:
                n.add(inc)
    return decayed(dict(n.top()).get(neighbour, 0.0), n.ref_at, now)


def test_a_reader_walking_a_pair_through_windows_scores_no_more_than_a_normal_reader():
    """One reader posts the pair (1, 2) with ``at`` stepped 6 h + 1 ms apart (each step a new window by the client's
    clock), 30 h back to now, all within a minute of arrival: once per reader and window *of arrival*."""
    now = T0 + 30 * 24 * HOUR_MS
    normal = score([arrived(read("n", 1, now - 60_000), now - 60_000), arrived(read("n", 2, now), now)], now=now)
    walk = []
    for w in range(6):
        at = now - 5 * (6 * HOUR_MS + 1) + w * (6 * HOUR_MS + 1)
        walk += [arrived(read("w", 1, at - 1), now + w * 1000), arrived(read("w", 2, at), now + w * 1000 + 500)]
    assert normal == pytest.approx(1.0, abs=1e-3)
    assert score(walk, now=now) <= normal


def test_a_pair_reread_after_a_window_of_arrival_counts_again():
    """The cap is per window of arrival: a reader who really comes back to the pair the next day counts again."""
    day = 24 * HOUR_MS
    events = [
        arrived(read("r", 1, T0), T0),
        arrived(read("r", 2, T0 + 60_000), T0 + 60_000),
        arrived(read("r", 1, T0 + day), T0 + day),
        arrived(read("r", 2, T0 + day + 60_000), T0 + day + 60_000),
    ]
    assert score(events, now=T0 + day + 60_000) == pytest.approx(1.5, abs=1e-2)
