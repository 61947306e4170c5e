"""The backfill does not hold every output of its run at once where it need not: the writer's bounded tick emits each
step's outputs before it decides the next step (it held all of them in one list until the end), and the result fold
reads the run's packed slim outputs one at a time (the ToList of decoded outputs was O(history), ~10 KB an article
in benchmarks/month_sim.py)."""

from __future__ import annotations

import json
import tracemalloc
from types import SimpleNamespace

from transforms.common import NEW_STORY


class _Out:
    def __init__(self, t: int):
        self.change = {"kind": NEW_STORY, "article_id": f"a{t}"}

    def to_dict(self) -> dict:
        return {"change": self.change}


class _Writer:
    """Queued articles at times 1..n; ``advance(bound)`` decides those up to ``bound`` (one output each)."""

    def __init__(self, n: int):
        self.times, self.done, self.calls = list(range(1, n + 1)), 0, []
        self.state = SimpleNamespace(pending=list(self.times))

    def queued(self):
        return [_Queued(t) for t in self.times if t > self.done]

    def advance(self, bound: int, counted=None) -> list:
        self.calls.append(bound)
        made = [_Out(t) for t in self.times if self.done < t <= bound]
        self.done = max(self.done, bound)
        return made


class _Queued:
    def __init__(self, t: int):
        self.first_seen_at = t


def test_the_bounded_tick_emits_each_step_before_it_decides_the_next(tmp_path, monkeypatch):
    from transforms.stories.backfill import checkpoint as ckmod
    from transforms.stories.beam.writer import ClusterStoriesFn

    monkeypatch.setattr(ckmod, "STEP", 3)
    fn = ClusterStoriesFn(None, bounded=str(tmp_path))
    fn.setup()
    fn._checkpoints["en"] = (ckmod.WriterCheckpoint(str(tmp_path), "en", every_s=0.0), [], set())
    w = _Writer(10)
    outs = fn._advance_checkpointed("en", w, 100, None)
    first = [next(outs) for _ in range(3)]  # the first step's three outputs
    assert [o["change"]["article_id"] for o in first] == ["a1", "a2", "a3"]
    assert len(w.calls) == 1  # and no later step decided yet
    rest = list(outs)
    assert len(rest) == 7 and len(w.calls) == 4
    assert ckmod.WriterCheckpoint(str(tmp_path), "en").load()[1] == first + rest  # each checkpointed once, in order


def _slim(i: int, blob: str) -> dict:
    change = {"language": "en", "seq": i, "kind": NEW_STORY, "story_id": i, "other_story_id": None}
    change.update(article_id=f"a{i}", article_ids=None, at=1_000 * i)
    member = {"link_vector": None, "entities": [], "is_copy": False, "title": f"t{i}", "at": 1_000 * i}
    explain = {"language": "en", "seq": i, "why": blob}
    return {"change": change, "members": {f"a{i}": member}, "model": "hash", "storyline": None, "explain": explain}


def test_the_result_fold_decodes_the_packed_outputs_one_at_a_time(tmp_path):
    import pickle

    from transforms.stories.beam.backfill import write_results

    n, size = 200, 50_000  # 10 MB of explanations
    packed = [pickle.dumps(_slim(i, chr(65 + i % 26) * size)) for i in range(n)]
    order = [(0, i, f"a{i}") for i in range(n)]
    tracemalloc.start()
    try:
        summary = write_results(packed, order, 1, str(tmp_path), False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert summary["counts"]["assigned"] == n
    rows = [json.loads(line) for line in open(tmp_path / "explanations.jsonl", encoding="utf-8")]
    assert [r["seq"] for r in rows] == list(range(n)) and rows[7]["why"] == "H" * size
    assert peak < 20 * size + 2_000_000, peak  # a few outputs decoded at a time, never the run's 10 MB
