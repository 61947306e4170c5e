"""Computed publisher authority: where the authority job writes it and how the editions stage reads it.

Storage: a versioned JSON object in the snapshot store, ``authority/v{n}.json``, made live by the pointer
``authority`` (compare-and-set, with history). Why not an ``authority`` table: the document is small (one entry
per publisher, a few KB for thousands), written once a day and read whole at setup by every editions worker; the
snapshot store + pointer pair already gives both backends an atomic switch from one complete version to the
next, an audit trail of moves (``PointerStore.history``) and ``PointerStore.rollback("authority")`` to go back
to the previous computation, with no new table, GC rule or Terraform table (the stories job's account can already
read both). The origin ignores the pointer (a name without
``/`` other than ``aliases`` is not a page: serving/state/watcher.py ``classify``).

Document (sorted keys)::

    {"kind": "publisher_authority", "version": n, "computed_at": ms, "params": {...},
     "stories": n_scanned, "publishers": {publisher_id: {"authority", "topic_authority": {section: x},
                                                         "evidence": {articles, originals, ...}}}}

Readers (:func:`current_registry`) overlay it on the hand-set registry: a publisher's ``authority`` and the
sections it has evidence in replace the file's; the file's other ``topic_authority`` entries stay; a publisher
the file does not know but the document rates is added (no hosts: host resolution is unchanged). No document, or
a store that cannot be read: the hand-set file alone (with a warning).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time

from transforms.publishers import Publisher, PublisherRegistry

POINTER = "authority"
KIND = "publisher_authority"

log = logging.getLogger(__name__)


def object_path(version: int) -> str:
    return f"authority/v{int(version)}.json"


def publish(stores, doc: dict, reason: str = "authority job") -> int:
    """Write ``doc`` as the next version and move the pointer to it. Returns the version. Two concurrent runs:
    each writes its own version (objects are write-once); the later pointer move wins, neither is lost."""
    from transforms.publisher_store import publish_versioned

    return publish_versioned(stores, POINTER, object_path, dict(doc, kind=KIND), reason)


def load(stores) -> dict | None:
    """The live authority document, or None when none was published."""
    version = stores.pointers.get(POINTER)
    if version is None:
        return None
    doc = json.loads(stores.snapshots.get(object_path(version)))
    if doc.get("kind") != KIND or doc.get("version") != version:
        raise ValueError(f"{object_path(version)} is not authority version {version}")
    return doc


def apply(registry: PublisherRegistry, doc: dict | None) -> PublisherRegistry:
    """The registry with the document's authority overlaid (see the module docstring)."""
    if not doc:
        return registry
    rated = doc.get("publishers", {})
    pubs = []
    for pub in registry:
        r = rated.get(pub.publisher_id)
        if r is None:
            pubs.append(pub)
            continue
        topics = dict(pub.topic_authority) | {k: float(v) for k, v in r.get("topic_authority", {}).items()}
        pubs.append(dataclasses.replace(pub, authority=float(r["authority"]), topic_authority=topics))
    for pid, r in sorted(rated.items()):
        if registry.get(pid) is None:
            pubs.append(
                Publisher(
                    publisher_id=pid,
                    name=pid,
                    hosts=(),
                    region="",
                    language="",
                    authority=float(r["authority"]),
                    topic_authority={k: float(v) for k, v in r.get("topic_authority", {}).items()},
                    known=False,
                )
            )
    return PublisherRegistry(pubs)


class AuthorityWatcher:
    """The registry a long-running stage uses: the operator's registry (transforms/publisher_store.py: the stored
    one, else the ``--publishers`` file, else the packaged sample) with the live computed authority overlaid, read
    again when either pointer (``publishers``, ``authority``) moves. :meth:`poll` reads the pointers at most every
    ``refresh_s`` seconds (one row read each) and returns True when :attr:`registry` changed. A store that cannot be
    read keeps the registry it has (the hand-set file before any document was read), with a warning."""

    def __init__(self, publishers_path: str | None, store_config, refresh_s: float = 600.0, clock=time.monotonic):
        from transforms.publisher_store import LiveRegistry, live_registry

        self.publishers_path, self.store_config = publishers_path, store_config
        self.refresh_s, self.clock = refresh_s, clock
        self.base = (
            live_registry(publishers_path, store_config)
            if store_config is not None
            else LiveRegistry(publishers_path, None)
        )
        self.registry = self.base.registry
        self.version: int | None = None
        self._base_version = self.base.version
        self._checked = float("-inf")
        self._stores = None
        self.poll()

    def poll(self) -> bool:
        now = self.clock()
        if self.store_config is None:
            return False
        self.base.poll()
        base_moved = self.base.version != self._base_version
        if not base_moved and now - self._checked < self.refresh_s:
            return False
        self._checked = now
        from stores import StoreError, open_stores

        try:
            self._stores = self._stores or open_stores(self.store_config)
            version = self._stores.pointers.get(POINTER)
            if version == self.version and not base_moved:
                return False
            doc = load(self._stores) if version is not None else None
        except (StoreError, ValueError, OSError) as exc:
            log.warning("authority: computed authority unreadable (%s); keeping the registry in use", exc)
            return False
        if doc is not None:
            log.info("authority: using computed authority v%s (%d publishers)", version, len(doc["publishers"]))
        self.registry = apply(self.base.registry, doc)
        self.version, self._base_version = version, self.base.version
        return True


def current_registry(publishers_path: str | None = None, store_config=None) -> PublisherRegistry:
    """The hand-set registry (``publishers_path``, default the packaged file) with the live computed authority of
    ``store_config``'s stores overlaid; the hand-set registry alone without a config, a document or a store."""
    return AuthorityWatcher(publishers_path, store_config).registry
