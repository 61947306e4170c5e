"""The storyline stage (transforms/stories/storylines/storyline.py): linking, decay, the bounded index, merge and split with
one-hop aliases, determinism, restore-equivalence, the contract, and the backfill's result file."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from schemas import codec
from tests.transforms.stories.synth import T0, TEST_CONFIG, article, unit
from transforms.common import DAY_MS, WEEK_MS
from transforms.stories.storylines import storyline as sl
from transforms.stories.writer.cluster import StoryClusterer

DIM = 32


def _out(kind, sid, seq, at, members=(), centroid=None, other=None, article_ids=(), lang="en", other_centroid=None):
    """A writer output as the storyline stage reads it (only the fields it reads)."""
    ch = {"kind": kind, "story_id": sid, "other_story_id": other, "language": lang, "seq": seq, "at": at}
    ch["article_ids"] = list(article_ids)
    ch["centroid"] = [] if centroid is None else [float(x) for x in centroid]
    mem = {aid: {"entities": list(ents), "is_copy": False, "at": t} for aid, ents, t in members}
    out = {"change": ch, "members": mem}
    if other_centroid is not None:
        out["other_centroid"] = [float(x) for x in other_centroid]
    return sl.compact(out)


def _subject(rng, base, spread=0.6):
    return unit(base + spread * rng.normal(size=DIM))


class Feed:
    """Hand-made writer outputs: one story per call, one article each, seq counted per language."""

    def __init__(self):
        self.outs, self.seq = [], {}

    def story(self, sid, at, ents, vec, lang="en"):
        self.seq[lang] = self.seq.get(lang, 0) + 1
        self.outs.append(_out("NEW_STORY", sid, self.seq[lang], at, [(f"a{sid}", ents, at)], vec, lang=lang))
        return sid

    def kind(self, kind, sid, at, lang="en", **kw):
        self.seq[lang] = self.seq.get(lang, 0) + 1
        self.outs.append(_out(kind, sid, self.seq[lang], at, lang=lang, **kw))


def _storyline_of(changes):
    """Fold StorylineChange records as a consumer would: story -> storyline, with aliases resolved."""
    of, alias = {}, {}
    for c in changes:
        if c["kind"] in (sl.NEW_STORYLINE, sl.ATTACH):
            of[c["story_id"]] = c["storyline_id"]
        elif c["kind"] == sl.SL_MERGE:
            alias[c["other_storyline_id"]] = c["storyline_id"]
            for s, v in of.items():
                if v == c["other_storyline_id"]:
                    of[s] = c["storyline_id"]
        elif c["kind"] == sl.SL_SPLIT:
            for s in c["story_ids"]:
                of[s] = c["other_storyline_id"]
        elif c["kind"] == sl.DETACH:
            of.pop(c["story_id"], None)
    return of, alias


def _mission(gap_ms=WEEK_MS, seed=1):
    rng = np.random.default_rng(seed)
    mission, other = rng.normal(size=DIM), rng.normal(size=DIM)
    f = Feed()
    ids = [
        f.story(1000 + i, T0 + i * gap_ms, ("artemis", "nasa", f"event{i}"), _subject(rng, mission)) for i in range(3)
    ]
    unrelated = f.story(2000, T0 + gap_ms // 2, ("fifa", "qatar"), _subject(rng, other))
    return f, ids, unrelated


def test_episodes_of_one_subject_over_weeks_share_one_storyline_with_a_stable_id():
    f, ids, unrelated = _mission()
    changes, _ = sl.storyline_changes(f.outs)
    of, _ = _storyline_of(changes)
    assert of[ids[0]] == of[ids[1]] == of[ids[2]] != of[unrelated]
    founded = next(c for c in changes if c["story_id"] == ids[0])
    assert founded["kind"] == sl.NEW_STORYLINE and of[ids[0]] == founded["storyline_id"]  # the id never changed
    attach = [c for c in changes if c["kind"] == sl.ATTACH]
    assert [c["story_id"] for c in attach] == ids[1:] and all("artemis" in c["entities"] for c in attach)
    assert [c["seq"] for c in changes] == list(range(1, len(changes) + 1))
    assert sl.storyline_changes(f.outs)[0] == changes  # deterministic


def test_time_decay_over_weeks_stops_a_link():
    f, ids, _ = _mission(gap_ms=30 * WEEK_MS)
    of, _ = _storyline_of(sl.storyline_changes(f.outs)[0])
    assert len({of[s] for s in ids}) == 3


def test_one_shared_name_is_not_a_storyline():
    rng = np.random.default_rng(2)
    base = rng.normal(size=DIM)
    f = Feed()
    a = f.story(1, T0, ("nasa", "apollo"), _subject(rng, base, 0.1))
    b = f.story(2, T0 + DAY_MS, ("nasa", "spacex"), _subject(rng, base, 0.1))
    of, _ = _storyline_of(sl.storyline_changes(f.outs)[0])
    assert of[a] != of[b]


def test_storylines_merge_into_the_older_and_aliases_stay_one_hop():
    rng = np.random.default_rng(3)
    base = rng.normal(size=DIM)
    f = Feed()
    a = f.story(1 << 30, T0, ("alpha", "beta"), _subject(rng, base, 0.2))
    b = f.story(2 << 30, T0 + DAY_MS, ("gamma", "delta"), _subject(rng, base, 0.2))
    c = f.story(3 << 30, T0 + 2 * DAY_MS, ("epsilon", "zeta"), _subject(rng, base, 0.2))
    d = f.story(4 << 30, T0 + 3 * DAY_MS, ("gamma", "delta", "epsilon", "zeta"), _subject(rng, base, 0.2))
    e = f.story(5 << 30, T0 + 4 * DAY_MS, ("alpha", "beta", "gamma", "delta"), _subject(rng, base, 0.2))
    changes, w = sl.storyline_changes(f.outs)
    merges = [ch for ch in changes if ch["kind"] == sl.SL_MERGE]
    assert len(merges) == 2
    of, _ = _storyline_of(changes)
    assert len({of[s] for s in (a, b, c, d, e)}) == 1
    survivor = of[a]
    assert all(m["storyline_id"] < m["other_storyline_id"] for m in merges)  # the older survives
    assert w.aliases and all(v == survivor for v in w.aliases.values())  # chains rewritten: one hop
    assert sl.fold_storylines(changes) == w.storylines()  # the records, folded, say what the writer holds


def test_a_story_merge_that_removes_the_bridge_splits_the_storyline():
    rng = np.random.default_rng(4)
    base = rng.normal(size=DIM)
    f = Feed()
    a = f.story(10, T0, ("alpha", "beta"), _subject(rng, base, 0.2))
    bridge = f.story(20, T0 + DAY_MS, ("alpha", "beta", "gamma", "delta"), _subject(rng, base, 0.2))
    c = f.story(30, T0 + 2 * DAY_MS, ("gamma", "delta"), _subject(rng, base, 0.2))
    lone = f.story(40, T0 + 3 * DAY_MS, ("omega", "psi"), unit(rng.normal(size=DIM)))
    of, _ = _storyline_of(sl.storyline_changes(f.outs)[0])
    assert of[a] == of[bridge] == of[c] != of[lone]
    # the writer folds the bridge into an unrelated story: the storyline loses the link between a and c
    f.kind("MERGE", lone, T0 + 3 * DAY_MS + 1000, other=bridge, centroid=unit(rng.normal(size=DIM)))
    changes, w = sl.storyline_changes(f.outs)
    kinds = [ch["kind"] for ch in changes]
    assert sl.DETACH in kinds and sl.SL_SPLIT in kinds
    of, _ = _storyline_of(changes)
    assert bridge not in of and of[a] != of[c]
    split = next(ch for ch in changes if ch["kind"] == sl.SL_SPLIT)
    assert split["storyline_id"] == of[a] and split["story_ids"] == [c]  # the oldest story keeps the id
    assert sl.fold_storylines(changes) == w.storylines()


def test_a_cross_language_link_puts_both_stories_in_one_storyline():
    rng = np.random.default_rng(5)
    f = Feed()
    en = f.story(100, T0, ("artemis", "nasa"), unit(rng.normal(size=DIM)), lang="en")
    es = f.story(101, T0 + 1000, ("artemis", "nasa"), unit(rng.normal(size=DIM)), lang="es")
    f.kind("LINK", en, T0 + 5000, lang="mul", other=es)
    of, _ = _storyline_of(sl.storyline_changes(f.outs)[0])
    assert of[en] == of[es]


def test_candidates_come_from_bounded_postings(monkeypatch):
    monkeypatch.setattr(sl, "POSTING_CAP", 5)
    monkeypatch.setattr(sl, "CANDIDATES", 3)
    rng = np.random.default_rng(6)
    base = rng.normal(size=DIM)
    f = Feed()
    for i in range(40):
        f.story(i + 1, T0 + i * 3_600_000, ("alpha", "beta", f"k{i % 3}"), _subject(rng, base, 0.2))
    w = sl.StorylineWriter()
    seen = []
    real = w._candidates
    monkeypatch.setattr(w, "_candidates", lambda st: seen.append(len(out := real(st))) or out)
    sl.storyline_changes(f.outs, writer=w)
    assert max(len(p) for p in w.postings.values()) <= 5 and max(seen) <= 3


def test_a_restored_writer_decides_as_the_uninterrupted_one():
    f, _, _ = _mission(gap_ms=DAY_MS)
    outs = sorted(f.outs, key=lambda c: c["change"]["at"])  # a restart between ticks: earlier ticks before it
    whole, _ = sl.storyline_changes(outs)
    first, w = sl.storyline_changes(outs[:2])
    rest, _ = sl.storyline_changes(outs[2:], writer=pickle.loads(pickle.dumps(w)))
    assert first and rest
    assert first + rest == whole


def test_every_change_matches_the_contract():
    f, _, _ = _mission()
    f.kind("MERGE", 2000, T0 + 4 * WEEK_MS, other=1002, centroid=unit(np.ones(DIM)))
    changes, _ = sl.storyline_changes(f.outs)
    assert {c["kind"] for c in changes} >= {sl.NEW_STORYLINE, sl.ATTACH, sl.DETACH}
    for c in changes:
        assert codec.decode("StorylineChange", codec.encode("StorylineChange", c)) == c
    assert set(sl.STORYLINE_KINDS) == set(
        next(
            f for f in __import__("json").loads(codec.schema_text("StorylineChange"))["fields"] if f["name"] == "kind"
        )["type"]["symbols"]
    )


def test_the_writers_real_outputs_feed_the_stage():
    """StoryClusterer outputs (not hand-made): two episodes a week apart become two stories of one storyline."""
    rng = np.random.default_rng(7)
    mission = rng.normal(size=DIM)
    arts = []
    for ep in range(2):
        ev = mission + 0.7 * rng.normal(size=DIM)
        for i in range(3):
            at = T0 + ep * WEEK_MS + i * 60_000
            arts.append(
                article(f"e{ep}-{i}", ev + 0.05 * rng.normal(size=DIM), at, entities=("artemis", "nasa", f"ep{ep}"))
            )
    w = StoryClusterer("en", config=TEST_CONFIG, exact_index=True)
    outs = [o.to_dict() for o in w.run(arts)]
    stories = {o["change"]["story_id"] for o in outs if o["change"]["kind"] == "NEW_STORY"}
    assert len(stories) == 2
    of, _ = _storyline_of(sl.storyline_changes([sl.compact(o) for o in outs])[0])
    assert len({of[s] for s in stories}) == 1


@pytest.mark.parametrize("every_ms", [60_000, sl.EVERY_MS])
def test_ticks_group_by_boundary(every_ms):
    assert sl.tick_of(T0, every_ms) == T0 + every_ms and sl.tick_of(T0 + every_ms - 1, every_ms) == T0 + every_ms


def test_the_backfill_fold_runs_the_stage_over_slim_outputs():
    """The backfill keeps only slim outputs; the storyline stage over them decides as over the full ones."""
    from transforms.stories.backfill.backfill_files import slim_output, storyline_rows

    rng = np.random.default_rng(8)
    mission = rng.normal(size=DIM)
    arts = [
        article(f"e{ep}-{i}", mission + 0.7 * rng.normal(size=DIM), T0 + ep * WEEK_MS + i, entities=("artemis", "nasa"))
        for ep in range(3)
        for i in range(1)
    ]
    outs = [o.to_dict() for o in StoryClusterer("en", config=TEST_CONFIG, exact_index=True).run(arts)]
    rows, changes = storyline_rows([slim_output(o) for o in outs], links=False, n_languages=1)
    assert changes == sl.storyline_changes([sl.compact(o) for o in outs])[0]
    stories = sorted({o["change"]["story_id"] for o in outs if o["change"]["kind"] == "NEW_STORY"})
    assert rows == [{"storyline_id": changes[0]["storyline_id"], "stories": stories}]


def test_a_story_merge_within_the_storyline_keeps_it_whole():
    """Repair like stories: a story absorbed by a story of its own subject hands its storyline edges to the survivor
    (which now holds its articles), so the later stories that linked to it stay in the storyline."""
    rng = np.random.default_rng(4)
    base = rng.normal(size=DIM)
    f = Feed()
    a = f.story(10, T0, ("alpha", "beta"), _subject(rng, base, 0.2))
    bridge = f.story(20, T0 + DAY_MS, ("alpha", "beta", "gamma", "delta"), _subject(rng, base, 0.2))
    c = f.story(30, T0 + 2 * DAY_MS, ("gamma", "delta"), _subject(rng, base, 0.2))
    f.kind("MERGE", a, T0 + 3 * DAY_MS, other=bridge, centroid=_subject(rng, base, 0.2))  # a later tick
    changes, w = sl.storyline_changes(f.outs)
    of, _ = _storyline_of(changes)
    assert bridge not in of and of[a] == of[c]
    assert sl.SL_SPLIT not in [ch["kind"] for ch in changes]
    assert w.out_edges[c] and set(w.out_edges[c]) == {a}


def test_the_writer_forgets_stories_past_the_horizon_but_the_records_keep_their_storylines():
    """The writer's state is bounded by the horizon (it once kept every story's membership and edges for ever);
    the records, folded, still hold every storyline whole, and equal the writer's own view while nothing is forgotten."""
    rng = np.random.default_rng(5)
    mission = rng.normal(size=DIM)
    f = Feed()
    weeks = 12
    ids = [
        f.story(3000 + i, T0 + i * WEEK_MS, ("artemis", "nasa", f"leg{i}"), _subject(rng, mission))
        for i in range(weeks)
    ]
    for i, sid in enumerate(ids):
        f.kind("EXPIRE", sid, T0 + i * WEEK_MS + 2 * DAY_MS)
    early = [o for o in f.outs if o["change"]["at"] < T0 + 3 * WEEK_MS]
    changes, w = sl.storyline_changes(early)
    assert sl.fold_storylines(changes) == w.storylines()  # nothing forgotten yet: the fold is the writer's view
    changes, w = sl.storyline_changes(f.outs)
    (line,) = sl.fold_storylines(changes)
    assert line["stories"] == ids  # one storyline over twelve weeks, every episode in it
    end = T0 + (weeks - 1) * WEEK_MS + 2 * DAY_MS
    kept = {s for s in ids if end - (T0 + ids.index(s) * WEEK_MS) <= sl.HORIZON_MS + sl.EVERY_MS}
    held = set(w.stories) | set(w.storyline_of) | set(w.out_edges) | set(w.in_edges)
    held |= {s for members in w.members_of.values() for s in members}
    assert held <= kept and len(kept) < weeks // 2, (sorted(held), sorted(kept))
