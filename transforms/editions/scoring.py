"""The ranking maths of one cycle, vectorised with numpy over every live story of an edition's book.

Reads a :class:`~transforms.editions.book.StoryBook` and the cycle time; writes nothing. For cycle ``now`` (a
minute boundary, event time), per story (DESIGN.md section 5):

- coverage  = log(1 + sum of authority over distinct publishers with an original in the last 6 h)
              + 0.1 * log(1 + the same over all its originals) -- the small tail lets a quiet edition (or a
              quiet night) still fill its pages with the freshest older stories instead of failing validation.
              Authority is the publisher's topic authority for the story's primary section. Copies add nothing.
- velocity  = 1 + 0.25 * log2((n30 + 1) / (r30 + 1)), clipped to [0.75, 2.5]: n30 = originals first seen in the
              last 30 min, r30 = the story's own rate before that, per 30 min (0 for a story younger than 30 min).
- freshness = 0.5 ** (age of the newest original's FIRST-SEEN time / 4 h): a re-dated article cannot look fresh.
- relevance = 0.5 + 0.5 * min(1, local + geo) + 0.25 * intl, where local / intl are the authority shares of the
              story's publishers from the edition's region / international (wire, no region) and geo the share of
              its articles naming a place of the region (editions.json gazetteer).
- raw score = coverage * velocity * freshness * relevance; section pages multiply by the section fit.

Candidates: the edition's pool (top ``pool_size`` by raw score) plus the top ``section_candidates`` of every
section; only they are smoothed (mean of the last <= 5 raw scores over consecutive cycles, kept per edition in
``Smoothing``), so the per-edition memory stays ~2,000 stories whatever the book size.

:func:`rank_maths_loop` is the same maths written as a per-story Python loop: the reference for tests (both must
give the same candidates and scores) and the baseline of benchmarks/rank_bench.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from transforms.editions.book import StoryBook
from transforms.editions.config import Edition, EditionsConfig, Section
from transforms.editions.params import RankParams


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
    sec_share: dict  # section index -> share per story, filled on demand by section_share()
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


@dataclass
class Candidates:
    rows: np.ndarray  # sorted unique story rows
    raw: np.ndarray  # raw edition score per candidate (aligned with rows)
    pool: np.ndarray  # rows of the pool, best first
    sections: dict = field(default_factory=dict)  # section id -> (rows best first, fit per row)
    domestic: np.ndarray | None = None  # per candidate, for Breaking relevance and pool places
    intl: np.ndarray | None = None


def features(book: StoryBook, now: int, p: RankParams) -> Features:
    n = book.n_stories
    live = book.live_mask(now, p.live_window_ms)
    prim = book.primary_sections()
    ns = book.n_sp
    sp_story = book.sp_story[:ns]
    sp_ok = book.sp_live[:ns] & live[sp_story]
    auth = book.pub_auth[book.sp_pub[:ns], prim[sp_story] + 1]
    sp_w = np.where(sp_ok, auth, 0.0)
    recent = sp_ok & (book.sp_latest[:ns] >= now - p.coverage_window_ms)
    auth_recent = np.bincount(sp_story, weights=np.where(recent, auth, 0.0), minlength=n)
    auth_all = np.bincount(sp_story, weights=sp_w, minlength=n)
    coverage = np.log1p(auth_recent) + p.coverage_tail_weight * np.log1p(auth_all)
    pub_count = np.bincount(sp_story[sp_ok], minlength=n)

    na = book.n_articles
    recent_a = np.flatnonzero(book.a_fs[:na] >= now - p.velocity_window_ms)  # few: select by time first
    st = book.a_story[recent_a]
    ok = book.a_has[recent_a] & ~book.a_copy[recent_a] & (st >= 0)
    n30 = np.bincount(st[ok], minlength=n)
    first = book.s_first_fs[:n]
    start = now - p.velocity_window_ms
    age_before_h = np.maximum((start - first) / 3_600_000.0, 0.5)
    r30 = np.where(first < start, (book.s_n_orig[:n] - n30) / age_before_h * (p.velocity_window_ms / 3_600_000.0), 0.0)
    velocity = np.clip(1.0 + p.velocity_weight * np.log2((n30 + 1.0) / (r30 + 1.0)), p.velocity_min, p.velocity_max)
    freshness = np.power(0.5, (now - book.s_newest_fs[:n]) / p.half_life_ms)
    base = np.where(live, coverage * velocity * freshness, 0.0)
    return Features(now, live, prim, coverage, velocity, freshness, base, n30, auth_all, pub_count, {}, sp_ok, sp_w)


def section_share(book: StoryBook, f: Features, j: int) -> np.ndarray:
    """Share of each story's labelled articles in section ``j`` (computed once per cycle and section)."""
    share = f.sec_share.get(j)
    if share is None:
        n = book.n_stories
        share = f.sec_share[j] = book.s_sec[:n, j] / np.maximum(book.s_nlab[:n], 1)
    return share


