"""For you's two population signals: "readers like you" (MinHash user clusters) and trend blending.

Readers like you (Das et al., Google News personalization, WWW 2007). The daily user-cluster job
(pipelines/userclusters.py) puts each reader in up to q = 10 MinHash clusters; the co-visitation job keeps each
cluster's decayed click counts per story online (stores/userclusters.py). The paper's score of story s for reader u
is the sum over u's clusters c of count(c, s) / total(c): the share of the cluster's recent clicks that went to s.
In the ranking (serving/personal/ranking.py) it is ``W_CLUSTERS * s / (s + CLUSTER_SCALE)``: a story with a fifth of one
cluster's clicks (or a tenth of two clusters') gets half the weight; reason ``readers_like_you`` when it is the
largest personal term. :class:`ClusterCache` reads the store for one reader at a time:

- memberships per reader for ``ttl_s`` (NEWSROOM_PROFILE_TTL_S), at most ``max_readers`` (LRU); :meth:`forget`
  deletes the reader's row and the cached copy (DELETE /v1/me/profile and /v1/me/history), and other processes
  drop theirs within the TTL, the same promise as the profile's;
- per-cluster lists shared by every member for ``ttl_s``, at most ``max_clusters`` (LRU), one ``get_counts`` for
  those not cached. Fail-open like co-visitation: a store error uses what is cached, else no such term (the feed
  is not degraded for it).

Privacy: cluster ids and memberships are per reader, read only on the private For you path, and never in a response
(the reason names no cluster); a count row carries no reader id, and a cluster has at least five members
(transforms/userclusters/minhash.py). A deleted profile or history stays deleted here too: a membership the daily job
wrote from a run that started at or before the reader's last delete is not used (the job may have scanned the reads
just before they were erased), nor is any membership of a reader with no stored profile or reads.

Trend blending (Liu, Dolan, Pedersen, IUI 2010). Liu et al. separate a reader's genuine interest in a category c
from the news trend: the reader's click share D(c) over the trend T(c) it read under (the share of everybody's
clicks in c then), smoothed toward 1 with G virtual clicks, and predict the interest now as T_now(c) times it:

    I(c) = (N * D(c) / T(c) + G) / (N + G)          N: the reader's clicks

Here c is a pool topic, N and D come from the reader's reads still in the edition's pool (the last day or two, so
the trend each of them met is taken to be today's), and T(c) is the edition's current trend: the share of the
pool's ranking score (velocity, coverage, freshness: what the edition is about now) in c, each story's score plus
TREND_FLOOR (0.05, so no topic has a zero share) split evenly over its topics. The edition's own score, already in
every feed as W_BASE * base, is the T_now factor; the blend adds the genuine-interest factor as

    W_TREND * (I - 1) / (I + 1)      for the story's topic with the largest I (0 for a story without topics)

in [-W_TREND, +W_TREND] with W_TREND = 0.3: 0 for a reader whose reading follows the trend (I = 1: a reader who
reads sport because everybody does now gets no sport boost), +0.1 for a topic read at twice the trend's share by a
reader with 10 reads in the pool, up to +0.3 for a topic the reader seeks out, and below 0 for topics the reader
passes over while they trend. G = TREND_PRIOR = 10 (the paper's value): a new reader's I is 1 everywhere (its feed
is the edition's order), and a reader with 30 reads in the pool is three quarters its own evidence. It never
outweighs a follow (0.6).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from stores.base import StoreError
from transforms.userclusters.minhash import score

log = logging.getLogger(__name__)

W_CLUSTERS = 0.35
CLUSTER_SCALE = 0.2
W_TREND = 0.3
TREND_PRIOR = 10.0  # G, virtual clicks of the trend (Liu et al. 2010)
TREND_FLOOR = 0.05


@dataclass(frozen=True, eq=False)
class Clusters:
    """One reader's "readers like you" candidates: ``strength[story_id]``, the paper's score. The term is computed
    once per pool and kept on the object (the cache keeps the object per reader for its TTL), so a reader's
    next pages cost one array add."""

    strength: dict
    _terms: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary, repr=False)

    def term(self, pool) -> np.ndarray | None:
        if pool in self._terms:
            return self._terms[pool]
        got = self._term(pool)
        self._terms[pool] = got
        return got

    def _term(self, pool) -> np.ndarray | None:
        return saturating_term(pool, self.strength, CLUSTER_SCALE, W_CLUSTERS)


def saturating_term(pool, strength: dict, scale: float, weight: float) -> np.ndarray | None:
    """Per pool candidate, ``weight * s / (s + scale)`` of its strength ``s`` (0 for a story without one), or None
    when no story of ``strength`` is in the pool: the shape of the collaborative terms (readers like you here,
    co-visitation in serving/personal/ranking.py), bounded by ``weight`` however strong the evidence."""
    index = pool.index
    hits = [(index[sid], s) for sid, s in strength.items() if sid in index]
    if not hits:
        return None
    idx, vals = zip(*hits)
    v = np.fromiter(vals, dtype=np.float32, count=len(vals))
    out = np.zeros(len(pool.story_ids), dtype=np.float32)
    out[list(idx)] = v / (v + np.float32(scale)) * np.float32(weight)
    return out


class ClusterCache:
    def __init__(self, store, ttl_s: float = 30.0, max_readers: int = 50_000, max_clusters: int = 100_000):
        self.store = store
        self.ttl_s = ttl_s
        self.max_readers, self.max_clusters = max_readers, max_clusters
        self._lock = threading.Lock()
        self._members: OrderedDict[str, tuple[float, tuple]] = OrderedDict()
        self._counts: OrderedDict[int, tuple[float, tuple | None]] = OrderedDict()
        self._boosts: OrderedDict[str, tuple[float, Clusters | None]] = OrderedDict()
        self.store_errors = 0

    @staticmethod
    def _put(entries: OrderedDict, key, value, limit: int) -> None:
        entries[key] = value
        entries.move_to_end(key)
        while len(entries) > limit:
            entries.popitem(last=False)

    def memberships(self, reader_id: str, after_ms: int = 0) -> tuple:
        """The reader's clusters (cached ``ttl_s``), none from a run that started at or before ``after_ms``."""
        now = time.monotonic()
        with self._lock:
            hit = self._members.get(reader_id)
        if hit is not None and hit[0] > now:
            return hit[1]
        got = tuple(self.store.membership(reader_id, int(time.time() * 1000), after_ms))
        with self._lock:
            self._put(self._members, reader_id, (now + self.ttl_s, got), self.max_readers)
        return got

    def lists(self, cluster_ids) -> list:
        """``[(items, total, at)]`` of the clusters that have counts (cached, fail-open to the stale entries)."""
        now = time.monotonic()
        out, todo, stale = [], [], []
        with self._lock:
            for c in cluster_ids:
                hit = self._counts.get(c)
                if hit is not None and hit[0] > now:
                    if hit[1] is not None:
                        out.append(hit[1])
                else:
                    todo.append(c)
                    if hit is not None and hit[1] is not None:
                        stale.append(hit[1])
        if not todo:
            return out
        try:
            got = self.store.get_counts(todo)
        except Exception as exc:  # StoreError or a client error: what we have
            self.store_errors += 1
            log.warning("user-cluster store unreachable for a For you request: %s", exc)
            return out + stale
        with self._lock:
            for c in todo:
                entry = got.get(c)
                entry = None if entry is None else (tuple((str(s), n) for s, n in entry[0]), entry[1], entry[2])
                self._put(self._counts, c, (now + self.ttl_s, entry), self.max_clusters)
                if entry is not None:
                    out.append(entry)
        return out

    def boost(self, view) -> Clusters | None:
        """The reader's "readers like you" candidates (None: no clusters, no counts, or the store is down), kept
        per reader for ``ttl_s`` (so the counts a reader sees are at most two TTLs old)."""
        now = time.monotonic()
        with self._lock:
            hit = self._boosts.get(view.reader_id)
        if hit is not None and hit[0] > now:
            return hit[1]
        if not view.stored:  # no profile and no reads (never, or deleted): a membership could only predate a delete
            return None
        try:
            members = self.memberships(view.reader_id, view.erased_at)
        except Exception as exc:
            self.store_errors += 1
            log.warning("user-cluster store unreachable for a For you request: %s", exc)
            return None
        strength = score(self.lists(members)) if members else {}
        got = Clusters(strength) if strength else None
        with self._lock:
            self._put(self._boosts, view.reader_id, (now + self.ttl_s, got), self.max_readers)
        return got

    def forget(self, reader_id: str) -> None:
        """Delete the reader's memberships (StoreError when the store cannot: the caller answers 503 and the
        client retries, so a deleted profile never keeps its clusters)."""
        try:
            self.store.delete_membership(reader_id)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"userclusters: cannot delete the clusters of {reader_id!r}: {exc}") from exc
        with self._lock:
            self._members.pop(reader_id, None)
            self._boosts.pop(reader_id, None)


_TRENDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def edition_trend(pool) -> tuple[dict[str, float], np.ndarray]:
    """T(c) per topic of the pool, and per story whether it has a topic (computed once per pool)."""
    got = _TRENDS.get(pool)
    if got is not None:
        return got
    mass: dict[str, float] = {}
    for i, topics in enumerate(pool.topics):
        if topics:
            share = (float(pool.base[i]) + TREND_FLOOR) / len(topics)
            for t in topics:
                mass[t] = mass.get(t, 0.0) + share
    total = sum(mass.values())
    trend = {t: m / total for t, m in mass.items()} if total > 0 else {}
    has_topic = np.fromiter((bool(t) for t in pool.topics), dtype=np.float32, count=len(pool.topics))
    _TRENDS[pool] = (trend, has_topic)
    return trend, has_topic


def trend_term(pool, read_idx) -> np.ndarray | None:
    """``W_TREND * (I - 1) / (I + 1)`` of each story's best topic (module docstring); None without any read in
    the pool that has a topic (I = 1 everywhere: nothing to add)."""
    clicks: dict[str, float] = {}
    n = 0
    for i in read_idx:
        topics = pool.topics[i]
        if topics:
            n += 1
            for t in topics:
                clicks[t] = clicks.get(t, 0.0) + 1.0 / len(topics)
    if not n:
        return None
    trend, has_topic = edition_trend(pool)
    g = TREND_PRIOR

    def squash(i: float) -> float:
        return W_TREND * (i - 1.0) / (i + 1.0)

    out = has_topic * np.float32(squash(g / (n + g)))  # topics the reader did not read: I = G / (N + G)
    for t, c in clicks.items():
        idx = pool.by_topic.get(t)
        if idx is not None:  # N * D(c) is the reader's (split) reads in c
            out[idx] = np.maximum(out[idx], np.float32(squash((c / trend[t] + g) / (n + g))))
    return out
