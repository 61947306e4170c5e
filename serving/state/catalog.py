"""The origin's in-memory catalog: every shared page's current version, prepared for serving.

Reads: snapshot objects (bytes) handed over by :mod:`serving.state.watcher`. Writes nothing. Built once per pointer move,
then never mutated: the watcher builds a new :class:`Catalog` and swaps one reference
(:class:`CatalogHolder.current`), so a request reads one consistent catalog with one attribute load and no lock.

What "prepared" means, per kind (object names and pointers: schemas/pages.py):

- edition pages: the page re-serialised once with orjson (stories last), each story entry as its own bytes, so the
  body for ``?limit=k`` is ``head + b",".join(entries[:k]) + tail`` (a join of k ready slices, a few microseconds);
  the common limits and the full page are pre-joined. The strong ETag is ``"{sha256(full)[:20]}-{k}"``: bytes are a
  function of (version content, k), so the tag changes exactly when the bytes do.
- story coverage: cards sorted once by (published_at desc, article_id asc), each card pre-serialised, with the sort
  keys in a list for ``bisect`` (keyset cursor), the publisher count, and the first page pre-rendered.
- candidate pools: numpy arrays for For you (unit vectors, normalised scores, index lists per topic / source /
  place / entity / representative publisher) and each candidate's item bytes (see :mod:`serving.personal.ranking`).
- aliases: merged id -> survivor, chains resolved at load so every answer is one hop.
"""

from __future__ import annotations

import bisect
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType

import numpy as np
import orjson

COMMON_LIMITS = (5, 10, 20, 30, 50)
STORY_PAGE_SIZE = 20
VECTOR_DIM = 64


def _ms(ts: str) -> int:
    """RFC 3339 text -> ms since epoch (UTC). A time without zone is taken as UTC (the schemas require a zone)."""
    dt = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def id_hash(story_id: str) -> int:
    """A story id as 64 bits (BLAKE2b): For you cursors carry these for served stories a newer pool lacks."""
    return int.from_bytes(hashlib.blake2b(story_id.encode("utf-8"), digest_size=8).digest(), "big")


def id_hashes(story_ids) -> np.ndarray:
    return np.fromiter((id_hash(s) for s in story_ids), dtype=np.uint64, count=len(story_ids))


def place_entity(place: str) -> str:
    """The alias-table entity id of a followed place or a place topic: ``pune`` and ``place:pune`` both name the
    entity ``place:pune`` (aliases.tsv spells place ids so), next to the region code ``pune`` of ``places``."""
    return place if place.startswith("place:") else "place:" + place


