"""Each ranking rule of DESIGN.md section 5, pinned on hand-built worlds (plain Python, no Beam)."""

from __future__ import annotations

import numpy as np
import pytest

from transforms.editions.cycle.assembly import DiversityRules, StoryTraits, assemble, hysteresis_order
from transforms.editions.cycle.scoring import features


def row_of(ranker, story_id):
    return ranker.book.stories.row_of[story_id]


def top10_publishers(page):
    return [s["representative"]["publisher_id"] for s in page["stories"][:10]]


# ---------------------------------------------------------------------------------------------------- coverage
def test_copies_add_no_coverage(world, make_ranker):
    T, MIN = world.T0, world.MIN
    pubs = ["daily-herald", "capital-post", "pacific-times"]
    first = world.story(1, pubs, T - 30 * MIN, title="Senate passes the budget bill after a long night of votes")
    world.story(2, pubs, T - 30 * MIN, title="Storm closes the coastal highway as crews clear fallen trees")
    original = first[0]["article"]["article_id"]
    for k in range(20):  # 20 syndicated copies of story 1's first article, from 20 other publishers
        world.add(1, world.article(f"copier-{k}", T - 20 * MIN + k * 1000, copy_of=original), is_copy=True)
    r = make_ranker(world)
    out = r.cycle(T)
    f = features(r.book, T, r.params)
    a, b = row_of(r, 1), row_of(r, 2)
    assert f.coverage[a] == pytest.approx(f.coverage[b])  # the copies added nothing
    assert f.pub_count[a] == f.pub_count[b] == 3
    entry = {s["story_id"]: s for s in out.pages["top"]["stories"]}["1"]
    assert entry["article_count"] == 23 and entry["publisher_count"] == 3
    assert entry["score"] == pytest.approx({s["story_id"]: s for s in out.pages["top"]["stories"]}["2"]["score"])


def test_a_story_of_copies_only_is_not_ranked(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "capital-post"], T - 30 * MIN)
    for k in range(30):
        world.add(2, world.article(f"copier-{k}", T - 10 * MIN + k, copy_of="f" * 32), is_copy=True)
    out = make_ranker(world).cycle(T)
    assert [s["story_id"] for s in out.pages["top"]["stories"]] == ["1"]
    assert "2" not in {s["story_id"] for s in out.pool["stories"]}


