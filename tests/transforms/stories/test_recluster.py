"""The re-clustering repair (REPAIR_MODE "recluster"): average linkage over the learned article-pair score of the
window's changed stories and their candidates, then ids reconciled with the old stories (majority of articles
inherits, the representative breaks a tie, absorbed stories become one-hop aliases, only new groups get new ids,
the 30-minute cool-down holds), deterministic and the same after a restore."""

from __future__ import annotations

import dataclasses

import numpy as np

from stores import StoreConfig, open_store
from tests.transforms.stories.synth import DIM, HOUR, MIN, T0, TEST_CONFIG, article, make_articles
from transforms.stories.backfill.assignments import fold
from transforms.stories.writer.apply import apply_in_order
from transforms.stories.writer.cluster import StoryClusterer
from transforms.stories.writer.recluster import reconcile

RECLUSTER = dataclasses.replace(TEST_CONFIG, repair_mode="recluster")
NEVER_JOIN = dataclasses.replace(RECLUSTER, join=5.0, join_headline=5.0)
ALWAYS_JOIN = dataclasses.replace(RECLUSTER, join=-5.0, join_headline=-5.0)


def event(prefix, n, at, rng, base, ents):
    return [
        article(
            f"{prefix}{i}",
            base + 0.05 * rng.standard_normal(DIM),
            at + i * MIN,
            terms=(f"{prefix}word", "quake"),
            entities=ents,
            source=f"{prefix}-pub{i}",
        )
        for i in range(n)
    ]


def phased(phases, until):
    """A writer fed in phases, each under its own join bars (how a wrong online join is made on purpose); the
    repair runs under RECLUSTER from the first tick on. Returns (writer, outputs as dicts)."""
    w = StoryClusterer("en", config=phases[0][0], exact_index=True)
    outs = []
    for config, arts, upto in phases:
        w.set_config(config)
        for a in arts:
            w.add(a)
        outs += [o.to_dict() for o in w.advance(upto)]
    w.set_config(RECLUSTER)
    outs += [o.to_dict() for o in w.advance(until)]
    return w, outs


def minted(outs):
    return {o["change"]["story_id"] for o in outs if o["change"]["kind"] == "NEW_STORY"} | {
        o["change"]["other_story_id"] for o in outs if o["change"]["kind"] == "SPLIT"
    }


def test_reconcile_majority_inherits_tie_goes_to_the_representative_and_merges_keep_the_oldest():
    old = {10: ["a", "b", "c", "d"], 20: ["e"], 30: ["f", "g"], 40: ["h", "i", "j", "k"]}
    reps = {10: "a", 20: "e", 30: "g", 40: "k"}
    # a/b/c stay; d joins e; f (30's non-representative half) is alone; g joins h, i; j, k are a new pair
    clusters = [["a", "b", "c"], ["d", "e"], ["f"], ["g", "h", "i"], ["j", "k"]]
    ids, heirs = reconcile(old, reps, clusters)
    assert ids == [10, 20, None, 30, 40]
    # 40: no cluster holds more than half of it (2 of 4 each): its representative k decides
    assert heirs == {10: 0, 20: 1, 30: 3, 40: 4}
    # a cluster that holds more than half of two old stories keeps the older (smaller) id; the other is absorbed
    ids, heirs = reconcile({10: ["a", "b"], 20: ["c"]}, {10: "a", 20: "c"}, [["a", "b", "c"]])
    assert ids == [10] and heirs == {10: 0, 20: 0}
    # only a group that inherits from no old story is new
    ids, _ = reconcile({10: ["a", "b", "c"]}, {10: "a"}, [["a", "b"], ["c"]])
    assert ids == [10, None]


def test_a_wrong_online_join_moves_to_its_event_and_no_id_is_minted(tmp_path):
    rng = np.random.default_rng(1)
    e1, e2 = np.eye(DIM)[0] * 3, np.eye(DIM)[1] * 3
    xs = event("x", 4, T0, rng, e1, ("lima", "peru"))
    ys = event("y", 4, T0 + 4 * MIN, rng, e2, ("oslo", "norway"))
    # x0..x3 and y0 joined into one story online (a wrong join), y1..y3 each a story of its own
    w, outs = phased([(ALWAYS_JOIN, xs + ys[:1], T0 + 4 * MIN), (NEVER_JOIN, ys[1:], T0 + 9 * MIN)], T0 + 11 * MIN)
    before = minted(outs)
    assert len(before) == 4
    assign, _, _ = fold(o["change"] for o in outs)
    xid = assign["x0"]
    assert {assign[a] for a in ("x0", "x1", "x2", "x3")} == {xid}  # x keeps its id: it holds 4 of its 5 articles
    yid = assign["y0"]
    assert yid != xid and {assign[f"y{i}"] for i in range(4)} == {yid}
    assert yid == min(before - {xid})  # the y stories merge into the oldest of them
    assert minted(outs) == before  # nothing new: every group inherits an id
    store = open_store("stories", StoreConfig(backend="embedded", data_dir=str(tmp_path / "nr")))
    apply_in_order(store, outs)
    assert sorted(store.get_story(xid)["members"]) == ["x0", "x1", "x2", "x3"]
    assert sorted(store.get_story(yid)["members"]) == ["y0", "y1", "y2", "y3"]
    for gone in before - {xid, yid}:
        assert store.get_story(gone)["alias_of"] == yid and store.resolve(gone) == yid
    assert sorted(store.live_stories("en")) == sorted([xid, yid])
    assert {m.article_id for m in w.stories[yid].members.values()} == {f"y{i}" for i in range(4)}


