"""Takedowns: tombstones of articles and stories that must not be served (legal or editorial removal).

A tombstone says "never show this again": ``kind`` ``article`` (an article id; ``newsroom takedown --url``
resolves a URL to the id of its cleaned form, ``url`` keeps what was asked) or ``story`` (a decimal story id),
with ``reason``, ``who`` and ``at`` (ms). Undoing a takedown deletes the tombstone; the audit trail
(stores/audit.py) keeps both actions.

Who reads them, and how cheaply:

- the origin (serving/state/watcher.py) reads :meth:`TakedownStore.generation` on every poll (one row / one SELECT:
  a counter every set and clear increments) and the whole set only when the counter moved, then filters its
  loaded pages at once;
- the editions stage (transforms/editions/overlays/takedowns.py) reads the set once per cycle, the same way, and omits
  what it names from the next snapshots;
- the backfill and the article stage skip tombstoned articles (transforms/stories, pipelines/backfill.py).

:class:`TakedownSet` is the immutable set readers hold, with the document filters every reader shares (pages,
pools, story coverage: the same rule in the origin and in the producer).

Backends behind one interface, like the other stores:

- :class:`EmbeddedTakedownStore`: tables ``takedowns`` and ``takedowns_generation`` in the embedded SQLite file.
- :class:`BigtableTakedownStore`: table ``takedowns``, row ``t#{kind}#{id}``, cell ``t:tombstone`` = the JSON
  record; row ``g`` cell ``t:generation`` = a 64-bit counter (ReadModifyWrite increment). Tombstones never age
  out (no GC rule): a takedown lasts until it is undone.
"""

from __future__ import annotations

import abc
import json
from dataclasses import asdict, dataclass, field

from stores.base import StoreError

KINDS = ("article", "story")


@dataclass(frozen=True)
class Tombstone:
    kind: str
    id: str
    reason: str
    who: str
    at: int  # ms since epoch
    url: str = ""  # the (cleaned) URL asked for, when the takedown named one

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown takedown kind {self.kind!r}; one of {', '.join(KINDS)}")
        if not self.id:
            raise ValueError("a takedown names an id")
        if self.kind == "story" and not self.id.isdigit():
            raise ValueError(f"a story id is decimal, not {self.id!r}")
        if not self.reason or not self.reason.strip():
            raise ValueError("a takedown needs a reason (--reason)")

    @property
    def target(self) -> str:
        return f"{self.kind}:{self.id}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Tombstone:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class TakedownSet:
    """The ids taken down, as readers hold them, and the filters of the documents that show them."""

    articles: frozenset = field(default_factory=frozenset)
    stories: frozenset = field(default_factory=frozenset)

    @classmethod
    def of(cls, tombstones) -> TakedownSet:
        tombstones = list(tombstones)
        return cls(
            frozenset(t.id for t in tombstones if t.kind == "article"),
            frozenset(t.id for t in tombstones if t.kind == "story"),
        )

    def __bool__(self) -> bool:
        return bool(self.articles or self.stories)

    def ids(self) -> frozenset:
        return frozenset({f"article:{a}" for a in self.articles} | {f"story:{s}" for s in self.stories})

    def _entry(self, entry: dict) -> dict | None:
        """A page or pool entry without its taken-down cards; None when the story goes (taken down, or no card
        left to represent it). A taken-down representative is replaced by the first supporting card left."""
        if str(entry.get("story_id")) in self.stories:
            return None
        supporting = [c for c in entry.get("supporting") or () if c.get("article_id") not in self.articles]
        rep = entry.get("representative")
        if rep is not None and rep.get("article_id") in self.articles:
            if not supporting:
                return None
            rep, supporting = supporting[0], supporting[1:]
        if rep is entry.get("representative") and len(supporting) == len(entry.get("supporting") or ()):
            return entry
        out = dict(entry, representative=rep)
        if "supporting" in entry:
            out["supporting"] = supporting
        return out

    def filter_page(self, doc: dict) -> dict:
        """An edition page (or a candidate pool) without what is taken down; ranks renumbered on a page."""
        if not self:
            return doc
        stories = [e for e in (self._entry(e) for e in doc["stories"]) if e is not None]
        if len(stories) == len(doc["stories"]) and all(a is b for a, b in zip(stories, doc["stories"], strict=True)):
            return doc
        if stories and "rank" in stories[0]:
            stories = [dict(e, rank=rank) for rank, e in enumerate(stories, start=1)]
        return dict(doc, stories=stories)

    def filter_story(self, doc: dict) -> dict | None:
        """A story coverage document without its taken-down articles; None when the story goes (taken down, or
        no article left)."""
        if str(doc.get("story_id")) in self.stories:
            return None
        if not self.articles:
            return doc
        articles = [a for a in doc["articles"] if a.get("article_id") not in self.articles]
        if not articles:
            return None
        return doc if len(articles) == len(doc["articles"]) else dict(doc, articles=articles)

    def filter(self, kind: str, doc: dict) -> dict | None:
        """The document of a snapshot ``kind`` (schemas/pages.py) as it may be served; None: not at all."""
        if kind in ("edition_page", "candidate_pool"):
            return self.filter_page(doc)
        if kind == "topic_page":  # a pre-built topic page left with no story is not served (the origin: 404)
            shown = self.filter_page(doc)
            if shown is not doc:
                if not shown["stories"]:
                    return None
                shown["story_count"] = max(1, doc["story_count"] - (len(doc["stories"]) - len(shown["stories"])))
            return shown
        if kind == "story_coverage":
            return self.filter_story(doc)
        if kind == "storyline" and self.stories:  # a taken-down story leaves the storyline's episodes
            episodes = [e for e in doc["episodes"] if e["story_id"] not in self.stories]
            return doc if len(episodes) == len(doc["episodes"]) else dict(doc, episodes=episodes)
        if kind == "storyline_index" and self.stories:  # an entry titled by a taken-down story is not listed
            entities = {e: [x for x in xs if x["story_id"] not in self.stories] for e, xs in doc["entities"].items()}
            if all(len(entities[e]) == len(xs) for e, xs in doc["entities"].items()):
                return doc
            return dict(doc, entities=entities)
        return doc


