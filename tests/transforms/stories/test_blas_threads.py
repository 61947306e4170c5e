"""The writer's numpy linear algebra runs on one BLAS thread (transforms/stories/writer/blas.py): its matrices are small,
and a second OpenBLAS thread only spins beside the backfill's encoder process. Scoped to the writer: the setting
around it is restored."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from tests.transforms.stories.synth import DIM, MIN, T0, TEST_CONFIG, article
from transforms.stories.writer.cluster import StoryClusterer


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_the_writer_decides_on_one_blas_thread_and_restores_the_setting():
    rng = np.random.default_rng(3)
    w = StoryClusterer("en", model="m", config=TEST_CONFIG)
    seen: list[list[int]] = []
    decide = w._decide
    w._decide = lambda f: (seen.append(blas_threads()), decide(f))[1]
    for i in range(4):
        w.add(article(f"a{i}", rng.standard_normal(DIM), T0 + i * MIN, terms=("quake",), source=f"p{i}"))
    with threadpool_limits(limits=2, user_api="blas"):  # as numpy starts on a 2-core machine
        if not blas_threads():
            return  # no BLAS library threadpoolctl can see: nothing to limit
        w.advance(T0 + 10 * MIN)
        assert blas_threads() == [2] * len(blas_threads())  # restored after the writer's work
    assert len(seen) == 4 and all(n == [1] * len(n) for n in seen), seen


def test_a_blas_loaded_after_the_first_scope_is_limited_too():
    """scipy brings its own OpenBLAS; loaded after the writer's first tick, it must be limited in the next one."""
    import json
    import subprocess
    import sys

    code = """
import numpy
from threadpoolctl import threadpool_info, threadpool_limits
from transforms.stories.writer.blas import one_blas_thread
def blas(): return sorted((l["filepath"], l["num_threads"]) for l in threadpool_info() if l["user_api"] == "blas")
with threadpool_limits(limits=2, user_api="blas"):
    with one_blas_thread():
        pass
    import scipy.linalg
    before = len(blas())
    with one_blas_thread():
        inside = blas()
import json
print(json.dumps([before, [n for _, n in inside]]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    n_libraries, threads = json.loads(out)
    assert len(threads) == n_libraries >= 1
    assert threads == [1] * n_libraries, threads
