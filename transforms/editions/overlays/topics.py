"""Topic pages built by the editions stage: every cycle, the pages of an edition's followed and trending topics.

A topic id is ``entity:{id}`` (an alias-table entity of the pool's ``entities``), ``place:{code}`` (a region or
city code of the pool's ``places``, or a place entity ``place:{code}`` of its ``entities``) or ``topic:{section}``
(a section of the pool's ``topics``): the ids ``GET /v1/topics/{id}`` answers (serving/api/topics.py).

Cities (local pages): the gazetteer of editions.json lists each region's sub-national places (``local_places``:
cities, and some states). :func:`add_cities` adds their codes (the name with hyphens for spaces: ``los-angeles``)
to the ``places`` of every pool entry whose main entities name one (by the alias table's id ``place:los-angeles``
or by the unlinked surface form ``los angeles``), next to the region codes. So a city is followable (For you
lifts its stories as ``local:{code}``) and has its own page, ``place:{code}``, pre-built when followed or trending,
on demand otherwise: local pages for cities, not only the edition's whole-region Local section. A story is also
local to the city of every local publisher covering it (publishers.json ``city``, transforms/publishers.py):
:func:`transforms.editions.cycle.run.add_publisher_cities`, where all the story's publishers are known, puts
those codes after the region codes. So the rule is: a story is local to a city when a local publisher of that city covers it or its main entities name the city.

Per edition and cycle (:func:`topic_documents`), from the cycle's candidate pool document only:

1. count the pool stories about every id: one pass over the pool's entries (O(pool size x ids per entry), no pair
   of stories is ever compared);
2. choose at most ``max_pages`` ids (:data:`MAX_TOPIC_PAGES`, 40 by default): first the followed ids (the profile
   store's aggregated follower counts, no reader id: :meth:`stores.profiles.ProfileStore.followed_topics`; at
   least :data:`MIN_FOLLOWERS` followers, see :class:`FollowedTopics`) that
   have a live story in the pool, most followers first; then the trending ids, most pool stories first, at least
   :data:`TRENDING_MIN_STORIES`, entities and places only (a section already has its own page every cycle);
   ties by id, so the choice is deterministic;
3. build each chosen id's page: the pool's items about it (story id, section, labels, representative card) in the
   pool's order (the edition's own score, highest first), at most :data:`MAX_STORIES` (the origin's largest
   ``limit``), with ``story_count`` of all of them. This is the page the origin builds on demand from the same pool,
   so the two cannot disagree.

The chosen ids go into the pool document (``topic_pages``) so the origin knows which ids have a pre-built page
this cycle (it serves the pre-built snapshot of those, and builds the others on demand from the pool: the long
tail). Snapshot items: ``topics/{edition}/{id}/v{n}.json`` with pointer ``topic/{edition}/{id}``
(schemas/pages.py), published like pages (an unchanged page is not rewritten).

:class:`FollowedTopics` reads the follower counts at most every ``refresh_s`` seconds (a store error keeps the last
counts): the stage must not read the profile store every minute of every edition.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from array import array
from collections.abc import Callable
from functools import partial
from itertools import compress, islice
from operator import ge, itemgetter, le
from typing import NamedTuple

import numpy as np

from schemas.pages import MAX_LIMIT, topic_path
from transforms.articles.entities import generic, topic_name
from transforms.editions.vocabulary.cities import CityCodes, city_codes  # noqa: F401 (re-exported)

log = logging.getLogger(__name__)

TOPIC_SCHEMA = "newsroom.topic_page/v1"
MAX_TOPIC_PAGES = 40  # per edition and cycle: followed first, then trending
TRENDING_MIN_STORIES = 3
MAX_STORIES = MAX_LIMIT  # stories kept on a pre-built page: the most GET /v1/topics/{id} may ask for
FOLLOWED_READ = 2000  # most-followed ids read from the profile store
MIN_FOLLOWERS = 10  # fewer followers: not pre-built as followed, so a shared page never reveals one reader (below)
# The ids GET /v1/topics/{id} accepts (serving/api/topics.py TOPIC_ID_PATTERN, schemas/json/topic_page.schema.json):
# an entity id with a "/" or a control character has no page, so none is built.
SERVABLE = re.compile(r"^(entity|place|topic):[^\x00-\x1f\x7f/]{1,200}$")


# Memos of the per-entry work, by the entry's entities (city codes, kept on the CityCodes they come from) and by its
# (entities, places, topics) (topic ids): a story keeps them from cycle to cycle and sits in many editions' pools,
# so nearly every lookup hits (benchmarks/rank_bench.py, 300,000 stories: the cycle's topic pages 0.77 -> 0.35 s of
# CPU). Cleared whole when they reach _MEMO_MAX keys.
_MEMO_MAX = 200_000
_IDS_MEMO: dict[tuple, tuple[str, ...]] = {}


def _remember(memo: dict, key, value):
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value
    return value


class TopicCodes:
    """Topic id <-> integer code, for the pools of a worker: :func:`annotate_pool` keeps each entry's topic ids as
    the bytes of their codes (``array("i")``), so :func:`topic_documents` counts a pool's ids, chooses and finds the
    entries about the chosen ones in a few numpy operations over one buffer (~7,500 codes per edition) instead of
    hashing every id string of every entry each cycle: ~85,000 entries' tuples and ~550,000 strings over 73
    editions, cold in memory by then, were most of the phase's CPU. A code is twice the id's index in ``names``,
    plus 1 for a section id (``topic:``, never trending), and is given once and never changed (under a lock: a
    worker runs editions on several threads); a full table is replaced whole (:func:`_codes`), and a kept
    annotation made with another table is made again."""

    def __init__(self) -> None:
        self.code: dict[str, int] = {}
        self.names: list[str] = []
        self.lock = threading.Lock()
        self.memo: dict[tuple, bytes] = {}  # (entities, places, topics) -> the codes of their ids (:func:`_ids_of_key`)

    def remember(self, key: tuple, codes: bytes) -> bytes:
        return _remember(self.memo, key, codes)

    def of(self, ids) -> bytes:
        """The codes of ``ids`` (new ids get the next codes), as the bytes of an ``array("i")``."""
        out = list(map(self.code.get, ids))
        if None in out:
            with self.lock:
                for k, t in enumerate(ids):
                    c = self.code.get(t)
                    if c is None:  # named before it is coded: a code another thread reads has its name
                        self.names.append(t)
                        c = self.code[t] = 2 * len(self.names) - 2 + t.startswith("topic:")
                    out[k] = c
        return array("i", out).tobytes()

    def name(self, code: int) -> str:
        return self.names[code >> 1]


_CODES_MAX = 250_000  # ids in a table before it is replaced: ~150 bytes an id with its name, ~40 MB at most
_CODES = TopicCodes()


def _codes() -> TopicCodes:
    """The worker's table, a new one when it is full (the old one stays whole for the calls that hold it)."""
    global _CODES
    if len(_CODES.names) >= _CODES_MAX:
        _CODES = TopicCodes()
    return _CODES


