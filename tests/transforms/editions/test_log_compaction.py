"""The ranker's hourly LOG compaction keeps one SNAPSHOT per live storyline instead of every event of a saga: the
log stays O(live stories) as a storyline grows for days, every snapshot item is the same as with no compaction at
all, and a worker restarted from the compacted log publishes the same pages as the uninterrupted one."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.transforms.editions.test_rank_fn import State, feed, fire, new_fn
from tests.transforms.editions.test_storyline_pages import sl_event
from tests.transforms.fakes import Bag
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.book.storylines import FORGET_MS, StorylineMap
from transforms.editions.overlays.storyline_pages import merged_document
from transforms.editions.ranker.rank import EditionRanker, _Cached
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams
from transforms.publishers import default_registry

EPISODES = 14  # a story every 20 hours: the saga outlives the 48 h live window four times over


def saga(world):
    """Story k at 20 h * k, its two articles at minutes 55 and 57 of the hour (so that the minute chain crosses the
    top of the hour, where compaction runs), attached to storyline 70 a minute later; story 100 + k, a bystander in
    no storyline, beside it. Returns the events, in time order."""
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    storyline = []
    for k in range(EPISODES):
        start = T + k * 20 * HOUR + 55 * MIN
        world.story(k + 1, ["daily-herald", "capital-post"], start, step=2 * MIN, title=f"Saga chapter {k} unfolds")
        world.story(101 + k, ["pacific-times"], start + MIN, title=f"Unrelated item number {k} today")
        kind = "NEW_STORYLINE" if k == 0 else "ATTACH"
        storyline.append(sl_event(k + 1, kind, start + MIN, 70, story_id=k + 1))
    return sorted([compact_change(c) for c in world.changes] + storyline, key=lambda e: e["at"])


def published(item, live: dict) -> tuple:
    """(kind, pointer, version, document): a storyline item's as the publisher completes it (the ranker's book lists
    the episodes it holds; the published page keeps the ones that left it, transforms/editions/overlays/storyline_pages.py)."""
    doc = item["doc"]
    if item["kind"] == "storyline":
        doc = merged_document(item, live.get)
        if doc is not None:
            live[item["pointer"]] = doc
    return item["kind"], item["pointer"], item["version"], doc


def drive(events, MIN, restart_every=None):
    """Feed the events minute by minute, fire the timer at each boundary; returns (items by firing, log sizes at
    each compaction minute, state). ``restart_every``: a new worker (empty cache) every that many firings."""
    st, fn, live = State(), new_fn(), {}
    by_minute = {}
    for e in events:
        by_minute.setdefault(e["at"] // MIN, []).append(e)
    out, sizes, minute, fired = [], [], min(by_minute), 0
    while True:
        for e in by_minute.get(minute, []):
            feed(fn, st, e)
        boundary = (minute + 1) * MIN
        while st.timer.at is not None and st.timer.at <= boundary:
            t = st.timer.at
            if restart_every and fired and fired % restart_every == 0:
                fn = new_fn()
            fired += 1
            out.append((t, [published(it, live) for it in fire(fn, st, t)]))
            if t % (60 * MIN) == 0:
                sizes.append(len(st.log.items))
        minute += 1
        if minute > max(by_minute) and st.timer.at is None:
            return out, sizes, st, live


@pytest.fixture
def no_compaction(monkeypatch):
    def disable():
        monkeypatch.setattr(EditionRanker, "compact", lambda *a: False)

    return disable


@pytest.mark.slow  # ~10 s: three runs of 98 cycles; the fast check of the same invariant is the next test
def test_a_long_saga_keeps_a_bounded_log_and_the_same_pages(world, no_compaction):
    events = saga(world)
    compacted, sizes, st, _ = drive(events, world.MIN)
    restarted, _, _, restarted_live = drive(events, world.MIN, restart_every=7)
    no_compaction()
    full, full_sizes, full_st, full_live = drive(events, world.MIN)
    assert compacted == full  # every item of every minute: pages, pool, coverage, storylines
    # A worker rebuilt from the (compacted) log publishes the same pages; it publishes its storylines again (their
    # changes not yet published are not in the log), the same documents.
    assert [(t, [i for i in items if i[0] != "storyline"]) for t, items in restarted] == [
        (t, [i for i in items if i[0] != "storyline"]) for t, items in full
    ]
    assert {p: {k: v for k, v in d.items() if k != "version"} for p, d in restarted_live.items()} == {
        p: {k: v for k, v in d.items() if k != "version"} for p, d in full_live.items()
    }
    assert any(k == "storyline" for _, items in full for k, *_ in items)
    assert full_sizes[-1] == len(full_st.log.items) == len(events)  # without compaction: every event, for ever
    # with it: the live stories' changes and one snapshot for the storyline, whatever the saga's length
    snapshots = [e for e in st.log.items if e.get("kind") == "SNAPSHOT"]
    members = sorted(s for s, _ in snapshots[0]["members"])  # every episode attached by the last compaction
    assert len(snapshots) == 1 and members == list(range(1, len(members) + 1)) and len(members) >= EPISODES - 1
    half = len(sizes) // 2
    assert max(sizes[half:]) <= max(sizes[:half]) < len(events) // 2  # the second week no higher than the first


def _view(book: StoryBook, story_ids) -> dict:
    """What a page shows of the storylines: each story's storyline link and version."""
    out = {}
    for s in story_ids:
        row = book.stories.row_of.get(s)
        version = None if row is None else (int(book.stories.version[row]), int(book.stories.structural_minute[row]))
        out[s] = (book.storylines.of.get(s), book.storylines.page_field(s), version)
    return out


