"""``newsroom feeds``: the ingest job's feed registry (the ``feeds`` table) as data.

    newsroom feeds import FILE [--dry_run]           # JSON or OPML: docs/operations.md "Publishers and feeds"
    newsroom feeds export [--format json|opml] [--output FILE]
    newsroom feeds list
    newsroom feeds disable URL [URL ...]

The ingest job launched with ``--feeds=table`` (terraform/modules/stack, and ``newsroom run --feeds``) re-reads the
table every ``--registry_reload_s`` (60 s): an imported feed is polled, a disabled one stops, with no restart.

Import checks every row first (transforms/registry_files.py) against the publisher registry in the stores (the
stored one, else the packaged sample): a ``publisher_id`` must be registered (import publishers first), a feed
without one belongs to its host's publisher. A bad row is one ``FILE line N: reason`` line on stderr, and nothing
is written (status 2). Entries are stored normalised ``{url, publisher_id, tier, kind, enabled}`` (the ingest job
needs no registry of its own to schedule them). Imports and disables are audit entries.
"""

from __future__ import annotations

import sys

from pipelines.command_errors import write_text_output
from pipelines.commands.control import CommandError, refused, shown
from pipelines.commands.publishers import read_file, report_rows


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=("import", "export", "list", "disable"), help="What to do.")
    parser.add_argument("items", nargs="*", help="import: the feeds file (JSON or OPML); disable: feed URLs.")
    parser.add_argument("--dry_run", action="store_true", help="import: check the file and say what would change.")
    parser.add_argument("--format", choices=("json", "opml"), default="json", help="export format. Default: json.")
    parser.add_argument("--output", default=None, help="export: write here instead of stdout.")
    parser.add_argument("--reason", default=None, help="disable: why (audit trail). Default: 'disabled'.")
    parser.add_argument("--who", help="Who asks (audit trail). Default: $NEWSROOM_OPERATOR, else user@host.")
    from stores import add_store_arguments

    add_store_arguments(parser, with_project=True)


def main(args) -> int:
    return refused(lambda: _main(args))


def registry_of(config):
    """The publisher registry feeds are checked against: the stored one, else the packaged sample."""
    from transforms.publisher_store import LiveRegistry

    return LiveRegistry(None, config).registry


def import_feeds(config, path: str, dry_run: bool = False, who: str | None = None) -> tuple[int, int]:
    """Check and write the feeds of ``path``; (new, changed). CommandError (status 2) naming bad rows."""
    from stores.audit import open_audit_log, operator
    from stores.feeds import open_feed_store
    from transforms.registry_files import RowError, read_feeds

    text = read_file(path, "import")
    try:
        entries = read_feeds(text, registry_of(config))
    except (RowError, ValueError) as exc:
        raise report_rows(path, exc) from None
    store = open_feed_store(config)
    before = {e["url"]: e for e in store.list_feeds()}
    new = sum(1 for e in entries if e["url"] not in before)
    changed = sum(1 for e in entries if e["url"] in before and before[e["url"]] != e)
    if dry_run:
        return new, changed
    for e in entries:
        store.put_feed(e)
    open_audit_log(config).record(
        "feeds-import",
        "registry:feeds",
        f"{new} new, {changed} changed from {path}",
        who=operator(who),
        detail={"feeds": len(entries)},
    )
    return new, changed


def _main(args) -> int:
    from stores import config_from_args
    from stores.feeds import open_feed_store

    config = config_from_args(args)
    if args.action == "import":
        if len(args.items) != 1:
            raise CommandError("import: name one feeds file (JSON or OPML)")
        new, changed = import_feeds(config, args.items[0], args.dry_run, args.who)
        verb = "would be" if args.dry_run else "were"
        print(
            f"{new} new and {changed} changed feed(s) {verb} written; an ingest job on --feeds=table polls them "
            "within its --registry_reload_s (60 s)"
        )
        return 0
    store = open_feed_store(config)
    if args.action == "disable":
        return _disable(args, config, store)
    entries = sorted(store.list_feeds(), key=lambda e: e["url"])
    if args.action == "export":
        from transforms.registry_files import feeds_json, feeds_opml

        text = feeds_opml(entries, registry_of(config)) if args.format == "opml" else feeds_json(entries)
        write_text_output(text, args.output, f"{len(entries)} feeds")
        return 0
    for e in entries:
        state = "enabled" if e.get("enabled", True) else "DISABLED"
        print(f"{shown(e['url'])}\t{shown(e.get('publisher_id') or '-')}\t{e.get('tier')}\t{e.get('kind')}\t{state}")
    print(f"{len(entries)} feeds", file=sys.stderr)
    return 0


def _disable(args, config, store) -> int:
    from stores.audit import open_audit_log, operator

    if not args.items:
        raise CommandError("disable: name the feed URL(s)")
    missing = [u for u in args.items if store.get_feed(u) is None]
    if missing:
        raise CommandError(f"not in the feed registry: {', '.join(shown(u) for u in missing)}; nothing disabled", 1)
    audit = open_audit_log(config)
    for url in args.items:
        store.put_feed(dict(store.get_feed(url), enabled=False))
        audit.record("feeds-disable", f"feed:{url}", args.reason or "disabled", who=operator(args.who))
        print(f"disabled {shown(url)}")
    return 0