class PoolIds(NamedTuple):
    """Each pool entry's topic ids (:func:`topic_ids_of`) as the bytes of their codes in ``table``."""

    codes: list[bytes]
    table: TopicCodes


def add_cities(pool: dict, cities: dict[str, str]) -> None:
    """Add the city codes named by each pool entry's main entities to its ``places`` (after the region codes)."""
    memo = getattr(cities, "memo", {})  # a CityCodes keeps its memo; a plain dict is looked up afresh
    for entry in pool["stories"]:
        entities = entry.get("entities")
        if not entities:
            continue
        key = tuple(entities)
        extra = memo.get(key)
        if extra is None:
            extra = _remember(memo, key, tuple(cities[k] for k in (e.lower() for e in entities) if k in cities))
        if extra:
            entry["places"] = tuple(dict.fromkeys([*(entry.get("places") or ()), *extra]))


def add_page_sections(pool: dict, pages: dict) -> None:
    """A story on a section's page is about that section: add the section to its pool entry's ``topics``, so the
    topic page ``topic:{section}`` (and a reader's follow of it) holds every pool story the section page shows.
    The label share alone missed what the sections that pick by relevance (world, nation, local) chose: the World
    topic page showed 1 story where the World section showed 3. Entries are per-cycle copies (the ranker's cache
    keeps its own)."""
    on = _sections_on(pages)
    for entry in pool["stories"]:
        extra = on.get(entry["story_id"])
        if extra:
            entry["topics"] = tuple(dict.fromkeys([*(entry.get("topics") or ()), *sorted(extra)]))


