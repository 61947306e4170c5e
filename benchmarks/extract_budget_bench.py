"""Per-page cost of the extraction budget: Normalizer.extract in-process vs in a NormalizeWorker child process.

Reads: the extraction benchmark's pages (../shared/data/pages/extraction-benchmark/html, or ``--pages``). Writes:
stdout only. Run: ``.venv/bin/python benchmarks/extract_budget_bench.py [--rounds 3]``

Both paths run in this one command, page by page and interleaved (in-process then worker, then the order swapped
on the next round), so machine noise hits both alike; the figures are ratios and per-page differences against the
in-process baseline measured alongside. The worker's start (fork + warm-up) is timed separately: it is paid once
per worker, and again only after a page blew its budget.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import time
from pathlib import Path

DEFAULT_PAGES = Path(os.environ.get("NEWSROOM_SHARED", "/work/shared")) / "data/pages/extraction-benchmark/html"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--pages", default=str(DEFAULT_PAGES), help=f"Folder of pages. Default: {DEFAULT_PAGES}")
    ap.add_argument("--rounds", type=int, default=3, help="Passes over the pages. Default: 3.")
    args = ap.parse_args()

    from transforms.articles.normalize import Normalizer
    from transforms.articles.page import Rejected
    from transforms.articles.worker import NormalizeWorker

    pages = []
    for p in sorted(Path(args.pages).iterdir()):
        if p.name.endswith((".html", ".htm", ".html.gz", ".htm.gz")):
            raw = p.read_bytes()
            pages.append(gzip.decompress(raw) if p.name.endswith(".gz") else raw)
    norm = Normalizer()

    def run(extractor, body):
        t = time.perf_counter()
        try:
            extractor.extract(body, url="https://example.com/news/a", headers={}, now_ms=1_767_225_600_000)
        except Rejected:
            pass
        return time.perf_counter() - t

    for body in pages[:3]:  # warm the in-process side (lazy imports, models), as the worker's start does
        run(norm, body)
    t = time.perf_counter()
    worker = NormalizeWorker(budget_s=30)
    run(worker, pages[0])
    start_s = time.perf_counter() - t

    inproc, inworker = [], []
    for r in range(args.rounds):
        for body in pages:
            if r % 2 == 0:
                inproc.append(run(norm, body))
                inworker.append(run(worker, body))
            else:
                inworker.append(run(worker, body))
                inproc.append(run(norm, body))
    # The pure round trip: each page's bytes go to the child and are refused at once (not_html by Content-Type).
    trips = []
    for body in pages:
        t = time.perf_counter()
        try:
            worker.extract(body, url="https://example.com/a", headers={"content-type": "application/pdf"}, now_ms=0)
        except Rejected:
            pass
        trips.append(time.perf_counter() - t)
    worker.close()
    diffs = [w - i for w, i in zip(inworker, inproc)]
    print(f"pages: {len(pages)} x {args.rounds} rounds; load average {os.getloadavg()[0]:.2f}")
    print(f"worker start (fork + warm-up, once per worker): {start_s:.2f} s")
    print(f"in-process: median {statistics.median(inproc) * 1000:.1f} ms/page, total {sum(inproc):.2f} s")
    print(f"worker:     median {statistics.median(inworker) * 1000:.1f} ms/page, total {sum(inworker):.2f} s")
    print(
        f"overhead per page: median {statistics.median(diffs) * 1000:.2f} ms; "
        f"total ratio worker/in-process {sum(inworker) / sum(inproc):.3f}"
    )
    print(f"pure round trip of a page's bytes (no extraction): median {statistics.median(trips) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