class TakedownStore(abc.ABC):
    """Every tombstone (see the module docstring)."""

    def set(self, tombstone: Tombstone) -> None:
        """Write ``tombstone`` (replacing one of the same kind and id), then move the generation."""
        self._put(tombstone)
        self._bump()

    def clear(self, kind: str, id_: str) -> Tombstone | None:
        """Delete one tombstone (an undo); returns it, None when there was none."""
        found = self.get(kind, id_)
        if found is not None:
            self._delete(kind, id_)
            self._bump()
        return found

    def taken_down(self) -> TakedownSet:
        return TakedownSet.of(self.all())

    @abc.abstractmethod
    def get(self, kind: str, id_: str) -> Tombstone | None: ...

    @abc.abstractmethod
    def all(self) -> list[Tombstone]:
        """Every tombstone (one scan), ordered by (kind, id)."""

    @abc.abstractmethod
    def generation(self) -> int:
        """A counter every set and clear moves: readers re-read :meth:`all` only when it changed (one read)."""

    @abc.abstractmethod
    def _put(self, tombstone: Tombstone) -> None: ...

    @abc.abstractmethod
    def _delete(self, kind: str, id_: str) -> None: ...

    @abc.abstractmethod
    def _bump(self) -> None: ...


_DDL = """
CREATE TABLE IF NOT EXISTS takedowns (kind TEXT NOT NULL, id TEXT NOT NULL, record TEXT NOT NULL,
    PRIMARY KEY (kind, id));
CREATE TABLE IF NOT EXISTS takedowns_generation (k INTEGER PRIMARY KEY CHECK (k = 0), n INTEGER NOT NULL);
"""


