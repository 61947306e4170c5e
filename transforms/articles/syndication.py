"""Syndicated copies: MinHash of the body's word shingles, LSH banding over a 48 h window, one original per group.

Reads: ``Article`` dicts (body, language, publisher, first_seen_at) in processing order, and the publisher
registry (``is_wire``, ``authority``). Writes: the same dicts with ``copy_of`` (the original's article_id, or None)
and ``syndication_group`` (the group's id, or None when the article matches nothing).

Parameters (DESIGN.md section 3 starting point, kept after measuring; ``benchmarks/articles_bench.py`` prints the
figures):
- Shingles: word 3-grams of the lower-cased body (title excluded: local outlets rewrite headlines). For scripts
  written without spaces (zh, ja, th, lo, km, my) character 4-grams of the text instead. Bodies with fewer than
  ``MIN_SHINGLES`` shingles are not grouped: briefs of a few lines collide by chance.
- 120 permutations (datasketch, fixed seed, so every worker computes the same signature). The estimate's standard
  error at J = 0.7 is sqrt(0.7 * 0.3 / 120) = 0.042.
- LSH with 20 bands x 6 rows: a pair becomes a candidate with probability 1 - (1 - J^6)^20, i.e. 0.27 at J = 0.5,
  0.92 at J = 0.7, 0.998 at J = 0.8 and > 0.9997 at J = 0.83 (an original plus 20 % local text). The S-curve's
  midpoint (1/20)^(1/6) = 0.61 sits below the 0.7 bar, so recall at the bar is high, and candidates are then
  verified on the estimated Jaccard: a copy needs estimated J >= 0.7. Independent reports of one event score far
  below: on the 150 cross-publisher same-event pairs of ../shared/data/stories/basil-dev.jsonl the exact word
  3-gram Jaccard has median 0.02 and maximum 0.24 (long shared quotes), and no MinHash estimate reaches 0.7;
  an original plus 20 % local text is at 1/1.2 = 0.83. The bar has a wide margin on both sides
  (``benchmarks/articles_bench.py`` prints these figures).
  Known limit: a copy trimmed to less than ~70 % of the original falls under the bar (Jaccard, not containment).
- Window: 48 h of first-seen time. Entries older than the newest article's first_seen_at minus 48 h are evicted as
  articles arrive (no wall clock: the same input gives the same result in a backfill and in streaming).

The original of a group: the wire service's own copy if the group has one (the earliest if several), else the
earliest copy from the most authoritative publisher (ties: article_id). Decisions are made once, when an article
arrives, and never revised: an article's ``copy_of`` names the best original known at that moment, and
``syndication_group`` is stable (the id of the group's first member), so downstream consumers can rely on both.
When a wire copy arrives after some local copies, it becomes the original for everything after it; the earlier
copies keep pointing at the original they were given, and all share one group.

Determinism: :class:`SyndicationIndex` is a pure function of the sequence of articles fed to it (no clocks, no
randomness, ties broken by article_id), so the same input order gives the same groups.
"""

from __future__ import annotations

import heapq
import re
import zlib
from dataclasses import dataclass

import numpy as np

from transforms.common import HOUR_MS

NUM_PERM = 120
BANDS = 20
ROWS = 6
THRESHOLD = 0.7
WINDOW_MS = 48 * HOUR_MS
SHINGLE_WORDS = 3
SHINGLE_CHARS = 4
MIN_SHINGLES = 20
SEED = 1
NO_SPACE_LANGUAGES = {"zh", "ja", "th", "lo", "km", "my", "bo", "dz"}

_WORD = re.compile(r"\w+", re.U)


def shingles(body: str, language: str = "") -> set[bytes]:
    text = (body or "").lower()
    tokens = _WORD.findall(text)
    if language in NO_SPACE_LANGUAGES or (tokens and sum(map(len, tokens)) / len(tokens) > 12):
        chars = "".join(tokens)
        return {chars[i : i + SHINGLE_CHARS].encode("utf-8") for i in range(max(0, len(chars) - SHINGLE_CHARS + 1))}
    k = SHINGLE_WORDS
    return {" ".join(tokens[i : i + k]).encode("utf-8") for i in range(max(0, len(tokens) - k + 1))}


def _hash32(data: bytes) -> int:
    # CRC-32: deterministic across processes and ~20x faster than datasketch's default sha1 here. Its weak
    # avalanche does not matter: the affine32 scheme pre-mixes every input hash with the MurmurHash3 finalizer.
    return zlib.crc32(data)


def signature(body: str, language: str = "") -> np.ndarray | None:
    """MinHash hash values (uint32, NUM_PERM of them), or None when the body is too short to judge."""
    sh = shingles(body, language)
    if len(sh) < MIN_SHINGLES:
        return None
    from datasketch import MinHash

    m = MinHash(num_perm=NUM_PERM, seed=SEED, hashfunc=_hash32, scheme="affine32")
    m.update_batch(sorted(sh))
    return m.hashvalues.astype(np.uint32)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.count_nonzero(a == b)) / len(a)