def _etag_base(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


@dataclass(frozen=True, eq=False)
class PreparedPage:
    edition: str
    section: str
    version: int
    cycle: str
    head: bytes
    entries: tuple[bytes, ...]
    tail: bytes
    etag_base: str
    joined: Mapping[int, bytes]  # k -> body, for COMMON_LIMITS and len(entries)
    story_ids: tuple[str, ...] = ()  # the stories the page links to (they stay in memory, see serving/state/watcher.py)
    breaking: bool = False  # a top page showing a Breaking story: served with the short Breaking TTL

    @classmethod
    def build(cls, doc: dict) -> PreparedPage:
        meta = {k: v for k, v in doc.items() if k != "stories"}
        head = orjson.dumps(meta)[:-1] + b',"stories":['
        entries = tuple(orjson.dumps(s) for s in doc["stories"])
        tail = b"]}"
        full = head + b",".join(entries) + tail
        n = len(entries)
        joined = {n: full}
        for k in COMMON_LIMITS:
            if k < n:
                joined[k] = head + b",".join(entries[:k]) + tail
        return cls(
            edition=doc["edition"],
            section=doc["section"],
            version=doc["version"],
            cycle=doc["cycle"],
            head=head,
            entries=entries,
            tail=tail,
            etag_base=_etag_base(full),
            joined=MappingProxyType(joined),
            story_ids=tuple(s["story_id"] for s in doc["stories"]),
            breaking=doc["section"] == "top" and any("breaking" in (s.get("labels") or ()) for s in doc["stories"]),
        )

    def body(self, limit: int | None) -> tuple[bytes, str]:
        n = len(self.entries)
        k = n if limit is None or limit >= n else limit
        data = self.joined.get(k)
        if data is None:
            data = self.head + b",".join(self.entries[:k]) + self.tail
        return data, f'"{self.etag_base}-{k}"'


@dataclass(frozen=True, eq=False)
class PreparedStory:
    story_id: str
    version: int
    language: str
    title: str
    links: tuple[str, ...]
    keys: tuple[tuple[int, str], ...]  # (-published_ms, article_id), ascending = served order
    cards: tuple[bytes, ...]
    publisher_count: int
    etag_base: str
    updated_ms: int = 0  # the document's updated_at (else its newest article), ms since epoch: 0 when unknown
    storyline_id: str | None = None  # its storyline, when that has a page (GET /v1/storylines/{language}/{id})

    @classmethod
    def build(cls, doc: dict) -> PreparedStory:
        arts = sorted(doc["articles"], key=lambda a: (-_ms(a["published_at"]), a["article_id"]))
        keys = tuple((-_ms(a["published_at"]), a["article_id"]) for a in arts)
        return cls(
            story_id=doc["story_id"],
            version=doc["version"],
            language=doc["language"],
            title=doc["title"],
            links=tuple(doc.get("links") or ()),
            keys=keys,
            cards=tuple(orjson.dumps(a) for a in arts),
            publisher_count=len({a["publisher_id"] for a in arts}),
            etag_base=_etag_base(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)),
            updated_ms=_updated_ms(doc, keys),
            storyline_id=doc.get("storyline_id"),
        )

    def start_after(self, published_ms: int, article_id: str) -> int:
        """Index of the first article strictly after the keyset position (published_ms, article_id)."""
        return bisect.bisect_right(self.keys, (-published_ms, article_id))

    def render(self, start: int, limit: int, edition: str | None, cursor: str | None, storyline: str | None) -> bytes:
        """One page of the story's articles; ``storyline``: the storyline it links (serving/api/storylines.py
        ``linked_storyline``: one of more than one episode), else None and no ``storyline_id``."""
        head = {
            "schema": "newsroom.story_page/v1",
            "story_id": self.story_id,
            "story_version": self.version,
            "language": self.language,
            "title": self.title,
            "edition": edition,
            "article_count": len(self.cards),
            "publisher_count": self.publisher_count,
            "links": list(self.links),
        }
        if storyline is not None:
            head["storyline_id"] = storyline
        return b"".join(
            (
                orjson.dumps(head)[:-1],
                b',"articles":[',
                b",".join(self.cards[start : start + limit]),
                b'],"next_cursor":',
                orjson.dumps(cursor),
                b"}",
            )
        )


@dataclass(frozen=True, eq=False)
class PreparedStoryline:
    """A storyline document ready to page: episodes newest first, keyset (-first_ms, -story id) ascending."""

    storyline_id: str
    language: str
    version: int
    title: str
    updated_at: str
    merged_into: str | None
    keys: tuple[tuple[int, int], ...]
    episodes: tuple[bytes, ...]
    etag_base: str

    @classmethod
    def build(cls, doc: dict) -> PreparedStoryline:
        eps = sorted(doc["episodes"], key=lambda e: (-_ms(e["first_at"]), -int(e["story_id"])))
        return cls(
            storyline_id=doc["storyline_id"],
            language=doc["language"],
            version=doc["version"],
            title=doc["title"],
            updated_at=doc["updated_at"],
            merged_into=doc.get("merged_into"),
            keys=tuple((-_ms(e["first_at"]), -int(e["story_id"])) for e in eps),
            episodes=tuple(orjson.dumps(e) for e in eps),
            etag_base=_etag_base(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)),
        )

    def start_after(self, first_ms: int, story_id: int) -> int:
        """Index of the first episode strictly after the keyset position (first_ms, story_id)."""
        return bisect.bisect_right(self.keys, (-first_ms, -story_id))

    def render(self, start: int, limit: int, cursor: str | None) -> bytes:
        head = {
            "schema": "newsroom.storyline_page/v1",
            "storyline_id": self.storyline_id,
            "storyline_version": self.version,
            "language": self.language,
            "title": self.title,
            "updated_at": self.updated_at,
            "episode_count": len(self.episodes),
        }
        body = b",".join(self.episodes[start : start + limit])
        return orjson.dumps(head)[:-1] + b',"episodes":[' + body + b'],"next_cursor":' + orjson.dumps(cursor) + b"}"


