"""Story profiles for the writer's decisions: each live story's most frequent keys, kept up to date as articles join,
and an arriving article's TF-IDF dot products with the profiles of all its candidate stories at once.

Reads a :class:`transforms.stories.writer.state.Story`'s key counts and the writer's ``log(df + 1)`` values; writes
only caches (on the story, and the key columns below). The numbers are those of
:meth:`transforms.stories.writer.lexical.LexicalStats.profile` and ``dot``, bit for bit: the same IEEE products and
quotients element by element, each norm and each dot product one ``math.fsum`` (correctly rounded, so neither the
order of the keys nor of the stories can change a bit). tests/transforms/stories/test_lexical_rows.py and
test_profiles.py pin both against the dict arithmetic.

Why: a decision scores ~10 candidate stories, and each profile's weights move with the IDF at every article (a
profile of 250 keys is 250 ``log(df + 1)`` reads per candidate). Keys get a column in an array of ``log(df + 1)``
values (:class:`KeyColumns`, written where ``df`` changes), so one decision reads every candidate's weights in a
few numpy passes; a story's top keys are re-ranked only where the keys of its new members rose (:class:`Ranking`).
"""

from __future__ import annotations

import bisect
import math
import operator
from collections import Counter

import numpy as np

_EMPTY_IDS = np.zeros(0, dtype=np.intp)


class KeyColumns:
    """Per kind (terms, entities): a column per key and each key's ``log(df + 1)`` (0.0 for a key with no df, as
    ``ldf.get(k, 0.0)``). Columns of keys whose df fell to 0 are reclaimed by a renumbering (``epoch`` + 1) once they
    outnumber the live ones, so a long run's memory follows the live vocabulary."""

    def __init__(self):
        self.cols: tuple[dict, dict] = ({}, {})
        self.values = [np.zeros(1024), np.zeros(1024)]
        self.epoch = 0

    def column(self, kind: int, key: str) -> int:
        """The key's column (a new one, holding 0.0, for a key never seen)."""
        cols = self.cols[kind]
        c = cols.get(key)
        if c is None:
            c = cols[key] = len(cols)
            if c >= len(self.values[kind]):
                self.values[kind] = np.concatenate([self.values[kind], np.zeros(len(self.values[kind]))])
        return c

    def columns(self, kind: int, keys: tuple) -> np.ndarray:
        """The columns of ``keys``."""
        if not keys:
            return _EMPTY_IDS
        cols = self.cols[kind]
        try:
            return np.fromiter(map(cols.__getitem__, keys), np.intp, len(keys))
        except KeyError:
            return np.fromiter((self.column(kind, k) for k in keys), np.intp, len(keys))

    def renumber(self, kind: int, ldf: dict) -> None:
        """Columns for the keys of ``ldf`` only (the live ones), their values from it; cached columns go stale."""
        cols = dict(zip(ldf, range(len(ldf))))
        size = max(1024, 2 * len(cols))
        values = np.zeros(size)
        values[: len(cols)] = np.fromiter(ldf.values(), np.float64, len(cols))
        self.cols = tuple(cols if k == kind else self.cols[k] for k in (0, 1))
        self.values[kind] = values
        self.epoch += 1


class Ranking:
    """A story's top ``limit`` keys of one kind by (-count, key), with the count each was ranked at. :meth:`update`
    re-ranks only the keys that rose: every other key kept its count, and the ranked ones only rose, so the top of
    (old top + risen keys) is the top of all keys; inserting the risen keys one at a time, the worst dropped past
    ``limit``, gives that top (a key dropped had ``limit`` keys above it, which can only climb)."""

    __slots__ = ("limit", "ranked", "counted")

    def __init__(self, counts: Counter, limit: int):
        self.limit = limit
        self.ranked = sorted((-c, k) for k, c in counts.items())[:limit]
        self.counted = {k: -c for c, k in self.ranked}

    def update(self, counts: Counter, risen: set) -> None:
        ranked, counted = self.ranked, self.counted
        for k in risen:
            c = counts[k]
            old = counted.get(k)
            if old is not None:
                if old == c:
                    continue
                del ranked[bisect.bisect_left(ranked, (-old, k))]
            bisect.insort(ranked, (-c, k))
            counted[k] = c
            if len(ranked) > self.limit:
                del counted[ranked.pop()[1]]


