"""CDN purges: ask the edge to drop its cached copies of pages that changed out of cycle (the three changes below).

A page that changes on the normal cycle needs no purge: its ``s-maxage`` (60 s, stories and topics 30 s) bounds
how long the edge serves the old copy. Three changes cannot wait for that: a takedown (an article a court or a
publisher asked us to remove), a rollback or a hold (an operator undoing a bad page) and Breaking (a story that
must lead now). Their producers name the *pointers* whose pages changed; :func:`public_paths` maps a pointer to
the URL paths the origin serves from it (API and web), and a :class:`Purger` asks the CDN to invalidate them.

Backends, chosen like the other stores by :func:`open_purger`:

- :class:`QueuedPurger` (embedded): appends purge requests to the ``cdn_purges`` table of the embedded SQLite
  file; the local edge (devtools/local_origin.py, nginx) applies them by deleting the cached files of those paths.
- Cloud CDN (gcp): ``urlMaps.invalidateCache`` on the origin's URL map by cache tag (:class:`CloudCdnPurger`).
- :class:`NullPurger`: no CDN in front (records nothing; the page TTLs alone bound staleness).

Paths are percent-encoded as a reader's request line carries them (:func:`segment`: a topic id's spaces, ``?``,
``#``, ``%`` and non-ASCII letters; a ``*`` in an id is encoded too, so only a trailing ``/*`` is a wildcard) and
query-less: Cloud CDN invalidation of a path covers every query string of it, and the local edge
deletes every cached variant of the path. Purges are bounded by a rate (:class:`TokenBucket`, one token per path:
embedded, a bucket row in the SQLite file shared by every producer; gcp, a bucket per process, since Cloud CDN
itself rate-limits invalidations per project and the producers are few: the stories job's workers and the
operators' commands); a request over the rate widens to its prefixes (:func:`widen`: ``/v1/editions/{e}/*`` and
``/e/{e}/*``, or ``/v1/stories/*``...) instead of being dropped, so nothing is lost, and repeated paths within one
request are sent once. A widened request is sent even when the bucket is empty (it takes what is left): a purge
is never delayed or dropped, only coarsened.

Cache tags, the fastest invalidation Cloud CDN offers ("Cache invalidation overview",
https://cloud.google.com/cdn/docs/cache-invalidation-overview): an invalidation by cache tag takes effect in about
10 s, up to 500 requests a minute and 10 tags a request; one by path or prefix takes one to three minutes and at
most one a minute, longer than the 60 s TTL a Breaking purge is meant to beat. So the origin sends every shared
answer with ``Cache-Tag: {cache_tag(path)}`` (serving/http/conventions.py, the fast path too), one tag per query-less path, and
a purge of exact paths invalidates their tags (:attr:`PurgeRequest.tags`): exactly the pages asked for, every query
string of them, in seconds. A widened request (prefixes) has no tags and goes by path. Cache tags are in Preview:
a project whose API refuses them (HTTP 400) gets the same request by path, logged.

Options (``open_purger``'s arguments, else ``StoreConfig.extra``, else the environment):
    cdn            none | queue | gcp (default: queue on the embedded backend, gcp on the gcp backend)
    url_map        the origin's URL map name (gcp; terraform output ``url_map``) -- NEWSROOM_CDN_URL_MAP
    rate, burst    paths a second and bucket size (default 1/s, 30) -- NEWSROOM_CDN_PURGE_RATE / _BURST
"""

from __future__ import annotations

import abc
import functools
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, unquote

log = logging.getLogger(__name__)
TAGS_PER_REQUEST = 10  # Cloud CDN's limit of cache tags in one invalidation request

# What a path segment keeps as is: RFC 3986 pchar (unreserved, sub-delims, ":" and "@"), except "*", which marks a
# wildcard purge. Everything else (space, "?", "#", "%", "/", non-ASCII) is percent-encoded from its UTF-8 bytes.
_SEGMENT_SAFE = "!$&'()+,;=:@"


def segment(text: str) -> str:
    """One path segment (an edition, section, story or topic id) percent-encoded as a browser sends it."""
    return quote(str(text), safe=_SEGMENT_SAFE)


def public_paths(pointer: str) -> list[str]:
    """The URL paths (no query string) whose responses are built from ``pointer``'s snapshot, percent-encoded (the
    form of a request line, so a topic id holding ``?``, ``#`` or ``%`` is one path, not a path and a query).

    ``{edition}/{section}`` -> the section's API and web pages (``top`` is also the edition's web front page);
    ``story/{id}`` -> the story's API and web pages; ``topic/{edition}/{id}`` -> the topic's API and web pages; ``pool/{edition}``
    -> nothing (For you is personal and never cached at the edge); ``aliases`` -> nothing (aliases redirect
    through story pages, purged with their stories)."""
    if pointer.startswith("pool/") or pointer == "aliases":
        return []
    if pointer.startswith("story/"):
        sid = segment(pointer.split("/", 1)[1])
        return [f"/v1/stories/{sid}", f"/stories/{sid}"]
    if pointer.startswith("topic/"):
        _, edition, topic = pointer.split("/", 2)
        edition, topic = segment(edition), segment(topic)
        return [f"/v1/topics/{topic}", f"/e/{edition}/topics/{topic}"]
    edition, _, section = pointer.partition("/")
    if not edition or not section:
        raise ValueError(f"no public page for pointer {pointer!r}")
    edition, section = segment(edition), segment(section)
    paths = [f"/v1/editions/{edition}/sections/{section}", f"/e/{edition}/{section}"]
    if section == "top":
        paths.append(f"/e/{edition}/")
    return paths


