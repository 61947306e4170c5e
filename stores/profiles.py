"""Reader profiles for For you: follows, hidden sources, the interest vector, the pause flag and the last reads.

Layout (schemas/tables.py, table ``profiles``; never read by a shared page):

    r#{reader_id}   p:profile        JSON profile document (see :func:`empty_profile`)
                    e:{at:013d}      JSON read (story_id, article_id, at, kind); the newest ``READS_KEPT`` are kept

Backends behind one interface, like the other stores:

- :class:`EmbeddedProfileStore`: tables ``profiles`` and ``profile_reads`` in the embedded SQLite file
  (``{data_dir}/newsroom.sqlite3``, shared with :mod:`stores.embedded` through its :class:`Database`).
  Read-modify-write (and every check of a write against the reader's delete and pause versions) runs in
  ``BEGIN IMMEDIATE``.
- :class:`stores.gcp.profiles.BigtableProfileStore`: the Bigtable table above. Every write of a reader's row is
  a compare-and-set on the exact previous ``p:profile`` version (CheckAndMutateRow).

Deletes and pauses are versions (:mod:`stores.profile_versions`): the document keeps the reader's last delete time
(a delete leaves a tombstone document, ``gone``, that :meth:`ProfileStore.get` reports as None), the last history
delete time and the pause intervals; every write says when it was accepted and the store drops, atomically with
the write, whatever was accepted before a delete or during a pause, so nothing accepted before a delete brings the
profile back, however late it arrives.

Reads are keyed by (event time in ms, event id): replaying an event rewrites the same cell (idempotent), and two
different reads of one reader in the same millisecond are both kept (keyed by time alone, 10 reads in
one ms kept 1). The
embedded table is ``profile_events`` (the older ``profile_reads``, keyed by time alone, is no longer read).

Follower counts (no reader id; topic pages, transforms/editions/overlays/topics.py): every change of a reader's follows
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
import time
from collections.abc import Callable, Iterable, Iterator

from stores import profile_versions as versions
from stores.profile_versions import Superseded

READS_KEPT = 200
UPDATE_RETRIES = 20


def empty_profile() -> dict:
    """The profile of a reader we know nothing about."""
    return {
        # storylines: "{language}/{id}" (followed for their feeds: the OPML export; no topic page, no For you term)
        "follows": {"topics": [], "sources": [], "places": [], "entities": [], "storylines": []},
        "hidden_sources": [],
        "fewer": [],  # [{"story_id", "vector"}] of "fewer like this", newest last (bounded by the caller)
        "interest": {"vector": None, "mass": 0.0, "at": 0},  # decayed sum of read-story vectors (64-d)
        "paused": False,
        "pauses": [],  # [[start_ms, end_ms or 0 while paused]] (stores/profile_versions.py)
        "deleted_at": 0,  # the reader's last profile delete (ms): nothing accepted before it is written
        "history_deleted_at": 0,  # the last history delete (ms): no read accepted before it is written
        "revision": 0,
        "updated_at": 0,
    }


def follow_ids(profile: dict | None) -> set[str]:
    """The topic ids (serving/api/topics.py) a profile follows: sections, places (``pune`` and ``place:pune`` are
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


def dumps(doc: dict) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def normalise(doc: dict | None) -> dict:
    base = empty_profile()
    if doc:
        base.update(doc)
        follows = {"topics": [], "sources": [], "places": [], "entities": [], "storylines": []}
        follows.update(doc.get("follows") or {})
        base["follows"] = follows
    return base


class ProfileStore(abc.ABC):
    """One row per reader: the profile document and the newest reads."""

    @abc.abstractmethod
    def get(self, reader_id: str) -> dict | None:
        """The profile document with ``"reads"`` (newest first, at most READS_KEPT), or None for an unknown reader."""

    @abc.abstractmethod
    def update(self, reader_id: str, fn: Callable[[dict], dict | None], accepted_at: int | None = None) -> dict:
        """Atomically replace the profile document by ``fn(current)`` (``current`` is a private copy, the empty
        profile for a new reader; ``fn`` returning None changes nothing). Returns the stored document. The store
        bumps ``revision`` and ``updated_at``. With ``accepted_at`` (ms, when the request was accepted): raises
        :class:`Superseded` and writes nothing when the reader deleted the profile at or after that time."""

    @abc.abstractmethod
    def append_reads(self, reader_id: str, reads: Iterable[dict], keep: int = READS_KEPT) -> list[dict]:
        """Add reads (each with an int ``at`` in ms and the ``accepted_at`` ms it was accepted at, now if absent),
        then drop all but the newest ``keep``. A read accepted before the reader's last delete (of the profile or
        of the history) or during a pause is not written, checked atomically with the write. Returns the reads
        written."""

    @abc.abstractmethod
    def delete_history(self, reader_id: str, at: int | None = None) -> dict:
        """Remove every stored read of the reader, reset the interest vector and "fewer like this", and refuse
        every read accepted at or before ``at`` (default now) from then on. Returns the profile document."""

    @abc.abstractmethod
    def delete(self, reader_id: str, at: int | None = None) -> None:
        """Forget the reader entirely, leaving a tombstone at ``at`` (default now): no write accepted at or before
        it lands afterwards (stores/profile_versions.py)."""

    @abc.abstractmethod
    def take_token(self, reader_id: str, rate: float, burst: float, now_ms: int | None = None) -> tuple[bool, float]:
        """Take one token of the reader's write budget: (granted, seconds to wait when not)."""

    @abc.abstractmethod
    def scan_reads(
        self, since_ms: int = 0, start: str | None = None, end: str | None = None
    ) -> Iterator[tuple[str, list[str]]]:
        """Every reader in ``[start, end)`` (None: unbounded) with stored reads at or after ``since_ms``:
        ``(reader_id, story ids)``, one reader at a time in reader-id order; paused readers are left out (the daily
        user-cluster job, pipelines/userclusters.py, reads it range by range next to the click log)."""

    def paused_readers(self, start: str | None = None, end: str | None = None) -> set[str]:
        """The readers in ``[start, end)`` (None: unbounded) who paused personalisation (one range scan)."""
        return set()

    def erased_readers(self, start: str | None = None, end: str | None = None, since_ms: int = 0) -> set[str]:
        """The readers in ``[start, end)`` who deleted their profile or history at or after ``since_ms`` (one range
        scan): what was derived from their reads elsewhere before then (the click log) must not be used."""
        return set()

    def followed_topics(self, limit: int = 1000) -> dict[str, int]:
        """The ``limit`` most-followed topic ids with their follower counts (> 0): aggregated, no reader id."""
        return {}

    def close(self) -> None:  # noqa: B027 - a no-op by default; backends with resources override it
        pass


def read_key(r: dict) -> str:
    """The per-read key after the time: a short hash of the event id (or of the whole read if it has none)."""
    import hashlib

    ident = r.get("event_id") or dumps(r)
    return hashlib.sha256(str(ident).encode()).hexdigest()[:16]


def admitted_reads(doc: dict, reads: list[dict]) -> list[dict]:
    now = versions.now_ms()
    return [r for r in reads if versions.read_admitted(doc, versions.accepted_at_of(r, now))]


def check_accepted(reader_id: str, old: dict, accepted_at: int | None) -> None:
    if accepted_at is not None and versions.deleted_since(old, accepted_at):
        raise Superseded(f"profile of {reader_id!r} deleted after this change was accepted")


def forgotten(old: dict, at: int | None) -> dict:
    """The tombstone a delete at ``at`` leaves in place of ``old``."""
    new = bump_revision(old, versions.tombstone(old, versions.now_ms() if at is None else at, empty_profile()))
    new["gone"] = True
    return new


def history_reset(doc: dict, at: int | None) -> dict:
    doc["interest"] = {"vector": None, "mass": 0.0, "at": 0}
    doc["fewer"] = []
    at = versions.now_ms() if at is None else int(at)
    doc["history_deleted_at"] = max(at, int(doc.get("history_deleted_at") or 0))
    return doc


def bump_revision(old: dict, new: dict) -> dict:
    new = normalise(new)
    new.pop("gone", None)  # a write after a delete starts a new profile on top of the tombstone
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
        doc = normalise(json.loads(row[0]) if row else None)
        if (row is None or doc.get("gone")) and not reads:
            return None
        doc["reads"] = reads
        return doc

    @staticmethod
    def _doc(conn, reader_id: str) -> dict:
        row = conn.execute("SELECT profile FROM profiles WHERE reader_id=?", (reader_id,)).fetchone()
        return normalise(json.loads(row[0]) if row else None)

    def update(self, reader_id: str, fn: Callable[[dict], dict | None], accepted_at: int | None = None) -> dict:
        with self.db.transaction() as conn:
            old = self._doc(conn, reader_id)
            check_accepted(reader_id, old, accepted_at)
            new = fn(copy.deepcopy(old))
            if new is None:
                return old
            new = bump_revision(old, new)
            conn.execute("INSERT OR REPLACE INTO profiles VALUES (?,?)", (reader_id, dumps(new)))
            _add_follows(conn, follow_deltas(old, new))
            return new

    def append_reads(self, reader_id: str, reads: Iterable[dict], keep: int = READS_KEPT) -> list[dict]:
        reads = list(reads)
        if not reads:
            return []
        with self.db.transaction() as conn:  # the check and the write in one transaction: a delete cannot interleave
            kept = admitted_reads(self._doc(conn, reader_id), reads)
            rows = [(reader_id, int(r["at"]), read_key(r), dumps(r)) for r in kept]
            conn.executemany("INSERT OR REPLACE INTO profile_events VALUES (?,?,?,?)", rows)
            conn.execute(
                "DELETE FROM profile_events WHERE reader_id=? AND (at, rkey) NOT IN "
                "(SELECT at, rkey FROM profile_events WHERE reader_id=? ORDER BY at DESC, rkey DESC LIMIT ?)",
                (reader_id, reader_id, keep),
            )
        return kept

    def scan_reads(self, since_ms: int = 0, start=None, end=None):
        conn = self.db.connect()
        paused = self.paused_readers(start, end)
        reader, stories = None, []
        sql, args = "SELECT reader_id, event FROM profile_events WHERE at >= ?", [int(since_ms)]
        if start is not None:
            sql, args = sql + " AND reader_id >= ?", args + [start]
        if end is not None:
            sql, args = sql + " AND reader_id < ?", args + [end]
        rows = conn.execute(sql + " ORDER BY reader_id, at", args)
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

    def _docs(self, start=None, end=None) -> Iterator[tuple[str, dict]]:
        sql, args = "SELECT reader_id, profile FROM profiles WHERE 1=1", []
        if start is not None:
            sql, args = sql + " AND reader_id >= ?", args + [start]
        if end is not None:
            sql, args = sql + " AND reader_id < ?", args + [end]
        return ((r, json.loads(doc)) for r, doc in self.db.connect().execute(sql, args))

    def paused_readers(self, start=None, end=None) -> set[str]:
        return {r for r, doc in self._docs(start, end) if doc.get("paused")}

    def erased_readers(self, start=None, end=None, since_ms: int = 0) -> set[str]:
        return {r for r, doc in self._docs(start, end) if versions.erased_at(doc) >= max(int(since_ms), 1)}

    def delete_history(self, reader_id: str, at: int | None = None) -> dict:
        with self.db.transaction() as conn:
            old = self._doc(conn, reader_id)
            new = bump_revision(old, history_reset(copy.deepcopy(old), at))
            if old.get("gone"):
                new["gone"] = True  # a deleted profile stays deleted
            conn.execute("INSERT OR REPLACE INTO profiles VALUES (?,?)", (reader_id, dumps(new)))
            conn.execute("DELETE FROM profile_events WHERE reader_id=?", (reader_id,))
            return new

    def delete(self, reader_id: str, at: int | None = None) -> None:
        with self.db.transaction() as conn:
            old = self._doc(conn, reader_id)
            _add_follows(conn, follow_deltas(old, None))
            conn.execute("DELETE FROM profile_events WHERE reader_id=?", (reader_id,))
            conn.execute("INSERT OR REPLACE INTO profiles VALUES (?,?)", (reader_id, dumps(forgotten(old, at))))
            conn.execute("DELETE FROM rate_buckets WHERE bucket=?", ("reader:" + reader_id,))

    def take_token(self, reader_id: str, rate: float, burst: float, now_ms: int | None = None) -> tuple[bool, float]:
        from stores.embedded import take_tokens

        return take_tokens(self.db, "reader:" + reader_id, rate, burst, now_ms)


def open_profile_store(config=None) -> ProfileStore:
    """The profile store a :class:`stores.StoreConfig` describes (embedded by default)."""
    from stores import open_store

    return open_store("profiles", config)
