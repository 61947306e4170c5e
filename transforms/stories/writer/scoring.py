"""Scores of the story writer: an article against a story, a story against a story, article pairs.

    score = cos(article, centroid) + W_ENTITY * cos_entities + W_LEXICAL * cos_tfidf - time_penalty

where cos_entities / cos_tfidf compare TF-IDF vectors (:mod:`transforms.stories.writer.lexical`) and time_penalty =
TIME_WEIGHT * min(hours apart, 48) / 48 when both times are known, or UNKNOWN_TIME_PENALTY when either is not (a
file without times gives no evidence of temporal proximity). Reads stories and the writer's lexical statistics;
writes nothing (the average-linkage cache of a merge pass aside).

Name kept: each stage that scores has its own ``scoring.py`` (transforms/editions/cycle/scoring.py ranks stories for
pages, transforms/authority/scoring.py weighs publishers), always imported through its package.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from transforms.common import HOUR_MS
from transforms.stories.vocabulary import numbers
from transforms.stories.vocabulary import places as placemod
from transforms.stories.vocabulary.config import ClusterConfig
from transforms.stories.vocabulary.features import ArticleFeatures
from transforms.stories.writer import pairscore
from transforms.stories.writer.evidence import disagree, evidence
from transforms.stories.writer.lexical import LexicalStats, dot, row_matrix, sum_rows, units_matrix
from transforms.stories.writer.state import LATEST_ORIGINALS, Member, Story, recompute_centroid

# The latest originals a join's second opinion compares the article with (its cost bound): those a story keeps.
OPINION_MEMBERS = LATEST_ORIGINALS


class Scorer:
    """The scores of one writer (its calibration, language and lexical statistics)."""

    def __init__(self, config: ClusterConfig, lex: LexicalStats, language: str):
        self.config = config
        self.lex = lex
        self.language = language

    def penalty(self, known: bool, gap_ms: int) -> float:
        c = self.config
        if not known:
            return c.unknown_time_penalty
        hours = min(max(gap_ms, 0) / HOUR_MS, c.expire_hours)
        return c.time_weight * hours / c.expire_hours

    def combine(self, dense: float, lex: float, ent: float) -> float:
        return dense + self.config.w_entity * ent + self.config.w_lexical * lex

    def article_score(self, dense: float, lex: float, ent: float, known: bool, gap_ms: int) -> float:
        """The join score from its features: what :meth:`score_article` returns, and what an explanation
        (transforms/stories/writer/explanations.py) is re-scored with."""
        return self.combine(dense, lex, ent) - self.penalty(known, gap_ms)

    def score_article(self, f: ArticleFeatures, s: Story, art_vecs=None) -> tuple[float, float, float, float]:
        """(score, dense, lexical, entities) of a not-yet-counted article against a live story."""
        return self.score_candidates(f, [s], art_vecs)[0]

    def score_candidates(self, f: ArticleFeatures, stories: list[Story], art_vecs=None) -> list[tuple]:
        """:meth:`score_article` of ``f`` against each of ``stories`` (an arrival's candidates), the lexical dot
        products of all of them computed together (:meth:`LexicalStats.profile_dots_many`): the same bits."""
        vecs = art_vecs or self.lex.article_vectors(f.terms, f.term_tf, f.entities, counted=False)
        v = np.asarray(f.vector, dtype=np.float64)
        out = []
        for s, (lex, ent) in zip(stories, self.lex.profile_dots_many(stories, vecs)):
            dense = float(np.dot(v, s.centroid()))
            score = self.article_score(dense, lex, ent, f.time_known and s.time_known, f.first_seen_at - s.last_at)
            out.append((score, dense, lex, ent))
        return out

    def score_stories(self, a: Story, b: Story, detail: dict | None = None) -> float:
        """Score between two stories' profiles (the repair's merge and split criterion). ``detail``, when given,
        receives the features (an explanation: transforms/stories/writer/explanations.py)."""
        at, ae = self.lex.profile(a)
        bt, be = self.lex.profile(b)
        dense = float(np.dot(a.centroid(), b.centroid()))
        known = a.time_known and b.time_known
        gap = max(a.first_at, b.first_at) - min(a.last_at, b.last_at)
        lex, ent = dot(at, bt), dot(ae, be)
        score = self.article_score(dense, lex, ent, known, gap)
        if detail is not None:
            detail.update(
                criterion="profiles", dense=dense, lexical=lex, entities=ent, time_known=known, gap_ms=int(gap)
            )
        return score

    def merge_margin(self, a: Story, b: Story, cache: dict, detail: dict | None = None) -> float:
        """How far two stories are above the repair's merge criterion (>= 0: they may merge). ``detail``, when
        given, receives the criterion, its features, score and bar (score - bar is the margin)."""
        c = self.config
        if a.time_known and b.time_known and c.far_apart(a.first_at, a.last_at, b.first_at, b.last_at):
            return -math.inf  # a pair of their articles is days apart (ClusterConfig.far_apart_hours)
        if c.merge_headline_average is not None and not (a.has_body or b.has_body) and a.n and b.n:
            known = a.time_known and b.time_known
            gap = max(a.first_at, b.first_at) - min(a.last_at, b.last_at)
            if c.merge_headline_learned:
                sums = self.linkage_sums(a, cache), self.linkage_sums(b, cache)
                return self.learned_margin(*sums, known, gap, detail, places=places_mean(a, b, cache))
            between = linkage_mean(self.linkage_sums(a, cache), self.linkage_sums(b, cache), c)
            if detail is not None:
                detail.update(criterion="average pair score", score=between - self.penalty(known, gap))
                detail.update(bar=c.merge_headline_average, time_known=known, gap_ms=int(gap))
            return between - self.penalty(known, gap) - c.merge_headline_average
        if a.has_body and b.has_body and disagree(self.evidence(a, cache), self.evidence(b, cache)):
            return -math.inf  # their headlines name different things (transforms/stories/writer/evidence.py)
        places = places_mean(a, b, cache) if c.place_veto is not None or c.merge_pair_margin is not None else 0.0
        if c.place_veto is not None and places <= c.place_veto:
            return -math.inf  # they report from places neither of which lies in the other
        ages = ages_mean(a, b) if c.opinion_ages is not None and a.has_body and b.has_body else 0.0
        score, bar = self.score_stories(a, b, detail), self.merge_bar(a, b)
        if detail is not None:
            detail.update(score=score, bar=bar)
        untimed = not (a.time_known and b.time_known) and a.has_body and b.has_body and a.n and b.n
        if untimed and score >= bar:
            ma, mb = a.latest_originals(), b.latest_originals()
            floor = min_pair(c, ma, mb)
            if floor is not None:
                return min(score - bar, self.weakest_pair(ma, b) - floor)
        asked = c.merge_pair_margin is not None and conflicting(c, places, ages)
        if asked and a.has_body and b.has_body and a.n and b.n and score >= bar:
            known = a.time_known and b.time_known
            gap = max(a.first_at, b.first_at) - min(a.last_at, b.last_at)
            sums = self.linkage_sums(a, cache), self.linkage_sums(b, cache)
            pair_bar = float(self.model().thresholds["body"]) + c.merge_pair_margin
            opinion = self.learned_margin(*sums, known, gap, None, pair_bar, places)
            return min(score - bar, opinion)  # both the profiles and the average article pair must agree
        return score - bar

    def surely_below(self, a: Story, b: Story, cache: dict) -> bool:
        """Whether :meth:`merge_margin` of two headline-only stories on the learned pair score is surely < 0, told
        without their TF-IDF sums (which the IDF, moved by every article, makes new at every tick).

        A unit row's values lie in (0, 1] (IDF > 0: df + 1 < N + IDF_PRIOR), so the sum of a key's values over a
        story's originals is at most the number of originals holding it (``Story.tf`` / ``Story.ent``), and the
        average pair cosine of two stories is at most sum over shared keys of those counts' products / (na * nb)
        (and at most 1). With the model's weights of those features >= 0, the margin with these bounds in place of
        the cosines is an upper bound of the margin itself (its other features exact); below 0 by more than any
        rounding, the pair cannot be proposed."""
        c = self.config
        if c.merge_headline_average is None or not c.merge_headline_learned or a.has_body or b.has_body:
            return False
        if not (a.n and b.n) or (
            a.time_known and b.time_known and c.far_apart(a.first_at, a.last_at, b.first_at, b.last_at)
        ):
            return False
        model = self.model()
        w = dict(zip(pairscore.FEATURES, model.weights))
        if w["entities"] < 0 or w["tfidf"] < 0:
            return False
        nn = float(len(a.originals_by_id()) * len(b.originals_by_id()))
        known = a.time_known and b.time_known
        gap = max(a.first_at, b.first_at) - min(a.last_at, b.last_at)
        time = 0.0
        if known:
            hours = min(max(gap, 0) / HOUR_MS, pairscore.TIME_SPAN_HOURS)
            time = 1.0 - 2.0 * hours / pairscore.TIME_SPAN_HOURS
        bar = float(model.thresholds["headline"]) + c.merge_headline_learned_margin
        # the cosines bounded by the sums each story kept from the last time they were computed where both have
        # them (LexicalStats.story_bounds: ~6x tighter on headlines), else by the shared counts
        kept = self.lex.story_bounds(a, a.originals_by_id()), self.lex.story_bounds(b, b.originals_by_id())
        if kept[0] is not None and kept[1] is not None:
            lex_dot, ent_dot = bound_dots(kept[0], kept[1], cache, self.lex.columns.size)
        else:
            lex_dot, ent_dot = shared_counts(a.tf, b.tf), shared_counts(a.ent, b.ent)
        ent, lex = min(1.0, ent_dot / nn), min(1.0, lex_dot / nn)
        # the places feature (a mean of relations in [-1, 1]) at its most favourable first: a pair already surely
        # below with it is below with its own (the logits' roundings, ~1e-14 here, are far inside the 1e-9 taken),
        # and its places, a relation matrix between the two stories' latest originals, are never computed
        best_places = 1.0 if w["places"] >= 0 else -1.0
        x = np.array([float(np.dot(a.dense_sum(), b.dense_sum())) / nn, ent, lex, time, best_places])
        if float(model.logit(x)) - bar < -1e-6 - 1e-9:
            return True
        x[4] = places_mean(a, b, cache)
        return float(model.logit(x)) - bar < -1e-6 - 1e-9

    def model(self) -> pairscore.PairScore:
        """The learned pair score of this calibration (ClusterConfig.pair_score, else the shipped one)."""
        return pairscore.load(self.config.pair_score or pairscore.MODEL_PATH)

    def join_opinion(self, f: ArticleFeatures, s: Story, art_vecs: tuple, margin: float | None = None) -> float:
        """The second opinion on a join: the learned pair score's average logit between the article and the story's
        latest OPINION_MEMBERS originals, minus the model's body bar and ``margin`` (default JOIN_PAIR_MARGIN; >= 0: it
        may join).
        The profile score compares an article with a story's centroid, which a run of one kind of event (shootings
        in four cities) makes generic; the average over the members asks whether the article is like *them*."""
        ms = s.latest_originals()
        rows = self.lex.unit_rows_of(ms)
        V = np.stack([m.v64 for m in ms])
        n = float(len(ms))
        dense = float(np.sum(V @ np.asarray(f.vector, dtype=np.float64))) / n
        tv, ev = art_vecs
        time = 0.0
        if f.time_known:
            hours = [abs(f.first_seen_at - m.at) / HOUR_MS for m in ms if m.time_known]
            span = pairscore.TIME_SPAN_HOURS
            time = math.fsum(1.0 - 2.0 * min(h, span) / span for h in hours) / n
        ent, lex = dot(ev, sum_rows([r[1] for r in rows])) / n, dot(tv, sum_rows([r[0] for r in rows])) / n
        places = float(placemod.relation_matrix([f.places], [m.places for m in ms]).mean())
        x = np.array([dense, ent, lex, time, places])
        model = self.model()
        margin = self.config.join_pair_margin if margin is None else margin
        return float(model.logit(x)) - float(model.thresholds["body"]) - margin

    def weakest_pair(self, ma: list[Member], b: Story, saga: frozenset | None = None) -> float:
        """The smallest learned pair logit between ``ma`` and ``b``'s latest OPINION_MEMBERS originals, less the
        model's body bar (complete linkage: every pair must agree, so a saga's items cannot chain through a centroid)."""
        mb = b.latest_originals()
        ms = list(ma) + mb
        V = np.stack([m.v64 for m in ms])
        rows = self.lex.unit_rows_of(ms)
        E, T = row_matrix([r[1] for r in rows]), row_matrix([r[0] for r in rows])
        known = np.array([m.time_known for m in ms])
        at = np.array([m.at for m in ms], dtype=np.int64)
        places = placemod.relation_matrix([m.places for m in ms])
        X = np.stack([V @ V.T, E @ E.T, T @ T.T, pairscore.time_feature(known, at), places], axis=-1)
        model = self.model()
        weakest = float(model.logit(X)[: len(ma), len(ma) :].min()) - float(model.thresholds["body"])
        if self.config.lead_weekdays and weekdays_conflict(ma, mb, self.config.headlines_as_leads):
            return -math.inf
        if saga is not None and saga_only(ma, mb, saga, self.config.headlines_as_leads):
            return -math.inf
        return weakest

    def evidence(self, s: Story, cache: dict) -> tuple:
        """A story's headline and text keys (:func:`transforms.stories.writer.evidence.evidence`), once per merge pass."""
        key = ("evidence", s.story_id)
        hit = cache.get(key)
        if hit is not None and hit[0] is s:
            return hit[1]
        out = evidence(s.originals)
        cache[key] = (s, out)
        return out

    def learned_margin(
        self,
        a: tuple,
        b: tuple,
        known: bool,
        gap_ms: int,
        detail: dict | None = None,
        bar: float | None = None,
        places: float = 0.0,
    ) -> float:
        """The learned pair score's average logit between two stories' articles (from their linkage sums) minus its
        headline bar. The features are linear in the articles' vectors, so the average logit is the logit of the
        average cosines; the time term uses the stories' gap (0, neutral, when either time is unknown). The bar is the
        model's headline bar plus the calibration's MERGE_HEADLINE_LEARNED_MARGIN."""
        model = self.model()
        (dv, ts, es, n), (dv2, ts2, es2, n2) = a, b
        nn = float(n * n2)
        time = 0.0
        if known:
            hours = min(max(gap_ms, 0) / HOUR_MS, pairscore.TIME_SPAN_HOURS)
            time = 1.0 - 2.0 * hours / pairscore.TIME_SPAN_HOURS
        x = np.array([float(np.dot(dv, dv2)) / nn, dot(es, es2) / nn, dot(ts, ts2) / nn, time, places])
        if bar is None:  # the headline merge bar
            bar = float(model.thresholds["headline"]) + self.config.merge_headline_learned_margin
        if detail is not None:
            detail.update(criterion="learned pair score", score=float(model.logit(x)), bar=bar)
            detail.update(features={k: float(v) for k, v in zip(pairscore.FEATURES, x)})
        return float(model.logit(x)) - bar

    def linkage_sums(self, s: Story, cache: dict) -> tuple:
        """(sum of dense vectors, sum of TF-IDF unit vectors, sum of entity unit vectors, n) over the originals.

        The average article-pair score between two stories is the dot product of their sums over na * nb, so a
        story's sums are computed once per merge pass (per shadow: a merged group gets its own), its articles'
        TF-IDF vectors once per IDF state (:meth:`LexicalStats.unit_rows`), its dense sum once per change of its
        members (:meth:`Story.dense_sum`). Each sum adds the members in article-id order.
        """
        hit = cache.get(s.story_id)
        if hit is not None and hit[0] is s:
            return hit[1]
        ms = s.originals_by_id()
        sums = self.lex.story_sums(s, ms)  # the same bits as summing unit_rows_of(ms), without a row per member
        if sums is None:
            rows = self.lex.unit_rows_of(ms)
            sums = sum_rows([r[0] for r in rows]), sum_rows([r[1] for r in rows])
        out = (s.dense_sum(), sums[0], sums[1], len(ms))
        cache[s.story_id] = (s, out)
        return out

    def merge_bar(self, a: Story, b: Story) -> float:
        c = self.config
        base = c.merge if (a.has_body and b.has_body) else c.merge_headline
        return base + c.merge_size_slope * math.log2(max(min(a.n, b.n), 1))

    def pair_matrix(self, ms: list[Member], story: Story | None = None) -> np.ndarray:
        """Article-level score matrix (dense + entity + lexical cosines) between members (``story``: when ``ms`` are
        its originals in article-id order, whose unit rows it keeps: :meth:`LexicalStats.story_units`)."""
        V = np.stack([m.v64 for m in ms])
        dense = V @ V.T
        units = self.lex.story_units(story, ms) if story is not None else None
        if units is not None:
            T, E = (units_matrix(*u) for u in units)  # columns: the sorted keys, as row_matrix's
        else:
            rows = self.lex.unit_rows_of(ms)
            T = row_matrix([r[0] for r in rows])  # columns: the sorted keys
            E = row_matrix([r[1] for r in rows])
        return dense + self.config.w_entity * (E @ E.T) + self.config.w_lexical * (T @ T.T)

    def shadow(self, members: list[Member], centroid_sum: tuple | None = None) -> Story:
        """A throw-away story holding ``members`` (to score a proposed half or group); ``centroid_sum``: their
        :func:`recompute_centroid` when already known."""
        st = Story(0, self.language, *(centroid_sum or recompute_centroid(members, self.config.half_life_ms)))
        for m in sorted(members, key=lambda m: m.article_id):
            st.add(m)
        return st


