"""Publishing snapshots: validate every page, pool, story coverage and aliases map, store it as an immutable
versioned object, then move its latest pointer by compare-and-set (:class:`SnapshotPublisher`). The merged-story
aliases map it publishes is kept by transforms/editions/publish/aliases.py.

Plain Python; the Beam side is :class:`~transforms.editions.beam.publishing.PublishSnapshots` and
:class:`~transforms.editions.beam.publishing.TrackAliases`.

Reads snapshot items from :class:`~transforms.editions.beam.ranking.RankEditions` / ``TrackAliases``
(``{"kind", "path", "pointer", "version", "doc", "min_stories"}``, and ``"digest"``, the doc's
:func:`~transforms.editions.vocabulary.documents.content_digest`, when the change-only replay computed it, with
``"data"``, the doc's canonical bytes, when the digest needed them: documents.digest_and_bytes); writes
through the store interfaces only
(``stores.open_stores(config)`` in ``setup()``): ``SnapshotStore.put`` of the canonical bytes and
``PointerStore.compare_and_set``. Yields one result per item: ``{"pointer", "version", "outcome", "reason"}``.

Object names and pointers (schemas/pages.py):
    pages/{edition}/{section}/v{n}.json   pointer "{edition}/{section}"
    pools/{edition}/v{n}.json             pointer "pool/{edition}"
    stories/{story_id}/v{n}.json          pointer "story/{story_id}"
    aliases/v{n}.json                     pointer "aliases"
    topics/{edition}/{topic}/v{n}.json    pointer "topic/{edition}/{topic}"  (transforms/editions/overlays/topics.py)
    storylines/{language}/{id}/v{n}.json  pointer "storyline/{language}/{id}"  (transforms/editions/overlays/storyline_pages.py)
    storyline_index/{language}/{shard}/v{n}.json  pointer "storyline_index/{language}/{shard}"  (storyline_index.py)

A storyline item is completed before step 2 with the live version it follows (storyline_pages.merged_document:
the archive of episodes that left the live set is the previous version), a storyline index shard likewise
(storyline_index.merged_index); if its pointer moves meanwhile the
compare-and-set fails and a StoreError is raised, so the bundle is retried and merges again.

Per item, in order:
1. stale   -- the pointer is already at this version or later (a replay, a timer that fired twice): nothing.
2. unchanged -- a page/pool/aliases map whose reader-visible content (without version, cycle and scores) equals the
   live version's is not rewritten: ~870 pages a minute would otherwise be written when little changed.
3. validate (documents.validate, on the canonical bytes about to be stored): schema, minimum story count, a
   representative for every story, and no page losing more than half the stories of the live version in one
   cycle. A rejected item leaves the live version serving and is counted (``snapshots/rejected`` and
   ``snapshots/rejected_<reason>``). A page that keeps proposing the same large shrink for
   ``confirm_shrink_cycles`` consecutive cycles (15 min by default) is accepted: a real, lasting change (a quiet
   night) must not freeze a page forever, a one-cycle collapse is held.
4. put -- immutable by name; AlreadyExists with the same bytes is a replay (fine), with other bytes a conflict
   (counted; the pointer is not moved).
5. compare-and-set from the version read in step 1; if another writer moved it meanwhile, re-read and retry
   once unless the pointer has passed this version.
Store errors (StoreError) are transient: they are raised so the bundle is retried.

Editorial holds (stores/controls.py, ``newsroom control hold`` / ``newsroom rollback --hold``): before step 1, an
edition page whose pointer has a hold active at the item's cycle (``version`` minutes; ``expires_at`` only, see
stores/controls.py) is not published: outcome ``held``, counted ``held``, nothing stored (a held cycle's page is
not kept: the ranker publishes a fresh one when the hold ends, and an unserved object would only cost storage).
If the pointer is not at the held version (a cycle ranked before the hold was set moved it after the command put
it back), it is moved back by compare-and-set, reason ``hold``, counted ``hold_restored``. The edition's controls
are read once per edition and cycle version (one prefix scan). After the expiry the next cycle publishes as usual.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from schemas.pages import (
    aliases_path,
    page_path,
    pool_path,
    story_path,
    storyline_index_path,
    storyline_path,
    topic_path,
)
from stores import AlreadyExists, NotFound, StoreError
from stores.retention import StoryRetention, retire
from transforms.common import MINUTE_MS
from transforms.editions.overlays.storyline_index import merged_index
from transforms.editions.overlays.storyline_pages import (
    ArchivedEpisodes,
    expired_single_storylines,
    merged_document,
)
from transforms.editions.vocabulary import documents as docs

log = logging.getLogger(__name__)


def ops_event(event: str, pointer: str, version: int, **fields) -> str:
    """One log line of the operations contract (terraform/modules/monitoring reads it with log-based metrics):
    ``newsroom.<event> edition=<id> section=<id> version=<n> [key=value ...]``, logfmt without quotes, because
    Dataflow's worker log handler keeps only the formatted message. ``pointer`` is ``{edition}/{section}``."""
    edition, _, section = pointer.partition("/")
    parts = [f"newsroom.{event}", f"edition={edition}", f"section={section}", f"version={int(version)}"]
    parts += [f"{k}={str(v).replace(' ', '_')}" for k, v in fields.items()]
    return " ".join(parts)


