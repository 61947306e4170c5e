"""For you pages: a cursor bound to what the reader has already been shown, so no item comes twice and none is
skipped while the pool moves underneath (DESIGN.md section 7, the feed invariants).

Why not OFFSET, nor a (score, id) keyset: a personal ranking moves with both the edition's pool (a new version
every minute) and the reader's profile (a read, a hidden source), so a position or a score boundary taken on one
page means something else on the next: items repeat or fall between pages. The cursor instead carries the set of
stories already served, and the next page is the current ranking minus that set, at absolute positions:

- the set is a bitmap over the pool version the cursor was minted on (125 bytes for 1,000 candidates), plus the
  64-bit hashes (``catalog.id_hash``) of served stories that version no longer holds, so a story that leaves the
  pool and comes back is still recognised;
- version policy: a cursor minted on version v is read against the current version through v's id list, which
  :class:`PoolHistory` keeps for ``grace_s`` (default 15 min) after v was replaced; a cursor older than that (or
  from a process that never loaded v) continues with only its hashes and says so with ``Newsroom-Cursor-Rebased``;
- tie-breaker: equal scores keep the edition's own order (the pool index), so a ranking is a pure function of the
  pool version and the profile;
- depth: at most MAX_DEPTH items per feed session (then ``next_cursor`` is null), which also bounds the cursor.

The cursor is signed (serving/http/cursor.py), so its set cannot be forged to probe other readers' state; it holds
story ids only as a bitmap or hashes, nothing personal beyond what the reader was shown.
"""

from __future__ import annotations

import base64
import threading
import time
from dataclasses import dataclass

import numpy as np

from serving.http import cursor as cursors

KIND = "foryou2"
MAX_DEPTH = 300
GRACE_S = 15 * 60.0
MAX_VERSIONS = 32  # per edition, whatever the grace: bounds the history's memory (8 bytes per candidate each)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class PoolHistory:
    """The id hashes of recently replaced pool versions, per edition (fed by the watcher's swap callback)."""

    def __init__(self, grace_s: float = GRACE_S, clock=time.monotonic):
        self.grace_s = grace_s
        self.clock = clock
        self._lock = threading.Lock()
        self._versions: dict[tuple[str, int], tuple[np.ndarray, float | None]] = {}

    def on_swap(self, catalog) -> None:
        now = self.clock()
        live = {(p.edition, p.version) for p in catalog.pools.values()}
        with self._lock:
            for pool in catalog.pools.values():
                self._versions.setdefault((pool.edition, pool.version), (pool.id_hashes, None))
            for key, (hashes, replaced_at) in list(self._versions.items()):
                if key not in live and replaced_at is None:
                    self._versions[key] = (hashes, now)
            self._prune(now)

    def _prune(self, now: float) -> None:
        by_edition: dict[str, list[tuple[int, tuple[str, int]]]] = {}
        for key, (_, replaced_at) in list(self._versions.items()):
            if replaced_at is not None and now - replaced_at > self.grace_s:
                del self._versions[key]
            else:
                by_edition.setdefault(key[0], []).append((key[1], key))
        for versions in by_edition.values():
            for _, key in sorted(versions)[:-MAX_VERSIONS]:
                del self._versions[key]

    def hashes(self, edition: str, version: int) -> np.ndarray | None:
        with self._lock:
            hit = self._versions.get((edition, version))
        return hit[0] if hit is not None else None


@dataclass
class Position:
    """Where a reader is in a feed session, read against the current pool."""

    served: np.ndarray  # bool per candidate of the current pool
    absent: np.ndarray  # uint64 hashes of served stories the current pool lacks
    depth: int  # items served so far (the next item's 0-based position)
    rebased: int | None = None  # the cursor's version, when its id list was no longer known


def start(pool) -> Position:
    return Position(np.zeros(len(pool.story_ids), dtype=bool), np.zeros(0, dtype=np.uint64), 0)


def read(secret: bytes, raw: str, edition: str, pool, history: PoolHistory) -> Position:
    """The reader's position from a cursor (CursorError when it is not one of ours, or for another edition)."""
    try:
        c_edition, version, depth, bitmap, extra = cursors.decode(secret, KIND, raw)
        if c_edition != edition:
            raise cursors.CursorError("cursor is for another edition")
        if not isinstance(version, int) or not isinstance(depth, int) or not 0 <= depth <= MAX_DEPTH:
            raise cursors.CursorError("malformed cursor")
        bits = np.unpackbits(np.frombuffer(_unb64(bitmap), dtype=np.uint8)).astype(bool)
        hashes = np.frombuffer(_unb64(extra), dtype=">u8").astype(np.uint64)
    except (ValueError, TypeError) as exc:
        raise cursors.CursorError(f"malformed cursor: {exc}") from None
    rebased = None
    if version == pool.version:
        served = np.zeros(len(pool.story_ids), dtype=bool)
        k = min(len(bits), len(served))
        served[:k] = bits[:k]
    else:
        old = history.hashes(edition, version)
        if old is None:
            rebased = version
        else:
            hashes = np.concatenate([hashes, old[bits[: len(old)]]])
        served = np.zeros(len(pool.story_ids), dtype=bool)
    if len(hashes):
        served |= np.isin(pool.id_hashes, hashes)
        absent = np.setdiff1d(hashes, pool.id_hashes[served])
    else:
        absent = hashes
    return Position(served, absent, depth, rebased)


def advance(secret: bytes, edition: str, pool, pos: Position, picked: list[int], limit: int) -> str | None:
    """The cursor of the page after this one, or None at the end of the feed (or of its MAX_DEPTH)."""
    depth = pos.depth + len(picked)
    if len(picked) < limit or depth >= MAX_DEPTH:
        return None
    served = pos.served.copy()
    served[picked] = True
    if served.all():
        return None
    payload = [
        edition,
        pool.version,
        depth,
        _b64(np.packbits(served).tobytes()),
        _b64(pos.absent.astype(">u8").tobytes()),
    ]
    return cursors.encode(secret, KIND, payload)
