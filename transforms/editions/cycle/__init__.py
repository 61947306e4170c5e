"""One ranking cycle of one edition: scores -> smoothing -> representatives -> pages, pool and coverage documents.

- :mod:`.context`: what a cycle threads through its phases (:class:`CycleContext`, frozen) and what it keeps and
  gives (:class:`EditionMemory`, kept in Beam state between cycles; :class:`CycleOutput`; :class:`CycleCache`);
- :mod:`.run`: :func:`run_cycle` and its phases (the maths, then the documents);
- :mod:`.scoring` (vectorised scores and smoothing), :mod:`.representatives` (which article represents a story),
  :mod:`.assembly` (hysteresis, diversity, the Breaking pin), :mod:`.fairness` (position-weighted impressions,
  the publisher share cap), :mod:`.trust` (the trust gates of developing stories), :mod:`.coverage` (coverage
  documents and article cards).

The overlays laid over a cycle's documents (controls, takedowns, topic and storyline pages) sit in the room above
(:mod:`transforms.editions.overlays`); the cycle runs them through :class:`~.context.CycleOverlays` without
importing them.

Exports: the names below (``EditionMemory`` here is also the path Beam state pickled it under before the rooms).
May import: :mod:`transforms.editions.vocabulary`, :mod:`transforms.editions.book`,
:mod:`transforms.editions.bursts`, ``transforms.common``, ``transforms.publishers``.
"""

from transforms.editions.cycle.context import Clock, CycleCache, CycleContext, CycleOutput, EditionMemory
from transforms.editions.cycle.coverage import coverage_document
from transforms.editions.cycle.run import pool_positions, run_cycle

__all__ = [
    "Clock",
    "CycleCache",
    "CycleContext",
    "CycleOutput",
    "EditionMemory",
    "coverage_document",
    "pool_positions",
    "run_cycle",
]
