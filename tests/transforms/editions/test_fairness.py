"""Fairness you can show: the publisher share cap counts representative impressions estimated
from page position (transforms/editions/cycle/fairness.py's curve), per ownership group, edition and day; each cycle's
pool (the edition's manifest of the snapshot) carries the concentration index (Herfindahl) of its pages."""

from __future__ import annotations

import math

from tests.transforms.editions.test_ownership_groups import owned
from transforms.editions.cycle import fairness
from transforms.editions.vocabulary import documents as docs


def test_the_position_curve_halves_by_the_third_slot_and_keeps_falling():
    w = [fairness.position_weight(r) for r in range(1, 31)]
    assert w[0] == 1.0 and w[2] == 0.5  # rank 3: half of the lead
    assert all(a > b for a, b in zip(w, w[1:]))
    assert math.isclose(w[29], 1 / math.log2(31))


def test_the_cap_counts_a_lead_story_more_than_one_further_down(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald"], T - 5 * MIN, section=None)  # fresher: first on every page
    world.story(2, ["pacific-times"], T - 90 * MIN, section=None)  # second on the same pages
    r = make_ranker(world)
    out = r.cycle(T)
    pages = [p for p in out.pages.values() if len(p["stories"]) == 2]
    assert pages and all(p["stories"][0]["story_id"] == "1" for p in pages)
    counts = r.memory.share_counts
    assert counts["daily-herald"] > counts["pacific-times"]  # one slot each per page, but rank 1 against rank 2
    assert math.isclose(counts["pacific-times"] / counts["daily-herald"], fairness.position_weight(2))


def test_sister_sites_share_one_cap(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    for s in range(20):  # the Herald is the best representative of every story, its sister the second best
        world.story(s + 1, ["daily-herald", "pacific-times", f"paper-{s}"], T - (s + 1) * MIN, section=None)
    r = owned(make_ranker(world, representative={"share_cap_min_impressions": 10, "publisher_share_cap": 0.10}))
    r.cycle(T)
    assert set(r.memory.share_counts) >= {"herald-group"} and "daily-herald" not in r.memory.share_counts
    later = r.cycle(T + HOUR)
    pubs = {s["representative"]["publisher_id"] for s in later.pool["stories"]}
    assert not pubs & {"daily-herald", "pacific-times"}  # the group is capped, not only its first outlet


def test_the_pool_carries_the_pages_concentration_index(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald"], T - 5 * MIN)
    world.story(2, ["daily-herald", "capital-post"], T - 30 * MIN)
    world.story(3, ["pacific-times", "london-chronicle"], T - 60 * MIN)
    out = make_ranker(world).cycle(T)
    shares: dict[str, float] = {}
    for page in out.pages.values():
        for s in page["stories"]:
            pub = s["representative"]["publisher_id"]
            shares[pub] = shares.get(pub, 0.0) + fairness.position_weight(s["rank"])
    total = sum(shares.values())
    want = sum((v / total) ** 2 for v in shares.values())
    conc = out.pool["concentration"]
    assert math.isclose(conc["index"], want, abs_tol=1e-4)
    assert conc["publishers"] == len(shares)
    assert 1 / len(shares) <= conc["index"] <= 1
    docs.validate("candidate_pool", out.pool)  # the pool schema knows the field