def test_coverage_counts_distinct_publishers_with_an_original_in_the_last_6h(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    world.story(1, ["daily-herald", "daily-herald", "daily-herald"], T - 30 * MIN)  # one publisher three times
    world.story(2, ["daily-herald"], T - 30 * MIN)
    world.story(3, ["daily-herald", "capital-post"], T - 7 * HOUR)  # both originals older than 6 h
    r = make_ranker(world)
    r.cycle(T)
    f = features(r.book, T, r.params)
    assert f.coverage[row_of(r, 1)] == pytest.approx(f.coverage[row_of(r, 2)])
    tail = r.params.coverage_tail_weight * np.log1p(0.85 + 0.75)
    assert f.coverage[row_of(r, 3)] == pytest.approx(tail)  # only the small long tail is left after 6 h


# --------------------------------------------------------------------------------------------------- freshness
def test_first_seen_time_beats_a_re_dated_article(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    pubs = ["daily-herald", "capital-post", "pacific-times"]
    # story 1 was first seen 8 h ago; its publishers re-date it: stated times of "now" and a new version re-fetched now
    old = world.story(1, pubs, T - 8 * HOUR, published_at=T - 2 * MIN, title="Council approves the harbour plan")
    art = dict(
        old[0]["article"],
        version=2,
        first_seen_at=T - MIN,
        published_at=T - MIN,
        title="Updated: council approves the harbour plan after a late vote",
    )
    world.add(1, art)
    world.story(2, pubs, T - 2 * HOUR, title="Rail strike called off after an overnight deal with the union")
    r = make_ranker(world)
    out = r.cycle(T)
    assert [int(s["story_id"]) for s in out.pages["top"]["stories"]] == [2, 1]
    f = features(r.book, T, r.params)
    newest = r.book.stories.newest_seen[row_of(r, 1)]
    assert newest == T - 8 * HOUR + 2 * MIN  # the re-fetched version kept its first-seen time
    assert f.freshness[row_of(r, 1)] == pytest.approx(0.5 ** ((8 * HOUR - 2 * MIN) / (4 * HOUR)))
    card = [
        c
        for s in out.pages["top"]["stories"]
        for c in [s["representative"], *s["supporting"]]
        if c["article_id"] == art["article_id"]
    ]
    assert not card or card[0]["first_seen_at"] == "2024-03-01T04:00:00Z"


# ---------------------------------------------------------------------------------------------- breaking pin
def test_breaking_is_pinned_on_top_in_the_same_cycle_for_up_to_two_hours(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    for s in range(12):  # an established news day: big, fresh stories
        world.story(100 + s, world.AUTHORITATIVE_EN[:5], T - 40 * MIN - s * MIN, section=["world", "business"][s % 2])
    world.story(7, ["springfield-gazette"], T + 10 * MIN, title="Quake felt across the bay area")  # first report
    r = make_ranker(world)
    before = r.cycle(T + 12 * MIN)
    assert before.pages["top"]["stories"][0]["story_id"] != "7"
    r.breaking(7, T + 13 * MIN)  # the 5-minute window ending at 12:13 held the burst
    pinned = r.cycle(T + 13 * MIN)
    top = pinned.pages["top"]["stories"][0]
    assert top["story_id"] == "7" and "breaking" in top["labels"]
    assert pinned.pool["stories"] and "breaking" in {s["story_id"]: s for s in pinned.pool["stories"]}["7"]["labels"]
    still = r.cycle(T + 13 * MIN + 2 * HOUR - MIN)
    assert still.pages["top"]["stories"][0]["story_id"] == "7"
    released = r.cycle(T + 13 * MIN + 2 * HOUR)
    assert (
        "breaking"
        not in {s["story_id"]: s for s in released.pages["top"]["stories"]}.get("7", {"labels": []})["labels"]
    )


def test_breaking_is_pinned_only_where_relevant(world, make_ranker):
    T, MIN = world.T0, world.MIN
    for s in range(6):  # corroborated British stories (two strong voices: trust.py), so they can lead gb-en
        world.story(100 + s, ["london-chronicle", "wirepress"], T - 30 * MIN - s * MIN)
    world.story(7, ["daily-herald", "capital-post", "pacific-times"], T - 5 * MIN, title="Wildfire forces evacuations")
    us, gb = make_ranker(world, "us-en"), make_ranker(world, "gb-en")
    for r in (us, gb):
        r.breaking(7, T)
    assert us.cycle(T).pages["top"]["stories"][0]["story_id"] == "7"
    gb_top = gb.cycle(T).pages["top"]["stories"]
    assert gb_top[0]["story_id"] != "7"  # only US publishers: not relevant enough to pin in Britain
    assert all("breaking" not in s["labels"] for s in gb_top)


# ------------------------------------------------------------------------------------------------- hysteresis
def test_hysteresis_keeps_neighbours_within_ten_percent():
    prev = [1, 2, 3]
    assert hysteresis_order(prev, {1: 1.00, 2: 1.09, 3: 1.18}, 0.10) == [1, 2, 3]  # each within 10 % of the one above
    assert hysteresis_order(prev, {1: 1.00, 2: 1.11, 3: 0.5}, 0.10) == [2, 1, 3]  # > 10 %: swap
    assert hysteresis_order(prev, {1: 1.0, 2: 0.9, 3: 2.0}, 0.10) == [3, 1, 2]  # a big jump climbs all the way
    assert hysteresis_order([], {5: 0.2, 6: 0.9, 7: 0.5}, 0.10) == [6, 7, 5]  # no history: by score
    assert hysteresis_order([1, 2], {1: 1.0, 2: 0.8, 9: 0.95}, 0.10) == [1, 9, 2]  # newcomers merge in by score


def test_hysteresis_order_is_a_fixed_point_of_neighbour_swaps():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 25))
        ids = list(range(n))
        scores = {i: float(rng.uniform(0.1, 2.0)) for i in ids}
        prev = [int(x) for x in rng.permutation(n)[: int(rng.integers(0, n + 1))]]
        out = hysteresis_order(prev, scores, 0.10)
        best_first = dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))  # as choose_page_slots makes it
        assert hysteresis_order(prev, best_first, 0.10, best_first=True) == out
        assert sorted(out) == ids
        for a, b in zip(out, out[1:]):
            assert not scores[b] > scores[a] * 1.10


