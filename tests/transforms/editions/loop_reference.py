"""The reference per-story implementation of a ranking cycle: the maths of transforms/editions/cycle/scoring.py and
transforms/editions/cycle/representatives.py written story by story in plain Python (scores, candidates, smoothing,
representatives). Page assembly, supporting links and documents are the production code
(:func:`transforms.editions.cycle.run.cycle_documents`).

Not product code: the equivalence tests (tests/transforms/editions/test_book.py) check that
:func:`run_cycle_loop` gives the same pages as :func:`transforms.editions.cycle.run.run_cycle`, and
benchmarks/rank_bench.py uses it as the per-story baseline.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np

from transforms.common import HOUR_MS, MINUTE_MS
from transforms.editions.book.storybook import StoryBook
from transforms.editions.cycle.context import CycleContext
from transforms.editions.cycle.representatives import Representatives, rotation_hash_one
from transforms.editions.cycle.run import (
    CycleOutput,
    EditionMemory,
    Ranked,
    breaking_rows,
    cycle_documents,
    hour_capped_publishers,
)
from transforms.editions.cycle.scoring import Candidates, features
from transforms.editions.vocabulary.cities import config_cities
from transforms.editions.vocabulary.config import Edition, EditionsConfig
from transforms.editions.vocabulary.params import RankParams, RepresentativeParams


@dataclass
class LoopMemory(EditionMemory):
    """An edition's memory with the loop's smoothing history ({"cycle", "hist": {id: [newest..]}})."""

    smoothing_loop: dict = field(default_factory=dict)


def loop_memory(memory: EditionMemory) -> LoopMemory:
    """A copy of an edition's memory whose smoothing history is in the per-story loop's dict form."""
    m = LoopMemory(**copy.deepcopy(memory.__dict__))
    sm = memory.smoothing
    m.smoothing_loop = {
        "cycle": sm.cycle,
        "hist": {int(i): sm.hist[k, : int(sm.count[k])].tolist() for k, i in enumerate(sm.ids.tolist())},
    }
    return m


def run_cycle_loop(ctx: CycleContext, view: LoopView | None = None) -> CycleOutput:
    """:func:`transforms.editions.cycle.run.run_cycle` with the per-story maths (``ctx.memory`` a :class:`LoopMemory`;
    no overlays: it is the reference for the ranking)."""
    book, edition, p, memory, now, clock = ctx.book, ctx.edition, ctx.params, ctx.memory, ctx.now, ctx.clock
    clock.start()
    book.flush()
    f = features(book, now, p)
    forced = breaking_rows(book, f.live, now, p)
    clock.lap("features")
    view = view or LoopView(book)
    cand, _ = rank_maths_loop(view, edition, ctx.config, p, now, forced)
    ids = book.stories.id[cand.rows]
    smoothed = np.array(
        smoothing_loop(memory.smoothing_loop, ids.tolist(), cand.raw.tolist(), now, MINUTE_MS, p.smoothing_cycles)
    )
    clock.lap("scores")
    capped = hour_capped_publishers(memory, now, p)
    hour = now // HOUR_MS
    reps = choose_representatives_loop(
        book, cand.rows, edition.id, edition.region, hour, capped, p.representative, f.prim
    )
    clock.lap("representatives")
    ranked = Ranked(f, forced, cand, smoothed, reps, capped)
    return cycle_documents(ctx, ranked)


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


class LoopView:
    """Plain-Python copy of a book's stories, for the per-story loop (built outside any timing)."""

    def __init__(self, book: StoryBook):
        n = book.stories.size
        self.ids = book.stories.id[:n].tolist()
        self.last_seq = book.stories.last_seq[:n].tolist()
        self.expire_seq = book.stories.expire_seq[:n].tolist()
        self.alias = book.stories.is_alias[:n].tolist()
        self.n_orig = book.stories.n_originals[:n].tolist()
        self.n_art = book.stories.n_articles[:n].tolist()
        self.first = book.stories.first_seen[:n].tolist()
        self.newest = book.stories.newest_seen[:n].tolist()
        self.sec = book.stories.section_counts[:n].tolist()
        self.pub_auth = book.publishers.authority.tolist()
        self.pub_region = book.publishers.region.tolist()
        self.group = book.publisher_groups().tolist()  # ownership group per publisher row: one voice
        self.pub_city = book.publisher_cities().tolist()  # a local publisher's city code, "" if none
        self.book = book  # the stories' main entities (the local reserve's cities), read story by story
        ns = book.pairs.size
        sp_story, sp_pub = book.pairs.story[:ns].tolist(), book.pairs.publisher[:ns].tolist()
        sp_latest, sp_live = book.pairs.latest_first_seen[:ns].tolist(), book.pairs.live[:ns].tolist()
        self.sp = [[] for _ in range(n)]
        for s, pb, lt, lv in zip(sp_story, sp_pub, sp_latest, sp_live):
            if lv:
                self.sp[s].append((pb, lt))
        self.sr = [[] for _ in range(n)]
        for s, rg, c, lc, lv in zip(
            book.mentions.story[: book.mentions.size].tolist(),
            book.mentions.region[: book.mentions.size].tolist(),
            book.mentions.count[: book.mentions.size].tolist(),
            book.mentions.local_count[: book.mentions.size].tolist(),
            book.mentions.live[: book.mentions.size].tolist(),
        ):
            if lv:
                self.sr[s].append((rg, c, lc))
        self.orig_fs = [[] for _ in range(n)]
        na = book.articles.size
        for s, has, cp, fs in zip(
            book.articles.story[:na].tolist(),
            book.articles.has_data[:na].tolist(),
            book.articles.is_copy[:na].tolist(),
            book.articles.first_seen[:na].tolist(),
        ):
            if s >= 0 and has and not cp:
                self.orig_fs[s].append(fs)
        self.sec_index = dict(book.section_index)
        self.region_index = dict(book.region_index)


