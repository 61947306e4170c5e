"""Calibrate and check the story clusterer on the labelled dev sets (../shared/data/stories/*-dev.jsonl).

Prints, per file, B-cubed and pairwise precision/recall/F1 of the in-process clusterer (transforms/stories/backfill/local.py,
the same code the backfill runs) for one configuration, or for a small grid (``--grid``) so that a single
configuration can be chosen for all files at once. Embeddings are computed once per file and model with the real
embedders and cached under ``--cache`` (default $NEWSROOM_STORIES_CACHE, else /tmp/newsroom-stories-cache) so a
grid costs only clustering time.

Without ``--grid`` it ends with a table of the writer's figures (pairwise P, B-cubed F1, story count; link groups
count as one story) next to the offline reference computed in the same run (benchmarks/stories_reference.py: the
learned pair score of transforms/stories/writer/pair_score.json + batch average linkage over the whole file), so a change is
judged on every dev file at once and against what a batch clusterer with the same score reaches.

    .venv/bin/python benchmarks/stories_calibrate.py
    .venv/bin/python benchmarks/stories_calibrate.py --grid '{"join": [0.9, 1.0], "merge": [1.3, 1.4]}'

It never writes into the repository and reads the labels only to score (the clusterer gets stripped records).
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
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
import stories_lofo as lofo  # noqa: E402
from stories_reference import reference  # noqa: E402
from stories_reference import text_kind as ref_kind  # noqa: E402

from pipelines.commands import evaluate_scores as ev  # noqa: E402
from transforms.stories.backfill.assignments import assignment_rows  # noqa: E402
from transforms.stories.backfill.local import cluster_features  # noqa: E402
from transforms.stories.embed import embed as embmod  # noqa: E402
from transforms.stories.vocabulary import features as F  # noqa: E402
from transforms.stories.writer import pairscore  # noqa: E402
from transforms.stories.writer.cluster import ClusterConfig, calibration  # noqa: E402

# The labelled data sits beside the project (../shared/data/stories); from a worktree one level deeper as well.
DEFAULT_DATA = next(
    (str(p / "shared" / "data" / "stories") for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()),
    str(ROOT.parent / "shared" / "data" / "stories"),
)
DEFAULT_CACHE = os.environ.get("NEWSROOM_STORIES_CACHE", "/tmp/newsroom-stories-cache")


def load(path: str, routing: embmod.EmbedderRouting, cache: str | None, links: bool) -> tuple[list, dict, dict]:
    recs = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    return load_records(os.path.basename(path), recs, routing, cache, links)


def load_records(name: str, recs: list, routing, cache: str | None, links: bool) -> tuple[list, dict, dict]:
    """(features with vectors, gold, language) of labelled records; vectors cached under ``cache`` (None: never)."""
    gold = {str(r["id"]): str(r["story_id"]) for r in recs}
    lang = {str(r["id"]): r.get("language") or "und" for r in recs}
    feats = [F.from_labelled(r, t, k) for r, t, k in F.assign_times(recs)]
    specs = {routing.for_language(f.language) for f in feats}
    if links and routing.link_spec:
        specs.add(routing.link_spec)
    vectors = {}
    for spec in sorted(specs):
        key = hashlib.sha256(("\n".join(f.embed_text for f in feats) + spec).encode()).hexdigest()[:16]
        fn = os.path.join(cache or "", f"{name}.{spec.replace(':', '_').replace('/', '_')}.{key}.npz")
        if cache and os.path.exists(fn):
            d = np.load(fn)
            vectors[spec] = (str(d["name"]), d["V"])
            continue
        emb = embmod.get_embedder(spec)
        t0 = time.time()
        V = emb.encode([f.embed_text for f in feats])
        print(f"  embedded {name} with {spec}: {len(feats) / max(time.time() - t0, 1e-9):.0f}/s", file=sys.stderr)
        if cache:
            os.makedirs(cache, exist_ok=True)
            np.savez(fn, V=V, name=emb.name)
        vectors[spec] = (emb.name, V)
    for i, f in enumerate(feats):
        name_, V = vectors[routing.for_language(f.language)]
        f.vector, f.model = V[i], name_
        if links and routing.link_spec:
            f.link_vector = vectors[routing.link_spec][1][i]
    return feats, gold, lang


def cut(path: str, name: str, loaded: tuple, max_articles: int) -> tuple:
    """``loaded`` (features, gold, language) of one file restricted to :func:`stories_lofo.subset` of its records."""
    recs = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    keep = {str(r["id"]) for r in lofo.subset(recs, max_articles)}
    feats, gold, lang = loaded
    return [f for f in feats if f.article_id in keep], {a: gold[a] for a in keep}, {a: lang[a] for a in keep}


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
    out["pred"] = pred
    return out


def by_language(gold: dict, lang: dict, pred: dict) -> dict[str, dict]:
    """Scores of each language's articles alone (link groups cut at the language), when a file has several."""
    langs = sorted(set(lang.values()))
    if len(langs) < 2:
        return {}
    return {x: ev.score({a: g for a, g in gold.items() if lang[a] == x}, pred) for x in langs}


