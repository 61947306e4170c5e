"""A per-page extraction budget: normalisation runs in a child process that is killed when a page takes too long.

Reads: RawItem dicts (or page bytes for ``newsroom extract``). Writes: what :class:`~transforms.articles.normalize.
Normalizer` writes, or raises :class:`~transforms.articles.page.Rejected` with reason ``extraction_budget_exceeded``
(detail ``extraction budget exceeded: more than N s``) when one page is still being worked on after ``budget_s``
seconds, or ``extraction_worker_died`` when the child died on a page (a crash or the kernel's OOM killer).

Why a process: a pathological page that is still under the size cap (3.6 MB of ~450k empty paragraphs) kept
trafilatura's XPath passes busy for more than 180 s, and a Python thread cannot be stopped. The child is started once
and reused for every page (startup is not charged to any page's budget), so the cost per page is one round trip of
the RawItem and the Article through a pipe (measured in the README: a few percent of the ~40 ms a page takes);
only a page that blows the budget costs a restart. The child is a ``forkserver`` child on Linux (``spawn``
elsewhere): never a plain fork of a process that runs threads (Beam workers do), and the fork server imports the
heavy modules once, so a restart costs a fork, not a fresh interpreter.

Budget: :data:`DEFAULT_BUDGET_S` = 30 s. The slowest of the 282 saved HTML pages in ../shared/data/pages takes
~1.7 s in-process once warm (cnn_main_site.html; median 0.08 s) on this 2-core machine; 30 s is ~17x that, so a
legitimate page on a loaded worker is not cut, while one hostile page holds a worker for 30 s at most instead of
minutes (the probe's page: > 180 s; 20k empty paragraphs already take ~18 s). ``budget_s=0`` runs in-process with no
limit (tests of the domain logic, benchmarks).

Thread-safety: one request at a time per worker (a lock); create one per thread or per DoFn instance.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time

from transforms.articles.page import Rejected

DEFAULT_BUDGET_S = 30.0
BUDGET_REASON = "extraction_budget_exceeded"
DIED_REASON = "extraction_worker_died"
START_TIMEOUT_S = 120.0  # importing trafilatura, lxml and the alias table on a busy 2-core machine


# Imported once by the fork server, so a (re)started child forks with them loaded (missing ones are skipped).
PRELOAD = [
    "transforms.articles.worker",
    "transforms.articles.normalize",
    "lxml.html",
    "trafilatura",
    "htmldate",
    "extruct",
    "py3langid",
    "charset_normalizer",
]
_WARM_UP_PAGE = (
    b"<html lang=en><head><title>Warm up</title></head><body><article>"
    + b"<p>The council met on Tuesday and approved the budget for the new park near the river, officials said.</p>" * 8
    + b"</article></body></html>"
)


def _context():
    if sys.platform.startswith("linux"):
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


def _child_main(conn, publishers: str | None, aliases: str | None) -> None:
    """The child: build a Normalizer, then answer (method, args, kwargs) requests until the pipe closes."""
    try:
        from transforms.articles.entities import AliasTable
        from transforms.articles.normalize import Normalizer
        from transforms.publishers import PublisherRegistry, default_registry

        if isinstance(publishers, list):  # the stored registry's rows (transforms/publisher_store.py)
            registry = PublisherRegistry.from_dicts(publishers)
        else:
            registry = PublisherRegistry.load(publishers) if publishers else default_registry()
        alias_table = AliasTable.load(aliases) if aliases else None
        normalizer = Normalizer(registry=registry, aliases=alias_table)
        # The first page pays for lazy imports and model loads (~3 s, up to ~15 s on a cold, busy machine): pay
        # them here, before "ready", so that no page's budget is charged for them.
        normalizer.extract(_WARM_UP_PAGE, url="https://example.com/news/warm-up", headers={}, now_ms=0)
        conn.send(("ready",))
    except BaseException as exc:  # noqa: BLE001 - report, then die
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            method, args, kwargs = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return  # the parent is gone or closed us
        try:
            conn.send(("ok", getattr(normalizer, method)(*args, **kwargs)))
        except Rejected as exc:
            conn.send(("rejected", exc.reason, exc.detail))
        except Exception as exc:  # noqa: BLE001 - the parent decides what an error becomes
            conn.send(("error", f"{type(exc).__name__}: {exc}"[:2000]))


class NormalizeWorker:
    """``Normalizer`` methods (``normalize``, ``extract``) run in a reusable child process under a time budget.

    Args:
        budget_s: seconds one page may take (wall clock, in the child). Default: DEFAULT_BUDGET_S (30).
        publishers / aliases: registry and alias table paths for the child's Normalizer (None: the packaged ones;
            publishers may also be the stored registry's rows, a list).
        clock: () -> ms, fills a RawItem's missing ``fetched_at`` before it is sent (the child has no clock of ours).
    """

    def __init__(self, budget_s: float = DEFAULT_BUDGET_S, publishers=None, aliases=None, clock=None):
        if budget_s <= 0:
            raise ValueError("budget_s must be > 0 (use the Normalizer itself for no budget)")
        self.budget_s, self.publishers, self.aliases = float(budget_s), publishers, aliases
        self.clock = clock or (lambda: int(time.time() * 1000))
        self._lock = threading.Lock()
        self._proc = None
        self._conn = None
        self.restarts = 0  # children killed or lost (a metric for callers)

    # -- lifecycle ------------------------------------------------------------------------------------------
    def _start(self) -> None:
        ctx = _context()
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_child_main, args=(child, self.publishers, self.aliases), name="extract-worker", daemon=True
        )
        proc.start()
        child.close()
        if not parent.poll(START_TIMEOUT_S):
            proc.kill()
            proc.join(5)
            raise RuntimeError(f"extraction worker did not start within {START_TIMEOUT_S:g} s")
        msg = parent.recv()
        if msg[0] != "ready":
            proc.join(5)
            raise RuntimeError(f"extraction worker failed to start: {msg[1]}")
        self._proc, self._conn = proc, parent

    def _kill(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            conn.close()
        if proc is not None:
            proc.kill()
            proc.join(5)
            self.restarts += 1

    def close(self) -> None:
        """Stop the child (it also exits by itself when this process ends: daemon, and EOF on its pipe)."""
        with self._lock:
            proc, conn = self._proc, self._conn
            self._proc = self._conn = None
            if conn is not None:
                conn.close()  # the child sees EOF and returns
            if proc is not None:
                proc.join(2)
                if proc.is_alive():
                    proc.kill()
                    proc.join(2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # -- calls ----------------------------------------------------------------------------------------------
    def call(self, method: str, *args, **kwargs):
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                if self._proc is not None:
                    self._kill()
                self._start()
            try:
                self._conn.send((method, args, kwargs))
                ready = self._conn.poll(self.budget_s)
                msg = self._conn.recv() if ready else None
            except (EOFError, OSError, BrokenPipeError):
                self._kill()
                raise Rejected(DIED_REASON, "the extraction worker died on this page") from None
            if msg is None:
                self._kill()
                raise Rejected(BUDGET_REASON, f"extraction budget exceeded: more than {self.budget_s:g} s")
        if msg[0] == "ok":
            return msg[1]
        if msg[0] == "rejected":
            raise Rejected(msg[1], msg[2])
        raise RuntimeError(msg[1])

    def normalize(self, raw: dict) -> dict:
        """``Normalizer.normalize`` under the budget. The RawItem's times are fixed here, not by the child's clock."""
        if not raw.get("fetched_at"):
            raw = dict(raw, fetched_at=self.clock())
        return self.call("normalize", raw)

    def extract(self, body: bytes, **kwargs) -> dict:
        """``Normalizer.extract`` under the budget (``newsroom extract``)."""
        return self.call("extract", body, **kwargs)
