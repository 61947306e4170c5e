"""The per-stage costs that size a deployment (docs/operations.md "Sizing"), measured on this machine in one command.

Prints (never asserts), as CPU seconds of this process (``time.process_time``: every thread of the process, and
nothing of the other tenants of a shared machine, which inflate wall clocks much more than CPU time):

- ``normalise``: CPU ms per article of :class:`transforms.articles.normalize.Normalizer` (in-process, no budget
  child) on real saved pages (the extraction benchmark's, as benchmarks/articles_bench.py reads them), and the
  Avro bytes of the Article it writes;
- ``embed``: CPU ms per article of the default English embedder (MiniLM, the CPU's int8/fp32 path, one worker
  thread) on the same articles' title + lede;
- ``write``: CPU ms per article of the story writer (:class:`transforms.stories.writer.cluster.StoryClusterer`, ANN index)
  on synthetic 384-d vectors of ``--writer_articles`` articles, and the pickled bytes of its state per live story;
- ``rank``: CPU seconds of one steady ranking cycle (every edition and section) per 1,000 live stories, from
  ``benchmarks/rank_bench.py --stories N`` run as a child (its "vectorised cycle 2" line);
- ``origin``: CPU ms per edition-page request through the origin's WSGI app in-process (no CDN, no network), so
  requests per core-second; and CPU ms of For you's re-rank per request (benchmarks/serve_bench.py's), what an
  uncached request costs.

``--json FILE`` writes the figures; docs/operations.md's table is computed from such a file by
:func:`pipelines.commands.sizing.plan` (``newsroom`` is not needed: ``python -m pipelines.commands.sizing FILE``).

    .venv/bin/python benchmarks/sizing_bench.py --json docs/sizing-measured.json \
        [--pages ../shared/data/pages/extraction-benchmark/html]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cpu(fn):
    c0 = time.process_time()
    out = fn()
    return out, time.process_time() - c0


def page_raw_items(n: int, folder: str | None) -> tuple[list[dict], str]:
    """RawItems of real saved pages (``folder`` of .html.gz, else benchmarks/articles_bench.py's: the extraction
    benchmark's ~150 KB pages when ../shared/data is there, else synthetic pages of that size), ``n`` of them
    (pages reused under new URLs)."""
    import gzip

    from benchmarks.articles_bench import load_pages, raw_item

    if folder:
        pages = [gzip.open(p).read() for p in sorted(Path(folder).iterdir()) if p.name.endswith(".gz")]
        source = f"{len(pages)} pages of {Path(folder).name}"
    else:
        pages, source = load_pages()
    return [raw_item(pages[i % len(pages)], i, 0) for i in range(n)], source


def bench_normalise(items: list[dict]) -> dict:
    from schemas import codec
    from transforms.articles.normalize import Normalizer
    from transforms.articles.page import Rejected

    norm = Normalizer()
    arts = []

    def one(k: int, item: dict) -> None:
        try:
            arts.append(norm.normalize(dict(item, item_id=f"{k}", fetched_url=f"{item['fetched_url']}?k={k}")))
        except Rejected:  # a page the normaliser refuses was still read, so its CPU counts
            pass

    one(-1, items[0])  # lazy imports and model loads outside the clock
    arts.clear()
    _, cpu = _cpu(lambda: [one(k, i) for k, i in enumerate(items)])
    size = sum(len(codec.encode("Article", a)) for a in arts) / len(arts)
    return {"normalise_cpu_ms": 1000 * cpu / len(items), "article_bytes": size, "articles": arts}


def bench_embed(arts: list[dict]) -> dict:
    from transforms.stories.embed import embed as E

    default = E.get_embedder("minilm")
    emb = E.SentenceTransformerEmbedder(quantize=getattr(default, "quantized", True), workers=1)
    texts = [f"{a.get('title') or ''}. {(a.get('text') or '')[:400]}" for a in arts]
    emb.encode(texts[:16])
    _, cpu = _cpu(lambda: emb.encode(texts))
    return {"embed_cpu_ms": 1000 * cpu / len(texts), "embed_path": "int8" if emb.quantized else "fp32"}


def bench_write(n: int, dim: int = 384) -> dict:
    """The writer on synthetic events (tests/transforms/stories/synth.py), their vectors projected to ``dim`` (the
    production model's width: a centroid's bytes count in the state), advanced to the last article only, so every
    story is still live when its state is weighed."""
    import pickle

    import numpy as np

    from tests.transforms.stories.synth import make_articles
    from transforms.stories.writer.cluster import ClusterConfig, StoryClusterer

    per = 4  # articles per story: DESIGN.md's 1 + Geometric(0.25) mean
    arts, _ = make_articles(n_events=max(n // per, 1), per_event=per, seed=3, gap_ms=60_000, spread_ms=3_600_000)
    proj = np.random.default_rng(5).standard_normal((len(arts[0].vector), dim)) / np.sqrt(dim)
    for a in arts:
        v = np.asarray(a.vector) @ proj
        a.vector = v / np.linalg.norm(v)
    w = StoryClusterer("en", config=ClusterConfig())

    def write():
        for a in arts:
            w.add(a)
        return w.advance(max(a.first_seen_at for a in arts) + 1)

    _, cpu = _cpu(write)
    live = max(len(w.stories), 1)
    state = len(pickle.dumps(w.state, protocol=pickle.HIGHEST_PROTOCOL))
    return {
        "write_cpu_ms": 1000 * cpu / len(arts),
        "state_bytes_per_story": state / live,
        "articles_per_story": len(arts) / live,
    }


def bench_rank(stories: int) -> dict:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "rank_bench.py"), "--stories", str(stories), "--loop-editions", "1"],
        capture_output=True,
        text=True,
        timeout=3600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    m = re.search(r"vectorised cycle 2 .*?: ([0-9.]+) s CPU", done.stdout)
    if not m:
        raise RuntimeError(f"rank_bench printed no cycle 2 line: {done.stdout[-800:]} {done.stderr[-800:]}")
    return {"rank_cpu_s_per_1k_stories": float(m.group(1)) / (stories / 1000), "rank_bench_stories": stories}


def bench_origin(requests: int) -> dict:
    from stores import StoreConfig, open_stores
    from stores.profiles import open_profile_store
    from tests.serving.helpers import make_app, publish_world

    with tempfile.TemporaryDirectory(prefix="sizing-origin-") as d:
        config = StoreConfig(data_dir=d)
        stores = open_stores(config)
        publish_world(stores)
        app = make_app(stores, open_profile_store(config))
        client = app.test_client()
        assert client.get("/v1/editions/us-en/sections/top").status_code == 200
        _, cpu = _cpu(lambda: [client.get("/v1/editions/us-en/sections/top") for _ in range(requests)])
        app.extensions["newsroom"].close()
    return {"origin_cpu_ms_per_request": 1000 * cpu / requests}


def bench_foryou(iterations: int) -> dict:
    """For you's per-request re-rank (benchmarks/serve_bench.py rerank_benchmark: 1,000 candidates, a full profile,
    every source on): the uncached requests the origin serves, so what sizes it."""
    from benchmarks.serve_bench import rerank_benchmark

    rerank_benchmark(50)
    _, cpu = _cpu(lambda: rerank_benchmark(iterations))
    return {"foryou_cpu_ms_per_request": 1000 * cpu / iterations}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--articles", type=int, default=150, help="pages normalised and embedded. Default: 150.")
    ap.add_argument("--writer_articles", type=int, default=8000, help="articles the writer assigns. Default: 8000.")
    ap.add_argument(
        "--rank_stories", type=int, default=30000, help="live stories of the ranking cycle. Default: 30000."
    )
    ap.add_argument("--requests", type=int, default=2000, help="origin requests. Default: 2000.")
    ap.add_argument("--only", choices=["foryou"], default=None, help="measure this stage again into --json")
    ap.add_argument("--pages", default=None, help="folder of saved pages (.html.gz). Default: articles_bench's.")
    ap.add_argument("--json", default=None, help="write the figures to this file")
    args = ap.parse_args()
    figures = {"measured_at": time.strftime("%Y-%m-%d"), "load_average": round(os.getloadavg()[0], 1)}
    if args.only == "foryou":  # one stage again, merged into the figures of --json
        figures = json.loads(Path(args.json).read_text()) | bench_foryou(args.requests // 4)
        Path(args.json).write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
        print(f"for you:   {figures['foryou_cpu_ms_per_request']:.3f} CPU ms per re-rank (1,000 candidates)")
        return
    items, source = page_raw_items(args.articles, args.pages)
    figures["pages"] = source
    norm = bench_normalise(items)
    arts = norm.pop("articles")
    figures.update(norm)
    print(
        f"normalise: {norm['normalise_cpu_ms']:.1f} CPU ms/article; Article {norm['article_bytes']:.0f} bytes",
        flush=True,
    )
    figures.update(bench_embed(arts))
    print(f"embed:     {figures['embed_cpu_ms']:.1f} CPU ms/article ({figures['embed_path']}, 1 thread)", flush=True)
    figures.update(bench_write(args.writer_articles))
    print(
        f"write:     {figures['write_cpu_ms']:.2f} CPU ms/article; state {figures['state_bytes_per_story']:.0f} bytes per "
        f"live story ({figures['articles_per_story']:.1f} articles per story)",
        flush=True,
    )
    figures.update(bench_rank(args.rank_stories))
    print(f"rank:      {figures['rank_cpu_s_per_1k_stories']:.3f} CPU s per cycle per 1,000 live stories", flush=True)
    figures.update(bench_origin(args.requests))
    rps = 1000 / figures["origin_cpu_ms_per_request"]
    print(
        f"origin:    {figures['origin_cpu_ms_per_request']:.3f} CPU ms per page request = {rps:,.0f} requests per core-second"
    )
    figures.update(bench_foryou(args.requests // 4))
    print(f"for you:   {figures['foryou_cpu_ms_per_request']:.3f} CPU ms per re-rank (1,000 candidates)")
    print(f"(load average {figures['load_average']} on {os.cpu_count()} cores while measuring)")
    from pipelines.commands.sizing import plan, table

    print(table(plan(figures)))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
