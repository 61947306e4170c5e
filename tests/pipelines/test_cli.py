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


def test_every_command_lives_in_the_commands_layer_a_job_or_the_developer_tools():
    """Where an entry point may live: a Beam job is its own module in pipelines/, every other product command is
    in pipelines/commands/, and the developer tools' commands are in devtools/ (not installed with the wheel).
    Never in a stage, a store or the origin."""
    misplaced = {
        name: module
        for name, (module, _) in cli.COMMANDS.items()
        if not (
            (name in cli.BEAM_JOBS and module == f"pipelines.{name}")
            or module.startswith("pipelines.commands.")
            or module.startswith("devtools.")
        )
    }
    assert not misplaced, f"move these commands to pipelines/commands/: {misplaced}"


def exposes_a_command(source: str) -> bool:
    """Whether a module defines the pair the table calls (``add_arguments`` and ``main`` at module level)."""
    names = {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    return {"add_arguments", "main"} <= names


def test_no_stage_store_origin_or_job_module_is_a_command():
    outside = [
        path.relative_to(ROOT).as_posix()
        for top in ("schemas", "stores", "transforms", "serving", "pipelines")
        for path in sorted((ROOT / top).rglob("*.py"))
        if not path.relative_to(ROOT).as_posix().startswith("pipelines/commands/")
        and exposes_a_command(path.read_text(encoding="utf-8"))
    ]
    assert outside == [], f"commands outside pipelines/commands/: {outside}"


def test_the_command_checker_on_planted_snippets():
    assert exposes_a_command("def add_arguments(parser):\n    pass\n\n\ndef main(args):\n    return 0\n")
    assert not exposes_a_command("def main(args):\n    return 0\n")


def test_a_developer_tool_absent_from_the_install_is_named_not_a_traceback(monkeypatch, capsys):
    """As in a wheel install: devtools neither importable nor beside the package. The command exits 2 with one
    message saying to run it from a clone, whatever flags follow (tests/deploy/test_wheel.py runs the real one)."""
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(cli, "clone_root", lambda: None)
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name.split(".")[0] == "devtools" else real_find_spec(name, *a),
    )
    for name in sorted(sys.modules):
        if name.split(".")[0] == "devtools":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoDevtools(), *sys.meta_path])
    assert cli.main(["run", "--minutes", "1"]) == 2
    err = capsys.readouterr().err
    assert "`newsroom run` is a developer tool" in err and "clone" in err and "Traceback" not in err


class _NoDevtools:
    """A meta path finder that hides devtools, as a wheel install does."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "devtools":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


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
            if rel in ("pipelines/cli.py", "pipelines/beam_cli.py"):  # the dispatcher and its Beam half
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


def test_ctrl_c_while_the_command_loads_is_one_line(monkeypatch, capsys):
    """Importing a job's modules (Beam, pyarrow, numpy) takes seconds on a loaded machine: a Ctrl-C then printed a
    40-line KeyboardInterrupt traceback from importlib (`newsroom backfill` interrupted 1 s and 4 s after start)."""

    def interrupted(module):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_import_command", interrupted)
    try:
        status = cli.main(["backfill", "--input=x", "--output=y"])
    except KeyboardInterrupt:
        status = "escaped"
    assert status == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["newsroom backfill: interrupted while starting; nothing was run"]
