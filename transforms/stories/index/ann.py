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
  ~380 MB per query (~20-50 ms on one core): far too slow.
- ScaNN: PCA to 128 dims, k-means partitions (~0.8 sqrt(n) leaves: 400 at 250k, 30 % of them searched, and every
  leaf of an index up to ``min_scan`` = 50,000), 4-bit anisotropic product quantisation (2 dims per block), then int8
  reordering of 300 candidates on the full 384 dims. Why these (measured with benchmarks/ann_bench.py, 250k x 384,
  one core): on vectors with MiniLM's statistics a query's neighbours are spread over many partitions (the spectrum
  decays slowly; articles sit at cosine ~0.77 from their story), so recall is bought by scanning a large share of the
  index. PCA makes each scanned datapoint 3x cheaper (64 code bytes instead of 192) at little recall cost, which is
  what makes a large share affordable: recall@10 ~0.96 at ~0.35 ms a query. Without PCA the same recall needs ~1 ms;
  4 dims per block loses accuracy that reordering does not recover (recall ~0.81); reordering only 150-200 candidates
  costs 1-2 points of recall; spherical partitions and plain (non-anisotropic) quantisation measured slightly lower;
  fewer leaves at a higher share, or PCA to 96 or 160 dims, were no better for the time.
- ScaNN's trained structures (PCA, partition centres, codebooks) take ~17 s of CPU to build at 250k, but adding a
  vector to them is cheap (``upsert`` projects, tokenises and encodes it: ~30 us per vector measured in the sync).
  So the index keeps:
  1. a *snapshot*: the ScaNN searcher; datapoint i ("slot" i) holds story ``_slot_story[i]`` as of the last sync;
  2. a *delta*: the current vectors of centroids that are new or moved since the last sync, searched exactly
     (numpy over a few hundred contiguous rows);
  3. *tombstones*: slots whose snapshot vector is stale (the story moved: it is answered from the delta with its
     current vector) or dead (the story was removed); snapshot hits on them are dropped, and ScaNN is asked for
     more candidates when tombstones crowd a query's neighbourhood.
- When the delta + removals reach a bound (``sync_every``, default 256, or 2 % of the index if smaller) the delta is
  written into the snapshot in one ScaNN upsert (moved stories in their slot, new stories into dead slots, lowest
  first, or appended). The bound is small on purpose: the delta is scanned on every query, while the sync costs the
  same per vector whatever the batch size.
- A full retrain happens only when the live set has drifted from the one the snapshot was trained on: after
  ``retrain_after`` x (size at training) changes (default 1.0: a full turnover, ~48 h in production), or when the size
  has doubled or halved. The benchmark prints its cost amortised over that interval.
- Candidates from both parts are rescored exactly from the live vectors before ranking: returned scores are exact
  cosines (not quantised estimates), so the clusterer's thresholds see true similarities. ScaNN is asked for
  ``k + margin`` candidates so that its approximate order cannot push an exact top-k member out.
- Small indexes (fewer than ``ann_min_size`` live centroids, default 4,096) use exact search only: a brute-force scan
  is then cheaper than ScaNN, and exact.

ScaNN 1.4.2 pitfalls this module works around (reproduced on this machine with small scripts)
- Mutating a SOAR index corrupts the heap: ``upsert`` (int8 or float reordering) and ``delete`` (int8 reordering)
  ended in "free(): invalid pointer" or a silent crash. SOAR spilling (which would buy recall) is therefore off, and
  the index never calls ``delete`` at all (it also renumbers datapoints): dead slots are tombstoned and reused.
- The partitioner's default random initialisation is not seeded: two builds of the same data in two processes give
  different partitions and different results. k-means++ initialisation (``random_init=False``) is seeded and makes
  builds and upserts reproducible across processes.

Determinism
- Every decision (sync, retrain, exact/approximate switch, slot reuse) is a function of the sequence of calls, never
  of time or threads; ScaNN is built and queried single-threaded with seeded training, and a snapshot is built from
  the live set in story-id order. The same sequence of calls returns the same results, in this process or another
  (the tests check both). Training computes with ScaNN's kernels too: every index is trained with the kernel set
  the process searches with (transforms/stories/index/ann_kernels.py ``known``).
