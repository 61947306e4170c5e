"""Storyline pages: every episode of one storyline in one language, the archive a reader walks back through.

Who writes what. The ranker (:class:`~transforms.editions.ranker.rank.EditionRanker`) folds StorylineChange events into
its book's :class:`~transforms.editions.book.storylines.StorylineMap`; in every cycle that builds documents,
:func:`storyline_items` makes one ``storyline`` snapshot item per storyline that changed: its membership changed
(a story joined, left, a merge or a split), or one of its stories' coverage document was emitted this cycle (new
articles: new counts, maybe a new title). The item holds the episodes the ranker knows (the stories of the
storyline in its book) and what the archive must forget or take over:

- ``left``: stories that left the storyline since the last cycle (moved by a SPLIT or MERGE, absorbed by a story
  MERGE, taken down);
- ``sources``: ``[source storyline, story ids or None = all]`` whose archived episodes move here (a MERGE takes
  all of the absorbed storyline's, a SPLIT the ones it moved).

The ranker's book holds only live stories (its event log is compacted to them), so it cannot list an episode that
left the live set weeks ago. The snapshot store can: :class:`~transforms.editions.publish.snapshots.SnapshotPublisher`
completes each item with :func:`merged_document`, the live version's episodes (without ``left``) plus the
sources' plus the ranker's (which win: they are newer). So version n is version n-1 plus what changed, and a
storyline page lists its stories "long out of the live set" for as long as the object store keeps objects, with no
state in the ranker. Cost per cycle: O(stories of the changed storylines), never a pass over all storylines, and
the editions of a language share each item and its episodes' coverage documents (``SHARED_ITEMS``).

An absorbed storyline (MERGE) gets a last version with ``merged_into`` (the survivor) and its episodes kept, so
the survivor takes them over whichever of the two is published first; the origin answers 301 for it.

Every storyline gets a document, a one-story one too: when a second story joins weeks later the first has left
the ranker's book, and this document is the only place its episode is kept. A story page links its storyline only
once it has more than one episode (:meth:`StorylineMap.has_page`). Retirement: the pointer of a one-episode
storyline is retired :data:`RETIRE_SINGLE_MS` after its last version (:func:`expired_single_storylines`, run by
the publisher with its story pointers); a storyline of several episodes or a merge's redirect is the archive and
stays, so the origin's pointer listing grows with those only; an episode's story pointer retired before its
storyline was kept is revived (:meth:`ArchivedEpisodes.revive`). Pointer ``storyline/{language}/{id}``: a storyline spans languages (linked stories share one) but a
page lists the stories of one language, as each edition's book does; editions of one language build the same
document at the same cycle (it depends on the language's stories only), so the second is a stale no-op.

Version: the cycle minute (``now // MINUTE_MS``). Episodes are ordered newest first by (first_at, story_id), the
keyset of the origin's cursor (serving/api/storylines.py). Plain Python.
"""

from __future__ import annotations

from typing import NamedTuple

from schemas.pages import storyline_path
from transforms.common import DAY_MS, MINUTE_MS
from transforms.editions.cycle.kept import LineageMemo
from transforms.editions.overlays.storyline_index import index_of, index_part, storyline_entities
from transforms.editions.vocabulary import documents as docs

STORYLINE_SCHEMA = "newsroom.storyline/v1"
# A one-episode storyline's pointer is retired this long (event time) after its last version: past the storyline
# stage's horizon (transforms/stories/storylines/storyline.py HORIZON_MS, 23 days) no story can join it any more, nothing links
# it (a story page and the storyline index name storylines with a page only), and its episode is its story's page.
# A week on top for a late cross-language merge.
RETIRE_SINGLE_MS = 30 * DAY_MS
RETIRE_READS = 500  # storyline documents read per retirement pass (unknown ones, once per process)
# Storyline documents read per retirement pass to learn the archive's episodes (each listed version once per
# process): a restarted publisher reads every listed storyline back before it retires a story pointer again, and
# 2,000 a pass every 10 minutes reads 576,000 storylines within the 48 h its story ages restart anyway.
EPISODE_READS = 2000
# Retired story pointers brought back per retirement pass (one conditional write each): an episode whose pointer
# retired before a later story made its storyline kept (:meth:`ArchivedEpisodes.revive`). Checking the others
# against the pass's story listing costs no read.
EPISODE_REVIVES = 2000


