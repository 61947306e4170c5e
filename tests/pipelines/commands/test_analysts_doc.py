"""docs/analysts.md's section on exports and diffs, run as written: its ``sh`` blocks in order in one bash shell (``-e``, ``-u``, ``pipefail``),
``newsroom`` being this checkout's command, in a folder holding ``live/`` (a story store) and ``bf/`` (a backfill's
output files), as the page says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.pipelines.commands.test_export_diff import live_store, write

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "analysts.md"


SECTION = "## The system's own decisions, two runs compared"


def blocks() -> list[str]:
    """The ``sh`` blocks of the section (to the next ``## `` heading)."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + 1)
    return re.findall(r"```sh\n(.*?)```", text[start : end if end > 0 else None], re.S)


def test_the_analysts_page_runs_as_written(tmp_path):
    live_store(tmp_path / "live")
    placed = {"a1": 7, "a2": 7, "a3": 8, "e1": 9}
    write(tmp_path / "bf" / "assignments.jsonl", [{"article_id": a, "story_id": s} for a, s in placed.items()])
    decisions = [{"kind": "decision", "article_id": a, "title": f"{a} headline", "seq": 1} for a in placed]
    write(tmp_path / "bf" / "explanations.jsonl", decisions)
    script = "set -euo pipefail\n"
    script += f'newsroom() {{ PYTHONPATH={ROOT} {sys.executable} -m pipelines.cli "$@"; }}\n'
    script += "\n".join(blocks())
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(blocks()) >= 3
    first = json.loads(done.stdout.splitlines()[0])
    assert first["story_id"] == 1 and first["article_id"] == "a1"
    assert "why: newsroom explain --output" in done.stdout and (tmp_path / "diff.html").exists()
    assert re.search(r"^overall\s+4\s", done.stdout, re.M)
