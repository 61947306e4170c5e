"""Editorial controls: pin, demote, label and hold, per edition page, with expiry.

A control is a small record next to the page's pointer (keyed by the pointer name ``{edition}/{section}``) that the
editions stage reads every cycle:

- ``pin``: put a story at a position (1-based) of the page, if it is still among the edition's candidates;
- ``demote``: move a story down: to the bottom of the page (no factor), or below every story that outscores
  ``factor`` times its score (0 < factor < 1);
- ``label``: show an editorial label on the story's entry, one of :data:`LABELS`;
- ``hold``: freeze the page at ``version`` (the publisher does not move the pointer while the hold lasts).

Pins, demotes and labels are applied by :mod:`transforms.editions.overlays.controls` in the ranker
(:class:`transforms.editions.ranker.rank.EditionRanker`); holds by :class:`transforms.editions.publish.snapshots.SnapshotPublisher`.
Operators set and clear them with ``newsroom control`` (pipelines/commands/control.py), which also
writes the audit entry (stores/audit.py).

A record is active from ``set_at`` (inclusive) to ``expires_at`` (exclusive), in ms since the epoch, judged against
the *cycle* time it is applied to (a cycle's minute boundary, event time): a backfill replaying last month does
not apply today's pins, and the next streaming cycle after a control is set is the first to apply it. A hold is
honoured by the publisher whatever its ``set_at`` (an item ranked just before the hold was set must not move the
pointer after it). Expiry is at most :data:`MAX_EXPIRY_MS` (7 days) after ``set_at``: controls are overrides for
the news of the day, not configuration. Expired records are ignored by readers; :meth:`ControlStore.remove_expired`
deletes them (``newsroom control`` calls it), and Bigtable's GC (30 days, schemas/tables.py) is the backstop.

One record per (page, kind, story): setting it again replaces it (a hold has no story: one hold per page).

Backends behind one interface, like the other stores:

- :class:`EmbeddedControlStore`: table ``controls`` in the embedded SQLite file.
- :class:`BigtableControlStore`: table ``controls``, row ``c#{edition}/{section}#{kind}#{story_id}``, cell
  ``c:control`` = the JSON record; the controls of an edition are one prefix scan of ``c#{edition}/``.
"""

from __future__ import annotations

import abc
import json
import re
from dataclasses import asdict, dataclass

from stores.base import StoreError

KINDS = ("pin", "demote", "label", "hold")
# Labels an editor may set. The page schema's story labels minus "breaking": Breaking is decided by the data (the
# burst rule) and announced on the breaking topic; an editor who wants a story on top pins it. No "sponsored": the
# product carries no paid placement.
LABELS = ("developing", "opinion", "fact_check")
MAX_EXPIRY_MS = 7 * 24 * 3600 * 1000
MAX_POSITION = 100  # the page schema's maxItems

_SECTION = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_EDITION = re.compile(r"^[a-z]{2}-[a-z]{2,3}$")


@dataclass(frozen=True)
class Control:
    """One editorial control. ``story_id`` is a decimal story id (pin, demote, label), empty for a hold."""

    kind: str
    edition: str
    section: str
    set_at: int
    expires_at: int
    who: str
    why: str
    story_id: str = ""
    position: int | None = None  # pin: 1-based
    factor: float | None = None  # demote: None = to the bottom
    label: str = ""  # label
    version: int | None = None  # hold: the page version frozen

    def __post_init__(self):
        self.check()

    @property
    def pointer(self) -> str:
        return f"{self.edition}/{self.section}"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.section, self.kind, self.story_id)

    def active(self, now_ms: int) -> bool:
        return self.set_at <= now_ms < self.expires_at

    def check(self) -> None:
        """Raise ValueError naming what is wrong (the command prints it)."""
        if self.kind not in KINDS:
            raise ValueError(f"unknown control {self.kind!r}; one of {', '.join(KINDS)}")
        if not _EDITION.match(self.edition) or not _SECTION.match(self.section):
            raise ValueError(f"bad page {self.edition!r}/{self.section!r}")
        if not self.why or not self.why.strip():
            raise ValueError("a control needs a reason (--reason)")
        if not self.expires_at > self.set_at:
            raise ValueError("a control must expire after it is set (--expires)")
        if self.expires_at - self.set_at > MAX_EXPIRY_MS:
            raise ValueError("a control expires within 7 days (--expires)")
        if self.kind == "hold":
            if self.story_id or self.version is None or int(self.version) < 1:
                raise ValueError("a hold names a page version (--version) and no story")
            return
        if not self.story_id.isdigit():
            raise ValueError(f"{self.kind} needs a decimal story id (--story), not {self.story_id!r}")
        if self.kind == "pin" and not (self.position is not None and 1 <= int(self.position) <= MAX_POSITION):
            raise ValueError(f"a pin needs a position from 1 to {MAX_POSITION} (--position)")
        if self.kind == "demote" and self.factor is not None and not 0.0 < float(self.factor) < 1.0:
            raise ValueError("a demote factor is between 0 and 1 exclusive (--factor); none: to the bottom")
        if self.kind == "label" and self.label not in LABELS:
            raise ValueError(f"label {self.label!r} is not one of {', '.join(LABELS)} (--label)")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Control:
        return cls(**json.loads(text))


