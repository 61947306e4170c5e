"""`newsroom backfill` end to end on a small labelled file (hash embedder: no model), and the quality run on the
shared dev sets (slow)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

EVENTS = [
    (
        "Magnitude 7.3 earthquake strikes Valparaiso Chile",
        "Chilean officials in Valparaiso counted damage after the 7.3 quake.",
    ),
    (
        "Sbarro files for Chapter 11 bankruptcy again",
        "Pizza chain Sbarro filed for Chapter 11 protection for the second time.",
    ),
    ("Titanfall launches on Xbox One at 792p", "Respawn confirmed Titanfall runs at 792p on the Xbox One console."),
]


def labelled_file(path, label_salt="", bad_line=True):
    rows = []
    for k in range(4):
        for e, (title, text) in enumerate(EVENTS):
            rows.append(
                {
                    "id": f"a{e}{k}",
                    "story_id": f"gold{e}{label_salt}",
                    "topic": f"t{label_salt}",
                    "language": "en",
                    "title": f"{title} {['report', 'update', 'live', 'video'][k]}",
                    "text": text,
                    "published_at": None,
                    "publisher": f"Pub {k}",
                    "url": f"https://pub{k}.example/{e}",
                }
            )
    rows.append(
        {
            "id": "es0",
            "story_id": "gold0",
            "language": "es",
            "title": "Terremoto de magnitud 7.3 en Valparaiso",
            "text": "Valparaiso y Chile tras el sismo de 7.3.",
            "published_at": None,
            "publisher": "El Pub",
        }
    )
    lines = [json.dumps(r) for r in rows]
    if bad_line:
        lines.insert(3, "{not json")
    path.write_text("\n".join(lines) + "\n")
    return rows


def backfill(inp, out, *extra):
    from pipelines.backfill import run

    return run([f"--input={inp}", f"--output={out}", "--embedder=hash", "--exact_index", *extra])


def read(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_backfill_writes_assignments_stories_manifest_and_dead_letters(tmp_path):
    inp = tmp_path / "in.jsonl"
    rows = labelled_file(inp)
    assert backfill(inp, tmp_path / "out") == 0
    out = tmp_path / "out"
    assignments = read(out / "assignments.jsonl")
    assert [a["article_id"] for a in assignments] == [r["id"] for r in rows]  # every article, in input order
    assert all(isinstance(a["story_id"], int) and a["story_id"] > 0 for a in assignments)
    stories = read(out / "stories.jsonl")
    assert sum(s["size"] for s in stories) == len(rows)
    assert {a["story_id"] for a in assignments} == {s["story_id"] for s in stories}
    storylines = read(out / "storylines.jsonl")  # every final story in exactly one storyline
    assert sorted(s for row in storylines for s in row["stories"]) == sorted(s["story_id"] for s in stories)
    assert [c["seq"] for c in read(out / "storyline_changes.jsonl")] == list(
        range(1, 1 + len(read(out / "storyline_changes.jsonl")))
    )
    dead = read(out / "dead_letters.jsonl")
    assert len(dead) == 1 and dead[0]["reason"] == "bad_json_line" and dead[0]["key"].endswith(":4")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["articles"] == len(rows) and manifest["counts"]["dead_letters"] == 1
    assert manifest["counts"]["languages"] == 2 and manifest["models"] == {"en": "test", "es": "test"}
    assert manifest["store"]["namespace"].startswith("backfill-") and manifest["duration_s"] > 0
    assert manifest["options"]["embedder"] == "hash"
    assert {"kernels", "profile"} <= set(manifest["ann_index"])  # the index configuration chosen on this CPU
    # the events are easy: no predicted story mixes two of them
    gold = {r["id"]: r["story_id"] for r in rows if r["language"] == "en"}
    mixed = {}
    for a in assignments:
        if a["article_id"] in gold:
            mixed.setdefault(a["story_id"], set()).add(gold[a["article_id"]])
    assert all(len(v) == 1 for v in mixed.values())


def test_backfill_never_reads_labels_and_is_deterministic(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    labelled_file(a)
    labelled_file(b, label_salt="-scrambled")  # different gold labels and topics, same articles
    backfill(a, tmp_path / "outa")
    backfill(b, tmp_path / "outb")
    backfill(a, tmp_path / "outa2")
    first = (tmp_path / "outa" / "assignments.jsonl").read_text()
    assert first == (tmp_path / "outb" / "assignments.jsonl").read_text()
    assert first == (tmp_path / "outa2" / "assignments.jsonl").read_text()  # two runs: identical story ids
    for name in ("stories.jsonl", "storylines.jsonl", "storyline_changes.jsonl"):
        assert (tmp_path / "outa" / name).read_text() == (tmp_path / "outa2" / name).read_text()


def test_backfill_language_filter_and_glob(tmp_path):
    labelled_file(tmp_path / "p1.jsonl", bad_line=False)
    labelled_file(tmp_path / "p2.jsonl", bad_line=False)  # same ids in both files: duplicates are assigned once
    backfill(str(tmp_path / "p*.jsonl"), tmp_path / "out", "--language=es")
    assignments = read(tmp_path / "out" / "assignments.jsonl")
    assert [a["article_id"] for a in assignments] == ["es0"]


def test_cli_backfill_then_evaluate(tmp_path):
    inp = tmp_path / "in.jsonl"
    labelled_file(inp, bad_line=False)
    from pipelines.cli import main

    assert main(["backfill", "--input", str(inp), "--output", str(tmp_path / "o"), "--embedder", "hash"]) == 0
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.cli",
            "evaluate",
            "--gold",
            str(inp),
            "--pred",
            str(tmp_path / "o" / "assignments.jsonl"),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(res.stdout)
    assert report["overall"]["articles"] == 13 and report["overall"]["missing"] == 0
    assert set(report["languages"]) == {"en", "es"}


# Regression floors of the quality run (one configuration for every file; measured with the learned pair score,
# the merge veto and the link rules: basil 0.984 / 0.956, ecbplus 0.983 / 0.811, meantime 0.989 / 0.990 (link
# groups), uci 0.912 / 0.810; docs/stories.md). Precision floors are the acceptance bars (uci-dev's gold is
# over-split, so its bar is 0.90); B-cubed floors sit just under the measured values, so a regression shows.
FLOORS = {
    "basil-dev.jsonl": (0.95, 0.94),
    "ecbplus-dev.jsonl": (0.95, 0.80),
    "meantime-dev.jsonl": (0.95, 0.97),
    "uci-dev.jsonl": (0.90, 0.80),
}


# uci-dev's B-cubed F1 has been 0.784 in sample since 9eb5364 (places as evidence, pair score retrained): below its
# floor, as docs/stories.md ("Headline-only input out of sample") says. Strict, so the day it passes again says so.
UCI_BELOW = pytest.mark.xfail(strict=True, reason="uci-dev B3 0.784 < 0.80 since 9eb5364 (docs/stories.md)")


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=UCI_BELOW) if n == "uci-dev.jsonl" else n for n in sorted(FLOORS)]
)
def test_quality_on_the_shared_dev_sets(shared_data, tmp_path, name):
    from pipelines.commands import evaluate as ev

    gold = shared_data / "stories" / name
    out = tmp_path / "out"
    from pipelines.backfill import run

    assert run([f"--input={gold}", f"--output={out}"]) == 0
    report = ev.report(str(gold), str(out / "assignments.jsonl"))
    p_floor, f_floor = FLOORS[name]
    assert report["overall"]["pair_precision"] >= p_floor
    assert report["overall"]["b3_f1"] >= f_floor


def test_backfill_reads_article_avro_files(tmp_path, sample_record):
    import fastavro

    from schemas import codec

    records = []
    for i, (title, body) in enumerate(EVENTS * 2):
        records.append(
            codec.check(
                "Article",
                sample_record(
                    "Article",
                    article_id=f"art{i:02d}",
                    title=title,
                    lede=body,
                    body=body,
                    first_seen_at=1_767_225_600_000 + i * 60_000,
                    published_at=1_767_225_600_000 + i * 60_000,
                    canonical_url=f"https://pub{i}.example/{i}",
                    publisher_id=f"pub{i}",
                    entities=[],
                ),
            )
        )
    path = tmp_path / "articles.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, codec.parsed_schema("Article"), records)
    assert backfill(path, tmp_path / "out") == 0
    assignments = read(tmp_path / "out" / "assignments.jsonl")
    assert [a["article_id"] for a in assignments] == [r["article_id"] for r in records]
    by_title = {}
    for r, a in zip(records, assignments):
        by_title.setdefault(r["title"], set()).add(a["story_id"])
    assert all(len(v) == 1 for v in by_title.values())  # the two copies of each event end in one story


def test_backfill_skips_articles_taken_down_in_production(tmp_path):
    from stores import StoreConfig
    from stores.takedowns import Tombstone, open_takedown_store

    data = tmp_path / "data"
    open_takedown_store(StoreConfig(data_dir=str(data))).set(Tombstone("article", "a11", "court order", "alice", 1))
    inp = tmp_path / "in.jsonl"
    rows = labelled_file(inp, bad_line=False)
    assert backfill(inp, tmp_path / "out", f"--data_dir={data}") == 0
    got = [a["article_id"] for a in read(tmp_path / "out" / "assignments.jsonl")]
    assert got == [r["id"] for r in rows if r["id"] != "a11"]
