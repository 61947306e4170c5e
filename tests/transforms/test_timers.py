"""The shared timer arming of the stateful DoFns (transforms/timers.py), against fake timer and state objects."""

from __future__ import annotations

from tests.transforms.fakes import Timer, Value
from transforms import timers


def test_arm_earliest_moves_the_timer_earlier_never_later():
    t, s = Timer(), Value()
    assert timers.arm_earliest(t, s, 5_000)
    assert not timers.arm_earliest(t, s, 7_000)  # later: the armed one stays
    assert not timers.arm_earliest(t, s, 5_000)
    assert timers.arm_earliest(t, s, 3_000)
    assert t.sets == [5_000, 3_000] and s.read() == 3_000


def test_arm_sets_or_clears_and_rearm_restores_a_later_pending_time():
    t, s = Timer(), Value()
    timers.arm(t, s, 60_000)
    assert t.sets == [60_000] and s.read() == 60_000
    timers.rearm_pending(t, s, 0)  # a duplicate firing at 0 replaced the timer: set 60 s again
    assert t.sets == [60_000, 60_000]
    timers.rearm_pending(t, s, 60_000)  # nothing later is pending
    assert t.sets == [60_000, 60_000]
    timers.arm(t, s, None)
    assert s.read() is None and len(t.sets) == 2


def test_milliseconds_round_trip_through_beam_timestamps():
    assert timers.to_ms(timers.at(1_767_225_600_123)) == 1_767_225_600_123
