"""An edition's features and relevance kept across its cycles: each cycle recomputes the sums of the stories that
changed, not of every live story.

Most of the ~120,000 stories of a book do not change in a minute, but :func:`~.scoring.features` and
:func:`~.scoring.relevance` re-add every story x publisher pair (~500,000) and every place mention each cycle. What
they add per story (:class:`~.scoring.PairSums`, :class:`~.scoring.RegionSums`) depends only on the story's own
pairs and mentions, its liveness and primary section, and which of its pairs are recent (first seen within the
coverage window). :class:`KeptFeatures` keeps those sums and, each cycle, finds the stories whose inputs may differ
from the last cycle's by comparing the columns they are made of with copies kept then (vectorised, O(pairs) in
comparisons only): a new story, pair or mention row; a story whose liveness or primary section changed; a pair
that died or was seen again; a mention counted again; a pair that crossed the coverage window's start between the
two cycles. Their sums are recomputed over their own pairs in row order, which gives the same bits as the pass over
every pair (:func:`~.scoring.pair_sums`); everything per story that moves with the clock (coverage, velocity,
freshness, relevance's divisions) is still computed for every story, as before, from the kept sums. The pair rows
of the edition's region are kept too (new pairs appended), where the local reserve looks for city publishers.

A book of fewer than ``SMALL_BOOK_PAIRS`` pairs (a quiet edition's few live stories) keeps no columns: a cycle adds
every pair again, which costs fewer numpy calls than finding what changed and gives the same bits. It keeps whole
results instead, for the cycles that repeat what the last one read (~4 in 10 of a quiet replay's ranked minutes fold
no event): the pair sums, relevance and section fits while the book's tables, its live stories and the pairs within
the coverage window are the same, and for every book the candidates' article order
(:meth:`KeptFeatures.article_order`, which reads no clock) while the book, the candidates and the capped groups are.
A small book's pair sums, its features at each minute and its relevance per region (:class:`SmallSums`) are shared
by every edition whose book has the same tables (``StoryBook.lineage``, one config, registry and parameters): the
15 English editions fold the same events, so a replay's minute computed them 15 times over, and the steady-minute
proof (transforms/editions/ranker/skip.py) asks for the features of the same minutes again (25,171 computations of
the features for 6,316 ranked minutes of a month's replay, ~1,900 of them distinct). So are a small book's article
orders (:class:`SharedOrders`: 4,375 computed in that replay, 551 distinct).

In-process only, like the rest of :class:`~.context.CycleCache`: a restarted worker or a rebuilt book starts with an
empty one and computes every sum once (the same values), so Beam state does not grow. A different book, registry,
parameters or region, or a cycle earlier than the last, computes everything again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from transforms.editions.book.storybook import StoryBook
from transforms.editions.cycle.arrays import unique_ints
from transforms.editions.cycle.representatives import ArticleOrder, article_order
from transforms.editions.cycle.scoring import (
    Features,
    PairSums,
    RegionSums,
    Relevance,
    features,
    pair_sums,
    region_sums,
    relevance,
)
from transforms.editions.vocabulary.params import RankParams

# Below this many story x publisher pairs a cycle adds every pair again: on a book of a few live stories (most
# editions of a quiet replay) comparing the kept columns and recomputing the changed rows costs more numpy calls
# than the full pass, which gives the same bits.
SMALL_BOOK_PAIRS = 2048


def book_state(book: StoryBook) -> tuple:
    """What moves whenever the content of ``book`` does, for a cache that also holds the book object (a rebuilt or
    compacted book is a new one): every fold goes through StoryBook.apply, which records the event's id in
    ``applied`` (a set that only grows) or counts the event in ``bad_events``, and a cycle flushes the stories
    a fold touched before it ranks. The cycle's clock is not in it: what reads the clock is compared apart."""
    return len(book.applied), book.bad_events


# One lock for the worker's shared caches below: a Beam worker runs bundles of several edition keys on several
# threads of one process, and each cache's least-recently-used bookkeeping (pop, re-insert, evict the oldest) and
# row budget are sequences of dict operations that another thread must not interleave (an eviction of a key that
# another thread just popped raised KeyError; a lost list left the budget counting rows no entry held). Held while
# an answer is computed too: the computations are small books' (a few hundred microseconds) and hold the GIL.
SHARED_LOCK = threading.RLock()