def _cards_of(doc: dict) -> dict[str, str]:
    """article_id -> first_seen_at (ISO text) of every card on a page: representatives and supporting articles."""
    cards: dict[str, str] = {}
    for story in doc.get("stories", ()):
        for card in [story.get("representative") or {}, *story.get("supporting", ())]:
            if card.get("article_id") and card.get("first_seen_at"):
                cards[card["article_id"]] = card["first_seen_at"]
    return cards


def release_to_page_s(new_doc: dict, live_cards: dict[str, str] | None, now_s: float) -> float | None:
    """Seconds from the first-seen time of the newest article that is on ``new_doc`` and was not on the live
    version (``live_cards``, from :func:`_cards_of`) to ``now_s`` (the pointer move). None when there is no live
    version to compare with (a first publish, or a live object that could not be read: every card would count as
    new and report its age, not a delay) or no article is new (a re-ranking only)."""
    if live_cards is None:
        return None
    fresh = [seen for aid, seen in _cards_of(new_doc).items() if aid not in live_cards]
    if not fresh:
        return None
    newest = max(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() for s in fresh)
    return round(max(0.0, now_s - newest), 1)


def path_of(kind: str, pointer: str, version: int) -> str:
    if kind == "edition_page":
        edition, section = pointer.split("/", 1)
        return page_path(edition, section, version)
    if kind == "candidate_pool":
        return pool_path(pointer.split("/", 1)[1], version)
    if kind == "story_coverage":
        return story_path(pointer.split("/", 1)[1], version)
    if kind == "aliases":
        return aliases_path(version)
    if kind == "topic_page":
        _, edition, topic = pointer.split("/", 2)
        return topic_path(edition, topic, version)
    if kind == "storyline":
        _, language, storyline_id = pointer.split("/", 2)
        return storyline_path(language, storyline_id, version)
    if kind == "storyline_index":
        _, language, shard = pointer.split("/", 2)
        return storyline_index_path(language, shard, version)
    raise ValueError(f"unknown snapshot kind {kind!r}")


@dataclass(frozen=True)
class PointerRetention:
    """When the publisher retires pointers, so the pointer listing every origin polls stays bounded.

    ``retain_s``: a story pointer whose story is in no language's live set (StoryStore.live_stories) and that has
    not moved for this long is retired (PointerStore.retire; stores/retention.py). Checked every
    ``retire_every_s`` of wall clock; a retire is conditional on the version listed, so several publisher instances
    doing it at once is harmless. ``topic_keep_s``: a ``topic/{edition}/{id}`` pointer whose topic no cycle chose
    (no topic page item came through this publisher) for this long is retired with the story pointers, as trending
    topics come and go (transforms/editions/overlays/topics.py). A restarted publisher starts every listed topic's clock at
    its first check (late, never early).
    """

    retain_s: float = 48 * 3600.0
    retire_every_s: float = 600.0
    topic_keep_s: float = 6 * 3600.0


def _merge_storyline(publisher: SnapshotPublisher, item: dict) -> dict | None:
    return merged_document(item, publisher._read_live_storyline)


def _merge_storyline_index(publisher: SnapshotPublisher, item: dict) -> dict | None:
    return merged_index(item, publisher._read_live_index)


