"""Google Cloud backends of the stores: Bigtable (articles, stories, pointers), GCS (snapshots), Pub/Sub (bus).

- :mod:`stores.gcp.clients`: the process-wide clients (:func:`client`) and the mapping of client-library failures
  to the store exceptions;
- :mod:`stores.gcp.bigtable`: the article, story and pointer stores, the Bigtable row helpers the other
  Bigtable-backed stores (:mod:`stores.gcp.profiles`, :mod:`stores.feeds`) share (:class:`Table`,
  :func:`latest_cell_filter`, :func:`cell_value`) and the tables' GC rules (:func:`gc_rule`);
- :mod:`stores.gcp.gcs`: the snapshot store (objects ``{namespace}/{path}`` in ``config.bucket``);
- :mod:`stores.gcp.pubsub`: the message bus (topics ``projects/{project}/topics/{config.name(topic)}``).

:func:`stores.open_store` opens each of them for a :class:`stores.StoreConfig` (the Bigtable stores on the raw
handles of :func:`stores.gcp.clients.bigtable_table`, the snapshots by :func:`open_gcs_snapshot_store`, the bus by
:func:`open_pubsub_bus`); this module re-exports them and creates the resources on the emulators or a development
project (:func:`provision`).

Retry policy (transient = UNAVAILABLE, DEADLINE_EXCEEDED, connection errors; the store raises StoreError for them
once the client library gives up, and callers retry: in a Beam DoFn, raise and let the bundle retry):

- Reads (rows, objects, pulls) are retried by the client libraries' default policies (exponential backoff,
  bounded deadline); pull waits at most about ``timeout`` seconds.
- Blind writes (story meta, members, links, live rows, writer seq) are idempotent in effect; they are sent once
  (server timestamps make the library treat them as non-idempotent) and a failure raises StoreError.
- Conditional writes and snapshot uploads are never retried inside the store: a lost response is ambiguous. Their
  outcomes are replay-safe: a replayed create returns DUPLICATE, a replayed claim returns the same owner, a
  replayed change marker returns False, a replayed snapshot put raises AlreadyExists (compare ``get`` with your
  bytes) and a replayed compare-and-set returns False (check ``get``). Permanent errors (NotFound of a topic or
  an object, invalid arguments) are not retried.
- Publishing is retried by the Pub/Sub publisher client; the message id is returned once the service has it.
  ``publish_many`` hands the whole batch to the client before waiting, so the client packs it into few requests.
"""

from __future__ import annotations

from collections.abc import Iterable

from schemas.tables import TOPICS
from stores.gcp.bigtable import (
    BigtableArticleStore,
    BigtablePointerStore,
    BigtableStoryStore,
    Table,
    cell_value,
    gc_rule,
    latest_cell_filter,
    provision_tables,
)
from stores.gcp.clients import client
from stores.gcp.gcs import GcsSnapshotStore, open_gcs_snapshot_store, provision_bucket
from stores.gcp.pubsub import PubSubBus, open_pubsub_bus

__all__ = [
    "BigtableArticleStore",
    "BigtablePointerStore",
    "BigtableStoryStore",
    "GcsSnapshotStore",
    "PubSubBus",
    "Table",
    "cell_value",
    "client",
    "gc_rule",
    "latest_cell_filter",
    "open_gcs_snapshot_store",
    "open_pubsub_bus",
    "provision",
]


def provision(config, topics: Iterable[str] = TOPICS) -> None:
    """Create the tables (families and GC rules of schemas.tables.TABLES and MAX_AGE_DAYS), the snapshot bucket and
    the topics of ``config``. Idempotent: missing column families are added to existing tables and families whose
    GC rule differs from the layout's are updated. Meant for the emulators and for development projects;
    production resources come from Terraform. The Bigtable emulator accepts, stores and reports the GC rules
    (max versions and max age) but does not enforce them (LOCAL_STACK.md)."""
    provision_tables(config)
    provision_bucket(config)
    bus = open_pubsub_bus(config)
    for topic in topics:
        bus.ensure_topic(topic)