@dataclass
class Entry:
    article_id: str
    publisher_id: str
    authority: float
    is_wire: bool
    first_seen_at: int
    group: str
    hashvalues: np.ndarray

    def original_rank(self) -> tuple:
        # smaller is better: wire first, then authority, then earliest, then id
        return (0 if self.is_wire else 1, -self.authority, self.first_seen_at, self.article_id)

    def to_tuple(self) -> tuple:
        return (
            self.article_id,
            self.publisher_id,
            float(self.authority),
            bool(self.is_wire),
            int(self.first_seen_at),
            self.group,
            self.hashvalues.astype(np.uint32).tobytes(),
        )

    @classmethod
    def from_tuple(cls, t: tuple) -> Entry:
        aid, pub, auth, wire, seen, group, hv = t
        return cls(aid, pub, float(auth), bool(wire), int(seen), group, np.frombuffer(hv, dtype=np.uint32).copy())


class SyndicationIndex:
    """MinHash LSH over a sliding window of first-seen time. One index per language (copies share a language)."""

    def __init__(self, registry=None, window_ms: int = WINDOW_MS, threshold: float = THRESHOLD):
        from datasketch import MinHashLSH

        if registry is None:
            from transforms.publishers import default_registry

            registry = default_registry()
        self.registry = registry
        self.window_ms = window_ms
        self.threshold = threshold
        self._lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM, params=(BANDS, ROWS))
        self._entries: dict[str, Entry] = {}
        self._heap: list = []  # (first_seen_at, article_id): eviction order, independent of arrival order
        self._groups: dict[str, set[str]] = {}
        self.newest_seen = None

    def __len__(self) -> int:
        return len(self._entries)

    # -- window -----------------------------------------------------------------------------------------------
    def _evict(self, now_seen: int) -> list[str]:
        horizon = now_seen - self.window_ms
        gone = []
        while self._heap and self._heap[0][0] < horizon:
            seen, aid = heapq.heappop(self._heap)
            e = self._entries.get(aid)
            if e is not None and e.first_seen_at == seen:  # else: a stale heap record of a replaced version
                self._remove(aid)
                gone.append(aid)
        return gone

    def _remove(self, aid: str) -> None:
        e = self._entries.pop(aid, None)
        if e is None:
            return
        self._lsh.remove(aid)
        members = self._groups.get(e.group)
        if members is not None:
            members.discard(aid)
            if not members:
                del self._groups[e.group]

    def _insert(self, e: Entry) -> None:
        from datasketch import MinHash

        m = MinHash(num_perm=NUM_PERM, seed=SEED, hashvalues=e.hashvalues, scheme="affine32")
        self._lsh.insert(e.article_id, m, check_duplication=False)
        self._entries[e.article_id] = e
        heapq.heappush(self._heap, (e.first_seen_at, e.article_id))
        self._groups.setdefault(e.group, set()).add(e.article_id)

    def restore(self, entries: list[Entry], newest_seen: int | None) -> None:
        """Rebuild from persisted entries (in the order they were inserted) and the persisted clock."""
        for e in entries:
            if e.article_id in self._entries:
                self._remove(e.article_id)
            self._insert(e)
        self.newest_seen = newest_seen

    def entries(self) -> list[Entry]:
        """Live entries in insertion order (what to persist to rebuild an identical index)."""
        return list(self._entries.values())

    # -- decisions ----------------------------------------------------------------------------------------------
    def assign(self, article: dict) -> tuple[dict, Entry | None]:
        """Set copy_of / syndication_group on a copy of ``article``; return it with the entry to persist (None if
        the article was not indexed, e.g. a body too short)."""
        out = dict(article, copy_of=None, syndication_group=None)
        aid = article["article_id"]
        seen = int(article.get("first_seen_at") or 0)
        self.newest_seen = seen if self.newest_seen is None else max(self.newest_seen, seen)
        self._evict(self.newest_seen)
        previous = self._entries.get(aid)
        if previous is not None:
            self._remove(aid)  # a new version replaces the old one's signature
        hv = signature(article.get("body") or "", article.get("language") or "")
        if hv is None:
            return out, None
        pub = self.registry.get(article.get("publisher_id") or "") if self.registry is not None else None
        authority = pub.authority if pub is not None else 0.1
        is_wire = bool(pub.is_wire) if pub is not None else False

        from datasketch import MinHash

        query = MinHash(num_perm=NUM_PERM, seed=SEED, hashvalues=hv, scheme="affine32")
        matches = []
        for cand in sorted(self._lsh.query(query)):
            e = self._entries.get(cand)
            if e is None:
                continue
            j = jaccard(hv, e.hashvalues)
            if j >= self.threshold:
                matches.append((j, e))
        if previous is not None:
            group = previous.group
        elif matches:
            # the best match's group; ties -> the older group (smaller first-seen of its founder), then id
            best = max(matches, key=lambda m: (m[0], -m[1].first_seen_at, m[1].article_id))
            group = best[1].group
        else:
            group = aid
        entry = Entry(aid, article.get("publisher_id") or "", authority, is_wire, seen, group, hv)
        if matches or previous is not None:
            members = [self._entries[m] for m in sorted(self._groups.get(group, ()))] + [entry]
            if len(members) > 1:
                original = min(members, key=Entry.original_rank)
                out["syndication_group"] = group
                out["copy_of"] = None if original.article_id == aid else original.article_id
        self._insert(entry)
        return out, entry