class ControlStore(abc.ABC):
    """The editorial controls of every page (see the module docstring)."""

    @abc.abstractmethod
    def set(self, control: Control) -> None:
        """Write ``control``, replacing the record of the same page, kind and story."""

    @abc.abstractmethod
    def clear(self, edition: str, section: str, kind: str, story_id: str = "") -> Control | None:
        """Delete one record; returns it, None when there was none."""

    @abc.abstractmethod
    def _records(self, edition: str) -> list[Control]:
        """Every record of ``edition`` (one scan)."""

    def edition_controls(self, edition: str, now_ms: int | None = None) -> list[Control]:
        """The records of ``edition`` (one scan), ordered by (section, kind, story); with ``now_ms`` only those
        active then."""
        out = [c for c in self._records(edition) if now_ms is None or c.active(int(now_ms))]
        return sorted(out, key=lambda c: c.key)

    def remove_expired(self, edition: str, now_ms: int) -> int:
        """Delete the records of ``edition`` expired at ``now_ms``; returns how many."""
        n = 0
        for c in self._records(edition):
            if c.expires_at <= now_ms and self.clear(c.edition, c.section, c.kind, c.story_id) is not None:
                n += 1
        return n


_DDL = """
CREATE TABLE IF NOT EXISTS controls (edition TEXT NOT NULL, section TEXT NOT NULL, kind TEXT NOT NULL,
    story TEXT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (edition, section, kind, story));
"""


class EmbeddedControlStore(ControlStore):
    def __init__(self, db):
        """``db``: a :class:`stores.embedded.Database`."""
        self.db = db
        self.db.connect().executescript(_DDL)

    def set(self, control: Control) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO controls (edition, section, kind, story, record) VALUES (?, ?, ?, ?, ?)",
                (control.edition, control.section, control.kind, control.story_id, control.to_json()),
            )

    def clear(self, edition: str, section: str, kind: str, story_id: str = "") -> Control | None:
        with self.db.transaction() as conn:
            key = (edition, section, kind, story_id)
            row = conn.execute(
                "SELECT record FROM controls WHERE edition = ? AND section = ? AND kind = ? AND story = ?", key
            ).fetchone()
            if row is None:
                return None
            conn.execute("DELETE FROM controls WHERE edition = ? AND section = ? AND kind = ? AND story = ?", key)
        return Control.from_json(row[0])

    def _records(self, edition: str) -> list[Control]:
        rows = self.db.connect().execute("SELECT record FROM controls WHERE edition = ?", (edition,)).fetchall()
        return [Control.from_json(r[0]) for r in rows]


FAMILY = "c"
COLUMN = b"control"


class BigtableControlStore(ControlStore):
    """The ``controls`` table of a Bigtable instance (honours BIGTABLE_EMULATOR_HOST through the client)."""

    def __init__(self, table):
        self.table = table

    def set(self, control: Control) -> None:
        from schemas.tables import control_key

        row = self.table.direct_row(control_key(control.edition, control.section, control.kind, control.story_id))
        row.set_cell(FAMILY, COLUMN, control.to_json().encode())
        try:
            row.commit()
        except Exception as exc:  # grpc / google.api_core errors
            raise StoreError(f"controls: cannot set {control.kind} on {control.pointer}: {exc}") from exc

    def _read(self, key: bytes) -> Control | None:
        from google.cloud.bigtable import row_filters

        row = self.table.read_row(key, filter_=row_filters.CellsColumnLimitFilter(1))
        cells = row.cells.get(FAMILY, {}).get(COLUMN) if row is not None else None
        return Control.from_json(cells[0].value) if cells else None

    def clear(self, edition: str, section: str, kind: str, story_id: str = "") -> Control | None:
        from schemas.tables import control_key

        key = control_key(edition, section, kind, story_id)
        try:
            found = self._read(key)
            if found is not None:
                row = self.table.direct_row(key)
                row.delete()
                row.commit()
        except Exception as exc:
            raise StoreError(f"controls: cannot clear {kind} on {edition}/{section}: {exc}") from exc
        return found

    def _records(self, edition: str) -> list[Control]:
        from google.cloud.bigtable import row_filters

        from schemas.tables import control_prefix

        start = control_prefix(edition)
        end = start[:-1] + bytes([start[-1] + 1])  # the end of the prefix
        out = []
        try:
            for row in self.table.read_rows(
                start_key=start, end_key=end, filter_=row_filters.CellsColumnLimitFilter(1)
            ):
                cells = row.cells.get(FAMILY, {}).get(COLUMN)
                if cells:
                    out.append(Control.from_json(cells[0].value))
        except Exception as exc:
            raise StoreError(f"controls: cannot read the controls of {edition}: {exc}") from exc
        return out


def open_control_store(config=None) -> ControlStore:
    """The control store a :class:`stores.StoreConfig` describes (embedded by default)."""
    from stores import open_store

    return open_store("controls", config)
