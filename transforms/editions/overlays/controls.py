"""Editorial controls in the ranker: pins, demotes and labels applied to a cycle's pages.

The records are :class:`stores.controls.Control` (stores/controls.py says what each one means and how it is
stored). :class:`~transforms.editions.ranker.rank.EditionRanker` reads the edition's controls once per cycle (one prefix
scan, :class:`ControlReader`) and calls :func:`apply_controls` on the cycle's pages before they become snapshot
items. Holds are not applied here: the publisher honours them (transforms/editions/publish/snapshots.py), so a hold set
after a cycle was ranked still stops that cycle's page.

The controls are an overlay on the ranking, not an input of it: the edition's memory (the previous order that
hysteresis keeps stable, smoothing, impressions) is the unsteered ranking, so when a control expires the next
cycle's page is what the ranker would have published anyway. Per page, in this order:

1. demotes: the story is moved to the bottom (no factor) or below every story whose score exceeds ``factor`` times
   its own (the page keeps its other stories' order);
2. pins, by position: the story is moved to its position (the end, when the page is shorter). A story not on the
   page comes from another page of the edition's cycle or, failing that, from the candidate pool (its pool
   entry's card, no supporting links); a story in neither (expired, never ranked) is not pinned. A pin that adds
   a story to a page already ``page_size`` long drops the page's last unpinned story, so a page never grows;
3. labels: the label is added to the story's entry (if the story is on the page);
4. ranks are renumbered 1..n.

Plain Python (no Beam).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from transforms.editions.vocabulary import documents as docs

log = logging.getLogger(__name__)


def apply_controls(out, controls, book=None, now: int | None = None, page_size: int = 30) -> dict[str, int]:
    """Apply the pins, demotes and labels of ``controls`` active at ``now`` (default: the cycle's time) to the
    pages of ``out`` (a :class:`~transforms.editions.cycle.run.CycleOutput`), in place. ``book`` (the edition's
    StoryBook) resolves merged story ids and gives a pool story's article count. Returns ``{kind: controls that
    took effect}``."""
    now = out.cycle if now is None else now
    active = [
        c
        for c in controls
        if c.kind != "hold" and c.edition == out.edition and c.section in out.pages and c.active(now)
    ]
    applied: dict[str, int] = {}
    if not active:
        return applied
    resolve = (lambda sid: str(book.resolve(int(sid)))) if book is not None else str
    spare = _spare_entries(out, book)
    for section in sorted({c.section for c in active}):
        page = out.pages[section]
        stories = list(page["stories"])
        natural = len(stories)
        mine = [c for c in active if c.section == section]
        for c in sorted((c for c in mine if c.kind == "demote"), key=lambda c: c.story_id):
            if _demote(stories, resolve(c.story_id), c.factor):
                applied["demote"] = applied.get("demote", 0) + 1
        pinned: set[str] = set()
        for c in sorted((c for c in mine if c.kind == "pin"), key=lambda c: (c.position, c.story_id)):
            sid = resolve(c.story_id)
            if _pin(stories, sid, int(c.position), spare, pinned, natural >= page_size):
                pinned.add(sid)
                applied["pin"] = applied.get("pin", 0) + 1
        for c in sorted((c for c in mine if c.kind == "label"), key=lambda c: (c.story_id, c.label)):
            sid = resolve(c.story_id)
            for i, entry in enumerate(stories):
                if entry["story_id"] == sid:
                    labels = tuple(entry.get("labels", ()))
                    if c.label not in labels:
                        stories[i] = dict(entry, labels=labels + (c.label,))
                    applied["label"] = applied.get("label", 0) + 1
                    break
        page["stories"] = [dict(e, rank=rank) for rank, e in enumerate(stories, start=1)]
    return applied


def _index(stories: list[dict], sid: str) -> int | None:
    return next((i for i, e in enumerate(stories) if e["story_id"] == sid), None)


def _demote(stories: list[dict], sid: str, factor: float | None) -> bool:
    i = _index(stories, sid)
    if i is None:
        return False
    entry = stories.pop(i)
    if factor is None:
        stories.append(entry)
        return True
    floor = float(entry.get("score", 0.0)) * float(factor)
    above = [k for k, e in enumerate(stories) if float(e.get("score", 0.0)) > floor]
    stories.insert(above[-1] + 1 if above else 0, entry)
    return True


def _pin(stories: list[dict], sid: str, position: int, spare: dict, pinned: set, full: bool) -> bool:
    i = _index(stories, sid)
    if i is not None:
        entry = stories.pop(i)
    else:
        entry = spare.get(sid)
        if entry is None:
            return False
        if full:  # a pin never grows a full page: the last unpinned story makes room
            drop = next((k for k in range(len(stories) - 1, -1, -1) if stories[k]["story_id"] not in pinned), None)
            if drop is not None:
                stories.pop(drop)
    stories.insert(min(position - 1, len(stories)), entry)
    return True


def _spare_entries(out, book) -> dict[str, dict]:
    """story id -> a page entry for it: its entry on a page of this cycle (top first), else one built from its pool
    entry."""
    spare: dict[str, dict] = {}
    for section in sorted(out.pages, key=lambda s: (s != "top", s)):
        for entry in out.pages[section]["stories"]:
            spare.setdefault(entry["story_id"], entry)
    for p in out.pool.get("stories", ()):
        sid = p["story_id"]
        if sid in spare:
            continue
        row = book.stories.row_of.get(int(sid)) if book is not None else None
        entry = {
            "story_id": sid,
            "rank": 1,
            "score": p.get("score", 0.0),
            "labels": tuple(p.get("labels", ())),
            "section": p["section"],
            "representative": p["representative"],
            "supporting": (),
            "article_count": max(1, int(book.stories.n_articles[row])) if row is not None else 1,
            "publisher_count": max(1, len(p.get("publishers", ()))),
        }
        if row is not None:
            entry["updated_at"] = docs.iso(book.stories.newest_seen[row])
        spare[sid] = entry
    return spare


class ControlReader:
    """``reader(edition, now) -> [Control]``: the edition's controls, one store scan per call (the ranker calls it
    once per cycle), or at most one per ``refresh_s`` of wall clock (a backfill replaying thousands of cycles in a
    few seconds). A store error keeps the last controls read (counted ``controls_unreadable``): a Bigtable blip
    must neither stop the ranking nor drop a pin for a cycle."""

    def __init__(
        self, store, refresh_s: float = 0.0, count: Callable[[str, int], None] | None = None, clock=time.monotonic
    ):
        self.store = store
        self.refresh_s = refresh_s
        self._count = count or (lambda name, n=1: None)
        self.clock = clock
        self._last: dict[str, tuple[float, list]] = {}

    def __call__(self, edition: str, now: int) -> list:
        hit = self._last.get(edition)
        t = self.clock()
        if hit is not None and self.refresh_s > 0 and t - hit[0] < self.refresh_s:
            return hit[1]
        try:
            controls = self.store.edition_controls(edition)
        except Exception as exc:  # StoreError, grpc: keep steering with what was read last
            self._count("controls_unreadable", 1)
            log.warning("editorial controls of %s unreadable, keeping the last read: %s", edition, exc)
            return hit[1] if hit is not None else []
        self._last[edition] = (t, controls)
        return controls