def test_a_story_stays_put_across_cycles_within_ten_percent(world, make_ranker):
    T, MIN = world.T0, world.MIN
    # A (4 authoritative publishers) leads; B, first reported by a small paper, gains an original every 2 minutes
    world.story(1, ["daily-herald", "capital-post", "pacific-times", "london-chronicle"], T - 60 * MIN)
    world.story(2, ["springfield-gazette"], T - 60 * MIN)
    # hysteresis alone: B's small sources would leave it uncorroborated, behind A whatever its score (trust.py)
    r = make_ranker(world, corroboration_publishers=0)
    orders, ratios = [], []
    for m in range(0, 40):
        if m >= 5 and m % 2 == 0:
            world.add(2, world.article(f"local-{m}", T + m * MIN - 30_000))
        out = r.cycle(T + m * MIN)
        orders.append([int(s["story_id"]) for s in out.pages["top"]["stories"]])
        sc = {int(s["story_id"]): s["score"] for s in out.pages["top"]["stories"]}
        ratios.append(sc[2] / sc[1])
    flips = [m for m in range(1, len(orders)) if orders[m] != orders[m - 1]]
    assert len(flips) == 1, (orders, ratios)  # one swap, not a flicker
    m = flips[0]
    assert orders[m] == [2, 1] and ratios[m] > 1.10 and ratios[m - 1] <= 1.10
    assert any(1.0 < x <= 1.10 for x in ratios[:m])  # B was ahead on score for a while and did not move


# -------------------------------------------------------------------------------------------------- diversity
def test_at_most_two_headlines_per_publisher_in_the_top_ten(world, make_ranker):
    T, MIN = world.T0, world.MIN
    for s in range(8):  # eight stories only the Herald covers: no other representative possible
        world.story(s + 1, ["daily-herald"], T - (s + 1) * MIN, section=None)
    for s in range(8):  # eight with the Herald and a weaker paper of their own
        world.story(s + 101, ["daily-herald", f"paper-{s}"], T - 20 * MIN - s * MIN, section=None)
    for s in range(12):  # and a dozen from other publishers, less fresh
        world.story(s + 201, [f"blog-{s}", "mumbai-daily"], T - 60 * MIN - s * MIN, section=None)
    out = make_ranker(world).cycle(T)
    for sec, page in out.pages.items():
        pubs = top10_publishers(page)
        assert all(pubs.count(p) <= 2 for p in set(pubs)), (sec, pubs)
    top = out.pages["top"]["stories"]
    assert len(top) == 28  # the Herald's other stories are not dropped: they wait below the top 10
    assert [s["representative"]["publisher_id"] for s in top[10:]].count("daily-herald") >= 6
    swapped = [
        s for s in top[:10] if 100 < int(s["story_id"]) < 200 and s["representative"]["publisher_id"] != "daily-herald"
    ]
    assert swapped  # a story blocked by its publisher uses another publisher's article instead


def test_at_most_three_of_the_top_ten_from_one_section(world, make_ranker):
    T, MIN = world.T0, world.MIN
    for s in range(10):
        world.story(s + 1, [f"sportsdesk-{s}", "capital-post", "pacific-times"], T - (s + 1) * MIN, section="sports")
    for s in range(10):
        world.story(s + 101, [f"money-{s}", "mumbai-daily"], T - 30 * MIN - s * MIN, section="business")
    for s in range(10):
        world.story(s + 201, [f"news-{s}"], T - 60 * MIN - s * MIN, section=None)  # unlabelled: no section limit
    out = make_ranker(world).cycle(T)
    top = out.pages["top"]["stories"]
    secs = [s["section"] for s in top[:10]]
    assert secs.count("sports") == 3 and secs.count("business") == 3, secs
    assert len(top) == 30
    assert [s["section"] for s in top[10:13]] == ["sports"] * 3  # the deferred sports stories come right after
    assert len(out.pages["sports"]["stories"]) == 10  # a single-section page has no section limit


