"""The clusterer index on every CPU kind at once: each ScaNN kernel set with the index profile it chooses by measuring.

Reads nothing (benchmarks/ann_bench.py's synthetic vectors) and writes only to stdout (and a temporary calibration
cache, removed at the end). Prints figures; asserts nothing about time (goal: >= 2,000 assignments per CPU second at
250,000 live stories with recall@10 >= 0.95 on every CPU: the design's per-language writer at full scale).

    PYTHONPATH=. .venv/bin/python benchmarks/ann_cpus_bench.py --ops 6000 --recall-queries 500   # docs/architecture.md

Why one command: the kernel set is what differs between the CPUs the project meets (the scann wheel runs its SSE4
baseline on a CPU without AVX2, AVX2 on an AVX2-only EPYC, AVX-512 here), and this process can run all three
(``transforms/stories/index/ann_kernels.py``: scann's switches are process-wide). For each kernel set the index is
built as a writer on such a CPU builds it: kernels pinned (``NEWSROOM_ANN_KERNELS``), cache empty, so its first
build measures and chooses the index profile (``ann_kernels.choose_profile``) and trains with it; a kernel set whose
choice is not the default profile is also run with the default pinned (``NEWSROOM_ANN_PROFILE``), the figure the
choice is against. All indexes decide the same articles as the writer searches (batched, ``Lookahead``), tenth by
tenth interleaved (the same load for each; scann's switches are set to each index's kernels before its tenth).
Rates are per CPU second of this process; recall@10 is against brute force over each loop's final live set.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ann_bench import AheadView, Loop, World, query_stream, recall_at_10  # noqa: E402

from transforms.stories.index import ann_kernels  # noqa: E402
from transforms.stories.index.ann import CentroidIndex, ExactIndex  # noqa: E402
from transforms.stories.index.index import Lookahead  # noqa: E402


def build(kernels: str, profile: str | None, ids, truth, dim: int) -> tuple[CentroidIndex, dict, float]:
    """An index built as a fresh process on a CPU with ``kernels`` builds it (profile measured unless given)."""
    os.environ[ann_kernels.ENV] = kernels
    if profile:
        os.environ[ann_kernels.PROFILE_ENV] = profile
    else:
        os.environ.pop(ann_kernels.PROFILE_ENV, None)
    ann_kernels.CHOICE = ann_kernels.PROFILE = None
    cpu = time.process_time()
    index = CentroidIndex(dim, threads=1)
    index.bulk_upsert(ids, truth)
    return index, ann_kernels.describe(), time.process_time() - cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stories", type=int, default=250_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=6_000, help="assignments per index (default 6000)")
    parser.add_argument("--recall-queries", type=int, default=500)
    parser.add_argument("--kernels", default="baseline,avx2,avx512", help="kernel sets, first = the ratios' base")
    parser.add_argument("--batch", type=int, default=Lookahead().size, help="the writer's lookahead (its default)")
    parser.add_argument("--old-batch", type=int, default=32, help="the lookahead before, run on the first kernel set")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    cache = tempfile.mkdtemp(prefix="ann-cpus-")
    os.environ[ann_kernels.CACHE_ENV] = cache
    allowed = ann_kernels._allowed(ann_kernels.cpu_description()[1])  # noqa: SLF001 (a benchmark)
    wanted = [k for k in args.kernels.split(",") if k in allowed]
    print(f"CPU {ann_kernels.cpu_description()[0]}; kernel sets {wanted} (allowed here: {allowed})")
    world = World(args.dim, args.topics, args.seed)
    truth = world.stories(args.stories)
    ids = np.arange(args.stories, dtype=np.int64)
    rng = np.random.default_rng(args.seed + 1)
    runs: dict[str, dict] = {}
    for kernels in wanted:
        index, choice, build_cpu = build(kernels, None, ids, truth, args.dim)
        profile = choice["profile"]
        print(
            f"{kernels}: build {build_cpu:.1f} s CPU (with the calibration); chose profile {profile['profile']} "
            f"{profile.get('tuning')}: {profile.get('reason')}; figures {profile.get('figures')}"
        )
        runs[f"{kernels}/{profile['profile']}"] = {"index": index, "kernels": kernels, "choice": profile}
        if profile["profile"] != "default":
            index, _, build_cpu = build(kernels, "default", ids, truth, args.dim)
            print(f"{kernels}: build {build_cpu:.1f} s CPU with the default profile pinned (the comparison)")
            runs[f"{kernels}/default"] = {"index": index, "kernels": kernels}
        if kernels == wanted[0] and args.old_batch != args.batch:
            index, _, _ = build(kernels, "default", ids, truth, args.dim)
            runs[f"{kernels}/default/lookahead {args.old_batch}"] = {"index": index, "kernels": kernels}
    os.environ.pop(ann_kernels.PROFILE_ENV, None)
    live_from = args.stories // 2
    articles, _ = query_stream(world, truth, live_from, args.ops, 0.7, rng)
    for name, run in runs.items():
        run["loop"] = Loop(run["index"], {int(i): truth[i] for i in ids}, args.stories, 0.6, weight=0.25)
        run["ahead"] = Lookahead(size=args.old_batch if "lookahead" in name else args.batch)
        run["cpu"] = []
    gc.collect()
    for part in np.array_split(articles, 10):
        for run in runs.values():
            ann_kernels.apply(run["kernels"])
            cpu = time.process_time()
            run["loop"].run(part, lookahead=run["ahead"])
            run["ahead"].clear()
            run["cpu"].append(time.process_time() - cpu)
    queries, joins = query_stream(world, truth, live_from, args.recall_queries, 0.7, rng)
    base = None
    for name, run in runs.items():
        ann_kernels.apply(run["kernels"])
        exact = ExactIndex(args.dim)
        exact.bulk_upsert(list(run["loop"].centroids), np.stack(list(run["loop"].centroids.values())))
        recall = recall_at_10(AheadView(run["index"], args.batch), exact, queries, joins, 0.5)
        del exact
        rate = args.ops / sum(run["cpu"])
        tenths = sorted(len(p) / c for p, c in zip(np.array_split(articles, 10), run["cpu"]))
        base = base or rate
        print(
            f"SUMMARY {name}: {rate:,.0f} assignments per CPU second ({rate / base:.2f}x the first; median tenth "
            f"{tenths[5]:,.0f}, worst {tenths[0]:,.0f}), recall@10 {recall['recall@10']:.4f}, top-1 agreement "
            f"{recall['top-1 agreement']:.4f}, leaves searched {run['index']._leaves_to_search}, "  # noqa: SLF001
            f"pca {run['index'].pca_dims}, syncs {run['index'].stats['syncs']}"
        )
        fig = (run.get("choice", {}).get("figures") or {}).get(run.get("choice", {}).get("profile"))
        if fig:
            predicted = fig["predicted_per_cpu_s"]
            print(f"  the calibration predicted {predicted:,}/s for it: measured / predicted {rate / predicted:.2f}x")
    shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
