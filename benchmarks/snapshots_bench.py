"""What ``newsroom backfill --snapshots`` costs over the same backfill without it, on a months-long input.

Runs the real command twice on the same input in this one invocation, each in its own process (start-up included,
as an analyst pays it): once plain, once with ``--snapshots DIR``, and prints both wall times, the ratio
(the target: <= 2x) and the page versions the replay published (all pages, and the busiest page's).
Default input: BASIL's dev set (150 articles, three reports per event) re-timed as a months-long stream: in its
order of publication, evenly spread over ``--span_days`` (30) from 2024-01-01. Its own dates lie years apart,
where no edition page ever holds the five live stories it needs, so the replay would publish nothing.
``--span_days 0`` keeps the file's own times.

    .venv/bin/python benchmarks/snapshots_bench.py                       # basil-dev over 30 days
    .venv/bin/python benchmarks/snapshots_bench.py --input FILE --embedder hash --span_days 0

Prints, never asserts; the machine is shared, so read the ratio (both runs in one command), not the seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("STORIES_DATA") or ROOT.parent / "shared" / "data" / "stories")


def backfill(inp: str, out: Path, embedder: str, *extra: str) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-m", "pipelines.cli", "backfill", f"--input={inp}", f"--output={out}"]
    argv += [f"--embedder={embedder}", *extra]
    t0 = time.perf_counter()
    res = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"backfill {' '.join(extra) or '(plain)'} failed:\n{res.stderr[-3000:]}")
    return took


def retimed(src: str, dst: Path, span_days: float) -> None:
    """``src``'s records in publication order (undated ones last, file order among equals), evenly spread over
    ``span_days`` from 2024-01-01 UTC."""
    rows = [json.loads(x) for x in open(src, encoding="utf-8") if x.strip()]
    rows = [r for _, r in sorted(enumerate(rows), key=lambda kv: (kv[1].get("published_at") or "~", kv[0]))]
    start, step = dt.datetime(2024, 1, 1, tzinfo=dt.UTC), dt.timedelta(days=span_days) / max(len(rows), 1)
    with open(dst, "w", encoding="utf-8") as f:
        for i, r in enumerate(rows):
            r["published_at"] = (start + i * step).strftime("%Y-%m-%dT%H:%M:%SZ")
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def page_versions(root: Path) -> tuple[int, int]:
    """(page objects published, versions of the busiest page): the replay's output size."""
    per_page: dict[str, int] = {}
    for path in root.rglob("v*.json"):
        if "pages" in path.parts:
            key = str(path.parent)
            per_page[key] = per_page.get(key, 0) + 1
    return sum(per_page.values()), max(per_page.values(), default=0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=str(DATA / "basil-dev.jsonl"), help="Labelled JSONL. Default: basil-dev.")
    ap.add_argument("--embedder", default="auto", help="Backfill --embedder. Default: auto.")
    ap.add_argument("--span_days", type=float, default=30, help="Re-time the input over N days (0: keep). Default: 30.")
    args = ap.parse_args(argv)
    if not Path(args.input).exists():
        sys.exit(f"--input {args.input}: no such file (STORIES_DATA points at the dev sets)")
    with tempfile.TemporaryDirectory(prefix="snapshots-bench-") as tmp:
        inp = args.input
        if args.span_days > 0:
            inp = str(Path(tmp) / "input.jsonl")
            retimed(args.input, Path(inp), args.span_days)
        plain = backfill(inp, Path(tmp) / "plain", args.embedder)
        snaps = Path(tmp) / "snapshots"
        with_snapshots = backfill(inp, Path(tmp) / "with", args.embedder, f"--snapshots={snaps}")
        pages, busiest = page_versions(snaps)
    span = f"re-timed over {args.span_days:g} days" if args.span_days > 0 else "its own times"
    print(f"input {args.input}, {span} (embedder {args.embedder})")
    print(f"backfill without snapshots: {plain:8.1f} s")
    print(f"backfill with snapshots:    {with_snapshots:8.1f} s  ({pages} page versions, busiest page {busiest})")
    print(f"ratio with/without: {with_snapshots / plain:.1f}x (target <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
