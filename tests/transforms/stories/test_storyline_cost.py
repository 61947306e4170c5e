"""The storyline writer's cost per output of a growing story is O(the output), not O(the story): a burst of hundreds
of articles in one story must not cost more per article at its end than at its start (benchmarks/month_sim.py)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from transforms.stories.storylines import storyline as sl

T0 = 1_767_225_600_000


class _Walks(dict):
    """A dict that counts the passes over all its entries (values, items, keys, iteration)."""

    walks = 0

    def values(self):
        type(self).walks += 1
        return super().values()

    def items(self):
        type(self).walks += 1
        return super().items()

    def keys(self):
        type(self).walks += 1
        return super().keys()

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()


def _assign(k: int, at: int, vec) -> dict:
    kind = "NEW_STORY" if k == 0 else "ASSIGN"
    ch = {"kind": kind, "story_id": 1, "other_story_id": None, "language": "en", "seq": k + 1, "at": at}
    ch.update(article_ids=[], centroid=[float(x) for x in vec])
    ents = ["Big", "Story", f"e{k % 7}"]
    return sl.compact({"change": ch, "members": {f"a{k:04d}": {"entities": ents, "is_copy": False, "at": at}}})


def _grow(n: int):
    """One story growing by an article a tick; returns (writer, its story's passes over its members and times)."""
    rng = np.random.default_rng(0)
    w = sl.StorylineWriter()
    at = T0
    for k in range(n):
        at += sl.EVERY_MS
        w.observe(_assign(k, at, rng.normal(size=8)))
        if k == 0:
            st = w.stories[1]
            st.members, st.times = _Walks(st.members), _Walks(st.times)
            _Walks.walks = 0
        w.tick(at)
    return w, _Walks.walks


def test_a_growing_story_is_never_walked_whole_per_output_and_keeps_the_same_counts_and_span():
    w, walks = _grow(200)
    assert walks <= 2, walks  # main walked members and times at every output: 400 passes over 200 articles
    st = w.stories[1]
    want = Counter()
    for ents in st.members.values():
        want.update(set(ents))
    assert st.counts() == want and (st.first_at, st.last_at) == (min(st.times.values()), max(st.times.values()))
    st.add("a0003", ("Other",), T0 - 5)  # a member re-placed with other keys and an earlier time
    want.subtract({"Big", "Story", "e3"})
    want.update({"Other"})
    assert st.counts() == +want and st.first_at == T0 - 5
    st.ent_counts = None  # as after a merge or split (or a story pickled before the counts were kept)
    assert st.counts() == +want
