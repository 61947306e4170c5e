"""Repair (REPAIR_MODE "merge", also the second step of "recluster"): merges (older survives, alias, one-hop
resolution, counters from members), splits (the representative's half keeps the id) and the 30-minute limit, with
the store applied in sequence. The re-clustering repair: test_recluster.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from stores import StoreConfig, open_store
from tests.transforms.stories.synth import DIM, HOUR, MIN, T0, TEST_CONFIG, article
from transforms.common import HOUR_MS
from transforms.stories.backfill.assignments import fold
from transforms.stories.writer.apply import apply_in_order, apply_output
from transforms.stories.writer.cluster import StoryClusterer, recompute_centroid
from transforms.stories.writer.repair import cut_spans, halves_bound, split_due, split_levels, surely_reach

MERGE_MODE = dataclasses.replace(TEST_CONFIG, repair_mode="merge")
NEVER_JOIN = dataclasses.replace(MERGE_MODE, join=5.0, join_headline=5.0)
ALWAYS_JOIN = dataclasses.replace(MERGE_MODE, join=-5.0, join_headline=-5.0)


def event(prefix, n, at, rng, base, ents, step=MIN, copy_of=None):
    out = []
    for i in range(n):
        v = base + 0.05 * rng.standard_normal(DIM)
        out.append(
            article(
                f"{prefix}{i}",
                v,
                at + i * step,
                terms=("quake", "chile"),
                entities=ents,
                source=f"{prefix}-pub{i}",
                copy_of=copy_of,
            )
        )
    return out


def assert_statistics_of_live_members(w: StoryClusterer) -> None:
    """Repairs move members without recounting them: the IDF statistics must still be those of the live members."""
    import math
    from collections import Counter

    live = [m for st in w.stories.values() for m in st.members.values() if not m.is_copy]
    assert w.lex.n_docs == len(live)
    assert w.lex.df == Counter(t for m in live for t in m.terms)
    assert w.lex.edf == Counter(e for m in live for e in m.entities)
    assert w.lex.ldf == {k: math.log(c + 1.0) for k, c in w.lex.df.items()}


def stores(tmp_path):
    return open_store("stories", StoreConfig(backend="embedded", data_dir=str(tmp_path / "newsroom")))


def test_merge_keeps_the_older_story_aliases_the_other_and_recomputes_counters(tmp_path):
    rng = np.random.default_rng(1)
    base = rng.standard_normal(DIM)
    arts = event("a", 3, T0, rng, base, ("chile", "valparaiso")) + event("b", 2, T0 + 2 * MIN, rng, base, ("chile",))
    w = StoryClusterer("en", config=NEVER_JOIN, exact_index=True)
    outs = [o.to_dict() for o in w.run(arts, until=T0 + HOUR)]
    new_ids = [o["change"]["story_id"] for o in outs if o["change"]["kind"] == "NEW_STORY"]
    assert len(new_ids) == 5  # nothing joined online
    merges = [o["change"] for o in outs if o["change"]["kind"] == "MERGE"]
    survivor = min(new_ids)
    assert {m["story_id"] for m in merges} == {survivor}  # the oldest story survives
    assert sorted(m["other_story_id"] for m in merges) == sorted(new_ids[1:])
    assert all(m["at"] == T0 + 10 * MIN for m in merges)  # the first repair tick after the arrivals

    store = stores(tmp_path)
    apply_in_order(store, outs)
    row = store.get_story(survivor)
    assert sorted(row["members"]) == sorted(a.article_id for a in arts)
    meta = row["meta"]
    assert meta["articles"] == 5 and meta["originals"] == 5 and meta["sources"] == 5
    assert meta["first_at"] == T0 and meta["last_at"] == T0 + 3 * MIN
    members = [w.stories[survivor].members[a] for a in sorted(row["members"])]
    csum, _ = recompute_centroid(members, TEST_CONFIG.half_life_hours * HOUR_MS)
    assert np.allclose(row["centroid"], csum / np.linalg.norm(csum))
    for gone in new_ids[1:]:
        assert store.resolve(gone) == survivor
        assert store.get_story(gone)["alias_of"] == survivor
        assert not store.get_story(gone)["members"]
    assert store.live_stories("en") == [survivor]
    assign, _, alias = fold(o["change"] for o in outs)
    assert set(assign.values()) == {survivor}
    assert_statistics_of_live_members(w)


def test_merge_chain_resolves_in_one_hop_and_respects_the_30_minute_limit(tmp_path):
    rng = np.random.default_rng(2)
    base = rng.standard_normal(DIM)
    z = event("z", 1, T0, rng, base, ("chile",))  # old story Z, outside the 6 h window at first
    ab = event("a", 1, T0 + 7 * HOUR, rng, base, ("chile",)) + event("b", 1, T0 + 7 * HOUR + MIN, rng, base, ("chile",))
    # a syndicated copy of Z's article brings Z back into the repair window at 7 h 25 min
    copy = event("c", 1, T0 + 7 * HOUR + 25 * MIN, rng, base + 3.0, ("other",), copy_of="z0")
    # without the reach back to stories outside the window (see the next test), Z is a candidate only once back in it
    w = StoryClusterer("en", config=dataclasses.replace(NEVER_JOIN, merge_reach=0), exact_index=True)
    outs = [o.to_dict() for o in w.run(z + ab + copy, until=T0 + 9 * HOUR)]
    ids = {o["change"]["article_id"]: o["change"]["story_id"] for o in outs if o["change"]["kind"] == "NEW_STORY"}
    zid, aid, bid = ids["z0"], ids["a0"], ids["b0"]
    assert zid < aid < bid
    merges = [
        (m["at"], m["story_id"], m["other_story_id"]) for m in (o["change"] for o in outs) if m["kind"] == "MERGE"
    ]
    # B into A at the first tick; A (repaired at 7:10) is left alone at 7:20 and 7:30 although Z is back in the window
    # at 7:25, and merges into Z at 7:40, when its 30-minute limit is over
    assert merges == [(T0 + 7 * HOUR + 10 * MIN, aid, bid), (T0 + 7 * HOUR + 40 * MIN, zid, aid)]
    store = stores(tmp_path)
    apply_in_order(store, outs)
    assert store.resolve(bid) == zid  # B was an alias of A; the chain was re-pointed on write: one hop
    assert store.resolve(aid) == zid
    assert store.get_story(bid)["alias_of"] == zid
    assign, _, _ = fold(o["change"] for o in outs)
    assert set(assign.values()) == {zid}
    assert sorted(store.get_story(zid)["members"]) == ["a0", "b0", "c0", "z0"]


def test_a_fragment_outside_the_window_absorbs_a_late_one_of_the_same_event():
    """One event reported 7 h and 20 h after its first report (BASIL-like: reports of an event up to a day apart):
    the late fragment merges into the first story, although that one left the 6 h repair window long ago, and a
    story of another event, nearer in time, stays apart."""
    rng = np.random.default_rng(5)
    base, other = rng.standard_normal(DIM), rng.standard_normal(DIM)
    z = event("z", 2, T0, rng, base, ("chile",))
    x = event("x", 2, T0 + 12 * HOUR, rng, other, ("norway",))
    late = event("a", 2, T0 + 20 * HOUR, rng, base, ("chile",))
    w = StoryClusterer("en", config=NEVER_JOIN, exact_index=True)
    outs = [o.to_dict() for o in w.run(z + x + late, until=T0 + 22 * HOUR)]
    assign, _, _ = fold(o["change"] for o in outs)
    assert len({assign["z0"], assign["z1"], assign["a0"], assign["a1"]}) == 1
    assert assign["z0"] == min(o["change"]["story_id"] for o in outs)  # the older story survives
    assert len({assign["x0"], assign["x1"]}) == 1 and assign["x0"] != assign["z0"]
    w0 = StoryClusterer("en", config=dataclasses.replace(NEVER_JOIN, merge_reach=0), exact_index=True)
    assign0, _, _ = fold(o.to_dict()["change"] for o in w0.run(z + x + late, until=T0 + 22 * HOUR))
    assert assign0["a0"] != assign0["z0"]  # what the window alone gives


def test_split_keeps_the_id_on_the_representatives_half(tmp_path):
    rng = np.random.default_rng(3)
    e1, e2 = np.eye(DIM)[0] * 3, np.eye(DIM)[1] * 3
    old = event("x", 4, T0, rng, e1, ("lima", "peru"))  # four reports early on
    new = event("y", 3, T0 + 12 * HOUR, rng, e2, ("oslo", "norway"))  # three reports of another event, 12 h later
    w = StoryClusterer("en", config=ALWAYS_JOIN, exact_index=True)
    outs = [o.to_dict() for o in w.run(old + new, until=T0 + 13 * HOUR)]
    kinds = [o["change"]["kind"] for o in outs]
    assert kinds.count("NEW_STORY") == 1 and kinds.count("SPLIT") == 1  # everything joined, then one split
    sid = outs[0]["change"]["story_id"]
    before = next(o for o in outs if o["change"]["article_id"] == "y2")["story_meta"]["representative"]
    assert before.startswith("y")  # recency weighting puts the representative in the recent half
    split = next(o["change"] for o in outs if o["change"]["kind"] == "SPLIT")
    assert split["story_id"] == sid  # the representative's (smaller) half keeps the id
    assert split["article_ids"] == ["x0", "x1", "x2", "x3"]
    assert split["at"] == T0 + 12 * HOUR + 10 * MIN and split["other_story_id"] > sid
    store = stores(tmp_path)
    apply_in_order(store, outs)
    assert sorted(store.get_story(sid)["members"]) == ["y0", "y1", "y2"]
    assert sorted(store.get_story(split["other_story_id"])["members"]) == ["x0", "x1", "x2", "x3"]
    assert sorted(store.live_stories("en")) == sorted([sid, split["other_story_id"]])
    assign, _, _ = fold(o["change"] for o in outs)
    assert {assign[a] for a in ("x0", "x1", "x2", "x3")} == {split["other_story_id"]}
    assert_statistics_of_live_members(w)


def test_no_split_below_three_sources_per_half():
    rng = np.random.default_rng(4)
    e1, e2 = np.eye(DIM)[0] * 3, np.eye(DIM)[1] * 3
    arts = event("x", 4, T0, rng, e1, ("lima",)) + event("y", 2, T0 + 12 * HOUR, rng, e2, ("oslo",))
    w = StoryClusterer("en", config=ALWAYS_JOIN, exact_index=True)
    outs = w.run(arts, until=T0 + 14 * HOUR)
    assert "SPLIT" not in [o.change["kind"] for o in outs]


def test_replaying_any_change_is_a_no_op(tmp_path):
    rng = np.random.default_rng(5)
    base = rng.standard_normal(DIM)
    arts = event("a", 3, T0, rng, base, ("chile",)) + event("b", 2, T0 + 2 * MIN, rng, base, ("chile",))
    outs = [o.to_dict() for o in StoryClusterer("en", config=NEVER_JOIN, exact_index=True).run(arts)]
    store = stores(tmp_path)
    apply_in_order(store, outs)
    snapshot = {sid: store.get_story(sid) for sid in {o["change"]["story_id"] for o in outs}}
    for o in outs:  # every change again, newest last: nothing moves
        assert apply_output(store, o) is False
    assert {sid: store.get_story(sid) for sid in snapshot} == snapshot
    from transforms.stories.writer.apply import OutOfOrder

    with pytest.raises(OutOfOrder):
        apply_output(store, {**outs[0], "change": {**outs[0]["change"], "seq": len(outs) + 5}}, strict=True)


def _member(i, rng, at, terms=("quake",), ents=("chile",), time_known=True):
    from transforms.stories.writer.cluster import Member

    v = rng.standard_normal(DIM).astype(np.float32)
    return Member(
        f"m{i:03d}", at, f"pub{i}", v / np.linalg.norm(v), terms, (1,) * len(terms), ents, time_known=time_known
    )


def test_the_cut_bound_never_exceeds_the_cut_score():
    """best_bisection skips cuts whose dense - penalty bound reaches the bar: the bound must be a true bound."""
    rng = np.random.default_rng(11)
    w = StoryClusterer("en", config=TEST_CONFIG, exact_index=True)
    vocab = [f"w{i}" for i in range(12)]
    for trial in range(40):
        n = int(rng.integers(4, 30))
        ms = [
            _member(
                i,
                rng,
                T0 + int(rng.integers(0, 60 * HOUR)),
                terms=tuple(sorted(set(rng.choice(vocab, 3)))),
                ents=tuple(sorted(set(rng.choice(vocab, 2)))),
                time_known=bool(trial % 3),
            )
            for i in range(n)
        ]
        for m in ms:
            w.lex.count(m, 1)
        cut = int(rng.integers(1, n))
        a, b = ms[:cut], ms[cut:]
        assert halves_bound(w.scorer, a, b) <= w.score_stories(w.scorer.shadow(a), w.scorer.shadow(b))


def test_a_cut_bound_told_from_the_fast_sums_is_the_exact_bounds_answer():
    """best_bisection skips the exact recency-weighted sums of a cut whose bound surely reaches the bar
    (surely_reach): every clear answer must be the exact bound's, on either side of bars close to the bound."""
    rng = np.random.default_rng(12)
    w = StoryClusterer("en", config=TEST_CONFIG, exact_index=True)
    told = {True: 0, False: 0, None: 0}
    for trial in range(30):
        n = int(rng.integers(6, 40))
        base = rng.standard_normal(DIM)
        ms = []
        for i in range(n):
            m = _member(i, rng, T0 + int(rng.integers(0, 40 * HOUR)), (), (), time_known=bool(trial % 4))
            v = base + rng.uniform(0.2, 2.0) * m.vector  # stories from cohesive to loose
            m.vector = (v / np.linalg.norm(v)).astype(np.float32)
            ms.append(m)
        cuts = sorted({int(x) for x in rng.integers(1, n, 4)})
        span = cut_spans(ms)
        exact = [halves_bound(w.scorer, ms[:k], ms[k:], span=span(k)) for k in cuts]
        for bar in [exact[0] + d for d in (-0.3, -1e-6, 0.0, 1e-6, 0.3)]:
            for got, want in zip(surely_reach(w.scorer, ms, cuts, [span(k) for k in cuts], bar), exact):
                told[got] += 1
                assert got is None or got == (want >= bar)
    assert told[True] and told[False] and told[None]  # clear answers both ways, and close calls left to the exact


