"""Feed store: the ingest job's feed registry, schedule checkpoints, seen-URL claims and WebSub subscriptions.

Layout (table ``feeds`` of :mod:`schemas.tables`, families ``r`` and ``s``; the embedded backend mirrors the keys
in SQLite tables of ``{data_dir}/newsroom.sqlite3``):

    f#{sha256(feed_url)[:32]}   r:config  JSON registry entry {url, publisher_id, tier, kind, enabled}
                                s:state   JSON schedule checkpoint (transforms.ingest.schedule.FeedState)
    u#{sha256(claim_key)[:32]}  s:claim   JSON {key, owner, at}: the page was (or is being) fetched by ``owner``
                                s:ping    JSON token bucket of the origin's publisher pings (stores.base.bucket_step)
                                s:seen:{digest}  ms: a ping accepted for this feed (the replay ledger; deleted
                                          once older than the ping age limit)
    w#{sub_id}                  s:sub     JSON WebSub subscription {sub_id, topic, hub, secret, callback, state,
                                          requested_at, lease_seconds, lease_expires_ms}
    o#{item_id}                 s:out:{owner}  JSON outbox entry {item, owner, first_seen_at, due, attempts,
                                          discovery}: a page claimed by ``owner`` that has not reached the article
                                          store yet (item_id: the RawItem's, sha256(url)[:32])

Seen-URL claims make "each new item's page is fetched once" durable across restarts: ``claim`` is
create-if-absent, and a replay by the *same* owner (a retried bundle, a replayed dead letter) is granted again,
so a retry is never mistaken for a duplicate. The outbox closes the gap a claim opens: a claimed page is
"seen", so if its RawItem is lost before the article store has it (the local bus keeps messages in memory, a killed
stories job had already acknowledged them) nothing would fetch it again. Ingest therefore holds an outbox entry for
every claimed page (:meth:`FeedStore.hold`, written before the claim), the stories job settles it once the
article store's conditional write (or a dead letter) has decided the item (:meth:`FeedStore.settle`), and ingest
republishes the entries still held after a grace period (:meth:`FeedStore.due`; pipelines/ingest_local.py).
The checkpoint lets a restarted job resume each feed's validators,
guids and rates (Beam state is lost when a local run stops; on Dataflow it survives updates and drains too).

The Bigtable backend reuses the row helpers of :mod:`stores.gcp` (latest-cell filters, conditional rows).
"""

from __future__ import annotations

import abc
import hashlib
import json
import re
import time

from schemas.tables import feed_key

_SEEN = b"seen:"  # qualifier prefix of the ping replay ledger
_OUT = b"out:"  # qualifier prefix of the outbox entries of an item


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def claim_row_key(claim_key: str) -> bytes:
    return f"u#{_h(claim_key)}".encode()


def subscription_row_key(sub_id: str) -> bytes:
    return f"w#{sub_id}".encode()


def outbox_row_key(item: str) -> bytes:
    return f"o#{item}".encode()


