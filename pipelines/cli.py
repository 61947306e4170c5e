"""The ``newsroom`` command. Each subcommand lives in its own module, imported only when used (Beam and the
models are slow to import).

``COMMANDS`` below is the one table of subcommands (name -> module, help), and a new command is one row here. A
module named there has no argparse entry point of its own (``python -m pipelines.cli serve ...`` is how tests start
the origin); the Beam jobs keep ``python -m pipelines.JOB``, which calls the same ``run(argv)``. The developer tools
(``stack``: devtools/emulators.py) are rows like the others. tests/pipelines/test_cli.py parses ``--help`` of every
row and checks that ``newsroom serve`` does not import Beam.

Errors (pipelines/command_errors.py, around every subcommand): a bad flag, an unreadable or wrong-shaped input and,
for the commands in ``READS_STORES``, an embedded data dir that does not exist are one line on stderr and status 2,
never a traceback; what a command prints goes through a filter that escapes control characters (untrusted text).

Where the modules live: the Beam jobs in pipelines/ (``pipelines.JOB``), every other product command in the commands
layer (pipelines/commands/), and the developer tools (``stack``, ``run``) in devtools/, which is not installed with
the package: from a clone they are found beside the installed packages (:func:`clone_root`); from a wheel install
the command says where to run them instead of failing with a traceback (tests/deploy/test_wheel.py).

Two kinds of subcommand:

- Commands (``stack``, ``run``, ``evaluate``, ``explain``, ``extract``, ``serve``, ``rollback``, ``control``, ``takedown``,
  ``publishers``, ``feeds``, ...): the module exposes
  ``add_arguments(parser)`` and ``main(args) -> int``; argparse refuses unknown flags.
- Beam jobs (``backfill``, ``stories``, ``ingest``, ``covisit``, ``authority``, ``userclusters``): Beam's option convention. ``newsroom JOB ARGS`` is exactly
  ``python -m pipelines.JOB ARGS``: the arguments go unchanged to the job's ``run(argv)``, which parses them with
  PipelineOptions, so every flag the job does not define is Beam's (``--runner``, ``--project``, ``--region``,
  ``--temp_location``, ``--sdk_container_image``, ``--dry_run`` ...). The job's own flags are checked first
  (a missing required flag or a bad choice fails with argparse's message) and listed by ``newsroom JOB --help``;
  a flag that neither the job nor any Beam options class defines is refused (:func:`beam_unknown`), where Beam
  alone would only log "Unparseable argument" and run without it.
  A ValueError from the job (an inconsistent flag, named in its message) exits with status 2 and no traceback.
  With ``--runner=DataflowRunner --dry_run=True`` the job is translated for Dataflow and not submitted; the command
  then prints one line ``newsroom dry run: {json}`` (job type, streaming, top-level steps, Pub/Sub subscriptions
  read) so that an operator, and tests/deploy/test_dry_run.py, see what would have been submitted.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from pipelines.beam_cli import beam_unknown, report_dry_runs
from pipelines.command_errors import CommandError, OneLineParser, run_command, run_job, shown

COMMANDS: dict[str, tuple[str, str]] = {
    "stack": ("devtools.emulators", "start, stop or inspect the local Pub/Sub, Bigtable and GCS emulators"),
    "run": ("devtools.run", "run the whole system on this machine (embedded backends by default)"),
    "backfill": ("pipelines.backfill", "cluster a historical set of articles into stories (batch Beam job)"),
    "stories": ("pipelines.stories", "the stories job: raw items to stories and edition snapshots (Beam job)"),
    "ingest": ("pipelines.ingest", "the ingest job: feeds, pushes and fetches to raw items (Beam job)"),
    "covisit": ("pipelines.covisit", "the co-visitation job: read events to 'also read' neighbours (Beam job)"),
    "authority": ("pipelines.authority", "compute publisher authority per section from the stores (batch Beam job)"),
    "userclusters": ("pipelines.userclusters", "the daily MinHash user clusters of For you (batch Beam job)"),
    "evaluate": ("pipelines.commands.evaluate", "score story assignments against gold labels"),
    "explain": (
        "pipelines.commands.explain",
        "why a backfill put an article in its story (--story, --article)",
    ),
    "export": (
        "pipelines.commands.export",
        "export what the live system decided (assignments) in the backfill's format, from the story store",
    ),
    "diff": (
        "pipelines.commands.diff",
        "compare two runs (backfill outputs or exports): stories split, merged, moved, unchanged",
    ),
    "extract": ("pipelines.commands.extract", "normalise a folder of saved article pages to JSON lines"),
    "serve": ("pipelines.commands.serve", "run the origin (Flask under gunicorn)"),
    "rollback": ("pipelines.commands.rollback", "move a page's latest pointer back to an earlier version"),
    "control": ("pipelines.commands.control", "pin, demote, label or hold an edition page, with expiry"),
    "takedown": ("pipelines.commands.takedown", "take an article or a story down everywhere, or undo it"),
    "fairness": (
        "pipelines.commands.fairness",
        "per-publisher fairness report of an edition's day (JSON, HTML)",
    ),
    "publishers": ("pipelines.commands.publishers", "import, export or list the publisher registry (JSON)"),
    "feeds": ("pipelines.commands.feeds", "import, export, list or disable the ingest job's feeds (JSON, OPML)"),
    "preflight": (
        "pipelines.commands.preflight",
        "is a project ready for a deploy? one line per check, with the command that fixes it",
    ),
    "sizing": (
        "pipelines.commands.sizing",
        "workers, machine types, Bigtable nodes and cost per day for a volume, from measured per-stage costs",
    ),
    "update-check": (
        "pipelines.commands.update_check",
        "can the streaming jobs be updated in place from a git ref, or must they be drained? (and why)",
    ),
}

# Subcommands that are Beam jobs: their arguments go to ``module.run(argv)`` (PipelineOptions) unchanged.
BEAM_JOBS = ("backfill", "stories", "ingest", "covisit", "authority", "userclusters")
# Subcommands that only use stores something else created (``newsroom run``, the jobs, a backfill, an import): with
# the embedded backend, a --data_dir (and --namespace) that does not exist is a mistyped path, refused with exit
# status 2 instead of answering from a new empty store.
READS_STORES = ("fairness", "takedown", "control", "rollback", "serve", "authority", "userclusters")
# ... and the actions of a command that only read or change what is there (an import may seed a new data dir).
READS_STORES_ACTIONS = {"publishers": ("export", "list"), "feeds": ("export", "list", "disable")}
# Subcommands whose output is not passed through command_errors.SafeStream: the origin (its logs are JSON lines).
RAW_OUTPUT = ("serve",)

BEAM_EPILOG = (
    "Any other flag goes to Beam's PipelineOptions unchanged (e.g. --runner=DataflowRunner --project=P "
    "--region=R --temp_location=gs://B/tmp --sdk_container_image=IMAGE, or --dry_run=True to translate without "
    "submitting): `newsroom {job} ARGS` is `python -m pipelines.{job} ARGS`."
)


def _job_arguments(module, parser: argparse.ArgumentParser) -> None:
    """The job's own flags: its ``add_arguments`` when it has one, else those of its options classes."""
    if hasattr(module, "add_arguments"):
        module.add_arguments(parser)
        return
    from pipelines.options import StoreOptions

    # the options classes the job module holds, defined there or imported (pipelines/ingest.py imports its options
    # from pipelines/ingest_options.py), as templates/write_metadata.py reads them
    own = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, StoreOptions)]
    seen: set[type] = set()
    for cls in own:
        for base in cls.__mro__:
            if "_add_argparse_args" in vars(base) and base.__module__.split(".")[0] == "pipelines" and base not in seen:
                seen.add(base)
                base._add_argparse_args(parser)


