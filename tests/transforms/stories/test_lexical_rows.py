"""The writer's fast lexical and dense paths give the very bits of the plain arithmetic they replace.

Pinned here: a member's unit rows (:meth:`LexicalStats.unit_rows`) against the TF-IDF dicts of ``article_vectors``;
an article's dot products with a story profile (:meth:`LexicalStats.profile_dots`) against ``dot`` over
``profile``; the linkage sums, the pair matrix and the dense sum against loops over dicts and ``np.sum``; and a whole
writer run (joins, repairs, explanations) against one that uses only the plain arithmetic.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from tests.transforms.stories.synth import TEST_CONFIG, make_articles
from transforms.stories.writer.cluster import ClusterConfig, StoryClusterer
from transforms.stories.writer.lexical import LexicalStats, _unit, dot
from transforms.stories.writer.state import Member, Story, recompute_centroid, recompute_centroids


def _articles(headlines: bool, seed: int = 11, noise: float = 0.35, gap_ms: int = 40 * 60_000):
    """Synthetic articles with varied term counts (so 1 + log tf is not always 1); ``headlines``: no bodies, and
    a third of the times unknown (the average-linkage merges of headline-only stories)."""
    arts, _ = make_articles(n_events=8, per_event=14, seed=seed, spread_ms=3 * 3_600_000, gap_ms=gap_ms, noise=noise)
    rng = np.random.default_rng(seed)
    out = []
    for i, a in enumerate(arts):
        tf = tuple(int(x) for x in rng.integers(1, 4, len(a.terms)))
        known = not (headlines and i % 3 == 0)
        out.append(dataclasses.replace(a, term_tf=tf, has_body=not headlines, time_known=known))
    return out


def _plain_vectors(lex: LexicalStats, m) -> tuple[dict, dict]:
    """A counted member's TF-IDF unit vectors written out: (1 + log tf) x log(N / (df + 1)), then unit length."""
    n = lex.n_docs + lex.config.idf_prior
    tv = {t: (1.0 + math.log(c)) * math.log(n / (lex.df.get(t, 0) + 1.0)) for t, c in zip(m.terms, m.term_tf)}
    ev = {e: math.log(n / (lex.edf.get(e, 0) + 1.0)) for e in m.entities}
    return _unit(tv), _unit(ev)


class _PlainLex(LexicalStats):
    """The statistics with the straightforward arithmetic: rows from the dicts, dots over whole profiles."""

    def unit_rows(self, m):
        return tuple((tuple(v), np.array(list(v.values()), dtype=np.float64)) for v in _plain_vectors(self, m))

    def unit_rows_of(self, ms):
        return [self.unit_rows(m) for m in ms]

    def profile_dots(self, s, vecs):
        st, se = self.profile(s)
        return dot(vecs[0], st), dot(vecs[1], se)


def _plain_dense_sum(self: Story) -> np.ndarray:
    ms = sorted(self.originals, key=lambda m: m.article_id)
    return np.sum(np.stack([m.vector.astype(np.float64) for m in ms]), axis=0)


def _plain_centroid(self: Story) -> np.ndarray:
    n = float(np.linalg.norm(self.csum))
    return (self.csum / n) if n > 0 else self.csum


def _writer(config: ClusterConfig, plain: bool) -> StoryClusterer:
    w = StoryClusterer("en", model="test", config=config, explain=True)
    if plain:
        w.state.lex = w.state.scorer.lex = _PlainLex(config)
    return w


