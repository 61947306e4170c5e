"""The rank cycle's collector setting (transforms/editions/cycle/collector.py): raised inside, restored after, counted
across overlapping cycles; a ranking worker's survivors parked at the last cycle's exit and handed back in time."""

from __future__ import annotations

import gc
import re
import weakref

import pytest

from tests.transforms.editions.test_kept_features import busy_world
from transforms.editions.beam import ranking
from transforms.editions.cycle import collector
from transforms.editions.cycle.collector import CYCLE_THRESHOLDS, space_worker_collections, spaced_collections
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
        assert gc.get_threshold() == CYCLE_THRESHOLDS and collector.PARKING.on
        with spaced_collections():
            pass
        assert gc.get_threshold() == CYCLE_THRESHOLDS
    finally:
        gc.set_threshold(*before)


class _Node:
    """A reference cycle (it points at itself) that a weak reference can watch."""

    def __init__(self):
        self.me = self


def test_a_ranking_worker_parks_what_its_last_cycle_leaves_alive():
    """collector.py: after RankEditionsFn.setup's space_worker_collections, the last cycle to leave moves the
    survivors to the permanent generation (no collection traverses them again); a cycle still inside another does
    not."""
    space_worker_collections()
    assert collector.PARKING.on
    outer = spaced_collections()
    outer.__enter__()
    try:
        with spaced_collections():
            kept = [[k] for k in range(1000)]
        assert gc.get_freeze_count() == 0  # the first cycle is still inside
    finally:
        outer.__exit__(None, None, None)
    assert gc.get_freeze_count() >= len(kept)
    assert not any(o is kept for o in gc.get_objects())  # parked: in no generation the collector traverses


def test_the_first_park_collects_the_garbage_of_the_worker_s_start():
    """A worker's start (pipeline construction, imports) leaves cyclic garbage the collector has not yet reached:
    the first park collects in full before it freezes, so none of it is parked."""
    gc.disable()  # the start's garbage still uncollected, as it can be
    try:
        node = _Node()
        gone = weakref.ref(node)
        del node
        space_worker_collections()
        with spaced_collections():
            pass
    finally:
        gc.enable()
    assert gone() is None and gc.get_freeze_count() > 0


def test_a_test_s_parking_ends_with_it(monkeypatch):
    """stop_parking (tests/conftest.py calls it after every test) hands everything back and parks nothing more."""
    space_worker_collections()
    with spaced_collections():
        pass
    assert gc.get_freeze_count() > 0
    collector.stop_parking()
    assert gc.get_freeze_count() == 0 and not collector.PARKING.on
    with spaced_collections():
        pass
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("up", ["time", "memory"])
def test_parked_cyclic_garbage_is_collected_once_the_time_or_the_memory_is_up(up, monkeypatch, caplog):
    """Reference counting never frees a cycle: parked, it waits for the hand-back, which comes after PARKED_FOR_S
    or once resident memory has grown by PARKED_GROWTH, whichever first."""
    space_worker_collections()
    with spaced_collections():
        node = _Node()
    gone = weakref.ref(node)
    del node
    gc.collect()
    assert gone() is not None  # parked: a full collection does not see it
    with spaced_collections():
        pass
    assert gone() is not None  # neither the time nor the memory is up
    if up == "time":
        monkeypatch.setattr(collector.PARKING, "since", collector.PARKING.since - collector.PARKED_FOR_S)
    else:
        monkeypatch.setattr(collector.PARKING, "resident", collector.resident_bytes() / collector.PARKED_GROWTH - 1)
    caplog.clear()
    with caplog.at_level("INFO", logger=collector.__name__), spaced_collections():
        pass
    assert gone() is None
    assert gc.get_freeze_count() > 0  # the survivors of the full collection are parked again
    # the line docs/operations.md tells operators to read
    assert re.search(
        r"collector: a full collection before parking \(\d+ s after the last\), \d+ unreachable freed", caplog.text
    )


def test_nothing_is_parked_where_resident_memory_cannot_be_read(monkeypatch):
    """Fail closed: without /proc the leak of cyclic garbage could not be bounded, so the collector runs as before."""
    monkeypatch.setattr(collector, "resident_bytes", lambda: None)
    space_worker_collections()
    assert not collector.PARKING.on
    with spaced_collections():
        pass
    assert gc.get_freeze_count() == 0


def test_an_operator_turns_parking_off_by_the_environment(monkeypatch):
    monkeypatch.setenv(collector.PARKING_SWITCH, "off")
    space_worker_collections()
    assert not collector.PARKING.on
    monkeypatch.setenv(collector.PARKING_SWITCH, "on")
    space_worker_collections()
    assert collector.PARKING.on


def test_rank_cycles_make_no_cyclic_garbage(world, make_ranker):
    """What parking rests on: a cycle's documents, caches and shared documents die by reference counting (none is
    in a reference cycle), so parking them loses nothing. With the collector off over a busy world's cycles of two
    editions, the full collection after finds nothing unreachable."""
    busy_world(world)
    rankers = [make_ranker(world, edition) for edition in ("us-en", "gb-en")]
    T, MIN = world.T0, world.MIN
    rankers[0].cycle(T)  # the modules' first use (imports, lazily built tables) is not the cycles'
    gc.collect()
    gc.disable()
    try:
        for m in range(1, 12):
            for r in rankers:
                out = r.cycle(T + m * MIN)
                assert out is not None
        del out
        found = gc.collect()
    finally:
        gc.enable()
    assert found == 0
