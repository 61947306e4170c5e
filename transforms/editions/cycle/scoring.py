"""The ranking maths of one cycle, vectorised with numpy over every live story of an edition's book.

Reads a :class:`~transforms.editions.book.storybook.StoryBook` and the cycle time; writes nothing. For cycle ``now`` (a
minute boundary, event time), per story (DESIGN.md section 5):

- coverage  = log(1 + sum of authority over distinct voices with an original in the last 6 h)
              + 0.1 * log(1 + the same over all its originals) -- the small tail lets a quiet edition (or a
              quiet night) still fill its pages with the freshest older stories instead of failing validation.
              Authority is the publisher's topic authority for the story's primary section. Copies add nothing.
              A voice is an ownership group (publishers.json ``owner``): sister sites count once, at the highest
              authority among them (:func:`one_voice`); the card's ``publisher_count`` counts voices too.
- velocity  = 1 + 0.25 * log2((n30 + 1) / (r30 + 1)), clipped to [0.75, 2.5]: n30 = originals first seen in the
              last 30 min, r30 = the story's own rate before that, per 30 min (0 for a story younger than 30 min).
- freshness = 0.5 ** (age of the newest original's FIRST-SEEN time / 4 h): a re-dated article cannot look fresh.
- relevance = 0.5 + 0.5 * min(1, local + geo) + 0.25 * intl, where local / intl are the authority shares of the
              story's publishers from the edition's region / international (wire, no region) and geo the share of
              its articles naming a place of the region (editions.json gazetteer).
- raw score = coverage * velocity * freshness * relevance; section pages multiply by the section fit.

Candidates: the edition's pool (top ``pool_size`` by raw score, and per city of its region up to ``local_candidates``
more stories local to that city: :func:`local_reserve`) plus the top ``section_candidates`` of every
section; only they are smoothed (mean of the last <= 5 raw scores over consecutive cycles, kept per edition in
``Smoothing``), so the per-edition memory stays ~2,000 stories whatever the book size.

The same maths written as a per-story Python loop (the reference the tests compare with, and the baseline of
benchmarks/rank_bench.py) is tests/transforms/editions/loop_reference.py.

Name kept: each stage that scores has its own ``scoring.py`` (editions: stories for pages; stories: articles
against stories; authority: publishers), always read through its package (``transforms.editions.cycle.scoring``); the
stateful ranker that calls this is rank.py beside it, the For you re-ranker serving/personal/ranking.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from transforms.common import HOUR_MS
from transforms.editions.book.storybook import StoryBook
from transforms.editions.cycle.arrays import best_first_by_group, unique_ints
from transforms.editions.vocabulary.cities import config_cities
from transforms.editions.vocabulary.config import Edition, EditionsConfig, Section
from transforms.editions.vocabulary.params import RankParams


@dataclass
class Features:
    """Edition-independent per-story features at ``now`` (arrays indexed by story row)."""

    now: int
    live: np.ndarray
    prim: np.ndarray
    coverage: np.ndarray
    velocity: np.ndarray
    freshness: np.ndarray
    base: np.ndarray
    n30: np.ndarray
    auth_all: np.ndarray
    pub_count: np.ndarray
    sp_ok: np.ndarray
    sp_w: np.ndarray  # authority of each story x publisher pair (0 when the pair does not count)


@dataclass
class Relevance:
    local: np.ndarray
    intl: np.ndarray
    geo: np.ndarray
    local_geo: np.ndarray
    domestic: np.ndarray
    rel: np.ndarray
    region_pairs: np.ndarray | None = None  # pair rows of the region's publishers, ascending (kept.py), if known
    # (plan, params, stories scoring above 0, (qualifies, fit)) of section_fits over every story, which reads the
    # book, this relevance and those: kept.py keeps a small book's relevance across the cycles whose book and live
    # stories are the same, and the sections' fits with it while the same stories score
    fits: tuple | None = None


@dataclass
class Candidates:
    rows: np.ndarray  # sorted unique story rows
    raw: np.ndarray  # raw edition score per candidate (aligned with rows)
    pool: np.ndarray  # rows of the pool, best first
    sections: dict = field(default_factory=dict)  # section id -> (rows best first, fit per row)
    domestic: np.ndarray | None = None  # per candidate, for Breaking relevance and pool places
    intl: np.ndarray | None = None


@dataclass
class PairSums:
    """The story x publisher pair part of the features: per pair whether it counts (``sp_ok``) and its weight
    (``sp_w``), per story (or per group of :func:`pair_sums`) the authority of its recent and of all its voices and
    its voice count."""

    sp_ok: np.ndarray
    sp_w: np.ndarray
    auth_recent: np.ndarray
    auth_all: np.ndarray
    pub_count: np.ndarray
    coverage: tuple | None = None  # (tail weight, coverage per story): features() computes it once per sums
    shared: object = None  # the kept.SmallSums holding these sums, if any (the steady-minute proof asks it)


def pair_sums(book: StoryBook, live: np.ndarray, now: int, p: RankParams, sel=None, slot=None, k: int = 0) -> PairSums:
    """:class:`PairSums` over every pair (``sel`` None: sums per story row), or over the pair rows ``sel`` (ascending,
    every live pair of each story they touch) with sums per ``slot`` (one per pair, < ``k``). A story's sums are
    added pair by pair in row order either way (``np.bincount``), and a pair that does not count adds 0.0, so the
    sums of a story over its own pairs are bit for bit the ones over every pair (transforms/editions/cycle/kept.py
    relies on it)."""
    ns = book.pairs.size
    pick = (lambda a: a[:ns]) if sel is None else (lambda a: a[sel])
    sp_story, sp_pub = pick(book.pairs.story), pick(book.pairs.publisher)
    prim = book.primary_sections()
    sp_ok = pick(book.pairs.live) & live[sp_story]
    auth = book.publishers.authority[sp_pub, prim[sp_story] + 1]
    voice = one_voice(book, sp_story, sp_pub, sp_ok, auth)
    sp_w = np.where(voice, auth, 0.0)
    recent = sp_ok & (pick(book.pairs.latest_first_seen) >= now - p.coverage_window_ms)
    recent = one_voice(book, sp_story, sp_pub, recent, auth)
    g, m = (sp_story, book.stories.size) if sel is None else (slot, k)
    auth_recent, auth_all = _sums(g, np.where(recent, auth, 0.0), m), _sums(g, sp_w, m)
    return PairSums(sp_ok, sp_w, auth_recent, auth_all, np.bincount(g[voice], minlength=m))


def _sums(g: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """``np.bincount`` with weights, always float64 (an empty input gives int64 zeros, which an array kept across
    cycles would keep as its dtype)."""
    return np.bincount(g, weights=w, minlength=k).astype(np.float64, copy=False)


def features(book: StoryBook, now: int, p: RankParams, sums: PairSums | None = None, live=None) -> Features:
    """The features at ``now``; ``sums`` and ``live`` when the caller has them (kept.py keeps the pair sums across
    cycles), else computed here."""
    n = book.stories.size
    live = book.live_mask(now, p.live_window_ms) if live is None else live
    prim = book.primary_sections()
    s = pair_sums(book, live, now, p) if sums is None else sums
    if s.coverage is None or s.coverage[0] != p.coverage_tail_weight:  # it reads the sums alone
        s.coverage = (p.coverage_tail_weight, np.log1p(s.auth_recent) + p.coverage_tail_weight * np.log1p(s.auth_all))
    coverage = s.coverage[1]

    na = book.articles.size
    recent_a = np.flatnonzero(book.articles.first_seen[:na] >= now - p.velocity_window_ms)  # few: select by time first
    st = book.articles.story[recent_a]
    ok = book.articles.has_data[recent_a] & ~book.articles.is_copy[recent_a] & (st >= 0)
    n30 = np.bincount(st[ok], minlength=n)
    first = book.stories.first_seen[:n]
    start = now - p.velocity_window_ms
    age_before_h = np.maximum((start - first) / HOUR_MS, 0.5)
    before = book.stories.n_originals[:n] - n30
    r30 = np.where(first < start, before / age_before_h * (p.velocity_window_ms / HOUR_MS), 0.0)
    velocity = 1.0 + p.velocity_weight * np.log2((n30 + 1.0) / (r30 + 1.0))
    velocity = np.minimum(np.maximum(velocity, p.velocity_min), p.velocity_max)  # np.clip's values, without its wrapper
    freshness = np.power(0.5, (now - book.stories.newest_seen[:n]) / p.half_life_ms)
    base = np.where(live, coverage * velocity * freshness, 0.0)
    return Features(now, live, prim, coverage, velocity, freshness, base, n30, s.auth_all, s.pub_count, s.sp_ok, s.sp_w)


def one_voice(book: StoryBook, story: np.ndarray, pub: np.ndarray, ok: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``ok`` (per story x publisher pair) without the pairs that repeat an ownership group in their story: sister
    sites are one voice, the one of highest ``weight`` (lowest publisher row on ties). Only pairs of publishers
    with a sister are looked at: without ``owner`` in the registry this is a copy of ``ok``."""
    groups = book.publisher_groups()
    if not groups.size:
        return ok
    shared = _shared_groups(book, groups)
    if shared is None:  # no publisher has a sister
        return ok
    sel = np.flatnonzero(ok & shared[pub])
    if sel.size < 2:
        return ok
    g, st = groups[pub[sel]], story[sel]
    order = np.lexsort((pub[sel], -weight[sel], g, st))
    s_o, g_o = st[order], g[order]
    dup = np.r_[False, (s_o[1:] == s_o[:-1]) & (g_o[1:] == g_o[:-1])]
    out = ok.copy()
    out[sel[order[dup]]] = False
    return out


