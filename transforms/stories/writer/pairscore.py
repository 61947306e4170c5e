"""The learned article-pair score: a logistic regression over a few similarities of two articles.

    logit = bias + w_dense * dense + w_entities * entities + w_tfidf * tfidf + w_time * time + w_places * places

- ``dense``: cosine of the clustering embeddings (title + lede);
- ``entities``: cosine of the articles' entity keys (names, numbers, from the whole body), IDF weighted;
- ``tfidf``: cosine of their TF-IDF term vectors (title + lede + the start of the body);
- ``places``: +1 when the two articles name the same most specific place, -1 when their places conflict (no place of
  one lies in or contains a place of the other: Stockton and Indianapolis), 0 otherwise or when either names none
  (:mod:`transforms.stories.vocabulary.places`). Fitted (:func:`batch_features`) on the gazetteer's places alone; the
  writer scores with its local places as well (streets, where the gazetteer says nothing), never fitted on them;
- ``time``: 1 - 2 * min(hours apart, 48) / 48 when both times are known (+1 same moment, -1 two days apart), and
  exactly 0 when either is unknown: an unknown time is neutral, it is never a feature of its own (a "time unknown"
  flag learns which data set a pair comes from, not whether it is one event: it fails leave-one-file-out). The same
  holds for publishers: no feature reads them.

The model is package data (``pair_score.json`` beside this module), written by ``benchmarks/stories_pair_score.py``
from the labelled dev files only; the file records its version, features, weights, the digest of its training data
and its leave-one-dev-file-out scores, so a reader can tell what it was trained on and how well it generalises.

Plain numpy; reads feature matrices, writes nothing.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from transforms.stories.vocabulary import places as placemod

FEATURES = ("dense", "entities", "tfidf", "time", "places")
MODEL_PATH = os.path.join(os.path.dirname(__file__), "pair_score.json")
TIME_SPAN_HOURS = 48.0
# Two articles whose times are both known and more than this far apart are never one story (a hard cut, not a
# feature: the offline reference and the writer's joins and merges; gva's arrest and trial follow-ups
# weeks later share their incident's label and are lost to it, two incidents of one kind days apart are kept apart).
FAR_APART_HOURS = 72.0
CUT_LOGIT = -1.0e6  # the logit of a cut pair: no average over a realistic cluster recovers from it


@dataclass(frozen=True)
class PairScore:
    """A trained pair score: ``logit(x) = bias + weights . x`` over :data:`FEATURES`."""

    version: int
    weights: tuple[float, ...]
    bias: float
    thresholds: dict  # text kind ("body" / "headline") -> average-linkage bar on the logit scale
    meta: dict

    def logit(self, x: np.ndarray) -> np.ndarray:
        """Logits of feature rows ``x`` (shape (..., len(FEATURES)))."""
        return self.bias + np.asarray(x, dtype=np.float64) @ np.asarray(self.weights, dtype=np.float64)

    def to_dict(self) -> dict:
        return {
            "version": self.version,
            "features": list(FEATURES),
            "weights": dict(zip(FEATURES, self.weights)),
            "bias": self.bias,
            "thresholds": self.thresholds,
            **self.meta,
        }

    @classmethod
    def from_dict(cls, d: dict) -> PairScore:
        if list(d.get("features", ())) != list(FEATURES):
            raise ValueError(f"pair score features {d.get('features')} are not {list(FEATURES)}")
        meta = {k: v for k, v in d.items() if k not in ("version", "features", "weights", "bias", "thresholds")}
        w = d["weights"]
        return cls(int(d["version"]), tuple(float(w[f]) for f in FEATURES), float(d["bias"]), d["thresholds"], meta)


@lru_cache(maxsize=4)
def load(path: str = MODEL_PATH) -> PairScore:
    """The shipped pair score (cached per path)."""
    with open(path, encoding="utf-8") as fh:
        return PairScore.from_dict(json.load(fh))


def time_feature(known: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The ``time`` feature between every pair of articles: 0 unless both times are known (neutral)."""
    hours = np.abs(at[:, None] - at[None, :]).astype(np.float64) / 3_600_000.0
    close = 1.0 - 2.0 * np.minimum(hours, TIME_SPAN_HOURS) / TIME_SPAN_HOURS
    both = known[:, None] & known[None, :]
    return np.where(both, close, 0.0)


