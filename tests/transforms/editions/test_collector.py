"""The rank cycle's collector setting (transforms/editions/cycle/collector.py): raised inside, restored after, counted
across overlapping cycles."""

from __future__ import annotations

import gc

import pytest

from transforms.editions.beam import ranking
from transforms.editions.cycle.collector import CYCLE_THRESHOLDS, spaced_collections
from transforms.editions.vocabulary.settings import RankSettings


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


class _Stop(Exception):
    pass


def test_a_ranking_worker_runs_at_the_cycle_thresholds_between_cycles(monkeypatch):
    """RankEditionsFn.setup sets the process's collector to the cycle's thresholds first thing (collector.py:
    restored to the defaults, the collector ran right after every cycle over the documents it was handing on); a
    cycle inside leaves them so. The rest of the setup (stores, registry: seconds) is cut short."""

    def stop(*_a, **_k):
        raise _Stop

    monkeypatch.setattr(ranking, "default_config", stop)
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with pytest.raises(_Stop):
            ranking.RankEditionsFn(RankSettings(editions_only=["us-en"])).setup()
        assert gc.get_threshold() == CYCLE_THRESHOLDS
        with spaced_collections():
            pass
        assert gc.get_threshold() == CYCLE_THRESHOLDS
    finally:
        gc.set_threshold(*before)