def annotate_pool(
    pool: dict, pages: dict, cities: dict[str, str], with_ids: bool = True, kept: dict | None = None
) -> PoolIds:
    """:func:`add_page_sections` and :func:`add_cities` in one pass over the pool's entries, returning each entry's
    topic ids after both (:func:`topic_ids_of`, as codes: :class:`PoolIds`) for :func:`topic_items`: the same
    entries and ids as the three passes, for a third of the per-entry loops of a cycle (~85,000 entries over 73
    editions). ``with_ids`` False: no topic pages are built, no ids (no codes).

    ``kept``: the edition's annotations of its last cycle (story id -> what an entry was annotated from and to), a
    dict this call empties and refills with this cycle's (the ranker keeps it in the edition's ``CycleCache``, so a
    worker's next cycle of the edition finds it). An entry whose ``entities``, ``places`` and ``topics`` are the
    very tuples annotated last cycle (a pool entry reused from the ranker's cache holds the same objects), with the
    same page sections, city table and code table, gets last cycle's results without recomputing them: the same
    values."""
    on = _sections_on(pages)
    memo = getattr(cities, "memo", {})  # as add_cities
    table = _codes()
    old = kept if kept is not None else {}
    new: dict = {}
    codes_of: list[bytes] = []
    for entry in pool["stories"]:
        sid = entry["story_id"]
        topics, places, entities = entry.get("topics") or (), entry.get("places") or (), entry.get("entities") or ()
        extra = on.get(sid)
        hit = old.get(sid)
        if (
            hit is not None
            and hit[0] is entities
            and hit[1] is places
            and hit[2] is topics
            and hit[3] == extra
            and hit[4] is cities
            and hit[8] is table
            and (hit[7] is not None or not with_ids)
        ):
            if hit[5] is not topics:
                entry["topics"] = hit[5]
            if hit[6] is not places:
                entry["places"] = hit[6]
            new[sid] = hit
            if with_ids:
                codes_of.append(hit[7])
            continue
        topics_in, places_in = topics, places
        if extra:
            topics = entry["topics"] = tuple(dict.fromkeys([*topics, *sorted(extra)]))
        if entities:
            key = tuple(entities)
            named = memo.get(key)
            if named is None:
                named = _remember(memo, key, tuple(cities[k] for k in (e.lower() for e in entities) if k in cities))
            if named:
                places = entry["places"] = tuple(dict.fromkeys([*places, *named]))
        codes = None
        if with_ids:
            key = (tuple(entities), tuple(places), tuple(topics))  # _topic_ids's key, from the values at hand
            codes = table.memo.get(key)
            if codes is None:
                ids = _IDS_MEMO.get(key)
                codes = table.remember(key, table.of(ids if ids is not None else _ids_of_key(key)))
            codes_of.append(codes)
        if kept is not None and type(entities) is tuple and type(places_in) is tuple and type(topics_in) is tuple:
            # immutable inputs only: a list could change in place and still be the same object next cycle
            new[sid] = (entities, places_in, topics_in, extra, cities, topics, places, codes, table)
    if kept is not None:
        kept.clear()
        kept.update(new)
    return PoolIds(codes_of, table)


def pool_ids(stories: list[dict]) -> PoolIds:
    """Each entry's topic ids (:func:`topic_ids_of`) as codes, without annotating anything."""
    table = _codes()
    return PoolIds([table.of(_topic_ids(entry)) for entry in stories], table)


def _sections_on(pages: dict) -> dict[str, list[str]]:
    """Story id -> the sections (not top) whose page shows it."""
    on: dict[str, list[str]] = {}
    for section, page in pages.items():
        if section != "top":
            for s in page["stories"]:
                on.setdefault(s["story_id"], []).append(section)
    return on


def topic_ids_of(entry: dict) -> list[str]:
    """The topic ids a pool entry is about (deduplicated, in a fixed order)."""
    return list(_topic_ids(entry))


def _topic_ids(entry: dict) -> tuple[str, ...]:
    """:func:`topic_ids_of` as remembered: a tuple of strings, which the cyclic collector stops tracking (a list
    per remembered key was ~100,000 more objects for every full collection of a ranking worker to traverse)."""
    key = (tuple(entry.get("entities") or ()), tuple(entry.get("places") or ()), tuple(entry.get("topics") or ()))
    ids = _IDS_MEMO.get(key)
    return ids if ids is not None else _ids_of_key(key)


def _ids_of_key(key: tuple) -> tuple[str, ...]:
    """The topic ids of (entities, places, topics), remembered."""
    entities, places, topics = key
    found = [f"entity:{e}" for e in entities if not generic(e)]
    found += [f"place:{p}" for p in places]
    found += [f"place:{e[6:]}" for e in entities if e.startswith("place:")]
    found += [f"topic:{t}" for t in topics]
    return _remember(_IDS_MEMO, key, tuple(t for t in dict.fromkeys(found) if SERVABLE.match(t)))