def _updated_ms(doc: dict, keys) -> int:
    try:
        return _ms(doc["updated_at"])
    except (KeyError, TypeError, ValueError):
        return -keys[0][0] if keys else 0


@dataclass(frozen=True, eq=False)
class StoryEntry:
    """A story's current version plus recently superseded ones kept for cursors minted against them."""

    current: PreparedStory
    previous: tuple[tuple[PreparedStory, float], ...] = ()  # (version, monotonic time it was superseded)

    def version(self, v: int) -> PreparedStory | None:
        if v == self.current.version:
            return self.current
        for story, _ in self.previous:
            if story.version == v:
                return story
        return None


@dataclass(frozen=True, eq=False)
class PreparedPool:
    edition: str
    version: int
    cycle: str
    story_ids: tuple[str, ...]
    index: Mapping[str, int]
    vectors: np.ndarray  # (n, 64) float32, unit rows (zero rows for candidates without a vector)
    base: np.ndarray  # (n,) float32 in [0, 1]: the edition's own ranking score, min-max normalised
    top: np.ndarray  # candidate indices by descending base score
    by_topic: Mapping[str, np.ndarray]
    by_source: Mapping[str, np.ndarray]  # any publisher covering the story
    by_place: Mapping[str, np.ndarray]
    by_entity: Mapping[str, np.ndarray]  # the story's main entity ids (alias table ids)
    by_rep_publisher: Mapping[str, np.ndarray]  # publisher of the representative card (what the reader sees)
    topics: tuple[tuple[str, ...], ...]
    sources: tuple[tuple[str, ...], ...]
    places: tuple[tuple[str, ...], ...]
    entities: tuple[tuple[str, ...], ...]
    rep_publisher: tuple[str, ...]
    item_bytes: tuple[bytes, ...]  # '{"story_id":..,"section":..,"labels":..,"representative":{..}' (no closing brace)
    recency: np.ndarray  # candidate indices, newest representative first (ties: story id): the degraded feed
    id_hashes: np.ndarray  # (n,) uint64: serving.personal.feed.id_hash of each story id (For you cursors)
    # what the items say, hashed: a pool re-filtered after a takedown keeps its version but not its fingerprint
    # (caches of rendered pool pages key on it, serving/api/topics.py)
    fingerprint: str = ""
    topic_pages: frozenset[str] = (
        frozenset()
    )  # topic ids the editions stage pre-built this cycle (serving/api/topics.py)

    @classmethod
    def build(cls, doc: dict) -> PreparedPool:
        stories = doc["stories"]
        n = len(stories)
        vec = np.zeros((n, VECTOR_DIM), dtype=np.float32)
        for i, s in enumerate(stories):
            v = s.get("vector")
            if v:
                a = np.asarray(v[:VECTOR_DIM], dtype=np.float32)
                norm = float(np.linalg.norm(a))
                if norm > 0:
                    vec[i, : len(a)] = a / norm
        scores = np.asarray([float(s["score"]) for s in stories], dtype=np.float32)
        if n and float(scores.max()) > float(scores.min()):
            base = (scores - scores.min()) / (scores.max() - scores.min())
        else:
            base = np.ones(n, dtype=np.float32)

        def index_by(getter) -> Mapping[str, np.ndarray]:
            out: dict[str, list[int]] = {}
            for i, s in enumerate(stories):
                for key in set(getter(s)):
                    out.setdefault(key, []).append(i)
            return MappingProxyType({k: np.asarray(v, dtype=np.intp) for k, v in out.items()})

        def rep_pub(s):
            return s["representative"]["publisher_id"]

        items = []
        for s in stories:
            item = {
                "story_id": s["story_id"],
                "section": s["section"],
                "labels": s.get("labels") or [],
                "representative": s["representative"],
            }
            items.append(orjson.dumps(item)[:-1])
        return cls(
            edition=doc["edition"],
            version=doc["version"],
            cycle=doc["cycle"],
            story_ids=tuple(s["story_id"] for s in stories),
            index=MappingProxyType({s["story_id"]: i for i, s in enumerate(stories)}),
            vectors=vec,
            base=base.astype(np.float32),
            top=np.argsort(-base, kind="stable"),
            by_topic=index_by(lambda s: s.get("topics") or ()),
            by_source=index_by(lambda s: list(s.get("publishers") or ()) + [rep_pub(s)]),
            by_place=index_by(lambda s: s.get("places") or ()),
            by_entity=index_by(lambda s: s.get("entities") or ()),
            by_rep_publisher=index_by(lambda s: [rep_pub(s)]),
            topics=tuple(tuple(s.get("topics") or ()) for s in stories),
            sources=tuple(tuple(dict.fromkeys(list(s.get("publishers") or ()) + [rep_pub(s)])) for s in stories),
            places=tuple(tuple(s.get("places") or ()) for s in stories),
            entities=tuple(tuple(s.get("entities") or ()) for s in stories),
            rep_publisher=tuple(rep_pub(s) for s in stories),
            item_bytes=tuple(items),
            recency=np.asarray(
                sorted(range(n), key=lambda i: (-_ms_or_zero(stories[i]["representative"]), stories[i]["story_id"])),
                dtype=np.intp,
            ),
            id_hashes=id_hashes([s["story_id"] for s in stories]),
            fingerprint=hashlib.blake2b(b"\x00".join(items), digest_size=12).hexdigest(),
            topic_pages=frozenset(doc.get("topic_pages") or ()),
        )


