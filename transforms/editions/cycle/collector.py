"""CPython's cyclic garbage collector during a rank cycle: young collections spaced out, full ones not triggered.

A cycle allocates ~2 M short-lived containers (cards, entries, pages, tuples) and keeps a few hundred thousand in
the edition caches until the next cycle replaces them. At the default thresholds (700, 10, 10) the collector runs a
young collection every 700 allocations, scanning objects that would have died by reference counting a moment later,
and the survivors promoted each cycle (the caches) trigger a full collection about once a cycle, which traverses
every tracked object of the process. Measured with benchmarks/rank_bench.py's world (100,000 stories, 73 editions,
cycles alternating in one process): 0.6-1.2 s of collector time per cycle at the defaults, 0.07-0.12 s at
:data:`CYCLE_THRESHOLDS`, the cycle 15-25 % shorter.

Between cycles too (:func:`space_worker_collections`, called by RankEditionsFn.setup): restored to the defaults at a
cycle's end, the collector ran at once (the counts a cycle leaves are far over 700 and 10) over everything the cycle
had made that was still alive, mostly its documents on their way to the caller, which die a moment later, and every
few cycles a full collection followed over the caches of every edition. Measured with benchmarks/rank_bench.py's
world (300,000 stories, 73 editions, the world frozen): 0.18-0.27 s of collector time per steady cycle and a full
collection (0.4-0.6 s more) every few cycles at the defaults between cycles, 0.05 s and none at these thresholds.

Nothing is left uncollected: reference counting frees what the cycle drops (the documents and caches hold no
reference cycles), and the collector still runs, less often, during the cycle and at the process's own thresholds
between cycles. The setting is process-wide, so it is counted: the first cycle to enter sets it, the last to leave
restores what was there (rankers on several threads of one worker).

Survivors parked (a ranking worker only: :func:`space_worker_collections` turns it on). Each cycle leaves ~200,000
new containers alive (the edition caches' new entries, the shared documents of coverage.py, kept.py and
storyline_pages.py), while the ones they replace die by reference counting. The collector's young count is net
(allocations less deallocations), so it stays low while the young generation's list grows with survivors, and the
young collection that finally comes traverses all of them: 0.1-0.3 s in most cycles and a 0.5-0.6 s middle
collection every few (benchmarks/rank_compare.py prints the collector's CPU per cycle; 300,000 stories, 73 editions,
10 cycles, 21:40 UTC 2026-12-07, loaded machine). A higher young threshold only delays that collection: at 100,000,
nine cycles collected nothing and the tenth took 0.49 s. So the last cycle to leave parks everything alive in the
permanent generation (``gc.freeze``): no collection traverses it again, and reference counting still frees each
object when it is dropped. What parking could lose is cyclic garbage, which reference counting never frees and a
freeze takes with the living: the ranker makes none (tests/transforms/editions/test_collector.py checks it over a
busy world's cycles; the benchmark's ten cycles left 0 unreachable objects among 2.1 M), but a worker runs other
code, whose young cyclic garbage not yet collected at a park is parked too. So the first park collects in full
before it freezes (the garbage of the worker's start), and the parked objects are handed back (``gc.unfreeze``) and
collected in full once :data:`PARKED_FOR_S` has passed since the last time, or sooner once the process's resident
memory has grown by :data:`PARKED_GROWTH` since then (a leak is bounded by a quarter of the heap): 1.3-1.9 s for the
benchmark's 2.1 M objects, once an hour, where the collector took 0.15-0.3 s every minute. Where resident memory
cannot be read (no /proc), nothing is parked, and ``NEWSROOM_COLLECTOR_PARKING=off`` in a worker's environment turns
parking off (the collector then runs as before).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CYCLE_THRESHOLDS = (20_000, 50, 50)
PARKED_FOR_S = 3600.0  # the longest survivors stay parked before one full collection sees them (module docstring)
PARKED_GROWTH = 1.25  # ... or until resident memory is this multiple of what it was after the last full collection

PARKING_SWITCH = "NEWSROOM_COLLECTOR_PARKING"  # "off": a ranking worker parks nothing

LOG = logging.getLogger(__name__)
_STATM = Path("/proc/self/statm")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

_lock = threading.Lock()
_inside = 0
_saved: tuple[int, ...] = ()


def resident_bytes() -> int | None:
    """This process's resident memory (Linux /proc), or None where it cannot be read."""
    try:
        return int(_STATM.read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return None


class Parking:
    """When a ranking worker's survivors are parked and when they are handed back (module docstring). Off until
    :func:`space_worker_collections` turns it on."""

    def __init__(self) -> None:
        self.on = False
        self.since: float | None = None  # time.monotonic() of the last full collection (None: none yet)
        self.resident = 0  # resident bytes right after it

    def start(self) -> None:
        # fail closed: no memory to watch, nothing parked; an operator's switch (module docstring)
        self.on = resident_bytes() is not None and os.environ.get(PARKING_SWITCH, "on").strip().lower() != "off"
        self.since = None  # the first park collects in full first: the garbage of the worker's start is not parked

    def park(self) -> None:
        """At the last cycle's exit: everything alive into the permanent generation, or, when the time or the
        memory is up, everything handed back, collected in full and the survivors parked again."""
        resident = resident_bytes()
        if resident is None:
            self.on = False
            gc.unfreeze()
            return
        since = self.since
        if since is None or time.monotonic() - since >= PARKED_FOR_S or resident >= PARKED_GROWTH * self.resident:
            t = time.process_time()
            gc.unfreeze()
            freed = gc.collect()
            LOG.info(
                "collector: a full collection before parking (%s), %d unreachable freed, %.2f s CPU",
                "the first" if since is None else f"{time.monotonic() - since:.0f} s after the last",
                freed,
                time.process_time() - t,
            )
            self.since, self.resident = time.monotonic(), resident_bytes() or resident
        gc.freeze()


PARKING = Parking()


def stop_parking() -> None:
    """Park nothing more and hand back what is parked (a test's end: one test's objects are not kept from the
    collector in the next)."""
    with _lock:
        PARKING.on = False
        gc.unfreeze()


def space_worker_collections(thresholds: tuple[int, int, int] = CYCLE_THRESHOLDS) -> None:
    """Run this process's collector at ``thresholds`` between the rank cycles as well, and park each cycle's
    survivors (a ranking worker's DoFn setup; module docstring). A process-wide setting: a cycle's
    :func:`spaced_collections` then finds and restores it."""
    gc.set_threshold(*thresholds)
    with _lock:
        if not PARKING.on:
            PARKING.start()


@contextmanager
def spaced_collections(thresholds: tuple[int, int, int] = CYCLE_THRESHOLDS) -> Iterator[None]:
    """Run the block with the collector at ``thresholds`` (module docstring)."""
    global _inside, _saved
    with _lock:
        if _inside == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*thresholds)
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                gc.set_threshold(*_saved)
                if PARKING.on:
                    PARKING.park()
