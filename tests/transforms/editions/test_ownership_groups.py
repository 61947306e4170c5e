"""Ownership groups (publishers.json ``owner``) count as one voice in the ranker: in a story's
coverage and publisher count, in the top-10 publisher limit and in supporting links; and the group table follows
the book's registry, not only its size."""

from __future__ import annotations

import dataclasses

from transforms.editions.book.storybook import StoryBook
from transforms.publishers import PublisherRegistry, default_registry

HERALD = ("daily-herald", "pacific-times")  # put under one owner in these tests


def owned_registry(members=HERALD, owner: str = "herald-group") -> PublisherRegistry:
    return PublisherRegistry(
        [dataclasses.replace(p, owner=owner) if p.publisher_id in members else p for p in default_registry()]
    )


def owned(ranker, members=HERALD):
    """``ranker`` with a book whose registry puts ``members`` under one owner."""
    ranker.registry = owned_registry(members)
    ranker.book = StoryBook(ranker.config, ranker.registry, ranker.edition.language)
    return ranker


def story_entry(out, story_id: int, section: str = "world") -> dict:
    return next(s for s in out.pages[section]["stories"] if s["story_id"] == str(story_id))


def test_the_packaged_registry_groups_real_sister_sites():
    reg = default_registry()
    assert reg.get("london-chronicle").group == reg.get("northern-echo").group == "chronicle-media"
    assert reg.get("le-quotidien").group == reg.get("gazette-de-lyon").group == "groupe-quotidien"
    assert reg.get("daily-herald").group == "daily-herald"  # no owner: its own group


def test_the_group_table_follows_the_registry_not_the_table_size(world, make_ranker):
    world.story(1, ["daily-herald", "pacific-times"], world.T0 - 10 * world.MIN)
    r = make_ranker(world)
    r.cycle(world.T0)
    pubs = r.book.publishers
    before = r.book.publisher_groups()
    i, j = pubs.row_of["daily-herald"], pubs.row_of["pacific-times"]
    assert before[i] != before[j]
    r.book.registry = owned_registry()  # same publishers, an owner set: the table has the same size
    after = r.book.publisher_groups()
    assert after[i] == after[j]


def test_sister_sites_count_once_in_a_story_s_coverage_and_publisher_count(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "pacific-times", "capital-post"], T - 10 * MIN)
    world.story(2, ["london-chronicle", "toronto-ledger"], T - 10 * MIN)
    plain = make_ranker(world).cycle(T)
    grouped = owned(make_ranker(world)).cycle(T)
    assert story_entry(plain, 1)["publisher_count"] == 3
    assert story_entry(grouped, 1)["publisher_count"] == 2  # the herald group is one voice
    assert story_entry(grouped, 1)["score"] < story_entry(plain, 1)["score"]  # less coverage: one voice's weight
    assert story_entry(grouped, 2)["score"] == story_entry(plain, 2)["score"]  # other stories unchanged


def test_the_top_ten_takes_at_most_two_representatives_of_one_owner(world, make_ranker):
    T, MIN = world.T0, world.MIN
    for k, pub in enumerate(["daily-herald", "pacific-times", "daily-herald"]):
        world.story(10 + k, [pub], T - (10 + k) * MIN)  # single-source stories: no other publisher to show
    plain = make_ranker(world).cycle(T)
    grouped = owned(make_ranker(world)).cycle(T)
    assert set(make_ranker.ids(plain)) == {10, 11, 12}  # daily-herald 2, pacific-times 1: within the limit
    assert len(make_ranker.ids(grouped)) == 2  # one owner, 3 stories: the third never enters the top 10


def test_supporting_links_show_one_article_per_owner(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["wirepress", "daily-herald", "pacific-times", "capital-post"], T - 10 * MIN)
    world.story(2, ["london-chronicle", "toronto-ledger"], T - 20 * MIN)

    def supporting_groups(r):
        out = r.cycle(T)
        entry = story_entry(out, 1)
        pubs = [entry["representative"]["publisher_id"]] + [c["publisher_id"] for c in entry["supporting"]]
        return [r.registry.get(p).group for p in pubs]

    plain = supporting_groups(make_ranker(world))
    grouped = supporting_groups(owned(make_ranker(world)))
    assert len(plain) == 4 and len(set(plain)) == 4
    assert len(grouped) == 3 and len(set(grouped)) == 3  # daily-herald and pacific-times: one link between them


def test_the_loop_reference_ranks_groups_as_the_vectorised_cycle_does(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "pacific-times", "capital-post"], T - 10 * MIN)
    world.story(2, ["london-chronicle", "toronto-ledger", "daily-herald"], T - 30 * MIN)
    world.story(3, ["pacific-times", "wirepress"], T - 50 * MIN)
    vec = owned(make_ranker(world)).cycle(T)
    loop = owned(make_ranker(world, mode="loop")).cycle(T)
    assert vec.pages == loop.pages
