"""docs/operations.md "Quickstart", run as written: its ``sh`` blocks in order in one bash shell (``-u``, and
``pipefail``), its ``json`` and ``xml`` blocks written to the files the commands import. ``newsroom`` is this
checkout's command for real, against the Pub/Sub, Bigtable and GCS emulators (offline: the preflight reports
``--`` lines); ``gcloud``, ``terraform`` and ``curl`` are recorders on PATH (they print and log their arguments),
so the test checks the calls the blocks make, in order, and that every ``newsroom`` call did what it says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from deploy_helpers import REPO_ROOT

DOC = REPO_ROOT / "docs" / "operations.md"


def quickstart() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Quickstart")
    return text[start : text.index("\n## ", start + 1)]


def blocks(section: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section, re.S)


def test_the_quickstart_names_each_step():
    section = quickstart()
    sh = "\n".join(blocks(section, "sh"))
    order = [
        "newsroom preflight",
        "terraform -chdir",
        "gcloud builds submit",
        "flex-template build",
        "newsroom publishers import",
        "newsroom feeds import",
        "curl",
    ]
    positions = [sh.index(step) for step in order]
    assert positions == sorted(positions), order
    assert len(blocks(section, "json")) == 1 and len(blocks(section, "xml")) == 1


def recorder(bin_dir: Path, name: str, log: Path) -> None:
    script = bin_dir / name
    script.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\necho "({name} $1 ... recorded)"\n')
    script.chmod(0o755)


@pytest.mark.emulator
@pytest.mark.timeout(600)
def test_the_quickstart_runs_as_written(emulator_stack, tmp_path):
    from stores import StoreConfig, open_stores
    from stores.feeds import open_feed_store
    from transforms import publisher_store

    project = emulator_stack.project
    config = StoreConfig(
        backend="gcp",
        project=project,
        bigtable_instance="newsroom",
        bucket=f"{project}-newsroom-snapshots",
        data_dir=str(tmp_path / "unused"),
    )
    from devtools import emulators as stack

    stack.provision(config)
    section = quickstart()
    work = tmp_path / "work"
    work.mkdir()
    (work / "publishers.json").write_text(blocks(section, "json")[0])
    (work / "feeds.opml").write_text(blocks(section, "xml")[0])
    bin_dir, log, statuses = tmp_path / "bin", tmp_path / "calls.log", tmp_path / "newsroom.status"
    bin_dir.mkdir()
    for tool in ("gcloud", "terraform", "curl"):
        recorder(bin_dir, tool, log)
    newsroom = bin_dir / "newsroom"
    newsroom.write_text(
        f'#!/bin/sh\n"{sys.executable}" -m pipelines.cli "$@"\ns=$?\necho "$1 $2 $s" >> {statuses}\nexit $s\n'
    )
    newsroom.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO_ROOT),
        "PROJECT": project,
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "no-credentials.json"),
    }
    script = "set -u -o pipefail\n" + "\n".join(blocks(section, "sh"))
    done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    calls = log.read_text().splitlines()
    assert any(c.startswith("terraform -chdir=terraform/environments/prod apply") for c in calls)
    assert sum("flex-template build" in c for c in calls) == 6
    assert calls[-1] == "curl -s https://news.example.com/v1/editions/us-en/sections/top"
    ran = [ln.split() for ln in statuses.read_text().splitlines()]
    assert [r[:2] for r in ran] == [
        ["preflight", "--project=" + project],
        ["preflight", "--project=" + project],
        ["publishers", "import"],
        ["feeds", "import"],
        ["feeds", "list"],
    ]
    assert [r[2] for r in ran] == ["3", "3", "0", "0", "0"]  # offline: nothing failed, nothing could be checked
    assert re.search(r"^--    bucket gs://\S+-newsroom-snapshots: not checked", done.stdout, re.M)
    stores = open_stores(config)
    _, rows = publisher_store.load(stores)
    assert [r["publisher_id"] for r in rows] == ["harbour-times", "riverside-gazette"]
    feeds = {f["url"]: f["publisher_id"] for f in open_feed_store(config).list_feeds()}
    assert feeds == {
        "https://riverside-gazette.example/rss.xml": "riverside-gazette",
        "https://harbour-times.example/atom.xml": "harbour-times",
    }
    assert "https://riverside-gazette.example/rss.xml\triverside-gazette\tauthoritative\trss\tenabled" in done.stdout
