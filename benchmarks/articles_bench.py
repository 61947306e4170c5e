"""Articles benchmark: prints articles/s for normalisation (+ dedupe) and for MinHash + LSH, with each step's cost.

Reads: the extraction benchmark's pages (../shared/data/pages/extraction-benchmark/html, ~150 KB each) when present,
else synthetic pages of the same size built here. Writes: nothing but stdout (a temporary SQLite article store is
created and removed).

Run: ``.venv/bin/python benchmarks/articles_bench.py [--rounds 3] [--workers 2]``

What it measures (CPU time per step is process time, so other load on the machine inflates wall clock figures but
much less the per-step costs; the load average is printed next to them):
1. Per-step cost of normalisation on one core: decode+parse, structured data, canonical URL, dates, body,
   language, entities, the rest; plus dedupe (the embedded ArticleStore's conditional write and content claim).
2. End-to-end normalisation + dedupe throughput with 1 process and with ``--workers`` processes (each worker
   normalises and dedupes against one shared SQLite store, as Beam workers would against Bigtable).
3. MinHash signatures and LSH assignment (SyndicationIndex) throughput on the normalised bodies.
Each round gives every page a fresh URL and a fresh store, so every article is new (the write path, not the
cheaper duplicate path).
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

T0 = 1_767_225_600_000


def load_pages() -> tuple[list[bytes], str]:
    folder = ROOT.parent / "shared" / "data" / "pages" / "extraction-benchmark" / "html"
    if folder.is_dir():
        pages = [gzip.open(p).read() for p in sorted(folder.iterdir()) if p.name.endswith(".gz")]
        if pages:
            return pages, f"{len(pages)} pages of {folder}"
    return synthetic_pages(60), "60 synthetic pages (../shared/data not found)"


def synthetic_pages(n: int) -> list[bytes]:
    import random

    rnd = random.Random(7)
    words = [
        "harbour",
        "council",
        "storm",
        "minister",
        "report",
        "market",
        "police",
        "river",
        "school",
        "energy",
        "vote",
        "city",
        "coast",
        "court",
        "company",
        "plan",
        "budget",
        "health",
        "water",
        "road",
        "train",
        "museum",
        "festival",
        "weather",
        "season",
        "price",
        "union",
    ]
    pages = []
    for i in range(n):
        paras = "".join(
            "<p>"
            + " ".join(rnd.choice(words).capitalize() if k % 9 == 0 else rnd.choice(words) for k in range(60))
            + ".</p>"
            for _ in range(12)
        )
        nav = "".join(f"<li><a href='/s/{k}'>Section {k}</a></li>" for k in range(150))
        script = "<script>var x = " + "1234567890" * 6000 + ";</script>"
        pages.append(
            f"<html><head><title>Story {i}</title>"
            f"<meta property='article:published_time' content='2025-12-31T10:00:00Z'>"
            f"{script}</head><body><nav><ul>{nav}</ul></nav><article><h1>Story {i}</h1>{paras}</article>"
            f"<footer>{nav}</footer></body></html>".encode()
        )
    return pages


def raw_item(page: bytes, i: int, round_no: int) -> dict:
    url = f"https://bench{round_no}.example.test/news/{i}"
    return {
        "schema_version": 1,
        "item_id": f"{round_no}-{i}",
        "source": "FEED",
        "feed_url": None,
        "publisher_id": None,
        "fetched_url": url,
        "final_url": url,
        "http_status": 200,
        "headers": {"content-type": "text/html"},
        "body": page,
        "fetched_at": T0,
        "first_seen_at": T0 - 60_000,
        "entry": None,
    }


def step_costs(pages: list[bytes]) -> dict[str, float]:
    """Per-step CPU ms per page, replicating Normalizer.extract's steps one by one."""
    from transforms.articles import body as body_mod
    from transforms.articles import dates, entities, language, page, structured, urls
    from transforms.articles.normalize import Normalizer, content_hash

    norm = Normalizer()
    costs: dict[str, float] = {}

    def add(name, t0):
        costs[name] = costs.get(name, 0.0) + time.process_time() - t0
        return time.process_time()

    for raw in pages:
        t = time.process_time()
        text, tree = page.load(raw, {"content-type": "text/html"})
        t = add("decode + sniff + parse", t)
        pm = structured.read(tree)
        t = add("structured data (meta, JSON-LD)", t)
        canonical, _ = urls.canonical(
            "https://bench.example.test/news/x",
            [("rel_canonical", pm.links.get("canonical")), ("og_url", pm.meta.get("og:url"))],
            norm.registry,
        )
        t = add("canonical URL", t)
        dates.choose(pm, None, "UTC", T0 + 10 * 365 * 86400_000, tree=tree, url=canonical)
        t = add("dates (htmldate if unstated)", t)
        title = structured.as_text(pm.article.get("headline")) or pm.first("og:title") or pm.h1 or pm.title_tag
        b = body_mod.extract(tree, text, title, None, reparse=page.parse)
        t = add("body (trafilatura + filters)", t)
        lang, _ = language.detect(b.text, title)
        t = add("language (py3langid)", t)
        entities.extract(title, b.text, lang, pm.article, [])
        t = add("entities", t)
        content_hash(title, b.text)
        t = add("content hash", t)
    return {k: v / len(pages) * 1000 for k, v in costs.items()}


