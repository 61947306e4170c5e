"""One ranking cycle of one edition: scores -> smoothing -> representatives -> pages, pool and coverage documents.

Reads a :class:`~transforms.editions.book.storybook.StoryBook` (the edition's language) and the edition's
:class:`~.context.EditionMemory` (smoothing history, last pages, publisher impression counts, emitted coverage versions);
updates the memory and returns a :class:`CycleOutput` with every page (edition x section), the candidate pool and
the coverage documents of page/pool stories whose coverage changed. Plain Python + numpy: RankEditionsFn calls it
on its minute timer, benchmarks/rank_bench.py calls it directly.

:func:`run_cycle` is the cycle: it takes one frozen :class:`~transforms.editions.cycle.context.CycleContext` (book,
edition, config, params, memory, now, cache, clock, the steady test and the overlays) and every phase is a function
of it. The maths (:func:`rank`: features, :func:`rank_candidates`, the hourly publisher cap, representatives) gives
a :class:`Ranked`; :func:`cycle_documents` turns it into documents (page facts, page slots, cards, pages, pool,
coverage); the overlays (:mod:`transforms.editions.overlays.phases`: controls, takedowns, cities, topic and storyline
pages) are its last phases. A :class:`~transforms.editions.cycle.context.CycleCache` kept by the caller next to the book
(in-process only: a rebuilt book starts with an empty one) lets cards, supporting links and pool entries be reused
between cycles; it never changes a result. :class:`EditionMemory` and :class:`CycleOutput` are
defined in :mod:`.context` (Beam state pickled EditionMemory as ``transforms.editions.cycle.EditionMemory`` before
the rooms; the room's face still exports it there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transforms.common import DAY_MS, HOUR_MS, MINUTE_MS
from transforms.editions.book.headlines import demoted_ids
from transforms.editions.book.storybook import StoryBook
from transforms.editions.cycle import fairness, trust
from transforms.editions.cycle.arrays import unique_ints
from transforms.editions.cycle.assembly import DiversityRules, StoryTraits, assemble, hysteresis_order
from transforms.editions.cycle.collector import spaced_collections
from transforms.editions.cycle.context import CycleCache, CycleContext, CycleOutput, EditionMemory
from transforms.editions.cycle.representatives import (
    Representatives,
    capped_publishers,
    choose_representatives,
    labels_for,
    supporting,
)
from transforms.editions.cycle.scoring import Candidates, Features, select_candidates
from transforms.editions.vocabulary import documents as docs
from transforms.editions.vocabulary.params import RankParams


def with_image_size(card: dict, base: dict) -> dict:
    """``card`` with ``image_width``/``image_height`` when the article states both for its image (Article fields,
    from its ImageObject or og:image size). Optional fields of the edition page schema: a card without them is the
    same bytes as before they existed, and the web card then sets no box rather than a guessed one."""
    w, h = base.get("image_size") or (None, None)
    if base.get("image_url") and all(
        isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 20_000 for v in (w, h)
    ):
        card["image_width"], card["image_height"] = w, h
    return card


@dataclass
class Ranked:
    """The maths of one cycle: features, Breaking rows, candidates with smoothed scores, representatives."""

    f: Features
    forced: np.ndarray  # Breaking story rows
    cand: Candidates
    smoothed: np.ndarray  # aligned with cand.rows
    reps: Representatives
    capped: set


def breaking_rows(book: StoryBook, live: np.ndarray, now: int, p: RankParams) -> np.ndarray:
    n = book.stories.size
    start = book.stories.breaking_start[:n]
    return np.flatnonzero(live & (start > 0) & (now - start < p.breaking_pin_ms) & (start <= now))


def run_cycle(ctx: CycleContext) -> CycleOutput | None:
    """Rank ``ctx.edition`` at ``ctx.now`` (a minute boundary) and update its memory: the maths, the documents,
    then the overlays (``ctx.overlays.apply``, transforms/editions/overlays/) when the context has them. None when ``ctx.steady`` ends the cycle once
    the page slots are decided (transforms/editions/ranker/steady.py, the change-only replay)."""
    with spaced_collections():  # transforms/editions/cycle/collector.py
        ctx.clock.start()
        ctx.book.flush()
        out = cycle_documents(ctx, rank(ctx))
        if out is not None and ctx.overlays is not None:
            ctx.overlays.apply(ctx, out)
    return out


def rank(ctx: CycleContext) -> Ranked:
    """The maths of the cycle: features, Breaking rows, smoothed scores, the hourly publisher cap, representatives."""
    book, p, now = ctx.book, ctx.params, ctx.now
    f = ctx.cache.features.features(book, now, p)  # the sums of the stories that changed (kept.py)
    forced = breaking_rows(book, f.live, now, p)
    ctx.clock.lap("features")
    cand, smoothed = rank_candidates(ctx, f, forced)
    ctx.clock.lap("scores")
    capped = hour_capped_publishers(ctx.memory, now, p)
    reps = choose_representatives(book, cand.rows, ctx.edition, now // HOUR_MS, capped, p.representative, f.prim)
    ctx.clock.lap("representatives")
    return Ranked(f, forced, cand, smoothed, reps, capped)


def rank_candidates(ctx: CycleContext, f: Features, forced: np.ndarray) -> tuple[Candidates, np.ndarray]:
    """The edition's candidates with raw scores, and their scores smoothed over consecutive cycles."""
    book, p = ctx.book, ctx.params
    rel = ctx.cache.features.relevance(book, f, ctx.edition.region)
    cand, _ = select_candidates(book, f, ctx.edition, ctx.config, p, forced, rel)
    ids = book.stories.id[cand.rows]
    return cand, ctx.memory.smoothing.smooth(ids, cand.raw, ctx.now, MINUTE_MS, p.smoothing_cycles)


