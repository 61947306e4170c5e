"""What ``newsroom backfill --snapshots`` costs over the same backfill without it, on a months-long input.

Runs the real command three times on the same input in this one invocation, each in its own process (start-up
included, as an analyst pays it): plain, with ``--snapshots DIR --snapshots_every_minute`` (the every-minute
replay, the baseline) and with ``--snapshots DIR`` (the change-only replay, transforms/editions/ranker/steady.py), and
prints the wall times, the ratios to the plain run (the target: <= 2x), whether the two replays stored the same
bytes, and the page versions published (all pages, and the busiest page's).
Each run's CPU seconds (user + system of the backfill process and the processes it waited for: its embedder
process included) are printed beside its wall time: on a shared machine the wall time of one run swings with the
other tenants' load (a run waits for a core), its CPU time far less. ``--repeat N`` runs the plain and the
change-only backfills N times, interleaved (plain, change-only, plain, ...; the every-minute baseline once, first),
and prints the median of each, so both see the same minutes of load.
Default input: BASIL's dev set (150 articles, three reports per event) re-timed as a months-long stream: in its
order of publication, evenly spread over ``--span_days`` (30) from 2024-01-01. Its own dates lie years apart,
where no edition page ever holds the five live stories it needs, so the replay would publish nothing.
``--span_days 0`` keeps the file's own times.

    .venv/bin/python benchmarks/snapshots_bench.py                       # basil-dev over 30 days
    .venv/bin/python benchmarks/snapshots_bench.py --input FILE --embedder hash --span_days 0
    .venv/bin/python benchmarks/snapshots_bench.py --limit 50        # the first 50 articles (a loaded machine)
    .venv/bin/python benchmarks/snapshots_bench.py --no_every_minute # plain vs change-only only (a month: ~25 min)

Prints, never asserts; the machine is shared, so read the ratio (both runs in one command), not the seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("STORIES_DATA") or ROOT.parent / "shared" / "data" / "stories")


def backfill(inp: str, out: Path, embedder: str, *extra: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the backfill and the processes it reaped) of one run of the real command."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-m", "pipelines.cli", "backfill", f"--input={inp}", f"--output={out}"]
    argv += [f"--embedder={embedder}", *extra]
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    res = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    took, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        sys.exit(f"backfill {' '.join(extra) or '(plain)'} failed:\n{res.stderr[-3000:]}")
    return took, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def retimed(src: str, dst: Path, span_days: float, limit: int = 0) -> None:
    """``src``'s records in publication order (undated ones last, file order among equals), the first ``limit``
    (0: all), evenly spread over ``span_days`` from 2024-01-01 UTC."""
    rows = [json.loads(x) for x in open(src, encoding="utf-8") if x.strip()]
    rows = [r for _, r in sorted(enumerate(rows), key=lambda kv: (kv[1].get("published_at") or "~", kv[0]))]
    rows = rows[:limit] if limit > 0 else rows
    start, step = dt.datetime(2024, 1, 1, tzinfo=dt.UTC), dt.timedelta(days=span_days) / max(len(rows), 1)
    with open(dst, "w", encoding="utf-8") as f:
        for i, r in enumerate(rows):
            r["published_at"] = (start + i * step).strftime("%Y-%m-%dT%H:%M:%SZ")
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def same_bytes(a: Path, b: Path) -> bool:
    """Whether two snapshot trees hold the same objects with the same bytes."""

    def tree(root: Path) -> dict:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.json")}

    return tree(a) == tree(b)


def page_versions(root: Path) -> tuple[int, int]:
    """(page objects published, versions of the busiest page): the replay's output size."""
    per_page: dict[str, int] = {}
    for path in root.rglob("v*.json"):
        if "pages" in path.parts:
            key = str(path.parent)
            per_page[key] = per_page.get(key, 0) + 1
    return sum(per_page.values()), max(per_page.values(), default=0)


def _report(plains: list, everys: list, changes: list) -> None:
    """Median wall and CPU seconds of each mode and their ratios to the plain backfill's."""

    def med(runs: list, i: int) -> float:
        return statistics.median(run[i] for run in runs)

    pw, pc = med(plains, 0), med(plains, 1)
    for name, runs, note in (
        ("backfill without snapshots:           ", plains, ""),
        ("with snapshots, every minute (before):", everys, ""),
        ("with snapshots, change-only (now):    ", changes, " (target <= 2x)"),
    ):
        if not runs:
            continue
        w, c = med(runs, 0), med(runs, 1)
        print(f"{name} wall {w:7.1f} s ratio {w / pw:4.2f}x | CPU {c:7.1f} s ratio {c / pc:4.2f}x{note}")
    print(f"runs (wall s, CPU s): plain {_fmt(plains)}; every minute {_fmt(everys)}; change-only {_fmt(changes)}")


def _fmt(runs: list) -> str:
    return ", ".join(f"({w:.1f}, {c:.1f})" for w, c in runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=str(DATA / "basil-dev.jsonl"), help="Labelled JSONL. Default: basil-dev.")
    ap.add_argument("--embedder", default="auto", help="Backfill --embedder. Default: auto.")
    ap.add_argument("--span_days", type=float, default=30, help="Re-time the input over N days (0: keep). Default: 30.")
    ap.add_argument("--limit", type=int, default=0, help="Only the first N articles (re-timed). Default: 0 (all).")
    ap.add_argument("--repeat", type=int, default=1, help="Interleaved plain/change-only rounds (medians). Default: 1.")
    ap.add_argument(
        "--no_every_minute",
        action="store_true",
        help="Skip the every-minute baseline (its cost grows with the minutes: ~30 min for a month on 2 cores) and "
        "so the same-bytes check: the plain and change-only runs only.",
    )
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if not Path(args.input).exists():
        sys.exit(f"--input {args.input}: no such file (STORIES_DATA points at the dev sets)")
    with tempfile.TemporaryDirectory(prefix="snapshots-bench-") as tmp:
        inp = args.input
        if args.span_days > 0 or args.limit > 0:
            inp = str(Path(tmp) / "input.jsonl")
            retimed(args.input, Path(inp), args.span_days, args.limit)
        every_dir, everys = Path(tmp) / "every", []
        if not args.no_every_minute:
            everys.append(
                backfill(
                    inp, Path(tmp) / "with-every", args.embedder, f"--snapshots={every_dir}", "--snapshots_every_minute"
                )
            )
        plains, changes, same = [], [], None if args.no_every_minute else True
        for r in range(args.repeat):  # interleaved: both modes see the same stretch of the machine's load
            plains.append(backfill(inp, Path(tmp) / f"plain{r}", args.embedder))
            change_dir = Path(tmp) / f"change{r}"
            changes.append(backfill(inp, Path(tmp) / f"with-change{r}", args.embedder, f"--snapshots={change_dir}"))
            if same is not None:
                same = same and same_bytes(every_dir / "snapshots", change_dir / "snapshots")
        pages, busiest = page_versions(change_dir)
    span = f"re-timed over {args.span_days:g} days" if args.span_days > 0 else "its own times"
    limit = f", first {args.limit} articles" if args.limit > 0 else ""
    print(f"input {args.input}{limit}, {span} (embedder {args.embedder}), {args.repeat} interleaved round(s)")
    _report(plains, everys, changes)
    same = "not checked (--no_every_minute)" if same is None else same
    print(f"same bytes (every change-only run vs every minute): {same}; {pages} page versions, busiest {busiest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