def clone_root() -> Path | None:
    """The repository checkout this package runs from, when it runs from one: the folder holding ``pipelines/``
    that also holds ``devtools/``. An editable install from a clone (``make``) has one; a wheel install has none
    (its packages sit in site-packages, where no devtools is installed)."""
    spec = importlib.util.find_spec("pipelines")
    if spec is None or not spec.origin:
        return None
    root = Path(spec.origin).resolve().parent.parent
    return root if (root / "devtools" / "__init__.py").is_file() else None


def _import_command(module: str):
    """Import a command's module; a developer tool (``devtools.*``) is found in the clone this package runs from,
    since devtools is not installed with the package (setup.py)."""
    if module.split(".")[0] == "devtools" and importlib.util.find_spec("devtools") is None:
        root = clone_root()
        if root is not None:
            sys.path.append(str(root))  # appended: the installed packages keep precedence
    return importlib.import_module(module)


def _missing_message(name: str, module: str) -> str:
    if module.split(".")[0] == "devtools":
        return (
            f"`newsroom {name}` is a developer tool: it needs devtools/ (the sample world and the local emulators), "
            "which ships with a clone of the repository, not with the installed package. Run it from a clone: "
            f"`make run`, or `.venv/bin/newsroom {name}` after `make setup`."
        )
    return f"`newsroom {name}` is not built yet ({module} is missing)"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand; the module of a subcommand is imported only for ``only`` (or for all when
    ``only`` is None), so ``newsroom serve`` does not import Beam."""
    parser = OneLineParser(prog="newsroom", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        beam_job = name in BEAM_JOBS
        p = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=BEAM_EPILOG.format(job=name) if beam_job else None,
            allow_abbrev=not beam_job,  # a Beam flag must never be taken for a prefix of the job's own
        )
        p.set_defaults(_module=module, _beam_job=beam_job)
        if only is not None and name != only:
            continue
        try:
            mod = _import_command(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                p.set_defaults(_missing=_missing_message(name, module))
                continue
            raise
        if beam_job:
            _job_arguments(mod, p)
        else:
            mod.add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        return _main(argv, name)
    except KeyboardInterrupt:
        # Ctrl-C while the command's modules load (Beam: seconds), before run_command handles it: one line, not
        # importlib's frames
        print(f"newsroom {name or ''}: interrupted while starting; nothing was run".replace("  ", " "), file=sys.stderr)
        return 130


def _main(argv: list[str], name: str | None) -> int:
    parser = build_parser(only=name)
    args, rest = parser.parse_known_args(argv)  # a job's own flags are checked; the rest is Beam's
    missing = getattr(args, "_missing", None)
    if missing:  # before any flag check: the command's flags are unknown when its module is absent
        print(missing, file=sys.stderr)
        return 2
    if rest and name not in BEAM_JOBS:
        args = parser.parse_args(argv)  # argparse refuses the unknown flags, with its usage line
    module = _import_command(args._module)
    if not args._beam_job:
        return run_command(name, lambda: _checked(name, args) or int(module.main(args) or 0), name not in RAW_OUTPUT)
    unknown = beam_unknown(rest)
    if unknown:  # Beam would log "Unparseable argument" and go on: a mistyped flag silently ignored
        flags = shown(" ".join(unknown))
        print(f"newsroom {name}: error: unrecognized arguments: {flags} (see newsroom {name} --help)", file=sys.stderr)
        return 2
    if any(a.startswith("--dry_run") for a in argv):
        report_dry_runs()
    return run_command(name, lambda: _checked(name, args) or run_job(name, module.run, argv[1:]), safe_output=False)


def _checked(name: str, args: argparse.Namespace) -> None:
    """CommandError when ``name`` only reads stores (READS_STORES) and its embedded data dir does not exist."""
    reads = name in READS_STORES or getattr(args, "action", None) in READS_STORES_ACTIONS.get(name, ())
    if not reads or getattr(args, "backend", "embedded") != "embedded":
        return
    if name == "serve" and getattr(args, "issue_token", None):  # prints a signed reader token: reads no store
        return
    data_dir = getattr(args, "data_dir", None) or ".newsroom"
    root = os.path.join(data_dir, args.namespace) if getattr(args, "namespace", "") else data_dir
    if not os.path.isdir(root):
        where = f"--data_dir {shown(data_dir)}" + (f" --namespace {shown(args.namespace)}" if root != data_dir else "")
        raise CommandError(
            f"{where}: no stores there (no folder {shown(root)}); a mistyped path? `newsroom {name}` only reads "
            "stores that `newsroom run`, the jobs or a backfill wrote"
        )


if __name__ == "__main__":
    sys.exit(main())