def choose_topics(counts: dict[str, int], followed: dict[str, int], max_pages: int = MAX_TOPIC_PAGES) -> list[str]:
    """Followed ids with stories (most followers first), then trending entities and places (most stories first)."""
    chosen = sorted((t for t in followed if counts.get(t)), key=lambda t: (-followed[t], t))[:max_pages]
    want = max(0, max_pages - len(chosen))
    if not want:
        return chosen
    taken = set(chosen)
    # Only the ids counted at least `floor` times are sorted (a pool counts ~2,400 ids, ~40 are taken): `floor` is
    # the count of the k-th most counted id, so the ids at or above it are at least k, of which at most len(taken)
    # plus the section ids are not eligible; when `want` remain eligible, the ones below `floor` all rank after
    # them. Otherwise k grows, down to every id counted TRENDING_MIN_STORIES times.
    ranked = sorted(counts.values(), reverse=True)
    k = want + len(taken) + 16
    while True:
        floor = max(TRENDING_MIN_STORIES, ranked[k - 1]) if k <= len(ranked) else TRENDING_MIN_STORIES
        eligible = [
            t
            for t in compress(counts, map(partial(le, floor), counts.values()))
            if t not in taken and not t.startswith("topic:")
        ]
        if len(eligible) >= want or floor == TRENDING_MIN_STORIES:
            break
        k *= 2
    trending = sorted(eligible, key=lambda t: (-counts[t], t))
    return chosen + trending[:want]


def topic_documents(
    pool: dict,
    followed: dict[str, int],
    max_pages: int = MAX_TOPIC_PAGES,
    ids_of: PoolIds | None = None,
    kept: dict | None = None,
) -> list[dict]:
    """The topic page documents of one edition's cycle, from its pool document (see the module docstring);
    ``ids_of``: each entry's topic ids when the caller has them (:func:`annotate_pool`); ``kept``: the edition's
    page items of its last cycle (story id -> item), emptied and refilled with this cycle's: an item whose story
    shows the same section, labels and representative card object is reused (the same values; items are never
    changed once made)."""
    stories = pool["stories"]
    if ids_of is None:
        ids_of = pool_ids(stories)
    codes_of, table = ids_of
    flat = np.frombuffer(b"".join(codes_of), np.intc)  # every entry's codes, entry after entry
    chosen = choose_codes(flat, table, followed, max_pages)
    # the pool positions of the entries about each chosen id, ascending: one run per id in `at`
    want = np.array([table.code[t] for t in chosen], np.intc)
    about = np.zeros(int(flat.max(initial=0)) + 1, bool)  # code -> chosen
    about[want] = True
    hit = np.flatnonzero(about[flat])
    by = np.argsort(flat[hit], kind="stable")
    of = flat[hit][by]
    sizes = np.fromiter(map(len, codes_of), np.intp, len(codes_of)) // flat.itemsize
    at = np.repeat(np.arange(len(codes_of)), sizes)[hit[by]].tolist()
    runs = zip(np.searchsorted(of, want).tolist(), np.searchsorted(of, want, "right").tolist())
    members = {t: at[lo:hi] for t, (lo, hi) in zip(chosen, runs)}
    scores = list(map(_SCORE, stories)) if chosen else []
    in_order = all(map(ge, scores, islice(scores, 1, None)))  # the pool's own order: no sort needed (compared in C)
    if not in_order:
        scores = [float(x) for x in scores]
    order = {
        t: idx[:MAX_STORIES] if in_order else sorted(idx, key=lambda i: (-scores[i], i))[:MAX_STORIES]
        for t, idx in members.items()
    }
    old = kept if kept is not None else {}
    made: dict = {}  # story id -> its item, made once for all the pages it is on
    items: dict[int, dict] = {}  # pool position -> its item
    for i in set().union(*order.values()):
        entry = stories[i]
        sid, section, rep = _ITEM_FIELDS(entry)
        labels = entry.get("labels") or ()
        item = old.get(sid)  # last cycle's when it shows the same values
        if item is None or item["representative"] is not rep or item["section"] != section or item["labels"] != labels:
            item = {"story_id": sid, "section": section, "labels": labels, "representative": rep}
        items[i] = made[sid] = item
    docs = []
    edition, version, cycle = pool["edition"], pool["version"], pool["cycle"]
    language = edition.partition("-")[2] or None
    for topic, page in order.items():
        kind, value = topic.split(":", 1)
        docs.append(
            {
                "schema": TOPIC_SCHEMA,
                "topic": topic,
                "kind": kind,
                "value": value,
                "name": topic_name(topic, language),
                "edition": edition,
                "version": version,
                "pool_version": version,
                "cycle": cycle,
                "story_count": len(members[topic]),
                "stories": list(map(items.__getitem__, page)),
            }
        )
    if kept is not None:
        kept.clear()
        kept.update(made)
    return docs


