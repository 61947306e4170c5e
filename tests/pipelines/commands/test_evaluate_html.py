"""``newsroom evaluate`` writes an HTML report: per language the worst split and mixed stories with their headlines,
every text from the files escaped."""

from __future__ import annotations

import json

from pipelines.cli import main as cli_main
from pipelines.commands import evaluate as ev
from pipelines.commands.evaluate_html import worst_mixed, worst_split

HOSTILE = '<script>alert("x")</script> & <b>bold</b>'


def _write(tmp_path, gold_rows, pred_rows):
    gold = tmp_path / "gold.jsonl"
    pred = tmp_path / "out" / "assignments.jsonl"
    pred.parent.mkdir()
    gold.write_text("".join(json.dumps(r) + "\n" for r in gold_rows), encoding="utf-8")
    pred.write_text("".join(json.dumps(r) + "\n" for r in pred_rows), encoding="utf-8")
    return gold, pred


def _rows():
    gold = [
        # event A (en): split over stories 1 and 2 (4 + 2)
        *({"id": f"a{i}", "story_id": "A", "language": "en", "title": f"quake headline {i}"} for i in range(6)),
        # events B and C (en): mixed in story 3
        {"id": "b0", "story_id": "B", "language": "en", "title": HOSTILE},
        {"id": "b1", "story_id": "B", "language": "en", "title": "vote headline"},
        {"id": "c0", "story_id": "C", "language": "en", "title": "storm headline"},
        # event A in Spanish, linked to story 1's group
        {"id": "s0", "story_id": "A", "language": "es", "title": "terremoto"},
        {"id": "s1", "story_id": "D", "language": "es", "title": "elecciones"},
    ]
    pred = [
        *({"article_id": f"a{i}", "story_id": 1, "group_id": 1} for i in range(4)),
        *({"article_id": f"a{i}", "story_id": 2, "group_id": 2} for i in range(4, 6)),
        {"article_id": "b0", "story_id": 3, "group_id": 3},
        {"article_id": "b1", "story_id": 3, "group_id": 3},
        {"article_id": "c0", "story_id": 3, "group_id": 3},
        {"article_id": "s0", "story_id": 10, "group_id": 1},
        {"article_id": "s1", "story_id": 11, "group_id": 11},
    ]
    return gold, pred


def test_worst_split_and_mixed_rank_by_articles_lost():
    gold = {"a0": "A", "a1": "A", "a2": "A", "b0": "B", "b1": "B", "c0": "C", "x": "X"}
    pred = {"a0": 1, "a1": 1, "a2": 2, "b0": 3, "b1": 4, "c0": 3}  # x has no prediction
    split = worst_split(gold, pred, top=10)
    assert [(d["key"], d["lost"]) for d in split] == [("A", 1), ("B", 1)]
    assert split[0]["parts"] == [(1, ["a0", "a1"]), (2, ["a2"])]
    mixed = worst_mixed(gold, pred, top=10)
    assert [(d["key"], d["lost"], [k for k, _ in d["parts"]]) for d in mixed] == [(3, 1, ["B", "C"])]
    assert worst_split(gold, pred, top=1) == split[:1]


def test_evaluate_writes_an_escaped_html_report_per_language(tmp_path, capsys):
    gold, pred = _write(tmp_path, *_rows())
    assert cli_main(["evaluate", "--gold", str(gold), "--pred", str(pred)]) == 0
    page = (pred.parent / "evaluate.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;" in page
    assert page.count("<h2>") == 3  # all languages (links), en, es
    en = page[page.index("<h2>language en</h2>") : page.index("<h2>language es</h2>")]
    split, mixed = en.split("Worst mixed")
    assert "event A: 6 articles in 2 stories, 2 outside the largest" in split
    assert "quake headline 0" in split and "quake headline 5" in split and "storm headline" not in split
    assert "storm headline" in mixed and "vote headline" in mixed and "quake headline" not in mixed
    es = page[page.index("<h2>language es</h2>") :]
    assert "none" in es  # nothing split or mixed inside Spanish
    capsys.readouterr()
    out = tmp_path / "r.html"
    assert cli_main(["evaluate", "--gold", str(gold), "--pred", str(pred), "--html", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["articles"] == 11
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_no_html_writes_nothing(tmp_path):
    gold, pred = _write(tmp_path, *_rows())
    assert cli_main(["evaluate", "--gold", str(gold), "--pred", str(pred), "--no-html"]) == 0
    assert not (pred.parent / "evaluate.html").exists()
    assert ev.report(str(gold), str(pred))["overall"]["articles"] == 11


def test_each_split_and_mixed_story_links_to_its_explanation(tmp_path):
    """Beside a backfill's explanations.jsonl, every predicted story of a split event and every mixed story names the
    `newsroom explain` command that says why its articles are there; without the file, no such line."""
    gold, pred = _write(tmp_path, *_rows())
    assert cli_main(["evaluate", "--gold", str(gold), "--pred", str(pred)]) == 0
    assert "newsroom explain" not in (pred.parent / "evaluate.html").read_text(encoding="utf-8")
    (pred.parent / "explanations.jsonl").write_text("", encoding="utf-8")
    assert cli_main(["evaluate", "--gold", str(gold), "--pred", str(pred)]) == 0
    page = (pred.parent / "evaluate.html").read_text(encoding="utf-8")
    en = page[page.index("<h2>language en</h2>") : page.index("<h2>language es</h2>")]
    split, mixed = en.split("Worst mixed")
    command = f"newsroom explain --output {pred.parent} --story"
    assert f"{command} 1</code>" in split and f"{command} 2</code>" in split and f"{command} 3<" not in split
    assert f"{command} 3</code>" in mixed and f"{command} 1<" not in mixed
