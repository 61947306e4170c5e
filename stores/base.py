"""The store interfaces every stage uses. Each has an embedded backend (:mod:`stores.embedded`: SQLite file and a
local directory) and a Google Cloud backend (:mod:`stores.gcp`: Bigtable, GCS, Pub/Sub). Nothing else in the tree
talks to those services.

The contract (pinned by ``tests/stores/test_contract.py`` on both backends):

- ArticleStore.write is one conditional write: NEW when absent; STALE when the stored version is *newer* by
  :func:`version_order` (modified time, fetch time), whatever the version numbers, so a late older fetch never
  overwrites a newer one; else UPDATE when the stored version is lower, DUPLICATE when equal, STALE when higher.
  Two racing writers of the same version: exactly one wins.
- PointerStore.compare_and_set moves a pointer only from the expected version; racing movers: exactly one wins.
  Every move is kept in the pointer's history, so rollback is moving the pointer back.
- PointerStore.retire(name, expected) is a conditional delete: only from the live ``expected`` version; racing
  retirers and movers: exactly one wins. A retired pointer is absent for get/names/versions, its history is kept
  (a last entry with version None, reason "retired") and it leaves a tombstone: compare_and_set from None to a
  version at or below the retired one fails, so a late or replayed writer cannot resurrect it; a higher version
  (the story genuinely moved on) may bring it back. PointerStore.revive(name) puts a retired pointer back at the
  version it was retired from (its object is kept), only while it is still retired; racing revivers: one wins.
- SnapshotStore objects are immutable: a second put of the same path raises AlreadyExists.
- StoryStore.mark_change is create-if-absent, so applying a StoryChange twice is a no-op.
- PointerStore.versions(prefix) equals ``{n: get(n) for n in names(prefix)}``, in one scan on both backends.
- MessageBus delivers at least once; consumers are idempotent. publish_many returns the ids in the items' order.
  ``publish(..., ordering_key=k)``: messages with the same key are delivered in publish order where the backend
  can (Pub/Sub message ordering; the embedded bus delivers in publish order anyway and keeps the key as the
  ``ordering_key`` attribute). Ordering narrows the window of out-of-order versions; the store's version order
  closes it (redeliveries and retries can still reorder).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from schemas import codec
from schemas.tables import TOPICS


class StoreError(RuntimeError):
    """A store could not be reached or answered unexpectedly (transient: callers may retry)."""


class AlreadyExists(StoreError):
    """An immutable object (snapshot) already exists under that name."""


class NotFound(StoreError):
    """No object, pointer or row under that name."""


class WriteOutcome(str, enum.Enum):
    NEW = "new"
    UPDATE = "update"
    DUPLICATE = "duplicate"
    STALE = "stale"


@dataclass(frozen=True)
class WriteResult:
    outcome: WriteOutcome
    stored_version: int  # the version stored after this call
    stored_content_hash: str  # its content hash (lets the caller see whether a DUPLICATE is really the same text)
    newer_stored: bool = False  # STALE because the stored version is newer by version_order (not a version race)


def version_order(article: dict, fetched_at: int | None = None) -> tuple[int, int]:
    """How new an article version is: (modified time, fetch time), in ms; compared as a tuple, larger is newer.

    Modified time: the page's stated ``modified_at`` (0 when it states none), the publisher's own word on which
    version is newer. Fetch time: ``fetched_at`` when the caller has it, else the version's own ``first_seen_at``
    as normalisation set it from the RawItem (the time ingest discovered *this* fetch: each re-discovery of an
    updated entry gets its own, and the page is fetched right after). Why not a ``fetched_at`` field: the Article
    schema is attached to two Pub/Sub topics and stored as schemaless Avro, so a new field would break every
    stored record and both topics' schemas; the stored order lives next to the record instead (see the backends).
    Dedupe passes the order of the incoming version, before it keeps the earliest first_seen_at."""
    fetched = fetched_at if fetched_at is not None else article.get("first_seen_at")
    return int(article.get("modified_at") or 0), int(fetched or 0)


def order_text(order: tuple[int, int]) -> str:
    """A version order as fixed-width text whose byte order is the tuple order (a Bigtable value, a SQLite text)."""
    return f"{max(0, int(order[0])):016d}:{max(0, int(order[1])):016d}"


class ArticleStore(abc.ABC):
    """Articles keyed by the hash of their canonical URL, every version kept, plus a content-hash index."""

    @abc.abstractmethod
    def write(self, article: dict, order: tuple[int, int] | None = None) -> WriteResult:
        """Store an ``Article`` record (see schemas/avro/article.avsc) by one conditional write. ``order``: the
        version's :func:`version_order` (None: computed from the record); a stored version with a larger order
        makes this write STALE (``newer_stored``), whatever the version numbers."""

    @abc.abstractmethod
    def get(self, article_id: str) -> dict | None:
        """The latest stored version, or None."""

    @abc.abstractmethod
    def get_version(self, article_id: str, version: int) -> dict | None:
        """One stored version, or None."""

    def latest_records(self, after: str = "", limit: int = 1000) -> list[tuple[str, bytes]]:
        """Up to ``limit`` (article id, encoded Article record of its latest version), ids ascending and above
        ``after``: one page of a full scan, undecoded (a reader dead-letters a row it cannot decode). Backends
        without a scan raise NotImplementedError."""
        raise NotImplementedError(f"{type(self).__name__} cannot scan its articles")

    def split_points(self, n: int) -> list[str]:
        """Up to ``n - 1`` article ids, ascending, that cut a full scan into key ranges of about equal size (the
        ranges ``[""..p1), [p1..p2), ... [pk..)`` of :meth:`scan_latest`, read in parallel by a batch job); [] for
        one range. Backends without a scan raise NotImplementedError."""
        raise NotImplementedError(f"{type(self).__name__} cannot split its articles")

    def scan_latest(self, start: str = "", end: str = "") -> Iterator[tuple[str, bytes | None]]:
        """(article id, encoded Article record of its latest version) for the ids in ``[start, end)`` (``end`` ""
        has no bound), ascending, undecoded: the reader dead-letters a row it cannot decode, and a row without a
        record (None). Backends without a scan raise NotImplementedError."""
        raise NotImplementedError(f"{type(self).__name__} cannot scan its articles")

    @abc.abstractmethod
    def claim_content(self, content_hash: str, article_id: str) -> str:
        """Create-if-absent on the content index. Returns the owner: ``article_id`` if this call claimed the hash,
        else the article that claimed it first."""


class StoryStore(abc.ABC):
    """Story rows (meta, centroid, members, links), aliases of merged stories, and change markers."""

    def story_ids(self, after: int = -1, limit: int = 1000) -> list[int]:
        """Up to ``limit`` ids of stored stories (live or not, aliases included), ascending, all > ``after``: one
        page of a full scan, for batch jobs (the authority job). Backends without a scan raise NotImplementedError."""
        raise NotImplementedError(f"{type(self).__name__} cannot scan its stories")

    @abc.abstractmethod
    def put_story(self, story_id: int, meta: dict, centroid: list[float] | None = None) -> None:
        """Create or replace a story's meta (JSON-able dict) and centroid."""

    @abc.abstractmethod
    def get_story(self, story_id: int) -> dict | None:
        """``{"story_id", "meta", "centroid", "members", "links", "alias_of"}`` or None. No alias resolution."""

    @abc.abstractmethod
    def add_members(self, story_id: int, members: dict[str, dict]) -> None:
        """Add (or overwrite) member records keyed by article_id."""

    @abc.abstractmethod
    def remove_members(self, story_id: int, article_ids: Iterable[str]) -> None: ...

    @abc.abstractmethod
    def set_alias(self, story_id: int, survivor_id: int) -> None:
        """Mark ``story_id`` merged into ``survivor_id``. Chains are resolved on write: every story that was an
        alias of ``story_id`` is re-pointed to ``survivor_id``, so resolution is always one hop."""

    @abc.abstractmethod
    def resolve(self, story_id: int) -> int:
        """The survivor of a merged story (one hop), or the id itself."""

    @abc.abstractmethod
    def add_link(self, story_id: int, other_id: int, info: dict) -> None:
        """Record a cross-language link (both directions are the caller's choice)."""

    @abc.abstractmethod
    def set_live(self, language: str, story_id: int, live: bool) -> None: ...

    @abc.abstractmethod
    def live_stories(self, language: str) -> list[int]:
        """Ids of the language's live stories, ascending (time order)."""

    @abc.abstractmethod
    def mark_change(self, change_id: str) -> bool:
        """Create-if-absent: True the first time a change id is seen, False on a replay."""

    @abc.abstractmethod
    def writer_seq(self, language: str) -> int:
        """The per-language writer's last durable sequence number (0 if none)."""

    @abc.abstractmethod
    def set_writer_seq(self, language: str, seq: int) -> None: ...

    @abc.abstractmethod
    def minted_floor(self, language: str) -> int:
        """The largest story id ever applied for the language's writer (0 if none), live or not: a writer restored
        from the store mints above it, so an expired story's id is never minted again (a resumed backfill)."""

    @abc.abstractmethod
    def raise_minted_floor(self, language: str, story_id: int) -> None:
        """Raise :meth:`minted_floor` to ``story_id`` if it is larger (idempotent; the language's writer is single)."""


