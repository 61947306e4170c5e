"""Beam state pickled before the modules moved into rooms still loads (transforms/moved.py).

The fixture (data/beam_state_55daf5d.json, made on 55daf5d by data/make_beam_state_55daf5d.py) holds one value per
stateful DoFn whose state keeps a product class, encoded by Beam's PickleCoder as that build's workers wrote it:
the ranker's EditionMemory (with its Smoothing), burst detection's CoverageMemory, the Breaking Ledger and the
storyline stage's StorylineWriter. Each must decode into today's classes (the same class objects, so the job's
code works on them) and keep its content. A run in a fresh interpreter proves no earlier import made it work.
"""

from __future__ import annotations

import base64
import json
import pickletools
import subprocess
import sys
from pathlib import Path

from apache_beam.coders import PickleCoder

FIXTURE = Path(__file__).parent / "data" / "beam_state_55daf5d.json"


def _state() -> dict:
    return {k: base64.b64decode(v) for k, v in json.loads(FIXTURE.read_text()).items()}


def _modules(raw: bytes) -> set[str]:
    """The module paths a pickle names (its GLOBAL / STACK_GLOBAL opcodes' first strings)."""
    names, strings = set(), []
    for op, arg, _ in pickletools.genops(raw):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            names.add(strings[-2])
        elif op.name == "GLOBAL":
            names.add(arg.split(" ")[0])
    return {n for n in names if n.startswith("transforms.")}


def test_the_fixture_names_the_old_paths():
    # the point of the fixture: it was pickled where the classes lived before the rooms
    named = set().union(*(_modules(raw) for raw in _state().values()))
    assert {"transforms.editions.cycle", "transforms.editions.scoring", "transforms.editions.coverage"} <= named
    assert {"transforms.editions.breaking", "transforms.stories.storyline"} <= named


def test_state_pickled_at_the_old_paths_loads_into_todays_classes():
    from transforms.editions.bursts import CoverageMemory
    from transforms.editions.cycle import EditionMemory
    from transforms.editions.cycle.scoring import Smoothing
    from transforms.editions.publish import Ledger

    coder = PickleCoder()
    state = {k: coder.decode(raw) for k, raw in _state().items()}
    memory = state["RankEditionsFn.MEMORY"]
    assert type(memory) is EditionMemory and type(memory.smoothing) is Smoothing
    assert memory.prev_pages["top"] and memory.coverage_versions and memory.last_cycle > 0
    coverage, last = state["RequestPollsFn.MEMORY"]
    assert type(coverage) is CoverageMemory and last == {7: 123}
    ledger = state["AnnounceBreakingFn.LEDGER"]
    assert type(ledger) is Ledger and ledger.announced
    writer = state["StorylinesFn.WRITER"]
    assert type(writer).__name__ == "StorylineWriter" and type(writer).__module__.startswith("transforms.stories")


def test_a_fresh_interpreter_loads_the_state_without_importing_anything_first():
    code = (
        "import base64, json, pickle, sys\n"
        f"d = json.load(open({str(FIXTURE)!r}))\n"
        "vals = [pickle.loads(base64.b64decode(v)) for v in d.values()]\n"
        "print(sorted(type(v).__module__ for v in vals))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=FIXTURE.parents[3])
    assert out.returncode == 0, out.stderr
    assert "transforms.editions.cycle.context" in out.stdout