def profile_parts(lex, s) -> tuple:
    """Per kind (keys, count / n, their columns, key -> position): cached on the story until its members change (the
    columns until the key columns are renumbered). The keys are the story's top keys in no particular order: every
    sum over them is an ``fsum`` (a story with at most PROFILE_TERMS / PROFILE_ENTITIES keys keeps them all, unranked)."""
    cols = lex.columns
    cached = s._profile
    if cached is not None:
        if cached[0] == cols.epoch:
            return cached[1]
        parts = tuple((p[0], p[1], cols.columns(i, p[0]), p[3]) for i, p in enumerate(cached[1]))
        s._profile = (cols.epoch, parts)
        return parts
    limits = (lex.config.profile_terms, lex.config.profile_entities)
    tops = s._top if isinstance(s._top, tuple) else (None, None)
    n = max(s.n, 1)
    out = []
    rankings = []
    for i, (counts, limit) in enumerate(zip((s.tf, s.ent), limits)):
        rank = tops[i] if isinstance(tops[i], Ranking) and tops[i].limit == limit else None
        if len(counts) <= limit:  # every key is in the top
            rank = None
            keys = tuple(counts)
        elif rank is None:  # every key ranked (a new or rebuilt story, or one that just passed the limit)
            rank = Ranking(counts, limit)
            keys = tuple(rank.counted)
        else:
            rank.update(counts, s._risen[i])
            keys = tuple(rank.counted)
        rankings.append(rank)
        if len(keys) > 1:
            share = np.array(operator.itemgetter(*keys)(counts), dtype=np.float64) / n
        else:
            share = np.array([counts[k] for k in keys], dtype=np.float64) / n
        out.append((keys, share, cols.columns(i, keys), dict(zip(keys, range(len(keys))))))
    parts = tuple(out)
    s._profile = (cols.epoch, parts)
    s._top = tuple(rankings)
    s._risen = (set(), set())
    return parts


def weights(lex, kind: int, share: np.ndarray, ids: np.ndarray, log_base: float) -> np.ndarray:
    """``share * (log(N + prior) - log(df + 1))`` of a profile's keys: its TF-IDF weights under the current IDF."""
    return share * (log_base - lex.columns.values[kind][ids])


def profile_dots_many(lex, stories: list, vecs: tuple[dict, dict]) -> list[tuple[float, float]]:
    """``(dot(vecs[0], profile(s)[0]), dot(vecs[1], profile(s)[1]))`` of each story, bit for bit: the weights of
    every candidate that shares a key with the vector in one numpy pass per kind, then per such story its norm (one
    ``fsum`` of the squares) and each shared key's ``x * (w / norm)`` (the IEEE operations of the dict arithmetic,
    in Python floats) in one ``fsum``; 0.0 for a story that shares none."""
    parts = [profile_parts(lex, s) for s in stories]
    out = [[0.0] * len(stories), [0.0] * len(stories)]
    log_base = math.log(lex.n_docs + lex.config.idf_prior)
    for kind in (0, 1):
        v = vecs[kind]
        if not v:
            continue
        common = []
        for j, p in enumerate(parts):
            pos = p[kind][3]
            shared = [(x, pos[k]) for k, x in v.items() if k in pos]
            if shared:
                common.append((j, p[kind], shared))
        if common:
            _dots_of_kind(lex, kind, common, log_base, out[kind])
    return list(zip(out[0], out[1]))


def _dots_of_kind(lex, kind: int, common: list, log_base: float, into: list) -> None:
    """The dot products of one kind (see :func:`profile_dots_many`) of the stories that share keys, into ``into``."""
    if len(common) > 1:
        ids = np.concatenate([p[2] for _, p, _ in common])
        share = np.concatenate([p[1] for _, p, _ in common])
    else:
        ids, share = common[0][1][2], common[0][1][1]
    w = weights(lex, kind, share, ids, log_base)
    squares = (w * w).tolist()
    w = w.tolist()
    at = 0
    for j, p, shared in common:
        end = at + len(p[0])
        norm = math.sqrt(math.fsum(squares[at:end]))
        into[j] = math.fsum([x * (w[at + i] / norm) for x, i in shared]) if norm > 0 else 0.0
        at = end