class LineageMemo:
    """Values made from a book's tables alone (and the config, registry and parameters), shared by the editions whose
    books have the same lineage (``StoryBook.lineage``): the editions of a language fold the same events, each into
    its own book, and at each minute make the same documents (storyline items, pool entries' story fields, article
    cards). ``holder``: one more object the values read (the takedowns), held by identity like the parameters. A
    large book's lineage changes with every fold, so a scope serves one minute of one language; the least recently
    used scopes go first, whole, within a budget of values. A value handed out is shared by every edition that asks
    for it, so nothing may write into it (cards.py's per-scope dict of cards only grows, by single dict
    operations)."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        # (lineage, id(p), id(holder)) -> (config, registry, p, holder, values), least recently used first (O(1) moves)
        self.by_scope: OrderedDict[tuple, tuple] = OrderedDict()
        self.size = 0

    def find(self, book: StoryBook, p, keys: list, make, holder=None) -> list:
        """The values of ``keys`` (hashable) in this book's scope; ``make(missing keys) -> their values`` for the
        ones not made yet, in one call (outside the lock: a race makes a value twice, never a wrong one)."""
        scope = (book.lineage, id(p), id(holder))
        with SHARED_LOCK:
            hit = self.by_scope.pop(scope, None)
            same = hit is not None and hit[0] is book.config and hit[1] is book.registry
            if not (same and hit[2] is p and hit[3] is holder):
                if hit is not None:
                    self.size -= len(hit[4])
                hit = (book.config, book.registry, p, holder, {})
            self.by_scope[scope] = hit  # popped and put back: the most recently used last
            values = hit[4]
            out = [values.get(k) for k in keys]
            missing = [k for k, v in zip(keys, out) if v is None and k not in values]
        if not missing:
            return out
        made = dict(zip(missing, make(missing)))
        with SHARED_LOCK:
            if self.by_scope.get(scope) is hit:  # not evicted meanwhile by another thread
                for k, v in made.items():
                    if k not in values:
                        values[k] = v
                        self.size += 1
                while self.size > self.kept and len(self.by_scope) > 1:
                    self.size -= len(self.by_scope.popitem(last=False)[1][4])
        return [made.get(k, v) for k, v in zip(keys, out)]

    def get(self, book: StoryBook, p, key, make, holder=None):
        """:meth:`find` of one key; ``make()`` makes its value."""
        return self.find(book, p, [key], lambda _: [make()], holder)[0]


class SmallSums:
    """A small book's pair sums (:func:`~.scoring.pair_sums`: they read the tables, the live stories, which pairs are
    within the coverage window and the parameters), with what is computed from them alone: the features at each
    minute (with these live stories) and the relevance per region. Shared by the books of one lineage
    (:func:`small_sums`); nothing in it is written once made (its arrays are read-only)."""

    FEATURES_KEPT = 16  # minutes whose features are kept (the oldest made goes first)

    def __init__(self, book: StoryBook, p: RankParams, live: np.ndarray, recent: np.ndarray, sums: PairSums):
        self.config, self.registry, self.p = book.config, book.registry, p
        self.live, self.recent, self.sums = _frozen(live.copy()), _frozen(recent), sums
        for name in ("sp_ok", "sp_w", "auth_recent", "auth_all", "pub_count"):
            _frozen(getattr(sums, name))
        sums.shared = self
        self.feats: dict[int, Features] = {}
        self.rels: dict[int, Relevance] = {}
        self.rows = 0  # its weight in SharedSums' budget

    def matches(self, book: StoryBook, p: RankParams, live: np.ndarray, recent: np.ndarray) -> bool:
        return (
            self.p is p
            and self.config is book.config
            and self.registry is book.registry
            and np.array_equal(self.live, live)
            and np.array_equal(self.recent, recent)
        )

    def features(self, book: StoryBook, now: int) -> Features:
        """:func:`~.scoring.features` at ``now`` from these sums and live stories (``book``: one of the lineage)."""
        with SHARED_LOCK:
            return self._features(book, now)

    def _features(self, book: StoryBook, now: int) -> Features:
        f = self.feats.get(now)
        if f is None:
            if len(self.feats) >= self.FEATURES_KEPT:
                del self.feats[next(iter(self.feats))]
            f = features(book, now, self.p, self.sums, self.live)
            f.prim = f.prim.copy()  # a view of the book's column, which its next fold may change
            for name in ("prim", "coverage", "velocity", "freshness", "base", "n30"):
                _frozen(getattr(f, name))
            self.feats[now] = f
        return f

    def relevance(self, book: StoryBook, f: Features, region: str) -> Relevance:
        """:func:`~.scoring.relevance` for ``region`` (it reads the tables and the sums, through any ``f`` of
        these sums), with the region's pair rows."""
        with SHARED_LOCK:
            return self._relevance(book, f, region)

    def _relevance(self, book: StoryBook, f: Features, region: str) -> Relevance:
        r = book.region_index.get(region, -2)
        rel = self.rels.get(r)
        if rel is None:
            rel = self.rels[r] = relevance(book, f, region)
            rel.region_pairs = np.flatnonzero(book.pairs.region[: book.pairs.size] == r)
            for name in ("local", "intl", "geo", "local_geo", "domestic", "rel", "region_pairs"):
                _frozen(getattr(rel, name))
        return rel


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


