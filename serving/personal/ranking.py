"""For you: re-rank an edition's candidate pool against one reader's profile (plain numpy, no Flask, no store).

Reads a :class:`serving.state.catalog.PreparedPool` and a :class:`ProfileView`; returns ranked candidate indices with
their reasons. Also holds the interest-vector maths used when reads are folded into profiles
(:func:`fold_interest`), so serving and folding agree on one definition.

Score of candidate i (every term is in [0, 1] before its weight; weights chosen so that an explicit follow beats
the edition's own ranking, a strong interest match is worth about half a follow, and nothing personal can lift a
story the reader asked to see less of):

    W_BASE   * base_i                                  the edition's own score, min-max normalised (pool order)
  + W_TOPIC  * [story has a followed topic]
  + W_SOURCE * [a followed source covers it]
  + W_ENTITY * [story has a followed entity]          reason "follows:entity/{id}" (pool "entities": alias ids)
  + W_PLACE  * [story is about a followed place]       reason "local:{place}" (a region code, or an entity id)
  + W_INTEREST * conf * max(0, cos(interest, v_i))     conf = mass / (mass + 3): a few reads are weak evidence
  + W_SIMILAR * ramp(max_j cos(v_i, v_read_j))         over the last RECENT_READS reads that are in the pool
  + W_COVISIT * s_i / (s_i + COVISIT_SCALE)            co-visitation: s_i = sum over the reader's COVISIT_READS
                                                       newest reads X of X's decayed "read together" count with i
                                                       (stores/covisit.py, via serving.personal.readers.CovisitCache)
  + W_CLUSTERS * u_i / (u_i + CLUSTER_SCALE)           readers like you: u_i = sum over the reader's MinHash
                                                       clusters of the share of the cluster's clicks on i
                                                       (serving/personal/clusters.py, Das et al. 2007)
  + W_TREND * (I - 1) / (I + 1)                        trend blending (Liu et al. 2010): I, the reader's genuine
                                                       interest in i's topic, its read share over the edition's
                                                       current trend, smoothed with 10 virtual clicks
                                                       (serving/personal/clusters.py trend_term; in [-0.3, 0.3])
  - W_FEWER  * ramp(max_k cos(v_i, v_fewer_k))         "fewer like this"
  - W_READ   * [already read]                          pushed down, not removed (a reader may want it again)

``ramp(s) = clip((s - 0.5) / 0.5, 0, 1)``: below 0.5 cosine two stories are unrelated for this purpose.
Excluded outright: stories whose representative publisher is hidden (the card is what the reader sees, so a hidden
source never appears), and stories marked "fewer like this" themselves.

Top stories: the first TOP_SLOTS positions of the feed (0, 4, 9) hold the edition's best stories by its own score
(not hidden, not yet read), reason ``top_story``, so a personal feed never hides the news everybody needs.

Reasons: the largest personal term names the reason (``follows:entity/{id}``, ``follows:topic/{t}``,
``follows:source/{p}``, ``local:{p}``, ``also_read:{story_id}`` "readers of that story also read this", the read
contributing most to s_i; ``readers_like_you``, the reader's clusters (no cluster named); ``similar_to:{story_id}``;
the trend term never names a reason, it orders); an interest-only match is explained by the closest recent
read when there is one (``similar_to``), else ``interest``; with no personal signal ``popular``.

Cost: one (n x 64) @ 64 product for interest, one (n x 64) @ (64 x k) for up to RECENT_READS reads, an argsort of
n floats, and per-item Python only for the page returned: about 0.3 ms for n = 1,000 here
(benchmarks/serve_bench.py) with ONE BLAS thread; OpenBLAS's default thread pool made it ~14 ms median on this
2-core machine under load, so ``newsroom serve`` sets OPENBLAS_NUM_THREADS=1 (pipelines/commands/serve.py).

Name kept: this is the only ranking in the origin (the editions' pages arrive ranked by
transforms/editions/ranker/rank.py and scoring.py), and every import says ``serving.personal.ranking``: the package tells the two
apart, so a rename would churn imports without saying more than the path does.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np

from serving.personal.clusters import Clusters, saturating_term, trend_term
from serving.state.catalog import place_entity
from stores import profile_versions
from transforms.covisit.counts import HALF_LIFE_MS as COVISIT_HALF_LIFE_MS

W_BASE = 1.0
W_TOPIC = 0.6
W_SOURCE = 0.45
W_PLACE = 0.45
W_ENTITY = 0.6  # a followed person, organisation or place (entity id): as specific as a topic
W_INTEREST = 0.5
W_SIMILAR = 0.35
W_COVISIT = 0.4
COVISIT_SCALE = 2.0  # s_i at which the co-visitation term is half its weight (two readers' worth of co-reads)
COVISIT_READS = 10
W_FEWER = 1.2
W_READ = 1.5
MIN_REASON = 0.05
RECENT_READS = 50
TOP_SLOTS = (0, 4, 9)
# Diversity at the top of the feed: within the first CAP_DEPTH positions at most MAX_PER_PUBLISHER stories whose card
# is from one publisher and MAX_PER_TOPIC of one topic; a capped story comes back right after those positions.
CAP_DEPTH = 10
MAX_PER_PUBLISHER = 2
MAX_PER_TOPIC = 3
INTEREST_HALF_LIFE_MS = 3 * 24 * 3600 * 1000
READ_WEIGHTS = {"READ": 1.0, "CLICK": 0.5}
SHORT_DWELL_MS = 5000
FEWER_KEPT = 20


@dataclass(frozen=True, eq=False)
class ProfileView:
    """What ranking needs from a profile, precomputed once per cached profile."""

    reader_id: str
    topics: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    place_entities: tuple[str, ...] = ()  # the followed places as entity ids (serving.state.catalog.place_entity)
    hidden: frozenset = frozenset()
    interest: np.ndarray | None = None
    confidence: float = 0.0
    fewer_ids: frozenset = frozenset()
    fewer_vectors: np.ndarray | None = None
    reads: tuple[str, ...] = ()  # story ids, newest first, unique
    revision: int = 0
    paused: bool = False
    known: bool = True  # False: the profile store could not be read and nothing was cached (privacy unknown)
    stored: bool = False  # the store holds a profile or reads (False: none, or deleted: a tombstone)
    erased_at: int = 0  # ms of the reader's last profile or history delete (stores/profile_versions.py)

    @classmethod
    def from_profile(cls, reader_id: str, doc: dict | None) -> ProfileView:
        if not doc:
            return cls(reader_id=reader_id)
        follows = doc.get("follows") or {}
        interest = None
        conf = 0.0
        inter = doc.get("interest") or {}
        if inter.get("vector"):
            v = np.asarray(inter["vector"], dtype=np.float32)
            norm = float(np.linalg.norm(v))
            if norm > 0:
                interest = v / norm
                mass = float(inter.get("mass") or 0.0)
                conf = mass / (mass + 3.0)
        fewer = [f for f in doc.get("fewer") or [] if f.get("vector")]
        fewer_vectors = None
        if fewer:
            m = np.asarray([f["vector"] for f in fewer], dtype=np.float32)
            n = np.linalg.norm(m, axis=1, keepdims=True)
            fewer_vectors = np.divide(m, n, out=np.zeros_like(m), where=n > 0)
        reads = tuple(dict.fromkeys(str(r["story_id"]) for r in doc.get("reads") or [] if r.get("story_id")))
        return cls(
            reader_id=reader_id,
            topics=tuple(follows.get("topics") or ()),
            sources=tuple(follows.get("sources") or ()),
            places=tuple(follows.get("places") or ()),
            entities=tuple(follows.get("entities") or ()),
            place_entities=tuple(dict.fromkeys(place_entity(p) for p in follows.get("places") or ())),
            hidden=frozenset(doc.get("hidden_sources") or ()),
            interest=interest,
            confidence=conf,
            fewer_ids=frozenset(str(f["story_id"]) for f in doc.get("fewer") or []),
            fewer_vectors=fewer_vectors,
            reads=reads,
            revision=int(doc.get("revision") or 0),
            paused=bool(doc.get("paused")),
            stored=True,
            erased_at=profile_versions.erased_at(doc),
        )


def _ramp(s: np.ndarray) -> np.ndarray:
    return np.clip((s - 0.5) * 2.0, 0.0, 1.0)


def _mark(n: int, index, keys, weight: float) -> np.ndarray | None:
    out = None
    for k in keys:
        idx = index.get(k)
        if idx is not None:
            if out is None:
                out = np.zeros(n, dtype=np.float32)
            out[idx] = weight
    return out


@dataclass(frozen=True, eq=False)
class Covisit:
    """Co-visitation candidates of one reader: ``strength[story_id]`` (s_i) and ``source[story_id]``, the read X
    that contributes most to it (for the reason)."""

    strength: dict
    source: dict

    @classmethod
    def from_lists(cls, reads, lists: dict, now_ms: int) -> Covisit | None:
        """``lists``: ``{read story: ((neighbour, count as of at), ...), at)}``; counts are decayed to ``now_ms``."""
        strength: dict[str, float] = {}
        best: dict[str, float] = {}
        source: dict[str, str] = {}
        for read in reads:
            items, at = lists.get(read, ((), 0))
            if not items:
                continue
            factor = 0.5 ** (max(0, now_ms - at) / COVISIT_HALF_LIFE_MS)
            for other, count in items:
                c = count * factor
                prev = strength.get(other)
                if prev is None:
                    strength[other] = best[other] = c
                    source[other] = read
                else:
                    strength[other] = prev + c
                    if c > best[other]:
                        best[other] = c
                        source[other] = read
        return cls(strength, source) if strength else None

    def term(self, pool) -> np.ndarray | None:
        return saturating_term(pool, self.strength, COVISIT_SCALE, W_COVISIT)


class RankTimeout(Exception):
    """The re-rank ran past its budget; the caller serves the deterministic recency fallback."""


def _check(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise RankTimeout("For you re-rank over its time budget")


@dataclass
class _Scored:
    score: np.ndarray
    terms: dict
    recent: list[int]
    nearest: np.ndarray | None
    read_mask: np.ndarray
    covisit: Covisit | None = None


def _score(
    pool, view: ProfileView, deadline: float | None, covisit: Covisit | None = None, clusters: Clusters | None = None
) -> _Scored:
    """Every candidate's personal score (module docstring); -inf for hidden sources and "fewer like this"."""
    n = len(pool.story_ids)
    vectors = pool.vectors
    score = pool.base * np.float32(W_BASE)
    terms: dict[str, np.ndarray] = {}
    for name, index, keys, weight in (
        ("topic", pool.by_topic, view.topics, W_TOPIC),
        ("source", pool.by_source, view.sources, W_SOURCE),
        ("place", pool.by_place, view.places, W_PLACE),
        ("entity", pool.by_entity, view.entities, W_ENTITY),
    ):
        t = _mark(n, index, keys, weight)
        if t is not None:
            terms[name] = t
    local = _mark(n, pool.by_entity, view.place_entities, W_PLACE)  # a followed place named as an entity
    if local is not None:
        terms["place"] = np.maximum(terms["place"], local) if "place" in terms else local
    if view.interest is not None and view.confidence > 0:
        terms["interest"] = np.maximum(vectors @ view.interest, 0.0) * np.float32(W_INTEREST * view.confidence)
    read_idx = [pool.index[s] for s in view.reads if s in pool.index]
    recent = read_idx[:RECENT_READS]
    nearest = None
    if recent:
        sims = vectors @ vectors[recent].T
        nearest = sims.argmax(axis=1)
        terms["similar"] = _ramp(sims[np.arange(n), nearest]) * np.float32(W_SIMILAR)
    for name, source in (("covisit", covisit), ("clusters", clusters)):
        t = source.term(pool) if source is not None else None
        if t is not None:
            terms[name] = t
    trend = trend_term(pool, read_idx)
    if trend is not None:
        score = score + trend  # not in terms: it orders, it names no reason
    _check(deadline)
    for arr in terms.values():
        score = score + arr
    if view.fewer_vectors is not None:
        score = score - _ramp((vectors @ view.fewer_vectors.T).max(axis=1)) * np.float32(W_FEWER)
    read_mask = np.zeros(n, dtype=bool)
    if read_idx:
        read_mask[read_idx] = True
        score[read_mask] -= W_READ
    for key in view.hidden:
        idx = pool.by_rep_publisher.get(key)
        if idx is not None:
            score[idx] = -np.inf
    for sid in view.fewer_ids:
        i = pool.index.get(sid)
        if i is not None:
            score[i] = -np.inf
    return _Scored(score, terms, recent, nearest, read_mask, covisit)


