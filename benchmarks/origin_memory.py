"""The origin's memory over a simulated week of news, story retirement on vs off.

Drives the real :class:`serving.state.watcher.PointerWatcher` (and so the real catalog, preparation and release logic)
against in-memory fakes of the stores, on a simulated clock, one poll per simulated minute:

- a dict-backed PointerStore (``versions``, ``compare_and_set``, ``retire`` with a tombstone; no history kept);
- a SnapshotStore that *generates* each object's bytes from its path (samples.story_coverage / edition_page /
  candidate_pool from devtools.samples, deterministic per id and version), so the process's memory is the origin's,
  not a store's. The embedded (SQLite) stores are not used: 10,080 polls listing up to ~14,000 pointers and writing
  ~10,000 objects a day take far longer than this benchmark's budget, and measure SQLite, not the origin.

News model: ``--stories-per-day`` new stories arrive evenly; each is live for ``--live-h`` hours, during which its
coverage is republished ``--updates`` times (more articles each time; ``updated_at`` = the publish time); live
stories are what the pages (``--sections`` sections, each the 20 newest live stories of that section, republished
whenever that list changes, as the publisher's "unchanged" rule does) and the pool (300 newest live ones, checked
hourly) reference. After its live window a story is never updated or referenced again.

Modes, each run in its own child process (so RSS is per mode), concurrently (default ``--modes off,on``):

- ``off``: today's behaviour: no pointer is ever retired and the origin holds every story (retention infinite);
- ``origin``: the producer never retires, the origin releases stories unreferenced and not updated for
  ``--retain-h`` hours (NEWSROOM_STORY_RETAIN_S) and would serve them on demand;
- ``on``: as ``origin``, and the producer retires story pointers (stores.retention.StoryRetention, keep
  ``--retain-h``) every ``--retire-every`` cycles, so the listing stays flat too.

Printed per simulated day and mode: stories held in memory, story pointers listed per poll, catalog bytes (a deep
``sys.getsizeof`` walk of the catalog: pages, pools, stories, loaded map), RSS (after glibc ``malloc_trim``), and the
wall time so far; then the off/on ratios and the spread of the on-curve from day 3 (flat: within a few per cent).
``--tracemalloc`` also reports tracemalloc's traced current memory (slower, ~2x).

Usage: python benchmarks/origin_memory.py [--days 7] [--cycles-per-day 720] [--stories-per-day 2000] [--live-h 8]
       [--updates 3] [--sections 4] [--retain-h 48] [--retire-every 15] [--modes off,on] [--tracemalloc]
Default run (7 days, a poll every 2 simulated minutes, off and on): about 2-3 minutes on this 2-core machine when
other work shares it (~40 s of CPU per mode). The full run, a poll every simulated minute and all
three modes: ``--cycles-per-day 1440 --modes off,origin,on`` (about 6.5 minutes wall on a loaded 2-core machine).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import gc
import json
import os
import random
import subprocess
import sys
import time
from collections import defaultdict, deque
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson  # noqa: E402

from devtools import samples  # noqa: E402
from serving.state.catalog import CatalogHolder  # noqa: E402
from serving.state.watcher import PointerWatcher, WatchSettings  # noqa: E402
from stores.base import NotFound, PointerStore  # noqa: E402
from stores.retention import StoryRetention, retire  # noqa: E402

EDITION = "us-en"
T0 = datetime(2026, 11, 23, tzinfo=UTC)  # a Monday
POOL_SIZE, PAGE_SIZE = 300, 20


class DictPointers(PointerStore):
    def __init__(self):
        self.live: dict[str, int] = {}
        self.tombstones: dict[str, int] = {}

    def get(self, name):
        return self.live.get(name)

    def compare_and_set(self, name, expected, new, reason=""):
        if self.live.get(name) != expected:
            return False
        if expected is None and new <= self.tombstones.get(name, 0):
            return False
        self.live[name] = new
        return True

    def retire(self, name, expected):
        if self.live.get(name) != expected:
            return False
        del self.live[name]
        self.tombstones[name] = expected
        return True

    def revive(self, name):
        if name in self.live or name not in self.tombstones:
            return None
        self.live[name] = self.tombstones[name]
        return self.live[name]

    def history(self, name):
        return []

    def names(self, prefix=""):
        return sorted(n for n in self.live if n.startswith(prefix))

    def versions(self, prefix=""):
        return {n: v for n, v in self.live.items() if n.startswith(prefix)} if prefix else dict(self.live)


class World:
    """The simulated news and a snapshot store that renders each object from its path."""

    def __init__(self, args):
        self.args = args
        self.born: list[float] = []  # story index -> birth time (s since T0)
        self.page_ids: dict[str, list[str]] = {}  # page/pool version key -> story ids (set when moved)

    def story_time(self, i: int, version: int) -> float:
        step = self.args.live_h * 3600 / self.args.updates
        return self.born[i] + (version - 1) * step

    # -- SnapshotStore.get -------------------------------------------------------------------------------------
    def get(self, path: str) -> bytes:
        parts = path.split("/")
        version = int(parts[-1][1:-5])
        if parts[0] == "stories":
            doc = self.coverage(parts[1], version)
        elif parts[0] == "pages":
            doc = self.page(parts[2], version)
        elif parts[0] == "pools":
            doc = self.pool(version)
        else:
            raise NotFound(path)
        return orjson.dumps(doc)

    def coverage(self, sid: str, version: int) -> dict:
        """samples.story_coverage with 3 + 3 * version articles stamped from card templates (samples.card is too
        slow to call ~50,000 times a simulated day)."""
        i = int(sid) - int(samples.story_id(0))
        at = T0 + timedelta(seconds=self.story_time(i, version))
        arts, minute = [], int(at.timestamp()) // 60
        for k in range(3 + 3 * version):
            aid = f"c{sid}-{k:04d}"
            tpl = CARDS[(i + k) % len(CARDS)]
            published = iso_minute(minute - 7 * k)
            arts.append({**tpl, "article_id": aid, "url": f"{tpl['url']}/{aid}", "published_at": published})
        doc = samples.story_coverage(sid, version, arts, title=f"Story {i}")
        doc["updated_at"] = samples.iso(at)
        return doc

    def page(self, section: str, version: int) -> dict:
        ids = self.page_ids[f"{section}/{version}"]
        doc = dict(PAGE, section=section, version=version)
        doc["stories"] = [dict(s, story_id=sid, section=section) for s, sid in zip(PAGE["stories"], ids)]
        return doc

    def pool(self, version: int) -> dict:
        ids = self.page_ids[f"pool/{version}"]
        doc = dict(POOL, version=version)
        doc["stories"] = [dict(s, story_id=sid) for s, sid in zip(POOL["stories"], ids)]
        return doc


@functools.lru_cache(maxsize=1 << 16)
def iso_minute(minute: int) -> str:
    return samples.iso(datetime.fromtimestamp(minute * 60, UTC))


CARDS = [samples.card(random.Random(k), f"t{k}", f"pub-{k % 40}", T0, words=8) for k in range(64)]
PAGE = samples.edition_page(EDITION, "top", 1, n_stories=PAGE_SIZE, supporting=1)
POOL = samples.candidate_pool(EDITION, 1, n=POOL_SIZE)


def deep_size(root) -> int:
    """Bytes reachable from ``root`` (sys.getsizeof over gc referents; each object once)."""
    seen, stack, total = set(), [root], 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def rss_mb() -> float:
    """Resident set size after handing freed heap back to the OS (glibc malloc_trim), so it tracks what is live."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Producer:
    """The publisher's side of the simulation: new stories, coverage moves, pages, pool, retirement."""

    def __init__(self, mode: str, args, world: World, pointers: DictPointers):
        self.mode, self.args, self.world, self.p = mode, args, world, pointers
        self.step_s = 86_400 / args.cycles_per_day
        self.live_s = args.live_h * 3600
        self.due: dict[int, list[tuple[int, int]]] = defaultdict(list)  # cycle -> [(story index, version)]
        self.live: deque[int] = deque()  # story indexes, oldest first
        self.by_section = [deque() for _ in range(args.sections)]
        self.shown: dict[str, tuple] = {}  # pointer -> ids of its live version
        self.tracker = StoryRetention(keep_s=args.retain_h * 3600)
        self.retired = 0

    def cycle(self, cycle: int, t: float) -> None:
        args, world = self.args, self.world
        while len(world.born) < int((cycle + 1) * args.stories_per_day / args.cycles_per_day):
            i = len(world.born)
            world.born.append(t)
            self.live.append(i)
            self.by_section[i % args.sections].append(i)
            for k in range(args.updates):  # coverage moves: at birth, then every live_h / updates
                self.due[cycle + round(k * self.live_s / args.updates / self.step_s)].append((i, k + 1))
        for i, version in self.due.pop(cycle, ()):
            name = f"story/{sid(i)}"
            if self.p.compare_and_set(name, self.p.get(name), version):
                self.tracker.moved(name, version, t)
        for q in (self.live, *self.by_section):
            while q and world.born[q[0]] + self.live_s <= t:
                q.popleft()
        for k, q in enumerate(self.by_section):
            self.move(f"{EDITION}/s{k}", f"s{k}", [sid(i) for i in list(q)[-PAGE_SIZE:][::-1]])
        if cycle % max(1, args.cycles_per_day // 24) == 0:  # hourly
            self.move(f"pool/{EDITION}", "pool", [sid(i) for i in list(self.live)[-POOL_SIZE:][::-1]])
        if self.mode == "on" and cycle % args.retire_every == 0:
            live = [sid(i) for i in self.live]
            self.tracker.seen(live, t)
            self.retired += len(retire(self.p, self.tracker.expired(self.p.versions("story/"), live, t)))

    def move(self, pointer: str, key: str, ids: list[str]) -> None:
        """Publish a page or pool when what it shows changed (the publisher's "unchanged" rule)."""
        if self.shown.get(pointer) == tuple(ids):
            return
        self.shown[pointer] = tuple(ids)
        current = self.p.get(pointer) or 0
        self.world.page_ids[f"{key}/{current + 1}"] = ids
        self.world.page_ids.pop(f"{key}/{current - 1}", None)
        self.p.compare_and_set(pointer, current or None, current + 1)


def sid(i: int) -> str:
    return str(SID0 + i)


SID0 = int(samples.story_id(0))


def run_mode(mode: str, args) -> None:
    """One child: simulate and print one JSON line per simulated day."""
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start()
    world, pointers = World(args), DictPointers()
    now = [0.0]
    watcher = PointerWatcher(
        CatalogHolder(),
        pointers,
        world,
        WatchSettings(validate=False, story_retain_s=float("inf") if mode == "off" else args.retain_h * 3600),
        clock=lambda: now[0],
        wall_clock=lambda: T0.timestamp() + now[0],
    )
    producer = Producer(mode, args, world, pointers)
    started = time.perf_counter()
    for cycle in range(args.days * args.cycles_per_day):
        now[0] = cycle * producer.step_s
        producer.cycle(cycle, now[0])
        watcher.poll_once()
        if (cycle + 1) % args.cycles_per_day == 0:
            cat = watcher.holder.current
            day = {
                "mode": mode,
                "day": (cycle + 1) // args.cycles_per_day,
                "stories_held": len(cat.stories),
                "story_pointers_listed": sum(1 for n in pointers.live if n.startswith("story/")),
                "stories_published": len(world.born),
                "retired": producer.retired,
                "catalog_mb": round(deep_size(cat) / 2**20, 2),
                "rss_mb": round(rss_mb(), 1),
                "wall_s": round(time.perf_counter() - started, 1),
            }
            if args.tracemalloc:
                day["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
            print(json.dumps(day), flush=True)


def report(rows: list[dict], modes: list[str]) -> None:
    by = {(r["mode"], r["day"]): r for r in rows}
    days = sorted({r["day"] for r in rows})
    cols = ("stories_held", "story_pointers_listed", "catalog_mb", "rss_mb", "wall_s")
    print(f"{'day':>3}  " + "  ".join(f"{m + ':' + c:>26}" for m in modes for c in cols[:4]))
    for d in days:
        cells = [f"{by[(m, d)][c]:>26}" for m in modes for c in cols[:4] if (m, d) in by]
        print(f"{d:>3}  " + "  ".join(cells))
    last = days[-1]
    for m in modes:
        r = by.get((m, last))
        if r:
            print(
                f"{m}: {r['stories_published']} stories published, {r['retired']} pointers retired, "
                f"{r['wall_s']} s of simulation"
            )
    for m in ("origin", "on"):
        if ("off", last) in by and (m, last) in by:
            off, x = by[("off", last)], by[(m, last)]
            print(
                f"day {last} off/{m}: stories held x{off['stories_held'] / max(1, x['stories_held']):.2f}, "
                f"catalog bytes x{off['catalog_mb'] / max(0.01, x['catalog_mb']):.2f}, "
                f"listing x{off['story_pointers_listed'] / max(1, x['story_pointers_listed']):.2f}, "
                f"RSS x{off['rss_mb'] / max(0.1, x['rss_mb']):.2f}"
            )
    for m in ("origin", "on"):
        flat = [by[(m, d)] for d in days if d >= 3 and (m, d) in by]
        if len(flat) >= 2:
            held = [r["stories_held"] for r in flat]
            mb = [r["catalog_mb"] for r in flat]
            print(
                f"{m} curve from day 3: stories held {min(held)}..{max(held)} "
                f"({(max(held) - min(held)) / max(held) * 100:.1f} % spread), "
                f"catalog {min(mb)}..{max(mb)} MB ({(max(mb) - min(mb)) / max(mb) * 100:.1f} % spread)"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--cycles-per-day", type=int, default=720, help="polls (and edition cycles) per simulated day")
    ap.add_argument("--stories-per-day", type=int, default=2000)
    ap.add_argument("--live-h", type=float, default=8.0, help="how long a story is live (referenced, updated)")
    ap.add_argument("--updates", type=int, default=3, help="coverage versions per story during its live window")
    ap.add_argument("--sections", type=int, default=4)
    ap.add_argument("--retain-h", type=float, default=48.0, help="NEWSROOM_STORY_RETAIN_S and the retirement keep")
    ap.add_argument("--retire-every", type=int, default=15, help="cycles between the producer's retirement passes")
    ap.add_argument("--modes", default="off,on", help="comma-separated: off, origin, on")
    ap.add_argument("--tracemalloc", action="store_true", help="also report tracemalloc's traced memory (slower)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run_mode(args.child, args)
        return
    modes = [m for m in args.modes.split(",") if m]
    children = {
        m: subprocess.Popen([sys.executable, __file__, *sys.argv[1:], "--child", m], stdout=subprocess.PIPE, text=True)
        for m in modes
    }
    rows = []
    for m, proc in children.items():
        out, _ = proc.communicate()
        if proc.returncode:
            sys.exit(f"mode {m} failed with exit code {proc.returncode}")
        rows += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    print(
        f"origin_memory: {args.days} days x {args.cycles_per_day} polls, {args.stories_per_day} stories/day, "
        f"live {args.live_h} h, retain {args.retain_h} h (in-memory fake stores, real PointerWatcher)"
    )
    report(rows, modes)


if __name__ == "__main__":
    main()
