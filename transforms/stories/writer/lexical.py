"""Lexical statistics of one writer: document frequencies over the live stories' original members, the TF-IDF
vectors of articles and the TF-IDF profiles of stories.

IDF = log((N + IDF_PRIOR) / (df + 1)) over the non-copy members of the live stories (a sliding window of the last
~48 h of news: what is frequent *now* is what carries no information now). It is a function of the store's live
members, hence restorable. Each story profile keeps its PROFILE_TERMS / PROFILE_ENTITIES most frequent keys, which
bounds the cost of a score. Sparse vectors are dicts reduced with ``math.fsum`` so that no key order changes a bit.

Speed without other bits: the writer's hot paths read the same numbers through cheaper shapes. A counted member's
unit vectors are kept as ``(keys, values)`` rows (:meth:`LexicalStats.unit_rows`: numpy products and quotients are
the IEEE operations Python's floats do, the norm is the same ``fsum``), and an article is scored against a story's
profile without building the profile's dicts (:meth:`LexicalStats.profile_dots`: only the shared keys enter a dot
product). tests/transforms/stories/test_lexical_rows.py pins both against the plain dict arithmetic.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import chain

import numpy as np

from transforms.stories.vocabulary.config import ClusterConfig
from transforms.stories.writer import profiles
from transforms.stories.writer.profiles import KeyColumns
from transforms.stories.writer.state import Member, Story


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
        # Unit rows of counted members and the counted IDF of each key, kept while df_version stands still.
        self._rows: dict[str, tuple] = {}
        self._idf: tuple[dict, dict] = ({}, {})
        self._idf_by_df: tuple = (None, _EMPTY)  # (n, log(n / (df + 1)) by df, NaN: not yet taken)
        self._rows_version = -1
        self.columns = KeyColumns()  # each key's log(df + 1) in an array, for the profiles (profiles.py)

    def __setstate__(self, state: dict) -> None:
        """A writer pickled before the key columns (or their dfs) existed (a backfill checkpoint) gets them from its
        ``ldf`` and ``df``."""
        self.__dict__.update(state)
        self.__dict__.pop("_idf_cols", None)  # (a checkpoint's per-column table: replaced by the one by df)
        self._idf_by_df = (None, _EMPTY)
        columns = state.get("columns")
        if not isinstance(columns, KeyColumns) or not hasattr(columns, "dfs"):
            self.columns = KeyColumns()
            self.columns.renumber((self.ldf, self.ledf), (self.df, self.edf))

    def count(self, m: Member, sign: int) -> None:
        if m.is_copy:
            return
        self.n_docs += sign
        self.df_version += 1
        cols = self.columns
        for kind, (df, ldf, keys) in enumerate(((self.df, self.ldf, m.terms), (self.edf, self.ledf, m.entities))):
            colmap, column = cols.cols[kind], cols.column
            # each key's new log(df + 1) written where it changes: a member's ~10 keys cost less one element at a
            # time than as arrays; df.get, not the Counter's ``+=`` (its __missing__ is a Python call per new key)
            for k in keys:
                d = df.get(k, 0) + sign
                if d <= 0:
                    df.pop(k, None)
                    ldf.pop(k, None)
                    c = colmap.get(k)
                    if c is not None:
                        cols.values[c] = 0.0
                        cols.dfs[c] = 0
                else:
                    df[k] = d
                    ldf[k] = x = math.log(d + 1.0)
                    c = colmap.get(k)
                    if c is None:
                        c = column(kind, k)  # before ``cols.values`` is read: a new column may grow it
                    cols.values[c] = x
                    cols.dfs[c] = d
        if sign < 0 and cols.crowded(len(self.ldf) + len(self.ledf)):
            cols.renumber((self.ldf, self.ledf), (self.df, self.edf))  # columns of keys no live story holds, reclaimed

    def article_vectors(self, terms, tfs, ents, counted: bool) -> tuple[dict, dict]:
        """TF-IDF vectors of an article; ``counted=False`` adds the article itself to the statistics."""
        x = 0 if counted else 1
        n = self.n_docs + x + self.config.idf_prior
        tv = {t: (1.0 + math.log(c)) * math.log(n / (self.df.get(t, 0) + x + 1.0)) for t, c in zip(terms, tfs)}
        ev = {e: math.log(n / (self.edf.get(e, 0) + x + 1.0)) for e in ents}
        return _unit(tv), _unit(ev)

    def member_vectors(self, m: Member) -> tuple[dict, dict]:
        """A counted member's TF-IDF unit vectors (the dicts of :meth:`unit_rows`)."""
        return tuple(dict(zip(keys, vals.tolist())) for keys, vals in self.unit_rows(m))

    def unit_rows(self, m: Member) -> tuple[tuple, tuple]:
        """A counted member's (terms, entities) TF-IDF unit vectors as ``(keys, values)`` rows, bit for bit the
        values of ``article_vectors(..., counted=True)``; kept while the IDF statistics stand still (a repair tick
        scores the same members in many splits and merges; any article counted or expired clears them)."""
        return self.unit_rows_of([m])[0]

    def _current(self) -> None:
        """Drop the unit rows and IDF values kept for an earlier IDF state."""
        if self._rows_version != self.df_version:
            self._rows = {}  # a new dict: clearing one of a whole tick's rows costs more than dropping it
            self._idf = ({}, {})
            self._rows_version = self.df_version

    def unit_rows_of(self, ms: list[Member]) -> list[tuple[tuple, tuple]]:
        """:meth:`unit_rows` of each member; those not kept yet are computed together, one numpy pass per kind
        (the same operations element by element; a story's hundreds of members cost one call, not hundreds)."""
        self._current()
        kept = self._rows
        todo = list({m.article_id: m for m in ms if m.article_id not in kept}.values())
        if todo:
            n = self.n_docs + self.config.idf_prior
            terms = [m.terms for m in todo]
            ents = [m.entities for m in todo]
            tw = np.concatenate([m.term_weights() for m in todo]) * self._gather(self._idf[0], self.df, terms, n)
            ew = self._gather(self._idf[1], self.edf, ents, n)
            for m, t, e in zip(todo, _unit_batch(terms, tw), _unit_batch(ents, ew)):
                kept[m.article_id] = (t, e)
        return [kept[m.article_id] for m in ms]

    def story_sums(self, s: Story, ms: list[Member]) -> tuple[dict, dict] | None:
        """``(sum_rows(terms rows), sum_rows(entities rows))`` of :meth:`unit_rows_of` ``(ms)``, bit for bit, where
        ``ms`` are ``s``'s originals in article-id order (None when a row's norm is not > 0: the caller sums rows).
        ``np.bincount`` adds each key's values one after the other from 0.0, in member order, as ``np.add.at`` does."""
        units = self.story_units(s, ms)
        if units is None:
            return None
        sums = [
            np.bincount(idx, weights=unit, minlength=len(keys)) if len(idx) else _EMPTY for keys, idx, unit, _ in units
        ]
        lay = s._sums
        lay.base = (lay.n, tuple((len(u[0]), len(u[1]), idf, x) for u, idf, x in zip(units, lay.idf[1], sums)))
        return tuple(dict(zip(u[0], x.tolist())) if len(u[1]) else {} for u, x in zip(units, sums))

    def story_bounds(self, s: Story, ms: list[Member]) -> tuple | None:
        """Per kind (terms, entities): (the key columns of ``s``'s keys, an upper bound of each key's
        :meth:`story_sums` value under the current IDF), or None when the story has no sums computed before (or its
        layout was rebuilt since). ``ms``: ``s``'s originals in article-id order.

        Why: the merge pass needs a pair's exact sums only when its margin can reach 0, and the shared-count bound
        of :meth:`Scorer.surely_below` (each unit value <= 1) is ~6x the real cosines on headlines, so ~7,700 pairs
        of the 20,000-headline stream had both stories' sums recomputed under the tick's IDF (a row norm per member)
        for 228 margins >= 0. The sums kept from the last time they were computed bound today's: with r_j the ratio
        of a key's IDF now to then, a member's unit value of key k is t_k idf_k / |t idf|, so now it is at most its
        old value times r_k / min_j r_j, at most R = max r / min r over the story's keys then; the originals that
        joined since add at most 1 per key they hold (a unit value is <= 1). So each key's sum is at most R x its
        old sum + its count among the new originals (times 1 + 1e-9 for the sums' own rounding). Kept per IDF state."""
        lay = s._sums
        if not isinstance(lay, SumsLayout) or lay.base is None or not lay.extends(ms):
            return None
        if lay.bounds is not None and lay.bounds[0] == self.df_version and lay.bounds[1] == len(ms):
            return lay.bounds[2]
        lay.grow(ms)
        n = self.n_docs + self.config.idf_prior
        out = []
        for kind, (k0, occ0, idf_then, then) in enumerate(lay.base[1]):
            keys, idx, _, _ = lay.arrays(kind)
            cols = lay.key_columns(kind, self.columns)
            bound = np.zeros(len(keys))
            if k0:
                r = self._idf_by_column(cols[:k0], n) / idf_then
                if not (float(idf_then.min()) > 0.0 and float(r.min()) > 0.0):
                    return None  # an IDF <= 0 (an idf_prior < 1 lets df + 1 reach n): the ratio argument needs > 0
                bound[:k0] = then * (float(r.max()) / float(r.min()))
            if len(idx) > occ0:
                bound += np.bincount(idx[occ0:], minlength=len(keys))
            out.append((cols, bound * (1.0 + 1e-9)))
        lay.bounds = (self.df_version, len(ms), tuple(out))
        return lay.bounds[2]

    def story_units(self, s: Story, ms: list[Member]) -> tuple | None:
        """Per kind (terms, entities): (keys, key of each occurrence, its unit-row value, keys per member) of
        ``ms``, ``s``'s originals in article-id order: the values of :meth:`unit_rows_of` ``(ms)`` one row after the
        other, bit for bit (None when a row's norm is not > 0: the caller takes the rows).

        The repair scores a story at every tick and the IDF moves between ticks, so every member's unit row is new
        each time; what does not move is where its keys go. The story keeps that (:class:`SumsLayout`, grown as
        originals arrive in id order), so a tick costs a few numpy passes and one ``fsum`` per member instead of a
        Python step per key: the same products, quotients and norms. Kept for the IDF state (a split attempt and
        the merge pass of one tick read the same)."""
        lay = s._sums
        if not isinstance(lay, SumsLayout) or not lay.extends(ms):
            lay = s._sums = SumsLayout()
        lay.grow(ms)
        self._current()
        if lay.units is not None and lay.units[0] == self.df_version:
            return lay.units[1]
        n = self.n_docs + self.config.idf_prior
        out = []
        idfs = []
        for kind in (0, 1):
            keys, idx, weights, lens = lay.arrays(kind)
            if not len(idx):
                out.append((keys, idx, _EMPTY, lens))
                idfs.append(_EMPTY)
                continue
            idfs.append(self._idf_by_column(lay.key_columns(kind, self.columns), n))
            w = idfs[-1][idx]
            if weights is not None:
                w = weights * w
            norms = row_norms(w, lens)
            if not (norms[lens > 0] > 0).all():
                return None
            out.append((keys, idx, w / np.repeat(norms, lens), lens))
        lay.units = (self.df_version, tuple(out))
        lay.idf = (self.df_version, tuple(idfs))  # each key's IDF then (story_sums keeps it for story_bounds)
        return lay.units[1]

    def _idf_by_column(self, cols: np.ndarray, n: float) -> np.ndarray:
        """``[log(n / (df[k] + 1)) for k in keys]`` (``cols``: the keys' columns; the values of :meth:`_gather`), read
        by each key's df (:attr:`KeyColumns.dfs`) from a table of ``log(n / (df + 1))`` by df for this ``n``: the
        value is a function of (n, df) alone, the same ``math.log`` of the same quotient, and the live keys' dfs are
        few distinct numbers (most keys are held by a few articles), so a tick takes a few dozen logarithms where a
        Python step per key of every story it scored took thousands (~5 % of the writer on the 20,000-headline
        stream). Kept while ``n`` stands still; a df moving leaves the table right (it is read by the new df)."""
        dfs = self.columns.dfs[cols]
        have_n, table = self._idf_by_df
        top = int(dfs.max()) if len(dfs) else 0
        if have_n != n or len(table) <= top:
            grown = np.full(max(64, 2 * (top + 1)), np.nan)
            if have_n == n:
                grown[: len(table)] = table
            table = grown
            self._idf_by_df = (n, table)
        vals = table[dfs]
        missing = np.isnan(vals)
        if missing.any():  # dfs no story read yet at this n: their logarithms, kept in the table
            new = np.unique(dfs[missing]).tolist()
            table[new] = [math.log(n / (d + 1.0)) for d in new]
            vals = table[dfs]
        return vals

    @staticmethod
    def _gather(idf: dict, df: Counter, keys: list[tuple], n: float) -> np.ndarray:
        """``[log(n / (df[k] + 1)) for k in chain(*keys)]``, each key's logarithm taken once per IDF state."""
        flat = list(chain.from_iterable(keys))
        for k in set(flat).difference(idf):
            idf[k] = math.log(n / (df.get(k, 0) + 1.0))
        return np.fromiter(map(idf.__getitem__, flat), np.float64, len(flat))

    def profile(self, s: Story) -> tuple[dict, dict]:
        """The story's (terms, entities) TF-IDF profile under the current IDF (its most frequent keys only).

        weight = (count / n) * (log(N + prior) - log(df + 1)): the keys and count / n are cached on the story until
        its members change (:func:`profiles.profile_parts`); the IDF part is read at each call (N and df move with
        every article).
        """
        log_base = math.log(self.n_docs + self.config.idf_prior)
        return tuple(
            _unit_arrays(top.keys, profiles.weights(self, top.share, top.columns(), log_base))
            for top in profiles.profile_parts(self, s)
        )

    def profile_dots(self, s: Story, vecs: tuple[dict, dict]) -> tuple[float, float]:
        """``(dot(vecs[0], profile(s)[0]), dot(vecs[1], profile(s)[1]))``, bit for bit, without the profile's dicts
        (:func:`profiles.profile_dots_many` of one story)."""
        return profiles.profile_dots_many(self, [s], vecs)[0]

    def profile_dots_many(self, stories: list[Story], vecs: tuple[dict, dict]) -> list[tuple[float, float]]:
        """:meth:`profile_dots` of each story (an arrival's candidates), computed together."""
        return profiles.profile_dots_many(self, stories, vecs)


