"""Inputs without time: the two calibration knobs measured on the dev files (docs/stories.md, "Inputs without time").

- ClusterConfig.untimed_min_pair: a join or merge of stories with bodies where a time is unknown needs every article
  pair at the model's body bar (complete linkage), so the items of a saga cannot chain through a centroid.
- ClusterConfig.untimed_relief: an untimed article with a body may join a little below the join bar when the learned
  pair score agrees with the story's members (the evidence that stands in for the missing time).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.transforms.stories.synth import DIM, T0, TEST_CONFIG, article, one_kind_run, pair_model_file, unit
from transforms.stories.writer.cluster import StoryClusterer


def stories_of(arts, config) -> dict[str, int]:
    w = StoryClusterer("en", config=config, exact_index=True)
    w.run(arts, until=max(a.first_seen_at for a in arts))
    return {aid: sid for sid, s in w.stories.items() for aid in s.members}


def model_file(tmp_path, bias: float) -> str:
    return pair_model_file(tmp_path, bias)


def saga(time_known: bool) -> list:
    """Three items of one saga, two reports each: one direction (the saga), their own names and terms."""
    return one_kind_run("vote", "name", time_known)


def test_untimed_items_of_a_saga_need_every_pair_to_agree(tmp_path):
    loose = dataclasses.replace(
        TEST_CONFIG, join=0.5, unknown_time_penalty=0.0, pair_score=model_file(tmp_path, -6.0), repair_mode="merge"
    )
    assert len(set(stories_of(saga(False), loose).values())) < 3  # the profile score alone chains the saga
    strict = dataclasses.replace(loose, untimed_min_pair=0.0)
    apart = stories_of(saga(False), strict)
    for e in range(3):
        assert apart[f"e{e}-0"] == apart[f"e{e}-1"]  # an item's two reports agree on names and terms
    assert len({apart[f"e{e}-0"] for e in range(3)}) == 3
    # timed articles are not asked (the knob is for inputs without time)
    assert len(set(stories_of(saga(True), strict).values())) < 3


def test_an_untimed_body_joins_below_the_bar_only_when_the_members_agree(tmp_path):
    rng = np.random.default_rng(7)
    base = rng.standard_normal(DIM)
    arts = [
        article(f"r{k}", unit(base + 0.6 * rng.standard_normal(DIM)), T0 + k * 1000, time_known=False) for k in range(2)
    ]
    agree = dataclasses.replace(
        TEST_CONFIG,
        unknown_time_penalty=0.0,
        pair_score=model_file(tmp_path, -6.0),
        untimed_relief=None,
        untimed_relief_complete=False,
    )
    w = StoryClusterer("en", config=agree, exact_index=True)
    w.run(arts[:1], until=arts[0].first_seen_at)
    score = w.score_article(arts[1], next(iter(w.stories.values())))[0]
    cfg = dataclasses.replace(agree, join=score + 0.1)  # the report scores just below the join bar
    assert len(set(stories_of(arts, cfg).values())) == 2
    assert len(set(stories_of(arts, dataclasses.replace(cfg, untimed_relief=0.2)).values())) == 1
    doubt = dataclasses.replace(cfg, untimed_relief=0.2, pair_score=model_file(tmp_path, -30.0))
    assert len(set(stories_of(arts, doubt).values())) == 2  # the members do not agree: no relief


def leads(arts, lead_only: bool = True) -> list:
    return [dataclasses.replace(a, lead_only=lead_only) for a in arts]


def _loose(tmp_path, lead_floor: float):
    """Untimed articles joined without the unknown-time penalty, the synthetic pair score asked, leads linked
    completely at ``lead_floor``."""
    return dataclasses.replace(
        TEST_CONFIG,
        join=0.5,
        unknown_time_penalty=0.0,
        pair_score=model_file(tmp_path, -6.0),
        repair_mode="merge",
        untimed_lead_min_pair=lead_floor,
    )


def test_an_untimed_saga_of_leads_stays_apart_and_one_of_bodies_is_unchanged(tmp_path):
    """ClusterConfig.untimed_lead_min_pair (on by default, -1.0): complete linkage where a time is unknown and every
    article on both sides is a lead (AllSides' roundups); full bodies (ECB+) keep the profile score."""
    assert TEST_CONFIG.untimed_lead_min_pair is not None and TEST_CONFIG.untimed_min_pair is None  # on by default
    loose = _loose(tmp_path, 0.0)  # the synthetic pair score's bar (the shipped -1.0 is calibrated on real encoders)
    apart = stories_of(leads(saga(False)), loose)
    assert len(set(apart.values())) == 3
    for e in range(3):
        assert apart[f"e{e}-0"] == apart[f"e{e}-1"]
    assert len(set(stories_of(leads(saga(False), False), loose).values())) < 3  # bodies: as before
    assert len(set(stories_of(leads(saga(True)), loose).values())) < 3  # timed leads: as before
    off = dataclasses.replace(loose, untimed_lead_min_pair=None)
    assert len(set(stories_of(leads(saga(False)), off).values())) < 3


def test_a_lead_is_a_short_body_and_survives_the_records():
    from transforms.stories.vocabulary import features as F
    from transforms.stories.writer.state import Member

    assert F.is_lead("The Senate voted on Friday. " * 3)
    assert not F.is_lead("The Senate voted on Friday. " * 40) and not F.is_lead("  ")
    lead = dataclasses.replace(saga(False)[0], lead_only=True)
    assert F.ArticleFeatures.from_dict(lead.to_dict()).lead_only
    m = Member.from_features(lead, is_copy=False, seq=1)
    assert Member.from_record("a", m.to_record()).lead_only
    assert not Member.from_record("a", {**m.to_record(), "lead_only": None}).lead_only  # records written before


def test_untimed_leads_that_name_different_days_of_the_week_stay_apart(tmp_path):
    """ClusterConfig.lead_weekdays: two leads of a complete-linkage decision that both name days of the week and
    share none are never joined or merged (a saga's items told on different days: "voted on Saturday" against "a
    final barrage of questions on Thursday"); a shared day, or none named, leaves the pair score to decide."""
    loose = _loose(tmp_path, -1e9)  # every pair passes the floor: only the days of the week can tell them apart
    days = ("monday", "tuesday", "wednesday")
    named = []
    for a in saga(False):
        terms = tuple(sorted(a.terms + (days[int(a.article_id[1])],)))
        named.append(dataclasses.replace(a, lead_only=True, terms=terms, term_tf=(1,) * len(terms)))
    assert loose.lead_weekdays
    apart = stories_of(named, loose)
    assert len(set(apart.values())) == 3
    assert all(apart[f"e{e}-0"] == apart[f"e{e}-1"] for e in range(3))
    assert len(set(stories_of(named, dataclasses.replace(loose, lead_weekdays=False)).values())) < 3
    assert len(set(stories_of(leads(saga(False)), loose).values())) < 3  # no day named: the floor decides


def test_the_relief_may_ask_every_pair_instead_of_their_average(tmp_path):
    """ClusterConfig.untimed_relief_complete (shipped on, docs/stories.md): the relief's agreement is the
    weakest pair with the story's latest originals, against the model's body bar plus UNTIMED_RELIEF_MARGIN."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal(DIM)
    arts = [
        article(f"r{k}", unit(base + 0.6 * rng.standard_normal(DIM)), T0 + k * 1000, time_known=False) for k in range(3)
    ]
    assert TEST_CONFIG.untimed_relief_complete and TEST_CONFIG.untimed_relief == 0.55  # shipped on
    agree = dataclasses.replace(TEST_CONFIG, unknown_time_penalty=0.0, pair_score=model_file(tmp_path, -6.0))
    w = StoryClusterer("en", config=agree, exact_index=True)
    w.run(arts[:1], until=arts[0].first_seen_at)
    s = next(iter(w.stories.values()))
    complete = dataclasses.replace(agree, join=max(w.score_article(a, s)[0] for a in arts[1:]) + 0.1)
    assert len(set(stories_of(arts, dataclasses.replace(complete, untimed_relief=None)).values())) == 3
    assert len(set(stories_of(arts, complete).values())) == 1
    assert len(set(stories_of(arts, dataclasses.replace(complete, untimed_relief_margin=1e6)).values())) == 3


def test_a_headline_among_untimed_leads_keeps_their_complete_linkage(tmp_path):
    """ClusterConfig.headlines_as_leads (on by default): a member without a body is shorter than a lead, so a story
    of leads that holds one keeps the complete linkage (before, one empty-bodied report switched it off for its
    whole story and AllSides' saga items chained into it)."""
    loose = _loose(tmp_path, 0.0)
    arts = leads(saga(False))
    arts[1] = dataclasses.replace(arts[1], has_body=False, lead_only=False)  # e0-1: a headline only
    assert loose.headlines_as_leads
    apart = stories_of(arts, loose)
    assert len({apart[f"e{e}-0"] for e in range(3)}) == 3
    assert apart["e0-0"] == apart["e0-1"] and apart["e1-0"] == apart["e1-1"]
    off = dataclasses.replace(loose, headlines_as_leads=False)
    assert len(set(stories_of(arts, off).values())) < 3


def test_the_reclustering_keeps_the_weekdays_of_untimed_leads(tmp_path):
    """ClusterConfig.recluster_lead_pairs (on by default): the re-clustering's average linkage never puts together
    two stories of untimed leads whose leads name days of the week and share none (the joins refuse them already);
    without it, it remade the saga's chain."""
    days = ("monday", "tuesday", "wednesday")
    named = []
    for a in saga(False):
        terms = tuple(sorted(a.terms + (days[int(a.article_id[1])],)))
        named.append(dataclasses.replace(a, lead_only=True, terms=terms, term_tf=(1,) * len(terms)))
    cfg = dataclasses.replace(_loose(tmp_path, -1e9), repair_mode="recluster", recluster_margin_body=-6.0)
    assert cfg.recluster_lead_pairs
    apart = stories_of(named, cfg)
    assert len({apart[f"e{e}-0"] for e in range(3)}) == 3
    off = dataclasses.replace(cfg, recluster_lead_pairs=False)
    assert len(set(stories_of(named, off).values())) < 3
