"""Times known only to the day (transforms/stories/vocabulary/config.py ``date_only``): a story's live span counts from the end
of its last article's day, and two texts that print different days as their datelines never join or merge
(transforms/stories/writer/evidence.py). On real dev-set texts: BASIL's Steele report dated two calendar days after the
first (2010-07-02, then 2010-07-04) joins its story; MEANTIME's "First Airbus A380 delivered" (dateline 15 Oct 2007)
and "First A380 enters commercial service" (17 Oct 2007), two events, stay apart in every language."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.transforms.stories.synth import DIM
from transforms.stories.vocabulary import features as F
from transforms.stories.vocabulary.config import DAY_MS, date_only
from transforms.stories.writer.cluster import ClusterConfig, StoryClusterer
from transforms.stories.writer.evidence import disagree, evidence
from transforms.stories.writer.state import Member

ROOT = Path(__file__).resolve().parents[3]
DATA = next(
    (p / "shared" / "data" / "stories" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()), ROOT
)
STEELE = "basil-2b95d2cf-e979-4f9c-ae27-9a5370934f23"  # nyt 2010-07-02, fox and hpo 2010-07-04
A380_DELIVERED, A380_IN_SERVICE = "meantime-82548", "meantime-82597"
needs_data = pytest.mark.skipif(not (DATA / "meantime-dev.jsonl").exists(), reason="../shared/data absent")
SAME = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)  # identical vectors: only time and text evidence decide


def labelled(name: str, story_ids: tuple[str, ...], language: str) -> list[F.ArticleFeatures]:
    recs = [json.loads(line) for line in open(DATA / name, encoding="utf-8") if line.strip()]
    recs = [r for r in recs if r["story_id"] in story_ids and r["language"] == language]
    recs.sort(key=lambda r: (F.record_time(r), r["id"]))
    out = []
    for r, t, known in F.assign_times(recs):
        f = F.from_labelled(r, t, known)
        f.vector, f.model = SAME, "test"
        out.append(f)
    return out


def stories_of(w: StoryClusterer, outs) -> set[int]:
    return {int(o.change["story_id"]) for o in outs if o.change["kind"] in ("NEW_STORY", "ASSIGN")}


@needs_data
def test_a_report_dated_two_days_on_joins_the_story_its_date_could_be_a_day_from():
    arts = labelled("basil-dev.jsonl", (STEELE,), "en")
    days = sorted({f.first_seen_at // DAY_MS for f in arts})
    assert len(days) == 2 and days[1] - days[0] == 2 and all(date_only(f.first_seen_at) for f in arts)
    w = StoryClusterer("en", exact_index=True)
    assert len(stories_of(w, w.run(arts))) == 1
    # the span as given (no day slack): the first story expires at the very millisecond the later reports arrive
    w = StoryClusterer("en", config=ClusterConfig(date_only_slack=False), exact_index=True)
    assert len(stories_of(w, w.run(arts))) == 2


def test_a_time_of_day_keeps_the_48_hour_span():
    """Only a date without a time of day gets the slack: 48 h + 1 ms after a timed article, its story is gone."""
    t0 = 1_278_028_800_000 + 3_600_000  # 2010-07-02T01:00Z
    arts = []
    for i, at in enumerate((t0, t0 + 48 * 3_600_000 + 1)):
        f = F.ArticleFeatures(f"a{i}", "en", at, title="Steele Afghanistan", entities=("steele",), terms=("steele",))
        f.term_tf, f.vector, f.model = (1,), SAME, "test"
        arts.append(f)
    w = StoryClusterer("en", exact_index=True)
    outs = w.run(arts)
    assert len(stories_of(w, outs)) == 2
    assert [o.change["kind"] for o in outs][:3] == ["NEW_STORY", "EXPIRE", "NEW_STORY"]


@needs_data
@pytest.mark.parametrize("language", ["en", "es", "it", "nl"])
def test_two_printed_datelines_two_days_apart_never_join_or_merge(language):
    arts = labelled("meantime-dev.jsonl", (A380_DELIVERED, A380_IN_SERVICE), language)
    assert len(arts) == 2 and all(f.dated_by_text for f in arts)
    assert arts[1].first_seen_at - arts[0].first_seen_at == 2 * DAY_MS
    w = StoryClusterer(language, exact_index=True)
    outs = w.run(arts)
    assert len(stories_of(w, outs)) == 2
    assert "MERGE" not in [o.change["kind"] for o in outs]
    assert disagree(*(evidence([Member.from_features(f, False, 0)]) for f in arts))


@needs_data
def test_a_publication_date_is_not_a_printed_dateline():
    """BASIL's dates are metadata (published_at): no veto between its reports of two days."""
    arts = labelled("basil-dev.jsonl", (STEELE,), "en")
    assert not any(f.dated_by_text for f in arts)
    assert not disagree(*(evidence([Member.from_features(f, False, 0)]) for f in arts[:2]))


def test_the_dateline_flag_survives_the_member_record_and_the_features_dict():
    f = F.ArticleFeatures("a", "en", DAY_MS * 10, dated_by_text=True, vector=SAME)
    assert F.ArticleFeatures.from_dict(f.to_dict()).dated_by_text
    m = Member.from_features(f, False, 1)
    assert Member.from_record("a", m.to_record()).dated_by_text
