"""Breaking announcements: one ``Breaking`` record per story and edition (schemas/avro/breaking.avsc, topic
``breaking``), and the CDN purge of the pages that newly show a Breaking story (so the edge does not
hold them for their max-age).

Plain Python; the Beam side is :class:`~transforms.editions.beam.announce.AnnounceBreaking`.

When: after an edition page is *published* (its pointer moved; outcome ``published`` of
:class:`~transforms.editions.publish.snapshots.SnapshotPublisher`), every story on it labelled ``breaking`` (the ranker pins
it: cycle.StoryLabels) is a candidate (:func:`candidates`). The first candidate of a story in an edition emits the
record; later ones emit nothing. Why after the publish and not from the ranker's items: a purge sent before the
pointer moved would let the edge fetch and cache the old page again for its whole TTL.

Once per story and edition (:class:`Ledger`): the announced stories of an edition are kept in Beam state keyed by
edition, with the sections already purged; an entry is forgotten ``keep_ms`` (default 24 h) after it was announced
(a story is pinned for 2 h from its first breaking window, so it cannot come back after that). Replays and timers
that fire twice publish nothing (their pages are ``stale`` or ``unchanged``), so they announce nothing. A job started
afresh (not updated: Beam state lost) may announce a story again while it is still pinned and its page changes:
``breaking_id`` (edition and story) is deterministic, so consumers dedupe on it.

Purges: the first time a Breaking story appears on a section page of an edition (announcement or later), that
page's public paths are purged (stores.cdn ``purge_pointers``, reason ``breaking <story> <edition>``): the edge
then serves the page with the story now, not after ``s-maxage``.

Hot stories (the design: purge the 50 hottest stories on a headline or label change): the first
:data:`HOT_STORIES` stories of an edition's published top page, in the ranker's order, are its hottest
(:func:`hot_candidate`). The ledger remembers each one's headline and labels as last published
(:meth:`Ledger.hot_changes`); when a later top page shows one of them with another headline (its representative's
title) or other labels, the story's pages (``story/{id}``: API and web) are purged, reason
``hot <story> <edition>``: a reader opening Full Coverage from the new card sees the new headline in seconds, not
after the story page's TTL. A story new to the hot list is not purged (its old page was not hot), nor one that left
it. Purges go through the purger's token bucket like every other (stores/cdn.py: over the rate they widen).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from transforms.common import MINUTE_MS

BREAKING = "breaking"
KEEP_MS = 24 * 3600 * 1000
HOT_STORIES = 50
HOT = "hot"  # the kind of a hot-stories candidate (a ``candidate["kind"]``; Breaking candidates have none)


def breaking_id(edition: str, story_id: int) -> str:
    return f"{edition}-{int(story_id)}"


def candidates(item: dict, result: dict) -> list[tuple[str, dict]]:
    """``(edition, candidate)`` for every Breaking story of a published edition page; [] for anything else. A
    candidate is ``{"story_id", "section" (the page's), "story_section" (the story's own section on its card),
    "cycle", "labels", "representative"}``."""
    if item.get("kind") != "edition_page" or result.get("outcome") != "published":
        return []
    doc = item["doc"]
    edition, section = item["pointer"].split("/", 1)
    cycle = int(item["version"]) * MINUTE_MS
    out = []
    for entry in doc.get("stories", ()):
        labels = list(entry.get("labels") or ())
        if BREAKING not in labels:
            continue
        rep = entry["representative"]
        out.append(
            (
                edition,
                {
                    "story_id": int(entry["story_id"]),
                    "section": section,
                    "story_section": entry.get("section") or section,
                    "cycle": cycle,
                    "labels": labels,
                    "representative": {
                        "article_id": rep["article_id"],
                        "url": rep["url"],
                        "title": rep["title"],
                        "publisher_id": rep["publisher_id"],
                        "publisher_name": rep.get("publisher_name") or "",
                        "language": rep.get("language"),
                        "image_url": rep.get("image_url"),
                    },
                },
            )
        )
    return out


def hot_candidate(item: dict, result: dict, n: int = HOT_STORIES) -> list[tuple[str, dict]]:
    """``[(edition, {"kind": "hot", "cycle", "stories": {story id: (headline, labels)}})]`` for a published top
    page (its first ``n`` stories); [] for anything else."""
    if item.get("kind") != "edition_page" or result.get("outcome") != "published":
        return []
    edition, section = item["pointer"].split("/", 1)
    if section != "top":
        return []
    stories = {}
    for entry in list(item["doc"].get("stories", ()))[:n]:
        title = (entry.get("representative") or {}).get("title") or ""
        stories[int(entry["story_id"])] = (title, tuple(entry.get("labels") or ()))
    return [(edition, {"kind": HOT, "cycle": int(item["version"]) * MINUTE_MS, "stories": stories})]


@dataclass
class Ledger:
    """One edition's announced stories: story id -> (cycle first seen, sections purged). Kept in Beam state."""

    announced: dict = field(default_factory=dict)

    def see(self, edition: str, cand: dict, keep_ms: int = KEEP_MS, clock=time.time) -> tuple[dict | None, bool]:
        """Record ``cand``; returns (the Breaking record if this is the story's first candidate in the edition,
        whether its section page is to be purged (first time the story is seen on that section))."""
        self._forget(cand["cycle"] - keep_ms)
        sid = cand["story_id"]
        hit = self.announced.get(sid)
        if hit is not None:
            if cand["section"] in hit[1]:
                return None, False
            hit[1].add(cand["section"])
            return None, True
        self.announced[sid] = (cand["cycle"], {cand["section"]})
        record = {
            "schema_version": 1,
            "breaking_id": breaking_id(edition, sid),
            "story_id": sid,
            "edition": edition,
            "sections": list(dict.fromkeys([cand["section"], cand.get("story_section") or cand["section"]])),
            "labels": cand["labels"],
            "first_seen": cand["cycle"],
            "representative": cand["representative"],
            "emitted_at": int(clock() * 1000),
        }
        return record, True

    def hot_changes(self, cand: dict) -> list[int]:
        """The stories of a hot candidate (:func:`hot_candidate`) whose headline or labels differ from the last
        top page's; remembers this page's. A candidate older than the remembered one changes nothing (a replay)."""
        hot = self.__dict__.setdefault("hot", (-1, {}))  # absent from ledgers pickled before hot stories
        cycle, last = hot
        if cand["cycle"] <= cycle:
            return []
        now = {int(s): (title, tuple(labels)) for s, (title, labels) in cand["stories"].items()}
        self.hot = (cand["cycle"], now)
        return [s for s, seen in now.items() if s in last and last[s] != seen]

    def _forget(self, before: int) -> None:
        old = [sid for sid, (first, _) in self.announced.items() if first < before]
        for sid in old:
            del self.announced[sid]


def purge_reason(edition: str, story_id: int, kind: str = BREAKING) -> str:
    return f"{kind} {int(story_id)} {edition}"


PURGE_FAILED = "cdn_purge_failed"


def purge_failed_event(edition: str, section: str, story_id: int, exc: BaseException) -> str:
    """The log line of a Breaking purge the CDN refused (terraform/modules/monitoring reads it with a log-based
    metric, like :func:`transforms.editions.publish.snapshots.ops_event`): ``newsroom.cdn_purge_failed edition=<id>
    section=<id> story=<id> error=<text>``, logfmt without quotes; ``error`` (last, spaces as ``_``, at most 300
    characters) is the exception's class and message, e.g. the HTTP status Compute answered."""
    error = f"{type(exc).__name__}:{exc}".replace(" ", "_").replace("\n", "_")[:300]
    return f"newsroom.{PURGE_FAILED} edition={edition} section={section} story={int(story_id)} error={error}"
