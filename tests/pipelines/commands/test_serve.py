"""`newsroom serve`: flags in step with pipelines/options.py StoreOptions, environment for the workers, tokens."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from pipelines.commands import serve as gunicorn_app
from serving.http.auth import HmacTokenVerifier


def parser():
    p = argparse.ArgumentParser()
    gunicorn_app.add_arguments(p)
    return p


def test_store_flags_match_store_options():
    pytest.importorskip("apache_beam")
    from pipelines.options import StoreOptions

    beam = argparse.ArgumentParser()
    StoreOptions._add_argparse_args(beam)
    ours = {a.dest: a for a in parser()._actions}
    for action in beam._actions:
        if action.dest == "help":
            continue
        assert action.dest in ours, f"--{action.dest} of StoreOptions is missing from newsroom serve"
        assert ours[action.dest].default == action.default, action.dest
        assert ours[action.dest].choices == action.choices, action.dest


def test_environment_for_workers(tmp_path):
    args = parser().parse_args(["--data_dir", str(tmp_path), "--namespace", "bf-1", "--watch_interval", "0.5"])
    env = gunicorn_app.environment(args, environ={})
    assert env["NEWSROOM_BACKEND"] == "embedded" and env["NEWSROOM_DATA_DIR"] == str(tmp_path)
    assert env["NEWSROOM_NAMESPACE"] == "bf-1" and env["NEWSROOM_WATCH_INTERVAL_S"] == "0.5"
    assert "NEWSROOM_CURSOR_SECRET" not in env  # workers share {data_dir}/secrets.json (serving.resolve_secrets)
    assert env["OPENBLAS_NUM_THREADS"] == "1"
    assert gunicorn_app.environment(args, environ={"NEWSROOM_CURSOR_SECRET": "s"})["NEWSROOM_CURSOR_SECRET"] == "s"
    with pytest.raises(SystemExit, match="snapshot_bucket"):
        gunicorn_app.environment(parser().parse_args(["--backend", "gcp"]), environ={})


def test_issue_token_through_the_newsroom_command(monkeypatch):
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "serve", "--issue_token", "reader-1"],
        capture_output=True,
        text=True,
        env={"NEWSROOM_TOKEN_SECRET": "abc", "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert HmacTokenVerifier("abc").verify(out.stdout.strip()) == "reader-1"


def test_module_import_is_light():
    heavy = "{'apache_beam', 'torch', 'scann', 'sentence_transformers', 'numpy', 'gunicorn'}"
    code = f"import sys, pipelines.commands.serve; print(sorted({heavy} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
