"""What one new merge costs the aliases map after 100 and after 100,000 merges, new path and old, in one command.

The history: merges at ``--per_day`` (300) a day, each absorbing a new story into a survivor merged into in the last
two days (one in ten absorbs an earlier survivor: chains), every survivor's EXPIRE 48 h after its last merge (as
the writer emits it). After N merges, one more merge is timed (CPU seconds, the median of ``--repeat`` merges):

- new: the tracker's firing (transforms/editions/publish/aliases.py), as two figures: the index update and prune
  (O(the merge's own aliases)) and the map document with its canonical bytes (what the publisher stores and the
  origin loads: O(the map held), which with aliases kept 48 h past their survivor's EXPIRE is a few days of merges
  whatever N is, so flat once the history is longer than that); each the median of ``--repeat`` rounds of 100 new merges timed together;
- new, never pruned: the index update with all N aliases live (the worst case: every survivor still live);
- old: the firing of the tracker on main (55daf5d): resolve_aliases over every merge since the job started, then
  the document. Measured up to ``--old_max`` merges (quadratic: 100,000 would take hours); beyond, the quadratic fit
  through the measured points is printed, marked "fit".

    .venv/bin/python benchmarks/aliases_bench.py
    .venv/bin/python benchmarks/aliases_bench.py --sizes 100 10000 100000 --old_max 4000

Prints, never asserts; read the ratios (one command, one machine).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time

from transforms.common import DAY_MS, EXPIRE, MERGE, MINUTE_MS
from transforms.editions.publish.aliases import AliasIndex, aliases_document, aliases_item, resolve_aliases
from transforms.editions.vocabulary import documents as docs

T0 = 1_700_000_000_000 // MINUTE_MS * MINUTE_MS
BATCH = 100


def history(n: int, per_day: int, seed: int = 1) -> list[dict]:
    """``n`` merges and their survivors' EXPIRE events, in time order."""
    rng = random.Random(seed)
    gap = DAY_MS // per_day
    events, last_merge, recent, next_id = [], {}, [], 10_000_000
    for i in range(n):
        at = T0 + i * gap
        recent = [s for s in recent if at - last_merge.get(s, at) < 2 * DAY_MS] or [next_id]
        survivor = rng.choice(recent)
        others = [s for s in recent if s != survivor]
        if rng.random() < 0.1 and others:
            absorbed = rng.choice(others)  # an earlier survivor, with its group: a chain
            recent.remove(absorbed)
        else:
            next_id += 1
            absorbed = next_id
        next_id += 1
        if survivor not in recent:
            recent.append(survivor)
        if rng.random() < 0.3:  # a new survivor joins the recent ones
            recent.append(next_id)
        last_merge[survivor] = at
        events.append({"id": f"m{i}", "kind": MERGE, "story_id": survivor, "other_story_id": absorbed, "at": at})
    for s, at in last_merge.items():
        events.append({"id": f"x{s}", "kind": EXPIRE, "story_id": s, "other_story_id": 0, "at": at + 2 * DAY_MS})
    return sorted(events, key=lambda e: e["at"])


def build(events: list[dict], until: int, prune: bool) -> AliasIndex:
    index = AliasIndex()
    for e in events:
        if e["at"] >= until:
            break
        if e["kind"] == MERGE or prune:
            index.apply([e])
            if prune:
                index.prune(e["at"])
    return index


def _new_merge(index: AliasIndex, k: int, now: int) -> dict:
    survivor = next(iter(index.absorbed_by), 1)
    return {"id": f"new{k}", "kind": MERGE, "story_id": survivor, "other_story_id": 9_000_000_000 + k, "at": now}


def time_new(index: AliasIndex, now: int, repeat: int) -> tuple[float, float]:
    """(index update + prune, map document + its bytes) of one new merge: CPU s, the median over ``repeat`` rounds
    of BATCH merges each timed together (a single merge is a few microseconds: below the timer's noise)."""
    gc.collect()
    update, document = [], []
    for r in range(repeat):
        merges = [_new_merge(index, r * BATCH + k, now) for k in range(BATCH)]
        t = time.process_time()
        for e in merges:
            index.apply([e])
            index.prune(now)
        t2 = time.process_time()
        for _ in range(BATCH // 10):
            docs.canonical_bytes(aliases_item(index.alias, now)["doc"])
        update.append((t2 - t) / BATCH)
        document.append((time.process_time() - t2) / (BATCH // 10))
    return statistics.median(update), statistics.median(document)


def time_old(merges: list[dict], now: int) -> float:
    t = time.process_time()
    docs.canonical_bytes(aliases_document(resolve_aliases(merges), now // MINUTE_MS))
    return time.process_time() - t


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 3_000, 100_000])
    ap.add_argument("--per_day", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--old_max", type=int, default=3_000)
    args = ap.parse_args(argv)
    top = max(args.sizes)
    events = history(top + 1, args.per_day)
    merges = [e for e in events if e["kind"] == MERGE]
    old_points = {}
    for n in sorted({100, 1_000, args.old_max}):
        old_points[n] = time_old(merges[:n], merges[n]["at"])
    # the old path is quadratic in merges: fit a*n^2 through the largest measured point
    a = old_points[args.old_max] / args.old_max**2
    rows = []
    for n in args.sizes:
        now = merges[n]["at"]
        bounded = build(events, now, prune=True)
        size = len(bounded)
        update, document = time_new(bounded, now, args.repeat)
        unpruned = build(events, now, prune=False)
        n_all = len(unpruned)  # before time_new adds its own merges (repeat x BATCH) to it
        update_all = time_new(unpruned, now, args.repeat)[0]
        old = old_points.get(n)
        old = (old, "") if old is not None else (a * n * n, " (fit)")
        rows.append((n, size, update, document, n_all, update_all) + old)
    print(f"aliases: one new merge after N merges at {args.per_day}/day (CPU s, median of {args.repeat} x {BATCH})")
    head = ("merges N", "map held", "new update", "new document", "unpruned map", "its update", "old firing")
    print(f"{head[0]:>10} {head[1]:>9} {head[2]:>11} {head[3]:>13} {head[4]:>13} {head[5]:>11} {head[6]:>13}")
    for n, size, up, doc, n_all, up_all, old, fit in rows:
        print(f"{n:>10,} {size:>9,} {up:>11.7f} {doc:>13.6f} {n_all:>13,} {up_all:>11.7f} {old:>13.4f}{fit}")
    lo, hi = rows[0], rows[-1]
    print(
        f"N={hi[0]:,} / N={lo[0]:,}: new update {hi[2] / lo[2]:.2f}x (unpruned {hi[5] / lo[5]:.2f}x), new document"
        f" {hi[3] / lo[3]:.2f}x (map held {hi[1] / lo[1]:.1f}x: O(live window), flat once history > its 4 days),"
        f" old firing {hi[6] / lo[6]:,.0f}x; old / new firing at N={hi[0]:,}: {hi[6] / (hi[2] + hi[3]):,.0f}x"
    )
    print("old measured: " + ", ".join(f"{n:,} merges {s:.4f} s" for n, s in sorted(old_points.items())))


if __name__ == "__main__":
    main()