def relevance(book: StoryBook, f: Features, region: str) -> Relevance:
    n = book.n_stories
    r = book.region_index.get(region, -2)
    ns = book.n_sp
    sp_story = book.sp_story[:ns]
    sp_region = book.sp_region[:ns]
    denom = np.maximum(f.auth_all, 1e-12)
    hit = np.flatnonzero(sp_region == r)  # the edition's own publishers: a small share of the pairs
    local = np.bincount(sp_story[hit], weights=f.sp_w[hit], minlength=n) / denom
    hit = np.flatnonzero(sp_region == -1)
    intl = np.bincount(sp_story[hit], weights=f.sp_w[hit], minlength=n) / denom
    nr = book.n_sr
    sr_story = book.sr_story[:nr]
    hit = book.sr_live[:nr] & (book.sr_region[:nr] == r)
    n_art = np.maximum(book.s_n_art[:n], 1)
    geo = np.minimum(1.0, np.bincount(sr_story, weights=np.where(hit, book.sr_count[:nr], 0), minlength=n) / n_art)
    local_geo = np.minimum(
        1.0, np.bincount(sr_story, weights=np.where(hit, book.sr_local[:nr], 0), minlength=n) / n_art
    )
    domestic = np.minimum(1.0, local + geo)
    rel = 0.5 + 0.5 * domestic + 0.25 * intl
    return Relevance(local, intl, geo, local_geo, domestic, rel)


def section_fit(book: StoryBook, f: Features, rel: Relevance, section: Section, p: RankParams):
    """(qualifies, fit) per story row for one section."""
    live = f.base > 0
    if section.match == "all":
        return live, np.ones_like(f.base)
    j = book.sec_index[section.id]
    share = section_share(book, f, j)
    labelled = (share >= p.section_share_min) | (f.prim == j)
    if section.match == "label":
        return live & labelled, 0.5 + 0.5 * share
    if section.match == "world":
        return live & ((rel.domestic < p.world_share_max) | labelled), 1.0 - 0.5 * rel.domestic
    if section.match == "nation":
        return live & (rel.domestic >= p.nation_share_min), 0.5 + 0.5 * rel.domestic
    if section.match == "local":
        q = (rel.local_geo >= p.local_share_min) | (labelled & (rel.domestic >= p.nation_share_min))
        return live & q, 0.5 + 0.5 * rel.local_geo
    raise ValueError(f"section {section.id}: unknown match {section.match!r}")


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


def select_candidates(
    book: StoryBook,
    f: Features,
    edition: Edition,
    config: EditionsConfig,
    p: RankParams,
    forced: np.ndarray | None = None,
) -> tuple[Candidates, Relevance]:
    """The edition's candidates (pool + every section's best + ``forced`` rows, e.g. Breaking stories)."""
    rel = relevance(book, f, edition.region)
    raw = f.base * rel.rel
    ids = book.s_id[: book.n_stories]
    pool = top_k(raw, ids, p.pool_size)
    sections = {}
    parts = [pool]
    if forced is not None and forced.size:
        parts.append(forced[raw[forced] > 0])
    for sid in edition.sections:
        q, fit = section_fit(book, f, rel, config.section(sid), p)
        rows = top_k(raw * fit, ids, p.section_candidates, q)
        sections[sid] = (rows, fit[rows])
        parts.append(rows)
    rows = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
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
        if self.ids.size and self.cycle == now - period_ms and self.hist.shape[1] == n:
            pos = np.minimum(np.searchsorted(self.ids, sid), self.ids.size - 1)
            found = self.ids[pos] == sid
            hist[found, 1:] = self.hist[pos[found], :-1]
            count[found] = np.minimum(self.count[pos[found]] + 1, n)
        smoothed_sorted = hist.sum(axis=1) / count
        self.ids, self.hist, self.count, self.cycle = sid, hist, count, now
        out = np.empty_like(smoothed_sorted)
        out[order] = smoothed_sorted
        return out