- The writer's searches go through ``search_ahead`` (the snapshot searched for its next articles in one batch of
  at least AHEAD_MIN_ROWS rows): a row's answer is then the same whatever the batch held, so decisions do not
  depend on how articles were grouped into firings. A plain ``search`` (the repair's) may scan other partitions
  than a batch for the same query; each path is deterministic.
- Final scores are computed by one function (``exact_scores``: float32 inputs widened to float64, summed, rounded
  once to float32), so the same vectors give the same float32 scores whatever the BLAS kernel, the batch shape or
  the CPU; ties then break by story id.
- Approximate search is approximate: an index rebuilt from the story store after a restart was trained on a
  different history than the long-running one and may return a slightly different top-10 (recall@10 ~0.96 against
  exact at 250k, same best candidate for ~99 % of queries). Below ``ann_min_size`` (unit tests, small backfills)
  results are exact and therefore history-independent; ``CentroidIndex(dim, ann_min_size=None)`` forces exact search.

CPU instruction sets: the scann 1.4.2 wheel is built with its CPU detection compiled out (``port::TestCPUFeature``
returns false; its exported ``flags_internal::should_use_avx2/avx512`` read False on an AVX-512 CPU), so ScaNN runs
its SSE4/AVX baseline kernels on every x86 CPU unless those switches are set. Which set a process uses is chosen by
measuring on the CPU it runs on (transforms/stories/index/ann_kernels.py: a short calibration on the first index built,
cached per CPU signature, logged, ``NEWSROOM_ANN_KERNELS`` pins it): AVX2 was 1.19x faster than the baseline on an
AMD EPYC and 1.7x on an Intel Xeon (AVX-512), where the baseline assigned 848-954 articles per CPU second. On the
EPYC the AVX2 kernels returned different candidates for some queries (near-ties ordered differently); the choice
is fixed per machine by the cache, and the variable makes two kinds of CPU agree. The index profile (PCA dimensions
and share of partitions searched: ``ann_kernels.PROFILES``) is chosen the same way, per CPU and kernel set, by timing
the index's search and predicting the assignments per CPU second at 250,000 stories (``ann_kernels.choose_profile``;
``NEWSROOM_ANN_PROFILE`` pins it): the SSE4 baseline, 2 % under the goal with the default profile, takes "lean" (PCA to
96 dims, 36 % of the partitions: each scanned datapoint 25 % cheaper at about the same recall). Settings a caller
passes (``CentroidIndex(dim, pca_dims=...)``) are kept whatever the profile.

Threads: ScaNN search and build run on one thread (``threads=1``), as the clusterer is one writer per key on a
worker core; numpy's BLAS threads are the caller's business (benchmarks pin them to one).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from transforms.stories.index import ann_kernels

DEFAULT_MARGIN = 10
# search_ahead asks ScaNN for at least this many rows at once (padding with copies of the first): ScaNN chooses the
# partitions to scan with one routine for a single query, another for 2-6 and a third from 7 queries up, which can
# pick different partitions for one query; from 7 up a row's answer is the same whatever the batch's size, order or
# other rows (measured with every kernel set, batches of 7-130), so a decision never depends on which articles were
# searched together.
AHEAD_MIN_ROWS = 8
# CentroidIndex settings an index profile (ann_kernels.PROFILES, chosen per CPU) may change, with their defaults
PROFILED = {"num_leaves": None, "leaves_fraction": 0.3, "pca_dims": 128, "reorder": 300}


def normalise(vector: np.ndarray) -> np.ndarray:
    """One vector as contiguous float32 of unit L2 norm (a zero or non-finite vector is returned unscaled).

    The norm and the division are done in float64 and rounded once to float32, so the result does not depend on the
    BLAS kernel's summation order (short of a value landing within 1e-16 of a float32 rounding boundary).
    """
    v = np.asarray(vector, dtype=np.float64).reshape(-1)
    norm = math.sqrt(float(v @ v))
    if norm > 0.0 and math.isfinite(norm):
        v = v / norm
    return v.astype(np.float32)


