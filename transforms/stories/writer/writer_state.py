"""The story writer's state: everything one language's writer holds, as one typed object, and the methods that change it.

:class:`transforms.stories.writer.cluster.StoryClusterer` owns one :class:`WriterState` and decides with it; the repairs
(:mod:`transforms.stories.writer.repair`, :mod:`transforms.stories.writer.recluster`) and the restore
(:mod:`transforms.stories.writer.restore`) take the state, read its fields and change it only through these methods, so
that the invariants between its parts hold in one place: a live story's members are in ``article_story``, its
originals' entities in ``postings``, its centroid in ``index``, its expiry and activity in the heaps, and (once
counted) its members in the IDF statistics ``lex``. Plain Python and numpy; reads and writes nothing outside memory.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from transforms.stories.index.index import CentroidSearch, make_index
from transforms.stories.vocabulary import ids as idmod
from transforms.stories.vocabulary.config import ClusterConfig, calibration, date_only
from transforms.stories.vocabulary.features import ArticleFeatures
from transforms.stories.writer.lexical import LexicalStats
from transforms.stories.writer.records import Change, change_record, story_meta
from transforms.stories.writer.scoring import Scorer
from transforms.stories.writer.state import Member, Story, recompute_centroid


class Pending:
    """Heap entry of a queued article, ordered by (first_seen_at, article_id)."""

    __slots__ = ("f",)

    def __init__(self, f: ArticleFeatures):
        self.f = f

    def __lt__(self, other: Pending) -> bool:
        return self.f.order_key < other.f.order_key


@dataclass(eq=False, repr=False)
class WriterState:
    """One language's writer state. Build it with the calibration in ``config``; ``explicit_config``: the caller
    chose it, so it does not follow the model the writer learns from its first article."""

    language: str
    model: str
    config: ClusterConfig
    explicit_config: bool = False
    exact_index: bool = False
    # Attach the explanation of each decision (transforms/stories/writer/explanations.py): off in the streaming job
    # (nothing reads them there), on in the backfill.
    explain: bool = False
    dim: int | None = None  # vector dimension (from the first vector when None)
    lex: LexicalStats = field(init=False)
    scorer: Scorer = field(init=False)
    index: CentroidSearch | None = field(init=False, default=None)
    stories: dict[int, Story] = field(init=False, default_factory=dict)
    article_story: dict[str, int] = field(init=False, default_factory=dict)  # members of live stories -> story
    # entity key -> {live story: originals holding it}: the re-clustering repair's entity postings
    postings: dict[str, dict[int, int]] = field(init=False, default_factory=dict)
    seq: int = field(init=False, default=0)  # the last change number given out
    clock: int = field(init=False, default=0)  # event time processed so far (ms)
    last_minted: int = field(init=False, default=0)
    last_repair_tick: int = field(init=False, default=0)
    until: int | None = field(init=False, default=None)  # the last bound the writer advanced to (Beam: the timer)
    pending: list[Pending] = field(init=False, default_factory=list)  # heap of queued articles
    pending_ids: set[str] = field(init=False, default_factory=set)
    expiry: list[tuple[int, int]] = field(init=False, default_factory=list)  # heap of (expires_at, story_id), lazy
    activity: list[tuple[int, int]] = field(init=False, default_factory=list)  # heap of (member at, story_id)
    max_activity: int = field(init=False, default=-(2**62))
    stats: Counter[str] = field(init=False, default_factory=Counter)
    live_bodies: int = field(init=False, default=0)  # sum of the live stories' n_body (originals with a body)

    def __post_init__(self) -> None:
        self.index = make_index(self.dim, exact=self.exact_index) if self.dim else None
        config = self.config
        self.lex = LexicalStats(ClusterConfig())
        self.scorer = Scorer(ClusterConfig(), self.lex, self.language)
        self.set_config(config)

    def __setstate__(self, state: dict) -> None:
        """A writer pickled before it summed its live bodies (a backfill checkpoint) sums them from its stories."""
        self.__dict__.update(state)
        if "live_bodies" not in state:
            self.live_bodies = sum(s.n_body for s in self.stories.values())

    # -- configuration ----------------------------------------------------------------------------------------
    def set_config(self, config: ClusterConfig) -> None:
        self.config = self.lex.config = self.scorer.config = config

    def adopt_model(self, model: str) -> None:
        """The writer learns its model from its first article; the calibration follows unless set explicitly."""
        self.model = model
        if not self.explicit_config:
            self.set_config(calibration(model, self.language))

    def ensure_index(self, dim: int) -> None:
        if self.index is None:
            self.dim = dim
            self.index = make_index(dim, exact=self.exact_index)

    # -- the queue and the clock ------------------------------------------------------------------------------
    def knows(self, article_id: str) -> bool:
        """Whether the article is queued or a member of a live story (a second copy would be a duplicate)."""
        return article_id in self.pending_ids or article_id in self.article_story

    def queue(self, article: ArticleFeatures) -> bool:
        """Queue an article; False (and nothing queued) when it is a duplicate."""
        if self.knows(article.article_id):
            self.tally("duplicate")
            return False
        self.pending_ids.add(article.article_id)
        heapq.heappush(self.pending, Pending(article))
        return True

    def next_pending(self) -> ArticleFeatures | None:
        return self.pending[0].f if self.pending else None

    def pop_pending(self) -> ArticleFeatures:
        f = heapq.heappop(self.pending).f
        self.pending_ids.discard(f.article_id)
        return f

    def upcoming(self, n: int, until: int) -> list[ArticleFeatures]:
        """The next at most ``n`` queued articles due by ``until``, in decision order, without dequeuing them: a
        best-first walk of the heap (O(n log n), whatever the queue's length)."""
        heap, out = self.pending, []
        frontier = [(heap[0], 0)] if heap else []
        while frontier and len(out) < n:
            entry, i = heapq.heappop(frontier)
            if entry.f.first_seen_at > until:
                break
            out.append(entry.f)
            for child in (2 * i + 1, 2 * i + 2):
                if child < len(heap):
                    heapq.heappush(frontier, (heap[child], child))
        return out

    def queued(self) -> list[ArticleFeatures]:
        """The queued (undecided) articles in decision order."""
        return [p.f for p in sorted(self.pending)]

    def bound(self, until: int) -> None:
        """The writer advances to ``until`` (the bound only grows: a late timer never moves it back)."""
        self.until = until if self.until is None else max(self.until, until)

    def reached(self, t: int, repair_tick: bool = False) -> None:
        """The writer processed an event at ``t`` (a repair tick when ``repair_tick``)."""
        if repair_tick:
            self.last_repair_tick = t
        self.clock = max(self.clock, t)

    def resume(self, seq: int, last_minted: int, clock: int, last_repair_tick: int, until: int | None) -> None:
        """The counters and clock of a restored writer (its stories are put back with :meth:`put_story`)."""
        self.seq, self.last_minted, self.clock = seq, last_minted, clock
        self.last_repair_tick, self.until = last_repair_tick, until

    def token(self) -> dict:
        """The small part of the state that Beam keeps (everything else is in the story store)."""
        return {"seq": self.seq, "clock": self.clock, "last_repair_tick": self.last_repair_tick, "until": self.until}

    def tally(self, name: str, n: int = 1) -> None:
        self.stats[name] += n

    def tally_max(self, name: str, value: int) -> None:
        self.stats[name] = max(self.stats[name], value)

    # -- numbering ----------------------------------------------------------------------------------------------
    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def mint(self, at: int) -> int:
        sid = idmod.mint(at, self.language, self.last_minted)
        self.last_minted = sid
        return sid

    # -- expiry and the repair window ---------------------------------------------------------------------------
    def expires_at(self, last_at: int) -> int:
        """When a story whose last article is at ``last_at`` leaves the live set: EXPIRE_HOURS later, counted from
        the end of its day when the time is known only to the day (:func:`transforms.stories.vocabulary.config.date_only`)."""
        return last_at + self.config.expire_ms + (self.config.day_slack_ms if date_only(last_at) else 0)

    def next_expiry(self) -> tuple[int, int] | None:
        """(time, story id) of the next expiry, dropping the heap's stale entries on the way."""
        while self.expiry:
            at, sid = self.expiry[0]
            s = self.stories.get(sid)
            if s is None or self.expires_at(s.last_at) != at:
                heapq.heappop(self.expiry)  # stale entry
                continue
            return at, sid
        return None

    def window_stories(self, since: int) -> list[int]:
        """Ids (ascending) of the live stories whose last article is later than ``since``: the repair window.

        Found from a heap of member times, cut below ``since`` (ticks only move forward), so a tick costs
        O(articles in the window), never O(live stories): sorting all 250,000 live stories took ~0.1 s of a tick
        (benchmarks/repair_bench.py). Exact, and the same in a restored writer: a story's last member is in the
        heap unless it is older than an earlier tick's window, and every member of a rebuilt story is pushed again.
        """
        h = self.activity
        while h and h[0][0] <= since:
            heapq.heappop(h)
        ids = {sid for _, sid in h}
        return sorted(sid for sid in ids if sid in self.stories and self.stories[sid].last_at > since)

    # -- stories ------------------------------------------------------------------------------------------------
    def add_member(self, s: Story, m: Member, count: bool = True) -> None:
        bodies = s.n_body
        s.add(m)
        self.live_bodies += s.n_body - bodies
        self.article_story[m.article_id] = s.story_id
        if count:
            self.lex.count(m, +1)
        if not m.is_copy:
            for e in m.entities:
                held = self.postings.setdefault(e, {})
                held[s.story_id] = held.get(s.story_id, 0) + 1
        heapq.heappush(self.expiry, (self.expires_at(s.last_at), s.story_id))
        heapq.heappush(self.activity, (m.at, s.story_id))
        self.max_activity = max(self.max_activity, m.at)

    def reindex(self, s: Story) -> None:
        """Put the story's current centroid in the index (after its sum moved)."""
        self.index.upsert(s.story_id, s.centroid().astype(np.float32))

    def put_story(self, s: Story, members: list[Member], count: bool = True) -> Story:
        """Make ``s`` (no members yet) a live story holding ``members`` (added in id order) and index it.
        ``count=False`` when the members are live already (a split or a move: counted since they arrived)."""
        self.stories[s.story_id] = s
        for m in sorted(members, key=lambda m: m.article_id):
            self.add_member(s, m, count=count)
        self.ensure_index(len(s.csum))
        self.reindex(s)
        return s

    def reset_story(self, s: Story, members: list[Member], recount: bool = True) -> Story:
        """Rebuild a story's counters and centroid from ``members`` (after a merge or split); returns the new
        :class:`Story` that replaces ``s`` under its id.

        ``recount=False`` when the members only move between live stories (a merge or a split): the IDF statistics
        are a function of the live members, so they do not change, and uncounting then recounting every member
        would only cost time (and invalidate the statistics' caches).
        """
        self.live_bodies -= s.n_body
        for m in s.members.values():
            if recount:
                self.lex.count(m, -1)
            self.article_story.pop(m.article_id, None)
            self._unpost(s.story_id, m)
        version = s.version
        fresh = Story(s.story_id, s.language, *recompute_centroid(members, self.config.half_life_ms))
        fresh.version = version
        fresh.last_repair_at = s.last_repair_at
        self.stories[s.story_id] = fresh
        for m in sorted(members, key=lambda m: m.article_id):
            self.add_member(fresh, m, count=recount)
        self.reindex(fresh)
        return fresh

    def drop_story(self, s: Story, uncount: bool = True) -> None:
        if self.stories.get(s.story_id) is s:
            self.live_bodies -= s.n_body
        for m in s.members.values():
            if uncount:
                self.lex.count(m, -1)
            self.article_story.pop(m.article_id, None)
            self._unpost(s.story_id, m)
        self.stories.pop(s.story_id, None)
        self.index.remove(s.story_id)

    def _unpost(self, sid: int, m: Member) -> None:
        if m.is_copy:
            return
        for e in m.entities:
            held = self.postings[e]
            held[sid] -= 1
            if held[sid] <= 0:
                del held[sid]
                if not held:
                    del self.postings[e]

    # -- records --------------------------------------------------------------------------------------------------
    def meta(self, s: Story) -> dict:
        return story_meta(s, self.language, self.model, self.last_minted)

    def change(self, seq: int, change: Change) -> dict:
        return change_record(self.language, seq, change)