class _Caps:
    """Per-publisher and per-topic caps over the first CAP_DEPTH feed positions (served pages included)."""

    def __init__(self, pool, served: np.ndarray | None):
        self.pool = pool
        self.publishers: dict[str, int] = {}
        self.topics: dict[str, int] = {}
        if served is not None:
            for i in np.flatnonzero(served):
                self.add(int(i))

    def fits(self, i: int) -> bool:
        if self.publishers.get(self.pool.rep_publisher[i], 0) >= MAX_PER_PUBLISHER:
            return False
        return all(self.topics.get(t, 0) < MAX_PER_TOPIC for t in self.pool.topics[i])

    def add(self, i: int) -> None:
        pub = self.pool.rep_publisher[i]
        self.publishers[pub] = self.publishers.get(pub, 0) + 1
        for t in self.pool.topics[i]:
            self.topics[t] = self.topics.get(t, 0) + 1


def _ordered(score: np.ndarray, allowed: np.ndarray, k: int):
    """Allowed candidates by descending score (ties: pool order, i.e. the edition's own rank), lazily: the best k
    by a partial sort, the rest only if the page needs them."""
    n = len(score)
    if k < n:
        part = np.argpartition(-score, k - 1)[:k]
        head = part[np.lexsort((part, -score[part]))]
        yield from (int(i) for i in head if allowed[i])
        seen = np.zeros(n, dtype=bool)
        seen[head] = True
        rest = np.flatnonzero(~seen)
        yield from (int(i) for i in rest[np.lexsort((rest, -score[rest]))] if allowed[i])
    else:
        order = np.lexsort((np.arange(n), -score))
        yield from (int(i) for i in order if allowed[i])