def _live_writer(headlines: bool) -> StoryClusterer:
    """A writer stopped halfway through its stream (live stories, several members each, repairs done)."""
    arts = _articles(headlines)
    config = ClusterConfig() if headlines else TEST_CONFIG
    w = _writer(config, plain=False)
    for a in arts:
        w.add(a)
    w.advance(sorted(a.first_seen_at for a in arts)[len(arts) // 2])
    assert sum(s.n >= 3 for s in w.stories.values()) >= 3
    return w


@pytest.mark.parametrize("headlines", [False, True])
def test_unit_rows_are_the_tfidf_dicts_bit_for_bit(headlines):
    w = _live_writer(headlines)
    members = [m for s in w.stories.values() for m in s.originals]
    assert any(max(m.term_tf) > 1 for m in members)
    w.lex.df_version += 1  # nothing kept: the first call computes every member's rows in one batch
    for m, rows in zip(members, w.lex.unit_rows_of(members)):
        assert tuple(dict(zip(k, v.tolist())) for k, v in rows) == _plain_vectors(w.lex, m)
    w.lex.df_version += 1  # and one by one
    for m in members:
        rows = w.lex.unit_rows(m)
        assert tuple(dict(zip(k, v.tolist())) for k, v in rows) == _plain_vectors(w.lex, m)
        assert w.lex.member_vectors(m) == _plain_vectors(w.lex, m)


@pytest.mark.parametrize("headlines", [False, True])
def test_profile_dots_equal_dots_with_the_whole_profile(headlines):
    w = _live_writer(headlines)
    probes = _articles(headlines, seed=12)[:20]
    checked = 0
    for f in probes:
        vecs = w.lex.article_vectors(f.terms, f.term_tf, f.entities, counted=False)
        for s in w.stories.values():
            st, se = w.lex.profile(s)
            got = w.lex.profile_dots(s, vecs)
            assert got == (dot(vecs[0], st), dot(vecs[1], se))
            checked += got != (0.0, 0.0)
    assert checked > 0  # some probes share keys with some profiles


@pytest.mark.parametrize("headlines", [False, True])
def test_linkage_sums_and_pair_matrix_equal_the_loops(headlines):
    w = _live_writer(headlines)
    for s in w.stories.values():
        if s.n < 2:
            continue
        ms = sorted(s.originals, key=lambda m: m.article_id)
        vecs = [_plain_vectors(w.lex, m) for m in ms]
        tsum: dict = {}
        esum: dict = {}
        for tv, ev in vecs:
            for total, vec in ((tsum, tv), (esum, ev)):
                for k, x in vec.items():
                    total[k] = total.get(k, 0.0) + x
        dv, ts, es, n = w.scorer.linkage_sums(s, {})
        assert np.array_equal(dv, _plain_dense_sum(s))
        assert (ts, es, n) == (tsum, esum, len(ms))
        keys_t = sorted({k for tv, _ in vecs for k in tv})
        keys_e = sorted({k for _, ev in vecs for k in ev})
        T = np.zeros((len(ms), max(len(keys_t), 1)))
        E = np.zeros((len(ms), max(len(keys_e), 1)))
        for i, (tv, ev) in enumerate(vecs):
            for k, x in tv.items():
                T[i, keys_t.index(k)] = x
            for k, x in ev.items():
                E[i, keys_e.index(k)] = x
        V = np.stack([m.vector.astype(np.float64) for m in ms])
        plain = V @ V.T + w.config.w_entity * (E @ E.T) + w.config.w_lexical * (T @ T.T)
        assert np.array_equal(w.scorer.pair_matrix(ms), plain)
        assert np.array_equal(w.scorer.pair_matrix(ms, s), plain)  # from the unit rows the story keeps


def test_dense_sum_follows_members_in_any_order_of_arrival():
    arts = _articles(headlines=False)
    s = Story(1, "en", csum=arts[0].vector.astype(np.float64), ct=arts[0].first_seen_at)
    rng = np.random.default_rng(3)
    for a in (arts[i] for i in rng.permutation(len(arts))[:60]):  # ids in every order: the sum re-adds in id order
        s.add(Member.from_features(a, is_copy=False, seq=0))
        assert np.array_equal(s.dense_sum(), _plain_dense_sum(s))
    before = s.centroid()
    s.csum = s.csum * 0.5
    assert np.array_equal(s.centroid(), _plain_centroid(s)) and s.centroid() is not before


@pytest.mark.parametrize("headlines", [False, True])
def test_a_writer_decides_as_with_the_plain_arithmetic(headlines, monkeypatch):
    # Noisy events close in time. Headlines under a high join bar: fragments that average linkage merges. Bodies
    # under a low one: stories that mix and that the re-clustering splits (bisections are tried on the way).
    arts = _articles(headlines, seed=21, noise=0.8, gap_ms=5 * 60_000)
    if headlines:
        config = dataclasses.replace(ClusterConfig(), join_headline=1.3)
    else:
        config = dataclasses.replace(TEST_CONFIG, join=0.3)
    fast = _writer(config, plain=False)
    got = [json.dumps(o.to_dict(), sort_keys=True) for o in fast.run(arts)]
    monkeypatch.setattr(Story, "dense_sum", _plain_dense_sum)
    monkeypatch.setattr(Story, "centroid", _plain_centroid)
    plain = _writer(config, plain=True)
    want = [json.dumps(o.to_dict(), sort_keys=True) for o in plain.run(arts)]
    assert plain.stats["join"] > 0 and plain.stats["repair_ticks"] > 0
    assert plain.stats["merge"] + plain.stats["split"] > 0  # the repair paths ran
    assert got == want


def test_centroid_sums_of_many_groups_equal_one_at_a_time():
    arts = _articles(headlines=False)
    members = [Member.from_features(a, is_copy=i % 7 == 0, seq=0) for i, a in enumerate(arts[:60])]
    for m in members[::5]:
        m.at = members[0].at  # ties in time: (at, id) order
    rng = np.random.default_rng(5)
    groups = [[m for m in members if rng.random() < 0.4] for _ in range(12)] + [members[:1], members[1:2]]
    groups = [g for g in groups if g]
    half_life = TEST_CONFIG.half_life_ms
    for (got, t), g in zip(recompute_centroids(groups, half_life), groups):
        want, want_t = recompute_centroid(g, half_life)
        assert np.array_equal(got, want) and t == want_t


def _plain_sums(lex: LexicalStats, s: Story) -> tuple[dict, dict]:
    tsum: dict = {}
    esum: dict = {}
    for m in sorted(s.originals, key=lambda m: m.article_id):
        for total, vec in zip((tsum, esum), _plain_vectors(lex, m)):
            for k, x in vec.items():
                total[k] = total.get(k, 0.0) + x
    return tsum, esum


def test_story_sums_kept_across_ticks_follow_members_and_idf_in_any_order_of_arrival():
    """The sums' layout a story keeps from tick to tick (members in id order, then one out of order, the IDF moving
    with every article, the story pickled and restored half way) gives the bits of the plain sums at every step,
    and so do the originals in id order and the latest originals it keeps."""
    import pickle

    arts = _articles(headlines=True)
    lex = LexicalStats(ClusterConfig())
    s = Story(1, "en", csum=arts[0].vector.astype(np.float64), ct=arts[0].first_seen_at)
    order = list(range(40)) + [45, 41, 44]  # ids rise, then one arrives before a later one (a rebuilt layout)
    for step, i in enumerate(order):
        m = Member.from_features(arts[i], is_copy=False, seq=0)
        lex.count(m, +1)
        lex.count(Member.from_features(arts[60 + step], is_copy=False, seq=0), +1)  # the IDF moves between ticks
        s.add(m)
        if step == 20:
            s = pickle.loads(pickle.dumps(s))
        got = lex.story_sums(s, s.originals_by_id())
        assert got == _plain_sums(lex, s)
        assert s.originals_by_id() == sorted(s.originals, key=lambda m: m.article_id)
        assert s.latest_originals() == sorted(s.originals, key=lambda m: (m.at, m.article_id))[-16:]


def _columns_hold_the_dfs(lex: LexicalStats) -> None:
    for kind, df in enumerate((lex.df, lex.edf)):
        for k, c in lex.columns.cols[kind].items():
            assert lex.columns.dfs[c] == df.get(k, 0), (kind, k)


def test_idf_by_df_follows_every_df_and_n_across_ticks():
    """The repair reads a story's IDF values from a table of log(n / (df + 1)) by df, kept while n stands still
    (LexicalStats._idf_by_column): the sums stay the plain ones bit for bit when n moves, when n comes back to a value
    it had while dfs moved (one article counted, another expired: a table kept by n read by the old dfs would be
    stale), when a key's df falls to 0 and when the key columns are renumbered; the columns' dfs are the df counts."""
    arts = _articles(headlines=True)
    lex = LexicalStats(ClusterConfig())
    s = Story(1, "en", csum=arts[0].vector.astype(np.float64), ct=arts[0].first_seen_at)
    others = [Member.from_features(a, is_copy=False, seq=0) for a in arts[40:]]
    for i in range(30):
        m = Member.from_features(arts[i], is_copy=False, seq=0)
        lex.count(m, +1)
        s.add(m)
    for o in others[:20]:
        lex.count(o, +1)
    assert lex.story_sums(s, s.originals_by_id()) == _plain_sums(lex, s)
    n0 = lex.n_docs
    for i in range(20):  # n back where it was after each pair, the dfs of the keys they hold moved
        lex.count(others[20 + i], +1)
        lex.count(others[i], -1)
        assert lex.n_docs == n0
        _columns_hold_the_dfs(lex)
        assert lex.story_sums(s, s.originals_by_id()) == _plain_sums(lex, s)
    assert any(k not in lex.df for o in others[:20] for k in o.terms)  # some keys' df fell to 0
    lex.columns.renumber((lex.ldf, lex.ledf), (lex.df, lex.edf))
    _columns_hold_the_dfs(lex)
    lex.count(others[0], +1)
    assert lex.story_sums(s, s.originals_by_id()) == _plain_sums(lex, s)


def test_row_norms_are_the_fsum_norms_bit_for_bit():
    """The vectorised norms (extended-precision sums, ``fsum`` where their rounding is not sure) against
    ``sqrt(fsum(squares))`` row by row: random rows of many magnitudes, empty rows, and rows whose exact sum lies
    on or next to a rounding boundary of float64 (where a plain double or extended sum can round the other way)."""
    from transforms.stories.writer.lexical import row_norms

    rng = np.random.default_rng(5)
    rows = [list(rng.random(k) * 10.0 ** rng.integers(-3, 4)) for k in rng.integers(0, 40, 400)]
    tie = 2.0**-26.5  # its square is 2^-53: 1 + 2^-53 is halfway between two float64s
    rows += [[], [1.0, tie], [1.0, tie, tie], [1.0, tie * 1.0000001], [1.0] + [tie] * 7, [3.0, 4.0], []]
    lens = np.array([len(r) for r in rows], dtype=np.intp)
    w = np.array([x for r in rows for x in r], dtype=np.float64)
    want = [math.sqrt(math.fsum((np.array(r, dtype=np.float64) ** 2).tolist())) for r in rows]
    assert row_norms(w, lens).tolist() == want


def test_a_merge_told_surely_below_without_sums_has_a_negative_margin():
    """The merge pass skips a headline pair whose margin, with the TF-IDF cosines bounded by shared key counts, is
    below 0 (Scorer.surely_below): every such pair's exact margin is below 0 (a skipped pair was never a merge),
    and the bound skips some of them (the headline stories of a writer stopped halfway, every pair of them)."""
    w = _live_writer(headlines=True)
    stories = [s for s in w.stories.values() if s.n]
    told = below = 0
    for a in stories:
        for b in stories:
            if a is b:
                continue
            margin = w.scorer.merge_margin(a, b, {})
            below += margin < 0
            if w.scorer.surely_below(a, b, {}):
                told += 1
                assert margin < 0
    assert 0 < told <= below


def test_places_mean_kept_per_ordered_pair_of_story_objects():
    """A merge pass keeps each pair's places feature (scoring.places_mean with its cache) for the pair's merge
    margin after its surely-below check: a hit is the very value computed without the cache, for the same two objects
    in the same order only; a merged group's shadow (a new object, its id 0 like every shadow's) and the reversed
    pair are computed anew."""
    from transforms.stories.writer.scoring import places_mean

    arts = _articles(headlines=True)
    where = ["gn:1>gn:9", "gn:2>gn:9", "gn:3>gn:8", "@monroe"]

    def story(sid, idx):
        s = Story(sid, "en", csum=arts[idx[0]].vector.astype(np.float64), ct=arts[idx[0]].first_seen_at)
        for i in idx:
            m = Member.from_features(arts[i], is_copy=False, seq=0)
            s.add(dataclasses.replace(m, places=(where[i % len(where)],)))
        return s

    a, b, a2 = story(0, [0, 1, 2]), story(5, [4, 5, 7]), story(0, [0, 3, 3 + 4])
    cache: dict = {}
    for x, y in ((a, b), (b, a), (a2, b), (a, b), (a2, b)):
        assert places_mean(x, y, cache) == places_mean(x, y)
    assert places_mean(a, b) != places_mean(a2, b)  # the shadow's own value, not the hit of the other id-0 story


def test_story_bounds_hold_every_sum_after_the_idf_moved_either_way_and_originals_joined():
    """LexicalStats.story_bounds bounds each key's sum of a story's unit values under today's IDF by the sums kept
    from the last story_sums: after other articles are counted and expired (dfs up and down: a key's unit value can
    rise as its df falls) and new originals joined, every bound is >= the plain sum (a bound kept from an earlier IDF
    state, or one missing the new originals, fails here), and tighter than the shared-count bound for some keys."""
    arts = _articles(headlines=True)
    lex = LexicalStats(ClusterConfig())
    s = Story(1, "en", csum=arts[0].vector.astype(np.float64), ct=arts[0].first_seen_at)
    others = [Member.from_features(a, is_copy=False, seq=0) for a in arts[60:]]
    pool = sorted(arts[:60], key=lambda a: a.article_id)  # the story's originals arrive in id order
    for o in others[:30]:  # share the story's keys (their df falls when they expire below)
        lex.count(o, +1)
    for i in range(0, 50, 2):
        m = Member.from_features(pool[i], is_copy=False, seq=0)
        lex.count(m, +1)
        s.add(m)
    assert lex.story_bounds(s, s.originals_by_id()) is None  # no sums kept yet
    lex.story_sums(s, s.originals_by_id())
    tighter = 0
    for step in range(24):
        if step % 3 == 0:  # a new original (later ids: the layout grows)
            m = Member.from_features(pool[50 + step // 3], is_copy=False, seq=0)
            lex.count(m, +1)
            s.add(m)
        lex.count(others[step], -1)  # dfs fall: IDF up for the keys it held
        if step % 2:
            lex.count(others[25 + step], +1)
        bounds = lex.story_bounds(s, s.originals_by_id())
        plain = _plain_sums(lex, s)
        for kind, counts in enumerate((s.tf, s.ent)):
            cols, bound = bounds[kind]
            at = dict(zip(cols.tolist(), bound.tolist()))
            for k, x in plain[kind].items():
                got = at[lex.columns.cols[kind][k]]
                assert got >= x, (step, kind, k)
                tighter += got < counts[k]
    assert tighter > 0


def test_story_bounds_refused_where_an_idf_is_not_positive():
    """The bound's ratio argument needs every IDF > 0; with ``idf_prior`` 0 a key every document holds has
    log(n / (df + 1)) < 0, and story_bounds answers None (the merge pass then takes the shared counts) rather than a
    bound from negative ratios."""
    arts = _articles(headlines=True)
    lex = LexicalStats(dataclasses.replace(ClusterConfig(), idf_prior=0.0))
    s = Story(1, "en", csum=arts[0].vector.astype(np.float64), ct=arts[0].first_seen_at)
    for a in sorted(arts[:6], key=lambda a: a.article_id):
        m = Member.from_features(a, is_copy=False, seq=0)
        lex.count(m, +1)
        s.add(m)
    lex.story_sums(s, s.originals_by_id())
    lex.count(Member.from_features(arts[60], is_copy=False, seq=0), +1)  # the IDF moves
    assert min(math.log((lex.n_docs + 0.0) / (d + 1.0)) for d in lex.df.values()) <= 0.0
    assert lex.story_bounds(s, s.originals_by_id()) is None


def test_merges_told_surely_below_by_kept_sums_after_the_idf_moved_have_negative_margins():
    """Scorer.surely_below with the sums kept from an earlier merge pass (story_bounds) after the IDF moved: every
    pair it tells below has an exact margin < 0, and the kept sums tell some pairs the shared counts alone do not."""
    w = _live_writer(headlines=True)
    stories = [s for s in w.stories.values() if s.n]
    for a in stories:  # a merge pass: every story's sums computed (and kept)
        for b in stories:
            if a is not b:
                w.scorer.merge_margin(a, b, {})
    for f in _articles(headlines=True, seed=13)[:30]:  # the IDF moves
        w.lex.count(Member.from_features(f, is_copy=False, seq=0), +1)
    told = told_by_counts = 0
    for a in stories:
        for b in stories:
            if a is b:
                continue
            if w.scorer.surely_below(a, b, {}):
                told += 1
                assert w.scorer.merge_margin(a, b, {}) < 0
            for s in (a, b):
                s._sums.base = None  # the shared counts alone
            told_by_counts += w.scorer.surely_below(a, b, {})
            for s in (a, b):
                w.lex.story_sums(s, s.originals_by_id())  # kept again (today's: the bound is the sums)
    assert told > told_by_counts
