"""The publisher registry as data: the operator's registry lives in the stores, and the jobs read it while running.

Storage: like computed authority (transforms/authority/__init__.py, whose reasons apply: one small document read
whole, an atomic switch between complete versions, history and rollback on both backends, no new table or IAM
grant), a versioned JSON object in the snapshot store, ``registry/publishers/v{n}.json``, made live by the pointer
``publishers``. ``newsroom publishers import`` (pipelines/commands/registry.py) writes the next version; ``newsroom
rollback``-style recovery is ``PointerStore.rollback("publishers")``. The origin ignores the pointer (a name
without ``/`` is not a page). Document::

    {"kind": "publisher_registry", "version": n, "publishers": [row, ...]}   (rows: docs/operations.md format)

Readers: :func:`live_registry` gives the process's :class:`LiveRegistry` of a (file, store) pair, read again at
most every ``REFRESH_S`` seconds (one pointer read; the document only when the pointer moved). What it holds: the
stored registry when one was imported, else the ``--publishers`` file, else the packaged sample
(transforms/data/publishers.json, the sample world's publishers: the embedded default only). A store that cannot
be read, or a stored document that no longer loads, keeps the registry in use (with a warning): a running job
never loses its publishers to a transient error.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from transforms.publishers import PublisherRegistry, default_registry

POINTER = "publishers"
KIND = "publisher_registry"
REFRESH_S = 180.0  # an import reaches every running job within 3 minutes
PUBLISH_ATTEMPTS = 20

log = logging.getLogger(__name__)


def object_path(version: int) -> str:
    return f"registry/publishers/v{int(version)}.json"


def publish_versioned(stores, pointer: str, path_of, doc: dict, reason: str) -> int:
    """Write ``doc`` (its ``version`` set) as the next write-once version of ``pointer`` and move the pointer to it
    (compare-and-set). Returns the version. Two concurrent writers each write their own version; the later move
    wins, neither object is lost."""
    from stores import AlreadyExists

    previous = stores.pointers.get(pointer)
    version = (previous or 0) + 1
    for _ in range(PUBLISH_ATTEMPTS):
        body = dict(doc, version=version)
        try:
            stores.snapshots.put(path_of(version), json.dumps(body, sort_keys=True).encode())
        except AlreadyExists:
            version += 1
            continue
        if stores.pointers.compare_and_set(pointer, previous, version, reason=reason):
            return version
        previous = stores.pointers.get(pointer)
        version = max(version, previous or 0) + 1
    raise RuntimeError(f"could not move the {pointer!r} pointer in {PUBLISH_ATTEMPTS} attempts")


def publish(stores, rows: list[dict], reason: str) -> int:
    """Make ``rows`` (checked publisher rows) the live registry. Returns the version."""
    PublisherRegistry.from_dicts(rows)  # never publish a registry that a job could not load
    doc = {"kind": KIND, "publishers": sorted(rows, key=lambda r: r["publisher_id"])}
    return publish_versioned(stores, POINTER, object_path, doc, reason)


def load(stores) -> tuple[int | None, list[dict] | None]:
    """(version, rows) of the live stored registry; (None, None) when none was imported."""
    version = stores.pointers.get(POINTER)
    if version is None:
        return None, None
    doc = json.loads(stores.snapshots.get(object_path(version)))
    if doc.get("kind") != KIND or doc.get("version") != version:
        raise ValueError(f"{object_path(version)} is not publisher registry version {version}")
    return version, list(doc["publishers"])


class LiveRegistry:
    """The registry a long-running stage uses (module docstring). :meth:`poll` returns True when
    :attr:`registry` changed; :attr:`version` is the stored version in use (None: the file)."""

    def __init__(self, publishers_path: str | None, store_config, refresh_s: float = REFRESH_S, clock=time.monotonic):
        self.publishers_path, self.store_config = publishers_path, store_config
        self.refresh_s, self.clock = refresh_s, clock
        self.registry = default_registry(publishers_path)
        self.rows: list[dict] | None = None  # the stored rows in use (None: the file)
        self.version: int | None = None
        self._checked = float("-inf")
        self._stores = None
        self._lock = threading.Lock()
        self.poll()

    def poll(self) -> bool:
        if self.store_config is None:
            return False
        with self._lock:
            now = self.clock()
            if now - self._checked < self.refresh_s:
                return False
            self._checked = now
            return self._read()

    def _read(self) -> bool:
        from stores import StoreError, open_stores

        try:
            self._stores = self._stores or open_stores(self.store_config)
            version = self._stores.pointers.get(POINTER)
            if version == self.version:
                return False
            _, rows = load(self._stores) if version is not None else (None, None)
            registry = (
                PublisherRegistry.from_dicts(rows) if rows is not None else default_registry(self.publishers_path)
            )
        except (StoreError, ValueError, TypeError, KeyError, OSError) as exc:
            log.warning("publishers: stored registry unreadable (%s); keeping the registry in use", exc)
            return False
        if rows is not None:
            log.info("publishers: using stored registry v%s (%d publishers)", version, len(rows))
        self.registry, self.rows, self.version = registry, rows, version
        return True


_LIVE: dict[tuple, LiveRegistry] = {}
_LIVE_LOCK = threading.Lock()


def live_registry(publishers_path: str | None, store_config) -> LiveRegistry:
    """The process-wide :class:`LiveRegistry` of ``(publishers_path, store_config)``: every DoFn of a worker shares
    one (one pointer read per refresh, not one per DoFn instance)."""
    key = (publishers_path, repr(store_config))
    with _LIVE_LOCK:
        live = _LIVE.get(key)
        if live is None:
            live = _LIVE[key] = LiveRegistry(publishers_path, store_config)
    live.poll()
    return live