def pointer_of(language: str, storyline_id: int | str) -> str:
    return f"storyline/{language}/{storyline_id}"


def episode_of(summary: dict, first_seen_ms: int) -> dict:
    """One episode from a story's coverage summary (:func:`~transforms.editions.cycle.coverage.coverage_summary`, or
    :func:`summary_of` a coverage document): the title its story page shows."""
    return {
        "story_id": summary["story_id"],
        "title": summary["title"],
        "first_at": docs.iso(first_seen_ms),
        "last_at": summary.get("updated_at") or docs.iso(first_seen_ms),
        "article_count": summary["article_count"],
        "publisher_count": summary["publisher_count"],
    }


def summary_of(coverage: dict) -> dict:
    """What an episode reads of a coverage document (as coverage_summary gives it)."""
    arts = coverage["articles"]
    return {
        "story_id": coverage["story_id"],
        "title": coverage["title"],
        "updated_at": coverage.get("updated_at"),
        "article_count": len(arts),
        "publisher_count": len({a["publisher_id"] for a in arts}),
    }


def finish(doc: dict, episodes) -> dict:
    """``doc`` with ``episodes`` ordered newest first, its title (the newest episode's) and ``updated_at``."""
    eps = sorted(episodes, key=lambda e: (e["first_at"], int(e["story_id"])), reverse=True)
    newest = max((e["last_at"] for e in eps), default=doc.get("updated_at") or docs.iso(0))
    return dict(doc, episodes=eps, title=eps[0]["title"] if eps else doc.get("title", ""), updated_at=newest)


def storyline_items(book, out, params, now: int, taken=None) -> list[dict]:
    """The snapshot items of the storylines changed since the last built cycle (module docstring)."""
    return storyline_items_and_index(book, out, params, now, taken)[0]


def storyline_items_and_index(book, out, params, now: int, taken=None) -> tuple[list[dict], list[dict]]:
    """:func:`storyline_items` and the storyline index's shard items for them
    (:func:`~transforms.editions.overlays.storyline_index.index_items`). The items are looked up in ``SHARED_ITEMS``
    all at once, the missing ones made in one call."""
    smap = book.storylines
    touched, left, sources, merged = smap.take()
    of = smap.of
    for d in out.coverage:
        sl = of.get(int(d["story_id"]))
        if sl is not None:
            touched.add(sl)
    version = now // MINUTE_MS
    keys = []
    for sl in sorted(touched, key=lambda s: (s not in sources, s)) if sources else sorted(touched):
        # a merge or split's receiver first
        if sl in left or sl in sources or sl in merged:
            keys.append((sl, version, tuple(sorted(left.get(sl, ()))), _frozen_sources(sources.get(sl)), sl in merged))
        else:
            keys.append((sl, version, (), None, False))

    def make(missing: list) -> list[tuple]:
        return [
            _item_and_part(book, params, taken, key[0], version, Moves(key[2], sources.get(key[0]), key[4]))
            for key in missing
        ]

    items, parts = [], []
    for item, part in SHARED_ITEMS.find(book, params, keys, make, taken):
        if item is not None:
            items.append(dict(item))  # the item is the edition's; its document is shared (read-only)
            parts.append(part)
    return items, index_of(parts, book.language, version)


def _item_and_part(book, params, taken, sl: int, version: int, moves: Moves) -> tuple:
    item = storyline_item(book, params, taken, sl, version, moves)
    return item, None if item is None else index_part(item)


class Moves(NamedTuple):
    """What the storyline map took for one storyline since the last built cycle (``StorylineMap.take``): its
    stories that ``left`` it (sorted), the ``sources`` whose episodes move to it (``{storyline: story ids or None =
    all}``) or None, and whether it was ``merged`` into another."""

    left: tuple = ()
    sources: dict | None = None
    merged: bool = False


