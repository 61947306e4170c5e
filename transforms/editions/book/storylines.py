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
"""

from __future__ import annotations

NEW_STORYLINE, ATTACH, MERGE, SPLIT, DETACH = "NEW_STORYLINE", "ATTACH", "MERGE", "SPLIT", "DETACH"


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

    def has_page(self, storyline_id: int) -> bool:
        """Whether the storyline has a page: more than one episode (a one-story storyline is its story page)."""
        return storyline_id in self.grown or len(self.members.get(storyline_id, ())) > 1

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
                self.alias[other] = sl
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

    def holds_live(self, e: dict, live_ids: set[int]) -> bool:
        """Whether a storyline event still matters: one of its storylines holds a live story (log compaction)."""
        for sl in (e.get("storyline_id"), e.get("other_storyline_id")):
            if sl is not None and any(s in live_ids for s in self.members.get(self.resolve(int(sl)), ())):
                return True
        return False
