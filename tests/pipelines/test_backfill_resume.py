"""Deliverable 6 of "Analysts 2": `--resume` finds the run in `--output` without `--namespace`; Ctrl-C stops a
backfill with one line and exit status 130, leaving a run `--resume` continues; `newsroom explain` prints an
unknown time as unknown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.backfill_paths import resumed_namespace
from tests.pipelines.test_backfill import labelled_file

ROOT = Path(__file__).resolve().parents[2]


def test_resume_finds_the_run_in_the_output_folder(tmp_path):
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.backfill import resolve

    out = tmp_path / "out"
    (out / "store" / "backfill-1-abc").mkdir(parents=True)
    assert resumed_namespace(str(out)) == "backfill-1-abc"  # a run killed before it wrote anything else
    (out / "manifest.json").write_text(json.dumps({"store": {"namespace": "from-manifest"}}))
    assert resumed_namespace(str(out)) == "from-manifest"
    (out / "run.json").write_text(json.dumps({"namespace": "from-run"}))
    job = resolve(PipelineOptions([f"--input={tmp_path}/x", f"--output={out}", "--resume"]))
    assert job.store.namespace == "from-run"
    fresh = resolve(PipelineOptions([f"--input={tmp_path}/x", f"--output={out}"]))
    assert fresh.store.namespace.startswith("backfill-")  # without --resume: a new run
    assert resumed_namespace(str(tmp_path / "none")) is None
    os.remove(out / "run.json")
    os.remove(out / "manifest.json")
    (out / "store" / "backfill-2-def").mkdir()
    with pytest.raises(ValueError, match="several runs"):
        resumed_namespace(str(out))


def test_resume_with_other_flags_is_refused_naming_them(tmp_path):
    """A resumed run continues the namespace's stories: with another range or embedder it would write files that
    are neither run (10 articles in 17 stories), over the finished run's. Refused before anything is touched."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.backfill import _prepare, _say_start, resolve
    from stores.runs import RunClaim

    inp, out = tmp_path / "in.jsonl", tmp_path / "out"
    labelled_file(inp, bad_line=False)
    argv = [f"--input={inp}", f"--output={out}", "--from=2026-05-01", "--embedder=hash"]
    first = resolve(PipelineOptions(argv))
    _prepare(first)
    _say_start(first, [str(inp)], RunClaim(first.store.namespace, 1), "FnApiRunner")
    (out / "assignments.jsonl").write_text("{}\n")  # the finished run's files
    again = resolve(PipelineOptions([*argv, "--resume"]))
    _prepare(again)  # the same flags: resumed
    assert again.store.namespace == first.store.namespace
    other = resolve(PipelineOptions([*argv[:2], "--from=2026-05-02T00:00", "--embedder=hash", "--resume"]))
    with pytest.raises(ValueError, match="--from") as refused:
        _prepare(other)
    assert "2026-05-01" in str(refused.value) and "2026-05-02" in str(refused.value)
    assert "--overwrite" in str(refused.value) and (out / "assignments.jsonl").read_text() == "{}\n"
    same_time = resolve(PipelineOptions([*argv[:2], "--from=2026-05-01T00:00Z", "--embedder=hash", "--resume"]))
    _prepare(same_time)  # the same bound written otherwise


def test_ctrl_c_stops_with_one_line_and_the_run_resumes(tmp_path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out"
    labelled_file(inp, bad_line=False)
    argv = [sys.executable, "-m", "pipelines.cli", "backfill", f"--input={inp}", f"--output={out}", "--embedder=hash"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    first = p.stderr.readline()  # the start line: the graph is about to run
    assert "namespace" in first, first
    os.killpg(p.pid, signal.SIGINT)
    rest = p.stderr.read()
    assert p.wait(timeout=120) == 130, rest
    lines = [x for x in rest.splitlines() if x.strip()]
    assert "Traceback" not in rest and len(lines) == 1 and "--resume` continues it" in lines[0], rest
    namespace = json.loads((out / "run.json").read_text())["namespace"]
    assert namespace in first
    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"namespace {namespace} (run epoch 2)" in done.stderr
    assert json.loads((out / "manifest.json").read_text())["store"]["namespace"] == namespace


def test_explain_prints_an_unknown_time_as_unknown(tmp_path, capsys):
    from pipelines.cli import main as newsroom

    base = {"kind": "decision", "language": "en", "story_id": 1, "decision": "new", "candidates": [], "title": "t"}
    base |= {"has_body": True, "bar": 0.5, "considered": 0, "weights": {"entities": 1, "lexical": 1}}
    rows = [
        dict(base, seq=1, article_id="old", at=946_684_801_000),  # a file written before time_known: the stand-in
        dict(base, seq=2, article_id="flagged", at=1_780_000_000_000, time_known=False),
        dict(base, seq=3, article_id="dated", at=1_780_000_000_000, time_known=True),
    ]
    (tmp_path / "explanations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert newsroom(["explain", f"--output={tmp_path}", "--story", "1"]) == 0
    out = capsys.readouterr().out
    assert "2000-01-01" not in out and out.count("unknown time") == 2 and "2026-05-28 20:26 UTC" in out


def test_the_closing_line_of_an_embedder_without_an_arithmetic_choice_says_so():
    from pipelines.backfill import embedder_line

    line = embedder_line("use", {"path": "n/a", "model": "use"})
    assert line == "[backfill] embedder use: one arithmetic (no int8/fp32 choice), in this process"
    chosen = embedder_line("minilm", {"path": "int8", "reason": "avx512_vnni present", "workers": 2})
    assert chosen == "[backfill] embedder minilm: int8 (avx512_vnni present), 2 worker(s)"
