"""`newsroom explain` on a backfill's output: the backfill writes explanations.jsonl for every membership it writes;
a sample of them, re-scored with the writer's own scoring functions, matches the recorded scores and decisions;
replayed, they give assignments.jsonl; and the command prints a story and an article, or one error line."""

from __future__ import annotations

import json

import pytest

from pipelines.cli import main as cli_main
from pipelines.commands.explain import memberships
from tests.pipelines.test_backfill import backfill, read
from tests.pipelines.test_command_errors import assert_one_line_error, newsroom
from tests.transforms.stories.test_explanations import check_decision, check_merge
from transforms.stories.writer.cluster import calibration
from transforms.stories.writer.scoring import Scorer


def check_output(out) -> list[dict]:
    """The explanations of a backfill output agree with its assignments and re-score exactly (every 3rd decision,
    every repair)."""
    records = read(out / "explanations.jsonl")
    rows = read(out / "assignments.jsonl")
    assert memberships(records)[0] == {r["article_id"]: r["story_id"] for r in rows}
    models = json.loads((out / "manifest.json").read_text())["models"]
    scorers = {lang: Scorer(calibration(m, lang), None, lang) for lang, m in models.items()}
    decisions = [r for r in records if r["kind"] == "decision"]
    assert len(decisions) == len(rows)
    for r in decisions[::3]:
        check_decision(r, scorers[r["language"]])
    for r in records:
        if r["kind"] == "merge":
            check_merge(r, scorers[r["language"]])
        elif r["kind"] == "split":
            assert r["score"] < r["bar"]
    return records


def dev_slice(shared_data, tmp_path, name: str, lines: int):
    inp = tmp_path / name
    inp.write_text("".join((shared_data / "stories" / name).read_text().splitlines(True)[:lines]))
    out = tmp_path / "out"
    assert backfill(inp, out) == 0
    return out


@pytest.fixture(scope="module")
def basil_out(shared_data, tmp_path_factory):
    """A backfill (hash embedder) of the first 80 articles of basil-dev, shared by the tests of this module."""
    return dev_slice(shared_data, tmp_path_factory.mktemp("basil"), "basil-dev.jsonl", 80)


def test_backfill_of_a_dev_file_explains_every_membership(basil_out):
    records = check_output(basil_out)
    assert {"join", "new"} <= {r.get("decision") for r in records}


@pytest.mark.slow
def test_backfill_of_a_headline_file_explains_its_learned_merges(shared_data, tmp_path):
    """uci-dev (headlines only): repairs merge on the learned pair score; those records are re-scored too (the fast
    test of the same check: tests/transforms/stories/test_explanations.py)."""
    records = check_output(dev_slice(shared_data, tmp_path, "uci-dev.jsonl", 400))
    assert any(r["kind"] == "merge" and r["detail"]["criterion"] == "learned pair score" for r in records)


def test_explain_prints_a_story_and_an_article(basil_out, capsys):
    out = basil_out
    story = max(read(out / "stories.jsonl"), key=lambda s: s["size"])
    capsys.readouterr()
    assert cli_main(["explain", "--output", str(out), "--story", str(story["story_id"])]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"story {story['story_id']} (en): {story['size']} articles")
    assert all(a in text for a in story["articles"]) and "founded story" in text
    aid = story["articles"][-1]
    assert cli_main(["explain", "--output", str(out), "--article", aid]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"article {aid} (en): ") and "arrival: " in text
    assert text.rstrip().endswith(f"now in story {story['story_id']}")


def test_explain_errors_are_one_line(tmp_path):
    res = newsroom("explain", "--output", tmp_path / "nope", "--story", "1")
    assert res.returncode == 2
    assert_one_line_error(res, "--output", "no such folder")
    res = newsroom("explain", "--output", tmp_path, "--article", "a1")
    assert_one_line_error(res, "no explanations.jsonl")
    (tmp_path / "explanations.jsonl").write_text('{"kind": "decision"}\n')
    assert_one_line_error(newsroom("explain", "--output", tmp_path, "--story", "1"), "explanations.jsonl:1:")
    (tmp_path / "explanations.jsonl").write_text('{"kind": "decision", "seq": 1, "language": "en"}\n')
    assert_one_line_error(newsroom("explain", "--output", tmp_path, "--story", "1"), "lacks 'article_id'")
    (tmp_path / "explanations.jsonl").write_text("")
    assert_one_line_error(newsroom("explain", "--output", tmp_path, "--story", "7"), "--story 7: no such story")


def test_explain_into_a_pipe_closed_early_is_no_traceback(tmp_path):
    """`newsroom explain --story ID | head`: the reader stops early; the command ends quietly (a large story's
    listing is longer than the pipe holds)."""
    import os
    import subprocess
    import sys

    from tests.pipelines.test_command_errors import ROOT

    rows = [
        {"kind": "decision", "language": "en", "seq": i + 1, "at": i, "article_id": f"a{i}", "title": "t" * 100}
        | {"source": "s", "story_id": 7, "decision": "new", "copy_of": None, "has_body": True, "bar": 0.8}
        | {"weights": {"entities": 1.0, "lexical": 0.5}, "considered": 0, "candidates": []}
        for i in range(3000)
    ]
    (tmp_path / "explanations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "explain", "--output", str(tmp_path), "--story", "7"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout.readline().startswith("story 7 (en): 3000 articles")
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in err, err


def test_explain_story_names_the_stories_it_is_linked_with(tmp_path, capsys):
    """The evaluate report's 'all languages' section keys stories by link group: the story view says which stories
    of other languages it is linked with (stories.jsonl), so each can be explained in turn."""
    rows = [
        {"kind": "decision", "language": lang, "seq": 1, "at": 0, "article_id": aid, "title": "t", "source": "s"}
        | {"story_id": sid, "decision": "new", "copy_of": None, "has_body": True, "bar": 0.8, "candidates": []}
        | {"weights": {"entities": 1.0, "lexical": 0.5}, "considered": 0}
        for lang, aid, sid in (("en", "a", 7), ("es", "b", 9))
    ]
    (tmp_path / "explanations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stories = [{"story_id": 7, "links": [9], "group_id": 7}, {"story_id": 9, "links": [7], "group_id": 7}]
    (tmp_path / "stories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in stories))
    assert cli_main(["explain", "--output", str(tmp_path), "--story", "9"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[:2] == ["story 9 (es): 1 articles", "  linked across languages (group 7) with story 7"]