def smoothing_loop(memory: dict, ids: list[int], raw: list[float], now: int, period_ms: int, n: int) -> list[float]:
    """The per-story twin of :meth:`Smoothing.smooth` (memory: {"cycle", "hist": {id: [newest..]}})."""
    old = memory.get("hist", {}) if memory.get("cycle") == now - period_ms else {}
    hist, out = {}, []
    for i, r in zip(ids, raw):
        h = ([r] + old.get(i, []))[:n]
        hist[i] = h
        s = 0.0
        for v in h:
            s += v
        out.append(s / len(h))
    memory["hist"], memory["cycle"] = hist, now
    return out


# ------------------------------------------------------------------------------------------- the per-story loop
class LoopView:
    """Plain-Python copy of a book's stories, for the per-story loop (built outside any timing)."""

    def __init__(self, book: StoryBook):
        n = book.n_stories
        self.ids = book.s_id[:n].tolist()
        self.last_seq = book.s_last_seq[:n].tolist()
        self.expire_seq = book.s_expire_seq[:n].tolist()
        self.alias = book.s_alias[:n].tolist()
        self.n_orig = book.s_n_orig[:n].tolist()
        self.n_art = book.s_n_art[:n].tolist()
        self.first = book.s_first_fs[:n].tolist()
        self.newest = book.s_newest_fs[:n].tolist()
        self.sec = book.s_sec[:n].tolist()
        self.pub_auth = book.pub_auth.tolist()
        self.pub_region = book.pub_region.tolist()
        sp_story, sp_pub = book.sp_story[: book.n_sp].tolist(), book.sp_pub[: book.n_sp].tolist()
        sp_latest, sp_live = book.sp_latest[: book.n_sp].tolist(), book.sp_live[: book.n_sp].tolist()
        self.sp = [[] for _ in range(n)]
        for s, pb, lt, lv in zip(sp_story, sp_pub, sp_latest, sp_live):
            if lv:
                self.sp[s].append((pb, lt))
        self.sr = [[] for _ in range(n)]
        for s, rg, c, lc, lv in zip(
            book.sr_story[: book.n_sr].tolist(),
            book.sr_region[: book.n_sr].tolist(),
            book.sr_count[: book.n_sr].tolist(),
            book.sr_local[: book.n_sr].tolist(),
            book.sr_live[: book.n_sr].tolist(),
        ):
            if lv:
                self.sr[s].append((rg, c, lc))
        self.orig_fs = [[] for _ in range(n)]
        na = book.n_articles
        for s, has, cp, fs in zip(
            book.a_story[:na].tolist(), book.a_has[:na].tolist(), book.a_copy[:na].tolist(), book.a_fs[:na].tolist()
        ):
            if s >= 0 and has and not cp:
                self.orig_fs[s].append(fs)
        self.sec_index = dict(book.sec_index)
        self.region_index = dict(book.region_index)


