"""A backfill's untimed article (no published_at, no dateline) is decided at a stand-in clock from 2000-01-01 with
``time_known`` false in its explanation: `newsroom diff` prints its time as unknown, and `newsroom evaluate` with
that backfill as gold leaves it out of the per-window scores (a window in the year 2000 is not a day of the run)."""

from __future__ import annotations

import json

from pipelines.cli import main as newsroom
from tests.pipelines.commands.test_export_diff import write

STAND_IN = 946_684_800_000  # transforms/stories/vocabulary/features.py UNTIMED_EPOCH_MS
T1 = 1_796_119_200_000  # 2026-12-01T10:00Z


def backfill(folder, ids):
    """A backfill's output: an untimed u (the stand-in clock) and timed articles in one story each."""
    write(folder / "assignments.jsonl", [{"article_id": x, "story_id": i, "language": "en"} for i, x in enumerate(ids)])
    decisions = [
        {
            "kind": "decision",
            "article_id": x,
            "title": x.upper(),
            "at": STAND_IN if x == "u" else T1 + i,
            "time_known": x != "u",
            "seq": i,
        }
        for i, x in enumerate(ids)
    ]
    write(folder / "explanations.jsonl", decisions)


def test_diff_prints_an_untimed_articles_time_as_unknown(tmp_path, capsys):
    backfill(tmp_path / "a", ["u", "t"])
    backfill(tmp_path / "b", ["t"])
    assert newsroom(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--no-html"]) == 0
    out = capsys.readouterr().out
    assert "u A unknown time 'U'" in out and "2000-01-01" not in out


def test_evaluate_leaves_an_untimed_gold_article_out_of_the_windows(tmp_path, capsys):
    backfill(tmp_path / "a", ["u", "t", "s"])
    gold = str(tmp_path / "a" / "assignments.jsonl")
    assert newsroom(["evaluate", f"--gold={gold}", f"--pred={gold}", "--json", "--no-html"]) == 0
    w = json.loads(capsys.readouterr().out)["windows"]
    assert w["day"]["windows"] == 1 and w["day"]["articles"] == 2 and w["untimed"] == 1
    assert newsroom(["evaluate", f"--gold={gold}", f"--pred={gold}", "--no-html"]) == 0
    assert "1 gold articles without a time are in no window" in capsys.readouterr().out
