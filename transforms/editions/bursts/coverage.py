"""Burst pull: which publishers' feeds a breaking story moves to the 1-minute lane, and the coverage memory behind it.

Plain Python (the Beam side is :class:`~transforms.editions.beam.detection.RequestPollsFn`, which keeps one
:class:`CoverageMemory` in its state). Reads originals (the burst stage's observations: story, publisher, entity
ids, first-seen time), LINK and MERGE story changes, and breaking pulses; writes nothing itself
(:func:`transforms.editions.bursts.bursts.burst_fetch_requests` turns the chosen publishers into FetchRequest records).

Why a memory: a breaking story's next articles come first from the outlets that cover its place (region), that
already cover it or its cross-language twins (LINK), and that covered its people, places and organisations before
(an outlet that wrote about a company last week will write about its collapse today). The ranker's book only holds
live stories of one edition; the burst stage sees every original of every language, so it keeps the memory.

The rule (:func:`pull_publishers`), for a breaking pulse of story S in language L:

- languages: L and the languages of the stories linked to S (LINK changes); only publishers whose registry language
  is one of them are pulled, and only registered publishers (the registry gives the language and tier);
- priority, first to last (ties by publisher id):
  0. *covering*: publishers with an original in S (the pulse's or the memory's) or in a story linked to S;
  1. *region*: publishers whose region is one of the bursting publishers' regions ("" = international is no region);
  2. *entity coverage*: publishers that covered one of S's entities before the pulse (S's ``STORY_ENTITIES`` most
     frequent entity ids), most matching entities first, then the most recent coverage;
  3. *authoritative*: authoritative-tier publishers and international wires;
- at most ``bursts.fetch_max_publishers`` (editions.json, 50) publishers per pulse, taken in that order. The ingest
  job polls at most ``transforms.ingest.registry.BURST_FEEDS_PER_PUBLISHER`` (4) feeds of each, so one pulse moves
  at most 200 feeds, each to a 1-minute poll (``SchedulePolicy.burst_floor_ms``) for ``bursts.fetch_ttl_min``
  (60 min): at most 200 polls a minute per bursting story, repeated at most every ``fetch_repeat_min`` (30 min).

Bounds (the memory is in Beam state, pickled once a minute at most): ``MAX_ENTITIES`` entities x
``PUBLISHERS_PER_ENTITY`` publishers each, ``MAX_STORIES`` stories x ``PUBLISHERS_PER_STORY`` publishers,
``STORY_ENTITIES_KEPT`` entity counts and ``LINKS_PER_STORY`` links each; an article contributes its first
``ARTICLE_ENTITIES`` entities. About 5-10 MB at the caps.

Deterministic: entries are kept by event time (the article's first-seen time), newest first, ties by id, never by
arrival order. Keeping the top k by (time, id) of a union does not depend on the order of the union, so the same
originals give the same memory in any order (except an entity or story evicted and seen again, which starts over);
entries later than the pulse's window end are not counted (a batch run folds the whole input before its first
timer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_ENTITIES = 5_000
PUBLISHERS_PER_ENTITY = 12
MAX_STORIES = 5_000
PUBLISHERS_PER_STORY = 24
STORY_ENTITIES_KEPT = 32
STORY_ENTITIES = 8
ARTICLE_ENTITIES = 8
LINKS_PER_STORY = 8

COVERING, REGION, ENTITY, AUTHORITATIVE = 0, 1, 2, 3
REASONS = {COVERING: "covering", REGION: "region", ENTITY: "entity coverage", AUTHORITATIVE: "authoritative"}


def _top(d: dict, k: int) -> dict:
    """The ``k`` entries of ``{key: time}`` with the latest times (ties: the larger key), as a dict."""
    if len(d) <= k:
        return d
    return dict(sorted(d.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:k])


@dataclass
class StoryCoverage:
    language: str = ""
    at: int = 0  # latest event time seen
    publishers: dict = field(default_factory=dict)  # publisher -> latest first-seen ms
    entities: dict = field(default_factory=dict)  # entity id -> [originals mentioning it, latest ms]
    links: dict = field(default_factory=dict)  # linked story -> link ms


@dataclass
class CoverageMemory:
    """Who covered which entity and which story, bounded (module docstring). Fold with :meth:`fold`."""

    entities: dict = field(default_factory=dict)  # entity id -> {publisher: latest ms}
    entity_at: dict = field(default_factory=dict)  # entity id -> latest ms
    stories: dict = field(default_factory=dict)  # story id -> StoryCoverage

    def _story(self, sid: int) -> StoryCoverage:
        st = self.stories.get(sid)
        if st is None:
            st = self.stories[sid] = StoryCoverage()
        return st

    def add_original(self, story_id: int, publisher: str, language: str, entities, at: int) -> None:
        st = self._story(int(story_id))
        st.language = st.language or language or ""
        st.at = max(st.at, at)
        st.publishers[publisher] = max(st.publishers.get(publisher, at), at)
        for eid in list(dict.fromkeys(e for e in entities if e))[:ARTICLE_ENTITIES]:
            n, last = st.entities.get(eid, (0, at))
            st.entities[eid] = [n + 1, max(last, at)]
            pubs = self.entities.setdefault(eid, {})
            pubs[publisher] = max(pubs.get(publisher, at), at)
            self.entity_at[eid] = max(self.entity_at.get(eid, at), at)

    def add_link(self, a: int, b: int, at: int) -> None:
        for x, y in ((int(a), int(b)), (int(b), int(a))):
            st = self._story(x)
            st.links[y] = min(st.links.get(y, at), at)
            st.at = max(st.at, at)

    def add_merge(self, survivor: int, absorbed: int, at: int) -> None:
        """The absorbed story's coverage becomes the survivor's."""
        gone = self.stories.pop(int(absorbed), None)
        if gone is None:
            return
        st = self._story(int(survivor))
        st.language = st.language or gone.language
        st.at = max(st.at, gone.at, at)
        for p, t in gone.publishers.items():
            st.publishers[p] = max(st.publishers.get(p, t), t)
        for e, (n, t) in gone.entities.items():
            m, u = st.entities.get(e, (0, t))
            st.entities[e] = [m + n, max(t, u)]
        for o, t in gone.links.items():
            if o != int(survivor):
                st.links[o] = min(st.links.get(o, t), t)

    def fold(self, events) -> None:
        """Apply observation events (:func:`coverage_events`), then trim every table to its bound."""
        for ev in events:
            kind = ev[0]
            if kind == "original":
                _, sid, pub, lang, ents, at = ev
                self.add_original(sid, pub, lang, ents, at)
            elif kind == "link":
                self.add_link(ev[1], ev[2], ev[3])
            elif kind == "merge":
                self.add_merge(ev[1], ev[2], ev[3])
        self.trim()

    def trim(self) -> None:
        keep = _top(self.entity_at, MAX_ENTITIES)
        if len(keep) < len(self.entity_at):
            self.entity_at = keep
            self.entities = {e: p for e, p in self.entities.items() if e in keep}
        for e, pubs in self.entities.items():
            self.entities[e] = _top(pubs, PUBLISHERS_PER_ENTITY)
        if len(self.stories) > MAX_STORIES:
            kept = _top({s: st.at for s, st in self.stories.items()}, MAX_STORIES)
            self.stories = {s: st for s, st in self.stories.items() if s in kept}
        for st in self.stories.values():
            st.publishers = _top(st.publishers, PUBLISHERS_PER_STORY)
            if len(st.entities) > STORY_ENTITIES_KEPT:
                ranked = sorted(st.entities.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[0]), reverse=True)
                st.entities = dict(ranked[:STORY_ENTITIES_KEPT])
            st.links = _top(st.links, LINKS_PER_STORY)

    def story_entities(self, story_id: int) -> list[str]:
        """The story's ``STORY_ENTITIES`` most mentioned entity ids (ties: the most recent, then the id)."""
        st = self.stories.get(int(story_id))
        if st is None:
            return []
        ranked = sorted(st.entities.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
        return [e for e, _ in ranked[:STORY_ENTITIES]]


def coverage_events(change) -> list[tuple]:
    """The memory's events of one StoryChange's LINK or MERGE (originals come through :func:`original_event`);
    nothing for other kinds or an unreadable change (RankEditions dead-letters those)."""
    try:
        kind, other = change.get("kind"), change.get("other_story_id")
        if kind in ("LINK", "MERGE") and other is not None:
            return [(kind.lower(), int(change["story_id"]), int(other), int(change.get("at") or 0))]
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    return []


def original_event(story_id: int, obs: dict) -> tuple:
    """The memory's event of an original (an observation of :func:`transforms.editions.bursts.bursts.originals_of`)."""
    ents = tuple(obs.get("entities") or ())
    return ("original", int(story_id), obs["publisher_id"], obs["language"], ents, int(obs["first_seen_at"]))


def pull_publishers(pulse: dict, memory: CoverageMemory | None, registry, limit: int) -> list[tuple[str, int]]:
    """(publisher id, priority class) of the publishers a breaking pulse pulls, best first, at most ``limit``
    (module docstring: the rule)."""
    memory = memory or CoverageMemory()
    sid, end = int(pulse["story_id"]), int(pulse["window_end"])
    story = memory.stories.get(sid)
    linked = [memory.stories[o] for o in sorted(story.links) if o in memory.stories] if story else []
    languages = {pulse.get("language") or ""} | {st.language for st in linked if st.language}
    covering = set(pulse.get("publishers") or ())
    for st in ([story] if story else []) + linked:
        covering |= {p for p, t in st.publishers.items() if t < end}
    regions = {r for r in pulse.get("regions") or () if r}
    hits: dict[str, list] = {}  # publisher -> [matching entities, latest ms]
    for eid in memory.story_entities(sid):
        for pub, t in memory.entities.get(eid, {}).items():
            if t < end:
                h = hits.setdefault(pub, [0, t])
                h[0], h[1] = h[0] + 1, max(h[1], t)
    ranked = []
    for pub in registry:
        if pub.language not in languages:
            continue
        pid = pub.publisher_id
        if pid in covering:
            ranked.append(((COVERING, 0, 0, pid), pid))
        elif pub.region in regions:
            ranked.append(((REGION, 0, 0, pid), pid))
        elif pid in hits:
            ranked.append(((ENTITY, -hits[pid][0], -hits[pid][1], pid), pid))
        elif pub.tier == "authoritative" or pub.is_wire:
            ranked.append(((AUTHORITATIVE, 0, 0, pid), pid))
    ranked.sort()
    return [(pid, key[0]) for key, pid in ranked[: max(0, int(limit))]]
