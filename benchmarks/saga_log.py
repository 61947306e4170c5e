"""The ranker's LOG under a long saga: does it grow with the saga's history or stay with the live stories?

A storyline gains a story every 20 hours (``--every_h``) for ``--episodes`` episodes (two articles each, and a
bystander story in no storyline beside it), fed minute by minute through the real ``RankEditionsFn`` (us-en, fake
Beam state as in tests/transforms/editions/test_rank_fn.py). The live window (48 h) holds two or three episodes at
any time, so a LOG that follows the live stories is flat however long the saga; one that keeps a live storyline's
every event grows by an event an episode. Printed for each saga length: LOG events and pickled bytes at the last
hourly compaction, the most at any compaction in the saga's second half, and the CPU of the run.

    PYTHONPATH=. .venv/bin/python benchmarks/saga_log.py --episodes 10,40,80
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def saga_events(episodes: int, every_h: int) -> tuple[list[dict], int]:
    from tests.transforms.editions.conftest import World
    from tests.transforms.editions.test_storyline_pages import sl_event
    from transforms.editions.book.storybook import compact_change

    world = World()
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    storyline = []
    for k in range(episodes):
        start = T + k * every_h * HOUR + 55 * MIN  # minutes 55-57: the minute chain crosses the top of the hour
        world.story(k + 1, ["daily-herald", "capital-post"], start, step=2 * MIN, title=f"Saga chapter {k} unfolds")
        world.story(100_001 + k, ["pacific-times"], start + MIN, title=f"Unrelated item number {k} today")
        kind = "NEW_STORYLINE" if k == 0 else "ATTACH"
        storyline.append(sl_event(k + 1, kind, start + MIN, 70, story_id=k + 1))
    return sorted([compact_change(c) for c in world.changes] + storyline, key=lambda e: e["at"]), MIN


def run(episodes: int, every_h: int) -> dict:
    from tests.transforms.editions.test_rank_fn import State, feed, fire, new_fn

    events, MIN = saga_events(episodes, every_h)
    st, fn = State(), new_fn()
    by_minute: dict[int, list] = {}
    for e in events:
        by_minute.setdefault(e["at"] // MIN, []).append(e)
    sizes, minute, cycles = [], min(by_minute), 0
    c0 = time.process_time()
    while True:
        for e in by_minute.get(minute, []):
            feed(fn, st, e)
        while st.timer.at is not None and st.timer.at <= (minute + 1) * MIN:
            t = st.timer.at
            fire(fn, st, t)
            cycles += 1
            if t % (60 * MIN) == 0:
                sizes.append((len(st.log.items), len(pickle.dumps(st.log.items, protocol=pickle.HIGHEST_PROTOCOL))))
        minute += 1
        if minute > max(by_minute) and st.timer.at is None:
            break
    late = sizes[len(sizes) // 2 :]
    return {
        "episodes": episodes,
        "events": len(events),
        "cycles": cycles,
        "log_events_last": sizes[-1][0],
        "log_bytes_last": sizes[-1][1],
        "log_events_max_late": max(n for n, _ in late),
        "log_bytes_max_late": max(b for _, b in late),
        "cpu_s": time.process_time() - c0,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", default="10,40,80", help="saga lengths (comma-separated)")
    ap.add_argument("--every_h", type=int, default=20, help="hours between episodes")
    args = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    cols = ("episodes", "events", "cycles", "log_events_last", "log_bytes_last", "log_events_max_late")
    cols += ("log_bytes_max_late", "cpu_s")
    print(" ".join(f"{c:>19s}" for c in cols))
    rows = [run(int(n), args.every_h) for n in args.episodes.split(",")]
    for r in rows:
        print(" ".join(f"{r[c]:19.1f}" if isinstance(r[c], float) else f"{r[c]:19d}" for c in cols))
    first, last = rows[0], rows[-1]
    print(
        f"longest / shortest saga: LOG events {last['log_events_max_late'] / first['log_events_max_late']:.2f}x, "
        f"bytes {last['log_bytes_max_late'] / first['log_bytes_max_late']:.2f}x for "
        f"{last['episodes'] / first['episodes']:.1f}x the episodes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
