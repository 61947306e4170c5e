"""The decision path's shortcuts give the bits of the plain arithmetic (transforms/stories/writer/profiles.py and
Story.representative): every candidate's profile dots computed together equal ``dot`` over each whole profile, with
stories past the profile's limits (top keys that enter and leave) and after the key columns are renumbered; and the
representative found through a BLAS product and a rounding slack is the one the row-by-row sums pick, near ties and
copies included. Seconds, no model.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.transforms.stories.synth import TEST_CONFIG, make_articles
from transforms.stories.writer import profiles
from transforms.stories.writer.cluster import StoryClusterer
from transforms.stories.writer.lexical import dot
from transforms.stories.writer.state import Member, Story


def _writer_midway(limits: tuple[int, int]) -> tuple[StoryClusterer, list]:
    arts, _ = make_articles(n_events=6, per_event=30, seed=5, noise=0.3)
    config = dataclasses.replace(TEST_CONFIG, profile_terms=limits[0], profile_entities=limits[1])
    w = StoryClusterer("en", model="test", config=config, exact_index=True)
    half = len(arts) // 2
    for a in arts[:half]:
        w.run([a], until=a.first_seen_at)
        for s in w.stories.values():  # profiles kept (and later updated) between the joins
            w.lex.profile(s)
    return w, arts[half:]


def _check_dots(w: StoryClusterer, probes: list) -> int:
    stories = list(w.stories.values())
    nonzero = 0
    for f in probes:
        vecs = w.lex.article_vectors(f.terms, f.term_tf, f.entities, counted=False)
        got = w.lex.profile_dots_many(stories, vecs)
        want = []
        for s in stories:
            st, se = w.lex.profile(s)
            want.append((dot(vecs[0], st), dot(vecs[1], se)))
        assert got == want
        nonzero += sum(g != (0.0, 0.0) for g in got)
    return nonzero


def test_candidate_dots_together_equal_each_whole_profile():
    w, rest = _writer_midway((4, 2))  # small limits: keys enter and leave the top as members join
    assert any(len(s.tf) > 4 for s in w.stories.values())
    assert _check_dots(w, rest[:15]) > 0
    # stale columns on every story: refreshed, same dots
    w.lex.columns.renumber((w.lex.ldf, w.lex.ledf), (w.lex.df, w.lex.edf))
    assert _check_dots(w, rest[15:30]) > 0


def test_top_keys_past_the_limit_equal_ranking_every_key():
    w, _ = _writer_midway((4, 2))
    for s in w.stories.values():
        fresh = Story(s.story_id, s.language, s.csum, s.ct)
        for m in sorted(s.members.values(), key=lambda m: m.article_id):
            fresh.add(m)
        ranked = [
            {k for _, k in sorted((-c, k) for k, c in counts.items())[:limit]}
            for counts, limit in ((s.tf, 4), (s.ent, 2))
        ]
        assert [set(t.keys) for t in profiles.profile_parts(w.lex, s)] == ranked
        assert w.lex.profile(s) == w.lex.profile(fresh)
        assert [set(p) for p in w.lex.profile(s)] == ranked


def _plain_representative(s: Story) -> str:
    rows = sorted(s.members.values(), key=lambda m: m.article_id)
    scores = (np.stack([m.vector for m in rows]).astype(np.float64) * s.centroid()).sum(axis=1)
    if any(not m.is_copy for m in rows):
        scores = np.where([not m.is_copy for m in rows], scores, -np.inf)
    return min(m.article_id for m, x in zip(rows, scores) if x == scores.max())


def _member(aid: str, v: np.ndarray, is_copy: bool = False) -> Member:
    return Member(aid, 0, "src", v.astype(np.float32), ("t",), (1,), (), is_copy=is_copy)


def test_representative_is_the_row_sums_best_near_ties_and_copies_included():
    rng = np.random.default_rng(3)
    checked = 0
    for trial in range(40):
        base = rng.standard_normal(24)
        base /= np.linalg.norm(base)
        s = Story(trial, "en", base.copy(), 0)
        for i in range(int(rng.integers(1, 12))):
            kind = i % 4
            if kind == 0:  # the same vector again: an exact tie, the smallest id wins
                v = base
            elif kind == 1:  # one ulp-scale step away: a near tie only the exact sums tell
                v = base + rng.choice([-1, 1], 24) * 1e-7
            else:
                v = base + 0.2 * rng.standard_normal(24)
            s.add(_member(f"a{rng.integers(10**6):07d}", v / np.linalg.norm(v), is_copy=(i == 3 and trial % 2 == 0)))
            assert s.representative() == _plain_representative(s)
            checked += 1
    assert checked > 100


def test_representative_of_a_grown_story_scores_few_rows_and_picks_the_row_sums_best(monkeypatch):
    """Past REP_INCREMENTAL members a story keeps its last full pass's products (RepBase) and, after a join, scores
    only the rows that can still be the best: the pick stays the row sums' best (exact and near ties, copies,
    centroids that decay and drift), and most calls score a fraction of the rows."""
    from transforms.stories.writer import state

    scored, rows_total = [], []
    kept_score = state.RepBase.score

    def counting(self, mat, *args):
        out = kept_score(self, mat, *args)
        if out is not None:
            scored.append(len(out[0]))
            rows_total.append(len(mat))
        return out

    monkeypatch.setattr(state.RepBase, "score", counting)
    rng = np.random.default_rng(11)
    dim, half_life = 32, 6 * 3_600_000
    for trial in range(2):
        base = rng.standard_normal(dim)
        s = Story(trial, "en", np.zeros(dim), 0)
        vs: list = []
        for i in range(state.REP_INCREMENTAL + 90):
            kind = i % 5
            if kind == 0 and vs:  # the same vector again: an exact tie, the smallest id wins
                v = vs[int(rng.integers(len(vs)))]
            elif kind == 1 and vs:  # a near tie only the exact sums tell
                v = vs[int(rng.integers(len(vs)))] + rng.choice([-1, 1], dim) * 1e-7
            else:
                v = base + float(rng.uniform(0.2, 0.8)) * rng.standard_normal(dim)
            m = _member(f"a{rng.integers(10**6):07d}", v / np.linalg.norm(v), is_copy=i % 13 == 4)
            if not m.is_copy:  # the writer's join: the sum decays to the new article's time, then adds it
                m.at = s.ct + int(rng.integers(0, 3_600_000))
                s.csum, s.ct = s.csum * state.decay(half_life, m.at - s.ct) + m.v64, m.at
            s.add(m)
            assert s.representative() == _plain_representative(s)
    assert len(scored) > 100
    assert sum(scored) < 0.5 * sum(rows_total)  # the point: a join does not rescore every row


def test_representative_follows_a_centroid_that_drifts_to_rows_its_last_full_pass_ranked_low():
    """The kept products bound a row only with the centroid's drift since the full pass: a centroid that turns
    from the ten best rows of that pass towards sixty rows it ranked just below them hands the pick to one of those
    (the ten stay near their products: without the drift in the bound, none of the sixty would be rescored)."""
    from transforms.stories.writer import state

    rng = np.random.default_rng(5)
    dim = 32
    a, b = np.eye(dim)[0], np.eye(dim)[1]
    s = Story(1, "en", a.copy(), 0)
    for i in range(70):
        v = a if i < 10 else a * np.cos(0.1) + b * np.sin(0.1)
        v = v + 1e-3 * rng.standard_normal(dim)
        s.add(_member(f"a{i:04d}", v / np.linalg.norm(v)))
    picks = []
    for theta in np.linspace(0.0, 0.1, 51):
        s.csum = a * np.cos(theta) + b * np.sin(theta)  # a new sum (the writer never changes one in place)
        picks.append(s.representative())
        assert picks[-1] == _plain_representative(s)
    assert isinstance(s._rep, state.RepBase) and picks[0] < "a0010" <= picks[-1]
