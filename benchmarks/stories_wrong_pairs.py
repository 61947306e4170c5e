"""Where a dev file's wrong pairs come from: which of the writer's decisions put two articles of different gold
events into one story (a join on arrival, a repair merge, a re-clustering move or merge, a cross-language link).

Runs the writer (leave-one-file-out pair score, as benchmarks/stories_calibrate.py) on one dev file, replays its
change log in order and, for every pair of articles that ends in one story, remembers the decision that last brought
them together; prints wrong and right pairs per kind of decision and the worst stories.

    NEWSROOM_STORIES_CACHE=/work/cache/stories .venv/bin/python benchmarks/stories_wrong_pairs.py gva-dev.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import stories_calibrate as cal  # noqa: E402

from transforms.stories.embed import embed as embmod  # noqa: E402
from transforms.stories.vocabulary import numbers  # noqa: E402
from transforms.stories.vocabulary import places as placemod  # noqa: E402
from transforms.stories.writer import cluster as clustermod  # noqa: E402
from transforms.stories.writer import recluster as reclustermod  # noqa: E402
from transforms.stories.writer.cluster import StoryClusterer, calibration  # noqa: E402

TAG = "_diag_origin"


def tagged(fn, tag):
    def run(*a, **k):
        out = fn(*a, **k)
        for o in out:
            if not hasattr(o, TAG):
                setattr(o, TAG, tag)
        return out

    return run


def origins(feats, config) -> tuple[dict, dict]:
    """(article -> final story, pair (a, b) -> decision kind that last put them together) of one language's run."""
    reclustermod.repair_tick = tagged(reclustermod.repair_tick, "repair merge")
    clustermod.repair_tick = tagged(clustermod.repair_tick, "repair merge")
    clustermod.recluster_tick = tagged(reclustermod.recluster_tick, "recluster")
    w = StoryClusterer(feats[0].language, model=feats[0].model, config=config, exact_index=True)
    outs = w.run(feats)
    held: dict[int, set] = defaultdict(set)
    where: dict[str, int] = {}
    how: dict[tuple, str] = {}

    def together(group_a, group_b, kind):
        for a in group_a:
            for b in group_b:
                how[(min(a, b), max(a, b))] = kind

    for o in outs:
        ch = o.change
        kind, sid = ch["kind"], int(ch["story_id"])
        origin = getattr(o, TAG, "join")
        if kind in ("NEW_STORY", "ASSIGN"):
            a = ch["article_id"]
            dec = "copy" if ch.get("is_copy") else ("join" if held[sid] else "new")
            together([a], held[sid], dec)
            held[sid].add(a)
            where[a] = sid
        elif kind == "MERGE":
            gone = int(ch["other_story_id"])
            together(held[gone], held[sid], origin)
            for a in held.pop(gone, set()):
                held[sid].add(a)
                where[a] = sid
        elif kind == "SPLIT":
            dst = int(ch["other_story_id"])
            moved = set(ch["article_ids"])
            for a in moved:
                held[where[a]].discard(a)
            together(moved, held[dst], origin + " move")
            for a in moved:
                held[dst].add(a)
                where[a] = dst
    return where, how


def print_evidence(final: dict, byid: dict, gold: dict) -> None:
    """The pairs that end in one story, by (same event, places relation, headline ages relation)."""
    ev: Counter = Counter()
    stories = defaultdict(list)
    for a, s in final.items():
        stories[s].append(a)
    for ms in stories.values():
        for i, a in enumerate(sorted(ms)):
            for b in sorted(ms)[i + 1 :]:
                pr = placemod.relation(byid[a].places, byid[b].places)
                ar = numbers.relation(numbers.ages(byid[a].title), numbers.ages(byid[b].title))
                ev[(gold[a] == gold[b], pr, ar)] += 1
    print("pairs in one story by (same event, places relation, ages relation):")
    for k in sorted(ev):
        print(f"   {k}: {ev[k]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--data", default=cal.DEFAULT_DATA)
    ap.add_argument("--cache", default=cal.DEFAULT_CACHE)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--max-articles", type=int, default=0)
    ap.add_argument("--show", type=int, default=8)
    args = ap.parse_args(argv)
    routing = embmod.EmbedderRouting("auto")
    files = sorted(glob.glob(os.path.join(args.data, "*-dev.jsonl")))
    data = {os.path.basename(f): cal.load(f, routing, args.cache, False) for f in files}
    if args.max_articles:
        data = {n: cal.cut(f, n, data[n], args.max_articles) for n, f in zip(sorted(data), files)}
    _, paths = cal.fold_models(data, args.cache, cal.pairscore.MODEL_PATH)
    args.grid = None
    point = cal.grid_points(args)[0]
    feats, gold, _ = data[args.file]
    titles = {f.article_id: (f.title or "")[:60] for f in feats}
    byid = {f.article_id: f for f in feats}
    cfg = dataclasses.replace(calibration(feats[0].model, feats[0].language), **point, pair_score=paths[args.file])
    by_lang = defaultdict(list)
    for f in feats:
        by_lang[f.language].append(f)
    wrong, right = Counter(), Counter()
    final: dict[str, tuple] = {}
    hows: dict = {}
    for lang, fs in sorted(by_lang.items()):
        where, how = origins(fs, cfg)
        hows.update(how)
        final.update({a: (lang, s) for a, s in where.items()})
        members = defaultdict(list)
        for a, s in where.items():
            members[s].append(a)
        for ms in members.values():
            for i, a in enumerate(sorted(ms)):
                for b in sorted(ms)[i + 1 :]:
                    (right if gold[a] == gold[b] else wrong)[how.get((a, b), "?")] += 1
    print_evidence(final, byid, gold)
    tp = sum(right.values())
    print(f"{args.file}: pairwise P {tp / max(tp + sum(wrong.values()), 1):.3f} (same-language pairs)")
    print(f"{'decision':22s} {'wrong':>7s} {'right':>7s}")
    for k in sorted(set(wrong) | set(right), key=lambda k: -wrong[k]):
        print(f"{k:22s} {wrong[k]:7d} {right[k]:7d}")
    stories = defaultdict(list)
    for a, s in final.items():
        stories[s].append(a)
    worst = sorted(stories.values(), key=lambda ms: -len({gold[a] for a in ms}) * len(ms))[: args.show]
    for ms in worst:
        events = Counter(gold[a] for a in ms)
        print(f"\nstory of {len(ms)} articles, {len(events)} events {events.most_common(6)}")
        kinds = Counter(hows.get((min(a, b), max(a, b)), "?") for a in ms for b in ms if a < b and gold[a] != gold[b])
        print(f"   wrong pairs by decision: {dict(kinds)}")
        for a in sorted(ms, key=lambda a: (byid[a].first_seen_at, a))[:14]:
            f = byid[a]
            pl = ",".join(c.split(">")[0] for c in f.places)
            print(f"   {f.first_seen_at // 3_600_000 % 10000:5d}h {gold[a]:11s} {titles[a]:60s} {pl[:40]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
