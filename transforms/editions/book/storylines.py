"""The storylines an edition's ranker knows: story -> storyline, folded from StorylineChange events.

Reads the compact storyline events of :func:`compact_storyline` (StorylineChange records of the stories job's
storyline stage, transforms/stories/storylines/storyline.py, routed to the editions by transforms/editions/beam/ranking.py); the
cycle reads :attr:`StorylineMap.of` for the top page's rule "at most one story per storyline in the top 5"
(transforms/editions/cycle/assembly.py). Plain Python, no numpy: a dict per edition, O(1) per event except a MERGE or
SPLIT, which moves the stories it names.

The map also records, until the next cycle that builds documents takes them (:meth:`StorylineMap.take`), what the
storyline pages need (transforms/editions/overlays/storyline_pages.py): the storylines whose membership changed, the
stories that left each, and where moved stories came from (a MERGE's absorbed storyline, a SPLIT's source).
The book (:class:`~transforms.editions.book.storybook.StoryBook`) re-versions a live story whose storyline link changes (it joins, moves, or its storyline
gains a second story), so its coverage document, which names the storyline, is published again.

Log compaction (:meth:`StorylineMap.snapshot`): the ranker's LOG keeps, for each storyline holding a live story, one
SNAPSHOT event of its current membership in place of all its events, so a saga of months costs one event and its
members' ids, not every ATTACH since it began (O(live storylines), not O(history)). A SNAPSHOT sorts first
(``at`` 0: it is the state before every event kept beside it), restores ``of``, ``members``, ``grown`` and the
aliases resolving to it, and the structural minute its events gave each live member (so coverage versions do not
move), and marks nothing changed (no storyline page is republished by a compaction or a rebuild). A member whose last
article is older than :data:`FORGET_MS` is kept as a count only (``has_page`` still counts it): past the storyline
stage's horizon (transforms/stories/storylines/storyline.py ``HORIZON_MS``, ~23 days) no event can name it again.
An alias (a storyline absorbed by a MERGE) is kept while its MERGE is younger than :data:`FORGET_MS` too: the stage
names the survivor in every event after the MERGE, so only an event sent before it can name the absorbed id, and
none arrives that late. Without that bound a saga whose episodes each found a storyline and merge into it at their
next tick (the storyline stage does so when an episode's first article has no link yet) kept one alias per
episode for as long as the saga lived: O(its history) in every SNAPSHOT (benchmarks/month_sim.py ``--sagas``).
The MERGE's time of each alias is in the SNAPSHOT's ``alias_at``, a key older builds do not read (they keep the
plain ``aliases`` list as before).
"""

from __future__ import annotations

NEW_STORYLINE, ATTACH, MERGE, SPLIT, DETACH = "NEW_STORYLINE", "ATTACH", "MERGE", "SPLIT", "DETACH"
SNAPSHOT = "SNAPSHOT"  # a storyline's state at a LOG compaction (never sent by the storyline stage)
# A dead member is kept as a count once its last article is this old: past the storyline stage's horizon plus a week
# (the same margin as overlays/storyline_pages.py RETIRE_SINGLE_MS, which the book's layer cannot import).
FORGET_MS = 30 * 24 * 60 * 60 * 1000


def compact_storyline(change: dict) -> dict:
    """A StorylineChange record as an editions event (``type`` "storyline")."""
    return {
        "type": "storyline",
        "id": change["change_id"],
        "kind": change["kind"],
        "language": change.get("language"),
        "seq": int(change["seq"]),
        "at": int(change["at"]),
        "storyline_id": int(change["storyline_id"]),
        "other_storyline_id": None if change.get("other_storyline_id") is None else int(change["other_storyline_id"]),
        "story_id": None if change.get("story_id") is None else int(change["story_id"]),
        "story_ids": [int(s) for s in change.get("story_ids") or ()],
    }


def is_storyline_change(change: dict) -> bool:
    return isinstance(change, dict) and "storyline_id" in change