class FeedStore(abc.ABC):
    # registry ---------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def put_feed(self, entry: dict) -> None:
        """Create or replace a registry entry (``entry["url"]`` is the key)."""

    @abc.abstractmethod
    def list_feeds(self) -> list[dict]: ...

    @abc.abstractmethod
    def get_feed(self, url: str) -> dict | None:
        """The registry entry of exactly ``url`` (None if the feed is not registered)."""

    @abc.abstractmethod
    def take_ping_token(self, url: str, rate: float, burst: float, now_ms: int | None = None) -> tuple[bool, float]:
        """One token of the feed's ping bucket (shared by every origin worker and instance; see
        stores.base.bucket_step): (granted, seconds to wait when not). Callers pass known feeds only: the bucket is
        a cell of the feed's own row (Bigtable) or one row per feed (SQLite ``rate_buckets``)."""

    # the ping replay ledger: accepted pings of the last ``keep_ms`` per feed ---------------------------------------
    @abc.abstractmethod
    def ping_seen(self, url: str, digest: str) -> bool:
        """True when the ledger holds ping ``digest`` for the feed (whatever its age: expired entries are deleted by
        :meth:`record_ping`, not hidden)."""

    @abc.abstractmethod
    def record_ping(self, url: str, digest: str, now_ms: int, keep_ms: int) -> bool:
        """Add ping ``digest`` to the feed's ledger (create-if-absent) and delete the feed's entries older than
        ``keep_ms``. False when it was there already (a concurrent duplicate). One entry per accepted ping: with
        one accepted ping per feed per 30 s and ``keep_ms`` 10 min (serving.api.push PING_LEDGER_MS), at most 20 per
        feed."""

    @abc.abstractmethod
    def delete_feed(self, url: str) -> None: ...

    # schedule checkpoints -----------------------------------------------------------------------------------
    @abc.abstractmethod
    def get_state(self, url: str) -> dict | None: ...

    @abc.abstractmethod
    def put_state(self, url: str, state: dict) -> None: ...

    # seen URLs ----------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def claim(self, key: str, owner: str, now_ms: int | None = None) -> bool:
        """Create-if-absent. True if ``owner`` holds the claim on ``key`` (it just took it, or took it before)."""

    @abc.abstractmethod
    def claimed_by(self, key: str) -> str | None: ...

    # the outbox: claimed pages that have not reached the article store yet --------------------------------------
    @abc.abstractmethod
    def hold(self, record: dict) -> None:
        """Create or replace the outbox entry of ``record["item"]`` (the RawItem's item_id) and ``record["owner"]``
        (the discovery's claim owner). ``record`` also holds ``first_seen_at`` (ms, the discovery's) and ``due``
        (ms: from when a replay may republish it), and whatever the replayer needs (the discovery)."""

    @abc.abstractmethod
    def release(self, item: str, owner: str) -> None:
        """Drop one entry (its claim went to another owner, or ingest dead-lettered the page)."""

    @abc.abstractmethod
    def settle(self, item: str, first_seen_at: int) -> int:
        """The item reached the article store (or a dead letter) as first seen at ``first_seen_at``: drop its entries
        first seen at or before then (a later correction stays held). Returns how many were dropped."""

    @abc.abstractmethod
    def due(self, now_ms: int, limit: int = 500) -> list[dict]:
        """The held entries whose ``due`` is at or before ``now_ms``, earliest first, at most ``limit``."""

    # WebSub subscriptions (also the origin's app.config["WEBSUB_SUBSCRIPTIONS"]) -------------------------------
    @abc.abstractmethod
    def put_subscription(self, sub: dict) -> None: ...

    @abc.abstractmethod
    def get_subscription(self, sub_id: str) -> dict | None: ...

    @abc.abstractmethod
    def list_subscriptions(self) -> list[dict]: ...

    def activate_subscription(self, sub_id: str, lease_seconds: int, now_ms: int) -> dict | None:
        sub = self.get_subscription(sub_id)
        if sub is None:
            return None
        sub = dict(
            sub,
            state="active",
            lease_seconds=int(lease_seconds),
            lease_expires_ms=now_ms + int(lease_seconds) * 1000,
            verified_at=now_ms,
        )
        self.put_subscription(sub)
        return sub


_DDL = """
CREATE TABLE IF NOT EXISTS feeds_registry (row_key TEXT PRIMARY KEY, url TEXT NOT NULL, config TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS feeds_state (row_key TEXT PRIMARY KEY, url TEXT NOT NULL, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS feeds_claims (row_key TEXT PRIMARY KEY, claim TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS feeds_subscriptions (sub_id TEXT PRIMARY KEY, sub TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS feeds_pings (row_key TEXT NOT NULL, digest TEXT NOT NULL, at INTEGER NOT NULL,
    PRIMARY KEY (row_key, digest));
CREATE TABLE IF NOT EXISTS feeds_outbox (item TEXT NOT NULL, owner TEXT NOT NULL, first_seen_at INTEGER NOT NULL,
    due INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (item, owner));
CREATE INDEX IF NOT EXISTS feeds_outbox_due ON feeds_outbox (due);
"""