class PointerStore(abc.ABC):
    """Latest pointers of pages ("{edition}/{section}"), pools ("pool/{edition}") and stories ("story/{id}"), moved
    by compare-and-set and retired (deleted, with a tombstone) by :meth:`retire`."""

    @abc.abstractmethod
    def get(self, name: str) -> int | None: ...

    @abc.abstractmethod
    def compare_and_set(self, name: str, expected: int | None, new: int, reason: str = "") -> bool:
        """Move ``name`` from ``expected`` (None: pointer absent) to ``new``. True if this call moved it."""

    @abc.abstractmethod
    def retire(self, name: str, expected: int) -> bool:
        """Delete the live pointer ``name`` if it is at ``expected``. True if this call retired it. The history stays
        (plus an entry ``{"version": None, "previous": expected, "reason": "retired"}``) and a tombstone remembers
        ``expected``: afterwards ``compare_and_set(name, None, v)`` fails for every ``v <= expected``."""

    @abc.abstractmethod
    def revive(self, name: str) -> int | None:
        """Bring the retired pointer ``name`` back at the version its tombstone holds (the one it was retired from:
        that snapshot object was never deleted), if it is absent and was retired: a storyline page links its story
        again. Returns the version now live, or None when nothing was revived (live, never retired, or another
        caller won). History gains ``{"version": v, "previous": None, "reason": "revived"}``."""

    @abc.abstractmethod
    def history(self, name: str) -> list[dict]:
        """Moves in order, oldest first: ``{"version", "previous", "at", "reason"}`` (version None: retired)."""

    @abc.abstractmethod
    def names(self, prefix: str = "") -> list[str]: ...

    def versions(self, prefix: str = "") -> dict[str, int]:
        """``{name: live version}`` of every pointer whose name starts with ``prefix``, in name order: what a
        watcher polls. This default costs one ``names`` plus one ``get`` per pointer; the backends override it
        with one scan (the origin polls it every few seconds over tens of thousands of story pointers). Each
        version is one that was live during the call (pointers moving meanwhile may be seen before or after)."""
        out = {}
        for name in self.names(prefix):
            version = self.get(name)
            if version is not None:  # vanished between the listing and the read
                out[name] = version
        return out

    def rollback(self, name: str, to_version: int | None = None) -> int:
        """Move the pointer back: to ``to_version`` (which must have been live before), or to the version that was
        live before the current one. Returns the version now live. Raises NotFound / ValueError when impossible."""
        for _ in range(10):
            current = self.get(name)
            if current is None:
                raise NotFound(f"no pointer {name!r}")
            moves = self.history(name)
            live_before = [m["version"] for m in moves if m["version"] is not None]  # None: a retirement
            if to_version is None:
                earlier = [v for v in live_before if v < current]
                if not earlier:
                    raise ValueError(f"{name}: no version before v{current} to roll back to")
                target = max(earlier)
            else:
                if to_version not in live_before:
                    raise ValueError(f"{name}: v{to_version} was never live; live versions: {sorted(set(live_before))}")
                target = to_version
            if target == current:
                return current
            if self.compare_and_set(name, current, target, reason="rollback"):
                return target
        raise StoreError(f"{name}: pointer kept moving during rollback")