class StorylineMap:
    """story id -> storyline id (aliases resolved on fold), and each storyline's stories."""

    def __init__(self):
        self.of: dict[int, int] = {}
        self.members: dict[int, set[int]] = {}
        self.alias: dict[int, int] = {}
        self.grown: set[int] = set()  # storylines a story joined (ATTACH, MERGE): more than one episode exists
        self.touched: set[int] = set()  # since the last take(): storylines whose membership changed
        self.left: dict[int, set[int]] = {}  # since the last take(): storyline -> stories that left it
        self.sources: dict[int, dict[int, tuple | None]] = {}  # target -> {source storyline: moved ids | None = all}
        self.merged: dict[int, int] = {}  # since the last take(): absorbed storyline -> its survivor
        self.forgotten: dict[int, int] = {}  # storyline -> members past FORGET_MS at a compaction (a count only)
        self.member_at: dict[int, int] = {}  # member -> its last article's time, from a SNAPSHOT (not in the book)
        self.alias_at: dict[int, int] = {}  # absorbed storyline -> its MERGE's time (a compaction forgets old ones)

    def has_page(self, storyline_id: int) -> bool:
        """Whether the storyline has a page: more than one episode (a one-story storyline is its story page)."""
        n = len(self.members.get(storyline_id, ())) + self.forgotten.get(storyline_id, 0)
        return storyline_id in self.grown or n > 1

    def page_field(self, story_id: int) -> dict:
        """``{"storyline_id": id}`` for a coverage document when the story's storyline has a page, else {}."""
        sl = self.of.get(int(story_id))
        return {"storyline_id": str(sl)} if sl is not None and self.has_page(sl) else {}

    def take(self) -> tuple[set, dict, dict, dict]:
        """(touched, left, sources, merged) since the last take, cleared."""
        out = (self.touched, self.left, self.sources, self.merged)
        self.touched, self.left, self.sources, self.merged = set(), {}, {}, {}
        return out

    def resolve(self, storyline_id: int) -> int:
        while storyline_id in self.alias:
            storyline_id = self.alias[storyline_id]
        return storyline_id

    def apply(self, e: dict) -> list[int]:
        """Fold one event; returns the stories whose storyline link (:meth:`page_field`) may have changed."""
        if e["kind"] == SNAPSHOT:
            self._restore(e)
            return []
        kind, sl = e["kind"], self.resolve(int(e["storyline_id"]))
        had_page = self.has_page(sl)
        moved: list[int] = []
        if kind in (NEW_STORYLINE, ATTACH):
            moved.append(self._put(int(e["story_id"]), sl))
            if kind == ATTACH:
                self.grown.add(sl)
        elif kind == MERGE:
            other = self.resolve(int(e["other_storyline_id"]))
            if other != sl:
                moved += [self._put(s, sl) for s in sorted(self.members.pop(other, ()))]
                if other in self.forgotten:
                    self.forgotten[sl] = self.forgotten.get(sl, 0) + self.forgotten.pop(other)
                self.alias[other] = sl
                self.alias_at[other] = int(e["at"])
                self.grown.add(sl)
                self.sources.setdefault(sl, {})[other] = None
                self.merged[other] = sl
                self.touched.add(other)
        elif kind == SPLIT:
            new = int(e["other_storyline_id"])
            moved += [self._put(int(s), new) for s in e["story_ids"]]
            self.sources.setdefault(new, {})[sl] = tuple(int(s) for s in e["story_ids"])
            self.touched.add(new)
        elif kind == DETACH:
            self._drop(int(e["story_id"]))
        else:
            raise ValueError(f"unknown storyline change kind {kind!r}")
        self.touched.add(sl)
        if self.has_page(sl) and not had_page:
            moved += sorted(self.members.get(sl, ()))
        return moved

    def _put(self, story_id: int, storyline_id: int) -> int:
        self._drop(story_id, storyline_id)
        self.of[story_id] = storyline_id
        self.members.setdefault(storyline_id, set()).add(story_id)
        return story_id

    def _drop(self, story_id: int, to: int | None = None) -> None:
        old = self.of.pop(story_id, None)
        if old is not None and old != to:
            self.left.setdefault(old, set()).add(story_id)
            self.touched.add(old)
        if old is not None:
            members = self.members.get(old)
            if members is not None:
                members.discard(story_id)
                if not members:
                    del self.members[old]

    def snapshot(self, live_ids: set[int], last_at, minutes, now: int) -> list[dict]:
        """One SNAPSHOT event per storyline holding a live story (module docstring): ``last_at(story) -> ms or
        None`` (the book's newest article of a story it holds), ``minutes(story) -> int`` (the structural minute of
        a live story's row, 0 if none)."""
        out = []
        aliases: dict[int, list[int]] = {}
        for a in sorted(self.alias):
            at = self.alias_at.setdefault(a, now)  # an alias restored from a SNAPSHOT without its time: from now
            if at >= now - FORGET_MS:
                aliases.setdefault(self.resolve(a), []).append(a)
        for sl in sorted({self.of[s] for s in live_ids if s in self.of}):
            members, forgotten = [], self.forgotten.get(sl, 0)
            for s in sorted(self.members.get(sl, ())):
                at = last_at(s)
                at = self.member_at.get(s, now) if at is None else int(at)
                if s not in live_ids and at < now - FORGET_MS:
                    forgotten += 1
                else:
                    members.append([s, at])
            out.append(
                {
                    "type": "storyline",
                    "kind": SNAPSHOT,
                    "id": f"snapshot-{sl}-{now}",
                    "at": 0,
                    "seq": -1,
                    "storyline_id": sl,
                    "members": members,
                    "forgotten": forgotten,
                    "grown": sl in self.grown,
                    "aliases": aliases.get(sl, []),
                    "alias_at": [self.alias_at[a] for a in aliases.get(sl, [])],
                    "minutes": [[s, int(minutes(s))] for s in sorted(live_ids & self.members.get(sl, set()))],
                }
            )
        return out

    def _restore(self, e: dict) -> None:
        sl = int(e["storyline_id"])
        for a, at in zip(e["aliases"], e.get("alias_at") or [None] * len(e["aliases"])):
            self.alias[int(a)] = sl
            if at is not None:
                self.alias_at[int(a)] = int(at)
        for s, at in e["members"]:
            self._put(int(s), sl)
            self.member_at[int(s)] = int(at)
        if e["grown"]:
            self.grown.add(sl)
        if e["forgotten"]:
            self.forgotten[sl] = int(e["forgotten"])
