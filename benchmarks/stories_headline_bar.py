"""Unlabelled (transductive) choices of the headline bar, judged on every dev file.

uci-dev is the only headline-only dev file, so its leave-one-file-out fold has no labelled headline file to choose
its headline bar on and falls back to the body bar (docs/stories.md, "Headline-only input out of sample"). A rule
that reads only the unlabelled pairs of the stream being clustered would be out of sample by construction. This
script applies each rule below to every dev file (and to each body file's headline-undated view), always with the
pair score of that file's own fold (fitted without it), and prints beside it the labelled best cut (the largest
B-cubed F1 of the offline reference with the file's precision bar met: where a good rule lands) and the offline
reference's pairwise P / B-cubed F1 at each bar. For a headline-only file it also runs the writer with the fold
model's headline bar replaced by each rule's.

Rules (every one reads the file's pair logits only; labels are read to score):

- ``silhouette``: the cut of the average-linkage dendrogram (distance: top logit - logit) with the largest mean
  silhouette;
- ``valley``: the deepest valley of the histogram of the dendrogram's merge heights (half-logit bins): where
  within-story merges end and between-story merges begin, if the two form two modes;
- ``nn-share``: the bar at which the share of articles whose best match reaches it equals that share at the fold's
  body bar, averaged over the fold's other files (a quantile of each article's best-match logit);
- ``pair-share``: the same with the share of all pairs (the median over the other files);
- ``nn-mixture`` / ``pair-mixture``: a two-component Gaussian mixture fitted to the articles' best-match logits /
  to all pair logits; the bar is where the upper component becomes the likelier one.

    NEWSROOM_STORIES_CACHE=/work/cache/stories PYTHONPATH=. .venv/bin/python benchmarks/stories_headline_bar.py

It never writes into the repository (the edited fold models go to a temporary directory).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import glob
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import stories_calibrate as sc  # noqa: E402
import stories_lofo as lofo  # noqa: E402
import stories_reference as ref  # noqa: E402

from pipelines.commands import evaluate_scores as ev  # noqa: E402
from transforms.stories.embed import embed as embmod  # noqa: E402
from transforms.stories.writer import pairscore  # noqa: E402
from transforms.stories.writer.cluster import calibration  # noqa: E402

RULES = ("silhouette", "valley", "nn-share", "pair-share", "nn-mixture", "pair-mixture")


class Stream:
    """One file's articles under one pair score: per language its logit matrix (far pairs cut) and dendrogram."""

    def __init__(self, feats: list, gold: dict, model: pairscore.PairScore, tree: bool = True):
        from scipy.cluster.hierarchy import linkage
        from scipy.spatial.distance import squareform

        self.feats, self.gold, self.parts = feats, gold, []
        by_lang: dict[str, list] = {}
        for f in feats:
            by_lang.setdefault(f.language, []).append(f)
        for lang in sorted(by_lang):
            fs = by_lang[lang]
            L = ref.cut_far_pairs(fs, model.logit(pairscore.batch_features(fs)))
            if not tree or len(fs) < 2:
                self.parts.append((fs, L, None, None, 0.0))
                continue
            top = float(L.max())
            D = top - L
            np.fill_diagonal(D, 0.0)
            D = (D + D.T) / 2.0
            self.parts.append((fs, L, D, ref.linkage_of(D, linkage, squareform), top))

    def labels(self, bar: float) -> list:
        from scipy.cluster.hierarchy import fcluster

        return [
            np.zeros(1, int) if Z is None else fcluster(Z, t=top - bar, criterion="distance")
            for *_, Z, top in self.parts
        ]

    def score(self, bar: float) -> dict:
        clusters = {}
        for (fs, *_), lab in zip(self.parts, self.labels(bar)):
            clusters.update({f.article_id: f"{fs[0].language}:{int(k)}" for f, k in zip(fs, lab)})
        return ev.score(self.gold, ref.link_languages(self.feats, clusters))

    def nearest(self) -> np.ndarray:
        """Each article's best-match logit within its language (articles alone in theirs, or days apart from every
        other article of it, left out)."""
        out = []
        for fs, L, *_ in self.parts:
            if len(fs) > 1:
                M = L.copy()
                np.fill_diagonal(M, -np.inf)
                out.append(M.max(axis=1))
        x = np.concatenate(out) if out else np.zeros(0)
        return x[x > pairscore.CUT_LOGIT / 2]

    def pairs(self) -> np.ndarray:
        """Every within-language pair logit, cut pairs (days apart) left out."""
        out = [L[np.triu_indices(len(fs), 1)] for fs, L, *_ in self.parts if len(fs) > 1]
        x = np.concatenate(out) if out else np.zeros(0)
        return x[x > pairscore.CUT_LOGIT / 2]

    def heights(self) -> np.ndarray:
        return np.concatenate([top - Z[:, 2] for *_, Z, top in self.parts if Z is not None])


def teaches(loaded: tuple) -> bool:
    """Whether a file has a same-story pair within one language (stories_lofo.teaching, without the pair rows)."""
    feats, gold, _ = loaded
    seen = {(f.language, gold[f.article_id]) for f in feats}
    return len(seen) < len(feats)


def snap(x: float) -> float:
    """The grid bar (stories_lofo.BARS) nearest ``x``."""
    return min(lofo.BARS, key=lambda b: abs(b - x))


