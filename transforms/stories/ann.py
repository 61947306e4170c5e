"""Nearest live story centroids for the clusterer: an exact index and a ScaNN-backed approximate one.

Reads nothing and writes nothing outside memory: the index is a cache of durable state. The clusterer (the single
writer of its language) feeds it every centroid change (`upsert` for a new or moved centroid, `remove` when a story
leaves the live set or is merged away) and asks it for the ~10 nearest centroids of each article (`search`). After a
restart, or when the key moves to another worker, the clusterer rebuilds it from the story store (`bulk_upsert`).

Both classes share one interface: ``upsert(story_id, vector)``, ``remove(story_id)``, ``search(vector, k)``,
``search_batch(vectors, k)``, ``len()`` and ``in``. Scores are cosine similarities: vectors are L2-normalised on the
way in (defensively: callers already send unit vectors), results are best first with ties broken by story id
ascending.

Strategy of ``CentroidIndex`` (why it looks like this)
- The load: one writer per language holds ~250k live centroids (48 h of stories) and makes ~2,000 decisions a second
  in a backfill (120-200/s in streaming bursts). Each decision is a top-10 search followed by an insert (new story)
  or a move (a join shifts the story's recency-weighted centroid). Exact search over 250k x 384 float32 reads
  ~380 MB per query (~25-50 ms on one core): far too slow. ScaNN (tree partitioning with SOAR spilling, 4-bit
  anisotropic product quantisation, int8 reordering) answers in a fraction of a millisecond.
- ScaNN's trained structures (partition centres, codebooks) are expensive to build (tens of seconds at 250k on one
  core) but cheap to add vectors to: ScaNN's own ``upsert``/``delete`` tokenise and encode a vector against the
  trained structures in ~0.1 ms. So the index keeps three parts:
  1. a *snapshot*: the ScaNN searcher, holding every centroid as of the last sync;
  2. a *delta*: the current vectors of centroids that are new or moved since the last sync, searched exactly
     (numpy, contiguous rows, so a few hundred rows cost microseconds);
  3. *tombstones*: ids whose snapshot vector is stale (moved) or gone (removed); their snapshot hits are dropped.
  A moved id is tombstoned in the snapshot and answered from the delta with its current vector.
- When delta + tombstones exceed a bound (``sync_every``, default 256, or 2 % of the index if smaller) they are
  applied to the snapshot in one ScaNN upsert/delete batch (amortised ~0.1 ms per change). The bound is kept small
  on purpose: the delta is searched exactly on every query, so its size is paid on every query, while the flush
  costs the same per vector whatever the batch size.
- A full retrain (new partitions and codebooks) happens only when the live set has drifted from the one the
  snapshot was trained on: after ``retrain_after`` x (size at training) changes (default 1.0, a full turnover, i.e.
  ~48 h in production), or when the size has doubled or halved. Its cost is printed by benchmarks/ann_bench.py.
- Candidates from both parts are rescored exactly from the live vectors before ranking: scores returned are exact
  cosines (not quantised estimates), and the clusterer's thresholds see true similarities. ScaNN is only asked for
  ``k + margin`` candidates so that its approximate ordering cannot push an exact top-k member out.
- Small indexes (fewer than ``ann_min_size`` live centroids, default 4,096) use exact search only: there a
  brute-force scan costs less than building and querying ScaNN, and results are exact.

Determinism
- Every decision (sync, retrain, exact/approximate switch) is a function of the sequence of calls, never of time or
  threads. ScaNN is built and queried single-threaded with its fixed seeds (partitioning and quantisation
  ``clustering_seed``/``sampling_seed`` defaults), so the same sequence of calls returns the same results
  (tests/transforms/stories/test_ann.py checks it).
- Final scores are computed by one numpy kernel (elementwise product + numpy's pairwise sum), not BLAS, so the same
  vectors give bit-identical scores whatever the BLAS kernel, the batch shape or the machine; ties then break by id.
- Approximate search is approximate: an index rebuilt from the story store after a restart is trained on a
  different history and may return a slightly different top-10 tail (recall@10 >= 0.95 at 250k, exact top-1 in
  ~99 % of joins) than the long-running one. Below ``ann_min_size`` (all unit tests, all small backfills) results
  are exact and therefore history-independent; ``CentroidIndex(dim, ann_min_size=None)`` forces exact search.

Threads: ScaNN search and build run on one thread (``threads=1``), as the clusterer is one writer per key on a
worker core; numpy's BLAS threads are the caller's business (benchmarks pin them to one).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

import numpy as np

DEFAULT_MARGIN = 10


def normalise(vector: np.ndarray) -> np.ndarray:
    """One vector as contiguous float32 of unit L2 norm (a zero vector stays zero)."""
    v = np.array(vector, dtype=np.float32, copy=True).reshape(-1)
    norm = float(np.sqrt(np.sum(v.astype(np.float64) ** 2)))
    if norm > 0.0 and np.isfinite(norm):
        v /= np.float32(norm)
    return v


def exact_scores(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Dot products of each row with the query, bit-identical for a row whatever else is in ``rows``.

    numpy's pairwise sum over the contiguous last axis reduces every row with the same operation order, unlike BLAS
    gemv/gemm, whose blocking depends on the matrix shape and the CPU kernel.
    """
    return np.multiply(rows, query).sum(axis=1, dtype=np.float32)


