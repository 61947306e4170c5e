"""Nearest live centroids: the clusterer's view of an ANN index.

Reads/writes nothing outside memory. :func:`make_index` returns the ScaNN-backed
``transforms.stories.index.ann.CentroidIndex`` when that module is present, else :class:`ExactCentroidIndex`, an exact
numpy search with the same interface (``upsert``, ``remove``, ``search(vector, k) -> [(story_id, cosine)]``,
``__len__``). Both take L2-normalised vectors and return cosine similarity, best first, ties broken by story id so
that results are deterministic.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class CentroidSearch(Protocol):
    """The interface both indexes give the writer (its state's ``index``)."""

    def __len__(self) -> int: ...

    def upsert(self, story_id: int, vector: np.ndarray) -> None: ...

    def remove(self, story_id: int) -> None: ...

    def search(self, vector: np.ndarray, k: int = 10) -> list[tuple[int, float]]: ...


class ExactCentroidIndex:
    """Brute-force cosine search over a growing matrix (amortised O(1) upsert, O(n) search)."""

    def __init__(self, dim: int, rebuild_every: int | None = None):
        self.dim = dim
        self._ids: list[int] = []
        self._pos: dict[int, int] = {}
        self._mat = np.zeros((64, dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._ids)

    def upsert(self, story_id: int, vector: np.ndarray) -> None:
        v = np.asarray(vector, dtype=np.float32)
        pos = self._pos.get(story_id)
        if pos is None:
            pos = len(self._ids)
            if pos == self._mat.shape[0]:
                grown = np.zeros((self._mat.shape[0] * 2, self.dim), dtype=np.float32)
                grown[:pos] = self._mat[:pos]
                self._mat = grown
            self._ids.append(story_id)
            self._pos[story_id] = pos
        self._mat[pos] = v

    def remove(self, story_id: int) -> None:
        pos = self._pos.pop(story_id, None)
        if pos is None:
            return
        last = len(self._ids) - 1
        if pos != last:
            moved = self._ids[last]
            self._ids[pos] = moved
            self._mat[pos] = self._mat[last]
            self._pos[moved] = pos
        self._ids.pop()

    def search(self, vector: np.ndarray, k: int = 10) -> list[tuple[int, float]]:
        n = len(self._ids)
        if n == 0 or k <= 0:
            return []
        sims = self._mat[:n] @ np.asarray(vector, dtype=np.float32)
        k = min(k, n)
        idx = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
        out = [(self._ids[i], float(sims[i])) for i in idx]
        out.sort(key=lambda x: (-x[1], x[0]))
        return out


class Lookahead:
    """Searches a run of queries made one at a time, in order, with the ANN snapshot searched for the next ones in
    one batch (``CentroidIndex.search_ahead``): what the writer does with the articles it decides in one firing.

    ``search(index, key, vector, k, upcoming)`` returns ``index.search(vector, k, token)`` with this query's
    token: when ``key`` has none that is valid (the first query, or the snapshot changed since the batch was
    searched), ``upcoming(n)`` is asked for the next at most ``n`` queries, ``[(key, vector)]`` starting with this
    one, and their snapshot candidates are searched together; ``n`` is at most ``size``, and at most the changes the
    index takes before its next sync (a sync voids the tokens; searched past it they would be wasted) unless that is
    under ``index.ahead_rows`` (which a batch costs anyway). Every query goes through a token, so each one's answer is
    the same whatever the batches were (``search_ahead``): ``size=1`` searches one query at a time, with the same
    answers. Exact indexes (without ``search_ahead``, or below ScaNN's size) are searched directly.
    """

    # 128: ScaNN's batched search costs less per query the larger the batch (250,000 stories, per query, SSE4 / AVX2 /
    # AVX-512 kernels: 327 / 202 / 210 us in batches of 32, 301 / 180 / 193 us in batches of 128); a batch never
    # spans a sync (ahead_room) and answers do not depend on its size (AHEAD_MIN_ROWS), so only the CPU changes
    def __init__(self, size: int = 128):
        self.size = size
        self._index = None
        self._tokens: dict = {}
        self.batches = 0  # batched searches made (benchmarks)

    def search(self, index, key, vector: np.ndarray, k: int, upcoming) -> list[tuple[int, float]]:
        ahead = getattr(index, "search_ahead", None)
        if ahead is None or not getattr(index, "approximate", False):
            return index.search(vector, k)
        token = self._tokens.pop(key, None) if index is self._index else None
        if not index.ahead_valid(token, k):
            queries = upcoming(max(1, min(self.size, max(index.ahead_rows, index.ahead_room))))
            tokens = ahead([v for _, v in queries], k)
            self._index, self._tokens = index, {q: t for (q, _), t in zip(queries, tokens) if t is not None}
            self.batches += 1
            token = self._tokens.pop(key, None)
        return index.search(vector, k, token)

    def clear(self) -> None:
        self._index, self._tokens = None, {}


def make_index(dim: int, exact: bool = False) -> CentroidSearch:
    """The ANN index when available (``transforms.stories.index.ann``), else the exact one."""
    if not exact:
        try:
            from transforms.stories.index.ann import CentroidIndex  # written by the ANN helper
        except ImportError:
            pass
        else:
            return CentroidIndex(dim)
    return ExactCentroidIndex(dim)
