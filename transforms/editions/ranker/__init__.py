"""Ranking editions minute by minute: :class:`EditionRanker` folds story changes and burst pulses into a book per
edition and runs a cycle (with its overlays) at every minute boundary; :mod:`.steady` decides, in the change-only
replay, the minutes whose pages cannot differ from the last ones built, and :mod:`.skip` the steady minutes a
replay need not rank at all.

The stateful DoFn that holds the ranker's state and fires its minute timer is
:class:`transforms.editions.beam.ranking.RankEditionsFn`.

Exports: the names below.
May import: :mod:`transforms.editions.vocabulary`, :mod:`transforms.editions.book`, :mod:`transforms.editions.cycle`,
:mod:`transforms.editions.overlays`, ``transforms.common``.
"""

from transforms.editions.ranker.rank import EditionRanker, EditionState, snapshot_items
from transforms.editions.ranker.steady import SteadyWatch

__all__ = ["EditionRanker", "EditionState", "SteadyWatch", "snapshot_items"]