def test_a_split_gives_the_id_to_the_majority_and_one_new_id_to_the_other_group():
    rng = np.random.default_rng(2)
    e1, e2 = np.eye(DIM)[0] * 3, np.eye(DIM)[1] * 3
    arts = event("x", 3, T0, rng, e1, ("lima",)) + event("y", 4, T0 + 3 * MIN, rng, e2, ("oslo",))
    w, outs = phased([(ALWAYS_JOIN, arts, T0 + 9 * MIN)], T0 + 11 * MIN)
    (sid,) = minted(outs[:7])
    assign, _, _ = fold(o["change"] for o in outs)
    assert {assign[f"y{i}"] for i in range(4)} == {sid}  # 4 of 7: the majority keeps the id
    new = {assign[f"x{i}"] for i in range(3)}
    assert len(new) == 1 and new != {sid} and min(new) > sid
    assert len(minted(outs)) == 2


def test_on_equal_halves_the_representatives_half_keeps_the_id():
    rng = np.random.default_rng(3)
    e1, e2 = np.eye(DIM)[0] * 3, np.eye(DIM)[1] * 3
    arts = event("x", 3, T0, rng, e1, ("lima",)) + event("y", 3, T0 + 3 * MIN, rng, e2, ("oslo",))
    w = StoryClusterer("en", config=ALWAYS_JOIN, exact_index=True)
    outs = [o.to_dict() for o in w.run(arts, until=T0 + 9 * MIN)]
    (sid,) = minted(outs)
    rep = w.stories[sid].representative()
    w.set_config(RECLUSTER)
    outs += [o.to_dict() for o in w.advance(T0 + 11 * MIN)]
    assign, _, _ = fold(o["change"] for o in outs)
    assert assign[rep] == sid
    other = "y0" if rep.startswith("x") else "x0"
    assert assign[other] != sid and len(minted(outs)) == 2


def test_aliases_resolve_in_one_hop_and_a_repaired_story_waits_for_its_cool_down(tmp_path):
    rng = np.random.default_rng(4)
    base = rng.standard_normal(DIM)
    z = event("z", 2, T0 + 6 * HOUR + 40 * MIN, rng, base, ("chile",))  # merged at 6:50: cool-down until 7:20
    ab = event("a", 1, T0 + 7 * HOUR, rng, base, ("chile",)) + event("b", 1, T0 + 7 * HOUR + MIN, rng, base, ("chile",))
    w = StoryClusterer("en", config=NEVER_JOIN, exact_index=True)
    outs = [o.to_dict() for o in w.run(z + ab, until=T0 + 9 * HOUR)]
    ids = {o["change"]["article_id"]: o["change"]["story_id"] for o in outs if o["change"]["kind"] == "NEW_STORY"}
    zid, aid, bid = ids["z0"], ids["a0"], ids["b0"]
    merges = [
        (c["at"], c["story_id"], c["other_story_id"]) for c in (o["change"] for o in outs) if c["kind"] == "MERGE"
    ]
    # Z's halves at 6:50; B into A at 7:10 (Z cools down); at 7:20 Z is free but A cools down until 7:40, when A
    # merges into Z, the older story: one event, three repairs, each story repaired at most once per 30 minutes
    assert merges == [
        (T0 + 6 * HOUR + 50 * MIN, zid, ids["z1"]),
        (T0 + 7 * HOUR + 10 * MIN, aid, bid),
        (T0 + 7 * HOUR + 40 * MIN, zid, aid),
    ]
    store = open_store("stories", StoreConfig(backend="embedded", data_dir=str(tmp_path / "nr")))
    apply_in_order(store, outs)
    assert store.get_story(bid)["alias_of"] == zid and store.resolve(bid) == zid  # re-pointed: one hop
    assert sorted(store.get_story(zid)["members"]) == ["a0", "b0", "z0", "z1"]
    assert minted(outs) == {zid, aid, bid, ids["z1"]}