def hour_capped_publishers(memory: EditionMemory, now: int, p: RankParams) -> set[str]:
    """The publishers capped this hour (share counts restart every UTC day)."""
    day = now // DAY_MS
    if memory.share_day != day:
        memory.share_day, memory.share_counts, memory.share_total = day, {}, 0
    hour = now // HOUR_MS
    if memory.capped_hour != hour:
        # Decided once an hour, like the near-tie rotation: else a publisher near 10 % would flicker in and out.
        memory.capped = tuple(sorted(capped_publishers(memory.share_counts, memory.share_total, p.representative)))
        memory.capped_hour = hour
    return set(memory.capped)


def cycle_documents(ctx: CycleContext, ranked: Ranked) -> CycleOutput | None:
    """Pages, pool and coverage documents of a ranked cycle; updates the memory (pages, impressions, coverage).
    None, after the decisions only, when ``ctx.steady`` says so (see :func:`run_cycle`)."""
    book, p, memory, now, cache, clock = ctx.book, ctx.params, ctx.memory, ctx.now, ctx.cache, ctx.clock
    facts, gates = page_facts(ctx, ranked), trust.gates(book, p, memory, now, ranked)
    clock.lap("page_facts")
    page_slots = choose_page_slots(ctx, ranked, facts, gates)
    clock.lap("page_slots")
    if ctx.steady is not None and ctx.steady(book, ranked, facts, gates, page_slots):
        return None
    pool_pos = pool_positions(ranked, facts, p)
    cards = Cards(book, ctx.edition.region, cache, page_slots, [facts.rep_l[i] for i in pool_pos.tolist()])
    labels = StoryLabels(book, ranked, gates, cards)
    shown = Shown(ranked, facts, cards, labels)
    pages, page_rows, conc, known = page_documents(ctx, shown, page_slots)
    clock.lap("pages")
    pool = pool_document(ctx, shown, pool_pos)
    pool.update({"held": gates.held_entries} if gates.held_entries else {}, concentration=conc)  # fairness.py
    cache.support, cache.cards = page_slots.support, cards.new
    clock.lap("pool")
    pool_rows = ranked.cand.rows[pool_pos]
    coverage = coverage_documents(book, p, ranked.f.prim, page_rows | set(pool_rows.tolist()), memory)
    memory.last_cycle = now
    clock.lap("coverage")
    stats = dict(candidates=int(ranked.cand.rows.size), live=int(ranked.f.live.sum()), pinned=len(facts.pinned_ids))
    stats.update(
        near_ties=int((ranked.reps.near > 1).sum()), capped_publishers=len(ranked.capped), held=len(gates.held)
    )
    return CycleOutput(ctx.edition.id, now, pages, pool, coverage, stats, page_digests=known)


