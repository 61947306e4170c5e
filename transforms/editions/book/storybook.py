"""StoryBook: the ranker's aggregates of one language's live stories, folded from story changes and burst pulses.

Reads StoryChange records (schemas/avro/story_change.avsc, trimmed by :func:`compact_change`) and burst pulses
(:mod:`transforms.editions.bursts.bursts`); writes nothing. It holds typed column tables (:mod:`transforms.editions.book.tables`):
``book.publishers``, ``book.stories``, ``book.articles``, ``book.pairs`` (story x publisher pairs with an original)
and ``book.mentions`` (story x region place mentions); the ranking maths (:mod:`transforms.editions.cycle.scoring`,
:mod:`transforms.editions.cycle.representatives`, :mod:`transforms.editions.cycle.run`) reads their numpy columns directly
(``book.stories.newest_seen[: book.stories.size]``).

The fold is order-independent (a book rebuilt from the event log equals the incremental one; backfill == streaming):
- An article's story is decided by the placement with the highest writer sequence number (ASSIGN, NEW_STORY, a
  SPLIT that moves it, a MERGE that absorbs its story). An older decision that arrives late changes nothing.
- A merged story is an alias of its survivor (one hop: chains are re-pointed when a merge lands); placements into
  an alias go to the survivor, whichever arrives first.
- A centroid is the one of the change with the highest sequence number for that story.
- EXPIRE hides a story until a later placement revives it (max sequence wins).
- Burst pulses keep the earliest breaking window per story and the latest developing window.
- A story's ``version`` (the coverage object's version) is data-defined, not arrival-defined: the largest event minute
  (``at // 60 s + 1``) among its structural events (merged into it, split from or into it, linked, lost a member) and,
  for each current member, the latest event that placed or changed that article. It is recomputed from the final
  membership, so an article that passed through a story in one order and not in another leaves no trace on it. An
  event the ranker folded late carries its versioning time (``version_at``, kept in the event log;
  :mod:`transforms.editions.ranker.rank` says why): it counts at that time instead of its event time.

Copies (``is_copy`` or ``copy_of``) join their story but are never originals: they add nothing to coverage,
velocity, freshness or the publisher count, and cannot make a story rankable on their own. Old pages
(``is_stale``: published more than the live window before first seen, :func:`transforms.common.is_stale`) are
treated the same way: a page from 2010 discovered today is kept in its story's article list, not ranked as news.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from functools import lru_cache
from itertools import chain
from typing import ClassVar

import numpy as np

from transforms.common import ASSIGN, EXPIRE, LINK, MERGE, MINUTE_MS, NEW_STORY, SPLIT, is_stale
from transforms.editions.book.headlines import assess, headline_quality  # noqa: F401 (headline_quality: re-exported)
from transforms.editions.book.storylines import SNAPSHOT, StorylineMap
from transforms.editions.book.tables import ArticleTable, MentionTable, PairTable, PublisherTable, StoryTable
from transforms.editions.vocabulary.config import EditionsConfig
from transforms.editions.vocabulary.params import RankParams
from transforms.publishers import UNKNOWN_AUTHORITY, PublisherRegistry

TITLE_DIM = 32  # hashed title-token vector: centrality of an article in its story and MMR diversity
ENTITIES_PER_STORY = 5  # main entity ids of a pool story (follows, topic pages)

_TOKEN = re.compile(r"\w+", re.UNICODE)

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
    "image_width",  # absent from events logged before them (None): no stated size
    "image_height",
    "published_at",
    "first_seen_at",
    "section",
    "topics",
    "is_opinion",
    "is_fact_check",
    "copy_of",
    "accessible_for_free",  # absent from events logged before it (None): free
)


def centroid_bytes(centroid) -> bytes:
    """A change's centroid as the float32 bytes the book stores it as (``StoryBook._set_centroid``: the same values
    as converting the list there). Why bytes, not the list of floats: every compact event sits in the ranker's
    INBOX and LOG state, and Beam's state cache weighs a bag each time it is read or committed by walking every
    object in it (objsize), ~385 of them per event for a 384-d list and one for its bytes; a replay's edition reads
    a month's INBOX of ~260 events (py-spy: ~4 % of the change-only backfill's CPU in that weighing)."""
    return np.asarray([float(x) for x in (centroid or ())], np.float32).tobytes()


def compact_change(change: dict) -> dict:
    """A StoryChange trimmed to what ranking needs (no body or keywords; entities as places and as ids only)."""
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
        "centroid": centroid_bytes(change.get("centroid")),
    }
    art = change.get("article")
    if art:
        a = {k: art.get(k) for k in ARTICLE_FIELDS}
        a["lede"] = (a.get("lede") or "")[:400]
        a["places"] = [
            (e.get("name") or "", e.get("id") or "") for e in (art.get("entities") or ()) if e.get("kind") == "PLACE"
        ]
        a["entities"] = list(dict.fromkeys(str(e["id"]) for e in (art.get("entities") or ()) if e.get("id")))
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
    n = float(np.sqrt(v.dot(v)))  # np.linalg.norm's own sum for a vector, without its wrapper
    return v / n if n > 0 else v


@lru_cache(maxsize=16384)
def _title_vector_of(title: str) -> np.ndarray:
    """:func:`title_vector` of ``title`` (``TITLE_DIM``), read-only, once per title: the editions of a language fold
    the same articles, each into its own book (~26 % of a fold's CPU was hashing the title again)."""
    v = title_vector(title)
    v.flags.writeable = False
    return v


def article_key(article_id: str) -> int:
    """A stable 60-bit integer for tie-breaks (article ids are sha256 hex; anything else is hashed)."""
    try:
        return int(article_id[:15], 16)
    except ValueError:
        return int(hashlib.sha256(article_id.encode()).hexdigest()[:15], 16)


class StoryBook:
    """One language's tables (see the module docstring for the fold's rules): ``publishers``, ``stories``,
    ``articles``, ``pairs`` (story x publisher) and ``mentions`` (story x region)."""

    def __init__(self, config: EditionsConfig, registry: PublisherRegistry, language: str, dim: int | None = None):
        self.config = config
        self.registry = registry
        self.language = language
        self.stale_ms = RankParams.from_config(config).live_window_ms  # older than this at first sight: not news
        self.section_ids = [s.id for s in config.sections if s.id != "top"]
        self.section_index = {s: i for i, s in enumerate(self.section_ids)}
        self.label_section = {
            lab: self.section_index[sid] for lab, sid in config.label_sections().items() if sid != "top"
        }
        self.regions = sorted(config.regions)
        self.region_index = {r: i for i, r in enumerate(self.regions)}
        self.place_region: dict[str, tuple[int, bool]] = {}  # place name or id -> (region index, sub-national)
        for code in self.regions:
            reg = config.regions[code]
            for p in reg.places:
                self.place_region.setdefault(p, (self.region_index[code], False))
            for p in reg.local_places:
                self.place_region.setdefault(p, (self.region_index[code], True))
        S = len(self.section_ids)
        self.n_sections = S
        self.dim = dim
        self.publishers = PublisherTable(sections=S + 1)
        self.stories = StoryTable(sections=S, dim=dim or 1, title_dim=TITLE_DIM)
        self.articles = ArticleTable(title_dim=TITLE_DIM)
        self.pairs = PairTable()
        self.mentions = MentionTable()
        # merges, idempotency, rebuilds
        self.alias: dict[int, tuple[int, float]] = {}  # absorbed -> (survivor, merge seq)
        self.pending_links: dict[int, list] = {}  # story id not in the book yet -> [(linked story, at)]
        self.pending_minutes: dict[int, int] = {}  # story id not in the book yet -> structural minute (a SNAPSHOT)
        self.storylines = StorylineMap()  # story -> storyline (editions/storylines.py): the top-5 rule
        self.applied: set[str] = set()
        self.dirty: set[int] = set()
        self.bad_events = 0
        self._version_at = 0  # the versioning time of the event being folded when it came late (see apply)
        # A digest of every fold and flush that made the tables, in order (:meth:`_step`): two books of one config
        # and registry with the same lineage hold the same tables, so what is computed from the tables alone can be
        # shared between them (the 15 English editions fold the same events: transforms/editions/cycle/kept.py).
        self.lineage = hashlib.blake2b(repr(("book", language, dim)).encode(), digest_size=16).digest()

    def publisher(self, publisher_id: str) -> int:
        i = self.publishers.row_of.get(publisher_id)
        if i is not None:
            return i
        p = self.registry.get(publisher_id)
        i = self.publishers.add(publisher_id, id=publisher_id, name=p.name if p else publisher_id)
        if p is None:
            self.publishers.authority[i, :] = UNKNOWN_AUTHORITY
            self.publishers.region[i] = -1
        else:
            self.publishers.authority[i, 0] = p.authority
            for s, j in self.section_index.items():
                self.publishers.authority[i, 1 + j] = p.authority_for(s)
            self.publishers.region[i] = self.region_index.get(p.region, -1)
            self.publishers.is_wire[i] = p.is_wire
        return i

    def _story(self, story_id: int) -> int:
        r = self.stories.row_of.get(story_id)
        if r is not None:
            return r
        r = self.stories.add(story_id, id=story_id)
        minute = self.pending_minutes.pop(story_id, 0)
        if minute:
            self._raise_minute(r, minute)
        for other, at in self.pending_links.pop(story_id, ()):
            if other not in self.stories.links[r]:
                self.stories.links[r].add(other)
                self._version(r, at)
        return r

    def _article(self, article_id: str) -> int:
        a = self.articles.row_of.get(article_id)
        if a is not None:
            return a
        return self.articles.add(article_id, id=article_id, key=article_key(article_id))

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
        # An event id names one change or pulse (a second event with it is dropped above); a storyline event made
        # by a compaction (a SNAPSHOT) is named by its storyline and minute only, so its whole content is taken.
        self._step(repr(event) if event.get("type") == "storyline" else repr((eid, event.get("version_at"))))
        # A late event (transforms/editions/ranker/rank.py) versions the stories it changes at its ``version_at``, the
        # cycle that folded it, so that their pages are published again; its event time keeps every other meaning.
        self._version_at = int(event.get("version_at") or 0)
        try:
            fold = {"pulse": self._apply_pulse, "storyline": self._fold_storyline}
            fold.get(event["type"], self._apply_change)(event)
        except (KeyError, TypeError, ValueError):
            self.bad_events += 1
            return False
        finally:
            self._version_at = 0
        return True

    def _step(self, step: str) -> None:
        """Extend :attr:`lineage` by one fold or flush (the tables change only through :meth:`apply` and
        :meth:`flush`)."""
        self.lineage = hashlib.blake2b(self.lineage + step.encode(), digest_size=16).digest()

    def _fold_storyline(self, e: dict) -> None:
        """Fold a storyline event into ``self.storylines`` and re-version the live stories whose coverage document
        names another storyline now (a structural event of the story, like a LINK). A compaction's SNAPSHOT
        (editions/book/storylines.py) gives back the structural minute its storyline's dropped events gave each live
        member, when the member's row comes."""
        if e["kind"] == SNAPSHOT:
            for story_id, minute in e["minutes"]:
                row = self.stories.row_of.get(self.resolve(int(story_id)))
                if row is not None:
                    self._raise_minute(row, int(minute))
                elif minute:
                    self.pending_minutes[int(story_id)] = max(int(minute), self.pending_minutes.get(int(story_id), 0))
        for story_id in self.storylines.apply(e):
            row = self.stories.row_of.get(self.resolve(story_id))
            if row is not None:
                self._version(row, int(e["at"]))

    def _version(self, row: int, at: int) -> None:
        """A structural event of the story at ``at`` (a late event: at its ``version_at``, see ``apply``)."""
        self._raise_minute(row, max(at, self._version_at) // MINUTE_MS + 1)

    def _raise_minute(self, row: int, minute: int) -> None:
        if minute > self.stories.structural_minute[row]:
            self.stories.structural_minute[row] = minute
        if minute > self.stories.version[row]:
            self.stories.version[row] = minute

    def _article_event(self, a: int, at: int) -> None:
        minute = max(at, self._version_at) // MINUTE_MS + 1
        if minute > self.articles.event_minute[a]:
            self.articles.event_minute[a] = minute

    def _set_centroid(self, row: int, centroid, seq: float) -> None:
        if not centroid or seq <= self.stories.centroid_seq[row]:
            return
        c = np.frombuffer(centroid, np.float32) if isinstance(centroid, bytes) else np.asarray(centroid, np.float32)
        if self.dim is None:
            self.dim = int(c.shape[0])
            self.stories.set_width("centroid", self.dim)
        if c.shape[0] != self.dim:  # another model's vector: keep the old one, count it
            self.bad_events += 1
            return
        self.stories.centroid[row] = c
        self.stories.centroid_seq[row] = seq

    def _apply_change(self, ch: dict) -> None:
        fold = self._FOLDS.get(ch["kind"])
        if fold is None:
            raise ValueError(f"unknown change kind {ch['kind']!r}")
        fold(self, ch, float(ch["seq"]), int(ch["at"]))

    def _fold_placement(self, ch: dict, seq: float, at: int) -> None:
        """NEW_STORY / ASSIGN: the article joins the story (the highest writer sequence decides)."""
        sid = self.resolve(int(ch["story_id"]))
        row = self._story(sid)
        if ch["kind"] == NEW_STORY and not self.stories.created_at[row]:
            self.stories.created_at[row] = at
        self.stories.last_seq[row] = max(self.stories.last_seq[row], seq)
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

    def _fold_merge(self, ch: dict, seq: float, at: int) -> None:
        """The absorbed story becomes an alias of the survivor; its members and windows move over."""
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
        self.stories.is_alias[arow] = True
        self.stories.last_seq[srow] = max(self.stories.last_seq[srow], seq)
        for a in sorted(self.stories.members[arow], key=lambda x: self.articles.id[x]):
            self._place(a, srow, max(seq, float(self.articles.seq[a])), at, force=True)
        st = self.stories
        absorbed_start, survivor_start = st.breaking_start[arow], st.breaking_start[srow]
        if absorbed_start and (not survivor_start or absorbed_start < survivor_start):
            st.breaking_start[srow] = absorbed_start
        st.breaking_last[srow] = max(st.breaking_last[srow], st.breaking_last[arow])
        st.developing_last[srow] = max(st.developing_last[srow], st.developing_last[arow])
        st.links[srow] |= st.links[arow]
        self._version(srow, at)

    def _fold_split(self, ch: dict, seq: float, at: int) -> None:
        """The listed articles move to the receiving story. A new one starts from the kept story's centroid until its
        own comes; an existing one (the re-clustering repair moves articles into live stories) keeps its own."""
        keep = self.resolve(int(ch["story_id"]))
        new = int(ch["other_story_id"])
        krow, nrow = self._story(keep), self._story(new)
        if self.stories.centroid_seq[krow] >= 0 and self.stories.centroid_seq[nrow] < 0:
            self._set_centroid(nrow, self.stories.centroid[krow].tolist(), seq - 0.5)  # until its own centroid comes
        self._set_centroid(krow, ch.get("centroid"), seq)
        self.stories.last_seq[nrow] = max(self.stories.last_seq[nrow], seq)
        if not self.stories.created_at[nrow]:
            self.stories.created_at[nrow] = at
        for aid in ch.get("article_ids") or ():
            self._place(self._article(aid), nrow, seq, at)
        self._version(krow, at)
        self._version(nrow, at)

    def _fold_expire(self, ch: dict, seq: float, at: int) -> None:
        """The story is hidden until a later placement revives it."""
        row = self._story(self.resolve(int(ch["story_id"])))
        self.stories.expire_seq[row] = max(self.stories.expire_seq[row], seq)

    def _fold_link(self, ch: dict, seq: float, at: int) -> None:
        """A cross-language link between two stories, recorded in both directions."""
        # Links come from the cross-language link writer (language "mul") and reach every edition: a link of a
        # story this book does not hold waits in pending_links until the story appears. One LINK change links
        # both stories (the link writer emits each pair once, smaller id first).
        other = ch.get("other_story_id")
        if other is None:
            return
        a, b = int(ch["story_id"]), int(other)
        for sid, linked in ((self.resolve(a), b), (self.resolve(b), a)):
            row = self.stories.row_of.get(sid)
            if row is None:
                self.pending_links.setdefault(sid, []).append((linked, max(at, self._version_at)))
            elif linked not in self.stories.links[row]:
                self.stories.links[row].add(linked)
                self._version(row, at)

    _FOLDS: ClassVar[dict] = {
        NEW_STORY: _fold_placement,
        ASSIGN: _fold_placement,
        MERGE: _fold_merge,
        SPLIT: _fold_split,
        EXPIRE: _fold_expire,
        LINK: _fold_link,
    }

    def _apply_pulse(self, p: dict) -> None:
        row = self._story(self.resolve(int(p["story_id"])))
        end = int(p["window_end"])
        if p["kind"] == "breaking":
            if not self.stories.breaking_start[row] or end < self.stories.breaking_start[row]:
                self.stories.breaking_start[row] = end
            self.stories.breaking_last[row] = max(self.stories.breaking_last[row], end)
        elif p["kind"] == "developing":
            self.stories.developing_last[row] = max(self.stories.developing_last[row], end)
        else:
            raise ValueError(f"unknown pulse kind {p['kind']!r}")

    def _upsert_article(self, a: int, art: dict, at: int) -> None:
        version = int(art.get("version") or 1)
        fs = int(art["first_seen_at"])
        self._article_event(a, at)
        if self.articles.has_data[a] and version <= self.articles.version[a]:
            if fs < self.articles.first_seen[a]:  # the same article seen earlier elsewhere: first-seen is the minimum
                self.articles.first_seen[a] = fs
                self.articles.is_stale[a] = is_stale(int(self.articles.published_at[a]), fs, self.stale_ms)
                self._touch(a, at)
            return
        fs = min(fs, int(self.articles.first_seen[a])) if self.articles.has_data[a] else fs
        self.articles.has_data[a] = True
        self.articles.version[a] = version
        self.articles.publisher[a] = self.publisher(art.get("publisher_id") or "unknown")
        self.articles.first_seen[a] = fs
        self.articles.published_at[a] = int(art.get("published_at") or fs)
        self.articles.is_stale[a] = is_stale(int(self.articles.published_at[a]), fs, self.stale_ms)
        sec = -1
        for lab in [art.get("section")] + list(art.get("topics") or ()):
            if lab and lab.lower() in self.label_section:
                sec = self.label_section[lab.lower()]
                break
        self.articles.section[a] = sec
        title = art.get("title") or ""
        self.articles.title_vector[a] = _title_vector_of(title)  # copied into the table
        head = assess(title, art.get("language") or self.language)
        self.articles.headline_quality[a], self.articles.clickbait[a] = head.quality, head.clickbait
        self.articles.is_opinion[a] = bool(art.get("is_opinion"))
        self.articles.is_fact_check[a] = bool(art.get("is_fact_check"))
        self.articles.is_paid[a] = art.get("accessible_for_free") is False
        places: dict[int, bool] = {}
        for name, pid in art.get("places") or ():
            for key in (str(name).lower(), str(pid).lower()):
                hit = self.place_region.get(key)
                if hit:
                    places[hit[0]] = places.get(hit[0], False) or hit[1]
                    break
        self.articles.places[a] = tuple(sorted(places.items()))  # (region index, mentions a sub-national place)
        self.articles.entities[a] = tuple(dict.fromkeys(art.get("entities") or ()))
        self.articles.card[a] = {
            "article_id": art["article_id"],
            "url": art.get("canonical_url") or "",
            "title": title,
            "lede": art.get("lede") or "",
            "publisher_id": self.publishers.id[self.articles.publisher[a]],
            "publisher_name": art.get("publisher_name") or self.publishers.name[self.articles.publisher[a]],
            "image_url": art.get("image_url"),
            "image_size": (art.get("image_width"), art.get("image_height")),  # stated pixels (cycle.with_image_size)
            "published_at": int(self.articles.published_at[a]),
            "language": art.get("language") or self.language,
        }
        self._touch(a, at)

    def _touch(self, a: int, at: int) -> None:
        self._article_event(a, at)
        row = int(self.articles.story[a])
        if row >= 0:
            self.dirty.add(row)

    def _mark_copy(self, a: int, at: int) -> None:
        """Copy status belongs to the article (syndication never un-copies it): OR over all decisions."""
        if not self.articles.is_copy[a]:
            self.articles.is_copy[a] = True
            self._touch(a, at)

    def _place(self, a: int, row: int, seq: float, at: int, force: bool = False) -> None:
        if seq < self.articles.seq[a] or (seq == self.articles.seq[a] and not force):
            return
        self._article_event(a, at)
        old = int(self.articles.story[a])
        self.articles.seq[a] = seq
        if old == row:
            if self.articles.has_data[a] and self.articles.event_minute[a] > self.stories.version[row]:
                self.dirty.add(row)
            return
        if old >= 0:
            self.stories.members[old].discard(a)
            self.dirty.add(old)
            self._version(old, at)  # losing a member is a structural event of the old story
        self.articles.story[a] = row
        self.stories.members[row].add(a)
        if row not in self.dirty and self.articles.has_data[a]:
            self._add_to_story(row, a)
        # an article without data yet adds nothing; its data (upsert) marks the story dirty

    # ------------------------------------------------------------------ aggregates
    def _add_to_story(self, row: int, a: int) -> None:
        if self.articles.event_minute[a] > self.stories.version[row]:
            self.stories.version[row] = self.articles.event_minute[a]
        self.stories.n_articles[row] += 1
        sec = int(self.articles.section[a])
        if sec >= 0:
            self.stories.section_counts[row, sec] += 1
            self.stories.labelled[row] += 1
            prim = int(self.stories.primary_section[row])
            if (
                prim < 0
                or self.stories.section_counts[row, sec] > self.stories.section_counts[row, prim]
                or (self.stories.section_counts[row, sec] == self.stories.section_counts[row, prim] and sec < prim)
            ):
                self.stories.primary_section[row] = sec
        self.stories.title_sum[row] += self.articles.title_vector[a]
        self.stories.n_opinion[row] += int(self.articles.is_opinion[a])
        self.stories.n_fact_checks[row] += int(self.articles.is_fact_check[a])
        for ridx, local in self.articles.places[a]:
            key = (row, ridx)
            i = self.mentions.row_of.get(key)
            if i is None:
                i = self.mentions.add(key, story=row, region=ridx, live=True)
                self.stories.mention_rows[row].append(i)
            self.mentions.count[i] += 1
            self.mentions.local_count[i] += int(local)
        if self.articles.is_copy[a] or self.articles.is_stale[a]:
            return
        fs = int(self.articles.first_seen[a])
        if self.stories.n_originals[row] == 0:
            self.stories.first_seen[row] = fs
            self.stories.newest_seen[row] = fs
        else:
            self.stories.first_seen[row] = min(self.stories.first_seen[row], fs)
            self.stories.newest_seen[row] = max(self.stories.newest_seen[row], fs)
        self.stories.n_originals[row] += 1
        pub = int(self.articles.publisher[a])
        key = (row, pub)
        i = self.pairs.row_of.get(key)
        if i is None:
            i = self.pairs.add(
                key, story=row, publisher=pub, region=self.publishers.region[pub], latest_first_seen=fs, live=True
            )
            self.stories.pair_rows[row].append(i)
        else:
            self.pairs.latest_first_seen[i] = max(self.pairs.latest_first_seen[i], fs)
        self.pairs.n_originals[i] += 1

    def _rebuild_story(self, row: int) -> None:
        self.stories.version[row] = self.stories.structural_minute[row]
        self.stories.n_articles[row] = 0
        self.stories.section_counts[row] = 0
        self.stories.labelled[row] = 0
        self.stories.primary_section[row] = -1
        self.stories.title_sum[row] = 0
        self.stories.n_opinion[row] = 0
        self.stories.n_fact_checks[row] = 0
        self.stories.n_originals[row] = 0
        self.stories.first_seen[row] = 0
        self.stories.newest_seen[row] = 0
        for i in self.stories.pair_rows[row]:
            self.pairs.live[i] = False
            del self.pairs.row_of[(row, int(self.pairs.publisher[i]))]
        for i in self.stories.mention_rows[row]:
            self.mentions.live[i] = False
            del self.mentions.row_of[(row, int(self.mentions.region[i]))]
        self.stories.pair_rows[row] = []
        self.stories.mention_rows[row] = []
        for a in sorted(self.stories.members[row], key=lambda x: self.articles.id[x]):
            if self.articles.has_data[a]:
                self._add_to_story(row, a)

    def flush(self) -> None:
        """Recompute the aggregates of stories that lost members or whose members changed."""
        if self.dirty:  # when a book flushes is part of its tables (new pair rows are numbered in fold order)
            self._step("flush")
        for row in sorted(self.dirty):
            self._rebuild_story(row)
        self.dirty.clear()

    # ------------------------------------------------------------------ queries
    def live_mask(self, now: int, live_window_ms: int) -> np.ndarray:
        n = self.stories.size
        return (
            (self.stories.last_seq[:n] > self.stories.expire_seq[:n])
            & ~self.stories.is_alias[:n]
            & (self.stories.n_originals[:n] > 0)
            & (now - self.stories.newest_seen[:n] <= live_window_ms)
        )

    def story_articles(self, row: int) -> list[int]:
        arts = self.articles
        return sorted((a for a in self.stories.members[row] if arts.has_data[a]), key=lambda a: arts.id[a])

    def pair_rows_of(self, rows: np.ndarray) -> np.ndarray:
        """The story x publisher pair rows of story ``rows`` (callers still test ``pairs.live``): O(their pairs),
        where selecting by ``pairs.story`` reads every pair of the book (~400,000 in a 120,000-story book)."""
        lists = self.stories.pair_rows
        return np.fromiter(chain.from_iterable([lists[r] for r in rows.tolist()]), np.int64)

    def mention_rows_of(self, rows: np.ndarray) -> np.ndarray:
        """The story x region mention rows of story ``rows`` (callers still test ``mentions.live``)."""
        lists = self.stories.mention_rows
        return np.fromiter(chain.from_iterable([lists[r] for r in rows.tolist()]), np.int64)

    def story_entities(self, row: int, limit: int = ENTITIES_PER_STORY) -> tuple[str, ...]:
        """The story's main entity ids: the ``limit`` mentioned by most of its articles (ties: by id). Ids are the
        alias table's (one id across scripts), so a story told in several languages counts one entity once."""
        counts: dict[str, int] = {}
        arts = self.articles
        for a in self.stories.members[row]:
            if arts.has_data[a]:
                for e in arts.entities[a]:
                    counts[e] = counts.get(e, 0) + 1
        return tuple(sorted(counts, key=lambda e: (-counts[e], e))[:limit])

    def primary_sections(self) -> np.ndarray:
        """Per story, its primary section (argmax of its labelled articles, lowest index on ties; -1: none)."""
        return self.stories.primary_section[: self.stories.size]

    def publisher_groups(self) -> np.ndarray:
        """Per publisher row, an ownership group index (``Publisher.group``: sister sites share one). Cached for
        this registry object and table size: a new registry (or a new publisher row) recomputes it, so an
        ``owner`` edited in publishers.json applies from the registry reload, not from the next new publisher."""
        return self._group_table()[0]

    def publisher_group_names(self) -> list[str]:
        """Per publisher row, its ownership group id (the owner, else the publisher id)."""
        return self._group_table()[1]

    def _group_table(self) -> tuple[np.ndarray, list[str]]:
        ids = self.publishers.id
        hit = self.__dict__.get("_groups")
        if hit is not None and hit[0] is self.registry and len(hit[2]) == len(ids):
            return hit[1], hit[2]
        names = []
        for pid in ids:
            pub = self.registry.get(pid)
            names.append(pub.group if pub is not None else pid)
        index: dict[str, int] = {}
        out = np.array([index.setdefault(g, len(index)) for g in names], np.int64)
        self.__dict__["_groups"] = (self.registry, out, names)
        return out, names

    def publisher_cities(self) -> np.ndarray:
        """Per publisher row, its city (``Publisher.city``: a local publisher), "" if none; cached like the groups."""
        ids, hit = self.publishers.id, self.__dict__.get("_cities")
        if hit is None or hit[0] is not self.registry or len(hit[1]) != len(ids):
            cities = np.array([getattr(self.registry.get(pid), "city", "") for pid in ids] + [""], dtype=object)
            hit = self.__dict__["_cities"] = (self.registry, cities[: len(ids)])
        return hit[1]

    def live_story_ids(self, now: int, live_window_ms: int) -> set[int]:
        return set(self.stories.id[: self.stories.size][self.live_mask(now, live_window_ms)].tolist())

    def stats(self) -> dict:
        return {
            "stories": self.stories.size,
            "articles": self.articles.size,
            "pairs": self.pairs.size,
            "aliases": len(self.alias),
            "applied": len(self.applied),
            "bad": self.bad_events,
        }