def test_large_stories_are_checked_for_a_split_at_spread_ticks():
    c = dataclasses.replace(TEST_CONFIG, split_spread=32, split_growth=None)
    w = StoryClusterer("en", config=c, exact_index=True)
    tick0 = T0 + 6 * c.repair_every_ms
    ticks = [tick0 + k * c.repair_every_ms for k in range(12)]

    def story(n, sid):
        from transforms.stories.writer.cluster import Story

        s = Story(sid, "en", np.zeros(DIM), T0)
        s.n, s.last_at = n, ticks[-1]  # changed at every tick
        return s

    small, large = story(40, 7), story(200, 7)  # n // 32 = 1 and 6
    assert all(split_due(small, t, w.config) for t in ticks)
    due = [t for t in ticks if split_due(large, t, w.config)]
    assert len(due) == 2 and due[1] - due[0] == 6 * c.repair_every_ms
    quiet = story(200, 7)
    quiet.last_at = due[0] - 5 * c.repair_every_ms + 1  # changed during the 6 ticks before its turn: still checked
    assert split_due(quiet, due[0], w.config)
    quiet.last_at = due[0] - 6 * c.repair_every_ms  # not changed since its previous turn: not checked
    assert not split_due(quiet, due[0], w.config)


def test_large_stories_are_checked_for_a_split_when_they_grow_a_level():
    """SPLIT_GROWTH: a story of 2 x SPLIT_SPREAD originals or more is checked at the tick its originals pass a level
    (64, 80, 100, ...), or its cooldown ends; not at the ticks it grew less, nor past SPLIT_MAX_MEMBERS. Read from
    the members' times, so a story restored with the same members is checked at the same ticks."""
    from transforms.stories.writer.cluster import Story

    c = dataclasses.replace(TEST_CONFIG, split_spread=32, split_growth=0.25)
    assert split_levels(64, 0.25, 400)[:4] == (64, 80, 100, 125) and split_levels(64, 0.25, 400)[-1] >= 400
    every, rng = c.repair_every_ms, np.random.default_rng(5)
    tick0 = T0 + 100 * every
    ms = [_member(i, rng, tick0 - 90 * every + i) for i in range(60)]  # 60 originals long before the ticks
    # then 5 originals in each tick's 10 minutes: 65, 70, ..., 135 at ticks 1..15
    ms += [_member(60 + 5 * k + j, rng, tick0 + (k - 1) * every + 1 + j) for k in range(1, 16) for j in range(5)]

    def story_at(tick):
        s = Story(7, "en", np.zeros(DIM), T0)
        for m in ms:
            if m.at <= tick:
                s.add(m)
        return s

    due = [k for k in range(16) if split_due(story_at(tick0 + k * every), tick0 + k * every, c)]
    assert due == [1, 4, 8, 13]  # passed 64 (60 -> 65), 80 (75 -> 80), 100 (95 -> 100), 125 (120 -> 125)
    shuffled = story_at(tick0 + 4 * every)
    again = Story(7, "en", np.zeros(DIM), T0)
    for m in sorted(shuffled.members.values(), key=lambda m: -m.at):  # a restored story: the same members
        again.add(m)
    assert split_due(again, tick0 + 4 * every, c)
    quiet = story_at(tick0 + 2 * every)
    quiet.last_repair_at = tick0 + 3 * every - c.repair_cooldown_ms  # its cooldown ends at tick 3
    assert split_due(quiet, tick0 + 3 * every, c) and not split_due(story_at(tick0 + 3 * every), tick0 + 3 * every, c)
    assert not split_due(story_at(tick0 + 4 * every), tick0 + 4 * every, dataclasses.replace(c, split_max_members=79))
    burst = Story(8, "en", np.zeros(DIM), T0)  # 63 old, 36 new in one tick (more than the 16 latest it keeps)
    for i in range(99):
        burst.add(_member(200 + i, rng, tick0 - 90 * every + i if i < 63 else tick0 - every + i))
    assert split_due(burst, tick0, c)  # 63 -> 99 passed 64 and 80 (99 - 16 = 83 would have passed none)


