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
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

CYCLE_THRESHOLDS = (20_000, 50, 50)

_lock = threading.Lock()
_inside = 0
_saved: tuple[int, ...] = ()


def space_worker_collections(thresholds: tuple[int, int, int] = CYCLE_THRESHOLDS) -> None:
    """Run this process's collector at ``thresholds`` between the rank cycles as well (a ranking worker's DoFn setup;
    module docstring). A process-wide setting: a cycle's :func:`spaced_collections` then finds and restores it."""
    gc.set_threshold(*thresholds)


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
