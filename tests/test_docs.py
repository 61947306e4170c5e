"""Every command the README and docs/ quote is one that works: each ``newsroom ...`` line of their code blocks
(fenced or indented) is parsed by the real ``newsroom`` parser (pipelines/cli.py: the subcommand, its flags and
their values; a Beam job's other flags must be Beam's), and each ``make TARGET`` names a target of the Makefile.

Usage lines are read as a user would type the simplest form: an optional part in brackets is left out, the first of
``(a | b)`` alternatives and of ``a|b`` values is taken, and ``...`` (more flags as above) is dropped; shell
variables stand for themselves. The preflight block is also run as written (tests/deploy/test_preflight.py). The
checker is tested on planted lines, so this test can fail.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.beam_cli import beam_unknown

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = {"$ENV": "dev"}  # shell variables the docs use for a value with choices: one example value
PROMPT = re.compile(r"^(?:\$ )?(?:\.venv/bin/|\./\.venv/bin/)?(newsroom|make) ")


def code_lines(text: str) -> list[str]:
    """The lines of ``text``'s code blocks (```sh/```bash/``` fences and 4-space indented blocks), continuation
    backslashes joined."""
    out, fenced, buf = [], False, ""
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            code = line.strip()
            if buf:
                code = buf + " " + code
            if code.endswith("\\"):
                buf = code[:-1].rstrip()
                continue
            buf = ""
            out.append(code)
    return out


def simplest(line: str) -> list[str]:
    """The words of the simplest form of a usage line (see the module docstring); its comment dropped."""
    line = re.sub(r"\s+#.*$", "", line)
    line = re.sub(r"^(?:\$ )?(?:\./)?\.venv/bin/", "", line)
    while True:
        cut = re.sub(r"\[[^\[\]]*\]", "", line)
        if cut == line:
            break
        line = cut
    line = re.sub(r"\(([^()|]*?)\s*\|[^()]*\)", r"\1", line)
    line = re.split(r"\s(?:\|\||&&|\||;|>)\s", line)[0]  # the first command of a shell line
    line = re.sub(r"(?<=\s)\.\.\.(?=\s|$)", "", line)  # "more flags as above" (a quoted "..." stays a value)
    for name, value in EXAMPLES.items():  # a variable whose value the parser checks
        line = line.replace(name, value)
    words, kept = shlex.split(line), []
    for w in words:
        if re.fullmatch(r"\$\{?\w+\}?", w) and not (kept and kept[-1].startswith("-") and "=" not in kept[-1]):
            continue  # a variable holding flags ($STORE, $CLOUD)
        kept.append(re.sub(r"^(--[\w-]+=|)([\w.:/-]+)\|[\w.|:/-]+$", r"\1\2", w))
    return kept


def problems(argv: list[str], makefile: str) -> str | None:
    """Why ``argv`` (a ``newsroom`` or ``make`` command) would fail to parse, or None."""
    if argv[0] == "make":
        missing = [t for t in argv[1:] if not t.startswith("-") and not re.search(rf"^{re.escape(t)}:", makefile, re.M)]
        return f"no Makefile target {missing}" if missing else None
    words = argv[1:]
    if not words or words[0] not in cli.COMMANDS:
        return f"no newsroom command {words[:1]}"
    parser = cli.build_parser(only=words[0])
    try:
        args, rest = parser.parse_known_args(words)
        if words[0] in cli.BEAM_JOBS:
            unknown = beam_unknown(rest)
            return f"flags neither the job's nor Beam's: {unknown}" if unknown else None
        parser.parse_args(words)
    except SystemExit:
        return "the parser refused it"
    return None


def documented_commands() -> list[tuple[str, str, list[str]]]:
    found = []
    for doc in DOCS:
        for line in code_lines(doc.read_text(encoding="utf-8")):
            if PROMPT.match(line) and not re.match(r"^\S+ [\w-]+:", line):  # not a quoted output line
                found.append((doc.relative_to(ROOT).as_posix(), line, simplest(line)))
    return found


def test_the_docs_quote_commands():
    docs = {doc for doc, _, _ in documented_commands()}
    assert {"README.md", "docs/analysts.md", "docs/operations.md", "docs/architecture.md"} <= docs


def test_every_documented_command_parses(capsys):
    makefile = (ROOT / "Makefile").read_text()
    bad = []
    for doc, line, argv in documented_commands():
        why = problems(argv, makefile)
        if why:
            bad.append(f"{doc}: {line}\n    -> {why}")
    capsys.readouterr()
    assert not bad, "commands in the docs that would not run:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "line, expected",
    [
        ("newsroom evaluate --gold g.jsonl --pred p.jsonl", None),
        ("newsroom evaluate --gold g.jsonl --pred p.jsonl --nope", "refused"),
        ("newsroom evaluate", "refused"),
        ("newsroom evalute --gold g.jsonl", "no newsroom command"),
        ("newsroom backfill --input a.jsonl --output out --runer=DirectRunner", "neither"),
        ("make run", None),
        ("make runn", "no Makefile target"),
        (".venv/bin/newsroom explain --output DIR (--story ID | --article ID)   # why", None),
        ("newsroom backfill --input 'a*.jsonl' --output DIR [--from 2014-03-01] [--links auto|on|off]", None),
    ],
)
def test_the_checker_refuses_a_planted_bad_command(line, expected, capsys):
    why = problems(simplest(line), (ROOT / "Makefile").read_text())
    capsys.readouterr()
    assert (why is None) if expected is None else (why is not None and expected in why), why


def test_code_lines_join_continuations_and_skip_prose():
    text = "prose newsroom run\n\n```sh\nnewsroom run \\\n  --minutes 5\n```\n    make test   # x\n"
    assert code_lines(text) == ["newsroom run --minutes 5", "make test   # x"]