# Storyline items shared by the editions whose books have the same tables under the same takedowns
# (cycle/kept.py LineageMemo): storyline_item reads nothing else, and the editions of a language fold the same
# events, so at each minute they build the same items (each edition the storylines of the stories its own cycle
# emitted), each with what the storyline index takes of it (storyline_index.py ``index_part``). At 300,000 live
# stories a minute's ~1,400 articles made ~11,000 storyline items, each English one 15 times over
# (benchmarks/rank_bench.py). Budget: items, ~4.5 KB each (~18 MB), a minute's distinct ones at 300,000 live
# stories: ~1,300 (a scope serves one minute: older lineages are dead weight until they go).
SHARED_ITEMS = LineageMemo(kept=4_000)


def _frozen_sources(sources: dict | None):
    if sources is None:
        return None
    return tuple((s, None if ids is None else tuple(sorted(ids))) for s, ids in sorted(sources.items()))


def storyline_item(book, params, taken, sl: int, version: int, moves: Moves) -> dict | None:
    """One storyline's item at ``version`` with its :class:`Moves`: read from the book and the takedowns only, so
    every edition of the book's lineage makes the same one. None: nothing to publish."""
    # cycle imports the book, which imports storylines
    from transforms.editions.cycle.coverage import coverage_summary, shared_coverage

    smap, language = book.storylines, book.language
    doc = {"schema": STORYLINE_SCHEMA, "storyline_id": str(sl), "language": language, "version": version}
    gone, sources = set(moves.left), moves.sources
    episodes, rows = [], []
    if moves.merged:
        doc["merged_into"] = str(smap.resolve(sl))
    else:
        for sid in sorted(smap.members.get(sl, ())):
            row = book.stories.row_of.get(sid)
            if row is None or book.stories.is_alias[row] or not book.stories.n_articles[row]:
                continue
            # the cycle's own coverage document of a story it emitted is this one (taken down the same way)
            prim = int(book.stories.primary_section[row])
            if taken:  # the whole document, as takedowns filter it
                cov = taken.filter_story(shared_coverage(book, row, params, prim))
                summary = None if cov is None else summary_of(cov)
            else:  # the kept document's summary, or one made without the article cards
                summary = coverage_summary(book, row, params, prim)
            if summary is None:
                gone.add(sid)
                continue
            episodes.append(episode_of(summary, int(book.stories.first_seen[row])))
            rows.append(row)
        if not episodes and not gone and sources is None:
            return None
    return {
        "kind": "storyline",
        "path": storyline_path(language, sl, version),
        "pointer": pointer_of(language, sl),
        "version": version,
        "doc": finish(doc, episodes),
        "min_stories": 0,
        "left": sorted(gone),
        "sources": [[src, None if ids is None else sorted(ids)] for src, ids in sorted((sources or {}).items())],
        # where the storyline index lists it: a storyline with a page only (a one-story one is its story)
        "entities": storyline_entities(book, rows) if smap.has_page(sl) else [],
    }


def merged_document(item: dict, read_live) -> dict | None:
    """The document to publish for a storyline item: the live version (``read_live(pointer) -> doc or None``)
    without the stories that left, plus the sources' episodes, plus the item's. None: nothing to publish (a merge
    redirect for a storyline that never had a document, or no episode in this language and no live version)."""
    doc = item["doc"]
    live = read_live(item["pointer"])
    if doc.get("merged_into") is not None:
        return None if live is None else finish(doc, live["episodes"])
    gone = {str(s) for s in item.get("left") or ()}
    episodes = {e["story_id"]: e for e in (live or {}).get("episodes", ()) if e["story_id"] not in gone}
    for src, ids in item.get("sources") or ():
        wanted = None if ids is None else {str(s) for s in ids}
        for e in (read_live(pointer_of(doc["language"], src)) or {}).get("episodes", ()):
            if wanted is None or e["story_id"] in wanted:
                episodes.setdefault(e["story_id"], e)
    episodes.update({e["story_id"]: e for e in doc["episodes"]})
    if not episodes and live is None:
        return None  # nothing of this storyline in this language (a merge or split routed to every edition)
    return finish(doc, episodes.values())


def is_kept(doc: dict) -> bool:
    """A storyline the archive keeps for ever: several episodes, or a merge's redirect."""
    return doc.get("merged_into") is not None or len(doc["episodes"]) > 1


