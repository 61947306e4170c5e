"""Burst detection: windowed counts of originals and publishers per story, the Breaking rule, burst polls.

- :mod:`.bursts`: the rules and records (Breaking and developing pulses, FetchRequest records of burst polls);
- :mod:`.coverage`: the burst pull, which publishers' feeds a breaking story moves to the 1-minute lane, and the
  :class:`CoverageMemory` behind it (kept in Beam state).

The Beam side is :mod:`transforms.editions.beam.detection`.

Exports: the modules, and the names below.
May import: the floor (:mod:`transforms.editions.vocabulary`), ``transforms.common``, ``transforms.publishers``.
"""

from transforms.editions.bursts.bursts import is_strong
from transforms.editions.bursts.coverage import CoverageMemory, StoryCoverage, coverage_events, original_event

__all__ = ["CoverageMemory", "StoryCoverage", "coverage_events", "is_strong", "original_event"]
