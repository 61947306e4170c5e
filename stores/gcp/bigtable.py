"""The Bigtable backends: articles, stories and pointers, and the row helpers the other Bigtable stores share.

Reads and writes the tables laid out in :mod:`schemas.tables` (``config.name("articles")`` etc., so a namespace gets
its own tables).

Conditional writes are single Bigtable CheckAndMutateRow calls (``table.conditional_row``):

- create-if-absent (new article, content-hash claim, change marker, first pointer move): the predicate matches
  when the cell exists; the mutations are on the *false* branch, which is also what an absent row takes.
- versioned article update: the predicate matches when the stored ``m:version`` is >= the new version, or the
  stored ``m:order`` (the version's version_order, stores.base.order_text) is greater than the new one (an
  Interleave of the two); the new version is written on the false branch, so a stale, duplicate or older writer
  changes nothing. Rows written before ``m:order`` existed have none, which any order passes.
- pointer compare-and-set: the predicate is the pointer's move counter ``p:seq`` (strictly increasing, so no ABA);
  the new version, the new counter and the history entry ``h:{seq}`` are one mutation.

Every predicate and every read carries ``CellsColumnLimitFilter(1)`` (latest cell only: the emulator keeps old
versions and production GC is asynchronous) and values inside ValueRegexFilter are ``re.escape``-d.

The helpers that the other Bigtable-backed stores (:mod:`stores.profiles`, :mod:`stores.feeds`) share are public:
:class:`Table` (a table handle with the store's error mapping, which each store wraps around the raw handles
:func:`stores.open_store` gives it), :func:`latest_cell_filter` and
:func:`cell_value` (re-exported by :mod:`stores.gcp`, with :func:`stores.gcp.clients.client`).
"""

from __future__ import annotations

import datetime
import json
import re
import struct
import time
from collections.abc import Iterable

from google.api_core import exceptions as gx

from schemas import codec
from schemas.tables import (
    MAX_AGE_DAYS,
    TABLES,
    article_key,
    change_key,
    content_key,
    live_key,
    live_prefix,
    pad,
    pointer_key,
    story_key,
    writer_key,
)
from stores.base import (
    ArticleStore,
    PointerStore,
    StoreError,
    StoryStore,
    WriteOutcome,
    WriteResult,
    order_text,
    version_order,
)
from stores.gcp.clients import client, store_errors

SEQ_WIDTH = 20  # writer sequence numbers are Avro longs
CAS_ATTEMPTS = 20  # re-reads after losing a conditional write to a concurrent writer (each loss means progress)
POINTER_HISTORY_KEEP = 10_000  # moves kept per pointer (~1 week at one move a minute); older entries are deleted


def _rf():
    from google.cloud.bigtable import row_filters

    return row_filters


def latest_cell_filter(family: str, qualifier: bytes, *extra):
    """Latest cell of one column, then ``extra`` filters (value tests): a predicate never sees old versions."""
    rf = _rf()
    return rf.RowFilterChain(
        [
            rf.FamilyNameRegexFilter(re.escape(family)),
            rf.ColumnQualifierRegexFilter(re.escape(qualifier)),
            rf.CellsColumnLimitFilter(1),
            *extra,
        ]
    )


def _equals(family: str, qualifier: bytes, value: bytes):
    return latest_cell_filter(family, qualifier, _rf().ValueRegexFilter(re.escape(value)))


def _at_least(family: str, qualifier: bytes, value: bytes):
    return latest_cell_filter(family, qualifier, _rf().ValueRangeFilter(start_value=value, inclusive_start=True))


def _greater_than(family: str, qualifier: bytes, value: bytes):
    return latest_cell_filter(family, qualifier, _rf().ValueRangeFilter(start_value=value, inclusive_start=False))


def _family_filter(family: str):
    rf = _rf()
    return rf.RowFilterChain([rf.FamilyNameRegexFilter(re.escape(family)), rf.CellsColumnLimitFilter(1)])


def _latest():
    return _rf().CellsColumnLimitFilter(1)


