"""The GCS backend of the snapshot store: objects ``{namespace}/{path}`` in ``config.bucket``.

Snapshots are immutable by name: ``put`` checks existence and uploads with ``if_generation_match=0`` (a 412 from
GCS becomes AlreadyExists). The GCS emulator ignores preconditions, so ``put`` also holds a per-path lock inside
this process; across processes only real GCS's precondition guarantees one winner. Uploads are never retried inside
the store (a lost response is ambiguous): a replayed put raises AlreadyExists (compare ``get`` with your bytes).
"""

from __future__ import annotations

import threading
import zlib

from google.api_core import exceptions as gx

from stores.base import AlreadyExists, NotFound, SnapshotStore
from stores.gcp.clients import client, store_errors

_PATH_LOCKS = [threading.Lock() for _ in range(64)]


class GcsSnapshotStore(SnapshotStore):
    """Objects ``{prefix}{path}`` in one bucket, written once (``if_generation_match=0``).

    ``bucket`` is a google.cloud.storage Bucket (or anything with ``blob(name)`` / ``list_blobs(prefix=)``).
    """

    def __init__(self, bucket, prefix: str = ""):
        self.bucket = bucket
        self.prefix = prefix

    def _name(self, path: str) -> str:
        parts = path.split("/")
        if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"snapshot path {path!r} is not a plain relative path")
        return self.prefix + path

    def put(self, path: str, data: bytes, content_type: str = "application/json") -> None:
        name = self._name(path)
        # The per-path lock only matters under the emulator, which ignores if_generation_match.
        with _PATH_LOCKS[zlib.crc32(name.encode()) % len(_PATH_LOCKS)]:
            blob = self.bucket.blob(name)
            with store_errors(f"snapshot {path}"):
                if blob.exists():
                    raise AlreadyExists(f"snapshot {path} already exists; snapshots are immutable")
                try:
                    blob.upload_from_string(bytes(data), content_type=content_type, if_generation_match=0, retry=None)
                except gx.PreconditionFailed:
                    raise AlreadyExists(f"snapshot {path} already exists; snapshots are immutable") from None

    def get(self, path: str) -> bytes:
        with store_errors(f"snapshot {path}"):
            try:
                return self.bucket.blob(self._name(path)).download_as_bytes()
            except gx.NotFound:
                raise NotFound(f"no snapshot {path}") from None

    def exists(self, path: str) -> bool:
        with store_errors(f"snapshot {path}"):
            return bool(self.bucket.blob(self._name(path)).exists())

    def list(self, prefix: str = "") -> list[str]:
        with store_errors(f"list snapshots {prefix}*"):
            names = [b.name for b in self.bucket.list_blobs(prefix=self.prefix + prefix)]
        return sorted(n[len(self.prefix) :] for n in names)


def snapshot_prefix(config) -> str:
    return f"{config.namespace}/" if config.namespace else ""


def open_gcs_snapshot_store(config) -> GcsSnapshotStore:
    """The snapshot store of ``config``: its namespace's objects in its bucket, on the process-wide client."""
    return GcsSnapshotStore(client("storage", config.gcp_project).bucket(config.gcs_bucket), snapshot_prefix(config))


def provision_bucket(config) -> None:
    """Create the snapshot bucket of ``config`` unless it exists."""
    storage_client = client("storage", config.gcp_project)
    with store_errors(f"create bucket {config.gcs_bucket}"):
        if storage_client.lookup_bucket(config.gcs_bucket) is None:
            try:
                storage_client.create_bucket(config.gcs_bucket)
            except gx.Conflict:
                pass
