"""Evidence that keeps two events of one kind apart: time where known, the learned pair score's second
opinion on joins and merges, and inputs without a title.

- Two articles whose times are both known and more than ClusterConfig.far_apart_hours apart never share a story,
  however the story was chained (a join each day keeps a story live for ever without the cut).
- A join of an article with a body needs the learned pair score's average over the story's members to agree
  (ClusterConfig.join_pair_margin): a story's centroid is generic after a run of one kind of event. The opinion is
  asked only where the places or the headline ages of the two sides conflict (opinion_places, opinion_ages): reports
  of one event that name nothing to conflict with keep the profile score's word.
- An article without a title is told by its lede's first sentence.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.transforms.stories.synth import (
    DIM,
    HOUR,
    T0,
    TEST_CONFIG,
    article,
    gated_config,
    one_kind_run,
    pair_model_file,
)
from transforms.stories.vocabulary import features as F
from transforms.stories.vocabulary import text as textmod
from transforms.stories.writer.cluster import StoryClusterer

SAME = np.ones(DIM, dtype=np.float32)


def stories_of(arts, config) -> dict[str, int]:
    w = StoryClusterer("en", config=config, exact_index=True)
    w.run(arts, until=max(a.first_seen_at for a in arts))  # nothing has expired yet
    return {aid: sid for sid, s in w.stories.items() for aid in s.members}


def test_a_story_never_spans_more_than_the_cut():
    # one report a day for four days, identical text: each one joins while the story is live (48 h)
    arts = [article(f"a{i}", SAME, T0 + i * 30 * HOUR, terms=("quake",), entities=("chile",)) for i in range(4)]
    chained = stories_of(arts, dataclasses.replace(TEST_CONFIG, far_apart_hours=None))
    assert len(set(chained.values())) == 1
    cut = stories_of(arts, dataclasses.replace(TEST_CONFIG, far_apart_hours=72.0))
    assert cut["a0"] == cut["a1"] == cut["a2"]  # 60 h from the first: kept
    assert cut["a3"] != cut["a0"]  # 90 h from the first article: a story of its own


def test_unknown_times_are_not_cut():
    arts = [
        article(f"a{i}", SAME, T0 + i * 30 * HOUR, terms=("quake",), entities=("chile",), time_known=False)
        for i in range(4)
    ]
    # untimed articles take placeholder times a second apart in real inputs; here far apart: never cut
    cfg = dataclasses.replace(TEST_CONFIG, far_apart_hours=72.0, expire_hours=1000.0)
    assert len(set(stories_of(arts, cfg).values())) == 1


def test_the_second_opinion_keeps_a_run_of_one_kind_apart(tmp_path):
    """Three events of one kind share a direction (the kind) but not their names and terms: the profile score joins
    them, the average learned pair score over the members does not."""
    arts = one_kind_run("shot", "city")
    path = pair_model_file(tmp_path)
    loose = dataclasses.replace(TEST_CONFIG, join=0.5, pair_score=path, repair_mode="merge", join_pair_margin=None)
    mixed = stories_of(arts, loose)
    assert len(set(mixed.values())) < 3  # the profile score alone chains events of one kind
    always = dict(join_pair_margin=0.0, merge_pair_margin=0.0, opinion_places=None, opinion_ages=None)
    strict = stories_of(arts, dataclasses.replace(loose, **always))
    for e in range(3):
        assert strict[f"e{e}-0"] == strict[f"e{e}-1"]  # an event's two reports agree on names and terms
    assert len({strict[f"e{e}-0"] for e in range(3)}) == 3


def _one_kind_run(tmp_path, titles):
    """Three events of one kind, two reports each (as above), with the given headlines; the pair score of the test
    above; the shipped gates of the second opinion."""
    arts = [dataclasses.replace(a, title=titles[int(a.article_id[1])]) for a in one_kind_run("shot", "city")]
    return stories_of(arts, gated_config(tmp_path))


def test_conflicting_ages_ask_the_second_opinion(tmp_path):
    """Headlines that state different ages (a 16-year-old, a boy of 3, a 70-year-old) ask the learned pair score,
    which keeps the three events apart; headlines that name no age and no place leave the profile score's join."""
    ages = _one_kind_run(tmp_path, ["16-year-old shot", "Boy, 3, shot in his home", "Man, 70, shot on his porch"])
    assert len({ages[f"e{e}-0"] for e in range(3)}) == 3
    assert all(ages[f"e{e}-0"] == ages[f"e{e}-1"] for e in range(3))
    plain = _one_kind_run(tmp_path, ["Shooting downtown", "Shots fired", "Police respond to a shooting"])
    assert len(set(plain.values())) < 3  # nothing that names the event conflicts: no opinion asked


