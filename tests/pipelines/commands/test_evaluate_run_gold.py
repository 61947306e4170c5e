"""`newsroom evaluate --gold RUN/assignments.jsonl`: another run's assignments as the reference. Its cross-language
groups are its events (a labelled file's ``story_id`` spans languages; a run's ``group_id`` does), and its times
(an export's ``decided_at``, a backfill's explanations) give the per-window scores."""

from __future__ import annotations

import json

from pipelines.cli import main as newsroom
from tests.pipelines.commands.test_export_diff import write

DAY = 86_400_000
T0 = 1_796_515_200_000  # 2026-12-06T00:00Z


def run_rows():
    """An en story linked to an es story (one group), and an en singleton."""
    return [
        {"article_id": "a", "story_id": 1, "language": "en", "group_id": 1},
        {"article_id": "b", "story_id": 1, "language": "en", "group_id": 1},
        {"article_id": "c", "story_id": 2, "language": "es", "group_id": 1},
        {"article_id": "d", "story_id": 3, "language": "en", "group_id": 3},
    ]


def test_a_run_scored_against_itself_is_perfect_with_links_on_and_off(tmp_path, capsys):
    write(tmp_path / "prod" / "assignments.jsonl", run_rows())
    path = str(tmp_path / "prod" / "assignments.jsonl")
    for links in ([], ["--no-links"]):
        assert newsroom(["evaluate", f"--gold={path}", f"--pred={path}", "--json", *links]) == 0
        r = json.loads(capsys.readouterr().out)
        for s in [r["overall"], *r["languages"].values()]:
            assert s["b3_f1"] == 1.0 and s["pair_f1"] == 1.0, (links, s)
    html = (tmp_path / "prod" / "evaluate.html").read_text()
    assert "Worst mixed" in html and "<details>" not in html  # no story listed as split or mixed, in any section


def test_an_exports_times_give_the_windows(tmp_path, capsys):
    write(tmp_path / "prod" / "assignments.jsonl", run_rows())
    at = {"a": T0 + 3_600_000, "b": T0 + DAY + 3_600_000, "c": T0 + 7_200_000, "d": T0 + DAY}
    stories = [
        {"story_id": 1, "decided_at": {"a": at["a"], "b": at["b"]}, "titles": {"a": "A", "b": "B"}},
        {"story_id": 2, "decided_at": {"c": at["c"]}, "titles": {"c": "C"}},
        {"story_id": 3, "decided_at": {"d": at["d"]}, "titles": {"d": "D"}},
    ]
    write(tmp_path / "prod" / "stories.jsonl", stories)
    path = str(tmp_path / "prod" / "assignments.jsonl")
    assert newsroom(["evaluate", f"--gold={path}", f"--pred={path}", "--json", "--no-html"]) == 0
    w = json.loads(capsys.readouterr().out)["windows"]
    assert w["day"]["windows"] == 2 and w["day"]["articles"] == 4 and w["week"]["windows"] == 1
    assert newsroom(["evaluate", f"--gold={path}", f"--pred={path}", "--no-html"]) == 0
    out = capsys.readouterr().out
    assert "mean/day" in out and "decided_at" in out  # says where the windows' times came from


def test_the_help_says_a_runs_assignments_are_taken_as_gold(capsys):
    """`newsroom evaluate --help` was the only place a user looks that still said gold is a labelled file."""
    import pytest

    with pytest.raises(SystemExit):
        newsroom(["evaluate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "or a run's assignments.jsonl (a backfill's or an export's:" in out
    assert "written by `newsroom backfill` or `newsroom export assignments`" in out
