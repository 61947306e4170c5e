"""Benchmark: a storyline tick costs O(changed stories), not O(stories held).

Reads nothing; prints figures (never asserts times). For each index size N (stories already held by the storyline
writer, live or archived within the decay horizon, in a synthetic world of subjects that share entity keys drawn
from a Zipf vocabulary), it times ticks in which K stories change (K/2 born, K/2 grown by an article), CPU seconds
per tick, median of several ticks, all sizes in one process. If a tick's cost depended on N the per-tick time
would grow with N; it stays flat because candidates come from entity postings bounded per key (POSTING_CAP) and a
decision scores at most CANDIDATES stories.

    .venv/bin/python benchmarks/storyline_bench.py                      # N = 10,000 / 50,000 / 150,000, K = 100
    .venv/bin/python benchmarks/storyline_bench.py --sizes 1000,10000 --changed 50
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from transforms.common import HOUR_MS
from transforms.stories.storylines import storyline as sl

T0 = 1_767_225_600_000
DIM = 128
# A larger index holds more subjects, not longer ones: a subject's storyline (and the walk a split check makes over
# it) has the same size at every N, as in a news stream where more stories means more subjects.
STORIES_PER_SUBJECT = 10


class World:
    def __init__(self, seed: int = 0, subjects: int = 2_000, vocab: int = 50_000):
        self.rng = np.random.default_rng(seed)
        self.subjects = self.rng.normal(size=(subjects, DIM)).astype(np.float32)
        self.vocab = vocab
        self.seq = 0
        self.next_id = 1

    def _entities(self, subject: int) -> list[str]:
        own = [f"s{subject}-{j}" for j in range(3)]
        common = [f"k{int(x)}" for x in self.rng.zipf(1.3, size=4) if x < self.vocab]
        return own + common

    def output(self, kind: str, sid: int, subject: int, at: int) -> dict:
        self.seq += 1
        v = self.subjects[subject] + 0.8 * self.rng.normal(size=DIM).astype(np.float32)
        ch = {"kind": kind, "story_id": sid, "other_story_id": None, "language": "en", "seq": self.seq, "at": at}
        ch["article_ids"], ch["centroid"] = [], v.tolist()
        aid = f"a{self.seq}"
        return sl.compact({"change": ch, "members": {aid: {"entities": self._entities(subject), "at": at}}})

    def born(self, at: int) -> tuple[int, dict]:
        sid = self.next_id
        self.next_id += 1
        return sid, self.output("NEW_STORY", sid, int(self.rng.integers(len(self.subjects))), at)


def fill(n: int, seed: int) -> tuple[sl.StorylineWriter, World, list[int], int]:
    """A writer holding ``n`` stories spread over three weeks (one tick per hour of stories)."""
    world, w = World(seed, subjects=max(200, n // STORIES_PER_SUBJECT)), sl.StorylineWriter()
    per_hour = max(1, n // (21 * 24))
    at, ids = T0, []
    while len(ids) < n:
        for _ in range(min(per_hour, n - len(ids))):
            sid, out = world.born(at)
            ids.append(sid)
            w.observe(out)
        w.tick(sl.tick_of(at))
        at += HOUR_MS
    return w, world, ids, at


def timed_ticks(w, world, ids, at, changed: int, ticks: int) -> tuple[float, int]:
    times, decided = [], 0
    rng = np.random.default_rng(1)
    for _ in range(ticks):
        outs = [world.born(at)[1] for _ in range(changed // 2)]
        for sid in rng.choice(ids[-5_000:], size=changed - changed // 2, replace=False).tolist():
            outs.append(world.output("ASSIGN", int(sid), int(rng.integers(len(world.subjects))), at))
        t = time.process_time()
        for o in outs:
            w.observe(o)
        decided += len(w.tick(sl.tick_of(at)))
        times.append(time.process_time() - t)
        at += sl.EVERY_MS
    return statistics.median(times), decided


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,50000,150000")
    ap.add_argument("--changed", type=int, default=100)
    ap.add_argument("--ticks", type=int, default=9)
    a = ap.parse_args()
    base = None
    for n in [int(x) for x in a.sizes.split(",")]:
        w, world, ids, at = fill(n, seed=n)
        held = len(w.stories)
        per_tick, decided = timed_ticks(w, world, ids, at, a.changed, a.ticks)
        base = base or per_tick
        print(
            f"storyline tick: {held:>7,} stories held, {a.changed} changed: {per_tick * 1000:7.1f} ms CPU per tick "
            f"({per_tick / a.changed * 1e6:6.0f} us per changed story, {per_tick / base:4.2f}x the smallest index; "
            f"{decided} changes over {a.ticks} ticks)"
        )


if __name__ == "__main__":
    main()
