"""Local publishers: a publisher may carry a ``city`` of its region's gazetteer (editions.json
``local_places``), and a story is local to a city when a local publisher of that city covers it or its entities
name the city: the pool entry's ``places`` then hold the city code, so ``place:{city}`` lists it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from transforms.editions.book.storybook import StoryBook
from transforms.editions.overlays.topics import add_cities, city_codes
from transforms.publishers import PublisherRegistry, default_registry


def row(**extra) -> dict:
    return {"publisher_id": "x-news", "name": "X", "hosts": ["x.test"], "region": "us", "language": "en", **extra}


def test_the_packaged_registry_has_local_publishers_with_gazetteer_cities():
    reg = default_registry()
    assert reg.get("springfield-gazette").city == "springfield"
    assert reg.get("gazette-de-lyon").city == "lyon"
    assert reg.get("toronto-ledger").city == "toronto"
    assert reg.get("daily-herald").city == ""  # a national paper: no city


def test_a_city_is_a_gazetteer_code_of_the_publishers_own_region():
    assert PublisherRegistry.from_dicts([row(city="new-york")]).get("x-news").city == "new-york"
    with pytest.raises(ValueError, match=r"x-news.*'gotham'.*region 'us'"):
        PublisherRegistry.from_dicts([row(city="gotham")])
    with pytest.raises(ValueError, match=r"x-news.*'london'.*region 'us'"):  # a city of another region
        PublisherRegistry.from_dicts([row(city="london")])
    with pytest.raises(ValueError, match=r"x-news.*no region"):
        PublisherRegistry.from_dicts([row(region="", city="springfield")])


def test_a_story_covered_by_a_local_publisher_is_local_to_its_city(world, make_ranker):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "springfield-gazette"], T - 10 * MIN)  # no entity names Springfield
    world.story(2, ["daily-herald", "capital-post"], T - 11 * MIN)
    world.story(3, ["daily-herald", "capital-post"], T - 12 * MIN, places=("place:boston",))
    places = {s["story_id"]: s["places"] for s in make_ranker(world).cycle(T).pool["stories"]}
    assert "springfield" in places["1"]
    assert not {"springfield", "boston"} & set(places["2"])
    # entity-named cities are added later by topics.add_cities; the publisher city does not need an entity
    assert "springfield" not in places["3"]


def test_a_local_publisher_beyond_the_ten_strongest_still_makes_the_story_local(world, make_ranker):
    """The entry lists at most 10 publishers (by authority); the city comes from every covering publisher."""
    T, MIN = world.T0, world.MIN
    world.story(
        1, [f"paper-{i}" for i in range(12)] + ["daily-herald", "springfield-gazette"], T - 10 * MIN, step=20_000
    )
    r = make_ranker(world)
    weak = dataclasses.replace(r.registry.get("springfield-gazette"), authority=0.01)
    r.registry = PublisherRegistry([weak if p.publisher_id == weak.publisher_id else p for p in r.registry])
    r.book = StoryBook(r.config, r.registry, r.edition.language)
    entry = next(s for s in r.cycle(T).pool["stories"] if s["story_id"] == "1")
    assert "springfield-gazette" not in entry["publishers"] and "springfield" in entry["places"]


def test_a_story_only_a_local_publisher_covers_stays_in_the_pool_beyond_the_national_top(world, make_ranker):
    """City pages are built from the pool: a story only the Springfield Gazette covers, weaker than the national
    top ``pool_size``, is kept as a local candidate (scoring.py ``local_reserve``), so place:springfield lists it."""
    T, MIN = world.T0, world.MIN
    for i in range(1, 5):  # four stronger national stories fill a pool of three
        world.story(i, ["daily-herald", "capital-post", f"paper-{i}"], T - 10 * MIN)
    world.story(9, ["springfield-gazette"], T - 30 * MIN)
    pool = make_ranker(world, pool_size=3).cycle(T).pool["stories"]
    ids = [s["story_id"] for s in pool]
    assert len(ids) == 4 and ids[-1] == "9"  # the national three, then the local one
    assert "springfield" in pool[-1]["places"]
    national = make_ranker(world, pool_size=3, local_candidates=0).cycle(T).pool["stories"]
    assert "9" not in [s["story_id"] for s in national]  # what main did: the pool held the national top only


def with_cities(ranker, pool: dict) -> list[dict]:
    """The pool's stories with the cities their entities name added, as the cycle's overlays add them."""
    add_cities(pool, city_codes(ranker.config))
    return pool["stories"]


def test_the_local_reserve_is_per_city_so_a_busy_city_cannot_crowd_out_a_small_one(world, make_ranker):
    """Three Boston stories (their main entities name Boston, covered by national papers: stronger) and one story only the
    Springfield Gazette covers, none in a national pool of three: with a reserve of two per city, Boston keeps its
    best two and Springfield its one. One reserve for the whole region (main before this) kept Boston's two and
    dropped Springfield's story from the Springfield page."""
    T, MIN = world.T0, world.MIN
    for i in range(1, 5):
        world.story(i, ["daily-herald", "capital-post", f"paper-{i}"], T - 10 * MIN)
    for i in range(5, 8):
        world.story(i, ["daily-herald", "pacific-times"], T - (20 + i) * MIN, places=("boston",))
    world.story(9, ["springfield-gazette"], T - 30 * MIN)
    r = make_ranker(world, pool_size=3, local_candidates=2)
    pool = with_cities(r, r.cycle(T).pool)
    places = {s["story_id"]: s["places"] for s in pool}
    assert "9" in places and "springfield" in places["9"]
    boston = [sid for sid in ("5", "6", "7") if sid in places]
    assert boston == ["5", "6"] and all("boston" in places[sid] for sid in boston)
    assert len(pool) == 3 + 2 + 1


