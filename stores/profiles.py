"""Reader profiles for For you: follows, hidden sources, the interest vector, the pause flag and the last reads.

Layout (schemas/tables.py, table ``profiles``; never read by a shared page):

    r#{reader_id}   p:profile        JSON profile document (see :func:`empty_profile`)
                    e:{at:013d}      JSON read (story_id, article_id, at, kind); the newest ``READS_KEPT`` are kept

Backends behind one interface, like the other stores:

- :class:`EmbeddedProfileStore`: tables ``profiles`` and ``profile_reads`` in the embedded SQLite file
  (``{data_dir}/newsroom.sqlite3``, shared with :mod:`stores.embedded` through its :class:`Database`).
  Read-modify-write runs in ``BEGIN IMMEDIATE``.
- :class:`BigtableProfileStore`: the Bigtable table above. Read-modify-write is a compare-and-set loop:
  CheckAndMutateRow whose predicate is the exact previous ``p:profile`` value (latest cell only, regex-escaped),
  or "no p:profile cell" for a new reader (CheckAndMutate on an absent row answers False and applies the false
  branch, which is exactly create-if-absent; see LOCAL_STACK.md).

Reads are keyed by (event time in ms, event id): replaying an event rewrites the same cell (idempotent), and two
different reads of one reader in the same millisecond are both kept (keyed by time alone, 10 reads in
one ms kept 1). The
embedded table is ``profile_events`` (the older ``profile_reads``, keyed by time alone, is no longer read).

Follower counts (no reader id; topic pages, transforms/editions/topics.py): every change of a reader's follows
adds +1/-1 to the count of each topic id followed or unfollowed (:func:`follow_ids`: ``topic:{section}``,
``place:{code}``, ``entity:{id}``; sources are not topics), and forgetting a reader takes its follows off;
:meth:`ProfileStore.followed_topics` lists the most-followed ids. Embedded: table ``follow_counts`` (in the same
transaction as the profile; rebuilt from the profiles when the table is new). Bigtable: rows ``t#{topic id}``
of the ``follows`` table (not ``profiles``: the editions stage that reads the counts has no access to profiles),
cell ``c:followers`` (a 64-bit counter, ReadModifyWrite increment after the profile's compare-and-set succeeded).

Write budget: :meth:`ProfileStore.take_token` takes one token from the reader's bucket (``stores.base.bucket_step``),
held in the store so every origin worker and instance shares it: embedded table ``rate_buckets``; Bigtable cell
``p:bucket`` of the reader's row, updated by compare-and-set.
"""

from __future__ import annotations

import abc
import copy
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator

from stores.base import StoreError, bucket_step

READS_KEPT = 200
UPDATE_RETRIES = 20


def empty_profile() -> dict:
    """The profile of a reader we know nothing about."""
    return {
        "follows": {"topics": [], "sources": [], "places": [], "entities": []},
        "hidden_sources": [],
        "fewer": [],  # [{"story_id", "vector"}] of "fewer like this", newest last (bounded by the caller)
        "interest": {"vector": None, "mass": 0.0, "at": 0},  # decayed sum of read-story vectors (64-d)
        "paused": False,
        "revision": 0,
        "updated_at": 0,
    }


def follow_ids(profile: dict | None) -> set[str]:
    """The topic ids (serving/topics.py) a profile follows: sections, places (``pune`` and ``place:pune`` are
    both ``place:pune``) and entities."""
    f = (profile or {}).get("follows") or {}
    ids = {f"topic:{v}" for v in f.get("topics") or ()}
    ids |= {"place:" + (v[6:] if v.startswith("place:") else v) for v in f.get("places") or ()}
    ids |= {f"entity:{v}" for v in f.get("entities") or ()}
    return ids


def follow_deltas(old: dict | None, new: dict | None) -> dict[str, int]:
    """topic id -> +1 (now followed) / -1 (no longer followed) between two versions of a profile."""
    a, b = follow_ids(old), follow_ids(new)
    return {**dict.fromkeys(b - a, 1), **dict.fromkeys(a - b, -1)}


def _dumps(doc: dict) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def _normalise(doc: dict | None) -> dict:
    base = empty_profile()
    if doc:
        base.update(doc)
        follows = {"topics": [], "sources": [], "places": [], "entities": []}
        follows.update(doc.get("follows") or {})
        base["follows"] = follows
    return base