class EmbeddedTakedownStore(TakedownStore):
    def __init__(self, db):
        """``db``: a :class:`stores.embedded.Database`."""
        self.db = db
        self.db.connect().executescript(_DDL)

    def get(self, kind: str, id_: str) -> Tombstone | None:
        row = (
            self.db.connect().execute("SELECT record FROM takedowns WHERE kind = ? AND id = ?", (kind, id_)).fetchone()
        )
        return Tombstone.from_json(row[0]) if row else None

    def all(self) -> list[Tombstone]:
        rows = self.db.connect().execute("SELECT record FROM takedowns ORDER BY kind, id").fetchall()
        return [Tombstone.from_json(r[0]) for r in rows]

    def generation(self) -> int:
        row = self.db.connect().execute("SELECT n FROM takedowns_generation WHERE k = 0").fetchone()
        return int(row[0]) if row else 0

    def _put(self, tombstone: Tombstone) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO takedowns (kind, id, record) VALUES (?, ?, ?)",
                (tombstone.kind, tombstone.id, tombstone.to_json()),
            )

    def _delete(self, kind: str, id_: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM takedowns WHERE kind = ? AND id = ?", (kind, id_))

    def _bump(self) -> None:
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO takedowns_generation (k, n) VALUES (0, 1) ON CONFLICT(k) DO UPDATE SET n = n + 1")


FAMILY = "t"
COLUMN = b"tombstone"
GENERATION = b"generation"


class BigtableTakedownStore(TakedownStore):
    """The ``takedowns`` table of a Bigtable instance (honours BIGTABLE_EMULATOR_HOST through the client)."""

    def __init__(self, table):
        self.table = table

    def get(self, kind: str, id_: str) -> Tombstone | None:
        from google.cloud.bigtable import row_filters

        from schemas.tables import takedown_key

        try:
            row = self.table.read_row(takedown_key(kind, id_), filter_=row_filters.CellsColumnLimitFilter(1))
        except Exception as exc:  # grpc / google.api_core errors
            raise StoreError(f"takedowns: cannot read {kind}:{id_}: {exc}") from exc
        cells = row.cells.get(FAMILY, {}).get(COLUMN) if row is not None else None
        return Tombstone.from_json(cells[0].value) if cells else None

    def all(self) -> list[Tombstone]:
        from google.cloud.bigtable import row_filters

        out = []
        try:
            for row in self.table.read_rows(
                start_key=b"t#", end_key=b"t$", filter_=row_filters.CellsColumnLimitFilter(1)
            ):
                cells = row.cells.get(FAMILY, {}).get(COLUMN)
                if cells:
                    out.append(Tombstone.from_json(cells[0].value))
        except Exception as exc:
            raise StoreError(f"takedowns: cannot read the tombstones: {exc}") from exc
        return sorted(out, key=lambda t: (t.kind, t.id))

    def generation(self) -> int:
        from google.cloud.bigtable import row_filters

        from schemas.tables import TAKEDOWN_GENERATION_KEY

        try:
            row = self.table.read_row(TAKEDOWN_GENERATION_KEY, filter_=row_filters.CellsColumnLimitFilter(1))
        except Exception as exc:
            raise StoreError(f"takedowns: cannot read the generation: {exc}") from exc
        cells = row.cells.get(FAMILY, {}).get(GENERATION) if row is not None else None
        return int.from_bytes(cells[0].value, "big", signed=True) if cells else 0

    def _put(self, tombstone: Tombstone) -> None:
        from schemas.tables import takedown_key

        row = self.table.direct_row(takedown_key(tombstone.kind, tombstone.id))
        row.set_cell(FAMILY, COLUMN, tombstone.to_json().encode())
        try:
            row.commit()
        except Exception as exc:
            raise StoreError(f"takedowns: cannot write {tombstone.target}: {exc}") from exc

    def _delete(self, kind: str, id_: str) -> None:
        from schemas.tables import takedown_key

        row = self.table.direct_row(takedown_key(kind, id_))
        row.delete()
        try:
            row.commit()
        except Exception as exc:
            raise StoreError(f"takedowns: cannot delete {kind}:{id_}: {exc}") from exc

    def _bump(self) -> None:
        from schemas.tables import TAKEDOWN_GENERATION_KEY

        row = self.table.append_row(TAKEDOWN_GENERATION_KEY)
        row.increment_cell_value(FAMILY, GENERATION, 1)
        try:
            row.commit()
        except Exception as exc:
            raise StoreError(f"takedowns: cannot move the generation: {exc}") from exc


def open_takedown_store(config=None) -> TakedownStore:
    """The takedown store a :class:`stores.StoreConfig` describes (embedded by default)."""
    from stores import open_store

    return open_store("takedowns", config)
