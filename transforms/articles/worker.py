"""A per-page extraction budget: normalisation runs in a child process that is killed when a page costs too much.

Reads: RawItem dicts (or page bytes for ``newsroom extract``). Writes: what :class:`~transforms.articles.normalize.
Normalizer` writes, or raises :class:`~transforms.articles.page.Rejected` with reason ``extraction_budget_exceeded``
(detail ``extraction budget exceeded: more than N s``) when one page has used more than ``budget_s`` seconds of
CPU (or four times that in wall-clock time), or ``extraction_worker_died`` when the child died on a page (a crash
or the kernel's OOM killer). The mechanism (a reusable forkserver child, CPU read from /proc, SIGKILL on overrun)
is :class:`transforms.budget.BudgetedWorker`'s.

Why a process: a pathological page that is still under the size cap (3.6 MB of ~450k empty paragraphs) kept
trafilatura's XPath passes busy for more than 180 s, and a Python thread cannot be stopped. The child is started once
and reused for every page (startup is not charged to any page's budget), so the cost per page is one round trip of
the RawItem and the Article through a pipe (measured in the README: a few percent of the ~40 ms a page takes);
only a page that blows the budget costs a restart.

Budget: :data:`DEFAULT_BUDGET_S` = 30 s of CPU. The slowest of the 282 saved HTML pages in ../shared/data/pages takes
~1.7 s in-process once warm (cnn_main_site.html; median 0.08 s) on this 2-core machine; 30 s is ~17x that, so a
legitimate page is not cut, while one hostile page holds a worker for 30 s of CPU at most instead of minutes (the
probe's page: > 180 s; 20k empty paragraphs already take ~18 s). Pages whose cost grows with the square of an
element's attributes are refused before parsing (transforms/markup.py, reason ``hostile_markup``).
``budget_s=0`` runs in-process with no limit (tests of the domain logic, benchmarks).

Thread-safety: one request at a time per worker (a lock); create one per thread or per DoFn instance.
"""

from __future__ import annotations

import threading
import time

from transforms.articles.page import Rejected
from transforms.budget import START_TIMEOUT_S, BudgetedWorker

DEFAULT_BUDGET_S = 30.0
BUDGET_REASON = "extraction_budget_exceeded"
DIED_REASON = "extraction_worker_died"
__all__ = [
    "BUDGET_REASON",
    "DEFAULT_BUDGET_S",
    "DIED_REASON",
    "PRELOAD",
    "START_TIMEOUT_S",
    "NormalizeWorker",
    "give_back",
    "take_worker",
]
IDLE_CAP = 4  # idle children kept by a process (one per DoFn instance live at once is all a worker needs)
_IDLE: list = []  # NormalizeWorkers whose DoFn was torn down, children alive, for the next setup() to take
_LOCK = threading.Lock()
# Imported once by the fork server (transforms/budget.py), so a (re)started child forks with them loaded.
PRELOAD = (
    "transforms.articles.worker",
    "transforms.articles.normalize",
    "trafilatura",
    "htmldate",
    "extruct",
    "py3langid",
)

_WARM_UP_PAGE = (
    b"<html lang=en><head><title>Warm up</title></head><body><article>"
    + b"<p>The council met on Tuesday and approved the budget for the new park near the river, officials said.</p>" * 8
    + b"</article></body></html>"
)


def make_normalizer(publishers: str | None, aliases: str | None):
    """In the child: the Normalizer, warmed up. The first page pays for lazy imports and model loads (~3 s, up to
    ~15 s on a cold, busy machine): they are paid here, before the child says it is ready, so that no page's
    budget is charged for them."""
    from transforms.articles.entity_aliases import AliasTable
    from transforms.articles.normalize import Normalizer
    from transforms.publishers import PublisherRegistry, default_registry

    if isinstance(publishers, list):  # the stored registry's rows (transforms/publisher_store.py)
        registry = PublisherRegistry.from_dicts(publishers)
    else:
        registry = PublisherRegistry.load(publishers) if publishers else default_registry()
    alias_table = AliasTable.load(aliases) if aliases else None
    normalizer = Normalizer(registry=registry, aliases=alias_table)
    normalizer.extract(_WARM_UP_PAGE, url="https://example.com/news/warm-up", headers={}, now_ms=0)
    return normalizer


class NormalizeWorker(BudgetedWorker):
    """``Normalizer`` methods (``normalize``, ``extract``) run in a reusable child process under a CPU budget.

    Args:
        budget_s: CPU seconds one page may take in the child. Default: DEFAULT_BUDGET_S (30).
        publishers / aliases: registry and alias table paths for the child's Normalizer (None: the packaged ones;
            publishers may also be the stored registry's rows, a list).
        clock: () -> ms, fills a RawItem's missing ``fetched_at`` before it is sent (the child has no clock of ours).
    """

    preload = PRELOAD

    def __init__(self, budget_s: float = DEFAULT_BUDGET_S, publishers=None, aliases=None, clock=None):
        reasons = (BUDGET_REASON, DIED_REASON, "extraction")
        super().__init__(budget_s, make_normalizer, (publishers, aliases), Rejected, reasons)
        self.publishers, self.aliases = publishers, aliases
        self.clock = clock or (lambda: int(time.time() * 1000))

    def normalize(self, raw: dict) -> dict:
        """``Normalizer.normalize`` under the budget. The RawItem's times are fixed here, not by the child's clock."""
        if not raw.get("fetched_at"):
            raw = dict(raw, fetched_at=self.clock())
        return self.call("normalize", raw)

    def extract(self, body: bytes, **kwargs) -> dict:
        """``Normalizer.extract`` under the budget (``newsroom extract``)."""
        return self.call("extract", body, **kwargs)


def take_worker(budget_s: float, publishers=None, aliases=None, clock=None) -> NormalizeWorker:
    """A NormalizeWorker for one DoFn instance's exclusive use: an idle one of the same budget, registry and alias
    table when this process has one (its child already started and warm), else a new one. Why: Beam's local runner
    (BundleBasedDirectRunner) sets a DoFn up and tears it down around every bundle, and a child's start (fork, the
    Normalizer built and warmed up: ~3 s of CPU, up to ~15 s on a busy machine) per bundle set the local stories
    job's rate (docs/operations.md, the soak). Give it back with :func:`give_back`."""
    key = (float(budget_s), publishers, aliases)
    with _LOCK:
        worker = next((w for w in _IDLE if (w.budget_s, w.publishers, w.aliases) == key), None)
        if worker is not None:
            _IDLE.remove(worker)
    if worker is None:
        return NormalizeWorker(budget_s, publishers, aliases, clock=clock)
    worker.clock = clock or worker.clock
    return worker


def give_back(worker: NormalizeWorker) -> None:
    """Keep ``worker`` (and its child) for the next :func:`take_worker` of this process; beyond :data:`IDLE_CAP`
    idle ones, the oldest is closed."""
    with _LOCK:
        _IDLE.append(worker)
        extra = _IDLE[:-IDLE_CAP] if len(_IDLE) > IDLE_CAP else []
        del _IDLE[: len(extra)]
    for w in extra:
        w.close()