def _shared_groups(book: StoryBook, groups: np.ndarray):
    """Per publisher row, whether its ownership group has another publisher (None: no group has), kept on the book
    with the group table it was found for (StoryBook.publisher_groups returns the same array until the registry
    or the publisher table changes)."""
    hit = book.__dict__.get("_shared_groups")
    if hit is None or hit[0] is not groups:
        shared = np.bincount(groups)[groups] > 1
        hit = book.__dict__["_shared_groups"] = (groups, shared if shared.any() else None)
    return hit[1]


@dataclass
class RegionSums:
    """The sums relevance divides, per story (or per group of :func:`region_sums`): the pair weights of the
    region's publishers and of international ones, the region's place mentions and sub-national mentions."""

    local: np.ndarray
    intl: np.ndarray
    mentions: np.ndarray
    local_mentions: np.ndarray


def region_sums(book: StoryBook, sp_w: np.ndarray, r: int, sel=None, slots=(None, None), msel=None, k: int = 0):
    """:class:`RegionSums` for region index ``r`` over every pair and mention (``sel`` None), or over the pair rows
    ``sel`` with ``sp_w`` aligned with them and the mention rows ``msel`` (ascending), summed per ``slots`` (of each
    pair, of each mention; < ``k``): added in row order either way, as :func:`pair_sums`."""
    slot, mslot = slots
    if sel is None:
        ns, nr, k = book.pairs.size, book.mentions.size, book.stories.size
        sel, msel = slice(0, ns), slice(0, nr)
        slot, mslot = book.pairs.story[:ns], book.mentions.story[:nr]
        sp_w = sp_w[:ns]
    sp_region = book.pairs.region[sel]
    hit = np.flatnonzero(sp_region == r)  # the edition's own publishers: a small share of the pairs
    local = _sums(slot[hit], sp_w[hit], k)
    hit = np.flatnonzero(sp_region == -1)
    intl = _sums(slot[hit], sp_w[hit], k)
    m = book.mentions
    hit = m.live[msel] & (m.region[msel] == r)
    mentions = _sums(mslot, np.where(hit, m.count[msel], 0), k)
    local_mentions = _sums(mslot, np.where(hit, m.local_count[msel], 0), k)
    return RegionSums(local, intl, mentions, local_mentions)