class SnapshotStore(abc.ABC):
    """Immutable objects by path (pages/{edition}/{section}/v{n}.json, pools/{edition}/v{n}.json)."""

    @abc.abstractmethod
    def put(self, path: str, data: bytes, content_type: str = "application/json") -> None:
        """Write once. Raises AlreadyExists if ``path`` exists (objects are never overwritten)."""

    @abc.abstractmethod
    def get(self, path: str) -> bytes:
        """Raises NotFound."""

    @abc.abstractmethod
    def exists(self, path: str) -> bool: ...

    @abc.abstractmethod
    def list(self, prefix: str = "") -> list[str]:
        """Paths under ``prefix``, sorted."""


@dataclass(frozen=True)
class Message:
    message_id: str
    ack_id: str
    data: bytes
    attributes: dict = field(default_factory=dict)


class MessageBus(abc.ABC):
    """Topics of schemas.tables.TOPICS; at-least-once delivery to named subscriptions."""

    @abc.abstractmethod
    def ensure_topic(self, topic: str) -> None: ...

    @abc.abstractmethod
    def ensure_subscription(self, topic: str, subscription: str, ack_deadline_s: int = 60) -> None: ...

    @abc.abstractmethod
    def publish(self, topic: str, data: bytes, attributes: dict | None = None, ordering_key: str | None = None) -> str:
        """Returns the message id once the bus has it durably. Messages with the same ``ordering_key`` are
        delivered in publish order (see the module docstring)."""

    def publish_many(self, topic: str, items: list[tuple[bytes, dict]]) -> list[str]:
        """Publish ``(data, attributes)`` pairs; returns their message ids in the same order, once the bus has
        them all durably. This default publishes one by one; the backends batch (Pub/Sub: all handed to the client,
        then all futures awaited; embedded: one transaction). On an error some messages may have been published:
        publishing the batch again is safe, since delivery is at least once and consumers are idempotent."""
        return [self.publish(topic, data, attributes) for data, attributes in items]

    @abc.abstractmethod
    def pull(self, subscription: str, max_messages: int = 100, timeout: float = 1.0) -> list[Message]:
        """Up to ``max_messages`` messages, waiting at most about ``timeout`` seconds when there are none."""

    @abc.abstractmethod
    def ack(self, subscription: str, ack_ids: Iterable[str]) -> None: ...

    def publish_record(self, topic: str, record: dict, ordering_key: str | None = None) -> str:
        """Validate and encode ``record`` with the topic's schema, then publish it (with ``ordering_key``)."""
        name = message_type(topic)
        if ordering_key:
            return self.publish(topic, codec.encode(name, record), codec.attributes(name), ordering_key=ordering_key)
        return self.publish(topic, codec.encode(name, record), codec.attributes(name))

    def decode(self, topic: str, message: Message) -> dict:
        return codec.decode(message_type(topic), message.data)


