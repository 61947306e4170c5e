"""Repair of the live window: splits of stories that hold two events, merges of stories that hold one.

Every REPAIR_EVERY (10 min of event time, at multiples of 10 min) while some live story had an article in the last
REPAIR_WINDOW (6 h), the stories of that window that were not repaired in the last REPAIR_COOLDOWN (30 min) are
(1) split when a spectral bisection of their members gives two halves with >= MIN_SPLIT_SOURCES distinct sources
each whose profiles score below the merge bar by SPLIT_MARGIN (the half holding the representative keeps the id),
then (2) re-clustered by greedy best-first agglomeration on the score between story profiles (average article-pair
score for headline-only stories), with a merge bar that grows with the smaller story's size (below the join bar for
two single articles, above it from two members on: docs/stories.md says why). A group merges into its oldest story
(smallest id: ids are time ordered); the others become aliases; the survivor's counters and centroid are recomputed
from its members. Every choice is a function of the stories and the tick only, so a restored writer repairs the same.

Functions of the writer's state (:class:`transforms.stories.writer.writer_state.WriterState`), which they change through its
methods; they return the :class:`WriterOutput` records of the SPLIT and MERGE changes.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import math
from itertools import accumulate
from operator import and_

import numpy as np

from transforms.common import MERGE, SPLIT
from transforms.stories.vocabulary.config import ClusterConfig
from transforms.stories.writer import explanations
from transforms.stories.writer.records import Change
from transforms.stories.writer.scoring import Scorer
from transforms.stories.writer.state import Member, Story, WriterOutput, recompute_centroid, recompute_centroids
from transforms.stories.writer.writer_state import WriterState


def repair_tick(w: WriterState, tick: int) -> list[WriterOutput]:
    """The repair of one tick: splits of the window's stories that are due, then one merge pass over the rest."""
    c = w.config
    window = [
        s
        for s in (w.stories[sid] for sid in w.window_stories(tick - c.repair_window_ms))
        if s.last_repair_at is None or s.last_repair_at <= tick - c.repair_cooldown_ms
    ]
    if not window:
        return []
    out: list[WriterOutput] = []
    repaired: set[int] = set()
    for s in window:
        if split_due(s, tick, c):
            out.extend(try_split(w, s, tick, repaired))
    eligible = [w.stories[s.story_id] for s in window if s.story_id not in repaired]
    out.extend(merge_pass(w, eligible + reach_back(w, eligible, tick, repaired), tick, repaired))
    w.tally("repair_ticks")
    return out


def reach_back(w: WriterState, eligible: list[Story], tick: int, repaired: set[int]) -> list[Story]:
    """Live stories outside the repair window that are among the MERGE_REACH nearest centroids of a story that changed
    since the previous tick (not repaired in the cooldown either): merge candidates, not proposers.

    The window (6 h) bounds which stories propose merges, but one event's reports can be further apart than that and
    still inside the live span (BASIL's three reports of an event are up to a day apart): without these candidates an
    early fragment could never absorb a late one. Found by the writer's own index (the one every decision searches),
    so a tick costs O(active stories x MERGE_REACH) more, never O(live stories).
    """
    c = w.config
    if c.merge_reach <= 0:
        return []
    inside = {s.story_id for s in eligible}
    extra: set[int] = set()
    for s in eligible:
        if not active(s, tick, c):
            continue
        for sid, _ in w.index.search(s.centroid().astype(np.float32), k=c.merge_reach + 1):
            o = w.stories.get(sid)
            if sid in inside or sid in repaired or o is None:
                continue
            if o.last_repair_at is None or o.last_repair_at <= tick - c.repair_cooldown_ms:
                extra.add(sid)
    return [w.stories[sid] for sid in sorted(extra)]