def _prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key starting with ``prefix``."""
    p = bytearray(prefix)
    while p and p[-1] == 0xFF:
        p.pop()
    if not p:
        return b""
    p[-1] += 1
    return bytes(p)


def _cells(row, family: str) -> dict[bytes, bytes]:
    """Latest value of each qualifier of ``family`` in a PartialRowData (or {} for no row)."""
    if row is None:
        return {}
    cols = row.cells.get(family, {})
    return {q: cells[0].value for q, cells in cols.items() if cells}


def cell_value(row, family: str, qualifier: bytes) -> bytes | None:
    """Latest value of one column of a PartialRowData (None when absent or no row)."""
    return _cells(row, family).get(qualifier)


class Table:
    """A Bigtable table with the store's error mapping (read_row, read_prefix, conditional, write)."""

    def __init__(self, table, name: str):
        self.table = table
        self.name = name

    def read_row(self, key: bytes, filter_=None):
        with store_errors(f"read {self.name}/{key.decode(errors='replace')}"):
            return self.table.read_row(key, filter_=filter_ if filter_ is not None else _latest())

    def read_prefix(self, prefix: bytes, filter_=None):
        with store_errors(f"scan {self.name}/{prefix.decode(errors='replace')}*"):
            return list(
                self.table.read_rows(
                    start_key=prefix,
                    end_key=_prefix_end(prefix) or None,
                    filter_=filter_ if filter_ is not None else _latest(),
                )
            )

    def conditional(self, key: bytes, predicate, fill) -> bool:
        """One CheckAndMutateRow. ``fill(row)`` adds the mutations (with their branch). Returns predicate_matched."""
        row = self.table.conditional_row(key, filter_=predicate)
        fill(row)
        with store_errors(f"conditional write {self.name}/{key.decode(errors='replace')}"):
            matched = row.commit()
        if matched is None:
            raise StoreError(f"conditional write {self.name}/{key!r} had no mutations")
        return bool(matched)

    def write(self, key: bytes, fill) -> None:
        """One MutateRow (atomic within the row)."""
        row = self.table.direct_row(key)
        fill(row)
        if not row._get_mutations():  # nothing to write
            return
        with store_errors(f"write {self.name}/{key.decode(errors='replace')}"):
            status = row.commit()
        if status is not None and status.code != 0:
            raise StoreError(f"write {self.name}/{key!r} failed: code {status.code}: {status.message}")


# --------------------------------------------------------------------------------------------------------------
# Articles

_ARTICLES = article_key("")  # the prefix of every article row (the content index rows, h#, come after them)


