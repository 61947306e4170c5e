"""Calibrate and check the story clusterer on the labelled dev sets (../shared/data/stories/*-dev.jsonl).

Prints, per file, B-cubed and pairwise precision/recall/F1 of the in-process clusterer (transforms/stories/local.py,
the same code the backfill runs) for one configuration, or for a small grid (``--grid``) so that a single
configuration can be chosen for all files at once. Embeddings are computed once per file and model with the real
embedders and cached under ``--cache`` (default $NEWSROOM_STORIES_CACHE, else /tmp/newsroom-stories-cache) so a
grid costs only clustering time.

Without ``--grid`` it ends with a table of the writer's figures (pairwise P, B-cubed F1, story count; link groups
count as one story) next to the offline reference computed in the same run (benchmarks/stories_reference.py: the
learned pair score of transforms/stories/pair_score.json + batch average linkage over the whole file), so a change is
judged on every dev file at once and against what a batch clusterer with the same score reaches.

    .venv/bin/python benchmarks/stories_calibrate.py
    .venv/bin/python benchmarks/stories_calibrate.py --grid '{"join": [0.9, 1.0], "merge": [1.3, 1.4]}'

It never writes into the repository and reads the labels only to score (the clusterer gets stripped records).
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import hashlib
import itertools
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from stories_reference import reference  # noqa: E402

from pipelines.commands import evaluate as ev  # noqa: E402
from transforms.stories import embed as embmod  # noqa: E402
from transforms.stories import features as F  # noqa: E402
from transforms.stories import pairscore  # noqa: E402
from transforms.stories.assignments import assignment_rows  # noqa: E402
from transforms.stories.cluster import ClusterConfig, calibration  # noqa: E402
from transforms.stories.local import cluster_features  # noqa: E402

# The labelled data sits beside the project (../shared/data/stories); from a worktree one level deeper as well.
DEFAULT_DATA = next(
    (str(p / "shared" / "data" / "stories") for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    str(ROOT.parent / "shared" / "data" / "stories"),
)
DEFAULT_CACHE = os.environ.get("NEWSROOM_STORIES_CACHE", "/tmp/newsroom-stories-cache")


def load(path: str, routing: embmod.EmbedderRouting, cache: str, links: bool) -> tuple[list, dict, dict]:
    recs = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    gold = {str(r["id"]): str(r["story_id"]) for r in recs}
    lang = {str(r["id"]): r.get("language") or "und" for r in recs}
    feats = [F.from_labelled(r, t, k) for r, t, k in F.assign_times(recs)]
    specs = {routing.for_language(f.language) for f in feats}
    if links and routing.link_spec:
        specs.add(routing.link_spec)
    vectors = {}
    for spec in sorted(specs):
        key = hashlib.sha256(("\n".join(f.embed_text for f in feats) + spec).encode()).hexdigest()[:16]
        fn = os.path.join(cache, f"{os.path.basename(path)}.{spec.replace(':', '_').replace('/', '_')}.{key}.npz")
        if os.path.exists(fn):
            d = np.load(fn)
            vectors[spec] = (str(d["name"]), d["V"])
        else:
            emb = embmod.get_embedder(spec)
            t0 = time.time()
            V = emb.encode([f.embed_text for f in feats])
            print(f"  embedded {path} with {spec}: {len(feats) / (time.time() - t0):.0f}/s", file=sys.stderr)
            os.makedirs(cache, exist_ok=True)
            np.savez(fn, V=V, name=emb.name)
            vectors[spec] = (emb.name, V)
    for i, f in enumerate(feats):
        name, V = vectors[routing.for_language(f.language)]
        f.vector, f.model = V[i], name
        if links and routing.link_spec:
            f.link_vector = vectors[routing.link_spec][1][i]
    return feats, gold, lang


def evaluate(feats, gold, lang, config: ClusterConfig | None, links: bool) -> dict:
    outputs, link_changes, writers = cluster_features(feats, config=config, links=links, exact_index=True)
    rows, _ = assignment_rows([o["change"] for o in outputs] + link_changes, [f.article_id for f in feats])
    pred = {r["article_id"]: r["group_id"] for r in rows}
    out = ev.score(gold, pred)
    stats = {}
    for w in writers.values():
        for k, v in w.stats.items():
            stats[k] = stats.get(k, 0) + v
    out["stats"] = stats
    return out


def print_side_by_side(rows: list, refs: dict) -> None:
    """The writer's figures next to the offline reference's, per file (link groups count as one story)."""
    print()
    print(
        f"{'file':22s} {'writer P':>8s} {'B3F1':>6s} {'stories':>7s} | {'ref P':>6s} {'B3F1':>6s} {'stories':>7s} "
        f"| {'B3F1 - ref':>10s}  (gold stories)"
    )
    for name, s in rows:
        r = refs[name]
        print(
            f"{name:22s} {s['pair_precision']:8.3f} {s['b3_f1']:6.3f} {s['pred_stories']:7d} | "
            f"{r['pair_precision']:6.3f} {r['b3_f1']:6.3f} {r['pred_stories']:7d} | {s['b3_f1'] - r['b3_f1']:+10.3f}"
            f"  ({s['gold_stories']})"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--files", default="*-dev.jsonl")
    ap.add_argument("--embedder", default="auto")
    ap.add_argument("--cache", default=DEFAULT_CACHE, help="embedding cache (default $NEWSROOM_STORIES_CACHE or /tmp)")
    ap.add_argument("--grid", default=None, help="JSON {field: [values]} over ClusterConfig fields")
    ap.add_argument("--set", action="append", default=[], help="field=value overrides of the default calibration")
    ap.add_argument("--no-links", dest="links", action="store_false")
    ap.add_argument("--pair-score", default=pairscore.MODEL_PATH, help="the learned pair score of the reference")
    ap.add_argument("--no-reference", dest="reference", action="store_false", help="writer figures only")
    args = ap.parse_args(argv)
    routing = embmod.EmbedderRouting(args.embedder)
    files = sorted(glob.glob(os.path.join(args.data, args.files)))
    if not files:
        print(f"no files match {args.files} in {args.data}", file=sys.stderr)
        return 2
    data = {os.path.basename(f): load(f, routing, args.cache, args.links) for f in files}
    overrides = {}
    for s in args.set:
        k, _, v = s.partition("=")
        overrides[k] = type(getattr(ClusterConfig(), k))(v)
    grid = json.loads(args.grid) if args.grid else {}
    keys = list(grid)
    model = pairscore.load(args.pair_score) if args.reference else None
    refs = {name: ev.score(g, reference(f, model)) for name, (f, g, _) in data.items()} if model else {}
    for values in itertools.product(*[grid[k] for k in keys]) if keys else [()]:
        line = []
        for name, (feats, gold, lang) in data.items():
            base = calibration(feats[0].model, feats[0].language)
            cfg = dataclasses.replace(base, **overrides, **dict(zip(keys, values)))
            t0 = time.time()
            s = evaluate(feats, gold, lang, cfg, args.links)
            dt = time.time() - t0
            if keys:
                line.append(
                    f"{name.split('-')[0][:5]} P{s['pair_precision']:.3f} R{s['pair_recall']:.3f} B3F{s['b3_f1']:.3f}"
                )
            else:
                print(
                    f"{name:22s} n={s['articles']:5d} B3 P/R/F {s['b3_precision']:.3f}/{s['b3_recall']:.3f}/"
                    f"{s['b3_f1']:.3f}  pair P/R/F {s['pair_precision']:.3f}/{s['pair_recall']:.3f}/"
                    f"{s['pair_f1']:.3f}  gold {s['gold_stories']} pred {s['pred_stories']} split "
                    f"{s['gold_stories_split']} mixed {s['pred_stories_mixing']}  {dt:.1f}s {s['stats']}"
                )
                line.append((name, s))
        if keys:
            print(dict(zip(keys, values)), " | ".join(line), flush=True)
        elif refs:
            print_side_by_side(line, refs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