def split_due(s: Story, tick: int, c: ClusterConfig) -> bool:
    """Whether to look for a split of ``s`` at this tick: every tick it changed while it has fewer than
    2 x SPLIT_SPREAD originals; a story of n originals every n // SPLIT_SPREAD ticks (at ticks staggered by its
    id), if it changed during them. A split attempt costs O(n) shadow stories per cut plus an n x n matrix, and
    a large story gains articles at every tick: checking it each time made 58 % of the writer's time on a
    12-hour stream (1,674 attempts, no split). Spread like this, the cost per tick stays ~O(SPLIT_SPREAD) per
    story. With SPLIT_GROWTH (the default), a story of 2 x SPLIT_SPREAD originals or more is checked instead when
    its originals pass a level of :func:`split_levels` or its cooldown ends (:func:`grew_a_level`): each check's
    cost is spread over the originals that joined since the one before. A function of the story's durable fields
    (its members) and the tick only, so a restored writer checks the same.
    """
    period = max(1, s.n // c.split_spread)
    if period == 1:
        return active(s, tick, c)
    if c.split_growth is not None:
        return grew_a_level(s, tick, c) or cooled_down(s, tick, c.repair_every_ms, c)
    if (tick // c.repair_every_ms + s.story_id) % period:
        return False
    span = period * c.repair_every_ms
    return s.last_at > tick - span or cooled_down(s, tick, span, c)


def cooled_down(s: Story, tick: int, span: int, c: ClusterConfig) -> bool:
    """Whether the story's repair cooldown ended during the ``span`` before ``tick``."""
    r = s.last_repair_at
    return r is not None and tick - c.repair_cooldown_ms - span < r <= tick - c.repair_cooldown_ms


def grew_a_level(s: Story, tick: int, c: ClusterConfig) -> bool:
    """Whether the story's originals passed a level of :func:`split_levels` since the previous tick: those with
    ``at`` after it are the ones that joined since (a function of the members and the tick, as a restored writer
    has them). A story past SPLIT_MAX_MEMBERS is never split (:func:`try_split`), so never checked."""
    if s.last_at <= tick - c.repair_every_ms or s.n > c.split_max_members:
        return False
    since = tick - c.repair_every_ms
    late = s.latest_originals()
    recent = sum(1 for m in late if m.at > since)
    if recent == len(late):  # all of the latest are recent: there may be more
        recent = sum(1 for m in s.originals_by_id() if m.at > since)
    levels = split_levels(2 * c.split_spread, c.split_growth, c.split_max_members)
    return bisect.bisect_right(levels, s.n) > bisect.bisect_right(levels, s.n - recent)


@functools.lru_cache(maxsize=8)
def split_levels(first: int, growth: float, top: int) -> tuple[int, ...]:
    """The originals' counts at which a large story is checked for a split: ``first``, then each ``growth`` larger
    (rounded up), up to ``top``: a story is checked O(log(top / first) / growth) times as it grows, each attempt's
    cost spread over the ``growth`` x n originals that joined since the one before."""
    levels = [first]
    while levels[-1] < top:
        levels.append(max(levels[-1] + 1, math.ceil(levels[-1] * (1.0 + growth))))
    return tuple(levels)


def active(s: Story, tick: int, c: ClusterConfig) -> bool:
    """Whether the story changed since the previous tick (an article joined, or its repair cooldown just ended).

    A function of the story and the tick only (never of what earlier ticks computed), so a restored writer
    checks exactly the stories the uninterrupted one checks.
    """
    if s.last_at > tick - c.repair_every_ms:
        return True
    r = s.last_repair_at
    return r is not None and tick - c.repair_cooldown_ms - c.repair_every_ms < r <= tick - c.repair_cooldown_ms


def try_split(w: WriterState, s: Story, tick: int, repaired: set[int]) -> list[WriterOutput]:
    c = w.config
    ms = s.originals_by_id()
    if len(ms) < 2 * c.min_split_sources or len(ms) > c.split_max_members:
        return []
    if len({m.source for m in ms}) < 2 * c.min_split_sources:
        return []
    bar = (c.merge if s.has_body else c.merge_headline) - c.split_margin
    best = best_bisection(w.scorer, ms, bar, s)
    if best is None or best[0] >= bar:
        return []
    rep = s.representative()
    keep, move = (best[1], best[2]) if any(m.article_id == rep for m in best[1]) else (best[2], best[1])
    out = apply_split(w, s, keep, move, tick, best[0], repaired)
    if w.explain:
        out.explain = explanations.split(w, out.change, best[0], bar, len(keep))
    return [out]


def best_bisection(scorer: Scorer, ms: list[Member], bar: float = math.inf, story: Story | None = None):
    """(score between halves, half A, half B) of the spectral sweep cut that separates them most, or None.

    Only cuts that could score below ``bar`` are scored in full: the entity and lexical cosines are >= 0, so
    ``dense - time penalty`` bounds a cut's score from below, and a cut whose bound reaches the bar can be
    neither a split nor the best cut once one below the bar exists (the decision is the same as scoring all).
    """
    c = scorer.config
    W = scorer.pair_matrix(ms, story)  # story: ms are its originals in id order
    W = np.clip(W - np.median(W), 0.0, None)
    np.fill_diagonal(W, 0.0)
    deg = W.sum(axis=1)
    if np.any(deg <= 0):
        return None
    L = np.eye(len(ms)) - W / np.sqrt(np.outer(deg, deg))
    _, vecs = np.linalg.eigh(L)
    fiedler = vecs[:, 1] / np.sqrt(deg)
    if fiedler[int(np.argmax(np.abs(fiedler)))] < 0:  # the eigenvector's sign is arbitrary: fix it
        fiedler = -fiedler
    keys = [(round(x, 9), m.article_id) for x, m in zip(fiedler.tolist(), ms)]
    order = sorted(range(len(ms)), key=keys.__getitem__)
    lo, hi = c.min_split_sources, len(ms) - c.min_split_sources
    sign_cut = int(np.count_nonzero(fiedler < 0))
    cuts = {min(max(sign_cut, lo), hi)} | {lo + (hi - lo) * q // 8 for q in range(9)}
    halves, spans, at_cut = [], [], []
    ordered = [ms[i] for i in order]
    span = cut_spans(ordered)
    before, after = distinct_sources(ordered)
    for cut in sorted(cuts):
        if before[cut] >= c.min_split_sources and after[cut] >= c.min_split_sources:
            halves.append((ordered[:cut], ordered[cut:]))
            spans.append(span(cut))
            at_cut.append(cut)
    clear = surely_reach(scorer, ordered, at_cut, spans, bar) if halves else []
    need = [k for k in range(len(halves)) if clear[k] is not True]  # the others' bounds reach the bar for sure
    groups = [h for k in need for h in halves[k]]
    sums = dict(zip(need, pairs(recompute_centroids(groups, c.half_life_ms)))) if groups else {}
    best = None
    for k in need:
        a, b = halves[k]
        (sa, sb), known_below = sums[k], clear[k] is False
        if not known_below and halves_bound(scorer, a, b, sa[0], sb[0], spans[k]) >= bar:
            continue
        score = scorer.score_stories(scorer.shadow(a, sa), scorer.shadow(b, sb))
        if best is None or score < best[0]:
            best = (score, a, b)
    return best


def distinct_sources(ordered: list[Member]) -> tuple[list[int], list[int]]:
    """(distinct sources of ``ordered[:cut]``, of ``ordered[cut:]``) for every cut 0..n: one pass each way, where
    counting each cut's halves took a set per cut and half."""
    before, seen = [0], set()
    for m in ordered:
        seen.add(m.source)
        before.append(len(seen))
    after, seen = [0], set()
    for m in reversed(ordered):
        seen.add(m.source)
        after.append(len(seen))
    return before, after[::-1]


def pairs(items: list) -> list[tuple]:
    return list(zip(items[0::2], items[1::2]))


def surely_reach(scorer: Scorer, ordered: list[Member], cuts: list[int], spans: list, bar: float) -> list:
    """Per cut of ``ordered`` (halves ``ordered[:cut]``, ``ordered[cut:]``): True when :func:`halves_bound` surely
    reaches ``bar``, False when it is surely below, None when too close to tell (or copies among the members).

    A split attempt usually ends with every cut's bound above the bar (a cohesive story), and the exact bounds need
    both halves' recency-weighted sums, one Python step per member and half. These sums are the same vectors up to
    rounding: every member weighted 2^-(age / half-life) against the latest, prefix sums along the sweep order (one
    numpy pass for every cut). Their cosine is within a few ulps times members x (sum of weights / norm) of the exact
    one, far inside the margin taken here, so a clear answer is the exact bound's; the rest are computed exactly."""
    if not cuts or any(m.is_copy for m in ordered):
        return [None] * len(cuts)
    V = np.stack([m.v64 for m in ordered])
    at = np.array([m.at for m in ordered], dtype=np.float64)
    weight = 0.5 ** ((at.max() - at) / scorer.config.half_life_ms)
    prefix = np.cumsum(weight[:, None] * V, axis=0)
    wsum = np.cumsum(weight)
    out: list = []
    for cut, (known, gap) in zip(cuts, spans):
        a, b = prefix[cut - 1], prefix[-1] - prefix[cut - 1]
        na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
        if na <= 0 or nb <= 0:
            out.append(None)
            continue
        bound = float(np.dot(a, b)) / (na * nb) - scorer.penalty(known, gap) - 1e-9
        err = 1e-11 * len(ordered) * float(wsum[-1]) * (1.0 / na + 1.0 / nb) + 1e-12
        out.append(True if bound - err >= bar else False if bound + err < bar else None)
    return out


def halves_bound(scorer: Scorer, a: list[Member], b: list[Member], ca=None, cb=None, span=None) -> float:
    """A lower bound of ``score_stories`` between the shadows of ``a`` and ``b``: dense - time penalty (``ca``,
    ``cb``: their recency-weighted sums when known; ``span``: their (both times known, gap) when known)."""
    half_life = scorer.config.half_life_ms
    ca = recompute_centroid(a, half_life)[0] if ca is None else ca
    cb = recompute_centroid(b, half_life)[0] if cb is None else cb
    na, nb = float(np.linalg.norm(ca)), float(np.linalg.norm(cb))
    dense = float(np.dot(ca / na if na > 0 else ca, cb / nb if nb > 0 else cb))
    if span is None:
        known = all(m.time_known for m in a) and all(m.time_known for m in b)
        gap = max(min(m.at for m in a), min(m.at for m in b)) - min(max(m.at for m in a), max(m.at for m in b))
    else:
        known, gap = span
    return dense - scorer.penalty(known, gap) - 1e-9


def cut_spans(ordered: list[Member]):
    """``span(cut)``: (all times known, gap) of ``ordered[:cut]`` against ``ordered[cut:]``, as :func:`halves_bound`
    computes them from the members, read from prefix and suffix minima and maxima (one pass, not one per cut)."""
    at = [m.at for m in ordered]
    known = [m.time_known for m in ordered]
    pmin, pmax, pknown = list(accumulate(at, min)), list(accumulate(at, max)), list(accumulate(known, and_))
    smin = list(accumulate(reversed(at), min))[::-1]
    smax = list(accumulate(reversed(at), max))[::-1]
    sknown = list(accumulate(reversed(known), and_))[::-1]

    def span(cut: int) -> tuple[bool, int]:
        gap = max(pmin[cut - 1], smin[cut]) - min(pmax[cut - 1], smax[cut])
        return bool(pknown[cut - 1] and sknown[cut]), gap

    return span


def apply_split(
    w: WriterState, s: Story, keep: list[Member], move: list[Member], tick: int, score: float, repaired: set[int]
) -> WriterOutput:
    """Split ``s``: ``keep`` (with their copies) stays under its id, ``move`` (with theirs) goes to a new story."""
    c = w.config
    seq = w.next_seq()
    new_id = w.mint(tick)
    move_ids = {m.article_id for m in move}
    copies = [m for m in s.members.values() if m.is_copy]
    moved_copies = [m for m in copies if m.copy_of in move_ids]
    kept_copies = [m for m in copies if m.copy_of not in move_ids]
    moving = move + moved_copies
    kept = w.reset_story(s, keep + kept_copies, recount=False)
    kept.last_repair_at = tick
    ns = Story(new_id, w.language, *recompute_centroid(moving, c.half_life_ms), last_repair_at=tick)
    w.put_story(ns, moving, count=False)  # still live: counted since it arrived
    repaired.update((s.story_id, new_id))
    w.tally("split")
    moved = sorted(m.article_id for m in moving)
    ch = w.change(
        seq, Change(SPLIT, s.story_id, at=tick, score=score, centroid=kept.centroid(), other=new_id, article_ids=moved)
    )
    return WriterOutput(
        ch,
        w.meta(kept),
        {},
        other_meta=w.meta(ns),
        other_centroid=[float(x) for x in ns.centroid()],
        other_members={m.article_id: m.to_record() for m in moving},
    )


def merge_pass(w: WriterState, eligible: list[Story], tick: int, repaired: set[int]) -> list[WriterOutput]:
    """Greedy best-first agglomeration of the eligible stories; each group merges into its oldest story.

    Pairs are proposed by the stories that changed since the previous tick (:func:`active`) against every
    eligible story of the window, then merged best margin first; a merged group is re-scored as one story.
    """
    if len(eligible) < 2:
        return []
    c = w.config
    ids = [s.story_id for s in eligible]
    row = {sid: i for i, sid in enumerate(ids)}
    shadows: dict[int, Story] = {s.story_id: s for s in eligible}
    groups: dict[int, list[Member]] = {}
    absorbed: dict[int, list[int]] = {sid: [] for sid in ids}
    alive = np.ones(len(ids), dtype=bool)
    C = np.stack([s.centroid() for s in eligible])
    version = dict.fromkeys(ids, 0)
    heap: list[tuple[float, int, int, int, int]] = []
    linkage: dict = {}  # average-linkage sums of this pass (the IDF does not move during a merge pass)
    why: dict[int, tuple] | None = {} if w.explain else None  # absorbed -> (group it joined, criterion detail)

    def push(a: int) -> None:
        dense = C @ C[row[a]]
        dense[~alive] = -2.0
        dense[row[a]] = -2.0
        k = min(c.merge_candidates, len(ids) - 1)
        top = np.argpartition(-dense, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
        for i in sorted(top, key=lambda i: (-round(float(dense[i]), 9), ids[i])):
            if dense[i] < c.merge_floor:
                break
            o = ids[i]
            if w.scorer.surely_below(shadows[a], shadows[o], linkage):
                continue  # its margin is < 0: not proposed (told without the two stories' TF-IDF sums)
            margin = w.scorer.merge_margin(shadows[a], shadows[o], linkage)
            if margin >= 0:
                x, y = min(a, o), max(a, o)
                heapq.heappush(heap, (-round(margin, 9), x, y, version[x], version[y]))

    for s in eligible:
        if active(s, tick, c):
            push(s.story_id)
    while heap:
        _, x, y, vx, vy = heapq.heappop(heap)
        if not (alive[row[x]] and alive[row[y]]) or version[x] != vx or version[y] != vy:
            continue
        if why is not None:
            detail: dict = {}
            w.scorer.merge_margin(shadows[x], shadows[y], linkage, detail)
            why[y] = (x, detail)
        groups[x] = groups.get(x, list(shadows[x].members.values())) + groups.get(y, list(shadows[y].members.values()))
        groups.pop(y, None)
        absorbed[x] = absorbed[x] + [y] + absorbed[y]
        alive[row[y]] = False
        version[x] += 1
        shadows[x] = w.scorer.shadow(groups[x])
        C[row[x]] = shadows[x].centroid()
        push(x)
    out: list[WriterOutput] = []
    for survivor in ids:
        if not alive[row[survivor]]:
            continue
        for gone in sorted(absorbed[survivor]):
            moved = len(w.stories[gone].members)
            out.append(apply_merge(w, survivor, gone, tick, repaired))
            if why is not None:
                out[-1].explain = explanations.merge(w, out[-1].change, moved, why.get(gone))
    return out


def apply_merge(w: WriterState, survivor: int, gone: int, tick: int, repaired: set[int]) -> WriterOutput:
    seq = w.next_seq()
    s = w.stories[survivor]
    other = w.stories[gone]
    moved = dict(sorted(other.members.items()))
    gone_meta = w.meta(other)
    gone_meta["alias_of"] = survivor
    w.drop_story(other, uncount=False)  # its members stay live, in the survivor
    s = w.reset_story(s, list(s.members.values()) + list(moved.values()), recount=False)
    s.last_repair_at = tick
    repaired.update((survivor, gone))
    w.tally("merge")
    ch = w.change(seq, Change(MERGE, survivor, at=tick, centroid=s.centroid(), other=gone))
    return WriterOutput(ch, w.meta(s), {aid: m.to_record() for aid, m in moved.items()}, other_meta=gone_meta)