class _VectorTable:
    """Contiguous float32 rows for a set of ids; removal moves the last row into the hole (O(1))."""

    def __init__(self, dim: int, capacity: int = 1024):
        self.dim = dim
        self.mat = np.zeros((capacity, dim), dtype=np.float32)
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.row: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.row)

    def __contains__(self, story_id: int) -> bool:
        return story_id in self.row

    def _grow(self, needed: int) -> None:
        capacity = max(needed, 2 * len(self.ids), 1024)
        mat = np.zeros((capacity, self.dim), dtype=np.float32)
        ids = np.zeros(capacity, dtype=np.int64)
        n = len(self.row)
        mat[:n] = self.mat[:n]
        ids[:n] = self.ids[:n]
        self.mat, self.ids = mat, ids

    def reserve(self, capacity: int) -> None:
        if capacity > len(self.ids):
            self._grow(capacity)

    def put(self, story_id: int, vector: np.ndarray) -> None:
        r = self.row.get(story_id)
        if r is None:
            r = len(self.row)
            if r >= len(self.ids):
                self._grow(r + 1)
            self.row[story_id] = r
            self.ids[r] = story_id
        self.mat[r] = vector

    def get(self, story_id: int) -> np.ndarray:
        return self.mat[self.row[story_id]]

    def drop(self, story_id: int) -> bool:
        r = self.row.pop(story_id, None)
        if r is None:
            return False
        last = len(self.row)
        if r != last:
            moved = int(self.ids[last])
            self.mat[r] = self.mat[last]
            self.ids[r] = moved
            self.row[moved] = r
        return True

    def clear(self) -> None:
        self.row.clear()

    def live(self) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.row)
        return self.ids[:n], self.mat[:n]

    def top(self, query: np.ndarray, n: int) -> np.ndarray:
        """Row indices of (about) the n best rows by a fast BLAS scan; callers rescore them exactly."""
        size = len(self.row)
        if size == 0:
            return np.empty(0, dtype=np.int64)
        scores = self.mat[:size] @ query
        if n >= size:
            return np.arange(size)
        return np.argpartition(-scores, n - 1)[:n]


def _check_dim(vector: np.ndarray, dim: int) -> np.ndarray:
    v = normalise(vector)
    if v.shape[0] != dim:
        raise ValueError(f"vector has {v.shape[0]} dimensions, index has {dim}")
    if not np.all(np.isfinite(v)):
        raise ValueError("vector has non-finite values")
    return v


def _rank(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    order = np.lexsort((ids, -scores))[:k]
    return [(int(ids[i]), float(scores[i])) for i in order]


class ExactIndex:
    """Brute-force cosine search over all live centroids (numpy): the reference and the small-index path."""

    def __init__(self, dim: int, **tuning: Any):
        self.dim = dim
        self.margin = int(tuning.pop("margin", DEFAULT_MARGIN))
        if tuning:
            raise TypeError(f"unknown tuning options for ExactIndex: {sorted(tuning)}")
        self._live = _VectorTable(dim)

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, story_id: object) -> bool:
        return story_id in self._live

    def upsert(self, story_id: int, vector: np.ndarray) -> None:
        self._live.put(int(story_id), _check_dim(vector, self.dim))

    def bulk_upsert(self, story_ids: Iterable[int], vectors: np.ndarray) -> None:
        for story_id, vector in zip(story_ids, vectors):
            self.upsert(story_id, vector)

    def remove(self, story_id: int) -> None:
        """Forget a centroid; removing an unknown id is a no-op (replayed changes are harmless)."""
        self._live.drop(int(story_id))

    def vector(self, story_id: int) -> np.ndarray:
        """The stored (normalised) vector of a live centroid (a copy)."""
        return self._live.get(int(story_id)).copy()

    def search(self, vector: np.ndarray, k: int = 10) -> list[tuple[int, float]]:
        q = _check_dim(vector, self.dim)
        if k <= 0:
            return []
        rows = self._live.top(q, k + self.margin)
        return _rank(self._live.ids[rows], exact_scores(self._live.mat[rows], q), k)

    def search_batch(self, vectors: np.ndarray, k: int = 10) -> list[list[tuple[int, float]]]:
        """``[search(v, k) for v in vectors]``, with identical results."""
        return [self.search(v, k) for v in np.asarray(vectors)]


