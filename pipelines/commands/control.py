"""``newsroom control``: set, clear and list the editorial controls of an edition's pages.

    newsroom control pin    --edition us-en --section top --story 123 --position 1 --expires 2h --reason "..."
    newsroom control demote --edition us-en --section top --story 123 [--factor 0.5] --expires 2h --reason "..."
    newsroom control label  --edition us-en --section top --story 123 --label developing --expires 6h --reason "..."
    newsroom control hold   --edition us-en --section top [--version 28488241] --expires 2h --reason "..."
    newsroom control clear  --edition us-en --section top --kind pin --story 123 --reason "..."
    newsroom control list   --edition us-en [--section top] [--all]
    newsroom control held   --edition us-en

``held`` lists the stories the ranker's trust gates hold out of the edition's top stories (growing fast with only
low-trust sources; transforms/editions/cycle/trust.py), as the live candidate pool (pointer ``pool/{edition}``) records
them: read-only, nothing audited. To let one through, pin it (``pin --section top``).

What each control does, and when: stores/controls.py (records, expiry) and transforms/editions/overlays/controls.py (how
the ranker applies pins, demotes and labels from its next cycle); holds: transforms/editions/publish/snapshots.py.

Checks before anything is written (a refused command writes nothing and says why; status 2 for a bad flag, 1 for
something the stores refuse): the edition and section exist in editions.json; ``--expires`` (``90s``, ``30m``,
``2h``, ``1d`` or an ISO time) is in the future and within 7 days; ``--reason`` is not empty; the story exists
in the story store (a merged story's survivor is used, and said); for a hold, the version's snapshot object
exists and the version was live before (default: the live version).

Every set and clear appends an audit entry (stores/audit.py: action ``control-<kind>`` or
``control-clear-<kind>``, target ``page:{edition}/{section}``, who = ``--who``, else $NEWSROOM_OPERATOR, else
user@host, why = ``--reason``, detail = the record). A hold at an older version moves the pointer back at once
(reason "rollback") and asks the CDN to purge the page (stores/cdn.py); pins, demotes, labels and the end of a
hold change the page on the next cycle, whose normal page TTL bounds the edge's copy. Expired records of the
edition are deleted by every set.

``newsroom rollback --hold 2h --reason ...`` rolls a page back and holds it (pipelines/commands/rollback.py, using
:func:`set_hold`). Store flags are the same as pipelines/options.py ``StoreOptions`` plus ``--project``.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from pipelines.command_errors import CommandError, load_input, shown, utc_text
from stores.controls import KINDS, LABELS, MAX_EXPIRY_MS, Control

_DURATION = re.compile(r"^(\d+)([smhd])$")
_DECIMAL = re.compile(r"[0-9]{1,19}")  # ASCII digits only: str.isdigit() also takes other scripts' digits
MAX_ID = 2**63 - 1  # story ids and page versions: signed 64-bit in every store (SQLite INTEGER, Avro long)
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_expires(text: str, now_ms: int) -> int:
    """``90s``/``30m``/``2h``/``1d`` from now, or an ISO time (UTC when it has no offset) -> ms since the epoch."""
    m = _DURATION.match(text.strip())
    if m:
        at = now_ms + int(m.group(1)) * _UNIT_MS[m.group(2)]
    else:
        try:
            when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise CommandError(
                f"--expires: {text!r} is neither a duration (90s, 30m, 2h, 1d) nor an ISO time"
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        at = int(when.timestamp() * 1000)
    if at <= now_ms:
        raise CommandError(f"--expires: {text!r} is not in the future")
    if at - now_ms > MAX_EXPIRY_MS:
        raise CommandError(f"--expires: {text!r} is more than 7 days away (controls are for the news of the day)")
    return at


def add_arguments(parser) -> None:
    parser.add_argument(
        "action",
        choices=("pin", "demote", "label", "hold", "clear", "list", "held"),
        help="pin: a story at --position; demote: a story down (--factor, else to the bottom); label: a story "
        "with --label; hold: freeze the page at --version; clear: remove one control (--kind, --story); list: "
        "the edition's controls; held: the stories the trust gates hold out of top stories (live pool).",
    )
    parser.add_argument("--edition", required=True, help="Edition id, e.g. us-en (editions.json).")
    parser.add_argument("--section", help="Section id, e.g. top (editions.json). Required except for list.")
    parser.add_argument("--story", help="Story id (decimal) for pin, demote, label and clearing them.")
    parser.add_argument("--position", type=int, default=1, help="pin: 1-based position on the page. Default 1.")
    parser.add_argument(
        "--factor",
        type=float,
        default=None,
        help="demote: move the story below every story scoring over FACTOR x its score (0 < FACTOR < 1). Default: "
        "to the bottom of the page.",
    )
    parser.add_argument("--label", help=f"label: the editorial label shown on the story's entry: {', '.join(LABELS)}.")
    parser.add_argument(
        "--version", type=int, default=None, help="hold: the page version to freeze at. Default: the live one."
    )
    parser.add_argument("--kind", choices=KINDS, help="clear: which control to remove.")
    parser.add_argument(
        "--expires", help="When the control ends: 90s, 30m, 2h, 1d from now, or an ISO time; at most 7 days."
    )
    parser.add_argument("--all", action="store_true", help="list: also the expired records not deleted yet.")
    add_operator_arguments(parser, "Why (kept in the audit trail). Required to set or clear.")


def add_operator_arguments(parser, reason_help: str, editions: bool = True) -> None:
    """The flags every operator command (control, rollback, takedown) shares: ``--reason`` and ``--who`` (the audit
    trail), where purges go (``--cdn``, ``--cdn_url_map``), the editions file (``editions``) and the store flags."""
    parser.add_argument("--reason", help=reason_help)
    parser.add_argument("--who", help="Who asks (audit trail). Default: $NEWSROOM_OPERATOR, else user@host.")
    parser.add_argument(
        "--cdn",
        choices=("none", "queue", "gcp"),
        default=None,
        help="Where purges go: none (no CDN in front, nothing sent), queue (the embedded cdn_purges table the local "
        "edge applies), gcp (Cloud CDN invalidation on --cdn_url_map). Default: queue on the embedded backend, gcp "
        "on the gcp backend.",
    )
    parser.add_argument(
        "--cdn_url_map",
        default=None,
        help="gcp: the origin's URL map (Terraform output url_map). Default: $NEWSROOM_CDN_URL_MAP.",
    )
    if editions:
        parser.add_argument(
            "--editions",
            default=None,
            help="Editions file the edition and section are checked against. Default: the packaged editions.json.",
        )
    from stores import add_store_arguments

    add_store_arguments(parser, with_project=True)


def purge(store_config, cdn: str | None, pointers: list[str], reason: str, url_map: str | None = None) -> None:
    """Ask the CDN to drop the pages of ``pointers``; a purger that cannot be opened is reported, not fatal (the
    pointer has moved; the page TTL bounds the edge's copy)."""
    from stores import StoreError
    from stores.cdn import open_purger

    try:  # gcp: --cdn_url_map / NEWSROOM_CDN_URL_MAP names the URL map (stores/cdn.py); Compute refusing is reported
        request = open_purger(store_config, cdn=cdn, url_map=url_map).purge_pointers(pointers, reason)
    except (ValueError, StoreError) as exc:
        print(f"page not purged at the CDN: {exc}", file=sys.stderr)
        return
    if request is not None:
        print(f"purge requested: {' '.join(request.paths)}")


@dataclass(frozen=True)
class Hold:
    """What an operator asks to hold: ``pointer`` (``{edition}/{section}``) at ``version`` until ``expires_at``
    (ms), with the reason and who asked (None: $NEWSROOM_OPERATOR, else user@host)."""

    pointer: str
    version: int
    expires_at: int
    why: str
    who: str | None


def set_hold(stores, controls, audit, hold: Hold) -> Control:
    """Hold ``hold.pointer`` at ``hold.version`` until ``hold.expires_at``: the record first (so no cycle moves the
    pointer after), then the pointer moved back if it is elsewhere, then the audit entry. Raises CommandError
    (status 1) when the version cannot be served, with nothing left written."""
    from schemas.pages import page_path
    from stores import NotFound
    from stores.audit import operator

    pointer, version = hold.pointer, hold.version
    edition, section = pointer.split("/", 1)
    if not stores.snapshots.exists(page_path(edition, section, version)):
        raise CommandError(f"{pointer}: {page_path(edition, section, version)} does not exist; nothing held", 1)
    current = stores.pointers.get(pointer)
    now = int(time.time() * 1000)
    control = Control(
        "hold", edition, section, now, hold.expires_at, operator(hold.who), hold.why.strip(), version=int(version)
    )
    controls.set(control)
    if current != version:
        try:
            stores.pointers.rollback(pointer, version)
        except (NotFound, ValueError) as exc:
            controls.clear(edition, section, "hold")
            raise CommandError(f"{pointer}: {exc}; nothing held", 1) from None
    audit.record("control-hold", f"page:{pointer}", hold.why, who=hold.who, detail=asdict(control))
    return control


def _page(args, config) -> tuple[str, str | None]:
    try:
        edition = config.edition(args.edition)
    except KeyError:
        raise CommandError(f"--edition: unknown edition {args.edition!r} (see editions.json)") from None
    if args.section is None:
        if args.action not in ("list", "held"):
            raise CommandError("--section is required")
        return edition.id, None
    if args.section not in edition.sections:
        raise CommandError(
            f"--section: {edition.id} has no section {args.section!r}; it has {', '.join(edition.sections)}"
        )
    return edition.id, args.section


def _story(args, stores) -> str:
    if not args.story:
        raise CommandError(
            f"--story is required for {args.action if args.action != 'clear' else '--kind ' + args.kind}"
        )
    sid = decimal_id(args.story, "--story")
    survivor = stores.stories.resolve(sid)
    if stores.stories.get_story(survivor) is None:
        raise CommandError(f"no story {sid} in the story store", 1)
    if survivor != sid:
        print(f"story {sid} was merged into {survivor}: the control applies to {survivor}")
    return str(survivor)


def decimal_id(text: str | None, flag: str) -> int:
    """A story id or a page version given on the command line: 1..MAX_ID in ASCII decimal; CommandError (status
    2) otherwise, before any store sees it (a larger int overflowed SQLite with a traceback)."""
    value = (text or "").strip()
    if not _DECIMAL.fullmatch(value) or not 0 < int(value) <= MAX_ID:
        raise CommandError(f"{flag}: {text!r} is not a decimal id from 1 to {MAX_ID}")
    return int(value)


def refused(run: Callable[[], int]) -> int:
    """``run()``'s status; a refusal (:class:`CommandError`, or a ValueError for a malformed flag value) is printed
    on stderr and becomes the status (1 or 2), with nothing written. The operator commands' one error policy."""
    try:
        return run()
    except CommandError as exc:
        print(shown(exc), file=sys.stderr)
        return exc.status
    except ValueError as exc:
        print(shown(exc), file=sys.stderr)
        return 2


def require_reason(args) -> str:
    if not args.reason or not args.reason.strip():
        raise CommandError("--reason: say why (it is kept in the audit trail)")
    return args.reason.strip()


def main(args) -> int:
    return refused(lambda: _main(args))


def _main(args) -> int:
    from stores import config_from_args
    from transforms.editions.vocabulary.config import load_config

    config = (
        load_input("--editions", args.editions, load_config, "an editions file") if args.editions else load_config()
    )
    edition, section = _page(args, config)
    store_config = config_from_args(args)
    if args.action == "list":
        return _list(args, store_config, edition, section)
    if args.action == "held":
        return _held(store_config, edition)
    require_reason(args)
    if args.action == "clear":
        return _clear(args, store_config, edition, section)
    return _set(args, store_config, edition, section)


def _open(store_config):
    from stores import open_stores
    from stores.audit import open_audit_log
    from stores.controls import open_control_store

    return open_stores(store_config), open_control_store(store_config), open_audit_log(store_config)


def _set(args, store_config, edition: str, section: str) -> int:
    from stores.audit import operator

    now = int(time.time() * 1000)
    if not args.expires:
        raise CommandError("--expires is required: every control ends (90s, 30m, 2h, 1d or an ISO time)")
    expires_at = parse_expires(args.expires, now)
    stores, controls, audit = _open(store_config)
    pointer = f"{edition}/{section}"
    if args.action == "hold":
        current = stores.pointers.get(pointer)
        version = decimal_id(str(args.version), "--version") if args.version is not None else current
        if version is None:
            raise CommandError(f"{pointer}: no pointer (nothing was ever published there); nothing held", 1)
        control = set_hold(stores, controls, audit, Hold(pointer, version, expires_at, args.reason, args.who))
        if current != version:
            print(f"{pointer}: v{current} -> v{version}")
            purge(
                store_config,
                args.cdn,
                [pointer],
                f"hold {pointer} at v{version}: {args.reason.strip()}",
                url_map=args.cdn_url_map,
            )
    else:
        story = _story(args, stores)
        fields = {"pin": {"position": args.position}, "demote": {"factor": args.factor}, "label": {"label": args.label}}
        try:
            control = Control(
                args.action, edition, section, now, expires_at, operator(args.who), args.reason.strip(),
                story_id=story, **fields[args.action],
            )  # fmt: skip
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        controls.set(control)
        audit.record(f"control-{args.action}", f"page:{pointer}", args.reason, who=args.who, detail=asdict(control))
    controls.remove_expired(edition, now)
    print(f"{pointer}: {describe(control)}")
    return 0


def _clear(args, store_config, edition: str, section: str) -> int:
    if args.kind is None:
        raise CommandError("--kind: which control to clear (pin, demote, label, hold)")
    stores, controls, audit = _open(store_config)
    story = "" if args.kind == "hold" else _story(args, stores)
    pointer = f"{edition}/{section}"
    removed = controls.clear(edition, section, args.kind, story)
    if removed is None:
        raise CommandError(f"{pointer}: no {args.kind}{' of story ' + story if story else ''} to clear", 1)
    audit.record(f"control-clear-{args.kind}", f"page:{pointer}", args.reason, who=args.who, detail=asdict(removed))
    print(f"{pointer}: cleared {describe(removed)}" + (" (the next cycle publishes)" if args.kind == "hold" else ""))
    return 0


def _list(args, store_config, edition: str, section: str | None) -> int:
    from stores.controls import open_control_store

    now = int(time.time() * 1000)
    for c in open_control_store(store_config).edition_controls(edition):
        if section is not None and c.section != section:
            continue
        expired = c.expires_at <= now
        if expired and not args.all:
            continue
        print(f"{c.pointer}  {describe(c)}{'  (expired)' if expired else ''}")
    return 0


def _held(store_config, edition: str) -> int:
    """Print the held stories of ``edition``'s live candidate pool, one a line; status 1 when none is published."""
    import json

    from schemas.pages import pool_path
    from stores import open_stores

    stores = open_stores(store_config)
    version = stores.pointers.get(f"pool/{edition}")
    if version is None:
        raise CommandError(f"pool/{edition}: no pool published yet; nothing to list", 1)
    doc = json.loads(stores.snapshots.get(pool_path(edition, version)))
    for h in doc.get("held", ()):
        print(
            f"story {h['story_id']}  {h['reason']}: {h['originals_30m']} originals in 30 min, velocity "
            f"x{h['velocity']}, {h['publishers']} publishers, best authority {h['top_authority']} (pool v{version})"
        )
    return 0


def _when(ms: int) -> str:
    return utc_text(ms)


def describe(c: Control) -> str:
    """One line: what the control does, until when, who and why."""
    what = {
        "pin": lambda: f"pin story {c.story_id} at {c.position}",
        "demote": lambda: f"demote story {c.story_id} " + (f"x{c.factor}" if c.factor is not None else "to the bottom"),
        "label": lambda: f"label story {c.story_id} {c.label}",
        "hold": lambda: f"hold at v{c.version}",
    }[c.kind]()
    return f"{what} until {_when(c.expires_at)} by {shown(c.who)}: {shown(c.why)}"
