"""Paywalled articles on the shared page: the card is labelled ``paid`` and a free article wins
a near-tie for representative; a paywalled article clearly better than every free one still represents."""

from __future__ import annotations

TITLE = "Council approves the new transit budget after a long debate"


def add_story(world, story_id: int, publishers, paid=(), at=None):
    at = world.T0 - 10 * world.MIN if at is None else at
    for pub in publishers:
        art = world.article(pub, at, title=TITLE)  # same time and headline: a near-tie on everything but authority
        art["accessible_for_free"] = pub not in paid
        world.add(story_id, art)


def representative(out, story_id: int = 1, section: str = "world") -> dict:
    return next(s for s in out.pages[section]["stories"] if s["story_id"] == str(story_id))["representative"]


def reps_over_hours(world, make_ranker, hours: int = 12) -> list[str]:
    return [representative(make_ranker(world).cycle(world.T0 + h * world.HOUR))["publisher_id"] for h in range(hours)]


def test_a_paywalled_card_is_labelled_paid(world, make_ranker):
    add_story(world, 1, ["daily-herald"], paid={"daily-herald"})
    add_story(world, 2, ["pacific-times"])
    out = make_ranker(world).cycle(world.T0)
    assert "paid" in representative(out, 1)["labels"]
    assert "paid" not in representative(out, 2)["labels"]


def test_the_free_article_wins_a_near_tie(world, make_ranker):
    add_story(world, 1, ["daily-herald", "pacific-times"])  # 0.85 and 0.8: within 5 % of each other
    assert set(reps_over_hours(world, make_ranker)) == {"daily-herald", "pacific-times"}  # rotates by hour


def test_a_paywalled_near_tie_never_represents(world, make_ranker):
    add_story(world, 1, ["daily-herald", "pacific-times"], paid={"daily-herald"})
    assert set(reps_over_hours(world, make_ranker)) == {"pacific-times"}


def test_a_clearly_better_paywalled_article_still_represents(world, make_ranker):
    add_story(world, 1, ["wirepress", "viral-site"], paid={"wirepress"})  # 0.95 against an unknown host's 0.1
    assert set(reps_over_hours(world, make_ranker, hours=3)) == {"wirepress"}


def test_the_loop_reference_prefers_free_near_ties_as_the_vectorised_cycle_does(world, make_ranker):
    add_story(world, 1, ["daily-herald", "pacific-times", "capital-post"], paid={"daily-herald", "capital-post"})
    add_story(world, 2, ["london-chronicle", "toronto-ledger"], paid={"toronto-ledger"})
    for h in range(4):
        now = world.T0 + h * world.HOUR
        assert make_ranker(world).cycle(now).pages == make_ranker(world, mode="loop").cycle(now).pages
