"""The section candidates looked for on a shortlist of the best raw scores (scoring.Shortlist) are exactly the ones a
pass over every story gives, whether the shortlist decides or the section falls back to the whole book."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.cycle import scoring
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams
from transforms.publishers import default_registry


@pytest.mark.parametrize("seed", [3, 11])
def test_section_candidates_from_the_shortlist_equal_a_pass_over_every_story(world, monkeypatch, seed):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    world.randomise(seed=seed, stories=150, start=T - 6 * HOUR, end=T + 20 * MIN, near_duplicates=10)
    config = load_config()
    p = replace(RankParams.from_config(config), section_candidates=6)
    book = StoryBook(config, default_registry(), "en")
    for e in sorted((compact_change(c) for c in world.changes), key=event_sort_key):
        if e["at"] < T + 20 * MIN:
            book.apply(e)
    book.flush()
    now = T + 20 * MIN
    paths, seen = [], set()
    fits = scoring.section_fits

    def recording_fits(*args, **kw):
        paths.append("shortlist" if len(args) > 5 or kw.get("rows") is not None else "every story")
        return fits(*args, **kw)

    monkeypatch.setattr(scoring, "section_fits", recording_fits)
    for edition in ("us-en", "gb-en"):
        ed = config.edition(edition)
        f = scoring.features(book, now, p)
        monkeypatch.setattr(scoring, "SHORTLIST", 10**9)  # no shortlist: every section over every story
        paths.clear()
        whole, _ = scoring.select_candidates(book, f, ed, config, p)
        assert "shortlist" not in paths
        for size in (25, 40):
            paths.clear()
            monkeypatch.setattr(scoring, "SHORTLIST", size)
            short, _ = scoring.select_candidates(book, scoring.features(book, now, p), ed, config, p)
            assert "shortlist" in paths
            seen |= set(paths)
            assert np.array_equal(short.rows, whole.rows) and np.array_equal(short.raw, whole.raw)
            for sec in ed.sections:
                assert np.array_equal(short.sections[sec][0], whole.sections[sec][0]), (edition, size, sec)
                assert np.array_equal(short.sections[sec][1], whole.sections[sec][1]), (edition, size, sec)
    # both paths ran: sections decided on the shortlist, and sections that had to look at every story
    assert seen == {"shortlist", "every story"}


def test_the_pool_from_the_shortlist_equals_a_pass_over_every_story(world, monkeypatch):
    """The national pool is taken on the shortlist when its last story beats every story left out (Shortlist.top_k),
    else over every story: the same rows in the same order either way (and both ways are taken here)."""
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    world.randomise(seed=5, stories=150, start=T - 6 * HOUR, end=T + 20 * MIN, near_duplicates=10)
    config = load_config()
    book = StoryBook(config, default_registry(), "en")
    for e in sorted((compact_change(c) for c in world.changes), key=event_sort_key):
        if e["at"] < T + 20 * MIN:
            book.apply(e)
    book.flush()
    now, ed, decided = T + 20 * MIN, config.edition("us-en"), set()
    top_k = scoring.top_k

    def recording_top_k(scores, ids, k, eligible=None):
        if eligible is None and k in (8, 30):
            decided.add("shortlist" if scores.size == scoring.SHORTLIST else "every story")
        return top_k(scores, ids, k, eligible)

    monkeypatch.setattr(scoring, "top_k", recording_top_k)
    for pool_size in (8, 30):
        p = replace(RankParams.from_config(config), pool_size=pool_size, local_candidates=0)
        f = scoring.features(book, now, p)
        monkeypatch.setattr(scoring, "SHORTLIST", 10**9)
        whole, _ = scoring.select_candidates(book, f, ed, config, p)
        monkeypatch.setattr(scoring, "SHORTLIST", 25)
        short, _ = scoring.select_candidates(book, scoring.features(book, now, p), ed, config, p)
        assert whole.pool.size == pool_size
        assert np.array_equal(short.pool, whole.pool) and np.array_equal(short.rows, whole.rows)
    assert decided == {"shortlist", "every story"}


def test_top_k_of_every_row_at_once_is_top_k_of_each_row_ties_and_all():
    """scoring.top_k_rows (every section of an edition by one sort) gives each row's scoring.top_k: the same
    indices in the same order, with ties at the k-th score, scores not positive, rows with fewer than k and k 0."""
    rng = np.random.default_rng(7)
    for stories, sections in ((0, 3), (1, 1), (5, 12), (40, 12), (300, 4)):
        ids = rng.permutation(10 * stories + 1)[:stories].astype(np.int64)
        scores = np.round(rng.normal(0.2, 1.0, (sections, stories)), 1)  # many ties and many non-positive scores
        eligible = rng.random((sections, stories)) < 0.7
        for k in (0, 1, 3, 8, 60):
            got = scoring.top_k_rows(scores, ids, k, eligible)
            assert len(got) == sections
            for i in range(sections):
                want = scoring.top_k(scores[i], ids, k, eligible[i])
                assert got[i].dtype == want.dtype and np.array_equal(got[i], want), (stories, k, i)
