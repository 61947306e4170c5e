"""Leave-one-dev-file-out selection for the story writer: fit on the other files, score the left-out one.

Shared by benchmarks/stories_calibrate.py (its headline figures) and benchmarks/stories_pair_score.py (the shipped
model). For a left-out file:

- the learned pair score (transforms/stories/writer/pairscore.py) is fitted on the within-language pairs of the *other*
  files (each file weighs the same; positives and negatives half each; a file without a positive within-language
  pair, meantime-dev, cannot teach it);
- the offline reference's average-linkage bar of the file's text kind is chosen on the other files of that kind
  (largest mean B-cubed F1 with every file's precision bar met), or on all the other files when none is of its kind;
- with a grid, the writer's configuration is the grid point chosen on the other files the same way, each of them
  scored with a pair score fitted without the left-out file *and* itself (nested folds: the fold models of the other
  files were fitted on the left-out one, so choosing on their scores would let its labels in).

Nothing here reads the left-out file's labels before its score is computed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import defaultdict

import numpy as np
import stories_reference as ref

from pipelines.commands import evaluate_scores as ev
from transforms.stories.vocabulary.text import lede_of
from transforms.stories.writer import pairscore

VERSION = 2  # 2: the places feature of the fit is the gazetteer relation only (local places decide, never fit)
# Pairwise precision / B-cubed F1 bars of the dev files (the acceptance bars): what the selection must meet on the other files
# and what the headline checks on the left-out one. uci-dev's gold keeps several Google News clusters per event.
PRECISION_BAR = {"uci-dev.jsonl": 0.90, "allsides-dev.jsonl": 0.80}
B3_BAR = {
    "gva-dev.jsonl": 0.88,
    "uci-dev.jsonl": 0.80,
    "ecbplus-dev.jsonl": 0.80,
    "basil-dev.jsonl": 0.95,
    "meantime-dev.jsonl": 0.95,
    "allsides-dev.jsonl": 0.75,
}
BARS = [round(x, 2) for x in np.arange(-2.0, 8.01, 0.25)]
# How a fold without a headline-only file chooses its headline bar (part of the fold cache's digest)
HEADLINE_RULE = " headline bar on headline-undated views whose cuts tell their stories apart"
MAX_NEGATIVES = 300_000  # negative pairs kept per file for the fit (all positives are kept; weights rebalance)


def precision_bar(name: str) -> float:
    return PRECISION_BAR.get(name, 0.95)


def meets(name: str, s: dict) -> bool:
    """Whether a file's scores meet its precision and B-cubed bars."""
    return s["pair_precision"] >= precision_bar(name) and s["b3_f1"] >= B3_BAR.get(name, 0.0)


def pair_rows(feats: list, gold: dict, seed: int = 0) -> tuple[list, np.ndarray, np.ndarray]:
    """(per-language (features, pair-feature matrix), training rows X, labels y) of a file's within-language pairs;
    negatives subsampled to MAX_NEGATIVES (deterministic), every positive kept."""
    by_lang = defaultdict(list)
    for f in feats:
        by_lang[f.language].append(f)
    mats, xs, ys = [], [], []
    for lang in sorted(by_lang):
        fs = by_lang[lang]
        X = pairscore.batch_features(fs)
        mats.append((fs, X))
        iu = np.triu_indices(len(fs), 1)
        g = np.array([gold[f.article_id] for f in fs])
        xs.append(X[iu])
        ys.append((g[:, None] == g[None, :])[iu].astype(np.float64))
    X, y = np.concatenate(xs), np.concatenate(ys)
    neg = np.flatnonzero(y == 0)
    if len(neg) > MAX_NEGATIVES:
        keep = np.sort(
            np.concatenate(
                [np.flatnonzero(y > 0), np.random.default_rng(seed).choice(neg, MAX_NEGATIVES, replace=False)]
            )
        )
        X, y = X[keep], y[keep]
    return mats, X, y


