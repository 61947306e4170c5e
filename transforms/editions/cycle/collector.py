"""CPython's cyclic garbage collector during a rank cycle: young collections spaced out, full ones not triggered.

A cycle allocates ~2 M short-lived containers (cards, entries, pages, tuples) and keeps a few hundred thousand in
the edition caches until the next cycle replaces them. At the default thresholds (700, 10, 10) the collector runs a
young collection every 700 allocations, scanning objects that would have died by reference counting a moment later,
and the survivors promoted each cycle (the caches) trigger a full collection about once a cycle, which traverses
every tracked object of the process. Measured with benchmarks/rank_bench.py's world (100,000 stories, 73 editions,
cycles alternating in one process): 0.6-1.2 s of collector time per cycle at the defaults, 0.07-0.12 s at
:data:`CYCLE_THRESHOLDS`, the cycle 15-25 % shorter.

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
