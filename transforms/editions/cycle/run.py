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
from itertools import chain

import numpy as np

from transforms.common import DAY_MS, HOUR_MS, MINUTE_MS
from transforms.editions.book.headlines import demoted_ids
from transforms.editions.book.storybook import StoryBook
from transforms.editions.cycle import fairness, trust
from transforms.editions.cycle.arrays import sorted_member, unique_ints
from transforms.editions.cycle.assembly import DiversityRules, Gram, StoryTraits, assemble, hysteresis_order
from transforms.editions.cycle.cards import FACT_CHECK_BIT, Cards
from transforms.editions.cycle.collector import spaced_collections
from transforms.editions.cycle.context import CycleContext, CycleOutput, EditionMemory, KeptEntries
from transforms.editions.cycle.coverage import coverage_documents
from transforms.editions.cycle.kept import LineageMemo
from transforms.editions.cycle.representatives import (
    Representatives,
    capped_publishers,
    choose_representatives,
    supporting,
)
from transforms.editions.cycle.scoring import Candidates, Features, select_candidates
from transforms.editions.vocabulary import documents as docs
from transforms.editions.vocabulary.params import RankParams


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
    order = ctx.cache.features.article_order(book, cand.rows, ctx.edition.region, capped, p.representative, f.prim)
    reps = choose_representatives(book, cand.rows, ctx.edition, now // HOUR_MS, capped, p.representative, order=order)
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
    facts, gates = page_facts(ctx, ranked), trust.gates(book, p, memory, now, ranked, cache.facts)
    clock.lap("page_facts")
    page_slots = choose_page_slots(ctx, ranked, facts, gates)
    clock.lap("page_slots")
    if ctx.steady is not None and ctx.steady(book, ranked, facts, gates, page_slots):
        return None
    pool_pos = pool_positions(ranked, facts, p)
    cards = Cards(book, ctx.edition.region, cache, page_slots, ranked.reps.rep[pool_pos])
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
    """Per candidate (position i in ``cand.rows``): what page assembly needs, as Python lists, dicts and arrays.
    The dicts by story id hold the candidates a page can place only (a section's candidates and the pins): the
    stories :func:`choose_page_slots` and the diversity rules look up, about half of an edition's candidates."""

    rows_l: list
    ids_l: list
    rep_l: list
    id_pos: dict  # story id -> position
    pub_of_story: dict  # story id -> its representative's ownership group (the top-10 publisher limit's key)
    section_code: np.ndarray  # per position: the section shown on its card, as an index into section_names
    topic_of: dict  # story id -> the topical section the 3-per-section rule counts (labelled only)
    vec_index: dict  # story id -> row of vec_matrix (stories with a centroid)
    vec_matrix: np.ndarray | None
    pinned_ids: list  # Breaking stories pinned, newest window first
    section_names: tuple = ()  # every card section, in a fixed order: the document keys' section index
    pool_memo: tuple | None = None  # (ranked, params, positions) of the last pool_positions call on these facts
    vec_seq: dict | None = None  # story id -> the centroid_seq of its row of vec_matrix (assembly.Gram's key)

    def section(self, i: int) -> str:
        """The section shown on the card of candidate position ``i``."""
        return self.section_names[self.section_code[i]]


def page_facts(ctx: CycleContext, ranked: Ranked) -> PageFacts:
    book, p = ctx.book, ctx.params
    cand, reps = ranked.cand, ranked.reps
    ids = book.stories.id[cand.rows]
    rows_l, ids_l, rep_l = cand.rows.tolist(), ids.tolist(), reps.rep.tolist()
    # the section shown: the primary one, else nation or world by the domestic share (an index into the names)
    prim = ranked.f.prim[cand.rows]
    section_names = (*book.section_ids, "nation", "world")
    n_names = len(section_names)
    shown = np.where(prim >= 0, prim, np.where(cand.domestic >= p.nation_share_min, n_names - 2, n_names - 1))
    shown = shown.astype(np.int64)
    # the candidates a page can place: its section's candidates (those with a representative become its order)
    # and the pins (Breaking candidates), by ascending position
    parts = [rows for rows, _ in cand.sections.values()] + [ranked.forced]
    pos = np.zeros(0, np.int64)
    if rows_l:
        need = unique_ints(np.concatenate(parts))
        pos = np.minimum(np.searchsorted(cand.rows, need), cand.rows.size - 1)
        pos = pos[cand.rows[pos] == need]
    page_ids, page_reps = ids[pos], reps.rep[pos]
    id_pos = dict(zip(page_ids.tolist(), pos.tolist()))
    group_of = book.publisher_group_names()  # sister sites share the limit
    has = page_reps >= 0
    pub_of_story = dict(
        zip(page_ids[has].tolist(), [group_of[pb] for pb in book.articles.publisher[page_reps[has]].tolist()])
    )
    labelled = prim[pos] >= 0
    names = np.array(section_names, dtype=object)  # names looked up in C
    topic_of = dict(zip(page_ids[labelled].tolist(), names[shown[pos[labelled]]].tolist()))
    vec_index, vec_matrix, vec_seq = {}, None, {}
    if book.dim and rows_l:
        # unit centroids of the stories a page can place, not of the whole pool: each row's values are the same
        # either way, at a third of the rows
        vec_matrix, slots, nonzero = ctx.cache.unit.of(book, cand.rows[pos])  # kept across cycles (centroids.py)
        vec_ids = page_ids[nonzero].tolist()
        vec_index = dict(zip(vec_ids, slots[nonzero].tolist()))
        vec_seq = dict(zip(vec_ids, book.stories.centroid_seq[cand.rows[pos[nonzero]]].tolist()))
    pins_all = []
    if ranked.forced.size and rows_l:
        forced_pos = np.minimum(np.searchsorted(cand.rows, ranked.forced), cand.rows.size - 1)
        for r, i in zip(ranked.forced.tolist(), forced_pos.tolist()):
            if rows_l[i] != r or rep_l[i] < 0:  # not a candidate, or without a representative
                continue
            if cand.domestic[i] + cand.intl[i] >= p.breaking_relevance:
                pins_all.append((-int(book.stories.breaking_start[r]), ids_l[i]))
    pins_all.sort()
    pinned_ids = [sid for _, sid in pins_all[: p.max_pins]]
    return PageFacts(
        rows_l,
        ids_l,
        rep_l,
        id_pos,
        pub_of_story,
        shown,
        topic_of,
        vec_index,
        vec_matrix,
        pinned_ids,
        section_names,
        vec_seq=vec_seq,
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
    rows_l, rep_l, id_pos = facts.rows_l, facts.rep_l, facts.id_pos
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
    vec_seq = facts.vec_seq if facts.vec_index else None
    traits = StoryTraits(facts.pub_of_story, facts.topic_of, facts.vec_index, facts.vec_matrix, vec_seq)
    old_gram, new_gram = ctx.cache.gram, {}
    old_support, new_support = ctx.cache.support, {}
    capped_key = tuple(sorted(ranked.capped))
    version_l = book.stories.version[cand.rows].tolist()  # per candidate position, read once
    by_section = {}
    # smoothed x fit of every section's candidates with a representative, best first, for every section at once:
    # the products of doubles that Python's floats give, without a loop over ~60 stories per page
    sections = [cand.sections[sec_id] for sec_id in ctx.edition.sections]
    lens = [rows_s.size for rows_s, _ in sections]
    rows_all = np.concatenate([np.zeros(0, np.int64), *(rows_s for rows_s, _ in sections)])
    pos = np.searchsorted(cand.rows, rows_all)  # the sections' rows are candidates (sorted rows)
    has = reps.rep[pos] >= 0
    fit_all = np.concatenate([np.zeros(0), *(np.asarray(fit_s, np.float64) for _, fit_s in sections)])
    values = np.asarray(ranked.smoothed, np.float64)[pos[has]] * fit_all[has]
    score_ids = book.stories.id[rows_all[has]]
    section_of = np.repeat(np.arange(len(lens)), lens)[has]
    # each section's stories best first (descending score, then ascending id: hysteresis_order's newcomers' order,
    # so it need not sort them page by page); its scores dict is made in that order. NaN has no such order.
    best_first = not np.isnan(values).any()
    if best_first:
        by = np.lexsort((score_ids, -values, section_of))
        values, score_ids = values[by], score_ids[by]
    values_l, score_ids_l = values.tolist(), score_ids.tolist()
    counts = np.bincount(section_of, minlength=len(lens))
    ends = np.cumsum(counts).tolist()
    for sec_id, a, b in zip(ctx.edition.sections, [0, *ends[:-1]], ends):
        scores = dict(zip(score_ids_l[a:b], values_l[a:b]))
        pins = [x for x in facts.pinned_ids if sec_id == "top" or x in scores]
        if not scores and not pins:
            # Nothing to place (most sections of a small book): the empty page every step below would give. The
            # page's Gram is kept as assembly leaves it when no story asks for one.
            memory.prev_pages[sec_id] = []
            gram = old_gram.get(sec_id)
            if gram is not None:
                new_gram[sec_id] = gram
            by_section[sec_id] = []
            continue
        section = ctx.config.section(sec_id)
        order = hysteresis_order(memory.prev_pages.get(sec_id, []), scores, p.hysteresis, best_first)
        order = trust.page_order(order, flagged, gates, section.match == "all")  # clickbait, trust gates
        storylines = book.storylines.of if sec_id == "top" else None  # one story per storyline in the top 5
        rules = DiversityRules(mixed_sections=section.match != "label", storyline_of=storylines, **rules_base)
        gram = new_gram[sec_id] = old_gram.get(sec_id) or Gram()
        slots = assemble(order, pins, traits, rules, alternative, gram)
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
    ctx.cache.gram = new_gram
    return PageSlots(by_section, new_support)


# ------------------------------------------------------------------------------------------------ cards, labels
class StoryLabels:
    """A story's labels on a page or in the pool: breaking (pinned) or developing, and fact_check when the story
    holds a fact check other than its representative. Labels of an article (opinion, fact_check, wire, first
    report) are on its card only: a story label never repeats its representative's, and a fact check by one
    publisher is not printed as another's."""

    def __init__(self, book: StoryBook, ranked: Ranked, gates: trust.Gates, cards: Cards):
        rows = ranked.cand.rows
        self.developing_l = gates.developing_l  # key facts changed within the hour (trust.py)
        self.fact = book.stories.n_fact_checks[rows] > 0
        self.fact_l = self.fact.tolist()
        self.developing = np.array(self.developing_l, bool)  # both per candidate position, as arrays for the keys
        self.label_of = cards.label_of

    def of(self, i: int, rep: int, pinned: bool) -> tuple[str, ...]:
        if pinned:
            out: tuple[str, ...] = ("breaking",)
        elif self.developing_l[i]:
            out = ("developing",)
        else:
            out = ()
        if self.fact_l[i] and "fact_check" not in self.label_of(rep):
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
_NO_ENTRIES: dict = {}  # an empty page's kept entries (never changed: only read)


def page_documents(ctx: CycleContext, shown: Shown, page_slots: PageSlots) -> tuple[dict, set, dict, dict]:
    """Every section page, the rows of the stories on them, the pages' concentration and the content digests known
    for them (:class:`PageDigest` by section, :func:`reuse_pages`); counts the representatives' position-weighted
    impressions for the share cap (fairness.py). A page entry is last cycle's (with this cycle's rank and score)
    while everything it shows is the same (:func:`page_keys`: one row of integers per entry, every section of the
    edition in one batch); a page whose entries all are, in the same order, is last cycle's page (the change-only
    replay reuses its digest). The entries are kept per section by the bytes of their story id and key row (one
    dict look-up per entry), with the section names the keys' section index reads."""
    book, facts = ctx.book, shown.facts
    cycle_iso = docs.iso(ctx.now)
    pages, page_story_rows, known = {}, set(), {}
    slots = [x for chosen in page_slots.by_section.values() for x in chosen]
    rows = np.array([facts.rows_l[i] for _, i, _, _, _ in slots], np.int64)  # every page's columns read at once
    sids = np.array([slot.story_id for slot, _, _, _, _ in slots], np.int64)
    keys = page_keys(book, shown, slots, rows, ctx.params.supporting.count)
    # per slot, its story id and key row as bytes: equal bytes (of equal width), equal entries
    rowkeys = np.concatenate([sids[:, None], keys], axis=1)
    width = rowkeys.shape[1] * rowkeys.itemsize
    all_bytes = np.ascontiguousarray(rowkeys).view(np.dtype((np.void, width))).ravel().tolist()  # each row's bytes
    scores_all = docs.round_sigs([score for _, _, _, _, score in slots])  # one call: the same floats
    page_story_rows.update(rows.tolist())
    names = facts.section_names
    reuse = reuse_pages(ctx)
    old_pages, new_pages = ctx.cache.pages, {}
    kept, new_kept, start = ctx.cache.page_entries, {}, 0
    shared = SHARED_PAGE_ENTRIES.get(book, ctx.params, names, dict)  # by key bytes, as ``kept``'s
    empty_key = ((), names)  # what an empty page's key below is
    for sec_id, chosen in page_slots.by_section.items():
        if not chosen:
            # An empty page (most sections of a small book): what the loop below gives, without its bytes.
            hit = None
            if reuse:
                hit = old_pages.get(sec_id)
                if hit is None or hit.key != empty_key:
                    hit = PageDigest(empty_key, [], _NO_ENTRIES)
                new_pages[sec_id] = hit
            new_kept[sec_id] = (names, _NO_ENTRIES)
            pages[sec_id] = page = page_document(ctx, sec_id, cycle_iso, [])
            if hit is not None:
                known[sec_id] = (page, hit)
            continue
        end = start + len(chosen)
        row_bytes = tuple(all_bytes[start:end])
        scores = scores_all[start:end]
        key = (row_bytes, names) if reuse else None
        start = end
        hit = old_pages.get(sec_id) if reuse else None
        if hit is not None and hit.key == key:
            statics, entries = hit.statics, hit.kept  # every input but the scores is the same: the same entries
        else:
            old_names, old = kept.get(sec_id, ((), _NO_ENTRIES))
            if old_names != names:  # the section indexes of the kept keys name other sections
                old = _NO_ENTRIES
            statics = page_statics(book, shown, chosen, row_bytes, old, shared)
            entries = dict(zip(row_bytes, statics))
            hit = PageDigest(key, statics, entries) if reuse else None
        new_kept[sec_id] = (names, entries)
        if hit is not None:
            new_pages[sec_id] = hit
        pages[sec_id] = page_document(ctx, sec_id, cycle_iso, [dict(e, score=sc) for e, sc in zip(statics, scores)])
        if hit is not None:
            known[sec_id] = (pages[sec_id], hit)
    ctx.cache.page_entries = new_kept
    if reuse:
        ctx.cache.pages = new_pages
    shown_reps = [
        (rank, rep) for chosen in page_slots.by_section.values() for rank, (_, _, rep, _, _) in enumerate(chosen, 1)
    ]
    return pages, page_story_rows, fairness.count_impressions(book, ctx.memory, shown_reps), known


def page_statics(book: StoryBook, shown: Shown, chosen: list, row_bytes: tuple, old: dict, shared: dict) -> list:
    """The entries without scores of a page's slots ``chosen`` whose key rows (:func:`page_keys`, with the story
    id) have the bytes ``row_bytes``: last cycle's of the row (``old``), else another edition's of the lineage
    made this minute (``shared``), else made (and shared); each with its rank (kept entries are never changed in
    place: a copy when the rank moved)."""
    facts, cards, labels_of, rows_l = shown.facts, shown.cards, shown.labels.of, shown.facts.rows_l
    n_articles, pub_count, newest = book.stories.n_articles, shown.ranked.f.pub_count, book.stories.newest_seen
    statics = []
    for rank, (slot, i, rep, sup, _), kb in zip(range(1, len(chosen) + 1), chosen, row_bytes):
        static = old.get(kb)
        if static is None:
            static = shared.get(kb)
        if static is None:
            r = rows_l[i]
            static = {
                "story_id": str(slot.story_id),
                "rank": rank,
                "labels": labels_of(i, rep, slot.pinned),
                "section": facts.section(i),
                "representative": cards.get(rep, True),
                "supporting": cards.plain(sup),
                "article_count": int(n_articles[r]),
                "publisher_count": max(1, int(pub_count[r])),
                "updated_at": docs.iso(newest[r]),
            }
            shared[kb] = static
        if static["rank"] != rank:
            static = dict(static, rank=rank)
        statics.append(static)
    return statics


# Page entries (without scores) shared by the editions whose books have the same tables (kept.LineageMemo), by
# the section names and the bytes of the entry's story id and page_keys row: an entry is made of what its row
# holds (cards, labels, section, counts) and of nothing of its edition but those, so an edition finds there the
# entries another edition of its language made this minute for the same key (a minute at 300,000 live stories:
# ~2,700 entries made a cycle, ~1,000 of them already made by another edition). Budget: scopes, one dict each per
# section names (a scope holds a minute of a language's new entries, ~1 KB each with their shared cards).
SHARED_PAGE_ENTRIES = LineageMemo(kept=64)


def page_document(ctx: CycleContext, sec_id: str, cycle_iso: str, stories: list) -> dict:
    """The page of section ``sec_id`` holding ``stories`` (its entries, with scores)."""
    return {
        "schema": docs.PAGE_SCHEMA,
        "edition": ctx.edition.id,
        "section": sec_id,
        "version": ctx.now // MINUTE_MS,
        "cycle": cycle_iso,
        "generated_at": cycle_iso,
        "stories": stories,
    }


@dataclass
class PageDigest:
    """A section page's inputs as of the last cycle that built it (``key``: per slot in order, the bytes of its
    story id and :func:`page_keys` row; and the section names the rows' section index reads), its entries without scores
    (``statics``, shared by every page built from that key: never changed in place) and the content digest of a
    page built from them (``digest``: documents.content_digest, filled in by the change-only replay the first time
    it digests such a page, steady.py ``unproposed``). Kept in the edition's CycleCache."""

    key: tuple
    statics: list
    kept: dict  # the statics by their key rows' bytes: the page_entries of a cycle with this key
    digest: str | None = None


def reuse_pages(ctx: CycleContext) -> bool:
    """Whether this cycle keeps and reuses whole pages and their digests by their inputs (:func:`page_keys`): the
    change-only replay only (the only reader of the digests), and not while an editorial control or a takedown may
    rewrite the pages after they are built (overlays/controls.py rewrites a page in place)."""
    if ctx.steady is None:
        return False
    overlays = ctx.overlays
    return overlays is None or not (overlays.controls or overlays.takedowns)


def page_keys(book: StoryBook, shown: Shown, slots: list, rows: np.ndarray, links: int) -> np.ndarray:
    """Per page slot (``(slot, candidate position, representative, supporting rows, score)`` of every section, in
    order; ``rows`` their candidates' story rows), everything its entry is made of but rank and score
    (:func:`page_documents` reads nothing else), as one row of integers: the representative's row, first-seen time,
    version and label bits (its card, with lede: what ``Cards`` checks a cached card by; a row is one article of
    this book, and the edition's CycleCache, which keeps the keys, is replaced with the book), the story's label
    bits (pinned on this page, developing, fact check by another article: :class:`StoryLabels`), its card section
    (an index into ``PageFacts.section_names``), article count, voice count and newest time, and per supporting
    link (``links`` or more columns, -1 where there is none) its row, first-seen time, version and label bits. The
    story id is the key rows are looked up by. Equal rows, equal entries (tests/transforms/editions/
    test_page_reuse.py changes each input in turn, test_pool_entries.py)."""
    n, facts, cards = len(slots), shown.facts, shown.cards
    if not n:
        return np.zeros((0, 9 + 4 * links), np.int64)
    slot_l, pos_l, rep_l, sup_l, _ = zip(*slots)  # one pass over the slots, a column each
    pos, rep = np.array(pos_l, np.int64), np.array(rep_l, np.int64)
    pinned = np.array([s.pinned for s in slot_l], bool)
    lens = np.fromiter(map(len, sup_l), np.int64, n)
    width = max(links, int(lens.max()))
    has = np.arange(width) < lens[:, None]  # each slot's links first, then -1: row by row, the links in order
    sup = np.full((n, width), -1, np.int64)
    sup[has] = np.fromiter(chain.from_iterable(sup_l), np.int64, int(lens.sum()))
    safe = np.where(has, sup, rep[:, None])  # a card of the cycle where there is no link (masked below)
    both = np.concatenate([rep, safe.ravel()])  # the representatives' cards, then the links': read at once
    card_cols = cards.cols_of(both)
    cols = [
        rep,
        *card_cols[:, :n],
        story_label_codes(shown, pos, card_cols[2, :n], pinned),
        facts.section_code[pos],
        book.stories.n_articles[rows].astype(np.int64),
        shown.ranked.f.pub_count[rows].astype(np.int64),
        book.stories.newest_seen[rows].astype(np.int64),
    ]
    links_cols = np.where(has, card_cols[:, n:].reshape(3, n, width), -1)  # first seen, version, label bits
    return np.concatenate([np.stack(cols, axis=1), sup, *links_cols], axis=1)


def story_label_codes(shown: Shown, pos: np.ndarray, rep_codes: np.ndarray, pinned: np.ndarray) -> np.ndarray:
    """:meth:`StoryLabels.of` of candidate positions ``pos`` whose representatives' cards have label bits
    ``rep_codes`` (``Cards.codes_of``) as integers: 1 pinned (breaking), else 2 developing, plus 4 for a fact check
    by another article (equal codes, equal labels)."""
    labels = shown.labels
    developing = labels.developing[pos] if pos.size else np.zeros(0, bool)
    fact = labels.fact[pos] if pos.size else np.zeros(0, bool)
    other_check = fact & ((rep_codes & FACT_CHECK_BIT) == 0)
    return (np.where(pinned, 1, np.where(developing, 2, 0)) + 4 * other_check).astype(np.int64)


def pool_positions(ranked: Ranked, facts: PageFacts, p: RankParams) -> np.ndarray:
    """Candidate positions of the pool: the best candidates with a representative, by smoothed score (the national
    pool and its local reserve, scoring.py ``local_reserve``). Kept on ``facts`` for the same ``ranked`` and
    ``p``: the steady test (ranker/steady.py) and the pool document both ask, one after the other."""
    memo = facts.pool_memo
    if memo is not None and memo[0] is ranked and memo[1] is p:
        return memo[2]
    cand, smoothed = ranked.cand, ranked.smoothed
    pool_pos = np.searchsorted(cand.rows, cand.pool).astype(np.int64)  # the pool's rows are candidates (sorted rows)
    pool_pos = pool_pos[ranked.reps.rep[pool_pos] >= 0]
    if pool_pos.size:
        ids = np.asarray(facts.ids_l, np.int64)
        pool_pos = pool_pos[np.lexsort((ids[pool_pos], -smoothed[pool_pos]))]  # bounded by local_reserve
    facts.pool_memo = (ranked, p, pool_pos)
    return pool_pos


def pool_document(ctx: CycleContext, shown: Shown, pool_pos: np.ndarray) -> dict:
    """The candidate pool with what For you re-ranks on. Entries are rebuilt only for stories whose entry could
    differ (:func:`pool_keys`: coverage version, centroid, representative and its card, labels, section); the
    others are last cycle's with the new score. Which entries can be reused is decided for the whole pool at once
    (``KeptEntries``: one comparison of integer keys), so a reused entry costs one dict copy."""
    book, now, ranked, facts, cards = ctx.book, ctx.now, shown.ranked, shown.facts, shown.cards
    pool_rows = ranked.cand.rows[pool_pos]
    sids, keys = book.stories.id[pool_rows], pool_keys(book, shown, pool_pos, pool_rows)
    statics = ctx.cache.pool.find(sids, keys, facts.section_names)
    misses = [k for k, e in enumerate(statics) if e is None]
    reps = ranked.reps.rep[pool_pos]
    # the reused entries' cards (without lede) stay cached, unchecked: Cards.get checks one when it is asked for
    new_cards, old_cards = cards.new, cards.old
    for card_key in (reps + reps).tolist():
        if card_key not in new_cards:
            card = old_cards.get(card_key)
            if card is not None:
                new_cards[card_key] = card
    if misses:
        # a story's topics, publishers, places, entities and vector when only its card, labels or section changed
        # (the hourly rotation of representatives: most of the misses)
        miss = np.array(misses, np.int64)
        same_story = ctx.cache.pool.find_prefix(sids[miss], keys[miss], POOL_STORY_KEYS)
        fresh = _fresh_pool_entries(ctx, shown, pool_pos, misses, same_story)
        for k in misses:
            statics[k] = fresh[k]
    ctx.clock.lap("pool_features")
    ctx.cache.pool = KeptEntries(sids, keys, statics, facts.section_names)
    scores = docs.round_sigs(ranked.smoothed[pool_pos].tolist())
    return {
        "schema": docs.POOL_SCHEMA,
        "edition": ctx.edition.id,
        "version": now // MINUTE_MS,
        "cycle": docs.iso(now),
        "stories": [dict(e, score=sc) for e, sc in zip(statics, scores)],
    }


POOL_STORY_KEYS = (
    2  # the first columns of pool_keys: what an entry's topics, publishers, places, entities, vector are made of
)


def pool_keys(book: StoryBook, shown: Shown, pool_pos: np.ndarray, pool_rows: np.ndarray) -> np.ndarray:
    """Per pool position, what its entry (without score) is made of, as one row of integers: the story's coverage
    version (its articles, pairs, mentions, sections and entities change with it) and centroid sequence (the
    vector), the representative's row, first-seen time, version and label bits (its card), the story's label bits
    (pinned, developing, fact check by another article: :class:`StoryLabels`) and its card section (an index into
    ``PageFacts.section_names``, kept with the keys). Equal rows, equal entries; equal first two columns
    (:data:`POOL_STORY_KEYS`), equal topics, publishers, places, entities and vector."""
    facts = shown.facts
    rep = shown.ranked.reps.rep[pool_pos]
    sids = book.stories.id[pool_rows]
    pinned = sorted_member(sids, np.sort(np.array(facts.pinned_ids, np.int64)))  # distinct story ids
    first_seen, version, codes = shown.cards.cols_of(rep)
    return np.stack(
        [
            book.stories.version[pool_rows].astype(np.int64),
            np.ascontiguousarray(book.stories.centroid_seq[pool_rows], np.float64).view(np.int64),
            rep.astype(np.int64),
            first_seen,
            version,
            codes,
            story_label_codes(shown, pool_pos, codes, pinned),
            facts.section_code[pool_pos],
        ],
        axis=1,
    )


def _fresh_pool_entries(ctx: CycleContext, shown: Shown, pool_pos: np.ndarray, misses: list, same_story: list) -> dict:
    """Pool entries (without score) of the pool positions ``misses``, by position; ``same_story``: per miss, last
    cycle's entry of the story when its story fields are the same (``KeptEntries.find_prefix``), else None. Its
    story fields are taken as they are (the same tuples: overlays/topics.py ``annotate_pool`` then knows them)."""
    book, facts, cards, labels = ctx.book, shown.facts, shown.cards, shown.labels
    pool_rows, pool_pos_l = shown.ranked.cand.rows[pool_pos], pool_pos.tolist()
    pinned = set(facts.pinned_ids)
    new = [k for k, old in zip(misses, same_story) if old is None]
    if new:
        rows = pool_rows[np.array(new, np.int64)]
        row_of = dict(zip(book.stories.id[rows].tolist(), rows.tolist()))
        made = SHARED_POOL_STORIES.find(
            book, ctx.params, list(row_of), lambda ids: pool_stories(book, [row_of[s] for s in ids], ctx.params)
        )
        new_story = dict(zip(new, made))
    fresh = {}
    for k, old in zip(misses, same_story):
        i, sid = pool_pos_l[k], facts.ids_l[pool_pos_l[k]]
        rep = facts.rep_l[i]
        story = old if old is not None else new_story[k]
        entry = {
            "story_id": str(sid),
            "section": facts.section(i),
            "topics": story["topics"],
            "publishers": story["publishers"],
            "places": story["places"],
            "entities": story["entities"],
            "labels": labels.of(i, rep, sid in pinned),
            "representative": cards.get(rep, False),
        }
        if "vector" in story:
            entry["vector"] = story["vector"]
        fresh[k] = entry
    return fresh


# A pool entry's story fields (pool_stories) shared by the editions whose books have the same tables
# (kept.LineageMemo): they read nothing else, and the editions of a language put the same stories in their pools (a
# minute's ~1,400 articles at 300,000 live stories: ~1,300 stories' fields per English edition, made 15 times over).
# Budget: stories' fields, ~2.7 KB each with the vector (~22 MB); a scope serves one minute.
SHARED_POOL_STORIES = LineageMemo(kept=8_000)


def pool_stories(book: StoryBook, rows: list, p: RankParams) -> list[dict]:
    """Per story row: a pool entry's story fields, its topics, publishers, places, entities and (a book with
    centroids) its projected vector, as tuples (shared read-only)."""
    rows_a = np.array(rows, np.int64)
    topics, publishers, places = pool_features(book, rows_a, p)
    vecs = docs.project(book.stories.centroid[rows_a]).tolist() if book.dim else None
    out = []
    for m, row in enumerate(rows):
        story = {
            "topics": tuple(topics[m]),
            "publishers": tuple(publishers[m]),
            "places": tuple(places[m]),
            "entities": book.story_entities(row),
        }
        if vecs is not None:
            story["vector"] = tuple(vecs[m])
        out.append(story)
    return out


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
