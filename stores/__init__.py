"""Stores: the only code that talks to Bigtable, GCS and Pub/Sub (or their embedded stand-ins).

:func:`open_store` (one store of a kind) and :func:`open_stores` (the core stores together) pick the backend from
a :class:`StoreConfig`, which pipelines and the origin build from their options. ``backend="embedded"`` (the default) needs nothing but a directory; ``backend="gcp"`` uses the real
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
# "" = the backend's own bus; "pubsub" = Pub/Sub (the emulator when PUBSUB_EMULATOR_HOST is set) with the
# embedded tables and snapshots: the local main job's streaming mode, since Pub/Sub is the only live source
# Beam's Python local runner can read.
BUSES = ("", "pubsub")


@dataclass(frozen=True)
class StoreConfig:
    """Where the stores live.

    backend: "embedded" (SQLite + directory under ``data_dir``) or "gcp" (Bigtable, GCS, Pub/Sub).
    data_dir: embedded root; default ``.newsroom`` in the working directory.
    project: Google Cloud project (gcp); default $GOOGLE_CLOUD_PROJECT.
    bigtable_instance: Bigtable instance id (gcp).
    bucket: GCS bucket for snapshots (gcp).
    namespace: prefix that isolates a run (a backfill writes its own tables, objects and topics): "" = production.
    bus: "" (the backend's bus) or "pubsub" (Pub/Sub topics with embedded tables and snapshots).
    """

    backend: str = "embedded"
    data_dir: str = ".newsroom"
    project: str | None = None
    bigtable_instance: str = "newsroom"
    bucket: str | None = None
    namespace: str = ""
    bus: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"--backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.bus not in BUSES:
            raise ValueError(f"--bus must be one of {', '.join(repr(b) for b in BUSES)}, got {self.bus!r}")
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
            raise ValueError(
                "the gcp backend needs --snapshot_bucket (NEWSROOM_SNAPSHOT_BUCKET for the origin) for snapshots"
            )
        return self.bucket

    @property
    def embedded_db(self) -> str:
        """The SQLite file of the embedded backend (one per namespace)."""
        return os.path.join(self.embedded_root, "newsroom.sqlite3")

    @property
    def embedded_root(self) -> str:
        return os.path.join(self.data_dir, self.namespace) if self.namespace else self.data_dir

    @property
    def bus_kind(self) -> str:
        """ "pubsub" or "embedded": which bus the stores (and Beam reads of the bus) use."""
        return "pubsub" if self.backend == "gcp" or self.bus == "pubsub" else "embedded"

    def name(self, base: str) -> str:
        """A table, topic or object-prefix name inside this config's namespace."""
        return f"{self.namespace}-{base}" if self.namespace else base


def add_store_arguments(parser, with_project: bool = False, helps: dict[str, str] | None = None) -> None:
    """The store flags of every job and command (Beam jobs get ``--project`` from GoogleCloudOptions). ``helps``:
    help texts by flag name, for a job whose defaults of some flags differ (the backfill's own namespace)."""
    helps = helps or {}
    parser.add_argument(
        "--backend",
        default="embedded",
        choices=list(BACKENDS),
        help="Store backend: 'embedded' (SQLite and files under --data_dir, no cloud account) or 'gcp' "
        "(Bigtable, GCS, Pub/Sub). Default: embedded.",
    )
    parser.add_argument(
        "--data_dir", default=".newsroom", help=helps.get("data_dir", "Root of the embedded stores. Default: .newsroom")
    )
    parser.add_argument(
        "--bigtable_instance", default="newsroom", help="Bigtable instance id for the gcp backend. Default: newsroom."
    )
    parser.add_argument(
        "--snapshot_bucket",
        default=None,
        help="GCS bucket (name only) holding page snapshots for the gcp backend. Example: my-proj-newsroom-snapshots. "
        "Default: none (required with --backend=gcp).",
    )
    parser.add_argument(
        "--bus",
        default="",
        choices=list(BUSES),
        help="Message bus: '' (the backend's own: the SQLite queue for embedded, Pub/Sub for gcp) or 'pubsub' "
        "(Pub/Sub, e.g. the local emulator via PUBSUB_EMULATOR_HOST, with the embedded tables and snapshots: how "
        "the local main job streams). Default: ''.",
    )
    parser.add_argument(
        "--namespace",
        default="",
        help=helps.get(
            "namespace",
            "Isolates a run's tables, objects and topics (a backfill writes to its own). Letters, digits, "
            "dashes. Default: '' (production).",
        ),
    )
    if with_project:
        parser.add_argument(
            "--project", default=None, help="Google Cloud project (gcp). Default: $GOOGLE_CLOUD_PROJECT."
        )


def config_from_args(args, project: str | None = None, snapshots: bool = True) -> StoreConfig:
    """The StoreConfig of parsed store flags. Raises ValueError naming the flag when they are inconsistent.
    ``snapshots`` False: the command reads no snapshot (an export of the story table), so no bucket is needed."""
    if args.backend == "gcp" and not args.snapshot_bucket and snapshots:
        raise ValueError("--snapshot_bucket is required with --backend=gcp")
    return StoreConfig(
        backend=args.backend,
        data_dir=args.data_dir,
        project=project if project is not None else getattr(args, "project", None),
        bigtable_instance=args.bigtable_instance,
        bucket=args.snapshot_bucket,
        namespace=args.namespace,
        bus=getattr(args, "bus", "") or "",
    )


# The origin's Flask config keys (and environment variables of its workers) for a StoreConfig.
_ENV_KEYS = {
    "backend": "NEWSROOM_BACKEND",
    "data_dir": "NEWSROOM_DATA_DIR",
    "project": "NEWSROOM_PROJECT",
    "bigtable_instance": "NEWSROOM_BIGTABLE_INSTANCE",
    "bucket": "NEWSROOM_SNAPSHOT_BUCKET",
    "namespace": "NEWSROOM_NAMESPACE",
    "bus": "NEWSROOM_BUS_KIND",
}


def config_from_mapping(m) -> StoreConfig:
    """A StoreConfig from NEWSROOM_* keys (a Flask config or the environment); missing keys take the defaults."""
    defaults = StoreConfig()
    kwargs = {}
    for attr, key in _ENV_KEYS.items():
        value = m.get(key)
        kwargs[attr] = getattr(defaults, attr) if value is None else value
    return StoreConfig(**kwargs)


def config_to_env(config: StoreConfig) -> dict[str, str]:
    """The NEWSROOM_* variables that :func:`config_from_mapping` reads back."""
    out = {}
    for attr, key in _ENV_KEYS.items():
        value = getattr(config, attr)
        if value is not None:
            out[key] = os.path.abspath(value) if attr == "data_dir" else str(value)
    return out


@dataclass
class Stores:
    articles: ArticleStore
    stories: StoryStore
    pointers: PointerStore
    snapshots: SnapshotStore
    bus: MessageBus
    config: StoreConfig


# The one table of the stores kept in table rows: kind -> (embedded class, Bigtable class, Bigtable tables), each
# class as "module:Class" so that neither backend's module is imported until a store of it is opened. Each embedded
# class takes the embedded SQLite database, each Bigtable class the data-plane handles of its tables in the config's
# namespace, in this order (a class that maps the client library's errors wraps its handles itself).
ROW_STORES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "articles": ("stores.embedded:EmbeddedArticleStore", "stores.gcp.bigtable:BigtableArticleStore", ("articles",)),
    "stories": ("stores.embedded:EmbeddedStoryStore", "stores.gcp.bigtable:BigtableStoryStore", ("stories",)),
    "pointers": ("stores.embedded:EmbeddedPointerStore", "stores.gcp.bigtable:BigtablePointerStore", ("pointers",)),
    "audit": ("stores.audit:EmbeddedAuditLog", "stores.audit:BigtableAuditLog", ("audit",)),
    "controls": ("stores.controls:EmbeddedControlStore", "stores.controls:BigtableControlStore", ("controls",)),
    "covisit": ("stores.covisit:EmbeddedCovisitStore", "stores.covisit:BigtableCovisitStore", ("covisit",)),
    "feeds": ("stores.feeds:EmbeddedFeedStore", "stores.feeds:BigtableFeedStore", ("feeds",)),
    "profiles": (
        "stores.profiles:EmbeddedProfileStore",
        "stores.gcp.profiles:BigtableProfileStore",
        ("profiles", "follows"),
    ),
    "takedowns": ("stores.takedowns:EmbeddedTakedownStore", "stores.takedowns:BigtableTakedownStore", ("takedowns",)),
    "userclusters": (
        "stores.userclusters:EmbeddedUserClusterStore",
        "stores.userclusters:BigtableUserClusterStore",
        ("userclusters",),
    ),
}
# Every kind open_store opens: the row stores, the snapshot store (a directory or a GCS bucket) and the bus.
STORE_KINDS = (*ROW_STORES, "snapshots", "bus")


