"""Which article represents a story in an edition, and which four support it.

Reads a :class:`~transforms.editions.book.storybook.StoryBook`; writes nothing. Per candidate story and edition, every member
article is scored (weights in editions.json ``ranking.representative``):

    centrality  cosine of the article's hashed title vector with the story's summed title vector (how typical
                its headline is of the story; articles carry no embedding of their own in StoryChange)
    authority   the publisher's topic authority for the story's primary section
    freshness   0.5 ** ((story's newest original - article first seen) / 4 h), relative so it is cycle-independent
    headline    quality of the headline, :func:`~transforms.editions.book.headlines.assess` (length x (1 - clickbait))
    + first-report boost (the story's earliest original), + local boost (publisher of the edition's region),
    - copy penalty (a syndicated copy rarely represents), - opinion penalty (news represents, opinion is labelled)

The best article wins, but articles within 5 % of it are near-ties: the choice among them rotates with
``hash(story, edition, hour)`` (splitmix64), so every reader sees the same card for an hour, and cards rotate
between hours rather than per request. Paywalled articles (``accessible_for_free`` false, labelled paid) lose a
near-tie to a free one: when the near-ties mix both, the rotation chooses among the free ones only (a paywalled
article more than 5 % better still represents). A publisher -- an ownership group -- whose share of today's
representative impressions in the edition (position-weighted: fairness.py) exceeds the cap (10 %, once the edition
has counted a minimum) is passed over whenever the story has another group's article. The capped set is decided
at the start of each hour (cards must not flicker).

Supporting links: maximal marginal relevance (lambda 0.7) over the story's best article per publisher, similarity
= title-vector cosine, at most one per ownership group (publishers.json ``owner``: sister sites are one voice; never
the representative's group), at most one wire copy (a copy, or an article of a wire service).

:func:`choose_representatives` is vectorised over all candidate stories; its per-story twin (tests, benchmark) is in
tests/transforms/editions/loop_reference.py. The score's terms before the local boost read no edition: each
article's sum of them is made once per book lineage (:func:`score_prefix`) for every edition that ranks it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from transforms.common import HOUR_MS
from transforms.editions.book.storybook import StoryBook
from transforms.editions.cycle.arrays import best_first_by_group
from transforms.editions.vocabulary.config import Edition
from transforms.editions.vocabulary.params import RepresentativeParams, SupportingParams

_M64 = (1 << 64) - 1


@lru_cache(maxsize=4096)  # per edition id: every cycle hashes its edition's id
def edition_key(edition_id: str) -> int:
    return int(hashlib.sha256(edition_id.encode()).hexdigest()[:16], 16)


def _mix64_np(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def mix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def rotation_hash(story_ids: np.ndarray, edition_id: str, hour: int) -> np.ndarray:
    """hash(story, edition, hour) as uint64, vectorised (equal to :func:`rotation_hash_one`)."""
    salt = np.uint64(mix64(edition_key(edition_id) ^ (hour & _M64)))
    return _mix64_np(story_ids.astype(np.uint64) ^ salt)


def rotation_hash_one(story_id: int, edition_id: str, hour: int) -> int:
    return mix64((story_id & _M64) ^ mix64(edition_key(edition_id) ^ (hour & _M64)))


@dataclass
class Representatives:
    """Per candidate story (aligned with ``rows``): the chosen article row (-1: none) and its article group."""

    rows: np.ndarray
    rep: np.ndarray
    start: np.ndarray  # group of the story's articles in ``ordered`` (best first), -1 when none
    length: np.ndarray
    ordered: np.ndarray  # article rows, grouped by story, best first
    scores: np.ndarray  # aligned with ordered
    near: np.ndarray  # per candidate: how many near-ties the rotation chose from

    def index(self) -> dict[int, int]:
        return {int(r): i for i, r in enumerate(self.rows.tolist())}


def capped_publishers(counts: dict, total: int, p: RepresentativeParams) -> set[str]:
    if total < p.share_cap_min_impressions:
        return set()
    return {pub for pub, c in counts.items() if c / total > p.publisher_share_cap}


def article_scores(book: StoryBook, arts: np.ndarray, region: str, capped: set[str], p: RepresentativeParams, prim):
    pubs = book.articles.publisher[arts]
    copy = book.articles.is_copy[arts]
    local = book.publishers.region[pubs] == book.region_index.get(region, -2)
    score = (
        score_prefix(book, arts, p, prim)  # the sum of the terms before the local boost, as it adds them
        + p.local_boost * local
        - p.copy_penalty * copy
        - p.opinion_penalty * book.articles.is_opinion[arts]
    )
    if capped:  # ownership groups (fairness.py counts the share per group)
        score = score - 10.0 * capped_groups(book, capped)[pubs]
    return score


def _prefix(book: StoryBook, arts: np.ndarray, p: RepresentativeParams, prim) -> np.ndarray:
    """The first terms of an article's score, in :func:`article_scores`' order (its sum is added left to right, so
    these are the same bits as the whole expression's first five terms), all edition-independent."""
    st = book.articles.story[arts]
    pubs = book.articles.publisher[arts]
    tsum = book.stories.title_sum[st]
    norm = np.sqrt(np.add.reduce(tsum * tsum, axis=1))  # np.linalg.norm(tsum, axis=1), as it computes it
    central = np.einsum("ij,ij->i", book.articles.title_vector[arts], tsum) / np.maximum(norm, 1e-9)
    auth = book.publishers.authority[pubs, prim[st] + 1]
    age = book.stories.newest_seen[st] - book.articles.first_seen[arts]
    stale = book.articles.is_stale[arts]  # an old page discovered late is never fresh nor a first report
    fresh = np.where(stale, 0.0, np.minimum(1.0, np.power(0.5, age / (4.0 * HOUR_MS))))
    copy = book.articles.is_copy[arts]
    first = ~copy & ~stale & (book.articles.first_seen[arts] == book.stories.first_seen[st])
    return (
        p.w_centrality * central
        + p.w_authority * auth
        + p.w_freshness * fresh
        + p.w_headline * book.articles.headline_quality[arts]
        + p.first_report_boost * first
    )


# (lineage, id(p)) -> (config, registry, p, prim, prefix per article row, which rows are made), oldest first; the
# oldest dropped beyond PREFIX_KEPT article rows (each fold makes a new lineage, so the entries of past minutes go
# first and the other languages' entries of this minute stay). Shared by a worker's threads without a lock, as
# _LABEL_CODES is: single dict operations, and two threads filling the same rows write the same values.
_PREFIX: dict[tuple, tuple] = {}
PREFIX_KEPT = 4_000_000  # ~36 MB at most


def score_prefix(book: StoryBook, arts: np.ndarray, p: RepresentativeParams, prim) -> np.ndarray:
    """:func:`_prefix` of article rows ``arts``, each row made once per lineage (``StoryBook.lineage``: the same
    tables), parameters and primary sections: the editions of a language rank the same book (or books of one
    lineage) in a minute, their candidates' articles overlap, and the terms before the local boost read no edition.
    Each row's value is the same bits whichever rows it is made with (elementwise, and one row's dot product and
    norm at a time)."""
    key = (book.lineage, id(p))
    hit = _PREFIX.get(key)
    if (
        hit is None
        or hit[0] is not book.config
        or hit[1] is not book.registry
        or hit[2] is not p
        or hit[4].size < book.articles.size
        or not np.array_equal(hit[3], prim)
    ):
        size = book.articles.size
        _PREFIX.pop(key, None)  # remade: it goes last, as the newest
        kept = list(_PREFIX.items())
        total = sum(h[4].size for _, h in kept) + size
        for old_key, old_hit in kept:
            if total <= PREFIX_KEPT:
                break
            _PREFIX.pop(old_key, None)
            total -= old_hit[4].size
        hit = (book.config, book.registry, p, np.array(prim), np.zeros(size, np.float64), np.zeros(size, bool))
        _PREFIX[key] = hit
    prefix, made = hit[4], hit[5]
    missing = arts[~made[arts]]
    if missing.size:
        prefix[missing] = _prefix(book, missing, p, prim)
        made[missing] = True
    return prefix[arts]


_CAPPED: dict[tuple, tuple] = {}  # (id of a group table, capped groups) -> (that table, mask per publisher row)


def capped_groups(book: StoryBook, capped: set[str]) -> np.ndarray:
    """Per publisher row, whether its ownership group is in ``capped``; once per group table and capped set (the
    set changes once an hour at most)."""
    names = book.publisher_group_names()
    key = (id(names), tuple(sorted(capped)))
    hit = _CAPPED.get(key)
    if hit is None or hit[0] is not names:
        if len(_CAPPED) >= 1024:
            _CAPPED.clear()
        hit = _CAPPED[key] = (names, np.array([g in capped for g in names], bool))
    return hit[1]


@dataclass
class ArticleOrder:
    """The candidates' articles best first, grouped by story, and what the near-tie rotation reads of them: all of
    :func:`choose_representatives` that reads no clock (the rotation reads the hour), so a cycle whose book,
    candidates and capped groups are the last cycle's reuses it (transforms/editions/cycle/kept.py)."""

    rows: np.ndarray  # the candidate rows it was made for
    ordered: np.ndarray  # article rows, grouped by story, best first
    scores: np.ndarray  # aligned with ordered
    starts: np.ndarray  # per story group: its first index in ordered
    lens: np.ndarray
    near: np.ndarray  # per group: how many near-ties
    near_free: np.ndarray  # per article of ordered: a near-tie and free to read
    group_ids: np.ndarray  # per group: its story's id
    pos: np.ndarray  # per group: its story's index in rows
    last: tuple | None = None  # (edition id, hour, the Representatives chosen then)


def article_order(
    book: StoryBook, rows: np.ndarray, region: str, capped: set[str], p: RepresentativeParams, prim=None
) -> ArticleOrder:
    """The :class:`ArticleOrder` of the candidate ``rows`` in an edition of ``region``."""
    n, na = book.stories.size, book.articles.size
    in_c = np.zeros(n + 1, bool)
    in_c[rows] = True
    a_story = book.articles.story[:na]
    arts = np.flatnonzero(book.articles.has_data[:na] & in_c[a_story])  # a_story == -1 reads in_c[-1], always False
    prim = book.primary_sections() if prim is None else prim
    score = article_scores(book, arts, region, capped, p, prim)
    st = a_story[arts]
    order = best_first_by_group(st, score, book.articles.key[arts])  # np.lexsort((key, -score, st))
    ordered, sscore, sst = arts[order], score[order], st[order]
    if not ordered.size:
        none = np.zeros(0, np.int64)
        return ArticleOrder(rows, ordered, sscore, none, none, none, np.zeros(0, bool), none, none)
    head = np.empty(sst.size, bool)
    head[0] = True
    np.not_equal(sst[1:], sst[:-1], out=head[1:])
    starts = np.flatnonzero(head)
    ends = np.empty_like(starts)
    ends[:-1], ends[-1] = starts[1:], sst.size
    lens = ends - starts
    best = sscore[starts]
    near = sscore >= np.repeat(best - p.near_tie * np.abs(best), lens)
    kk = np.add.reduceat(near.astype(np.int64), starts)
    gstory = sst[starts]
    near_free = near & ~book.articles.is_paid[ordered]
    pos = np.searchsorted(rows, gstory)
    return ArticleOrder(rows, ordered, sscore, starts, lens, kk, near_free, book.stories.id[gstory], pos)


def choose_representatives(
    book: StoryBook,
    rows: np.ndarray,
    edition: Edition,
    hour: int,
    capped: set[str],
    p: RepresentativeParams,
    order: ArticleOrder | None = None,
) -> Representatives:
    """The representative of each story of ``rows`` for ``edition`` (its id seeds the near-tie rotation, its region
    the local boost) in ``hour``; ``order``: the :func:`article_order` of ``rows`` when the caller keeps it (the
    same one in the same hour gives the same representatives, returned again)."""
    o = article_order(book, rows, edition.region, capped, p) if order is None else order
    if o.last is not None and o.last[0] == edition.id and o.last[1] == hour:
        return o.last[2]
    k = rows.size
    rep = np.full(k, -1, np.int64)
    start = np.full(k, -1, np.int64)
    length = np.zeros(k, np.int64)
    near_k = np.zeros(k, np.int64)
    if o.ordered.size:
        h = rotation_hash(o.group_ids, edition.id, hour)
        pick = o.starts + (h % o.near.astype(np.uint64)).astype(np.int64)
        pick, kk = _free_wins_near_ties(o.near_free, o.starts, o.near, h, pick)
        rep[o.pos], start[o.pos], length[o.pos], near_k[o.pos] = o.ordered[pick], o.starts, o.lens, kk
    reps = Representatives(rows, rep, start, length, o.ordered, o.scores, near_k)
    o.last = (edition.id, hour, reps)
    return reps


def _free_wins_near_ties(near_free: np.ndarray, starts: np.ndarray, kk: np.ndarray, h: np.ndarray, pick: np.ndarray):
    """Where a story's near-ties mix free and paywalled articles, the rotation chooses among the free ones only:
    a reader of the shared page should be able to read the card they are shown. Returns (pick, near-tie counts)."""
    kf = np.add.reduceat(near_free.astype(np.int64), starts)
    mixed = np.flatnonzero((kf > 0) & (kf < kk))
    if not mixed.size:
        return pick, kk
    free_pos = np.flatnonzero(near_free)
    first_free = np.cumsum(kf) - kf  # index into free_pos of each group's first free near-tie
    pick, kk = pick.copy(), kk.copy()
    pick[mixed] = free_pos[first_free[mixed] + (h[mixed] % kf[mixed].astype(np.uint64)).astype(np.int64)]
    kk[mixed] = kf[mixed]
    return pick, kk


def supporting(book: StoryBook, reps: Representatives, i: int, rep: int, p: SupportingParams) -> list[int]:
    """Up to ``p.count`` supporting article rows for candidate ``i`` by MMR (one per ownership group, one wire
    copy)."""
    s, n = int(reps.start[i]), int(reps.length[i])
    if s < 0 or p.count <= 0 or n <= 1:
        return []
    grp = reps.ordered[s : s + n]
    groups = book.publisher_groups()  # one link per ownership group: sister sites are one voice
    grp_l, pubs_l, sc_l = grp.tolist(), groups[book.articles.publisher[grp]].tolist(), reps.scores[s : s + n].tolist()
    seen_pub = {int(groups[book.articles.publisher[rep]])}
    cands, rel = [], []
    for a, pub, sc in zip(grp_l, pubs_l, sc_l):
        if a == rep or pub in seen_pub:
            continue
        seen_pub.add(pub)  # the best article of each other publisher
        cands.append(a)
        rel.append(sc)
        if len(cands) >= p.candidates:
            break
    if not cands:
        return []
    arr = np.array([rep] + cands)
    vecs = book.articles.title_vector[arr].astype(np.float64)
    sims = (vecs @ vecs.T).tolist()
    wire_l = (book.articles.is_copy[arr] | book.publishers.is_wire[book.articles.publisher[arr]]).tolist()
    top = max(abs(r) for r in rel) or 1.0
    rel = [r / top for r in rel]
    wire = int(wire_l[0])
    chosen: list[int] = []  # indices into cands
    picked_max = sims[0][1:]  # max similarity to what is already shown (the representative)
    alive = list(range(len(cands)))
    lam = p.mmr_lambda
    while alive and len(chosen) < p.count:
        best_j, best_v = -1, -1e18
        for j in alive:
            v = lam * rel[j] - (1 - lam) * picked_max[j]
            if v > best_v:
                best_j, best_v = j, v
        alive.remove(best_j)
        if wire_l[best_j + 1]:
            if wire >= p.max_wire_copies:
                continue
            wire += 1
        chosen.append(best_j)
        row = sims[best_j + 1]
        for j in alive:
            if row[j + 1] > picked_max[j]:
                picked_max[j] = row[j + 1]
    return [cands[j] for j in chosen]


# Card labels in schema order, by bit: opinion 1, fact_check 2, wire 4, local 8, first_report 16, paid 32.
_LABEL_NAMES = ("opinion", "fact_check", "wire", "local", "first_report", "paid")
# Tuples, not lists: cached cards made only of atomic values and tuples are untracked by CPython's cyclic GC.
LABELS_BY_CODE = [tuple(name for b, name in enumerate(_LABEL_NAMES) if code >> b & 1) for code in range(64)]


def labels_for(book: StoryBook, arts: np.ndarray, region: str | None) -> list[tuple[str, ...]]:
    """Card labels of many articles at once (``region`` None: edition-independent, no 'local')."""
    return [LABELS_BY_CODE[c] for c in label_codes(book, arts, region).tolist()]


_LABEL_CODES: dict[tuple, tuple] = {}  # (lineage, articles, local publishers) -> (config, registry, codes)
# Shared by a worker's threads without a lock: only single dict operations (get, set, clear), so a race costs a
# second computation of the same codes, never an error (kept.py's caches evict by pop and need SHARED_LOCK).
LABEL_CODES_KEPT = 256  # articles at most per kept answer (a small book's cards), 4,096 answers: ~16 MB at most


def label_codes(book: StoryBook, arts: np.ndarray, region: str | None) -> np.ndarray:
    """:func:`labels_for` as one integer per article (the bits of ``_LABEL_NAMES``): equal codes, equal labels.
    Up to ``LABEL_CODES_KEPT`` articles, kept per lineage (``StoryBook.lineage``: the same tables),
    articles and local publishers (what it reads of the region): the editions of a language fold the same events,
    each into its own book, and label the same cards (9,278 calls on the month's replay, 718 distinct); those are
    read-only."""
    arts = np.asarray(arts, np.int64)
    if arts.size > LABEL_CODES_KEPT:  # a large book's: its lineage changes every minute, and the keys would weigh
        return _label_codes(book, arts, region)
    local = None
    if region is not None:
        local = np.flatnonzero(book.publishers.region[: book.publishers.size] == book.region_index.get(region, -2))
    key = (book.lineage, arts.tobytes(), None if local is None else local.tobytes())
    hit = _LABEL_CODES.get(key)
    if hit is None or hit[0] is not book.config or hit[1] is not book.registry:
        if len(_LABEL_CODES) >= 4096:
            _LABEL_CODES.clear()
        code = _label_codes(book, arts, region)
        code.flags.writeable = False
        hit = _LABEL_CODES[key] = (book.config, book.registry, code)
    return hit[2]


def _label_codes(book: StoryBook, arts: np.ndarray, region: str | None) -> np.ndarray:
    pubs = book.articles.publisher[arts]
    copy = book.articles.is_copy[arts]
    st = book.articles.story[arts]
    code = book.articles.is_opinion[arts].astype(np.int64)
    code |= book.articles.is_fact_check[arts].astype(np.int64) << 1
    code |= (copy | book.publishers.is_wire[pubs]).astype(np.int64) << 2
    if region is not None:
        code |= (book.publishers.region[pubs] == book.region_index.get(region, -2)).astype(np.int64) << 3
    first = ~copy & ~book.articles.is_stale[arts] & (st >= 0)
    first &= book.articles.first_seen[arts] == book.stories.first_seen[np.maximum(st, 0)]
    first &= book.stories.n_originals[np.maximum(st, 0)] > 1  # a first report only where there is a second
    code |= first.astype(np.int64) << 4
    code |= book.articles.is_paid[arts].astype(np.int64) << 5
    return code