def bound_dots(a: tuple, b: tuple, cache: dict, size: int) -> tuple[float, float]:
    """Per kind (terms, entities), the sum over the key columns two stories share of their
    :meth:`LexicalStats.story_bounds` products: an upper bound of their sums' dot product (every bound >= 0; a
    story's keys are distinct), times 1 + 1e-9 for the rounding. ``size``: the key columns' count (every column is
    below it). The first story's bounds are scattered by key column into arrays the pass keeps in ``cache`` (the
    merge pass asks one proposer against its ~10 candidates in a row), so each pair costs a gather and a dot per
    kind."""
    held = cache.get("bounds scattered")
    if held is None or held[0] is not a or len(held[1][0]) < size:
        if held is None or len(held[1][0]) < size:
            scratch = tuple(np.zeros(max(1024, 2 * size)) for _ in a)
        else:
            scratch = held[1]
            for (cols, _), into in zip(held[0], scratch):
                into[cols] = 0.0
        for (cols, bound), into in zip(a, scratch):
            into[cols] = bound
        held = cache["bounds scattered"] = (a, scratch)
    dots = [float(np.dot(into[cols], bound)) * (1.0 + 1e-9) for (cols, bound), into in zip(b, held[1])]
    return dots[0], dots[1]


def shared_counts(a: dict, b: dict) -> float:
    """Sum over the keys ``a`` and ``b`` share of their counts' products (integers: exact in any order; the shared
    keys are found by one set intersection, in C, rather than a Python step per key of the smaller)."""
    return float(sum(a[k] * b[k] for k in a.keys() & b.keys()))