def _take(source, used: set, caps: _Caps | None, deferred: list) -> int | None:
    """The next unused candidate of ``source`` that fits the caps; ones over a cap wait in ``deferred``."""
    for i in source:
        if i in used:
            continue
        if caps is not None and not caps.fits(i):
            deferred.append(i)
            continue
        return i
    return None


@dataclass(frozen=True, eq=False)
class FeedSlice:
    """The feed positions asked for, [offset, offset + limit), and ``served`` (bool per candidate, or None): the
    candidates already on the reader's earlier pages."""

    offset: int = 0
    limit: int = 20
    served: np.ndarray | None = None


def rank(
    pool,
    view: ProfileView,
    page: FeedSlice = FeedSlice(),
    deadline: float | None = None,
    covisit: Covisit | None = None,
    clusters: Clusters | None = None,
) -> list[tuple[int, str]]:
    """Candidate indices for feed positions [page.offset, page.offset + page.limit) with their reasons.

    ``page.served``: never picked again; positions are absolute, so the top-story slots and the caps of the first
    CAP_DEPTH positions count the served pages.
    ``deadline`` (time.monotonic()): past it, :class:`RankTimeout`.
    ``covisit``: the reader's co-visitation candidates (serving.personal.readers.CovisitCache.boost), or None.
    ``clusters``: the reader's "readers like you" candidates (serving.personal.clusters.ClusterCache.boost), or None.
    """
    offset, limit, served = page.offset, page.limit, page.served
    n = len(pool.story_ids)
    if n == 0 or limit <= 0:
        return []
    sc = _score(pool, view, deadline, covisit, clusters)
    allowed = np.isfinite(sc.score)
    if served is not None:
        allowed &= ~served
    want = offset + limit
    n_slots = sum(1 for p in TOP_SLOTS if offset <= p < want)
    tops = pool.top[allowed[pool.top] & ~sc.read_mask[pool.top]][: n_slots + 2 * MAX_PER_PUBLISHER].tolist()
    reserved = set(tops[:n_slots])  # the edition's best, kept for the top-story slots
    personal = (i for i in _ordered(sc.score, allowed, min(n, limit + len(tops) + 2 * CAP_DEPTH)) if i not in reserved)
    caps = _Caps(pool, served) if offset < CAP_DEPTH else None
    used: set[int] = set()
    deferred: list[int] = []
    top_iter = iter(tops)
    out: list[tuple[int, str]] = []
    for pos in range(offset, want):
        if caps is not None and pos >= CAP_DEPTH:
            caps, personal = None, _merge_deferred(deferred, personal, sc.score)
        pick, why = None, None
        if pos in TOP_SLOTS:
            pick, why = _take(top_iter, used, caps, deferred), "top_story"
        if pick is None:
            pick, why = _take(personal, used, caps, deferred), None
        if pick is None and caps is not None and deferred:  # nothing else fits: the caps give way
            pick, why = deferred.pop(0), None
        if pick is None:
            break
        used.add(pick)
        if caps is not None:
            caps.add(pick)
        out.append((pick, why or _reason(pool, view, pick, sc)))
    _check(deadline)
    return out


