"""The storyline index: per language, the storylines of each entity, newest first, so that a topic page lists the
storylines of its entity whose stories left the live pool (the archive a reader walks from a topic).

Who writes what. The ranker's storyline items (:func:`transforms.editions.overlays.storyline_pages.storyline_items`) name
the entities of each storyline's live episodes (``entities``: the alias-table ids of its stories' main entities,
the ids of ``entity:{id}`` topic pages). :func:`index_items` turns the items of one cycle into one
``storyline_index`` item per shard they touch: ``put`` (entity -> the storyline's entry) and ``drop`` (storylines
merged into another this cycle, which leave the lists they shared with their survivor). The snapshot publisher
completes each with the live version of its shard (:func:`merged_index`), as it completes storyline documents:
version n is version n-1 plus what changed, so a storyline stays listed under its entity after its stories left
the ranker's book, with no state in the ranker.

Sharded by entity: pointer ``storyline_index/{language}/{shard}`` (:data:`SHARDS` per language, the shard of an
entity a stable hash of its id, never Python's per-process ``hash``), object
``storyline_index/{language}/{shard}/v{n}.json``, contract ``newsroom.storyline_index/v1``
(schemas/json/storyline_index.schema.json). Bounded: :data:`PER_ENTITY` storylines per entity (newest
``updated_at`` first; the oldest fall off), :data:`ENTITIES_PER_SHARD` entities per shard (the entities whose
newest storyline is oldest fall off), so an object stays under a few MB however long the archive runs, and the
origin's pointer listing gains ``SHARDS`` pointers per language, not one per entity.

An entry: storyline id, its title and the story that title comes from (the newest live episode when written:
a takedown of that story hides the entry at the origin, stores/takedowns.py), ``updated_at``. The origin loads a
shard on demand (serving/state/watcher.py) when a topic page asks for its entity (serving/api/topics.py,
serving/web/storylines.py). Cost per cycle: O(entities of the changed storylines) plus one read and write per
touched shard. Plain Python.
"""

from __future__ import annotations

import functools

from schemas.pages import STORYLINE_INDEX_SHARDS, storyline_index_path, storyline_index_shard

INDEX_SCHEMA = "newsroom.storyline_index/v1"
SHARDS = STORYLINE_INDEX_SHARDS
PER_ENTITY = 20
ENTITIES_PER_SHARD = 4096
ENTITIES_PER_STORYLINE = 12  # the most frequent main entities of its live episodes


@functools.lru_cache(maxsize=1 << 16)
def shard_of(entity_id: str) -> int:
    """:func:`schemas.pages.storyline_index_shard` (a SHA-1 per call), kept for the most recent entities: each
    edition of a language lists the same storylines' entities every minute."""
    return storyline_index_shard(entity_id)


def pointer_of(language: str, shard: int) -> str:
    return f"storyline_index/{language}/{shard}"


def storyline_entities(book, story_rows) -> list[str]:
    """The main entities of a storyline's live episodes (rows of ``book``): the most frequent over its stories'
    main entities, at most ENTITIES_PER_STORYLINE (ties: by id)."""
    counts: dict[str, int] = {}
    for row in story_rows:
        for e in book.story_entities(row):
            counts[e] = counts.get(e, 0) + 1
    return sorted(counts, key=lambda e: (-counts[e], e))[:ENTITIES_PER_STORYLINE]


def index_part(item: dict) -> tuple | None:
    """What the storyline index takes of one storyline item: its entry with its place in a list (newest first: the
    :func:`_newest_first` key), the storylines it absorbed whole (they leave the lists they shared with it) and, per
    shard it is listed in, ``{entity: [entry]}``, one list for every entity (an entity no other storyline of the cycle
    names is listed as that very list). None: not listed (a merge's redirect, no episode). Made once per item: the
    editions of a language share their items (storyline_pages.py ``SHARED_ITEMS``) and the parts with them, so the
    part and its lists are read, never written."""
    doc = item["doc"]
    if doc.get("merged_into") is not None or not doc["episodes"]:
        return None
    newest = max(doc["episodes"], key=lambda e: (e["first_at"], int(e["story_id"])))
    entry = {
        "storyline_id": doc["storyline_id"],
        "title": newest["title"],
        "story_id": newest["story_id"],
        "updated_at": doc["updated_at"],
    }
    absorbed = tuple(sorted({str(src) for src, ids in item.get("sources") or () if ids is None}))
    placed = tuple((shard_of(entity), entity) for entity in item.get("entities") or ())
    return (_order_key(entry), entry), absorbed, placed, [entry]


