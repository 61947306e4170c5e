"""Features and relevance kept across cycles (transforms/editions/cycle/kept.py) are bit for bit the ones a pass over
every story gives, minute after minute through placements, merges, splits, expiries and stories leaving the
coverage and live windows; and a restarted worker (memory pickled, book rebuilt, cache empty) ranks the next minute
exactly like the worker that kept its cache."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tests.transforms.editions.test_ownership_groups import owned_registry
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.cycle import kept as kept_module
from transforms.editions.cycle import scoring
from transforms.editions.cycle.context import CycleCache, CycleContext, EditionMemory
from transforms.editions.cycle.kept import KeptFeatures
from transforms.editions.cycle.run import rank, run_cycle
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams
from transforms.publishers import default_registry

FEATURE_FIELDS = ("live", "prim", "coverage", "velocity", "freshness", "base", "n30", "auth_all", "pub_count")
RELEVANCE_FIELDS = ("local", "intl", "geo", "local_geo", "domestic", "rel")


def busy_world(world):
    """Stories over four hours, with merges, splits, expiries and links among them, and sister sites."""
    T, MIN = world.T0, world.MIN
    world.randomise(seed=5, stories=120, start=T - 3 * world.HOUR, end=T + 40 * MIN)
    ids = sorted(world.centroids)
    for k in range(0, 24, 3):
        world.merge(ids[k], ids[k + 1], T - 20 * MIN + k * MIN)
    by_story: dict[int, list[str]] = {}
    for c in world.changes:
        if c.get("article_id"):
            by_story.setdefault(c["story_id"], []).append(c["article_id"])
    for k in range(30, 40):
        arts = by_story.get(ids[k], [])
        if len(arts) > 1:
            world.split(ids[k], 5000 + k, arts[:1], T + (k - 30) * 2 * MIN)
    for k in range(40, 46):
        world.expire(ids[k], T + k * MIN - 30 * MIN)
    world.link(ids[50], ids[51], T + 5 * MIN)
    return [compact_change(c) for c in world.changes]


def _busy_book(world):
    """The busy world's events in canonical order, the config, rank parameters with short windows (so stories cross
    the coverage window's start and leave the live window during a test) and an empty book to fold them into."""
    events = sorted(busy_world(world), key=event_sort_key)
    config = load_config()
    p = RankParams.from_config(config, coverage_window_h=0.5, live_window_h=2.5)
    registry = owned_registry(("daily-herald", "pacific-times", "london-chronicle"))
    return events, config, p, StoryBook(config, registry, "en")


@pytest.mark.parametrize("small", [0, 300])
def test_kept_sums_equal_a_full_pass_every_minute(world, monkeypatch, small):
    """``small``: the book's pair count below which each cycle adds every pair (kept.SMALL_BOOK_PAIRS): 0, the
    kept path every minute; 300, a full pass while the book is small, then the kept path once it has grown."""
    monkeypatch.setattr(kept_module, "SMALL_BOOK_PAIRS", small)
    T, MIN = world.T0, world.MIN
    events, config, p, book = _busy_book(world)
    kept = {e: KeptFeatures() for e in ("us-en", "gb-en")}
    partial = 0
    k = 0
    # from an empty book, then a gap (an idle chain restarting), then minute by minute
    start = T - 3 * world.HOUR - 2 * MIN
    for now in [*range(start, start + 20 * MIN, MIN), *range(T - 60 * MIN, T + 140 * MIN, MIN)]:
        while k < len(events) and events[k]["at"] < now:
            book.apply(events[k])
            k += 1
        book.flush()
        full = scoring.features(book, now, p)
        for edition, cache in kept.items():
            region = config.edition(edition).region
            f = cache.features(book, now, p)
            for name in FEATURE_FIELDS:
                assert np.array_equal(getattr(f, name), getattr(full, name)), (now, edition, name)
            ns = book.pairs.size
            assert np.array_equal(f.sp_ok[:ns], full.sp_ok) and np.array_equal(f.sp_w[:ns], full.sp_w)
            rel, want = cache.relevance(book, f, region), scoring.relevance(book, full, region)
            for name in RELEVANCE_FIELDS:
                assert np.array_equal(getattr(rel, name), getattr(want, name)), (now, edition, name)
            r = book.region_index[region]
            assert np.array_equal(rel.region_pairs, np.flatnonzero(book.pairs.region[:ns] == r)), (now, edition)
            if cache.dirty is not None and 0 < cache.dirty.size < book.stories.size // 2:
                partial += 1
            assert (book.pairs.size < small) == (cache.book is None), (now, edition)  # the path the size chose
    assert k == len(events)
    assert partial > 100  # the kept path ran (not a full pass each minute) in most cycles of both editions
    assert small == 0 or book.pairs.size > small


def ranker_outputs(out):
    return (out.pages, out.pool, out.coverage)