def rank_maths_loop(
    view: LoopView, edition: Edition, config: EditionsConfig, p: RankParams, now: int, forced=None
) -> tuple[Candidates, dict]:
    """The same candidates and raw scores as :func:`select_candidates`, story by story in Python."""
    r = view.region_index.get(edition.region, -2)
    sections = [config.section(s) for s in edition.sections]
    raw_of, fits, quals, dom_of, intl_of = {}, {s.id: {} for s in sections}, {s.id: set() for s in sections}, {}, {}
    local_geo_of = {}
    cov_from, vel_from = now - p.coverage_window_ms, now - p.velocity_window_ms
    for i, _sid in enumerate(view.ids):
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
        voices, recent = {}, {}  # ownership group -> (authority, -publisher row) of its best pair
        for pub, latest in view.sp[i]:
            g, key = view.group[pub], (view.pub_auth[pub][prim + 1], -pub)
            if g not in voices or key > voices[g]:
                voices[g] = key
            if latest >= cov_from and (g not in recent or key > recent[g]):
                recent[g] = key
        for a, _ in recent.values():
            a_recent += a
        for a, neg_pub in voices.values():
            a_all += a
            reg = view.pub_region[-neg_pub]
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
        raw_of[i], dom_of[i], intl_of[i], local_geo_of[i] = raw, domestic, intl, local_geo
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
    pool += local_reserve_loop(view, edition, config, p, raw_of, local_geo_of, pool)
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