class EmbeddedFeedStore(FeedStore):
    def __init__(self, db):
        self.db = db
        self.db.connect().executescript(_DDL)

    def put_feed(self, entry: dict) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO feeds_registry VALUES (?,?,?)",
                (feed_key(entry["url"]).decode(), entry["url"], json.dumps(entry, sort_keys=True)),
            )

    def list_feeds(self) -> list[dict]:
        rows = self.db.connect().execute("SELECT config FROM feeds_registry ORDER BY row_key")
        return [json.loads(r[0]) for r in rows]

    def get_feed(self, url: str) -> dict | None:
        row = (
            self.db.connect()
            .execute("SELECT config FROM feeds_registry WHERE row_key=?", (feed_key(url).decode(),))
            .fetchone()
        )
        return json.loads(row[0]) if row else None

    def take_ping_token(self, url: str, rate: float, burst: float, now_ms: int | None = None) -> tuple[bool, float]:
        from stores.embedded import take_tokens

        return take_tokens(self.db, "ping:" + feed_key(url).decode(), rate, burst, now_ms)

    def ping_seen(self, url: str, digest: str) -> bool:
        row = (
            self.db.connect()
            .execute("SELECT 1 FROM feeds_pings WHERE row_key=? AND digest=?", (feed_key(url).decode(), digest))
            .fetchone()
        )
        return row is not None

    def record_ping(self, url: str, digest: str, now_ms: int, keep_ms: int) -> bool:
        rk = feed_key(url).decode()
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM feeds_pings WHERE row_key=? AND at < ?", (rk, int(now_ms) - int(keep_ms)))
            cur = conn.execute("INSERT OR IGNORE INTO feeds_pings VALUES (?,?,?)", (rk, digest, int(now_ms)))
            return cur.rowcount == 1

    def delete_feed(self, url: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM feeds_registry WHERE row_key=?", (feed_key(url).decode(),))

    def get_state(self, url: str) -> dict | None:
        row = (
            self.db.connect()
            .execute("SELECT state FROM feeds_state WHERE row_key=?", (feed_key(url).decode(),))
            .fetchone()
        )
        return json.loads(row[0]) if row else None

    def put_state(self, url: str, state: dict) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO feeds_state VALUES (?,?,?)",
                (feed_key(url).decode(), url, json.dumps(state, sort_keys=True)),
            )

    def claim(self, key: str, owner: str, now_ms: int | None = None) -> bool:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        rk = claim_row_key(key).decode()
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO feeds_claims VALUES (?,?)",
                (rk, json.dumps({"key": key, "owner": owner, "at": now_ms})),
            )
            row = conn.execute("SELECT claim FROM feeds_claims WHERE row_key=?", (rk,)).fetchone()
        return json.loads(row[0])["owner"] == owner

    def claimed_by(self, key: str) -> str | None:
        row = (
            self.db.connect()
            .execute("SELECT claim FROM feeds_claims WHERE row_key=?", (claim_row_key(key).decode(),))
            .fetchone()
        )
        return json.loads(row[0])["owner"] if row else None

    def hold(self, record: dict) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO feeds_outbox VALUES (?,?,?,?,?)",
                (
                    record["item"],
                    record["owner"],
                    int(record["first_seen_at"]),
                    int(record["due"]),
                    json.dumps(record, sort_keys=True),
                ),
            )

    def release(self, item: str, owner: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM feeds_outbox WHERE item=? AND owner=?", (item, owner))

    def settle(self, item: str, first_seen_at: int) -> int:
        with self.db.transaction() as conn:
            cur = conn.execute("DELETE FROM feeds_outbox WHERE item=? AND first_seen_at<=?", (item, int(first_seen_at)))
            return cur.rowcount

    def due(self, now_ms: int, limit: int = 500) -> list[dict]:
        rows = self.db.connect().execute(
            "SELECT record FROM feeds_outbox WHERE due<=? ORDER BY due, item, owner LIMIT ?", (int(now_ms), int(limit))
        )
        return [json.loads(r[0]) for r in rows]

    def put_subscription(self, sub: dict) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO feeds_subscriptions VALUES (?,?)",
                (sub["sub_id"], json.dumps(sub, sort_keys=True)),
            )

    def get_subscription(self, sub_id: str) -> dict | None:
        row = self.db.connect().execute("SELECT sub FROM feeds_subscriptions WHERE sub_id=?", (sub_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def list_subscriptions(self) -> list[dict]:
        return [
            json.loads(r[0]) for r in self.db.connect().execute("SELECT sub FROM feeds_subscriptions ORDER BY sub_id")
        ]


class BigtableFeedStore(FeedStore):
    """The ``feeds`` table on Bigtable (or its emulator)."""

    def __init__(self, table):
        from stores.gcp.bigtable import Table

        self.t = Table(table, table.table_id)  # the data-plane handle with the store's error mapping

    def _put(self, key: bytes, family: str, qualifier: bytes, value: dict) -> None:
        data = json.dumps(value, sort_keys=True).encode()
        self.t.write(key, lambda row: row.set_cell(family, qualifier, data))

    def _get(self, key: bytes, family: str, qualifier: bytes) -> dict | None:
        from stores import gcp

        row = self.t.read_row(key, gcp.latest_cell_filter(family, qualifier))
        value = gcp.cell_value(row, family, qualifier)
        return json.loads(value) if value else None

    def put_feed(self, entry: dict) -> None:
        self._put(feed_key(entry["url"]), "r", b"config", entry)

    def list_feeds(self) -> list[dict]:
        from stores import gcp

        rows = self.t.read_prefix(b"f#", gcp.latest_cell_filter("r", b"config"))
        out = []
        for row in rows:
            v = gcp.cell_value(row, "r", b"config")
            if v:
                out.append(json.loads(v))
        return out

    def get_feed(self, url: str) -> dict | None:
        return self._get(feed_key(url), "r", b"config")

    def take_ping_token(self, url: str, rate: float, burst: float, now_ms: int | None = None) -> tuple[bool, float]:
        from stores.gcp.profiles import bigtable_take

        return bigtable_take(self.t.table, feed_key(url), "s", b"ping", rate, burst, now_ms)

    def ping_seen(self, url: str, digest: str) -> bool:
        from stores import gcp

        return self.t.read_row(feed_key(url), gcp.latest_cell_filter("s", _SEEN + digest.encode())) is not None

    def record_ping(self, url: str, digest: str, now_ms: int, keep_ms: int) -> bool:
        """One CheckAndMutateRow on the feed's row: the entry is set on the false branch (absent), the expired
        entries read just before are deleted on both branches."""
        from google.cloud.bigtable import row_filters

        from stores import gcp

        key, qualifier = feed_key(url), _SEEN + digest.encode()
        seen = row_filters.RowFilterChain(
            filters=[
                row_filters.FamilyNameRegexFilter("s"),
                row_filters.ColumnQualifierRegexFilter(re.escape(_SEEN) + b".*"),
                row_filters.CellsColumnLimitFilter(1),
            ]
        )
        row = self.t.read_row(key, seen)
        cells = row.cells.get("s", {}) if row is not None else {}
        expired = [q for q, c in cells.items() if q != qualifier and c and int(c[0].value) < now_ms - keep_ms]

        def fill(r):
            r.set_cell("s", qualifier, str(int(now_ms)).encode(), state=False)
            for q in expired:
                r.delete_cell("s", q, state=False)
                r.delete_cell("s", q, state=True)

        return not self.t.conditional(key, gcp.latest_cell_filter("s", qualifier), fill)

    def delete_feed(self, url: str) -> None:
        self.t.write(feed_key(url), lambda row: row.delete_cell("r", b"config"))

    def get_state(self, url: str) -> dict | None:
        return self._get(feed_key(url), "s", b"state")

    def put_state(self, url: str, state: dict) -> None:
        self._put(feed_key(url), "s", b"state", state)

    def claim(self, key: str, owner: str, now_ms: int | None = None) -> bool:
        from stores import gcp

        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        rk = claim_row_key(key)
        data = json.dumps({"key": key, "owner": owner, "at": now_ms}).encode()
        # Create-if-absent: the mutation sits on the false branch (also taken by an absent row).
        self.t.conditional(
            rk, gcp.latest_cell_filter("s", b"claim"), lambda row: row.set_cell("s", b"claim", data, state=False)
        )
        return self.claimed_by(key) == owner

    def claimed_by(self, key: str) -> str | None:
        v = self._get(claim_row_key(key), "s", b"claim")
        return v["owner"] if v else None

    def hold(self, record: dict) -> None:
        self._put(outbox_row_key(record["item"]), "s", _OUT + record["owner"].encode(), record)

    def release(self, item: str, owner: str) -> None:
        self.t.write(outbox_row_key(item), lambda row: row.delete_cell("s", _OUT + owner.encode()))

    @staticmethod
    def _outbox_filter():
        from google.cloud.bigtable import row_filters

        return row_filters.RowFilterChain(
            filters=[
                row_filters.FamilyNameRegexFilter("s"),
                row_filters.ColumnQualifierRegexFilter(re.escape(_OUT) + b".*"),
                row_filters.CellsColumnLimitFilter(1),
            ]
        )

    @staticmethod
    def _entries(row) -> dict[bytes, dict]:
        cells = row.cells.get("s", {}) if row is not None else {}
        return {q: json.loads(c[0].value) for q, c in cells.items() if c and q.startswith(_OUT)}

    def settle(self, item: str, first_seen_at: int) -> int:
        key = outbox_row_key(item)
        entries = self._entries(self.t.read_row(key, self._outbox_filter()))
        done = [q for q, e in entries.items() if int(e["first_seen_at"]) <= int(first_seen_at)]

        def fill(row):
            for q in done:
                row.delete_cell("s", q)

        self.t.write(key, fill)
        return len(done)

    def due(self, now_ms: int, limit: int = 500) -> list[dict]:
        """A scan of the outbox rows: they are the pages in flight (settled entries are deleted), a few hundred."""
        rows = self.t.read_prefix(b"o#", self._outbox_filter())
        ready = [e for row in rows for e in self._entries(row).values() if int(e["due"]) <= now_ms]
        return sorted(ready, key=lambda e: (e["due"], e["item"], e["owner"]))[:limit]

    def put_subscription(self, sub: dict) -> None:
        self._put(subscription_row_key(sub["sub_id"]), "s", b"sub", sub)

    def get_subscription(self, sub_id: str) -> dict | None:
        return self._get(subscription_row_key(sub_id), "s", b"sub")

    def list_subscriptions(self) -> list[dict]:
        from stores import gcp

        rows = self.t.read_prefix(b"w#", gcp.latest_cell_filter("s", b"sub"))
        return [json.loads(v) for v in (gcp.cell_value(r, "s", b"sub") for r in rows) if v]


def open_feed_store(config) -> FeedStore:
    """The feed store of a :class:`stores.StoreConfig`."""
    from stores import open_store

    return open_store("feeds", config)
