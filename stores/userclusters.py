"""MinHash user clusters: each reader's cluster memberships and each cluster's decayed click counts per story.

Memberships are written by the daily user-cluster job (pipelines/userclusters.py: one put per reader, replacing
yesterday's) and deleted by the origin with the reader's profile or history (serving/api/foryou.py); counts are written
by the co-visitation job (transforms/userclusters/beam.py: one writer per cluster key, each write replaces the
cluster's whole list). The origin reads both for For you's "readers like you" (serving/personal/clusters.py). Never read by
a shared page: a membership names a reader; a count row names none.

Layout (schemas/tables.py, table ``userclusters``): ``u#{reader_id}`` (``u:clusters``, ``u:at``),
``k#{cluster_id:016x}`` (``m:at``, ``m:total``, ``n:{story_id}``) and ``c#{reader_id}`` (``c:{at:013d}#{story_id}``).

The click log (``c#`` rows; embedded table ``click_log``): every read the co-visitation job accepted (not a bot's,
not a duplicate), appended by that job (``log_clicks``) and kept CLICK_LOG_DAYS (180 days: a GC age rule on Bigtable;
the embedded store drops older rows as it appends), so the daily job clusters readers on months of clicks, not on
the profile's recent reads. It is read in key ranges (``click_splits`` cuts it, ``scan_clicks`` reads one range),
so the daily job's workers each read a part. It names a reader: it is deleted with the reader's membership (the
origin deletes both with the profile or the history).

A membership older than MEMBERSHIP_MAX_AGE_MS (two daily runs) is not returned: a reader who deleted the profile
while a run was writing, or whose reads have all aged out, stops being clustered by age alone.

Backends behind one interface, like the other stores (stores.open_store): :class:`EmbeddedUserClusterStore`
(tables ``cluster_members``, ``cluster_counts``, ``cluster_at`` of the embedded SQLite file) and
:class:`BigtableUserClusterStore` (one MutateRow per put; reads carry the latest-cell filter, LOCAL_STACK.md).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator

from stores.base import StoreError

MAX_STORIES = 50
MAX_CLUSTERS = 64  # per reader: the job writes q of them (10 by default)
MEMBERSHIP_MAX_AGE_MS = 48 * 3_600_000  # two daily runs
FAMILY_MEMBERS, FAMILY_META, FAMILY_COUNTS, FAMILY_CLICKS = "u", "m", "n", "c"
CLICK_PREFIX = b"c#"
CLICK_LOG_DAYS = 180  # = schemas.tables.MAX_AGE_DAYS["userclusters"]["c"]
CLICK_LOG_MS = CLICK_LOG_DAYS * 24 * 3_600_000  # stores sit below transforms.common and its units


def _evenly(ids: list[str], n: int) -> list[str]:
    """At most ``n - 1`` of the sorted ``ids`` as range boundaries, evenly spaced, none repeated."""
    if n <= 1 or len(ids) < 2:
        return []
    cuts = sorted({ids[len(ids) * k // n] for k in range(1, n)} - {ids[0]})
    return cuts


def _bounded(items) -> list[tuple[int, float]]:
    """Largest first (ties: the smaller id), at most MAX_STORIES, positive counts only."""
    kept = sorted(((int(s), float(c)) for s, c in items if float(c) > 0), key=lambda sc: (-sc[1], sc[0]))
    return kept[:MAX_STORIES]


def _clusters(clusters) -> list[int]:
    out = sorted({int(c) for c in clusters})
    if len(out) > MAX_CLUSTERS or any(not 0 <= c < 2**63 for c in out):
        raise ValueError(f"user clusters: at most {MAX_CLUSTERS} cluster ids in [0, 2^63), got {out[:3]}...")
    return out


class UserClusterStore(abc.ABC):
    @abc.abstractmethod
    def put_membership(self, reader_id: str, clusters: Iterable[int], at: int) -> None:
        """Replace the reader's clusters (an empty list deletes the row)."""

    @abc.abstractmethod
    def _membership(self, reader_id: str) -> tuple[list[int], int] | None:
        """The stored clusters and their run time, whatever their age."""

    @abc.abstractmethod
    def delete_membership(self, reader_id: str) -> None:
        """Forget the reader's clusters and click log (with the profile or the history)."""

    @abc.abstractmethod
    def put_counts(self, cluster_id: int, counts: Iterable[tuple[int, float]], total: float, at: int) -> None:
        """Replace the cluster's list by ``counts`` (``(story_id, count as of at)``, the MAX_STORIES largest kept)
        and its decayed total (an empty list or a zero total deletes the row)."""

    @abc.abstractmethod
    def get_counts(self, cluster_ids: Iterable[int]) -> dict[int, tuple[list[tuple[int, float]], float, int]]:
        """``{cluster_id: (counts largest first, total, at)}`` of the clusters that have counts."""

    @abc.abstractmethod
    def log_clicks(self, clicks: Iterable[tuple[str, int, int]]) -> None:
        """Append ``(reader_id, story_id, at)`` accepted reads to the click log (a replay writes the same cells)."""

    @abc.abstractmethod
    def scan_clicks(
        self, since_ms: int, start: str | None = None, end: str | None = None
    ) -> Iterator[tuple[str, list[str]]]:
        """``(reader_id, story ids)`` of every reader in ``[start, end)`` (None: unbounded) with logged clicks at
        or after ``since_ms``, one reader at a time in reader-id order, a reader's clicks in time order."""

    @abc.abstractmethod
    def click_splits(self, n: int) -> list[str]:
        """At most ``n - 1`` reader ids, ascending, cutting the click log into ranges of about equal size."""

    def membership(self, reader_id: str, now_ms: int, after_ms: int = 0) -> list[int]:
        """The reader's clusters, [] when none, older than MEMBERSHIP_MAX_AGE_MS at ``now_ms``, or written by a run
        that started at or before ``after_ms`` (the reader's last delete: computed from erased reads)."""
        got = self._membership(reader_id)
        if got is None or now_ms - got[1] > MEMBERSHIP_MAX_AGE_MS or got[1] <= after_ms:
            return []
        return got[0]

    def close(self) -> None:  # noqa: B027 - a no-op by default; backends with resources override it
        pass


