"""Click history follows merges: a merged-away story's co-visitation and user-cluster counts go to its survivor
(DESIGN.md section 4: "a story absorbed elsewhere becomes a redirect to the survivor, which inherits its click
counts"). Plain Python; the co-visitation job's flushes call it (transforms/covisit/beam.py,
transforms/userclusters/beam.py).

Which story survives which: the aliases map the editions job publishes (pointer ``aliases``, one hop, kept while
the survivor lives: transforms/editions/publish/aliases.py), re-read by :class:`Survivors` at most every ``ttl_s`` (60 s)
and only when its pointer moved. A job never sees MERGE changes itself: the map is the one every reader follows.

At a flush (:func:`follow_merges`):
- every count of a neighbour (or, for a cluster, of a story) that is an absorbed id moves to its survivor
  (:meth:`~transforms.covisit.counts.Neighbours.rename`: sums, as of the same time); a story's own survivor is not its
  neighbour;
- a survivor takes in, once, the stored list of each story absorbed into it (decayed to its own time,
  :meth:`~transforms.covisit.counts.Neighbours.inherit`) and deletes that row. An absorbed story still counting
  pairs (a read sent before the redirect) writes its row at its flushes and then starts its state afresh
  (:func:`hand_over`), adding the row back at its next flush, so its row holds everything not yet taken and the
  survivor takes each count once. An absorbed story whose row is not there yet (it never flushed) is looked for
  again at the survivor's next flushes (``missing``).
The ids taken in are remembered on the state while they are aliases (``inherited``), so a replayed or repeated
flush takes nothing twice.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from schemas.pages import aliases_path
from stores import NotFound, StoreError
from transforms.covisit.counts import Neighbours, Params

log = logging.getLogger(__name__)

EMPTY: tuple[dict[int, int], dict[int, list[int]]] = ({}, {})


class Survivors:
    """The published aliases map ``{absorbed: survivor}`` and its reverse ``{survivor: [absorbed]}``, re-read at
    most every ``ttl_s`` of ``clock`` when the ``aliases`` pointer moved. A store error keeps the map held."""

    def __init__(self, pointers, snapshots, ttl_s: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self.pointers, self.snapshots, self.ttl_s, self.clock = pointers, snapshots, float(ttl_s), clock
        self._version: int | None = None
        self._map = EMPTY
        self._next = float("-inf")

    def get(self) -> tuple[dict[int, int], dict[int, list[int]]]:
        now = self.clock()
        if now < self._next:
            return self._map
        self._next = now + self.ttl_s
        try:
            version = self.pointers.get("aliases")
            if version is not None and version != self._version:
                doc = json.loads(self.snapshots.get(aliases_path(version)))
                alias = {int(k): int(v) for k, v in doc["aliases"].items()}
                reverse: dict[int, list[int]] = {}
                for k, v in sorted(alias.items()):
                    reverse.setdefault(v, []).append(k)
                self._map, self._version = (alias, reverse), version
        except (StoreError, NotFound, ValueError, KeyError, TypeError) as exc:
            log.warning("aliases map not read, keeping version %s: %s", self._version, exc)
        return self._map


def follow_merges(n: Neighbours, story: int | None, survivors, store, params: Params) -> int:
    """Move ``n``'s counts of absorbed ids to their survivors; if ``story`` (None for a cluster) is a survivor, take
    in the stored lists of the stories absorbed into it (module docstring). Returns how many of those had no row."""
    alias, absorbed_by = survivors
    if alias:
        n.rename(alias, story)
    if story is None:
        return 0
    if story in alias:  # absorbed: the row not taken in yet holds what its state held before it started afresh
        row = store.get(story) if getattr(n, "handed_over", False) else None
        if row is not None:
            n.inherit(row[0], row[1], params)
        return 0
    group = absorbed_by.get(story, ())
    done = {a for a in (getattr(n, "inherited", None) or ()) if a in group}  # only while they are aliases
    todo = [a for a in group if a not in done]
    missing = 0
    if todo:
        rows = store.get_many(todo)
        for a in todo:
            row = rows.get(a)
            if row is None:
                missing += 1
                continue
            items, at = row
            n.inherit([(alias.get(k, k), c) for k, c in items if alias.get(k, k) != story], at, params)
            store.put(a, [], at)
            done.add(a)
    n.inherited = done
    return missing


def hand_over(n: Neighbours, story: int, survivors) -> None:
    """After an absorbed story's row is written: its state starts afresh, the row holding its counts until the
    survivor takes them in (the next :func:`follow_merges` of the absorbed story adds the row back first)."""
    if story in survivors[0]:
        n.counts, n.handed_over = {}, True


def open_survivors(store_config) -> Survivors:
    """The published aliases map of the stores ``store_config`` names (the jobs' DoFns open it at setup)."""
    from stores import open_store

    return Survivors(open_store("pointers", store_config), open_store("snapshots", store_config))
