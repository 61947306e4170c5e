"""Array helpers of the rank cycle.

:func:`unique_ints` is ``np.unique`` of an integer array by one sort: numpy 2.x's ``np.unique`` takes a hash-based
path for integers and then sorts its result, ~10x slower on the few thousand rows a cycle dedups (0.43 ms against
0.04 ms for 3,000 int64 on this project's Xeon; ~650 calls per 73-edition cycle, ~0.2 s of CPU).
"""

from __future__ import annotations

import numpy as np


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
