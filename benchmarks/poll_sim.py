"""Simulate the ingest scheduler over a synthetic population of feeds (default 200,000): no network, simulated clock.

Runs the production schedule logic (transforms/ingest/schedule.py: record_response, plan_next_poll, request_poll)
feed by feed in an event loop, and prints polls/s, the share of polls answered 304, and discovery-delay
percentiles per tier (delay = poll that found an item minus the item's publication time).

Population (heavy-tailed, calibrated to ~2 M items/day like DESIGN.md's scale):
- busiest:   300 feeds, authoritative, ~15-80 items/h (log-normal around 35)
- busy:      3,000 feeds, authoritative, ~3-20 items/h
- regular:   30,000 feeds, 20 % authoritative, ~0.3-3 items/h
- long tail: the rest, long-tail tier, ~1 item/week to ~1 item/2 h (log-normal)
Every feed has a local time zone; its rate follows a diurnal curve (quiet at night, peak around midday, x0.6 on
weekends). 2 % of feeds change their ETag on every request (they must end up without validators, never 304);
10 % of authoritative feeds hold a WebSub lease (a push triggers a poll, the backstop is 15 min).

Feed hints (``--hints``): 30 % of feeds declare an RSS ttl drawn from {15, 30, 60, 60, 120, 180, 1440} minutes,
unrelated to their rate (publishers keep their CMS's default), and 10 % declare skipHours over their local night
(00:00-05:59 local, written in GMT), whether or not they publish then (the diurnal curve says they do, a little).
``--hints both`` (the default) runs the same population without and then with the hints applied, so the two lines
compare the schedule before and after; the arrivals are drawn from one generator in poll order, so the two runs
see different draws of the same processes.

Front-page lane (``--fronts``, share of the regular and long-tail feeds, 2 % by default): publishers without a
feed, polled through a section front (transforms/ingest/fronts.py) on the same schedule. A front changes with
anything on it (teasers, "most read", ads), so half of them answer 200 on every poll like ETag-churning feeds and
the other half 304 until a new article appears. They are counted apart in the output (polls/s, 304s, delays).

Burst pulls (``--bursts``): ``--burst_rate`` breaking pulses per measured hour (2 by default), each sending BURST
requests (schedule.request_poll, expiring an hour later: editions.json ``bursts.fetch_ttl_min``) to
``--burst_feeds`` feeds (200: the cap of one pulse, transforms/editions/bursts/coverage.py) drawn from the regular and
long-tail feeds, which then poll every minute for the hour. The feeds' own rates do not change (the cost of the
lane, not what it finds). ``--bursts both`` runs the population without and then with them.

The scheduler starts in steady state: each feed's recent-rate estimator is seeded as if it had watched the feed
for a few hours (no hour-of-week history), then a warm-up period is simulated and not measured.

Usage: python benchmarks/poll_sim.py [--feeds 200000] [--warmup_h 1] [--hours 4] [--seed 7] [--hints off|on|both]
       [--fronts 0.02] [--bursts off|on|both] [--burst_rate 2] [--burst_feeds 200]
Bounded: ~5 simulated hours of 200 k feeds take about a minute or two on one core.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transforms.ingest import schedule as sch  # noqa: E402

HOUR_S = 3600.0
TIERS = ("busiest", "busy", "regular", "long_tail")


def diurnal(t_s: float, tz_h: float) -> float:
    """Multiplier of a feed's mean rate at time t (mean ~1 over a week)."""
    local_h = (t_s / HOUR_S + tz_h) % 24
    day = int(((t_s / HOUR_S + tz_h) // 24 + 3) % 7)  # epoch was a Thursday -> 3
    m = 1.0 + 0.8 * math.sin(2 * math.pi * (local_h - 7) / 24)  # low ~01:00, high ~13:00
    if day >= 5:
        m *= 0.6
    return max(0.05, m) / 0.886  # normalise the weekly mean to ~1


class Feed:
    __slots__ = (
        "i",
        "tier",
        "sched_tier",
        "rate",
        "tz",
        "churn",
        "websub",
        "state",
        "next_arrival",
        "pending",
        "etag_n",
        "front",
    )

    def __init__(self, i, tier, sched_tier, rate, tz, churn, websub):
        self.i, self.tier, self.sched_tier, self.rate, self.tz = i, tier, sched_tier, rate, tz
        self.churn, self.websub = churn, websub
        self.state = sch.FeedState()
        self.pending: list[float] = []
        self.next_arrival = 0.0
        self.etag_n = 0
        self.front = False

    def max_rate(self) -> float:
        return self.rate * 1.8 / 0.886 / 3600.0  # per second, upper bound of diurnal()

    def advance_arrivals(self, until_s: float, rng: random.Random) -> None:
        """Generate arrivals up to ``until_s`` (thinning of a non-homogeneous Poisson process)."""
        lam = self.max_rate()
        t = self.next_arrival
        while t <= until_s:
            if rng.random() < self.rate * diurnal(t, self.tz) / 3600.0 / lam:
                self.pending.append(t)
            t += rng.expovariate(lam)
        self.next_arrival = t


def build_population(n: int, rng: random.Random) -> list[Feed]:
    feeds = []
    counts = {"busiest": 300, "busy": 3000, "regular": 30000}
    counts = {k: min(v, n // 4) if n < 200_000 else v for k, v in counts.items()}
    counts["long_tail"] = n - sum(counts.values())
    i = 0
    for tier in TIERS:
        for _ in range(counts[tier]):
            if tier == "busiest":
                rate, sched_tier = min(80, max(15, rng.lognormvariate(math.log(35), 0.35))), "authoritative"
            elif tier == "busy":
                rate, sched_tier = min(20, max(3, rng.lognormvariate(math.log(8), 0.5))), "authoritative"
            elif tier == "regular":
                rate = min(3, max(0.3, rng.lognormvariate(math.log(1.0), 0.6)))
                sched_tier = "authoritative" if rng.random() < 0.2 else "long_tail"
            else:
                rate, sched_tier = min(0.5, max(1 / 168, rng.lognormvariate(math.log(0.1), 1.0))), "long_tail"
            tz = rng.choice([-8, -5, -3, 0, 1, 2, 3, 5.5, 8, 9, 10])
            churn = rng.random() < 0.02
            websub = sched_tier == "authoritative" and rng.random() < 0.10
            feeds.append(Feed(i, tier, sched_tier, rate, tz, churn, websub))
            i += 1
    return feeds


TTL_CHOICES_MIN = (15, 30, 60, 60, 120, 180, 1440)


def assign_fronts(feeds: list[Feed], share: float, seed: int) -> None:
    """Make ``share`` of the regular and long-tail feeds front pages; half of those change on every request."""
    rng = random.Random(seed + 2)
    for f in feeds:
        if f.tier in ("regular", "long_tail") and rng.random() < share:
            f.front = True
            f.churn = rng.random() < 0.5


def assign_hints(feeds: list[Feed], seed: int) -> None:
    """Give the feeds their declared hints (a generator of their own: the population is the same either way)."""
    rng = random.Random(seed + 1)
    for f in feeds:
        if rng.random() < 0.30:
            f.state.hint_ttl_min = rng.choice(TTL_CHOICES_MIN)
        if rng.random() < 0.10:
            f.state.hint_skip_hours = sorted({int(h - f.tz) % 24 for h in range(6)})


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(q / 100 * (len(values) - 1)))))
    return values[k]


def burst_times(start_s: float, hours: float, rate: float) -> list[float]:
    """Evenly spaced pulse times over the measured hours (``rate`` per hour)."""
    n = int(hours * rate)
    return [start_s + (k + 0.5) * hours * HOUR_S / n for k in range(n)] if n else []


def run(
    n_feeds: int,
    warmup_h: float,
    hours: float,
    seed: int,
    hints: bool = False,
    fronts: float = 0.02,
    bursts: tuple[float, int] | None = None,
) -> dict:
    rng = random.Random(seed)
    policy = sch.SchedulePolicy()
    t0 = 1_780_000_000.0 - (1_780_000_000.0 % (7 * 24 * HOUR_S))  # a Thursday 00:00 UTC
    start_measure = t0 + warmup_h * HOUR_S
    end = start_measure + hours * HOUR_S
    feeds = build_population(n_feeds, rng)
    assign_fronts(feeds, fronts, seed)
    if hints:
        assign_hints(feeds, seed)
    heap: list[tuple[float, int, int]] = []  # (time s, kind 0=poll 1=push 2=burst pulse, feed or pulse index)
    pullable = [f.i for f in feeds if f.tier in ("regular", "long_tail") and not f.front]
    pulses = burst_times(start_measure, hours, bursts[0]) if bursts else []
    for k, t in enumerate(pulses):
        heapq.heappush(heap, (t, 2, k))
    burst_rng = random.Random(seed + 3)
    burst = {"pulses": 0, "requests": 0, "polls": 0, "304": 0}
    for f in feeds:
        now_ms = int(t0 * 1000)
        # Steady state: the estimator has watched the feed for a few hours (its true mean rate, with noise).
        seen_h = 3.0
        f.state.recent_items = max(0.0, rng.gauss(f.rate * seen_h, math.sqrt(f.rate * seen_h + 0.01)))
        f.state.recent_hours = seen_h
        f.state.recent_at_ms = now_ms
        f.state.last_poll_ms = now_ms - 60_000
        f.state.etag = '"e0"'
        f.state.last_digest = "d"
        if f.websub:
            f.state.lease_expires_ms = int((end + 86400) * 1000)
        f.next_arrival = t0 + rng.expovariate(f.max_rate())
        first = t0 + rng.random() * sch.base_interval_ms(f.state, f.sched_tier, policy, now_ms) / 1000
        heapq.heappush(heap, (first, 0, f.i))
    polls = polls_304 = 0
    polls_by_tier = dict.fromkeys(TIERS, 0)
    delays: dict[str, list[float]] = {t: [] for t in TIERS}
    items_by_tier = dict.fromkeys(TIERS, 0)
    pushes = churn_200 = 0
    front = {"polls": 0, "304": 0, "delays": []}  # the front-page lane, also counted in its tier
    wall = time.perf_counter()
    last_report = wall
    while heap:
        t, kind, idx = heapq.heappop(heap)
        if t > end:
            break
        now_ms = int(t * 1000)
        if kind == 2:  # a breaking pulse: its feeds to the 1-minute lane for the hour
            burst["pulses"] += 1
            for j in burst_rng.sample(pullable, min(bursts[1], len(pullable))):
                g = feeds[j]
                burst["requests"] += 1
                if sch.request_poll(g.state, "BURST", now_ms, policy, 2, now_ms + 60 * 60_000) is not None:
                    g.state.next_poll_ms = now_ms  # poll now (the trigger)
                heapq.heappush(heap, (g.state.next_poll_ms / 1000, 0, j))
            continue
        f = feeds[idx]
        st = f.state
        if kind == 1:  # a WebSub push for an arrival: may trigger a poll now (30 s window)
            if sch.request_poll(st, "PUSH", now_ms, policy) is None:
                if st.next_poll_ms is not None and st.next_poll_ms < t * 1000 + 1:
                    continue
                heapq.heappush(heap, (st.next_poll_ms / 1000, 0, idx))
                continue
            pushes += 1
        elif (
            st.next_poll_ms is not None
            and abs(st.next_poll_ms - now_ms) > 1
            and kind == 0
            and t * 1000 < st.next_poll_ms
        ):
            continue  # superseded timer
        f.advance_arrivals(t, rng)
        new = len(f.pending)
        measuring = t >= start_measure
        if new:
            if measuring:
                delays[f.tier].extend(t - a for a in f.pending)
                if f.front:
                    front["delays"].extend(t - a for a in f.pending)
                items_by_tier[f.tier] += new
            if f.websub:
                pass
            f.pending.clear()
        if f.churn:
            f.etag_n += 1
            status, etag = 200, f'"e{f.etag_n}"'
        else:
            status, etag = (200, f'"e{st.items_found + new}"') if new else (304, None)
        digest = f"d{st.items_found + new}"
        if status == 304:
            sch.record_response(st, now_ms, sch.PollResponse(304))
        else:
            sch.record_response(st, now_ms, sch.PollResponse(200, etag, new_items=new, digest=digest))
        nxt = sch.plan_next_poll(st, f.sched_tier, policy, now_ms, new) / 1000
        heapq.heappush(heap, (nxt, 0, idx))
        if f.websub:
            # The hub pushes when the next item appears: schedule that push (first arrival after now).
            f.advance_arrivals(nxt, rng)
            if f.pending:
                heapq.heappush(heap, (f.pending[0] + 1.0, 1, idx))
        if measuring:
            polls += 1
            polls_by_tier[f.tier] += 1
            polls_304 += status == 304
            churn_200 += status == 200 and not new
            if f.front:
                front["polls"] += 1
                front["304"] += status == 304
            if st.burst_until_ms and st.burst_until_ms > now_ms:
                burst["polls"] += 1
                burst["304"] += status == 304
        now_wall = time.perf_counter()
        if now_wall - last_report > 15:
            last_report = now_wall
            print(f"  ... simulated {(t - t0) / HOUR_S:.2f} h of {warmup_h + hours:.1f} h", file=sys.stderr, flush=True)
    seconds = hours * HOUR_S
    return {
        "feeds": n_feeds,
        "hints": hints,
        "hinted_feeds": sum(bool(f.state.hint_ttl_min or f.state.hint_skip_hours) for f in feeds),
        "hours": hours,
        "polls": polls,
        "polls_per_s": polls / seconds,
        "share_304": polls_304 / max(1, polls),
        "share_200_nothing_new": churn_200 / max(1, polls),
        "polls_per_s_by_tier": {k: v / seconds for k, v in polls_by_tier.items()},
        "items_per_day": sum(items_by_tier.values()) / hours * 24,
        "delay_s": {k: (percentile(v, 50), percentile(v, 90), percentile(v, 99), len(v)) for k, v in delays.items()},
        "pushes": pushes,
        "front_feeds": sum(f.front for f in feeds),
        "front_polls_per_s": front["polls"] / seconds,
        "front_share_304": front["304"] / max(1, front["polls"]),
        "front_delay_s": (percentile(front["delays"], 50), percentile(front["delays"], 90), len(front["delays"])),
        "bursts": bool(bursts),
        "burst_pulses": burst["pulses"],
        "burst_requests": burst["requests"],
        "burst_polls_per_s": burst["polls"] / seconds,
        "burst_share_304": burst["304"] / max(1, burst["polls"]),
        "useless_validators": sum(f.state.validators_useless for f in feeds),
        "churn_feeds": sum(f.churn for f in feeds),
        "wall_s": time.perf_counter() - wall,
    }


def report(r: dict, warmup_h: float) -> None:
    print(
        f"feeds: {r['feeds']:,}   simulated: {warmup_h:g} h warm-up + {r['hours']:g} h measured   "
        f"wall: {r['wall_s']:.0f} s   feed hints: {'applied' if r['hints'] else 'ignored'} "
        f"({r['hinted_feeds']:,} feeds declare some)"
    )
    print(f"items published: {r['items_per_day']:,.0f}/day")
    print(f"polls/s: {r['polls_per_s']:.1f}   (target <= ~320)")
    print(
        f"share of polls answered 304: {100 * r['share_304']:.1f} %   (target >= 75 %); the rest found new items, "
        f"except {100 * r['share_200_nothing_new']:.1f} % (200 with nothing new: ETag-churning feeds)"
    )
    print(
        f"WebSub-triggered polls: {r['pushes']:,}; feeds with useless validators: {r['useless_validators']:,} "
        f"of {r['churn_feeds']:,} ETag-churning feeds"
    )
    print(f"{'tier':<10} {'polls/s':>8} {'items':>9} {'p50 delay':>10} {'p90 delay':>10} {'p99 delay':>10}")
    for tier in TIERS:
        p50, p90, p99, n = r["delay_s"][tier]
        print(f"{tier:<10} {r['polls_per_s_by_tier'][tier]:>8.1f} {n:>9,} {p50:>9.0f}s {p90:>9.0f}s {p99:>9.0f}s")
    p50, p90, n = r["front_delay_s"]
    print(
        f"front-page lane (in the tiers above too): {r['front_feeds']:,} fronts, {r['front_polls_per_s']:.1f} polls/s, "
        f"{100 * r['front_share_304']:.1f} % 304, {n:,} items, delay p50 {p50:.0f} s p90 {p90:.0f} s"
    )
    if r["bursts"]:
        print(
            f"burst lane (in the tiers above too): {r['burst_pulses']} pulses, {r['burst_requests']:,} feeds pulled, "
            f"{r['burst_polls_per_s']:.1f} polls/s in the lane, {100 * r['burst_share_304']:.1f} % 304"
        )
    p90_busiest = r["delay_s"]["busiest"][1]
    print(f"p90 discovery delay, busiest tier: {p90_busiest:.0f} s   (target <= 120 s)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--feeds", type=int, default=200_000)
    ap.add_argument("--warmup_h", type=float, default=1.0)
    ap.add_argument("--hours", type=float, default=4.0, help="measured simulated hours")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--hints", choices=("off", "on", "both"), default="both", help="apply the feeds' ttl/skipHours")
    ap.add_argument("--fronts", type=float, default=0.02, help="share of regular/long-tail feeds that are fronts")
    ap.add_argument("--bursts", choices=("off", "on", "both"), default="off", help="breaking pulses pull feeds")
    ap.add_argument("--burst_rate", type=float, default=2.0, help="breaking pulses per measured hour")
    ap.add_argument("--burst_feeds", type=int, default=200, help="feeds one pulse pulls (the pull's cap: 200)")
    a = ap.parse_args(argv)
    if not 0 <= a.fronts <= 1:
        ap.error("--fronts must be a share between 0 and 1")
    if a.burst_rate < 0 or a.burst_feeds < 0:
        ap.error("--burst_rate and --burst_feeds must be >= 0")
    onoff = {"off": [False], "on": [True], "both": [False, True]}
    modes = [(h, b) for h in onoff[a.hints] for b in onoff[a.bursts]]
    results = []
    for hints, with_bursts in modes:
        r = run(
            a.feeds,
            a.warmup_h,
            a.hours,
            a.seed,
            hints,
            a.fronts,
            (a.burst_rate, a.burst_feeds) if with_bursts else None,
        )
        report(r, a.warmup_h)
        print()
        results.append(r)
    if len(results) == 2:
        before, after = results
        what = "bursts pulled vs none" if a.bursts == "both" else "hints applied vs ignored"
        print(
            f"{what}: polls/s {after['polls_per_s']:.1f} / {before['polls_per_s']:.1f} = "
            f"{after['polls_per_s'] / before['polls_per_s']:.3f}x; share of 304s {100 * after['share_304']:.1f} % "
            f"vs {100 * before['share_304']:.1f} %; long-tail p50 delay "
            f"{after['delay_s']['long_tail'][0]:.0f} s vs {before['delay_s']['long_tail'][0]:.0f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
