"""What one ranking cycle of one edition threads through its phases: :class:`CycleContext`, one frozen value.

The cycle (:func:`transforms.editions.cycle.run_cycle`) reads a book, an edition, the editions config and the
ranking parameters at a minute ``now``, updates the edition's memory and cache, laps a clock, may stop early on a
steady minute and ends with the overlays (editorial controls, takedowns, cities, topic and storyline pages). Every
phase takes this context rather than a growing list of the same eight values, so a phase's signature says what it
adds (the ranked candidates, the page facts) and not what the whole cycle carries. Frozen: a phase cannot swap
the book or the minute under the next one; the objects it holds that a cycle updates (memory, cache, clock) say so
in their own types.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from transforms.editions.book import StoryBook
    from transforms.editions.config import Edition, EditionsConfig
    from transforms.editions.cycle import CycleOutput, EditionMemory
    from transforms.editions.overlays import Overlays
    from transforms.editions.params import RankParams


class Clock:
    """Accumulates CPU seconds per phase into ``timings`` (benchmarks); free when ``timings`` is None."""

    def __init__(self, timings: dict | None = None):
        self.timings = timings
        self.t = time.process_time() if timings is not None else 0.0

    def start(self) -> None:
        """Start the first lap now (a context may be built a while before its cycle runs)."""
        if self.timings is not None:
            self.t = time.process_time()

    def lap(self, name: str) -> None:
        if self.timings is not None:
            now = time.process_time()
            self.timings[name] = self.timings.get(name, 0.0) + now - self.t
            self.t = now


@dataclass
class CycleCache:
    """Per edition, reused between its cycles (in-process; never changes a result). A supporting set is reused
    while the story's coverage version, the representative and the capped publishers are unchanged; a card while
    its article's label bits, first-seen time and version are; a pool entry while its story's coverage version,
    centroid, representative, labels and section are."""

    support: dict = field(default_factory=dict)  # (story row, rep) -> ((version, capped), article rows)
    cards: dict = field(default_factory=dict)  # (article row, with lede) -> (check, card)
    pool: dict = field(default_factory=dict)  # story id -> (key, entry without score)


class Steady(Protocol):
    """The change-only replay's test of one minute (:class:`transforms.editions.steady.SteadyCheck`)."""

    def __call__(self, book, ranked, facts, gates, page_slots) -> bool: ...

    def record(self, out: CycleOutput) -> None: ...


@dataclass(frozen=True)
class CycleContext:
    """One cycle of one edition at ``now`` (a minute boundary).

    ``memory`` (:class:`~transforms.editions.cycle.EditionMemory`) and ``cache`` are updated by the cycle;
    ``clock`` gets CPU seconds per phase (``Clock(timings)``; a default clock records nothing). ``steady``: asked
    once the page slots are decided, True ends the cycle there (None returned; :mod:`transforms.editions.steady`,
    the change-only replay). ``overlays``: the cycle's last phases (:mod:`transforms.editions.overlays`); None: the
    bare ranking (the equivalence tests and the per-story reference compare that). ``counter(name, n)``: the
    overlays' counters (default: nothing).
    """

    book: StoryBook
    edition: Edition
    config: EditionsConfig
    params: RankParams
    memory: EditionMemory
    now: int
    cache: CycleCache = field(default_factory=CycleCache)
    clock: Clock = field(default_factory=Clock)
    steady: Steady | None = None
    overlays: Overlays | None = None
    counter: Callable[[str, int], None] | None = None

    def count(self, name: str, n: int = 1) -> None:
        if self.counter is not None:
            self.counter(name, n)
