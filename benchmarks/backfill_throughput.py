"""Backfill end to end against its encoder alone, on one headline stream, in one command.

Prints (never asserts), all measured in this one process on the same texts, one after the other:

- ``encoder alone``: articles/s of the embedder the backfill chooses for the stream (``--embedder auto`` routes
  English to ``minilm``, whose int8/fp32 arithmetic is chosen per CPU: transforms/stories/embed/cpu.py), called in batches
  of the backfill's ``--batch_size`` one after the other, as the backfill calls it: the very encoder the backfill's
  writer then uses (for minilm its embedder process, transforms/stories/embed/embed_process.py, kept for the process's
  later runs). The model is loaded (and warmed up) before the clock starts and the backfill reuses it (start-up
  paid once per process), so neither figure includes the model load, which is printed on its own.
- ``backfill end to end``: articles/s of ``newsroom backfill`` (pipelines/backfill.py: read, embed, cluster, apply to
  the embedded store, write the result files and manifest), wall time of :func:`pipelines.backfill.run`.
- ``ratio``: end to end / encoder alone (target: >= 1.0 on 20,000 articles: no slower than its encoder).
- ``sequential backfill`` (``--sequential``): the same backfill with the embedding stage first and the writer after
  it (what it ran before the overlap, and what Dataflow runs), and whether its files are byte-identical.
- ``writer alone``: articles/s of the plain-Python story writer as the backfill runs it (one
  :class:`~transforms.stories.writer.cluster.StoryClusterer`, explanations on) on the same articles with the vectors the
  encoder-alone pass produced: what the writer costs when it does not wait; printed with its ratio to the encoder and
  the digest of its outputs (sha256 of their canonical JSON: two runs that print the same digest wrote the same
  stories, explanations included).

``--writer_only``: the writer alone, without the backfill, on vectors computed once and kept in ``--vectors`` (a
``.npz`` file, reused when it holds the same stream and embedder); the encoder-alone rate is the one measured when
the file was written (printed with its date). ``--baseline DIR`` also times the writer of another checkout (e.g. the
main branch) on the very same features, alternately with this one (``--repeat`` times each), and prints both rates,
their ratio and whether the digests are equal: a writer speed-up measured in one command.

Stream (:func:`headline_stream`): the uci-dev headlines (``STORIES_DATA``, default ../shared/data/stories beside the
checkout, else /work/shared/data/stories), title only as UCI News is, repeated with fresh ids (``bt-0000000`` ...)
and times (one article every 15 s from 2026-01-01T00:00Z, in file order, repetition after repetition):
deterministic, so two runs read the same bytes.

    .venv/bin/python benchmarks/backfill_throughput.py            # 20,000 articles (the acceptance figure)
    .venv/bin/python benchmarks/backfill_throughput.py --n 2000   # a quick run
    .venv/bin/python benchmarks/backfill_throughput.py --writer_only --baseline ../main   # writer vs main's

The machine is shared: the figures of one command are comparable with each other (same minutes, same load), not
with another command's; the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
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
    from transforms.stories.backfill import backfill_files

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


def _encoder(embedder: str, feats, sequential: bool = False):
    """(encoder, its model name, load seconds) of the backfill's embedder for English, loaded and warmed up."""
    from transforms.stories.embed import embed as E
    from transforms.stories.embed import embed_process

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
    return model, name, load_s


