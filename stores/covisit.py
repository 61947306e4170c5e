"""Co-visitation neighbours per story: the bounded, decayed "readers of X also read" lists (DESIGN.md section 8).

Written by the co-visitation job (transforms/covisit/beam.py: one writer per story key, each write replaces the
story's whole list, so a replayed or repeated write changes nothing); read by the origin for For you
(serving/personal/readers.py CovisitCache). Never read by a shared page.

Layout (schemas/tables.py, table ``covisit``):

    v#{story_id:016x}   m:at             the time the counts are as of (ms, decimal): readers decay them from it
                        n:{neighbour}    decayed count (decimal text) of one neighbour story (decimal id); at most
                                         MAX_NEIGHBOURS cells, the largest counts

Backends behind one interface, like the other stores:

- :class:`EmbeddedCovisitStore`: table ``covisit`` in the embedded SQLite file (``stores.embedded.Database``);
  a put is one transaction (delete the story's rows, insert the new list).
- :class:`BigtableCovisitStore`: one MutateRow per put (delete family ``n``, then set ``m:at`` and the cells, in
  order, atomically); reads carry the latest-cell filter (the emulator keeps old versions, LOCAL_STACK.md).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable

from stores.base import StoreError

MAX_NEIGHBOURS = 50
FAMILY_NEIGHBOURS = "n"
FAMILY_META = "m"
COLUMN_AT = b"at"


def _bounded(neighbours) -> list[tuple[int, float]]:
    """Largest first (ties: the smaller id), at most MAX_NEIGHBOURS, positive counts only."""
    items = sorted(((int(n), float(c)) for n, c in neighbours if float(c) > 0), key=lambda nc: (-nc[1], nc[0]))
    return items[:MAX_NEIGHBOURS]


class CovisitStore(abc.ABC):
    """One row per story: its neighbours with decayed counts as of one time."""

    @abc.abstractmethod
    def put(self, story_id: int, neighbours: Iterable[tuple[int, float]], at: int) -> None:
        """Replace the story's list by ``neighbours`` (``(story_id, count as of at)``); only the MAX_NEIGHBOURS
        largest are kept. An empty list deletes the row."""

    @abc.abstractmethod
    def get_many(self, story_ids: Iterable[int]) -> dict[int, tuple[list[tuple[int, float]], int]]:
        """``{story_id: (neighbours largest first, at)}`` of the stories that have a list (one query / one scan)."""

    def get(self, story_id: int) -> tuple[list[tuple[int, float]], int] | None:
        return self.get_many([story_id]).get(int(story_id))

    def close(self) -> None:  # noqa: B027 - a no-op by default; backends with resources override it
        pass


_DDL = """
CREATE TABLE IF NOT EXISTS covisit (story_id INTEGER, neighbour INTEGER, count REAL NOT NULL,
    PRIMARY KEY (story_id, neighbour));
CREATE TABLE IF NOT EXISTS covisit_at (story_id INTEGER PRIMARY KEY, at INTEGER NOT NULL);
"""


class EmbeddedCovisitStore(CovisitStore):
    def __init__(self, db):
        """``db``: a :class:`stores.embedded.Database` (one connection per thread)."""
        self.db = db
        self.db.connect().executescript(_DDL)

    def put(self, story_id: int, neighbours, at: int) -> None:
        rows = [(int(story_id), n, c) for n, c in _bounded(neighbours)]
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM covisit WHERE story_id=?", (int(story_id),))
            conn.execute("DELETE FROM covisit_at WHERE story_id=?", (int(story_id),))
            if rows:
                conn.executemany("INSERT INTO covisit VALUES (?,?,?)", rows)
                conn.execute("INSERT INTO covisit_at VALUES (?,?)", (int(story_id), int(at)))

    def get_many(self, story_ids) -> dict:
        ids = sorted({int(s) for s in story_ids})
        out: dict[int, tuple[list, int]] = {}
        conn = self.db.connect()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            ats = dict(conn.execute(f"SELECT story_id, at FROM covisit_at WHERE story_id IN ({marks})", chunk))
            lists: dict[int, list] = {}
            for sid, n, c in conn.execute(
                f"SELECT story_id, neighbour, count FROM covisit WHERE story_id IN ({marks})", chunk
            ):
                lists.setdefault(sid, []).append((n, c))
            for sid, items in lists.items():
                if sid in ats:
                    out[sid] = (_bounded(items), int(ats[sid]))
        return out


class BigtableCovisitStore(CovisitStore):
    """The ``covisit`` table of a Bigtable instance (honours BIGTABLE_EMULATOR_HOST through the client)."""

    def __init__(self, table):
        self.table = table

    def put(self, story_id: int, neighbours, at: int) -> None:
        from schemas.tables import covisit_key

        items = _bounded(neighbours)
        row = self.table.direct_row(covisit_key(int(story_id)))
        if not items:
            row.delete()
        else:
            row.delete_cells(FAMILY_NEIGHBOURS, row.ALL_COLUMNS)
            row.set_cell(FAMILY_META, COLUMN_AT, str(int(at)).encode())
            for n, c in items:
                row.set_cell(FAMILY_NEIGHBOURS, str(n).encode(), repr(float(c)).encode())
        try:
            row.commit()
        except Exception as exc:  # grpc / google.api_core errors: transient for the caller
            raise StoreError(f"covisit: cannot write story {story_id}: {exc}") from exc

    def get_many(self, story_ids) -> dict:
        from google.cloud.bigtable import row_filters
        from google.cloud.bigtable.row_set import RowSet

        from schemas.tables import covisit_key

        ids = sorted({int(s) for s in story_ids})
        if not ids:
            return {}
        rows = RowSet()
        for sid in ids:
            rows.add_row_key(covisit_key(sid))
        out = {}
        try:
            for row in self.table.read_rows(row_set=rows, filter_=row_filters.CellsColumnLimitFilter(1)):
                sid = int(row.row_key.decode().split("#", 1)[1], 16)
                at = row.cells.get(FAMILY_META, {}).get(COLUMN_AT)
                cells = row.cells.get(FAMILY_NEIGHBOURS, {})
                if at and cells:
                    items = [(int(q.decode()), float(c[0].value.decode())) for q, c in cells.items()]
                    out[sid] = (_bounded(items), int(at[0].value.decode()))
        except Exception as exc:
            raise StoreError(f"covisit: cannot read {len(ids)} stories: {exc}") from exc
        return out


def open_covisit_store(config=None) -> CovisitStore:
    """The co-visitation store a :class:`stores.StoreConfig` describes (embedded by default)."""
    from stores import open_store

    return open_store("covisit", config)
