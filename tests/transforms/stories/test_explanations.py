"""Explanations of the story writer (transforms/stories/writer/explanations.py): every placement and every repair carries
one; re-scored from its recorded features with the writer's own scoring functions, each gives the score the writer
recorded and is consistent with the decision (joined iff the best candidate reached the bar); replayed, they put
every article in the story the backfill's fold puts it in; and turning them on changes no decision."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipelines.commands.explain import ExplainError, explain_article, explain_story, memberships
from tests.transforms.stories.synth import DIM, HOUR, T0, TEST_CONFIG, make_articles
from tests.transforms.stories.test_repair import ALWAYS_JOIN, event
from transforms.common import PLACEMENTS
from transforms.stories.backfill.assignments import fold
from transforms.stories.writer import pairscore
from transforms.stories.writer.cluster import StoryClusterer
from transforms.stories.writer.explanations import EXPLAIN_TOP
from transforms.stories.writer.scoring import Scorer


def run(arts, config, explain=True, **kw):
    w = StoryClusterer("en", model="test", config=config, exact_index=True, explain=explain)
    return w, [o.to_dict() for o in w.run(arts, **kw)]


def check_decision(r: dict, scorer: Scorer) -> None:
    """The recorded features give the recorded scores, and the decision follows from them and the bar."""
    for c in r["candidates"]:
        assert scorer.article_score(c["dense"], c["lexical"], c["entities"], c["time_known"], c["gap_ms"]) == c["score"]
        assert scorer.penalty(c["time_known"], c["gap_ms"]) == c["time_penalty"]
    cands = r["candidates"]
    assert len(cands) <= EXPLAIN_TOP and r["considered"] >= len(cands)
    assert cands == sorted(cands, key=lambda c: (-c["score"], c["story_id"]))
    if r["decision"] == "copy":
        return
    assert r["bar"] == (scorer.config.join if r["has_body"] else scorer.config.join_headline)
    agreed = [c for c in cands if c["score"] >= r["bar"] and not c.get("declined")]
    assert all(c["score"] >= r["bar"] for c in cands if c.get("declined"))  # only a candidate over the bar is declined
    assert (r["decision"] == "join") == bool(agreed)
    if agreed:
        assert r["story_id"] == agreed[0]["story_id"]


def check_merge(r: dict, scorer: Scorer) -> None:
    d = r["detail"]
    assert d["score"] >= d["bar"] - 1e-9  # merged: at or above its bar
    if d["criterion"] == "profiles":
        assert scorer.article_score(d["dense"], d["lexical"], d["entities"], d["time_known"], d["gap_ms"]) == d["score"]
    elif d["criterion"] == "learned pair score":
        x = np.array([d["features"][k] for k in pairscore.FEATURES])
        assert float(pairscore.load().logit(x)) == d["score"]


@pytest.mark.parametrize("noise", [0.35, 0.6])
def test_every_decision_is_explained_and_rescores_exactly(noise):
    arts, _ = make_articles(noise=noise)
    w, outs = run(arts, TEST_CONFIG)
    scorer = Scorer(w.config, None, "en")
    placed = [o for o in outs if o["change"]["kind"] in PLACEMENTS]
    assert placed and all(o["explain"]["kind"] == "decision" for o in placed)
    for o in placed:
        r, ch = o["explain"], o["change"]
        assert (r["article_id"], r["story_id"], r["seq"]) == (ch["article_id"], ch["story_id"], ch["seq"])
        check_decision(r, scorer)
    decisions = {o["explain"]["decision"] for o in placed}
    assert {"join", "new"} <= decisions
    merges = [o["explain"] for o in outs if o["change"]["kind"] == "MERGE"]
    for r in merges:
        check_merge(r, scorer)
    records = [o["explain"] for o in outs if "explain" in o]
    assign, _, _ = fold(o["change"] for o in outs)
    assert memberships(records)[0] == assign  # replayed, the explanations put every article where the fold does
    if noise == 0.6:
        assert merges  # this input has a repair merge: its explanation is checked above


def test_explanations_change_no_decision():
    arts, _ = make_articles(noise=0.6)
    _, plain = run(arts, TEST_CONFIG, explain=False)
    _, explained = run(arts, TEST_CONFIG)
    assert all("explain" not in o for o in plain)
    assert [o["change"] for o in plain] == [o["change"] for o in explained]


def test_a_split_is_explained_and_moves_its_articles():
    rng = np.random.default_rng(3)
    e1, e2 = np.eye(DIM)[0] * 3, np.eye(DIM)[1] * 3
    arts = event("x", 4, T0, rng, e1, ("lima", "peru")) + event("y", 3, T0 + 12 * HOUR, rng, e2, ("oslo", "norway"))
    w, outs = run(arts, ALWAYS_JOIN, until=T0 + 13 * HOUR)
    (split,) = [o["explain"] for o in outs if o["change"]["kind"] == "SPLIT"]
    assert split["moved"] == ["x0", "x1", "x2", "x3"] and split["kept"] == 3 and split["score"] < split["bar"]
    assert split["bar"] == ALWAYS_JOIN.merge - ALWAYS_JOIN.split_margin
    records = [o["explain"] for o in outs if "explain" in o]
    text = "\n".join(explain_article(records, "x1"))
    assert f"split of story {split['story_id']}: 4 articles moved to story {split['new_story_id']}" in text
    assert text.endswith(f"now in story {split['new_story_id']}")
    story = "\n".join(explain_story(records, str(split["new_story_id"])))
    assert story.startswith(f"story {split['new_story_id']} (en): 4 articles") and "x3" in story and "y0" not in story


def test_explain_story_follows_a_merge_and_refuses_unknown_ids():
    arts, _ = make_articles(noise=0.6)
    w, outs = run(arts, TEST_CONFIG)
    records = [o["explain"] for o in outs if "explain" in o]
    (merge,) = [r for r in records if r["kind"] == "merge"]
    text = "\n".join(explain_story(records, str(merge["merged_story_id"])))
    assert text.startswith(f"story {merge['merged_story_id']} was merged into story {merge['story_id']}")
    assert f"merged into story {merge['story_id']}: {merge['detail']['criterion']}" in text
    with pytest.raises(ExplainError, match="--story 42: no such story"):
        explain_story(records, "42")
    with pytest.raises(ExplainError, match="--story abc: not a story id"):
        explain_story(records, "abc")
    with pytest.raises(ExplainError, match="--article nope: no such article"):
        explain_article(records, "nope")


def test_a_new_story_names_the_best_candidate_below_the_bar():
    never = dataclasses.replace(TEST_CONFIG, join=5.0, join_headline=5.0, merge=9.0, merge_headline=9.0)
    arts, _ = make_articles(n_events=2, per_event=3)
    _, outs = run(arts, never)
    records = [o["explain"] for o in outs if "explain" in o]
    second = records[1]
    assert second["decision"] == "new" and second["candidates"][0]["score"] < second["bar"] == 5.0
    line = explain_article(records, second["article_id"])[1]
    assert f"best candidate story {second['candidates'][0]['story_id']} scored" in line and "< join bar 5.000" in line


def test_a_headline_merge_records_the_learned_pair_score_it_merged_on():
    from tests.transforms.stories.test_headline_linkage import _fragments, _writer_with
    from transforms.stories.writer.cluster import ClusterConfig
    from transforms.stories.writer.repair import merge_pass

    w, (a, b, x) = _writer_with(ClusterConfig(), _fragments())
    w.explain = True
    stories = [w.stories[s] for s in (a, b, x)]
    margin = w.scorer.merge_margin(w.stories[a], w.stories[b], {})  # before the merge changes the stories
    (merge,) = [o.explain for o in merge_pass(w.state, stories, max(s.last_at for s in stories) + 1, set())]
    assert merge["detail"]["criterion"] == "learned pair score" and merge["moved"] == 16
    assert (merge["story_id"], merge["merged_story_id"], merge["with_story_id"]) == (min(a, b), max(a, b), min(a, b))
    check_merge(merge, Scorer(w.config, None, "en"))
    assert merge["detail"]["score"] - merge["detail"]["bar"] == pytest.approx(margin)