def _class(spec: str):
    import importlib

    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def open_store(kind: str, config: StoreConfig | None = None):
    """The store of ``kind`` (one of :data:`STORE_KINDS`) that ``config`` describes (embedded by default): the one
    backend switch of every store. The typed openers (``stores.audit.open_audit_log`` ...) and :func:`open_stores`
    call it."""
    if kind not in STORE_KINDS:
        raise ValueError(f"unknown store {kind!r} (one of {', '.join(sorted(STORE_KINDS))})")
    config = config or StoreConfig()
    return _open(kind, config, _embedded_database(config))


def _embedded_database(config: StoreConfig):
    """The embedded SQLite database of ``config``, opened on first use and then shared (one per open_stores)."""
    opened = []

    def database():
        if not opened:
            from stores import embedded

            opened.append(embedded.Database(config.embedded_db))
        return opened[0]

    return database


def _open(kind: str, config: StoreConfig, database):
    if kind == "bus":
        if config.bus_kind == "pubsub":
            from stores.gcp.pubsub import open_pubsub_bus

            return open_pubsub_bus(config)
        from stores.embedded import EmbeddedBus

        return EmbeddedBus(database())
    if kind == "snapshots":
        if config.backend == "embedded":
            from stores.embedded import DirectorySnapshotStore

            return DirectorySnapshotStore(os.path.join(config.embedded_root, "snapshots"))
        from stores.gcp.gcs import open_gcs_snapshot_store

        return open_gcs_snapshot_store(config)
    embedded_class, bigtable_class, tables = ROW_STORES[kind]
    if config.backend == "embedded":
        return _class(embedded_class)(database())
    from stores.gcp.clients import bigtable_table

    return _class(bigtable_class)(*(bigtable_table(config, t) for t in tables))


def open_stores(config: StoreConfig | None = None) -> Stores:
    """The core stores of ``config`` together, each opened by :func:`open_store`'s switch, the embedded ones on one
    SQLite database. The snapshot store is opened first, so a gcp config without a bucket is refused before any
    Bigtable client is made."""
    config = config or StoreConfig()
    database = _embedded_database(config)
    snapshots = _open("snapshots", config, database)
    return Stores(
        articles=_open("articles", config, database),
        stories=_open("stories", config, database),
        pointers=_open("pointers", config, database),
        snapshots=snapshots,
        bus=_open("bus", config, database),
        config=config,
    )