def test_a_component_is_bounded_and_the_repair_is_deterministic():
    arts, gold = make_articles(n_events=6, per_event=12, seed=5)
    cfg = dataclasses.replace(NEVER_JOIN, recluster_max_articles=20)
    runs = []
    for _ in range(2):
        w = StoryClusterer("en", config=cfg, exact_index=True)
        runs.append([o.to_dict()["change"] for o in w.run(arts)])
        assert 0 < w.stats["recluster_largest"] <= 20
    assert runs[0] == runs[1]
    assign, _, _ = fold(runs[0])
    # every story it made holds one event (the bound cuts candidates, never mixes events)
    by_story = {}
    for a, s in assign.items():
        by_story.setdefault(s, set()).add(gold[a])
    assert all(len(v) == 1 for v in by_story.values())
    assert len(by_story) < len(arts) / 2  # and it merged the fragments


def test_a_restored_writer_reclusters_as_the_uninterrupted_one(tmp_path):
    arts, _ = make_articles(n_events=8, per_event=10, seed=11, spread_ms=3 * HOUR, gap_ms=40 * MIN)
    cfg = dataclasses.replace(RECLUSTER, join=1.6)  # fragments online, so the repair has work
    w = StoryClusterer("en", config=cfg, exact_index=True)
    whole = [o.to_dict()["change"] for o in w.run(arts)]
    assert w.stats["recluster_moves"] + w.stats["merge"] > 0
    store = open_store("stories", StoreConfig(backend="embedded", data_dir=str(tmp_path / "nr")))
    w = StoryClusterer("en", config=cfg, exact_index=True)
    for a in arts:
        w.add(a)
    mid = sorted(a.first_seen_at for a in arts)[len(arts) // 2] + 5 * MIN
    first = [o.to_dict() for o in w.advance(mid)]
    apply_in_order(store, first)
    token, queued = w.state_token(), w.queued()
    fresh = StoryClusterer.restore(store, "en", token, config=cfg, exact_index=True)
    for a in queued:
        fresh.add(a)
    rest = [o.to_dict() for o in fresh.advance(2**62)]
    assert [o["change"] for o in first + rest] == whole


def test_the_backfills_explanations_cover_the_reclustering_changes():
    rng = np.random.default_rng(1)
    e1, e2 = np.eye(DIM)[0] * 3, np.eye(DIM)[1] * 3
    xs = event("x", 4, T0, rng, e1, ("lima", "peru"))
    ys = event("y", 4, T0 + 4 * MIN, rng, e2, ("oslo", "norway"))
    w = StoryClusterer("en", config=ALWAYS_JOIN, exact_index=True, explain=True)
    for a in xs + ys[:1]:
        w.add(a)
    w.advance(T0 + 4 * MIN)
    w.set_config(NEVER_JOIN)
    for a in ys[1:]:
        w.add(a)
    w.advance(T0 + 9 * MIN)
    w.set_config(RECLUSTER)
    repairs = [o for o in w.advance(T0 + 11 * MIN) if o.change["kind"] in ("SPLIT", "MERGE")]
    assert repairs and all(o.explain and o.explain["rule"] == "recluster" for o in repairs)
    (move,) = [o.explain for o in repairs if o.change["kind"] == "SPLIT"]
    assert move["moved"] == ["y0"] and move["new_story_id"] != move["story_id"]


def test_live_bodies_follow_the_stories_and_a_headline_stream_finds_no_components(monkeypatch):
    """The writer sums its live stories' n_body through joins, repairs and expiry (and a checkpoint pickled before
    the sum existed gets it back); with none live and headlines not re-clustered, a tick skips the components
    (which would all be of the headline kind, left alone) and decides the same."""
    import pickle

    from transforms.stories.writer import recluster as rc

    arts, _ = make_articles(n_events=4, per_event=6, seed=3)
    heads = [dataclasses.replace(a, has_body=i % 3 != 0) for i, a in enumerate(arts)]
    cfg = dataclasses.replace(RECLUSTER, join=0.9, join_headline=0.9, recluster_margin_headline=None)
    w = StoryClusterer("en", config=cfg, exact_index=True)
    for a in heads:
        w.add(a)
        w.advance(a.first_seen_at)
        assert w.state.live_bodies == sum(s.n_body for s in w.stories.values())
    w.advance(T0 + 10 * 24 * HOUR)  # everything expires
    assert w.state.live_bodies == 0 == len(w.stories)
    stale = dict(w.state.__dict__)
    w.state.live_bodies = 7
    assert pickle.loads(pickle.dumps(w.state)).live_bodies == 7
    del stale["live_bodies"]
    fresh = object.__new__(type(w.state))
    fresh.__setstate__(stale)
    assert fresh.live_bodies == 0

    headlines = [dataclasses.replace(a, has_body=False) for a in arts]
    runs = []
    for skip in (False, True):
        w = StoryClusterer("en", config=cfg, exact_index=True)
        if skip:
            monkeypatch.setattr(rc, "components", lambda *a: (_ for _ in ()).throw(AssertionError("components")))
        else:
            w.state.live_bodies = 10**9  # as if bodies were live: the components are found (and left alone)
        runs.append([o.to_dict() for o in w.run(headlines)])
    assert runs[0] == runs[1] and len({o["change"]["story_id"] for o in runs[0]}) > 1
