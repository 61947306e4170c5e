"""``newsroom extract``: normalise a folder of saved article pages to JSON lines (no dedupe, no stores).

Reads: ``--pages DIR`` (``*.html``, ``*.htm``, optionally gzipped; ``--recursive`` for sub-folders), an optional
``--manifest`` of the URLs the pages were fetched from (JSON ``{id: url}`` or ``{id: {"url": ...}}``, JSON lines
with ``id`` and ``url``, or text lines ``id url``), the publisher registry and the alias table.
Writes: ``--out FILE.jsonl``, one line per page in file-name order:
``{"id", "canonical_url", "canonical_source", "title", "lede", "body", "language", "published_at" (ISO 8601 UTC
or null), "published_source", "entities", "keywords", "section", "topics", "is_opinion", "is_fact_check",
"image_url", "publisher_id", "article_id", "content_hash", "body_method"}``; a rejected page gets
``{"id", "rejected": reason, "detail"}``. Progress goes to stderr.

``--score GROUND_TRUTH.json`` (the extraction benchmark's ``{id: {"articleBody", "url"}}``) prints the two
acceptance figures: mean token-level F1 (bag of lower-cased word tokens) of ``body`` against ``articleBody``,
and the share of pages whose canonical_url equals ``url`` ignoring scheme, a leading ``www.`` and a trailing slash.
The benchmark's ``url`` is the address each page was fetched from, so the same file serves as the manifest: the
normaliser then sees what it sees in production (the fetched URL plus the page's own claims) and the URL figure
measures its canonical decisions (tracking parameters, cross-host canonicals, pages without any canonical).
Without a manifest only the markup speaks, and pages that name no URL at all cannot score. The README's command::

    .venv/bin/newsroom extract --pages ../shared/data/pages/extraction-benchmark/html \
        --manifest ../shared/data/pages/extraction-benchmark/ground-truth.json --out /tmp/extraction-benchmark.jsonl \
        --score ../shared/data/pages/extraction-benchmark/ground-truth.json

Heavy modules (trafilatura, lxml, extruct ...) are imported inside :func:`main`, as pipelines/cli.py requires.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pipelines.command_errors import load_input, require_folder
from transforms.common import format_duration

SUFFIXES = (".html.gz", ".htm.gz", ".html", ".htm")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pages", required=True, help="Folder of saved pages (*.html, *.htm, optionally .gz).")
    parser.add_argument("--out", required=True, help="Output JSON lines file (one line per page).")
    parser.add_argument(
        "--manifest",
        default=None,
        help="Optional file of fetched URLs: JSON {id: url}, JSON lines {id, url}, or 'id url' text lines. "
        "Without it, pages are judged on their own markup only. Default: none.",
    )
    parser.add_argument("--recursive", action="store_true", help="Also read sub-folders. Default: off.")
    parser.add_argument(
        "--score",
        default=None,
        metavar="GROUND_TRUTH",
        help="Ground truth JSON {id: {articleBody, url}}: print mean token F1 and canonical URL accuracy. "
        "Default: off.",
    )
    parser.add_argument("--workers", type=int, default=2, help="Processes to use. Default: 2.")
    parser.add_argument(
        "--budget_s",
        type=float,
        default=None,
        help="Seconds one page may take; a page still being extracted then is recorded as rejected "
        "'extraction_budget_exceeded' and the run goes on (each worker is a child process, reused across pages and "
        "killed on overrun; transforms/articles/worker.py). 0: in-process, no limit. Default: 30.",
    )
    parser.add_argument("--publishers", default=None, help="Publisher registry JSON. Default: the packaged one.")
    parser.add_argument("--aliases", default=None, help="Entity alias table TSV. Default: the packaged one.")
    parser.add_argument("--limit", type=int, default=0, help="Only the first N pages (0 = all). Default: 0.")


def page_id(path: Path) -> str:
    name = path.name
    for suffix in SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def list_pages(folder: Path, recursive: bool = False) -> list[Path]:
    it = folder.rglob("*") if recursive else folder.iterdir()
    return sorted(p for p in it if p.is_file() and p.name.lower().endswith(SUFFIXES))


def read_manifest(path: str | None) -> dict[str, str]:
    if not path:
        return {}
    text = Path(path).read_text(encoding="utf-8")
    out: dict[str, str] = {}
    stripped = text.lstrip()
    if stripped.startswith("{") and not stripped.startswith('{"id"'):
        data = json.loads(text)
        for k, v in data.items():
            url = v if isinstance(v, str) else (v or {}).get("url") or (v or {}).get("fetched_url")
            if url:
                out[str(k)] = url
        return out
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            row = json.loads(line)
            if row.get("id") and (row.get("url") or row.get("fetched_url")):
                out[str(row["id"])] = row.get("url") or row.get("fetched_url")
            continue
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0]] = parts[-1]
    return out


def check_inputs(args: argparse.Namespace) -> tuple[dict[str, str], dict | None]:
    """The manifest and the ground truth read, and ``--out`` checked, before any page is: ValueError with one line
    naming the flag and the file (missing, a folder, not JSON) instead of a traceback minutes into a run."""
    for flag, path in (("--manifest", args.manifest), ("--score", args.score)):
        if path and Path(path).is_dir():
            raise ValueError(f"{flag} {path}: is a folder, not a file")
        if path and not Path(path).exists():
            raise ValueError(f"{flag} {path}: no such file")
    if Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: is a folder; give the JSON lines file to write")
    try:
        manifest = read_manifest(args.manifest)
    except (ValueError, AttributeError) as exc:
        raise ValueError(f"--manifest {args.manifest}: not a manifest of URLs ({exc})") from None
    if args.publishers:  # loaded by every worker: a bad file would reject every page, one by one
        from transforms.registry_files import registry_file

        load_input("--publishers", args.publishers, registry_file, "a publishers file")
    if args.aliases:
        from transforms.articles.entity_aliases import AliasTable

        load_input("--aliases", args.aliases, AliasTable.load, "an alias table")
    truth = None
    if args.score:
        try:
            truth = json.loads(Path(args.score).read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"--score {args.score}: not JSON ({exc})") from None
        if not isinstance(truth, dict) or not all(isinstance(v, dict) for v in truth.values()):
            raise ValueError(f"--score {args.score}: not a ground truth {{id: {{articleBody, url}}}}")
    return manifest, truth


_NORMALIZER = None


def _init_worker(publishers: str | None, aliases: str | None) -> None:
    global _NORMALIZER
    from transforms.articles.entity_aliases import AliasTable
    from transforms.articles.normalize import Normalizer
    from transforms.publishers import PublisherRegistry, default_registry

    registry = PublisherRegistry.load(publishers) if publishers else default_registry()
    alias_table = AliasTable.load(aliases) if aliases else None
    _NORMALIZER = Normalizer(registry=registry, aliases=alias_table)


def extract_one(job: tuple[str, str, str | None], extractor=None) -> dict:
    """(id, path, url) -> one output record. Never raises: failures become ``rejected`` records. ``extractor``: a
    Normalizer or a NormalizeWorker (None: this process's Normalizer, set up by _init_worker)."""
    import gzip

    from transforms.articles.dates import iso
    from transforms.articles.page import MAX_PAGE_BYTES, Rejected

    pid, path, url = job
    extractor = extractor or _NORMALIZER
    try:
        raw = Path(path).read_bytes()
        if path.lower().endswith(".gz"):
            with gzip.open(path) as fh:
                raw = fh.read(MAX_PAGE_BYTES + 1)  # bounded: a gzip bomb stops at the size limit
        art = extractor.extract(raw, url=url, headers={}, now_ms=int(time.time() * 1000))
    except Rejected as exc:
        return {"id": pid, "rejected": exc.reason, "detail": exc.detail}
    except Exception as exc:  # noqa: BLE001 - analysts get a record per page, whatever happens
        return {"id": pid, "rejected": "internal_error", "detail": f"{type(exc).__name__}: {exc}"[:500]}
    diag = art.get("_diagnostics", {})
    return {
        "id": pid,
        "canonical_url": art["canonical_url"],
        "canonical_source": art["canonical_source"],
        "title": art["title"],
        "lede": art["lede"],
        "body": art["body"],
        "language": art["language"],
        "published_at": iso(art["_stated_ms"]),
        "published_source": diag.get("published_source"),
        "entities": art["entities"],
        "keywords": art["keywords"],
        "section": art["section"],
        "topics": art["topics"],
        "is_opinion": art["is_opinion"],
        "is_fact_check": art["is_fact_check"],
        "image_url": art["image_url"],
        "publisher_id": art["publisher_id"],
        "article_id": art["article_id"],
        "content_hash": art["content_hash"],
        "body_method": diag.get("body_method"),
    }


def score(records: list[dict], ground_truth: dict) -> dict:
    """Mean token F1 of body vs articleBody and canonical URL accuracy over the ground truth's pages."""
    from transforms.articles.body import overlap_f1
    from transforms.articles.urls import same_url

    by_id = {r["id"]: r for r in records}
    f1s, url_hits, missing = [], 0, 0
    for pid, truth in ground_truth.items():
        rec = by_id.get(pid)
        if rec is None:
            missing += 1
        body = (rec or {}).get("body") or ""
        want = truth.get("articleBody") or ""
        f1s.append(1.0 if not body and not want else overlap_f1(body, want))
        if same_url((rec or {}).get("canonical_url"), truth.get("url")):
            url_hits += 1
    n = len(ground_truth) or 1
    return {"pages": len(ground_truth), "missing": missing, "mean_f1": sum(f1s) / n, "url_accuracy": url_hits / n}


def main(args: argparse.Namespace) -> int:
    import multiprocessing

    folder = Path(args.pages)
    require_folder(args.pages, "--pages")
    # every input is checked before the first page is read (a ValueError: one line, exit 2): a typo costs no run
    manifest, truth = check_inputs(args)
    pages = list_pages(folder, args.recursive)
    if args.limit:
        pages = pages[: args.limit]
    jobs = [(page_id(p), str(p), manifest.get(page_id(p))) for p in pages]
    started = time.perf_counter()
    records: list[dict] = []
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    workers = max(1, int(args.workers or 1))
    from transforms.articles.worker import DEFAULT_BUDGET_S, NormalizeWorker

    budget = DEFAULT_BUDGET_S if getattr(args, "budget_s", None) is None else float(args.budget_s)
    budgeted: list = []
    with out_path.open("w", encoding="utf-8") as out:
        if budget > 0:
            # Threads here, each driving its own child process (which does the work and can be killed).
            import threading
            from concurrent.futures import ThreadPoolExecutor

            local = threading.local()
            lock = threading.Lock()

            def run(job):
                worker = getattr(local, "worker", None)
                if worker is None:
                    worker = local.worker = NormalizeWorker(budget, args.publishers, args.aliases)
                    with lock:
                        budgeted.append(worker)
                return extract_one(job, worker)

            pool = ThreadPoolExecutor(workers, thread_name_prefix="extract")
            results = pool.map(run, jobs)
        elif workers == 1:
            _init_worker(args.publishers, args.aliases)
            results = map(extract_one, jobs)
            pool = None
        else:
            ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
            pool = ctx.Pool(workers, initializer=_init_worker, initargs=(args.publishers, args.aliases))
            results = pool.imap(extract_one, jobs, chunksize=4)
        try:
            for i, rec in enumerate(results, 1):
                records.append(rec)
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                if i % 25 == 0 or i == len(jobs):
                    rate = i / max(1e-9, time.perf_counter() - started)
                    left = format_duration((len(jobs) - i) / rate)
                    print(f"extract: {i}/{len(jobs)} pages ({rate:.1f}/s, ~{left} left)", file=sys.stderr, flush=True)
        finally:
            if budget > 0:
                pool.shutdown(wait=True)
                for worker in budgeted:
                    worker.close()
            elif pool is not None:
                pool.close()
                pool.join()
    rejected = sum(1 for r in records if r.get("rejected"))
    print(f"extract: wrote {len(records)} lines to {out_path} ({rejected} rejected)", file=sys.stderr)
    if truth is not None:
        s = score(records, truth)
        print(f"pages: {s['pages']} (missing: {s['missing']})")
        print(f"mean token F1 (body vs articleBody): {s['mean_f1']:.4f}")
        print(f"canonical_url == ground-truth url: {s['url_accuracy']:.1%}")
    return 0