def test_the_ages_a_headline_states():
    from transforms.stories.vocabulary import numbers

    assert numbers.ages("16-year-old boy shot in East Garfield Park") == {"16y"}
    assert numbers.ages("Boy, 3, Shot in Head in West Garfield Park Home") == {"3y"}
    assert numbers.ages("Four-Year-Old Boy Shot In Englewood") == {"4y"}
    assert numbers.ages("Baby, 14-month-old, shot by 4-year-old brother") == {"14m", "4y"}
    assert numbers.ages("Little Rock boy, 6, fatally shot; aunt charged") == {"6y"}
    assert numbers.ages("4 shot outside West Englewood convenience store") == frozenset()
    assert numbers.ages("Man, 25% of voters, 2024") == frozenset()
    assert numbers.relation(frozenset({"6y"}), frozenset({"2y"})) == -1.0
    assert numbers.relation(frozenset({"15y", "14y"}), frozenset({"15y"})) == 1.0
    assert numbers.relation(frozenset(), frozenset({"15y"})) == 0.0
    assert numbers.relation_mean(["Boy, 6, shot"], ["2-year-old shot", "Teen shot"]) == -0.5


def test_an_article_without_a_title_is_told_by_its_first_sentence():
    body = "Mr. Smith was shot in Stockton on Monday night, police said. He was taken to a hospital. More later."
    f = F.from_labelled({"id": "x", "language": "en", "title": None, "text": body}, T0, True)
    assert f.title == "Mr. Smith was shot in Stockton on Monday night, police said."
    assert f.lede.startswith("He was taken")
    assert f.embed_text.startswith("Mr. Smith was shot in Stockton")
    assert "stockton" in f.entities
    assert textmod.title_of("A headline", body) == "A headline"
    assert textmod.title_of("", "") == ""


def test_the_manifest_says_what_was_assumed_of_untimed_input():
    from transforms.stories.backfill.backfill_files import assumptions

    def out(*members):
        return {"members": {aid: {"time_known": known} for aid, known in members}}

    none = assumptions([out(("a", False), ("b", False)), out(("a", False))])
    assert (none["articles_timed"], none["articles_untimed"]) == (0, 2)
    assert none["times"].startswith("no article has a time") and "neutral" in none["times"]
    mixed = assumptions([out(("a", True), ("b", False))])
    assert mixed["times"].startswith("1 of 2 articles have no time")
    assert assumptions([out(("a", True))])["times"].startswith("every article has a time")
    assert "leads" not in none


def test_the_manifest_says_how_untimed_leads_were_linked():
    from transforms.stories.backfill.backfill_files import assumptions, slim_output

    def out(*members):
        return {"members": {aid: {"time_known": known, "lead_only": lead} for aid, known, lead in members}}

    said = assumptions([out(("a", False, True), ("b", False, False), ("c", True, True))])
    assert said["articles_untimed_leads"] == 1 and "complete linkage" in said["leads"]
    change = dict.fromkeys(("language", "seq", "kind", "story_id", "other_story_id", "article_id", "article_ids"))
    slim = slim_output({"change": {**change, "at": 0}, "members": {"a": {"time_known": False, "lead_only": True}}})
    assert assumptions([slim])["articles_untimed_leads"] == 1  # the backfill's slim outputs keep what it needs


def test_places_tell_two_shootings_of_one_day_apart():
    from transforms.stories.vocabulary import places

    stockton = places.chains("2 teens wounded in Stockton", "STOCKTON, Calif. - Two teens were shot Monday.", "en")
    indy = places.chains("Boy killed in parking lot", "A boy was killed Monday in Indianapolis, Indiana.", "en")
    california = places.chains("Shooting in California", "Police in California said two were shot.", "en")
    assert stockton and indy and california
    assert places.relation(stockton, stockton) == 1.0
    assert places.relation(stockton, indy) == -1.0  # no place of one lies in the other
    assert places.relation(stockton, california) == 0.0  # a city and its state: compatible, not the same
    assert places.relation(stockton, ()) == 0.0  # a side that names no place says nothing
    rows = [stockton, indy, california, ()]
    M = places.relation_matrix(rows)
    assert M.tolist() == [[places.relation(a, b) for b in rows] for a in rows]
