"""The operators' audit trail: who changed what the public sees, when, and why (takedowns and editorial controls).

Every takedown, editorial control (pin, demote, label, hold), rollback and their removals append one entry here,
written by the command that made the change, before it reports success. Entries are never updated or deleted by
the application (the table has no GC rule that ages them out): the trail is what answers "who removed this
article, and on whose request?" months later.

An entry: ``{"at": ms, "action": "takedown", "target": "article:ab12...", "who": "alice@host", "why": "court
order 2026-114", "detail": {...}}``. ``who`` is the caller's identity (the ``--who`` flag of the commands, else
``$NEWSROOM_OPERATOR``, else the local user and host); ``why`` must not be empty.

Backends behind one interface, like the other stores:

- :class:`EmbeddedAuditLog`: table ``audit`` in the embedded SQLite file.
- :class:`BigtableAuditLog`: table ``audit``, one row per entry, key ``a#{at:013d}#{sub-ms:06d}{random}`` (time
  order, no hot-spotting concern at operator rates), cell ``m:entry`` = the JSON entry. The key carries the
  nanoseconds within the millisecond, taken from a clock that never goes backwards in the process, so two entries
  one script writes in the same millisecond (a takedown and its lift) read back in the order written; a random
  key part alone ordered them by chance.
"""

from __future__ import annotations

import abc
import getpass
import json
import os
import socket
import threading
import time
import uuid

from stores.base import StoreError


def operator(who: str | None = None) -> str:
    """The identity an audit entry records: ``who``, else $NEWSROOM_OPERATOR, else user@host."""
    if who:
        return who
    env = os.environ.get("NEWSROOM_OPERATOR")
    if env:
        return env
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry (a container): still say where it came from
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


_clock_lock = threading.Lock()
_last_ns = 0


def _entry_ns() -> int:
    """Wall-clock nanoseconds, strictly increasing within this process (entries keep their write order)."""
    global _last_ns
    with _clock_lock:
        _last_ns = max(time.time_ns(), _last_ns + 1)
        return _last_ns


class AuditLog(abc.ABC):
    """Append-only log of operator actions."""

    def record(self, action: str, target: str, why: str, who: str | None = None, detail: dict | None = None) -> dict:
        """Append one entry and return it. Raises ValueError when ``action``, ``target`` or ``why`` is empty."""
        if not action or not target:
            raise ValueError("an audit entry needs an action and a target")
        if not why or not why.strip():
            raise ValueError("an audit entry needs a reason (--reason)")
        ns = _entry_ns()
        entry = {
            "at": ns // 1_000_000,
            "action": action,
            "target": target,
            "who": operator(who),
            "why": why.strip(),
            "detail": detail or {},
        }
        self._append(entry, ns % 1_000_000)
        return entry

    @abc.abstractmethod
    def _append(self, entry: dict, sub_ms_ns: int) -> None:
        """Store ``entry``; ``sub_ms_ns`` (0-999,999) orders entries of the same ``at`` millisecond."""

    @abc.abstractmethod
    def entries(self, target_prefix: str = "", since_ms: int = 0, limit: int = 1000) -> list[dict]:
        """Entries at or after ``since_ms`` whose target starts with ``target_prefix``, oldest first, at most
        ``limit``."""


_DDL = """
CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, target TEXT NOT NULL,
    entry TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_at ON audit(at);
"""


class EmbeddedAuditLog(AuditLog):
    def __init__(self, db):
        """``db``: a :class:`stores.embedded.Database`."""
        self.db = db
        self.db.connect().executescript(_DDL)

    def _append(self, entry: dict, sub_ms_ns: int) -> None:
        # the AUTOINCREMENT id already keeps the write order of one file
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO audit (at, target, entry) VALUES (?, ?, ?)",
                (entry["at"], entry["target"], json.dumps(entry, sort_keys=True)),
            )

    def entries(self, target_prefix: str = "", since_ms: int = 0, limit: int = 1000) -> list[dict]:
        rows = (
            self.db.connect()
            .execute(
                "SELECT entry FROM audit WHERE at >= ? AND substr(target, 1, ?) = ? ORDER BY at, id LIMIT ?",
                (int(since_ms), len(target_prefix), target_prefix, int(limit)),
            )
            .fetchall()
        )
        return [json.loads(r[0]) for r in rows]


FAMILY = "m"
COLUMN = b"entry"


class BigtableAuditLog(AuditLog):
    """The ``audit`` table of a Bigtable instance (honours BIGTABLE_EMULATOR_HOST through the client)."""

    def __init__(self, table):
        self.table = table

    def _append(self, entry: dict, sub_ms_ns: int) -> None:
        from schemas.tables import audit_key

        row = self.table.direct_row(audit_key(entry["at"], f"{sub_ms_ns:06d}{uuid.uuid4().hex[:8]}"))
        row.set_cell(FAMILY, COLUMN, json.dumps(entry, sort_keys=True).encode())
        try:
            row.commit()
        except Exception as exc:  # grpc / google.api_core errors
            raise StoreError(f"audit: cannot append {entry['action']} {entry['target']}: {exc}") from exc

    def entries(self, target_prefix: str = "", since_ms: int = 0, limit: int = 1000) -> list[dict]:
        from google.cloud.bigtable import row_filters

        from schemas.tables import audit_key

        out = []
        try:
            rows = self.table.read_rows(
                start_key=audit_key(int(since_ms), ""),
                end_key=b"a$",  # the end of the a# prefix
                filter_=row_filters.CellsColumnLimitFilter(1),
            )
            for row in rows:
                cells = row.cells.get(FAMILY, {}).get(COLUMN)
                if not cells:
                    continue
                entry = json.loads(cells[0].value)
                if entry["target"].startswith(target_prefix):
                    out.append(entry)
                    if len(out) >= limit:
                        break
        except Exception as exc:
            raise StoreError(f"audit: cannot read entries: {exc}") from exc
        return out


def open_audit_log(config=None) -> AuditLog:
    """The audit log a :class:`stores.StoreConfig` describes (embedded by default)."""
    from stores import open_store

    return open_store("audit", config)
