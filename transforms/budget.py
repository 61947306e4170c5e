"""A CPU budget per item: work on one untrusted input runs in a reusable child process that is killed on overrun.

Used for page extraction (:class:`transforms.articles.worker.NormalizeWorker`) and for parsing polled feeds,
sitemaps and fronts (:mod:`transforms.ingest.parsing`). Reads a target built once in the child (``factory(*args)``
names a module-level function, so the child can import it) and ``(method, args, kwargs)`` requests; writes the
method's return value, or raises what the caller's ``rejected(reason, detail)`` makes of:

- a rejection raised in the child (any exception with ``reason`` and ``detail`` attributes: ``Rejected``,
  ``FeedError``), carried over as it was;
- ``budget_reason`` when the item used more than ``budget_s`` seconds of CPU in the child (or more than
  :data:`WALL_FACTOR` times that in wall-clock time: a child blocked or starved must not hold its caller forever);
  the child is killed (SIGKILL) at once, so the work really stops, and the next item gets a fresh child;
- ``died_reason`` when the child died on the item (a crash in C code, the kernel's OOM killer).

Any other exception in the child comes back as a ``RuntimeError`` with its text (a defect, not an input's fault).

Why a process: a Python thread cannot be stopped, and a parser spends its time in C (libxml2, expat), where no
budget check of ours runs. Why CPU rather than wall time: on a loaded worker (2 cores shared by a Beam harness and
its threads) a legitimate item waits for a core; charging the wait to the item would dead-letter good pages. The
CPU time is the child's own (``/proc/<pid>/stat``, user + system), read every :data:`CHECK_S` while the parent
waits; where /proc is missing (macOS), the wall clock stands in for it.

The child is started once and reused (startup is not charged to any item), as a ``forkserver`` child on Linux
(``spawn`` elsewhere): never a plain fork of a process that runs threads (Beam workers do), and the fork server
imports the worker's modules once (:data:`PRELOAD`), so a restart costs a fork, not a fresh interpreter. One request at a time per worker
(a lock); a caller with several threads keeps one worker per thread or a pool of them.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time

START_TIMEOUT_S = 120.0  # importing trafilatura, lxml and the alias table on a busy 2-core machine
WALL_FACTOR = 4.0  # wall-clock backstop: a child may take this many times its CPU budget in elapsed time
CHECK_S = 0.1  # how often the parent reads the child's CPU time while it waits

# What the fork server imports once, so that a (re)started child forks with it loaded (missing modules are skipped).
# The fork server is one per process and takes the list of the first worker started there: an ingest process
# preloads the feed parsers only, a stories process the extraction stack; a child of the other kind imports the rest
# itself while it starts (not charged to any item).
PRELOAD = ["transforms.budget", "lxml.html", "charset_normalizer"]
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _context(preload: list[str]):
    if sys.platform.startswith("linux"):
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD + list(preload))
        return ctx
    return multiprocessing.get_context("spawn")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds process ``pid`` has used, or None when /proc cannot tell (not Linux, gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return None


def _child_main(conn, factory, args: tuple) -> None:
    """The child: build the target, then answer (method, args, kwargs) requests until the pipe closes."""
    try:
        target = factory(*args)
        conn.send(("ready",))
    except BaseException as exc:  # noqa: BLE001 - report, then die
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            method, margs, kwargs = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return  # the parent is gone or closed us
        try:
            conn.send(("ok", getattr(target, method)(*margs, **kwargs)))
        except Exception as exc:  # noqa: BLE001 - the parent decides what an error becomes
            if isinstance(getattr(exc, "reason", None), str):
                conn.send(("rejected", exc.reason, str(getattr(exc, "detail", "") or "")))
            else:
                conn.send(("error", f"{type(exc).__name__}: {exc}"[:2000]))


class BudgetedWorker:
    """Methods of ``factory(*args)`` called in a reusable child process, each under a CPU budget.

    Args:
        budget_s: CPU seconds one call may use (> 0).
        factory / args: a module-level function and its arguments; the child calls it once to build the target.
        rejected: (reason, detail) -> the exception to raise for a rejection, an overrun or a dead child.
        reasons: (budget_reason, died_reason, what): the two reason codes and the name of the work in details
            ("extraction", "parse").
        preload: modules the fork server imports (see :data:`PRELOAD`).
    """

    preload: tuple = ()

    def __init__(self, budget_s: float, factory, args: tuple, rejected, reasons: tuple[str, str, str]):
        if budget_s <= 0:
            raise ValueError("budget_s must be > 0 (call the target itself for no budget)")
        self.budget_s = float(budget_s)
        self.factory, self.args, self.rejected = factory, tuple(args), rejected
        self.budget_reason, self.died_reason, self.what = reasons
        self._lock = threading.Lock()
        self._proc = None
        self._conn = None
        self.restarts = 0  # children killed or lost (a metric for callers)

    # -- lifecycle ------------------------------------------------------------------------------------------
    def _start(self) -> None:
        ctx = _context(self.preload)
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_child_main, args=(child, self.factory, self.args), name=f"{self.what}-worker", daemon=True
        )
        proc.start()
        child.close()
        if not parent.poll(START_TIMEOUT_S):
            proc.kill()
            proc.join(5)
            raise RuntimeError(f"{self.what} worker did not start within {START_TIMEOUT_S:g} s")
        try:
            msg = parent.recv()
        except (EOFError, OSError):
            msg = ("error", f"the child exited with {proc.exitcode} while starting")
        if msg[0] != "ready":
            proc.join(5)
            raise RuntimeError(f"{self.what} worker failed to start: {msg[1]}")
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
    def _wait(self) -> bool:
        """Wait for the child's answer within the budget: True when it is there, False on an overrun."""
        conn, pid = self._conn, self._proc.pid
        start_cpu, start = cpu_seconds(pid), time.monotonic()
        wall_limit = self.budget_s * (WALL_FACTOR if start_cpu is not None else 1.0)
        while True:
            waited = time.monotonic() - start
            if conn.poll(max(0.0, min(CHECK_S, wall_limit - waited))):
                return True
            used = cpu_seconds(pid) if start_cpu is not None else None
            if used is not None and used - start_cpu > self.budget_s:
                return False
            if time.monotonic() - start >= wall_limit:
                return False

    def call(self, method: str, *args, **kwargs):
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                if self._proc is not None:
                    self._kill()
                self._start()
            try:
                self._conn.send((method, args, kwargs))
                msg = self._conn.recv() if self._wait() else None
            except (EOFError, OSError, BrokenPipeError):
                self._kill()
                raise self.rejected(self.died_reason, f"the {self.what} worker died on this input") from None
            if msg is None:
                self._kill()
                raise self.rejected(self.budget_reason, f"{self.what} budget exceeded: more than {self.budget_s:g} s")
        if msg[0] == "ok":
            return msg[1]
        if msg[0] == "rejected":
            raise self.rejected(msg[1], msg[2])
        raise RuntimeError(msg[1])
