"""StoryBook: the ranker's aggregates of one language's live stories, folded from story changes and burst pulses.

Reads StoryChange records (schemas/avro/story_change.avsc, trimmed by :func:`compact_change`) and burst pulses
(:mod:`transforms.editions.bursts`); writes nothing. The ranking maths (:mod:`transforms.editions.scoring`) reads
its numpy columns directly, so it holds stories, articles, story x publisher pairs and story x region place
mentions as columns that grow by doubling, with Python dicts only for id -> row lookups and story membership.

The fold is order-independent, so a book rebuilt from the event log after a worker restart equals the book
that was built incrementally, and backfill equals streaming:
- An article's story is decided by the placement with the highest writer sequence number (ASSIGN, NEW_STORY, a
  SPLIT that moves it, a MERGE that absorbs its story). An older decision that arrives late changes nothing.
- A merged story is an alias of its survivor (one hop: chains are re-pointed when a merge lands); placements into
  an alias go to the survivor, whichever arrives first.
- A centroid is the one of the change with the highest sequence number for that story.
- EXPIRE hides a story until a later placement revives it (max sequence wins).
- Burst pulses keep the earliest breaking window per story and the latest developing window.
- A story's ``version`` (the coverage object's version) is data-defined, not arrival-defined: the largest event
  minute (``at // 60 s + 1``) among its structural events (merged into it, split from or into it, linked, lost a
  member) and, for each current member, the latest event that placed or changed that article. It is recomputed
  from the final membership, so an article that passed through a story in one order and not in another leaves
  no trace on it.

Copies (``is_copy`` or ``copy_of``) join their story but are never originals: they add nothing to coverage,
velocity, freshness or the publisher count, and cannot make a story rankable on their own.
"""

from __future__ import annotations

import hashlib
import re
import zlib

import numpy as np

from transforms.editions.config import EditionsConfig
from transforms.publishers import PublisherRegistry

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
TITLE_DIM = 32  # hashed title-token vector: centrality of an article in its story and MMR diversity

_TOKEN = re.compile(r"\w+", re.UNICODE)
_CLICKBAIT = ("you won't believe", "you wont believe", "here's why", "this is why", "what happened next", "shocking")

# Article fields the ranker keeps (the body is dropped before events are keyed by edition).
ARTICLE_FIELDS = (
    "article_id",
    "version",
    "canonical_url",
    "publisher_id",
    "publisher_name",
    "language",
    "title",
    "lede",
    "image_url",
    "published_at",
    "first_seen_at",
    "section",
    "topics",
    "is_opinion",
    "is_fact_check",
    "copy_of",
)


def compact_change(change: dict) -> dict:
    """A StoryChange trimmed to what ranking needs (no body, keywords or non-place entities)."""
    out = {
        "type": "change",
        "id": change["change_id"],
        "kind": change["kind"],
        "language": change["language"],
        "seq": int(change["seq"]),
        "story_id": int(change["story_id"]),
        "other_story_id": change.get("other_story_id"),
        "article_id": change.get("article_id"),
        "article_ids": list(change.get("article_ids") or ()),
        "is_copy": bool(change.get("is_copy")),
        "at": int(change["at"]),
        "centroid": [float(x) for x in (change.get("centroid") or ())],
    }
    art = change.get("article")
    if art:
        a = {k: art.get(k) for k in ARTICLE_FIELDS}
        a["lede"] = (a.get("lede") or "")[:400]
        a["places"] = [
            (e.get("name") or "", e.get("id") or "") for e in (art.get("entities") or ()) if e.get("kind") == "PLACE"
        ]
        out["article"] = a
    else:
        out["article"] = None
    return out


def event_sort_key(event: dict) -> tuple:
    """Canonical application order: event time, then writer sequence, then id."""
    return (event["at"], event.get("seq", -1), event["id"])


def title_tokens(title: str) -> list[str]:
    return [t for t in _TOKEN.findall((title or "").lower()) if len(t) > 1 or not t.isascii()]


