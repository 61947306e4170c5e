"""Takedowns in the editions stage: tombstoned articles and stories are omitted from the next snapshots.

:class:`TakedownReader` gives the tombstone set (stores/takedowns.py) once per cycle: it reads the store's
generation (one row) and the whole set only when that moved. :func:`apply_takedowns` filters a cycle's output
(pages, pool, story coverage) with it, after the editorial controls, with the same filters the origin applies to
what it has loaded (:class:`stores.takedowns.TakedownSet`): a taken-down story leaves every page and the pool and
gets no new coverage snapshot; a taken-down article leaves the cards and the coverage (a representative is
replaced by the story's next card). Like the controls, this is an overlay: the edition's memory never sees it, so
an undo brings the story back on the next cycle where the ranking puts it.

Plain Python (no Beam).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from stores.takedowns import TakedownSet

log = logging.getLogger(__name__)


def apply_takedowns(out, taken: TakedownSet) -> int:
    """Filter the pages, pool and coverage of ``out`` (a :class:`~transforms.editions.cycle.run.CycleOutput`) in place;
    returns how many page entries, pool entries and coverage documents were dropped or changed."""
    if not taken:
        return 0
    n = 0
    for section, doc in list(out.pages.items()):
        shown = taken.filter_page(doc)
        if shown is not doc:
            n += sum(1 for a, b in zip(doc["stories"], shown["stories"], strict=False) if a is not b)
            n += len(doc["stories"]) - len(shown["stories"])
            out.pages[section] = shown
    pool = taken.filter_page(out.pool)
    if pool is not out.pool:
        n += len(out.pool["stories"]) - len(pool["stories"]) or 1
        out.pool = pool
    coverage = []
    for doc in out.coverage:
        shown = taken.filter_story(doc)
        if shown is not doc:
            n += 1
        if shown is not None:
            coverage.append(shown)
    out.coverage = coverage
    return n


class TakedownReader:
    """``reader() -> TakedownSet``: the tombstones, re-read only when the store's generation moved, and at most
    once per ``refresh_s`` of wall clock (a backfill replaying thousands of cycles). A store error keeps the set
    read last (counted ``takedowns_unreadable``): a Bigtable blip must not bring a taken-down story back."""

    def __init__(
        self, store, refresh_s: float = 0.0, count: Callable[[str, int], None] | None = None, clock=time.monotonic
    ):
        self.store = store
        self.refresh_s = refresh_s
        self._count = count or (lambda name, n=1: None)
        self.clock = clock
        self._set = TakedownSet()
        self._generation: int | None = None
        self._read_at: float | None = None

    def __call__(self) -> TakedownSet:
        t = self.clock()
        if self._read_at is not None and self.refresh_s > 0 and t - self._read_at < self.refresh_s:
            return self._set
        try:
            generation = self.store.generation()
            if generation != self._generation:
                self._set, self._generation = self.store.taken_down(), generation
        except Exception as exc:  # StoreError, grpc: keep omitting what was read last
            self._count("takedowns_unreadable", 1)
            log.warning("takedowns unreadable, keeping the last set read: %s", exc)
            return self._set
        self._read_at = t
        return self._set