@dataclass(frozen=True)
class KindPolicy:
    """How the publisher treats one kind of document (:data:`POLICIES`), instead of a branch on the kind's name at
    every step of :meth:`SnapshotPublisher.publish`.

    ``holds``: an editorial hold stops it (edition pages); ``tracks_activity``: its last publish time is kept for
    retirement (topic pages); ``merges``: completed with the live version before anything else, None when nothing
    changed (storylines, the storyline index; a pointer moved meanwhile is retried, never overwritten);
    ``skips_unchanged``: a document equal to the live one is not published again (all but story coverage, whose
    versions the retention counts); ``heartbeat``: an unchanged one still says it was seen (edition pages);
    ``ops_events``: rejections are logged as ops events (edition pages); ``retained``: the retention hears of each
    move (story coverage); ``cycle_versions``: its versions are cycle minutes; ``episodes``: its episodes are
    learnt (storylines); ``page_events``: what a moved page publishes next (edition pages: release times,
    Breaking).
    """

    holds: bool = False
    tracks_activity: bool = False
    merges: Callable | None = None
    skips_unchanged: bool = True
    heartbeat: bool = False
    ops_events: bool = False
    retained: bool = False
    cycle_versions: bool = False
    episodes: bool = False
    page_events: bool = False


PLAIN = KindPolicy()
POLICIES = {
    "edition_page": KindPolicy(holds=True, heartbeat=True, ops_events=True, cycle_versions=True, page_events=True),
    "candidate_pool": KindPolicy(),
    "story_coverage": KindPolicy(skips_unchanged=False, retained=True),
    "aliases": KindPolicy(),
    "topic_page": KindPolicy(tracks_activity=True),
    "storyline": KindPolicy(merges=_merge_storyline, cycle_versions=True, episodes=True),
    "storyline_index": KindPolicy(merges=_merge_storyline_index),
}


def policy_of(kind: str) -> KindPolicy:
    """The publishing policy of a document kind; a kind without an entry is published plainly (``KindPolicy()``)."""
    return POLICIES.get(kind, PLAIN)


