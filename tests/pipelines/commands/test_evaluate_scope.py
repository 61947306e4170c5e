"""`newsroom evaluate --scope run` (only the articles a date-range run placed) and the per-window scores (day,
week) printed beside the whole-stream ones."""

from __future__ import annotations

import json

from pipelines.cli import main as newsroom
from tests.pipelines.commands.test_export_diff import write


def files(tmp_path):
    """Gold: story g1 runs over two days (d1, d2), g2 on day 3; the prediction splits g1 at the day boundary and
    covers days 2 and 3 only for a second run."""
    days = {"a": "2026-05-01T10:00:00Z", "b": "2026-05-01T11:00:00Z", "c": "2026-05-02T10:00:00Z"}
    days |= {"d": "2026-05-02T11:00:00Z", "e": "2026-05-03T10:00:00Z", "f": "2026-05-03T11:00:00Z"}
    story = {"a": "g1", "b": "g1", "c": "g1", "d": "g1", "e": "g2", "f": "g2"}
    write(tmp_path / "gold.jsonl", [{"id": a, "story_id": story[a], "published_at": t} for a, t in days.items()])
    split = {"a": 1, "b": 1, "c": 2, "d": 2, "e": 3, "f": 3}
    write(tmp_path / "all" / "assignments.jsonl", [{"article_id": a, "story_id": s} for a, s in split.items()])
    write(tmp_path / "range" / "assignments.jsonl", [{"article_id": a, "story_id": 3} for a in "ef"])
    return tmp_path / "gold.jsonl"


def test_windows_are_scored_apart_from_the_whole_stream(tmp_path, capsys):
    gold = files(tmp_path)
    argv = ["evaluate", f"--gold={gold}", f"--pred={tmp_path / 'all' / 'assignments.jsonl'}", "--no-html"]
    assert newsroom([*argv, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["overall"]["b3_recall"] < 0.9  # g1 split in two over the whole stream
    assert r["windows"]["day"]["windows"] == 3 and r["windows"]["day"]["b3_recall"] == 1.0  # each day whole
    assert r["windows"]["week"]["windows"] == 1 and r["windows"]["week"]["pair_recall"] == r["overall"]["pair_recall"]
    assert newsroom(argv) == 0
    out = capsys.readouterr().out
    assert "whole stream" in out and "mean/day" in out and "mean/week" in out and "not comparable" in out


def test_scope_run_scores_only_what_the_run_covered(tmp_path, capsys):
    gold = files(tmp_path)
    argv = ["evaluate", f"--gold={gold}", f"--pred={tmp_path / 'range' / 'assignments.jsonl'}", "--no-html"]
    assert newsroom(argv) == 2  # the default scope: 2 of 6 gold articles placed, refused
    err = capsys.readouterr().err
    assert "have a prediction" in err and "a run over part of them" in err and "--scope run" in err  # the way out
    assert newsroom([*argv, "--scope", "run", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["overall"]["articles"] == 2 and r["overall"]["b3_f1"] == 1.0 and r["overall"]["missing"] == 0
    assert r["scope"] == {"scope": "run", "scored": 2, "outside": 4}
    assert newsroom([*argv, "--scope", "run"]) == 0
    assert "4 outside the run not scored" in capsys.readouterr().out
    write(tmp_path / "none" / "assignments.jsonl", [{"article_id": "zz", "story_id": 1}])
    argv[2] = f"--pred={tmp_path / 'none' / 'assignments.jsonl'}"
    assert newsroom([*argv, "--scope", "run"]) == 2
    assert "--scope run: none of the 6 gold articles" in capsys.readouterr().err