def print_side_by_side(rows: list, refs: dict, title: str, data: dict | None = None) -> None:
    """The writer's figures next to the offline reference's, per file (link groups count as one story) and, for a
    file of several languages, per language; ``ok`` when the file meets its dev bars (stories_lofo.B3_BAR)."""
    print()
    print(title)
    print(
        f"{'file':22s} {'writer P':>8s} {'B3F1':>6s} {'stories':>7s} | {'ref P':>6s} {'B3F1':>6s} {'stories':>7s} "
        f"| {'B3F1 - ref':>10s}  (gold stories) bars"
    )
    for name, s in rows:
        r = refs[name]
        print(
            f"{name:22s} {s['pair_precision']:8.3f} {s['b3_f1']:6.3f} {s['pred_stories']:7d} | "
            f"{r['pair_precision']:6.3f} {r['b3_f1']:6.3f} {r['pred_stories']:7d} | {s['b3_f1'] - r['b3_f1']:+10.3f}"
            f"  ({s['gold_stories']}) {'ok' if lofo.meets(name, s) else 'BELOW'}"
        )
        if data is None:
            continue
        _, gold, lang = data[name]
        ws, rs = by_language(gold, lang, s["pred"]), by_language(gold, lang, r["pred"])
        for x in sorted(ws):
            a, b = ws[x], rs[x]
            print(
                f"{'  ' + x:22s} {a['pair_precision']:8.3f} {a['b3_f1']:6.3f} {a['pred_stories']:7d} | "
                f"{b['pair_precision']:6.3f} {b['b3_f1']:6.3f} {b['pred_stories']:7d} | "
                f"{a['b3_f1'] - b['b3_f1']:+10.3f}  ({a['gold_stories']})"
            )


def grid_points(args) -> list[dict]:
    """The configurations to run: the default calibration with ``--set`` overrides, times the ``--grid``."""
    overrides = {}
    for s in args.set:
        k, _, v = s.partition("=")
        default = getattr(ClusterConfig(), k)
        overrides[k] = None if v == "None" else type(default)(v) if default is not None else float(v)
    grid = json.loads(args.grid) if args.grid else {}
    keys = list(grid)
    return [{**overrides, **dict(zip(keys, v))} for v in itertools.product(*[grid[k] for k in keys])]


class Folds:
    """Pair scores fitted and reference bars chosen without some files, kept in ``cache_dir`` under the digest of
    the files' features (labels included): without one file (its leave-one-file-out model), or without two (the
    nested folds a grid selection scores the other files with: :func:`select`)."""

    def __init__(self, data: dict, cache_dir: str, load_view=None):
        self.data, self.cache_dir, self.load_view = data, cache_dir, load_view
        self.digest = lofo.features_digest(data, lofo.HEADLINE_RULE if load_view else "")
        self._rows: dict | None = None
        self._views: dict | None = None

    def path(self, held) -> str:
        """The model fitted without the files ``held`` (fitted once, then read from the cache)."""
        p = os.path.join(self.cache_dir, f"lofo-{self.digest}-without-{'+'.join(sorted(held))}.json")
        if not os.path.exists(p):
            if self._rows is None:
                self._rows = {n: lofo.pair_rows(f, g) for n, (f, g, _) in self.data.items()}
            if self._views is None and self.load_view is not None:
                self._views = lofo.headline_views(self.data, self._rows, self.load_view)
            lofo.write_model(lofo.fold_model(self.data, self._rows, set(held), views=self._views), p)
        return p


