"""The story writer's state: :class:`Member` (an article in a live story), :class:`Story` (its members, counters,
recency-weighted centroid) and :class:`WriterOutput` (one decision and its durable effect on the story store).

Plain data with the arithmetic that must give the same bits in a restored writer (centroids, representatives). Reads
:class:`transforms.stories.vocabulary.features.ArticleFeatures` and the store's member rows; writes member rows.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from transforms.stories.vocabulary.features import ArticleFeatures, decode_vector, encode_vector

LATEST_ORIGINALS = 16  # the latest originals a story keeps at hand (scoring.OPINION_MEMBERS: a join's second opinion)


class StoreBehind(RuntimeError):
    """The story store has not yet applied every change this writer made (transient: retry later)."""


@dataclass
class Member:
    article_id: str
    at: int
    source: str
    vector: np.ndarray  # float32, unit
    terms: tuple[str, ...]
    term_tf: tuple[int, ...]
    entities: tuple[str, ...]
    is_copy: bool = False
    places: tuple[str, ...] = ()  # key chains (transforms/stories/vocabulary/places.py)
    time_known: bool = True
    has_body: bool = True
    lead_only: bool = False  # its body is a lead only (ArticleFeatures.lead_only)
    dated_by_text: bool = False  # its time is the dateline its body prints (ArticleFeatures.dated_by_text)
    link_vector: np.ndarray | None = None
    title: str = ""
    seq: int = 0  # the writer seq of the change that placed it (audit)
    copy_of: str | None = None
    # Derived once per member (its fields never change): its vector as float64 and its TF weights (1 + log tf).
    _v64: np.ndarray | None = field(default=None, repr=False, compare=False)
    _tfw: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def v64(self) -> np.ndarray:
        """``vector`` as float64 (what every sum and dot product of the writer reads), converted once."""
        if self._v64 is None:
            self._v64 = self.vector.astype(np.float64)
        return self._v64

    def term_weights(self) -> np.ndarray:
        """``[1 + log(tf)]`` of its terms: the IDF-free factor of its TF-IDF weights (math.log, as the dicts')."""
        if self._tfw is None:
            self._tfw = np.array([1.0 + math.log(c) for c in self.term_tf], dtype=np.float64)
        return self._tfw

    def to_record(self) -> dict:
        return {
            "copy_of": self.copy_of,
            "at": int(self.at),
            "source": self.source,
            "vector": encode_vector(self.vector),
            "terms": list(self.terms),
            "term_tf": list(self.term_tf),
            "entities": list(self.entities),
            "places": list(self.places),
            "is_copy": bool(self.is_copy),
            "time_known": bool(self.time_known),
            "has_body": bool(self.has_body),
            "lead_only": bool(self.lead_only),
            "dated_by_text": bool(self.dated_by_text),
            "link_vector": encode_vector(self.link_vector),
            "title": self.title,
            "seq": int(self.seq),
        }

    @classmethod
    def from_record(cls, article_id: str, r: dict) -> Member:
        return cls(
            article_id=article_id,
            at=int(r["at"]),
            source=r.get("source", ""),
            vector=decode_vector(r["vector"]),
            terms=tuple(r.get("terms", ())),
            term_tf=tuple(r.get("term_tf", ())),
            entities=tuple(r.get("entities", ())),
            places=tuple(r.get("places", ())),
            is_copy=bool(r.get("is_copy", False)),
            time_known=bool(r.get("time_known", True)),
            has_body=bool(r.get("has_body", True)),
            lead_only=bool(r.get("lead_only", False)),
            dated_by_text=bool(r.get("dated_by_text", False)),
            link_vector=decode_vector(r.get("link_vector")),
            title=r.get("title", ""),
            seq=int(r.get("seq", 0)),
            copy_of=r.get("copy_of"),
        )

    @classmethod
    def from_features(cls, f: ArticleFeatures, is_copy: bool, seq: int) -> Member:
        return cls(
            article_id=f.article_id,
            at=int(f.first_seen_at),
            source=f.source or f"article:{f.article_id}",
            vector=np.asarray(f.vector, dtype=np.float32),
            terms=tuple(f.terms),
            term_tf=tuple(f.term_tf),
            entities=tuple(f.entities),
            places=tuple(f.places),
            is_copy=is_copy,
            time_known=f.time_known,
            has_body=f.has_body,
            lead_only=f.lead_only,
            dated_by_text=f.dated_by_text,
            link_vector=None if f.link_vector is None else np.asarray(f.link_vector, dtype=np.float32),
            title=f.title,
            seq=seq,
            copy_of=f.copy_of if is_copy else None,
        )


@dataclass
class Story:
    story_id: int
    language: str
    csum: np.ndarray  # recency-weighted sum of member vectors (float64)
    ct: int  # time the sum is decayed to
    members: dict[str, Member] = field(default_factory=dict)
    tf: Counter = field(default_factory=Counter)  # term -> number of non-copy members containing it
    ent: Counter = field(default_factory=Counter)
    source_count: Counter = field(default_factory=Counter)
    last_repair_at: int | None = None
    first_at: int = 2**62
    last_at: int = -(2**62)
    n: int = 0  # originals (non-copy members)
    n_body: int = 0
    n_untimed: int = 0
    version: int = 0
    _profile: tuple | None = None  # (key columns' epoch, per kind (keys, count / n, columns)): profiles.py
    # The profile's top keys as last ranked (a profiles.Ranking per kind), and the keys whose counts rose since:
    # counts only rise on a live story (a repair builds a new Story), so the new top keys are the top of (old top +
    # risen keys).
    _top: tuple | None = None
    _risen: tuple = field(default_factory=lambda: (set(), set()))
    # Members in arrival order and their vectors as float64 rows (grown, not rebuilt, as members join).
    _rows: list | None = field(default_factory=list)
    _mat: np.ndarray | None = None  # float32: the member vectors as they are (a product reads half the bytes)
    _mat_n: int = 0
    _mat_original: np.ndarray | None = None  # whether each row of _mat is an original (grown with it)
    _mat_norm_max: float | None = (
        0.0  # the largest Euclidean norm of a row of _mat (grown with it: representative's slack)
    )
    # The originals' float64 vectors summed in article-id order (:meth:`dense_sum`) and the last id in that sum.
    _dv: np.ndarray | None = None
    _dv_last: str = ""
    _centroid: tuple | None = None  # (the csum it was computed from, centroid): csum is replaced, never changed
    # The representative's last full pass (:class:`RepBase`): the member rows' products with the centroid then, so a
    # later call scores only the rows that can still be the best (grown stories: most calls follow one join).
    _rep: object = None
    # The originals in article-id order and the LATEST_ORIGINALS latest in (at, id) order, kept as originals arrive
    # (None: built when next read); the repair reads both for every story it scores, at every tick.
    _by_id: list | None = None
    _late: list | None = None
    # What the sums of its originals' TF-IDF unit rows need besides the IDF (transforms/stories/writer/lexical.py,
    # :meth:`LexicalStats.story_sums`): grown as originals arrive in id order.
    _sums: object = None

    def add(self, m: Member) -> None:
        replaced = m.article_id in self.members
        if replaced:
            self._rows = None  # replaced: rebuild the member matrix
            self._by_id = self._late = self._sums = None
        elif self._rows is not None:
            self._rows.append(m)
        if not m.is_copy and not replaced:
            self._keep_original(m)
        if not m.is_copy:  # the dense sum grows while originals arrive in id order (a sum row after row)
            if not replaced and self.n == 0:
                self._dv, self._dv_last = m.v64, m.article_id
            elif not replaced and self._dv is not None and m.article_id > self._dv_last:
                self._dv, self._dv_last = self._dv + m.v64, m.article_id
            else:
                self._dv = None
        self.members[m.article_id] = m
        self.first_at = min(self.first_at, m.at)
        self.last_at = max(self.last_at, m.at)
        self.source_count[m.source] += 1
        self.n_untimed += 0 if m.time_known else 1
        if not m.is_copy:
            self.n += 1
            self.n_body += 1 if m.has_body else 0
            self.tf.update(m.terms)  # Counter.update counts in C: +1 per occurrence, as a loop would
            self.ent.update(m.entities)
            if self._top is not None:
                self._risen[0].update(m.terms)
                self._risen[1].update(m.entities)
        self.version += 1
        self._profile = None

    def _keep_original(self, m: Member) -> None:
        """Grow the id-ordered and the latest originals by a new original (or mark them for a rebuild)."""
        by_id = self._by_id
        if by_id is not None:
            if not by_id or m.article_id > by_id[-1].article_id:
                by_id.append(m)
            else:
                self._by_id = None
        late = self._late
        if late is not None:
            key = (m.at, m.article_id)
            if len(late) < LATEST_ORIGINALS or key > (late[0].at, late[0].article_id):
                bisect.insort(late, m, key=lambda x: (x.at, x.article_id))
                if len(late) > LATEST_ORIGINALS:
                    del late[0]

    @property
    def originals(self) -> list[Member]:
        return [m for m in self.members.values() if not m.is_copy]

    def originals_by_id(self) -> list[Member]:
        """The originals in article-id order (``sorted(originals, key=article_id)``; the caller must not change it)."""
        if self._by_id is None:
            self._by_id = sorted(self.originals, key=lambda m: m.article_id)
        return self._by_id

    def latest_originals(self) -> list[Member]:
        """``sorted(originals, key=(at, article_id))[-LATEST_ORIGINALS:]`` (the caller must not change it)."""
        if self._late is None:
            self._late = sorted(self.originals, key=lambda m: (m.at, m.article_id))[-LATEST_ORIGINALS:]
        return self._late

    @property
    def time_known(self) -> bool:
        return self.n_untimed == 0

    @property
    def has_body(self) -> bool:
        if self.n == 0:
            return True
        return 2 * self.n_body >= self.n

    @property
    def sources(self) -> set[str]:
        return set(self.source_count)

    def centroid(self) -> np.ndarray:
        """``csum`` at unit length (the writer never changes a csum in place, it assigns a new one: kept per csum)."""
        cached = self._centroid
        if cached is None or cached[0] is not self.csum:
            n = float(np.linalg.norm(self.csum))
            cached = self._centroid = (self.csum, (self.csum / n) if n > 0 else self.csum)
        return cached[1]

    def dense_sum(self) -> np.ndarray:
        """Sum of the originals' vectors (float64) in article-id order, as ``np.sum(np.stack(rows), axis=0)`` gives
        it (numpy adds the rows one after the other): kept while originals arrive in id order, else re-summed."""
        if self._dv is None:
            ms = sorted(self.originals, key=lambda m: m.article_id)
            self._dv, self._dv_last = np.sum(np.stack([m.v64 for m in ms]), axis=0), ms[-1].article_id
        return self._dv

    def representative(self) -> str:
        """The original member closest to the centroid (a copy only if there is no original); ties: smallest id.

        Row by row ``sum(v * c)`` (numpy's pairwise sum along each row), so a member's score does not depend on
        its row or on the other members: a restored story, whose members arrive in another order, picks the same.
        Only the rows that can be the best are summed so: a matrix-vector product (BLAS, any order) tells them, as
        every way of summing a row's products lies within :func:`_dot_slack32` of the exact sum (one row left: it).
        A story of REP_INCREMENTAL members or more keeps the products of its last full pass (:class:`RepBase`) and
        then computes only the rows that can still reach the best one (:meth:`RepBase.score`): the same row wins.
        """
        rows = self._rows
        if rows is None or len(rows) != len(self.members) or self._mat_norm_max is None:
            rows = self._rows = sorted(self.members.values(), key=lambda m: m.article_id)
            self._mat = None  # (no norm: a story pickled before the norms were kept)
        if self._mat is None or self._mat_n < len(rows):
            self._grow_rows(rows)
        k = len(rows)
        mat, c = self._mat[:k], self.centroid()
        c32 = c.astype(np.float32)  # the products that tell the rows apart are float32 ones (_dot_slack32)
        delta = _dot_slack32(len(c), float(np.sqrt(np.dot(c, c)))) * self._mat_norm_max
        eligible = self._mat_original[:k] if 0 < self.n < k else None  # copies only when there is no original
        base = self._rep if isinstance(self._rep, RepBase) and self._rep.rows is rows else None
        scored = base.score(mat, c, c32, delta, self._mat_norm_max, eligible) if base is not None else None
        if scored is None:  # a full pass: every row's product (kept for the next calls when the story is large)
            idx, approx = np.arange(k), (mat @ c32).astype(np.float64)
            self._rep = RepBase(rows, c, approx, delta) if k >= REP_INCREMENTAL else None
        else:
            idx, approx = scored
        if eligible is not None:
            approx = np.where(eligible[idx], approx, -np.inf)
        maybe = idx[approx >= approx.max() - 2.0 * delta]
        if len(maybe) == 1:
            return rows[int(maybe[0])].article_id
        # each row's pairwise sum of float64 products (float32 rows widen exactly): the same bits whatever the rows
        scores = (mat[maybe].astype(np.float64) * c).sum(axis=1)
        return min(rows[i].article_id for i in maybe[scores == scores.max()].tolist())

    def _grow_rows(self, rows: list[Member]) -> None:
        """The member matrix (float32 rows in ``rows`` order), whether each row is an original, the largest row norm."""
        have = 0 if self._mat is None else self._mat_n
        if self._mat is None or self._mat.shape[0] < len(rows):
            size = max(16, 2 * len(rows))
            grown = np.empty((size, len(self.csum)), dtype=np.float32)
            original = np.empty(size, dtype=bool)
            if have:
                grown[:have], original[:have] = self._mat[:have], self._mat_original[:have]
            self._mat, self._mat_original = grown, original
        if not have:
            self._mat_norm_max = 0.0
        for i in range(have, len(rows)):
            m = rows[i]
            row = self._mat[i]
            row[:] = m.vector
            self._mat_original[i] = not m.is_copy
            self._mat_norm_max = max(self._mat_norm_max, math.sqrt(float(np.dot(m.v64, m.v64))))
        self._mat_n = len(rows)


REP_INCREMENTAL = 64  # members from which a story keeps its representative's products between calls


class RepBase:
    """A story's member rows' products with the centroid ``c0`` of its last full representative pass, sorted.

    The centroid moves a little at each join: a row's exact product with the centroid ``c`` now lies within
    ``|v| |c - c0|`` of its product with ``c0`` (Cauchy-Schwarz), and the kept product within ``delta0`` of that. So
    once the rows that joined since and the best kept rows are scored with ``c`` (the best of them is at least a
    lower bound ``L`` of the best row's exact sum), a kept row whose product plus those margins stays below ``L``
    can be the best neither alone nor in a tie: :meth:`score` leaves it out. The sorted products make those
    rows a suffix; when the rows left to score are many, a full pass is cheaper (and becomes the new base)."""

    __slots__ = ("rows", "n", "c0", "delta0", "order", "neg_sorted")

    def __init__(self, rows: list, c0: np.ndarray, approx: np.ndarray, delta0: float):
        self.rows, self.n, self.c0, self.delta0 = rows, len(approx), c0.copy(), delta0
        self.order = np.argsort(-approx, kind="stable")
        self.neg_sorted = -approx[self.order]  # ascending: the kept products, best first, negated

    def score(self, mat: np.ndarray, c: np.ndarray, c32: np.ndarray, delta: float, norm_max: float, eligible):
        """(indices, products with ``c``) of every row that can be the best under ``c`` (each other row is surely
        below one of them), or None when a full pass is due (too many rows left, or no eligible row scored)."""
        k, n = len(mat), self.n
        # |c - c0| computed in floats: a relative margin far above its rounding, and a tiny absolute one
        drift = float(np.linalg.norm(c - self.c0)) * (1.0 + 1e-9) + 1e-300
        head = self.order[: min(n, 8)]
        idx = np.concatenate([head, np.arange(n, k)]) if k > n else head
        approx = (mat[idx] @ c32).astype(np.float64)
        ok = approx if eligible is None else approx[eligible[idx]]
        if not len(ok):
            return None
        floor = float(ok.max()) - 2.0 * delta  # <= the best row's exact sum (each product is within delta of it)
        reach = floor - norm_max * drift - self.delta0 - delta  # a kept row below this is below ``floor``
        p = int(np.searchsorted(self.neg_sorted, -reach, side="right"))  # the kept rows whose product >= reach
        if p + (k - n) > k // 3:
            return None
        if p > len(head):
            more = self.order[len(head) : p]
            idx, approx = np.concatenate([idx, more]), np.concatenate([approx, (mat[more] @ c32).astype(np.float64)])
        return idx, approx


def _dot_slack(dim: int, c_norm: float) -> float:
    """A bound, per unit of a row's norm, on how far two sums of the ``dim`` products of that row and a vector of
    norm ``c_norm`` can lie apart, whatever their order (numpy's pairwise sum, BLAS's blocks with or without FMA):
    each lies within ``dim * u / (1 - dim * u) * sum|v_i c_i|`` of the exact value (u = 2**-53), and
    ``sum|v_i c_i| <= |v| |c|`` (Cauchy-Schwarz); twice that, doubled again for the norms' own rounding."""
    return 4.0 * (dim + 2) * 2.0**-53 * c_norm * 1.01


def _dot_slack32(dim: int, c_norm: float) -> float:
    """:func:`_dot_slack` of float32 rows times the vector rounded to float32 (each element within u = 2**-24 of
    it, relative), the products summed in float32 in any order: within ``(dim + 1) * u / (1 - dim * u) * |v| |c|`` of
    the exact product with the float64 vector, which a float64 sum lies within :func:`_dot_slack` of; the same
    doubling."""
    return 4.0 * (dim + 3) * 2.0**-24 * c_norm * 1.01 + _dot_slack(dim, c_norm)


def decay(half_life_ms: float, dt: int) -> float:
    return 0.5 ** (dt / half_life_ms) if dt > 0 else 1.0


def recompute_centroid(members: list[Member], half_life_ms: float) -> tuple[np.ndarray, int]:
    """(recency-weighted sum, its time) from members: the same arithmetic as the running update, in (at, id) order.

    Used after merges and splits so that the counters of a repaired story come from its members.
    """
    ordered = sorted((m for m in members if not m.is_copy), key=lambda m: (m.at, m.article_id))
    if not ordered:
        ordered = sorted(members, key=lambda m: (m.at, m.article_id))
    csum = np.zeros(len(ordered[0].vector), dtype=np.float64)
    ct = ordered[0].at
    for m in ordered:  # in place (csum is this function's own array): the same products and sums, no copies
        if m.at > ct:
            csum *= decay(half_life_ms, m.at - ct)
            ct = m.at
        csum += m.v64
    return csum, ct


def recompute_centroids(groups: list[list[Member]], half_life_ms: float) -> list[tuple[np.ndarray, int]]:
    """:func:`recompute_centroid` of each group, bit for bit, in one pass over their members in (at, id) order (the
    repair's bisection sums both halves of ~9 cuts: one Python step per member instead of one per member and half).

    A member updates the sums of the groups that hold it, each decayed by its own factor, and a group it does not
    move in time is multiplied by 1.0, which changes no bit: every sum gets the operations of its own loop."""
    chosen = [[m for m in g if not m.is_copy] or list(g) for g in groups]
    holders: dict[str, list[int]] = {}
    members: dict[str, Member] = {}
    for i, g in enumerate(chosen):
        for m in g:
            members[m.article_id] = m
            holders.setdefault(m.article_id, []).append(i)
    sums = np.zeros((len(groups), len(chosen[0][0].vector)), dtype=np.float64)
    times: list[int | None] = [None] * len(groups)
    for m in sorted(members.values(), key=lambda m: (m.at, m.article_id)):
        rows = holders[m.article_id]
        factors = []
        for i in rows:
            t = times[i]
            factors.append(decay(half_life_ms, m.at - t) if t is not None and m.at > t else 1.0)
            times[i] = m.at if t is None or m.at > t else t
        sums[rows] = sums[rows] * np.array(factors)[:, None] + m.v64
    return [(sums[i].copy(), times[i]) for i in range(len(groups))]


@dataclass
class WriterOutput:
    """One decision: the public change plus its durable effect on the story store."""

    change: dict  # StoryChange record
    story_meta: dict | None = None  # meta of change.story_id after the change
    members: dict[str, dict] = field(default_factory=dict)  # member rows to write under change.story_id
    other_meta: dict | None = None  # SPLIT: meta of the new story; MERGE: meta of the absorbed (alias) story
    other_centroid: list[float] | None = None  # SPLIT: the new story's centroid
    other_members: dict[str, dict] = field(default_factory=dict)  # SPLIT: rows moved to the new story
    # Why (a writer with ``explain`` on: the backfill): transforms/stories/writer/explanations.py. Never read by the store.
    explain: dict | None = None

    def to_dict(self) -> dict:
        d = {
            "change": self.change,
            "story_meta": self.story_meta,
            "members": self.members,
            "other_meta": self.other_meta,
            "other_centroid": self.other_centroid,
            "other_members": self.other_members,
        }
        if self.explain is not None:
            d["explain"] = self.explain
        return d

    @classmethod
    def from_dict(cls, d: dict) -> WriterOutput:
        return cls(**d)
