"""The rank cycle's collector setting (transforms/editions/cycle/collector.py): raised inside, restored after, counted
across overlapping cycles."""

from __future__ import annotations

import gc

from transforms.editions.cycle.collector import CYCLE_THRESHOLDS, spaced_collections


def test_thresholds_are_raised_inside_and_restored_by_the_last_cycle_to_leave():
    before = gc.get_threshold()
    outer = spaced_collections()
    outer.__enter__()
    try:
        assert gc.get_threshold() == CYCLE_THRESHOLDS
        with spaced_collections():  # a second ranker thread's cycle
            assert gc.get_threshold() == CYCLE_THRESHOLDS
        assert gc.get_threshold() == CYCLE_THRESHOLDS  # the first is still inside
    finally:
        outer.__exit__(None, None, None)
    assert gc.get_threshold() == before