_DDL = """
CREATE TABLE IF NOT EXISTS cluster_members (reader_id TEXT PRIMARY KEY, clusters TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS cluster_counts (cluster_id INTEGER, story_id INTEGER, count REAL NOT NULL,
    PRIMARY KEY (cluster_id, story_id));
CREATE TABLE IF NOT EXISTS cluster_at (cluster_id INTEGER PRIMARY KEY, total REAL NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS click_log (reader_id TEXT, at INTEGER, story_id INTEGER,
    PRIMARY KEY (reader_id, at, story_id));
CREATE INDEX IF NOT EXISTS click_log_at ON click_log (at);
"""


class EmbeddedUserClusterStore(UserClusterStore):
    def __init__(self, db):
        """``db``: a :class:`stores.embedded.Database` (one connection per thread)."""
        self.db = db
        self.db.connect().executescript(_DDL)

    def put_membership(self, reader_id: str, clusters, at: int) -> None:
        ids = _clusters(clusters)
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM cluster_members WHERE reader_id=?", (reader_id,))
            if ids:
                conn.execute(
                    "INSERT INTO cluster_members VALUES (?,?,?)", (reader_id, ",".join(map(str, ids)), int(at))
                )

    def _membership(self, reader_id: str):
        row = (
            self.db.connect()
            .execute("SELECT clusters, at FROM cluster_members WHERE reader_id=?", (reader_id,))
            .fetchone()
        )
        return None if row is None else ([int(c) for c in row[0].split(",") if c], int(row[1]))

    def delete_membership(self, reader_id: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM cluster_members WHERE reader_id=?", (reader_id,))
            conn.execute("DELETE FROM click_log WHERE reader_id=?", (reader_id,))

    def log_clicks(self, clicks) -> None:
        rows = [(str(r), int(a), int(s)) for r, s, a in clicks]
        with self.db.transaction() as conn:
            conn.executemany("INSERT OR IGNORE INTO click_log VALUES (?,?,?)", rows)
            if rows:  # the 180-day age rule, by the clicks' own clock (a replay of old clicks keeps its window)
                conn.execute("DELETE FROM click_log WHERE at < ?", (max(a for _, a, _ in rows) - CLICK_LOG_MS,))

    def scan_clicks(self, since_ms: int, start=None, end=None):
        sql, args = "SELECT reader_id, story_id FROM click_log WHERE at >= ?", [int(since_ms)]
        if start is not None:
            sql, args = sql + " AND reader_id >= ?", args + [start]
        if end is not None:
            sql, args = sql + " AND reader_id < ?", args + [end]
        reader, stories = None, []
        for rid, sid in self.db.connect().execute(sql + " ORDER BY reader_id, at, story_id", args):
            if rid != reader:
                if stories:
                    yield reader, stories
                reader, stories = rid, []
            stories.append(str(sid))
        if stories:
            yield reader, stories

    def click_splits(self, n: int) -> list[str]:
        ids = [r for (r,) in self.db.connect().execute("SELECT DISTINCT reader_id FROM click_log ORDER BY reader_id")]
        return _evenly(ids, n)

    def put_counts(self, cluster_id: int, counts, total: float, at: int) -> None:
        rows = [(int(cluster_id), s, c) for s, c in _bounded(counts)]
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM cluster_counts WHERE cluster_id=?", (int(cluster_id),))
            conn.execute("DELETE FROM cluster_at WHERE cluster_id=?", (int(cluster_id),))
            if rows and total > 0:
                conn.executemany("INSERT INTO cluster_counts VALUES (?,?,?)", rows)
                conn.execute("INSERT INTO cluster_at VALUES (?,?,?)", (int(cluster_id), float(total), int(at)))

    def get_counts(self, cluster_ids) -> dict:
        ids = sorted({int(c) for c in cluster_ids})
        out: dict[int, tuple[list, float, int]] = {}
        conn = self.db.connect()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            meta = {
                c: (t, a) for c, t, a in conn.execute(f"SELECT * FROM cluster_at WHERE cluster_id IN ({marks})", chunk)
            }
            lists: dict[int, list] = {}
            for cid, s, c in conn.execute(f"SELECT * FROM cluster_counts WHERE cluster_id IN ({marks})", chunk):
                lists.setdefault(cid, []).append((s, c))
            for cid, items in lists.items():
                if cid in meta:
                    out[cid] = (_bounded(items), float(meta[cid][0]), int(meta[cid][1]))
        return out


class BigtableUserClusterStore(UserClusterStore):
    """The ``userclusters`` table of a Bigtable instance (honours BIGTABLE_EMULATOR_HOST through the client)."""

    def __init__(self, table):
        self.table = table

    def _commit(self, row, what: str) -> None:
        try:
            row.commit()
        except Exception as exc:  # grpc / google.api_core errors: transient for the caller
            raise StoreError(f"userclusters: cannot write {what}: {exc}") from exc

    def put_membership(self, reader_id: str, clusters, at: int) -> None:
        from schemas.tables import membership_key

        ids = _clusters(clusters)
        row = self.table.direct_row(membership_key(reader_id))
        if not ids:
            row.delete()
        else:
            row.set_cell(FAMILY_MEMBERS, b"clusters", ",".join(map(str, ids)).encode())
            row.set_cell(FAMILY_MEMBERS, b"at", str(int(at)).encode())
        self._commit(row, f"the clusters of {reader_id!r}")

    def _membership(self, reader_id: str):
        from google.cloud.bigtable import row_filters

        from schemas.tables import membership_key

        try:
            row = self.table.read_row(membership_key(reader_id), filter_=row_filters.CellsColumnLimitFilter(1))
        except Exception as exc:
            raise StoreError(f"userclusters: cannot read the clusters of {reader_id!r}: {exc}") from exc
        cells = row.cells.get(FAMILY_MEMBERS, {}) if row is not None else {}
        if b"clusters" not in cells or b"at" not in cells:
            return None
        ids = [int(c) for c in cells[b"clusters"][0].value.decode().split(",") if c]
        return ids, int(cells[b"at"][0].value.decode())

    def delete_membership(self, reader_id: str) -> None:
        from schemas.tables import click_log_key, membership_key

        for key, what in ((membership_key(reader_id), "clusters"), (click_log_key(reader_id), "click log")):
            row = self.table.direct_row(key)
            row.delete()
            self._commit(row, f"(delete) the {what} of {reader_id!r}")

    def log_clicks(self, clicks) -> None:
        from schemas.tables import click_log_key

        rows = {}
        for reader, story, at in clicks:
            row = rows.get(reader) or rows.setdefault(reader, self.table.direct_row(click_log_key(str(reader))))
            row.set_cell(FAMILY_CLICKS, f"{int(at):013d}#{int(story)}".encode(), b"")
        if not rows:
            return
        try:
            statuses = self.table.mutate_rows(list(rows.values()))
        except Exception as exc:
            raise StoreError(f"userclusters: cannot log {len(rows)} readers' clicks: {exc}") from exc
        failed = [s for s in statuses if getattr(s, "code", 0)]
        if failed:
            raise StoreError(f"userclusters: {len(failed)} of {len(rows)} click-log rows not written: {failed[0]}")

    def scan_clicks(self, since_ms: int, start=None, end=None):
        from google.cloud.bigtable import row_filters

        from schemas.tables import click_log_key

        first = click_log_key(start) if start is not None else CLICK_PREFIX
        last = click_log_key(end) if end is not None else CLICK_PREFIX[:-1] + b"$"
        only = row_filters.RowFilterChain(
            [row_filters.FamilyNameRegexFilter(FAMILY_CLICKS), row_filters.CellsColumnLimitFilter(1)]
        )
        floor = f"{int(since_ms):013d}#"
        try:
            for row in self.table.read_rows(start_key=first, end_key=last, filter_=only):
                cells = sorted(q.decode() for q in row.cells.get(FAMILY_CLICKS, {}))
                stories = [q.split("#", 1)[1] for q in cells if q >= floor]
                if stories:
                    yield row.row_key[len(CLICK_PREFIX) :].decode("utf-8"), stories
        except Exception as exc:
            raise StoreError(f"userclusters: cannot scan the click log: {exc}") from exc

    def click_splits(self, n: int) -> list[str]:
        try:
            keys = [s.row_key for s in self.table.sample_row_keys()]
        except Exception as exc:
            raise StoreError(f"userclusters: cannot sample the click log's keys: {exc}") from exc
        ids = [k[len(CLICK_PREFIX) :].decode("utf-8", "replace") for k in keys if k.startswith(CLICK_PREFIX)]
        return _evenly(sorted(set(ids)), n)

    def put_counts(self, cluster_id: int, counts, total: float, at: int) -> None:
        from schemas.tables import cluster_key

        items = _bounded(counts)
        row = self.table.direct_row(cluster_key(int(cluster_id)))
        if not items or not total > 0:
            row.delete()
        else:
            row.delete_cells(FAMILY_COUNTS, row.ALL_COLUMNS)
            row.set_cell(FAMILY_META, b"at", str(int(at)).encode())
            row.set_cell(FAMILY_META, b"total", repr(float(total)).encode())
            for s, c in items:
                row.set_cell(FAMILY_COUNTS, str(s).encode(), repr(float(c)).encode())
        self._commit(row, f"cluster {cluster_id}")

    def get_counts(self, cluster_ids) -> dict:
        from google.cloud.bigtable import row_filters
        from google.cloud.bigtable.row_set import RowSet

        from schemas.tables import cluster_key

        ids = sorted({int(c) for c in cluster_ids})
        if not ids:
            return {}
        rows = RowSet()
        for cid in ids:
            rows.add_row_key(cluster_key(cid))
        out = {}
        try:
            for row in self.table.read_rows(row_set=rows, filter_=row_filters.CellsColumnLimitFilter(1)):
                cid = int(row.row_key.decode().split("#", 1)[1], 16)
                meta = row.cells.get(FAMILY_META, {})
                cells = row.cells.get(FAMILY_COUNTS, {})
                if b"at" in meta and b"total" in meta and cells:
                    items = [(int(q.decode()), float(c[0].value.decode())) for q, c in cells.items()]
                    at, total = int(meta[b"at"][0].value.decode()), float(meta[b"total"][0].value.decode())
                    out[cid] = (_bounded(items), total, at)
        except Exception as exc:
            raise StoreError(f"userclusters: cannot read {len(ids)} clusters: {exc}") from exc
        return out


def open_user_cluster_store(config=None) -> UserClusterStore:
    """The user-cluster store a :class:`stores.StoreConfig` describes (embedded by default)."""
    from stores import open_store

    return open_store("userclusters", config)
