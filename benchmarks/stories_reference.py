"""The offline reference of the story writer: the learned pair score + batch average linkage over a whole file.

What the writer is measured against (benchmarks/stories_calibrate.py prints both in one run): per language, every
article pair of the file is scored by :mod:`transforms.stories.writer.pairscore` (IDF over the file; pairs whose times are
both known and more than three days apart cut, as the issue's offline method does), clustered by average
linkage (scipy, a benchmark-only dependency present through scikit-learn) cut at the model's bar for the file's text
kind, then the clusters of different languages are linked mutual-best on their multilingual centroids (a link
group counts as one story, as ``newsroom evaluate`` scores the writer). It sees the whole file at once, so it is
what a batch clusterer with the same score can reach, not what an online writer must reach exactly.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from transforms.stories.writer import pairscore

LINK_FLOOR = 0.6  # mutual-best cross-language links below this multilingual cosine are not links


def text_kind(feats: list) -> str:
    """The text kind of a set of articles: body when at least half of them have one, else headline."""
    return "body" if 2 * sum(1 for f in feats if f.has_body) >= len(feats) else "headline"


def cut_far_pairs(feats: list, L: np.ndarray) -> np.ndarray:
    """``L`` with the pairs whose times are both known and more than :data:`pairscore.FAR_APART_HOURS` apart cut
    (a logit no average can recover: :data:`pairscore.CUT_LOGIT`)."""
    known = np.array([bool(f.time_known) for f in feats])
    at = np.array([int(f.first_seen_at) for f in feats], dtype=np.int64)
    return np.where(pairscore.far_apart(known, at), pairscore.CUT_LOGIT, L)


def linkage_of(D: np.ndarray, linkage, squareform):
    """scipy's average linkage of a (symmetrised) distance matrix."""
    return linkage(squareform((D + D.T) / 2.0, checks=False), method="average")


def average_linkage(L: np.ndarray, bar: float) -> np.ndarray:
    """Cluster labels of average linkage over the logit matrix ``L``, merging while the average logit >= ``bar``."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    n = len(L)
    if n == 1:
        return np.zeros(1, dtype=int)
    top = float(L.max())
    D = top - L
    np.fill_diagonal(D, 0.0)
    return fcluster(linkage_of(D, linkage, squareform), t=top - bar, criterion="distance")


def language_clusters(feats: list, model: pairscore.PairScore, bar: float | None = None, X=None) -> dict[str, str]:
    """article id -> cluster key of one language's articles."""
    X = pairscore.batch_features(feats) if X is None else X
    b = model.thresholds[text_kind(feats)] if bar is None else bar
    labels = average_linkage(cut_far_pairs(feats, model.logit(X)), b)
    lang = feats[0].language
    return {f.article_id: f"{lang}:{int(k)}" for f, k in zip(feats, labels)}


def link_languages(feats: list, clusters: dict[str, str]) -> dict[str, str]:
    """article id -> link group: clusters of different languages joined when their multilingual centroids are
    mutual best (and >= LINK_FLOOR); without link vectors, the clusters themselves."""
    vecs: dict[str, list] = defaultdict(list)
    for f in feats:
        if f.link_vector is not None:
            vecs[clusters[f.article_id]].append(np.asarray(f.link_vector, dtype=np.float64))
    keys = sorted(vecs)
    parent = {k: k for k in clusters.values()}
    if len({k.split(":")[0] for k in keys}) > 1:
        C = np.stack([np.sum(vecs[k], axis=0) for k in keys])
        C /= np.linalg.norm(C, axis=1, keepdims=True)
        S = C @ C.T
        langs = np.array([k.split(":")[0] for k in keys])
        for lang in sorted(set(langs)):
            rows = np.flatnonzero(langs == lang)
            for other in sorted(set(langs) - {lang}):
                cols = np.flatnonzero(langs == other)
                sub = S[np.ix_(rows, cols)]
                for i, r in enumerate(rows):
                    j = int(np.argmax(sub[i]))
                    if sub[i, j] >= LINK_FLOOR and int(np.argmax(sub[:, j])) == i:
                        a, b = _find(parent, keys[r]), _find(parent, keys[cols[j]])
                        parent[max(a, b)] = min(a, b)
    return {aid: _find(parent, k) for aid, k in clusters.items()}


def _find(parent: dict, k: str) -> str:
    while parent[k] != k:
        parent[k] = parent[parent[k]]
        k = parent[k]
    return k


def reference(feats: list, model: pairscore.PairScore, bar: float | None = None) -> dict[str, str]:
    """article id -> predicted group of the offline reference over a whole file."""
    by_lang = defaultdict(list)
    for f in feats:
        by_lang[f.language].append(f)
    clusters: dict[str, str] = {}
    for lang in sorted(by_lang):
        clusters.update(language_clusters(by_lang[lang], model, bar))
    return link_languages(feats, clusters)