def title_vector(title: str, dim: int = TITLE_DIM) -> np.ndarray:
    """Signed feature hashing of the title's word tokens (crc32: stable across processes), L2-normalised."""
    v = np.zeros(dim, np.float32)
    for t in title_tokens(title):
        h = zlib.crc32(t.encode("utf-8"))
        v[h % dim] += 1.0 if (h >> 16) & 1 else -1.0
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def headline_quality(title: str) -> float:
    """0..1: a plain, informative headline of 40-110 characters scores 1; shouting, questions, exclamation marks,
    clickbait phrases and listicle openings cost points."""
    t = (title or "").strip()
    n = len(t)
    if n == 0:
        return 0.0
    if n < 40:
        q = max(0.2, n / 40)
    elif n <= 110:
        q = 1.0
    else:
        q = max(0.4, 1.0 - (n - 110) / 200)
    letters = [c for c in t if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) / len(letters) > 0.5 and len(letters) > 8:
        q -= 0.3
    if t.endswith("?") or "!" in t:
        q -= 0.2
    low = t.lower()
    if any(p in low for p in _CLICKBAIT):
        q -= 0.3
    if t[:1].isdigit():
        q -= 0.1
    return float(min(1.0, max(0.0, q)))


def article_key(article_id: str) -> int:
    """A stable 60-bit integer for tie-breaks (article ids are sha256 hex; anything else is hashed)."""
    try:
        return int(article_id[:15], 16)
    except ValueError:
        return int(hashlib.sha256(article_id.encode()).hexdigest()[:15], 16)


def _grow(arr: np.ndarray, n: int) -> np.ndarray:
    if n <= arr.shape[0]:
        return arr
    cap = max(n, 2 * arr.shape[0], 64)
    out = np.zeros((cap,) + arr.shape[1:], arr.dtype)
    out[: arr.shape[0]] = arr
    return out