def test_the_sequence_rule_is_replay_next_or_ahead():
    """One rule for the applier and the Beam buffer: at or below the store's writer_seq is a replay, exactly one
    above is the next change to apply, more than one above waits for the gap to fill."""
    from transforms.stories.writer.apply import AHEAD, NEXT, REPLAY, sequence_step

    assert [sequence_step(s, 4) for s in (0, 3, 4, 5, 6, 90)] == [REPLAY, REPLAY, REPLAY, NEXT, AHEAD, AHEAD]
    assert sequence_step(1, 0) == NEXT and len({REPLAY, NEXT, AHEAD}) == 3


def test_the_repair_window_is_found_without_scanning_the_live_set():
    """The writer keeps the stories with an article in the repair window in a time heap (a tick must cost O(changed
    stories), not O(live stories): benchmarks/repair_bench.py); at every tick of a day-long stream, and after splits
    and merges, it names exactly the live stories whose last article is inside the window."""
    from tests.transforms.stories.synth import make_articles

    arts, _ = make_articles(n_events=12, per_event=10, seed=3, spread_ms=8 * HOUR, gap_ms=2 * HOUR)
    w = StoryClusterer("en", config=NEVER_JOIN, exact_index=True)  # every article a story: the repair merges
    for a in arts:
        w.add(a)
    window = w.config.repair_window_ms
    checked = 0
    for t in range(T0, max(a.first_seen_at for a in arts) + 12 * HOUR, 10 * MIN):
        w.advance(t)
        since = t - window
        want = sorted(sid for sid, s in w.stories.items() if s.last_at > since)
        assert w.window_stories(since) == want
        checked += bool(want)
    assert checked > 50 and w.stats["merge"] + w.stats["split"] > 0