class SnapshotPublisher:
    """Validate -> put -> compare-and-set, one snapshot item at a time (see the module docstring).

    Args:
        stores: the opened stores (``stores.open_stores``): their snapshot and pointer stores are written.
        confirm_shrink_cycles: cycles a > 50 % shrink must persist before it is published.
        count: ``count(name, n)`` for the ``snapshots`` counters (the DoFn passes Beam Metrics); default: none.
        languages: whose live stories keep their ``story/{id}`` pointers (default: every edition's language).
        retention: when story and topic pointers are retired (:class:`PointerRetention`).
        clock: wall-clock seconds (tests move it).
        controls: the editorial control store whose holds freeze pages (see the module docstring); None: none.
    """

    def __init__(
        self,
        stores,
        confirm_shrink_cycles: int = 15,
        count: Callable[[str, int], None] | None = None,
        languages: tuple[str, ...] | None = None,
        retention: PointerRetention = PointerRetention(),
        clock: Callable[[], float] = time.time,
        controls=None,
    ):
        self.stores = stores
        self.topic_keep_s = retention.topic_keep_s
        self._topic_active: dict[str, float] = {}  # topic pointer -> when a cycle last chose it (clock seconds)
        self.controls = controls  # a stores.controls.ControlStore: page holds (None: no holds)
        self._holds: dict[str, tuple[int, dict]] = {}  # edition -> (cycle version read for, pointer -> hold)
        self.confirm_shrink_cycles = confirm_shrink_cycles
        self._counter = count
        if languages is None:
            from transforms.editions.vocabulary.config import default_config

            languages = tuple(sorted({e.language for e in default_config().editions}))
        self.languages = languages
        self.retention = StoryRetention(keep_s=retention.retain_s)
        self.retire_every_s = retention.retire_every_s
        self.clock = clock
        self._next_retire = clock() + retention.retire_every_s
        self._live: dict[str, tuple] = {}  # pointer -> (version, story count, digest)
        # edition page pointer -> (live version, its cards; None while INFO is off: only the log line reads them)
        self._cards: dict[str, tuple[int, dict | None]] = {}
        self._beat: dict[str, int] = {}  # edition -> the cycle version its heartbeat was logged for
        self._shrink: dict[str, int] = {}  # pointer -> consecutive cycles proposing a > 50 % shrink
        self._cycle = 0  # the newest cycle minute written (storylines, pages): the event-time clock of retirement
        self._kept_storylines: set[str] = set()  # storyline pointers never retired (several episodes, redirects)
        self._episodes = ArchivedEpisodes()  # their episodes' story pointers, never retired either

    def _count(self, name: str, n: int = 1) -> None:
        if self._counter is not None:
            self._counter(name, n)

    def _live_summary(self, kind: str, pointer: str, current: int | None) -> tuple:
        if current is None:
            return (None, None, None)
        hit = self._live.get(pointer)
        if hit and hit[0] == current:
            return hit
        try:
            doc = json.loads(self.stores.snapshots.get(path_of(kind, pointer, current)))
            summary = (current, len(doc.get("stories", [])) if "stories" in doc else None, docs.content_digest(doc))
            if kind == "edition_page":
                self._cards[pointer] = (current, _cards_of(doc) if log.isEnabledFor(logging.INFO) else None)
        except (NotFound, ValueError):
            self._count("live_version_unreadable")
            summary = (current, None, None)
        self._live[pointer] = summary
        return summary

    def publish(self, item: dict) -> dict:
        """One snapshot item -> ``{"pointer", "version", "kind", "outcome", "reason"}``. What differs by document
        kind is read from its :class:`KindPolicy` (:data:`POLICIES`), never tested on the kind's name here."""
        kind, pointer, version, doc = item["kind"], item["pointer"], int(item["version"]), item["doc"]
        policy = policy_of(kind)
        result = {"pointer": pointer, "version": version, "kind": kind, "outcome": "", "reason": ""}
        if policy.tracks_activity:
            self._topic_active[pointer] = self.clock()
        hold = self._hold(pointer, version) if policy.holds and self.controls is not None else None
        if hold is not None:
            return self._held(pointer, hold, result)
        current = self.stores.pointers.get(pointer)
        if current is not None and current >= version:
            self._count("stale")
            result["outcome"] = "stale"
            return result
        if policy.merges is not None:
            doc = policy.merges(self, item)
            if doc is None:
                result["outcome"] = "unchanged"
                return result
        _, live_count, live_digest = self._live_summary(kind, pointer, current)
        # the ranker's digest of this very document when it computed one (steady.py ``unproposed``), else computed;
        # with it, the canonical bytes it wrote when the digest needed them (documents.digest_and_bytes)
        digest = item.get("digest") if doc is item["doc"] else None
        canonical = item.get("data") if digest else None
        digest = digest or docs.content_digest(doc)
        if policy.skips_unchanged and live_digest is not None and digest == live_digest:
            self._count("unchanged")  # what readers see did not change: no new version (checked before validation)
            result["outcome"] = "unchanged"
            if policy.heartbeat:
                self._heartbeat(pointer, version, "unchanged")
            return result
        rejected, data = self._validate(item, policy, doc, live_count, digest, canonical)
        if rejected is not None:
            result.update(outcome="rejected", reason=rejected)
            return result
        if not self._put(path_of(kind, pointer, version), data, pointer):
            result.update(outcome="conflict", reason="different_bytes")
            return result
        for _ in range(2):
            if self.stores.pointers.compare_and_set(pointer, current, version, reason="publish"):
                self._moved(item, policy, current, doc, digest)
                result["outcome"] = "published"
                return result
            if policy.merges is not None:  # merged with the live version: merge with the new one
                raise StoreError(f"{pointer} moved while v{version} was merged; retrying")
            current = self.stores.pointers.get(pointer)
            if current is not None and current >= version:
                break
        self._count("stale")
        result["outcome"] = "stale"
        return result

    def _validate(
        self, item: dict, policy: KindPolicy, doc: dict, live_count, digest, canonical: bytes | None = None
    ) -> tuple[str | None, bytes]:
        """(None, the canonical bytes) when the document may be published, else (the reason it is rejected, counted
        and logged, b""). A page that lost more than half its stories is published once it stays so for
        ``confirm_shrink_cycles``. A content rejected before is rejected again without being serialised
        (documents.validate ``digest``); ``canonical``: the document's canonical bytes when the ranker wrote them."""
        pointer, version = item["pointer"], int(item["version"])
        try:
            data = docs.validate(
                item["kind"], doc, live_count, item.get("min_stories", 1), digest=digest, canonical=canonical
            )
            self._shrink.pop(pointer, None)
            return None, data
        except docs.SnapshotRejected as exc:
            streak = self._shrink.get(pointer, 0) + 1 if exc.reason == "lost_more_than_half" else 0
            if exc.reason == "lost_more_than_half" and streak >= self.confirm_shrink_cycles:
                self._count("shrink_confirmed")
                self._shrink.pop(pointer, None)
                return None, canonical if canonical is not None else docs.canonical_bytes(doc)
            if streak:
                self._shrink[pointer] = streak
            self._count("rejected")
            self._count(f"rejected_{exc.reason}")
            log.info("snapshot %s v%d rejected: %s", pointer, version, exc)
            if policy.ops_events and log.isEnabledFor(logging.INFO):
                log.info("%s", ops_event("snapshot_rejected", pointer, version, reason=exc.reason))
            return exc.reason, b""

    def _put(self, path: str, data: bytes, pointer: str) -> bool:
        """Store the immutable object; False when one with other bytes is already there (the pointer stays)."""
        try:
            self.stores.snapshots.put(path, data)
        except AlreadyExists:
            if self.stores.snapshots.get(path) != data:
                self._count("conflicts")
                log.warning("snapshot %s exists with other bytes; pointer %s not moved", path, pointer)
                return False
        return True

    def _moved(self, item: dict, policy: KindPolicy, current, doc: dict, digest) -> None:
        """After the pointer moved: the live summary, the counts and what the document's kind keeps."""
        kind, pointer, version = item["kind"], item["pointer"], int(item["version"])
        self._live[pointer] = (version, len(doc["stories"]) if "stories" in doc else None, digest)
        self._count("published")
        self._count(f"published_{kind}")
        if policy.retained:
            self.retention.moved(pointer, version, self.clock())
        if policy.cycle_versions:  # versions are cycle minutes
            self._cycle = max(self._cycle, version)
        if policy.episodes and self._episodes.learn(pointer, version, doc):  # a kept storyline
            self._kept_storylines.add(pointer)
        if policy.page_events:
            self._page_published(pointer, current, version, doc)

    def _read_live_storyline(self, pointer: str) -> dict | None:
        return self._read_live(pointer, "storyline")

    def _read_live_index(self, pointer: str) -> dict | None:
        return self._read_live(pointer, "storyline_index")

    def _read_live(self, pointer: str, kind: str = "storyline") -> dict | None:
        """The live document of a storyline (or storyline index) pointer (None: no pointer). A store error
        propagates (retried)."""
        current = self.stores.pointers.get(pointer)
        if current is None:
            return None
        return json.loads(self.stores.snapshots.get(path_of(kind, pointer, current)))

    def _storyline_doc(self, pointer: str, version: int) -> dict:
        return json.loads(self.stores.snapshots.get(path_of("storyline", pointer, version)))

    def _readable_storyline(self, pointer: str, version: int) -> dict | None:
        """The storyline document, or None when its object is missing or not a document (logged and counted); a
        store failure still raises, so the retirement pass is retried."""
        try:
            return self._storyline_doc(pointer, version)
        except (NotFound, ValueError) as exc:
            self._count("storyline_unreadable")
            log.error("storyline %s v%s unreadable, its episodes are not kept: %s", pointer, version, exc)
            return None

    def _page_published(self, pointer: str, previous: int | None, version: int, doc: dict) -> None:
        """Log ``newsroom.page_published`` (with ``release_to_page_s`` when an article is new on the page) and the
        edition's heartbeat; remember the page's cards for the next version's delay. Only the log line reads the
        cards, so while INFO is off (a backfill logs warnings only) neither the line nor the cards are made: a
        version published then has no cards to compare with, as after a restart."""
        if not log.isEnabledFor(logging.INFO):
            self._cards[pointer] = (version, None)
            self._heartbeat(pointer, version, "published")
            return
        live = self._cards.get(pointer)
        delay = release_to_page_s(doc, live[1] if live and live[0] == previous else None, self.clock())
        extra = {} if delay is None else {"release_to_page_s": delay}
        log.info("%s", ops_event("page_published", pointer, version, **extra))
        self._cards[pointer] = (version, _cards_of(doc))
        self._heartbeat(pointer, version, "published")

    def _heartbeat(self, pointer: str, version: int, outcome: str) -> None:
        """``newsroom.edition_heartbeat``, once per edition and cycle version, when one of its pages is current at
        that cycle (published, or unchanged and so deliberately not rewritten). The stuck-pointer alert reads its
        absence: a quiet edition whose pages are all unchanged keeps beating, a stalled ranker or publisher (or
        an edition whose every page is rejected) does not."""
        edition = pointer.split("/", 1)[0]
        if self._beat.get(edition, -1) >= version:
            return
        self._beat[edition] = version
        if log.isEnabledFor(logging.INFO):
            log.info("%s", ops_event("edition_heartbeat", pointer, version, outcome=outcome))

    def _hold(self, pointer: str, version: int):
        """The hold on ``pointer`` active at cycle ``version`` (one read of the edition's controls per version)."""
        edition = pointer.split("/", 1)[0]
        cached = self._holds.get(edition)
        if cached is None or cached[0] != version:
            holds = {c.pointer: c for c in self.controls.edition_controls(edition) if c.kind == "hold"}
            cached = self._holds[edition] = (version, holds)
        hold = cached[1].get(pointer)
        return hold if hold is not None and version * MINUTE_MS < hold.expires_at else None

    def _held(self, pointer: str, hold, result: dict) -> dict:
        self._count("held")
        current = self.stores.pointers.get(pointer)
        target = int(hold.version)
        if (
            current != target
            and self.stores.snapshots.exists(path_of("edition_page", pointer, target))
            and self.stores.pointers.compare_and_set(pointer, current, target, reason="hold")
        ):
            self._count("hold_restored")
            log.warning("%s moved to v%s during a hold; put back to the held v%d", pointer, current, target)
        result.update(outcome="held", reason=f"hold_v{target}")
        return result

    def maybe_retire(self) -> list[str]:
        """Retire the story pointers whose stories left every live set ``retain_s`` ago, except the episodes of a
        storyline the archive keeps (storyline_pages.ArchivedEpisodes: its page links them), the topic pointers no
        cycle chose for ``topic_keep_s`` and the one-episode storylines long past any change
        (storyline_pages.expired_single_storylines), at most every ``retire_every_s``; returns the names retired.
        The same pass revives the story pointers of kept storylines' episodes retired before their storyline was
        kept (ArchivedEpisodes.revive). A store error is counted and retried next time."""
        now = self.clock()
        if now < self._next_retire:
            return []
        self._next_retire = now + self.retire_every_s
        try:
            listed = self.stores.pointers.versions("storyline/")  # before the stories: episodes known first
            known, read_now = self._episodes.refresh(listed, self._readable_storyline, self._kept_storylines)
            live = {str(sid) for lang in self.languages for sid in self.stores.stories.live_stories(lang)}
            self.retention.seen(live, now)
            stories = self.stores.pointers.versions("story/")
            expired = self.retention.expired(stories, live, now)
            if not known:  # a storyline not read back yet may hold any of them: later, never early
                self._count("story_retire_deferred")
                expired = {}
            archive = self._episodes.story_pointers()
            retired = retire(self.stores.pointers, {n: v for n, v in expired.items() if n not in archive})
            self._count("story_revived", len(self._episodes.revive(stories, self.stores.pointers)))
            retired += retire(self.stores.pointers, self._expired_topics(now))

            def read(name, version):
                hit = read_now.get((name, version))
                return hit if hit is not None else self._storyline_doc(name, version)

            single = expired_single_storylines(listed, self._cycle, self._kept_storylines, read)
            retired += retire(self.stores.pointers, single)
        except Exception as exc:  # a store error: the next check retries
            self._count("retire_failed")
            log.warning("story pointer retirement failed, retrying later: %s", exc)
            return []
        self._count("story_retired", sum(1 for n in retired if n.startswith("story/")))
        self._count("topic_retired", sum(1 for n in retired if n.startswith("topic/")))
        self._count("storyline_retired", sum(1 for n in retired if n.startswith("storyline/")))
        return retired

    def _expired_topics(self, now: float) -> dict[str, int]:
        """Topic pointers no cycle chose for ``topic_keep_s`` (see the class docstring): ``{name: version}``."""
        listed = self.stores.pointers.versions("topic/")
        for name in [n for n in self._topic_active if n not in listed]:
            del self._topic_active[name]
        return {
            n: v for n, v in sorted(listed.items()) if now - self._topic_active.setdefault(n, now) > self.topic_keep_s
        }