_WORKER = {}


def _init(store_dir: str):
    from stores import StoreConfig, open_store
    from transforms.articles.normalize import Normalizer

    _WORKER["norm"] = Normalizer(clock=lambda: T0)
    _WORKER["store"] = open_store("articles", StoreConfig(backend="embedded", data_dir=store_dir))


def _normalize_and_dedupe(raw: dict) -> tuple[str, float, float]:
    from transforms.articles.dedupe import decide
    from transforms.articles.page import Rejected

    t = time.process_time()
    try:
        art = _WORKER["norm"].normalize(raw)
    except Rejected as exc:
        return exc.reason, time.process_time() - t, 0.0
    t1 = time.process_time()
    outcome = decide(_WORKER["store"], art).outcome
    return outcome, t1 - t, time.process_time() - t1


def _run_round(raws: list[dict], workers: int) -> tuple[list, float]:
    store_dir = tempfile.mkdtemp(prefix="articles-bench-")
    warm_dir = tempfile.mkdtemp(prefix="articles-bench-warm-")
    try:
        warm = [dict(r, item_id=f"w{k}") for k, r in enumerate(raws[: 3 * workers])]
        if workers == 1:
            _init(warm_dir)
            [_normalize_and_dedupe(r) for r in warm]  # imports, models, caches: outside the clock
            _init(store_dir)
            start = time.perf_counter()
            results = [_normalize_and_dedupe(r) for r in raws]
            return results, time.perf_counter() - start
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers, initializer=_init, initargs=(store_dir,)) as pool:
            pool.map(_warm, [(warm_dir, r) for r in warm], chunksize=1)
            start = time.perf_counter()
            results = pool.map(_normalize_and_dedupe, raws, chunksize=4)
            return results, time.perf_counter() - start
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
        shutil.rmtree(warm_dir, ignore_errors=True)


def _warm(job):
    """Warm a pool worker on a throw-away store, then point it back at the measured one."""
    warm_dir, raw = job
    measured = _WORKER["store"]
    from stores import StoreConfig, open_store

    _WORKER["store"] = open_store("articles", StoreConfig(backend="embedded", data_dir=warm_dir))
    try:
        return _normalize_and_dedupe(raw)
    finally:
        _WORKER["store"] = measured


def throughput(pages: list[bytes], rounds: int, workers: int) -> dict:
    """Each round: every page under a fresh URL into a fresh store (all articles new)."""
    results, wall = [], 0.0
    for r in range(rounds):
        res, w = _run_round([raw_item(p, i, r) for i, p in enumerate(pages)], workers)
        results += res
        wall += w
    outcomes: dict[str, int] = {}
    for o, _, _ in results:
        outcomes[o] = outcomes.get(o, 0) + 1
    norm_ms = statistics.mean(r[1] for r in results) * 1000
    dedupe_ms = (
        statistics.mean(r[2] for r in results if r[0] in ("new", "update", "duplicate", "content_duplicate")) * 1000
    )
    return {
        "articles": len(results),
        "wall_s": wall,
        "per_s": len(results) / wall,
        "normalize_cpu_ms": norm_ms,
        "dedupe_cpu_ms": dedupe_ms,
        "cpu_bound_per_s": workers * 1000 / (norm_ms + dedupe_ms),
        "outcomes": outcomes,
    }


