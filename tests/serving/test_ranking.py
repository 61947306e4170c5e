"""serving.personal.ranking in isolation: reasons, exclusions, top-story slots, paging, interest decay."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from devtools import samples
from serving.personal.ranking import (
    CAP_DEPTH,
    INTEREST_HALF_LIFE_MS,
    MAX_PER_PUBLISHER,
    MAX_PER_TOPIC,
    TOP_SLOTS,
    FeedSlice,
    ProfileView,
    fold_interest,
    rank,
)
from serving.state.catalog import PreparedPool


@pytest.fixture(scope="module")
def pool():
    return PreparedPool.build(samples.candidate_pool("us-en", 1, n=400))


def test_neutral_profile_follows_the_edition_order_with_top_slots_and_caps(pool):
    ranked = rank(pool, ProfileView(reader_id="x"), FeedSlice(0, 30))
    order = [i for i, _ in ranked]
    # Nothing personal: the top-story slots hold the edition's best stories, in its order...
    assert [p for p, (_, r) in enumerate(ranked) if r == "top_story"] == list(TOP_SLOTS)
    slots = [order[p] for p in TOP_SLOTS]
    assert slots == sorted(slots) and slots[0] == 0
    assert {r for _, r in ranked} == {"top_story", "popular"}
    # ...the first CAP_DEPTH positions keep the publisher and topic caps...
    head = order[:CAP_DEPTH]
    assert max(Counter(pool.rep_publisher[i] for i in head).values()) <= MAX_PER_PUBLISHER
    assert max(Counter(t for i in head for t in pool.topics[i]).values()) <= MAX_PER_TOPIC
    # ...what a cap held back comes right after them, in the edition's order, then the rest in that order...
    tail = order[CAP_DEPTH:]
    held = [i for i in tail if i < max(head)]
    assert tail[: len(held)] == sorted(held)
    assert tail[len(held) :] == sorted(tail[len(held) :])
    # ...and nothing of the edition's top is skipped.
    assert set(range(20)) <= set(order)


def test_paging_with_served_items_is_a_partition_of_the_full_ranking(pool):
    view = ProfileView.from_profile("x", {"follows": {"topics": ["film"], "sources": [], "places": ["rome"]}})
    full = rank(pool, view, FeedSlice(0, 400))
    served = np.zeros(len(pool.story_ids), dtype=bool)
    paged = []
    for off in range(0, 400, 37):
        page = rank(pool, view, FeedSlice(off, min(37, 400 - off), served))
        served[[i for i, _ in page]] = True
        paged += page
    assert paged == full and len({i for i, _ in full}) == 400


def test_hidden_and_fewer_are_excluded_and_read_is_pushed_down(pool):
    hidden = pool.rep_publisher[0]
    fewer = pool.story_ids[3]
    doc = {
        "hidden_sources": [hidden],
        "fewer": [{"story_id": fewer, "vector": pool.vectors[3].tolist()}],
        "reads": [{"story_id": pool.story_ids[1], "at": 1}],
    }
    ranked = rank(pool, ProfileView.from_profile("x", doc), FeedSlice(0, 400))
    ids = [i for i, _ in ranked]
    assert not any(pool.rep_publisher[i] == hidden for i in ids)
    assert 3 not in ids and 1 in ids and ids.index(1) > 200


def test_interest_only_reasons_name_a_read_story(pool):
    topic = pool.topics[10][0]
    reads = [{"story_id": pool.story_ids[i], "at": 1} for i in range(400) if pool.topics[i][0] == topic][:5]
    interest = None
    for r in reads:
        interest = fold_interest(interest, pool.vectors[pool.index[r["story_id"]]], 1000, 1.0)
    view = ProfileView.from_profile("x", {"reads": reads, "interest": interest})
    ranked = rank(pool, view, FeedSlice(0, 30))
    read_ids = {r["story_id"] for r in reads}
    # in the capped head, the stories of the read topic (at most MAX_PER_TOPIC); past it, every personal pick
    head = [(i, r) for i, r in ranked[:CAP_DEPTH] if topic in pool.topics[i] and r != "top_story"]
    personal = head + [(i, r) for i, r in ranked[CAP_DEPTH:] if r != "top_story"]
    assert len(head) <= MAX_PER_TOPIC and len(personal) > len(head)
    assert all(r.startswith("similar_to:") and r.split(":")[1] in read_ids for _, r in personal)


def test_interest_decays_toward_recent_reads():
    a, b = np.eye(64)[0], np.eye(64)[1]
    interest = fold_interest(None, a, 0, 1.0)
    interest = fold_interest(interest, b, 2 * INTEREST_HALF_LIFE_MS, 1.0)
    v = np.asarray(interest["vector"])
    assert v[1] == pytest.approx(1.0) and v[0] == pytest.approx(0.25)  # two half-lives later
    assert interest["mass"] == pytest.approx(1.25)
    late = fold_interest(interest, a, 0, 1.0)  # an out-of-order old read counts decayed, clock does not go back
    assert late["at"] == 2 * INTEREST_HALF_LIFE_MS and late["vector"][0] == pytest.approx(0.5)
    assert fold_interest(interest, np.zeros(64), 5, 1.0) == interest


def test_empty_pool_and_zero_limit():
    empty = PreparedPool.build({**samples.candidate_pool("us-en", 1, n=1), "stories": []})
    assert rank(empty, ProfileView(reader_id="x")) == []


def test_co_visitation_sums_decayed_counts_and_names_the_strongest_read():
    from serving.personal.ranking import COVISIT_HALF_LIFE_MS, Covisit

    now = 1_767_225_600_000
    lists = {"1": ((("7", 2.0), ("8", 1.0)), now), "2": ((("7", 4.0),), now - COVISIT_HALF_LIFE_MS), "3": ((), 0)}
    c = Covisit.from_lists(("1", "2", "3"), lists, now)
    assert c.strength == {"7": pytest.approx(4.0), "8": pytest.approx(1.0)}  # 2 + 4 halved once
    assert c.source == {"7": "1", "8": "1"}  # a tie (2.0 vs 2.0 after decay) keeps the newer read
    assert Covisit.from_lists(("3",), lists, now) is None


def test_co_visitation_lifts_neighbours_with_the_also_read_reason(pool):
    from serving.personal.ranking import Covisit

    read = pool.story_ids[5]
    also = [pool.story_ids[i] for i in (300, 320, 340)]
    view = ProfileView.from_profile("x", {"reads": [{"story_id": read, "at": 1}]})
    cov = Covisit(dict.fromkeys(also, 50.0), dict.fromkeys(also, read))
    plain = {i: n for n, (i, _) in enumerate(rank(pool, view, FeedSlice(0, 400)))}
    ranked = rank(pool, view, FeedSlice(0, 400), covisit=cov)
    pos = {i: (n, why) for n, (i, why) in enumerate(ranked)}
    for sid in also:
        i = pool.index[sid]
        assert pos[i][1] == f"also_read:{read}" and pos[i][0] < plain[i] - 50