def balanced_weights(y: np.ndarray) -> np.ndarray:
    pos = max(float(y.sum()), 1.0)
    neg = max(float(len(y) - y.sum()), 1.0)
    return np.where(y > 0, 0.5 / pos, 0.5 / neg)


def teaching(rows: dict, names) -> list[str]:
    """The files among ``names`` with a positive within-language pair (the others cannot teach the score)."""
    return sorted(n for n in names if rows[n][2].sum() > 0)


def fit(rows: dict, names: list[str]) -> np.ndarray:
    """(bias, weights) fitted on the pairs of ``names``, each file weighing the same."""
    names = teaching(rows, names)
    X = np.concatenate([rows[n][1] for n in names])
    y = np.concatenate([rows[n][2] for n in names])
    w = np.concatenate([balanced_weights(rows[n][2]) / len(names) for n in names])
    return pairscore.fit_logistic(X, y, w)


def model_of(beta: np.ndarray, thresholds: dict, meta: dict) -> pairscore.PairScore:
    return pairscore.PairScore(VERSION, tuple(float(x) for x in beta[1:]), float(beta[0]), thresholds, meta)


def _linkages(rows: dict, name: str, model: pairscore.PairScore) -> list:
    """Per language: (features, scipy linkage Z, top logit) of a file under ``model`` (cut later at any bar)."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    out = []
    for fs, X in rows[name][0]:
        L = ref.cut_far_pairs(fs, model.logit(X))
        if len(fs) == 1:
            out.append((fs, None, 0.0))
            continue
        top = float(L.max())
        D = top - L
        np.fill_diagonal(D, 0.0)
        out.append((fs, ref.linkage_of(D, linkage, squareform), top))
    return out


def _cut(data: dict, name: str, links: list, bar: float) -> dict:
    from scipy.cluster.hierarchy import fcluster

    clusters = {}
    for fs, Z, top in links:
        labels = np.zeros(1, dtype=int) if Z is None else fcluster(Z, t=top - bar, criterion="distance")
        lang = fs[0].language
        clusters.update({f.article_id: f"{lang}:{int(k)}" for f, k in zip(fs, labels)})
    return ev.score(data[name][1], ref.link_languages(data[name][0], clusters))


def choose(scores: dict[str, list[dict]], names: list[str], options: list) -> int:
    """Index of the option with the largest mean B-cubed F1 over ``names`` with every file's precision bar met
    (``scores[name][i]``: the scores of option i); when none meets them all, the one with the best worst precision
    shortfall."""
    best, fallback = None, None
    for i in range(len(options)):
        ss = [scores[n][i] for n in names]
        short = min(s["pair_precision"] - precision_bar(n) for n, s in zip(names, ss))
        f1 = float(np.mean([s["b3_f1"] for s in ss]))
        if short >= 0 and (best is None or f1 > best[0]):
            best = (f1, i)
        if fallback is None or (short, f1) > fallback[0]:
            fallback = ((short, f1), i)
    return best[1] if best else fallback[1]


def reference_bars(
    data: dict, rows: dict, model: pairscore.PairScore, names: list[str], kinds=None, views: dict | None = None
) -> tuple[dict, dict]:
    """(the reference's bar per text kind, kind -> what it was chosen on): on ``names`` of that kind; for the
    headline bar without a headline-only file among them, on their ``views`` when given and some count
    (:func:`headline_bar_of_views`), else on all of ``names``: bodies, a scale headlines do not share (uci-dev left
    out: the body bar 5.25, where no headline merge ever fires; docs/stories.md, "Headline-only input out of sample")."""
    links = {n: _linkages(rows, n, model) for n in names}
    scores = {n: [_cut(data, n, links[n], b) for b in BARS] for n in names}
    by_kind = defaultdict(list)
    for n in names:
        by_kind[ref.text_kind(data[n][0])].append(n)
    out, on = {}, {}
    for kind in kinds or ("body", "headline"):
        shaped = headline_bar_of_views(views, model, names) if kind == "headline" and kind not in by_kind else None
        if shaped is not None:
            out[kind], on[kind] = shaped
            continue
        on[kind] = by_kind.get(kind) or names
        out[kind] = BARS[choose(scores, on[kind], BARS)]
    return out, on


def headline_bar_of_views(views: dict | None, model: pairscore.PairScore, names: list[str]) -> tuple | None:
    """(bar, views) of the headline kind chosen on the headline-only views (stories_lofo.view "headline-undated") of
    the files ``names``, when none of them is headline-only: without it the headline bar was chosen on bodies (uci-dev
    left out: 5.25, where no headline merge ever happens; docs/stories.md). Only views whose reference reaches the
    file's precision bar at some cut that joins anything right (:func:`tells`; a view of headlines alike for every
    event, gva's "Man shot in ...", or of two events of one kind, ECB+'s, fails it at every such cut and says nothing
    about where to cut); None when no view is given or none counts."""
    if not views:
        return None
    vdata = {n: v[0] for n, v in views.items() if n in names}
    vrows = {n: v[1] for n, v in views.items() if n in names}
    scores = {n: [_cut(vdata, n, _linkages(vrows, n, model), b) for b in BARS] for n in sorted(vdata)}
    alone = {n: ev.score(vdata[n][1], {a: a for a in vdata[n][1]})["b3_f1"] for n in vdata}
    able = [n for n in sorted(scores) if any(tells(n, s, alone[n]) for s in scores[n])]
    if not able:
        return None
    return BARS[choose(scores, able, BARS)], [f"{n} (headline-undated)" for n in able]


def tells(name: str, s: dict, alone: float) -> bool:
    """Whether a cut scored ``s`` tells a file's stories apart: its precision bar met with a B-cubed F1 above that of
    every article alone (``alone``; a cut that joins nothing meets any precision bar)."""
    return s["pair_precision"] >= precision_bar(name) and s["b3_f1"] > alone


def headline_views(data: dict, rows: dict, load_view) -> dict:
    """name -> ((features, gold, language), pair rows) of the headline-undated view (:func:`view`) of each file with
    bodies that has a positive within-language pair (``rows``: :func:`pair_rows` of the files; ``load_view(name)``
    returns the view's (features with vectors, gold, language))."""
    out = {}
    for n in sorted(data):
        if ref.text_kind(data[n][0]) == "body" and rows[n][2].sum() > 0:
            v = load_view(n)
            out[n] = (v, pair_rows(v[0], v[1]))
    return out


def fold_model(
    data: dict, rows: dict, held, meta: dict | None = None, views: dict | None = None
) -> pairscore.PairScore:
    """The pair score and reference bars fitted and chosen without ``held``: a file name, a collection of them (the
    nested folds of a grid selection: without the left-out file *and* the file it is chosen on), None: every file.
    ``views``: :func:`headline_views` of the files (the headline bar's evidence when no file is headline-only: an
    experiment, ``stories_calibrate.py --headline-views``; what it gives is in docs/stories.md)."""
    out = {held} if isinstance(held, str) else set(held or ())
    names = sorted(n for n in rows if n not in out)
    beta = fit(rows, names)
    m = model_of(beta, {"body": 0.0, "headline": 0.0}, {})
    bars, on = reference_bars(data, rows, m, names, views=views)
    info = {"trained_on": teaching(rows, names), "bars_chosen_on": names, **(meta or {})}
    if not any(ref.text_kind(data[n][0]) == "headline" for n in names):  # say what stood in for headlines
        info["headline_bar_chosen_on"] = on["headline"]
    return model_of(beta, bars, info)


def features_digest(data: dict, rule: str = "") -> str:
    """A digest of what the folds are fitted on: every file's name, labels and articles' features (and ``rule``:
    :data:`HEADLINE_RULE` when the folds choose the headline bar on views)."""
    h = hashlib.sha256(f"v{VERSION} {MAX_NEGATIVES} {BARS} {pairscore.FEATURES}{rule}".encode())
    for name in sorted(data):
        feats, gold, _ = data[name]
        h.update(name.encode())
        for f in feats:
            h.update(f"{f.article_id}|{gold[f.article_id]}|{f.language}|{f.first_seen_at}|{f.time_known}".encode())
            h.update("|".join((*f.terms, *map(str, f.term_tf), *f.entities, *f.places)).encode())
            for v in (f.vector, f.link_vector):
                h.update(b"-" if v is None else np.asarray(v, dtype="<f4").tobytes())
    return h.hexdigest()[:16]


def _natural(key: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"(\d+)", key))