class SharedSums:
    """The :class:`SmallSums` of every lineage (and parameters), least recently used first, within a budget of
    rows. A replay runs each edition's whole minute chain in one timer firing (transforms/editions/beam/ranking.py),
    so an edition finds its language's sums made by the edition before it a month of minutes earlier: the budget
    holds a month of a quiet replay's small books (the month of benchmarks/snapshots_offline.py: ~500 lineages of
    a few dozen stories), and a larger input shares what fits."""

    ROWS = 1_000_000  # story rows (times the minutes whose features an entry keeps) and pair rows: ~50 MB at most

    def __init__(self) -> None:
        self.by_key: dict[tuple, list] = {}  # (lineage, id of the parameters) -> its SmallSums, the newest last
        self.rows = 0

    def find(self, book: StoryBook, now: int, p: RankParams, live: np.ndarray) -> SmallSums:
        with SHARED_LOCK:
            return self._find(book, now, p, live)

    def _find(self, book: StoryBook, now: int, p: RankParams, live: np.ndarray) -> SmallSums:
        recent = book.pairs.latest_first_seen[: book.pairs.size] >= now - p.coverage_window_ms
        key = (book.lineage, id(p))
        kept = self.by_key.pop(key, [])
        self.by_key[key] = kept  # the most recently used last
        for entry in reversed(kept):
            if entry.matches(book, p, live, recent):
                return entry
        entry = SmallSums(book, p, live, recent, pair_sums(book, live, now, p))
        entry.rows = book.stories.size * (SmallSums.FEATURES_KEPT + 1) + book.pairs.size
        self.rows += entry.rows
        if len(kept) >= 4:  # editions of the lineage skip to different minutes: other live stories
            self.rows -= kept.pop(0).rows
        kept.append(entry)
        while self.rows > self.ROWS and len(self.by_key) > 1:
            self.rows -= sum(e.rows for e in self.by_key.pop(next(iter(self.by_key))))
        return entry


SHARED_SUMS = SharedSums()


def small_sums(book: StoryBook, now: int, p: RankParams, live: np.ndarray) -> SmallSums:
    """The :class:`SmallSums` of a small book at ``now`` (``live``: its live stories then): the ones made for a book
    of the same lineage, config, registry and parameters with the same live stories and pairs within the coverage
    window, else made now."""
    return SHARED_SUMS.find(book, now, p, live)


class SharedOrders:
    """The article orders of small books' candidates (:func:`~.representatives.article_order`), shared by the editions
    whose books have the same lineage: it reads the tables, the candidate rows, the primary sections, the capped
    groups, the parameters and, of the region, only which publishers are local (the local boost), so editions of
    regions without a publisher among the candidates (most English editions of a quiet replay) share one order as
    well. The least recently used go first; nothing in them is written once made (read-only arrays)."""

    KEPT = 4096  # orders (a few candidates' articles each: small books)

    def __init__(self) -> None:
        self.by_key: dict[tuple, tuple] = {}

    def find(self, book: StoryBook, rows: np.ndarray, region: str, capped: set, p, prim: np.ndarray) -> ArticleOrder:
        with SHARED_LOCK:
            return self._find(book, rows, region, capped, p, prim)

    def _find(self, book: StoryBook, rows: np.ndarray, region: str, capped: set, p, prim: np.ndarray) -> ArticleOrder:
        r = book.region_index.get(region, -2)
        local = np.flatnonzero(book.publishers.region[: book.publishers.size] == r)
        key = (book.lineage, id(p), rows.tobytes(), local.tobytes(), tuple(sorted(capped)))
        hit = self.by_key.pop(key, None)
        same = hit is not None and hit[0] is book.config and hit[1] is book.registry and hit[2] is p
        if not (same and np.array_equal(hit[3], prim)):
            order = article_order(book, rows, region, capped, p, prim)
            for name in ("rows", "ordered", "scores", "starts", "lens", "near", "near_free", "group_ids", "pos"):
                getattr(order, name).flags.writeable = False
            hit = (book.config, book.registry, p, _frozen(prim.copy()), order)
        self.by_key[key] = hit  # the most recently used last
        if len(self.by_key) > self.KEPT:
            del self.by_key[next(iter(self.by_key))]
        return hit[4]


