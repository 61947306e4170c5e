"""Untimed leads of one saga: a join, a merge or a re-clustered cluster needs a word of the item's own
(ClusterConfig.lead_item_stories; docs/stories.md, "Leads of one saga: a word of their own item").

Two leads that share only the saga's words ("Kavanaugh", "Senate", "nominee": terms that more than LEAD_ITEM_STORIES
of the join's candidate stories hold) report two items of it; reports of one item share a word of their own.
"""

from __future__ import annotations

import dataclasses

from tests.transforms.stories.synth import TEST_CONFIG, one_kind_run, pair_model_file
from transforms.stories.vocabulary.config import ClusterConfig
from transforms.stories.writer.cluster import StoryClusterer
from transforms.stories.writer.scoring import saga_only, saga_terms
from transforms.stories.writer.state import Member

DAYS = ("monday", "tuesday", "")  # the first two items told on different days (kept apart by LEAD_WEEKDAYS)


def stories_of(arts, config) -> dict[str, int]:
    w = StoryClusterer("en", config=config, exact_index=True)
    w.run(arts, until=max(a.first_seen_at for a in arts))
    return {aid: sid for sid, s in w.stories.items() for aid in s.members}


def saga_leads() -> list:
    """Three items of one saga, two untimed leads each: the saga's word "vote" and each item's own term; items 0
    and 1 name different days, item 2 none, so only the saga's word ties it to the other two."""
    out = []
    for a in one_kind_run("vote", "name", time_known=False):
        day = DAYS[int(a.article_id[1])]
        terms = tuple(sorted(a.terms + ((day,) if day else ())))
        out.append(dataclasses.replace(a, lead_only=True, terms=terms, term_tf=(1,) * len(terms)))
    return out


def config(tmp_path, **kw) -> ClusterConfig:
    """Untimed leads joined without the unknown-time penalty, every pair above the complete linkage's floor: only
    the words can tell the items apart."""
    base = dataclasses.replace(
        TEST_CONFIG,
        join=0.5,
        unknown_time_penalty=0.0,
        pair_score=pair_model_file(tmp_path, -6.0),
        repair_mode="merge",
        untimed_lead_min_pair=-1e9,
    )
    return dataclasses.replace(base, **kw)


def test_a_lead_that_shares_only_the_sagas_words_starts_its_own_story(tmp_path):
    on = config(tmp_path)
    assert on.lead_item_stories == 1  # shipped on
    apart = stories_of(saga_leads(), on)
    assert len({apart[f"e{e}-0"] for e in range(3)}) == 3
    assert all(apart[f"e{e}-0"] == apart[f"e{e}-1"] for e in range(3))  # an item's reports share its own term
    off = dataclasses.replace(on, lead_item_stories=None)
    assert len(set(stories_of(saga_leads(), off).values())) < 3  # the saga's word alone chains item 2


def test_the_reclustering_keeps_the_sagas_items_apart(tmp_path):
    cfg = config(tmp_path, repair_mode="recluster", recluster_margin_body=-6.0)
    apart = stories_of(saga_leads(), cfg)
    assert len({apart[f"e{e}-0"] for e in range(3)}) == 3
    off = dataclasses.replace(cfg, lead_item_stories=None)
    assert len(set(stories_of(saga_leads(), off).values())) < 3


def test_saga_terms_are_the_words_more_than_the_bar_of_candidate_stories_hold():
    def member(aid: str, terms: tuple) -> Member:
        return Member(aid, 0, "src", None, terms, (1,) * len(terms), (), time_known=False, lead_only=True)

    class Held:  # a candidate story: its latest originals
        def __init__(self, *ms):
            self.ms = list(ms)

        def latest_originals(self):
            return self.ms

    hood = [Held(member("a", ("senate", "kavanaugh", "ford"))), Held(member("b", ("senate", "kavanaugh", "fbi")))]
    saga = saga_terms(ClusterConfig(lead_item_stories=1), hood)
    assert saga == frozenset({"senate", "kavanaugh"})
    assert saga_terms(ClusterConfig(lead_item_stories=2), hood) == frozenset()
    assert saga_terms(ClusterConfig(lead_item_stories=None), hood) is None
    x, y = member("x", ("kavanaugh", "senate", "testify")), member("y", ("kavanaugh", "senate", "vote"))
    z = member("z", ("kavanaugh", "testify"))
    assert saga_only([x], [y], saga) and not saga_only([x], [z], saga)
    assert not saga_only([x], [dataclasses.replace(y, lead_only=False)], saga)  # a body is not asked