@dataclass(frozen=True, eq=False)
class PreparedTopic:
    """A topic page pre-built by the editions stage (transforms/editions/overlays/topics.py), served without its snapshot
    version: ``head`` is the page's fields in the order the origin's own render writes them (serving/api/topics.py),
    ``items`` each story item's bytes without its closing brace (as :attr:`PreparedPool.item_bytes`)."""

    edition: str
    topic: str
    version: int
    pool_version: int
    head: dict
    items: tuple[bytes, ...]

    @classmethod
    def build(cls, doc: dict) -> PreparedTopic:
        from transforms.articles.entities import topic_name

        keys = ("schema", "topic", "kind", "value", "name", "edition", "pool_version", "cycle", "story_count")
        if "name" not in doc:  # a page pre-built before topic pages had names: the name the origin would write
            doc = dict(doc, name=topic_name(doc["topic"], doc["edition"].partition("-")[2] or None))
        items = tuple(
            orjson.dumps(
                {
                    "story_id": s["story_id"],
                    "section": s["section"],
                    "labels": s.get("labels") or [],
                    "representative": s["representative"],
                }
            )[:-1]
            for s in doc["stories"]
        )
        return cls(doc["edition"], doc["topic"], doc["version"], doc["pool_version"], {k: doc[k] for k in keys}, items)


def _ms_or_zero(card: dict) -> int:
    try:
        return _ms(card.get("published_at") or "")
    except (TypeError, ValueError):
        return 0


def _resolve_aliases(aliases: Mapping[str, str]) -> dict[str, str]:
    """Follow chains (the writer resolves them, but the origin must answer in one hop whatever it is given)."""
    out = {}
    for src in aliases:
        seen = {src}
        dst = aliases[src]
        while dst in aliases and dst not in seen:
            seen.add(dst)
            dst = aliases[dst]
        if dst != src:
            out[src] = dst
    return out


@dataclass(frozen=True, eq=False)
class EditionInfo:
    """Pre-serialised shared documents of one edition: ``body``/``etag`` its version document, ``doc_body``/
    ``doc_etag`` its discovery document (``GET /v1/editions/{edition}``)."""

    body: bytes
    etag: str
    doc_body: bytes = b""
    doc_etag: str = ""


@dataclass(frozen=True, eq=False)
class Document:
    """One pre-serialised shared document and its strong ETag."""

    body: bytes
    etag: str


EMPTY_INDEX = Document(body=b'{"editions":[]}', etag=f'"{_etag_base(b"{}")}"')


@dataclass(frozen=True, eq=False)
class Catalog:
    """One immutable view of everything the origin serves. ``loaded`` maps pointer name -> version held."""

    pages: Mapping[tuple[str, str], PreparedPage] = field(default_factory=dict)
    pools: Mapping[str, PreparedPool] = field(default_factory=dict)
    stories: Mapping[str, StoryEntry] = field(default_factory=dict)
    topics: Mapping[tuple[str, str], PreparedTopic] = field(default_factory=dict)  # (edition, topic id) -> page
    aliases: Mapping[str, str] = field(default_factory=dict)
    aliases_version: int | None = None
    editions: Mapping[str, EditionInfo] = field(default_factory=dict)
    index: Document = EMPTY_INDEX  # GET /v1/editions: every loaded edition's discovery document
    loaded: Mapping[str, int] = field(default_factory=dict)
    built_at: float = 0.0

    @property
    def ready(self) -> bool:
        return bool(self.pages)