def relevance(book: StoryBook, f: Features, region: str, sums: RegionSums | None = None) -> Relevance:
    """Relevance of every story to ``region``; ``sums`` when the caller keeps them (kept.py), else computed."""
    n = book.stories.size
    s = region_sums(book, f.sp_w, book.region_index.get(region, -2)) if sums is None else sums
    denom = np.maximum(f.auth_all, 1e-12)
    local = s.local / denom
    intl = s.intl / denom
    n_art = np.maximum(book.stories.n_articles[:n], 1)
    geo = np.minimum(1.0, s.mentions / n_art)
    local_geo = np.minimum(1.0, s.local_mentions / n_art)
    domestic = np.minimum(1.0, local + geo)
    rel = 0.5 + 0.5 * domestic + 0.25 * intl
    return Relevance(local, intl, geo, local_geo, domestic, rel)


class SectionPlan:
    """An edition's sections laid out for :func:`section_fits`: the row of each in the (sections x stories)
    matrices, grouped by how they match, and the book's section index of each that reads one."""

    def __init__(self, sections: tuple[Section, ...], section_index: dict):
        self.sections = sections
        self.ids = tuple(s.id for s in sections)
        self.others: list[tuple[int, str, int]] = []  # (row, match, row in the share matrix): world, nation, local
        every: list[int] = []  # rows of the sections matching every live story
        label: list[int] = []  # rows of the sections matching by label
        label_j: list[int] = []  # their rows in the share matrix
        js: list[int] = []  # the book's section index of each row of the share matrix
        for i, section in enumerate(sections):
            if section.match == "all":
                every.append(i)
                continue
            if section.match not in ("label", "world", "nation", "local"):
                raise ValueError(f"section {section.id}: unknown match {section.match!r}")
            js.append(section_index[section.id])
            if section.match == "label":
                label.append(i)
                label_j.append(len(js) - 1)
            else:
                self.others.append((i, section.match, len(js) - 1))
        self.js = np.array(js, np.int64)
        self.js_col = self.js[:, None]
        # slices where the rows run on (an edition's label sections do): a view, where a list index copies
        self.every, self.label, self.label_j = _as_index(every), _as_index(label), _as_index(label_j)