class ArchivedEpisodes:
    """The ``story/{id}`` pointers of the episodes of kept storylines (:func:`is_kept`), which the publisher never
    retires: a storyline page links each episode's story page, and the origin loads a story on demand only while
    its pointer is listed. Known per listed storyline version: learnt when the publisher writes one, read back
    (:meth:`refresh`) when another instance did or the process restarted. A story's pointer may have retired before
    its storyline became kept (a later story joined weeks after it left the live set): every episode newly learnt
    is checked once by :meth:`revive`, which brings an unlisted one back."""

    def __init__(self):
        self.known: dict[str, tuple[int, frozenset[str]]] = {}  # storyline pointer -> (version, story pointers)
        self.unchecked: set[str] = set()  # story pointers of kept storylines not yet checked against a listing

    def learn(self, pointer: str, version: int, doc: dict) -> bool:
        """Remember a storyline version's episodes; returns whether the archive keeps it (:func:`is_kept`)."""
        kept = is_kept(doc)
        ids = frozenset(f"story/{e['story_id']}" for e in doc["episodes"]) if kept else frozenset()
        before = self.known.get(pointer)
        self.unchecked |= ids - (before[1] if before else frozenset())
        self.known[pointer] = (int(version), ids)
        return kept

    def revive(self, listed: dict[str, int], pointers, budget: int = EPISODE_REVIVES) -> list[str]:
        """Bring back (``PointerStore.revive``: the story's last published version) the unchecked episodes' story
        pointers that ``listed`` (the pass's ``story/`` listing) lacks, at most ``budget`` of them; the rest wait for
        the next pass. Returns the names revived. A store error propagates with the unrevived ones kept."""
        archive, revived, calls = self.story_pointers(), [], 0
        for name in sorted(self.unchecked):
            if name in listed or name not in archive:  # served already, or no kept storyline links it any more
                self.unchecked.discard(name)
                continue
            if calls >= budget:
                break
            calls += 1
            if pointers.revive(name) is not None:  # None: never published, or revived by another instance
                revived.append(name)
            self.unchecked.discard(name)
        return revived

    def refresh(self, listed: dict[str, int], read, kept: set[str], budget: int = EPISODE_READS):
        """Read the listed storylines whose listed version is not known (at most ``budget``); forget the ones no
        longer listed; add the kept ones to ``kept``. ``read`` returns None for an object that cannot be read back
        (missing or not a document): it holds no episode. Returns (every listed version known, ``{(pointer,
        version): doc}`` read now)."""
        for name in [n for n in self.known if n not in listed]:
            del self.known[name]
        docs_read = {}
        for name, version in sorted(listed.items()):
            hit = self.known.get(name)
            if hit is not None and hit[0] == version:
                continue
            if len(docs_read) >= budget:
                return False, docs_read
            doc = read(name, version)
            if doc is None:  # an unreadable object: no page links its episodes, and one bad object must not stop
                self.known[name] = (int(version), frozenset())  # every retirement; known empty until it moves
                continue
            docs_read[(name, version)] = doc
            if self.learn(name, version, doc):
                kept.add(name)
        return True, docs_read

    def story_pointers(self) -> set[str]:
        return set().union(*(ids for _, ids in self.known.values()))


def expired_single_storylines(listed: dict[str, int], newest_cycle: int, kept: set[str], read) -> dict[str, int]:
    """``{pointer: version}`` of the one-episode storylines to retire (:data:`RETIRE_SINGLE_MS`): ``listed``, the
    ``storyline/`` pointers and their versions (cycle minutes); ``newest_cycle``, the newest cycle minute the
    publisher wrote (event time, so a backfill retires what streaming would); ``kept``, pointers known to stay
    (more than one episode, or a merge's redirect), grown in place; ``read(pointer, version) -> doc``. At most
    :data:`RETIRE_READS` documents are read per call, each once while the process lives."""
    cutoff = newest_cycle - RETIRE_SINGLE_MS // MINUTE_MS
    out, reads = {}, 0
    for name, version in sorted(listed.items()):
        if version >= cutoff or name in kept:
            continue
        if reads >= RETIRE_READS:
            break
        reads += 1
        doc = read(name, version)
        if doc.get("merged_into") is None and len(doc["episodes"]) <= 1:
            out[name] = int(version)
        else:
            kept.add(name)
    return out