def _section_order(section: str) -> tuple[int, str]:
    return (section != "top", section)  # "top" first, then by name


def edition_infos(pages: Mapping[tuple[str, str], PreparedPage], pools: Mapping[str, PreparedPool]):
    """The tiny per-edition version documents (``GET /v1/editions/{edition}/version``) and the discovery documents
    (``GET /v1/editions/{edition}``: sections with versions and URLs, pool version, cycle)."""
    by_edition: dict[str, dict] = {}
    for (edition, section), page in pages.items():
        e = by_edition.setdefault(edition, {"sections": {}, "cycle": page.cycle})
        e["sections"][section] = page.version
        if _ms(page.cycle) > _ms(e["cycle"]):
            e["cycle"] = page.cycle
    out = {}
    for edition, e in by_edition.items():
        pool_version = pools[edition].version if edition in pools else None
        doc = {
            "edition": edition,
            "cycle": e["cycle"],
            "sections": dict(sorted(e["sections"].items())),
            "pool_version": pool_version,
        }
        body = orjson.dumps(doc)
        discovery = orjson.dumps(
            {
                "edition": edition,
                "cycle": e["cycle"],
                "pool_version": pool_version,
                "version_url": f"/v1/editions/{edition}/version",
                "sections": [
                    {"section": s, "version": v, "url": f"/v1/editions/{edition}/sections/{s}"}
                    for s, v in sorted(e["sections"].items(), key=lambda kv: _section_order(kv[0]))
                ],
            }
        )
        out[edition] = EditionInfo(
            body=body, etag=f'"{_etag_base(body)}"', doc_body=discovery, doc_etag=f'"{_etag_base(discovery)}"'
        )
    return out


def editions_index(infos: Mapping[str, EditionInfo]) -> Document:
    """``GET /v1/editions``: the discovery documents of every loaded edition, by edition id."""
    body = b'{"editions":[' + b",".join(infos[e].doc_body for e in sorted(infos)) + b"]}"
    return Document(body=body, etag=f'"{_etag_base(body)}"')


class StoryCache:
    """A bounded LRU of story entries loaded on demand (stories the catalog no longer holds in memory, see
    :mod:`serving.state.watcher`), keyed by (story id, version): a moved pointer misses and loads the new version. Shared
    by request threads; the loader runs outside the lock (two threads may load the same story once each)."""

    def __init__(self, capacity: int):
        self.capacity = max(0, int(capacity))
        self._entries: OrderedDict[tuple[str, int], StoryEntry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.loads = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, story_id: str, version: int, load) -> StoryEntry | None:
        """The entry of ``(story_id, version)``, from the cache or ``load()`` (None: nothing to serve, not cached)."""
        key = (story_id, version)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry
        entry = load()
        if entry is None or not self.capacity:
            return entry
        with self._lock:
            self.loads += 1
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return entry


class CatalogHolder:
    """The one mutable thing: a reference to the current Catalog, replaced whole by the watcher."""

    def __init__(self):
        self.current: Catalog = Catalog()
        self.swap_lock = threading.Lock()  # serialises writers (the watcher; tests); readers never take it
        self.last_success: float | None = None  # monotonic time of the last poll that reached the stores
        self.last_error: str | None = None
        self.polls = 0
        self.failures = 0
        self.rejected = 0  # snapshots the watcher refused (newsroom.origin.snapshots_rejected)


def prepare(kind: str, doc: dict):
    """The prepared form of a validated snapshot document."""
    if kind == "edition_page":
        return PreparedPage.build(doc)
    if kind == "story_coverage":
        return PreparedStory.build(doc)
    if kind == "candidate_pool":
        return PreparedPool.build(doc)
    if kind == "aliases":
        return _resolve_aliases(doc["aliases"])
    if kind == "topic_page":
        return PreparedTopic.build(doc)
    if kind == "storyline":
        return PreparedStoryline.build(doc)
    if kind == "storyline_index":
        return doc["entities"]
    raise ValueError(kind)