def places_mean(a: Story, b: Story, cache: dict | None = None) -> float:
    """The average ``places`` pair feature (transforms/stories/vocabulary/places.py) between two stories' latest
    OPINION_MEMBERS originals each (``cache``: a merge pass's, which keeps it per ordered pair: the merge pass asks
    :meth:`Scorer.surely_below` and then :meth:`Scorer.merge_margin` of the same pair, and the relation matrix is
    the costly part; keyed by the two objects, held in the entry, as a merged group's shadow is a new one)."""
    if cache is None:
        return _places_mean(a, b)
    key = ("places", id(a), id(b))
    hit = cache.get(key)
    if hit is not None and hit[0] is a and hit[1] is b:
        return hit[2]
    out = _places_mean(a, b)
    cache[key] = (a, b, out)
    return out


def _places_mean(a: Story, b: Story) -> float:
    pa = [m.places for m in a.latest_originals()]
    pb = [m.places for m in b.latest_originals()]
    if not pa or not pb:
        return 0.0
    if not any(pa) or not any(pb):
        return 0.0  # no place on one side: every pair's relation is 0.0 (relation_matrix's zeros, the same mean)
    return float(placemod.relation_matrix(pa, pb).mean())


def ages_mean(a: Story, b: Story) -> float:
    """The mean age relation (transforms/stories/vocabulary/numbers.py) between the headlines of two stories' latest
    OPINION_MEMBERS originals each."""
    ma, mb = a.latest_originals(), b.latest_originals()
    return numbers.relation_mean([m.title for m in ma], [m.title for m in mb])


WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())


def weekdays_conflict(ma: list[Member], mb: list[Member], headlines: bool = False) -> bool:
    """Whether a lead of ``ma`` and a lead of ``mb`` both name days of the week and share none (English terms: a
    lead's terms are its whole text): two items of one saga told on different days ("voted on Saturday" against
    "faces a final barrage of questions on Thursday")."""
    da = [t & WEEKDAYS for t in lead_terms(ma, headlines)]
    db = [t & WEEKDAYS for t in lead_terms(mb, headlines)]
    return any(x and y and not (x & y) for x in da for y in db)


def lead_terms(ms: list[Member], headlines: bool = False) -> list[frozenset]:
    """The terms of each lead of ``ms`` (and, ``headlines``: of each headline without a body), what the lead rules
    (:func:`weekdays_conflict`, :func:`saga_only`) compare."""
    return [frozenset(m.terms) for m in ms if m.lead_only or (headlines and not m.has_body)]


def saga_terms(c: ClusterConfig, hood: list[Story]) -> frozenset | None:
    """The terms more than LEAD_ITEM_STORIES of ``hood`` (a join's candidate stories) hold among their latest
    originals: the words of the saga around an item, which every item of it shares (None: LEAD_ITEM_STORIES off)."""
    if c.lead_item_stories is None:
        return None
    held: Counter = Counter()
    for s in hood:
        held.update(frozenset().union(*(m.terms for m in s.latest_originals())))
    return frozenset(t for t, n in held.items() if n > c.lead_item_stories)


