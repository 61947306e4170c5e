"""Throughput of the stories stage on this machine: embedding variants, the writer alone, and the backfill end to end.

Prints (never asserts) figures:
1. ``embed``: texts/s of each embedder variant on title + lede texts (all-MiniLM-L6-v2 fp32 at 256 and 128 word
   pieces, int8 with per-token scales at 128 (the default), multilingual USE), with torch using ``--threads``
   threads, plus the cosine between fp32 and int8 vectors (what quantisation costs in accuracy) and how much a
   vector changes with its batch (it must not: equal-length groups, per-token scales).
2. ``writer``: decisions/s of the plain-Python writer (transforms/stories/writer/cluster.py, repair and expiry included)
   on precomputed vectors.
3. ``backfill``: articles/s of ``newsroom backfill`` end to end (read, embed with the default model, cluster, apply
   to the embedded store, write results) on ``--articles`` articles built from the labelled dev sets (ids made unique,
   labels stripped as always) or from synthetic text when ../shared is absent: headline-only, headline-only untimed,
   and title + body input, each as a ratio to the embedder alone in one process on the same texts in the same run
   (:func:`bench_backfill`), with the CPU's int8/fp32 choice (transforms/stories/embed/cpu.py) printed first.

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

# the labelled dev sets: ../shared beside the checkout (a worktree elsewhere can point STORIES_DATA at them)
DATA = Path(os.environ.get("STORIES_DATA") or ROOT.parent / "shared" / "data" / "stories")


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
            {
                "title": " ".join(rng.choice(words) for _ in range(8)),
                "text": " ".join(rng.choice(words) for _ in range(80)),
            }
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
    from transforms.stories.vocabulary import features as F

    return [F.from_labelled(r, 0, False).embed_text for r in records]


def bench_embed(n: int, threads: int) -> None:
    import numpy as np

    from transforms.stories.embed import cpu
    from transforms.stories.embed import embed as E

    texts = texts_of(sample_records(n))
    choice = cpu.choose_path()
    print(f"embed  cpu choice: {choice['path']} ({choice['reason']}; int8 {choice['int8_speedup']}x fp32)", flush=True)
    # int8 forced on a CPU where it is slow: measured on fewer texts so the run stays short
    few = len(texts) if choice["path"] == "int8" else min(len(texts), 100)
    variants = [
        (
            "minilm default (" + choice["path"] + f", {threads} workers)",
            lambda: E.SentenceTransformerEmbedder(quantize="auto", workers=threads),
            len(texts),
        ),
        ("minilm fp32, 1 worker", lambda: E.SentenceTransformerEmbedder(quantize=False, workers=1), len(texts)),
        ("minilm int8 forced", lambda: E.SentenceTransformerEmbedder(quantize=True, workers=threads), few),
        ("use multilingual v3", lambda: E.UseEmbedder(threads=threads), len(texts)),
    ]
    vecs = {}
    for name, make, m in variants:
        emb = make()
        emb.encode(texts[:16])  # warm up
        t0 = time.perf_counter()
        vecs[name] = emb.encode(texts[:m])
        dt = time.perf_counter() - t0
        print(f"embed  {name:36s} {m / dt:8.1f} texts/s  ({m} texts)", flush=True)
    a, b = vecs["minilm fp32, 1 worker"], vecs["minilm int8 forced"]
    cos = np.sum(a[: len(b)] * b, axis=1)
    print(f"embed  int8 vs fp32 cosine: mean {cos.mean():.4f}, 1st percentile {np.quantile(cos, 0.01):.4f}")
    # batch independence: the same texts embedded in batches of 10 vs one call (must be exactly 0)
    emb = E.SentenceTransformerEmbedder(quantize=False)
    whole = emb.encode(texts[:200])
    parts = np.concatenate([emb.encode(texts[i : i + 10]) for i in range(0, 200, 10)])
    print(f"embed  fp32 batch dependence: max abs diff {np.abs(whole - parts).max():.2e}", flush=True)


def bench_writer(n: int) -> None:
    from tests.transforms.stories.synth import make_articles
    from transforms.stories.writer.cluster import ClusterConfig, StoryClusterer

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


def _write_jsonl(path: str, records) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def bench_backfill(n: int, embedder: str, baseline: bool = True) -> None:
    """End to end against the embedder alone, in the same process and run, on two inputs of ``n`` articles.

    Inputs: ``headline`` (title only, as UCI News) and ``body`` (title + body: the embedder reads title + lede, the
    features read the body), both timed, plus ``headline untimed`` (no published_at: times come from file order) whose
    per-article cost must not exceed the timed one's. For each input: (1) the embedder alone in one process on one
    worker thread (what one core gives), (2) the embedder alone with its default workers (one per core), (3)
    ``newsroom backfill`` end to end (read, embed, cluster, apply to the embedded store, write results). The default
    English embedder (``minilm``) is created before (1) so no figure includes loading the model; the backfill reuses it
    (one model per process). Ratios are printed against (1); the target is backfill / (1) >= 1.3.
    """
    from pipelines.backfill import run
    from transforms.stories.embed import cpu
    from transforms.stories.embed import embed as E

    choice = cpu.choose_path()
    print(
        f"cpu: {choice['cpu']}; torch {choice['torch_capability']}; int8 flags {choice['int8_flags'] or 'none'}; "
        f"int8/fp32 product {choice['int8_ms']} / {choice['fp32_ms']} ms = {choice['int8_speedup']}x -> "
        f"{choice['path']} ({choice['reason']})",
        flush=True,
    )
    spec = "minilm" if embedder in ("auto", "minilm") else embedder
    default = E.get_embedder(spec)
    single = (
        E.SentenceTransformerEmbedder(quantize=default.quantized, workers=1) if hasattr(default, "workers") else None
    )
    timed = sample_records(n)
    inputs = {
        "headline": [{**r, "text": ""} for r in timed],
        "headline untimed": [{**{k: v for k, v in r.items() if k != "published_at"}, "text": ""} for r in timed],
        "body": timed,
    }
    per_article = {}
    with tempfile.TemporaryDirectory(prefix="stories-bench-") as d:
        for name, records in inputs.items():
            texts = texts_of(records)
            alone = {}
            for label, emb in (("1 worker", single), (f"{getattr(default, 'workers', 1)} workers", default)):
                if emb is None:
                    continue
                emb.encode(texts[:16])
                t0 = time.perf_counter()
                emb.encode(texts)
                alone[label] = len(texts) / (time.perf_counter() - t0)
            inp = os.path.join(d, f"{name.replace(' ', '_')}.jsonl")
            _write_jsonl(inp, records)
            out = os.path.join(d, f"out_{name.replace(' ', '_')}")
            t0 = time.perf_counter()
            run([f"--input={inp}", f"--output={out}", f"--embedder={embedder}"])
            wall = time.perf_counter() - t0
            m = json.load(open(os.path.join(out, "manifest.json")))
            rate = m["counts"]["articles"] / wall
            per_article[name] = wall / max(m["counts"]["articles"], 1)
            first = next(iter(alone.values()), None)
            alone_s = ", ".join(f"{k} {v:.1f}/s" for k, v in alone.items())
            print(
                f"backfill [{name}]: end to end {rate:.1f} articles/s ({m['counts']['articles']} articles, "
                f"{m['counts']['stories']} stories, {wall:.1f}s wall); embedder alone in one process: {alone_s}; "
                f"end to end / embedder alone on 1 worker = {rate / first:.2f}x (target >= 1.3); "
                f"paths {json.dumps({k: v.get('path') for k, v in m.get('embedder_paths', {}).items()})}",
                flush=True,
            )
    if "headline untimed" in per_article:
        print(
            f"backfill untimed / timed cost per headline: "
            f"{per_article['headline untimed'] / per_article['headline']:.2f}x (must be <= ~1)",
            flush=True,
        )
    if single is not None:
        single.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["embed", "writer", "backfill"], default=None)
    ap.add_argument("--texts", type=int, default=1000, help="texts per embedding variant (default 1000)")
    ap.add_argument("--writer_articles", type=int, default=3000)
    ap.add_argument("--articles", type=int, default=3000, help="articles of the end-to-end backfill (default 3000)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--embedder", default="auto")
    ap.add_argument("--no-baseline", dest="baseline", action="store_false", help="(kept for old command lines)")
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
