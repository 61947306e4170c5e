"""Every Beam job resolves its PipelineOptions once, into a frozen value its graph and its run read: the flags are
checked there (a bad value is refused naming the flag), the options are never changed, and the job's options class
is an ordinary module attribute (no attribute built on first access that the template launcher must ask for)."""

from __future__ import annotations

import dataclasses
import importlib

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.cli import BEAM_JOBS
from pipelines.options import StoreOptions


@pytest.mark.parametrize("job", BEAM_JOBS)
def test_the_job_resolves_its_options_once_into_a_frozen_value(job, tmp_path):
    module = importlib.import_module(f"pipelines.{job}")
    assert not hasattr(module, "__getattr__"), "the options class is defined on import, not on first access"
    (own,) = (
        c
        for c in vars(module).values()
        if isinstance(c, type)
        and issubclass(c, StoreOptions)
        and c.__module__ in (module.__name__, f"{module.__name__}_options")  # ingest keeps its flags beside the job
    )
    argv = [f"--data_dir={tmp_path}", f"--input={tmp_path}/in.jsonl", f"--output={tmp_path}/out"]
    options = PipelineOptions(argv if job == "backfill" else argv[:1])
    options.view_as(own)  # Beam adds a view's defaults to the options on first view: not a change the job makes
    before = options.get_all_options()
    resolved = module.resolve(options)
    assert dataclasses.is_dataclass(resolved) and type(resolved).__dataclass_params__.frozen
    assert resolved.run.store.data_dir == str(tmp_path)
    assert options.get_all_options() == before, "resolving changed the job's options"


def test_the_backfill_resolves_its_namespace_and_store_root_without_changing_the_options(tmp_path):
    from pipelines.backfill import resolve

    options = PipelineOptions([f"--input={tmp_path}/a.jsonl", f"--output={tmp_path}/out", "--from=2026-01-02"])
    job = resolve(options)
    assert job.store.namespace.startswith("backfill-") and job.store.data_dir == f"{tmp_path}/out/store"
    assert job.since is not None and job.until is None
    assert options.view_as(StoreOptions).namespace == "" and options.view_as(StoreOptions).data_dir == ".newsroom"
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.embedder = "hash"


@pytest.mark.parametrize(
    ("job", "argv", "flag"),
    [
        ("backfill", ["--input=a", "--output=b", "--to=yesterday"], "--to"),
        ("backfill", ["--output=b"], "--input"),
        ("covisit", ["--top_k=0"], "--top_k"),
        ("covisit", ["--flush_s=0"], "--flush_s"),
        ("authority", ["--page_size=0"], "--page_size"),
        ("userclusters", ["--min_members=0"], "--min_members"),
        ("stories", ["--links=on"], "--links"),
        ("stories", ["--link_interval_s=0"], "--link_interval_s"),
        ("ingest", ["--poll_max_s=0"], "--poll_max_s"),
        ("ingest", ["--backend=gcp"], "--snapshot_bucket"),
    ],
)
def test_a_bad_flag_is_refused_where_the_options_are_resolved_naming_it(job, argv, flag):
    module = importlib.import_module(f"pipelines.{job}")
    with pytest.raises(ValueError, match=flag):
        module.resolve(PipelineOptions(argv))


@pytest.mark.parametrize(("job", "flag"), [("covisit", "--top_k=0"), ("userclusters", "--min_members=0")])
def test_python_m_the_job_refuses_a_bad_flag_in_one_line(job, flag):
    """``python -m pipelines.JOB`` is ``newsroom JOB``: a bad flag ends in one line naming it and exit status 2, not
    a traceback."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run(
        [sys.executable, "-m", f"pipelines.{job}", flag], cwd=root, capture_output=True, text=True, env=env, timeout=300
    )
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    (line,) = [x for x in res.stderr.splitlines() if "error" in x.lower()]
    assert line.startswith(f"newsroom {job}: error: {flag.split('=')[0]}")
