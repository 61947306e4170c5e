"""Benchmark: the storyline writer's state over months of history: a state that must not grow with history.

The streaming storyline stage keeps one :class:`StorylineWriter` in Beam state and writes it back (pickled) at every
tick, so its size is a per-tick cost. A story stays in the writer's index until its decay makes a link impossible
(``HORIZON_MS``, ~22 days after its last article); after that nothing can change its storyline any more. This
drives the writer through ``--days`` simulated days (``--per_day`` stories a day, each with a follow-up article some
hours later, expired 48 h after its last article, subjects shared so storylines form), ticking every 10 minutes of
event time, and prints by day: the stories indexed, the stories the storyline graph holds (membership, edges), the
pickled state's bytes and its pickling CPU; then day N / day 30: a state bounded by the horizon is ~1.0x from the
horizon on, one that keeps every story ever seen grows with N / 30.

    .venv/bin/python benchmarks/storyline_history.py                       # 60 days, 400 stories a day
    .venv/bin/python benchmarks/storyline_history.py --days 90 --per_day 1000
    .venv/bin/python benchmarks/storyline_history.py --burst 400     # one story growing to 400 articles

Reads nothing, writes only to stdout, asserts nothing.
"""

from __future__ import annotations

import argparse
import pickle
import time

import numpy as np

from transforms.common import DAY_MS, HOUR_MS
from transforms.stories.storylines import storyline as sl

T0 = 1_767_225_600_000
DIM = 64


class History:
    """Stories of ``subjects`` recurring subjects (a few entity keys each, plus Zipf-common keys)."""

    def __init__(self, seed: int, subjects: int):
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.normal(size=(subjects, DIM)).astype(np.float32)
        self.seq = 0

    def out(self, kind: str, sid: int, subject: int, at: int, member: bool = True) -> dict:
        self.seq += 1
        ch = {"kind": kind, "story_id": sid, "other_story_id": None, "language": "en", "seq": self.seq, "at": at}
        ch["article_ids"] = []
        members = {}
        if member:
            v = self.centres[subject] + 0.7 * self.rng.normal(size=DIM).astype(np.float32)
            ch["centroid"] = v.tolist()
            ents = [f"s{subject}-{j}" for j in range(3)] + [f"k{int(x)}" for x in self.rng.zipf(1.4, size=3)]
            members = {f"a{self.seq}": {"entities": ents, "at": at}}
        return sl.compact({"change": ch, "members": members})


def simulate(days: int, per_day: int, seed: int = 0, spent: dict | None = None):
    """Yield (day, writer, pickle CPU seconds of the day's last tick) at the end of each simulated day; ``spent``:
    filled with the CPU seconds of the writer's observe + tick by day (0-based)."""
    spent = {} if spent is None else spent
    h, w = History(seed, subjects=max(50, per_day // 2)), sl.StorylineWriter()
    events: list[tuple[int, dict]] = []
    sid = 0
    for day in range(days):
        for _ in range(per_day):
            sid += 1
            subject = int(h.rng.integers(len(h.centres)))
            born = T0 + day * DAY_MS + int(h.rng.integers(DAY_MS))
            grown = born + int(h.rng.integers(1, 12)) * HOUR_MS
            events.append((born, h.out("NEW_STORY", sid, subject, born)))
            events.append((grown, h.out("ASSIGN", sid, subject, grown)))
            events.append((grown + 2 * DAY_MS, h.out("EXPIRE", sid, subject, grown + 2 * DAY_MS, member=False)))
    events.sort(key=lambda e: (e[0], e[1]["change"]["seq"]))
    i, tick, end = 0, sl.tick_of(T0), T0 + days * DAY_MS
    while tick <= end:
        c0 = time.process_time()
        while i < len(events) and sl.tick_of(events[i][0]) <= tick:
            w.observe(events[i][1])
            i += 1
        w.tick(tick)
        d = (tick - T0 - 1) // DAY_MS  # a tick on midnight closes the day before
        spent[d] = spent.get(d, 0.0) + time.process_time() - c0
        if (tick - T0) % DAY_MS == 0:
            t = time.process_time()
            blob = pickle.dumps(w, protocol=pickle.HIGHEST_PROTOCOL)
            yield (tick - T0) // DAY_MS, w, len(blob), time.process_time() - t
        tick += sl.EVERY_MS


def burst(n: int, others: int = 200, seed: int = 0) -> None:
    """One story growing to ``n`` articles, an article a tick, among ``others`` indexed stories: the writer's CPU
    per article over the first and the last 50 (a cost per output that follows the story's size grows here)."""
    h, w = History(seed, subjects=50), sl.StorylineWriter()
    at = T0
    for i in range(others):
        w.observe(h.out("NEW_STORY", 10_000 + i, i % 50, at))
    w.tick(sl.tick_of(at))
    spent = []
    for k in range(n):
        at += sl.EVERY_MS
        c = h.out("NEW_STORY" if k == 0 else "ASSIGN", 1, 7, at)
        c0 = time.process_time()
        w.observe(c)
        w.tick(sl.tick_of(at))
        spent.append(time.process_time() - c0)
    first, last = spent[:50], spent[-50:]
    print(
        f"one story growing to {n} articles among {others}: {sum(first) / len(first) * 1e6:,.0f} µs an article over "
        f"its first 50, {sum(last) / len(last) * 1e6:,.0f} over its last 50 ({sum(last) / max(sum(first), 1e-9):.2f}x)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=60)
    ap.add_argument("--per_day", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--burst", type=int, default=0, help="instead: one story growing to N articles, one a tick")
    a = ap.parse_args()
    print(f"horizon {sl.HORIZON_MS / DAY_MS:.1f} days; {a.per_day} stories a day; figures at the end of each day")
    if a.burst:
        burst(a.burst)
        return
    print("  day  indexed  in graph  storylines   state KB  pickle ms  µs/story")
    rows, spent = {}, {}
    for day, w, size, cpu in simulate(a.days, a.per_day, a.seed, spent):
        graph = len(w.storyline_of)
        rows[day] = (len(w.stories), graph, size, cpu)
        if day % 5 == 0 or day == a.days or day == 3:
            us = spent.get(day - 1, 0.0) / a.per_day * 1e6  # the CPU of the day that just ended, per story born
            print(
                f"  {day:3d}  {len(w.stories):7,}  {graph:8,}  {len(w.members_of):10,}  {size / 1024:9,.0f}  "
                f"{cpu * 1e3:9.1f}  {us:8,.0f}"
            )
    last = max(rows)
    if 30 in rows and last > 30:
        r = [rows[last][k] / max(rows[30][k], 1e-9) for k in range(4)]
        print(
            f"day {last} / day 30: indexed {r[0]:.2f}x, in graph {r[1]:.2f}x, state bytes {r[2]:.2f}x, pickle CPU "
            f"{r[3]:.2f}x (bounded by the horizon: ~1.0x; kept for ever: ~{last / 30:.1f}x)"
        )


if __name__ == "__main__":
    main()
