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


def config_from_args(args, project: str | None = None) -> StoreConfig:
    """The StoreConfig of parsed store flags. Raises ValueError naming the flag when they are inconsistent."""
    if args.backend == "gcp" and not args.snapshot_bucket:
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


# The one table of the stores kept in table rows, outside the core stores of :func:`open_stores`: kind -> (module,
# embedded class, Bigtable class, Bigtable tables). Each embedded class takes the embedded SQLite database, each
# Bigtable class the data-plane handles of its tables in the config's namespace, in this order.
ROW_STORES: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "audit": ("stores.audit", "EmbeddedAuditLog", "BigtableAuditLog", ("audit",)),
    "controls": ("stores.controls", "EmbeddedControlStore", "BigtableControlStore", ("controls",)),
    "covisit": ("stores.covisit", "EmbeddedCovisitStore", "BigtableCovisitStore", ("covisit",)),
    "feeds": ("stores.feeds", "EmbeddedFeedStore", "BigtableFeedStore", ("feeds",)),
    "profiles": ("stores.profiles", "EmbeddedProfileStore", "BigtableProfileStore", ("profiles", "follows")),
    "takedowns": ("stores.takedowns", "EmbeddedTakedownStore", "BigtableTakedownStore", ("takedowns",)),
    "userclusters": ("stores.userclusters", "EmbeddedUserClusterStore", "BigtableUserClusterStore", ("userclusters",)),
}


def open_store(kind: str, config: StoreConfig | None = None):
    """The store of ``kind`` (a key of :data:`ROW_STORES`) that ``config`` describes (embedded by default): the one
    backend switch of the row stores, on the embedded SQLite database of ``config`` or on its namespaced Bigtable
    tables. The typed openers (``stores.audit.open_audit_log`` ...) call it."""
    import importlib

    if kind not in ROW_STORES:
        raise ValueError(f"unknown store {kind!r} (one of {', '.join(sorted(ROW_STORES))})")
    module, embedded_class, bigtable_class, tables = ROW_STORES[kind]
    classes = importlib.import_module(module)
    config = config or StoreConfig()
    if config.backend == "embedded":
        from stores import embedded

        return getattr(classes, embedded_class)(embedded.Database(config.embedded_db))
    from stores.gcp.clients import bigtable_table

    return getattr(classes, bigtable_class)(*(bigtable_table(config, t) for t in tables))


def open_stores(config: StoreConfig | None = None) -> Stores:
    config = config or StoreConfig()
    if config.backend == "embedded":
        from stores import embedded

        db = embedded.Database(config.embedded_db)
        if config.bus_kind == "pubsub":
            from stores import gcp

            bus = gcp.open_pubsub_bus(config)
        else:
            bus = embedded.EmbeddedBus(db)
        return Stores(
            articles=embedded.EmbeddedArticleStore(db),
            stories=embedded.EmbeddedStoryStore(db),
            pointers=embedded.EmbeddedPointerStore(db),
            snapshots=embedded.DirectorySnapshotStore(os.path.join(config.embedded_root, "snapshots")),
            bus=bus,
            config=config,
        )
    from stores import gcp

    return gcp.open_gcp_stores(config)