_EMPTY = np.zeros(0, dtype=np.float64)


class SumsLayout:
    """Where the keys of a story's originals (in article-id order) go in the sums of their unit rows, per kind
    (terms, entities): the keys in first-seen order, each key occurrence's column, the terms' TF weights, each
    member's number of keys. A function of the members only (never of the IDF), so kept from tick to tick."""

    __slots__ = (
        "n",
        "last",
        "cols",
        "keys",
        "idx",
        "weights",
        "lens",
        "_arrays",
        "units",
        "_key_columns",
        "idf",
        "base",
        "bounds",
    )

    def __init__(self):
        self.n, self.last = 0, ""
        self.cols: tuple[dict, dict] = ({}, {})
        self.keys: tuple[list, list] = ([], [])
        self.idx: tuple[list, list] = ([], [])
        self.weights: list[float] = []
        self.lens: tuple[list, list] = ([], [])
        self._arrays: list = [None, None]  # per kind, arrays() of the members laid out when it was last read
        self.units: tuple | None = None  # (IDF state, LexicalStats.story_units of it)
        self.idf: tuple | None = None  # (IDF state, per kind each key's IDF in it): story_units'
        # (members laid out, per kind (keys then, occurrences then, their IDF then, each key's sum then)): the last
        # story_sums, what LexicalStats.story_bounds bounds the sums of a later IDF state by
        self.base: tuple | None = None
        self.bounds: tuple | None = None  # (IDF state, members, LexicalStats.story_bounds of them)
        self._key_columns: list = [None, None]  # per kind, (KeyColumns epoch, the keys' columns)

    def __getstate__(self) -> dict:
        """Pickled without the arrays and unit values it derives (the writer's checkpoint stays small)."""
        return {k: getattr(self, k) for k in ("n", "last", "cols", "keys", "idx", "weights", "lens")}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            setattr(self, k, v)
        self._arrays, self.units, self._key_columns = [None, None], None, [None, None]
        self.idf = self.base = self.bounds = None

    def extends(self, ms: list[Member]) -> bool:
        """Whether ``ms`` (id order) are the members laid out so far followed by later ids only."""
        return len(ms) >= self.n and (self.n == 0 or ms[self.n - 1].article_id == self.last)

    def grow(self, ms: list[Member]) -> None:
        for m in ms[self.n :]:
            for kind, keys in enumerate((m.terms, m.entities)):
                cols, order, idx = self.cols[kind], self.keys[kind], self.idx[kind]
                for k in keys:
                    c = cols.get(k)
                    if c is None:
                        c = cols[k] = len(order)
                        order.append(k)
                    idx.append(c)
                self.lens[kind].append(len(keys))
            self.weights.extend(m.term_weights().tolist())
        if len(ms) > self.n:
            self.n, self.last = len(ms), ms[-1].article_id
            self.units = None

    def key_columns(self, kind: int, columns: KeyColumns) -> np.ndarray:
        """The column (:class:`KeyColumns`) of each key of one kind, in :attr:`keys` order: extended as keys are laid
        out, taken anew when the columns were renumbered."""
        keys = self.keys[kind]
        have = self._key_columns[kind]
        if have is not None and have[0] == columns.epoch and len(have[1]) == len(keys):
            return have[1]
        if have is not None and have[0] == columns.epoch:
            got = np.concatenate([have[1], columns.columns(kind, keys[len(have[1]) :])])
        else:
            got = columns.columns(kind, keys)
        self._key_columns[kind] = (columns.epoch, got)
        return got

    def arrays(self, kind: int) -> tuple:
        """(keys, column of each occurrence, TF weights or None for entities, keys per member) of one kind.

        Grown with the layout: only the members laid out since the last call are converted (a story that gains an
        article per tick would otherwise turn its whole layout into arrays at every tick)."""
        lens = self.lens[kind]
        have = self._arrays[kind]
        if have is not None and len(have[3]) == len(lens):
            return have
        keys, idx, weights, arr = have or ((), _EMPTY_IDX, _EMPTY if kind == 0 else None, _EMPTY_IDX)
        done = len(idx)
        keys = keys + tuple(self.keys[kind][len(keys) :])
        idx = np.concatenate([idx, np.array(self.idx[kind][done:], dtype=np.intp)])
        if kind == 0:
            weights = np.concatenate([weights, np.array(self.weights[done:], dtype=np.float64)])
        arr = np.concatenate([arr, np.array(lens[len(arr) :], dtype=np.intp)])
        self._arrays[kind] = (keys, idx, weights, arr)
        return self._arrays[kind]


