"""Skipping steady minutes of a replay without ranking them (``newsroom backfill --snapshots``, change-only).

Why: the change-only replay (:mod:`transforms.editions.ranker.steady`) builds no documents on a steady minute but
still ranks it: each story change keeps every edition of its language ranking for ``idle_cycles`` (30) minutes,
and on a month of BASIL-like input ~9 in 10 of those minutes are steady. Ranking them cost the replay ~8.7x the
plain backfill.

The rule. After a steady minute ``now`` (its page slots, pool order and everything a reader sees equal the last
minute built, so the decisions of ``now`` repeat those of ``now - 1``), the minutes ``(now, h]`` are skipped when
every input of the decisions provably keeps the value it had at ``now``; each of them would then be steady again
with the same page slots, by induction (the hysteresis reads the previous minute's slots, which are the same).
:func:`horizon` finds ``h``; :func:`skip` applies what those minutes would have done to the edition's memory.

What the decisions read, and why it cannot change in ``(now, h]``:

- the book: no pending event is due before ``h`` (nothing is folded), and ``h`` is before the next top of the hour
  (representatives rotate, the publisher cap is decided and the event log compacted there) and not after the
  chain's last minute (its idle end);
- every time window of the scoring, taken per story and article: the live window, the 6 h coverage window, the
  Breaking pin, the developing label's hour, an editorial control's start or end. ``h`` is before the first of them
  to pass. The 30 min velocity window (an article leaving it, a story's age passing it) is crossed: at such a
  minute some velocity falls (``n30`` only falls, the story's own rate before it is recomputed), and only the
  velocities and raw scores move, so the raw scores are ranked exactly there and on the minute before it
  (:func:`window_edges` ``crossed``). Most chains end that way: a change's time is its article's first-seen time,
  so the chain's idle end is also the minute that article leaves the window;
- the candidates: every story scored (``base > 0``) is one (no more than ``pool_size`` and ``section_candidates``
  of them: the pool and every section take all that qualify, and the local reserve, which looks only at stories
  scored, adds none to a pool that holds them all), so membership does not depend on the scores. Which of them a
  section takes, and with what fit, reads the book and the relevance, which reads the pair weights: they depend on
  the live stories, not on time (the coverage window moves only the coverage). So every minute of the window has
  ``now``'s candidates and sections: its live stories are ``now``'s, and so are its scored ones (a live story is
  scored when its coverage is positive, velocity and freshness being so, and no coverage window passes); no
  candidate has ``hold_min_originals`` originals in 30 minutes (no hold can start);
- the order of the smoothed scores. Between two window edges a story's raw score is ``c * velocity(t) *
  0.5 ** (t / half_life)``: the freshness factor is the same for every story and the velocity only grows (its
  30-minute baseline rate falls as the story ages). Undoing the common factor, each story's raw score is monotone
  between two crossed velocity minutes, so its smoothed score (the mean of its last <= 5 raw scores, the older ones
  known exactly from the smoothing memory) lies in an interval fixed by its raw scores in ``now``'s history, at
  ``h`` (ranked for that: :func:`lite_rank`) and on both sides of each crossed minute (every stretch's ends),
  widened by the freshness factor of 4 minutes. When those intervals are apart (by
  1e-9, far above float rounding) for every pair of pool stories, and for every pair of a section's stories both
  as they stand and against the other times ``1 + hysteresis``, every comparison the pool order and the
  hysteresis make has the same outcome at every minute of ``(now, h]`` as at ``now``.

Anything not proven (a crowded book, a hold, scores too close) skips nothing: the minute after is ranked as
before. The ranking at ``h`` (:func:`lite_rank`: every story's scores; the candidates are not selected again) must
also find the same live stories, stories scored, Breaking rows (pins) and publisher counts as ``now``, and
originals in 30 minutes only fewer (:func:`same_minute`): a check of the argument above (no window edge passes
before ``h``), not a part of it.

What the skipped minutes still do (:func:`skip`): their impressions are counted (the same slots every minute, in
order: the share counts are the same floats), the last cycle moves to ``h`` and the smoothing memory holds the raw
scores of the last <= 5 of them, ranked for that, so the next minute ranked smooths exactly as after ranking every
minute. Replay only: a streaming ranker cannot know that no event will arrive for a skipped minute
(:class:`~transforms.editions.ranker.rank.EditionRanker` ``fast_forward``).
tests/transforms/editions/test_skip.py and tests/pipelines/test_backfill_change_only.py compare the snapshots
with the every-minute replay's byte for byte.
"""

from __future__ import annotations

import numpy as np

