"""Throughput of the stories stage on this machine: embedding variants, the writer alone, and the backfill end to end.

Prints (never asserts) figures:
1. ``embed``: texts/s of each embedder variant on title + lede texts (all-MiniLM-L6-v2 fp32 at 256 and 128 word
   pieces, int8 with per-token scales at 128 (the default), multilingual USE), with torch using ``--threads``
   threads, plus the cosine between fp32 and int8 vectors (what quantisation costs in accuracy) and how much a
   vector changes with its batch (it must not: equal-length groups, per-token scales).
2. ``writer``: decisions/s of the plain-Python writer (transforms/stories/cluster.py, repair and expiry included)
   on precomputed vectors.
3. ``backfill``: articles/s of ``newsroom backfill`` end to end (read, embed with the default model, cluster, apply
   to the embedded store, write results) on ``--articles`` articles built from the labelled dev sets (ids made unique,
   labels stripped as always) or from synthetic text when ../shared is absent.

    .venv/bin/python benchmarks/stories_bench.py                 # all three
    .venv/bin/python benchmarks/stories_bench.py --only backfill --articles 3000

The machine is shared: run it when it is otherwise idle and read the figures as upper bounds of contention-free
throughput only if ``uptime`` showed a load below the core count.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data" / "stories"


def sample_records(n: int, seed: int = 1) -> list[dict]:
    """n labelled-schema records: the dev sets' English articles recycled with fresh ids, or synthetic ones.

    Shuffled, then timed as a stream: one article every 15 s (240 an hour) from 2026-01-01, as an archive a backfill
    reads has publication times. (Untimed records would take their times from their neighbours, some of which carry
    a dateline of another year: the 48 h expiry would then cut the stream into pieces no real input has.)
    """
    rng = random.Random(seed)
    base = []
    for f in sorted(glob.glob(str(DATA / "*-dev.jsonl"))):
        for line in open(f, encoding="utf-8"):
            r = json.loads(line)
            if r.get("language") == "en":
                base.append(r)
    if not base:
        words = "quake minister election storm market court league vote fire flood deal trial".split()
        base = [
            {"title": " ".join(rng.choice(words) for _ in range(8)), "text": " ".join(rng.choice(words) for _ in range(80))}
            for _ in range(500)
        ]
    out = []
    for i in range(n):
        r = dict(base[i % len(base)])
        r.update({"id": f"bench-{i:07d}", "story_id": None, "topic": None, "language": "en"})
        out.append(r)
    rng.shuffle(out)
    for i, r in enumerate(out):
        r["published_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_767_225_600 + 15 * i))
    return out


def texts_of(records) -> list[str]:
    from transforms.stories import features as F

    return [F.from_labelled(r, 0, False).embed_text for r in records]


def bench_embed(n: int, threads: int) -> None:
    import numpy as np
    import torch

    from transforms.stories import embed as E

    torch.set_num_threads(threads)
    texts = texts_of(sample_records(n))
    variants = [
        ("minilm fp32 max_seq 256", lambda: E.SentenceTransformerEmbedder(quantize=False, max_seq_length=256)),
        ("minilm fp32 max_seq 128", lambda: E.SentenceTransformerEmbedder(quantize=False, max_seq_length=128)),
        ("minilm int8 max_seq 128 (default)", lambda: E.SentenceTransformerEmbedder(quantize=True, max_seq_length=128)),
        ("use multilingual v3", lambda: E.UseEmbedder(threads=threads)),
    ]
    vecs = {}
    for name, make in variants:
        emb = make()
        emb.encode(texts[:32])  # warm up
        t0 = time.perf_counter()
        vecs[name] = emb.encode(texts)
        dt = time.perf_counter() - t0
        print(f"embed  {name:36s} {n / dt:8.1f} texts/s  ({n} texts, {threads} torch threads)", flush=True)
    a, b = vecs["minilm fp32 max_seq 128"], vecs["minilm int8 max_seq 128 (default)"]
    cos = np.sum(a * b, axis=1)
    print(f"embed  int8 vs fp32 cosine: mean {cos.mean():.4f}, 1st percentile {np.quantile(cos, 0.01):.4f}")
    # batch independence: the same texts embedded in batches of 10 vs one call
    for name, make in (("fp32", lambda: E.SentenceTransformerEmbedder()), ("int8", lambda: E.SentenceTransformerEmbedder(quantize=True))):
        emb = make()
        whole = emb.encode(texts[:200])
        parts = np.concatenate([emb.encode(texts[i : i + 10]) for i in range(0, 200, 10)])
        print(f"embed  {name} batch dependence: min cosine {np.sum(whole * parts, axis=1).min():.7f}, "
              f"max abs diff {np.abs(whole - parts).max():.2e}")


def bench_writer(n: int) -> None:
    from tests.transforms.stories.synth import make_articles
    from transforms.stories.cluster import ClusterConfig, StoryClusterer

    per = 20
    arts, _ = make_articles(n_events=max(n // per, 1), per_event=per, seed=3, gap_ms=60_000, spread_ms=3_600_000)
    for exact in (True, False):
        w = StoryClusterer("en", config=ClusterConfig(), exact_index=exact)
        t0 = time.perf_counter()
        outs = w.run(arts)
        dt = time.perf_counter() - t0
        print(
            f"writer {'exact' if exact else 'ann  '} index: {len(arts) / dt:8.1f} articles/s ({len(arts)} articles, "
            f"{len(outs)} changes, {dict(w.stats)})",
            flush=True,
        )


def bench_backfill(n: int, embedder: str, baseline: bool = True) -> None:
    """The default configuration first (it pays the imports), then the previous defaults (fp32 MiniLM, batches of
    128) on the same input in the same process as the baseline the ratio is against."""
    from pipelines.backfill import run

    configs = [(f"{embedder}, batch 1024 (default)", [f"--embedder={embedder}"])]
    if baseline:
        configs.append(("minilm-fp32, batch 128 (baseline)", ["--embedder=minilm-fp32", "--batch_size=128"]))
    rates = []
    with tempfile.TemporaryDirectory(prefix="stories-bench-") as d:
        inp = os.path.join(d, "in.jsonl")
        with open(inp, "w", encoding="utf-8") as f:
            for r in sample_records(n):
                f.write(json.dumps(r) + "\n")
        for i, (name, flags) in enumerate(configs):
            out = os.path.join(d, f"out{i}")
            t0 = time.perf_counter()
            run([f"--input={inp}", f"--output={out}", *flags])
            wall = time.perf_counter() - t0
            m = json.load(open(os.path.join(out, "manifest.json")))
            rates.append(m["counts"]["articles"] / wall)
            print(
                f"backfill end to end ({name}): {rates[-1]:.1f} articles/s ({m['counts']['articles']} articles, "
                f"{m['counts']['stories']} stories, {wall:.1f}s wall incl. model load)",
                flush=True,
            )
    if len(rates) == 2:
        print(f"backfill default / baseline: {rates[0] / rates[1]:.2f}x", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["embed", "writer", "backfill"], default=None)
    ap.add_argument("--texts", type=int, default=1000, help="texts per embedding variant (default 1000)")
    ap.add_argument("--writer_articles", type=int, default=3000)
    ap.add_argument("--articles", type=int, default=3000, help="articles of the end-to-end backfill (default 3000)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--embedder", default="auto")
    ap.add_argument("--no-baseline", dest="baseline", action="store_false", help="skip the fp32 baseline backfill")
    args = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    if args.only in (None, "embed"):
        bench_embed(args.texts, args.threads)
    if args.only in (None, "writer"):
        bench_writer(args.writer_articles)
    if args.only in (None, "backfill"):
        bench_backfill(args.articles, args.embedder, args.baseline)
    print(f"load average at end: {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
