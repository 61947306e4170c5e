"""``newsroom publishers``: the publisher registry as data (no rebuild, no restart).

    newsroom publishers import FILE [--replace] [--dry_run]   # JSON: docs/operations.md "Publishers and feeds"
    newsroom publishers export [--output FILE]
    newsroom publishers list

The registry lives in the stores (transforms/publisher_store.py: a versioned document behind the ``publishers``
pointer, on the embedded backend and on Bigtable + GCS alike); the running stories job (normalisation, syndication,
bursts, the ranker) reads it again within ``REFRESH_S`` (3 minutes). Until the first import the jobs use their
``--publishers`` file, else the packaged sample world's registry.

Import checks every row first (transforms/registry_files.py) and writes nothing when one is bad: each bad row is
one ``FILE line N: reason`` line on stderr and the status is 2. Rows are merged into the stored registry by
publisher_id (a row replaces the stored row of its id); ``--replace`` makes the file the whole registry. A host
that a stored publisher of another id already claims is refused. Every import is an audit entry
(``publishers-import``) and a pointer move, so ``PointerStore.rollback("publishers")`` goes back to the previous
registry.
"""

from __future__ import annotations

import sys

from pipelines.command_errors import write_text_output
from pipelines.commands.control import CommandError, refused, shown


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=("import", "export", "list"), help="What to do.")
    parser.add_argument("file", nargs="?", default=None, help="import: the publishers file (JSON).")
    parser.add_argument("--replace", action="store_true", help="import: the file becomes the whole registry.")
    parser.add_argument("--dry_run", action="store_true", help="import: check the file and say what would change.")
    parser.add_argument("--output", default=None, help="export: write here instead of stdout.")
    parser.add_argument("--who", help="Who imports (audit trail). Default: $NEWSROOM_OPERATOR, else user@host.")
    from stores import add_store_arguments

    add_store_arguments(parser, with_project=True)


def main(args) -> int:
    return refused(lambda: _main(args))


def read_file(path: str | None, action: str) -> str:
    if not path:
        raise CommandError(f"{action}: name the file to import")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{shown(path)}: cannot read it: {shown(exc)}") from None


def report_rows(path: str, exc) -> CommandError:
    """A file's bad rows, one stderr line each; the CommandError (status 2) that ends the command."""
    from transforms.registry_files import RowError

    errors = exc.errors if isinstance(exc, RowError) else [(None, str(exc))]
    for line, reason in errors:
        where = f" line {line}" if line else ""
        print(f"{shown(path)}{where}: {shown(reason)}", file=sys.stderr)
    return CommandError(f"{len(errors)} bad row(s) in {shown(path)}: nothing imported")


def stored_rows(stores) -> tuple[int | None, list[dict]]:
    from transforms import publisher_store

    version, rows = publisher_store.load(stores)
    return version, rows or []


def merge(stored: list[dict], new: list[dict], lines: dict[str, int], replace: bool) -> list[dict]:
    """The registry after an import; CommandError-free: a host conflict is a RowError naming the file's line."""
    from transforms.registry_files import RowError

    ids = {r["publisher_id"] for r in new}
    kept = [] if replace else [r for r in stored if r["publisher_id"] not in ids]
    owner = {h: r["publisher_id"] for r in kept for h in r["hosts"]}
    errors = [
        (
            lines[r["publisher_id"]],
            f"publisher {r['publisher_id']!r}: host {h!r} belongs to stored publisher {owner[h]!r}",
        )
        for r in new
        for h in r["hosts"]
        if h in owner
    ]
    if errors:
        raise RowError(errors)
    return sorted(kept + new, key=lambda r: r["publisher_id"])


def _main(args) -> int:
    from stores import config_from_args, open_stores

    stores = open_stores(config_from_args(args))
    if args.action == "import":
        return _import(args, stores)
    version, rows = stored_rows(stores)
    if version is None:
        print(
            "no publisher registry imported yet: the jobs use their --publishers file, else the packaged sample "
            "(newsroom publishers import FILE)",
            file=sys.stderr,
        )
    if args.action == "export":
        from transforms.registry_files import publishers_json

        write_text_output(publishers_json(rows), args.output, f"{len(rows)} publishers (registry v{version})")
        return 0
    for r in rows:
        feeds = len(r.get("feeds", []))
        print(
            f"{shown(r['publisher_id'])}\t{shown(r['name'])}\t{r['region'] or '-'}\t{r['language']}\t"
            f"{r.get('tier', 'long_tail')}\t{','.join(shown(h) for h in r['hosts'])}\t{feeds} feed(s)"
        )
    if version is not None:
        print(f"{len(rows)} publishers (registry v{version})", file=sys.stderr)
    return 0


def _import(args, stores) -> int:
    from stores.audit import open_audit_log, operator
    from transforms import publisher_store
    from transforms.registry_files import RowError, json_rows, read_publishers

    text = read_file(args.file, "import")
    try:
        new = read_publishers(text)
        lines = {r["publisher_id"]: n for n, r in json_rows(text, "publishers") if isinstance(r, dict)}
        version, stored = stored_rows(stores)
        merged = merge(stored, new, lines, args.replace)
    except (RowError, ValueError) as exc:
        raise report_rows(args.file, exc) from None
    before = {r["publisher_id"]: r for r in stored}
    added = sum(1 for r in new if r["publisher_id"] not in before)
    changed = sum(1 for r in new if r["publisher_id"] in before and before[r["publisher_id"]] != r)
    dropped = len(before) - len({r["publisher_id"] for r in merged} & set(before))
    summary = f"{added} added, {changed} changed, {dropped} removed, {len(merged)} in the registry"
    if args.dry_run:
        print(f"dry run: {summary}; nothing written")
        return 0
    who = args.who or operator()
    new_version = publisher_store.publish(stores, merged, reason=f"publishers import by {who}")
    audit = open_audit_log(config_of(args))
    audit.record(
        "publishers-import",
        "registry:publishers",
        f"{summary} from {args.file}",
        who=who,
        detail={"version": new_version, "previous": version},
    )
    print(
        f"publisher registry v{new_version}: {summary}; running jobs read it within "
        f"{int(publisher_store.REFRESH_S // 60)} minutes"
    )
    feeds = sum(len(r.get("feeds", [])) for r in new)
    if feeds:
        print(f"the rows list {feeds} feed(s): register them with `newsroom feeds import {shown(args.file)}`")
    return 0


def config_of(args):
    from stores import config_from_args

    return config_from_args(args)
