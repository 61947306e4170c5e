"""``newsroom evaluate`` scores storylines when the gold file has a storyline label (pipelines/commands/
evaluate_storylines.py): article-level B-cubed / pairwise, and pairwise over the pairs of different gold events."""

from __future__ import annotations

import argparse
import json

import pytest

from pipelines.commands import evaluate as ev

# two subjects: mission (events m1, m2: m2's reports spell the label differently) and trial (event t1)
GOLD = [
    ("a1", "m1", "Artemis"),
    ("a2", "m1", "Artemis"),
    ("a3", "m2", "Artemis II"),
    ("a4", "m2", "Artemis"),
    ("a5", "t1", "Trial"),
]
# predicted: m1 and m2 are two stories of one storyline; t1 a story wrongly put in that storyline too
STORY = {"a1": 1, "a2": 1, "a3": 2, "a4": 2, "a5": 3}
STORYLINES = [{"storyline_id": 100, "stories": [1, 2, 3]}]


def _files(tmp_path, with_label=True, storylines=STORYLINES):
    gold, pred = tmp_path / "gold.jsonl", tmp_path / "assignments.jsonl"
    gold.write_text(
        "".join(
            json.dumps({"id": a, "story_id": e, "language": "en", **({"topic": t} if with_label else {})}) + "\n"
            for a, e, t in GOLD
        )
    )
    pred.write_text("".join(json.dumps({"article_id": a, "story_id": s}) + "\n" for a, s in STORY.items()))
    (tmp_path / "storylines.jsonl").write_text("".join(json.dumps(r) + "\n" for r in storylines))
    return str(gold), str(pred)


def _run(argv, capsys):
    p = argparse.ArgumentParser()
    ev.add_arguments(p)
    assert ev.main(p.parse_args(argv + ["--no-html", "--json"])) == 0
    return json.loads(capsys.readouterr().out)


def test_storylines_are_scored_against_the_label_over_pairs_of_different_events(tmp_path, capsys):
    gold, pred = _files(tmp_path)
    s = _run(["--gold", gold, "--pred", pred], capsys)["storylines"]
    x = s["cross_event"]
    # cross-event pairs: gold (m1 x m2) = 4; predicted all pairs of different events = 4 + 2 + 2 = 8, true 4
    assert (x["gold_pairs"], x["pred_pairs"], x["true_pairs"]) == (4, 8, 4)
    assert x["pair_precision"] == pytest.approx(0.5) and x["pair_recall"] == pytest.approx(1.0)
    assert s["gold_storylines"] == 2  # m2's two spellings count as one label (its most frequent, then smallest)
    assert s["all"]["pair_precision"] == pytest.approx(6 / 10) and s["all"]["pair_recall"] == 1.0


def test_a_storyline_split_from_its_subject_costs_recall_not_precision(tmp_path, capsys):
    gold, pred = _files(
        tmp_path,
        storylines=[
            {"storyline_id": 100, "stories": [1]},
            {"storyline_id": 200, "stories": [2]},
            {"storyline_id": 300, "stories": [3]},
        ],
    )
    x = _run(["--gold", gold, "--pred", pred], capsys)["storylines"]["cross_event"]
    assert x["pred_pairs"] == 0 and x["pair_precision"] is None and x["pair_recall"] == 0.0


def test_no_label_no_storyline_scores(tmp_path, capsys):
    gold, pred = _files(tmp_path, with_label=False)
    assert _run(["--gold", gold, "--pred", pred], capsys)["storylines"] is None


def test_the_text_report_prints_the_storyline_lines(tmp_path, capsys):
    gold, pred = _files(tmp_path)
    p = argparse.ArgumentParser()
    ev.add_arguments(p)
    assert ev.main(p.parse_args(["--gold", gold, "--pred", pred, "--no-html"])) == 0
    out = capsys.readouterr().out
    assert "storylines (gold label 'topic'" in out and "cross-event: pair P 0.500 R 1.000" in out


def test_evaluate_reads_its_gold_and_predictions_once_each(tmp_path, capsys, monkeypatch):
    """The report, its windows, its storyline part and its HTML page share one reading of each file (a gold file of
    hundreds of thousands of rows was read five times, the predictions four)."""
    from pipelines.commands import evaluate_scores

    gold, pred = _files(tmp_path)
    reads = []
    real = evaluate_scores.read_jsonl
    monkeypatch.setattr(evaluate_scores, "read_jsonl", lambda path, *a: reads.append(path) or real(path, *a))
    p = argparse.ArgumentParser()
    ev.add_arguments(p)
    html = tmp_path / "e.html"
    assert ev.main(p.parse_args(["--gold", gold, "--pred", pred, "--html", str(html), "--json"])) == 0
    assert json.loads(capsys.readouterr().out)["storylines"]["gold_storylines"] == 2
    assert "<table" in html.read_text(encoding="utf-8")
    assert sorted(reads) == sorted([gold, pred, str(tmp_path / "storylines.jsonl")])


def test_evaluate_takes_a_runs_folder_for_either_file(tmp_path, capsys):
    """As diff does: a backfill's output or an export folder stands for its assignments.jsonl, and the HTML page
    goes beside that file."""
    gold, pred = _files(tmp_path)
    by_file = _run(["--gold", gold, "--pred", pred], capsys)
    by_folder = _run(["--gold", gold, "--pred", str(tmp_path)], capsys)
    assert by_folder["overall"] == by_file["overall"] and by_folder["storylines"] == by_file["storylines"]
    p = argparse.ArgumentParser()
    ev.add_arguments(p)
    assert ev.main(p.parse_args(["--gold", str(tmp_path), "--pred", str(tmp_path)])) == 0  # a run against itself
    assert (tmp_path / "evaluate.html").exists()