def saga_only(ma: list[Member], mb: list[Member], saga: frozenset, headlines: bool = False) -> bool:
    """Whether a lead of ``ma`` and a lead of ``mb`` share no term outside ``saga`` (:func:`saga_terms`): two items
    of one saga ("Kavanaugh", "Senate", "hearing") with nothing of their own in common."""
    db = lead_terms(mb, headlines)
    return any(not ((x & y) - saga) for x in lead_terms(ma, headlines) for y in db)


def untimed_lead(c: ClusterConfig, f: ArticleFeatures) -> bool:
    """Whether ``f`` is an untimed lead (or a headline: HEADLINES_AS_LEADS), the arrivals the lead rules read."""
    return not f.time_known and (f.lead_only or (c.headlines_as_leads and not f.has_body))


def short(c: ClusterConfig, m: Member) -> bool:
    """Whether a member is a lead, or (HEADLINES_AS_LEADS) a headline without a body: shorter than a lead."""
    return m.lead_only or (c.headlines_as_leads and not m.has_body)


def min_pair(c: ClusterConfig, ma: list[Member], mb: list[Member]) -> float | None:
    """The complete-linkage floor of an untimed join or merge between ``ma`` and ``mb`` (an article or a story's
    latest originals, each side with a body): UNTIMED_MIN_PAIR for every untimed body, else UNTIMED_LEAD_MIN_PAIR when
    every article of both sides is a lead (or a headline: HEADLINES_AS_LEADS); None: the profile score (and the
    second opinion, when asked) decide."""
    if c.untimed_min_pair is not None:
        return c.untimed_min_pair
    if c.untimed_lead_min_pair is not None and all(short(c, m) for m in ma) and all(short(c, m) for m in mb):
        return c.untimed_lead_min_pair
    return None


def conflicting(c: ClusterConfig, places: float, ages: float) -> bool:
    """Whether a join or merge is one whose evidence conflicts enough to ask the learned pair score's second opinion
    (ClusterConfig.opinion_places / opinion_ages; both None: always)."""
    if c.opinion_places is None and c.opinion_ages is None:
        return True
    return (c.opinion_places is not None and places <= c.opinion_places) or (
        c.opinion_ages is not None and ages <= c.opinion_ages
    )


def linkage_mean(a: tuple, b: tuple, c: ClusterConfig) -> float:
    """Average article-pair score (dense + entity + lexical cosines, as :meth:`Scorer.pair_matrix`) between
    the members of two stories, from their :meth:`Scorer.linkage_sums`."""
    (dv, ts, es, n), (dv2, ts2, es2, n2) = a, b
    total = float(np.dot(dv, dv2)) + c.w_entity * dot(es, es2) + c.w_lexical * dot(ts, ts2)
    return total / (n * n2)