def test_never_two_near_duplicate_stories_on_a_page(world, make_ranker):
    T, MIN = world.T0, world.MIN
    base = world.unit("quake")
    world.add(1, world.article("daily-herald", T - 10 * MIN), centroid=base)
    world.add(2, world.article("capital-post", T - 9 * MIN), centroid=world.near(base, 0.90, "a"))  # too close
    world.add(3, world.article("pacific-times", T - 8 * MIN), centroid=world.near(base, 0.80, "b"))  # distinct enough
    out = make_ranker(world).cycle(T)
    for sec, page in out.pages.items():
        ids = {s["story_id"] for s in page["stories"]}
        assert not {"1", "2"} <= ids, sec
    top = {s["story_id"] for s in out.pages["top"]["stories"]}
    assert "3" in top and len(top) == 2


def test_diversity_rules_hold_on_random_worlds(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.randomise(seed=11, stories=160, start=T - 5 * world.HOUR, end=T + 30 * MIN, near_duplicates=20)
    r = make_ranker(world)
    for m in range(0, 30, 3):
        out = r.cycle(T + m * MIN)
        vec = {sid: np.asarray(c) for sid, c in world.centroids.items()}
        for sec, page in out.pages.items():
            stories = page["stories"]
            pubs = top10_publishers(page)
            assert all(pubs.count(p) <= 2 for p in set(pubs)), (m, sec, pubs)
            if sec in ("top", "nation", "world", "local"):  # mixed pages: <= 3 per topical section in the top 10
                secs = [world.labels[int(s["story_id"])] for s in stories[:10]]
                assert all(secs.count(x) <= 3 for x in set(secs) - {None}), (m, sec, secs)
            ids = [int(s["story_id"]) for s in stories]
            for i, a in enumerate(ids):
                for b in ids[i + 1 :]:
                    cos = float(vec[a] @ vec[b] / np.linalg.norm(vec[a]) / np.linalg.norm(vec[b]))
                    assert cos <= 0.85, (m, sec, a, b, cos)
            assert [s["rank"] for s in stories] == list(range(1, len(stories) + 1))


# --------------------------------------------------------------------------------------------- representatives
def _tied_story(world, story_id, at, n=4):
    """A story whose articles are exact ties (same title, time and authority): all are near-ties."""
    for k in range(n):
        world.add(story_id, world.article(f"tie-{k}", at, title="Port reopens after the storm damage is cleared"))


def test_near_ties_rotate_hourly_not_per_request(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    _tied_story(world, 1, T - 5 * MIN)
    r = make_ranker(world, "us-en", live_window_h=72, idle_cycles=10_000)
    reps_by_hour = {}
    for h in range(12):
        seen = set()
        for minute in (0, 7, 31, 59):
            out = r.cycle(T + h * HOUR + minute * MIN)
            seen.add(out.pages["top"]["stories"][0]["representative"]["article_id"])
        assert len(seen) == 1, (h, seen)  # the same card for every reader all hour
        reps_by_hour[h] = seen.pop()
    assert len(set(reps_by_hour.values())) >= 2  # and it rotates between hours
    again = make_ranker(world, "us-en", live_window_h=72)
    assert (
        again.cycle(T + 3 * HOUR + 11 * MIN).pages["top"]["stories"][0]["representative"]["article_id"]
        == (reps_by_hour[3])
    )  # a function of (story, edition, hour) only


def test_a_clear_winner_does_not_rotate(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    world.add(1, world.article("wirepress", T - 6 * MIN, title="Port reopens after the storm damage is cleared"))
    for k in range(3):
        world.add(1, world.article(f"blog-{k}", T - 5 * MIN, title="PORT REOPENS!!! You won't believe why"))
    r = make_ranker(world, live_window_h=72)
    reps = {r.cycle(T + h * HOUR).pages["top"]["stories"][0]["representative"]["publisher_id"] for h in range(8)}
    assert reps == {"wirepress"}


def test_publisher_share_of_representatives_is_capped(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    for s in range(20):  # the Herald is the best representative of every story
        world.story(s + 1, ["daily-herald", f"paper-{s}"], T - (s + 1) * MIN, section=None)
    rep = {"share_cap_min_impressions": 10, "publisher_share_cap": 0.10}
    r = make_ranker(world, representative=rep)
    first = r.cycle(T)
    pool_pubs = [s["representative"]["publisher_id"] for s in first.pool["stories"]]
    assert pool_pubs.count("daily-herald") == 20
    assert r.memory.share_counts["daily-herald"] / r.memory.share_total > 0.10
    same_hour = r.cycle(T + MIN)  # the cap is decided hourly: within the hour nothing flips
    assert [s["representative"]["publisher_id"] for s in same_hour.pool["stories"]].count("daily-herald") == 20
    second = r.cycle(T + HOUR)
    pool_pubs = [s["representative"]["publisher_id"] for s in second.pool["stories"]]
    assert pool_pubs.count("daily-herald") == 0  # capped: every story has another publisher's article to show
    page_pubs = [s["representative"]["publisher_id"] for s in second.pages["top"]["stories"]]
    assert page_pubs.count("daily-herald") == 0 and len(page_pubs) == 20


def test_share_cap_resets_at_midnight_utc(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    for s in range(20):
        world.story(s + 1, ["daily-herald", f"paper-{s}"], T + 10 * HOUR + 50 * MIN - s * MIN, section=None)
    r = make_ranker(world, representative={"share_cap_min_impressions": 10})
    r.cycle(T + 10 * HOUR + 58 * MIN)
    assert r.cycle(T + 11 * HOUR).stats["capped_publishers"] == 1  # 23:00: capped for the hour
    after = r.cycle(T + 12 * HOUR)  # 00:00 UTC: a new day, nobody is capped
    assert after.stats["capped_publishers"] == 0


def test_supporting_links_one_per_publisher_one_wire_copy(world, make_ranker):
    T, MIN = world.T0, world.MIN
    orig = world.article("wirepress", T - 20 * MIN, title="Central bank raises rates by a quarter point")
    world.add(1, orig)
    for k, pub in enumerate(["daily-herald", "daily-herald", "capital-post", "pacific-times", "london-chronicle"]):
        world.add(1, world.article(pub, T - 19 * MIN + k * MIN, title=f"Rates rise again, the {k}th angle on it"))
    for k in range(3):  # three syndicated copies of the wire story
        world.add(
            1,
            world.article(
                f"paper-{k}",
                T - 15 * MIN,
                copy_of=orig["article_id"],
                title="Central bank raises rates by a quarter point",
            ),
            is_copy=True,
        )
    out = make_ranker(world).cycle(T)
    entry = out.pages["top"]["stories"][0]
    cards = [entry["representative"], *entry["supporting"]]
    pubs = [c["publisher_id"] for c in cards]
    assert len(entry["supporting"]) == 4
    assert len(set(pubs)) == len(pubs)  # one per publisher, never the representative's
    assert sum("wire" in c["labels"] for c in cards) <= 1


def test_opinion_and_fact_check_labels(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.add(1, world.article("daily-herald", T - 10 * MIN, opinion=True, title="Why the harbour plan is a mistake"))
    world.add(2, world.article("capital-post", T - 9 * MIN, title="Mayor claims crime fell by half"))
    world.add(2, world.article("pacific-times", T - 8 * MIN, fact_check=True, title="Fact check: did crime fall?"))
    out = make_ranker(world).cycle(T)
    by_id = {s["story_id"]: s for s in out.pages["top"]["stories"]}
    # the article's label on the article only (never "OPINION OPINION"); the story's fact check once
    assert "opinion" not in by_id["1"]["labels"] and "opinion" in by_id["1"]["representative"]["labels"]
    assert ("fact_check" in by_id["2"]["labels"]) != ("fact_check" in by_id["2"]["representative"]["labels"])
    fc = [c for c in [by_id["2"]["representative"], *by_id["2"]["supporting"]] if "fact_check" in c["labels"]]
    assert fc


# --------------------------------------------------------------------------------------------- assemble directly
def test_assemble_defers_rather_than_breaks_the_publisher_limit():
    order = list(range(1, 16))
    pub = {i: ("herald" if i <= 5 else f"p{i}") for i in order}
    slots = assemble(order, [], StoryTraits(pub), DiversityRules())
    # 3, 4 and 5 wait until the top 10 is full, then come first, in order
    assert [s.story_id for s in slots] == [1, 2, 6, 7, 8, 9, 10, 11, 12, 13, 3, 4, 5, 14, 15]


def test_assemble_puts_pins_first_and_counts_them():
    order = [1, 2, 3, 4]
    pub = {1: "a", 2: "a", 3: "a", 4: "b", 9: "a"}
    slots = assemble(order, [9], StoryTraits(pub), DiversityRules(top_n=3, page_size=10))
    ids = [s.story_id for s in slots]
    assert ids[0] == 9 and slots[0].pinned
    assert [pub[i] for i in ids[:3]].count("a") <= 2


# -------------------------------------------------------------------------------------------------- storylines
def _storyline_events(groups: dict[int, list[int]], at: int) -> list[dict]:
    """NEW_STORYLINE + ATTACH events (as the stories job's storyline stage emits them) for storyline -> stories."""
    from transforms.editions.book.storylines import compact_storyline

    events, seq = [], 0
    for sl, stories in sorted(groups.items()):
        for i, s in enumerate(stories):
            seq += 1
            kind = "NEW_STORYLINE" if i == 0 else "ATTACH"
            change = {"change_id": f"sl-{seq}", "kind": kind, "seq": seq, "at": at, "storyline_id": sl, "story_id": s}
            events.append(compact_storyline(dict(change, language="en")))
    return events


def test_assemble_keeps_one_story_per_storyline_in_the_top_five():
    order = list(range(1, 13))
    storyline_of = {1: 100, 2: 100, 3: 100, 4: 200, 5: 300, 6: 200}
    slots = assemble(order, [], StoryTraits(), DiversityRules(storyline_of=storyline_of))
    # 2, 3 (storyline 100) and 6 (200) wait until five slots are placed, then come first, in order
    assert [s.story_id for s in slots] == [1, 4, 5, 7, 8, 2, 3, 6, 9, 10, 11, 12]
    assert [s.story_id for s in assemble(order, [], StoryTraits(), DiversityRules())] == order  # no storylines


def test_assemble_exempts_pins_from_the_storyline_rule():
    slots = assemble([1, 2, 3], [9], StoryTraits(), DiversityRules(storyline_of={9: 5, 1: 5, 2: 5}))
    assert [s.story_id for s in slots] == [9, 3, 1, 2]  # the pin stays; its storyline's others wait


def test_the_top_page_shows_one_story_per_storyline_in_its_top_five(world, make_ranker):
    T, MIN = world.T0, world.MIN
    for s in range(1, 11):  # the freshest three are episodes of one storyline; publishers of their own each
        world.story(s, [f"paper-{s}", f"weekly-{s}"], T - s * 5 * MIN, section=None, title=f"Distinct event {s}")
    r = make_ranker(world)
    before = r.ids(r.cycle(T - 1))
    assert before[:3] == [1, 2, 3]
    r.pulses += _storyline_events({7: [1, 2, 3], 8: [4]}, T - 30 * MIN)
    top = r.ids(r.cycle(T))
    assert top[:5] == [1, 4, 5, 6, 7] and top[5:7] == [2, 3], (before, top)  # still on the page, right after the top 5
    assert sorted(top) == sorted(before)


def test_the_storyline_rule_holds_on_random_worlds(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.randomise(seed=12, stories=120, start=T - 5 * world.HOUR, end=T + 30 * MIN)
    rng = np.random.default_rng(12)
    ids = sorted(world.centroids)
    groups: dict[int, list[int]] = {}
    for s in ids:
        groups.setdefault(int(rng.integers(1, 15)), []).append(s)
    r = make_ranker(world)
    r.pulses += _storyline_events(groups, T - 5 * world.HOUR)
    of = {s: sl for sl, ss in groups.items() for s in ss}
    for m in range(0, 30, 5):
        top = r.ids(r.cycle(T + m * MIN))
        assert len(top) > 5
        assert len({of[s] for s in top[:5]}) == 5, (m, [of[s] for s in top[:5]])
