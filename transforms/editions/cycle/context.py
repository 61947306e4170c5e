"""What one ranking cycle of one edition threads through its phases: :class:`CycleContext`, one frozen value.

The cycle (:func:`transforms.editions.cycle.run.run_cycle`) reads a book, an edition, the editions config and the
ranking parameters at a minute ``now``, updates the edition's memory and cache, laps a clock, may stop early on a
steady minute and ends with the overlays (editorial controls, takedowns, cities, topic and storyline pages). Every
phase takes this context rather than a growing list of the same eight values, so a phase's signature says what it
adds (the ranked candidates, the page facts) and not what the whole cycle carries. Frozen: a phase cannot swap
the book or the minute under the next one; the objects it holds that a cycle updates (memory, cache, clock) say so
in their own types.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from transforms.editions.cycle.centroids import UnitCentroids
from transforms.editions.cycle.kept import KeptFeatures
from transforms.editions.cycle.scoring import Smoothing
from transforms.editions.cycle.trust import KeptFacts

if TYPE_CHECKING:
    from transforms.editions.book.storybook import StoryBook
    from transforms.editions.vocabulary.config import Edition, EditionsConfig
    from transforms.editions.vocabulary.params import RankParams


@dataclass
class EditionMemory:
    """What an edition remembers between cycles (kept in Beam state; small: ~2,000 stories)."""

    last_cycle: int = 0
    smoothing: Smoothing = field(default_factory=Smoothing)
    prev_pages: dict = field(default_factory=dict)  # section -> story ids in page order
    share_day: int = -1
    share_counts: dict = field(default_factory=dict)  # ownership group -> position-weighted impressions today
    share_total: float = 0.0
    capped: tuple = ()  # publishers capped for the current hour
    capped_hour: int = -1
    coverage_versions: dict = field(default_factory=dict)  # story id -> coverage version last emitted
    facts: dict = field(default_factory=dict)  # story id -> (headline key facts, last change): trust.developing
    last_event_at: int = 0
    page_max: dict = field(default_factory=dict)  # section -> most stories any page of it had (steady.py)


@dataclass
class CycleOutput:
    edition: str
    cycle: int
    pages: dict  # section -> edition_page document
    pool: dict  # candidate_pool document
    coverage: list  # story_coverage documents
    stats: dict = field(default_factory=dict)
    topic_pages: list = field(default_factory=list)  # topic page snapshot items (overlays.py)
    storylines: list = field(default_factory=list)  # storyline snapshot items (overlays.py)
    page_digests: dict = field(default_factory=dict)  # section -> (page, run.PageDigest) (change-only replay)


class Clock:
    """Accumulates CPU seconds per phase into ``timings`` (benchmarks); free when ``timings`` is None."""

    def __init__(self, timings: dict | None = None):
        self.timings = timings
        self.t = time.process_time() if timings is not None else 0.0

    def start(self) -> None:
        """Start the first lap now (a context may be built a while before its cycle runs)."""
        if self.timings is not None:
            self.t = time.process_time()

    def lap(self, name: str) -> None:
        if self.timings is not None:
            now = time.process_time()
            self.timings[name] = self.timings.get(name, 0.0) + now - self.t
            self.t = now


class KeptEntries:
    """Document entries of an edition's last cycle (a pool's without score; a page's) with what each was made of:
    per story id a row of integer keys (:func:`transforms.editions.cycle.run.pool_keys`, ``page_keys``) and the
    section names the keys' section index reads (``names``). :meth:`find` gives, per story of this cycle, last
    cycle's entry when its story id, names and every key are equal, else None (the entry is rebuilt): decided for
    a whole pool or page in a few array operations (~95,000 pool and ~26,000 page entries per 73-edition cycle),
    not one tuple of Python values built and compared per entry."""

    def __init__(self, ids=None, keys=None, entries=(), names: tuple = ()):
        if ids is None or not len(entries):
            self.ids, self.keys, self.entries, self.names = np.zeros(0, np.int64), np.zeros((0, 0), np.int64), [], ()
            return
        order = np.argsort(ids, kind="stable")
        self.ids, self.keys, self.names = ids[order], keys[order], names
        self.entries = [entries[k] for k in order.tolist()]

    def find(self, ids: np.ndarray, keys: np.ndarray, names: tuple) -> list:
        """Per story id of ``ids`` (with its key row in ``keys``): the kept entry, or None."""
        if not self.ids.size or names != self.names or keys.shape[1:] != self.keys.shape[1:]:
            return [None] * len(ids)
        pos = np.minimum(np.searchsorted(self.ids, ids), self.ids.size - 1)
        same = (self.ids[pos] == ids) & (self.keys[pos] == keys).all(axis=1)
        entries = self.entries
        return [entries[j] if h else None for j, h in zip(pos.tolist(), same.tolist())]

    def find_prefix(self, ids: np.ndarray, keys: np.ndarray, width: int) -> list:
        """Per story id of ``ids``: the kept entry when its id and its first ``width`` keys are equal (the key
        columns the caller's fields are made of; no section index among them, so ``names`` is not compared), else
        None."""
        if not self.ids.size or not len(ids) or keys.shape[1:] != self.keys.shape[1:]:
            return [None] * len(ids)
        pos = np.minimum(np.searchsorted(self.ids, ids), self.ids.size - 1)
        same = (self.ids[pos] == ids) & (self.keys[pos, :width] == keys[:, :width]).all(axis=1)
        entries = self.entries
        return [entries[j] if h else None for j, h in zip(pos.tolist(), same.tolist())]


@dataclass
class CycleCache:
    """Per edition, reused between its cycles (in-process; never changes a result). A supporting set is reused
    while the story's coverage version, the representative and the capped publishers are unchanged; a card while
    its article's label bits, first-seen time and version are; a pool entry while its story's coverage version,
    centroid, representative (row, first-seen, version and label bits of its card), labels and section are
    (``KeptEntries``); a page entry while its representative's and supporting links' cards, labels, section,
    article and voice counts and newest time are (``page_entries``: per section, by key bytes); a pool entry's
    page sections, cities and topic ids while its entities, places, topics and page sections are the same objects
    and values (``topics``), and a topic page item while its story's section, labels and representative card are (``topic_items``). ``features``: the pair and
    region sums of the last cycle, recomputed for the stories that changed (kept.py); ``unit``: the unit centroids
    of the stories pages can place, recomputed for the rows new or with a newer centroid (centroids.py); ``facts``:
    which candidates' headlines the developing test already took in (trust.py ``KeptFacts``); ``gram``: per
    section, its page's cosines while it asks for the same stories at the same centroids (assembly.py ``Gram``)."""

    support: dict = field(default_factory=dict)  # (story row, rep) -> ((version, capped), article rows)
    cards: dict = field(default_factory=dict)  # 2 x article row + with lede -> ((first seen, version, labels), card)
    pool: KeptEntries = field(default_factory=KeptEntries)  # story id -> entry without score, with its key
    page_entries: dict = field(default_factory=dict)  # section -> (names, {story id and key bytes: page entry})
    features: KeptFeatures = field(default_factory=KeptFeatures)
    topics: dict = field(default_factory=dict)  # story id -> its pool entry's annotation (overlays/topics.py)
    topic_items: dict = field(default_factory=dict)  # story id -> its item on topic pages (overlays/topics.py)
    unit: UnitCentroids = field(default_factory=UnitCentroids)  # the unit centroids pages read (centroids.py)
    facts: KeptFacts = field(default_factory=KeptFacts)  # the developing test's facts of the last cycle (trust.py)
    gram: dict = field(default_factory=dict)  # section -> assembly.Gram: its page's cosines, kept for the same stories
    pages: dict = field(default_factory=dict)  # section -> run.PageDigest of its last page (change-only replay)


class Steady(Protocol):
    """The change-only replay's test of one minute (:class:`transforms.editions.ranker.steady.SteadyCheck`)."""

    def __call__(self, book, ranked, facts, gates, page_slots) -> bool: ...

    def record(self, out: CycleOutput) -> None: ...


class CycleOverlays(Protocol):
    """The cycle's last phases, laid over its documents (:class:`transforms.editions.overlays.Overlays`: editorial
    controls, takedowns, cities, topic and storyline pages). A protocol, so the cycle runs them without importing
    the overlays room, which sits above it."""

    def apply(self, ctx: CycleContext, out: CycleOutput) -> None: ...


@dataclass(frozen=True)
class CycleContext:
    """One cycle of one edition at ``now`` (a minute boundary).

    ``memory`` (:class:`~transforms.editions.cycle.run.EditionMemory`) and ``cache`` are updated by the cycle;
    ``clock`` gets CPU seconds per phase (``Clock(timings)``; a default clock records nothing). ``steady``: asked
    once the page slots are decided, True ends the cycle there (None returned; :mod:`transforms.editions.ranker.steady`,
    the change-only replay). ``overlays``: the cycle's last phases (:mod:`transforms.editions.overlays.phases`); None: the
    bare ranking (the equivalence tests and the per-story reference compare that). ``counter(name, n)``: the
    overlays' counters (default: nothing).
    """

    book: StoryBook
    edition: Edition
    config: EditionsConfig
    params: RankParams
    memory: EditionMemory
    now: int
    cache: CycleCache = field(default_factory=CycleCache)
    clock: Clock = field(default_factory=Clock)
    steady: Steady | None = None
    overlays: CycleOverlays | None = None
    counter: Callable[[str, int], None] | None = None

    def count(self, name: str, n: int = 1) -> None:
        if self.counter is not None:
            self.counter(name, n)
