"""The per-language story writer: online assignment, repair (merge/split), expiry, story ids and change records.

Plain Python (numpy only). :class:`transforms.stories.beam.ClusterStoriesFn` calls it from a stateful DoFn keyed by
language; the backfill, the tests and the benchmarks call it directly. Reads :class:`ArticleFeatures` (with vectors)
in (first_seen_at, article_id) order and the clock of event time; writes :class:`WriterOutput` records: a
``StoryChange`` (schemas/avro/story_change.avsc, the public decision) plus the durable effect of that decision on the
story store (story meta, centroid, member rows with their vectors), which :mod:`transforms.stories.apply` writes.
The in-memory state is a cache of the store: :meth:`StoryClusterer.restore` rebuilds it from the store's live stories
and their members, bit for bit, so that a restarted writer decides exactly as the uninterrupted one would.

Decisions (DESIGN.md section 4; the calibration and its reasons: docs/stories.md)
- Copy first: an article whose ``copy_of`` names an article of a live story joins that story (``is_copy``); copies
  count once: they add no weight to the centroid, the lexical profile or the IDF statistics.
- Else the ~10 nearest live centroids (ANN index, :func:`transforms.stories.index.make_index`) are scored
  (:mod:`transforms.stories.scoring`: dense + entity + TF-IDF cosines - a time penalty) and the best one is joined
  when its score reaches the join bar of the article's kind (with a body / headline only); else a new story starts.
- Centroids are recency weighted: ``sum = sum * 2^(-dt / HALF_LIFE) + v`` at each join, normalised for search.
- Stories leave the live set EXPIRE_HOURS (48 h) after their last article (EXPIRE change, at last + 48 h), counted
  from the end of the day when that time is a date without a time of day (:meth:`StoryClusterer.expires_at`).
- Two texts whose bodies print different days as their datelines never join (:mod:`transforms.stories.evidence`).
- Every REPAIR_EVERY of event time, the recently active stories are split and merged (:mod:`transforms.stories.repair`).
- Everything is ordered: events (arrivals, expiries, repair ticks) are processed in event-time order by
  :meth:`StoryClusterer.advance`; ties break by (time, kind, id); sets are iterated sorted. Float reductions are
  numpy pairwise sums over arrays built in a sorted order, so a restored writer computes the same bits.

Modules: :mod:`~transforms.stories.config` (calibration), :mod:`~transforms.stories.state` (members, stories,
outputs), :mod:`~transforms.stories.lexical` (IDF statistics, profiles), :mod:`~transforms.stories.scoring`,
:mod:`~transforms.stories.repair`, :mod:`~transforms.stories.records` (meta and change records),
:mod:`~transforms.stories.restore`.
"""

from __future__ import annotations

import heapq
from collections import Counter

import numpy as np

from transforms.common import ASSIGN, EXPIRE, NEW_STORY
from transforms.stories import explanations
from transforms.stories import ids as idmod
from transforms.stories.blas import one_blas_thread
from transforms.stories.config import DAY_MS, ClusterConfig, calibration, date_only
from transforms.stories.evidence import dates_disagree, printed_days
from transforms.stories.features import ArticleFeatures
from transforms.stories.index import make_index
from transforms.stories.lexical import LexicalStats
from transforms.stories.recluster import recluster_tick
from transforms.stories.records import change_record, story_meta
from transforms.stories.repair import repair_tick
from transforms.stories.restore import restore_writer
from transforms.stories.scoring import Scorer
from transforms.stories.state import Member, StoreBehind, Story, WriterOutput, decay, recompute_centroid

# The names other modules import from here.
__all__ = [
    "ClusterConfig",
    "Member",
    "StoreBehind",
    "Story",
    "StoryClusterer",
    "WriterOutput",
    "calibration",
    "recompute_centroid",
]

KIND_ORDER = {"expire": 0, "article": 1, "repair": 2}
END_OF_TIME = 2**62


