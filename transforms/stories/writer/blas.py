"""The story writer's numpy linear algebra runs on one BLAS thread.

Why: the writer's matrices are small (a repair's pair matrix and its eigendecomposition: tens to a few hundred
members; a story's centroid sums), so OpenBLAS's second thread buys nothing on them, while its threads spin for
work beside whatever else holds the cores: the backfill's encoder process (transforms/stories/embed/embed_process.py,
all cores) or another job. On the 2-core machine of the figures, a 3,000-headline writer pass
(benchmarks/backfill_throughput.py's "writer alone") ran at 22-40 articles/s with numpy's default two threads under
load and at 91/s with one; the outputs were byte-identical (OpenBLAS splits a product's output among its threads,
never one element's sum, so the thread count does not move a bit here). The local main job already sets
OPENBLAS_NUM_THREADS=1 for its whole process (devtools/run.py), so the streaming writer computed on one thread
before this; now the backfill's writer does too, whatever the environment.

Scoped to the writer's own work (:meth:`transforms.stories.writer.cluster.StoryClusterer.advance`), not the process: an
in-process encoder (the sequential backfill graph) keeps its threads. Only BLAS is limited (threadpoolctl's
``user_api="blas"``: numpy's OpenBLAS); torch's OpenMP pool is not touched.
"""

from __future__ import annotations

import contextlib
import sys

_CONTROLLER = None
_SCANNED_AT = -1  # len(sys.modules) when _CONTROLLER scanned the loaded libraries


def one_blas_thread():
    """A context manager: every loaded BLAS on one thread inside, the previous setting restored after.

    The scan of loaded libraries (about 1.5 ms) is kept while no module has been imported since: a BLAS loaded later
    (scipy ships its own OpenBLAS beside numpy's) comes with an import, and a controller made before it would leave
    that library on its default threads (the clean-venv CI failure of test_blas_threads).
    """
    global _CONTROLLER, _SCANNED_AT
    try:
        if _CONTROLLER is None or len(sys.modules) != _SCANNED_AT:
            from threadpoolctl import ThreadpoolController

            _CONTROLLER = ThreadpoolController()
            _SCANNED_AT = len(sys.modules)
        return _CONTROLLER.limit(limits=1, user_api="blas")
    except ImportError:  # threadpoolctl is a dependency (setup.py); without it the writer runs unlimited
        return contextlib.nullcontext()