def _merge_deferred(deferred: list[int], personal, score: np.ndarray):
    """Past the capped positions, candidates held back by a cap come back in score order before the rest."""
    held = sorted(set(deferred), key=lambda i: (-float(score[i]), i))
    deferred.clear()
    return heapq.merge(held, personal, key=lambda i: (-float(score[i]), i))


def recency_fallback(pool, view: ProfileView, limit: int, served: np.ndarray | None):
    """The deterministic degraded feed: newest representative first (ties: story id), hidden sources and "fewer
    like this" still excluded, served items never again. Reason ``recent``."""
    allowed = np.ones(len(pool.story_ids), dtype=bool)
    if served is not None:
        allowed &= ~served
    for key in view.hidden:
        idx = pool.by_rep_publisher.get(key)
        if idx is not None:
            allowed[idx] = False
    for sid in view.fewer_ids:
        i = pool.index.get(sid)
        if i is not None:
            allowed[i] = False
    picks = pool.recency[allowed[pool.recency]][:limit].tolist()
    return [(i, "recent") for i in picks]


def _reason(pool, view: ProfileView, i: int, sc: _Scored) -> str:
    terms, recent, nearest = sc.terms, sc.recent, sc.nearest
    best, name = MIN_REASON, None
    for key in ("entity", "topic", "source", "place", "covisit", "clusters", "similar", "interest"):
        arr = terms.get(key)
        if arr is not None and float(arr[i]) > best:
            best, name = float(arr[i]), key
    if name == "entity":
        followed = set(view.entities)
        return "follows:entity/" + next(e for e in pool.entities[i] if e in followed)
    if name == "topic":
        followed = set(view.topics)
        return "follows:topic/" + next(t for t in pool.topics[i] if t in followed)
    if name == "source":
        followed = set(view.sources)
        return "follows:source/" + next(s for s in pool.sources[i] if s in followed)
    if name == "place":
        followed = set(view.places)
        hit = next((p for p in pool.places[i] if p in followed), None)
        if hit is None:  # matched as an entity: name the place as the reader followed it
            hit = next(p for p in view.places for e in pool.entities[i] if place_entity(p) == e)
        return "local:" + hit
    if name == "covisit":
        return "also_read:" + sc.covisit.source[pool.story_ids[i]]
    if name == "clusters":
        return "readers_like_you"
    if name in ("similar", "interest") and nearest is not None:
        return "similar_to:" + pool.story_ids[recent[int(nearest[i])]]
    if name == "interest":
        return "interest"
    return "popular"