SHARED_ORDERS = SharedOrders()


def _fit(arr: np.ndarray, n: int) -> np.ndarray:
    """``arr`` with room for ``n`` rows (doubling, new rows zero)."""
    if arr.shape[0] >= n:
        return arr
    out = np.zeros(max(n, 2 * arr.shape[0]), arr.dtype)
    out[: arr.shape[0]] = arr
    return out


class KeptFeatures:
    """Per edition (in its :class:`~.context.CycleCache`): the pair and region sums of its last cycle and the
    columns they were computed from (module docstring). :meth:`features` then :meth:`relevance`, once per cycle."""

    def __init__(self) -> None:
        self.book: StoryBook | None = None
        self.key: tuple = ()
        self.now = 0
        self.dirty: np.ndarray | None = None  # story rows recomputed this cycle (None: every story)
        self.pairs_done: np.ndarray | None = None  # their pair rows, ascending
        self.f: Features | None = None
        self.region: int | None = None  # of the kept region sums
        self.cycles = 0  # calls of features()
        self.region_cycle = -1  # the call whose dirty rows the region sums took in
        self.small: SmallSums | None = None  # a small book's sums at the last cycle
        self.order: tuple | None = None  # (book, (book_state, region, capped), params, ArticleOrder): the last

    # ------------------------------------------------------------------ features
    def features(self, book: StoryBook, now: int, p: RankParams) -> Features:
        live = book.live_mask(now, p.live_window_ms)
        if book.pairs.size < SMALL_BOOK_PAIRS:  # a full pass, no columns kept: the next large cycle starts afresh
            self.book, self.dirty, self.now = None, None, now
            self.cycles += 1
            self.small = small_sums(book, now, p, live)
            self.f = self.small.features(book, now)
            return self.f
        key = (id(book.registry), p)
        if self.book is not book or self.key != key or now < self.now or book.stories.size < self.n:
            self._start(book, key, now, p, live)
        else:
            self._update(book, now, p, live)
        self.now = now
        self.cycles += 1
        n, ns = book.stories.size, book.pairs.size
        sums = PairSums(self.sp_ok[:ns], self.sp_w[:ns], self.auth_recent[:n], self.auth_all[:n], self.pub_count[:n])
        self.f = features(book, now, p, sums, live)
        return self.f

    def _start(self, book: StoryBook, key: tuple, now: int, p: RankParams, live: np.ndarray) -> None:
        s = pair_sums(book, live, now, p)
        self.book, self.key, self.region = book, key, None
        self.sp_ok, self.sp_w = s.sp_ok.copy(), s.sp_w.copy()
        self.auth_recent, self.auth_all, self.pub_count = s.auth_recent, s.auth_all, s.pub_count
        self.dirty = self.pairs_done = None
        self._copy_inputs(book, live)

    def _copy_inputs(self, book: StoryBook, live: np.ndarray) -> None:
        """What the next cycle compares with: the columns the sums are made of."""
        n, ns, nm = book.stories.size, book.pairs.size, book.mentions.size
        self.n, self.ns, self.nm = n, ns, nm
        self.live, self.prim = live.copy(), book.primary_sections().copy()
        self.p_live, self.p_seen = book.pairs.live[:ns].copy(), book.pairs.latest_first_seen[:ns].copy()
        m = book.mentions
        self.m_live, self.m_count, self.m_local = m.live[:nm].copy(), m.count[:nm].copy(), m.local_count[:nm].copy()

    def _changed(self, book: StoryBook, now: int, p: RankParams, live: np.ndarray):
        """(story rows whose sums may differ since the last cycle, pair rows that changed, mention rows that
        changed), each ascending."""
        n0, ns0, nm0 = self.n, self.ns, self.nm
        n, ns, nm = book.stories.size, book.pairs.size, book.mentions.size
        pairs, m = book.pairs, book.mentions
        seen = pairs.latest_first_seen[:ns0]
        lo, hi = sorted((self.now - p.coverage_window_ms, now - p.coverage_window_ms))
        pair_rows = np.flatnonzero((pairs.live[:ns0] != self.p_live) | (seen != self.p_seen))
        crossing = np.flatnonzero((seen >= lo) & (seen < hi))  # left (or entered) the coverage window
        m_rows = np.flatnonzero(
            (m.live[:nm0] != self.m_live) | (m.count[:nm0] != self.m_count) | (m.local_count[:nm0] != self.m_local)
        )
        new_p, new_m = np.arange(ns0, ns), np.arange(nm0, nm)
        pair_rows = np.concatenate([pair_rows, new_p])
        parts = [
            np.flatnonzero((live[:n0] != self.live) | (book.primary_sections()[:n0] != self.prim)),
            np.arange(n0, n),
            pairs.story[pair_rows],
            pairs.story[crossing],
            m.story[m_rows],
            m.story[new_m],
        ]
        self.new_pairs = new_p
        return unique_ints(np.concatenate(parts).astype(np.int64)), pair_rows, np.concatenate([m_rows, new_m])

    def _update(self, book: StoryBook, now: int, p: RankParams, live: np.ndarray) -> None:
        dirty, pair_rows, m_rows = self._changed(book, now, p, live)
        n, ns = book.stories.size, book.pairs.size
        for name, size in (("sp_ok", ns), ("sp_w", ns), ("auth_recent", n), ("auth_all", n), ("pub_count", n)):
            setattr(self, name, _fit(getattr(self, name), size))
        sel = unique_ints(np.concatenate([book.pair_rows_of(dirty), pair_rows]))  # a dead pair adds 0.0, ok False
        slot = np.searchsorted(dirty, book.pairs.story[sel])
        s = pair_sums(book, live, now, p, sel, slot, dirty.size)
        self.sp_ok[sel], self.sp_w[sel] = s.sp_ok, s.sp_w
        self.auth_recent[dirty], self.auth_all[dirty], self.pub_count[dirty] = s.auth_recent, s.auth_all, s.pub_count
        self.dirty, self.pairs_done = dirty, sel
        self.m_done = unique_ints(np.concatenate([book.mention_rows_of(dirty), m_rows]))
        self._copy_inputs(book, live)

    # ------------------------------------------------------------------ relevance
    def relevance(self, book: StoryBook, f: Features, region: str) -> Relevance:
        """The edition's relevance at the cycle of ``f`` (the last :meth:`features`)."""
        r = book.region_index.get(region, -2)
        n = book.stories.size
        caught_up = self.region_cycle == self.cycles - 1  # took in every earlier cycle's changes
        self.region_cycle = self.cycles
        small = self.small
        if self.book is None and f is self.f and small is not None and f.sp_w is small.sums.sp_w:
            return small.relevance(book, f, region)  # a small book's cycle: its relevance's inputs are the sums'
        if f is not self.f or self.dirty is None or self.region != r or not caught_up:
            s = region_sums(book, f.sp_w, r)
            self.region = r
            self.region_pairs = np.flatnonzero(book.pairs.region[: book.pairs.size] == r)
            self.local, self.intl, self.mentions, self.local_mentions = s.local, s.intl, s.mentions, s.local_mentions
        else:
            dirty, sel, msel = self.dirty, self.pairs_done, self.m_done
            slot = np.searchsorted(dirty, book.pairs.story[sel])
            mslot = np.searchsorted(dirty, book.mentions.story[msel])
            s = region_sums(book, f.sp_w[sel], r, sel, (slot, mslot), msel, dirty.size)
            new = self.new_pairs
            self.region_pairs = np.concatenate([self.region_pairs, new[book.pairs.region[new] == r]])
            for name in ("local", "intl", "mentions", "local_mentions"):
                arr = _fit(getattr(self, name), n)
                arr[dirty] = getattr(s, name)
                setattr(self, name, arr)
        sums = RegionSums(self.local[:n], self.intl[:n], self.mentions[:n], self.local_mentions[:n])
        rel = relevance(book, f, region, sums)
        rel.region_pairs = self.region_pairs  # the local reserve's city publishers are among them (scoring.py)
        return rel

    # ------------------------------------------------------------------ representatives
    def article_order(self, book: StoryBook, rows: np.ndarray, region: str, capped: set, p, prim) -> ArticleOrder:
        """:func:`~.representatives.article_order`, the last cycle's when the book, the candidate rows, the region,
        the capped groups and the parameters are the same (it reads no clock)."""
        key = (book_state(book), region, tuple(sorted(capped)))
        last = self.order
        same = last is not None and last[0] is book and last[1] == key and last[2] is p
        if same and np.array_equal(last[3].rows, rows):
            return last[3]
        if book.pairs.size < SMALL_BOOK_PAIRS:
            order = SHARED_ORDERS.find(book, rows, region, capped, p, prim)
        else:
            order = article_order(book, rows, region, capped, p, prim)
        self.order = (book, key, p, order)
        return order