_EMPTY_IDX = np.zeros(0, dtype=np.intp)


def _row_norms(w: np.ndarray, lens: list[int]) -> list[float]:
    """The Euclidean norm of each row of ``w`` (rows of ``lens`` weights one after the other), each the square root of
    the ``fsum`` of its squares: the same bits as :func:`_unit`'s norm of that row alone."""
    squares = (w * w).tolist()
    norms = []
    at = 0
    for size in lens:
        norms.append(math.sqrt(math.fsum(squares[at : at + size])))
        at += size
    return norms


# Unit roundoff of np.longdouble (x87 extended: 2^-64; where it is plain double, the check below always falls back).
_EXT_EPS = float(np.finfo(np.longdouble).eps) / 2
_EXTENDED = np.finfo(np.longdouble).nmant >= 63


def row_norms(w: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """:func:`_row_norms` as an array: ``sqrt(fsum(squares of the row))`` for every row, in a few numpy passes.

    ``math.fsum`` is correctly rounded. Each row's squares (the float64 products, as ``fsum`` would read them) are
    summed in extended precision; k non-negative terms summed so are within (k + 2) x its roundoff (relative) of the
    exact sum, and where both ends of that interval round to the same float64, that float64 is the correctly rounded
    sum, which is ``fsum``'s. The rare row whose interval straddles a rounding boundary (or any row, where
    ``np.longdouble`` is no wider than float64) is summed by ``fsum`` itself. ``sqrt`` is IEEE's in both."""
    if len(lens) <= 16:  # a few rows: their fsum calls cost less than the numpy passes
        return np.array(_row_norms(w, lens.tolist()), dtype=np.float64)
    squares = w * w
    sums = np.zeros(len(lens), dtype=np.float64)
    rows = np.flatnonzero(lens)
    if len(rows):
        starts = (np.cumsum(lens) - lens)[rows]
        if _EXTENDED:
            ext = np.add.reduceat(squares.astype(np.longdouble), starts)
            slack = (lens[rows] + 4).astype(np.longdouble) * _EXT_EPS
            lo, hi = (ext * (1 - slack)).astype(np.float64), (ext * (1 + slack)).astype(np.float64)
            sure = lo == hi
            sums[rows[sure]] = lo[sure]
            rows, starts = rows[~sure], starts[~sure]
        for r, at in zip(rows.tolist(), starts.tolist()):
            sums[r] = math.fsum(squares[at : at + int(lens[r])].tolist())
    return np.sqrt(sums)


def _unit_batch(keys: list[tuple], w: np.ndarray) -> list[tuple[tuple, np.ndarray]]:
    """:func:`_unit` of each ``dict(zip(keys[i], its weights))`` as a ``(keys, values)`` row (empty when the norm is
    not > 0), ``w`` holding the rows' weights one after the other: each norm is the ``fsum`` of its row's squares,
    each value its weight over that norm."""
    lens = [len(k) for k in keys]
    norms = _row_norms(w, lens)
    with np.errstate(divide="ignore", invalid="ignore"):  # rows whose norm is 0 are dropped below
        unit = w / np.repeat(np.array(norms, dtype=np.float64), lens)
    out = []
    at = 0
    for k, size, norm in zip(keys, lens, norms):
        out.append((k, unit[at : at + size]) if size and norm > 0 else ((), _EMPTY))
        at += size
    return out


def sum_rows(rows: list) -> dict:
    """``{key: sum of its values}`` over ``(keys, values)`` rows, added row after row from 0.0 as
    ``total[k] = total.get(k, 0.0) + x`` does (``np.add.at`` adds in index order), the same bits."""
    keys = list(dict.fromkeys(chain.from_iterable(k for k, _ in rows)))
    if not keys:
        return {}
    col = dict(zip(keys, range(len(keys))))
    idx = np.fromiter(map(col.__getitem__, chain.from_iterable(k for k, _ in rows)), np.intp)
    total = np.zeros(len(keys))
    np.add.at(total, idx, np.concatenate([v for _, v in rows]))
    return dict(zip(keys, total.tolist()))


def units_matrix(keys: tuple, idx: np.ndarray, unit: np.ndarray, lens: list) -> np.ndarray:
    """:func:`row_matrix` of the rows in :meth:`LexicalStats.story_units` form (the same matrix: columns the sorted
    keys, each row's values in its keys' columns), filled by one numpy assignment instead of one per row."""
    order = sorted(range(len(keys)), key=keys.__getitem__)
    rank = np.empty(len(keys), dtype=np.intp)
    rank[order] = np.arange(len(keys))
    M = np.zeros((len(lens), max(len(keys), 1)))
    M[np.repeat(np.arange(len(lens)), lens), rank[idx]] = unit
    return M


def row_matrix(rows: list) -> np.ndarray:
    """The dense matrix of ``(keys, values)`` rows over their sorted keys (at least one column), as a loop of
    ``M[i, col[k]] = x`` fills it."""
    keys = sorted(set(chain.from_iterable(k for k, _ in rows)))
    col = dict(zip(keys, range(len(keys))))
    M = np.zeros((len(rows), max(len(keys), 1)))
    for i, (k, v) in enumerate(rows):
        if k:
            M[i, np.fromiter(map(col.__getitem__, k), np.intp, len(k))] = v
    return M


def _unit(v: dict) -> dict:
    """``v`` scaled to unit length (``math.fsum``: correctly rounded, so the key order cannot change a bit)."""
    if not v:
        return v
    n = math.sqrt(math.fsum(x * x for x in v.values()))
    if n <= 0:
        return {}
    return {k: x / n for k, x in v.items()}


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
