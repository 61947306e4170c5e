"""The ranker's pending events (transforms/editions/ranker/rank.py ``Pending``): the events due before a minute and
the earliest time are the ones a look at every pending event gives, through additions, deletions and replacements."""

from __future__ import annotations

import random

from transforms.editions.book.storybook import event_sort_key
from transforms.editions.ranker.rank import Pending


def _event(i: int, at: int, seq: int) -> dict:
    return {"id": f"e{i}", "at": at, "seq": seq}


def test_due_and_first_at_equal_a_full_scan():
    rng = random.Random(5)
    pending, n = Pending(), 0
    for now in range(0, 4000, 100):
        for _ in range(rng.randrange(6)):  # new events, some in the past, some far ahead, equal times too
            n += 1
            e = _event(n, rng.randrange(max(0, now - 300), now + 2000, 50), rng.randrange(3))
            pending[e["id"]] = e
        if pending and rng.random() < 0.3:  # an event replaced under its id (another time)
            key = rng.choice(sorted(pending))
            pending[key] = {**pending[key], "at": pending[key]["at"] + 170}
        want = sorted((e for e in pending.values() if e["at"] < now), key=event_sort_key)
        assert pending.due(now) == want
        assert pending.first_at() == (min(e["at"] for e in pending.values()) if pending else None)
        for e in want[: rng.randrange(len(want) + 1)]:  # the caller folds some of them
            del pending[e["id"]]
        assert pending.due(now) == [e for e in want if e["id"] in pending]
    assert n > 50


def test_an_empty_pending_has_no_first_time():
    pending = Pending()
    assert pending.due(10) == [] and pending.first_at() is None
    pending["a"] = _event(1, 5, 0)
    del pending["a"]
    assert pending.due(10) == [] and pending.first_at() is None and not pending


def test_an_event_readded_under_its_id_at_its_time_and_update_keep_the_heap_right():
    """A folded event added again under its id at the same time (a rebuilt book re-reads INBOX) while its old heap
    entry is still there: the heap breaks the tie by push order, never by comparing the events (dicts: TypeError);
    ``update`` and ``setdefault`` go through the heap like an assignment."""
    pending = Pending()
    e = _event(1, 50, 0)
    pending["e1"] = e
    assert pending.due(100) == [e]
    del pending["e1"]  # folded: its entry stays in the heap until it comes to the top
    pending["e1"] = dict(e)
    pending["e1"] = dict(e)  # replaced at the same time: three entries (50, "e1", ...)
    assert pending.due(100) == [e] and pending.first_at() == 50
    pending.update({"e2": _event(2, 20, 0)})
    pending.setdefault("e3", _event(3, 10, 0))
    assert [x["id"] for x in pending.due(100)] == ["e3", "e2", "e1"] and pending.first_at() == 10