def test_a_restarted_worker_with_an_empty_cache_ranks_like_the_warm_one(world, monkeypatch):
    """Cycle N after a pickle round trip of the edition's memory, a book rebuilt from the events and an empty
    cache (what a restarted worker has) gives the same documents as cycle N of the worker that kept its cache, and
    so do the minutes after."""
    monkeypatch.setattr(kept_module, "SMALL_BOOK_PAIRS", 0)  # the kept path, whatever the book's size
    T, MIN = world.T0, world.MIN
    events = sorted(busy_world(world), key=event_sort_key)
    config = load_config()
    p = RankParams.from_config(config)
    edition = config.edition("us-en")
    registry = owned_registry()

    def fold(book, now, done):
        while done < len(events) and events[done]["at"] < now:
            book.apply(events[done])
            done += 1
        return done

    warm_book, warm_cache = StoryBook(config, registry, "en"), CycleCache()
    memory, done = EditionMemory(), 0
    restart = T + 10 * MIN
    restarted = None
    compared = 0
    for now in range(T - 12 * MIN, T + 20 * MIN, MIN):
        if now == restart:  # a new worker: memory from state, a book folded from the log, an empty cache
            mem2 = pickle.loads(pickle.dumps(memory))
            book2 = StoryBook(config, registry, "en")
            restarted = (book2, mem2, CycleCache(), fold(book2, now, 0))
        done = fold(warm_book, now, done)
        out = run_cycle(CycleContext(warm_book, edition, config, p, memory, now, warm_cache))
        if restarted is not None:
            book2, mem2, cache2, done2 = restarted
            done2 = fold(book2, now, done2)
            restarted = (book2, mem2, cache2, done2)
            out2 = run_cycle(CycleContext(book2, edition, config, p, mem2, now, cache2))
            assert ranker_outputs(out2) == ranker_outputs(out), now
            assert mem2.prev_pages == memory.prev_pages and mem2.coverage_versions == memory.coverage_versions
            assert np.array_equal(mem2.smoothing.hist, memory.smoothing.hist), now
            compared += 1
    assert compared == 10
    assert warm_cache.features.dirty is not None  # the warm worker ran the kept path


def test_a_small_book_ranks_with_what_it_kept_as_with_an_empty_cache(world, monkeypatch):
    """A small book (under kept.SMALL_BOOK_PAIRS pairs) keeps its pair sums, relevance, section fits and article
    order across the cycles whose book (its lineage, kept.book_state), live stories, coverage window and candidates
    are the same; minute by minute through folds, merges, splits, expiries, both windows and the top of the hour,
    the maths equals the maths of a cycle with an empty cache and no shared sums (and the kept things were
    reused)."""
    T, MIN = world.T0, world.MIN
    events, config, p, book = _busy_book(world)
    edition = config.edition("us-en")
    warm, cache, cold = EditionMemory(), CycleCache(), EditionMemory()
    k, reused = 0, {"sums": 0, "order": 0}
    for now in range(T - 70 * MIN, T + 140 * MIN, MIN):
        while k < len(events) and events[k]["at"] < now:
            book.apply(events[k])
            k += 1
        book.flush()
        last_sums, last_order = cache.features.small, cache.features.order
        a = rank(CycleContext(book, edition, config, p, warm, now, cache))
        shared = kept_module.SHARED_SUMS
        cold_sums = kept_module.SharedSums()  # the cold cycle finds no sums shared by another book
        monkeypatch.setattr(kept_module, "SHARED_SUMS", cold_sums)
        b = rank(CycleContext(book, edition, config, p, cold, now, CycleCache()))
        monkeypatch.setattr(kept_module, "SHARED_SUMS", shared)
        assert book.pairs.size < kept_module.SMALL_BOOK_PAIRS
        reused["sums"] += last_sums is not None and cache.features.small.sums is last_sums.sums
        reused["order"] += last_order is not None and cache.features.order[3] is last_order[3]
        for name in FEATURE_FIELDS:
            assert np.array_equal(getattr(a.f, name), getattr(b.f, name)), (now, name)
        assert np.array_equal(a.forced, b.forced) and np.array_equal(a.smoothed, b.smoothed), now
        for name in ("rows", "raw", "pool", "domestic", "intl"):
            assert np.array_equal(getattr(a.cand, name), getattr(b.cand, name)), (now, name)
        assert a.cand.sections.keys() == b.cand.sections.keys()
        for sec, (rows, fit) in a.cand.sections.items():
            assert np.array_equal(rows, b.cand.sections[sec][0]) and np.array_equal(fit, b.cand.sections[sec][1])
        for name in ("rep", "start", "length", "ordered", "scores", "near"):
            assert np.array_equal(getattr(a.reps, name), getattr(b.reps, name)), (now, name)
    assert k == len(events)
    assert reused["sums"] > 10 and reused["order"] > 20, reused


def test_a_small_books_kept_sums_follow_a_fold_that_moves_nothing_they_compare(world):
    """A fold that changes a story's primary section (an article of a publisher already in the story, labelled
    with another section) leaves its liveness, its pairs and the coverage window as they were, but not the
    authority its pairs weigh: the next cycle's pair sums are computed again (the book's state is in the key)."""
    T, MIN = world.T0, world.MIN
    world.add(1, world.article("daily-herald", T - 20 * MIN, section="business"))
    world.add(2, world.article("pacific-times", T - 15 * MIN, section="world"))
    first, second = [compact_change(c) for c in world.changes], None
    world.add(1, world.article("daily-herald", T + MIN // 2, section="politics"))  # a tie: politics is first
    second = compact_change(world.changes[-1])
    config = load_config()
    p = RankParams.from_config(config)
    book = StoryBook(config, default_registry(), "en")
    for e in first:
        book.apply(e)
    book.flush()
    cache = KeptFeatures()
    before = cache.features(book, T, p)
    book.apply(second)
    book.flush()
    after, want = cache.features(book, T + MIN, p), scoring.features(book, T + MIN, p)
    assert np.array_equal(before.live, after.live) and book.pairs.size == 2
    assert not np.array_equal(before.auth_all, want.auth_all)  # the section moved the authority
    for name in FEATURE_FIELDS:
        assert np.array_equal(getattr(after, name), getattr(want, name)), name
