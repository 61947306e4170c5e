"""The Bigtable backend of the profile store (:mod:`stores.profiles`: layout, contract and the embedded backend).

Every write of a reader's row is one CheckAndMutateRow whose predicate is the exact previous ``p:profile`` version
(latest cell only, a short anchored regex of its revision and time) or "no p:profile cell" for a new reader
(CheckAndMutate on an absent row answers False and applies the false branch, which is exactly create-if-absent; see
LOCAL_STACK.md). That includes appending reads, deleting the history and deleting the profile: the profile document
carries the reader's delete and pause versions (stores/profile_versions.py), so a read checked against one version
is written only if that version is still the newest; a delete or pause committed in between fails the predicate and
the write is checked again against it (UPDATE_RETRIES lost races raise StoreError).
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Callable, Iterable

from stores.base import StoreError, bucket_step
from stores.profile_versions import erased_at
from stores.profiles import (
    READS_KEPT,
    UPDATE_RETRIES,
    ProfileStore,
    admitted_reads,
    bump_revision,
    check_accepted,
    dumps,
    follow_deltas,
    forgotten,
    history_reset,
    normalise,
    read_key,
)

FAMILY_PROFILE = "p"
FAMILY_READS = "e"
COLUMN_PROFILE = b"profile"


def _version_regex(doc: dict) -> bytes:
    """Matches exactly the stored document of this revision. Sorted keys put ``revision`` and ``updated_at`` last,
    so a short anchored regex identifies the version (a regex of the whole value could exceed RE2's size limit)."""
    tail = f'"revision":{int(doc["revision"])},"updated_at":{int(doc["updated_at"])}}}'
    return b"(?s).*" + re.escape(tail).encode()


def _read_qualifier(r: dict) -> bytes:
    return f"{int(r['at']):013d}#{read_key(r)}".encode()


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
        cond.set_cell(family, qualifier, dumps(state).encode(), state=raw is not None)
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
        doc = normalise(json.loads(raw[0].value) if raw else None)
        reads = [json.loads(c[0].value) for q, c in sorted(cells.get(FAMILY_READS, {}).items(), reverse=True)]
        if doc.get("gone") and not reads:
            return None  # a tombstone (stores/profile_versions.py)
        doc["reads"] = reads[:READS_KEPT]
        return doc

    def _profile_cell(self, reader_id: str) -> bytes | None:
        row = self._read(reader_id)
        cell = row.cells.get(FAMILY_PROFILE, {}).get(COLUMN_PROFILE) if row is not None else None
        return cell[0].value if cell else None

    def _cas(self, reader_id: str, plan) -> tuple[dict, dict | None]:
        """One write conditional on the profile version it was planned from: ``plan(old)`` returns the new
        document (or None to keep it) and a function adding further mutations to the conditional row (or None);
        both None: nothing to write. Returns (old, new); retried from a fresh read when the version moved."""
        from google.cloud.bigtable import row_filters

        from schemas.tables import profile_key

        column = row_filters.RowFilterChain(
            filters=[
                row_filters.FamilyNameRegexFilter(FAMILY_PROFILE),
                row_filters.ColumnQualifierRegexFilter(re.escape(COLUMN_PROFILE)),
                self._latest(),
            ]
        )
        for _ in range(UPDATE_RETRIES):
            raw = self._profile_cell(reader_id)
            old = normalise(json.loads(raw) if raw else None)
            new, more = plan(old)
            if new is None and more is None:
                return old, None
            predicate = column
            if raw is not None:
                predicate = row_filters.RowFilterChain(
                    filters=[column, row_filters.ValueRegexFilter(_version_regex(old))]
                )
            cond = self.table.conditional_row(profile_key(reader_id), filter_=predicate)
            # raw is None: apply when the predicate does NOT match (no profile cell yet) -> create-if-absent.
            state = raw is not None
            if new is not None:
                cond.set_cell(FAMILY_PROFILE, COLUMN_PROFILE, dumps(new).encode(), state=state)
            if more is not None:
                more(cond, state)
            try:
                matched = cond.commit()
            except Exception as exc:
                raise StoreError(f"profiles: cannot write {reader_id!r}: {exc}") from exc
            if matched == state:
                return old, new
        raise StoreError(f"profiles: {reader_id!r} kept changing during update ({UPDATE_RETRIES} tries)")

    def update(self, reader_id: str, fn: Callable[[dict], dict | None], accepted_at: int | None = None) -> dict:
        def plan(old):
            check_accepted(reader_id, old, accepted_at)
            new = fn(copy.deepcopy(old))
            return (None if new is None else bump_revision(old, new)), None

        old, new = self._cas(reader_id, plan)
        if new is None:
            return old
        self._add_follows(follow_deltas(old, new))
        return new

    def append_reads(self, reader_id: str, reads: Iterable[dict], keep: int = READS_KEPT) -> list[dict]:
        from google.cloud.bigtable import row_filters

        from schemas.tables import profile_key

        reads = list(reads)
        written: list[dict] = []

        def plan(old):
            written[:] = admitted_reads(old, reads)
            if not written:
                return None, None

            def more(cond, state):
                for r in written:
                    cond.set_cell(FAMILY_READS, _read_qualifier(r), dumps(r).encode(), state=state)

            return None, more

        if not reads:
            return []
        self._cas(reader_id, plan)
        if not written:
            return []
        key = profile_key(reader_id)
        try:
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
        return list(written)

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

    def scan_reads(self, since_ms: int = 0, start=None, end=None):
        from schemas.tables import profile_key

        first = profile_key(start) if start is not None else b"r#"
        last = profile_key(end) if end is not None else b"r$"
        try:
            for row in self.table.read_rows(start_key=first, end_key=last, filter_=self._latest()):
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

    def _docs(self, start=None, end=None):
        """``(reader_id, profile document)`` of the readers in ``[start, end)`` (one range scan of p:profile)."""
        from google.cloud.bigtable import row_filters

        from schemas.tables import profile_key

        only = row_filters.RowFilterChain(
            [
                row_filters.FamilyNameRegexFilter(FAMILY_PROFILE),
                row_filters.ColumnQualifierRegexFilter(COLUMN_PROFILE),
                row_filters.CellsColumnLimitFilter(1),
            ]
        )
        first = profile_key(start) if start is not None else b"r#"
        last = profile_key(end) if end is not None else b"r$"
        try:
            for row in self.table.read_rows(start_key=first, end_key=last, filter_=only):
                raw = row.cells.get(FAMILY_PROFILE, {}).get(COLUMN_PROFILE)
                if raw:
                    yield row.row_key[2:].decode("utf-8"), json.loads(raw[0].value)
        except Exception as exc:
            raise StoreError(f"profiles: cannot scan profiles: {exc}") from exc

    def paused_readers(self, start=None, end=None) -> set[str]:
        return {r for r, doc in self._docs(start, end) if doc.get("paused")}

    def erased_readers(self, start=None, end=None, since_ms: int = 0) -> set[str]:
        return {r for r, doc in self._docs(start, end) if erased_at(doc) >= max(int(since_ms), 1)}

    def take_token(self, reader_id: str, rate: float, burst: float, now_ms: int | None = None) -> tuple[bool, float]:
        from schemas.tables import profile_key

        return bigtable_take(self.table, profile_key(reader_id), FAMILY_PROFILE, COLUMN_BUCKET, rate, burst, now_ms)

    def delete_history(self, reader_id: str, at: int | None = None) -> dict:
        def plan(old):
            new = bump_revision(old, history_reset(copy.deepcopy(old), at))
            if old.get("gone"):
                new["gone"] = True  # a deleted profile stays deleted
            return new, lambda cond, state: cond.delete_cells(FAMILY_READS, cond.ALL_COLUMNS, state=state)

        return self._cas(reader_id, plan)[1]

    def delete(self, reader_id: str, at: int | None = None) -> None:
        def more(cond, state):
            cond.delete_cells(FAMILY_READS, cond.ALL_COLUMNS, state=state)
            cond.delete_cell(FAMILY_PROFILE, COLUMN_BUCKET, state=state)

        old, _ = self._cas(reader_id, lambda old: (forgotten(old, at), more))
        self._add_follows(follow_deltas(old, None))
