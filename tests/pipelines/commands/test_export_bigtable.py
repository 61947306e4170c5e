"""`newsroom export assignments --backend gcp` reads production's story table (Bigtable, here its emulator) through
the same store interface as the embedded one: the same rows as test_export_diff's embedded export, and it needs
no snapshot bucket (it reads no snapshot)."""

from __future__ import annotations

import pytest

from pipelines.cli import main as newsroom
from tests.pipelines.commands.test_export_diff import live_store, read
from tests.pipelines.test_stories_job import store_argv

pytestmark = pytest.mark.emulator


def test_export_reads_bigtable_without_a_snapshot_bucket(gcp_store_config, tmp_path, monkeypatch, capsys):
    from stores import open_store

    monkeypatch.setattr(
        "tests.pipelines.commands.test_export_diff.open_store", lambda kind, _cfg: open_store(kind, gcp_store_config)
    )
    live_store(tmp_path / "unused")
    argv = [a for a in store_argv(gcp_store_config) if not a.startswith("--snapshot_bucket")]
    assert newsroom(["export", "assignments", *argv, f"--out={tmp_path / 'o'}", "--from=2026-05-20"]) == 0, (
        capsys.readouterr().err
    )
    rows = {
        r["article_id"]: (r["story_id"], r["language"], r["group_id"])
        for r in read(tmp_path / "o" / "assignments.jsonl")
    }
    assert rows == {"a1": (1, "en", 1), "a2": (1, "en", 1), "a3": (1, "en", 1), "e1": (3, "es", 1)}