# ------------------------------------------------------------------------------------------------ page facts
@dataclass
class PageFacts:
    """Per candidate (position i in ``cand.rows``): what page assembly needs, as Python lists and dicts."""

    rows_l: list
    ids_l: list
    rep_l: list
    pos_of: dict  # story row -> position
    id_pos: dict  # story id -> position
    pub_of_story: dict  # story id -> its representative's ownership group (the top-10 publisher limit's key)
    section_of: dict  # story id -> section shown on its card
    topic_of: dict  # story id -> the topical section the 3-per-section rule counts (labelled only)
    vec_index: dict  # story id -> row of vec_matrix (stories with a centroid)
    vec_matrix: np.ndarray | None
    pinned_ids: list  # Breaking stories pinned, newest window first


def page_facts(ctx: CycleContext, ranked: Ranked) -> PageFacts:
    book, p = ctx.book, ctx.params
    cand, reps = ranked.cand, ranked.reps
    rows_l, ids_l, rep_l = cand.rows.tolist(), book.stories.id[cand.rows].tolist(), reps.rep.tolist()
    pos_of = dict(zip(rows_l, range(len(rows_l))))
    group_of = book.publisher_group_names()  # sister sites share the limit
    rep_pub_l = book.articles.publisher[np.maximum(reps.rep, 0)].tolist()
    pub_of_story = {sid: group_of[pb] for sid, a, pb in zip(ids_l, rep_l, rep_pub_l) if a >= 0}
    # the section shown: the primary one, else nation or world by the domestic share (names looked up in C)
    prim = ranked.f.prim[cand.rows]
    names = np.array([*book.section_ids, "nation", "world"], dtype=object)
    shown = np.where(prim >= 0, prim, np.where(cand.domestic >= p.nation_share_min, len(names) - 2, len(names) - 1))
    section_of = dict(zip(ids_l, names[shown].tolist()))
    labelled = np.flatnonzero(prim >= 0).tolist()
    topic_of = {ids_l[i]: section_of[ids_l[i]] for i in labelled}
    vec_index, vec_matrix = {}, None
    if book.dim and rows_l:
        # unit centroids of the stories a page can place (its section's candidates and the pins), not of the whole
        # pool: each row's values are the same either way, at a third of the rows
        parts = [rows for rows, _ in cand.sections.values()] + [ranked.forced]
        need = unique_ints(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
        pos = np.minimum(np.searchsorted(cand.rows, need), cand.rows.size - 1)
        pos = pos[cand.rows[pos] == need]
        vec_matrix, slots, nonzero = ctx.cache.unit.of(book, cand.rows[pos])  # kept across cycles (centroids.py)
        vec_index = dict(zip([ids_l[i] for i in pos[nonzero].tolist()], slots[nonzero].tolist()))
    pins_all = []
    for r in ranked.forced.tolist():
        i = pos_of.get(r)
        if i is None or rep_l[i] < 0:
            continue
        if cand.domestic[i] + cand.intl[i] >= p.breaking_relevance:
            pins_all.append((-int(book.stories.breaking_start[r]), ids_l[i]))
    pins_all.sort()
    pinned_ids = [sid for _, sid in pins_all[: p.max_pins]]
    id_pos = dict(zip(ids_l, range(len(ids_l))))
    return PageFacts(
        rows_l, ids_l, rep_l, pos_of, id_pos, pub_of_story, section_of, topic_of, vec_index, vec_matrix, pinned_ids
    )


# ------------------------------------------------------------------------------------------------ page slots
@dataclass
class PageSlots:
    """Per section, its slots as (slot, candidate position, representative, supporting rows, score)."""

    by_section: dict
    support: dict  # the supporting-link cache for the next cycle


def choose_page_slots(ctx: CycleContext, ranked: Ranked, facts: PageFacts, gates: trust.Gates) -> PageSlots:
    """Order (hysteresis, trust gates), slots (pins, diversity) and supporting links of every section page."""
    book, p, memory = ctx.book, ctx.params, ctx.memory
    cand, reps, smoothed_l = ranked.cand, ranked.reps, ranked.smoothed.tolist()
    rows_l, ids_l, rep_l, pos_of, id_pos = facts.rows_l, facts.ids_l, facts.rep_l, facts.pos_of, facts.id_pos
    group_ids, flagged = book.publisher_group_names(), demoted_ids(book, ranked, p.clickbait_authority)

    def alternative(sid: int, blocked: set[str]):
        i = id_pos[sid]
        st, n = int(reps.start[i]), int(reps.length[i])
        grp = reps.ordered[st : st + n]
        for a, pb in zip(grp.tolist(), book.articles.publisher[grp].tolist()):
            if group_ids[pb] not in blocked:
                return a, group_ids[pb]
        return None

    rules_base = dict(
        top_n=p.top_n,
        max_per_section=p.max_per_section_in_top,
        max_per_publisher=p.max_per_publisher_in_top,
        max_cosine=p.max_centroid_cosine,
        page_size=p.page_size,
    )
    traits = StoryTraits(facts.pub_of_story, facts.topic_of, facts.vec_index, facts.vec_matrix)
    old_support, new_support = ctx.cache.support, {}
    capped_key = tuple(sorted(ranked.capped))
    version_l = book.stories.version[cand.rows].tolist()  # per candidate position, read once
    by_section = {}
    for sec_id in ctx.edition.sections:
        section = ctx.config.section(sec_id)
        rows_s, fit_s = cand.sections[sec_id]
        scores = {}
        for r, fit in zip(rows_s.tolist(), fit_s.tolist()):
            i = pos_of[r]
            if rep_l[i] >= 0:
                scores[ids_l[i]] = smoothed_l[i] * fit
        order = hysteresis_order(memory.prev_pages.get(sec_id, []), scores, p.hysteresis)
        order = trust.page_order(order, flagged, gates, section.match == "all")  # clickbait, trust gates
        pins = [x for x in facts.pinned_ids if sec_id == "top" or x in scores]
        storylines = book.storylines.of if sec_id == "top" else None  # one story per storyline in the top 5
        rules = DiversityRules(mixed_sections=section.match != "label", storyline_of=storylines, **rules_base)
        slots = assemble(order, pins, traits, rules, alternative)
        memory.prev_pages[sec_id] = [x.story_id for x in slots]
        chosen = []
        for slot in slots:
            i = id_pos[slot.story_id]
            rep = slot.alt_rep if slot.alt_rep is not None else rep_l[i]
            r = rows_l[i]
            key = (r, rep)
            hit = new_support.get(key) or old_support.get(key)
            version_key = (version_l[i], capped_key)
            if hit is not None and hit[0] == version_key:
                sup = hit[1]
                new_support[key] = hit  # reuse the entry: nothing new survives the cycle
            else:
                sup = supporting(book, reps, i, rep, p.supporting)
                new_support[key] = (version_key, sup)
            chosen.append((slot, i, rep, sup, scores.get(slot.story_id, smoothed_l[i])))
        by_section[sec_id] = chosen
    return PageSlots(by_section, new_support)


# ------------------------------------------------------------------------------------------------ cards, labels


def article_card(base: dict, first_seen_ms, labels) -> dict:
    """One article's card on a page (a section's story or a Full Coverage timeline): the stored card's fields, its
    times in ISO form and the labels the cycle gave it."""
    card = {
        "article_id": base["article_id"],
        "url": base["url"],
        "title": base["title"],
        "publisher_id": base["publisher_id"],
        "publisher_name": base["publisher_name"],
        "image_url": base["image_url"],
        "published_at": docs.iso(base["published_at"]),
        "first_seen_at": docs.iso(first_seen_ms),
        "language": base["language"],
        "labels": labels,
    }
    with_image_size(card, base)
    return card


class Cards:
    """Article cards of one cycle, built once per article with labels computed for all needed articles at once."""

    def __init__(self, book: StoryBook, region: str, cache: CycleCache, page_slots: PageSlots, pool_reps: list):
        needed = [rep for chosen in page_slots.by_section.values() for _, _, rep, _, _ in chosen]
        needed += [a for chosen in page_slots.by_section.values() for _, _, _, sup, _ in chosen for a in sup]
        needed += pool_reps
        arts = unique_ints(np.array(needed, np.int64)) if needed else np.zeros(0, np.int64)
        arts_l = arts.tolist()
        self.book = book
        labels = labels_for(book, arts, region)
        first_seen, version = book.articles.first_seen[arts].tolist(), book.articles.version[arts].tolist()
        self.label_of = dict(zip(arts_l, labels))
        self._check = dict(zip(arts_l, zip(first_seen, version, labels)))  # what a cached card must match
        self.old, self.new = cache.cards, {}

    def get(self, a: int, with_lede: bool) -> dict:
        """The card of article row ``a`` (``with_lede``: the page representative's, with its lede). Cached by
        ``2a + with_lede`` (an int key: this runs ~200,000 times a cycle) while first seen, version and labels
        are unchanged."""
        key = a + a + with_lede
        check = self._check[a]
        hit = self.new.get(key)
        if hit is None:
            hit = self.old.get(key)
        if hit is not None and hit[0] == check:
            self.new[key] = hit
            return hit[1]
        base = self.book.articles.card[a]
        c = article_card(base, check[0], check[2])
        if with_lede and base["lede"]:
            c["lede"] = base["lede"][:300]
        self.new[key] = (check, c)
        return c

    def plain(self, arts: list) -> tuple:
        """The cards without lede of article rows ``arts`` (a story's supporting links), as :meth:`get` gives
        them one by one, in one loop: ~130,000 a cycle."""
        new, old, check_of, out = self.new, self.old, self._check, []
        for a in arts:
            key = a + a
            hit = new.get(key)
            if hit is None:
                hit = old.get(key)
            if hit is not None and hit[0] == check_of[a]:
                new[key] = hit
                out.append(hit[1])
            else:
                out.append(self.get(a, False))
        return tuple(out)


class StoryLabels:
    """A story's labels on a page or in the pool: breaking (pinned) or developing, and fact_check when the story
    holds a fact check other than its representative. Labels of an article (opinion, fact_check, wire, first
    report) are on its card only: a story label never repeats its representative's, and a fact check by one
    publisher is not printed as another's."""

    def __init__(self, book: StoryBook, ranked: Ranked, gates: trust.Gates, cards: Cards):
        rows = ranked.cand.rows
        self.developing_l = gates.developing_l  # key facts changed within the hour (trust.py)
        self.fact_l = (book.stories.n_fact_checks[rows] > 0).tolist()
        self.label_of = cards.label_of

    def of(self, i: int, rep: int, pinned: bool) -> tuple[str, ...]:
        if pinned:
            out: tuple[str, ...] = ("breaking",)
        elif self.developing_l[i]:
            out = ("developing",)
        else:
            out = ()
        if self.fact_l[i] and "fact_check" not in self.label_of[rep]:
            return (*out, "fact_check")
        return out


@dataclass(frozen=True)
class Shown:
    """What the page and pool documents show of the candidates: the ranking, the page facts, cards and labels."""

    ranked: Ranked
    facts: PageFacts
    cards: Cards
    labels: StoryLabels


# ------------------------------------------------------------------------------------------------ documents
def page_documents(ctx: CycleContext, shown: Shown, page_slots: PageSlots) -> tuple[dict, set, dict, dict]:
    """Every section page, the rows of the stories on them, the pages' concentration and the content digests known
    for them (:class:`PageDigest` by section, :func:`reused_page`); counts the representatives' position-weighted
    impressions for the share cap (fairness.py)."""
    book, now, ranked, facts, cards, labels = ctx.book, ctx.now, shown.ranked, shown.facts, shown.cards, shown.labels
    cycle_iso = docs.iso(now)
    pages, shown_reps, page_story_rows, known = {}, [], set(), {}
    n_articles, pub_count, newest = book.stories.n_articles, ranked.f.pub_count, book.stories.newest_seen
    labels_of, section_of, card, plain, iso = labels.of, facts.section_of, cards.get, cards.plain, docs.iso
    reuse = reuse_pages(ctx)
    old_pages, new_pages = ctx.cache.pages, {}
    for sec_id, chosen in page_slots.by_section.items():
        rows = np.array([facts.rows_l[i] for _, i, _, _, _ in chosen], np.int64)  # the page's columns read at once
        counts, pubs, times = n_articles[rows].tolist(), pub_count[rows].tolist(), newest[rows].tolist()
        scores = docs.round_sigs([score for _, _, _, _, score in chosen])
        shown_reps.extend((rank, rep) for rank, (_, _, rep, _, _) in enumerate(chosen, start=1))
        page_story_rows.update(rows.tolist())
        key = page_key(chosen, counts, pubs, times, shown, sec_id) if reuse else None
        hit = old_pages.get(sec_id) if reuse else None
        if hit is not None and hit.key == key:
            statics = hit.statics  # every input of the page but its scores is the same: the same entries
        else:
            statics = []
            for rank, (slot, i, rep, sup, _) in enumerate(chosen, start=1):
                statics.append(
                    {
                        "story_id": str(slot.story_id),
                        "rank": rank,
                        "labels": labels_of(i, rep, slot.pinned),
                        "section": section_of[slot.story_id],
                        "representative": card(rep, True),
                        "supporting": plain(sup),
                        "article_count": counts[rank - 1],
                        "publisher_count": max(1, int(pubs[rank - 1])),
                        "updated_at": iso(times[rank - 1]),
                    }
                )
            hit = PageDigest(key, statics) if reuse else None
        if hit is not None:
            new_pages[sec_id] = hit
        pages[sec_id] = {
            "schema": docs.PAGE_SCHEMA,
            "edition": ctx.edition.id,
            "section": sec_id,
            "version": now // MINUTE_MS,
            "cycle": cycle_iso,
            "generated_at": cycle_iso,
            "stories": [dict(e, score=score) for e, score in zip(statics, scores)],
        }
        if hit is not None:
            known[sec_id] = (pages[sec_id], hit)
    if reuse:
        ctx.cache.pages = new_pages
    return pages, page_story_rows, fairness.count_impressions(book, ctx.memory, shown_reps), known


@dataclass
class PageDigest:
    """A section page's inputs as of the last cycle that built it (``key``, :func:`page_key`), its entries without
    scores (``statics``, shared by every page built from that key: never changed in place) and the content digest
    of a page built from them (``digest``: documents.content_digest, filled in by the change-only replay the first
    time it digests such a page, steady.py ``unproposed``). Kept in the edition's CycleCache."""

    key: tuple
    statics: list
    digest: str | None = None


def reuse_pages(ctx: CycleContext) -> bool:
    """Whether this cycle keeps and reuses pages by their inputs (:func:`page_key`): the change-only replay only
    (the only reader of the digests), and not while an editorial control or a takedown may rewrite the pages after
    they are built (overlays/controls.py rewrites a page in place)."""
    if ctx.steady is None:
        return False
    overlays = ctx.overlays
    return overlays is None or not (overlays.controls or overlays.takedowns)


def page_key(chosen: list, counts: list, pubs: list, times: list, shown: Shown, sec_id: str) -> tuple:
    """Everything a section page's entries are made of but their scores, per slot in order (:func:`page_documents`
    reads nothing else): the story, whether it is pinned, its representative and supporting article rows with what
    their cards are built from (first seen, version, labels: ``Cards._check``, the cards cache's own key; a row is
    one article of this book, and the edition's CycleCache, which keeps the keys, is replaced with the book), the
    story's developing and fact-check labels, its card section, article count, voice count and newest time. Two
    cycles with equal keys build the same entries (tests/transforms/editions/test_page_reuse.py changes each input
    in turn)."""
    facts, labels, check = shown.facts, shown.labels, shown.cards._check
    dev, fact, section_of, checks = labels.developing_l, labels.fact_l, facts.section_of, shown.cards._check.__getitem__
    return (
        sec_id,
        tuple(
            (
                slot.story_id,
                slot.pinned,
                rep,
                check[rep],
                tuple(sup),
                tuple(map(checks, sup)),
                dev[i],
                fact[i],
                section_of[slot.story_id],
                counts[k],
                pubs[k],
                times[k],
            )
            for k, (slot, i, rep, sup, _) in enumerate(chosen)
        ),
    )


def pool_positions(ranked: Ranked, facts: PageFacts, p: RankParams) -> np.ndarray:
    """Candidate positions of the pool: the best candidates with a representative, by smoothed score (the national
    pool and its local reserve, scoring.py ``local_reserve``)."""
    cand, smoothed = ranked.cand, ranked.smoothed
    pool_pos = np.searchsorted(cand.rows, cand.pool).astype(np.int64)  # the pool's rows are candidates (sorted rows)
    pool_pos = pool_pos[ranked.reps.rep[pool_pos] >= 0]
    if pool_pos.size:
        ids = np.asarray(facts.ids_l, np.int64)
        pool_pos = pool_pos[np.lexsort((ids[pool_pos], -smoothed[pool_pos]))]  # bounded by local_reserve
    return pool_pos


def pool_document(ctx: CycleContext, shown: Shown, pool_pos: np.ndarray) -> dict:
    """The candidate pool with what For you re-ranks on. Entries are rebuilt only for stories whose entry could
    differ (coverage version, centroid, representative, labels); the others are reused with the new score. One
    pass over the pool: a reused entry is copied and scored where its key is checked, the rebuilt ones (a few per
    cycle) are filled in after it, at their positions."""
    book, now, ranked, facts, cards, labels = ctx.book, ctx.now, shown.ranked, shown.facts, shown.cards, shown.labels
    ids_l, rep_l, section_of = facts.ids_l, facts.rep_l, facts.section_of
    pinned_set = set(facts.pinned_ids)
    pool_rows = ranked.cand.rows[pool_pos]
    old_pool, new_pool = ctx.cache.pool, {}
    cseq_l = book.stories.centroid_seq[pool_rows].tolist()
    vers_l = book.stories.version[pool_rows].tolist()
    scores = docs.round_sigs(ranked.smoothed[pool_pos].tolist())
    card_check, labels_of, new_cards, old_cards = cards._check, labels.of, cards.new, cards.old
    pool_stories, misses, keys = [], [], {}
    for k, (i, v, c) in enumerate(zip(pool_pos.tolist(), vers_l, cseq_l)):
        sid, rep = ids_l[i], rep_l[i]
        key = (v, c, rep, labels_of(i, rep, sid in pinned_set), section_of[sid], card_check[rep])
        hit = old_pool.get(sid)
        if hit is None or hit[0] != key:
            misses.append(k)
            keys[k] = key
            pool_stories.append(None)
            continue
        new_pool[sid] = hit
        card_key = rep + rep  # its card (without lede) stays cached, unchecked: Cards.get checks it when asked
        if card_key not in new_cards:
            card = old_cards.get(card_key)
            if card is not None:
                new_cards[card_key] = card
        entry = hit[1].copy()
        entry["score"] = scores[k]
        pool_stories.append(entry)
    fresh = _fresh_pool_entries(ctx, shown, pool_pos, misses, keys)
    ctx.clock.lap("pool_features")
    for k in misses:
        static = fresh[k]
        new_pool[ids_l[int(pool_pos[k])]] = (keys[k], static)
        entry = static.copy()
        entry["score"] = scores[k]
        pool_stories[k] = entry
    ctx.cache.pool = new_pool
    return {
        "schema": docs.POOL_SCHEMA,
        "edition": ctx.edition.id,
        "version": now // MINUTE_MS,
        "cycle": docs.iso(now),
        "stories": pool_stories,
    }


def _fresh_pool_entries(ctx: CycleContext, shown: Shown, pool_pos: np.ndarray, misses: list, keys: dict) -> dict:
    """Pool entries (without score) of the pool positions ``misses``, by position."""
    book, facts, cards = ctx.book, shown.facts, shown.cards
    pool_rows, pool_pos_l = shown.ranked.cand.rows[pool_pos], pool_pos.tolist()
    miss = np.array(misses, np.int64)
    topics, publishers, places = pool_features(book, pool_rows[miss], ctx.params)
    vecs = docs.project(book.stories.centroid[pool_rows[miss]]).tolist() if book.dim and miss.size else None
    fresh = {}
    for m, k in enumerate(misses):
        i, sid = pool_pos_l[k], facts.ids_l[pool_pos_l[k]]
        entry = {
            "story_id": str(sid),
            "section": facts.section_of[sid],
            "topics": tuple(topics[m]),
            "publishers": tuple(publishers[m]),
            "places": tuple(places[m]),
            "entities": book.story_entities(int(pool_rows[k])),
            "labels": keys[k][3],
            "representative": cards.get(facts.rep_l[i], False),
        }
        if vecs is not None:
            entry["vector"] = tuple(vecs[m])
        fresh[k] = entry
    return fresh


def coverage_documents(book: StoryBook, p: RankParams, prim: np.ndarray, rows: set, memory: EditionMemory) -> list:
    """Coverage of the page and pool stories whose coverage changed since this edition last emitted it."""
    shown = np.array(sorted(rows), np.int64)
    ids = book.stories.id[shown].tolist()
    versions = book.stories.version[shown]
    last = np.array([memory.coverage_versions.get(sid, 0) for sid in ids], np.int64)
    changed = np.flatnonzero(versions > last).tolist()  # the rest: emitted before at this version or later
    coverage = [coverage_document(book, int(shown[k]), p, int(prim[shown[k]])) for k in changed]
    memory.coverage_versions = dict(zip(ids, np.maximum(versions, last).tolist()))
    return coverage


def coverage_document(book: StoryBook, row: int, p: RankParams, prim: int) -> dict:
    """All articles of a story (edition-independent), newest first, keyset order (published_at desc, article_id)."""
    arts = book.story_articles(row)
    labels = labels_for(book, np.array(arts, np.int64), None) if arts else []
    tsum = book.stories.title_sum[row].astype(np.float64)
    norm = max(float(np.linalg.norm(tsum)), 1e-9)
    rp = p.representative
    best, best_key = None, None
    cards = []
    for k, a in enumerate(arts):
        base = book.articles.card[a]
        central = float(book.articles.title_vector[a].astype(np.float64) @ tsum) / norm
        key = (
            -(
                rp.w_centrality * central
                + rp.w_authority * float(book.publishers.authority[book.articles.publisher[a], prim + 1])
                + rp.w_headline * float(book.articles.headline_quality[a])
                - rp.copy_penalty * bool(book.articles.is_copy[a])
            ),
            base["article_id"],
        )
        if best_key is None or key < best_key:
            best, best_key = a, key
        card = article_card(base, book.articles.first_seen[a], labels[k])
        cards.append((-int(base["published_at"]), base["article_id"], card))
    cards.sort(key=lambda t: (t[0], t[1]))
    return {
        "schema": docs.COVERAGE_SCHEMA,
        "story_id": str(int(book.stories.id[row])),
        "version": int(book.stories.version[row]),
        "language": book.language,
        "title": book.articles.card[best]["title"] if best is not None else "",
        "updated_at": docs.iso(book.stories.newest_seen[row]),
        "links": tuple(str(x) for x in sorted(book.stories.links[row])),
        **book.storylines.page_field(int(book.stories.id[row])),  # its storyline, when that has a page
        "articles": [c for _, _, c in cards],
    }


def _groups(keys: np.ndarray, k: int, order: np.ndarray, limit: int, values: list) -> list[list]:
    """Split ``values`` (already ordered by ``order``) into ``k`` lists by group key, at most ``limit`` each."""
    out: list[list] = [[] for _ in range(k)]
    for g, v in zip(keys[order].tolist(), values):
        lst = out[g]
        if len(lst) < limit:
            lst.append(v)
    return out


def pool_features(book: StoryBook, pool_rows: np.ndarray, p: RankParams):
    """Per pool story: its sections (topics), up to 10 publishers by authority, up to 5 places (region codes) and
    the cities of its local publishers (:func:`add_publisher_cities`)."""
    k = pool_rows.size
    if k == 0:
        return [], [], []
    slot = np.full(book.stories.size + 1, -1, np.int64)
    slot[pool_rows] = np.arange(k)
    sec = book.stories.section_counts[pool_rows]
    tot = np.maximum(sec.sum(axis=1, keepdims=True), 1)
    mask = (sec > 0) & (sec >= tot * p.section_share_min)
    topics: list[list[str]] = [[] for _ in range(k)]
    for r, c in zip(*(x.tolist() for x in np.nonzero(mask))):
        topics[r].append(book.section_ids[c])
    pairs, mentions = book.pairs, book.mentions
    # the pool stories' own pairs and mentions (O(their rows)); every order below is by keys unique per story
    sel = book.pair_rows_of(pool_rows)
    sel = sel[pairs.live[sel]]
    g = slot[pairs.story[sel]]  # pool position of each pair
    pubs = pairs.publisher[sel]
    names = np.array(book.publishers.id, dtype=object)[pubs] if sel.size else np.zeros(0, object)
    order = np.lexsort((names.astype(str), -book.publishers.authority[pubs, 0], g)) if sel.size else sel
    publishers = _groups(g, k, order, 10, names[order].tolist())
    sel2 = book.mention_rows_of(pool_rows)
    sel2 = sel2[mentions.live[sel2]]
    g2 = slot[mentions.story[sel2]]
    codes = np.array(book.regions, dtype=object)[mentions.region[sel2]] if sel2.size else np.zeros(0, object)
    order2 = np.lexsort((codes.astype(str), -mentions.count[sel2], g2)) if sel2.size else sel2
    places = _groups(g2, k, order2, 5, codes[order2].tolist())
    add_publisher_cities(places, g, book.publisher_cities()[pubs])
    return topics, publishers, places


def add_publisher_cities(places: list[list], slots: np.ndarray, cities: np.ndarray) -> None:
    """A story is local to the city of every local publisher covering it (``Publisher.city``), whether or not it
    is among the entry's 10 strongest publishers. ``slots[j]`` is the pool story (index into ``places``) of live
    pair j, ``cities[j]`` its publisher's city ("" if none). The codes go after the region codes, in code order;
    the cities the entities name are added later (transforms/editions/overlays/topics.py ``add_cities``). Vectorised: only
    the local pairs are looped over."""
    local = np.flatnonzero(cities != "") if len(cities) else ()
    for r, city in sorted(set(zip(slots[local].tolist(), cities[local].tolist()))):
        if city not in places[r]:
            places[r].append(city)