def fold_interest(interest: dict | None, vector, at: int, weight: float) -> dict:
    """Add one read to the decayed interest sum: older evidence halves every INTEREST_HALF_LIFE_MS, so the
    direction drifts toward what the reader reads now. Out-of-order reads are decayed relative to the newest."""
    interest = dict(interest or {})
    v = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(v))
    if norm == 0 or weight <= 0:
        return interest
    v = v / norm
    cur = interest.get("vector")
    cur = np.asarray(cur, dtype=np.float64) if cur else np.zeros_like(v)
    mass = float(interest.get("mass") or 0.0)
    last = int(interest.get("at") or 0)
    if at >= last:
        decay = 0.5 ** ((at - last) / INTEREST_HALF_LIFE_MS) if mass > 0 else 1.0
        cur, mass, last = cur * decay + weight * v, mass * decay + weight, at
    else:
        w = weight * 0.5 ** ((last - at) / INTEREST_HALF_LIFE_MS)
        cur, mass = cur + w * v, mass + w
    return {"vector": [round(float(x), 5) for x in cur], "mass": round(mass, 6), "at": last}


def read_weight(kind: str, dwell_ms: int | None) -> float:
    w = READ_WEIGHTS.get(kind, 0.0)
    if kind == "READ" and dwell_ms is not None and dwell_ms < SHORT_DWELL_MS:
        w *= 0.3
    return w
