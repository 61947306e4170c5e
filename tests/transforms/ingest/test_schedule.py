"""The per-feed schedule policy (plain Python, simulated clock)."""

from __future__ import annotations

from transforms.ingest import schedule as sch

MIN = sch.MINUTE_MS
POLICY = sch.SchedulePolicy()
T0 = 1_780_000_000_000


def simulate(rate_per_hour: float, hours: float, tier="authoritative", policy=POLICY, t0=T0):
    """Deterministic arrivals every 60/rate minutes; returns (state, polls, intervals)."""
    st = sch.FeedState(feed_url="http://x.test/feed")
    gap = int(sch.HOUR_MS / rate_per_hour)
    next_item = t0 + gap
    now = t0
    intervals = []
    polls = 0
    while now < t0 + hours * sch.HOUR_MS:
        new = 0
        while next_item <= now:
            new += 1
            next_item += gap
        sch.record_response(st, now, sch.PollResponse(200 if new else 304, '"e"', new_items=new))
        nxt = sch.plan_next_poll(st, tier, policy, now, new)
        intervals.append(nxt - now)
        now = nxt
        polls += 1
    return st, polls, intervals


def test_interval_is_about_half_the_gap_between_items():
    st, _, intervals = simulate(rate_per_hour=4, hours=12)  # an item every 15 min
    quiet = list(intervals[-20:])
    assert 5 * MIN <= sorted(quiet)[len(quiet) // 2] <= 10 * MIN
    assert 3.0 <= sch.expected_rate(st, T0 + 12 * sch.HOUR_MS) <= 5.0


def test_clamped_to_floor_and_ceiling():
    _, _, busy = simulate(rate_per_hour=600, hours=2)
    assert min(busy) == 1 * MIN and max(busy[-10:]) == 1 * MIN  # authoritative floor
    _, _, busy_tail = simulate(rate_per_hour=600, hours=2, tier="long_tail")
    assert min(busy_tail) == 5 * MIN
    _, _, quiet = simulate(rate_per_hour=0.05, hours=48)
    assert max(quiet) == 60 * MIN
    assert quiet[-1] == 60 * MIN


def test_shortened_right_after_new_items():
    st = sch.FeedState()
    sch.record_response(st, T0, sch.PollResponse(200))
    st.recent_items, st.recent_hours, st.recent_at_ms = 2.0, 1.0, T0  # ~2 items/h -> 15 min interval
    plain = sch.plan_next_poll(st, "authoritative", POLICY, T0, new_items=0) - T0
    after_new = sch.plan_next_poll(st, "authoritative", POLICY, T0, new_items=3) - T0
    assert after_new == plain // 2
    assert after_new >= POLICY.floor_ms("authoritative")


def test_burst_request_moves_any_feed_to_the_one_minute_lane_until_it_expires():
    st = sch.FeedState(next_poll_ms=T0 + 40 * MIN)
    poll_at = sch.request_poll(st, "BURST", T0, POLICY, priority=5, expires_at_ms=T0 + 20 * MIN)
    assert poll_at == T0
    assert sch.plan_next_poll(st, "long_tail", POLICY, T0) == T0 + 1 * MIN  # below the long-tail floor
    assert sch.plan_next_poll(st, "long_tail", POLICY, T0 + 25 * MIN) > T0 + 25 * MIN + 5 * MIN
    useless = sch.FeedState(validators_useless=True)  # every poll a full 200: never faster than the long-tail floor
    sch.request_poll(useless, "BURST", T0, POLICY, expires_at_ms=T0 + 20 * MIN)
    assert sch.plan_next_poll(useless, "authoritative", POLICY, T0) == T0 + 5 * MIN
    default = sch.FeedState()  # a BURST without expires_at holds the lane for an hour
    sch.request_poll(default, "BURST", T0, POLICY)
    assert default.burst_until_ms == T0 + 60 * MIN


def test_websub_lease_relaxes_to_backstop():
    st = sch.FeedState(lease_expires_ms=T0 + 24 * sch.HOUR_MS)
    st.recent_items, st.recent_hours, st.recent_at_ms = 60.0, 1.0, T0  # busy: would be polled every minute
    assert sch.plan_next_poll(st, "authoritative", POLICY, T0) == T0 + 15 * MIN
    st.lease_expires_ms = T0 - 1  # lapsed: back to its own pace
    assert sch.plan_next_poll(st, "authoritative", POLICY, T0) == T0 + 1 * MIN


def test_etag_changing_every_time_makes_validators_useless_and_never_speeds_up():
    st = sch.FeedState(etag='"a"', last_digest="same-items")
    now = T0
    for i in range(sch.CHURN_LIMIT):
        assert sch.conditional_headers(st) == {"If-None-Match": st.etag}
        sch.record_response(st, now, sch.PollResponse(200, f'"churn{i}"', digest="same-items"))
        st.last_digest = "same-items"
        now += MIN
    assert st.validators_useless
    assert sch.conditional_headers(st) == {}
    # Even a busy-looking feed is not polled faster than the long-tail floor once its validators are useless.
    st.recent_items, st.recent_hours, st.recent_at_ms = 60.0, 1.0, now
    assert sch.plan_next_poll(st, "authoritative", POLICY, now, new_items=5) - now == 5 * MIN


def test_changed_etag_with_new_items_is_not_churn():
    st = sch.FeedState(etag='"a"', last_digest="d0")
    for i in range(5):
        sch.record_response(st, T0 + i * MIN, sch.PollResponse(200, f'"e{i}"', new_items=1, digest=f"d{i + 1}"))
    assert not st.validators_useless and st.etag_churn == 0


def test_304_changes_nothing_but_counters():
    st = sch.FeedState(etag='"a"', last_modified="Mon, 01 Jun 2026 10:00:00 GMT", guids={"g": "f"})
    sch.record_response(st, T0, sch.PollResponse(304))
    assert (st.etag, st.last_modified, st.guids) == ('"a"', "Mon, 01 Jun 2026 10:00:00 GMT", {"g": "f"})
    assert st.not_modified == 1


def test_pings_trigger_at_most_one_poll_per_30_seconds():
    st = sch.FeedState(next_poll_ms=T0 + 30 * MIN)
    assert sch.request_poll(st, "PING", T0, POLICY) == T0
    st.next_poll_ms = T0 + 30 * MIN  # the poll happened and was rescheduled
    for dt in (1_000, 10_000, 29_000):
        assert sch.request_poll(st, "PING", T0 + dt, POLICY) is None
    assert st.next_poll_ms == T0 + 30 * MIN  # nothing was moved either
    assert sch.request_poll(st, "PING", T0 + 30_000, POLICY) == T0 + 30_000


def test_push_inside_the_window_is_deferred_not_lost():
    st = sch.FeedState(next_poll_ms=T0 + 30 * MIN)
    assert sch.request_poll(st, "PUSH", T0, POLICY) == T0
    st.next_poll_ms = T0 + 30 * MIN
    assert sch.request_poll(st, "PUSH", T0 + 5_000, POLICY) is None
    assert st.next_poll_ms == T0 + 30_000
    assert sch.request_poll(st, "PUSH", T0 + 6_000, POLICY) is None  # a third one adds nothing
    assert st.next_poll_ms == T0 + 30_000


def test_errors_back_off():
    st = sch.FeedState()
    gaps = []
    for _i in range(4):
        sch.record_error(st, T0)
        gaps.append(sch.plan_next_poll(st, "authoritative", POLICY, T0) - T0)
    assert gaps == [2 * MIN, 4 * MIN, 8 * MIN, 16 * MIN]


def test_guid_memory_keeps_the_last_200():
    st = sch.FeedState()
    for i in range(250):
        st.remember(f"g{i}", "f")
    assert len(st.guids) == 200 and "g49" not in st.guids and "g249" in st.guids


def test_rate_per_hour_of_week_learns_a_weekly_pattern():
    st = sch.FeedState()
    now = T0 - (T0 % sch.WEEK_MS)
    # Four weeks of a feed that publishes 6/h in hour-of-week h0 and nothing otherwise, polled every 10 min.
    h0 = sch.hour_of_week(now)
    for _ in range(4 * 7 * 24 * 6):
        busy = sch.hour_of_week(now) == h0
        sch.record_response(st, now, sch.PollResponse(200, new_items=1 if busy else 0))
        now += 10 * MIN
    busy_t = now - (now - T0) % sch.WEEK_MS  # same phase as h0
    while sch.hour_of_week(busy_t) != h0:
        busy_t += sch.HOUR_MS
    assert sch.expected_rate(st, busy_t) > 2 * sch.expected_rate(st, busy_t + 3 * sch.HOUR_MS)


def test_state_round_trips_through_json():
    import json

    st, _, _ = simulate(rate_per_hour=10, hours=3)
    again = sch.FeedState.from_dict(json.loads(json.dumps(st.to_dict())))
    assert again == st


def test_scale_compresses_every_duration():
    fast = sch.SchedulePolicy(scale=0.1)
    st = sch.FeedState()
    sch.record_response(st, T0, sch.PollResponse(200), scale=0.1)
    assert sch.plan_next_poll(st, "authoritative", fast, T0) - T0 == 3 * MIN  # 30 min * 0.1 for an unknown feed
    assert fast.floor_ms("authoritative") == 6_000 and fast.backstop_ms == 90_000


def test_seed_rate_from_entry_dates():
    st = sch.FeedState()
    sch.seed_rate(st, T0, [T0 - i * 5 * MIN for i in range(1, 13)])  # 12 items over the last hour
    assert 9 <= sch.expected_rate(st, T0) <= 13


def run_feed(st, gap_ms, t0, hours, tier="long_tail", policy=POLICY):
    """Poll ``st`` as planned while an item appears every ``gap_ms``; returns the poll times."""
    next_item, now, times = t0 + gap_ms, t0, []
    while now < t0 + hours * sch.HOUR_MS:
        new = 0
        while next_item <= now:
            new, next_item = new + 1, next_item + gap_ms
        sch.record_response(st, now, sch.PollResponse(200 if new else 304, '"e"', new_items=new))
        times.append(now)
        now = sch.plan_next_poll(st, tier, policy, now, new)
    return times


def test_a_quiet_feed_with_a_long_ttl_is_polled_at_the_ceiling_not_faster():
    gap = int(1.4 * sch.HOUR_MS)  # ~0.7 items/h: the rate alone polls every ~40 min
    plain = run_feed(sch.FeedState(), gap, T0, 24)
    hinted = run_feed(sch.FeedState(hint_ttl_min=180), gap, T0, 24)
    assert min(b - a for a, b in zip(plain[-10:], plain[-9:])) < 50 * MIN  # what the rate model does alone
    steps = [b - a for a, b in zip(hinted[5:], hinted[6:])]
    assert min(steps) == 60 * MIN and max(steps) == 60 * MIN  # the ttl, held to the 60-min ceiling
    assert len(hinted) < len(plain)


def test_skip_hours_and_days_move_the_next_poll_past_them():
    monday = T0 - T0 % sch.WEEK_MS - 72 * sch.HOUR_MS + sch.WEEK_MS  # a Monday 00:00 UTC
    assert sch.hour_of_week(monday) == 0
    st = sch.FeedState(hint_skip_hours=[22, 23, 0, 1, 2, 3, 4, 5])
    st.recent_items, st.recent_hours, st.recent_at_ms = 0.2, 3.0, monday + 21 * sch.HOUR_MS + 50 * MIN
    nxt = sch.plan_next_poll(st, "long_tail", POLICY, monday + 21 * sch.HOUR_MS + 50 * MIN)
    assert nxt == monday + 30 * sch.HOUR_MS  # Tuesday 06:00 GMT, not 22:50 Monday
    st = sch.FeedState(hint_skip_days=[5, 6])
    friday_late = monday + 4 * 24 * sch.HOUR_MS + 23 * sch.HOUR_MS + 30 * MIN
    st.recent_items, st.recent_hours, st.recent_at_ms = 0.2, 3.0, friday_late
    nxt = sch.plan_next_poll(st, "long_tail", POLICY, friday_late)
    assert nxt == friday_late + 60 * MIN + sch.HINT_MAX_SKIP_MS  # past Saturday; at most a day of skipping
    again = sch.plan_next_poll(st, "long_tail", POLICY, nxt)
    assert again == monday + sch.WEEK_MS  # past Sunday: Monday 00:00
    # Every hour skipped reads as no hint; an authoritative feed never skips.
    assert sch.plan_next_poll(sch.FeedState(hint_skip_hours=list(range(24))), "long_tail", POLICY, monday) < (
        monday + sch.HOUR_MS + 1
    )
    st = sch.FeedState(hint_skip_hours=[0, 1])
    st.recent_items, st.recent_hours, st.recent_at_ms = 0.2, 3.0, monday
    assert sch.plan_next_poll(st, "authoritative", POLICY, monday) == monday + sch.HOUR_MS  # hour 1, skipped


def test_a_feed_publishing_every_few_minutes_despite_ttl_60_follows_its_rate():
    st = sch.FeedState(hint_ttl_min=60, hint_skip_hours=list(range(0, 12)))
    quiet = run_feed(st, 3 * sch.HOUR_MS, T0, 48)
    assert all(sch.hour_of_week(t) % 24 >= 12 for t in quiet[1:])  # the hints hold while it is quiet
    busy = run_feed(st, 3 * MIN, quiet[-1], 36)  # now an item every 3 min, skipped hours included
    steps = [b - a for a, b in zip(busy[10:], busy[11:])]
    assert steps == [POLICY.floor_ms("long_tail")] * len(steps)  # its rate, at the long-tail floor
    assert any(sch.hour_of_week(t) % 24 < 12 for t in busy[10:])
    assert not sch.hints_hold(st, "long_tail", POLICY, busy[-1])
