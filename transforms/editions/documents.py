"""The served documents: cards, pages, pools, story coverage and aliases; their canonical bytes and validation.

Reads ranked stories (:mod:`transforms.editions.cycle`); writes nothing (PublishSnapshots stores the bytes).

- Canonical JSON: sorted keys, no whitespace, UTF-8, floats rounded to 6 significant digits; times are RFC 3339
  UTC strings derived from event times only (``generated_at`` is the cycle time, never the wall clock), so a
  backfill run twice over the same input writes byte-identical objects.
- Versions: a page's, pool's and aliases map's version is the cycle's minute number (ms since epoch // 60,000):
  deterministic, increasing, and the same in backfill and streaming; a replayed cycle rewrites the same path with
  the same bytes (PublishSnapshots treats that as done). A story coverage object's version is the story's
  data-defined version (see :mod:`transforms.editions.book`).
- The 64-d pool vector is a fixed Rademacher random projection of the story centroid (entries +-1/8 drawn from
  sha256 in counter mode, keyed by the input dimension), L2-normalised and rounded to 4 decimals. Johnson-
  Lindenstrauss keeps cosines roughly (+-0.1 at 64 d) which is all For you needs to match a reader's 64-d interest
  vector (built from the same pool vectors); hashing instead of a seeded RNG keeps it identical across numpy
  versions and machines.
"""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import datetime, timezone

import numpy as np

from schemas.pages import PageError, validate_page

PROJECTION_DIM = 64
PAGE_SCHEMA = "newsroom.edition_page/v1"
POOL_SCHEMA = "newsroom.candidate_pool/v1"
COVERAGE_SCHEMA = "newsroom.story_coverage/v1"
ALIASES_SCHEMA = "newsroom.aliases/v1"


@functools.lru_cache(maxsize=4096)
def _day(day: int) -> str:
    return datetime.fromtimestamp(day * 86400, tz=timezone.utc).strftime("%Y-%m-%dT")


def iso(ms) -> str:
    """RFC 3339 UTC with millisecond precision when there is any (strftime once per day, then arithmetic)."""
    ms = int(ms)
    day, rest = divmod(ms, 86_400_000)
    sec, milli = divmod(rest, 1000)
    h, sec = divmod(sec, 3600)
    m, sec = divmod(sec, 60)
    if milli:
        return f"{_day(day)}{h:02d}:{m:02d}:{sec:02d}.{milli:03d}Z"
    return f"{_day(day)}{h:02d}:{m:02d}:{sec:02d}Z"


def round_sig(x: float, digits: int = 6) -> float:
    return float(f"{float(x):.{digits}g}")


def canonical_bytes(doc: dict) -> bytes:
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


_VOLATILE = ("version", "cycle", "generated_at", "score")


def _strip(node):
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in _VOLATILE}
    if isinstance(node, (list, tuple)):
        return [_strip(v) for v in node]
    return node


def content_digest(doc: dict) -> str:
    """Digest of what a reader sees, without version, cycle times and scores: an unchanged page is not rewritten."""
    return hashlib.sha256(canonical_bytes(_strip(doc))).hexdigest()


@functools.lru_cache(maxsize=8)
def projection_matrix(dim_in: int, dim_out: int = PROJECTION_DIM) -> np.ndarray:
    need = dim_in * dim_out
    chunks, counter = [], 0
    while sum(len(c) for c in chunks) * 8 < need:
        chunks.append(hashlib.sha256(f"newsroom-projection/{dim_in}x{dim_out}/{counter}".encode()).digest())
        counter += 1
    bits = np.unpackbits(np.frombuffer(b"".join(chunks), np.uint8))[:need]
    return (bits.astype(np.float64) * 2.0 - 1.0).reshape(dim_in, dim_out) / np.sqrt(dim_out)


def project(centroids: np.ndarray) -> np.ndarray:
    """(k, d) centroids -> (k, 64) unit vectors rounded to 4 decimals."""
    c = np.asarray(centroids, np.float64)
    if c.ndim != 2 or c.shape[0] == 0:
        return np.zeros((0, PROJECTION_DIM))
    v = c @ projection_matrix(c.shape[1])
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return np.round(v / np.where(n > 0, n, 1.0), 4)


# ------------------------------------------------------------------------------------------------- validation
class SnapshotRejected(ValueError):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def validate(
    kind: str, doc: dict, previous_count: int | None = None, min_stories: int = 1, data: bytes | None = None
) -> None:
    """Raise :class:`SnapshotRejected` unless ``doc`` may go live.

    The schema is checked on the JSON that is stored (``data``, the canonical bytes; computed when not given):
    documents hold tuples where JSON has arrays. Pages and pools: at least ``min_stories`` stories, a
    representative (with a title and a URL) for every story, and -- pages -- not fewer than half the stories of
    the version live now (``previous_count``).
    """
    try:
        validate_page(kind, json.loads(data if data is not None else canonical_bytes(doc)))
    except PageError as exc:
        raise SnapshotRejected("schema", str(exc)) from None
    if kind not in ("edition_page", "candidate_pool"):
        return
    stories = doc["stories"]
    if len(stories) < min_stories:
        raise SnapshotRejected("too_few_stories", f"{len(stories)} < {min_stories}")
    for s in stories:
        rep = s.get("representative") or {}
        if not rep.get("title") or not rep.get("url"):
            raise SnapshotRejected("no_representative", f"story {s.get('story_id')}")
    if kind == "edition_page" and previous_count:
        lost = previous_count - len(stories)
        if lost * 2 > previous_count:
            raise SnapshotRejected("lost_more_than_half", f"{previous_count} -> {len(stories)} stories")