def exact_scores(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Dot products of each row with the query, as float32, independent of the batch and of the BLAS kernel.

    BLAS float32 gemv/gemm results depend on blocking, i.e. on the matrix shape and the CPU kernel. Here the float32
    inputs are widened to float64 (their products are then exact) and the float64 sums, whose order can differ only
    in the last of 53 bits, are rounded once to float32.
    """
    return (rows.astype(np.float64) @ query.astype(np.float64)).astype(np.float32)


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
    v = np.asarray(vector, dtype=np.float64).reshape(-1)
    if v.shape[0] != dim:
        raise ValueError(f"vector has {v.shape[0]} dimensions, index has {dim}")
    norm = math.sqrt(float(v @ v))
    if not math.isfinite(norm):
        raise ValueError("vector has non-finite values")
    if norm > 0.0:
        v = v / norm
    return v.astype(np.float32)


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

    Tuning options (all keyword, all optional; defaults measured by benchmarks/ann_bench.py at 250k x 384; the
    defaults of num_leaves, leaves_fraction, pca_dims and reorder are the process's index profile's, chosen per CPU
    by ann_kernels.choose_profile, when it sets them):
        ann_min_size: live count from which ScaNN is used (default 4096; None = always exact).
        sync_every: max pending changes (delta vectors + removals) before they are applied to the snapshot
            (default 256).
        sync_fraction: the same bound as a fraction of the index, when that is smaller (default 0.02).
        retrain_after: changes since the last training, as a fraction of the size then, that force a full
            retrain (default 1.0); the index also retrains when its size doubles or halves.
        num_leaves: ScaNN partitions (default 0.8 sqrt(n)).
        leaves_fraction: fraction of partitions searched per query (default 0.3).
        min_scan: datapoints scanned at least (default 50,000): indexes up to that size scan every partition (a
            quantised brute force, still much cheaper than exact), larger ones at least that many.
        pca_dims: dimensions kept by ScaNN's PCA before partitioning and quantisation (default 128; None or >= dim
            keeps all). Scores are still exact: candidates are reordered and rescored on full vectors.
        spherical: spherical k-means partitions (default False: measured slightly lower recall here).
        reorder: candidates ScaNN reorders with int8 full vectors before returning k + margin (default 300).
        soar_lambda: ScaNN SOAR spilling strength (default None: off; scann 1.4.2 corrupts its heap when a SOAR
            index is mutated, see the module docstring).
        dims_per_block: product-quantisation block size (default 2).
        anisotropic_threshold: ScaNN anisotropic quantisation threshold (default 0.2; nan = plain PQ).
        training_sample_size: vectors sampled to train partitions and codebooks (default 50,000).
        margin: extra snapshot candidates fetched beyond k before exact rescoring (default 10).
        threads: ScaNN threads for building and searching (default 1).
    """

    ahead_rows = AHEAD_MIN_ROWS  # the fewest rows search_ahead asks ScaNN for (padding)

    def __init__(self, dim: int, **tuning: Any):
        self.dim = dim
        # settings the caller gave: the process's index profile (ann_kernels.PROFILES) overrides only the others
        self._explicit = {key: tuning[key] for key in PROFILED if key in tuning}
        self.ann_min_size = tuning.pop("ann_min_size", 4096)
        self.sync_every = int(tuning.pop("sync_every", 256))
        self.sync_fraction = float(tuning.pop("sync_fraction", 0.02))
        self.retrain_after = float(tuning.pop("retrain_after", 1.0))
        self.num_leaves = tuning.pop("num_leaves", None)
        self.leaves_fraction = float(tuning.pop("leaves_fraction", 0.3))
        self.min_scan = int(tuning.pop("min_scan", 50_000))
        self.pca_dims = tuning.pop("pca_dims", 128)
        self.spherical = bool(tuning.pop("spherical", False))
        self.reorder = int(tuning.pop("reorder", 300))
        self.soar_lambda = tuning.pop("soar_lambda", None)
        self.dims_per_block = int(tuning.pop("dims_per_block", 2))
        self.anisotropic_threshold = float(tuning.pop("anisotropic_threshold", 0.2))
        self.training_sample_size = int(tuning.pop("training_sample_size", 50_000))
        self.margin = int(tuning.pop("margin", DEFAULT_MARGIN))
        self.threads = int(tuning.pop("threads", 1))
        if tuning:
            raise TypeError(f"unknown tuning options for CentroidIndex: {sorted(tuning)}")
        # Exact mode: every live vector in a compact table.
        self._live: _VectorTable | None = _VectorTable(dim)
        # Approximate mode: slot i is ScaNN datapoint i (once synced); _mat[i] holds the *current* vector of story
        # _slot_story[i] (-1: a dead slot, free for the next new story). Slots are never deleted from ScaNN (its
        # delete corrupts the heap on such indexes in scann 1.4.2), only tombstoned and reused.
        self._scann = None
        self._mat = np.zeros((0, dim), dtype=np.float32)
        self._slot_story = np.zeros(0, dtype=np.int64)
        self._story_slot: dict[int, int] = {}
        self._n_slots = 0  # slots in use or dead; >= _scann_size
        self._scann_size = 0  # datapoints in the ScaNN searcher
        self._scann_capacity = 0  # datapoints reserved in it
        self._stale: set[int] = set()  # ScaNN slots never to answer: moved (answered from the delta), dead, reused
        self._free: list[int] = []  # heap of dead slots, reused lowest first
        self._delta = _VectorTable(dim, capacity=max(64, self.sync_every + 1))  # story id -> current vector
        self._removed_since_sync = 0
        self._generation = 0  # bumped whenever the snapshot changes (sync, build, back to exact): voids search_ahead
        self._leaves_to_search = 0
        self._trained_size = 0
        self._changes_since_train = 0
        self.stats = {"builds": 0, "syncs": 0, "synced_vectors": 0}
        self.seconds = {"build": 0.0, "sync": 0.0}  # CPU time spent training and syncing (benchmarks)

    # -- interface ------------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._live) if self._scann is None else len(self._story_slot)

    def __contains__(self, story_id: object) -> bool:
        return story_id in self._live if self._scann is None else story_id in self._story_slot

    def upsert(self, story_id: int, vector: np.ndarray) -> None:
        """Insert a new centroid or move an existing one."""
        story_id = int(story_id)
        v = _check_dim(vector, self.dim)
        if self._scann is None:
            if story_id in self._live.row and np.array_equal(self._live.get(story_id), v):
                return  # a replayed change: nothing moved
            self._live.put(story_id, v)
        else:
            slot = self._story_slot.get(story_id)
            if slot is None:
                slot = self._new_slot(story_id)
            elif np.array_equal(self._mat[slot], v):
                return
            self._mat[slot] = v
            if slot < self._scann_size:
                self._stale.add(slot)
            self._delta.put(story_id, v)
        self._changes_since_train += 1
        self._after_change()

    def bulk_upsert(self, story_ids: Iterable[int], vectors: np.ndarray) -> None:
        """Many upserts, then a single (re)build: how the clusterer restores the index from the story store."""
        vectors = np.asarray(vectors)
        ids = [int(s) for s in story_ids]
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids but {len(vectors)} vectors")
        if self._scann is not None:
            self._to_exact()
        self._live.reserve(len(self._live) + len(ids))
        for story_id, vector in zip(ids, vectors):
            self._live.put(story_id, _check_dim(vector, self.dim))
        self._changes_since_train += len(ids)
        if self._wants_ann():
            self._build()

    def remove(self, story_id: int) -> None:
        """Forget a centroid; removing an unknown id is a no-op (replayed changes are harmless)."""
        story_id = int(story_id)
        if self._scann is None:
            if not self._live.drop(story_id):
                return
        else:
            slot = self._story_slot.pop(story_id, None)
            if slot is None:
                return
            self._slot_story[slot] = -1
            heapq.heappush(self._free, slot)
            if slot < self._scann_size:
                self._stale.add(slot)
            self._delta.drop(story_id)
            self._removed_since_sync += 1
        self._changes_since_train += 1
        self._after_change()

    def vector(self, story_id: int) -> np.ndarray:
        """The stored (normalised) vector of a live centroid (a copy)."""
        if self._scann is None:
            return self._live.get(int(story_id)).copy()
        return self._mat[self._story_slot[int(story_id)]].copy()

    def search(self, vector: np.ndarray, k: int = 10, ahead: tuple | None = None) -> list[tuple[int, float]]:
        """The k live centroids most similar to ``vector``: ``[(story_id, cosine)]``, best first.

        ``ahead``: this query's token from :meth:`search_ahead`; the result is the same with or without it."""
        q = _check_dim(vector, self.dim)
        if k <= 0 or len(self) == 0:
            return []
        if self._scann is None:
            rows = self._live.top(q, k + self.margin)
            return _rank(self._live.ids[rows], exact_scores(self._live.mat[rows], q), k)
        first = ahead[2] if ahead is not None and self.ahead_valid(ahead, k) else None
        slots = self._snapshot_slots(q, k + self.margin, first)
        ids = self._slot_story[slots]
        scores = exact_scores(self._mat[slots], q)
        if self._delta.row:
            rows = self._delta.top(q, k + 2)  # BLAS scores are exact up to rounding: 2 spare for near-ties
            ids = np.concatenate([ids, self._delta.ids[rows]])
            scores = np.concatenate([scores, exact_scores(self._delta.mat[rows], q)])
        return _rank(ids, scores, k)

    def search_batch(self, vectors: np.ndarray, k: int = 10) -> list[list[tuple[int, float]]]:
        """``[search(v, k) for v in vectors]``, with identical results (each query sees the same state)."""
        return [self.search(v, k) for v in np.asarray(vectors)]

    def search_ahead(self, vectors: Iterable[np.ndarray], k: int = 10) -> list[tuple | None]:
        """Tokens for queries to be searched later, one at a time (the writer's next articles, while earlier ones
        change the index): each query's snapshot candidates, found for all of them in one batched ScaNN search.

        Why: ScaNN scans its partitions for several queries at once in a batch, 1.4-1.6x less CPU per query than
        one at a time at 250,000 stories (benchmarks/ann_bench.py). Only the snapshot part is searched ahead: the
        delta (new and moved centroids) and the tombstones are read when each query is searched, so
        ``search(v, k, ahead=token)`` at any later moment returns what it would if the snapshot had been searched
        then. A token holds the snapshot's generation: after a sync or a rebuild it is void (:meth:`ahead_valid`)
        and the caller searches ahead again (:class:`transforms.stories.index.index.Lookahead` does).

        Batches have at least AHEAD_MIN_ROWS rows (padded): ScaNN then answers a row the same whatever the batch
        (see AHEAD_MIN_ROWS), so a token does not depend on which queries were searched with it. A single
        ``search`` may pick other partitions for the same query (a few queries in a hundred on a tiny index with
        2 of 4 partitions scanned; none of 4,096 at 250,000 stories): a caller uses tokens for all its queries or
        for none. ``None`` tokens in exact mode, when the snapshot is too small to search a part of it, and for a
        vector that ``search`` refuses (its search raises then, as without a token)."""
        rows: list[int] = []
        queries: list[np.ndarray] = []
        vectors = list(vectors)
        if self._scann is not None and k > 0:
            asked = min(self._scann_size, k + 2 * self.margin)
            for i, vector in enumerate(vectors):
                try:
                    queries.append(_check_dim(vector, self.dim))
                except ValueError:
                    continue
                rows.append(i)
        tokens: list[tuple | None] = [None] * len(vectors)
        if queries and asked < self._scann_size:
            queries += queries[:1] * (AHEAD_MIN_ROWS - len(queries))
            qs = np.ascontiguousarray(np.stack(queries))
            found, dist = self._scann.search_batched(
                qs, asked, max(self.reorder, asked), self._leaves_to_search, False, 0
            )
            for i, idx, d in zip(rows, found, dist):  # a row with fewer hits is padded with index 0, distance NaN
                tokens[i] = (self._generation, k, np.asarray(idx[~np.isnan(d)], dtype=np.int64))
        return tokens

    def ahead_valid(self, token: tuple | None, k: int) -> bool:
        """Whether a :meth:`search_ahead` token still describes the snapshot, for a search of ``k``."""
        return token is not None and self._scann is not None and token[0] == self._generation and token[1] == k

    @property
    def ahead_room(self) -> int:
        """Changes the index takes before its next sync or rebuild (which voids search_ahead tokens); large in
        exact mode. A caller searching ahead need not plan further than this many changes."""
        return self._sync_bound() - self.pending if self._scann is not None else 1 << 30

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
        return self.ann_min_size is not None and len(self) >= max(int(self.ann_min_size), 64)

    def _sync_bound(self) -> int:
        return max(1, min(self.sync_every, int(self.sync_fraction * max(self._trained_size, len(self)))))

    def _after_change(self) -> None:
        if self._scann is None:
            if self._wants_ann():
                self._build()
            return
        n = len(self)
        if self.ann_min_size is None or n < int(self.ann_min_size) // 2:
            self._to_exact()
            return
        if self.pending < self._sync_bound():
            return
        drifted = self._changes_since_train >= self.retrain_after * self._trained_size
        resized = n >= 2 * self._trained_size or 2 * n <= self._trained_size
        if drifted or resized:
            self._build()
        else:
            self._sync()

    def _new_slot(self, story_id: int) -> int:
        if self._free:
            slot = heapq.heappop(self._free)
        else:
            slot = self._n_slots
            if slot >= len(self._slot_story):
                capacity = max(1024, slot + 1, len(self._slot_story) + len(self._slot_story) // 4)
                mat = np.zeros((capacity, self.dim), dtype=np.float32)
                mat[:slot] = self._mat[:slot]
                slot_story = np.full(capacity, -1, dtype=np.int64)
                slot_story[:slot] = self._slot_story[:slot]
                self._mat, self._slot_story = mat, slot_story
            self._n_slots += 1
        self._slot_story[slot] = story_id
        self._story_slot[story_id] = slot
        return slot

    def _live_items(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, vectors) of every live centroid, in story-id order."""
        if self._scann is None:
            ids, mat = self._live.live()
        else:
            slots = np.fromiter(self._story_slot.values(), dtype=np.int64, count=len(self._story_slot))
            ids, mat = self._slot_story[slots], self._mat[slots]
        order = np.argsort(ids, kind="stable")
        return ids[order], np.ascontiguousarray(mat[order])

    def _to_exact(self) -> None:
        ids, mat = self._live_items()
        live = _VectorTable(self.dim, capacity=max(1024, len(ids)))
        live.mat[: len(ids)] = mat
        live.ids[: len(ids)] = ids
        live.row = {int(story_id): row for row, story_id in enumerate(ids.tolist())}
        self._live = live
        self._scann = None
        self._mat = np.zeros((0, self.dim), dtype=np.float32)
        self._slot_story = np.zeros(0, dtype=np.int64)
        self._story_slot = {}
        self._n_slots = self._scann_size = 0
        self._stale, self._free = set(), []
        self._delta.clear()
        self._removed_since_sync = 0
        self._trained_size = 0
        self._generation += 1

    def _snapshot_slots(self, q: np.ndarray, want: int, first: np.ndarray | None = None) -> np.ndarray:
        """Slots of live, current snapshot hits near q; ``want`` of them when the snapshot has that many.

        ScaNN is first asked for ``want + margin`` (whatever the tombstones: so that :meth:`search_ahead` can ask
        the same before they are known), more while tombstones leave fewer than ``want``. ``first``: the answer to
        the first question, found ahead."""
        stale = self._stale
        size = self._scann_size
        asked = min(size, want + self.margin)
        while True:
            if first is not None:
                idx, first = first, None
            else:
                idx, _ = self._scann.search(q, asked, max(self.reorder, asked), self._leaves_to_search)
            if not stale:
                return idx.astype(np.int64)
            kept = [i for i in idx.tolist() if i not in stale]
            if len(kept) >= want or len(idx) < asked or asked >= size:
                return np.array(kept, dtype=np.int64)
            asked = min(size, asked * 2)

    def _build(self) -> None:
        """Train a new ScaNN snapshot on all live centroids (in story-id order); nothing is pending afterwards.

        Trained with the kernels and the index profile the process knows (ann_kernels ``known``,
        ``known_profile``); the first index of at least ann_kernels.CALIBRATE_MIN vectors of a process that knows
        neither (not pinned, not cached for this CPU) measures them here and is trained again with the choice."""
        import time

        started = time.process_time()
        ids, vectors = self._live_items()
        n = len(ids)
        # headroom for new stories, allocated now so that growing never copies the table mid-stream
        capacity = n + max(64, n // 16)
        mat = np.zeros((capacity, self.dim), dtype=np.float32)
        mat[:n] = vectors
        del vectors
        data = mat[:n]
        trained_with, profile = ann_kernels.known(), ann_kernels.known_profile()  # training computes with them too
        searcher = self._train(data, profile)
        want = 10 + 2 * self.margin
        batches = self._probe_batches(data)  # timed as the writer searches: batches (search_ahead)
        choice = ann_kernels.choose(
            lambda b: searcher.searcher.search_batched(
                b, want, max(self.reorder, want), self._leaves_to_search, False, 0
            ),
            batches,
            n,
        )
        if choice["kernels"] != trained_with or ann_kernels.known_profile() != profile:
            profile = ann_kernels.known_profile()  # this build calibrated: train again with the choice
            searcher = self._train(data, profile)
        trained = {profile: searcher}
        chosen = ann_kernels.choose_profile(lambda name: self._measure_profile(data, name, trained), n)
        if chosen not in trained:
            trained[chosen] = self._train(data, chosen)
        self._settings(chosen, n)
        self._scann = trained.pop(chosen).searcher  # the raw pybind object: its datapoint index is our slot number
        trained.clear()
        self._scann.reserve(capacity)
        self._live = None
        self._mat = mat
        self._slot_story = np.full(capacity, -1, dtype=np.int64)
        self._slot_story[:n] = ids
        self._story_slot = {int(story_id): slot for slot, story_id in enumerate(ids.tolist())}
        self._n_slots = self._scann_size = n
        self._scann_capacity = capacity
        self._stale, self._free = set(), []
        self._delta.clear()
        self._removed_since_sync = 0
        self._trained_size = n
        self._changes_since_train = 0
        self._generation += 1
        self.stats["builds"] += 1
        self.seconds["build"] += time.process_time() - started

    def _settings(self, profile: str, n: int) -> int:
        """Take ``profile``'s settings (ann_kernels.PROFILES) for those the caller did not give; set the partitions
        searched for an index of ``n`` vectors; return the partitions trained."""
        overrides = ann_kernels.PROFILES[profile]
        for key, default in PROFILED.items():
            setattr(self, key, self._explicit.get(key, overrides.get(key, default)))
        self.leaves_fraction, self.reorder = float(self.leaves_fraction), int(self.reorder)
        leaves = int(self.num_leaves or 0.8 * np.sqrt(n))
        leaves = max(2, min(leaves, n // 16))
        by_share = int(round(self.leaves_fraction * leaves))
        by_scan = int(np.ceil(leaves * min(1.0, self.min_scan / n)))
        self._leaves_to_search = max(1, min(leaves, max(by_share, by_scan)))
        return leaves

    def _train(self, data: np.ndarray, profile: str):
        """A ScaNN searcher (the python wrapper) trained on ``data`` with ``profile``'s settings."""
        import scann  # heavy: only when an index grows past ann_min_size
        from scann.scann_ops.py.scann_builder import ReorderType

        n = len(data)
        leaves = self._settings(profile, n)
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
        return searcher

    @staticmethod
    def _probe_batches(data: np.ndarray) -> list[np.ndarray]:
        """Calibration queries: QUERIES vectors spread over the index, in batches of BATCH (as the writer)."""
        probe = data[:: max(1, len(data) // ann_kernels.QUERIES)][: ann_kernels.QUERIES]
        return [np.ascontiguousarray(probe[i : i + ann_kernels.BATCH]) for i in range(0, len(probe), ann_kernels.BATCH)]

    def _measure_profile(self, data: np.ndarray, profile: str, trained: dict) -> dict:
        """Figures of ``profile`` on this index (ann_kernels.predicted_rate): its batched search timed scanning
        every partition and a third of them (a line through both: fixed CPU per query and CPU per datapoint
        scanned), and the index's own rescoring and ranking of a query's candidates (what ``search`` does)."""
        import time

        if profile not in trained:
            trained[profile] = self._train(data, profile)
        searcher, n = trained[profile].searcher, len(data)
        leaves = self._settings(profile, n)
        want = 10 + 2 * self.margin
        batches = self._probe_batches(data)
        queries = sum(len(b) for b in batches)
        part = max(1, leaves // 3)
        best = {leaves: float("inf"), part: float("inf")}
        for _ in range(ann_kernels.ROUNDS):
            for scanned in best:
                searcher.search_batched(batches[0], want, max(self.reorder, want), scanned, False, 0)
                t = time.process_time()
                for b in batches:
                    searcher.search_batched(b, want, max(self.reorder, want), scanned, False, 0)
                best[scanned] = min(best[scanned], (time.process_time() - t) / queries)
        per_point = max(0.0, (best[leaves] - best[part]) / (n - n * part / leaves))
        fixed = max(0.0, best[part] - per_point * n * part / leaves)
        found = [
            idx
            for b in batches
            for idx in searcher.search_batched(b, want, max(self.reorder, want), self._leaves_to_search, False, 0)[0]
        ]
        rest = float("inf")
        for _ in range(ann_kernels.ROUNDS):
            t = time.process_time()
            for q, idx in zip((q for b in batches for q in b), found):
                q = _check_dim(q, self.dim)
                rows = np.asarray(idx, dtype=np.int64)
                _rank(rows, exact_scores(data[rows], q), 10)
            rest = min(rest, (time.process_time() - t) / queries)
        return {"fixed_us": fixed * 1e6, "us_per_point": per_point * 1e6, "rest_us": rest * 1e6, "size": n}

    def _sync(self) -> None:
        """Write pending slots into the snapshot: changed ones in place, new ones appended in slot order."""
        import time

        started = time.process_time()
        changed = sorted(self._story_slot[i] for i in self._delta.row)
        in_place = [slot for slot in changed if slot < self._scann_size]
        # every slot past the snapshot is appended, dead ones included (their stale vector stays tombstoned)
        appended = list(range(self._scann_size, self._n_slots))
        slots = in_place + appended
        if slots:
            if self._n_slots > self._scann_capacity:
                self._scann_capacity = self._n_slots + max(64, self._n_slots // 8)
                self._scann.reserve(self._scann_capacity)
            targets: list[int | None] = [*in_place, *([None] * len(appended))]
            assigned = self._scann.upsert(targets, np.ascontiguousarray(self._mat[slots]), len(slots))
            if [int(a) for a in assigned] != slots:
                raise RuntimeError("ScaNN assigned unexpected datapoint indices during sync")
            self._scann_size = self._n_slots
            for slot in slots:
                if self._slot_story[slot] >= 0:
                    self._stale.discard(slot)
                else:
                    self._stale.add(slot)
        self._generation += 1
        self.stats["syncs"] += 1
        self.stats["synced_vectors"] += len(slots)
        self._delta.clear()
        self._removed_since_sync = 0
        self.seconds["sync"] += time.process_time() - started