@functools.lru_cache(maxsize=8192)
def cache_tag(path: str) -> str:
    """The cache tag of the shared answers of a query-less ``path`` (percent-encoded or not: the decoded path is
    hashed, so the origin's decoded request path and a purge's encoded one agree). Opaque on purpose: ``n`` and 24
    hex digits are valid in any tag syntax, whatever letters an id holds, and distinct paths never share a tag."""
    return "n" + hashlib.sha256(unquote(path).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def widen(paths: Iterable[str]) -> list[str]:
    """The prefixes covering ``paths`` (order kept, deduplicated): an edition page widens to its edition
    (``/v1/editions/{e}/*``, ``/e/{e}/*``), a story or topic page to every story or topic page."""
    out: dict[str, None] = {}
    for path in paths:
        parts = path.split("/")
        if path.startswith("/v1/editions/") and len(parts) > 3:
            out[f"/v1/editions/{parts[3]}/*"] = None
        elif path.startswith("/e/") and len(parts) > 2:
            out[f"/e/{parts[2]}/*"] = None
        elif path.startswith("/v1/") and len(parts) > 2:
            out[f"/v1/{parts[2]}/*"] = None
        else:
            out[f"/{parts[1]}/*" if len(parts) > 2 else path] = None
    return list(out)


class TokenBucket:
    """One token per purged path, ``rate`` a second up to ``burst``. In process (``db`` None; a lock shares it
    between threads) or in the ``rate_buckets`` table of the embedded SQLite file (shared by every process)."""

    def __init__(self, rate: float = 1.0, burst: float = 30.0, db=None, name: str = "cdn_purges", clock=time.time):
        self.rate, self.burst, self.db, self.name, self.clock = float(rate), float(burst), db, name, clock
        self._state: dict | None = None
        self._lock = threading.Lock()

    def take(self, n: int, force: bool = False) -> bool:
        """``n`` tokens (``force``: empty the bucket when short; the purge then widens). The step is
        :func:`stores.base.bucket_step`, the SQLite one :func:`stores.embedded.take_tokens`, as for the other
        rate limits of the project."""
        from stores.base import bucket_step

        now_ms = int(self.clock() * 1000)
        if self.db is None:
            with self._lock:
                self._state, ok, _ = bucket_step(self._state, self.rate, self.burst, now_ms, n, force)
            return ok
        from stores.embedded import take_tokens

        return take_tokens(self.db, self.name, self.rate, self.burst, now_ms, n, force)[0]


@dataclass(frozen=True)
class PurgeRequest:
    paths: tuple[str, ...]
    reason: str
    at: int  # ms since epoch
    widened: bool = False  # over the rate: the paths are the prefixes of the ones asked for
    tags: tuple[str, ...] = ()  # the cache tags of exact paths (module docstring); empty when widened


class Purger(abc.ABC):
    """Invalidate cached copies of URL paths at the edge, at most ``bucket``'s rate (None: unlimited)."""

    bucket: TokenBucket | None = None

    def purge_pointers(self, pointers: Iterable[str], reason: str) -> PurgeRequest | None:
        """Purge every public path of ``pointers`` (see :func:`public_paths`). None when there is nothing to purge."""
        paths: list[str] = []
        for p in pointers:
            paths.extend(public_paths(p))
        return self.purge(paths, reason)

    def purge(self, paths: Iterable[str], reason: str) -> PurgeRequest | None:
        """Ask the edge to drop ``paths`` (deduplicated, order kept). Returns the request sent, None if empty.
        Over the rate, the request is widened (:func:`widen`) and sent anyway."""
        unique = tuple(dict.fromkeys(p for p in paths if p))
        for p in unique:
            if not p.startswith("/") or "?" in p or "#" in p or not p.isascii() or not p.isprintable() or " " in p:
                raise ValueError(f"purge path must be an absolute, percent-encoded path without query: {p!r}")
        if not unique:
            return None
        if not reason:
            raise ValueError("a purge needs a reason (it is logged)")
        widened = False
        if self.bucket is not None and not self.bucket.take(len(unique)):
            wide = tuple(widen(unique))
            self.bucket.take(len(wide), force=True)
            unique, widened = wide, True
        tags = () if widened else tuple(cache_tag(p) for p in unique)
        request = PurgeRequest(unique, reason, int(time.time() * 1000), widened, tags)
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
    (which reads :meth:`pending` and remembers the last id it applied). ``bucket``: the rate limit (None: none)."""

    def __init__(self, db, bucket: TokenBucket | None = None):
        self.db = db
        self.bucket = bucket
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


COMPUTE_ENDPOINT = "https://compute.googleapis.com"


class CloudCdnPurger(Purger):
    """gcp: ``urlMaps.invalidateCache`` (compute v1 REST) on the origin's URL map: by cache tag (``cacheTags``, 10 a
    call, in effect in ~10 s) when the request has tags, else (widened, or the API refused tags with HTTP 400) one
    call per path (``/*`` wildcards allowed; minutes). Returns once Compute accepted each invalidation (a global
    operation, not waited for). Needs ``compute.urlMaps.invalidateCache`` on the URL map (terraform/modules/iam:
    the stories job's account and the operators). ``session``: an authorised ``requests``-like session (default:
    google.auth.transport.requests.AuthorizedSession with ADC)."""

    def __init__(self, project: str, url_map: str, bucket=None, session=None, endpoint: str = COMPUTE_ENDPOINT):
        if not url_map:
            raise ValueError("the Cloud CDN purger needs the URL map name (url_map / NEWSROOM_CDN_URL_MAP)")
        self.project, self.url_map, self.bucket, self.endpoint = project, url_map, bucket, endpoint.rstrip("/")
        self._session = session

    @property
    def session(self):
        if self._session is None:
            import google.auth
            from google.auth.transport.requests import AuthorizedSession

            creds, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
            self._session = AuthorizedSession(creds)
        return self._session

    def _post(self, body: dict, what: str, refusable: bool = False) -> bool:
        """One invalidateCache call; False when ``refusable`` and Compute answered 400, else raises on refusal."""
        from stores.base import StoreError

        url = f"{self.endpoint}/compute/v1/projects/{self.project}/global/urlMaps/{self.url_map}/invalidateCache"
        r = self.session.post(url, json=body, timeout=30)
        if refusable and r.status_code == 400:
            log.warning("invalidateCache by cache tag refused on %s (%s); purging by path", self.url_map, r.text[:200])
            return False
        if r.status_code >= 300:
            raise StoreError(f"invalidateCache {what} on {self.url_map}: HTTP {r.status_code} {r.text[:300]}")
        return True

    def _send(self, request: PurgeRequest) -> None:
        tags = list(request.tags)
        for i in range(0, len(tags), TAGS_PER_REQUEST):
            chunk = tags[i : i + TAGS_PER_REQUEST]
            if not self._post({"cacheTags": chunk}, f"tags {','.join(chunk)}", refusable=i == 0):
                break  # the project takes no cache tags: every path by path below
        else:
            if tags:
                return
        for path in request.paths:
            # percent-encoded already (public_paths): the request path a reader sends, which Cloud CDN invalidates
            self._post({"path": path}, path)


def _option(config, name: str, env: str, given=None, default=None):
    if given is not None:
        return given
    extra = getattr(config, "extra", None) or {}
    return extra.get(name, os.environ.get(env, default))


def open_purger(config=None, cdn: str | None = None, url_map: str | None = None, session=None) -> Purger:
    """The purger for a :class:`stores.StoreConfig`: ``cdn`` "none" -> :class:`NullPurger`; "queue" (default on
    the embedded backend) -> :class:`QueuedPurger` with a bucket in the SQLite file; "gcp" (default on the gcp
    backend) -> :class:`CloudCdnPurger` on ``url_map`` with a bucket per process. See the module docstring for
    the options."""
    from stores import StoreConfig

    config = config or StoreConfig()
    cdn = _option(config, "cdn", "NEWSROOM_CDN", cdn) or ("queue" if config.backend == "embedded" else "gcp")
    rate = float(_option(config, "cdn_purge_rate", "NEWSROOM_CDN_PURGE_RATE", default=1.0))
    burst = float(_option(config, "cdn_purge_burst", "NEWSROOM_CDN_PURGE_BURST", default=30.0))
    if cdn == "none":
        return NullPurger()
    if cdn == "queue":
        if config.backend != "embedded":
            raise ValueError("cdn 'queue' needs the embedded backend (the local edge reads the SQLite file)")
        from stores import embedded

        db = embedded.Database(config.embedded_db)
        return QueuedPurger(db, TokenBucket(rate, burst, db=db))
    if cdn == "gcp":
        url_map = _option(config, "cdn_url_map", "NEWSROOM_CDN_URL_MAP", url_map)
        project = config.project or os.environ.get("GOOGLE_CLOUD_PROJECT") or ""
        if not project:
            raise ValueError("the Cloud CDN purger needs --project or GOOGLE_CLOUD_PROJECT")
        return CloudCdnPurger(project, url_map, TokenBucket(rate, burst), session=session)
    raise ValueError(f"cdn must be none, queue or gcp, got {cdn!r}")
