"""Clusterer-alone benchmark: assignments/s of a centroid search+update loop on one core, ANN vs exact.

Reads nothing (the vectors are synthetic, see below) and writes only to stdout. Prints figures; asserts nothing
about time (targets: >= 2,000 assignments/s on one core with 250,000 live stories, recall@10 >= 0.95).

    .venv/bin/python benchmarks/ann_bench.py --ops 6000 --exact-ops 50 --recall-queries 500   # docs/architecture.md
    .venv/bin/python benchmarks/ann_bench.py                    # 250k live stories, 384-d (a few minutes)
    .venv/bin/python benchmarks/ann_bench.py --stories 20000    # quick check

Synthetic but realistic vectors. Their statistics were calibrated on all-MiniLM-L6-v2 embeddings of the labelled
stories in ../shared/data (uci, ecbplus, basil: 3,635 articles, title + lede): unit vectors sharing a mean direction
of norm ~0.27; a covariance spectrum that decays like (1 + i/20)^-1.7 (10 / 50 / 100 / 200 components carry ~29 /
67 / 82 / 93 % of the variance, measured 29 / 64 / 81 / 95 %); unrelated stories at cosine ~0.07 (p99 ~0.32, measured
0.43); an article at cosine ~0.77 from its own story's centroid (measured median 0.76). Stories belong to 10,000 topics
with Zipf popularity (0.7), so that a query's tail of neighbours is made of same-topic stories at ~0.4-0.5, as in
real news. Queries: 70 % articles of live stories (near an existing centroid), 30 % first articles of new stories
(from a known topic, or 30 % of those from a new topic: near nothing).

The loop is what ClusterStories does per article with precomputed vectors: search the 10 nearest centroids, join
the best if its cosine >= --threshold (the story's centroid moves: recency-weighted mean), else start a new story
(insert) and expire the oldest live story (remove), so the live set stays at --stories (the 48 h window).

Both paths, in one command, on two indexes built alike, tenth by tenth interleaved (same load): one search per
article (``index.search``), and as the writer searches (transforms/stories/writer/cluster.py ``_nearest``: the
snapshot searched for the next ``--batch`` articles in one batched ScaNN call, transforms/stories/index/index.py
``Lookahead``; the delta of stories created or moved since the last sync, those of the same batch included, and the
tombstones read per article). Printed: each path's rate, whether their index operations agree, recall@10 of each.

One core: BLAS/OpenMP threads are pinned to 1 before numpy loads and ScaNN builds and searches single-threaded.
Rates are reported per CPU second of this process (the machine is shared: wall clock is printed too).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transforms.stories.index.ann import CentroidIndex, ExactIndex, normalise  # noqa: E402
from transforms.stories.index.index import Lookahead  # noqa: E402


class World:
    """Topic -> story -> article generator with the statistics given in the module docstring."""

    def __init__(self, dim: int, topics: int, seed: int, mean_norm=0.27, topic_share=0.4, article_noise=0.85):
        self.rng = np.random.default_rng(seed)
        self.dim = dim
        basis, _ = np.linalg.qr(self.rng.standard_normal((dim, dim)))
        scale = (1 + np.arange(dim) / 20.0) ** -0.85
        scale /= np.sqrt((scale**2).sum())
        self.basis = (basis * scale).T.astype(np.float32)  # z @ basis: anisotropic, E|x|^2 = 1
        mean = self.rng.standard_normal(dim)
        self.mean = (mean / np.linalg.norm(mean)).astype(np.float32)
        self.mean_norm, self.topic_share, self.article_noise = mean_norm, topic_share, article_noise
        self.topics = self._draw(topics)
        popularity = 1.0 / np.arange(1, topics + 1) ** 0.7
        self.popularity = popularity / popularity.sum()

    def _draw(self, n: int) -> np.ndarray:
        return self.rng.standard_normal((n, self.dim)).astype(np.float32) @ self.basis

    @staticmethod
    def _unit(x: np.ndarray) -> np.ndarray:
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    def stories(self, n: int, new_topic_fraction: float = 0.0) -> np.ndarray:
        topic = self.rng.choice(len(self.topics), size=n, p=self.popularity)
        deviation = np.sqrt(self.topic_share) * self.topics[topic] + np.sqrt(1 - self.topic_share) * self._draw(n)
        fresh = self.rng.random(n) < new_topic_fraction
        deviation[fresh] = self._draw(int(fresh.sum()))
        deviation = self._unit(deviation) * np.sqrt(1 - self.mean_norm**2)
        return self._unit(deviation + self.mean_norm * self.mean)

    def articles(self, stories: np.ndarray) -> np.ndarray:
        return self._unit(stories + self.article_noise * self._draw(len(stories)))


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def settle() -> int:
    gc.collect()
    return rss_bytes()


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info

        return "; ".join(
            f"{p.get('internal_api')} {p.get('version')} {p.get('architecture', '')} threads={p.get('num_threads')}"
            for p in threadpool_info()
        )
    except ImportError:
        return "threadpoolctl not installed"


def query_stream(world: World, truth: np.ndarray, live_from: int, n: int, join_share: float, rng) -> tuple:
    """n article vectors: join_share of them from live stories (indices >= live_from), the rest from new stories."""
    joins = rng.random(n) < join_share
    vectors = np.empty((n, world.dim), dtype=np.float32)
    targets = rng.integers(live_from, len(truth), int(joins.sum()))
    vectors[joins] = world.articles(truth[targets])
    vectors[~joins] = world.articles(world.stories(int((~joins).sum()), new_topic_fraction=0.3))
    return vectors, joins


class Loop:
    """The clusterer-like decision loop over one index; tracks centroids and ages as a clusterer would."""

    def __init__(self, index, centroids: dict, next_id: int, threshold: float, weight: float):
        self.index, self.centroids, self.next_id = index, centroids, next_id
        self.threshold, self.weight = threshold, weight
        self.oldest = min(centroids)  # ids are time-ordered: the smallest live id is the oldest story
        self.joins = 0
        self.log: list[tuple] = []

    def run(self, articles: np.ndarray, keep_log: bool = False, lookahead: Lookahead | None = None) -> None:
        """Decide ``articles`` in order: each searched alone (``index.search``), or, with ``lookahead``, as the
        writer does (transforms/stories/writer/cluster.py ``_nearest``): the snapshot searched for the next ones in
        one batch, the delta and tombstones read per article."""
        index, centroids, log = self.index, self.centroids, self.log
        for i, article in enumerate(articles):
            if lookahead is None:
                hits = index.search(article, 10)
            else:
                hits = lookahead.search(index, i, article, 10, lambda n, i=i: list(enumerate(articles[i : i + n], i)))
            if hits and hits[0][1] >= self.threshold:
                story = hits[0][0]
                moved = normalise((1 - self.weight) * centroids[story] + self.weight * article)
                centroids[story] = moved
                index.upsert(story, moved)
                self.joins += 1
                if keep_log:
                    log.append(("upsert", story, moved))
            else:
                story = self.next_id
                self.next_id += 1
                centroids[story] = article
                index.upsert(story, article)
                while self.oldest not in centroids:
                    self.oldest += 1
                expired = self.oldest
                del centroids[expired]
                index.remove(expired)
                if keep_log:
                    log.append(("upsert", story, article))
                    log.append(("remove", expired, None))


def recall_at_10(ann, exact, queries: np.ndarray, joins: np.ndarray, relevant: float) -> dict:
    """recall@10 against exact search, split by query kind, plus the recall of the neighbours that can matter to a
    join decision (exact top-10 members with cosine >= relevant) and agreement on the best candidate."""
    got = ann.search_batch(queries, 10)
    want = exact.search_batch(queries, 10)
    per = np.array([len({i for i, _ in g} & {i for i, _ in w}) / max(1, len(w)) for g, w in zip(got, want)])
    top1 = np.array([bool(g) and bool(w) and g[0][0] == w[0][0] for g, w in zip(got, want)])
    strong = [({i for i, s in w if s >= relevant}, {i for i, _ in g}) for g, w in zip(got, want)]
    strong_hits = sum(len(need & have) for need, have in strong)
    strong_all = sum(len(need) for need, _ in strong)
    return {
        "recall@10": per.mean(),
        "near": per[joins].mean(),
        "not near": per[~joins].mean(),
        "top-1 agreement": top1.mean(),
        f"recall of cos>={relevant}": strong_hits / max(1, strong_all),
    }


def _same_op(a: tuple, b: tuple) -> bool:
    return a[:2] == b[:2] and (a[2] is None) == (b[2] is None) and (a[2] is None or np.array_equal(a[2], b[2]))


class AheadView:
    """``search_batch`` through search_ahead tokens, as the writer searches (for recall_at_10)."""

    def __init__(self, index: CentroidIndex, batch: int):
        self.index, self.batch = index, batch

    def search_batch(self, queries: np.ndarray, k: int) -> list:
        out = []
        for j in range(0, len(queries), self.batch):
            part = queries[j : j + self.batch]
            out.extend(self.index.search(q, k, t) for q, t in zip(part, self.index.search_ahead(part, k)))
        return out


def raw_search_figures(ann, queries: np.ndarray, batch: int = 32) -> str:
    """ScaNN's own search of the snapshot, one query at a time (what an assignment asks) and in batches of
    ``batch`` (what a clusterer that looked ahead at its next articles could ask): CPU us per query, best of three
    interleaved rounds, and whether both return the same candidate sets."""
    s = getattr(ann, "_scann", None)
    if s is None:
        return "raw ScaNN search: exact index, nothing to compare"
    want, leaves = 10 + ann.margin, ann._leaves_to_search
    pre = max(ann.reorder, want)
    qs = np.ascontiguousarray(queries, dtype=np.float32)
    single_best = batched_best = float("inf")
    for _ in range(3):
        cpu = time.process_time()
        single = [s.search(q, want, pre, leaves)[0] for q in qs]
        single_best = min(single_best, (time.process_time() - cpu) / len(qs))
        cpu = time.process_time()
        batched = []
        for j in range(0, len(qs), batch):
            batched.extend(s.search_batched(qs[j : j + batch], want, pre, leaves, False, 0)[0])
        batched_best = min(batched_best, (time.process_time() - cpu) / len(qs))
    same = np.mean([set(a.tolist()) == set(b.tolist()) for a, b in zip(single, batched)])
    return (
        f"raw ScaNN search of the snapshot ({len(qs)} queries, best of 3): one at a time {single_best * 1e6:.0f} us, "
        f"in batches of {batch} {batched_best * 1e6:.0f} us per query ({single_best / batched_best:.2f}x); "
        f"same {want} candidates for {same:.1%} of queries"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stories", type=int, default=250_000, help="live stories (default 250000)")
    parser.add_argument("--dim", type=int, default=384, help="vector dimensions (default 384, MiniLM)")
    parser.add_argument("--topics", type=int, default=10_000, help="topics the stories belong to (default 10000)")
    parser.add_argument("--ops", type=int, default=20_000, help="assignments in the ANN loop (default 20000)")
    parser.add_argument("--exact-ops", type=int, default=300, help="assignments in the exact loop (default 300)")
    parser.add_argument("--recall-queries", type=int, default=1000, help="queries per recall check (default 1000)")
    parser.add_argument("--threshold", type=float, default=0.6, help="join threshold (default 0.6)")
    parser.add_argument("--join-share", type=float, default=0.7, help="share of articles of live stories (0.7)")
    parser.add_argument("--relevant", type=float, default=0.5, help="cosine from which a neighbour can matter (0.5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tuning", default="", help="CentroidIndex options, e.g. leaves_fraction=0.2,reorder=150")
    parser.add_argument("--batch", type=int, default=32, help="articles searched ahead at once, as the writer (32)")
    args = parser.parse_args(argv)

    tuning = {}
    for item in filter(None, args.tuning.split(",")):
        key, value = item.split("=")
        tuning[key] = None if value == "None" else (float(value) if "." in value else int(value))
    tuning.setdefault("threads", 1)

    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, cpus {os.cpu_count()}, BLAS: {blas_info()}")
    print(
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')} "
        f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE', '(unset)')}"
    )
    rng = np.random.default_rng(args.seed + 1)
    world = World(args.dim, args.topics, args.seed)
    truth = world.stories(args.stories)
    ids = np.arange(args.stories, dtype=np.int64)
    print(f"{args.stories:,} live stories x {args.dim} dims, {args.topics:,} topics; tuning {tuning}")

    import scann  # noqa: F401  (loaded before the baseline: its code is not per-story memory)

    base = settle()
    cpu, wall = time.process_time(), time.perf_counter()
    ann = CentroidIndex(args.dim, **tuning)
    ann.bulk_upsert(ids, truth)
    build_cpu, build_wall = time.process_time() - cpu, time.perf_counter() - wall
    ann_bytes = settle() - base
    print(f"build: {build_cpu:.1f} s CPU ({build_wall:.1f} s wall), approximate={ann.approximate}")
    from transforms.stories.index import ann_kernels

    print(f"ScaNN kernels: {ann_kernels.CHOICE} (transforms/stories/index/ann_kernels.py)")
    print(
        f"memory: CentroidIndex {ann_bytes / 2**20:.0f} MiB RSS = {ann_bytes / args.stories:,.0f} bytes per live story"
    )

    base = settle()
    exact = ExactIndex(args.dim)
    exact.bulk_upsert(ids, truth)
    exact_bytes = settle() - base
    print(
        f"memory: ExactIndex {exact_bytes / 2**20:.0f} MiB RSS = {exact_bytes / args.stories:,.0f} bytes per live story"
    )

    queries, joins = query_stream(world, truth, 0, args.recall_queries, args.join_share, rng)
    start = recall_at_10(ann, exact, queries, joins, args.relevant)
    print("recall after build: " + ", ".join(f"{k} {v:.4f}" for k, v in start.items()))

    cpu = time.process_time()
    twin = CentroidIndex(args.dim, **tuning)  # the same build (seeded): the batched loop's index
    twin.bulk_upsert(ids, truth)
    print(f"second build (the batched loop's index): {time.process_time() - cpu:.1f} s CPU")

    live_from = args.stories // 2  # join targets stay live: the loop expires at most ops * (1 - join share) stories
    articles, _ = query_stream(world, truth, live_from, args.ops, args.join_share, rng)
    loops = {
        "one at a time": Loop(ann, {int(i): truth[i] for i in ids}, args.stories, args.threshold, weight=0.25),
        "batched": Loop(twin, {int(i): truth[i] for i in ids}, args.stories, args.threshold, weight=0.25),
    }
    ahead = Lookahead(size=args.batch)
    gc.collect()
    # CPU seconds per tenth of the loop, the two paths interleaved tenth by tenth (the machine is shared: the
    # median and best tenth show the spread, and both paths see the same load)
    chunks = {name: [] for name in loops}
    syncs = {name: loop.index.seconds["sync"] for name, loop in loops.items()}
    for part in np.array_split(articles, 10):
        for name, loop in loops.items():
            cpu, wall = time.process_time(), time.perf_counter()
            loop.run(part, keep_log=True, lookahead=ahead if name == "batched" else None)
            ahead.clear()  # a firing's end (its keys are the article's place in it)
            chunks[name].append((len(part), time.process_time() - cpu, time.perf_counter() - wall))
    rates = {}
    for name, loop in loops.items():
        n_cpu, n_wall = sum(c[1] for c in chunks[name]), sum(c[2] for c in chunks[name])
        tenth = sorted(n / max(c, 1e-9) for n, c, _ in chunks[name])
        sync_cpu = loop.index.seconds["sync"] - syncs[name]
        rates[name] = (args.ops / n_cpu, float(np.median(tenth)))
        extra = f"; {ahead.batches:,} batched searches of up to {args.batch}" if name == "batched" else ""
        print(
            f"ANN loop, {name}: {args.ops:,} assignments in {n_cpu:.2f} s CPU ({n_wall:.2f} s wall): "
            f"{args.ops / n_cpu:,.0f} assignments/s per CPU second ({args.ops / n_wall:,.0f}/s wall); "
            f"joins {loop.joins / args.ops:.1%}; index stats {loop.index.stats}, pending {loop.index.pending}; "
            f"of which syncing the snapshot {sync_cpu:.2f} s CPU ({sync_cpu / args.ops * 1e6:.0f} us per assignment); "
            f"per tenth: median {tenth[len(tenth) // 2]:,.0f}/s, best {tenth[-1]:,.0f}/s, worst {tenth[0]:,.0f}/s"
            + extra
        )
    one, batched = loops["one at a time"], loops["batched"]
    same = next((i for i, (a, b) in enumerate(zip(one.log, batched.log)) if not _same_op(a, b)), len(one.log))
    print(
        f"batched / one at a time: {rates['batched'][0] / rates['one at a time'][0]:.2f}x per CPU second "
        f"(median tenths {rates['batched'][1] / rates['one at a time'][1]:.2f}x); the same index operations for "
        f"{same:,} of {len(one.log):,} (ScaNN picks a single query's partitions with another routine than a "
        "batch's: the two paths may part at a near-tie, each is deterministic)"
    )
    loop = one

    del exact
    gc.collect()
    exact = ExactIndex(args.dim)  # the loop's live centroids, brute force (untimed)
    exact.bulk_upsert(list(loop.centroids), np.stack(list(loop.centroids.values())))
    assert len(exact) == len(ann)
    queries, joins = query_stream(world, truth, live_from, args.recall_queries, args.join_share, rng)
    end = recall_at_10(ann, exact, queries, joins, args.relevant)
    print("recall after the loop (delta and tombstones pending): " + ", ".join(f"{k} {v:.4f}" for k, v in end.items()))
    exact_b = ExactIndex(args.dim)
    exact_b.bulk_upsert(list(batched.centroids), np.stack(list(batched.centroids.values())))
    end_b = recall_at_10(AheadView(twin, args.batch), exact_b, queries, joins, args.relevant)
    del exact_b
    print("recall of the batched path: " + ", ".join(f"{k} {v:.4f}" for k, v in end_b.items()))

    print(raw_search_figures(ann, queries))

    articles, _ = query_stream(world, truth, live_from, args.exact_ops, args.join_share, rng)
    exact_loop = Loop(exact, dict(loop.centroids), loop.next_id, args.threshold, weight=0.25)
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    exact_loop.run(articles)
    exact_cpu, exact_wall = time.process_time() - cpu, time.perf_counter() - wall
    exact_rate = args.exact_ops / exact_cpu
    print(
        f"exact loop: {args.exact_ops:,} assignments in {exact_cpu:.2f} s CPU ({exact_wall:.2f} s wall): "
        f"{exact_rate:,.0f} assignments/s per CPU second ({args.exact_ops / exact_wall:,.0f}/s wall)"
    )

    retrain_every = ann.retrain_after * args.stories
    amortised = build_cpu / retrain_every if retrain_every else 0.0
    ann_rate, batched_rate = rates["one at a time"][0], rates["batched"][0]
    print(
        f"SUMMARY stories={args.stories} dim={args.dim} assignments/s: one at a time={ann_rate:,.0f} "
        f"batched={batched_rate:,.0f} ({batched_rate / ann_rate:.2f}x; one core, CPU time; median tenths "
        f"{rates['one at a time'][1]:,.0f} / {rates['batched'][1]:,.0f}) "
        f"exact={exact_rate:,.0f}/s ratio={batched_rate / exact_rate:,.1f}x recall@10={end['recall@10']:.4f} "
        f"batched {end_b['recall@10']:.4f} (after build {start['recall@10']:.4f}) top1={end['top-1 agreement']:.4f} "
        f"batched {end_b['top-1 agreement']:.4f} bytes/story={ann_bytes / args.stories:,.0f} build={build_cpu:.1f}s "
        f"CPU; with a full retrain every {retrain_every:,.0f} changes amortised: "
        f"{1.0 / (1.0 / ann_rate + amortised):,.0f} / {1.0 / (1.0 / batched_rate + amortised):,.0f}/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