def index_items(storyline_items: list[dict], language: str, version: int) -> list[dict]:
    """The shard items of one cycle's storyline items (module docstring), by shard."""
    parts = {}  # a storyline listed twice: its last item's entry, as a put replaces an entry
    for part in map(index_part, storyline_items):
        if part is not None:
            parts.pop(part[0][1]["storyline_id"], None)
            parts[part[0][1]["storyline_id"]] = part
    return index_of(list(parts.values()), language, version)


def index_of(parts: list, language: str, version: int) -> list[dict]:
    """:func:`index_items` from the items' :func:`index_part`, one per storyline (entries and one-entry lists shared
    read-only with other editions). An entity that one storyline names is listed with that part's own list; only an
    entity that several storylines name gets a list of its own, sorted newest first."""
    puts: dict[int, dict[str, list]] = {}  # shard -> entity -> its list (a part's own while one storyline names it)
    several: dict[tuple, list] = {}  # (shard, entity) -> (order key, entry) of each storyline naming it
    drops: dict[int, set[str]] = {}
    for part in parts:
        if part is None:
            continue
        keyed, absorbed, placed, alone = part
        for shard, entity in placed:
            by_entity = puts.get(shard)
            if by_entity is None:
                puts[shard] = {entity: alone}
                continue
            had = by_entity.setdefault(entity, alone)
            if had is not alone:
                entries = several.get((shard, entity))
                if entries is None:
                    several[(shard, entity)] = [(_order_key(had[0]), had[0]), keyed]
                else:
                    entries.append(keyed)
        if absorbed:
            for shard, _ in placed:
                drops.setdefault(shard, set()).update(absorbed)
    for (shard, entity), entries in several.items():
        puts[shard][entity] = [x for _, x in sorted(entries, reverse=True)]
    items = []
    for shard in sorted(puts):
        by_entity = puts[shard]
        put = {e: by_entity[e] for e in sorted(by_entity)}
        doc = {"schema": INDEX_SCHEMA, "language": language, "shard": shard, "version": version, "entities": put}
        items.append(
            {
                "kind": "storyline_index",
                "path": storyline_index_path(language, shard, version),
                "pointer": pointer_of(language, shard),
                "version": version,
                "doc": doc,
                "min_stories": 0,
                "drop": sorted(drops.get(shard, ())),
            }
        )
    return items


def merged_index(item: dict, read_live) -> dict:
    """The shard document to publish: the live version (``read_live(pointer) -> doc or None``) with the item's
    entries put (a storyline listed again replaces its entry), the dropped storylines removed from the entities the
    item touches, each entity's list and the shard's entities cut to their bounds."""
    doc = item["doc"]
    live = read_live(item["pointer"]) or {}
    entities = {e: list(lst) for e, lst in (live.get("entities") or {}).items()}
    drop = set(item.get("drop") or ())
    for entity, entries in doc["entities"].items():
        fresh = {x["storyline_id"] for x in entries}
        kept = [x for x in entities.get(entity, ()) if x["storyline_id"] not in fresh and x["storyline_id"] not in drop]
        entities[entity] = _newest_first(kept + list(entries))[:PER_ENTITY]
    if len(entities) > ENTITIES_PER_SHARD:
        ranked = sorted(entities, key=lambda e: (entities[e][0]["updated_at"] if entities[e] else "", e), reverse=True)
        entities = {e: entities[e] for e in ranked[:ENTITIES_PER_SHARD]}
    return dict(doc, entities={e: entities[e] for e in sorted(entities)})


def _order_key(x: dict) -> tuple:
    return x["updated_at"], int(x["storyline_id"])


def _newest_first(entries) -> list[dict]:
    if len(entries) == 1:  # most entities of a cycle's items: one storyline
        return list(entries)
    return sorted(entries, key=_order_key, reverse=True)
