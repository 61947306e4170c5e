"""The merged-story aliases map, kept incrementally: a new merge costs O(its own aliases), not O(history).

Plain Python; the Beam side is :class:`~transforms.editions.beam.publishing.TrackAliasesFn`.

:class:`AliasIndex` holds ``alias`` (absorbed id -> survivor id, one hop: no survivor is ever a key) and its
reverse index ``absorbed_by`` (survivor -> the ids aliased to it). A merge of A into B resolves B once (B may itself
be absorbed), then re-points only A and the ids aliased to A (``absorbed_by[A]``): the work is the size of A's own
group. The result is the one :func:`~transforms.editions.publish.snapshots.resolve_aliases` (the old whole-map rewrite, kept
as the reference) gives for the same merges applied in canonical order (tests/transforms/editions/test_aliases.py).

Aliases live as long as their survivor (DESIGN.md: "the other becomes an alias"): a survivor's EXPIRE change (its
story left the live set, at last article + 48 h) starts its clock, and ``keep_ms`` later (the snapshot publisher's
story-pointer retention, 48 h: the redirect target is retired then too) the survivor's whole group is dropped
(by the job at its next firing an event causes).
A later merge into the survivor stops its clock. A story revived by a placement after its EXPIRE is not seen here
(only MERGE and EXPIRE reach this index): its aliases go at EXPIRE + ``keep_ms`` and its next EXPIRE has no group
left to keep; a reader following such an old id gets the story's own 404 instead of a redirect.

So the map, its state and the document the origin loads are bounded by the aliases of stories live in the last
``keep_ms`` plus the live window, whatever the job's age.

Every change to the map is also returned as a delta record, the job's journal (its Beam state, replayed only when
a worker starts cold): ``("set", absorbed, survivor)``, ``("drop", absorbed, 0)`` and ``("expire", survivor, at)``.
:meth:`AliasIndex.replay` of the journal rebuilds the index exactly; :meth:`AliasIndex.compacted` writes the index
as the shortest journal that rebuilds it (the job rewrites its journal when it is more than twice that long).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from schemas.pages import aliases_path
from transforms.common import DAY_MS, EXPIRE, MERGE, MINUTE_MS
from transforms.editions.book.storybook import event_sort_key
from transforms.editions.vocabulary import documents as docs

KEEP_MS = 2 * DAY_MS  # = PointerRetention.retain_s: a survivor's aliases outlive its EXPIRE by this much

SET, DROP, EXPIRED = "set", "drop", "expire"


class AliasIndex:
    """absorbed -> survivor (one hop), its reverse index, and the expiry clock of survivors (see the module
    docstring)."""

    def __init__(self, keep_ms: int = KEEP_MS):
        self.keep_ms = int(keep_ms)
        self.alias: dict[int, int] = {}
        self.absorbed_by: dict[int, set[int]] = {}
        self.expires: dict[int, int] = {}  # survivor with aliases -> its latest EXPIRE time (ms)
        self._due: list[tuple[int, int]] = []  # heap of (EXPIRE time + keep_ms, survivor); stale entries skipped

    def __len__(self) -> int:
        return len(self.alias)

    def merge(self, absorbed: int, survivor: int) -> list[tuple]:
        """Apply one MERGE (``absorbed`` into ``survivor``) -> its delta records. O(size of absorbed's group)."""
        absorbed, survivor = int(absorbed), int(survivor)
        survivor = self.alias.get(survivor, survivor)
        if absorbed == survivor:
            return []
        deltas = []
        previous = self.alias.get(absorbed)
        if previous is not None and self._unlink(absorbed, previous):  # absorbed twice: it leaves its first group
            deltas.append((EXPIRED, previous, 0))
        moved = self.absorbed_by.pop(absorbed, set())
        if self.expires.pop(absorbed, None) is not None:
            deltas.append((EXPIRED, absorbed, 0))
        group = self.absorbed_by.setdefault(survivor, set())
        for k in sorted(moved) + [absorbed]:
            if self.alias.get(k) != survivor:  # a replayed merge changes nothing
                deltas.append((SET, k, survivor))
            self.alias[k] = survivor
            group.add(k)
        if self.expires.pop(survivor, None) is not None:  # a merge into it: the survivor lives
            deltas.append((EXPIRED, survivor, 0))
        return deltas

    def expire(self, story_id: int, at: int) -> list[tuple]:
        """A story's EXPIRE at ``at`` (ms): if it is a survivor, its aliases go at ``at + keep_ms``."""
        sid, at = int(story_id), int(at)
        if sid not in self.absorbed_by or at <= self.expires.get(sid, -1):
            return []
        self.expires[sid] = at
        heapq.heappush(self._due, (at + self.keep_ms, sid))
        return [(EXPIRED, sid, at)]

    def prune(self, now: int) -> list[tuple]:
        """Drop the groups of survivors whose EXPIRE is ``keep_ms`` old at ``now`` -> their delta records."""
        deltas = []
        while self._due and self._due[0][0] <= now:
            when, sid = heapq.heappop(self._due)
            at = self.expires.get(sid)
            if at is None or at + self.keep_ms != when:  # revived by a merge, or expired again later
                continue
            del self.expires[sid]
            for k in sorted(self.absorbed_by.pop(sid, ())):
                del self.alias[k]
                deltas.append((DROP, k, 0))
        return deltas

    def next_prune(self) -> int | None:
        """When the next group may go (ms), or None."""
        while self._due:
            when, sid = self._due[0]
            if self.expires.get(sid) is not None and self.expires[sid] + self.keep_ms == when:
                return when
            heapq.heappop(self._due)
        return None

    def apply(self, events: Iterable[dict]) -> list[tuple]:
        """MERGE and EXPIRE events (:func:`alias_event`) in canonical order -> their delta records."""
        deltas = []
        for e in sorted(events, key=event_sort_key):
            if e["kind"] == EXPIRE:
                deltas += self.expire(e["story_id"], e["at"])
            else:
                deltas += self.merge(e["other_story_id"], e["story_id"])
        return deltas

    def _unlink(self, absorbed: int, survivor: int) -> bool:
        """Take ``absorbed`` out of ``survivor``'s group; True if that ended the survivor's expiry clock."""
        group = self.absorbed_by.get(survivor)
        if group is not None:
            group.discard(absorbed)
            if not group:
                del self.absorbed_by[survivor]
                return self.expires.pop(survivor, None) is not None
        return False

    # ---------------------------------------------------------------------------------------------- the journal
    @classmethod
    def replay(cls, journal: Iterable[tuple], keep_ms: int = KEEP_MS) -> AliasIndex:
        """The index a journal of delta records (in the order written) describes."""
        index = cls(keep_ms)
        for op, sid, value in journal:
            if op == SET:
                previous = index.alias.get(sid)
                if previous is not None:
                    index._unlink(sid, previous)
                index.alias[sid] = value
                index.absorbed_by.setdefault(value, set()).add(sid)
            elif op == DROP:
                previous = index.alias.pop(sid, None)
                if previous is not None:
                    index._unlink(sid, previous)
            elif value:
                index.expires[sid] = value
            else:
                index.expires.pop(sid, None)
        for sid in [s for s in index.expires if s not in index.absorbed_by]:
            del index.expires[sid]
        index._due = [(at + index.keep_ms, sid) for sid, at in index.expires.items()]
        heapq.heapify(index._due)
        return index

    def compacted(self) -> list[tuple]:
        """The shortest journal :meth:`replay` rebuilds this index from."""
        out = [(SET, k, v) for k, v in sorted(self.alias.items())]
        return out + [(EXPIRED, s, at) for s, at in sorted(self.expires.items())]

    def journal_size(self) -> int:
        return len(self.alias) + len(self.expires)


def resolve_aliases(merges: list[dict]) -> dict[int, int]:
    """absorbed id -> survivor id, one hop, from MERGE events applied in canonical order: the old whole-map rewrite
    (O(map) per merge, so quadratic per map and cubic over a run when redone every minute), kept as the reference
    :class:`AliasIndex` is tested against and benchmarks/aliases_bench.py measures."""
    alias: dict[int, int] = {}
    for m in sorted(merges, key=event_sort_key):
        absorbed, survivor = int(m["other_story_id"]), int(m["story_id"])
        survivor = alias.get(survivor, survivor)
        if absorbed == survivor:
            continue
        for k, v in list(alias.items()):
            if v == absorbed:
                alias[k] = survivor
        alias[absorbed] = survivor
    return alias


def aliases_document(alias: dict[int, int], version: int) -> dict:
    return {
        "schema": docs.ALIASES_SCHEMA,
        "version": version,
        "aliases": {str(k): str(v) for k, v in sorted(alias.items())},
    }


def published_aliases(pointers, snapshots) -> dict[int, int]:
    """The aliases map the origin serves now (pointer ``aliases``), {} when none was published: what a tracker
    starting without state (a relaunch after a drain) begins from, so a relaunch does not drop the redirects.
    Store errors are raised (the caller's bundle is retried)."""
    import json

    version = pointers.get("aliases")
    if version is None:
        return {}
    doc = json.loads(snapshots.get(aliases_path(version)))
    return {int(k): int(v) for k, v in doc["aliases"].items()}


def is_merge(change) -> bool:
    """A readable MERGE change."""
    return (
        isinstance(change, dict)
        and change.get("kind") == MERGE
        and isinstance(change.get("other_story_id"), int)
        and isinstance(change.get("story_id"), int)
        and isinstance(change.get("at"), int)
    )


def is_expire(change) -> bool:
    """A readable EXPIRE change (it may end a survivor's aliases)."""
    return (
        isinstance(change, dict)
        and change.get("kind") == EXPIRE
        and isinstance(change.get("story_id"), int)
        and isinstance(change.get("at"), int)
    )


def alias_event(c: dict) -> dict:
    """The compact event the aliases index keeps of a MERGE or EXPIRE change."""
    return {
        "id": c["change_id"],
        "kind": c["kind"],
        "story_id": int(c["story_id"]),
        "other_story_id": int(c.get("other_story_id") or 0),
        "seq": int(c.get("seq") or 0),
        "at": int(c["at"]),
    }


def aliases_item(alias: dict[int, int], now: int) -> dict:
    """The snapshot item of the aliases map at cycle ``now``: O(the map), which is bounded (module docstring)."""
    version = now // MINUTE_MS
    return {
        "kind": "aliases",
        "path": aliases_path(version),
        "pointer": "aliases",
        "version": version,
        "doc": aliases_document(alias, version),
        "min_stories": 0,
    }
