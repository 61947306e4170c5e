"""The last phases of a ranking cycle: what is laid over the ranked documents before they become snapshot items.

- :mod:`.phases`: :class:`Overlays` (this cycle's inputs, read once) and the phases in order; :class:`OverlayReaders`
  (where a ranker reads them every cycle);
- :mod:`.controls` (editorial pins, demotes, labels), :mod:`.takedowns` (tombstoned articles and stories),
  :mod:`.topics` (cities, page sections, topic pages), :mod:`.storyline_pages` and :mod:`.storyline_index` (the
  storyline archive and its index).

Exports: the names below.
May import: :mod:`transforms.editions.vocabulary`, :mod:`transforms.editions.book`,
:mod:`transforms.editions.cycle`, ``stores`` (controls, takedowns, profiles), ``transforms.common``.
"""

from transforms.editions.overlays.controls import ControlReader, apply_controls
from transforms.editions.overlays.phases import OverlayReaders, Overlays
from transforms.editions.overlays.storyline_index import merged_index
from transforms.editions.overlays.storyline_pages import (
    ArchivedEpisodes,
    expired_single_storylines,
    merged_document,
    storyline_items,
)
from transforms.editions.overlays.takedowns import TakedownReader, apply_takedowns
from transforms.editions.overlays.topics import FollowedTopics, city_codes

__all__ = [
    "ArchivedEpisodes",
    "ControlReader",
    "FollowedTopics",
    "OverlayReaders",
    "Overlays",
    "TakedownReader",
    "apply_controls",
    "apply_takedowns",
    "city_codes",
    "expired_single_storylines",
    "merged_document",
    "merged_index",
    "storyline_items",
]
