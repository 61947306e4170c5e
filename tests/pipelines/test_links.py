"""Cross-language links reach both stories' coverage: one LINK change (smaller id first, as the link writer emits
each pair once) is recorded on both stories of the ranker's book, whichever of them an edition holds."""

from __future__ import annotations

from tests.transforms.editions.conftest import World
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.vocabulary.config import load_config
from transforms.publishers import default_registry


def _fold(changes, language="en"):
    book = StoryBook(load_config(), default_registry(), language)
    for e in sorted((compact_change(c) for c in changes), key=event_sort_key):
        book.apply(e)
    book.flush()
    return book


def test_one_link_change_links_both_stories_in_any_order():
    world = World()
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald"], T - 30 * MIN)
    world.story(77, ["capital-post"], T - 20 * MIN)
    world.link(1, 77, T - 5 * MIN)
    book = _fold(world.changes)
    assert book.stories.links[book.stories.row_of[1]] == {77}
    assert book.stories.links[book.stories.row_of[77]] == {1}  # the larger id is linked too


def test_a_link_waits_for_a_story_the_book_does_not_hold_yet():
    world = World()
    T, MIN = world.T0, world.MIN
    world.link(5, 9, T - 40 * MIN)  # e.g. 5 is a Spanish story (another edition), 9 comes later in this one
    world.story(9, ["daily-herald"], T - 30 * MIN)
    book = _fold(world.changes)
    assert book.stories.links[book.stories.row_of[9]] == {5}