class ProfileStore(abc.ABC):
    """One row per reader: the profile document and the newest reads."""

    @abc.abstractmethod
    def get(self, reader_id: str) -> dict | None:
        """The profile document with ``"reads"`` (newest first, at most READS_KEPT), or None for an unknown reader."""

    @abc.abstractmethod
    def update(self, reader_id: str, fn: Callable[[dict], dict | None]) -> dict:
        """Atomically replace the profile document by ``fn(current)`` (``current`` is a private copy, the empty
        profile for a new reader; ``fn`` returning None changes nothing). Returns the stored document. The store
        bumps ``revision`` and ``updated_at``."""

    @abc.abstractmethod
    def append_reads(self, reader_id: str, reads: Iterable[dict], keep: int = READS_KEPT) -> None:
        """Add reads (each with an int ``at`` in ms), then drop all but the newest ``keep``."""

    @abc.abstractmethod
    def delete_history(self, reader_id: str) -> None:
        """Remove every stored read of the reader (the caller also resets the interest vector)."""

    @abc.abstractmethod
    def delete(self, reader_id: str) -> None:
        """Forget the reader entirely."""

    @abc.abstractmethod
    def take_token(self, reader_id: str, rate: float, burst: float, now_ms: int | None = None) -> tuple[bool, float]:
        """Take one token of the reader's write budget: (granted, seconds to wait when not)."""

    @abc.abstractmethod
    def scan_reads(self, since_ms: int = 0) -> Iterator[tuple[str, list[str]]]:
        """Every reader with stored reads at or after ``since_ms``: ``(reader_id, story ids)``, one reader at a time
        in reader-id order; paused readers are left out (the daily user-cluster job, pipelines/userclusters.py)."""

    def followed_topics(self, limit: int = 1000) -> dict[str, int]:
        """The ``limit`` most-followed topic ids with their follower counts (> 0): aggregated, no reader id."""
        return {}

    def close(self) -> None:  # noqa: B027 - a no-op by default; backends with resources override it
        pass


def _read_key(r: dict) -> str:
    """The per-read key after the time: a short hash of the event id (or of the whole read if it has none)."""
    import hashlib

    ident = r.get("event_id") or _dumps(r)
    return hashlib.sha256(str(ident).encode()).hexdigest()[:16]


def _bump(old: dict, new: dict) -> dict:
    new = _normalise(new)
    new["revision"] = int(old.get("revision", 0)) + 1
    new["updated_at"] = int(time.time() * 1000)
    return new


# ---------------------------------------------------------------------------------------------------------------
# Embedded (SQLite)

_DDL = """
CREATE TABLE IF NOT EXISTS profiles (reader_id TEXT PRIMARY KEY, profile TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS profile_events (reader_id TEXT, at INTEGER, rkey TEXT, event TEXT NOT NULL,
    PRIMARY KEY (reader_id, at, rkey));
CREATE TABLE IF NOT EXISTS rate_buckets (bucket TEXT PRIMARY KEY, state TEXT NOT NULL);
"""
_FOLLOW_DDL = "CREATE TABLE follow_counts (topic TEXT PRIMARY KEY, n INTEGER NOT NULL)"


def _add_follows(conn, deltas: dict[str, int]) -> None:
    conn.executemany(
        "INSERT INTO follow_counts VALUES (?, ?) ON CONFLICT(topic) DO UPDATE SET n = n + excluded.n",
        sorted(deltas.items()),
    )