def _as_index(rows: list[int]):
    """``rows`` as a slice when they are consecutive, else as an index array; None when there are none."""
    if not rows:
        return None
    if rows == list(range(rows[0], rows[-1] + 1)):
        return slice(rows[0], rows[-1] + 1)
    return np.array(rows, np.intp)


_PLANS: dict[tuple, tuple] = {}  # (id of a config, edition id, id of a section index) -> (config, index, plan)


def section_plan(book: StoryBook, edition: Edition, config: EditionsConfig) -> SectionPlan:
    """The :class:`SectionPlan` of ``edition``'s sections, made once per config object and book section index."""
    key = (id(config), edition.id, id(book.section_index))
    hit = _PLANS.get(key)
    if hit is None or hit[0] is not config or hit[1] is not book.section_index or hit[2].ids != edition.sections:
        if len(_PLANS) >= 4096:
            _PLANS.clear()
        plan = SectionPlan(tuple(config.section(sid) for sid in edition.sections), book.section_index)
        hit = _PLANS[key] = (config, book.section_index, plan)
    return hit[2]


def section_fits(
    book: StoryBook, f: Features, rel: Relevance, plan: SectionPlan, p: RankParams, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(qualifies, fit) of every section of ``plan`` as (sections x stories) matrices, a row per section in the
    plan's order (``rows``: for those story rows only, aligned with them). Each element is its section's
    elementwise formula at that story, the same bits whichever sections share the call; every fit is in [0.5, 1]:
    :func:`section_rows` relies on it."""

    def take(a: np.ndarray) -> np.ndarray:
        return a if rows is None else a[rows]

    n = book.stories.size
    base = take(f.base)
    live = base > 0
    q = np.empty((len(plan.sections), base.size), bool)
    fit = np.empty(q.shape)
    if plan.every is not None:
        q[plan.every], fit[plan.every] = live, 1.0
    if not plan.js.size:
        return q, fit
    counts = book.stories.section_counts[:n] if rows is None else book.stories.section_counts[rows]
    share = counts[:, plan.js].T / np.maximum(take(book.stories.labelled[:n]), 1)  # a row per section read
    labelled = (share >= p.section_share_min) | (take(f.prim) == plan.js_col)
    if plan.label is not None:
        fit[plan.label] = 0.5 + 0.5 * share[plan.label_j]
        q[plan.label] = live & labelled[plan.label_j]
    if plan.others:
        domestic = take(rel.domestic)
        for i, match, c in plan.others:
            if match == "world":
                q[i], fit[i] = live & ((domestic < p.world_share_max) | labelled[c]), 1.0 - 0.5 * domestic
            elif match == "nation":
                q[i], fit[i] = live & (domestic >= p.nation_share_min), 0.5 + 0.5 * domestic
            else:  # local
                local_geo = take(rel.local_geo)
                local = (local_geo >= p.local_share_min) | (labelled[c] & (domestic >= p.nation_share_min))
                q[i], fit[i] = live & local, 0.5 + 0.5 * local_geo
    return q, fit


SHORTLIST = 6000  # stories by raw score among which a section's candidates are looked for first


class Shortlist:
    """The ``SHORTLIST`` stories of highest raw score and the highest raw score left out (``bound``). A section's
    fit is at most 1, so a story left out scores at most ``bound`` on any section: when a section's ``k``-th best
    on the shortlist scores above it, its top ``k`` over every story is its top ``k`` on the shortlist (exact, ties
    included); otherwise :func:`section_rows` looks at every story. Saves 12 passes over a 120,000-story book per
    edition and cycle."""

    def __init__(self, raw: np.ndarray, ids: np.ndarray, size: int | None = None):
        n, size = raw.size, SHORTLIST if size is None else size
        self.all_raw, self.all_ids = raw, ids
        if n <= size:
            self.rows, self.bound = None, -np.inf
            return
        part = np.argpartition(raw, n - size - 1)
        self.rows = np.sort(part[n - size :])
        self.bound = float(raw[part[n - size - 1]])  # the largest raw score left out
        self.raw, self.ids = raw[self.rows], ids[self.rows]

    def top_k(self, k: int) -> np.ndarray:
        """:func:`top_k` of the raw scores (the pool): on the shortlist when its ``k``-th best scores above
        ``bound`` (exact, as for a section), else over every story."""
        if self.rows is not None:
            pos = top_k(self.raw, self.ids, k)
            if pos.size == k and self.raw[pos[-1]] > self.bound:
                return self.rows[pos]
        return top_k(self.all_raw, self.all_ids, k)


def section_rows(book, f, rel, plan: SectionPlan, p, short: Shortlist) -> dict:
    """Per section id of ``plan``: (rows best first, their fit) of its top ``p.section_candidates``, looked for on
    the :class:`Shortlist` first, and over every story for the sections the shortlist cannot decide."""
    k = p.section_candidates
    out: dict = dict.fromkeys(plan.ids)
    rest = plan
    if short.rows is not None:
        q, fit = section_fits(book, f, rel, plan, p, short.rows)
        score = short.raw * fit
        left = []
        for i, pos in enumerate(top_k_rows(score, short.ids, k, q)):
            if pos.size == k and score[i, pos[-1]] > short.bound:
                out[plan.ids[i]] = (short.rows[pos], fit[i, pos])
            else:
                left.append(plan.sections[i])
        if not left:
            return out
        rest = SectionPlan(tuple(left), book.section_index)
    live = f.base > 0
    hit = rel.fits
    if hit is not None and hit[0] is rest and hit[1] is p and np.array_equal(hit[2], live):
        q, fit = hit[3]
    else:
        q, fit = section_fits(book, f, rel, rest, p)
        rel.fits = (rest, p, live, (q, fit))
    for i, rows in enumerate(top_k_rows(short.all_raw * fit, short.all_ids, k, q)):
        out[rest.ids[i]] = (rows, fit[i, rows])
    return out


def top_k_rows(scores: np.ndarray, ids: np.ndarray, k: int, eligible: np.ndarray) -> list[np.ndarray]:
    """:func:`top_k` of each row of ``scores`` (sections x stories) with its row of ``eligible``: the same indices
    in the same order, by one sort for every row. A row with more than ``k`` positive eligible scores keeps those
    at or above its ``k``-th best; the sort (score, then ascending id) puts the ties at that score in id order, so
    its first ``k`` are top_k's."""
    ok = (scores > 0) & eligible
    if k <= 0:
        return [np.zeros(0, np.intp) for _ in range(scores.shape[0])]
    for i in np.flatnonzero(np.count_nonzero(ok, axis=1) > k).tolist():
        s = scores[i][ok[i]]
        ok[i] &= scores[i] >= np.partition(s, s.size - k)[s.size - k]  # the k-th largest
    sec, pos = np.nonzero(ok)  # by row, then ascending index
    pos = pos[np.lexsort((ids[pos], -scores[sec, pos], sec))]
    ends = np.cumsum(np.count_nonzero(ok, axis=1)).tolist()
    return [pos[a : min(a + k, b)] for a, b in zip([0, *ends[:-1]], ends)]


def top_k(scores: np.ndarray, ids: np.ndarray, k: int, eligible: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ``k`` best positive scores, best first; ties broken by ascending id (deterministic)."""
    ok = scores > 0
    if eligible is not None:
        ok &= eligible
    pos = np.flatnonzero(ok)
    if k <= 0 or pos.size == 0:
        return pos[:0]
    if pos.size > k:
        s = scores[pos]
        thr = np.partition(s, s.size - k)[s.size - k]  # the k-th largest
        above = pos[s > thr]
        at = pos[s == thr]
        at = at[np.argsort(ids[at], kind="stable")][: k - above.size]
        pos = np.concatenate([above, at])
    return pos[np.lexsort((ids[pos], -scores[pos]))]


def local_reserve(
    book: StoryBook, rel: Relevance, raw: np.ndarray, pool: np.ndarray, region: str, p: RankParams, config
) -> np.ndarray:
    """Per city of the edition's region, its best ``local_candidates`` stories (raw score, then id) that the
    national pool left out, best first: a story is local to a city when a live local publisher of the city
    (``Publisher.city``) covers it or its main entities name the city (the rule of the pool's places,
    vocabulary/cities.py); a story naming a sub-national place of the region but no city of it counts for the
    region's own reserve. The national pool is a prefix of every city's order, so a city's pool stories count
    towards its ``local_candidates`` and a city the national pool already shows well adds nothing. City pages are
    built from the pool (overlays/topics.py): without a reserve a story only the Springfield Gazette covers left
    the Springfield page once the edition had more than ``pool_size`` stronger live stories, and with one reserve
    for the whole region the stories of its busiest cities filled it. Cost: O(live local stories) besides two
    masks over the story x publisher pairs (none when the pool holds every live story: a quiet edition); bound:
    ``local_candidates`` x (cities + 1) stories."""
    live = raw > 0
    if p.local_candidates <= 0 or pool.size == np.count_nonzero(live):  # the pool holds every story it could add
        return pool[:0]
    r = book.region_index.get(region, -2)
    codes, mine, key_of = _region_cities(config, region)
    parts: list[np.ndarray] = []  # (story row, key) pairs: each covering city once per story, then each entity city
    ns = book.pairs.size
    if ns and len(book.publishers.id) and mine:
        city_key = _city_publishers(book.publisher_cities(), region, mine, key_of)  # per publisher, 0: none
        story, pubs = book.pairs.story[:ns], book.pairs.publisher[:ns]
        if rel.region_pairs is None:
            hit = np.flatnonzero((city_key[pubs] > 0) & (book.pairs.region[:ns] == r) & book.pairs.live[:ns])
        else:  # the same rows, from the region's pairs only (a fifteenth of an English book's)
            hit = rel.region_pairs[(city_key[pubs[rel.region_pairs]] > 0) & book.pairs.live[rel.region_pairs]]
        hit = hit[live[story[hit]]]
        if hit.size:
            pair_key = unique_ints(story[hit].astype(np.int64) * len(key_of) + city_key[pubs[hit]])
            parts.append(np.stack([pair_key // len(key_of), pair_key % len(key_of)], axis=1))
    named = np.flatnonzero((rel.local_geo > 0) & live)
    if named.size:
        has = _naming_cities(book, named, codes)
        named_rows: list[tuple[int, int]] = []
        for row in named[has].tolist():  # the few stories whose entities name a city
            keys = [key_of[c] for c in _entity_cities(book, row, codes) if c in mine]
            named_rows.extend((row, k) for k in keys or [0])  # 0: a sub-national place, no city of it named
        plain = named[~has].astype(np.int64)  # naming no city: the region's own reserve
        parts.append(np.stack([plain, np.zeros_like(plain)], axis=1))
        if named_rows:
            parts.append(np.array(named_rows, np.int64))
    if not parts:  # no story local to a city or naming a place of the region
        return pool[:0]
    pairs = np.concatenate(parts)
    best = _best_per_key(pairs[:, 0], pairs[:, 1], raw, book.stories.id, p.local_candidates)
    in_pool = np.zeros(raw.size, bool)
    in_pool[pool] = True
    return best[~in_pool[best]]


_REGION_CITIES: dict[tuple, tuple] = {}  # (id of a config, region) -> (config, codes, cities, keys)


def _region_cities(config, region: str) -> tuple[dict, frozenset, dict]:
    """(the config's city codes, the region's cities, their keys: "" the region's own reserve 0, then each city in
    sorted order), once per config object and region."""
    hit = _REGION_CITIES.get((id(config), region))
    if hit is None or hit[0] is not config:
        if len(_REGION_CITIES) >= 4096:
            _REGION_CITIES.clear()
        codes, region_cities = config_cities(config)
        mine = region_cities.get(region, frozenset())
        key_of = {c: k for k, c in enumerate(["", *sorted(mine)])}
        hit = _REGION_CITIES[(id(config), region)] = (config, codes, mine, key_of)
    return hit[1], hit[2], hit[3]


_CITY_PUBLISHERS: dict[tuple, tuple] = {}  # (id of a publisher_cities array, region) -> (that array, keys)


def _city_publishers(pub_city: np.ndarray, region: str, mine: frozenset, key_of: dict) -> np.ndarray:
    """Per publisher row, the key (``key_of``) of its city when it is a local publisher of a city of ``region``,
    else 0; computed once per publisher table (StoryBook.publisher_cities returns the same array until the
    registry or the table changes)."""
    key = (id(pub_city), region)
    hit = _CITY_PUBLISHERS.get(key)
    if hit is None or hit[0] is not pub_city:
        if len(_CITY_PUBLISHERS) >= 4096:
            _CITY_PUBLISHERS.clear()
        keys = np.array([key_of[c] if c in mine else 0 for c in pub_city.tolist()], np.int64)
        hit = _CITY_PUBLISHERS[key] = (pub_city, keys)
    return hit[1]


# (language, story id, coverage version, articles) -> the city codes its main entities name
_ENTITY_CITIES: dict[tuple, tuple[str, ...]] = {}


def _entity_cities(book: StoryBook, row: int, codes: dict) -> tuple[str, ...]:
    """The city codes the story's main entities name (memoised per coverage version: its entities change only
    with its coverage)."""
    st = book.stories
    key = (book.language, int(st.id[row]), int(st.version[row]), int(st.n_articles[row]))
    hit = _ENTITY_CITIES.get(key)
    if hit is None:
        if len(_ENTITY_CITIES) >= 200_000:
            _ENTITY_CITIES.clear()
        named = (codes.get(e.lower()) for e in book.story_entities(row))
        hit = _ENTITY_CITIES[key] = tuple(dict.fromkeys(c for c in named if c))
    return hit


def _naming_cities(book: StoryBook, rows: np.ndarray, codes: dict) -> np.ndarray:
    """Per story row of ``rows``: whether its main entities name any city (:func:`_entity_cities` not empty). Kept
    on the book per row with the coverage version and article count it was found at (what :func:`_entity_cities`
    keys its memo by), so a cycle asks only about the stories that changed, and the local reserve loops over the
    few stories naming a city rather than over every story with a local mention (~500 per edition and cycle)."""
    n = book.stories.size
    kept = book.__dict__.get("_naming_cities")
    if kept is None or kept[0] is not codes or kept[1].size < n:
        size = 2 * max(n, 1024)
        ver, nart, has = np.full(size, -1, np.int64), np.full(size, -1, np.int64), np.zeros(size, bool)
        if kept is not None and kept[0] is codes:
            k = kept[1].size
            ver[:k], nart[:k], has[:k] = kept[1], kept[2], kept[3]
        kept = book.__dict__["_naming_cities"] = (codes, ver, nart, has)
    _, ver, nart, has = kept
    v, na = book.stories.version[rows], book.stories.n_articles[rows]
    stale = (ver[rows] != v) | (nart[rows] != na)
    for row in rows[stale].tolist():
        has[row] = bool(_entity_cities(book, row, codes))
    ver[rows[stale]], nart[rows[stale]] = v[stale], na[stale]
    return has[rows]


def _best_per_key(rows: np.ndarray, key: np.ndarray, raw: np.ndarray, ids: np.ndarray, k: int) -> np.ndarray:
    """The rows that are among the ``k`` best (raw score, then ascending id) of at least one of their keys (ints),
    each once, best first."""
    order = best_first_by_group(key, raw[rows], ids[rows])  # np.lexsort((ids[rows], -raw[rows], key))
    key_o = key[order]
    start = np.r_[0, np.flatnonzero(key_o[1:] != key_o[:-1]) + 1]
    rank = np.arange(key_o.size) - np.repeat(start, np.diff(np.r_[start, key_o.size]))
    kept = unique_ints(rows[order[rank < k]])
    return kept[np.lexsort((ids[kept], -raw[kept]))]


def select_candidates(
    book: StoryBook,
    f: Features,
    edition: Edition,
    config: EditionsConfig,
    p: RankParams,
    forced: np.ndarray | None = None,
    rel: Relevance | None = None,
) -> tuple[Candidates, Relevance]:
    """The edition's candidates (pool + every section's best + ``forced`` rows, e.g. Breaking stories); ``rel``: the
    edition's relevance when the caller has it."""
    rel = relevance(book, f, edition.region) if rel is None else rel
    raw = f.base * rel.rel
    ids = book.stories.id[: book.stories.size]
    short = Shortlist(raw, ids)
    pool = short.top_k(p.pool_size)
    scored = raw > 0
    every = pool.size == np.count_nonzero(scored)  # the pool holds every story scoring above 0 (a quiet edition)
    if not every:
        pool = np.concatenate([pool, local_reserve(book, rel, raw, pool, edition.region, p, config)])
    sections = section_rows(book, f, rel, section_plan(book, edition, config), p, short)
    if every:  # every candidate (a section's, a Breaking story scoring above 0, the reserve's) is in the pool
        rows = np.flatnonzero(scored)
    else:
        parts = [pool]
        if forced is not None and forced.size:
            parts.append(forced[raw[forced] > 0])
        parts.extend(rows for rows, _ in sections.values())
        rows = unique_ints(np.concatenate(parts))
    return (
        Candidates(rows, raw[rows], pool, sections, rel.domestic[rows], rel.intl[rows]),
        rel,
    )


