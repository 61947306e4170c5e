"""The simulated-history generator (benchmarks/history_gen.py) and a tiny month_sim run (benchmarks/month_sim.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from benchmarks.history_gen import LANGUAGES, History

ROOT = Path(__file__).resolve().parents[2]


def test_history_is_deterministic_time_ordered_and_has_every_feature():
    a = list(History(days=4, per_day=400, seed=3).articles())
    b = list(History(days=4, per_day=400, seed=3).articles())
    assert a == b
    assert [r["published_at"] for r in a] == sorted(r["published_at"] for r in a)
    assert a[-1]["published_at"] < "2026-01-05T00:00:00Z"
    assert {r["language"] for r in a} == set(LANGUAGES)
    assert len({r["id"] for r in a}) == len(a)
    sizes = Counter(r["story_id"] for r in a)
    assert max(sizes.values()) >= 10 * sorted(sizes.values())[len(sizes) // 2]  # a long tail
    copies = defaultdict(set)
    for r in a:
        copies[(r["title"], r["text"])].add(r["publisher"])
    assert any(len(p) > 1 for p in copies.values())  # wire copies: same text, another publisher


def test_follow_ups_days_later_share_the_subjects_entities():
    h = History(days=6, per_day=300, seed=1)
    list(h.articles())
    assert h.counts.follow_ups > 0 and h.counts.merges + h.counts.splits > 0
    by_entities = defaultdict(list)
    for s in h.subjects:
        by_entities[tuple(s.entities)].append(s.born_s)
    spans = [max(t) - min(t) for t in by_entities.values() if len(t) > 1]
    assert spans and max(spans) >= 86_400  # a storyline: the same entities a day or more apart


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError):
        History(days=0, per_day=10)


@pytest.mark.slow
def test_a_tiny_month_sim_prints_a_row_per_day_and_loses_nothing(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "month_sim.py"), "--days=2", "--per_day=15", "--editions=us-en"]
        + ["--no_origin", f"--dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    ).stdout
    m = re.search(r"accounting: generated (\d+), assigned once (\d+), lost 0, twice 0", out)
    assert m and m.group(1) == m.group(2) and int(m.group(1)) > 0, out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s*[12] +\d", line)]
    assert [r[0] for r in rows] == ["1", "2"], out
    assert "writer us/article" in out and "rank ms/cycle" in out and "day 2 / day 1" in out