from transforms.common import HOUR_MS, MINUTE_MS
from transforms.editions.cycle.kept import SMALL_BOOK_PAIRS, small_sums
from transforms.editions.cycle.run import breaking_rows
from transforms.editions.cycle.scoring import features, pair_sums, relevance
from transforms.editions.ranker.steady import count_impressions

EPS = 1e-9  # relative margin of every proven comparison (float rounding is ~1e-16)


def lite_rank(ctx, now: int):
    """The scores of minute ``now`` for every story, as :func:`~transforms.editions.cycle.run.rank` computes them:
    (features, Breaking rows, the pair sums and relevance they were computed with). The candidates are not
    selected again: in a window they are the steady minute's (module docstring), so :func:`same_minute` checks what
    that rests on instead."""
    book, p = ctx.book, ctx.params
    live = book.live_mask(now, p.live_window_ms)
    if book.pairs.size < SMALL_BOOK_PAIRS:  # the shared sums of a small book (kept.py): the same values
        small = small_sums(book, now, p, live)
        f = small.features(book, now)
        return f, breaking_rows(book, f.live, now, p), small.sums, small.relevance(book, f, ctx.edition.region)
    sums = pair_sums(book, live, now, p)
    f = features(book, now, p, sums, live)
    forced = breaking_rows(book, f.live, now, p)
    return f, forced, sums, relevance(book, f, ctx.edition.region)


def window_raw(ctx, t: int, ranked_h, rows: np.ndarray) -> np.ndarray:
    """The raw scores of the candidate ``rows`` at minute ``t`` of a proven window, from the pair sums and relevance
    ranked at its end (``ranked_h``, a :func:`lite_rank`): inside the window they are the same (features and
    ``base * rel`` at ``t``, as select_candidates computes its raw scores: the same bits)."""
    book, p = ctx.book, ctx.params
    f_h, _, sums, rel = ranked_h
    if sums.shared is not None and sums.shared.live is f_h.live:  # kept.SmallSums: features of t with them
        f = sums.shared.features(book, t)
    else:
        f = features(book, t, p, sums, f_h.live)
    return (f.base * rel.rel)[rows]


def _last_minute_before(x) -> int:
    return (int(x) - 1) // MINUTE_MS * MINUTE_MS


