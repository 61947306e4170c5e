"""The ``newsroom`` command has one table of subcommands (pipelines/cli.py ``COMMANDS``): every row parses
``--help``, ``newsroom serve`` stays free of Beam, and no other module of the tree grows a command line of its own."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import cli

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "stores", "transforms", "pipelines", "serving", "devtools")
# `python -m pipelines.JOB` is Beam's convention for a job (the same run(argv) as `newsroom JOB`).
JOB_MAINS = {f"pipelines/{job}.py" for job in cli.BEAM_JOBS}


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_every_command_of_the_table_parses_help(name, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main([name, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: newsroom {name}"), out[:200]
    assert cli.COMMANDS[name][1] in " ".join(out.split()), "the table's help text is the command's description"


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_every_command_module_has_the_entry_points_the_table_calls(name):
    import importlib

    module = importlib.import_module(cli.COMMANDS[name][0])
    if name in cli.BEAM_JOBS:
        assert callable(module.run)
    else:
        assert callable(module.add_arguments) and callable(module.main)


def test_top_level_help_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for name in cli.COMMANDS:
        assert name in out


def test_serve_help_does_not_import_beam():
    code = (
        "import sys\n"
        "from pipelines import cli\n"
        "try:\n"
        "    cli.main(['serve', '--help'])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "heavy = {'apache_beam', 'torch', 'scann', 'sentence_transformers', 'gunicorn'}\n"
        "print('HEAVY', sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=_env()
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage: newsroom serve" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "HEAVY []", out.stdout[-500:]


def test_python_dash_m_pipelines_cli_is_the_newsroom_command():
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    assert out.returncode == 0 and out.stdout.startswith("usage: newsroom"), out.stderr[-2000:]


def _env() -> dict:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def command_lines(source: str) -> list[str]:
    """``line: what`` for each argparse parser built and each ``if __name__ == "__main__"`` block in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "ArgumentParser":
                found.append(f"{node.lineno}: builds an ArgumentParser")
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            sides = [node.test.left, *node.test.comparators]
            if any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
                isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
            ):
                found.append(f"{node.lineno}: has a __main__ block")
    return found


def test_no_module_but_the_cli_has_a_command_line_of_its_own():
    offenders = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "pipelines/cli.py":
                continue
            for what in command_lines(path.read_text(encoding="utf-8")):
                if rel in JOB_MAINS and "__main__" in what:
                    continue
                offenders.append(f"{rel}:{what}")
    assert offenders == [], "add a row to pipelines/cli.py COMMANDS instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "source, count",
    [
        ("import argparse\np = argparse.ArgumentParser()\n", 1),
        ("from argparse import ArgumentParser\nArgumentParser(prog='x')\n", 1),
        ("if __name__ == '__main__':\n    main()\n", 1),
        ("def add_arguments(parser):\n    parser.add_argument('--x')\n", 0),
    ],
)
def test_the_command_line_checker_on_planted_snippets(source, count):
    assert len(command_lines(source)) == count