def rank_maths_loop(
    view: LoopView, edition: Edition, config: EditionsConfig, p: RankParams, now: int, forced=None
) -> tuple[Candidates, dict]:
    """The same candidates and raw scores as :func:`select_candidates`, story by story in Python."""
    r = view.region_index.get(edition.region, -2)
    sections = [config.section(s) for s in edition.sections]
    raw_of, fits, quals, dom_of, intl_of = {}, {s.id: {} for s in sections}, {s.id: set() for s in sections}, {}, {}
    cov_from, vel_from = now - p.coverage_window_ms, now - p.velocity_window_ms
    for i, sid in enumerate(view.ids):
        if not (view.last_seq[i] > view.expire_seq[i] and not view.alias[i] and view.n_orig[i] > 0):
            continue
        if now - view.newest[i] > p.live_window_ms:
            continue
        sec = view.sec[i]
        tot = sum(sec)
        prim = -1
        if tot:
            best = -1
            for j, c in enumerate(sec):
                if c > best:
                    best, prim = c, j
        a_recent = a_all = a_local = a_intl = 0.0
        for pub, latest in view.sp[i]:
            a = view.pub_auth[pub][prim + 1]
            a_all += a
            if latest >= cov_from:
                a_recent += a
            reg = view.pub_region[pub]
            if reg == r:
                a_local += a
            elif reg == -1:
                a_intl += a
        coverage = math.log1p(a_recent) + p.coverage_tail_weight * math.log1p(a_all)
        n30 = 0
        for fs in view.orig_fs[i]:
            if fs >= vel_from:
                n30 += 1
        first = view.first[i]
        if first < vel_from:
            age_h = max((vel_from - first) / 3_600_000.0, 0.5)
            r30 = (view.n_orig[i] - n30) / age_h * (p.velocity_window_ms / 3_600_000.0)
        else:
            r30 = 0.0
        vel = min(max(1.0 + p.velocity_weight * math.log2((n30 + 1.0) / (r30 + 1.0)), p.velocity_min), p.velocity_max)
        fresh = 0.5 ** ((now - view.newest[i]) / p.half_life_ms)
        base = coverage * vel * fresh
        if base <= 0:
            continue
        denom = max(a_all, 1e-12)
        local, intl = a_local / denom, a_intl / denom
        n_art = max(view.n_art[i], 1)
        geo = local_geo = 0.0
        for reg, c, lc in view.sr[i]:
            if reg == r:
                geo += c
                local_geo += lc
        geo, local_geo = min(1.0, geo / n_art), min(1.0, local_geo / n_art)
        domestic = min(1.0, local + geo)
        raw = base * (0.5 + 0.5 * domestic + 0.25 * intl)
        raw_of[i], dom_of[i], intl_of[i] = raw, domestic, intl
        for s in sections:
            if s.match == "all":
                fit, q = 1.0, True
            else:
                j = view.sec_index[s.id]
                share = sec[j] / max(tot, 1)
                labelled = share >= p.section_share_min or prim == j
                if s.match == "label":
                    fit, q = 0.5 + 0.5 * share, labelled
                elif s.match == "world":
                    fit, q = 1.0 - 0.5 * domestic, domestic < p.world_share_max or labelled
                elif s.match == "nation":
                    fit, q = 0.5 + 0.5 * domestic, domestic >= p.nation_share_min
                else:
                    fit = 0.5 + 0.5 * local_geo
                    q = local_geo >= p.local_share_min or (labelled and domestic >= p.nation_share_min)
            fits[s.id][i] = fit
            if q:
                quals[s.id].add(i)
    ranked = sorted(raw_of, key=lambda i: (-raw_of[i], view.ids[i]))
    pool = ranked[: p.pool_size]
    sec_rows = {}
    chosen = set(pool)
    for i in [] if forced is None else forced.tolist():
        if i in raw_of:
            chosen.add(i)
    for s in sections:
        scored = [(raw_of[i] * fits[s.id][i], i) for i in quals[s.id] if raw_of[i] * fits[s.id][i] > 0]
        scored.sort(key=lambda t: (-t[0], view.ids[t[1]]))
        top = [i for _, i in scored[: p.section_candidates]]
        sec_rows[s.id] = (np.array(top, np.int64), np.array([fits[s.id][i] for i in top]))
        chosen.update(top)
    rows = sorted(chosen)
    cand = Candidates(
        np.array(rows, np.int64),
        np.array([raw_of[i] for i in rows]),
        np.array(pool, np.int64),
        sec_rows,
        np.array([dom_of[i] for i in rows]),
        np.array([intl_of[i] for i in rows]),
    )
    return cand, raw_of