def test_the_reserve_keeps_a_story_for_each_city_it_is_local_to(world, make_ranker):
    """A story local to two cities counts in both reserves and is in the pool once; a third city keeps its own
    (one reserve for the region kept only the strongest local story)."""
    T, MIN = world.T0, world.MIN
    for i in range(1, 4):
        world.story(i, ["daily-herald", "capital-post", f"paper-{i}"], T - 10 * MIN)
    world.story(8, ["springfield-gazette", "capital-post"], T - 25 * MIN, places=("boston",))
    world.story(9, ["springfield-gazette"], T - 30 * MIN)
    world.story(11, ["capital-post"], T - 40 * MIN, places=("chicago",))
    r = make_ranker(world, pool_size=3, local_candidates=1)
    pool = with_cities(r, r.cycle(T).pool)
    ids = [s["story_id"] for s in pool]
    assert ids[3:] == ["8", "11"]  # Springfield's best and Boston's best (the same story, once), Chicago's best
    assert {"boston", "springfield"} <= set(pool[3]["places"]) and "chicago" in pool[4]["places"]


def test_a_citys_stories_in_the_national_pool_count_towards_its_reserve(world, make_ranker):
    """The reserve fills each city page up to ``local_candidates`` stories: Boston's strong story is in the national
    pool, so with a reserve of one its weaker story is not added, while Springfield, with none in the pool, keeps
    its one (one reserve for the region took Boston's weaker story instead)."""
    T, MIN = world.T0, world.MIN
    for i in range(1, 3):
        world.story(i, ["daily-herald", "capital-post", f"paper-{i}"], T - 10 * MIN)
    world.story(5, ["daily-herald", "capital-post", "paper-5"], T - 10 * MIN, places=("boston",))
    world.story(6, ["daily-herald", "capital-post"], T - 20 * MIN, places=("boston",))
    world.story(9, ["springfield-gazette"], T - 30 * MIN)
    r = make_ranker(world, pool_size=3, local_candidates=1)
    pool = with_cities(r, r.cycle(T).pool)
    ids = [s["story_id"] for s in pool]
    assert sorted(ids[:3]) == ["1", "2", "5"] and ids[3:] == ["9"]


def test_whether_a_story_names_a_city_is_found_again_when_it_gains_an_article(world, make_ranker):
    """The local reserve keeps, per story row, whether its main entities name a city (scoring._naming_cities) and
    asks again only when the story's coverage version or article count moved: a story that names no city until an
    article naming Boston joins it must be seen naming one at the next cycle (a kept answer that never refreshed
    would leave it out of Boston's reserve for good)."""
    from transforms.editions.cycle.scoring import _naming_cities
    from transforms.editions.vocabulary.cities import config_cities

    T, MIN = world.T0, world.MIN
    world.story(8, ["daily-herald"], T - 90 * MIN)
    r = make_ranker(world)
    r.cycle(T)
    codes, _ = config_cities(r.config)
    row = np.array([r.book.stories.row_of[next(iter(r.book.stories.row_of))]])
    assert _naming_cities(r.book, row, codes).tolist() == [False]
    world.story(8, ["capital-post"], T + MIN, places=("boston",))
    r.cycle(T + 5 * MIN)
    assert _naming_cities(r.book, row, codes).tolist() == [True]
