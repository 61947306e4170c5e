"""The sample world's paywalled publishers, through the real extraction path: their pages (as ``newsroom run``
fetches them) normalise to ``accessible_for_free`` false, every other publisher's to true, and on the shared page
the paid card is labelled ``paid`` and loses a near-tie to a free report of the same news."""

from __future__ import annotations

import pytest

from devtools.world.content import ARTICLES, PAYWALLED
from devtools.world.server import SampleWorld
from tests.pipelines.test_stories_job import raw_item
from tests.transforms.editions.conftest import HOUR, MIN, T0, Ranker, World
from transforms.articles.normalize import Normalizer

PAID_REPORT = "earthquake-calder-bay-residents"  # Daily Herald (0.85), paywalled
FREE_TWIN = "pacific-times"  # 0.8: within the 5 % near-tie of Daily Herald on an otherwise identical report


@pytest.fixture(scope="module")
def sample_world():
    world = SampleWorld(speed=10.0, start_s=(T0 - 2 * HOUR) / 1000.0, seed=1)
    yield world
    world._server.server_close()


def normalised(world, a: dict) -> dict:
    return Normalizer(clock=lambda: world.released_ms(a) + 2000).normalize(raw_item(world, a))


def test_the_paywalled_publishers_pages_say_so_and_the_others_do_not(sample_world):
    assert PAYWALLED and {p.publisher_id for p in sample_world.registry} >= PAYWALLED
    sample_world._extend(sample_world.clock.release_ms(6 * 3600) + 1)  # six virtual hours of generated news too
    seen = {True: set(), False: set()}
    for a in sample_world.articles.values():
        if a.get("members") or a.get("future_days"):  # never fetched / refused for its future date
            continue
        free = normalised(sample_world, a)["accessible_for_free"]
        assert free is (a["pub"] not in PAYWALLED), (a["id"], a["pub"], free)
        seen[free].add(a["pub"])
    assert seen[False] == set(PAYWALLED) and len(seen[True]) >= 10
    assert any(a["pub"] in PAYWALLED and not a.get("copy_of") for a in ARTICLES), "no scripted paid original"


def _representatives(world: World, story: int, first_seen: int, hours: int) -> list[dict]:
    out = []
    for h in range(hours):
        pages = Ranker(world).cycle(first_seen + 10 * MIN + h * HOUR).pages
        entry = next(s for p in pages.values() for s in p["stories"] if s["story_id"] == str(story))
        out.append(entry["representative"])
    return out


def test_on_the_shared_page_the_paid_card_is_labelled_and_a_free_near_tie_wins(sample_world):
    paid = sample_world.articles[PAID_REPORT]
    assert paid["pub"] in PAYWALLED and FREE_TWIN not in PAYWALLED
    twin = SampleWorld(
        speed=10.0,
        start_s=sample_world.clock.start_s,
        articles=[{**ARTICLES_BY_ID[PAID_REPORT], "id": PAID_REPORT + "-twin", "pub": FREE_TWIN}],
    )
    try:
        free = normalised(twin, next(iter(twin.articles.values())))
    finally:
        twin._server.server_close()
    paid_art = normalised(sample_world, paid)
    assert paid_art["accessible_for_free"] is False and free["accessible_for_free"] is True

    alone = World()
    alone.add(1, paid_art)
    reps = _representatives(alone, 1, paid_art["first_seen_at"], hours=2)
    assert {r["publisher_id"] for r in reps} == {paid["pub"]} and all("paid" in r["labels"] for r in reps)

    control = World()  # the same two reports, both free: a near-tie that rotates by hour between them
    control.add(1, {**paid_art, "accessible_for_free": True})
    control.add(1, free)
    reps = _representatives(control, 1, paid_art["first_seen_at"], hours=12)
    assert {r["publisher_id"] for r in reps} == {paid["pub"], FREE_TWIN}

    both = World()
    both.add(1, paid_art)
    both.add(1, free)
    reps = _representatives(both, 1, paid_art["first_seen_at"], hours=12)
    assert {r["publisher_id"] for r in reps} == {FREE_TWIN}  # a near-tie: the free card every hour
    assert not any("paid" in r["labels"] for r in reps)


ARTICLES_BY_ID = {a["id"]: a for a in ARTICLES}
