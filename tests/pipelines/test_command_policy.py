"""Every ``newsroom`` command under one error policy (pipelines/command_errors.py): a bad flag, an unreadable or
wrong-shaped input, or a --data_dir that does not exist gives one line on stderr and exit status 2, never a
traceback; and untrusted text (flag values echoed back, stored titles) reaches the terminal escaped. Found by an
outside probe: fairness printed tracebacks for an --out that is a file and for a missing or wrong-shaped
--publishers, a malformed --edition or --day exited 1, a mistyped --data_dir silently made an empty store, and
explain echoed terminal escape sequences from --article raw.

In-process (pipelines.cli.main, as the entry point calls it) to stay fast; tests/pipelines/test_command_errors.py
runs the analyst commands' cases as subprocesses."""

from __future__ import annotations

import json

import pytest

from pipelines import cli
from pipelines.command_errors import SafeStream, shown

ESC = "\x1b[2J\x1b[31m"


def run(argv) -> int:
    try:
        return cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's exit, as the entry point would see it
        return exc.code


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A working folder with an existing (empty) data dir, a file, wrong-shaped inputs and a backfill output."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "afile").write_text("x")
    (tmp_path / "pubs-dict.json").write_text(json.dumps({"x": 1}))
    (tmp_path / "pubs-list.json").write_text("[1, 2]")
    (tmp_path / "out").mkdir()
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "p1.html").write_text("<html><head><title>t</title></head><body><p>hello</p></body></html>")
    (tmp_path / "binary.tsv").write_bytes(b"\xff\xfe\x00 not text")
    decision = {"kind": "decision", "seq": 1, "language": "en", "article_id": "a1", "story_id": 1, "at": 0}
    (tmp_path / "out" / "explanations.jsonl").write_text(json.dumps(decision) + "\n")
    return tmp_path


XT = ["extract", "--pages", "pages", "--out", "x.jsonl", "--workers", "1"]
FAIR = ["fairness", "--edition", "us-en", "--day", "2026-01-01", "--data_dir", "data"]
TYPO = ["--data_dir", "data-typo"]

