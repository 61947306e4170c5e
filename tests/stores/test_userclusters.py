"""UserClusterStore contract on both backends (embedded SQLite; Bigtable emulator, marked emulator): memberships
replaced and deleted, aged out after two daily runs, counts bounded and replaced whole."""

from __future__ import annotations

import pytest

from stores.userclusters import MAX_STORIES, MEMBERSHIP_MAX_AGE_MS, open_user_cluster_store

T0 = 1_767_225_600_000
BIG = 7_394_201_113_445_597_184


@pytest.fixture
def clusters(store_config):
    return open_user_cluster_store(store_config)


def test_membership_is_replaced_deleted_and_ages_out(clusters):
    assert clusters.membership("r1", T0) == []
    clusters.put_membership("r1", [BIG, 5, 5], T0)
    assert clusters.membership("r1", T0 + 1) == [5, BIG]
    clusters.put_membership("r1", [6], T0 + 10)  # the next run replaces the list
    assert clusters.membership("r1", T0 + 10) == [6]
    assert clusters.membership("r1", T0 + 10 + MEMBERSHIP_MAX_AGE_MS + 1) == []  # two runs missed: not applied
    clusters.put_membership("r2", [7], T0)
    clusters.delete_membership("r1")
    assert clusters.membership("r1", T0 + 10) == [] and clusters.membership("r2", T0) == [7]
    clusters.put_membership("r2", [], T0)  # no cluster left: the row goes
    assert clusters.membership("r2", T0) == []
    with pytest.raises(ValueError, match="cluster ids"):
        clusters.put_membership("r3", [-1], T0)


def test_counts_are_bounded_and_replaced_whole(clusters):
    assert clusters.get_counts([1, 2]) == {}
    clusters.put_counts(BIG, [(n, float(n)) for n in range(1, 120)], 9000.5, T0)
    clusters.put_counts(2, [(BIG, 0.25)], 0.25, T0 + 5)
    got = clusters.get_counts([BIG, 2, 3])
    assert set(got) == {BIG, 2}
    items, total, at = got[BIG]
    assert (len(items), items[0], total, at) == (MAX_STORIES, (119, 119.0), 9000.5, T0)
    assert got[2] == ([(BIG, 0.25)], 0.25, T0 + 5)
    clusters.put_counts(2, [(9, 1.0)], 1.0, T0 + 6)
    assert clusters.get_counts([2]) == {2: ([(9, 1.0)], 1.0, T0 + 6)}
    clusters.put_counts(2, [], 0.0, T0 + 7)
    assert clusters.get_counts([2]) == {}


def test_the_click_log_reads_back_by_key_range_and_goes_with_the_membership(clusters):
    t0 = 1_767_225_600_000
    readers = [f"reader{r:03d}" for r in range(30)]
    clusters.log_clicks([(r, 100 + k, t0 + k) for r in readers for k in range(3)])
    clusters.log_clicks([("reader005", 101, t0 + 1)])  # a replay changes nothing
    everything = list(clusters.scan_clicks(t0))
    assert [r for r, _ in everything] == readers and everything[5][1] == ["100", "101", "102"]
    assert list(clusters.scan_clicks(t0 + 2))[0] == ("reader000", ["102"])  # older clicks left out
    cuts = clusters.click_splits(4)
    assert cuts == sorted(cuts) and len(cuts) <= 3
    bounds = [None, *cuts, None]
    parts = [list(clusters.scan_clicks(t0, a, b)) for a, b in zip(bounds, bounds[1:])]
    assert [rs for part in parts for rs in part] == everything  # the ranges cut the log, none twice
    clusters.put_membership("reader005", [1], t0)
    clusters.delete_membership("reader005")
    assert "reader005" not in {r for r, _ in clusters.scan_clicks(t0)}