class StoryClusterer:
    """The single writer of one language. Queue articles with :meth:`add`, process events with :meth:`advance`.

    Args:
        language: the writer's language (part of every id it mints).
        model: the embedding model name (selects the calibration).
        config: explicit calibration (default: :func:`calibration` of model and language).
        dim: vector dimension (inferred from the first vector when None).
        exact_index: use exact search even when the ANN index is available.
        explain: attach to each output the explanation of its decision (transforms/stories/explanations.py);
            off in the streaming job (nothing reads them there), on in the backfill.
    """

    def __init__(
        self,
        language: str,
        model: str = "",
        config: ClusterConfig | None = None,
        dim: int | None = None,
        exact_index: bool = False,
        explain: bool = False,
    ):
        self.language = language
        self.explain = explain
        self.model = model
        self._explicit_config = config is not None
        self.dim = dim
        self.exact_index = exact_index
        self.index = make_index(dim, exact=exact_index) if dim else None
        self.stories: dict[int, Story] = {}
        self.article_story: dict[str, int] = {}  # members of live stories -> story
        # entity key -> {live story: originals holding it}: the re-clustering repair's entity postings
        self.postings: dict[str, dict[int, int]] = {}
        self.lex = LexicalStats(ClusterConfig())
        self.scorer = Scorer(ClusterConfig(), self.lex, language)
        self.set_config(config or calibration(model, language))
        self.seq = 0
        self.clock = 0  # event time processed so far (ms)
        self.last_minted = 0
        self.last_repair_tick = 0
        self.until: int | None = None  # the last bound :meth:`advance` was called with (Beam: the fired timer)
        self.pending: list = []
        self._pending_ids: set[str] = set()
        self._expiry: list[tuple[int, int]] = []  # heap of (expires_at, story_id), lazily cleaned
        self._activity: list[tuple[int, int]] = []  # heap of (member at, story_id): the repair window's stories
        self._max_activity = -(2**62)
        self.stats: Counter = Counter()

    # -- public API -------------------------------------------------------------------------------------------
    def add(self, article: ArticleFeatures) -> None:
        """Queue an article; it is decided when :meth:`advance` passes its first_seen_at. Duplicates are dropped."""
        if article.article_id in self._pending_ids or article.article_id in self.article_story:
            self.stats["duplicate"] += 1
            return
        self._pending_ids.add(article.article_id)
        heapq.heappush(self.pending, _Pending(article))

    def knows(self, article_id: str) -> bool:
        """Whether the article is queued or a member of a live story (a second copy would be a duplicate)."""
        return article_id in self._pending_ids or article_id in self.article_story

    def queued(self) -> list[ArticleFeatures]:
        """The queued (undecided) articles in decision order."""
        return [p.f for p in sorted(self.pending)]

    def next_event_time(self) -> int | None:
        """Event time of the next thing this writer will do (article, expiry or repair tick), or None."""
        times = []
        if self.pending:
            times.append(self.pending[0].f.first_seen_at)
        e = self._next_expiry()
        if e is not None:
            times.append(e[0])
        r = self._next_repair_tick()
        if r is not None:
            times.append(r)
        return min(times) if times else None

    def advance(self, until: int, progress=None) -> list[WriterOutput]:
        """Process every event with time <= ``until`` in (time, kind, id) order; returns the decisions.
        ``progress``: called with the number of articles decided so far in this call, after each (the backfill's
        one firing decides a whole language: transforms.common.Progress prints its share and time left)."""
        self.until = until if self.until is None else max(self.until, until)
        with one_blas_thread():  # small matrices: a second BLAS thread only spins (transforms/stories/blas.py)
            return self._advance(until, progress)

    def _advance(self, until: int, progress) -> list[WriterOutput]:
        out: list[WriterOutput] = []
        decided = 0
        while True:
            nxt = self._next_event(until)
            if nxt is None:
                break
            t, kind, payload = nxt
            if kind == "expire":
                out.extend(self._expire(payload, t))
            elif kind == "article":
                heapq.heappop(self.pending)
                self._pending_ids.discard(payload.article_id)
                out.extend(self._decide(payload))
                decided += 1
                if progress is not None:
                    progress(decided)
            else:
                out.extend((recluster_tick if self.config.repair_mode == "recluster" else repair_tick)(self, t))
                self.last_repair_tick = t
            self.clock = max(self.clock, t)
        return out

    def run(self, articles, until: int | None = None) -> list[WriterOutput]:
        """Convenience: queue all, then advance to ``until`` (default: past every event, i.e. end of input)."""
        for a in articles:
            self.add(a)
        return self.advance(until if until is not None else END_OF_TIME)

    def score_article(self, f: ArticleFeatures, s: Story, art_vecs=None) -> tuple[float, float, float, float]:
        """(score, dense, lexical, entities) of a not-yet-counted article against a live story."""
        return self.scorer.score_article(f, s, art_vecs)

    def score_stories(self, a: Story, b: Story) -> float:
        """Score between two stories' profiles (the repair's merge and split criterion)."""
        return self.scorer.score_stories(a, b)

    def state_token(self) -> dict:
        """The small part of the writer's state that Beam keeps (everything else is in the story store)."""
        return {"seq": self.seq, "clock": self.clock, "last_repair_tick": self.last_repair_tick, "until": self.until}

    @classmethod
    def restore(
        cls,
        store,
        language: str,
        token: dict | None = None,
        model: str = "",
        config: ClusterConfig | None = None,
        exact_index: bool = False,
    ) -> StoryClusterer:
        """Rebuild the writer from the story store (:func:`transforms.stories.restore.restore_writer`).

        ``token`` is :meth:`state_token` as kept in Beam state. When the store's ``writer_seq`` is lower than the
        token's seq, the store has not applied every change yet and :class:`StoreBehind` is raised (transient).
        """
        return restore_writer(cls(language, model=model, config=config, exact_index=exact_index), store, token)

    # -- event scheduling -------------------------------------------------------------------------------------
    def _next_expiry(self) -> tuple[int, int] | None:
        while self._expiry:
            at, sid = self._expiry[0]
            s = self.stories.get(sid)
            if s is None or self.expires_at(s.last_at) != at:
                heapq.heappop(self._expiry)  # stale entry
                continue
            return at, sid
        return None

    def expires_at(self, last_at: int) -> int:
        """When a story whose last article is at ``last_at`` leaves the live set: EXPIRE_HOURS later, counted from
        the end of its day when the time is known only to the day (:func:`transforms.stories.config.date_only`)."""
        return last_at + self.config.expire_ms + (self.config.day_slack_ms if date_only(last_at) else 0)

    def _next_repair_tick(self) -> int | None:
        if not self.stories:
            return None
        every = self.config.repair_every_ms
        base = max(self.last_repair_tick, self.clock - 1)
        tick = (base // every + 1) * every
        if tick - self.config.repair_window_ms >= self._max_activity:
            return None  # no live story had an article in the window: nothing to repair until new activity
        return tick

    def _next_event(self, until: int):
        cands = []
        if self.pending and self.pending[0].f.first_seen_at <= until:
            a = self.pending[0].f
            cands.append((a.first_seen_at, KIND_ORDER["article"], a.article_id, "article", a))
        e = self._next_expiry()
        if e is not None and e[0] <= until:
            cands.append((e[0], KIND_ORDER["expire"], f"{e[1]:020d}", "expire", e[1]))
        tr = self._next_repair_tick()
        if tr is not None and tr <= until:
            cands.append((tr, KIND_ORDER["repair"], "", "repair", None))
        if not cands:
            return None
        t, _, _, kind, payload = min(cands, key=lambda c: c[:3])
        return t, kind, payload

    # -- decisions ------------------------------------------------------------------------------------------------
    def _decide(self, f: ArticleFeatures) -> list[WriterOutput]:
        if f.vector is None:
            raise ValueError(f"article {f.article_id} has no vector")
        if f.article_id in self.article_story:
            self.stats["duplicate"] += 1
            return []  # already assigned (a replayed or duplicated message): never assign twice
        self.ensure_index(len(f.vector))
        if not self.model and f.model:
            self.adopt_model(f.model)
        cands: list[dict] | None = [] if self.explain else None
        if f.copy_of and f.copy_of in self.article_story:
            self.stats["copy"] += 1
            out = self._join(self.stories[self.article_story[f.copy_of]], f, None, is_copy=True)
            return [self._explained(out, f, "copy", None, cands)]
        best = None
        if len(self.index):
            art_vecs = self.lex.article_vectors(f.terms, f.term_tf, f.entities, counted=False)
            day = frozenset({f.first_seen_at // DAY_MS}) if f.dated_by_text else frozenset()
            for sid, _ in self.index.search(np.asarray(f.vector, dtype=np.float32), k=self.config.candidates):
                s = self.stories[sid]
                if day and dates_disagree(day, printed_days(s.originals)):
                    continue  # the two texts print different days (transforms/stories/evidence.py)
                sc = self.scorer.score_article(f, s, art_vecs)
                if cands is not None:
                    cands.append(explanations.candidate(self.scorer, sid, sc, f, s))
                if best is None or (sc[0], -sid) > (best[0][0], -best[1]):
                    best = (sc, sid)
        bar = self.config.join if f.has_body else self.config.join_headline
        if best is not None and best[0][0] >= bar:
            self.stats["join"] += 1
            out = self._join(self.stories[best[1]], f, best[0][0], is_copy=False)
            return [self._explained(out, f, "join", bar, cands)]
        self.stats["new"] += 1
        return [self._explained(self._new_story(f, best[0][0] if best else None), f, "new", bar, cands)]

    def _explained(self, out: WriterOutput, f: ArticleFeatures, kind: str, bar, cands) -> WriterOutput:
        """``out`` with the explanation of its decision attached (when ``explain`` is on: ``cands`` is a list)."""
        if cands is not None:
            ch = out.change
            out.explain = explanations.decision(self, f, kind, int(ch["story_id"]), int(ch["seq"]), bar, cands)
        return out

    def _new_story(self, f: ArticleFeatures, score: float | None) -> WriterOutput:
        seq = self.next_seq()
        sid = self.mint(f.first_seen_at)
        m = Member.from_features(f, is_copy=False, seq=seq)
        s = Story(sid, self.language, csum=m.vector.astype(np.float64), ct=m.at)
        self.stories[sid] = s
        self.add_member(s, m)
        self.index.upsert(sid, s.centroid().astype(np.float32))
        ch = self.change(seq, NEW_STORY, sid, at=f.first_seen_at, article=f, score=score, centroid=s.centroid())
        return WriterOutput(ch, self.meta(s), {m.article_id: m.to_record()})

    def _join(self, s: Story, f: ArticleFeatures, score: float | None, is_copy: bool) -> WriterOutput:
        seq = self.next_seq()
        m = Member.from_features(f, is_copy=is_copy, seq=seq)
        if not is_copy:
            if m.at > s.ct:
                s.csum = s.csum * decay(self.config.half_life_ms, m.at - s.ct)
                s.ct = m.at
            s.csum = s.csum + m.vector.astype(np.float64)
        self.add_member(s, m)
        if not is_copy:
            self.index.upsert(s.story_id, s.centroid().astype(np.float32))
        centroid = s.centroid()
        ch = self.change(
            seq, ASSIGN, s.story_id, at=f.first_seen_at, article=f, score=score, centroid=centroid, is_copy=is_copy
        )
        return WriterOutput(ch, self.meta(s), {m.article_id: m.to_record()})

    def _expire(self, sid: int, t: int) -> list[WriterOutput]:
        s = self.stories[sid]
        seq = self.next_seq()
        meta = self.meta(s)
        meta["expired_at"] = int(t)
        self.drop_story(s)
        self.stats["expire"] += 1
        return [WriterOutput(self.change(seq, EXPIRE, sid, at=t), meta)]

    # -- state (also used by repair and restore) -----------------------------------------------------------------
    def set_config(self, config: ClusterConfig) -> None:
        self.config = self.lex.config = self.scorer.config = config

    def adopt_model(self, model: str) -> None:
        """The writer learns its model from its first article; the calibration follows unless set explicitly."""
        self.model = model
        if not self._explicit_config:
            self.set_config(calibration(model, self.language))

    def ensure_index(self, dim: int) -> None:
        if self.index is None:
            self.dim = dim
            self.index = make_index(dim, exact=self.exact_index)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def mint(self, at: int) -> int:
        sid = idmod.mint(at, self.language, self.last_minted)
        self.last_minted = sid
        return sid

    def add_member(self, s: Story, m: Member, count: bool = True) -> None:
        s.add(m)
        self.article_story[m.article_id] = s.story_id
        if count:
            self.lex.count(m, +1)
        if not m.is_copy:
            for e in m.entities:
                held = self.postings.setdefault(e, {})
                held[s.story_id] = held.get(s.story_id, 0) + 1
        heapq.heappush(self._expiry, (self.expires_at(s.last_at), s.story_id))
        heapq.heappush(self._activity, (m.at, s.story_id))
        self._max_activity = max(self._max_activity, m.at)

    def window_stories(self, since: int) -> list[int]:
        """Ids (ascending) of the live stories whose last article is later than ``since``: the repair window.

        Found from a heap of member times, cut below ``since`` (ticks only move forward), so a tick costs
        O(articles in the window), never O(live stories): sorting all 250,000 live stories took ~0.1 s of a tick
        (benchmarks/repair_bench.py). Exact, and the same in a restored writer: a story's last member is in the
        heap unless it is older than an earlier tick's window, and every member of a rebuilt story is pushed again.
        """
        h = self._activity
        while h and h[0][0] <= since:
            heapq.heappop(h)
        ids = {sid for _, sid in h}
        return sorted(sid for sid in ids if sid in self.stories and self.stories[sid].last_at > since)

    def reset_story(self, s: Story, members: list[Member], recount: bool = True) -> None:
        """Rebuild a story's counters and centroid from ``members`` (after a merge or split).

        ``recount=False`` when the members only move between live stories (a merge or a split): the IDF statistics
        are a function of the live members, so they do not change, and uncounting then recounting every member
        would only cost time (and invalidate the statistics' caches).
        """
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
        self.index.upsert(s.story_id, fresh.centroid().astype(np.float32))

    def drop_story(self, s: Story, uncount: bool = True) -> None:
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

    def meta(self, s: Story) -> dict:
        return story_meta(s, self.language, self.model, self.last_minted)

    def change(self, seq: int, kind: str, story_id: int, at: int, **fields) -> dict:
        return change_record(self.language, seq, kind, story_id, at, **fields)


class _Pending:
    """Heap entry of a queued article, ordered by (first_seen_at, article_id)."""

    __slots__ = ("f",)

    def __init__(self, f: ArticleFeatures):
        self.f = f

    def __lt__(self, other: _Pending) -> bool:
        return self.f.order_key < other.f.order_key
