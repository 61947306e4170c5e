"""The ``newsroom`` command. Each subcommand lives in its own module, imported only when used (Beam and the
models are slow to import), exposing ``add_arguments(parser)`` and ``main(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "stack": ("stores.stack", "start, stop or inspect the local Pub/Sub, Bigtable and GCS emulators"),
    "run": ("pipelines.main", "run the whole system on this machine (embedded backends by default)"),
    "backfill": ("pipelines.backfill", "cluster a historical set of articles into stories (batch)"),
    "evaluate": ("transforms.stories.evaluate", "score story assignments against gold labels"),
    "extract": ("transforms.articles.extract", "normalise a folder of saved article pages to JSON lines"),
    "serve": ("serving.cli", "run the origin (Flask under gunicorn)"),
    "rollback": ("transforms.editions.rollback", "move a page's latest pointer back to an earlier version"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="newsroom", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        try:
            importlib.import_module(module).add_arguments(p)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                p.set_defaults(_missing=f"`newsroom {name}` is not built yet ({module} is missing)")
            else:
                raise
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    missing = getattr(args, "_missing", None)
    if missing:
        print(missing, file=sys.stderr)
        return 2
    return int(importlib.import_module(args._module).main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
