"""The Google Cloud clients of the stores and the mapping of their failures to the store exceptions.

:func:`client` hands out one client per kind (``bigtable``, ``bigtable-admin``, ``storage``, ``publisher``,
``publisher-ordered``, ``subscriber``), project and emulator endpoint, shared by every store of the process. The
client libraries honour ``BIGTABLE_EMULATOR_HOST``, ``STORAGE_EMULATOR_HOST`` (anonymous credentials are used then)
and ``PUBSUB_EMULATOR_HOST``; ``newsroom stack up`` prints them.

:func:`store_errors` maps client-library failures: NotFound stays NotFound, transient ones (UNAVAILABLE,
DEADLINE_EXCEEDED, connection errors, transport errors of google-cloud-storage) become StoreError, anything else
is re-raised as it is.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from concurrent.futures import TimeoutError as FutureTimeout

from google.api_core import exceptions as gx

from stores.base import NotFound, StoreError

# The Bigtable client warns on every client creation under the emulator (a RuntimeWarning breaks `-W error`).
EMULATOR_WARNING = "Connecting to Bigtable emulator"
warnings.filterwarnings("ignore", message=EMULATOR_WARNING, category=RuntimeWarning)

_TRANSIENT = (gx.GoogleAPIError, ConnectionError, TimeoutError, FutureTimeout)


@contextlib.contextmanager
def store_errors(what: str):
    """Map client-library failures to the store exceptions (NotFound stays NotFound)."""
    try:
        yield
    except StoreError:
        raise
    except gx.NotFound as exc:
        raise NotFound(f"{what}: {exc.message}") from exc
    except _TRANSIENT as exc:
        raise StoreError(f"{what}: {type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # requests / transport errors of google-cloud-storage
        if type(exc).__module__.startswith(("requests", "urllib3", "google.auth", "grpc")):
            raise StoreError(f"{what}: {type(exc).__name__}: {exc}") from exc
        raise


_CLIENT_LOCK = threading.Lock()
_CLIENTS: dict[tuple, object] = {}


def _emulated(var: str) -> str | None:
    return os.environ.get(var) or None


def client(kind: str, project: str):
    """One client per kind, project and emulator endpoint, shared by every store of the process (clients are
    thread-safe and expensive: channels, auth, background threads)."""
    host = {
        "bigtable": "BIGTABLE_EMULATOR_HOST",
        "bigtable-admin": "BIGTABLE_EMULATOR_HOST",
        "storage": "STORAGE_EMULATOR_HOST",
        "publisher": "PUBSUB_EMULATOR_HOST",
        "publisher-ordered": "PUBSUB_EMULATOR_HOST",
        "subscriber": "PUBSUB_EMULATOR_HOST",
    }[kind]
    key = (kind, project, _emulated(host))
    with _CLIENT_LOCK:
        if key not in _CLIENTS:
            _CLIENTS[key] = _make_client(kind, project)
        return _CLIENTS[key]


def bigtable_table(config, base: str):
    """The data-plane handle of table ``base`` (namespaced by ``config``) on the process-wide Bigtable client: how
    :func:`stores.open_store` opens the tables of every row store (stores.ROW_STORES)."""
    return client("bigtable", config.gcp_project).instance(config.bigtable_instance).table(config.name(base))


def _make_client(kind: str, project: str):
    if kind in ("bigtable", "bigtable-admin"):
        from google.cloud import bigtable

        with warnings.catch_warnings():  # also under `-W error`; the data client is created lazily: force it here
            warnings.filterwarnings("ignore", message=EMULATOR_WARNING, category=RuntimeWarning)
            made = bigtable.Client(project=project, admin=kind == "bigtable-admin")
            made.table_data_client  # noqa: B018
        return made
    if kind == "storage":
        from google.cloud import storage

        if _emulated("STORAGE_EMULATOR_HOST"):
            from google.auth.credentials import AnonymousCredentials

            return storage.Client(project=project, credentials=AnonymousCredentials())
        return storage.Client(project=project)
    from google.cloud import pubsub_v1

    if kind == "publisher":
        return pubsub_v1.PublisherClient()
    if kind == "publisher-ordered":
        options = pubsub_v1.types.PublisherOptions(enable_message_ordering=True)
        return pubsub_v1.PublisherClient(publisher_options=options)
    return pubsub_v1.SubscriberClient()
