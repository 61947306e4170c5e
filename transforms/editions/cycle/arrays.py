"""Array helpers of the rank cycle.

:func:`unique_ints` is ``np.unique`` of an integer array by one sort: numpy 2.x's ``np.unique`` takes a hash-based
path for integers and then sorts its result, ~10x slower on the few thousand rows a cycle dedups (0.43 ms against
0.04 ms for 3,000 int64 on this project's Xeon; ~650 calls per 73-edition cycle, ~0.2 s of CPU).

:func:`sorted_member` is ``np.isin`` against a sorted array of distinct integers, by binary search.

:func:`best_first_by_group` is ``np.lexsort((key, -score, group))`` by two quicksorts: the representatives order every
candidate's articles that way (~10,000 in an English edition; a three-key lexsort took 2.6 ms against 0.5 ms for
10,000 on this project's Xeon), and the local reserve its (story, city) rows. Below ``LEXSORT_BELOW`` elements the
lexsort itself is the quicker (1.4 us against 12 us for the 13 articles of a quiet edition's candidates, 26 against
46 us for 800; the two cross near 2,000).
"""

from __future__ import annotations

import numpy as np

LEXSORT_BELOW = 1024  # elements: best_first_by_group is np.lexsort itself below this


def unique_ints(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of the integer array ``values``: ``np.unique(values)`` (same values, same dtype,
    flattened), by one sort and a comparison of neighbours."""
    s = np.sort(np.asarray(values).ravel())
    if s.size < 2:
        return s
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def sorted_member(values: np.ndarray, sorted_unique: np.ndarray) -> np.ndarray:
    """``np.isin(values, sorted_unique)`` for integers ``sorted_unique`` already sorted and distinct (the rows
    ``np.flatnonzero`` gives): one binary search per value, without the sort and the setup ``np.isin`` pays on
    every call (~30 us on the few rows of a small book's cycle)."""
    if not sorted_unique.size:
        return np.zeros(np.shape(values), bool)
    pos = np.searchsorted(sorted_unique, values)
    return sorted_unique[np.minimum(pos, sorted_unique.size - 1)] == values


def best_first_by_group(group: np.ndarray, score: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``np.lexsort((key, -score, group))``: the indices by ascending ``group`` (integers), then descending
    ``score``, then ascending ``key``. Each element gets one integer, its group's offset from the least times ``n``
    plus the rank of its score (distinct ranks: the order is the same whatever sort makes it); where two of one
    group have equal scores (the ``key`` decides), a score is not finite, the integers would not fit in 62 bits or
    there are fewer than ``LEXSORT_BELOW`` elements, the lexsort itself."""
    n = score.size
    if n < LEXSORT_BELOW or not np.isfinite(score).all():
        return np.lexsort((key, -score, group))
    low, high = int(group.min()), int(group.max())
    if (high - low + 1) * n >= 1 << 62:
        return np.lexsort((key, -score, group))
    rank = np.empty(n, np.int64)
    rank[np.argsort(-score)] = np.arange(n)
    order = np.argsort((group.astype(np.int64) - low) * n + rank)
    g, s = group[order], score[order]
    if ((g[1:] == g[:-1]) & (s[1:] == s[:-1])).any():
        return np.lexsort((key, -score, group))
    return order