def syndication_bench(pages: list[bytes], rounds: int) -> dict:
    from transforms.articles import syndication
    from transforms.articles.normalize import Normalizer
    from transforms.articles.page import Rejected

    norm = Normalizer(clock=lambda: T0)
    bodies = []
    for i, p in enumerate(pages):
        try:
            bodies.append(norm.normalize(raw_item(p, i, 0)))
        except Rejected:
            pass
    arts = []
    for r in range(rounds * 4):  # more articles: LSH cost grows with the index
        for k, a in enumerate(bodies):
            arts.append(
                dict(
                    a,
                    article_id=f"{r}-{k}",
                    first_seen_at=T0 + (r * len(bodies) + k) * 1000,
                    body=a["body"] + f" edition {r} update {k}",
                )
            )
    syndication.signature(arts[0]["body"])  # warm-up (imports)
    t = time.process_time()
    for a in arts:
        syndication.signature(a["body"], a["language"])
    sig_ms = (time.process_time() - t) / len(arts) * 1000
    index = syndication.SyndicationIndex()
    t = time.process_time()
    copies = 0
    for a in arts:
        out, _ = index.assign(a)
        copies += bool(out["copy_of"])
    total_ms = (time.process_time() - t) / len(arts) * 1000
    return {
        "articles": len(arts),
        "signature_ms": sig_ms,
        "assign_ms": total_ms,
        "per_s": 1000 / total_ms,
        "copies_found": copies,
        "index_size": len(index),
    }


def basil_pairs() -> dict | None:
    """Jaccard of independent same-event reports (BASIL: Fox, NYT, HuffPost on one event), exact and estimated."""
    import itertools
    import json

    from transforms.articles import syndication

    path = ROOT.parent / "shared" / "data" / "stories" / "basil-dev.jsonl"
    if not path.exists():
        return None
    by_story: dict[str, list] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        by_story.setdefault(row["story_id"], []).append(row)
    exact, est = [], []
    for rows in by_story.values():
        for a, b in itertools.combinations(rows, 2):
            if a["publisher"] == b["publisher"]:
                continue
            sa, sb = syndication.shingles(a["text"]), syndication.shingles(b["text"])
            ha, hb = syndication.signature(a["text"]), syndication.signature(b["text"])
            if sa and sb and ha is not None and hb is not None:
                exact.append(len(sa & sb) / len(sa | sb))
                est.append(syndication.jaccard(ha, hb))
    exact.sort()
    return {
        "pairs": len(exact),
        "median": exact[len(exact) // 2],
        "max": exact[-1],
        "est_max": max(est),
        "est_copies": sum(1 for x in est if x >= syndication.THRESHOLD),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="Times each page is fed (fresh URLs). Default: 2.")
    parser.add_argument("--workers", type=int, default=2, help="Processes for the parallel run. Default: 2.")
    args = parser.parse_args()
    pages, what = load_pages()
    size_kb = statistics.mean(len(p) for p in pages) / 1024
    print(
        f"input: {what}, mean {size_kb:.0f} KB/page; machine: {os.cpu_count()} cores, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )

    print("\n1. normalisation, CPU ms per page by step (one core):")
    step_costs(pages)  # warm-up: imports, models, dateparser's locale data (a one-time cost per worker)
    costs = step_costs(pages)
    for name, ms in costs.items():
        print(f"   {name:34s} {ms:7.2f} ms")
    print(f"   {'total':34s} {sum(costs.values()):7.2f} ms  (= {1000 / sum(costs.values()):.0f} pages/s/core)")

    print("\n2. normalisation + dedupe (embedded ArticleStore), end to end:")
    for workers in sorted({1, args.workers}):
        r = throughput(pages, args.rounds, workers)
        print(
            f"   {workers} process(es): {r['articles']} articles in {r['wall_s']:.1f} s wall = "
            f"{r['per_s']:.0f} articles/s; "
            f"CPU per article: normalise {r['normalize_cpu_ms']:.1f} ms + dedupe {r['dedupe_cpu_ms']:.2f} ms "
            f"=> {r['cpu_bound_per_s']:.0f} articles/s with {workers} free core(s); outcomes {r['outcomes']}"
        )

    print("\n3. MinHash + LSH (120 permutations, 20 bands x 6 rows, 48 h window):")
    s = syndication_bench(pages, args.rounds)
    print(
        f"   {s['articles']} articles: signature {s['signature_ms']:.2f} ms, signature + LSH query/insert "
        f"{s['assign_ms']:.2f} ms = {s['per_s']:.0f} articles/s on one core (index size {s['index_size']}, "
        f"copies found {s['copies_found']})"
    )
    b = basil_pairs()
    if b:
        print(
            f"   independent same-event reports (BASIL, {b['pairs']} cross-publisher pairs): word 3-gram Jaccard "
            f"median {b['median']:.3f}, max {b['max']:.3f}; MinHash estimate max {b['est_max']:.3f}; "
            f"pairs called copies: {b['est_copies']}"
        )
    print(f"\nload average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
