"""Backfill end to end against its encoder alone, on one headline stream, in one command.

Prints (never asserts), all measured in this one process on the same texts, one after the other:

- ``encoder alone``: articles/s of the embedder the backfill chooses for the stream (``--embedder auto`` routes
  English to ``minilm``, whose int8/fp32 arithmetic is chosen per CPU: transforms/stories/cpu.py), called in batches
  of the backfill's ``--batch_size`` one after the other, as the backfill calls it: the very encoder the backfill's
  writer then uses (for minilm its embedder process, transforms/stories/embed_process.py, kept for the process's
  later runs). The model is loaded (and warmed up) before the clock starts and the backfill reuses it (start-up
  paid once per process), so neither figure includes the model load, which is printed on its own.
- ``backfill end to end``: articles/s of ``newsroom backfill`` (pipelines/backfill.py: read, embed, cluster, apply to
  the embedded store, write the result files and manifest), wall time of :func:`pipelines.backfill.run`.
- ``ratio``: end to end / encoder alone (target: >= 1.0 on 20,000 articles: no slower than its encoder).
- ``sequential backfill`` (``--sequential``): the same backfill with the embedding stage first and the writer after
  it (what it ran before the overlap, and what Dataflow runs), and whether its files are byte-identical.
- ``writer alone``: articles/s of the plain-Python story writer (transforms/stories/local.py ``cluster_features``)
  on the same articles with the vectors the encoder-alone pass produced: what the writer costs when it does not wait.

Stream (:func:`headline_stream`): the uci-dev headlines (``STORIES_DATA``, default ../shared/data/stories beside the
checkout, else /work/shared/data/stories), title only as UCI News is, repeated with fresh ids (``bt-0000000`` ...)
and times (one article every 15 s from 2026-01-01T00:00Z, in file order, repetition after repetition):
deterministic, so two runs read the same bytes.

    .venv/bin/python benchmarks/backfill_throughput.py            # 20,000 articles (the acceptance figure)
    .venv/bin/python benchmarks/backfill_throughput.py --n 2000   # a quick run

The machine is shared: the figures of one command are comparable with each other (same minutes, same load), not
with another command's; the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EPOCH_S = 1_767_225_600  # 2026-01-01T00:00:00Z
STEP_S = 15


def _data_dir() -> Path:
    env = os.environ.get("STORIES_DATA")
    for d in ([Path(env)] if env else []) + [
        ROOT.parent / "shared" / "data" / "stories",
        Path("/work/shared/data/stories"),
    ]:
        if (d / "uci-dev.jsonl").exists():
            return d
    raise SystemExit("uci-dev.jsonl not found: set STORIES_DATA to the folder of the labelled dev sets")


def headline_stream(n: int) -> list[dict]:
    """``n`` labelled-schema records: the uci-dev headlines repeated in file order, fresh ids and times."""
    base = [json.loads(line) for line in open(_data_dir() / "uci-dev.jsonl", encoding="utf-8") if line.strip()]
    out = []
    for i in range(n):
        r = dict(base[i % len(base)])
        r.update(
            {
                "id": f"bt-{i:07d}",
                "story_id": None,
                "topic": None,
                "language": "en",
                "text": "",
                "published_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(EPOCH_S + STEP_S * i)),
            }
        )
        out.append(r)
    return out


def _features(records: list[dict]):
    from transforms.stories import backfill_files

    lines = [json.dumps(r) for r in records]
    return [f for _, f, bad in backfill_files.labelled_features(lines) if bad is None]


def _backfill(run, argv: list[str], overlap) -> tuple[float, dict]:
    t0 = time.perf_counter()
    status = run(argv, overlap=overlap)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"backfill exited {status}")
    manifest = json.load(open(os.path.join(argv[-1].split("=", 1)[1], "manifest.json")))
    n_done = manifest["counts"]["articles"]
    print(
        f"backfill end to end: {n_done / wall:8.1f} articles/s ({n_done} articles, {manifest['counts']['stories']} "
        f"stories, {wall:.1f}s wall, embedding {manifest['embedding']})",
        flush=True,
    )
    return n_done / wall, manifest


def measure(n: int, batch_size: int, embedder: str = "auto", sequential: bool = False) -> dict:
    """The figures of one run (see the module docstring); also printed."""
    from pipelines.backfill import run
    from transforms.stories import embed as E
    from transforms.stories import embed_process
    from transforms.stories.local import cluster_features

    records = headline_stream(n)
    feats = _features(records)
    spec = E.EmbedderRouting(embedder).for_language("en")
    t0 = time.perf_counter()
    if embed_process.wants_process(spec):  # the backfill's own encoder: the process its writer will use
        model = embed_process.shared_process(spec)
        name, _, info = model.ready()
        where = "its own process, as the backfill runs it"
    else:
        model = E.get_embedder(spec)
        name, info, where = model.name, getattr(model, "path_info", {}), "this process"
    model.encode([f.embed_text for f in feats[:64]])  # warm up (kernel choice, allocations)
    if sequential:
        E.get_embedder(spec).encode(["warm up"])  # the sequential graph embeds in this process: its model too
    load_s = time.perf_counter() - t0
    print(
        f"embedder {spec}: {name} {info.get('path', '-')} ({info.get('reason', '-')}), "
        f"{info.get('workers', '-')} worker(s) in {where}; loaded and warmed up in {load_s:.1f}s "
        "(paid once per process: in neither rate below)",
        flush=True,
    )
    texts = [f.embed_text for f in feats]
    t0 = time.perf_counter()
    vecs = [model.encode(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
    enc_rate = len(texts) / (time.perf_counter() - t0)
    print(f"encoder alone:       {enc_rate:8.1f} articles/s ({len(texts)} texts, batches of {batch_size})", flush=True)

    import numpy as np

    allv = np.concatenate(vecs)
    for f, v in zip(feats, allv):
        f.vector, f.model = v, name
    t0 = time.perf_counter()
    outputs, _, _ = cluster_features(feats, links=False)
    writer_rate = len(feats) / (time.perf_counter() - t0)

    with tempfile.TemporaryDirectory(prefix="backfill-throughput-") as d:
        inp = os.path.join(d, "headlines.jsonl")
        with open(inp, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        argv = [f"--input={inp}", f"--embedder={embedder}", f"--batch_size={batch_size}"]
        e2e, manifest = _backfill(run, argv + [f"--output={d}/out"], None)
        if sequential:
            seq, _ = _backfill(run, argv + [f"--output={d}/seq"], False)
            same = all(
                open(f"{d}/out/{name}", "rb").read() == open(f"{d}/seq/{name}", "rb").read()
                for name in ("assignments.jsonl", "stories.jsonl")
            )
            print(
                f"sequential backfill: {seq:8.1f} articles/s (embedding stage, then the writer); overlapped / "
                f"sequential {e2e / seq:.2f}x; files {'byte-identical' if same else 'DIFFER'}",
                flush=True,
            )
    print(f"writer alone:        {writer_rate:8.1f} articles/s ({len(feats)} articles, {len(outputs)} changes)")
    print(f"ratio end to end / encoder alone: {e2e / enc_rate:.2f}x (target >= 1.0)", flush=True)
    return {"encoder": enc_rate, "end_to_end": e2e, "ratio": e2e / enc_rate, "writer": writer_rate, "load_s": load_s}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000, help="articles in the stream (default 20,000)")
    ap.add_argument("--batch_size", type=int, default=1024, help="the backfill's --batch_size (default its default)")
    ap.add_argument("--embedder", default="auto", help="the backfill's --embedder (default auto)")
    ap.add_argument(
        "--sequential",
        action="store_true",
        help="also run the sequential graph (embedding stage, then the writer: what Dataflow runs) and compare files",
    )
    args = ap.parse_args(argv)
    if args.n <= 0:
        ap.error("--n must be > 0")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    measure(args.n, args.batch_size, args.embedder, args.sequential)
    print(f"load average at end: {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
