"""docs/operations.md "Preflight" (moved there from the README): the copy-paste dry runs of the six jobs, run
exactly as written (one ``bash -eu`` script of the block, the installed ``newsroom`` command first on PATH), each
printing its translated graph. Only ``BACKFILL_INPUT`` is set, to local files: listing a gs:// glob offline is a GCS
call (test_dry_run.py explains)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from deploy_helpers import REPO_ROOT

JOBS = ["ingest", "stories", "backfill", "covisit", "authority", "userclusters"]


def preflight_block(readme: str) -> str:
    section = readme.split("### Preflight: dry runs of the six jobs", 1)
    assert len(section) == 2, "docs/operations.md has no Preflight section"
    m = re.search(r"```sh\n(.*?)```", section[1], re.S)
    assert m, "docs/operations.md Preflight has no ```sh block"
    return m.group(1)


def test_readme_names_every_job_in_its_preflight():
    block = preflight_block((REPO_ROOT / "docs" / "operations.md").read_text())
    assert re.findall(r"^newsroom (\w+) ", block, re.M) == JOBS


def test_readme_preflight_runs_as_written(tmp_path):
    block = preflight_block((REPO_ROOT / "docs" / "operations.md").read_text())
    row = {"id": "a1", "language": "en", "title": "Storm", "text": "Rain.", "published_at": "2024-01-01T08:00:00Z"}
    (tmp_path / "2024-01-01.jsonl").write_text(json.dumps({**row, "publisher": "herald", "url": "https://h.test/1"}))
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO_ROOT),
        "BACKFILL_INPUT": str(tmp_path / "2024-01-*.jsonl"),
    }
    for name in ("PROJECT", "REGION"):  # the block's own defaults, as a fresh shell has them
        env.pop(name, None)
    proc = subprocess.run(["bash", "-eu", "-c", block], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"docs/operations.md preflight failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    summaries = [
        json.loads(ln.split(": ", 1)[1]) for ln in proc.stdout.splitlines() if ln.startswith("newsroom dry run: ")
    ]
    assert len(summaries) == len(JOBS), proc.stdout[-2000:]
    assert [s["streaming"] for s in summaries] == [True, True, False, True, False, False]
    assert not any(cwd.iterdir()), "a dry run writes nothing"