def choose_codes(flat: np.ndarray, table: TopicCodes, followed: dict[str, int], max_pages: int) -> list[str]:
    """:func:`choose_topics` of the ids whose codes (in ``table``) are ``flat``, one per entry about the id: the
    counts of a sort, the followed ids looked up, the trending ones ranked in numpy down to the ties at the last
    count taken (sorted by id in Python: the same rule, ties by id)."""
    ranked = np.sort(flat)
    starts = np.flatnonzero(np.concatenate((ranked[:1] == ranked[:1], ranked[1:] != ranked[:-1])))  # each code's first
    codes, counts = ranked[starts], np.diff(np.append(starts, ranked.size))
    chosen: list[str] = []
    if followed and codes.size:
        known = [(t, c) for t, c in zip(followed, map(table.code.get, followed)) if c is not None]
        j = np.minimum(np.searchsorted(codes, [c for _, c in known]), codes.size - 1)
        with_stories = (codes[j] == [c for _, c in known]).tolist() if known else []
        found = [t for (t, _), ok in zip(known, with_stories) if ok]
        chosen = sorted(found, key=lambda t: (-followed[t], t))[:max_pages]
    want = max(0, max_pages - len(chosen))
    if not want:
        return chosen
    eligible = (counts >= TRENDING_MIN_STORIES) & (codes & 1 == 0)  # a section id never trends
    if chosen:
        eligible &= ~np.isin(codes, [table.code[t] for t in chosen])
    codes, counts = codes[eligible], counts[eligible]
    if codes.size > want:  # only the ids counted at least as often as the want-th most counted can be taken
        keep = counts >= np.partition(counts, codes.size - want)[codes.size - want]
        codes, counts = codes[keep], counts[keep]
    trending = sorted(zip((-counts).tolist(), map(table.name, codes.tolist())))
    return chosen + [t for _, t in trending[:want]]


_SCORE = itemgetter("score")
_ITEM_FIELDS = itemgetter("story_id", "section", "representative")


def topic_items(
    pool: dict,
    followed: dict[str, int],
    max_pages: int = MAX_TOPIC_PAGES,
    ids_of: list | None = None,
    kept: dict | None = None,
) -> list[dict]:
    """Snapshot items of the cycle's topic pages; records the chosen ids in the pool (``topic_pages``). ``kept``:
    as :func:`topic_documents`."""
    items = []
    for doc in topic_documents(pool, followed, max_pages, ids_of, kept):
        items.append(
            {
                "kind": "topic_page",
                "path": topic_path(doc["edition"], doc["topic"], doc["version"]),
                "pointer": f"topic/{doc['edition']}/{doc['topic']}",
                "version": doc["version"],
                "doc": doc,
                "min_stories": 1,
            }
        )
    pool["topic_pages"] = tuple(item["doc"]["topic"] for item in items)
    return items


class FollowedTopics:
    """``followed() -> {topic id: followers}`` from a profile store, read at most every ``refresh_s`` seconds, only
    the ids with at least ``min_followers`` followers (:data:`MIN_FOLLOWERS`).

    Why the floor: a pre-built page is listed in the pool and linked from the edition's top page ("Followed and
    trending"), so a topic pre-built because one reader follows it would tell every reader of the shared page what
    that one person follows (a name, a small place). Below the floor a followed topic is treated like any other:
    built when it trends, on demand otherwise, which readers cannot tell apart from the outside."""

    def __init__(
        self,
        store,
        refresh_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        min_followers: int | None = None,
    ):
        self.store = store
        self.refresh_s = refresh_s
        self.clock = clock
        self.min_followers = MIN_FOLLOWERS if min_followers is None else min_followers
        self._counts: dict[str, int] = {}
        self._next = float("-inf")

    def __call__(self) -> dict[str, int]:
        now = self.clock()
        if now >= self._next:
            self._next = now + self.refresh_s
            try:
                counts = self.store.followed_topics(FOLLOWED_READ)
                self._counts = {t: n for t, n in dict(counts).items() if n >= self.min_followers}
            except Exception as exc:  # a store error: the last counts stay, the next refresh retries
                log.warning("followed topics not read, keeping the last %d: %s", len(self._counts), exc)
        return self._counts
