"""Storylines: stories of one subject followed over weeks (a mission from launch to landing), linked by shared
salient entities and close centroids, with time decay.

Reads the writers' outputs (:class:`transforms.stories.writer.state.WriterOutput` dicts of every language, through
:func:`compact`) and the link writer's LINK changes; writes ``StorylineChange`` records
(schemas/avro/storyline_change.avsc) of the storyline writer, one gap-free sequence (storylines span languages).

Ticks. The stage decides at event-time ticks every :data:`EVERY_MS` (10 min, like the cross-language linker): an
output belongs to the first tick boundary after its ``at``; at a tick the writer folds that tick's outputs in
(language, seq) order, then decides each story that was born or grew in (story id) order. The streaming stage
(:class:`transforms.stories.beam.storylines.StorylinesFn`) and the backfill (:func:`storyline_changes`) group the
same outputs into the same ticks, so they make the same decisions (tests/transforms/stories/test_storyline.py).

The rule, for a story S that was born or grew:
- Salient entities: its :data:`SALIENT` most frequent entity keys over its originals (ties: rarer key first).
- Candidates from an index, never all pairs: the entity postings (key -> at most :data:`POSTING_CAP` stories, the
  most recently active kept), read rarest key first, at most :data:`CANDIDATES` earlier stories (first seen before
  S), live or archived (an expired story stays in the index until its decay makes a link impossible,
  :data:`HORIZON_MS`). Same language only: centroids of two writers' models are not comparable; stories of other
  languages join through the linker's same-event LINKs (linked stories share a storyline).
- Score: ``(cos(centroids) + ENTITY_WEIGHT * idf-weighted overlap of the salient sets) * 0.5 ** (gap / HALF_LIFE)``
  where gap = S's first article time minus the candidate's last (0 when they overlap). A link needs
  :data:`MIN_SHARED` shared salient keys, ``cos >= MIN_COS`` and ``score >= THRESHOLD``; S keeps its
  :data:`MAX_LINKS` best (its out-edges, replaced at every decision).
- S joins the oldest storyline among its links (storyline ids are time-ordered); the others merge into it
  (MERGE: the older survives, the younger becomes a one-hop alias, chains rewritten on merge). No link and no
  storyline yet: S founds one (NEW_STORYLINE). Every story has exactly one storyline.
- Repair: a story absorbed by a story MERGE hands the edges of the later stories linked to it to its survivor
  (which now holds its articles; their storylines merge if they differ), then leaves (DETACH). When S's decision
  drops an edge, or a story leaves, its storyline's link graph is checked; each connected component without the storyline's oldest story leaves as a new storyline
  (SPLIT, the oldest story's component keeps the id).

Cost per tick: O(changed stories x (SALIENT x POSTING_CAP + CANDIDATES x dims)) plus, for a storyline that lost an
edge, a walk over its stories; never a pass over every story (``benchmarks/storyline_bench.py`` prints it).

Storyline ids are minted like story ids (:mod:`transforms.stories.vocabulary.ids`): the founding story's first-seen
millisecond (a split's: the tick), language slot ``mul``, strictly increasing under the writer's ``last_minted``.

Calibration: provisional. No labelled set of ours groups events into subjects (BASIL's ``topic`` is one event's
description, ECB+'s topics pair different events of one kind, which must *not* link); the settings are chosen
so that two events need two shared names and a same-language cosine of at least 0.35 within a few weeks.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from transforms.common import DAY_MS, EXPIRE, LINK, MERGE, PLACEMENTS, SPLIT
from transforms.stories.vocabulary import ids as idmod
from transforms.stories.vocabulary.features import decode_vector, encode_vector

WRITER = "storyline"
ID_LANGUAGE = "mul"
EVERY_MS = 600_000
SALIENT = 8
POSTING_CAP = 64
CANDIDATES = 40
MAX_LINKS = 3
MIN_SHARED = 2
MIN_COS = 0.35
ENTITY_WEIGHT = 0.5
THRESHOLD = 0.5
HALF_LIFE_MS = 14 * DAY_MS
# Beyond this gap even identical stories (score 1 + ENTITY_WEIGHT before decay) cannot pass THRESHOLD.
HORIZON_MS = int(HALF_LIFE_MS * math.log2((1.0 + ENTITY_WEIGHT) / THRESHOLD)) + 1

NEW_STORYLINE, ATTACH, SL_MERGE, SL_SPLIT, DETACH = "NEW_STORYLINE", "ATTACH", "MERGE", "SPLIT", "DETACH"
STORYLINE_KINDS = (NEW_STORYLINE, ATTACH, SL_MERGE, SL_SPLIT, DETACH)  # = the StorylineKind enum's symbols


def tick_of(at: int, every_ms: int = EVERY_MS) -> int:
    """The tick boundary that decides an output at ``at``: the first multiple of ``every_ms`` after it."""
    return (int(at) // every_ms + 1) * every_ms


def compact(out: dict) -> dict:
    """The part of a writer output the storyline stage reads (what the streaming stage keeps in its bag)."""
    ch = out["change"]
    keep = ("kind", "story_id", "other_story_id", "language", "seq", "at", "article_ids")
    c = {"change": {k: ch.get(k) for k in keep}}
    if ch.get("centroid"):
        c["centroid"] = encode_vector(np.asarray(ch["centroid"], dtype=np.float32))
    if out.get("other_centroid"):
        c["other_centroid"] = encode_vector(np.asarray(out["other_centroid"], dtype=np.float32))
    c["members"] = {
        a: {"entities": list(m.get("entities") or []), "is_copy": bool(m.get("is_copy")), "at": m.get("at")}
        for a, m in sorted((out.get("members") or {}).items())
    }
    return c


@dataclass
class _Story:
    story_id: int
    language: str
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)  # originals: article id -> entity keys
    times: dict[str, int] = field(default_factory=dict)
    centroid: np.ndarray | None = None
    first_at: int = 0
    last_at: int = 0
    live: bool = True
    salient: tuple[str, ...] = ()
    # Each entity key's number of members holding it, kept as members join (None: rebuilt from the members at the
    # next counts(), after a merge or split, or for a story pickled before it was kept). With the span kept the same
    # way, a story's output costs O(its articles), not O(the story): a 400-article burst cost 5.5x per article at
    # its end when both were recomputed from every member (tests/transforms/stories/test_storyline_cost.py).
    ent_counts: Counter | None = None

    def add(self, aid: str, ents, at) -> None:
        keys = tuple(ents)
        old = self.members.get(aid)
        self.members[aid] = keys
        if self.ent_counts is not None:
            if old is not None:
                self.ent_counts.subtract(set(old))
                self.ent_counts = +self.ent_counts  # drops the keys no member holds any more
            self.ent_counts.update(set(keys))
        if at is None:
            return
        prev = self.times.get(aid)
        self.times[aid] = t = int(at)
        if prev is not None and prev != t:
            self.span()
        elif len(self.times) == 1:
            self.first_at = self.last_at = t
        else:
            self.first_at, self.last_at = min(self.first_at, t), max(self.last_at, t)

    def span(self) -> None:
        ts = [t for a, t in self.times.items() if a in self.members]
        if ts:
            self.first_at, self.last_at = min(ts), max(ts)

    def counts(self) -> Counter:
        """Entity key -> members holding it (read-only: the story keeps it up to date)."""
        if self.ent_counts is None:
            c = Counter()
            for ents in self.members.values():
                c.update(set(ents))
            self.ent_counts = c
        return self.ent_counts


def change_record(seq: int, kind: str, storyline_id: int, at: int, **fields) -> dict:
    """A ``StorylineChange`` record (schemas/avro/storyline_change.avsc)."""
    rec = {
        "schema_version": 1,
        "change_id": idmod.change_id(WRITER, seq, kind),
        "seq": int(seq),
        "kind": kind,
        "storyline_id": int(storyline_id),
        "other_storyline_id": None,
        "story_id": None,
        "story_ids": [],
        "language": None,
        "entities": [],
        "score": None,
        "at": int(at),
    }
    rec.update(fields)
    return rec


class StorylineWriter:
    """The single storyline writer: its view of every story within the horizon, the entity postings, the storylines
    (members, one-hop aliases, link graph) and its sequence. Deterministic: every loop runs in a sorted order."""

    def __init__(self):
        self.stories: dict[int, _Story] = {}
        self.storyline_of: dict[int, int] = {}
        self.members_of: dict[int, set[int]] = {}
        self.aliases: dict[int, int] = {}  # absorbed storyline -> survivor (one hop)
        self.alias_sources: dict[int, set[int]] = {}
        self.out_edges: dict[int, dict[int, float]] = {}  # story -> earlier stories it links to (score)
        self.in_edges: dict[int, set[int]] = {}
        self.postings: dict[str, list[int]] = {}
        self.df: Counter = Counter()  # entity key -> stories holding it among their salient keys
        self.dirty: set[int] = set()
        self.absorbed: list[tuple[int, int]] = []  # (absorbed, survivor) of the story MERGEs since the last tick
        self.pending_links: list[tuple[int, int]] = []
        self.archived: list[tuple[int, int]] = []  # heap of (last article time, story) of expired stories
        self.seq = 0
        self.last_minted = 0
        self.changes: list[dict] = []

    # -- folding the writers' outputs --------------------------------------------------------------------------
    def observe(self, c: dict) -> None:
        """Fold one compact writer output (:func:`compact`) into the view; decisions wait for :meth:`tick`."""
        ch = c["change"]
        kind, sid = ch["kind"], int(ch["story_id"])
        if kind == LINK:
            self.pending_links.append((sid, int(ch["other_story_id"])))
            return
        st = self.stories.get(sid)
        if st is None:
            if kind == EXPIRE:
                return
            st = self.stories[sid] = _Story(sid, ch["language"])
        if kind in PLACEMENTS:
            for aid, m in c.get("members", {}).items():
                if not m.get("is_copy"):
                    st.add(aid, m.get("entities") or (), m.get("at"))
        elif kind == MERGE:
            gone = self.stories.get(int(ch["other_story_id"]))
            if gone is not None:
                st.members.update(gone.members)
                st.times.update(gone.times)
                st.span()
                st.ent_counts = None
                self.absorbed.append((gone.story_id, sid))
        elif kind == SPLIT:
            self._split_story(st, c)
        elif kind == EXPIRE:
            st.live = False
            heapq.heappush(self.archived, (st.last_at, sid))
            return
        if c.get("centroid"):
            st.centroid = _unit(decode_vector(c["centroid"]))
        st.live = True
        self.dirty.add(sid)

    def _split_story(self, st: _Story, c: dict) -> None:
        ch = c["change"]
        nid = int(ch["other_story_id"])
        new = self.stories.setdefault(nid, _Story(nid, st.language))
        for aid in ch.get("article_ids") or []:
            if aid in st.members:
                new.members[aid] = st.members.pop(aid)
                if aid in st.times:
                    new.times[aid] = st.times.pop(aid)
        st.span()
        new.span()
        st.ent_counts = new.ent_counts = None
        if c.get("other_centroid"):
            new.centroid = _unit(decode_vector(c["other_centroid"]))
        self.dirty.add(nid)

    # -- the tick ----------------------------------------------------------------------------------------------
    def tick(self, at: int) -> list[dict]:
        """Decide what changed since the last tick; return the StorylineChange records, in seq order."""
        self.changes = []
        check: set[int] = set()
        for gone, into in sorted(set(self.absorbed)):
            self._inherit(gone, into, at)
            self._detach(gone, at, check)
        self.absorbed = []
        # Earliest first: a story's candidates (first seen before it) are decided before it in the same tick.
        for sid in sorted((s for s in self.dirty if s in self.stories), key=lambda s: (self.stories[s].first_at, s)):
            self._decide(self.stories[sid], at, check)
        self.dirty = set()
        for a, b in sorted(self.pending_links):
            self._link(a, b, at)
        self.pending_links = []
        for sl in sorted(check):
            sl = self.resolve(sl)
            if sl in self.members_of:
                self._split_check(sl, at)
        self._forget(at)
        return self.changes

    def resolve(self, storyline_id: int) -> int:
        return self.aliases.get(storyline_id, storyline_id)

    def _emit(self, kind: str, storyline_id: int, at: int, **fields) -> None:
        self.seq += 1
        self.changes.append(change_record(self.seq, kind, storyline_id, at, **fields))

    def _mint(self, first_ms: int) -> int:
        self.last_minted = idmod.mint(first_ms, ID_LANGUAGE, self.last_minted)
        return self.last_minted

    def _detach(self, sid: int, at: int, check: set[int]) -> None:
        st = self.stories.pop(sid, None)
        self._set_edges(sid, {})
        for src in sorted(self.in_edges.pop(sid, set())):
            self.out_edges.get(src, {}).pop(sid, None)
        for key in st.salient if st else ():
            if sid in self.postings.get(key, []):
                self.postings[key].remove(sid)
                self.df[key] -= 1
        sl = self.storyline_of.pop(sid, None)
        if sl is None:
            return
        self.members_of[sl].discard(sid)
        self._emit(DETACH, sl, at, story_id=sid)
        if self.members_of[sl]:
            check.add(sl)

    def _inherit(self, gone: int, into: int, at: int) -> None:
        """A story MERGE: the later stories linked to the absorbed story link to its survivor, which now holds its
        articles (the survivor's own links are decided again: it is dirty); their storylines merge if they differ."""
        if into not in self.stories or into == gone:
            return
        for src in sorted(self.in_edges.get(gone, ())):
            if src == into:
                continue
            edges = dict(self.out_edges.get(src, {}))
            score = edges.pop(gone, 0.0)
            edges[into] = max(edges.get(into, 0.0), score)
            self._set_edges(src, edges)
            a, b = self.storyline_of.get(src), self.storyline_of.get(into)
            if a is not None and b is not None and a != b:
                self._merge(min(a, b), max(a, b), at, story_id=src)

    def _decide(self, st: _Story, at: int, check: set[int]) -> None:
        self._index(st)
        links = self._best_links(st)
        old = self.out_edges.get(st.story_id, {})
        if set(old) - set(links) and st.story_id in self.storyline_of:
            check.add(self.storyline_of[st.story_id])
        self._set_edges(st.story_id, links)
        targets = sorted({self.storyline_of[t] for t in links if t in self.storyline_of})
        mine = self.storyline_of.get(st.story_id)
        if mine is None and not targets:
            sl = self._mint(st.first_at or at)
            self.members_of[sl] = {st.story_id}
            self.storyline_of[st.story_id] = sl
            self._emit(NEW_STORYLINE, sl, at, story_id=st.story_id, language=st.language, entities=list(st.salient))
            return
        survivor = min(targets + ([mine] if mine is not None else []))
        if mine is None:
            best = max(links, key=lambda t: (links[t], -t))
            self.members_of[survivor].add(st.story_id)
            self.storyline_of[st.story_id] = survivor
            shared = sorted(set(st.salient) & set(self.stories[best].salient))
            self._emit(
                ATTACH,
                survivor,
                at,
                story_id=st.story_id,
                language=st.language,
                entities=shared,
                score=float(links[best]),
            )
        for other in sorted(set(targets + ([mine] if mine is not None else [])) - {survivor}):
            self._merge(survivor, other, at, story_id=st.story_id)

    def _link(self, a: int, b: int, at: int) -> None:
        """A same-event LINK across languages: both stories in one storyline, held together by an edge."""
        sa, sb = self.storyline_of.get(a), self.storyline_of.get(b)
        if sa is None or sb is None:
            return
        later, earlier = (a, b) if a > b else (b, a)
        edges = dict(self.out_edges.get(later, {}))
        edges[earlier] = max(edges.get(earlier, 0.0), 1.0)
        self._set_edges(later, edges)
        if sa != sb:
            self._merge(min(sa, sb), max(sa, sb), at, story_id=later)

    def _merge(self, survivor: int, other: int, at: int, story_id: int | None = None) -> None:
        moved = self.members_of.pop(other)
        for s in moved:
            self.storyline_of[s] = survivor
        self.members_of[survivor] |= moved
        for src in self.alias_sources.pop(other, set()):
            self.aliases[src] = survivor
            self.alias_sources.setdefault(survivor, set()).add(src)
        self.aliases[other] = survivor
        self.alias_sources.setdefault(survivor, set()).add(other)
        self._emit(SL_MERGE, survivor, at, other_storyline_id=other, story_id=story_id)

    def _split_check(self, sl: int, at: int) -> None:
        members = self.members_of[sl]
        comps = self._components(members)
        if len(comps) < 2:
            return
        oldest = min(members)
        for comp in sorted(comps, key=min):
            if oldest in comp:
                continue
            new = self._mint(at)
            self.members_of[sl] -= comp
            self.members_of[new] = set(comp)
            for s in comp:
                self.storyline_of[s] = new
            self._emit(SL_SPLIT, sl, at, other_storyline_id=new, story_ids=sorted(comp))

    def _components(self, members: set[int]) -> list[set[int]]:
        seen: set[int] = set()
        comps = []
        for start in sorted(members):
            if start in seen:
                continue
            comp, todo = {start}, [start]
            while todo:
                s = todo.pop()
                for n in list(self.out_edges.get(s, {})) + sorted(self.in_edges.get(s, ())):
                    if n in members and n not in comp:
                        comp.add(n)
                        todo.append(n)
            seen |= comp
            comps.append(comp)
        return comps

    def _set_edges(self, sid: int, links: dict[int, float]) -> None:
        for t in self.out_edges.get(sid, {}):
            ins = self.in_edges.get(t)
            if ins is not None:
                ins.discard(sid)
                if not ins:
                    del self.in_edges[t]
        if links:
            self.out_edges[sid] = dict(links)
            for t in links:
                self.in_edges.setdefault(t, set()).add(sid)
        else:
            self.out_edges.pop(sid, None)

    # -- the index ---------------------------------------------------------------------------------------------
    def _index(self, st: _Story) -> None:
        """Recompute the story's salient keys and move its postings (each bounded to POSTING_CAP stories)."""
        counts = st.counts()
        new = tuple(heapq.nsmallest(SALIENT, counts, key=lambda k: (-counts[k], self.df[k], k)))
        sid = st.story_id
        for key in sorted(set(st.salient) - set(new)):
            self.df[key] -= 1
            posting = self.postings.get(key, [])
            if sid in posting:
                posting.remove(sid)
        for key in sorted(set(new) - set(st.salient)):
            self.df[key] += 1
        st.salient = new
        for key in new:
            posting = self.postings.setdefault(key, [])
            if sid not in posting:
                posting.append(sid)
            if len(posting) > POSTING_CAP:  # the least recently active story leaves this key's posting
                drop = min(posting, key=lambda s: (self.stories[s].last_at if s in self.stories else -1, s))
                posting.remove(drop)

    def _candidates(self, st: _Story) -> list[_Story]:
        """Earlier stories of the language sharing a salient key, rarest key first, at most CANDIDATES."""
        out: dict[int, _Story] = {}
        me = (st.first_at, st.story_id)
        for key in sorted(st.salient, key=lambda k: (len(self.postings.get(k, ())), k)):
            for sid in self.postings.get(key, ()):
                c = self.stories.get(sid)
                if c is None or sid in out or c.language != st.language or c.centroid is None:
                    continue
                if (c.first_at, sid) >= me or st.first_at - c.last_at > HORIZON_MS:
                    continue
                out[sid] = c
                if len(out) >= CANDIDATES:
                    return [out[s] for s in sorted(out)]
        return [out[s] for s in sorted(out)]

    def _best_links(self, st: _Story) -> dict[int, float]:
        """The MAX_LINKS best earlier stories passing the rule (module docstring), as {story: score}."""
        if st.centroid is None or not st.salient:
            return {}
        cands = self._candidates(st)
        if not cands:
            return {}
        cos = np.stack([c.centroid for c in cands]) @ st.centroid
        n = max(len(self.stories), 1)
        mine = set(st.salient)
        scored = []
        for c, cs in zip(cands, cos.tolist()):
            shared = mine & set(c.salient)
            if len(shared) < MIN_SHARED or cs < MIN_COS:
                continue
            idf = {k: math.log(1.0 + n / max(self.df[k], 1)) for k in mine | set(c.salient)}
            ent = math.fsum(idf[k] for k in shared) / math.fsum(idf.values())  # exact: no set order in the bits
            gap = max(0, st.first_at - c.last_at)
            score = (cs + ENTITY_WEIGHT * ent) * 0.5 ** (gap / HALF_LIFE_MS)
            if score >= THRESHOLD:
                scored.append((-score, c.story_id))
        return {sid: -neg for neg, sid in sorted(scored)[:MAX_LINKS]}

    def _forget(self, at: int) -> None:
        """Archived stories past the horizon leave the writer: the index, and the storyline graph (membership,
        edges; a storyline left without stories, and its aliases). Nothing can link to such a story any more, so
        its storyline, as published by the records, is final; the writer's state stays bounded by the horizon
        instead of growing with history (benchmarks/storyline_history.py)."""
        while self.archived and self.archived[0][0] + HORIZON_MS < at:
            last, sid = heapq.heappop(self.archived)
            st = self.stories.get(sid)
            if st is None or st.live or st.last_at != last:
                continue
            for key in st.salient:
                posting = self.postings.get(key, [])
                if sid in posting:
                    posting.remove(sid)
                self.df[key] -= 1
                if self.df[key] <= 0:
                    del self.df[key]
                    self.postings.pop(key, None)
            del self.stories[sid]
            self._retire(sid)

    def _retire(self, sid: int) -> None:
        """A forgotten story leaves the storyline graph without a record (it stays in its storyline)."""
        self._set_edges(sid, {})
        for src in self.in_edges.pop(sid, set()):
            self.out_edges.get(src, {}).pop(sid, None)
            if src in self.out_edges and not self.out_edges[src]:
                del self.out_edges[src]
        sl = self.storyline_of.pop(sid, None)
        if sl is None or sl not in self.members_of:
            return
        self.members_of[sl].discard(sid)
        if not self.members_of[sl]:
            del self.members_of[sl]
            for src in self.alias_sources.pop(sl, set()):
                self.aliases.pop(src, None)

    # -- results -----------------------------------------------------------------------------------------------
    def storylines(self) -> list[dict]:
        """The storylines the writer holds (their stories within the horizon; a run's whole storylines: fold_storylines)."""
        return [
            {"storyline_id": sl, "stories": sorted(self.members_of[sl])}
            for sl in sorted(self.members_of)
            if self.members_of[sl]
        ]


def fold_storylines(changes: list[dict]) -> list[dict]:
    """Every storyline with its stories (oldest first), folded from StorylineChange records as a consumer folds them:
    the run's ``storylines.jsonl``. The records, not the writer's state, are the whole history: the writer forgets a
    story past the horizon, and its place in its storyline is what the records last said."""
    of: dict[int, int] = {}
    members: dict[int, set[int]] = {}

    def put(story: int, line: int) -> None:
        if story in of and of[story] in members:
            members[of[story]].discard(story)
        of[story] = line
        members.setdefault(line, set()).add(story)

    for c in changes:
        kind, line = c["kind"], c["storyline_id"]
        if kind in (NEW_STORYLINE, ATTACH):
            put(c["story_id"], line)
        elif kind == SL_MERGE:
            for story in members.pop(c["other_storyline_id"], set()):
                put(story, line)
        elif kind == SL_SPLIT:
            for story in c["story_ids"]:
                put(story, c["other_storyline_id"])
        elif kind == DETACH and c["story_id"] in of:
            members.get(of.pop(c["story_id"]), set()).discard(c["story_id"])
    return [{"storyline_id": sl, "stories": sorted(members[sl])} for sl in sorted(members) if members[sl]]


def _unit(v: np.ndarray | None) -> np.ndarray | None:
    if v is None:
        return None
    v = np.asarray(v, dtype=np.float64)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else None


def storyline_changes(compacts: list[dict], every_ms: int = EVERY_MS, writer: StorylineWriter | None = None):
    """Run the storyline writer over a finished run's compact outputs, tick by tick as the streaming stage would.

    Returns (the StorylineChange records in seq order, the writer)."""
    ordered = sorted(compacts, key=lambda c: compact_key(c, every_ms))
    return storyline_changes_in_order(ordered, every_ms, writer)


def compact_key(c: dict, every_ms: int = EVERY_MS) -> tuple:
    """The order in which :func:`storyline_changes` reads the compacts: by tick, then within one (:func:`_order`)."""
    return (tick_of(c["change"]["at"], every_ms), *_order(c))


def storyline_changes_in_order(
    ordered: Iterable[dict], every_ms: int = EVERY_MS, writer: StorylineWriter | None = None
):
    """:func:`storyline_changes` over compacts already in :func:`compact_key` order, read one at a time (an
    iterator: the backfill decodes each from its pickle as it comes)."""
    w = writer or StorylineWriter()
    changes: list[dict] = []
    t = None
    for c in ordered:
        tc = tick_of(c["change"]["at"], every_ms)
        if t is not None and tc != t:
            changes.extend(w.tick(t))
        t = tc
        w.observe(c)
    if t is not None:
        changes.extend(w.tick(t))
    return changes, w


def _order(c: dict) -> tuple:
    """Within a tick: the writers' outputs by (language, seq); the link writer ("mul") among them by its seq."""
    ch = c["change"]
    return (ch["language"], int(ch["seq"]))