class StoryBook:
    """Columnar aggregates of one language's stories (see the module docstring for the fold's rules)."""

    def __init__(self, config: EditionsConfig, registry: PublisherRegistry, language: str, dim: int | None = None):
        self.config = config
        self.registry = registry
        self.language = language
        self.section_ids = [s.id for s in config.sections if s.id != "top"]
        self.sec_index = {s: i for i, s in enumerate(self.section_ids)}
        self.label_map = {lab: self.sec_index[sid] for lab, sid in config.label_sections().items() if sid != "top"}
        self.regions = sorted(config.regions)
        self.region_index = {r: i for i, r in enumerate(self.regions)}
        self.place_map: dict[str, tuple[int, bool]] = {}
        for code in self.regions:
            reg = config.regions[code]
            for p in reg.places:
                self.place_map.setdefault(p, (self.region_index[code], False))
            for p in reg.local_places:
                self.place_map.setdefault(p, (self.region_index[code], True))
        S = len(self.section_ids)
        self.n_sections = S
        # publishers
        self.pub_ids: list[str] = []
        self.pub_index: dict[str, int] = {}
        self.pub_names: list[str] = []
        self.pub_auth = np.zeros((0, S + 1), np.float64)  # column 0 general, 1 + s topic authority for section s
        self.pub_region = np.zeros(0, np.int16)  # -1: international / unknown
        self.pub_wire = np.zeros(0, bool)
        # stories
        self.dim = dim
        self.story_row: dict[int, int] = {}
        self.n_stories = 0
        self.s_id = np.zeros(0, np.int64)
        self.s_last_seq = np.full(0, -1.0)
        self.s_expire_seq = np.full(0, -1.0)
        self.s_alias = np.zeros(0, bool)
        self.s_centroid = np.zeros((0, dim or 1), np.float32)
        self.s_centroid_seq = np.full(0, -1.0)
        self.s_sec = np.zeros((0, S), np.int32)
        self.s_nlab = np.zeros(0, np.int32)  # labelled articles (sum of s_sec's row)
        self.s_prim = np.zeros(0, np.int32)  # primary section: argmax of s_sec's row (lowest on ties), -1 if none
        self.s_n_art = np.zeros(0, np.int32)
        self.s_n_orig = np.zeros(0, np.int32)
        self.s_first_fs = np.zeros(0, np.int64)
        self.s_newest_fs = np.zeros(0, np.int64)
        self.s_tsum = np.zeros((0, TITLE_DIM), np.float32)
        self.s_version = np.zeros(0, np.int64)
        self.s_struct = np.zeros(0, np.int64)  # minute of the story's latest structural event
        self.s_created = np.zeros(0, np.int64)
        self.s_breaking_start = np.zeros(0, np.int64)  # window end of the first breaking window, 0 = never
        self.s_breaking_last = np.zeros(0, np.int64)
        self.s_developing_last = np.zeros(0, np.int64)
        self.s_n_opinion = np.zeros(0, np.int32)
        self.s_n_fact = np.zeros(0, np.int32)
        self.members: list[set[int]] = []
        self.links: list[set[int]] = []
        self.sp_of: list[list[int]] = []  # story row -> its sp rows
        self.sr_of: list[list[int]] = []
        # articles
        self.art_row: dict[str, int] = {}
        self.n_articles = 0
        self.a_id: list[str] = []
        self.a_card: list[dict | None] = []
        self.a_places: list[tuple] = []
        self.a_story = np.zeros(0, np.int32)
        self.a_seq = np.full(0, -1.0)
        self.a_has = np.zeros(0, bool)
        self.a_version = np.zeros(0, np.int32)
        self.a_pub = np.zeros(0, np.int32)
        self.a_fs = np.zeros(0, np.int64)
        self.a_pubat = np.zeros(0, np.int64)
        self.a_copy = np.zeros(0, bool)
        self.a_sec = np.zeros(0, np.int16)
        self.a_tvec = np.zeros((0, TITLE_DIM), np.float32)
        self.a_head = np.zeros(0, np.float32)
        self.a_opinion = np.zeros(0, bool)
        self.a_fact = np.zeros(0, bool)
        self.a_key = np.zeros(0, np.int64)
        self.a_at = np.zeros(0, np.int64)  # minute of the latest event that placed or changed the article
        # story x publisher pairs with an original
        self.sp_index: dict[tuple[int, int], int] = {}
        self.n_sp = 0
        self.sp_story = np.zeros(0, np.int32)
        self.sp_pub = np.zeros(0, np.int32)
        self.sp_region = np.zeros(0, np.int16)  # the publisher's region (static), -1 international
        self.sp_latest = np.zeros(0, np.int64)
        self.sp_n = np.zeros(0, np.int32)
        self.sp_live = np.zeros(0, bool)
        # story x region place mentions: articles mentioning a place of the region (sr_local: a sub-national one)
        self.sr_index: dict[tuple[int, int], int] = {}
        self.n_sr = 0
        self.sr_story = np.zeros(0, np.int32)
        self.sr_region = np.zeros(0, np.int16)
        self.sr_count = np.zeros(0, np.int32)
        self.sr_local = np.zeros(0, np.int32)
        self.sr_live = np.zeros(0, bool)
        # merges, idempotency, rebuilds
        self.alias: dict[int, tuple[int, float]] = {}  # absorbed -> (survivor, merge seq)
        self.pending_links: dict[int, list] = {}  # story id not in the book yet -> [(linked story, at)]
        self.applied: set[str] = set()
        self.dirty: set[int] = set()
        self.n_dead_events = 0
        self.bad_events = 0
        self.cycle_cache: dict = {}  # per edition: cards and supporting links reused between cycles

    # ------------------------------------------------------------------ rows
    def publisher(self, publisher_id: str) -> int:
        i = self.pub_index.get(publisher_id)
        if i is not None:
            return i
        p = self.registry.get(publisher_id)
        i = len(self.pub_ids)
        self.pub_ids.append(publisher_id)
        self.pub_index[publisher_id] = i
        self.pub_names.append(p.name if p else publisher_id)
        self.pub_auth = _grow(self.pub_auth, i + 1)
        self.pub_region = _grow(self.pub_region, i + 1)
        self.pub_wire = _grow(self.pub_wire, i + 1)
        if p is None:
            from transforms.publishers import UNKNOWN_AUTHORITY

            self.pub_auth[i, :] = UNKNOWN_AUTHORITY
            self.pub_region[i] = -1
        else:
            self.pub_auth[i, 0] = p.authority
            for s, j in self.sec_index.items():
                self.pub_auth[i, 1 + j] = p.authority_for(s)
            self.pub_region[i] = self.region_index.get(p.region, -1)
            self.pub_wire[i] = p.is_wire
        return i

    def _story(self, story_id: int) -> int:
        r = self.story_row.get(story_id)
        if r is not None:
            return r
        r = self.n_stories
        self.n_stories += 1
        n = r + 1
        for name in (
            "s_id s_last_seq s_expire_seq s_alias s_centroid s_centroid_seq s_sec s_nlab s_prim s_n_art s_n_orig s_first_fs "
            "s_newest_fs s_tsum s_version s_struct s_created s_breaking_start s_breaking_last s_developing_last s_n_opinion "
            "s_n_fact"
        ).split():
            setattr(self, name, _grow(getattr(self, name), n))
        self.s_id[r] = story_id
        self.s_last_seq[r] = -1.0
        self.s_expire_seq[r] = -1.0
        self.s_centroid_seq[r] = -1.0
        self.s_prim[r] = -1
        self.members.append(set())
        self.links.append(set())
        self.sp_of.append([])
        self.sr_of.append([])
        self.story_row[story_id] = r
        for other, at in self.pending_links.pop(story_id, ()):
            if other not in self.links[r]:
                self.links[r].add(other)
                self._version(r, at)
        return r

    def _article(self, article_id: str) -> int:
        a = self.art_row.get(article_id)
        if a is not None:
            return a
        a = self.n_articles
        self.n_articles += 1
        n = a + 1
        for name in (
            "a_story a_seq a_has a_version a_pub a_fs a_pubat a_copy a_sec a_tvec a_head a_opinion a_fact a_key a_at"
        ).split():
            setattr(self, name, _grow(getattr(self, name), n))
        self.a_story[a] = -1
        self.a_seq[a] = -1.0
        self.a_sec[a] = -1
        self.a_key[a] = article_key(article_id)
        self.a_id.append(article_id)
        self.a_card.append(None)
        self.a_places.append(())
        self.art_row[article_id] = a
        return a

    def resolve(self, story_id: int) -> int:
        hit = self.alias.get(story_id)
        return hit[0] if hit else story_id

    # ------------------------------------------------------------------ events
    def apply(self, event: dict) -> bool:
        """Fold one event (a compacted change or a pulse). False if it was already applied or is unusable."""
        eid = event.get("id")
        if eid in self.applied:
            return False
        self.applied.add(eid)
        try:
            if event["type"] == "pulse":
                self._apply_pulse(event)
            else:
                self._apply_change(event)
        except (KeyError, TypeError, ValueError):
            self.bad_events += 1
            return False
        return True

    def _version(self, row: int, at: int) -> None:
        """A structural event of the story at ``at``."""
        minute = at // MINUTE_MS + 1
        if minute > self.s_struct[row]:
            self.s_struct[row] = minute
        if minute > self.s_version[row]:
            self.s_version[row] = minute

    def _article_event(self, a: int, at: int) -> None:
        minute = at // MINUTE_MS + 1
        if minute > self.a_at[a]:
            self.a_at[a] = minute

    def _set_centroid(self, row: int, centroid, seq: float) -> None:
        if not centroid or seq <= self.s_centroid_seq[row]:
            return
        c = np.asarray(centroid, np.float32)
        if self.dim is None:
            self.dim = int(c.shape[0])
            self.s_centroid = np.zeros((self.s_id.shape[0], self.dim), np.float32)
        if c.shape[0] != self.dim:  # another model's vector: keep the old one, count it
            self.bad_events += 1
            return
        self.s_centroid[row] = c
        self.s_centroid_seq[row] = seq

    def _apply_change(self, ch: dict) -> None:
        kind, seq, at = ch["kind"], float(ch["seq"]), int(ch["at"])
        if kind in ("NEW_STORY", "ASSIGN"):
            sid = self.resolve(int(ch["story_id"]))
            row = self._story(sid)
            if kind == "NEW_STORY" and not self.s_created[row]:
                self.s_created[row] = at
            self.s_last_seq[row] = max(self.s_last_seq[row], seq)
            self._set_centroid(row, ch.get("centroid"), seq)
            art = ch.get("article")
            aid = ch.get("article_id") or (art or {}).get("article_id")
            if not aid:
                return
            a = self._article(aid)
            if art:
                self._upsert_article(a, art, at)
            if ch.get("is_copy") or (art and art.get("copy_of")):
                self._mark_copy(a, at)
            self._place(a, row, seq, at)
        elif kind == "MERGE":
            survivor = self.resolve(int(ch["story_id"]))
            absorbed = int(ch["other_story_id"])
            if absorbed == survivor:
                return
            srow, arow = self._story(survivor), self._story(absorbed)
            self._set_centroid(srow, ch.get("centroid"), seq)
            # chains resolve on write: anything that pointed at the absorbed story now points at the survivor
            for k, (v, s) in list(self.alias.items()):
                if v == absorbed:
                    self.alias[k] = (survivor, s)
            self.alias[absorbed] = (survivor, seq)
            self.s_alias[arow] = True
            self.s_last_seq[srow] = max(self.s_last_seq[srow], seq)
            for a in sorted(self.members[arow], key=lambda x: self.a_id[x]):
                self._place(a, srow, max(seq, float(self.a_seq[a])), at, force=True)
            if self.s_breaking_start[arow] and (
                not self.s_breaking_start[srow] or self.s_breaking_start[arow] < self.s_breaking_start[srow]
            ):
                self.s_breaking_start[srow] = self.s_breaking_start[arow]
            self.s_breaking_last[srow] = max(self.s_breaking_last[srow], self.s_breaking_last[arow])
            self.s_developing_last[srow] = max(self.s_developing_last[srow], self.s_developing_last[arow])
            self.links[srow] |= self.links[arow]
            self._version(srow, at)
        elif kind == "SPLIT":
            keep = self.resolve(int(ch["story_id"]))
            new = int(ch["other_story_id"])
            krow, nrow = self._story(keep), self._story(new)
            if self.s_centroid_seq[krow] >= 0 and self.s_centroid_seq[nrow] < seq - 0.5:
                self._set_centroid(nrow, self.s_centroid[krow].tolist(), seq - 0.5)  # until its own centroid comes
            self._set_centroid(krow, ch.get("centroid"), seq)
            self.s_last_seq[nrow] = max(self.s_last_seq[nrow], seq)
            if not self.s_created[nrow]:
                self.s_created[nrow] = at
            for aid in ch.get("article_ids") or ():
                self._place(self._article(aid), nrow, seq, at)
            self._version(krow, at)
            self._version(nrow, at)
        elif kind == "EXPIRE":
            row = self._story(self.resolve(int(ch["story_id"])))
            self.s_expire_seq[row] = max(self.s_expire_seq[row], seq)
        elif kind == "LINK":
            # Links come from the cross-language link writer (language "mul") and reach every edition: a link
            # of a story this book does not hold waits in pending_links until the story appears. One LINK change
            # links both stories (the link writer emits each pair once, smaller id first): record both directions.
            other = ch.get("other_story_id")
            if other is None:
                return
            a, b = int(ch["story_id"]), int(other)
            for sid, linked in ((self.resolve(a), b), (self.resolve(b), a)):
                row = self.story_row.get(sid)
                if row is None:
                    self.pending_links.setdefault(sid, []).append((linked, at))
                elif linked not in self.links[row]:
                    self.links[row].add(linked)
                    self._version(row, at)
        else:
            raise ValueError(f"unknown change kind {kind!r}")

    def _apply_pulse(self, p: dict) -> None:
        row = self._story(self.resolve(int(p["story_id"])))
        end = int(p["window_end"])
        if p["kind"] == "breaking":
            if not self.s_breaking_start[row] or end < self.s_breaking_start[row]:
                self.s_breaking_start[row] = end
            self.s_breaking_last[row] = max(self.s_breaking_last[row], end)
        elif p["kind"] == "developing":
            self.s_developing_last[row] = max(self.s_developing_last[row], end)
        else:
            raise ValueError(f"unknown pulse kind {p['kind']!r}")

    def _upsert_article(self, a: int, art: dict, at: int) -> None:
        version = int(art.get("version") or 1)
        fs = int(art["first_seen_at"])
        self._article_event(a, at)
        if self.a_has[a] and version <= self.a_version[a]:
            if fs < self.a_fs[a]:  # the same article seen earlier elsewhere: first-seen is the minimum
                self.a_fs[a] = fs
                self._touch(a, at)
            return
        fs = min(fs, int(self.a_fs[a])) if self.a_has[a] else fs
        self.a_has[a] = True
        self.a_version[a] = version
        self.a_pub[a] = self.publisher(art.get("publisher_id") or "unknown")
        self.a_fs[a] = fs
        self.a_pubat[a] = int(art.get("published_at") or fs)
        sec = -1
        for lab in [art.get("section")] + list(art.get("topics") or ()):
            if lab and lab.lower() in self.label_map:
                sec = self.label_map[lab.lower()]
                break
        self.a_sec[a] = sec
        title = art.get("title") or ""
        self.a_tvec[a] = title_vector(title)
        self.a_head[a] = headline_quality(title)
        self.a_opinion[a] = bool(art.get("is_opinion"))
        self.a_fact[a] = bool(art.get("is_fact_check"))
        places: dict[int, bool] = {}
        for name, pid in art.get("places") or ():
            for key in (str(name).lower(), str(pid).lower()):
                hit = self.place_map.get(key)
                if hit:
                    places[hit[0]] = places.get(hit[0], False) or hit[1]
                    break
        self.a_places[a] = tuple(sorted(places.items()))  # (region index, mentions a sub-national place)
        self.a_card[a] = {
            "article_id": art["article_id"],
            "url": art.get("canonical_url") or "",
            "title": title,
            "lede": art.get("lede") or "",
            "publisher_id": self.pub_ids[self.a_pub[a]],
            "publisher_name": art.get("publisher_name") or self.pub_names[self.a_pub[a]],
            "image_url": art.get("image_url"),
            "published_at": int(self.a_pubat[a]),
            "language": art.get("language") or self.language,
        }
        self._touch(a, at)

    def _touch(self, a: int, at: int) -> None:
        self._article_event(a, at)
        row = int(self.a_story[a])
        if row >= 0:
            self.dirty.add(row)

    def _mark_copy(self, a: int, at: int) -> None:
        """Copy status belongs to the article (syndication never un-copies it): OR over all decisions."""
        if not self.a_copy[a]:
            self.a_copy[a] = True
            self._touch(a, at)

    def _place(self, a: int, row: int, seq: float, at: int, force: bool = False) -> None:
        if seq < self.a_seq[a] or (seq == self.a_seq[a] and not force):
            return
        self._article_event(a, at)
        old = int(self.a_story[a])
        self.a_seq[a] = seq
        if old == row:
            if self.a_has[a] and self.a_at[a] > self.s_version[row]:
                self.dirty.add(row)
            return
        if old >= 0:
            self.members[old].discard(a)
            self.dirty.add(old)
            self._version(old, at)  # losing a member is a structural event of the old story
        self.a_story[a] = row
        self.members[row].add(a)
        if row not in self.dirty and self.a_has[a]:
            self._add_to_story(row, a)
        # an article without data yet adds nothing; its data (upsert) marks the story dirty

    # ------------------------------------------------------------------ aggregates
    def _add_to_story(self, row: int, a: int) -> None:
        if self.a_at[a] > self.s_version[row]:
            self.s_version[row] = self.a_at[a]
        self.s_n_art[row] += 1
        sec = int(self.a_sec[a])
        if sec >= 0:
            self.s_sec[row, sec] += 1
            self.s_nlab[row] += 1
            prim = int(self.s_prim[row])
            if prim < 0 or self.s_sec[row, sec] > self.s_sec[row, prim] or (
                self.s_sec[row, sec] == self.s_sec[row, prim] and sec < prim
            ):
                self.s_prim[row] = sec
        self.s_tsum[row] += self.a_tvec[a]
        self.s_n_opinion[row] += int(self.a_opinion[a])
        self.s_n_fact[row] += int(self.a_fact[a])
        for ridx, local in self.a_places[a]:
            key = (row, ridx)
            i = self.sr_index.get(key)
            if i is None:
                i = self.n_sr
                self.n_sr += 1
                for name in ("sr_story", "sr_region", "sr_count", "sr_local", "sr_live"):
                    setattr(self, name, _grow(getattr(self, name), self.n_sr))
                self.sr_story[i], self.sr_region[i], self.sr_live[i] = row, ridx, True
                self.sr_index[key] = i
                self.sr_of[row].append(i)
            self.sr_count[i] += 1
            self.sr_local[i] += int(local)
        if self.a_copy[a]:
            return
        fs = int(self.a_fs[a])
        if self.s_n_orig[row] == 0:
            self.s_first_fs[row] = fs
            self.s_newest_fs[row] = fs
        else:
            self.s_first_fs[row] = min(self.s_first_fs[row], fs)
            self.s_newest_fs[row] = max(self.s_newest_fs[row], fs)
        self.s_n_orig[row] += 1
        pub = int(self.a_pub[a])
        key = (row, pub)
        i = self.sp_index.get(key)
        if i is None:
            i = self.n_sp
            self.n_sp += 1
            for name in ("sp_story", "sp_pub", "sp_region", "sp_latest", "sp_n", "sp_live"):
                setattr(self, name, _grow(getattr(self, name), self.n_sp))
            self.sp_story[i], self.sp_pub[i], self.sp_latest[i], self.sp_live[i] = row, pub, fs, True
            self.sp_region[i] = self.pub_region[pub]
            self.sp_index[key] = i
            self.sp_of[row].append(i)
        else:
            self.sp_latest[i] = max(self.sp_latest[i], fs)
        self.sp_n[i] += 1

    def _rebuild_story(self, row: int) -> None:
        self.s_version[row] = self.s_struct[row]
        self.s_n_art[row] = 0
        self.s_sec[row] = 0
        self.s_nlab[row] = 0
        self.s_prim[row] = -1
        self.s_tsum[row] = 0
        self.s_n_opinion[row] = 0
        self.s_n_fact[row] = 0
        self.s_n_orig[row] = 0
        self.s_first_fs[row] = 0
        self.s_newest_fs[row] = 0
        for i in self.sp_of[row]:
            self.sp_live[i] = False
            del self.sp_index[(row, int(self.sp_pub[i]))]
        for i in self.sr_of[row]:
            self.sr_live[i] = False
            del self.sr_index[(row, int(self.sr_region[i]))]
        self.sp_of[row] = []
        self.sr_of[row] = []
        for a in sorted(self.members[row], key=lambda x: self.a_id[x]):
            if self.a_has[a]:
                self._add_to_story(row, a)

    def flush(self) -> None:
        """Recompute the aggregates of stories that lost members or whose members changed."""
        for row in sorted(self.dirty):
            self._rebuild_story(row)
        self.dirty.clear()

    # ------------------------------------------------------------------ queries
    def live_mask(self, now: int, live_window_ms: int) -> np.ndarray:
        n = self.n_stories
        return (
            (self.s_last_seq[:n] > self.s_expire_seq[:n])
            & ~self.s_alias[:n]
            & (self.s_n_orig[:n] > 0)
            & (now - self.s_newest_fs[:n] <= live_window_ms)
        )

    def story_articles(self, row: int) -> list[int]:
        return sorted((a for a in self.members[row] if self.a_has[a]), key=lambda a: self.a_id[a])

    def primary_sections(self) -> np.ndarray:
        """Per story, its primary section (argmax of its labelled articles, lowest index on ties; -1: none)."""
        return self.s_prim[: self.n_stories]

    def live_story_ids(self, now: int, live_window_ms: int) -> set[int]:
        return set(self.s_id[: self.n_stories][self.live_mask(now, live_window_ms)].tolist())

    def stats(self) -> dict:
        return {
            "stories": self.n_stories,
            "articles": self.n_articles,
            "pairs": self.n_sp,
            "aliases": len(self.alias),
            "applied": len(self.applied),
            "bad": self.bad_events,
        }