CASES = {
    "fairness out is a file": (FAIR + ["--out", "afile"], "--out afile: is a file"),
    "fairness publishers missing": (FAIR + ["--publishers", "nope.json"], "--publishers nope.json: cannot read"),
    "fairness publishers a dict": (FAIR + ["--publishers", "pubs-dict.json"], "not a publishers file"),
    "fairness publishers a list of numbers": (FAIR + ["--publishers", "pubs-list.json"], "not a publishers file"),
    "fairness malformed edition": (
        ["fairness", "--edition", "US EN", "--day", "2026-01-01", "--data_dir", "data"],
        "--edition",
    ),
    "fairness malformed day": (FAIR[:4] + ["2026-1-1", "--data_dir", "data"], "--day 2026-1-1"),
    "fairness impossible day": (FAIR[:4] + ["2026-02-30", "--data_dir", "data"], "--day"),
    "fairness mistyped data dir": (FAIR[:5] + TYPO, "--data_dir data-typo: no stores there"),
    "fairness missing flag": (["fairness", "--edition", "us-en"], "required: --day"),
    "explain escapes in article": (["explain", "--output", "out", "--article", ESC + "\nforged"], "--article"),
    "explain escapes in story": (["explain", "--output", "out", "--story", ESC], "--story"),
    "explain output is a file": (["explain", "--output", "afile", "--story", "1"], "is a file"),
    "evaluate missing gold": (["evaluate", "--gold", "nope", "--pred", "nope"], "--gold nope"),
    "evaluate wrong-shaped pred": (["evaluate", "--gold", "pubs-dict.json", "--pred", "pubs-list.json"], "--"),
    "extract missing pages": (["extract", "--pages", "nope", "--out", "x.jsonl"], "--pages nope: no such folder"),
    "takedown mistyped data dir": (["takedown", "--story", "1", "--reason", "r"] + TYPO, "no stores there"),
    "takedown bad story id": (["takedown", "--story", ESC, "--reason", "r", "--data_dir", "data"], "--story"),
    "control mistyped data dir": (["control", "list", "--edition", "us-en"] + TYPO, "no stores there"),
    "control bad action": (["control", "bogus", "--edition", "us-en"], "invalid choice"),
    "rollback mistyped data dir": (
        ["rollback", "--edition", "us-en", "--section", "top", "--list"] + TYPO,
        "no stores",
    ),
    "rollback escapes in edition": (
        ["rollback", "--edition", ESC, "--section", "top", "--list", "--data_dir", "data"],
        "unknown edition",
    ),
    "serve mistyped data dir": (["serve"] + TYPO, "no stores there"),
    "serve bad port": (["serve", "--port", "notaport"], "--port"),
    "publishers missing file": (["publishers", "import", "nope.json", "--data_dir", "data"], "nope.json"),
    "publishers list mistyped data dir": (["publishers", "list"] + TYPO, "no stores there"),
    "feeds export mistyped data dir": (["feeds", "export"] + TYPO, "no stores there"),
    "feeds missing file": (["feeds", "import", "nope.json", "--data_dir", "data"], "nope.json"),
    "backfill missing input": (["backfill", "--input", "nope.jsonl", "--output", "o"], "no file matches"),
    "backfill missing flags": (["backfill"], "required"),
    "authority mistyped data dir": (["authority"] + TYPO, "no stores there"),
    "userclusters mistyped data dir": (["userclusters"] + TYPO, "no stores there"),
    "stories bad backend": (["stories", "--backend", "nope"], "--backend"),
    "ingest bad backend": (["ingest", "--backend", "nope"], "--backend"),
    "covisit bad backend": (["covisit", "--backend", "nope"], "--backend"),
    "extract wrong-shaped publishers": (XT + ["--publishers", "pubs-dict.json"], "--publishers pubs-dict.json: not a"),
    "extract unreadable aliases": (XT + ["--aliases", "binary.tsv"], "--aliases binary.tsv: cannot read"),
    "control wrong-shaped editions": (
        ["control", "list", "--edition", "us-en", "--editions", "pubs-list.json", "--data_dir", "data"],
        "--editions",
    ),
    "rollback unreadable editions": (
        [
            "rollback",
            "--edition",
            "us-en",
            "--section",
            "top",
            "--list",
            "--editions",
            "binary.tsv",
            "--data_dir",
            "data",
        ],
        "--editions",
    ),
    "backfill mistyped flag": (
        ["backfill", "--input", "in.jsonl", "--output", "o", "--publisher", "p.json"],
        "--publisher",
    ),
    "stories mistyped flag": (
        ["stories", "--data_dir", "data", "--edition", "us-en"],
        "unrecognized arguments: --edition",
    ),
    "stories wrong-shaped editions": (
        ["stories", "--data_dir", "data", "--editions", "pubs-list.json"],
        "editions file",
    ),
    "preflight missing flag": (["preflight", "--project", "p"], "required: --region"),
    "update-check not a git checkout": (["update-check", "--from", ESC, "--repo", "out"], "git"),
    "run bad flag": (["run", "--bogus"], "unrecognized arguments"),
    "stack bad action": (["stack", "bogus"], "invalid choice"),
    "sizing missing figures": (["sizing", "--figures", "nope.json"], "nope.json"),
    "export mistyped data dir": (["export", "assignments", "--out", "o"] + TYPO, "no story store"),
    "export bad from": (["export", "assignments", "--out", "o", "--from", ESC, "--data_dir", "data"], "--from"),
    "diff missing run": (["diff", "out", "nope", "--no-html"], "RUN_B nope: no such"),
    "diff wrong-shaped run": (
        ["diff", "pubs-list.json", "out", "--no-html"],
        "RUN_A pubs-list.json:1: not a JSON object",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_exit_2(place, capsys, case):
    argv, needle = CASES[case]
    status = run(argv)
    out = capsys.readouterr()
    lines = [x for x in out.err.splitlines() if x.strip()]
    assert status == 2, (status, out.err[-2000:])
    assert "Traceback" not in out.err and len(lines) == 1, out.err[-2000:]
    assert needle in lines[0], lines[0]
    assert "\x1b" not in out.err + out.out  # no terminal escape reaches the terminal
    assert not (place / "data-typo").exists()  # a mistyped data dir is not created


def test_every_command_has_a_bad_input_case():
    """A new row of the COMMANDS table comes with its case above."""
    assert set(cli.COMMANDS) <= {argv[0] for argv, _ in CASES.values()}


def test_an_existing_data_dir_is_still_read(place, capsys):
    """The data dir check refuses a missing folder only: an existing one with no pages answers as before (1)."""
    assert run(FAIR) == 1
    assert "no page of us-en was live on 2026-01-01" in capsys.readouterr().err


def test_stored_text_is_printed_escaped():
    assert shown("a\x1b[31mb\nc\u202ed\\") == "a\\x1b[31mb\\nc\\u202ed\\\\"
    written = []

    class Sink:
        def write(self, text):
            written.append(text)

    stream = SafeStream(Sink())
    stream.write("title \x1b]0;pwned\x07 \u202eevil\r\nnext\tcol\n")
    assert written == ["title \\x1b]0;pwned\\x07 \\u202eevil\\r\nnext\tcol\n"]
