"""Lexical statistics of one writer: document frequencies over the live stories' original members, the TF-IDF
vectors of articles and the TF-IDF profiles of stories.

IDF = log((N + IDF_PRIOR) / (df + 1)) over the non-copy members of the live stories (a sliding window of the last
~48 h of news: what is frequent *now* is what carries no information now). It is a function of the store's live
members, hence restorable. Each story profile keeps its PROFILE_TERMS / PROFILE_ENTITIES most frequent keys, which
bounds the cost of a score. Sparse vectors are dicts reduced with ``math.fsum`` so that no key order changes a bit.
"""

from __future__ import annotations

import math
import operator
from collections import Counter

import numpy as np

from transforms.stories.config import ClusterConfig
from transforms.stories.state import Member, Story


class LexicalStats:
    """Document frequencies of terms and entities over the counted (live, original) members."""

    def __init__(self, config: ClusterConfig):
        self.config = config
        self.df: Counter = Counter()
        self.edf: Counter = Counter()
        self.ldf: dict[str, float] = {}  # log(df + 1), kept with df: a profile reads it for each of its ~250 keys
        self.ledf: dict[str, float] = {}
        self.n_docs = 0
        self.df_version = 0
        self._vec_cache: dict[str, tuple[dict, dict]] = {}
        self._vec_cache_version = -1

    def count(self, m: Member, sign: int) -> None:
        if m.is_copy:
            return
        self.n_docs += sign
        self.df_version += 1
        for df, ldf, keys in ((self.df, self.ldf, m.terms), (self.edf, self.ledf, m.entities)):
            for k in keys:
                df[k] += sign
                if df[k] <= 0:
                    del df[k]
                    ldf.pop(k, None)
                else:
                    ldf[k] = math.log(df[k] + 1.0)

    def article_vectors(self, terms, tfs, ents, counted: bool) -> tuple[dict, dict]:
        """TF-IDF vectors of an article; ``counted=False`` adds the article itself to the statistics."""
        x = 0 if counted else 1
        n = self.n_docs + x + self.config.idf_prior
        tv = {t: (1.0 + math.log(c)) * math.log(n / (self.df.get(t, 0) + x + 1.0)) for t, c in zip(terms, tfs)}
        ev = {e: math.log(n / (self.edf.get(e, 0) + x + 1.0)) for e in ents}
        return _unit(tv), _unit(ev)

    def member_vectors(self, m: Member) -> tuple[dict, dict]:
        """A counted member's TF-IDF unit vectors, cached while the IDF statistics stand still (a repair tick scores
        the same members in many splits and merges; any article counted or expired clears the cache)."""
        if self._vec_cache_version != self.df_version:
            self._vec_cache.clear()
            self._vec_cache_version = self.df_version
        vecs = self._vec_cache.get(m.article_id)
        if vecs is None:
            vecs = self._vec_cache[m.article_id] = self.article_vectors(m.terms, m.term_tf, m.entities, counted=True)
        return vecs

    def profile(self, s: Story) -> tuple[dict, dict]:
        """The story's (terms, entities) TF-IDF profile under the current IDF (its most frequent keys only).

        weight = (count / n) * (log(N + prior) - log(df + 1)): the keys and count / n are cached on the story until
        its members change; the IDF part is read from ``ldf`` at each call (N and df move with every article).
        """
        if s._profile is None:
            n = max(s.n, 1)
            out = []
            tops = []
            limits = (self.config.profile_terms, self.config.profile_entities)
            for i, (counts, limit) in enumerate(zip((s.tf, s.ent), limits)):
                if s._top is None:  # every key (a new or rebuilt story)
                    ranked = sorted(counts.items(), key=_by_count_then_key)[:limit]
                else:  # only the previous top and the keys that rose since can be in the top now
                    cand = set(s._top[i]) | s._risen[i]
                    ranked = sorted(((k, counts[k]) for k in cand), key=_by_count_then_key)[:limit]
                top = sorted(ranked)
                keys = tuple(k for k, _ in top)
                tops.append(keys)
                pick = operator.itemgetter(*keys) if len(keys) > 1 else None
                out.append((keys, np.array([c for _, c in top], dtype=np.float64) / n, pick))
            s._profile = tuple(out)
            s._top = tuple(tops)
            s._risen = (set(), set())
        log_base = math.log(self.n_docs + self.config.idf_prior)
        return tuple(
            _unit_arrays(keys, share * (log_base - _lookup(ldf, keys, pick)))
            for (keys, share, pick), ldf in zip(s._profile, (self.ldf, self.ledf))
        )


def _unit(v: dict) -> dict:
    """``v`` scaled to unit length (``math.fsum``: correctly rounded, so the key order cannot change a bit)."""
    if not v:
        return v
    n = math.sqrt(math.fsum(x * x for x in v.values()))
    if n <= 0:
        return {}
    return {k: x / n for k, x in v.items()}


def _by_count_then_key(kv: tuple) -> tuple:
    return (-kv[1], kv[0])


def _lookup(table: dict, keys: tuple, pick) -> np.ndarray:
    """``[table.get(k, 0.0) for k in keys]`` as an array; one C call when every key is present (the usual case)."""
    if pick is not None:
        try:
            return np.array(pick(table), dtype=np.float64)
        except KeyError:
            pass
    return np.fromiter((table.get(k, 0.0) for k in keys), np.float64, len(keys))


def _unit_arrays(keys: tuple, w: np.ndarray) -> dict:
    """:func:`_unit` of ``dict(zip(keys, w))``, vectorised (the same arithmetic, element for element)."""
    if not keys:
        return {}
    n = math.sqrt(math.fsum((w * w).tolist()))
    if n <= 0:
        return {}
    return dict(zip(keys, (w / n).tolist()))


def dot(a: dict, b: dict) -> float:
    """Dot product of two sparse vectors (``math.fsum``: independent of the keys' order)."""
    if len(a) > len(b):
        a, b = b, a
    return math.fsum(x * b[k] for k, x in a.items() if k in b)