def headline_evidence(model: pairscore.PairScore, data: dict) -> str:
    """A fold's note on its headline bar when none of the files it was chosen on is headline-only: what stood in
    (bodies, or headline views with --headline-views); '' otherwise."""
    on = model.meta.get("bars_chosen_on") or []
    if any(ref_kind(data[n][0]) == "headline" for n in on if n in data):
        return ""
    views = model.meta.get("headline_bar_chosen_on")
    if views and any("headline-undated" in v for v in views):
        return f" (headline bar chosen on {', '.join(views)})"
    return " (headline bar chosen on bodies: no headline-only file among the files it was chosen on)"


def view_loader(files: list[str], routing, cache: str | None, max_articles: int):
    """name -> the headline-undated view (stories_lofo.view) of that dev file (its subset with ``max_articles``),
    embedded like the files (cached): the headline bar's evidence of the folds (stories_lofo.headline_views)."""
    paths = {os.path.basename(f): f for f in files}

    def load_view(name: str) -> tuple:
        recs = [json.loads(line) for line in open(paths[name], encoding="utf-8") if line.strip()]
        recs = lofo.subset(recs, max_articles) if max_articles else recs
        return load_records(f"{name}.headline-undated", lofo.view(recs, "headline-undated"), routing, cache, False)

    return load_view


def fold_models(data: dict, cache_dir: str, shipped: str, load_view=None) -> tuple[dict, dict]:
    """(left-out file -> pair score fitted and reference bars chosen without it, -> its path); with a single file
    there is nothing to leave it out from: the shipped model (in-sample, and the headline says so). ``load_view``:
    :func:`view_loader` (the folds choose a headline bar without a headline-only file on the others' views)."""
    if len(data) < 2:
        m = pairscore.load(shipped)
        return dict.fromkeys(data, m), dict.fromkeys(data, shipped)
    folds = Folds(data, cache_dir, load_view)
    paths = {n: folds.path({n}) for n in sorted(data)}
    return {n: pairscore.load(p) for n, p in paths.items()}, paths


def select(names: list[str], n_points: int, score, only: set[str] | None = None) -> dict[str, int]:
    """Each left-out file's grid point, chosen (:func:`stories_lofo.choose`) on the other files, each of them scored
    by ``score(file, point, held)`` with the pair score fitted without ``held`` = {the left-out file, that file}:
    the other files' own fold models were fitted on the left-out file, so their scores would let its labels into
    the choice (nested folds; a grid over two files has no file left to fit them on: the first point). ``only``:
    the left-out files to choose for (default: all)."""
    chosen = {}
    for n in names if only is None else [n for n in names if n in only]:
        others = [m for m in names if m != n]
        if n_points < 2 or len(others) < 2:
            chosen[n] = 0
            continue
        scores = {m: [score(m, i, frozenset({n, m})) for i in range(n_points)] for m in others}
        chosen[n] = lofo.choose(scores, others, list(range(n_points)))
    return chosen


def run_point(data: dict, point: dict, paths: dict, links: bool, verbose: bool) -> dict:
    """Each file's writer scores at one configuration, with the pair score of its fold."""
    out = {}
    for name, (feats, gold, lang) in data.items():
        cfg = dataclasses.replace(calibration(feats[0].model, feats[0].language), **point, pair_score=paths[name])
        t0 = time.time()
        s = out[name] = evaluate(feats, gold, lang, cfg, links)
        if verbose:
            print(
                f"{name:22s} n={s['articles']:5d} B3 P/R/F {s['b3_precision']:.3f}/{s['b3_recall']:.3f}/"
                f"{s['b3_f1']:.3f}  pair P/R/F {s['pair_precision']:.3f}/{s['pair_recall']:.3f}/"
                f"{s['pair_f1']:.3f}  gold {s['gold_stories']} pred {s['pred_stories']} split "
                f"{s['gold_stories_split']} mixed {s['pred_stories_mixing']}  {time.time() - t0:.1f}s {s['stats']}",
                flush=True,
            )
    return out


