"""Two trees' full rank cycles on the same world, in one command: CPU seconds per steady cycle, phase by phase.

Each tree runs in its own process (``--child``, the tree first on sys.path): benchmarks/rank_bench.py's world at
``--stories`` (the tree's code; the rank_bench.py beside this file for both trees, so a change of the harness is
not billed to either), the cold cycle, then ``--repeat`` times: fold the next minute's
~1,400 articles, run every edition's cycle and print its CPU seconds, its phases and a digest of every page's
stories and representatives, every pool's stories (with representatives, places and topics) and the topic pages
chosen (each edition's digested at once, and the digests' CPU taken out of the cycle's: the harness must neither hold
73 editions' pool summaries as long-lived garbage nor bill their hashing to the cycle), and the size of every
edition's MEMORY state pickled (what Beam stores per key). The parent runs both trees
side by side and prints each one's median steady cycle, the ratio and whether the digests agree (same seed: the
same world and the same minutes). CPU time of each process, never wall time: the machine is shared.

    .venv/bin/python benchmarks/rank_compare.py --base /work/wt/rank-base --head . [--repeat 3] [--stories 300000]
    .venv/bin/python benchmarks/rank_compare.py --kernels native,x86-64-v3,x86-64-v2 --head . [--repeat 3]
    .venv/bin/python benchmarks/rank_compare.py --kernels native --head . --skip 40 --repeat 4

``--kernels`` runs one tree as CPUs of lower x86-64 levels would (numpy's and OpenBLAS's kernels pinned): the
cycle's CPU there, and whether the pages are the same bytes whichever kernels computed them.

``--skip K`` folds the harness's first K minutes before the cold cycle without ranking them: the world of minute K
ranked by a young process. Beside a long ``--repeat`` (the same world ranked by a process that has run K cycles) it
tells a cost of the world from a cost of the process's age (docs/architecture.md, "Editions", session 13).
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import gc
import hashlib
import json
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path


def child(tree: str, stories: int, repeat: int, skip: int = 0) -> None:
    # The tree's code, the harness's world: rank_bench.py beside this file for both trees (its synthetic columns
    # are the harness, not the ranker), importing the tree's packages, imported from the tree first.
    sys.path[:0] = [tree]
    import importlib.util

    import numpy as np

    import tests.transforms.editions.loop_reference  # noqa: F401
    import transforms.editions  # noqa: F401

    spec = importlib.util.spec_from_file_location("rank_bench", Path(__file__).with_name("rank_bench.py"))
    rb = sys.modules["rank_bench"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rb)
    assert Path(sys.modules["transforms"].__file__).resolve().is_relative_to(Path(tree)), "another tree's code"

    from transforms.common import MINUTE_MS
    from transforms.editions.cycle.run import EditionMemory
    from transforms.editions.overlays.topics import city_codes
    from transforms.editions.vocabulary.config import load_config
    from transforms.editions.vocabulary.params import RankParams

    plain = rb.summarise

    harness = [0.0]  # CPU seconds of the digests themselves, taken out of the cycle's

    def summarise(out):  # what the digest covers: pages, pools and the topic pages chosen
        t = time.process_time()
        d = plain(out)
        pool = [
            (e["story_id"], e["representative"]["article_id"], e["places"], e["topics"]) for e in out.pool["stories"]
        ]
        ids = dict(d["ids"], _pool=pool, _topics=[t["doc"]["topic"] for t in out.topic_pages])
        # digested at once: the ~1,300 pool tuples of 73 editions held to the end of the cycle were the harness's
        # own long-lived garbage (a full collection of the cyclic GC in most cycles, counted in the cycle's CPU)
        d["ids"] = hashlib.sha256(json.dumps(ids, sort_keys=True, default=str).encode()).hexdigest()
        harness[0] += time.process_time() - t
        return d

    rb.summarise = summarise
    # the cyclic collector's share of each cycle, by generation: CPU seconds and collections (gc.callbacks)
    collections: dict = {}
    started = [0.0]

    def on_collection(phase, info):
        if phase == "start":
            started[0] = time.process_time()
        else:
            spent, n = collections.get(info["generation"], (0.0, 0))
            collections[info["generation"]] = (spent + time.process_time() - started[0], n + 1)

    gc.callbacks.append(on_collection)
    rng = np.random.default_rng(7)
    config = load_config()
    editions = list(config.editions)
    languages = sorted({e.language for e in editions})
    rest = (1.0 - sum(rb.LANG_SHARE.values())) / max(1, len([x for x in languages if x not in rb.LANG_SHARE]))
    registry = rb.make_registry(config, rng)
    books, id_base = {}, 1 << 40
    for lang in languages:
        n = max(50, int(round(stories * rb.LANG_SHARE.get(lang, rest))))
        books[lang] = rb.load_book(config, registry, lang, n, rng, 384, id_base)
        id_base += n + 1
    rb.group_storylines(books)

    def fold(k):
        for lang, evs in rb.next_minute_events(books, registry, rng, 1400, minute=k).items():
            for e in evs:
                books[lang].apply(e)
            books[lang].flush()

    for k in range(1, skip + 1):  # --skip: the world of minute ``skip``, folded without ranking (a young process)
        fold(k)
    rb.static_tables(config)
    gc.collect()
    gc.freeze()
    rb.worker_collector()  # each tree's RankEditionsFn.setup setting of the collector, if it has one
    memories = {e.id: EditionMemory() for e in editions}
    run = rb.Run(books, config, RankParams.from_config(config), memories, {}, city_codes(config))
    rb.run_all(editions, run, rb.NOW + skip * MINUTE_MS)
    for k in range(skip + 1, skip + repeat + 1):
        fold(k)
        phases: dict = {}
        harness[0] = 0.0
        collections.clear()
        t = time.process_time()
        _, outs = rb.run_all(editions, run, rb.NOW + k * MINUTE_MS, timings=phases)
        cpu = time.process_time() - t - harness[0]
        ids = json.dumps({e: o["ids"] for e, o in sorted(outs.items())}, sort_keys=True, default=str)
        phases = {p: round(v, 3) for p, v in phases.items() if isinstance(v, float)}
        state = sorted(len(pickle.dumps(m)) for m in memories.values())  # MEMORY, pickled per edition key
        row = {"cpu": cpu, "digest": hashlib.sha256(ids.encode()).hexdigest()[:16], "phases": phases}
        row["articles"] = sum(b.articles.size for b in books.values())  # the world ranked (--skip: the same minutes)
        row["gc"] = {f"gen{g}": f"{s:.2f} s/{n}" for g, (s, n) in sorted(collections.items())}
        print(json.dumps({**row, "state": [state[len(state) // 2], state[-1]]}))
        sys.stdout.flush()


# numpy's SIMD kernels and OpenBLAS's core type per x86-64 level, as a CPU without the newer instructions would
# pick them (``--kernels``): NPY_DISABLE_CPU_FEATURES turns off numpy's dispatch targets above the level (its wheels'
# baseline is x86-64-v2), OPENBLAS_CORETYPE names the OpenBLAS kernels of a core of that level.
KERNELS = {
    "native": {},
    "x86-64-v3": {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Haswell"},
    "x86-64-v2": {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Nehalem"},
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="the baseline tree (e.g. a git worktree of main)")
    ap.add_argument("--head", help="the tree measured against it")
    ap.add_argument(
        "--kernels",
        help="instead of --base: the head tree once per x86-64 level named, comma-separated, from "
        + ", ".join(KERNELS)
        + " (numpy's and OpenBLAS's kernels of a CPU of that level; the first is the baseline)",
    )
    ap.add_argument("--stories", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3, help="steady cycles per tree (median)")
    ap.add_argument(
        "--skip",
        type=int,
        default=0,
        help="fold this many of the harness's minutes before the first cycle, without ranking them: the world of a "
        "later minute ranked by a young process (a long --repeat ranks it in an old one)",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.skip < 0 or args.repeat < 1:
        ap.error(f"--skip takes 0 or more minutes and --repeat 1 or more cycles (not {args.skip} and {args.repeat})")
    if args.child:
        child(args.child, args.stories, args.repeat, args.skip)
        return 0
    if args.kernels:
        unknown = [k for k in args.kernels.split(",") if k not in KERNELS]
        if unknown or not args.head:
            ap.error(f"--kernels takes {', '.join(KERNELS)} with --head (not {', '.join(unknown) or 'without it'})")
        trees = [(k, args.head, KERNELS[k]) for k in args.kernels.split(",")]
    elif args.base and args.head:
        trees = [("base", args.base, {}), ("head", args.head, {})]
    else:
        ap.error("--base and --head, or --kernels and --head")
    procs = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--child", str(Path(tree).resolve()), "--stories", str(args.stories)]
            + ["--repeat", str(args.repeat), "--skip", str(args.skip)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        for name, tree, env in trees
    }
    runs = {
        name: [json.loads(line) for line in p.communicate()[0].splitlines() if line.startswith("{")]
        for name, p in procs.items()
    }
    for name, rs in runs.items():
        for k, r in enumerate(rs, start=args.skip + 2):
            print(
                f"{name} cycle {k}: {r['cpu']:.2f} s CPU, {r['articles']:,} articles, digest {r['digest']}, "
                f"collector {r['gc']}, phases {r['phases']}"
            )
        med_b, max_b = rs[-1]["state"]
        print(f"{name} MEMORY state per edition key (pickled, last cycle): median {med_b:,} bytes, largest {max_b:,}")
    med = {name: statistics.median(r["cpu"] for r in rs) for name, rs in runs.items()}
    first, *rest = runs
    same = all(a["digest"] == b["digest"] for name in rest for a, b in zip(runs[first], runs[name]))
    print(
        "median steady cycle: "
        + ", ".join(f"{name} {m:.2f} s CPU" for name, m in med.items())
        + "".join(f"; {name}/{first} {med[name] / med[first]:.2f}" for name in rest)
        + f"; same pages, pools and topic pages in every cycle: {'yes' if same else 'NO'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