class EmbeddedProfileStore(ProfileStore):
    def __init__(self, db):
        """``db``: a :class:`stores.embedded.Database` (one connection per thread)."""
        self.db = db
        self.db.connect().executescript(_DDL)
        with self.db.transaction() as conn:  # new table: count the follows of the profiles already stored
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name='follow_counts'").fetchone() is None:
                conn.execute(_FOLLOW_DDL)
                for (doc,) in conn.execute("SELECT profile FROM profiles").fetchall():
                    _add_follows(conn, dict.fromkeys(follow_ids(json.loads(doc)), 1))

    def followed_topics(self, limit: int = 1000) -> dict[str, int]:
        rows = self.db.connect().execute(
            "SELECT topic, n FROM follow_counts WHERE n > 0 ORDER BY n DESC, topic LIMIT ?", (int(limit),)
        )
        return {t: int(n) for t, n in rows}

    def get(self, reader_id: str) -> dict | None:
        conn = self.db.connect()
        row = conn.execute("SELECT profile FROM profiles WHERE reader_id=?", (reader_id,)).fetchone()
        reads = [
            json.loads(e)
            for (e,) in conn.execute(
                "SELECT event FROM profile_events WHERE reader_id=? ORDER BY at DESC, rkey DESC LIMIT ?",
                (reader_id, READS_KEPT),
            )
        ]
        if row is None and not reads:
            return None
        doc = _normalise(json.loads(row[0]) if row else None)
        doc["reads"] = reads
        return doc

    def update(self, reader_id: str, fn: Callable[[dict], dict | None]) -> dict:
        with self.db.transaction() as conn:
            row = conn.execute("SELECT profile FROM profiles WHERE reader_id=?", (reader_id,)).fetchone()
            old = _normalise(json.loads(row[0]) if row else None)
            new = fn(copy.deepcopy(old))
            if new is None:
                return old
            new = _bump(old, new)
            conn.execute("INSERT OR REPLACE INTO profiles VALUES (?,?)", (reader_id, _dumps(new)))
            _add_follows(conn, follow_deltas(old, new))
            return new

    def append_reads(self, reader_id: str, reads: Iterable[dict], keep: int = READS_KEPT) -> None:
        rows = [(reader_id, int(r["at"]), _read_key(r), _dumps(r)) for r in reads]
        if not rows:
            return
        with self.db.transaction() as conn:
            conn.executemany("INSERT OR REPLACE INTO profile_events VALUES (?,?,?,?)", rows)
            conn.execute(
                "DELETE FROM profile_events WHERE reader_id=? AND (at, rkey) NOT IN "
                "(SELECT at, rkey FROM profile_events WHERE reader_id=? ORDER BY at DESC, rkey DESC LIMIT ?)",
                (reader_id, reader_id, keep),
            )

    def scan_reads(self, since_ms: int = 0):
        conn = self.db.connect()
        paused = {
            r for r, doc in conn.execute("SELECT reader_id, profile FROM profiles") if json.loads(doc).get("paused")
        }
        reader, stories = None, []
        rows = conn.execute(
            "SELECT reader_id, event FROM profile_events WHERE at >= ? ORDER BY reader_id, at", (int(since_ms),)
        )
        for rid, event in rows:
            if rid != reader:
                if stories and reader not in paused:
                    yield reader, stories
                reader, stories = rid, []
            sid = json.loads(event).get("story_id")
            if sid is not None:
                stories.append(str(sid))
        if stories and reader not in paused:
            yield reader, stories

    def delete_history(self, reader_id: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM profile_events WHERE reader_id=?", (reader_id,))

    def delete(self, reader_id: str) -> None:
        with self.db.transaction() as conn:
            row = conn.execute("SELECT profile FROM profiles WHERE reader_id=?", (reader_id,)).fetchone()
            if row is not None:
                _add_follows(conn, follow_deltas(json.loads(row[0]), None))
            conn.execute("DELETE FROM profile_events WHERE reader_id=?", (reader_id,))
            conn.execute("DELETE FROM profiles WHERE reader_id=?", (reader_id,))
            conn.execute("DELETE FROM rate_buckets WHERE bucket=?", ("reader:" + reader_id,))

    def take_token(self, reader_id: str, rate: float, burst: float, now_ms: int | None = None) -> tuple[bool, float]:
        from stores.embedded import take_tokens

        return take_tokens(self.db, "reader:" + reader_id, rate, burst, now_ms)


# ---------------------------------------------------------------------------------------------------------------
# Bigtable

FAMILY_PROFILE = "p"
FAMILY_READS = "e"
COLUMN_PROFILE = b"profile"


def _version_regex(doc: dict) -> bytes:
    """Matches exactly the stored document of this revision. Sorted keys put ``revision`` and ``updated_at`` last,
    so a short anchored regex identifies the version (a regex of the whole value could exceed RE2's size limit)."""
    tail = f'"revision":{int(doc["revision"])},"updated_at":{int(doc["updated_at"])}}}'
    return b"(?s).*" + re.escape(tail).encode()


def _read_qualifier(r: dict) -> bytes:
    return f"{int(r['at']):013d}#{_read_key(r)}".encode()


COLUMN_BUCKET = b"bucket"
FAMILY_FOLLOWS = "c"  # table follows
COLUMN_FOLLOWERS = b"followers"


def bigtable_take(table, key: bytes, family: str, qualifier: bytes, rate, burst, now_ms=None) -> tuple[bool, float]:
    """One token from the bucket in cell ``family:qualifier`` of row ``key`` of a google.cloud.bigtable Table:
    compare-and-set on the exact previous value (or on its absence). A bucket that keeps changing under us
    (UPDATE_RETRIES lost races: a flood) answers "not granted". Without ``now_ms`` the clock is read after each
    read of the cell, so a retry after a lost race does not compute with a reading older than the winner's."""
    from google.cloud.bigtable import row_filters

    given = None if now_ms is None else int(now_ms)
    column = row_filters.RowFilterChain(
        filters=[
            row_filters.FamilyNameRegexFilter(family),
            row_filters.ColumnQualifierRegexFilter(re.escape(qualifier)),
            row_filters.CellsColumnLimitFilter(1),
        ]
    )
    for _ in range(UPDATE_RETRIES):
        try:
            row = table.read_row(key, filter_=column)
        except Exception as exc:
            raise StoreError(f"rate bucket {key!r}: cannot read: {exc}") from exc
        cell = row.cells.get(family, {}).get(qualifier) if row is not None else None
        raw = cell[0].value if cell else None
        now_ms = int(time.time() * 1000) if given is None else given
        state, ok, wait = bucket_step(json.loads(raw) if raw else None, rate, burst, now_ms)
        if raw is None:
            predicate = column
        else:
            predicate = row_filters.RowFilterChain(
                filters=[column, row_filters.ValueRegexFilter(b"^" + re.escape(raw) + b"$")]
            )
        cond = table.conditional_row(key, filter_=predicate)
        cond.set_cell(family, qualifier, _dumps(state).encode(), state=raw is not None)
        try:
            matched = cond.commit()
        except Exception as exc:
            raise StoreError(f"rate bucket {key!r}: cannot write: {exc}") from exc
        if matched == (raw is not None):
            return ok, wait
    return False, 1.0


class BigtableProfileStore(ProfileStore):
    """The ``profiles`` table of a Bigtable instance (honours BIGTABLE_EMULATOR_HOST through the client)."""

    def __init__(self, table, follows=None):
        """``table``: a ``google.cloud.bigtable.table.Table`` (see :func:`open_profile_store`); ``follows``: the
        follower-count table (None: counts are neither kept nor read)."""
        self.table = table
        self.follows = follows

    # Every read carries "latest cell only": the emulator does not enforce GC rules (LOCAL_STACK.md).
    @staticmethod
    def _latest():
        from google.cloud.bigtable import row_filters

        return row_filters.CellsColumnLimitFilter(1)

    def _read(self, reader_id: str):
        from schemas.tables import profile_key

        try:
            return self.table.read_row(profile_key(reader_id), filter_=self._latest())
        except Exception as exc:  # grpc / google.api_core errors: transient for the caller
            raise StoreError(f"profiles: cannot read {reader_id!r}: {exc}") from exc

    def get(self, reader_id: str) -> dict | None:
        row = self._read(reader_id)
        if row is None:
            return None
        cells = row.cells
        raw = cells.get(FAMILY_PROFILE, {}).get(COLUMN_PROFILE)
        doc = _normalise(json.loads(raw[0].value) if raw else None)
        reads = [json.loads(c[0].value) for q, c in sorted(cells.get(FAMILY_READS, {}).items(), reverse=True)]
        doc["reads"] = reads[:READS_KEPT]
        return doc

    def update(self, reader_id: str, fn: Callable[[dict], dict | None]) -> dict:
        from google.cloud.bigtable import row_filters

        from schemas.tables import profile_key

        key = profile_key(reader_id)
        for _ in range(UPDATE_RETRIES):
            row = self._read(reader_id)
            raw = None
            if row is not None:
                cell = row.cells.get(FAMILY_PROFILE, {}).get(COLUMN_PROFILE)
                raw = cell[0].value if cell else None
            old = _normalise(json.loads(raw) if raw else None)
            new = fn(copy.deepcopy(old))
            if new is None:
                return old
            new = _bump(old, new)
            column = row_filters.RowFilterChain(
                filters=[
                    row_filters.FamilyNameRegexFilter(FAMILY_PROFILE),
                    row_filters.ColumnQualifierRegexFilter(re.escape(COLUMN_PROFILE)),
                    self._latest(),
                ]
            )
            if raw is None:
                predicate = column
            else:
                predicate = row_filters.RowFilterChain(
                    filters=[column, row_filters.ValueRegexFilter(_version_regex(old))]
                )
            cond = self.table.conditional_row(key, filter_=predicate)
            value = _dumps(new).encode()
            # raw is None: apply when the predicate does NOT match (no profile cell yet) -> create-if-absent.
            cond.set_cell(FAMILY_PROFILE, COLUMN_PROFILE, value, state=raw is not None)
            try:
                matched = cond.commit()
            except Exception as exc:
                raise StoreError(f"profiles: cannot update {reader_id!r}: {exc}") from exc
            if matched == (raw is not None):
                self._add_follows(follow_deltas(old, new))
                return new
        raise StoreError(f"profiles: {reader_id!r} kept changing during update ({UPDATE_RETRIES} tries)")

    def append_reads(self, reader_id: str, reads: Iterable[dict], keep: int = READS_KEPT) -> None:
        from google.cloud.bigtable import row_filters

        from schemas.tables import profile_key

        reads = list(reads)
        if not reads:
            return
        key = profile_key(reader_id)
        row = self.table.direct_row(key)
        for r in reads:
            row.set_cell(FAMILY_READS, _read_qualifier(r), _dumps(r).encode())
        try:
            row.commit()
            existing = self.table.read_row(
                key,
                filter_=row_filters.RowFilterChain(
                    filters=[
                        row_filters.FamilyNameRegexFilter(FAMILY_READS),
                        self._latest(),
                        row_filters.StripValueTransformerFilter(True),
                    ]
                ),
            )
        except Exception as exc:
            raise StoreError(f"profiles: cannot append reads of {reader_id!r}: {exc}") from exc
        qualifiers = sorted(existing.cells.get(FAMILY_READS, {}), reverse=True) if existing else []
        old = qualifiers[keep:]
        if old:
            trim = self.table.direct_row(key)
            for q in old:
                trim.delete_cell(FAMILY_READS, q)
            try:
                trim.commit()
            except Exception as exc:
                raise StoreError(f"profiles: cannot trim reads of {reader_id!r}: {exc}") from exc

    def _add_follows(self, deltas: dict[str, int]) -> None:
        if self.follows is None:
            return
        for topic, d in sorted(deltas.items()):
            row = self.follows.append_row(b"t#" + topic.encode("utf-8"))
            row.increment_cell_value(FAMILY_FOLLOWS, COLUMN_FOLLOWERS, d)
            try:
                row.commit()
            except Exception as exc:
                raise StoreError(f"profiles: cannot count followers of {topic!r}: {exc}") from exc

    def followed_topics(self, limit: int = 1000) -> dict[str, int]:
        if self.follows is None:
            return {}
        try:
            rows = self.follows.read_rows(start_key=b"t#", end_key=b"t$", filter_=self._latest())
            counts = {}
            for row in rows:
                cell = row.cells.get(FAMILY_FOLLOWS, {}).get(COLUMN_FOLLOWERS)
                n = int.from_bytes(cell[0].value, "big", signed=True) if cell else 0
                if n > 0:
                    counts[row.row_key[2:].decode("utf-8")] = n
        except Exception as exc:
            raise StoreError(f"profiles: cannot read follower counts: {exc}") from exc
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: int(limit)]
        return dict(top)

    def scan_reads(self, since_ms: int = 0):
        try:
            for row in self.table.read_rows(start_key=b"r#", end_key=b"r$", filter_=self._latest()):
                cells = row.cells
                raw = cells.get(FAMILY_PROFILE, {}).get(COLUMN_PROFILE)
                if raw and json.loads(raw[0].value).get("paused"):
                    continue
                reads = [json.loads(c[0].value) for _, c in sorted(cells.get(FAMILY_READS, {}).items())]
                stories = [str(r["story_id"]) for r in reads if r.get("story_id") is not None and r["at"] >= since_ms]
                if stories:
                    yield row.row_key[2:].decode("utf-8"), stories
        except Exception as exc:
            raise StoreError(f"profiles: cannot scan reads: {exc}") from exc

    def take_token(self, reader_id: str, rate: float, burst: float, now_ms: int | None = None) -> tuple[bool, float]:
        from schemas.tables import profile_key

        return bigtable_take(self.table, profile_key(reader_id), FAMILY_PROFILE, COLUMN_BUCKET, rate, burst, now_ms)

    def delete_history(self, reader_id: str) -> None:
        from schemas.tables import profile_key

        row = self.table.direct_row(profile_key(reader_id))
        row.delete_cells(FAMILY_READS, row.ALL_COLUMNS)
        try:
            row.commit()
        except Exception as exc:
            raise StoreError(f"profiles: cannot delete history of {reader_id!r}: {exc}") from exc

    def delete(self, reader_id: str) -> None:
        from schemas.tables import profile_key

        old = self.get(reader_id)
        row = self.table.direct_row(profile_key(reader_id))
        row.delete()
        try:
            row.commit()
        except Exception as exc:
            raise StoreError(f"profiles: cannot delete {reader_id!r}: {exc}") from exc
        if old is not None:
            self._add_follows(follow_deltas(old, None))


def open_profile_store(config=None) -> ProfileStore:
    """The profile store a :class:`stores.StoreConfig` describes (embedded by default)."""
    from stores import open_store

    return open_store("profiles", config)
