"""The per-language story writer: online assignment, repair (merge/split), expiry, story ids and change records.

Plain Python (numpy only). :class:`transforms.stories.beam.writer.ClusterStoriesFn` calls it from a stateful DoFn keyed by
language; the backfill, the tests and the benchmarks call it directly. Reads :class:`ArticleFeatures` (with vectors)
in (first_seen_at, article_id) order and the clock of event time; writes :class:`WriterOutput` records: a
``StoryChange`` (schemas/avro/story_change.avsc, the public decision) plus the durable effect of that decision on the
story store (story meta, centroid, member rows with their vectors), which :mod:`transforms.stories.writer.apply` writes.
The in-memory state is a cache of the store: :meth:`StoryClusterer.restore` rebuilds it from the store's live stories
and their members, bit for bit, so that a restarted writer decides exactly as the uninterrupted one would.

Decisions (DESIGN.md section 4; the calibration and its reasons: docs/stories.md)
- Copy first: an article whose ``copy_of`` names an article of a live story joins that story (``is_copy``); copies
  count once: they add no weight to the centroid, the lexical profile or the IDF statistics.
- Else the ~10 nearest live centroids (ANN index, :func:`transforms.stories.index.index.make_index`) are scored
  (:mod:`transforms.stories.writer.scoring`: dense + entity + TF-IDF cosines - a time penalty) and the best one is joined
  when its score reaches the join bar of the article's kind (with a body / headline only); else a new story starts.
- Centroids are recency weighted: ``sum = sum * 2^(-dt / HALF_LIFE) + v`` at each join, normalised for search.
- Stories leave the live set EXPIRE_HOURS (48 h) after their last article (EXPIRE change, at last + 48 h), counted
  from the end of the day when that time is a date without a time of day (:meth:`StoryClusterer.expires_at`).
- Two texts whose bodies print different days as their datelines never join (:mod:`transforms.stories.writer.evidence`).
- Every REPAIR_EVERY of event time, the recently active stories are split and merged (:mod:`transforms.stories.writer.repair`).
- Everything is ordered: events (arrivals, expiries, repair ticks) are processed in event-time order by
  :meth:`StoryClusterer.advance`; ties break by (time, kind, id); sets are iterated sorted. Float reductions are
  numpy pairwise sums over arrays built in a sorted order, so a restored writer computes the same bits.

Modules: :mod:`~transforms.stories.vocabulary.config` (calibration), :mod:`~transforms.stories.writer.state` (members, stories,
outputs), :mod:`~transforms.stories.writer.writer_state` (the writer's state, one typed object, and the methods that change
it), :mod:`~transforms.stories.writer.lexical` (IDF statistics, profiles), :mod:`~transforms.stories.writer.scoring`,
:mod:`~transforms.stories.writer.repair`, :mod:`~transforms.stories.writer.records` (meta and change records),
:mod:`~transforms.stories.writer.restore`.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from transforms.common import ASSIGN, EXPIRE, NEW_STORY
from transforms.stories.index.index import Lookahead
from transforms.stories.vocabulary import numbers
from transforms.stories.vocabulary import places as placemod
from transforms.stories.vocabulary.config import DAY_MS, ClusterConfig, calibration
from transforms.stories.vocabulary.features import ArticleFeatures
from transforms.stories.writer import explanations
from transforms.stories.writer.blas import one_blas_thread
from transforms.stories.writer.evidence import dates_disagree, printed_days
from transforms.stories.writer.lexical import LexicalStats
from transforms.stories.writer.recluster import recluster_tick
from transforms.stories.writer.records import Change
from transforms.stories.writer.repair import repair_tick
from transforms.stories.writer.restore import restore_state
from transforms.stories.writer.scoring import (
    OPINION_MEMBERS,
    Scorer,
    conflicting,
    min_pair,
    saga_terms,
    untimed_lead,
)
from transforms.stories.writer.state import Member, StoreBehind, Story, WriterOutput, decay, recompute_centroid
from transforms.stories.writer.writer_state import WriterState

# The names other modules import from here.
__all__ = [
    "ClusterConfig",
    "Member",
    "StoreBehind",
    "Story",
    "StoryClusterer",
    "WriterOutput",
    "WriterState",
    "calibration",
    "recompute_centroid",
]

KIND_ORDER = {"expire": 0, "article": 1, "repair": 2}
END_OF_TIME = 2**62


class StoryClusterer:
    """The single writer of one language. Queue articles with :meth:`add`, process events with :meth:`advance`.

    Its state (stories, index, statistics, counters, queue) is one :class:`WriterState`, ``state``; the repairs and
    the restore change it through the state's methods. The properties below read it.

    Args:
        language: the writer's language (part of every id it mints).
        model: the embedding model name (selects the calibration).
        config: explicit calibration (default: :func:`calibration` of model and language).
        dim: vector dimension (inferred from the first vector when None).
        exact_index: use exact search even when the ANN index is available.
        explain: attach to each output the explanation of its decision (transforms/stories/writer/explanations.py);
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
        self.state = WriterState(
            language,
            model,
            config or calibration(model, language),
            explicit_config=config is not None,
            exact_index=exact_index,
            explain=explain,
            dim=dim,
        )
        # the index searched ahead for the articles due in one firing (not state: a restored writer starts empty)
        self._lookahead = Lookahead()
        self._until = END_OF_TIME

    # -- read-only views of the state -----------------------------------------------------------------------------
    @property
    def language(self) -> str:
        return self.state.language

    @property
    def model(self) -> str:
        return self.state.model

    @property
    def config(self) -> ClusterConfig:
        return self.state.config

    @property
    def lex(self) -> LexicalStats:
        return self.state.lex

    @property
    def scorer(self) -> Scorer:
        return self.state.scorer

    @property
    def stories(self) -> dict[int, Story]:
        return self.state.stories

    @property
    def postings(self) -> dict[str, dict[int, int]]:
        return self.state.postings

    @property
    def stats(self) -> Counter[str]:
        return self.state.stats

    @property
    def seq(self) -> int:
        return self.state.seq

    @property
    def until(self) -> int | None:
        """The last bound :meth:`advance` was called with (Beam: the fired timer)."""
        return self.state.until

    @property
    def explain(self) -> bool:
        return self.state.explain

    @explain.setter
    def explain(self, on: bool) -> None:
        self.state.explain = on

    def set_config(self, config: ClusterConfig) -> None:
        self.state.set_config(config)

    def window_stories(self, since: int) -> list[int]:
        return self.state.window_stories(since)

    # -- public API -------------------------------------------------------------------------------------------
    def add(self, article: ArticleFeatures) -> None:
        """Queue an article; it is decided when :meth:`advance` passes its first_seen_at. Duplicates are dropped."""
        self.state.queue(article)

    def knows(self, article_id: str) -> bool:
        """Whether the article is queued or a member of a live story (a second copy would be a duplicate)."""
        return self.state.knows(article_id)

    def queued(self) -> list[ArticleFeatures]:
        """The queued (undecided) articles in decision order."""
        return self.state.queued()

    def next_event_time(self) -> int | None:
        """Event time of the next thing this writer will do (article, expiry or repair tick), or None."""
        times = []
        a = self.state.next_pending()
        if a is not None:
            times.append(a.first_seen_at)
        e = self.state.next_expiry()
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
        self.state.bound(until)
        self._until = until
        try:
            # small matrices: a second BLAS thread only spins (transforms/stories/writer/blas.py)
            with one_blas_thread():
                return self._advance(until, progress)
        finally:
            self._lookahead.clear()

    def _advance(self, until: int, progress) -> list[WriterOutput]:
        st = self.state
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
                out.extend(self._decide(st.pop_pending()))
                decided += 1
                if progress is not None:
                    progress(decided)
            else:
                out.extend((recluster_tick if st.config.repair_mode == "recluster" else repair_tick)(st, t))
            st.reached(t, repair_tick=kind == "repair")
        return out

    def run(self, articles, until: int | None = None) -> list[WriterOutput]:
        """Convenience: queue all, then advance to ``until`` (default: past every event, i.e. end of input)."""
        for a in articles:
            self.add(a)
        return self.advance(until if until is not None else END_OF_TIME)

    def score_article(self, f: ArticleFeatures, s: Story, art_vecs=None) -> tuple[float, float, float, float]:
        """(score, dense, lexical, entities) of a not-yet-counted article against a live story."""
        return self.state.scorer.score_article(f, s, art_vecs)

    def score_stories(self, a: Story, b: Story) -> float:
        """Score between two stories' profiles (the repair's merge and split criterion)."""
        return self.state.scorer.score_stories(a, b)

    def state_token(self) -> dict:
        """The small part of the writer's state that Beam keeps (everything else is in the story store)."""
        return self.state.token()

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
        """Rebuild the writer from the story store (:func:`transforms.stories.writer.restore.restore_state`).

        ``token`` is :meth:`state_token` as kept in Beam state. When the store's ``writer_seq`` is lower than the
        token's seq, the store has not applied every change yet and :class:`StoreBehind` is raised (transient).
        """
        writer = cls(language, model=model, config=config, exact_index=exact_index)
        restore_state(writer.state, store, token)
        return writer

    # -- event scheduling -------------------------------------------------------------------------------------
    def expires_at(self, last_at: int) -> int:
        """When a story whose last article is at ``last_at`` leaves the live set (:meth:`WriterState.expires_at`)."""
        return self.state.expires_at(last_at)

    def _next_repair_tick(self) -> int | None:
        st = self.state
        if not st.stories:
            return None
        every = st.config.repair_every_ms
        base = max(st.last_repair_tick, st.clock - 1)
        tick = (base // every + 1) * every
        if tick - st.config.repair_window_ms >= st.max_activity:
            return None  # no live story had an article in the window: nothing to repair until new activity
        return tick

    def _next_event(self, until: int):
        cands = []
        a = self.state.next_pending()
        if a is not None and a.first_seen_at <= until:
            cands.append((a.first_seen_at, KIND_ORDER["article"], a.article_id, "article", a))
        e = self.state.next_expiry()
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
        st = self.state
        if f.vector is None:
            raise ValueError(f"article {f.article_id} has no vector")
        if f.article_id in st.article_story:
            st.tally("duplicate")
            return []  # already assigned (a replayed or duplicated message): never assign twice
        st.ensure_index(len(f.vector))
        if not st.model and f.model:
            st.adopt_model(f.model)
        cands: list[dict] | None = [] if st.explain else None
        if f.copy_of and f.copy_of in st.article_story:
            st.tally("copy")
            out = self._join(st.stories[st.article_story[f.copy_of]], f, None, is_copy=True)
            return [self._explained(out, f, "copy", None, cands)]
        scored: list = []
        if len(st.index):
            art_vecs = st.lex.article_vectors(f.terms, f.term_tf, f.entities, counted=False)
            day = frozenset({f.first_seen_at // DAY_MS}) if f.dated_by_text else frozenset()
            at = f.first_seen_at
            live = []
            for sid, _ in self._nearest(f):
                s = st.stories[sid]
                if day and dates_disagree(day, printed_days(s.originals)):
                    continue  # the two texts print different days (transforms/stories/writer/evidence.py)
                if f.time_known and s.time_known and st.config.far_apart(at, at, s.first_at, s.last_at):
                    continue  # an article days away from one of the story's (ClusterConfig.far_apart_hours)
                live.append((sid, s))
            for (sid, s), sc in zip(live, st.scorer.score_candidates(f, [s for _, s in live], art_vecs)):
                if cands is not None:
                    cands.append(explanations.candidate(st.scorer, sid, sc, f, s))
                scored.append((sc, sid))
        bar = st.config.join if f.has_body else st.config.join_headline
        scored.sort(key=lambda x: (-x[0][0], x[1]))
        best = scored[0] if scored else None
        relief = st.config.untimed_relief if f.has_body and not f.time_known else None
        saga = saga_terms(st.config, [st.stories[sid] for _, sid in scored]) if untimed_lead(st.config, f) else None
        for sc, sid in scored:  # the best candidate over the bar whose second opinion (if asked) agrees
            if sc[0] < bar:
                if relief is None or sc[0] + relief < bar:
                    break
                if not self._untimed_opinion(f, st.stories[sid], art_vecs, saga):
                    explanations.decline(cands, sid)
                    continue
            elif not self._second_opinion(f, st.stories[sid], art_vecs, saga):
                explanations.decline(cands, sid)
                continue
            st.tally("join")
            out = self._join(st.stories[sid], f, sc[0], is_copy=False)
            return [self._explained(out, f, "join", bar, cands)]
        st.tally("new")
        return [self._explained(self._new_story(f, best[0][0] if best else None), f, "new", bar, cands)]

    def _nearest(self, f: ArticleFeatures) -> list[tuple[int, float]]:
        """The index's nearest live centroids of ``f``, as ``index.search`` gives them. The ANN snapshot is searched
        for the next articles due in this firing in one batch (:class:`Lookahead`); the changes the articles before
        each one make are read when it is decided (the index's exact delta and tombstones), so every decision is the
        one a one-at-a-time search gives, whatever the firing's size (streaming = backfill)."""
        st = self.state

        def upcoming(n: int) -> list[tuple[str, np.ndarray]]:
            later = [g for g in st.upcoming(n - 1, self._until) if g.vector is not None and self._searches(g)]
            return [(g.article_id, np.asarray(g.vector, dtype=np.float32)) for g in [f, *later]]

        vector = np.asarray(f.vector, dtype=np.float32)
        return self._lookahead.search(st.index, f.article_id, vector, st.config.candidates, upcoming)

    def _searches(self, f: ArticleFeatures) -> bool:
        """Whether deciding ``f`` will (probably) search the index: not a duplicate, nor a copy of a known article."""
        st = self.state
        return f.article_id not in st.article_story and not (f.copy_of and f.copy_of in st.article_story)

    def _second_opinion(self, f: ArticleFeatures, s: Story, art_vecs, saga: frozenset | None = None) -> bool:
        """Whether the learned pair score agrees with a join of an article with a body, asked only where the places
        or the headline ages of the article and the story's latest originals conflict (ClusterConfig.join_pair_margin,
        opinion_places, opinion_ages; headline-only articles and stories are decided on the profile score alone)."""
        c = self.state.config
        if f.has_body and s.has_body and not (f.time_known and s.time_known):
            m = Member.from_features(f, is_copy=False, seq=0)
            floor = min_pair(c, [m], s.latest_originals())
            if floor is not None and self.state.scorer.weakest_pair([m], s, saga) < floor:
                self.state.tally("join_untimed_min_pair_no")
                return False
        if not f.has_body or not s.has_body or (c.place_veto is None and c.join_pair_margin is None):
            return True
        ages_asked = c.opinion_ages is not None and bool(numbers.ages(f.title))
        if not f.places and not ages_asked and (c.opinion_places is not None or c.opinion_ages is not None):
            return True  # nothing that names the event to conflict with: the profile score's word stands
        ms = sorted(s.originals, key=lambda m: (m.at, m.article_id))[-OPINION_MEMBERS:]
        places = float(placemod.relation_matrix([f.places], [m.places for m in ms]).mean()) if f.places else 0.0
        if c.place_veto is not None and places <= c.place_veto:
            self.state.tally("join_place_veto")
            return False
        ages = numbers.relation_mean([f.title], [m.title for m in ms]) if ages_asked else 0.0
        if c.join_pair_margin is None or not conflicting(c, places, ages):
            return True
        ok = self.state.scorer.join_opinion(f, s, art_vecs) >= 0.0
        if not ok:
            self.state.tally("join_second_opinion_no")
        return ok

    def _untimed_opinion(self, f: ArticleFeatures, s: Story, art_vecs, saga: frozenset | None = None) -> bool:
        """Whether an untimed article with a body may join ``s`` at a score up to UNTIMED_RELIEF below the join bar:
        the learned pair score's average logit over the story's latest originals must reach the model's body bar plus
        UNTIMED_RELIEF_MARGIN (:meth:`Scorer.join_opinion`). Without a time, the profile score alone leaves untimed
        bodies above the bar of articles two days apart and a file of them fragments; the member-level score is the
        evidence that stands in for time (docs/stories.md, "Inputs without time")."""
        if not s.has_body:
            return False
        c = self.state.config
        if c.untimed_relief_complete:  # every pair with the story's latest originals, not their average
            m = Member.from_features(f, is_copy=False, seq=0)
            ok = self.state.scorer.weakest_pair([m], s, saga) >= c.untimed_relief_margin
        else:
            ok = self.state.scorer.join_opinion(f, s, art_vecs, c.untimed_relief_margin) >= 0.0
        self.state.tally("untimed_relief_join" if ok else "untimed_relief_no")
        return ok

    def _explained(self, out: WriterOutput, f: ArticleFeatures, kind: str, bar, cands) -> WriterOutput:
        """``out`` with the explanation of its decision attached (when ``explain`` is on: ``cands`` is a list)."""
        if cands is not None:
            ch = out.change
            out.explain = explanations.decision(self.state, f, kind, int(ch["story_id"]), int(ch["seq"]), bar, cands)
        return out

    def _new_story(self, f: ArticleFeatures, score: float | None) -> WriterOutput:
        st = self.state
        seq = st.next_seq()
        sid = st.mint(f.first_seen_at)
        m = Member.from_features(f, is_copy=False, seq=seq)
        s = st.put_story(Story(sid, st.language, csum=m.vector.astype(np.float64), ct=m.at), [m])
        ch = st.change(seq, Change(NEW_STORY, sid, at=f.first_seen_at, article=f, score=score, centroid=s.centroid()))
        return WriterOutput(ch, st.meta(s), {m.article_id: m.to_record()})

    def _join(self, s: Story, f: ArticleFeatures, score: float | None, is_copy: bool) -> WriterOutput:
        st = self.state
        seq = st.next_seq()
        m = Member.from_features(f, is_copy=is_copy, seq=seq)
        if not is_copy:
            if m.at > s.ct:
                s.csum = s.csum * decay(st.config.half_life_ms, m.at - s.ct)
                s.ct = m.at
            s.csum = s.csum + m.v64
        st.add_member(s, m)
        if not is_copy:
            st.reindex(s)
        centroid = s.centroid()
        ch = st.change(
            seq,
            Change(ASSIGN, s.story_id, at=f.first_seen_at, article=f, score=score, centroid=centroid, is_copy=is_copy),
        )
        return WriterOutput(ch, st.meta(s), {m.article_id: m.to_record()})

    def _expire(self, sid: int, t: int) -> list[WriterOutput]:
        st = self.state
        s = st.stories[sid]
        seq = st.next_seq()
        meta = st.meta(s)
        meta["expired_at"] = int(t)
        st.drop_story(s)
        st.tally("expire")
        return [WriterOutput(st.change(seq, Change(EXPIRE, sid, at=t)), meta)]
