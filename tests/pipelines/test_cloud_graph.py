"""A first deploy cannot go wrong silently: under ``--runner=DataflowRunner`` every job refuses a graph production
never runs (the embedded backend's store on a worker's disk instead of Pub/Sub, Bigtable and GCS; the stories job
reading files), naming the flag, before anything is translated or submitted."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipelines import authority, backfill, covisit, ingest, stories

CLOUD = ["--runner=DataflowRunner", "--dry_run=True", "--no_auth", "--project=newsroom-ci", "--region=europe-west1"]
JOBS = {
    "ingest": (ingest.run, ["--feeds=table"]),
    "stories": (stories.run, ["--input_subscription=stories-items-raw"]),
    "backfill": (backfill.run, ["--input=/nonexistent/*.jsonl", "--output=/tmp/x", "--namespace=bf-ci"]),
    "covisit": (covisit.run, ["--input_subscription=covisit-read-events"]),
    "authority": (authority.run, ["--window_days=90"]),
}


@pytest.mark.parametrize("job", list(JOBS))
def test_dataflow_without_the_gcp_backend_is_refused_naming_the_flag(job):
    run, args = JOBS[job]
    with pytest.raises(ValueError, match=r"--backend=gcp.*" + job):
        run(CLOUD + args)


def test_the_stories_job_reading_files_on_dataflow_is_refused_naming_the_flag(tmp_path):
    gcp = ["--backend=gcp", "--bigtable_instance=newsroom", "--snapshot_bucket=newsroom-ci-snapshots"]
    with pytest.raises(ValueError, match=r"--input=.*items\.jsonl.*Pub/Sub|Pub/Sub.*--input="):
        stories.run(CLOUD + gcp + [f"--input={tmp_path}/items.jsonl"])


def test_the_newsroom_command_exits_non_zero_naming_backend():
    """The first thing a new user tries (README "Preflight" without --backend=gcp): exit 2, the flag named."""
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "stories", "--runner", "DataflowRunner", "--dry_run=True"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "newsroom stories: error: --runner=DataflowRunner needs --backend=gcp" in proc.stderr
