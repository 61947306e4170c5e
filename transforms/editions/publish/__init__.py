"""Publishing: validated snapshots behind compare-and-set pointers, the merged-story aliases map, and the Breaking
announcements of what was published.

- :mod:`.snapshots`: :class:`SnapshotPublisher` (validate, store an immutable version, move the pointer);
- :mod:`.aliases`: the merged-story aliases map, kept incrementally (:class:`AliasIndex`, :func:`aliases_item`);
- :mod:`.breaking`: one ``Breaking`` record per story and edition, and the CDN purge of the pages that newly show
  it (:class:`Ledger`, kept in Beam state).

The Beam side is :mod:`transforms.editions.beam.publishing` and :mod:`transforms.editions.beam.announce`.

Exports: the names below.
May import: :mod:`transforms.editions.vocabulary`, :mod:`transforms.editions.book`,
:mod:`transforms.editions.overlays` (the storyline archive's documents), ``stores``, ``transforms.common``.
"""

from transforms.editions.publish.aliases import AliasIndex, aliases_item
from transforms.editions.publish.breaking import Ledger
from transforms.editions.publish.snapshots import SnapshotPublisher

__all__ = ["AliasIndex", "Ledger", "SnapshotPublisher", "aliases_item"]
