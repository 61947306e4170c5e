"""``newsroom rollback``: move a page's (or an edition's pool's) latest pointer back to an earlier version.

Reads the pointer's move history and checks the target snapshot object exists; writes one compare-and-set move
(``PointerStore.rollback``, reason "rollback") on either backend. The origin reloads a page when its pointer moves,
so readers get the older version within a watch interval. The next good ranking cycle whose content differs from
the live version publishes again and moves the pointer forward: a rollback is a stop-gap while the cause is fixed
(stop the job, or roll back again) -- or hold the page: ``--hold 2h`` rolls back and freezes the page at that
version until the hold expires (an editorial hold, stores/controls.py: the publisher does not move a held pointer;
``newsroom control clear --kind hold`` ends it early).

Every rollback needs ``--reason`` (status 2 without one, nothing moved: like every operator action, it is kept in
the audit trail) and is audited (stores/audit.py: action ``rollback``, who = ``--who``, why = ``--reason``), then
the hold (``control-hold``), and the CDN is asked to purge the page (stores/cdn.py). ``--to-version`` is a decimal
from 1 to 2^63 - 1 (status 2 otherwise).

    newsroom rollback --edition us-en --section top --reason "..."     # to the version live before this one
    newsroom rollback --edition us-en --section top --to-version 28488241 --reason "..."
    newsroom rollback --edition us-en --pool --reason "..."            # the For you candidate pool
    newsroom rollback --edition us-en --section top --list             # history only
    newsroom rollback --edition us-en --section top --hold 2h --reason "bad ranking after deploy"

Store flags are the same as pipelines/options.py ``StoreOptions`` plus ``--project``. Imports nothing heavy.
"""

from __future__ import annotations

import sys

from pipelines.command_errors import utc_text


def add_arguments(parser) -> None:
    parser.add_argument("--edition", required=True, help="Edition id, e.g. us-en (editions.json).")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--section", help="Section id, e.g. top (editions.json).")
    target.add_argument("--pool", action="store_true", help="Roll back the edition's candidate pool instead of a page.")
    parser.add_argument(
        "--to-version",
        "--to_version",
        dest="to_version",
        type=int,
        default=None,
        help="Version to make live again (it must have been live before). Default: the version live before the "
        "current one.",
    )
    parser.add_argument("--list", action="store_true", help="Print the pointer's history and exit without moving it.")
    parser.add_argument(
        "--hold",
        default=None,
        help="Also hold the page at the version rolled back to, for this long (90s, 30m, 2h, 1d or an ISO time; at "
        "most 7 days): the next cycles do not move it. Needs --reason. Pages only.",
    )
    from pipelines.commands.control import add_operator_arguments

    add_operator_arguments(parser, "Why (audit trail). Required, except with --list.")


def _when(ms) -> str:
    if not ms:
        return "-"
    return utc_text(ms)


def main(args) -> int:
    from pipelines.commands.control import CommandError, decimal_id, load_input, require_reason, shown
    from schemas.pages import page_path, pool_path
    from stores import NotFound, config_from_args, open_stores
    from transforms.editions.vocabulary.config import load_config

    config = (
        load_input("--editions", args.editions, load_config, "an editions file") if args.editions else load_config()
    )
    try:
        edition = config.edition(args.edition)
    except KeyError:
        print(f"--edition: unknown edition {args.edition!r} (see editions.json)", file=sys.stderr)
        return 2
    if args.pool:
        pointer = f"pool/{edition.id}"

        def path(v: int) -> str:
            return pool_path(edition.id, v)

    else:
        if args.section not in edition.sections:
            print(
                f"--section: {edition.id} has no section {args.section!r}; it has {', '.join(edition.sections)}",
                file=sys.stderr,
            )
            return 2
        pointer = f"{edition.id}/{args.section}"

        def path(v: int) -> str:
            return page_path(edition.id, args.section, v)

    try:
        store_config = config_from_args(args)
        if not args.list:
            require_reason(args)
            if args.to_version is not None:
                decimal_id(str(args.to_version), "--to-version")
        hold_until = _hold_until(args)
    except (ValueError, CommandError) as exc:
        print(shown(exc), file=sys.stderr)
        return 2
    stores = open_stores(store_config)
    current = stores.pointers.get(pointer)
    history = stores.pointers.history(pointer)
    if args.list or current is None:
        if current is None:
            print(f"{pointer}: no pointer (nothing was ever published there)", file=sys.stderr)
        for h in history:
            print(f"{_when(h['at'])}  v{h['version']}  from v{h['previous']}  {shown(h['reason'])}")
        return 0 if current is not None else 1
    target = args.to_version
    if target is None:  # the version live before the current one (what PointerStore.rollback picks)
        earlier = [h["version"] for h in history if h["version"] < current]
        if not earlier:
            print(f"{pointer}: no version before v{current} to roll back to", file=sys.stderr)
            return 1
        target = max(earlier)
    if not stores.snapshots.exists(path(target)):  # a pointer must never name a missing object
        print(f"{pointer}: {path(target)} does not exist in the snapshot store; pointer not moved", file=sys.stderr)
        return 1
    try:
        now = stores.pointers.rollback(pointer, target)
    except (NotFound, ValueError) as exc:
        print(f"{pointer}: {exc}", file=sys.stderr)
        return 1
    print(f"{pointer}: v{current} -> v{now}")
    return _after_rollback(args, store_config, stores, pointer, current, now, hold_until)


def _hold_until(args) -> int | None:
    """``--hold``'s end (ms), None without it; ValueError (status 2) for a bad --hold (main checked --reason)."""
    import time

    from pipelines.commands.control import CommandError, parse_expires

    if args.hold is None:
        return None
    if args.pool:
        raise ValueError("--hold: a hold freezes a page; the pool cannot be held")
    try:
        return parse_expires(args.hold, int(time.time() * 1000))
    except CommandError as exc:
        raise ValueError(str(exc).replace("--expires", "--hold")) from None


def _after_rollback(args, store_config, stores, pointer: str, previous: int, now: int, hold_until) -> int:
    """Audit the rollback, hold the page when asked, purge it at the CDN."""
    from pipelines.commands.control import CommandError, Hold, describe, purge, set_hold
    from stores.audit import open_audit_log
    from stores.controls import open_control_store

    why = args.reason.strip()
    audit = open_audit_log(store_config)
    target = f"page:{pointer}" if not args.pool else pointer
    audit.record("rollback", target, why, who=args.who, detail={"from": previous, "to": now})
    status = 0
    if hold_until is not None:
        try:
            hold = Hold(pointer, now, hold_until, why, args.who)
            control = set_hold(stores, open_control_store(store_config), audit, hold)
            print(f"{pointer}: {describe(control)}")
        except CommandError as exc:
            print(str(exc), file=sys.stderr)
            status = exc.status
    if not args.pool and now != previous:
        purge(store_config, args.cdn, [pointer], f"rollback {pointer} to v{now}: {why}", url_map=args.cdn_url_map)
    return status
