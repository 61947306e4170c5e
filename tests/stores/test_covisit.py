"""CovisitStore contract on both backends (embedded SQLite; Bigtable emulator, marked emulator)."""

from __future__ import annotations

import pytest

from stores.covisit import MAX_NEIGHBOURS, open_covisit_store

T0 = 1_767_225_600_000
BIG = 7_394_201_113_445_597_184  # a real 64-bit story id


@pytest.fixture
def covisit(store_config):
    return open_covisit_store(store_config)


def test_unknown_story_has_no_list_and_put_replaces_the_whole_list(covisit):
    assert covisit.get(1) is None and covisit.get_many([1, 2]) == {}
    covisit.put(BIG, [(2, 0.5), (3, 2.25), (BIG + 1, 1.0)], T0)
    assert covisit.get(BIG) == ([(3, 2.25), (BIG + 1, 1.0), (2, 0.5)], T0)
    covisit.put(BIG, [(4, 1.5)], T0 + 1000)  # a write replaces: neighbours 2, 3 are gone
    assert covisit.get(BIG) == ([(4, 1.5)], T0 + 1000)
    covisit.put(BIG, [(4, 1.5)], T0 + 1000)  # the same write again changes nothing
    assert covisit.get(BIG) == ([(4, 1.5)], T0 + 1000)
    covisit.put(BIG, [], T0 + 2000)  # an empty list removes the row
    assert covisit.get(BIG) is None


def test_lists_are_bounded_and_read_many_at_once(covisit):
    covisit.put(10, [(n, float(n)) for n in range(1, 200)], T0)
    covisit.put(11, [(10, 0.125)], T0 + 5)
    got = covisit.get_many([10, 11, 12])
    assert set(got) == {10, 11}
    ten, at = got[10]
    assert at == T0 and len(ten) == MAX_NEIGHBOURS and ten[0] == (199, 199.0) and ten[-1] == (150, 150.0)
    assert got[11] == ([(10, 0.125)], T0 + 5)