# ---------------------------------------------------------------------------------------------------- smoothing
@dataclass
class Smoothing:
    """Last <= n raw scores of the edition's candidates over consecutive cycles (durable per-edition memory)."""

    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # sorted
    hist: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    cycle: int = 0

    def smooth(self, ids: np.ndarray, raw: np.ndarray, now: int, period_ms: int, n: int) -> np.ndarray:
        order = np.argsort(ids, kind="stable")
        sid, sraw = ids[order], raw[order]
        hist = np.zeros((sid.size, n))
        hist[:, 0] = sraw
        count = np.ones(sid.size, np.int8)
        if (
            self.ids.size
            and self.cycle == now - period_ms
            and self.hist.shape[1] == n
            and np.array_equal(self.ids, sid)
        ):
            hist[:, 1:] = self.hist[:, :-1]  # the same candidates as the last cycle (most cycles): row for row
            count = np.minimum(self.count + 1, n).astype(np.int8, copy=False)
        elif self.ids.size and self.cycle == now - period_ms and self.hist.shape[1] == n:
            pos = np.minimum(np.searchsorted(self.ids, sid), self.ids.size - 1)
            found = self.ids[pos] == sid
            hist[found, 1:] = self.hist[pos[found], :-1]
            count[found] = np.minimum(self.count[pos[found]] + 1, n)
        smoothed_sorted = hist.sum(axis=1) / count
        self.ids, self.hist, self.count, self.cycle = sid, hist, count, now
        out = np.empty_like(smoothed_sorted)
        out[order] = smoothed_sorted
        return out
