"""``newsroom run --feeds FILE``: a feed list of the operator's own (JSON or OPML) instead of the sample world.

Before anything starts, :func:`prepare`:

1. imports the file into the run's stores, as ``newsroom publishers import`` and ``newsroom feeds import`` would:
   a publishers document's rows become the stored publisher registry (merged by id), which every job of the run
   reads (transforms/publisher_store.py), and its feeds (or the OPML/JSON feed rows) go to the feeds table, which
   the local ingest job reads (``--feeds=table``). A bad row stops the run at once with its line and reason;
2. vets every enabled feed's address with the ingest job's own guard (transforms/ingest/guard.py) and prints each
   refusal at once, with the flag that lifts it: a feed on this machine (127.0.0.1, localhost) or a private
   network is refused unless ``--allow_hosts host:port`` lists it. When no feed is left, the run stops with status
   2 instead of polling nothing for minutes.
"""

from __future__ import annotations

import sys
from urllib.parse import urlsplit

from pipelines.commands.control import CommandError, shown
from pipelines.commands.feeds import import_feeds
from pipelines.commands.publishers import merge, read_file, report_rows, stored_rows

DNS_TIMEOUT_S = 3.0


def import_publishers(config, path: str, text: str, say) -> None:
    """The file's publishers (a publishers document) merged into the stored registry; nothing for a feed list."""
    import json

    from stores import open_stores
    from transforms import publisher_store
    from transforms.registry_files import RowError, is_opml, json_rows, read_publishers

    if is_opml(text):
        return
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return  # JSON lines of feeds: read_feeds reports their lines
    if not (isinstance(doc, dict) and "publishers" in doc):
        return
    try:
        rows = read_publishers(text)
        lines = {r["publisher_id"]: n for n, r in json_rows(text, "publishers") if isinstance(r, dict)}
        stores = open_stores(config)
        _, stored = stored_rows(stores)
        merged = merge(stored, rows, lines, replace=False)
    except (RowError, ValueError) as exc:
        raise report_rows(path, exc) from None
    version = publisher_store.publish(stores, merged, reason=f"newsroom run --feeds {path}")
    say(f"publisher registry v{version}: {len(rows)} publishers from {shown(path)} (every job reads it)")


def refusals(entries: list[dict], allow: str, resolver=None) -> list[tuple[str, str]]:
    """(url, reason) of each enabled feed the ingest job's guard would refuse."""
    from transforms.ingest.guard import AddressGuard, BlockedAddress

    guard = AddressGuard(None, resolver=resolver, allow=allow)
    out = []
    for e in entries:
        if not e.get("enabled", True):
            continue
        parts = urlsplit(e["url"])
        try:
            guard.resolve(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80), DNS_TIMEOUT_S)
        except BlockedAddress as exc:
            out.append((e["url"], f"{exc.reason}: {exc.detail}"))
    return out


def prepare(args, config, say, resolver=None) -> int:
    """Import ``args.feeds`` and vet its feeds (module docstring); 0 to go on, else the exit status."""
    from stores.feeds import open_feed_store

    path = args.feeds
    try:
        text = read_file(path, "--feeds")
        import_publishers(config, path, text, say)
        new, changed = import_feeds(config, path, who="newsroom run")
    except CommandError as exc:
        print(f"newsroom run: --feeds {shown(path)}: {exc}", file=sys.stderr)
        return exc.status
    entries = [e for e in open_feed_store(config).list_feeds() if e.get("enabled", True)]
    refused = refusals(entries, getattr(args, "allow_hosts", "") or "", resolver)
    for url, reason in refused:
        print(f"newsroom run: feed refused: {shown(url)}: {shown(reason)}", file=sys.stderr, flush=True)
    left = len(entries) - len(refused)
    say(f"feeds: {new} new, {changed} changed from {shown(path)}; {left} of {len(entries)} enabled feed(s) reachable")
    if left == 0:
        print(
            "newsroom run: no feed can be fetched (see above); a feed on this machine needs --allow_hosts HOST:PORT",
            file=sys.stderr,
        )
        return 2
    return 0
