"""Event-time timers of the stateful DoFns, armed the one way they all need.

Every stateful DoFn here (story writer, linker, ranker, alias tracker, burst detector, feed scheduler) keeps the
time its single event-time timer is set for in a ReadModifyWrite state (conventionally ``NEXT``), because Beam gives
no way to read a timer back and setting a timer replaces the previous one. Times are int milliseconds since the
epoch, as in every message of schemas/.

- :func:`arm_earliest`: on input, move the timer earlier, never later (an arrival must not postpone work that is
  already due).
- :func:`arm`: set it to a time (or clear it with None) after a firing.
- :func:`rearm_pending`: a timer that fires twice (runners may re-deliver) replaced the one the first firing set
  for later; set that one again from state, or the chain of firings silently stops.
"""

from __future__ import annotations

from apache_beam.utils.timestamp import Timestamp


def to_ms(ts: Timestamp) -> int:
    return int(ts.micros // 1000)


def at(ms: int) -> Timestamp:
    return Timestamp(micros=int(ms) * 1000)


def arm_earliest(timer, armed, when_ms: int) -> bool:
    """Set ``timer`` to ``when_ms`` unless ``armed`` (its state) already holds an earlier time. True if it moved."""
    current = armed.read()
    if current is None or when_ms < current:
        timer.set(at(when_ms))
        armed.write(int(when_ms))
        return True
    return False


def arm(timer, armed, when_ms: int | None) -> None:
    """Set ``timer`` to ``when_ms`` and remember it in ``armed``; None: nothing is due (the state is cleared)."""
    if when_ms is None:
        armed.clear()
        return
    timer.set(at(when_ms))
    armed.write(int(when_ms))


def rearm_pending(timer, armed, now_ms: int) -> None:
    """After a duplicate firing at ``now_ms``: set the timer again for the later time ``armed`` still holds."""
    pending = armed.read()
    if pending is not None and pending > now_ms:
        timer.set(at(pending))