def message_type(topic: str) -> str:
    # Topics may carry a namespace prefix ("bf-2014-items-raw"); dead-letter topics may carry a stage suffix.
    base = topic.rsplit("/", 1)[-1]
    if "dead-letter" in base:
        return TOPICS["dead-letter"]
    for name, msg in TOPICS.items():
        if base == name or base.endswith("-" + name):
            return msg
    raise ValueError(f"topic {topic!r} has no schema; topics: {', '.join(TOPICS)}")


# ---------------------------------------------------------------------------------------------------------------
# Token buckets shared by every worker and instance (a per-process bucket multiplies the limit by the number of
# workers): the state lives in a store row, and each backend
# applies :func:`bucket_step` atomically (SQLite: one BEGIN IMMEDIATE transaction; Bigtable: compare-and-set on the
# exact previous value). Used by the origin for the per-reader write budget (stores.profiles) and the per-feed
# ping window (stores.feeds).


def bucket_step(
    state: dict | None, rate: float, burst: float, now_ms: int, n: int = 1, force: bool = False
) -> tuple[dict, bool, float]:
    """Take ``n`` tokens (default one) from a token bucket. ``state`` is ``{"tokens", "at"}`` (None: a full bucket).
    Returns (new state, granted, seconds until ``n`` tokens are available when not granted). ``rate`` tokens a
    second refill up to ``burst``; a clock that goes backwards refills nothing. ``force`` (CDN purges, which widen
    rather than wait) empties the bucket when it holds fewer than ``n``, so the next takes wait for the refill.

    The refill time never moves back: a taker whose clock reading is older than the stored one (it read the clock,
    then waited for the lock or lost a compare-and-set) gets no refill and leaves the stored time as it was, so the
    stretch it missed is not refilled a second time for the next taker."""
    if state is None:
        tokens, at = float(burst), now_ms
    else:
        tokens, at = float(state.get("tokens", burst)), int(state.get("at", now_ms))
    tokens = min(float(burst), tokens + max(0, now_ms - at) / 1000.0 * rate)
    at = max(at, now_ms)
    if tokens >= n - 1e-9:  # float sums of refills may land a hair under a whole token
        return {"tokens": max(0.0, tokens - n), "at": at}, True, 0.0
    wait = (n - tokens) / rate if rate > 0 else 3600.0
    return {"tokens": 0.0 if force else tokens, "at": at}, False, wait
