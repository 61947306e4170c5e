"""The storylines an edition's ranker knows: story -> storyline, folded from StorylineChange events.

Reads the compact storyline events of :func:`compact_storyline` (StorylineChange records of the stories job's
storyline stage, transforms/stories/storyline.py, routed to the editions by transforms/editions/beam.py); the
cycle reads :attr:`StorylineMap.of` for the top page's rule "at most one story per storyline in the top 5"
(transforms/editions/assembly.py). Plain Python, no numpy: a dict per edition, O(1) per event except a MERGE or
SPLIT, which moves the stories it names.
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

    def resolve(self, storyline_id: int) -> int:
        while storyline_id in self.alias:
            storyline_id = self.alias[storyline_id]
        return storyline_id

    def apply(self, e: dict) -> None:
        kind, sl = e["kind"], self.resolve(int(e["storyline_id"]))
        if kind in (NEW_STORYLINE, ATTACH):
            self._put(int(e["story_id"]), sl)
        elif kind == MERGE:
            other = self.resolve(int(e["other_storyline_id"]))
            if other != sl:
                for s in sorted(self.members.pop(other, ())):
                    self._put(s, sl)
                self.alias[other] = sl
        elif kind == SPLIT:
            for s in e["story_ids"]:
                self._put(int(s), int(e["other_storyline_id"]))
        elif kind == DETACH:
            self._drop(int(e["story_id"]))
        else:
            raise ValueError(f"unknown storyline change kind {kind!r}")

    def _put(self, story_id: int, storyline_id: int) -> None:
        self._drop(story_id)
        self.of[story_id] = storyline_id
        self.members.setdefault(storyline_id, set()).add(story_id)

    def _drop(self, story_id: int) -> None:
        old = self.of.pop(story_id, None)
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