def test_compaction_keeps_one_snapshot_per_live_storyline_and_the_same_book(world):
    events = saga(world)
    now = (events[-1]["at"] // world.HOUR + 1) * world.HOUR
    config = load_config()
    # the compaction's inputs only (an EditionRanker loads the gazetteer for its city pages: seconds)
    ranker = SimpleNamespace(config=config, registry=default_registry(), params=RankParams.from_config(config))
    book, log = StoryBook(config, default_registry(), "en"), Bag()
    for e in sorted(events, key=event_sort_key):
        book.apply(e)
        log.add(e)
    live = book.live_story_ids(now, ranker.params.live_window_ms)
    cached = _Cached(book, {}, -1, now)
    saga_ids = list(range(1, EPISODES + 1))
    before = _view(book, saga_ids)
    assert EditionRanker.compact(ranker, "us-en", cached, log, now)
    fresh = cached.book
    rebuilt = StoryBook(config, default_registry(), "en")  # a restarted worker, from the compacted log
    for e in sorted(log.items, key=event_sort_key):
        rebuilt.apply(e)
    kinds = [e.get("kind") for e in log.items if e["type"] == "storyline"]
    assert kinds == ["SNAPSHOT"]  # one event for the saga's EPISODES storyline events
    assert len(log.items) == 1 + sum(1 for e in events if e["type"] == "change" and e["story_id"] in live)
    for b in (fresh, rebuilt):
        assert {s: v for s, v in _view(b, saga_ids).items() if s in live} == {
            s: v for s, v in before.items() if s in live
        }
        assert sorted(b.storylines.members[70]) == saga_ids  # the dead episodes too: a later event may name one
    # Later events fold the same way: a new episode, a dead one detached (the storyline page must drop it)
    later = [sl_event(90, "ATTACH", now + 1000, 70, story_id=555), sl_event(91, "DETACH", now + 2000, 70, story_id=2)]
    for b in (book, fresh, rebuilt):
        b.storylines.take()
        for e in later:
            b.apply(e)
    taken = [b.storylines.take() for b in (book, fresh, rebuilt)]
    assert taken[0] == taken[1] == taken[2] and taken[0][1] == {70: {2}}
    assert _view(book, saga_ids) == _view(fresh, saga_ids) | {
        s: v for s, v in _view(book, saga_ids).items() if s not in live
    }


def test_members_past_the_storyline_horizon_are_counted_not_listed():
    smap = StorylineMap()
    smap.apply({"kind": "NEW_STORYLINE", "storyline_id": 7, "story_id": 1, "at": 0})
    smap.apply({"kind": "ATTACH", "storyline_id": 7, "story_id": 2, "at": 0})
    now = 40 * 24 * 3600 * 1000
    seen = {1: now - FORGET_MS - 1, 2: now}
    (snap,) = smap.snapshot({2}, seen.get, lambda s: 5, now)
    assert snap["members"] == [[2, now]] and snap["forgotten"] == 1 and snap["minutes"] == [[2, 5]]
    restored = StorylineMap()
    restored.apply(snap)
    restored.grown.clear()  # has_page from the count alone (a SPLIT's storyline is not "grown")
    assert restored.has_page(7) and restored.of == {2: 7}


def test_a_saga_whose_episodes_merge_in_keeps_the_aliases_of_the_last_forget_ms_only():
    """Each episode founds a storyline and merges into the saga's at the next tick (what the storyline stage does when
    an episode's first article has no link yet): one alias per episode. A saga of 60 days keeps the aliases of the
    last FORGET_MS, not 72; a restored map resolves those and folds later events the same as the map it came from."""
    hour = 3600 * 1000
    smap, seq = StorylineMap(), 0

    def ev(kind, at, sl, **kw):
        nonlocal seq
        seq += 1
        return sl_event(seq, kind, at, sl, **kw)

    smap.apply(ev("NEW_STORYLINE", 0, 70, story_id=1))
    episodes = 72  # one every 20 h: 60 days
    for k in range(1, episodes):
        at = k * 20 * hour
        smap.apply(ev("NEW_STORYLINE", at, 1000 + k, story_id=1 + k))
        smap.apply(ev("MERGE", at + 600_000, 70, other=1000 + k))
    now = episodes * 20 * hour
    live = {episodes - 1, episodes}  # the last two episodes
    (snap,) = smap.snapshot(live, lambda s: (s - 1) * 20 * hour, lambda s: 0, now)
    recent = [1000 + k for k in range(1, episodes) if k * 20 * hour + 600_000 >= now - FORGET_MS]
    assert snap["aliases"] == recent and len(recent) < 40  # main: all 71
    assert snap["alias_at"] == [(a - 1000) * 20 * hour + 600_000 for a in recent]
    restored = StorylineMap()
    restored.apply(snap)
    later = [
        ev("ATTACH", now + 1000, recent[0], story_id=500),
        ev("SPLIT", now + 2000, recent[-1], other=2000, story_ids=[500]),
    ]
    for m in (smap, restored):
        m.take()
        for e in later:
            m.apply(e)
    assert restored.take() == smap.take() and restored.of[500] == smap.of[500]
    assert restored.resolve(recent[0]) == 70 and restored.alias_at[recent[0]] == snap["alias_at"][0]
    again = StorylineMap()  # a SNAPSHOT of an older build (no alias_at): its aliases count from the next compaction
    again.apply({k: v for k, v in snap.items() if k != "alias_at"})
    (snap2,) = again.snapshot({episodes}, lambda s: None, lambda s: 0, now + FORGET_MS)
    assert snap2["aliases"] == recent and snap2["alias_at"] == [now + FORGET_MS] * len(recent)
