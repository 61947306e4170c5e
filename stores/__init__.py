"""Stores: the only code that talks to Bigtable, GCS and Pub/Sub (or their embedded stand-ins).

:func:`open_stores` picks the backend from a :class:`StoreConfig`, which pipelines and the origin build from
their options. ``backend="embedded"`` (the default) needs nothing but a directory; ``backend="gcp"`` uses the real
Google Cloud clients, which honour ``BIGTABLE_EMULATOR_HOST`` / ``STORAGE_EMULATOR_HOST`` /
``PUBSUB_EMULATOR_HOST`` (see ``newsroom stack up``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from stores.base import (  # noqa: F401  (re-exported: callers import stores.X)
    AlreadyExists,
    ArticleStore,
    Message,
    MessageBus,
    NotFound,
    PointerStore,
    SnapshotStore,
    StoreError,
    StoryStore,
    WriteOutcome,
    WriteResult,
)

BACKENDS = ("embedded", "gcp")


@dataclass(frozen=True)
class StoreConfig:
    """Where the stores live.

    backend: "embedded" (SQLite + directory under ``data_dir``) or "gcp" (Bigtable, GCS, Pub/Sub).
    data_dir: embedded root; default ``.newsroom`` in the working directory.
    project: Google Cloud project (gcp); default $GOOGLE_CLOUD_PROJECT.
    bigtable_instance: Bigtable instance id (gcp).
    bucket: GCS bucket for snapshots (gcp).
    namespace: prefix that isolates a run (a backfill writes its own tables, objects and topics): "" = production.
    """

    backend: str = "embedded"
    data_dir: str = ".newsroom"
    project: str | None = None
    bigtable_instance: str = "newsroom"
    bucket: str | None = None
    namespace: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"--backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.namespace and not self.namespace.replace("-", "").isalnum():
            raise ValueError(f"--namespace must be letters, digits and dashes, got {self.namespace!r}")

    @property
    def gcp_project(self) -> str:
        project = self.project or os.environ.get("GOOGLE_CLOUD_PROJECT")
        if not project:
            raise ValueError("the gcp backend needs --project or GOOGLE_CLOUD_PROJECT")
        return project

    @property
    def gcs_bucket(self) -> str:
        if not self.bucket:
            raise ValueError("the gcp backend needs --bucket for snapshots")
        return self.bucket

    def name(self, base: str) -> str:
        """A table, topic or object-prefix name inside this config's namespace."""
        return f"{self.namespace}-{base}" if self.namespace else base


@dataclass
class Stores:
    articles: ArticleStore
    stories: StoryStore
    pointers: PointerStore
    snapshots: SnapshotStore
    bus: MessageBus
    config: StoreConfig


def open_stores(config: StoreConfig | None = None) -> Stores:
    config = config or StoreConfig()
    if config.backend == "embedded":
        from stores import embedded

        root = os.path.join(config.data_dir, config.namespace) if config.namespace else config.data_dir
        db = embedded.Database(os.path.join(root, "newsroom.sqlite3"))
        return Stores(
            articles=embedded.EmbeddedArticleStore(db),
            stories=embedded.EmbeddedStoryStore(db),
            pointers=embedded.EmbeddedPointerStore(db),
            snapshots=embedded.DirectorySnapshotStore(os.path.join(root, "snapshots")),
            bus=embedded.EmbeddedBus(db),
            config=config,
        )
    from stores import gcp

    return gcp.open_gcp_stores(config)
