"""A ranking cycle runs with raised GC thresholds (fewer young and full collections over the long-lived book and
caches) and gives the caller's thresholds back, also when the cycle raises."""

from __future__ import annotations

import gc

import pytest

from transforms.editions import cycle


def test_a_cycle_raises_the_thresholds_and_restores_the_callers(world, make_ranker, monkeypatch):
    world.story(1, world.AUTHORITATIVE_EN[:3], world.T0 - 30 * world.MIN)
    seen = []
    real = cycle.cycle_documents

    def spy(*a, **k):
        seen.append(gc.get_threshold())
        return real(*a, **k)

    monkeypatch.setattr(cycle, "cycle_documents", spy)
    before = gc.get_threshold()
    make_ranker(world).cycle(world.T0)
    assert seen == [cycle.CYCLE_GC_THRESHOLDS] and gc.get_threshold() == before

    monkeypatch.setattr(cycle, "cycle_documents", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        make_ranker(world).cycle(world.T0 + world.MIN)
    assert gc.get_threshold() == before