def _first_minute_after(x: int) -> int:
    """The first minute ``t > x``: an article first seen at ``s`` counts in the velocity window at ``t`` while
    ``s >= t - window``, so the term ends at ``x = s + window`` and the first minute without it is this one (a
    story's age passing the window likewise: ``first < t - window``)."""
    return (x // MINUTE_MS + 1) * MINUTE_MS


def window_edges(ctx, f, pending: dict, last_event_at: int, controls) -> tuple[int, list[int]]:
    """``(h, crossed)``: ``h`` the last minute before anything the decisions read, the velocity window aside, can
    change with time alone, and not after the chain's last minute (module docstring); ``crossed`` the minutes of
    ``(now, h]`` at which an article or a live story's age leaves the 30-minute velocity window (ascending: the
    minutes where some velocity falls, which :func:`horizon` ranks exactly). Times are integer milliseconds,
    gathered as Python ints: a book of a few live stories would spend more on numpy calls than on the times."""
    p, now, memory = ctx.params, ctx.now, ctx.memory
    idle_end = last_event_at + p.idle_cycles * MINUTE_MS
    chain_end = -(-idle_end // MINUTE_MS) * MINUTE_MS  # the chain's last minute: the first with now >= idle_end
    first_edge, crossed = book_edges(ctx.book, f, now, p)
    edges = [(now // HOUR_MS + 1) * HOUR_MS]  # the top of the hour
    if first_edge is not None:
        edges.append(first_edge)
    if pending:
        first = pending.first_at() if hasattr(pending, "first_at") else min(e["at"] for e in pending.values())
        edges.append((int(first) // MINUTE_MS + 1) * MINUTE_MS)
    window = p.developing_window_min * MINUTE_MS
    edges += [seen[1] + window for seen in (getattr(memory, "facts", None) or {}).values() if seen[1] > 0]
    for c in controls or ():
        edges += [c.set_at, c.expires_at]
    later = [int(t) for t in edges if t >= now]
    h = min(_last_minute_before(min(later)) if later else now, chain_end)
    return h, [t for t in crossed if t <= h]


def book_edges(book, f, now: int, p) -> tuple[int | None, list[int]]:
    """What of :func:`window_edges` reads the book and the live stories ``f.live`` alone: the first time from
    ``now`` on at which a live story leaves the live window, a Breaking pin starts or ends, a live pair leaves the
    coverage window or an article leaves the velocity window (None: none), and every minute from ``now`` on at
    which an article or a live story's age leaves the velocity window (ascending). Kept on ``f`` per minute and
    parameters: a small book's features are shared by the editions of its lineage
    (transforms/editions/cycle/kept.py), whose proofs ask the same."""
    memo = f.__dict__.get("book_edges")
    if memo is not None and memo[0] is p and memo[1] == now:
        return memo[2]
    st, live = book.stories, f.live
    rows = np.flatnonzero(live)
    edges = (st.newest_seen[rows] + p.live_window_ms).tolist()
    start = [s for s in st.breaking_start[rows].tolist() if s > 0]
    edges += start + [s + p.breaking_pin_ms for s in start]
    ns = book.pairs.size
    pairs = np.flatnonzero(book.pairs.live[:ns] & live[book.pairs.story[:ns]])
    edges += (book.pairs.latest_first_seen[pairs] + p.coverage_window_ms).tolist()
    vw = p.velocity_window_ms
    seen = book.articles.first_seen[: book.articles.size]
    arts = seen[seen >= now - vw].tolist()  # those leaving the velocity window from now on (or seen after now)
    edges += arts
    later = [int(t) for t in edges if t >= now]
    velocity = [t + vw for t in st.first_seen[rows].tolist()] + [t + vw for t in arts]
    out = (min(later) if later else None, sorted({_first_minute_after(t) for t in velocity if t >= now}))
    f.__dict__["book_edges"] = (p, now, out)
    return out


def same_minute(ranked, f, forced) -> bool:
    """Whether minute ``h`` (features ``f``, Breaking rows ``forced``) has what the steady minute's candidates rest
    on (module docstring): the same live stories, stories scored and Breaking rows, the same publisher counts, and
    originals in 30 minutes only fewer (none arrives before ``h``: no hold can start)."""
    f0 = ranked.f
    return (
        np.array_equal(f.live, f0.live)
        and np.array_equal(forced, ranked.forced)
        and np.array_equal(f.base > 0, f0.base > 0)
        and np.array_equal(f.pub_count, f0.pub_count)
        and bool(np.all(f.n30 <= f0.n30))
    )


def _decay(p, minutes: np.ndarray) -> np.ndarray:
    """2 ** (minutes / half-life): a raw score ``minutes`` from ``now`` times this is undone to ``now``."""
    return np.power(2.0, minutes * MINUTE_MS / p.half_life_ms)


def _intervals(ctx, ranked, raws: dict):
    """Per candidate (``ranked.cand.rows`` order): bounds of its smoothed score at every minute of ``(now, h]``,
    undone to ``now`` (module docstring): the least and the most of its raw scores undone to ``now`` over its
    smoothing history and the minutes of ``raws`` (minute -> raw scores in ``cand.rows`` order: ``h`` and each
    crossed velocity minute and the minute before it, so every stretch where a raw score undone only grows has
    both ends there), the most times the freshness of the oldest minute smoothed. None when the memory does not
    hold ``now``'s candidates."""
    p, now, sm = ctx.params, ctx.now, ctx.memory.smoothing
    ids = ctx.book.stories.id[ranked.cand.rows]
    order = np.argsort(ids, kind="stable")
    if sm.cycle != now or not np.array_equal(sm.ids, ids[order]):
        return None
    # per story in Python: a few stories of ~10 values each, where numpy's per-call cost would dominate (the same
    # products, minima and maxima)
    k = sm.hist.shape[1]
    decay = _decay(p, np.arange(-k + 1, k)).tolist()  # the past minutes (-k + 1 .. 0) and the oldest's (k - 1)
    past_decay, oldest = decay[k - 1 :: -1], decay[2 * k - 2]
    ts = sorted(raws)
    later_decay = _decay(p, np.array([(t - now) // MINUTE_MS for t in ts])).tolist()
    later = [raws[t].tolist() for t in ts]  # in cand.rows order
    hist, count = sm.hist.tolist(), sm.count.tolist()  # in id order
    lo, hi = [0.0] * len(hist), [0.0] * len(hist)
    for s, c in enumerate(order.tolist()):  # s: the story's place in the memory, c: in cand.rows
        past = [x * d for x, d in zip(hist[s][: min(count[s], k)], past_decay)]
        now_on = [col[c] * d for col, d in zip(later, later_decay)]
        lo[c] = min(min(past, default=np.inf), min(now_on))
        hi[c] = max(max(past, default=-np.inf), max(now_on)) * oldest
    return np.array(lo), np.array(hi)


TOL = 1e-10  # relative: raw scores undone to ``now`` that differ by less are taken as equal (float rounding)


def _tight(ctx, ranked, raws: dict, h: int, bounds):
    """Tighter bounds for the candidates smoothed over all ``n`` minutes whose raw scores undone to ``now`` never
    fall from ``now - n + 1`` to ``h``: their smoothed score (undone) then only grows, from its value at ``now`` to
    its value at ``h`` (``raws``: minute -> raw scores in ``cand.rows`` order, every minute of
    ``[max(now + 1, h - n + 1), h]`` and both sides of each crossed velocity minute: between two of them a raw
    score undone only grows, so one that never falls from one to the next never falls). Others keep ``bounds``."""
    p, now, sm = ctx.params, ctx.now, ctx.memory.smoothing
    ids = ctx.book.stories.id[ranked.cand.rows]
    order = np.argsort(ids, kind="stable")
    n = sm.hist.shape[1]
    later = sorted(raws)
    m_later = np.stack([raws[t][order] * _decay(p, np.array((t - now) // MINUTE_MS)) for t in later], axis=1)
    m_past = (sm.hist * _decay(p, -np.arange(n))[None, :])[:, ::-1]  # oldest first
    m_all = np.concatenate([m_past, m_later], axis=1)
    rising = np.all(m_all[:, 1:] >= m_all[:, :-1] * (1 - TOL), axis=1) & (sm.count == n)
    # the raw scores smoothed at h: the last n minutes, those up to now from the history
    window = [raws[t][order] for t in range(h - (n - 1) * MINUTE_MS, h + MINUTE_MS, MINUTE_MS) if t > now]
    window += [sm.hist[:, j] for j in range(n - len(window))]
    at_h = np.mean(np.stack(window, axis=1), axis=1) * _decay(p, np.array((h - now) // MINUTE_MS))
    at_now = sm.hist.sum(axis=1) / n
    lo, hi = bounds
    lo_s, hi_s = lo[order].copy(), hi[order].copy()
    lo_s[rising] = at_now[rising] * (1 - TOL)
    hi_s[rising] = at_h[rising] * (1 + TOL)
    out_lo, out_hi = np.empty_like(lo), np.empty_like(hi)
    out_lo[order], out_hi[order] = lo_s, hi_s
    return out_lo, out_hi


def _apart(lo, hi) -> bool:
    """No two intervals meet (so every pair compares the same way throughout). Plain Python over a few values
    (lists or arrays)."""
    if len(lo) < 2:
        return True
    o = sorted(range(len(lo)), key=lo.__getitem__)  # stable, as np.argsort(kind="stable")
    return all(hi[x] * (1 + EPS) < lo[y] for x, y in zip(o, o[1:]))


def _hysteresis_fixed(lo, hi, factor: float) -> bool:
    """For every pair x != y, ``x > y * factor`` has one outcome throughout (lists or arrays)."""
    n = len(lo)
    return all(
        lo[x] > hi[y] * factor * (1 + EPS) or hi[x] * (1 + EPS) < lo[y] * factor
        for x in range(n)
        for y in range(n)
        if x != y
    )


def orders_fixed(ctx, ranked, lo: np.ndarray, hi: np.ndarray) -> bool:
    """The pool order and every section's hysteresis order are proven the same throughout the window."""
    cand = ranked.cand
    lo_l, hi_l, shown = lo.tolist(), hi.tolist(), (ranked.reps.rep >= 0).tolist()
    at = {r: j for j, r in enumerate(cand.rows.tolist())}  # story row -> its place in cand.rows
    pos = [j for j in map(at.__getitem__, cand.pool.tolist()) if shown[j]]
    if not _apart([lo_l[j] for j in pos], [hi_l[j] for j in pos]):
        return False
    factor = 1.0 + ctx.params.hysteresis
    for rows, fit in cand.sections.values():
        if rows.size < 2:
            continue  # no pair to compare (most sections of a quiet edition are empty)
        kept = [(at[r], w) for r, w in zip(rows.tolist(), fit.tolist()) if shown[at[r]]]
        a_lo, a_hi = [lo_l[j] * w for j, w in kept], [hi_l[j] * w for j, w in kept]
        if not (_apart(a_lo, a_hi) and _hysteresis_fixed(a_lo, a_hi, factor)):
            return False
    return True


def horizon(ctx, decided, pending: dict, last_event_at: int, controls) -> tuple[int, tuple] | None:
    """``(h, (candidate rows, minute -> their raw scores at the last n minutes of the window)``: every minute of
    ``(now, h]`` is steady with ``now``'s decisions; None when fewer than two minutes are proven (module docstring). ``decided``: ``(ranked, gates, page_slots)`` of
    the steady minute ``now``."""
    ranked, gates, _ = decided
    p, now = ctx.params, ctx.now
    if now - last_event_at >= p.idle_cycles * MINUTE_MS or not ranked.f.live.any():
        return None  # the chain ends at now: the minutes after it are not ranked at all
    live_scored = int((ranked.f.base > 0).sum())
    if live_scored > min(p.pool_size, p.section_candidates) or gates.held or gates.held_entries:
        return None
    if ranked.cand.rows.size and int(ranked.f.n30[ranked.cand.rows].max()) >= p.hold_min_originals:
        return None
    h, crossed = window_edges(ctx, ranked.f, pending, last_event_at, controls)
    if h < now + 2 * MINUTE_MS:
        return None
    at_h = lite_rank(ctx, h)
    f_h, forced_h, _, rel_h = at_h
    if not same_minute(ranked, f_h, forced_h):
        return None
    rows = ranked.cand.rows  # the candidates at every minute of the window (module docstring)
    raws = {h: (f_h.base * rel_h.rel)[rows]}
    sampled = range(max(now + MINUTE_MS, h - (p.smoothing_cycles - 1) * MINUTE_MS), h, MINUTE_MS)  # skip needs them
    for t in [*sampled, *(e + d for e in crossed for d in (-MINUTE_MS, 0))]:
        if now < t and t not in raws:
            raws[t] = window_raw(ctx, t, at_h, rows)  # exact: the pair sums and relevance hold throughout
    bounds = _intervals(ctx, ranked, raws)
    if bounds is None:
        return None
    if not orders_fixed(ctx, ranked, *bounds):
        bounds = _tight(ctx, ranked, raws, h, bounds)
        if not orders_fixed(ctx, ranked, *bounds):
            return None
    return h, (rows, raws)


def skip(ctx, decided, h: int, ranked_h) -> int:
    """What the minutes ``(now, h]`` would have done to the memory (module docstring); returns their number.
    ``ranked_h``: the candidates at ``h`` and their raw scores at the last ``n`` minutes (:func:`horizon`)."""
    book, p, now, memory = ctx.book, ctx.params, ctx.now, ctx.memory
    _, _, page_slots = decided
    rows, raws = ranked_h
    minutes = (h - now) // MINUTE_MS
    count_impressions(book, page_slots, memory, minutes)
    n = p.smoothing_cycles
    first = max(now + MINUTE_MS, h - (n - 1) * MINUTE_MS)
    ids = book.stories.id[rows]
    if first > now + MINUTE_MS:
        memory.smoothing.cycle = first - MINUTE_MS  # the history before is shifted out entirely below
    if not smooth_window(memory.smoothing, ids, raws, first, h, n):
        for t in range(first, h + MINUTE_MS, MINUTE_MS):
            memory.smoothing.smooth(ids, raws[t], t, MINUTE_MS, n)
    memory.last_cycle = h
    return minutes


def smooth_window(sm, ids: np.ndarray, raws: dict, first: int, h: int, n: int) -> bool:
    """The smoothing memory after smoothing the raw scores of ``ids`` at every minute of ``[first, h]`` (``raws``,
    aligned with ``ids``), in one step: when the memory holds exactly these stories at the minute before the
    window, each of the ``m`` minutes shifts every story's history by one and raises its count by one, so the
    history ends as the ``m`` raw scores newest first followed by the ``n - m`` newest it held, and the count as
    ``min(count + m, n)``: the values :meth:`~transforms.editions.cycle.scoring.Smoothing.smooth` leaves, copied, not computed.
    False (nothing changed) when the memory holds other stories or another history length: the caller smooths
    minute by minute."""
    m = (h - first) // MINUTE_MS + 1
    if m > n or sm.hist.ndim != 2 or sm.hist.shape[1] != n or sm.ids.size != ids.size:
        return False
    if sm.cycle != first - MINUTE_MS:
        return False
    order = np.argsort(ids, kind="stable")
    if not np.array_equal(sm.ids, ids[order]):
        return False
    hist = np.zeros((ids.size, n))
    hist[:, :m] = np.stack([raws[t] for t in range(h, first - MINUTE_MS, -MINUTE_MS)], axis=1)[order]
    hist[:, m:] = sm.hist[:, : n - m]
    sm.count = np.minimum(sm.count + m, n).astype(np.int8, copy=False)
    sm.hist, sm.cycle = hist, h
    return True