def subset(recs: list[dict], max_articles: int = 300) -> list[dict]:
    """A small part of a dev file that keeps what makes it hard (the CI check, tests/transforms/stories/
    test_quality_dev.py), in file order:

    - a dated file: the densest run of ``max_articles`` in time (gva: shootings of one day in many cities);
    - a file of few large stories (on average more than a tenth of the budget each: UCI's Google News stories):
      every k-th article, so every story keeps some of its reports;
    - else whole groups (the ``topic``, else the gold story: ECB+'s two events of a topic stay together) in their
      natural order from the middle of the file (AllSides' neighbouring stories are one saga's items).
    """
    if len(recs) <= max_articles:
        return list(recs)
    if all(r.get("published_at") for r in recs):
        order = sorted(range(len(recs)), key=lambda i: (str(recs[i]["published_at"]), str(recs[i]["id"])))
        times = [recs[i]["published_at"] for i in order]
        span = len(order) - max_articles + 1
        start = min(range(span), key=lambda i: (_days(times[i], times[i + max_articles - 1]), i))
        keep = set(order[start : start + max_articles])
        return [r for i, r in enumerate(recs) if i in keep]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(recs):
        groups[str(r.get("topic") or r["story_id"])].append(i)
    if len(recs) / len(groups) > max_articles / 10:
        step = -(-len(recs) // max_articles)
        return recs[::step]
    keys = sorted(groups, key=_natural)
    keep: set[int] = set()
    for k in keys[len(keys) // 2 :]:
        if len(keep) + len(groups[k]) > max_articles:
            break
        keep.update(groups[k])
    return [r for i, r in enumerate(recs) if i in keep]


VIEWS = ("bodies-undated", "headline", "headline-undated", "lead-undated", "mixed-dates")


def view(recs: list[dict], kind: str) -> list[dict]:
    """A dev file's records as another kind of input, labels untouched (inputs the writer must not shred):

    - ``bodies-undated``: no title and no ``published_at`` (a body's printed dateline still counts: the text states it);
    - ``headline``: the title alone (the body dropped), times kept; ``headline-undated``: and no ``published_at``;
    - ``lead-undated``: the title and the lede alone (:func:`transforms.stories.vocabulary.text.lede_of`: AllSides'
      shape, a title and its opening paragraph) and no ``published_at``;
    - ``mixed-dates``: every other row (in file order) loses its ``published_at``.
    """
    if kind not in VIEWS:
        raise ValueError(f"unknown view {kind!r}; one of {', '.join(VIEWS)}")
    out = []
    for i, r in enumerate(recs):
        r = dict(r)
        if kind == "bodies-undated":
            r["title"], r["published_at"] = "", None
        elif kind == "lead-undated":
            r["text"], r["published_at"] = lede_of(r.get("title") or "", r.get("text") or ""), None
        elif kind.startswith("headline"):
            r["text"] = ""
            if kind == "headline-undated":
                r["published_at"] = None
        elif i % 2:
            r["published_at"] = None
        out.append(r)
    return out


def _days(a: str, b: str) -> float:
    from transforms.stories.vocabulary.features import parse_time

    return (parse_time(b) - parse_time(a)) / 86_400_000


def write_model(model: pairscore.PairScore, path: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(model.to_dict(), fh, indent=2, sort_keys=True)
    return path