def far_apart(known: np.ndarray, at: np.ndarray, hours: float = FAR_APART_HOURS) -> np.ndarray:
    """Pairs whose times are both known and more than ``hours`` apart (never one story)."""
    apart = np.abs(at[:, None] - at[None, :]).astype(np.float64) / 3_600_000.0
    return known[:, None] & known[None, :] & (apart > hours)


def sparse_unit_rows(rows: list[dict], vocab: dict[str, int]) -> np.ndarray:
    """Dense matrix of unit-length sparse rows (key -> weight) over ``vocab``."""
    M = np.zeros((len(rows), max(len(vocab), 1)))
    for i, r in enumerate(rows):
        for k, x in r.items():
            M[i, vocab[k]] = x
    n = np.linalg.norm(M, axis=1, keepdims=True)
    return np.divide(M, n, out=np.zeros_like(M), where=n > 0)


def batch_features(feats: list) -> np.ndarray:
    """The (n, n, len(FEATURES)) pair features of a batch of :class:`ArticleFeatures` with vectors, IDF over the
    batch (the offline reference and the training; the writer computes the same cosines from its live IDF)."""
    n = len(feats)
    df: dict[str, int] = {}
    edf: dict[str, int] = {}
    for f in feats:
        for t in set(f.terms):
            df[t] = df.get(t, 0) + 1
        for e in set(f.entities):
            edf[e] = edf.get(e, 0) + 1
    idf = {t: math.log((n + 1.0) / (c + 1.0)) for t, c in df.items()}
    eidf = {e: math.log((n + 1.0) / (c + 1.0)) for e, c in edf.items()}
    trows = [{t: (1.0 + math.log(c)) * idf[t] for t, c in zip(f.terms, f.term_tf)} for f in feats]
    erows = [{e: eidf[e] for e in f.entities} for f in feats]
    V = np.stack([np.asarray(f.vector, dtype=np.float64) for f in feats])
    known = np.array([bool(f.time_known) for f in feats])
    at = np.array([int(f.first_seen_at) for f in feats], dtype=np.int64)
    ent = gram(erows, {e: i for i, e in enumerate(sorted(edf))})
    tfidf = gram(trows, {t: i for i, t in enumerate(sorted(df))})
    rows = [f.places for f in feats]
    places = placemod.gazetteer_matrix(rows, rows)  # local places decide in the writer, never in the fit (docstring)
    return np.stack([V @ V.T, ent, tfidf, time_feature(known, at), places], axis=-1)


def gram(rows: list[dict], vocab: dict[str, int]) -> np.ndarray:
    """Cosines between every pair of sparse rows (key -> weight): a sparse product (scipy, present wherever the
    offline training and reference run), else the dense one of :func:`sparse_unit_rows`."""
    try:
        from scipy import sparse
    except ImportError:  # pragma: no cover - scipy comes with the test and benchmark dependencies
        M = sparse_unit_rows(rows, vocab)
        return M @ M.T
    ri, ci, vals = [], [], []
    for i, r in enumerate(rows):
        norm = math.sqrt(math.fsum(x * x for x in r.values()))
        for k, x in r.items():
            if norm > 0:
                ri.append(i)
                ci.append(vocab[k])
                vals.append(x / norm)
    M = sparse.csr_matrix((vals, (ri, ci)), shape=(len(rows), max(len(vocab), 1)))
    return np.asarray((M @ M.T).todense())


def fit_logistic(X: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1e-3, iters: int = 50) -> np.ndarray:
    """(bias, weights...) of a weighted, lightly L2-regularised logistic regression by Newton's method (IRLS)."""
    A = np.hstack([np.ones((len(X), 1)), X])
    beta = np.zeros(A.shape[1])
    reg = l2 * np.eye(A.shape[1])
    reg[0, 0] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(A @ beta, -30, 30)))
        g = A.T @ (w * (p - y)) + reg @ beta
        H = (A * (w * p * (1 - p))[:, None]).T @ A + reg
        step = np.linalg.solve(H, g)
        beta = beta - step
        if float(np.max(np.abs(step))) < 1e-9:
            break
    return beta