def silhouette_bar(s: Stream) -> float:
    from sklearn.metrics import silhouette_score

    best = None
    for bar in lofo.BARS:
        total = n = 0
        for (fs, _, D, *_), lab in zip(s.parts, s.labels(bar)):
            k = len(set(lab.tolist()))
            total += len(fs) * (silhouette_score(D, lab, metric="precomputed") if 1 < k < len(fs) else 0.0)
            n += len(fs)
        if best is None or total / n > best[0]:
            best = (total / n, bar)
    return best[1]


def valley_bar(s: Stream) -> float:
    """The centre of the half-logit bin of merge heights in [min(BARS), max(BARS)] with the deepest valley (the
    smaller of the fullest bins on its two sides, less its own count)."""
    edges = np.arange(lofo.BARS[0], lofo.BARS[-1] + 0.51, 0.5)
    h, _ = np.histogram(s.heights(), edges)
    depth = [min(h[:i].max(), h[i + 1 :].max()) - h[i] for i in range(1, len(h) - 1)]
    i = 1 + int(np.argmax(depth))
    return snap((edges[i] + edges[i + 1]) / 2)


def share_bar(values: np.ndarray, share: float) -> float:
    """The bar at which ``share`` of ``values`` reach it."""
    return snap(float(np.quantile(values, 1.0 - share))) if len(values) else lofo.BARS[-1]


def mixture_bar(values: np.ndarray) -> float:
    """Where the upper of a two-component Gaussian mixture over ``values`` (at most 200,000 of them, a fixed sample)
    becomes the likelier component, between the two means."""
    from sklearn.mixture import GaussianMixture

    x = values.reshape(-1, 1)
    if len(x) > 200_000:
        x = x[np.random.default_rng(0).choice(len(x), 200_000, replace=False)]
    g = GaussianMixture(2, random_state=0).fit(x)
    means = g.means_.ravel()
    grid = np.linspace(means.min(), means.max(), 400).reshape(-1, 1)
    upper = g.predict_proba(grid)[:, int(np.argmax(means))]
    return snap(float(grid[int(np.argmax(upper >= 0.5))][0]))


def rule_bars(s: Stream, others: list[Stream], body_bar: float) -> dict[str, float]:
    nn = [float(np.mean(o.nearest() >= body_bar)) for o in others if len(o.nearest())]
    pp = [float(np.mean(o.pairs() >= body_bar)) for o in others if len(o.pairs())]
    return {
        "silhouette": silhouette_bar(s),
        "valley": valley_bar(s),
        "nn-share": share_bar(s.nearest(), float(np.mean(nn))),
        "pair-share": share_bar(s.pairs(), float(np.median(pp))),
        "nn-mixture": mixture_bar(s.nearest()),
        "pair-mixture": mixture_bar(s.pairs()),
    }


def labelled_best(name: str, s: Stream) -> tuple[float | None, dict]:
    """The reference's bar with the largest B-cubed F1 among those meeting the file's precision bar."""
    best = (None, {"pair_precision": 0.0, "b3_f1": 0.0})
    for bar in lofo.BARS:
        r = s.score(bar)
        if r["pair_precision"] >= lofo.precision_bar(name) and r["b3_f1"] > best[1]["b3_f1"]:
            best = (bar, r)
    return best


def writer_at(name: str, data: tuple, model_path: str, bar: float, *, tmp: str) -> dict:
    """The writer's scores on a file with its fold model's headline bar replaced by ``bar``."""
    d = json.load(open(model_path, encoding="utf-8"))
    d["thresholds"]["headline"] = bar
    path = os.path.join(tmp, f"{name}.{bar}.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(d, fh)
    feats, gold, lang = data
    cfg = dataclasses.replace(calibration(feats[0].model, feats[0].language), pair_score=path)
    return sc.evaluate(feats, gold, lang, cfg, True)


def fmt(s: dict) -> str:
    return f"{s['pair_precision']:.3f} / {s['b3_f1']:.3f}"


def report(name: str, tag: str, s: Stream, others: list[Stream], model, writer) -> None:
    bars = rule_bars(s, others, float(model.thresholds["body"]))
    best, r = labelled_best(name, s)
    print(f"{name} ({tag}): labelled best {best} ({fmt(r)})", flush=True)
    for rule in RULES:
        line = f"    {rule:10s} bar {bars[rule]:5.2f}  reference {fmt(s.score(bars[rule]))}"
        if writer is not None:
            line += f"  writer {fmt(writer(bars[rule]))}"
        print(line, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=sc.DEFAULT_DATA)
    ap.add_argument("--cache", default=sc.DEFAULT_CACHE)
    ap.add_argument("--only", default=None, help="report this file alone (every file is still loaded for the folds)")
    args = ap.parse_args(argv)
    routing = embmod.EmbedderRouting("auto")
    files = sorted(glob.glob(os.path.join(args.data, "*-dev.jsonl")))
    data = {os.path.basename(f): sc.load(f, routing, args.cache, True) for f in files}
    models, paths = sc.fold_models(data, args.cache, pairscore.MODEL_PATH)
    load_view = sc.view_loader(files, routing, args.cache, 0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(data):
            if args.only and name != args.only:
                continue
            model, (feats, gold, _) = models[name], data[name]
            others = [Stream(*data[o][:2], model, tree=False) for o in sorted(data) if o != name and teaches(data[o])]
            headline = ref.text_kind(feats) == "headline"
            writer = functools.partial(writer_at, name, data[name], paths[name], tmp=tmp) if headline else None
            report(name, "as is", Stream(feats, gold, model), others, model, writer)
            if not headline and teaches(data[name]):
                v = load_view(name)
                report(name, "headline-undated view", Stream(v[0], v[1], model), others, model, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
