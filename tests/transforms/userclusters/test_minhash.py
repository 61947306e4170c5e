"""MinHash user clusters, plain logic (transforms/userclusters/minhash.py): p hashes concatenated q times, the
thresholds, determinism across runs, and the decayed per-cluster counts."""

from __future__ import annotations

import random

import pytest

from transforms.common import HOUR_MS
from transforms.covisit.counts import Params as CovisitParams
from transforms.userclusters.minhash import ClusterCounts, Params, clusters_of, memberships, score

T0 = 1_767_225_600_000


def test_a_reader_gets_q_cluster_ids_that_do_not_depend_on_order_or_process():
    stories = [7_394_201_113_445_597_184, 11, 12, 13]
    a = clusters_of(stories)
    assert len(a) == Params().q == 10 and len(set(a)) == 10
    assert all(0 <= c < 2**63 for c in a)
    assert clusters_of(list(reversed(stories)) + ["11"]) == a  # a set: order, repeats and spelling do not matter
    assert clusters_of([1, 2, 3, 4]) == clusters_of([4, 3, 2, 1])
    assert clusters_of([1, 2, 3, 4]) != a
    # pinned values: another seed or family would silently reshuffle every reader (their counts would not carry)
    assert clusters_of([1, 2, 3])[0] == 2518207410087372660
    assert clusters_of([1, 2, 3])[0] != clusters_of([1, 2, 3], Params(seed=2008))[0]


def test_too_few_stories_make_no_cluster():
    assert clusters_of([1, 2]) == [] and clusters_of([1, 1, 2]) == []
    assert len(clusters_of([1, 2], Params(min_stories=2))) == 10


def test_readers_with_the_same_reading_share_every_cluster_and_strangers_none():
    assert clusters_of(range(100, 120)) == clusters_of(range(100, 120))
    assert not set(clusters_of(range(100, 120))) & set(clusters_of(range(500, 520)))


def test_sharing_follows_jaccard_to_the_pth_power():
    """Pairs of readers at Jaccard 0.5 share a given cluster about 0.5^3 of the time; at 0.1, almost never."""
    rng = random.Random(5)

    def share(j_common: int, each: int) -> float:
        hits = total = 0
        for _ in range(60):
            common = rng.sample(range(10**6), j_common)
            a = common + rng.sample(range(10**6, 2 * 10**6), each)
            b = common + rng.sample(range(2 * 10**6, 3 * 10**6), each)
            ca, cb = clusters_of(a), clusters_of(b)
            hits += sum(x == y for x, y in zip(ca, cb))
            total += len(ca)
        return hits / total

    assert 0.07 < share(20, 10) < 0.2  # J = 20 / 40 = 0.5 -> 0.125
    assert share(4, 18) < 0.02  # J = 4 / 40 = 0.1 -> 0.001


def test_memberships_drop_small_clusters_and_keep_readers_without_one():
    same = list(range(1, 9))
    readers = {f"r{i}": same for i in range(5)} | {"alone": list(range(50, 58)), "few": [1, 2]}
    got = memberships(readers)
    assert got["alone"] == [] and got["few"] == []
    assert all(got[f"r{i}"] == sorted(clusters_of(same)) for i in range(5))
    assert memberships({k: v for k, v in readers.items() if k != "r4"})["r0"] == []  # four members: below five


def test_bad_params_are_refused():
    with pytest.raises(ValueError, match="p must be > 0"):
        Params(p=0)
    with pytest.raises(ValueError, match="at most 1024"):
        Params(p=64, q=20)


def test_cluster_counts_decay_like_covisit_and_the_score_is_the_fraction():
    params = CovisitParams()
    c = ClusterCounts()
    c.click(1, T0, params)
    c.click(1, T0, params)
    c.click(2, T0, params)
    assert c.total == pytest.approx(3.0) and c.counts == {1: 2.0, 2: 1.0}
    c.click(3, T0 + 24 * HOUR_MS, params)  # a half-life later: old counts and the total halve first
    assert c.total == pytest.approx(2.5) and c.counts == pytest.approx({1: 1.0, 2: 0.5, 3: 1.0})
    c.click(2, T0, params)  # out of order: decayed to ref_at before it adds
    assert c.counts[2] == pytest.approx(1.0) and c.total == pytest.approx(3.0)
    lists = [(c.top(params), c.total, c.ref_at), ([(1, 1.0), (9, 3.0)], 4.0, T0)]
    s = score(lists)
    assert s["1"] == pytest.approx(1.0 / 3.0 + 0.25) and s["9"] == pytest.approx(0.75)
    assert score([([(1, 1.0)], 0.0, T0)]) == {}
