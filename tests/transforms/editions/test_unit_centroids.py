"""The unit centroids kept across cycles (transforms/editions/cycle/centroids.py) are the ones a batch over every
asked row gives, minute after minute through placements, merges, splits and expiries, and a newer centroid or
another book is computed again (the restarted-worker test of test_kept_features.py covers the pages with an
empty cache)."""

from __future__ import annotations

import numpy as np

from tests.transforms.editions.test_kept_features import busy_world
from tests.transforms.editions.test_ownership_groups import owned_registry
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.cycle.centroids import UnitCentroids
from transforms.editions.vocabulary.config import load_config


def fresh_units(book: StoryBook, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The unit centroids of ``rows`` computed in one batch, as the cycle did before they were kept."""
    cvec = book.stories.centroid[rows].astype(np.float64)
    norms = np.linalg.norm(cvec, axis=1)
    return cvec / np.where(norms > 0, norms, 1.0)[:, None], norms > 0


def minutes(world):
    """A book folded minute by minute through a busy world, yielded with a changing subset of its story rows."""
    T, MIN = world.T0, world.MIN
    events = sorted(busy_world(world), key=event_sort_key)
    book = StoryBook(load_config(), owned_registry(), "en")
    rng = np.random.default_rng(3)
    k = 0
    for now in range(T - 3 * world.HOUR, T + 60 * MIN, 10 * MIN):
        while k < len(events) and events[k]["at"] < now:
            book.apply(events[k])
            k += 1
        book.flush()
        n = book.stories.size
        if n:
            yield book, np.flatnonzero(rng.random(n) < 0.7)  # most rows asked again, some new, some dropped


def test_kept_unit_centroids_equal_a_fresh_batch_every_minute(world):
    cache, computed, asked = UnitCentroids(), [0], 0
    fill = cache._fill

    def counted(book, rows, *rest):
        computed[0] += rows.size
        return fill(book, rows, *rest)

    cache._fill = counted
    for book, rows in minutes(world):
        mat, slots, nonzero = cache.of(book, rows)
        want, want_nonzero = fresh_units(book, rows)
        assert np.array_equal(mat[slots], want) and np.array_equal(nonzero, want_nonzero)
        assert np.unique(slots).size == slots.size  # one slot per row
        asked += rows.size
    assert 0 < computed[0] < asked / 2  # most rows were kept, the new ones computed


def test_a_newer_centroid_or_another_book_is_computed_again(world):
    T = world.T0
    for sid in range(1, 6):
        world.story(sid, world.AUTHORITATIVE_EN[:2], T + sid * world.MIN)
    book = StoryBook(load_config(), owned_registry(), "en")
    for e in sorted((compact_change(c) for c in world.changes), key=event_sort_key):
        book.apply(e)
    book.flush()
    rows = np.arange(book.stories.size)
    cache = UnitCentroids()
    cache.of(book, rows)
    r = 2
    book._set_centroid(r, (-np.asarray(book.stories.centroid[r])).tolist(), book.stories.centroid_seq[r] + 1)
    mat, slots, _ = cache.of(book, rows)
    assert np.array_equal(mat[slots], fresh_units(book, rows)[0])
    other = StoryBook(load_config(), owned_registry(), "en")
    other.dim = book.dim
    other.stories = book.stories  # the same rows, another book: nothing of the first is trusted
    book.stories.centroid[r] *= -1.0  # a value changed without a new seq: only a new book can make it seen
    mat, slots, _ = cache.of(other, rows)
    assert np.array_equal(mat[slots], fresh_units(other, rows)[0])


def test_the_same_rows_at_the_same_seqs_are_answered_as_last_time(world):
    """A cycle asking for the rows of the last call at the same centroid_seqs (a small book's quiet minute) gets
    the last answer without a pass over the slots; other rows, or one newer centroid, take the full pass."""
    book = next(b for b, rows in minutes(world) if rows.size >= 3)
    rows = np.flatnonzero(np.ones(book.stories.size, bool))
    cache, computed = UnitCentroids(), []
    fill = cache._fill
    cache._fill = lambda b, r, *rest: computed.append(r.size) or fill(b, r, *rest)
    first = cache.of(book, rows)[1].copy()
    mat, slots, nonzero = cache.of(book, rows.copy())
    assert computed == [rows.size] and np.array_equal(slots, first)
    cache.of(book, rows[1:])  # row 0 not asked: its slot freed
    mat, slots, nonzero = cache.of(book, rows)
    assert computed == [rows.size, 1] and np.array_equal(mat[slots], fresh_units(book, rows)[0])
    r = int(rows[-1])
    book._set_centroid(r, (-np.asarray(book.stories.centroid[r])).tolist(), book.stories.centroid_seq[r] + 1)
    mat, slots, nonzero = cache.of(book, rows)
    assert computed == [rows.size, 1, 1] and np.array_equal(mat[slots], fresh_units(book, rows)[0])