def arguments(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--files", default="*-dev.jsonl")
    ap.add_argument("--score", default="*", help="glob: score only these of --files (folds are fitted on all of them)")
    ap.add_argument("--view", choices=lofo.VIEWS, help="score the files as another kind of input (stories_lofo.view)")
    ap.add_argument("--embedder", default="auto")
    ap.add_argument("--cache", default=DEFAULT_CACHE, help="embedding cache (default $NEWSROOM_STORIES_CACHE or /tmp)")
    ap.add_argument("--grid", default=None, help="JSON {field: [values]} over ClusterConfig fields")
    ap.add_argument("--set", action="append", default=[], help="field=value overrides of the default calibration")
    ap.add_argument("--no-links", dest="links", action="store_false")
    ap.add_argument("--pair-score", default=pairscore.MODEL_PATH, help="the shipped pair score (--in-sample)")
    ap.add_argument("--max-articles", type=int, default=0, help="score the subset of each file (0: whole files)")
    ap.add_argument("--in-sample", action="store_true", help="also the shipped model's figures (labelled in-sample)")
    ap.add_argument(
        "--headline-views",
        action="store_true",
        help="a fold without a headline-only file chooses its headline bar on the others' headline-undated views "
        "(stories_lofo.headline_bar_of_views; an experiment: docs/stories.md)",
    )
    return ap.parse_args(argv)


def viewed(files: list[str], data: dict, args, routing, names) -> dict:
    """The files ``names`` as the writer reads them: ``data`` (what the folds are fitted on), as --view when given."""
    out = {}
    for f in files:
        n = os.path.basename(f)
        if n not in names:
            continue
        if not args.view:
            out[n] = data[n]
            continue
        recs = [json.loads(line) for line in open(f, encoding="utf-8") if line.strip()]
        recs = lofo.subset(recs, args.max_articles) if args.max_articles else recs
        out[n] = load_records(f"{n}.{args.view}", lofo.view(recs, args.view), routing, args.cache, args.links)
    return out


def main(argv=None) -> int:
    args = arguments(argv)
    routing = embmod.EmbedderRouting(args.embedder)
    files = sorted(glob.glob(os.path.join(args.data, args.files)))
    if not files:
        print(f"no files match {args.files} in {args.data}", file=sys.stderr)
        return 2
    data = {os.path.basename(f): load(f, routing, args.cache, args.links) for f in files}
    if args.max_articles:  # the hard part of each file (stories_lofo.subset), vectors from the whole file's
        data = {n: cut(f, n, data[n], args.max_articles) for n, f in zip(sorted(data), files)}
    points = grid_points(args)
    load_view = view_loader(files, routing, args.cache, args.max_articles) if args.headline_views else None
    models, paths = fold_models(data, args.cache, args.pair_score, load_view)
    for n in sorted(models):
        w = dict(zip(pairscore.FEATURES, (round(x, 2) for x in models[n].weights)))
        print(
            f"fold without {n}: weights {w} bias {models[n].bias:.2f} bars {models[n].thresholds}"
            + headline_evidence(models[n], data),
            flush=True,
        )
    wanted = [n for n in data if len(points) > 1 or fnmatch.fnmatch(n, args.score)]  # a grid chooses on the others
    every = viewed(files, data, args, routing, wanted)
    scored = {n: v for n, v in every.items() if fnmatch.fnmatch(n, args.score)}
    runs = []
    for point in points:
        if len(points) > 1:
            print(point, flush=True)
        runs.append(run_point(scored, point, paths, args.links, verbose=True))
    refs = {}
    for name, (feats, gold, _) in scored.items():
        pred = reference(feats, models[name])
        refs[name] = {**ev.score(gold, pred), "pred": pred}
    chosen = dict.fromkeys(scored, 0)
    if len(points) > 1:
        folds = Folds(data, args.cache, load_view)

        def score(m: str, i: int, held) -> dict:
            return run_point({m: every[m]}, points[i], {m: folds.path(held)}, args.links, verbose=False)[m]

        chosen = {n: c for n, c in select(sorted(every), len(points), score, only=set(scored)).items() if n in scored}
        for n in sorted(scored):
            print(f"{n}: chosen on the other files (nested folds) {points[chosen[n]]}")
    rows = [(n, runs[chosen[n]][n]) for n in sorted(scored)]
    label = "leave-one-file-out" if len(data) > 1 else "IN-SAMPLE (a single file: nothing to leave it out from)"
    view = f" (as {args.view})" if args.view else ""
    print_side_by_side(rows, refs, f"{label}: pair score fitted and bars chosen on the other files{view}", scored)
    if args.in_sample:
        shipped = dict.fromkeys(scored, args.pair_score)
        ins = run_point(scored, points[0], shipped, args.links, verbose=False)
        model = pairscore.load(args.pair_score)
        irefs = {n: {**ev.score(g, p := reference(f, model)), "pred": p} for n, (f, g, _) in scored.items()}
        print_side_by_side(sorted(ins.items()), irefs, "IN-SAMPLE: the shipped pair score, trained on these files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