def _encode(model, feats, batch_size: int):
    """(vectors, articles/s) of the encoder alone over ``feats``, in batches of ``batch_size``; also printed."""
    import numpy as np

    texts = [f.embed_text for f in feats]
    t0 = time.perf_counter()
    vecs = [model.encode(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
    enc_rate = len(texts) / (time.perf_counter() - t0)
    print(f"encoder alone:       {enc_rate:8.1f} articles/s ({len(texts)} texts, batches of {batch_size})", flush=True)
    return np.concatenate(vecs), enc_rate


def output_digest(outputs) -> str:
    """sha256 (16 hex digits) of the writer's outputs as canonical JSON, in order: equal digests, equal stories."""
    h = hashlib.sha256()
    for o in outputs:
        h.update(json.dumps(o.to_dict(), sort_keys=True).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def writer_alone(feats, model: str) -> dict:
    """The backfill's writer (explanations on) alone over ``feats`` (with vectors): rate, digest, changes."""
    from transforms.stories.writer.cluster import StoryClusterer

    w = StoryClusterer("en", model=model, explain=True)
    t0, c0 = time.perf_counter(), time.process_time()
    outputs = w.run(feats)
    rate, cpu_rate = len(feats) / (time.perf_counter() - t0), len(feats) / (time.process_time() - c0)
    return {
        "rate": rate,
        "cpu_rate": cpu_rate,
        "digest": output_digest(outputs),
        "changes": len(outputs),
        "stories": len(w.stories),
    }


def measure(n: int, batch_size: int, embedder: str = "auto", sequential: bool = False) -> dict:
    """The figures of one run (see the module docstring); also printed."""
    from pipelines.backfill import run

    records = headline_stream(n)
    feats = _features(records)
    model, name, load_s = _encoder(embedder, feats, sequential)
    allv, enc_rate = _encode(model, feats, batch_size)
    for f, v in zip(feats, allv):
        f.vector, f.model = v, name
    writer = writer_alone(feats, name)

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
    _print_writer("writer alone", writer, enc_rate)
    print(f"ratio end to end / encoder alone: {e2e / enc_rate:.2f}x (target >= 1.0)", flush=True)
    print(f"ratio end to end / writer alone:  {e2e / writer['rate']:.2f}x", flush=True)
    return {
        "encoder": enc_rate,
        "end_to_end": e2e,
        "ratio": e2e / enc_rate,
        "writer": writer["rate"],
        "digest": writer["digest"],
        "load_s": load_s,
    }


def _print_writer(label: str, w: dict, enc_rate: float) -> None:
    print(
        f"{label + ':':20s} {w['rate']:8.1f} articles/s, {w['cpu_rate']:.1f} per CPU second ({w['changes']} changes, "
        f"digest {w['digest']}); writer / encoder alone {w['rate'] / enc_rate:.2f}x",
        flush=True,
    )


def cached_vectors(path: str, n: int, batch_size: int, embedder: str) -> dict:
    """The stream's vectors from ``path`` when it holds this stream and embedder, else encoded now and kept there."""
    import numpy as np

    ids = [f"bt-{i:07d}" for i in range(n)]
    if os.path.exists(path):
        z = np.load(path, allow_pickle=False)
        if str(z["embedder"]) == embedder and z["ids"][:n].tolist() == ids:  # a longer stream starts the same
            print(f"vectors: {path} ({z['measured_at']})", flush=True)
            return {k: z[k] for k in z.files}
    feats = _features(headline_stream(n))
    model, name, _ = _encoder(embedder, feats)
    vecs, enc_rate = _encode(model, feats, batch_size)
    kept = {
        "ids": np.array([f.article_id for f in feats]),
        "vectors": vecs.astype(np.float32),
        "model": np.array(name),
        "embedder": np.array(embedder),
        "encoder_rate": np.array(enc_rate),
        "measured_at": np.array(time.strftime("encoded %Y-%m-%dT%H:%MZ", time.gmtime())),
    }
    with open(path, "wb") as fh:
        np.savez(fh, **kept)
    return kept


def writer_child(n: int, path: str) -> None:
    """One writer-alone run on the kept vectors (a fresh process per run); prints its figures as one JSON line."""
    import numpy as np

    z = np.load(path, allow_pickle=False)
    feats = _features(headline_stream(n))
    if [f.article_id for f in feats] != z["ids"][:n].tolist():
        raise SystemExit(f"{path} does not hold this stream")
    model = str(z["model"])
    for f, v in zip(feats, z["vectors"][:n]):
        f.vector, f.model = v, model
    import transforms

    print(json.dumps({**writer_alone(feats, model), "code": os.path.dirname(transforms.__file__)}), flush=True)


def writer_only(n: int, batch_size: int, embedder: str, path: str, baseline: str | None, repeat: int) -> dict:
    """The writer alone (this checkout, and ``baseline``'s when given, alternately), each run in a fresh process."""
    kept = cached_vectors(path, n, batch_size, embedder)
    enc_rate = float(kept["encoder_rate"])
    print(f"encoder alone:       {enc_rate:8.1f} articles/s (measured when the vectors were encoded)", flush=True)
    checkouts = ([("baseline", os.path.abspath(baseline))] if baseline else []) + [("this", str(ROOT))]
    runs: dict[str, list[dict]] = {label: [] for label, _ in checkouts}
    for _ in range(repeat):
        for label, code in checkouts:
            cmd = [sys.executable, str(Path(__file__).resolve()), f"--n={n}", f"--vectors={path}", "--child"]
            out = subprocess.run(cmd + [f"--code={code}"], check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            if not r["code"].startswith(code):
                raise SystemExit(f"the {label} run imported {r['code']}, not {code}")
            runs[label].append(r)
            _print_writer(f"writer {label}", r, enc_rate)
    best = {label: {k: max(r[k] for r in rs) for k in ("rate", "cpu_rate")} for label, rs in runs.items()}
    if baseline:  # per CPU second: the machine is shared, and the writer is one thread either way
        b, t = best["baseline"], best["this"]
        same = {r["digest"] for rs in runs.values() for r in rs} == {runs["this"][0]["digest"]}
        print(
            f"writer this / baseline ({baseline}), best of {repeat} each: {t['cpu_rate'] / b['cpu_rate']:.2f}x per "
            f"CPU second ({t['cpu_rate']:.1f} vs {b['cpu_rate']:.1f}), {t['rate'] / b['rate']:.2f}x wall "
            f"({t['rate']:.1f} vs {b['rate']:.1f} articles/s); digests {'EQUAL' if same else 'DIFFER'}",
            flush=True,
        )
    return best


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
    ap.add_argument("--writer_only", action="store_true", help="time the writer alone on kept vectors (no backfill)")
    ap.add_argument(
        "--vectors",
        default=os.path.join(tempfile.gettempdir(), "backfill-throughput-vectors.npz"),
        help="--writer_only: where the stream's vectors are kept (encoded once; default in the temp folder)",
    )
    ap.add_argument("--baseline", default=None, help="--writer_only: also time the writer of this checkout")
    ap.add_argument("--repeat", type=int, default=1, help="--writer_only: runs of each writer, alternately")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--code", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.n <= 0:
        ap.error("--n must be > 0")
    if args.child:  # one writer run of the checkout at --code, whose modules come before this one's
        sys.path.insert(0, args.code)
        writer_child(args.n, args.vectors)
        return 0
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    if args.writer_only:
        writer_only(args.n, args.batch_size, args.embedder, args.vectors, args.baseline, max(args.repeat, 1))
    else:
        measure(args.n, args.batch_size, args.embedder, args.sequential)
    print(f"load average at end: {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