def local_reserve_loop(
    view: LoopView, edition: Edition, config: EditionsConfig, p: RankParams, raw_of: dict, local_geo_of: dict, pool
) -> list[int]:
    """The per-story twin of :func:`transforms.editions.cycle.scoring.local_reserve`: per city of the edition's
    region, its best ``local_candidates`` live stories (raw score, then id), the national pool's included; those
    the pool left out, best first. A story is a city's when a live pair of a local publisher of that city (of the
    region) covers it or its main entities name that city; a story with a sub-national mention of the region that
    names no city of the region belongs to the region's own reserve ("")."""
    if p.local_candidates <= 0:
        return []
    codes, region_cities = config_cities(config)
    mine = region_cities.get(edition.region, frozenset())
    r = view.region_index.get(edition.region, -2)
    by_key: dict[str, list[int]] = {}
    for i in raw_of:
        keys = {view.pub_city[pub] for pub, _ in view.sp[i] if view.pub_city[pub] in mine and view.pub_region[pub] == r}
        if local_geo_of[i] > 0:
            named = [c for c in (codes.get(e.lower()) for e in view.book.story_entities(i)) if c]
            keys.update([c for c in named if c in mine] or [""])  # a city elsewhere: the region's own reserve
        for k in keys:
            by_key.setdefault(k, []).append(i)
    kept = set()
    for rows in by_key.values():
        rows.sort(key=lambda i: (-raw_of[i], view.ids[i]))
        kept.update(rows[: p.local_candidates])
    kept -= set(pool)
    return sorted(kept, key=lambda i: (-raw_of[i], view.ids[i]))


def choose_representatives_loop(
    book: StoryBook,
    rows: np.ndarray,
    edition_id: str,
    region: str,
    hour: int,
    capped: set[str],
    p: RepresentativeParams,
    prim: np.ndarray | None = None,
) -> Representatives:
    """The per-story twin of :func:`choose_representatives`."""
    rid = book.region_index.get(region, -2)
    prim = (book.primary_sections() if prim is None else prim).tolist()
    out_rep, out_start, out_len, out_near, ordered_all, scores_all = [], [], [], [], [], []
    for row in rows.tolist():
        tsum = book.stories.title_sum[row].tolist()
        norm = sum(x * x for x in tsum) ** 0.5
        col = prim[row] + 1
        newest, first_fs = int(book.stories.newest_seen[row]), int(book.stories.first_seen[row])
        scored = []
        for a in book.stories.members[row]:
            if not book.articles.has_data[a]:
                continue
            tv = book.articles.title_vector[a].tolist()
            central = sum(x * y for x, y in zip(tv, tsum)) / max(norm, 1e-9)
            pub = int(book.articles.publisher[a])
            fs = int(book.articles.first_seen[a])
            copy = bool(book.articles.is_copy[a])
            s = (
                p.w_centrality * central
                + p.w_authority * float(book.publishers.authority[pub, col])
                + p.w_freshness * min(1.0, 0.5 ** ((newest - fs) / (4.0 * HOUR_MS)))
                + p.w_headline * float(book.articles.headline_quality[a])
                + p.first_report_boost * (not copy and fs == first_fs)
                + p.local_boost * (int(book.publishers.region[pub]) == rid)
                - p.copy_penalty * copy
                - p.opinion_penalty * bool(book.articles.is_opinion[a])
            )
            if book.publisher_group_names()[pub] in capped:  # the cap is per ownership group
                s -= 10.0
            scored.append((s, int(book.articles.key[a]), a))
        if not scored:
            out_rep.append(-1), out_start.append(-1), out_len.append(0), out_near.append(0)
            continue
        scored.sort(key=lambda t: (-t[0], t[1]))
        best = scored[0][0]
        near = [t for t in scored if t[0] >= best - p.near_tie * abs(best)]
        free = [t for t in near if not book.articles.is_paid[t[2]]]
        near = free if free else near  # a free article wins a near-tie
        k = len(near)
        h = rotation_hash_one(int(book.stories.id[row]), edition_id, hour)
        out_start.append(len(ordered_all))
        out_len.append(len(scored))
        out_rep.append(near[h % k][2])
        out_near.append(k)
        ordered_all.extend(a for _, _, a in scored)
        scores_all.extend(s for s, _, _ in scored)
    return Representatives(
        rows,
        np.array(out_rep, np.int64),
        np.array(out_start, np.int64),
        np.array(out_len, np.int64),
        np.array(ordered_all, np.int64),
        np.array(scores_all),
        np.array(out_near, np.int64),
    )
