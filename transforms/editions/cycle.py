"""One ranking cycle of one edition: scores -> smoothing -> representatives -> pages, pool and coverage documents.

Reads a :class:`~transforms.editions.book.StoryBook` (the edition's language) and the edition's
:class:`EditionMemory` (smoothing history, last pages, publisher impression counts, emitted coverage versions);
updates the memory and returns a :class:`CycleOutput` with every page (edition x section), the candidate pool and
the coverage documents of page/pool stories whose coverage changed. Plain Python + numpy: RankEditionsFn calls it
on its minute timer, benchmarks/rank_bench.py calls it directly.

``mode="loop"`` runs the same cycle with the per-story Python twins of the maths (scores, candidates, smoothing,
representatives); page assembly, supporting links and documents are shared. Tests check both give the same pages.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from transforms.editions import documents as docs
from transforms.editions.assembly import DiversityRules, assemble, hysteresis_order
from transforms.editions.book import StoryBook
from transforms.editions.config import Edition, EditionsConfig
from transforms.editions.params import HOUR_MS, MINUTE_MS, RankParams
from transforms.editions.representatives import (
    capped_publishers,
    labels_for,
    choose_representatives,
    choose_representatives_loop,
    supporting,
)
from transforms.editions.scoring import LoopView, Smoothing, features, rank_maths_loop, select_candidates, smoothing_loop

DAY_MS = 86_400_000


class _Clock:
    """Accumulates CPU seconds per phase into ``timings`` (benchmarks); free when ``timings`` is None."""

    def __init__(self, timings: dict | None):
        self.timings = timings
        self.t = time.process_time() if timings is not None else 0.0

    def lap(self, name: str) -> None:
        if self.timings is not None:
            now = time.process_time()
            self.timings[name] = self.timings.get(name, 0.0) + now - self.t
            self.t = now
DEVELOPING_MS = 30 * MINUTE_MS


@dataclass
class EditionMemory:
    """What an edition remembers between cycles (kept in Beam state; small: ~2,000 stories)."""

    last_cycle: int = 0
    smoothing: Smoothing = field(default_factory=Smoothing)
    smoothing_loop: dict = field(default_factory=dict)
    prev_pages: dict = field(default_factory=dict)  # section -> story ids in page order
    share_day: int = -1
    share_counts: dict = field(default_factory=dict)  # publisher id -> representative impressions today
    share_total: int = 0
    capped: tuple = ()  # publishers capped for the current hour
    capped_hour: int = -1
    coverage_versions: dict = field(default_factory=dict)  # story id -> coverage version last emitted
    last_event_at: int = 0


@dataclass
class CycleOutput:
    edition: str
    cycle: int
    pages: dict  # section -> edition_page document
    pool: dict  # candidate_pool document
    coverage: list  # story_coverage documents
    stats: dict = field(default_factory=dict)


def breaking_rows(book: StoryBook, live: np.ndarray, now: int, p: RankParams) -> np.ndarray:
    n = book.n_stories
    start = book.s_breaking_start[:n]
    return np.flatnonzero(live & (start > 0) & (now - start < p.breaking_pin_ms) & (start <= now))


def run_cycle(
    book: StoryBook,
    edition: Edition,
    config: EditionsConfig,
    p: RankParams,
    memory: EditionMemory,
    now: int,
    mode: str = "vector",
    view: LoopView | None = None,
    timings: dict | None = None,
) -> CycleOutput:
    clock = _Clock(timings)
    book.flush()
    # ---- maths: candidates with raw scores, then smoothing over cycles
    f = features(book, now, p)
    forced = breaking_rows(book, f.live, now, p)
    clock.lap("features")
    if mode == "loop":
        view = view or LoopView(book)
        cand, _ = rank_maths_loop(view, edition, config, p, now, forced)
        ids = book.s_id[cand.rows]
        smoothed = np.array(
            smoothing_loop(memory.smoothing_loop, ids.tolist(), cand.raw.tolist(), now, MINUTE_MS, p.smoothing_cycles)
        )
    else:
        cand, _ = select_candidates(book, f, edition, config, p, forced)
        ids = book.s_id[cand.rows]
        smoothed = memory.smoothing.smooth(ids, cand.raw, now, MINUTE_MS, p.smoothing_cycles)
    rows_l, ids_l = cand.rows.tolist(), ids.tolist()
    pos_of = dict(zip(rows_l, range(len(rows_l))))
    id_pos = dict(zip(ids_l, range(len(ids_l))))
    clock.lap("scores")

    # ---- representatives (publisher share cap is per edition and UTC day)
    day = now // DAY_MS
    if memory.share_day != day:
        memory.share_day, memory.share_counts, memory.share_total = day, {}, 0
    hour = now // HOUR_MS
    if memory.capped_hour != hour:
        # The cap is decided once an hour, like the near-tie rotation: a publisher hovering around 10 % would
        # otherwise be capped and released every other minute and its cards would flicker.
        memory.capped = tuple(sorted(capped_publishers(memory.share_counts, memory.share_total, p.representative)))
        memory.capped_hour = hour
    capped = set(memory.capped)
    choose = choose_representatives_loop if mode == "loop" else choose_representatives
    reps = choose(book, cand.rows, edition.id, edition.region, hour, capped, p.representative, f.prim)
    rep_l = reps.rep.tolist()
    clock.lap("representatives")

    # ---- per-story facts the pages need
    prim = f.prim
    pub_ids = book.pub_ids
    rep_pub_l = book.a_pub[np.maximum(reps.rep, 0)].tolist()
    pub_of_story = {sid: pub_ids[pb] for sid, a, pb in zip(ids_l, rep_l, rep_pub_l) if a >= 0}
    section_of, topic_of = {}, {}  # topic_of: the topical section the 3-per-section rule counts (labelled only)
    for sid, j, dom in zip(ids_l, prim[cand.rows].tolist(), cand.domestic.tolist()):
        section_of[sid] = book.section_ids[j] if j >= 0 else ("nation" if dom >= p.nation_share_min else "world")
        if j >= 0:
            topic_of[sid] = book.section_ids[j]
    vec_index, vec_matrix = {}, None
    if book.dim and rows_l:
        cvec = book.s_centroid[cand.rows].astype(np.float64)
        norms = np.linalg.norm(cvec, axis=1)
        vec_matrix = cvec / np.where(norms > 0, norms, 1.0)[:, None]
        vec_index = {ids_l[i]: i for i in np.flatnonzero(norms > 0).tolist()}
    pins_all = []
    for r in forced.tolist():
        i = pos_of.get(r)
        if i is None or rep_l[i] < 0:
            continue
        if cand.domestic[i] + cand.intl[i] >= p.breaking_relevance:
            pins_all.append((-int(book.s_breaking_start[r]), ids_l[i]))
    pins_all.sort()
    pinned_ids = [sid for _, sid in pins_all[: p.max_pins]]
    pinned_set = set(pinned_ids)

    def alternative(sid: int, blocked: set[str]):
        i = id_pos[sid]
        st, n = int(reps.start[i]), int(reps.length[i])
        grp = reps.ordered[st : st + n]
        for a, pb in zip(grp.tolist(), book.a_pub[grp].tolist()):
            if pub_ids[pb] not in blocked:
                return a, pub_ids[pb]
        return None

    clock.lap("page_facts")
    # ---- pages: order (hysteresis), slots (pins, diversity), supporting links; cards come after
    rules_base = dict(
        top_n=p.top_n,
        max_per_section=p.max_per_section_in_top,
        max_per_publisher=p.max_per_publisher_in_top,
        max_cosine=p.max_centroid_cosine,
        page_size=p.page_size,
    )
    # Supporting links and cards are kept between cycles in a per-edition cache on the book (in-process only:
    # a rebuilt book starts empty). A supporting set is reused while the story's coverage version, the
    # representative and the capped publishers are unchanged; a card while its article's label bits, first-seen
    # time and version are.
    cache = book.cycle_cache.setdefault(edition.id, {"support": {}, "cards": {}})
    old_support, new_support = cache["support"], {}
    capped_key = tuple(sorted(capped))
    page_slots = {}
    for sec_id in edition.sections:
        section = config.section(sec_id)
        rows_s, fit_s = cand.sections[sec_id]
        scores = {}
        for r, fit in zip(rows_s.tolist(), fit_s.tolist()):
            i = pos_of[r]
            if rep_l[i] >= 0:
                scores[ids_l[i]] = float(smoothed[i]) * fit
        order = hysteresis_order(memory.prev_pages.get(sec_id, []), scores, p.hysteresis)
        pins = [x for x in pinned_ids if sec_id == "top" or x in scores]
        rules = DiversityRules(mixed_sections=section.match != "label", **rules_base)
        slots = assemble(order, pins, pub_of_story, topic_of, vec_index, vec_matrix, rules, alternative)
        memory.prev_pages[sec_id] = [x.story_id for x in slots]
        chosen = []
        for slot in slots:
            i = id_pos[slot.story_id]
            rep = slot.alt_rep if slot.alt_rep is not None else rep_l[i]
            r = rows_l[i]
            key = (r, rep)
            hit = new_support.get(key) or old_support.get(key)
            version_key = (int(book.s_version[r]), capped_key)
            if hit is not None and hit[0] == version_key:
                sup = hit[1]
                new_support[key] = hit  # reuse the entry: nothing new survives the cycle
            else:
                sup = supporting(book, reps, i, rep, p.supporting)
                new_support[key] = (version_key, sup)
            chosen.append((slot, i, rep, sup, scores.get(slot.story_id, float(smoothed[i]))))
        page_slots[sec_id] = chosen

    clock.lap("page_slots")
    # ---- the pool: the best candidates by smoothed score, with what For you re-ranks on
    pool_pos = np.array([pos_of[r] for r in cand.pool.tolist() if rep_l[pos_of[r]] >= 0], np.int64)
    if pool_pos.size:
        pool_pos = pool_pos[np.lexsort((ids[pool_pos], -smoothed[pool_pos]))][: p.pool_size]
    pool_rows = cand.rows[pool_pos]
    pool_pos_l = pool_pos.tolist()

    # ---- cards, built once per article with labels computed for all of them at once
    needed = [rep for chosen in page_slots.values() for _, _, rep, _, _ in chosen]
    needed += [a for chosen in page_slots.values() for _, _, _, sup, _ in chosen for a in sup]
    needed += [rep_l[i] for i in pool_pos_l]
    arts = np.unique(np.array(needed, np.int64)) if needed else np.zeros(0, np.int64)
    arts_l = arts.tolist()
    label_of = dict(zip(arts_l, labels_for(book, arts, edition.region)))
    check_of = dict(zip(arts_l, zip(book.a_fs[arts].tolist(), book.a_version[arts].tolist())))
    cycle_iso = docs.iso(now)
    version = now // MINUTE_MS
    old_cards, new_cards = cache["cards"], {}

    def card(a: int, with_lede: bool) -> dict:
        key = (a, with_lede)
        check = (check_of[a], label_of[a])
        hit = new_cards.get(key) or old_cards.get(key)
        if hit is not None and hit[0] == check:
            new_cards[key] = hit
            return hit[1]
        else:
            base = book.a_card[a]
            c = {
                "article_id": base["article_id"],
                "url": base["url"],
                "title": base["title"],
                "publisher_id": base["publisher_id"],
                "publisher_name": base["publisher_name"],
                "image_url": base["image_url"],
                "published_at": docs.iso(base["published_at"]),
                "first_seen_at": docs.iso(check_of[a][0]),
                "language": base["language"],
                "labels": label_of[a],
            }
            if with_lede and base["lede"]:
                c["lede"] = base["lede"][:300]
        new_cards[key] = (check, c)
        return c

    dev_last = book.s_developing_last[cand.rows]
    developing_l = ((dev_last > 0) & (now - dev_last < DEVELOPING_MS)).tolist()
    fact_l = (book.s_n_fact[cand.rows] > 0).tolist()

    def story_labels(i: int, rep: int, pinned: bool) -> tuple[str, ...]:
        out = []
        if pinned:
            out.append("breaking")
        elif developing_l[i]:
            out.append("developing")
        if "opinion" in label_of[rep]:
            out.append("opinion")
        if fact_l[i]:
            out.append("fact_check")
        return tuple(out)

    pages, impressions, page_story_rows = {}, {}, set()
    for sec_id, chosen in page_slots.items():
        entries = []
        for rank, (slot, i, rep, sup, score) in enumerate(chosen, start=1):
            r = rows_l[i]
            pub = book.a_card[rep]["publisher_id"]
            impressions[pub] = impressions.get(pub, 0) + 1
            page_story_rows.add(r)
            entries.append(
                {
                    "story_id": str(slot.story_id),
                    "rank": rank,
                    "score": docs.round_sig(score),
                    "labels": story_labels(i, rep, slot.pinned),
                    "section": section_of[slot.story_id],
                    "representative": card(rep, True),
                    "supporting": tuple(card(a, False) for a in sup),
                    "article_count": int(book.s_n_art[r]),
                    "publisher_count": max(1, int(f.pub_count[r])),
                    "updated_at": docs.iso(book.s_newest_fs[r]),
                }
            )
        pages[sec_id] = {
            "schema": docs.PAGE_SCHEMA,
            "edition": edition.id,
            "section": sec_id,
            "version": version,
            "cycle": cycle_iso,
            "generated_at": cycle_iso,
            "stories": entries,
        }
    clock.lap("pages")
    for pub, c in impressions.items():
        memory.share_counts[pub] = memory.share_counts.get(pub, 0) + c
        memory.share_total += c

    # Pool entries are rebuilt only for stories whose entry could differ (coverage version, centroid,
    # representative, labels); the others are reused from the last cycle with the new score.
    old_pool, new_pool = cache.setdefault("pool", {}), {}
    keys, misses = [], []
    cseq_l = book.s_centroid_seq[pool_rows].tolist()
    vers_l = book.s_version[pool_rows].tolist()
    for k, i in enumerate(pool_pos_l):
        sid = ids_l[i]
        rep = rep_l[i]
        labels = story_labels(i, rep, sid in pinned_set)
        key = (vers_l[k], cseq_l[k], rep, labels, section_of[sid], check_of[rep], label_of[rep])
        keys.append(key)
        hit = old_pool.get(sid)
        if hit is None or hit[0] != key:
            misses.append(k)
    miss = np.array(misses, np.int64)
    topics, publishers, places = _pool_features(book, pool_rows[miss], p)
    vecs = docs.project(book.s_centroid[pool_rows[miss]]).tolist() if book.dim and miss.size else None
    fresh = {}
    for m, k in enumerate(misses):
        i = pool_pos_l[k]
        sid = ids_l[i]
        entry = {
            "story_id": str(sid),
            "section": section_of[sid],
            "topics": tuple(topics[m]),
            "publishers": tuple(publishers[m]),
            "places": tuple(places[m]),
            "labels": keys[k][3],
            "representative": card(rep_l[i], False),
        }
        if vecs is not None:
            entry["vector"] = tuple(vecs[m])
        fresh[k] = entry
    clock.lap("pool_features")
    pool_stories = []
    for k, i in enumerate(pool_pos_l):
        sid = ids_l[i]
        static = fresh.get(k)
        if static is None:
            hit = old_pool[sid]
            static = hit[1]
            card(rep_l[i], False)  # keep the card cached
            new_pool[sid] = hit
        else:
            new_pool[sid] = (keys[k], static)
        entry = dict(static)
        entry["score"] = docs.round_sig(smoothed[i])
        pool_stories.append(entry)
    cache["pool"] = new_pool
    pool = {
        "schema": docs.POOL_SCHEMA,
        "edition": edition.id,
        "version": version,
        "cycle": cycle_iso,
        "stories": pool_stories,
    }
    cache["support"], cache["cards"] = new_support, new_cards
    clock.lap("pool")

    # ---- coverage of page and pool stories whose coverage changed since this edition last emitted it
    coverage = []
    shown = sorted(page_story_rows | set(pool_rows.tolist()))
    emitted = {}
    versions = book.s_version[shown].tolist() if shown else []
    for r, sid, v in zip(shown, book.s_id[shown].tolist() if shown else [], versions):
        last = memory.coverage_versions.get(sid, 0)
        if v > last:
            coverage.append(coverage_document(book, r, p, int(prim[r])))
            last = v
        emitted[sid] = last
    memory.coverage_versions = emitted
    memory.last_cycle = now
    clock.lap("coverage")
    stats = {
        "candidates": int(cand.rows.size),
        "live": int(f.live.sum()),
        "pinned": len(pinned_ids),
        "near_ties": int((reps.near > 1).sum()),
        "capped_publishers": len(capped),
    }
    return CycleOutput(edition.id, now, pages, pool, coverage, stats)


def _groups(keys: np.ndarray, k: int, order: np.ndarray, limit: int, values: list) -> list[list]:
    """Split ``values`` (already ordered by ``order``) into ``k`` lists by group key, at most ``limit`` each."""
    out: list[list] = [[] for _ in range(k)]
    for g, v in zip(keys[order].tolist(), values):
        lst = out[g]
        if len(lst) < limit:
            lst.append(v)
    return out


def _pool_features(book: StoryBook, pool_rows: np.ndarray, p: RankParams):
    """Per pool story: its sections (topics), up to 10 publishers by authority, up to 5 places (region codes)."""
    k = pool_rows.size
    if k == 0:
        return [], [], []
    slot = np.full(book.n_stories + 1, -1, np.int64)
    slot[pool_rows] = np.arange(k)
    sec = book.s_sec[pool_rows]
    tot = np.maximum(sec.sum(axis=1, keepdims=True), 1)
    mask = (sec > 0) & (sec >= tot * p.section_share_min)
    topics: list[list[str]] = [[] for _ in range(k)]
    for r, c in zip(*(x.tolist() for x in np.nonzero(mask))):
        topics[r].append(book.section_ids[c])
    ns = book.n_sp
    g = slot[book.sp_story[:ns]]
    sel = np.flatnonzero((g >= 0) & book.sp_live[:ns])
    pubs = book.sp_pub[sel]
    names = np.array(book.pub_ids, dtype=object)[pubs] if sel.size else np.zeros(0, object)
    order = np.lexsort((names.astype(str), -book.pub_auth[pubs, 0], g[sel])) if sel.size else sel
    publishers = _groups(g[sel], k, order, 10, names[order].tolist())
    nr = book.n_sr
    g2 = slot[book.sr_story[:nr]]
    sel2 = np.flatnonzero((g2 >= 0) & book.sr_live[:nr])
    codes = np.array(book.regions, dtype=object)[book.sr_region[sel2]] if sel2.size else np.zeros(0, object)
    order2 = np.lexsort((codes.astype(str), -book.sr_count[sel2], g2[sel2])) if sel2.size else sel2
    places = _groups(g2[sel2], k, order2, 5, codes[order2].tolist())
    return topics, publishers, places


def coverage_document(book: StoryBook, row: int, p: RankParams, prim: int) -> dict:
    """All articles of a story (edition-independent), newest first, keyset order (published_at desc, article_id)."""
    arts = book.story_articles(row)
    labels = labels_for(book, np.array(arts, np.int64), None) if arts else []
    tsum = book.s_tsum[row].astype(np.float64)
    norm = max(float(np.linalg.norm(tsum)), 1e-9)
    best, best_key = None, None
    cards = []
    for k, a in enumerate(arts):
        base = book.a_card[a]
        central = float(book.a_tvec[a].astype(np.float64) @ tsum) / norm
        key = (
            -(
                p.representative.w_centrality * central
                + p.representative.w_authority * float(book.pub_auth[book.a_pub[a], prim + 1])
                + p.representative.w_headline * float(book.a_head[a])
                - p.representative.copy_penalty * bool(book.a_copy[a])
            ),
            base["article_id"],
        )
        if best_key is None or key < best_key:
            best, best_key = a, key
        cards.append(
            (
                -int(base["published_at"]),
                base["article_id"],
                {
                    "article_id": base["article_id"],
                    "url": base["url"],
                    "title": base["title"],
                    "publisher_id": base["publisher_id"],
                    "publisher_name": base["publisher_name"],
                    "image_url": base["image_url"],
                    "published_at": docs.iso(base["published_at"]),
                    "first_seen_at": docs.iso(book.a_fs[a]),
                    "language": base["language"],
                    "labels": labels[k],
                },
            )
        )
    cards.sort(key=lambda t: (t[0], t[1]))
    return {
        "schema": docs.COVERAGE_SCHEMA,
        "story_id": str(int(book.s_id[row])),
        "version": int(book.s_version[row]),
        "language": book.language,
        "title": book.a_card[best]["title"] if best is not None else "",
        "updated_at": docs.iso(book.s_newest_fs[row]),
        "links": tuple(str(x) for x in sorted(book.links[row])),
        "articles": [c for _, _, c in cards],
    }
