"""Repair-tick cost benchmark: CPU time of one repair tick at two live-set sizes with the same number of changed stories.

A repair tick (transforms/stories/writer/repair.py) must cost O(changed stories), never O(live stories): the stories it
looks at are those active in the repair window plus their reach-back candidates from the writer's own index. This
builds a real writer (:class:`transforms.stories.writer.cluster.StoryClusterer`, ANN index when available) whose live set
holds ``--sizes`` stories of one article each, almost all of them quiet (last article 12 h ago: live, outside the 6 h
window), and ``--changed`` stories that got an article in the last minutes (half of them near a quiet story of the
same event, so reach-back and merges have work), then times ``repair_tick`` (CPU seconds of this process, median of
``--ticks`` ticks, each on a freshly built writer), for each ``--modes`` (the writer's REPAIR_MODE: "merge", the
split + best-first merge repair, and "recluster", transforms/stories/writer/recluster.py). Reads nothing, writes only to
stdout, asserts nothing.

    .venv/bin/python benchmarks/repair_bench.py                        # 25,000 and 250,000 live stories
    .venv/bin/python benchmarks/repair_bench.py --sizes 5000,50000     # quick check
    .venv/bin/python benchmarks/repair_bench.py --modes recluster      # the re-clustering repair only

Vectors are synthetic unit vectors (``--dim``, default 64 to keep 250,000 stories' members and sums in memory on a
shared machine; the tick's cost per changed story grows with dim, the ratio between sizes is what this shows).
One core: BLAS threads are pinned to 1 before numpy loads.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dataclasses  # noqa: E402

from transforms.stories.writer.cluster import StoryClusterer  # noqa: E402
from transforms.stories.writer.recluster import recluster_tick  # noqa: E402
from transforms.stories.writer.repair import repair_tick  # noqa: E402
from transforms.stories.writer.state import Member, Story, recompute_centroid  # noqa: E402

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MIN = 60_000
HOUR = 60 * MIN


def unit_rows(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def member(aid: str, vector: np.ndarray, at: int, rng) -> Member:
    words = [f"w{int(i)}" for i in sorted(set(rng.integers(0, 5000, 8)))]
    return Member(
        article_id=aid,
        at=at,
        source=f"pub{int(rng.integers(0, 300))}",
        vector=vector,
        terms=tuple(words),
        term_tf=tuple(1 for _ in words),
        entities=(f"e{int(rng.integers(0, 2000))}",),
        title=f"t {aid}",
    )


def add_story(w: StoryClusterer, sid: int, m: Member) -> None:
    s = Story(sid, w.language, *recompute_centroid([m], w.config.half_life_ms))
    w.state.stories[sid] = s  # indexed in bulk by build(): one upsert per story would dominate its time
    w.state.add_member(s, m)


def build(live: int, changed: int, dim: int, seed: int, tick: int) -> StoryClusterer:
    """A writer with ``live`` quiet stories and ``changed`` stories active in the last repair interval."""
    rng = np.random.default_rng(seed)
    w = StoryClusterer("en", model="bench", dim=dim)
    quiet = unit_rows(rng.standard_normal((live, dim)))
    for i in range(live):
        add_story(w, 1000 + i, member(f"q{i}", quiet[i], tick - 12 * HOUR - int(rng.integers(0, 6 * HOUR)), rng))
    w.state.index.bulk_upsert(sorted(w.stories), np.stack([w.stories[s].centroid() for s in sorted(w.stories)]))
    near = rng.integers(0, live, changed // 2)
    fresh = unit_rows(rng.standard_normal((changed, dim)))
    fresh[: len(near)] = unit_rows(quiet[near] + 0.3 * rng.standard_normal((len(near), dim)))
    for j in range(changed):
        sid = 1000 + live + j
        add_story(w, sid, member(f"c{j}", fresh[j], tick - int(rng.integers(1, 9 * MIN)), rng))
        w.state.reindex(w.stories[sid])
    w.state.last_minted = 1000 + live + changed
    return w


def time_ticks(live: int, changed: int, dim: int, ticks: int, seed: int, mode: str) -> tuple[float, float, int]:
    """(median CPU s per tick, build wall s, changes of the median tick); each tick on a freshly built writer (a
    tick repairs what it looks at, so a second tick on the same writer would have nothing to do), whose activity
    heap was first cut as the previous tick would have cut it."""
    tick = T0 + 100 * HOUR
    times, changes, built = [], [], 0.0
    for k in range(ticks):
        t0 = time.time()
        w = build(live, changed, dim, seed + k, tick)
        w.set_config(dataclasses.replace(w.config, repair_mode=mode))
        built = time.time() - t0
        # A long-running writer drops the members older than each tick's window from its activity heap a little
        # at every tick; a freshly built one holds them all, so its first tick would pop the whole live set. Drop
        # what the previous tick would have, untimed: the timed tick then pays what a steady writer pays.
        c = w.config
        w.window_stories(tick - c.repair_every_ms - c.repair_window_ms)
        c0 = time.process_time()
        out = (recluster_tick if mode == "recluster" else repair_tick)(w.state, tick)
        times.append(time.process_time() - c0)
        changes.append(len(out))
    return statistics.median(times), built, int(statistics.median(changes))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="25000,250000", help="live-set sizes, comma-separated")
    parser.add_argument("--changed", type=int, default=200, help="stories active in the last interval (200)")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--ticks", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", default="merge,recluster", help="repair modes to time, comma-separated")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    print(f"repair tick, {args.changed} changed stories, dim {args.dim}, median of {args.ticks} ticks (CPU s)")
    for mode in args.modes.split(","):
        rows = []
        for n in sizes:
            cpu, built, changes = time_ticks(n, args.changed, args.dim, args.ticks, args.seed, mode)
            rows.append((n, cpu))
            print(
                f"  {mode:9s} live {n:>8,}: {cpu * 1000:8.1f} ms/tick ({changes} changes; built in {built:.0f} s)",
                flush=True,
            )
        base = rows[0]
        for n, cpu in rows[1:]:
            print(
                f"  {mode:9s} {n / base[0]:.0f}x the live set -> {cpu / base[1]:.2f}x the tick time (O(changed): ~1x)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
