"""CDN purges: ask the edge to drop its cached copies of pages that changed out of cycle (issue 16 item 4).

A page that changes on the normal cycle needs no purge: its ``s-maxage`` (60 s, stories and topics 30 s) bounds
how long the edge serves the old copy. Three changes cannot wait for that: a takedown (an article a court or a
publisher asked us to remove), a rollback or a hold (an operator undoing a bad page) and Breaking (a story that
must lead now). Their producers name the *pointers* whose pages changed; :func:`public_paths` maps a pointer to
the URL paths the origin serves from it (API and web), and a :class:`Purger` asks the CDN to invalidate them.

Backends, chosen like the other stores by :func:`open_purger`:

- :class:`QueuedPurger` (embedded): appends purge requests to the ``cdn_purges`` table of the embedded SQLite
  file; the local edge (devtools/local_origin.py, nginx) applies them by deleting the cached files of those paths.
- Cloud CDN (gcp): ``urlMaps.invalidateCache`` on the origin's URL map (see :mod:`stores.gcp`).
- :class:`NullPurger`: no CDN in front (records nothing; the page TTLs alone bound staleness).

Paths are query-less: Cloud CDN invalidation of a path covers every query string of it, and the local edge
deletes every cached variant of the path. Purges are bounded by a rate (a token bucket in the store, shared by
every producer); a request over the rate widens to the edition's prefix (``/v1/editions/{e}/*``) instead of
being dropped, so nothing is lost, and repeated paths within one request are sent once.
"""

from __future__ import annotations

import abc
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass


def public_paths(pointer: str) -> list[str]:
    """The URL paths (no query string) whose responses are built from ``pointer``'s snapshot.

    ``{edition}/{section}`` -> the section's API and web pages (``top`` is also the edition's web front page);
    ``story/{id}`` -> the story's API and web pages; ``topic/{...}`` -> the topic's API page; ``pool/{edition}``
    -> nothing (For you is personal and never cached at the edge); ``aliases`` -> nothing (aliases redirect
    through story pages, purged with their stories)."""
    if pointer.startswith("pool/") or pointer == "aliases":
        return []
    if pointer.startswith("story/"):
        sid = pointer.split("/", 1)[1]
        return [f"/v1/stories/{sid}", f"/stories/{sid}"]
    if pointer.startswith("topic/"):
        topic = pointer.split("/")[-1]
        return [f"/v1/topics/{topic}"]
    edition, _, section = pointer.partition("/")
    if not edition or not section:
        raise ValueError(f"no public page for pointer {pointer!r}")
    paths = [f"/v1/editions/{edition}/sections/{section}", f"/e/{edition}/{section}"]
    if section == "top":
        paths.append(f"/e/{edition}/")
    return paths


@dataclass(frozen=True)
class PurgeRequest:
    paths: tuple[str, ...]
    reason: str
    at: int  # ms since epoch


class Purger(abc.ABC):
    """Invalidate cached copies of URL paths at the edge."""

    def purge_pointers(self, pointers: Iterable[str], reason: str) -> PurgeRequest | None:
        """Purge every public path of ``pointers`` (see :func:`public_paths`). None when there is nothing to purge."""
        paths: list[str] = []
        for p in pointers:
            paths.extend(public_paths(p))
        return self.purge(paths, reason)

    def purge(self, paths: Iterable[str], reason: str) -> PurgeRequest | None:
        """Ask the edge to drop ``paths`` (deduplicated, order kept). Returns the request sent, None if empty."""
        unique = tuple(dict.fromkeys(p for p in paths if p))
        for p in unique:
            if not p.startswith("/") or "?" in p or "#" in p:
                raise ValueError(f"purge path must be an absolute path without query: {p!r}")
        if not unique:
            return None
        if not reason:
            raise ValueError("a purge needs a reason (it is logged)")
        request = PurgeRequest(unique, reason, int(time.time() * 1000))
        self._send(request)
        return request

    @abc.abstractmethod
    def _send(self, request: PurgeRequest) -> None: ...

    def pending(self, after_id: int = 0) -> list[tuple[int, PurgeRequest]]:
        """Requests recorded after ``after_id`` (backends that queue; others record nothing)."""
        return []


class NullPurger(Purger):
    """No CDN in front of the origin: nothing to purge."""

    def _send(self, request: PurgeRequest) -> None:
        pass


_DDL = """
CREATE TABLE IF NOT EXISTS cdn_purges (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL,
    reason TEXT NOT NULL, paths TEXT NOT NULL);
"""


class QueuedPurger(Purger):
    """Embedded: purge requests appended to ``cdn_purges`` in the embedded SQLite file, applied by the local edge
    (which reads :meth:`pending` and remembers the last id it applied)."""

    def __init__(self, db):
        self.db = db
        with db.transaction() as conn:
            conn.execute(_DDL.strip().rstrip(";"))

    def _send(self, request: PurgeRequest) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO cdn_purges (at, reason, paths) VALUES (?, ?, ?)",
                (request.at, request.reason, json.dumps(list(request.paths))),
            )

    def pending(self, after_id: int = 0) -> list[tuple[int, PurgeRequest]]:
        rows = (
            self.db.connect()
            .execute("SELECT id, at, reason, paths FROM cdn_purges WHERE id > ? ORDER BY id", (int(after_id),))
            .fetchall()
        )
        return [(i, PurgeRequest(tuple(json.loads(p)), r, at)) for i, at, r, p in rows]


def open_purger(config=None, cdn: str | None = None) -> Purger:
    """The purger for a :class:`stores.StoreConfig`: ``cdn`` "none" -> :class:`NullPurger`; otherwise the
    embedded backend queues (:class:`QueuedPurger`). The Cloud CDN backend is added with the gcp stores."""
    from stores import StoreConfig

    config = config or StoreConfig()
    if cdn == "none":
        return NullPurger()
    if config.backend == "embedded":
        from stores import embedded

        return QueuedPurger(embedded.Database(config.embedded_db))
    raise ValueError("the gcp backend's Cloud CDN purger is not configured (pass cdn='none' to run without a CDN)")