class CentroidIndex:
    """ScaNN snapshot + exact delta + tombstones (see the module docstring for the reasoning).

    Tuning options (all keyword, all optional; defaults measured by benchmarks/ann_bench.py at 250k x 384):
        ann_min_size: live count from which ScaNN is used (default 4096; None = always exact).
        sync_every: max pending changes (delta vectors + removals) before they are applied to the snapshot
            (default 256).
        sync_fraction: the same bound as a fraction of the index, when that is smaller (default 0.02).
        retrain_after: changes since the last training, as a fraction of the size then, that force a full
            retrain (default 1.0); the index also retrains when its size doubles or halves.
        num_leaves: ScaNN partitions (default 1.2 sqrt(n)).
        leaves_fraction: fraction of partitions searched per query (default 0.35).
        min_leaves: partitions searched at least, for small indexes (default 8).
        pca_dims: dimensions kept by ScaNN's PCA before partitioning and quantisation (default 128; None or >= dim
            keeps all). Scores are still exact: candidates are reordered and rescored on full vectors.
        spherical: spherical k-means partitions (default True: the vectors are unit length).
        reorder: candidates ScaNN reorders with int8 full vectors before returning k + margin (default 300).
        soar_lambda: ScaNN SOAR spilling strength (default None: off; scann 1.4.2 corrupts its heap when a SOAR
            index is mutated, see the module docstring).
        dims_per_block: product-quantisation block size (default 2).
        anisotropic_threshold: ScaNN anisotropic quantisation threshold (default 0.2).
        training_sample_size: vectors sampled to train partitions and codebooks (default 50,000).
        margin: extra candidates fetched beyond k before exact rescoring (default 10).
        threads: ScaNN threads for building and searching (default 1).
    """

    def __init__(self, dim: int, **tuning: Any):
        self.dim = dim
        self.ann_min_size = tuning.pop("ann_min_size", 4096)
        self.sync_every = int(tuning.pop("sync_every", 256))
        self.sync_fraction = float(tuning.pop("sync_fraction", 0.02))
        self.retrain_after = float(tuning.pop("retrain_after", 1.0))
        self.num_leaves = tuning.pop("num_leaves", None)
        self.leaves_fraction = float(tuning.pop("leaves_fraction", 0.35))
        self.min_leaves = int(tuning.pop("min_leaves", 8))
        self.pca_dims = tuning.pop("pca_dims", 128)
        self.spherical = bool(tuning.pop("spherical", True))
        self.reorder = int(tuning.pop("reorder", 300))
        self.soar_lambda = tuning.pop("soar_lambda", None)
        self.dims_per_block = int(tuning.pop("dims_per_block", 2))
        self.anisotropic_threshold = float(tuning.pop("anisotropic_threshold", 0.2))
        self.training_sample_size = int(tuning.pop("training_sample_size", 50_000))
        self.margin = int(tuning.pop("margin", DEFAULT_MARGIN))
        self.threads = int(tuning.pop("threads", 1))
        if tuning:
            raise TypeError(f"unknown tuning options for CentroidIndex: {sorted(tuning)}")
        self._live = _VectorTable(dim)
        self._delta = _VectorTable(dim, capacity=max(64, self.sync_every + 1))
        # The snapshot: ScaNN datapoint i ("slot" i) holds the vector of story _slots[i] as of the last sync, or a
        # dead story's vector (_slots[i] == -1). Slots are never deleted from ScaNN (its delete corrupts the heap
        # with SOAR + int8 reordering in scann 1.4.2): a removed story's slot is reused by the next new story.
        self._scann = None
        self._slots = np.zeros(0, dtype=np.int64)
        self._slot_of: dict[int, int] = {}
        self._stale: set[int] = set()  # slots never to answer: moved stories (answered from the delta) and dead ones
        self._free: list[int] = []  # heap of dead slots, reused lowest first
        self._removed_since_sync = 0
        self._leaves_to_search = 0
        self._trained_size = 0
        self._changes_since_train = 0
        self.stats = {"builds": 0, "syncs": 0, "synced_vectors": 0}

    # -- interface ------------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, story_id: object) -> bool:
        return story_id in self._live

    def upsert(self, story_id: int, vector: np.ndarray) -> None:
        """Insert a new centroid or move an existing one."""
        story_id = int(story_id)
        v = _check_dim(vector, self.dim)
        if story_id in self._live.row and np.array_equal(self._live.get(story_id), v):
            return  # a replayed change: nothing moved
        self._live.put(story_id, v)
        self._changes_since_train += 1
        if self._scann is not None:
            self._delta.put(story_id, v)
            slot = self._slot_of.get(story_id)
            if slot is not None:
                self._stale.add(slot)
        self._after_change()

    def bulk_upsert(self, story_ids: Iterable[int], vectors: np.ndarray) -> None:
        """Many upserts, then a single (re)build: how the clusterer restores the index from the story store."""
        vectors = np.asarray(vectors)
        ids = [int(s) for s in story_ids]
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids but {len(vectors)} vectors")
        self._live.reserve(len(self._live) + len(ids))
        for story_id, vector in zip(ids, vectors):
            self._live.put(story_id, _check_dim(vector, self.dim))
        self._changes_since_train += len(ids)
        if self._scann is not None or self._wants_ann():
            self._build()

    def remove(self, story_id: int) -> None:
        """Forget a centroid; removing an unknown id is a no-op (replayed changes are harmless)."""
        story_id = int(story_id)
        if not self._live.drop(story_id):
            return
        self._changes_since_train += 1
        if self._scann is not None:
            self._delta.drop(story_id)
            slot = self._slot_of.pop(story_id, None)
            if slot is not None:
                self._slots[slot] = -1
                self._stale.add(slot)
                heapq.heappush(self._free, slot)
                self._removed_since_sync += 1
        self._after_change()

    def vector(self, story_id: int) -> np.ndarray:
        """The stored (normalised) vector of a live centroid (a copy)."""
        return self._live.get(int(story_id)).copy()

    def search(self, vector: np.ndarray, k: int = 10) -> list[tuple[int, float]]:
        """The k live centroids most similar to ``vector``: ``[(story_id, cosine)]``, best first."""
        q = _check_dim(vector, self.dim)
        if k <= 0 or not self._live.row:
            return []
        want = k + self.margin
        if self._scann is None:
            rows = self._live.top(q, want)
            return _rank(self._live.ids[rows], exact_scores(self._live.mat[rows], q), k)
        ids = self._snapshot_candidates(q, want)
        if self._delta.row:
            rows = self._delta.top(q, want)
            ids = np.concatenate([ids, self._delta.ids[rows]])
        if len(ids) == 0:
            return []
        row = self._live.row
        live_rows = np.fromiter((row[i] for i in ids.tolist()), dtype=np.int64, count=len(ids))
        return _rank(ids, exact_scores(self._live.mat[live_rows], q), k)

    def search_batch(self, vectors: np.ndarray, k: int = 10) -> list[list[tuple[int, float]]]:
        """``[search(v, k) for v in vectors]``, with identical results (each query sees the same state)."""
        return [self.search(v, k) for v in np.asarray(vectors)]

    # -- introspection (tests, benchmarks) ------------------------------------------------------------------------

    @property
    def approximate(self) -> bool:
        """True while searches go through the ScaNN snapshot."""
        return self._scann is not None

    @property
    def pending(self) -> int:
        """Changes not yet applied to the snapshot: delta vectors (new or moved centroids) + removals."""
        return len(self._delta) + self._removed_since_sync

    def flush(self) -> None:
        """Apply the pending changes to the snapshot now (normally done automatically)."""
        if self._scann is not None:
            self._sync()

    # -- internals ------------------------------------------------------------------------------------------------

    def _wants_ann(self) -> bool:
        return self.ann_min_size is not None and len(self._live) >= max(int(self.ann_min_size), 64)

    def _sync_bound(self) -> int:
        return max(1, min(self.sync_every, int(self.sync_fraction * max(self._trained_size, len(self._live)))))

    def _after_change(self) -> None:
        if self._scann is None:
            if self._wants_ann():
                self._build()
            return
        if self.ann_min_size is None or len(self._live) < int(self.ann_min_size) // 2:
            self._drop_snapshot()
            return
        if self.pending < self._sync_bound():
            return
        n = len(self._live)
        drifted = self._changes_since_train >= self.retrain_after * self._trained_size
        resized = n >= 2 * self._trained_size or 2 * n <= self._trained_size
        if drifted or resized:
            self._build()
        else:
            self._sync()

    def _drop_snapshot(self) -> None:
        self._scann = None
        self._slots = np.zeros(0, dtype=np.int64)
        self._slot_of = {}
        self._stale = set()
        self._free = []
        self._delta.clear()
        self._removed_since_sync = 0
        self._trained_size = 0

    def _snapshot_candidates(self, q: np.ndarray, want: int) -> np.ndarray:
        """Live story ids of snapshot hits near q, stale slots skipped; ``want`` of them if the snapshot has them."""
        size = len(self._slots)
        asked = min(size, want + min(len(self._stale), want))
        stale = self._stale
        while True:
            idx, _ = self._scann.search(q, asked, max(self.reorder, asked), self._leaves_to_search)
            if stale:
                kept = [i for i in idx.tolist() if i not in stale]
            else:
                kept = idx
            if len(kept) >= want or len(idx) < asked or asked >= size:
                return self._slots[np.asarray(kept, dtype=np.int64)]
            asked = min(size, asked * 2)

    def _build(self) -> None:
        """Train a new ScaNN snapshot on all live centroids; the delta and tombstones start empty."""
        import scann  # heavy: only when an index grows past ann_min_size
        from scann.scann_ops.py.scann_builder import ReorderType

        ids, mat = self._live.live()
        n = len(ids)
        order = np.argsort(ids, kind="stable")  # the snapshot never depends on insertion history
        data = np.ascontiguousarray(mat[order])
        leaves = int(self.num_leaves or 1.2 * np.sqrt(n))
        leaves = max(2, min(leaves, n // 16))
        self._leaves_to_search = max(1, min(leaves, max(self.min_leaves, int(round(self.leaves_fraction * leaves)))))
        sample = min(n, self.training_sample_size)
        builder = scann.scann_ops_pybind.builder(data, 10, "dot_product")
        if self.pca_dims and int(self.pca_dims) < self.dim:
            builder = builder.pca(reduction_dim=int(self.pca_dims), pca_significance_threshold=None)
        builder = (
            builder.tree(
                num_leaves=leaves,
                num_leaves_to_search=self._leaves_to_search,
                training_sample_size=sample,
                spherical=self.spherical,
                soar_lambda=self.soar_lambda,
                random_init=False,  # k-means++ is seeded; ScaNN's random initialisation is not (differs per run)
            )
            .score_ah(
                self.dims_per_block,
                anisotropic_quantization_threshold=self.anisotropic_threshold,
                training_sample_size=sample,
            )
            .reorder(self.reorder, quantize=ReorderType.INT8)
        )
        builder.set_n_training_threads(self.threads)
        searcher = builder.build()
        searcher.set_num_threads(self.threads)
        self._scann = searcher.searcher  # the raw pybind object: its datapoint index is our slot number
        self._slots = ids[order].copy()
        self._slot_of = {int(story_id): slot for slot, story_id in enumerate(self._slots.tolist())}
        self._stale = set()
        self._free = []
        self._delta.clear()
        self._removed_since_sync = 0
        self._trained_size = n
        self._changes_since_train = 0
        self.stats["builds"] += 1

    def _sync(self) -> None:
        """Write the delta into the snapshot (moved stories in place, new ones into dead slots or appended)."""
        if self._delta.row:
            ids = sorted(self._delta.row)
            vectors = np.ascontiguousarray(self._delta.mat[[self._delta.row[i] for i in ids]])
            targets: list[int | None] = []
            for story_id in ids:
                slot = self._slot_of.get(story_id)
                if slot is None and self._free:
                    slot = heapq.heappop(self._free)
                targets.append(slot)
            appended = sum(1 for t in targets if t is None)
            if appended:
                self._scann.reserve(len(self._slots) + max(appended, len(self._slots) // 8))
            assigned = self._scann.upsert(targets, vectors, max(1, len(ids)))
            if appended:
                self._slots = np.concatenate([self._slots, np.full(appended, -1, dtype=np.int64)])
            for story_id, slot in zip(ids, assigned):
                slot = int(slot)
                self._slots[slot] = story_id
                self._slot_of[story_id] = slot
                self._stale.discard(slot)
        self.stats["syncs"] += 1
        self.stats["synced_vectors"] += len(self._delta)
        self._delta.clear()
        self._removed_since_sync = 0
