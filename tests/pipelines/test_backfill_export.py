"""A backfill's story store, exported, is its assignments: `newsroom export assignments` over the store a backfill
wrote (repairs applied, aliases left by merges) gives the same stories as the backfill's own fold of its changes,
and `newsroom diff` between the two finds every story unchanged. (Cross-language groups differ: a backfill links its
final stories in its files, not in its store.)"""

from __future__ import annotations

import json

from tests.pipelines.test_backfill import backfill, labelled_file, read


def test_export_of_a_backfills_store_matches_its_assignments(tmp_path, capsys):
    from pipelines.cli import main as newsroom

    inp, out = tmp_path / "in.jsonl", tmp_path / "bf"
    labelled_file(inp, bad_line=False)
    assert backfill(inp, out, "--namespace=bf1") == 0
    export = tmp_path / "export"
    args = ["export", "assignments", f"--data_dir={out / 'store'}", "--namespace=bf1", f"--out={export}"]
    assert newsroom(args) == 0
    # story ids alike; group ids not: a backfill links its final stories in its files, never in its store
    mine = {r["article_id"]: (r["story_id"], r["language"]) for r in read(out / "assignments.jsonl")}
    theirs = {r["article_id"]: (r["story_id"], r["language"]) for r in read(export / "assignments.jsonl")}
    assert theirs == mine
    capsys.readouterr()
    assert newsroom(["diff", str(out), str(export), "--json", f"--html={tmp_path / 'd.html'}"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["counts"]["unchanged"] == d["counts"]["stories_a"] == d["counts"]["stories_b"] > 1
    assert not any(s["changes"] for s in d["languages"].values())
