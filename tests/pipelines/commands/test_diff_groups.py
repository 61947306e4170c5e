"""`newsroom diff` compares the runs' cross-language groups (``group_id``) too: in a 10-minute `newsroom run`
against `backfill --from_store` every story was unchanged in every language, yet the live system had linked an
en story with an es story that the backfill left apart; evaluate's all-languages row (links on) showed the split
while the diff said everything was unchanged."""

from __future__ import annotations

import json

from pipelines.cli import main as newsroom
from tests.pipelines.commands.test_export_diff import write


def runs(tmp_path):
    """A links en story 1 with es story 2 (group 1); B holds the same stories, unlinked; story 3 alone in both."""
    a = [("a", 1, "en", 1), ("b", 1, "en", 1), ("c", 2, "es", 1), ("d", 3, "en", 3)]
    b = [("a", 11, "en", 11), ("b", 11, "en", 11), ("c", 12, "es", 12), ("d", 13, "en", 13)]
    for name, rows in (("a", a), ("b", b)):
        keys = ("article_id", "story_id", "language", "group_id")
        write(tmp_path / name / "assignments.jsonl", [dict(zip(keys, r, strict=True)) for r in rows])
        write(tmp_path / name / "stories.jsonl", [{"story_id": r[1], "titles": {r[0]: f"<{r[0]}>"}} for r in rows])
    return tmp_path / "a", tmp_path / "b"


def test_diff_counts_and_lists_the_groups_linked_otherwise(tmp_path, capsys):
    a, b = runs(tmp_path)
    page = tmp_path / "diff.html"
    assert newsroom(["diff", str(a), str(b), "--json", "--no-html"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["counts"]["unchanged"] == 3  # every story the same, per language
    assert d["groups"]["counts"] == {"groups_a": 2, "groups_b": 3, "unchanged": 1, "changed": 1}
    (change,) = d["groups"]["changes"]
    assert change["group_id"] == 1 and [p["group_id"] for p in change["parts"]] == [11, 12]
    assert newsroom(["diff", str(a), str(b), f"--html={page}"]) == 0
    out = capsys.readouterr().out
    assert "cross-language groups: A 2, B 3, unchanged 1, linked otherwise 1" in out
    assert "A group 1: en story 1 (2) '<a>' + es story 2 (1) '<c>'" in out
    assert "-> B group 11: en story 11 (2) '<a>'" in out and "-> B group 12: es story 12 (1) '<c>'" in out
    text = page.read_text()
    assert "cross-language groups" in text and "&lt;c&gt;" in text and "<c>" not in text


def test_runs_without_groups_compare_stories_only(tmp_path, capsys):
    write(tmp_path / "a" / "assignments.jsonl", [{"article_id": "x", "story_id": 1, "language": "en"}])
    write(tmp_path / "b" / "assignments.jsonl", [{"article_id": "x", "story_id": 2, "language": "en"}])
    assert newsroom(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json", "--no-html"]) == 0
    assert json.loads(capsys.readouterr().out)["groups"] is None
