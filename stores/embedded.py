"""Embedded backends: one SQLite file for the tables and the bus, a local directory for snapshots.

Reads and writes ``{data_dir}/newsroom.sqlite3`` and ``{data_dir}/snapshots/``. The same keys as the Bigtable
layout (:mod:`schemas.tables`) are used so that a row means the same thing on both backends. Conditional writes
run in ``BEGIN IMMEDIATE`` transactions, which serialise writers across threads and processes; each thread has
its own connection.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import orjson

from schemas import codec
from stores.base import (
    AlreadyExists,
    ArticleStore,
    Message,
    MessageBus,
    NotFound,
    PointerStore,
    SnapshotStore,
    StoryStore,
    WriteOutcome,
    WriteResult,
    order_text,
    version_order,
)

_DDL = """
CREATE TABLE IF NOT EXISTS articles (article_id TEXT PRIMARY KEY, version INTEGER NOT NULL,
    content_hash TEXT NOT NULL, record BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS article_versions (article_id TEXT, version INTEGER, record BLOB,
    PRIMARY KEY (article_id, version));
CREATE TABLE IF NOT EXISTS content_index (content_hash TEXT PRIMARY KEY, owner TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS stories (story_id INTEGER PRIMARY KEY, meta TEXT NOT NULL DEFAULT '{}',
    centroid TEXT, alias_of INTEGER);
CREATE INDEX IF NOT EXISTS stories_alias ON stories(alias_of);
CREATE TABLE IF NOT EXISTS story_members (story_id INTEGER, article_id TEXT, member TEXT,
    PRIMARY KEY (story_id, article_id));
CREATE TABLE IF NOT EXISTS story_links (story_id INTEGER, other_id INTEGER, info TEXT,
    PRIMARY KEY (story_id, other_id));
CREATE TABLE IF NOT EXISTS live_stories (language TEXT, story_id INTEGER, PRIMARY KEY (language, story_id));
CREATE TABLE IF NOT EXISTS applied_changes (change_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS writers (language TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS minted (language TEXT PRIMARY KEY, story_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pointers (name TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pointer_tombstones (name TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pointer_history (name TEXT, seq INTEGER, version INTEGER, previous INTEGER,
    at INTEGER, reason TEXT, PRIMARY KEY (name, seq));
CREATE TABLE IF NOT EXISTS bus_topics (topic TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS bus_subscriptions (subscription TEXT PRIMARY KEY, topic TEXT NOT NULL,
    ack_deadline_s INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS bus_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL,
    data BLOB NOT NULL, attributes TEXT NOT NULL, published_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS bus_deliveries (subscription TEXT, message_id INTEGER, lease_until REAL NOT NULL DEFAULT 0,
    ack_id TEXT, PRIMARY KEY (subscription, message_id));
CREATE INDEX IF NOT EXISTS bus_pending ON bus_deliveries(subscription, lease_until);
"""


def _use_wal(conn: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Put the file in WAL mode (a property of the file: once set, every later connection finds it set).

    The switch needs an exclusive lock, and SQLite answers a competing switch or a connection still recovering
    the file with "database is locked" *without* calling the busy handler, so processes opening a fresh file
    together (two backfills on one --store, the origin beside a job) retry here, up to ``wait_s``, instead of
    failing. Pinned by tests/stores/test_embedded_open.py."""
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def take_tokens(
    db, bucket: str, rate: float, burst: float, now_ms: int | None = None, n: int = 1, force: bool = False
) -> tuple[bool, float]:
    """``n`` tokens from the token bucket ``bucket`` (table ``rate_buckets``, :func:`stores.base.bucket_step`) in one
    write transaction, so every process on the file shares it: reader write budgets, publisher pings, CDN purges.
    Returns (granted, seconds to wait when not). Without ``now_ms`` the clock is read inside the transaction (after
    BEGIN IMMEDIATE took the write lock): a reading taken before waiting for the lock would be older than the
    refill time the previous holder wrote."""
    from stores.base import bucket_step

    with db.transaction() as conn:
        now_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
        conn.execute("CREATE TABLE IF NOT EXISTS rate_buckets (bucket TEXT PRIMARY KEY, state TEXT NOT NULL)")
        row = conn.execute("SELECT state FROM rate_buckets WHERE bucket=?", (bucket,)).fetchone()
        state, ok, wait = bucket_step(json.loads(row[0]) if row else None, rate, burst, now_ms, n, force)
        conn.execute("INSERT OR REPLACE INTO rate_buckets VALUES (?,?)", (bucket, json.dumps(state, sort_keys=True)))
    return ok, wait


class Database:
    """A SQLite file shared by the embedded stores; one connection per thread."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self.connect() as conn:
            conn.executescript(_DDL)

    def connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=30000")
            _use_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def transaction(self) -> _Tx:
        return _Tx(self.connect())


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT: takes the write lock up front, so read-then-write is atomic."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


class EmbeddedArticleStore(ArticleStore):
    """``articles.order_key``: the stored version's version_order as order_text (added to older files on open;
    NULL there, which any order is at least as new as, i.e. the old behaviour)."""

    def __init__(self, db: Database):
        self.db = db
        conn = db.connect()
        columns = {row[1] for row in conn.execute("PRAGMA table_info(articles)")}
        if "order_key" not in columns:
            try:
                conn.execute("ALTER TABLE articles ADD COLUMN order_key TEXT")
            except sqlite3.OperationalError:  # another process added it first
                pass

    def write(self, article: dict, order: tuple[int, int] | None = None) -> WriteResult:
        record = codec.encode("Article", article)
        aid, version, chash = article["article_id"], article["version"], article["content_hash"]
        okey = order_text(order if order is not None else version_order(article))
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT version, content_hash, order_key FROM articles WHERE article_id=?", (aid,)
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO articles (article_id, version, content_hash, record, order_key) VALUES (?,?,?,?,?)",
                    (aid, version, chash, record, okey),
                )
                conn.execute("INSERT OR IGNORE INTO article_versions VALUES (?,?,?)", (aid, version, record))
                return WriteResult(WriteOutcome.NEW, version, chash)
            stored, stored_hash, stored_order = row
            if stored_order is not None and stored_order > okey:
                return WriteResult(WriteOutcome.STALE, stored, stored_hash, newer_stored=True)
            if stored < version:
                conn.execute(
                    "UPDATE articles SET version=?, content_hash=?, record=?, order_key=? WHERE article_id=?",
                    (version, chash, record, okey, aid),
                )
                conn.execute("INSERT OR IGNORE INTO article_versions VALUES (?,?,?)", (aid, version, record))
                return WriteResult(WriteOutcome.UPDATE, version, chash)
            outcome = WriteOutcome.DUPLICATE if stored == version else WriteOutcome.STALE
            return WriteResult(outcome, stored, stored_hash)

    def get(self, article_id: str) -> dict | None:
        row = self.db.connect().execute("SELECT record FROM articles WHERE article_id=?", (article_id,)).fetchone()
        return codec.decode("Article", row[0]) if row else None

    def get_version(self, article_id: str, version: int) -> dict | None:
        row = (
            self.db.connect()
            .execute("SELECT record FROM article_versions WHERE article_id=? AND version=?", (article_id, version))
            .fetchone()
        )
        return codec.decode("Article", row[0]) if row else None

    def latest_records(self, after: str = "", limit: int = 1000) -> list[tuple[str, bytes]]:
        rows = self.db.connect().execute(
            "SELECT article_id, record FROM articles WHERE article_id > ? ORDER BY article_id LIMIT ?", (after, limit)
        )
        return [(a, bytes(r)) for a, r in rows]

    def split_points(self, n: int) -> list[str]:
        conn = self.db.connect()
        count = conn.execute("SELECT COUNT(*) FROM articles").fetchone()[0]
        at = sorted({count * k // n for k in range(1, max(1, n))} - {0})
        q = "SELECT article_id FROM articles ORDER BY article_id LIMIT 1 OFFSET ?"
        return [conn.execute(q, (i,)).fetchone()[0] for i in at if i < count]

    def scan_latest(self, start: str = "", end: str = "", page: int = 1000):
        conn, after, first = self.db.connect(), start, True
        while True:  # pages by id: a long scan holds no read transaction between pages
            rows = conn.execute(
                f"SELECT article_id, record FROM articles WHERE article_id {'>=' if first else '>'} ? "
                "AND (? = '' OR article_id < ?) ORDER BY article_id LIMIT ?",
                (after, end, end, page),
            ).fetchall()
            yield from ((a, bytes(r) if r is not None else None) for a, r in rows)
            if len(rows) < page:
                return
            after, first = rows[-1][0], False

    def claim_content(self, content_hash: str, article_id: str) -> str:
        with self.db.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO content_index VALUES (?,?)", (content_hash, article_id))
            return conn.execute("SELECT owner FROM content_index WHERE content_hash=?", (content_hash,)).fetchone()[0]


_ORJSON = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _dumps(value) -> str:
    """Compact sorted JSON (orjson: ~20x json.dumps on the story writer's centroids; floats round-trip exactly)."""
    return orjson.dumps(value, option=_ORJSON).decode()


class EmbeddedStoryStore(StoryStore):
    def __init__(self, db: Database):
        self.db = db

    def put_story(self, story_id: int, meta: dict, centroid: list[float] | None = None) -> None:
        cj = _dumps([float(x) for x in centroid]) if centroid is not None else None
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO stories (story_id, meta, centroid) VALUES (?,?,?) ON CONFLICT(story_id) DO UPDATE "
                "SET meta=excluded.meta, centroid=COALESCE(excluded.centroid, stories.centroid)",
                (story_id, _dumps(meta), cj),
            )

    def story_ids(self, after: int = -1, limit: int = 1000) -> list[int]:
        rows = self.db.connect().execute(
            "SELECT story_id FROM stories WHERE story_id > ? ORDER BY story_id LIMIT ?", (after, limit)
        )
        return [r[0] for r in rows]

    def get_story(self, story_id: int) -> dict | None:
        conn = self.db.connect()
        row = conn.execute("SELECT meta, centroid, alias_of FROM stories WHERE story_id=?", (story_id,)).fetchone()
        members = {
            a: json.loads(m)
            for a, m in conn.execute("SELECT article_id, member FROM story_members WHERE story_id=?", (story_id,))
        }
        links = {
            o: json.loads(i)
            for o, i in conn.execute("SELECT other_id, info FROM story_links WHERE story_id=?", (story_id,))
        }
        if row is None and not members:
            return None
        meta, centroid, alias_of = row if row else ("{}", None, None)
        return {
            "story_id": story_id,
            "meta": json.loads(meta),
            "centroid": json.loads(centroid) if centroid else None,
            "members": members,
            "links": links,
            "alias_of": alias_of,
        }

    def add_members(self, story_id: int, members: dict[str, dict]) -> None:
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO story_members VALUES (?,?,?)",
                [(story_id, a, _dumps(m)) for a, m in members.items()],
            )

    def remove_members(self, story_id: int, article_ids: Iterable[str]) -> None:
        with self.db.transaction() as conn:
            conn.executemany(
                "DELETE FROM story_members WHERE story_id=? AND article_id=?", [(story_id, a) for a in article_ids]
            )

    def set_alias(self, story_id: int, survivor_id: int) -> None:
        with self.db.transaction() as conn:
            # The survivor may itself have been merged: point at the end of its chain, so resolution stays one hop.
            row = conn.execute("SELECT alias_of FROM stories WHERE story_id=?", (survivor_id,)).fetchone()
            resolved = row[0] if row and row[0] is not None else survivor_id
            if story_id == resolved:
                raise ValueError(f"story {story_id} cannot be an alias of itself (asked: alias of {survivor_id})")
            survivor_id = resolved
            conn.execute("INSERT OR IGNORE INTO stories (story_id) VALUES (?)", (story_id,))
            conn.execute("UPDATE stories SET alias_of=? WHERE alias_of=?", (survivor_id, story_id))
            conn.execute("UPDATE stories SET alias_of=? WHERE story_id=?", (survivor_id, story_id))

    def resolve(self, story_id: int) -> int:
        row = self.db.connect().execute("SELECT alias_of FROM stories WHERE story_id=?", (story_id,)).fetchone()
        return row[0] if row and row[0] is not None else story_id

    def add_link(self, story_id: int, other_id: int, info: dict) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO story_links VALUES (?,?,?)",
                (story_id, other_id, json.dumps(info, sort_keys=True)),
            )

    def set_live(self, language: str, story_id: int, live: bool) -> None:
        with self.db.transaction() as conn:
            if live:
                conn.execute("INSERT OR IGNORE INTO live_stories VALUES (?,?)", (language, story_id))
            else:
                conn.execute("DELETE FROM live_stories WHERE language=? AND story_id=?", (language, story_id))

    def live_stories(self, language: str) -> list[int]:
        rows = self.db.connect().execute(
            "SELECT story_id FROM live_stories WHERE language=? ORDER BY story_id", (language,)
        )
        return [r[0] for r in rows]

    def mark_change(self, change_id: str) -> bool:
        with self.db.transaction() as conn:
            return conn.execute("INSERT OR IGNORE INTO applied_changes VALUES (?)", (change_id,)).rowcount == 1

    def writer_seq(self, language: str) -> int:
        row = self.db.connect().execute("SELECT seq FROM writers WHERE language=?", (language,)).fetchone()
        return row[0] if row else 0

    def set_writer_seq(self, language: str, seq: int) -> None:
        with self.db.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO writers VALUES (?,?)", (language, seq))

    def minted_floor(self, language: str) -> int:
        row = self.db.connect().execute("SELECT story_id FROM minted WHERE language=?", (language,)).fetchone()
        return row[0] if row else 0

    def raise_minted_floor(self, language: str, story_id: int) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO minted VALUES (?,?) ON CONFLICT(language) DO UPDATE "
                "SET story_id=MAX(minted.story_id, excluded.story_id)",
                (language, int(story_id)),
            )


class EmbeddedPointerStore(PointerStore):
    def __init__(self, db: Database):
        self.db = db

    def get(self, name: str) -> int | None:
        row = self.db.connect().execute("SELECT version FROM pointers WHERE name=?", (name,)).fetchone()
        return row[0] if row else None

    def compare_and_set(self, name: str, expected: int | None, new: int, reason: str = "") -> bool:
        """A move from ``expected`` is one conditional UPDATE (the row at ``expected`` or nothing: a pointer that
        moved or is gone is not touched) and its history row, in one transaction; a first version also checks the
        tombstone. Four statements with BEGIN and COMMIT where a read, a write and a read of the history's last seq
        were six: a replay moves ~10,000 pointers."""
        with self.db.transaction() as conn:
            if expected is not None:
                moved = conn.execute(
                    "UPDATE pointers SET version=? WHERE name=? AND version=?", (new, name, expected)
                ).rowcount
                if moved != 1:
                    return False
            else:
                if conn.execute("SELECT 1 FROM pointers WHERE name=?", (name,)).fetchone() is not None:
                    return False
                dead = conn.execute("SELECT version FROM pointer_tombstones WHERE name=?", (name,)).fetchone()
                if dead is not None and new <= dead[0]:
                    return False  # retired at or after this version: a late writer does not resurrect it
                conn.execute("INSERT INTO pointers VALUES (?,?)", (name, new))
            self._record(conn, name, new, expected, reason)
            return True

    def retire(self, name: str, expected: int) -> bool:
        with self.db.transaction() as conn:
            row = conn.execute("SELECT version FROM pointers WHERE name=?", (name,)).fetchone()
            if row is None or row[0] != expected:
                return False
            conn.execute("DELETE FROM pointers WHERE name=?", (name,))
            conn.execute("INSERT OR REPLACE INTO pointer_tombstones VALUES (?,?)", (name, expected))
            self._record(conn, name, None, expected, "retired")
            return True

    def revive(self, name: str) -> int | None:
        with self.db.transaction() as conn:
            if conn.execute("SELECT 1 FROM pointers WHERE name=?", (name,)).fetchone() is not None:
                return None
            dead = conn.execute("SELECT version FROM pointer_tombstones WHERE name=?", (name,)).fetchone()
            if dead is None:
                return None
            conn.execute("INSERT INTO pointers VALUES (?,?)", (name, dead[0]))
            self._record(conn, name, dead[0], None, "revived")
            return dead[0]

    @staticmethod
    def _record(conn, name: str, version: int | None, previous: int | None, reason: str) -> None:
        """The history row of a move, numbered after the pointer's last one (one statement)."""
        conn.execute(
            "INSERT INTO pointer_history SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ? FROM pointer_history "
            "WHERE name=?",
            (name, version, previous, int(time.time() * 1000), reason, name),
        )

    def history(self, name: str) -> list[dict]:
        rows = self.db.connect().execute(
            "SELECT version, previous, at, reason FROM pointer_history WHERE name=? ORDER BY seq", (name,)
        )
        return [{"version": v, "previous": p, "at": a, "reason": r} for v, p, a, r in rows]

    def names(self, prefix: str = "") -> list[str]:
        rows = self.db.connect().execute(
            "SELECT name FROM pointers WHERE substr(name, 1, ?) = ? ORDER BY name", (len(prefix), prefix)
        )
        return [r[0] for r in rows]

    def versions(self, prefix: str = "") -> dict[str, int]:
        rows = self.db.connect().execute(
            "SELECT name, version FROM pointers WHERE substr(name, 1, ?) = ? ORDER BY name", (len(prefix), prefix)
        )
        return dict(rows.fetchall())


class DirectorySnapshotStore(SnapshotStore):
    """Snapshots as files; created with O_EXCL so a second writer of the same path fails."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._resolved: Path | None = None
        self._folders: dict[str, Path] = {}  # folder of a put -> resolved, checked and created (:meth:`_put_path`)

    def _path(self, path: str) -> Path:
        full = (self.root / path).resolve()
        if self._resolved is None:  # the root resolved once (a replay puts ~10,000 objects)
            self._resolved = self.root.resolve()
        if full == self._resolved or not full.is_relative_to(self._resolved):
            raise ValueError(f"snapshot path {path!r} escapes the store")
        return full

    def _put_path(self, path: str) -> tuple[str, str]:
        """Where :meth:`put` writes ``path``: (its resolved folder, its name). At a folder's first put the whole path is
        checked (:meth:`_path`), the folder created, resolved and remembered, so a replay putting ~10,000 objects
        into a few hundred folders does not resolve and create each again. The name is joined to it only when it
        is a plain one (not empty, ``.`` or ``..``); the object is then linked without following or replacing an
        existing name (os.link), so nothing is written outside the root."""
        folder, _, name = path.rpartition("/")
        if name in ("", ".", ".."):
            self._path(path)  # refused (it names a folder)
            raise ValueError(f"snapshot path {path!r} names a folder")
        parent = self._folders.get(folder)
        if parent is None:
            self._path(path).parent.mkdir(parents=True, exist_ok=True)  # the whole path checked first
            resolved = (self.root / folder).resolve()
            if not resolved.is_relative_to(self._resolved):
                raise ValueError(f"snapshot path {path!r} escapes the store")
            parent = self._folders[folder] = str(resolved)
        return parent, name

    def put(self, path: str, data: bytes, content_type: str = "application/json") -> None:
        """Write a temporary file beside the object, then link it under the object's name: atomic, and refused when
        the name exists (readers never see a partial object). Plain os calls on strings (no pathlib, no buffered
        file object): a replay puts ~10,000 objects."""
        parent, name = self._put_path(path)
        full = f"{parent}/{name}"
        tmp = f"{parent}/.{name}.{os.urandom(16).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.link(tmp, full)  # atomic and fails if the name exists: readers never see a partial object
        except FileExistsError:
            raise AlreadyExists(f"snapshot {path} already exists; snapshots are immutable") from None
        finally:
            os.unlink(tmp)

    def get(self, path: str) -> bytes:
        try:
            return self._path(path).read_bytes()
        except FileNotFoundError:
            raise NotFound(f"no snapshot {path}") from None

    def exists(self, path: str) -> bool:
        return self._path(path).is_file()

    def list(self, prefix: str = "") -> list[str]:
        out = []
        for p in self.root.rglob("*"):
            if p.is_file() and not p.name.startswith("."):
                rel = p.relative_to(self.root).as_posix()
                if rel.startswith(prefix):
                    out.append(rel)
        return sorted(out)


def _string_attributes(attributes: dict | None) -> dict[str, str]:
    # Pub/Sub attributes are strings; the embedded bus converts the same way so consumers see one contract.
    return {str(k): str(v) for k, v in (attributes or {}).items()}


class EmbeddedBus(MessageBus):
    """A durable at-least-once queue in SQLite: messages fan out to subscriptions, leased on pull, deleted on ack."""

    def __init__(self, db: Database):
        self.db = db

    def ensure_topic(self, topic: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO bus_topics VALUES (?)", (topic,))

    def ensure_subscription(self, topic: str, subscription: str, ack_deadline_s: int = 60) -> None:
        self.ensure_topic(topic)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO bus_subscriptions VALUES (?,?,?)", (subscription, topic, ack_deadline_s)
            )

    def publish(self, topic: str, data: bytes, attributes: dict | None = None, ordering_key: str | None = None) -> str:
        """The embedded bus delivers in publish order anyway; the key is kept as the ``ordering_key`` attribute."""
        if ordering_key:
            attributes = dict(attributes or {}, ordering_key=ordering_key)
        return self.publish_many(topic, [(data, attributes)])[0]

    def publish_many(self, topic: str, items: list[tuple[bytes, dict]]) -> list[str]:
        """All messages in one transaction: every one is published, or (on error) none."""
        items = list(items)
        if not items:
            return []
        now = time.time()
        ids = []
        with self.db.transaction() as conn:
            if conn.execute("SELECT 1 FROM bus_topics WHERE topic=?", (topic,)).fetchone() is None:
                raise NotFound(f"no topic {topic!r}; create it with ensure_topic or `newsroom stack up`")
            for data, attributes in items:
                cur = conn.execute(
                    "INSERT INTO bus_messages (topic, data, attributes, published_at) VALUES (?,?,?,?)",
                    (topic, bytes(data), json.dumps(_string_attributes(attributes), sort_keys=True), now),
                )
                ids.append(cur.lastrowid)
            conn.executemany(
                "INSERT INTO bus_deliveries (subscription, message_id) SELECT subscription, ? FROM bus_subscriptions "
                "WHERE topic=?",
                [(mid, topic) for mid in ids],
            )
        return [str(mid) for mid in ids]

    def pull(self, subscription: str, max_messages: int = 100, timeout: float = 1.0) -> list[Message]:
        deadline = time.monotonic() + timeout
        while True:
            now = time.time()
            with self.db.transaction() as conn:
                sub = conn.execute(
                    "SELECT ack_deadline_s FROM bus_subscriptions WHERE subscription=?", (subscription,)
                ).fetchone()
                if sub is None:
                    raise NotFound(f"no subscription {subscription!r}")
                rows = conn.execute(
                    "SELECT d.message_id, m.data, m.attributes FROM bus_deliveries d JOIN bus_messages m "
                    "ON m.id = d.message_id WHERE d.subscription=? AND d.lease_until <= ? "
                    "ORDER BY d.message_id LIMIT ?",
                    (subscription, now, max_messages),
                ).fetchall()
                out = []
                for mid, data, attrs in rows:
                    ack_id = f"{mid}:{uuid.uuid4().hex}"
                    conn.execute(
                        "UPDATE bus_deliveries SET lease_until=?, ack_id=? WHERE subscription=? AND message_id=?",
                        (now + sub[0], ack_id, subscription, mid),
                    )
                    out.append(Message(str(mid), ack_id, bytes(data), json.loads(attrs)))
            if out or time.monotonic() >= deadline:
                return out
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def ack(self, subscription: str, ack_ids: Iterable[str]) -> None:
        ids = list(ack_ids)
        if not ids:
            return
        with self.db.transaction() as conn:
            conn.executemany(
                "DELETE FROM bus_deliveries WHERE subscription=? AND ack_id=?", [(subscription, a) for a in ids]
            )
