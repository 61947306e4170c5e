"""benchmarks/soak.py: its zero-loss accounting on the embedded stores' own tables, and its per-minute line."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import soak
from stores.embedded import _DDL

ROOT = Path(__file__).resolve().parents[2]


def _store(tmp_path, members: list[tuple[int, str]], aliases: dict[int, int], articles: list[str]) -> str:
    with sqlite3.connect(tmp_path / "newsroom.sqlite3") as c:
        c.executescript(_DDL)
        for a in articles:
            c.execute("INSERT INTO articles VALUES (?, 1, ?, x'00')", (a, a))
        for sid in {s for s, _ in members} | set(aliases):
            c.execute("INSERT INTO stories (story_id, alias_of) VALUES (?, ?)", (sid, aliases.get(sid)))
        c.executemany("INSERT INTO story_members (story_id, article_id, member) VALUES (?, ?, '{}')", members)
    return str(tmp_path)


def test_counts_stored_assigned_and_articles_in_two_live_stories(tmp_path):
    d = _store(tmp_path, [(1, "a"), (1, "b"), (2, "b"), (3, "c")], {3: 1}, ["a", "b", "c", "d"])
    # c is only in story 3, an alias (merged away): not assigned; b is in two live stories; d in none
    assert soak.store_counts(d) == {"stored": 4, "assigned": 2, "in_two_stories": 1}


def test_an_absent_store_counts_nothing(tmp_path):
    assert soak.store_counts(str(tmp_path)) == {"stored": 0, "assigned": 0, "in_two_stories": 0}


def _fake_run(d: str):
    class FakeRun:
        data_dir = d
        last = (
            "released 7 | polls 30 (12 x 304) fetched 5 | articles 2 stories 1 live pages 3 | "
            "release->page p50 41.5s p95 88.0s (n=4)"
        )
        proc = type("P", (), {"pid": os.getpid()})()
        cpu: dict = {}  # CPU s by role at the previous minute line

    return FakeRun()


def test_the_minute_line_reads_the_runs_progress_and_the_backlogs(tmp_path):
    d = _store(tmp_path, [(1, "a")], {}, ["a", "b"])
    line = soak.minute_line(4, _fake_run(d))
    assert "min   4 | release->page p50 41.5s p95 88.0s" in line
    # no world.json: the pages cannot be followed, so the accounting is unknown, not zero
    assert "released - fetched - stored - assigned - | backlog ingest - items-raw - stories 1" in line
    # the run's own figures among its process tree's roles (children of this process, e.g. an emulator another
    # test started, come first when their role sorts first)
    assert re.search(r"RSS MB [^|]*\brun \d+", line) and re.search(r"CPU s [^|]*\brun \d", line)


def test_the_minute_line_follows_the_worlds_released_pages(tmp_path):
    from devtools.world.server import world_state

    d = _store(tmp_path, [], {}, [])
    world_state(tmp_path / "world.json", speed=10.0, seed=1, now_s=time.time() - 600)  # 100 virtual minutes ago
    acc = soak.account(d)
    assert acc["released"] > 0 and acc["fetched"] == 0 and acc["held"] == 0
    line = soak.minute_line(1, _fake_run(d))
    assert f"released {acc['released']} fetched 0 stored 0 assigned 0" in line
    assert f"backlog ingest {acc['released']} items-raw 0 stories 0" in line


@pytest.mark.slow
def test_a_one_minute_soak_ends_with_its_accounting(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "soak.py"), "--minutes=1", f"--data_dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=900,
    ).stdout
    end = re.search(
        r"\nend: released (\d+) fetched \1 stored \1 assigned \1 held 0 lost 0 \[\] .*: EQUAL, each once", out
    )
    assert end and "in two live stories 0" in end.group(0), out


def test_a_generated_report_repeating_a_stored_one_word_for_word_is_a_copy_not_lost():
    """The generator draws an event's names from short lists, so a report can repeat an earlier event's text exactly
    (gen-1-96-1 is gen-1-11-1's): the articles stage refuses it as a copy, and the soak counted it lost."""
    from devtools.world.generated import event_articles
    from transforms.articles.urls import article_id

    world = {}
    for k in range(180):
        for a in event_articles(1, k):
            a["url"] = f"http://p.example/news/{a['id']}"
            world[a["id"]] = a
    fam = soak.families(world.values())
    repeat, first = world["gen-1-96-1"], world["gen-1-11-1"]
    assert (repeat["headline"], repeat["paras"]) == (first["headline"], first["paras"])
    stored = {article_id(first["url"])}
    assert soak.refusal(repeat, stored, fam) == soak.COPIES
    assert soak.refusal(repeat, set(), fam) is None  # nothing of its text stored: not a copy, lost if fetched
    other = world["gen-1-12-0"]
    assert soak.refusal(other, stored, fam) is None and fam[other["id"]] == {article_id(other["url"])}


def test_a_failed_run_s_logs_outlive_the_temporary_data_directory(tmp_path, monkeypatch, capsys):
    """The run names a log in its data directory when a job dies; a temporary one is removed on return, so the logs
    are copied out first (a stories job's abort at start was once left with no log to read)."""
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    (data / "logs" / "stories-job.log").write_text("Fatal Python error: Aborted\n")
    monkeypatch.setattr(soak.tempfile, "tempdir", str(tmp_path))
    assert soak.kept_logs(str(data), str(data)) == 1
    kept = Path(re.search(r"kept in (\S+)", capsys.readouterr().out).group(1))
    assert (kept / "stories-job.log").read_text() == "Fatal Python error: Aborted\n"
    assert soak.kept_logs(str(data), str(tmp_path / "another")) == 1  # a data_dir the user chose stays where it is
    assert "kept in" not in capsys.readouterr().out