class BigtableArticleStore(ArticleStore):
    """Rows ``a#{article_id}`` (version, content hash, latest record, every version) and ``h#{content_hash}``."""

    def __init__(self, table):
        self.t = Table(table, table.table_id)  # the data-plane handle with the store's error mapping

    def _head(self, key: bytes) -> tuple[int, str, bytes | None] | None:
        row = self.t.read_row(key, _family_filter("m"))
        m = _cells(row, "m")
        if b"version" not in m:
            return None
        return int(m[b"version"]), m.get(b"content_hash", b"").decode(), m.get(b"order")

    def write(self, article: dict, order: tuple[int, int] | None = None) -> WriteResult:
        record = codec.encode("Article", article)
        aid, version, chash = article["article_id"], int(article["version"]), article["content_hash"]
        okey = order_text(order if order is not None else version_order(article)).encode()
        key = article_key(aid)

        def fill(first: bool):
            def f(row):
                row.set_cell("m", b"version", pad(version), state=False)
                row.set_cell("m", b"content_hash", chash.encode(), state=False)
                row.set_cell("m", b"order", okey, state=False)
                if first:
                    row.set_cell("m", b"first_seen", str(int(article["first_seen_at"])).encode(), state=False)
                row.set_cell("d", b"record", record, state=False)
                row.set_cell("v", pad(version), record, state=False)

            return f

        for _ in range(CAS_ATTEMPTS):
            head = self._head(key)
            if head is None:
                # create-if-absent: predicate "a version cell exists"; the false branch (absent) writes
                if not self.t.conditional(key, latest_cell_filter("m", b"version"), fill(True)):
                    return WriteResult(WriteOutcome.NEW, version, chash)
                continue  # someone created it first: compare with what they stored
            stored, stored_hash, stored_order = head
            if stored_order is not None and stored_order > okey:
                return WriteResult(WriteOutcome.STALE, stored, stored_hash, newer_stored=True)
            if stored >= version:
                outcome = WriteOutcome.DUPLICATE if stored == version else WriteOutcome.STALE
                return WriteResult(outcome, stored, stored_hash)
            # versioned update: predicate "stored version >= mine, or stored order > mine"; the false branch writes
            newer = _rf().RowFilterUnion([_at_least("m", b"version", pad(version)), _greater_than("m", b"order", okey)])
            if not self.t.conditional(key, newer, fill(False)):
                return WriteResult(WriteOutcome.UPDATE, version, chash)
        raise StoreError(f"article {aid}: lost {CAS_ATTEMPTS} conditional writes in a row")

    def get(self, article_id: str) -> dict | None:
        data = cell_value(self.t.read_row(article_key(article_id), _family_filter("d")), "d", b"record")
        return codec.decode("Article", data) if data is not None else None

    def get_version(self, article_id: str, version: int) -> dict | None:
        q = pad(version)
        data = cell_value(self.t.read_row(article_key(article_id), latest_cell_filter("v", q)), "v", q)
        return codec.decode("Article", data) if data is not None else None

    def latest_records(self, after: str = "", limit: int = 1000) -> list[tuple[str, bytes]]:
        start = article_key(after) + b"\x00" if after else _ARTICLES
        return [(a, r) for a, r in self._scan(start, _prefix_end(_ARTICLES), limit) if r is not None]

    def split_points(self, n: int) -> list[str]:
        """The table's own sample keys (``SampleRowKeys``: tablet and block boundaries, with the bytes before
        each) that fall among the article rows, thinned to ``n - 1`` about equally many bytes apart."""
        with store_errors(f"sample {self.t.name}"):
            samples = [(s.row_key, s.offset_bytes) for s in self.t.table.sample_row_keys()]
        inside = [(k, o) for k, o in samples if k.startswith(_ARTICLES) and len(k) > len(_ARTICLES)]
        if n <= 1 or not inside:
            return []
        total, points = max(o for _, o in inside) or 1, []
        for key, offset in inside:
            if len(points) < n - 1 and offset * (n - 1) >= total * (len(points) + 1):
                points.append(key[len(_ARTICLES) :].decode("utf-8", "replace"))
        return sorted(set(points))

    def scan_latest(self, start: str = "", end: str = ""):
        return self._scan(article_key(start), article_key(end) if end else _prefix_end(_ARTICLES))

    def _scan(self, start: bytes, end: bytes, limit: int = 0):
        """(article id, latest record or None) of the article rows in ``[start, end)``: one streamed ReadRows
        (the client resumes it after a transient failure from the last row it had), families m and d only."""
        rf = _rf()
        only = rf.RowFilterChain([rf.FamilyNameRegexFilter("m|d"), rf.CellsColumnLimitFilter(1)])
        with store_errors(f"scan {self.t.name}/{start.decode(errors='replace')}"):
            for row in self.t.table.read_rows(start_key=start, end_key=end, limit=limit or None, filter_=only):
                yield row.row_key[len(_ARTICLES) :].decode("utf-8", "replace"), cell_value(row, "d", b"record")

    def claim_content(self, content_hash: str, article_id: str) -> str:
        key = content_key(content_hash)
        taken = self.t.conditional(
            key,
            latest_cell_filter("m", b"owner"),
            lambda row: row.set_cell("m", b"owner", article_id.encode(), state=False),
        )
        if not taken:
            return article_id
        owner = cell_value(self.t.read_row(key, latest_cell_filter("m", b"owner")), "m", b"owner")
        if owner is None:
            raise StoreError(f"content index {content_hash}: claimed but unreadable")
        return owner.decode()


# --------------------------------------------------------------------------------------------------------------
# Stories


_MERGED = b"merged:"  # m:merged:{story_id} on a survivor's row: reverse index of its aliases (resolves chains)


def _pack_centroid(centroid) -> bytes:
    values = [float(x) for x in centroid]
    return struct.pack(f"<{len(values)}f", *values)


