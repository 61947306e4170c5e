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
few numpy passes; a story keeps its top keys with their columns and counts (:class:`TopKeys`) and changes them only
where the keys of its new members rose (:class:`Ranking` when it has more keys than the profile holds).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter

import numpy as np

_EMPTY_IDS = np.zeros(0, dtype=np.intp)


class KeyColumns:
    """A column per key of each kind (terms, entities: one column space), each key's ``log(df + 1)`` in ``values``
    (0.0 for a key with no df, as ``ldf.get(k, 0.0)``) and its df in ``dfs`` (0 for none, as ``df.get(k, 0)``: the
    repair reads a story's IDF values by df, :meth:`LexicalStats._idf_by_column`). Columns of keys whose df fell to 0
    are reclaimed by a renumbering (``epoch`` + 1) once they outnumber the live ones, so a long run's memory follows
    the live vocabulary."""

    def __init__(self):
        self.cols: tuple[dict, dict] = ({}, {})
        self.values = np.zeros(1024)
        self.dfs = np.zeros(1024, dtype=np.intp)
        self.size = 0
        self.epoch = 0

    def column(self, kind: int, key: str) -> int:
        """The key's column (a new one, holding 0.0, for a key never seen)."""
        c = self.cols[kind].get(key)
        if c is None:
            c = self.cols[kind][key] = self.size
            self.size += 1
            if c >= len(self.values):
                self.values = np.concatenate([self.values, np.zeros(len(self.values))])
                self.dfs = np.concatenate([self.dfs, np.zeros(len(self.dfs), dtype=np.intp)])
        return c

    def columns(self, kind: int, keys) -> np.ndarray:
        """The columns of ``keys``."""
        if not keys:
            return _EMPTY_IDS
        cols = self.cols[kind]
        try:
            return np.fromiter(map(cols.__getitem__, keys), np.intp, len(keys))
        except KeyError:
            return np.fromiter((self.column(kind, k) for k in keys), np.intp, len(keys))

    def renumber(self, ldfs: tuple[dict, dict], dfs: tuple[dict, dict]) -> None:
        """Columns for the keys of the ``ldf`` of each kind only (the live ones), their values and dfs from them and
        ``dfs`` (the same keys); every column a story keeps goes stale (:attr:`epoch`)."""
        n0, n1 = len(ldfs[0]), len(ldfs[1])
        self.cols = (dict(zip(ldfs[0], range(n0))), dict(zip(ldfs[1], range(n0, n0 + n1))))
        self.size = n0 + n1
        self.values = np.zeros(max(1024, 2 * self.size))
        self.values[:n0] = np.fromiter(ldfs[0].values(), np.float64, n0)
        self.values[n0 : self.size] = np.fromiter(ldfs[1].values(), np.float64, n1)
        self.dfs = np.zeros(len(self.values), dtype=np.intp)
        self.dfs[:n0] = np.fromiter(map(dfs[0].__getitem__, ldfs[0]), np.intp, n0)
        self.dfs[n0 : self.size] = np.fromiter(map(dfs[1].__getitem__, ldfs[1]), np.intp, n1)
        self.epoch += 1

    def crowded(self, live: int) -> bool:
        """Whether the columns of keys no live story holds outnumber the ``live`` ones (time to renumber)."""
        return self.size > 2 * live + 8192


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

    def update(self, counts: Counter, risen: set) -> set:
        """Re-rank the ``risen`` keys; returns the keys that left the top."""
        ranked, counted = self.ranked, self.counted
        left = set()
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
                out = ranked.pop()[1]
                del counted[out]
                left.add(out)
        return left


