"""transforms/editions/cycle/arrays.py: the cycle's dedup by one sort gives exactly what ``np.unique`` gives, and its
best-first order by group exactly what the three-key ``np.lexsort`` gives."""

from __future__ import annotations

import numpy as np
import pytest

from transforms.editions.cycle import arrays
from transforms.editions.cycle.arrays import best_first_by_group, unique_ints


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


@pytest.mark.parametrize("lexsort_below", [2, arrays.LEXSORT_BELOW])
def test_best_first_by_group_is_the_three_key_lexsort_ties_and_all(monkeypatch, lexsort_below):
    monkeypatch.setattr(arrays, "LEXSORT_BELOW", lexsort_below)  # 2: the two quicksorts at every size tested
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 50, 4000):
        group = np.sort(rng.integers(0, max(1, n // 5), n))
        score = rng.random(n)
        key = rng.integers(0, 1 << 60, n)
        cases = [(group, score), (rng.permutation(group), score)]  # grouped as the cycle gives them, and not
        if n > 2:
            tied = score.copy()
            tied[1::7] = tied[::7][: tied[1::7].size]  # equal scores: the key decides where groups match
            inf = score.copy()
            inf[n // 2] = -np.inf
            cases += [(group, tied), (np.zeros(n, np.int64), tied), (group, inf), (group, np.round(score, 1))]
            cases += [(group - 7, score), (group << 50, score)]  # negative groups; too wide for one integer each
        for g, s in cases:
            want = np.lexsort((key, -s, g))
            assert np.array_equal(best_first_by_group(g, s, key), want), (n, g[:5], s[:5])