def _unpack_centroid(data: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(data) // 4}f", data))


def _json(value) -> bytes:
    return json.dumps(value, sort_keys=True).encode()


class BigtableStoryStore(StoryStore):
    """Rows ``s#``, ``l#``, ``c#`` and ``w#`` of the stories table (see schemas/tables.py).

    Aliases: ``m:alias_of`` on the merged story; the survivor keeps ``m:merged:{id}`` for each story merged into it,
    so that a later merge of the survivor re-points them (one hop) without scanning the table. The story writer
    is single per language, so the few rows a merge touches need no cross-row transaction; each write is
    idempotent and the merged story's own alias is written last.
    """

    def __init__(self, table):
        self.t = Table(table, table.table_id)  # the data-plane handle with the store's error mapping

    def put_story(self, story_id: int, meta: dict, centroid: list[float] | None = None) -> None:
        def f(row):
            row.set_cell("m", b"meta", _json(meta))
            if centroid is not None:
                row.set_cell("m", b"centroid", _pack_centroid(centroid))

        self.t.write(story_key(story_id), f)

    def story_ids(self, after: int = -1, limit: int = 1000) -> list[int]:
        # One row-range scan of the s# rows after ``after``, keys only (first cell, value stripped).
        rf = _rf()
        keys_only = rf.RowFilterChain(filters=[rf.CellsRowLimitFilter(1), rf.StripValueTransformerFilter(True)])
        start = story_key(after + 1) if after >= 0 else b"s#"
        with store_errors(f"scan {self.t.name}/s#*"):
            rows = self.t.table.read_rows(start_key=start, end_key=_prefix_end(b"s#"), limit=limit, filter_=keys_only)
            return [int(r.row_key[2:], 16) for r in rows]

    def get_story(self, story_id: int) -> dict | None:
        row = self.t.read_row(story_key(story_id))
        if row is None:
            return None
        m = _cells(row, "m")
        alias = m.get(b"alias_of")
        return {
            "story_id": story_id,
            "meta": json.loads(m[b"meta"]) if b"meta" in m else {},
            "centroid": _unpack_centroid(m[b"centroid"]) if b"centroid" in m else None,
            "members": {q.decode(): json.loads(v) for q, v in _cells(row, "mem").items()},
            "links": {int(q): json.loads(v) for q, v in _cells(row, "lnk").items()},
            "alias_of": int(alias) if alias else None,
        }

    def add_members(self, story_id: int, members: dict[str, dict]) -> None:
        def f(row):
            for aid, member in members.items():
                row.set_cell("mem", aid.encode(), _json(member))

        self.t.write(story_key(story_id), f)

    def remove_members(self, story_id: int, article_ids: Iterable[str]) -> None:
        ids = list(article_ids)
        self.t.write(story_key(story_id), lambda row: [row.delete_cell("mem", a.encode()) for a in ids])

    def set_alias(self, story_id: int, survivor_id: int) -> None:
        resolved = self.resolve(survivor_id)  # the survivor itself may have been merged: keep one hop
        if story_id == resolved:
            raise ValueError(f"story {story_id} cannot be an alias of itself (asked: alias of {survivor_id})")
        survivor_id = resolved
        m = _cells(self.t.read_row(story_key(story_id), _family_filter("m")), "m")
        aliases = [int(q[len(_MERGED) :]) for q in m if q.startswith(_MERGED)]
        aliases = [a for a in aliases if a != survivor_id]
        target = str(survivor_id).encode()
        for a in aliases:  # re-point the chain first: a crash here leaves every alias resolvable
            self.t.write(story_key(a), lambda r: r.set_cell("m", b"alias_of", target))
        self.t.write(
            story_key(survivor_id),
            lambda r: [r.set_cell("m", _MERGED + str(a).encode(), b"1") for a in [*aliases, story_id]],
        )
        previous = int(m[b"alias_of"]) if m.get(b"alias_of") else None
        if previous is not None and previous != survivor_id:  # re-merged elsewhere: drop the old reverse entry
            self.t.write(story_key(previous), lambda r: r.delete_cell("m", _MERGED + str(story_id).encode()))

        def merged(r):
            r.set_cell("m", b"alias_of", target)
            for a in aliases:
                r.delete_cell("m", _MERGED + str(a).encode())

        self.t.write(story_key(story_id), merged)

    def resolve(self, story_id: int) -> int:
        alias = cell_value(self.t.read_row(story_key(story_id), latest_cell_filter("m", b"alias_of")), "m", b"alias_of")
        return int(alias) if alias else story_id

    def add_link(self, story_id: int, other_id: int, info: dict) -> None:
        self.t.write(story_key(story_id), lambda row: row.set_cell("lnk", str(int(other_id)).encode(), _json(info)))

    def set_live(self, language: str, story_id: int, live: bool) -> None:
        key = live_key(language, story_id)
        if live:
            self.t.write(key, lambda row: row.set_cell("m", b"live", b"1"))
        else:
            self.t.write(key, lambda row: row.delete())

    def live_stories(self, language: str) -> list[int]:
        prefix = live_prefix(language)
        rf = _rf()
        keys_only = rf.RowFilterChain([rf.CellsColumnLimitFilter(1), rf.StripValueTransformerFilter(True)])
        return sorted(int(r.row_key[len(prefix) :], 16) for r in self.t.read_prefix(prefix, keys_only))

    def mark_change(self, change_id: str) -> bool:
        taken = self.t.conditional(
            change_key(change_id),
            latest_cell_filter("m", b"applied"),
            lambda row: row.set_cell("m", b"applied", b"1", state=False),
        )
        return not taken

    def writer_seq(self, language: str) -> int:
        seq = cell_value(self.t.read_row(writer_key(language), latest_cell_filter("m", b"seq")), "m", b"seq")
        return int(seq) if seq else 0

    def set_writer_seq(self, language: str, seq: int) -> None:
        self.t.write(writer_key(language), lambda row: row.set_cell("m", b"seq", pad(seq, SEQ_WIDTH)))

    def minted_floor(self, language: str) -> int:
        value = cell_value(self.t.read_row(writer_key(language), latest_cell_filter("m", b"minted")), "m", b"minted")
        return int(value) if value else 0

    def raise_minted_floor(self, language: str, story_id: int) -> None:
        # Read then write: the language's writer (and so its applier) is single, and a replay writes the same value.
        if int(story_id) > self.minted_floor(language):
            self.t.write(writer_key(language), lambda row: row.set_cell("m", b"minted", str(int(story_id)).encode()))


# --------------------------------------------------------------------------------------------------------------
# Pointers


class BigtablePointerStore(PointerStore):
    """Rows ``p#{name}``: ``p:version`` (live version; absent once retired), ``p:seq`` (number of moves: the CAS
    predicate), ``p:retired`` (tombstone: the version retired last) and ``h:{seq}`` (each move, JSON). The last
    POINTER_HISTORY_KEEP moves are kept. A retired row keeps ``p:seq``, ``p:retired`` and its history, so
    :meth:`names` and :meth:`versions` (which read ``p:version`` only) skip it."""

    def __init__(self, table):
        self.t = Table(table, table.table_id)  # the data-plane handle with the store's error mapping

    def _head(self, name: str) -> tuple[int | None, int, int | None]:
        p = _cells(self.t.read_row(pointer_key(name), _family_filter("p")), "p")
        version = int(p[b"version"]) if b"version" in p else None
        retired = int(p[b"retired"]) if b"retired" in p else None
        return version, int(p.get(b"seq", b"0")), retired

    def get(self, name: str) -> int | None:
        return self._head(name)[0]

    def _move(self, name: str, expected: int | None, new: int | None, reason: str, revive: bool = False) -> bool:
        """One conditional move (``new`` None: retire) from ``expected``, predicated on the move counter.
        ``revive``: from retired back to exactly the tombstone's version ``new`` (:meth:`revive`)."""
        key = pointer_key(name)
        for _ in range(CAS_ATTEMPTS):
            current, seq, retired = self._head(name)
            if current != expected or (new is None and current is None):
                return False
            if revive and retired != new:
                return False  # retired again meanwhile at another version: the caller reads the new tombstone
            if not revive and new is not None and current is None and retired is not None and new <= retired:
                return False  # retired at or after this version: a late writer does not resurrect it
            nxt = seq + 1
            entry = {"version": new, "previous": expected, "at": int(time.time() * 1000), "reason": reason}
            first = seq == 0
            state = not first  # first move: false branch (row absent); later: true branch (counter unchanged)

            def fill(row, nxt=nxt, entry=entry, state=state):  # bound now: called in this iteration
                if new is None:
                    row.delete_cell("p", b"version", state=state)
                    row.set_cell("p", b"retired", pad(expected), state=state)
                else:
                    row.set_cell("p", b"version", pad(new), state=state)
                row.set_cell("p", b"seq", pad(nxt), state=state)
                row.set_cell("h", pad(nxt), _json(entry), state=state)
                if nxt > POINTER_HISTORY_KEEP:
                    row.delete_cell("h", pad(nxt - POINTER_HISTORY_KEEP), state=state)

            predicate = latest_cell_filter("p", b"seq") if first else _equals("p", b"seq", pad(seq))
            matched = self.t.conditional(key, predicate, fill)
            if matched == state:
                return True
            # another move landed between our read and our write: re-read (it may have moved back: ABA-safe)
        raise StoreError(f"pointer {name}: lost {CAS_ATTEMPTS} compare-and-sets in a row")

    def compare_and_set(self, name: str, expected: int | None, new: int, reason: str = "") -> bool:
        return self._move(name, expected, int(new), reason)

    def retire(self, name: str, expected: int) -> bool:
        return self._move(name, int(expected), None, "retired")

    def revive(self, name: str) -> int | None:
        for _ in range(CAS_ATTEMPTS):
            current, _, retired = self._head(name)
            if current is not None or retired is None:
                return None
            if self._move(name, None, retired, "revived", revive=True):
                return retired
            # another caller revived it or it moved meanwhile: re-read (the first check answers None if it is live)
        raise StoreError(f"pointer {name}: lost {CAS_ATTEMPTS} revivals in a row")

    def history(self, name: str) -> list[dict]:
        h = _cells(self.t.read_row(pointer_key(name), _family_filter("h")), "h")
        return [json.loads(h[q]) for q in sorted(h)]

    def names(self, prefix: str = "") -> list[str]:
        rf = _rf()
        keys_only = rf.RowFilterChain([latest_cell_filter("p", b"version"), rf.StripValueTransformerFilter(True)])
        start = pointer_key(prefix)
        return sorted(r.row_key[2:].decode() for r in self.t.read_prefix(start, keys_only))

    def versions(self, prefix: str = "") -> dict[str, int]:
        """One row-range scan of ``p#{prefix}`` returning only the latest ``p:version`` cell of each row (not the
        history), however many pointers there are. Rows arrive in key order, which is name order (UTF-8 byte order
        is code point order)."""
        out = {}
        for row in self.t.read_prefix(pointer_key(prefix), latest_cell_filter("p", b"version")):
            value = cell_value(row, "p", b"version")
            if value is not None:
                out[row.row_key[2:].decode()] = int(value)
        return out


# --------------------------------------------------------------------------------------------------------------
# Provisioning


def gc_rule(base: str, family: str):
    """The GC rule schemas.tables promises for ``family`` of table ``base``: max versions (TABLES), unioned with a
    max age (MAX_AGE_DAYS) where one is given, so a cell goes when either rule says so."""
    from google.cloud.bigtable import column_family

    versions = column_family.MaxVersionsGCRule(TABLES[base][family] or 1)
    days = MAX_AGE_DAYS.get(base, {}).get(family)
    if days is None:
        return versions
    return column_family.GCRuleUnion([versions, column_family.MaxAgeGCRule(datetime.timedelta(days=days))])


def provision_tables(config) -> None:
    """Create the tables of ``config`` with the families and GC rules of schemas.tables.TABLES and MAX_AGE_DAYS.
    Idempotent: missing column families are added to existing tables and families whose GC rule differs from the
    layout's are updated. The Bigtable emulator accepts, stores and reports the GC rules (max versions and max age)
    but does not enforce them (LOCAL_STACK.md)."""
    instance = client("bigtable-admin", config.gcp_project).instance(config.bigtable_instance)
    for base, families in TABLES.items():
        name = config.name(base)
        admin_table = instance.table(name)
        rules = {fam: gc_rule(base, fam) for fam in families}
        with store_errors(f"create table {name}"):
            try:
                admin_table.create(column_families=rules)
            except gx.AlreadyExists:
                existing = admin_table.list_column_families()
                for fam, rule in rules.items():
                    if fam not in existing:
                        admin_table.column_family(fam, gc_rule=rule).create()
                    elif existing[fam].gc_rule != rule:
                        admin_table.column_family(fam, gc_rule=rule).update()
