"""MinHash user clusters and their decayed click counts, plain Python (no Beam), as in Das et al. 2007.

A reader is the set S of stories it read (READ or CLICK, the reads the profile store keeps: at most 200, the last
``lookback_ms``, default 30 days). Two readers' Jaccard similarity J = |S1 & S2| / |S1 | S2| is what MinHash
estimates: for one random hash h, P[min h(S1) == min h(S2)] = J.

Clusters: ``p`` hash values concatenated make one cluster id, so two readers share it with probability J^p; that
is done ``q`` times with independent hashes, so each reader is in ``q`` clusters and two readers share at least one
with probability 1 - (1 - J^p)^q. We take **p = 3, q = 10** (small values, as the paper's were):

    J      0.05   0.1    0.2    0.3    0.5    0.8
    share  0.001  0.01   0.08   0.24   0.74   1.00     (at least one common cluster)

so a reader's clusters hold readers with a real overlap of their reading (J >= 0.3 or so) and almost never a
stranger with one story in common, while q = 10 gives every reader ten chances to meet its neighbours. p = 2 lets
J = 0.2 readers share a cluster 34% of the time (a common top story is enough); p = 4 leaves readers with 3 to 10
reads (most of them) with nearly no partner. The cost is p x q = 30 hash values per story read.

The hash family: datasketch's MinHash (``scheme="affine32"``, ``num_perm = p * q``, seed ``SEED``) over the story
id's decimal bytes hashed by CRC-32, as the near-duplicate signatures of transforms/articles/syndication.py: the
same seed on every worker and every day, so a reader whose reading did not change keeps the same cluster ids from
one daily run to the next and its clusters' online counts carry over. A cluster id is the first 63 bits of
BLAKE2b over (repetition, its p hash values): an integer, like a story id.

Thresholds (each a flag of the daily job, pipelines/userclusters.py):

- ``min_stories`` (3): readers with fewer distinct stories are not clustered (one or two reads make J a coin toss:
  every reader of one top story would share clusters).
- ``min_members`` (5): a cluster with fewer members is dropped. Privacy: a member's "readers like you" items are
  the clicks of the others, and with five at least no one reader's clicks can be read off them.

Per-cluster counts (:class:`ClusterCounts`, kept online by the co-visitation job): each accepted read of a member
(a READ or CLICK the co-visitation reader check accepted: not a duplicate event id, not late, not a re-read in the
window, not from an abnormal reader) adds 1 to the story's count in each of the reader's clusters, with the
co-visitation decay (half-life 24 h) and bound (the 50 largest), and to the cluster's decayed total. The paper's
score of story s for reader u is the sum over u's clusters c of count(c, s) / total(c); count and total are held
as of the same time, so the fraction needs no decay at the reader.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass

from transforms.common import HOUR_MS
from transforms.covisit.counts import Increment, Neighbours
from transforms.covisit.counts import Params as CovisitParams

P_HASHES = 3
Q_REPEATS = 10
SEED = 2007
MIN_STORIES = 3
MIN_MEMBERS = 5
LOOKBACK_MS = 30 * 24 * HOUR_MS
ID_MASK = (1 << 63) - 1


@dataclass(frozen=True)
class Params:
    p: int = P_HASHES
    q: int = Q_REPEATS
    seed: int = SEED
    min_stories: int = MIN_STORIES
    min_members: int = MIN_MEMBERS
    lookback_ms: int = LOOKBACK_MS

    def __post_init__(self):
        for name in ("p", "q", "min_stories", "min_members", "lookback_ms"):
            if not getattr(self, name) > 0:
                raise ValueError(f"user clusters: {name} must be > 0, got {getattr(self, name)}")
        if self.p * self.q > 1024:
            raise ValueError(f"user clusters: p x q must be at most 1024 hash values, got {self.p * self.q}")


def _hash32(data: bytes) -> int:
    return zlib.crc32(data)  # the affine32 scheme mixes it (transforms/articles/syndication.py)


def signature(stories, params: Params = Params()):
    """The ``p * q`` MinHash values of a set of story ids (ints or decimal strings)."""
    from datasketch import MinHash

    m = MinHash(num_perm=params.p * params.q, seed=params.seed, hashfunc=_hash32, scheme="affine32")
    m.update_batch(sorted({str(int(s)).encode() for s in stories}))
    return m.hashvalues


def clusters_of(stories, params: Params = Params()) -> list[int]:
    """The reader's ``q`` cluster ids (p hash values concatenated, q times); [] under ``min_stories`` stories."""
    distinct = {int(s) for s in stories}
    if len(distinct) < params.min_stories:
        return []
    values = signature(distinct, params)
    out = []
    for j in range(params.q):
        band = [int(v) for v in values[j * params.p : (j + 1) * params.p]]
        digest = hashlib.blake2b(struct.pack(f">I{params.p}Q", j, *band), digest_size=8).digest()
        out.append(int.from_bytes(digest, "big") & ID_MASK)
    return out


def memberships(readers: dict, params: Params = Params()) -> dict[str, list[int]]:
    """The whole daily computation over ``{reader_id: story ids}`` (tests, small replays): each reader's clusters
    that have at least ``min_members`` members, sorted; readers without one map to []."""
    of = {r: clusters_of(s, params) for r, s in readers.items()}
    size: dict[int, int] = {}
    for cs in of.values():
        for c in set(cs):
            size[c] = size.get(c, 0) + 1
    return {r: sorted({c for c in cs if size[c] >= params.min_members}) for r, cs in of.items()}


@dataclass
class ClusterCounts(Neighbours):
    """One cluster's decayed click counts per story (bounded like co-visitation neighbours) and its decayed total
    of every click (kept or not), all as of ``ref_at``."""

    total: float = 0.0

    def click(self, story: int, at: int, params: CovisitParams = CovisitParams(), weight: float = 1.0) -> None:
        if at > self.ref_at and self.total:
            self.total *= 0.5 ** ((at - self.ref_at) / params.half_life_ms)
        self.add(Increment(0, int(story), int(at), float(weight)), params)
        self.total += weight * 0.5 ** ((self.ref_at - int(at)) / params.half_life_ms)


def score(lists) -> dict[str, float]:
    """``{story_id: sum over the reader's clusters of count / total}`` from ``[(items, total, at)]``: the paper's
    score (count and total are as of the same ``at``, so their ratio needs no decay to the reader's clock)."""
    out: dict[str, float] = {}
    for items, total, _at in lists:
        if not total or total <= 0:
            continue
        for story, count in items:
            out[str(story)] = out.get(str(story), 0.0) + float(count) / float(total)
    return out