class TopKeys:
    """One kind of a story's profile: its top keys in slots (any order: every sum over them is an ``fsum``), each
    slot's key column and count, and ``share`` = count / n as of the last :meth:`refresh`. A story with at most
    ``limit`` keys keeps them all (no ranking); past it, :class:`Ranking` says which keys enter and leave."""

    __slots__ = ("limit", "ranking", "keys", "pos", "ids", "counts", "share", "epoch")

    def __init__(self, cols: KeyColumns, kind: int, counts: Counter, limit: int):
        self.limit = limit
        self.ranking = Ranking(counts, limit) if len(counts) > limit else None
        self.keys = list(self.ranking.counted if self.ranking is not None else counts)
        self.pos = dict(zip(self.keys, range(len(self.keys))))
        size = max(8, 2 * len(self.keys))
        self.ids = np.zeros(size, dtype=np.intp)
        self.ids[: len(self.keys)] = cols.columns(kind, self.keys)
        self.counts = np.zeros(size)
        if self.keys:
            self.counts[: len(self.keys)] = [counts[k] for k in self.keys]
        self.epoch = cols.epoch
        self.share = self.counts[:0]

    def refresh(self, cols: KeyColumns, kind: int, counts: Counter, risen: set, n: int) -> TopKeys:
        """The top after the ``risen`` keys' counts rose (a new instance when it now needs a ranking)."""
        top = self
        if self.ranking is None and len(counts) > self.limit:
            top = TopKeys(cols, kind, counts, self.limit)  # it just passed the limit: rank every key once
        elif self.ranking is None:
            for k in risen:
                slot = self.pos.get(k)
                if slot is None:
                    slot = self._slot(cols, kind, k, None)
                self.counts[slot] = counts[k]
        else:
            free = [self.pos.pop(k) for k in self.ranking.update(counts, risen) if k in self.pos]
            counted = self.ranking.counted
            for k in risen:
                if k in counted:
                    slot = self.pos.get(k)
                    if slot is None:
                        slot = self._slot(cols, kind, k, free.pop() if free else None)
                    self.counts[slot] = counts[k]
            if free:  # never (as many keys enter as leave): rebuilt rather than left with a stale slot
                top = TopKeys(cols, kind, counts, self.limit)
        if top.epoch != cols.epoch:
            top.ids[: len(top.keys)] = cols.columns(kind, top.keys)
            top.epoch = cols.epoch
        top.share = top.counts[: len(top.keys)] / n
        return top

    def _slot(self, cols: KeyColumns, kind: int, key: str, slot: int | None) -> int:
        """Put ``key`` in ``slot`` (one its leaving key freed) or a new one at the end."""
        if slot is None:
            slot = len(self.keys)
            self.keys.append(key)
            if slot >= len(self.ids):
                self.ids = np.concatenate([self.ids, np.zeros(len(self.ids), dtype=np.intp)])
                self.counts = np.concatenate([self.counts, np.zeros(len(self.counts))])
        else:
            self.keys[slot] = key
        self.pos[key] = slot
        self.ids[slot] = cols.column(kind, key)
        return slot

    def columns(self) -> np.ndarray:
        return self.ids[: len(self.keys)]


def profile_parts(lex, s) -> tuple[TopKeys, TopKeys]:
    """The story's :class:`TopKeys` of each kind as of its members and the key columns now (refreshed when its
    members changed since: :attr:`Story._profile` is None, or the columns were renumbered)."""
    cols = lex.columns
    cached = s._profile
    if cached is not None and cached[0] == cols.epoch:
        return cached[1]
    limits = (lex.config.profile_terms, lex.config.profile_entities)
    tops = s._top if isinstance(s._top, tuple) and all(isinstance(t, TopKeys) for t in s._top) else None
    n = max(s.n, 1)
    out = []
    for i, (counts, limit) in enumerate(zip((s.tf, s.ent), limits)):
        if tops is None or tops[i].limit != limit:  # a new or rebuilt story (or another calibration): every key
            out.append(TopKeys(cols, i, counts, limit).refresh(cols, i, counts, set(), n))
        else:
            out.append(tops[i].refresh(cols, i, counts, s._risen[i], n))
    parts = tuple(out)
    s._profile = (cols.epoch, parts)
    s._top = parts
    s._risen = (set(), set())
    return parts


def weights(lex, share: np.ndarray, ids: np.ndarray, log_base: float) -> np.ndarray:
    """``share * (log(N + prior) - log(df + 1))`` of a profile's keys: its TF-IDF weights under the current IDF."""
    return share * (log_base - lex.columns.values[ids])


def profile_dots_many(lex, stories: list, vecs: tuple[dict, dict]) -> list[tuple[float, float]]:
    """``(dot(vecs[0], profile(s)[0]), dot(vecs[1], profile(s)[1]))`` of each story, bit for bit: the weights of
    every profile (both kinds) that shares a key with the vector in one numpy pass, then per such profile its norm
    (one ``fsum`` of the squares) and each shared key's ``x * (w / norm)`` (the IEEE operations of the dict
    arithmetic, in Python floats) in one ``fsum``; 0.0 for a profile that shares none."""
    parts = [profile_parts(lex, s) for s in stories]
    out = [[0.0] * len(stories), [0.0] * len(stories)]
    common = []
    for kind in (0, 1):
        v = vecs[kind]
        if not v:
            continue
        keys = v.keys()
        for j, p in enumerate(parts):
            top = p[kind]
            shared = keys & top.pos.keys()
            if shared:
                pos = top.pos
                common.append((out[kind], j, top, [(v[k], pos[k]) for k in shared]))
    if not common:
        return list(zip(out[0], out[1]))
    if len(common) > 1:
        ids = np.concatenate([top.columns() for _, _, top, _ in common])
        share = np.concatenate([top.share for _, _, top, _ in common])
    else:
        ids, share = common[0][2].columns(), common[0][2].share
    w = weights(lex, share, ids, math.log(lex.n_docs + lex.config.idf_prior))
    squares = (w * w).tolist()
    w = w.tolist()
    at = 0
    for into, j, top, shared in common:
        end = at + len(top.keys)
        norm = math.sqrt(math.fsum(squares[at:end]))
        into[j] = math.fsum([x * (w[at + i] / norm) for x, i in shared]) if norm > 0 else 0.0
        at = end
    return list(zip(out[0], out[1]))
