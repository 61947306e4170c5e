"""The cross-language linker scores a pair the same in every process: its entity norms once summed a set of strings
in the set's order, which Python's per-process string hashing changes, so LINK scores differed in their last bits
between two runs of one backfill (and a byte-for-byte comparison of two runs failed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import math
import numpy as np
from transforms.stories.links.links import StoryLinker
rng = np.random.default_rng(0)
keys = [f"entity-{i}" for i in range(40)]
idf = {k: float(rng.uniform(0.1, 9.0)) for k in keys}
ea = [set(rng.choice(keys, 25, replace=False).tolist()) for _ in range(3)]
eb = [set(rng.choice(keys, 25, replace=False).tolist()) for _ in range(3)]
va, vb = rng.normal(size=(3, 8)), rng.normal(size=(3, 8))
print(repr(StoryLinker()._score_matrix([None] * 3, [None] * 3, va, vb, ea, eb, idf).tolist()))
"""


def test_link_scores_do_not_depend_on_the_process_string_hashing():
    outs = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT)}
        run = subprocess.run(
            [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
        )
        assert run.returncode == 0, run.stderr
        outs.add(run.stdout)
    assert len(outs) == 1, f"{len(outs)} different score matrices over 6 hash seeds"
