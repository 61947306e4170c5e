"""transforms/editions/cycle/arrays.py: the cycle's dedup by one sort gives exactly what ``np.unique`` gives."""

from __future__ import annotations

import numpy as np

from transforms.editions.cycle.arrays import unique_ints


def test_unique_ints_is_np_unique_for_every_integer_array_the_cycle_dedups():
    rng = np.random.default_rng(3)
    cases = [np.zeros(0, np.int64), np.array([7], np.int32), np.array([5, 5, 5], np.int64)]
    cases += [rng.integers(-50, 50, n).astype(dt) for n in (2, 17, 3000) for dt in (np.int16, np.int32, np.int64)]
    cases += [rng.integers(0, 1 << 60, 500), rng.integers(0, 9, (4, 6))]  # wide keys; a 2-D array is flattened
    for x in cases:
        got, want = unique_ints(x), np.unique(x)
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    x = np.array([3, 1, 3])
    unique_ints(x)
    assert x.tolist() == [3, 1, 3]  # its input is left as it was
