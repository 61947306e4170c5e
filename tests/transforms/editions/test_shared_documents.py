"""What a book's tables alone decide is made once and shared by the editions whose books have the same tables
(transforms/editions/cycle/kept.py ``LineageMemo``, coverage.py ``SharedCoverage``): coverage documents (once per
story version, kept across minutes), storyline items (overlays/storyline_pages.py ``SHARED_ITEMS``), pool entries'
story fields (cycle/run.py ``SHARED_POOL_STORIES``), page entries (``SHARED_PAGE_ENTRIES``) and article cards
(cycle/cards.py ``SHARED_CARDS``). The editions of a language fold the same events, each into its own book, and each
made every one again. Shared only where every input is the same: the tables (``StoryBook.lineage``, or the story's
version), the config, registry and parameters, the story and primary section; for a storyline item also the cycle's
minute, the stories that left, the sources, whether it was merged and the takedowns; for a card the article's
first-seen time, version and labels; for a page entry its key row and the section names."""

from __future__ import annotations

from stores.takedowns import TakedownSet
from tests.transforms.editions.conftest import Ranker, World
from tests.transforms.editions.test_ownership_groups import owned_registry
from tests.transforms.editions.test_storyline_pages import sl_event
from transforms.editions.book.storybook import StoryBook, compact_change
from transforms.editions.cycle import coverage as coverage_module
from transforms.editions.cycle.coverage import SharedCoverage, coverage_document, shared_coverage
from transforms.editions.cycle.kept import LineageMemo
from transforms.editions.overlays import storyline_pages as pages_module
from transforms.editions.overlays.storyline_pages import Moves, storyline_item, storyline_items
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams
from transforms.publishers import default_registry

T, MIN = World.T0, World.MIN


def _book(config, registry, events):
    book = StoryBook(config, registry, "en")
    for e in events:
        book.apply(e)
    book.flush()
    return book


def test_a_coverage_document_is_made_once_per_lineage_and_again_after_a_fold(world, monkeypatch):
    monkeypatch.setattr(coverage_module, "SHARED_COVERAGE", SharedCoverage(kept=1000))
    world.story(1, ["daily-herald", "pacific-times"], T - 30 * MIN, title="Dam opens its gates")
    first = [compact_change(c) for c in world.changes]
    world.add(1, world.article("metro-courier", T - MIN, title="Dam gates open early"))
    second = compact_change(world.changes[-1])
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config)
    a, b = _book(config, registry, first), _book(config, registry, first)
    row = a.stories.row_of[1]
    doc = shared_coverage(a, row, p, 0)
    assert shared_coverage(b, b.stories.row_of[1], p, 0) is doc  # made once for both books
    assert doc == coverage_document(a, row, p, 0)
    # another primary section or parameters: made again
    assert shared_coverage(a, row, p, 1) is not doc
    assert shared_coverage(a, row, RankParams.from_config(config), 0) is not doc
    # a fold moves the lineage: the new article is in the document
    a.apply(second)
    a.flush()
    new = shared_coverage(a, row, p, 0)
    assert new == coverage_document(a, row, p, 0) and len(new["articles"]) == len(doc["articles"]) + 1
    assert shared_coverage(b, row, p, 0) == doc  # b has not folded it: its version's document (made again)
    # a book of the same lineage with another registry: made again, for it
    owned = _book(config, owned_registry(("daily-herald",)), first)
    assert owned.lineage == b.lineage and shared_coverage(owned, row, p, 0) is not doc


def test_a_lineage_memo_keeps_a_budget_of_values_oldest_scope_first(world):
    shared = LineageMemo(kept=3)
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config)
    for k in range(1, 5):
        world.story(k, ["daily-herald"], T - 30 * MIN + k, title=f"Story {k}")
    book = _book(config, registry, [compact_change(c) for c in world.changes])
    old = book.lineage
    assert shared.find(book, p, [1, 2], lambda ks: [f"old {k}" for k in ks]) == ["old 1", "old 2"]
    world.add(1, world.article("pacific-times", T - MIN, title="Story 1 again"))
    book.apply(compact_change(world.changes[-1]))
    book.flush()
    assert shared.find(book, p, [1, 2], lambda ks: [f"new {k}" for k in ks]) == ["new 1", "new 2"]
    assert shared.size == 2 and [key[0] for key in shared.by_scope] == [book.lineage]  # the old lineage went whole
    assert old != book.lineage


def test_a_coverage_document_is_kept_across_minutes_while_its_storys_version_stands(world, monkeypatch):
    monkeypatch.setattr(coverage_module, "SHARED_COVERAGE", SharedCoverage(kept=1000))
    world.story(1, ["daily-herald"], T - 30 * MIN, title="Dam opens its gates")
    world.story(2, ["pacific-times"], T - 20 * MIN, title="Harbour strike ends")
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config)
    book = _book(config, registry, [compact_change(c) for c in world.changes])
    one, two = (shared_coverage(book, book.stories.row_of[k], p, 0) for k in (1, 2))
    world.add(1, world.article("metro-courier", T - MIN, title="Dam gates open early"))
    book.apply(compact_change(world.changes[-1]))
    book.flush()
    assert shared_coverage(book, book.stories.row_of[2], p, 0) is two  # story 2 did not change
    new = shared_coverage(book, book.stories.row_of[1], p, 0)
    assert new is not one and new == coverage_document(book, book.stories.row_of[1], p, 0)


def _ranker(world, like=None):
    r = Ranker(world)
    if like is not None:  # one worker's config, registry and parameters, as RankEditionsFn holds them
        r.config, r.registry, r.params = like.config, like.registry, like.params
        r.book = StoryBook(r.config, r.registry, "en")
    r.pulses += [
        sl_event(1, "NEW_STORYLINE", T - 50 * MIN, 70, story_id=1),
        sl_event(2, "ATTACH", T - 40 * MIN, 70, story_id=2),
        sl_event(3, "NEW_STORYLINE", T - 30 * MIN, 71, story_id=3),
    ]
    return r


def _world():
    w = World()
    w.story(1, ["daily-herald", "pacific-times"], T - 60 * MIN, title="Wildfire spreads east")
    w.story(2, ["daily-herald", "metro-courier"], T - 45 * MIN, title="Wildfire reaches the coast")
    w.story(3, ["pacific-times"], T - 35 * MIN, title="Harbour strike ends")
    return w


def test_storyline_items_are_shared_by_a_lineage_and_equal_to_their_own_computation(monkeypatch):
    monkeypatch.setattr(pages_module, "SHARED_ITEMS", LineageMemo(kept=1000))
    a = _ranker(_world())
    b = _ranker(_world(), like=a)
    out_a, out_b = a.cycle(T), b.cycle(T)
    assert a.book.lineage == b.book.lineage
    items_a = storyline_items(a.book, out_a, a.params, T)
    items_b = storyline_items(b.book, out_b, b.params, T)
    assert items_a == items_b and {it["pointer"] for it in items_a} == {"storyline/en/70", "storyline/en/71"}
    assert all(x["doc"] is y["doc"] and x is not y for x, y in zip(items_a, items_b))  # the item is each edition's
    for it in items_a:
        sl = int(it["doc"]["storyline_id"])
        assert it == storyline_item(a.book, a.params, None, sl, T // MIN, Moves())


def test_a_storyline_items_key_holds_every_input(monkeypatch):
    monkeypatch.setattr(pages_module, "SHARED_ITEMS", LineageMemo(kept=1000))
    r = _ranker(_world())
    r.cycle(T)
    book, p, v = r.book, r.params, T // MIN

    def shared(taken, sl, version, moves, params=p):
        out = type("Out", (), {"coverage": []})()
        book.storylines.touched, book.storylines.left = {sl}, {sl: set(moves.left)} if moves.left else {}
        book.storylines.sources = {sl: moves.sources} if moves.sources is not None else {}
        book.storylines.merged = {sl: True} if moves.merged else {}
        items = storyline_items(book, out, params, version * MIN, taken)
        return items[0] if items else None

    base = (None, 70, v, Moves())
    variants = [
        (None, 71, v, Moves()),  # another storyline
        (None, 70, v + 1, Moves()),  # another minute (the version)
        (None, 70, v, Moves(left=(9,))),  # a story that left it
        (None, 70, v, Moves(sources={72: None})),  # a storyline merged into it
        (None, 70, v, Moves(sources={72: {9}})),  # a split's stories
        (None, 70, v, Moves(merged=True)),  # merged into another
        (TakedownSet(stories=frozenset({"1"})), 70, v, Moves()),  # a takedown
        (TakedownSet(articles=frozenset({"x"})), 70, v, Moves()),  # other takedowns, same effect
    ]
    first = shared(*base)
    assert shared(*base)["doc"] is first["doc"]
    for args in variants:
        got = shared(*args)
        assert got == storyline_item(book, p, *args), args
        assert got["doc"] is not first["doc"], args
    assert shared(*base, params=RankParams.from_config(load_config()))["doc"] is not first["doc"]


def test_a_pool_entrys_story_fields_are_shared_by_a_lineage_and_made_again_after_a_fold(world, monkeypatch):
    from transforms.editions.cycle import run as run_module

    shared = LineageMemo(kept=1000)
    monkeypatch.setattr(run_module, "SHARED_POOL_STORIES", shared)
    a, b = Ranker(world), Ranker(world)
    b.config, b.registry, b.params = a.config, a.registry, a.params
    b.book = StoryBook(a.config, a.registry, "en")
    world.story(1, ["daily-herald", "pacific-times"], T - 30 * MIN, title="Dam opens its gates")
    world.story(2, ["metro-courier"], T - 20 * MIN, title="Harbour strike ends")
    out_a, out_b = a.cycle(T), b.cycle(T)
    entries = {e["story_id"]: e for e in out_a.pool["stories"]}
    assert {e["story_id"]: e for e in out_b.pool["stories"]} == entries
    (scope,) = shared.by_scope
    fields = shared.by_scope[scope][4]
    assert set(fields) == {1, 2}
    for sid, story in fields.items():  # b's entries hold the very fields a made (computed once)
        e = next(x for x in out_b.pool["stories"] if x["story_id"] == str(sid))
        assert all(e[name] is story[name] for name in ("topics", "publishers", "places", "entities"))
        assert story == run_module.pool_stories(a.book, [a.book.stories.row_of[sid]], a.params)[0]
    # a new publisher on story 1: its fields are made again, in the new lineage's scope
    world.add(1, world.article("metro-courier", T + MIN // 2, title="Dam gates open"))
    out = a.cycle(T + MIN)
    e1 = next(x for x in out.pool["stories"] if x["story_id"] == "1")
    assert "metro-courier" in e1["publishers"] and "metro-courier" not in entries["1"]["publishers"]
    assert len(shared.by_scope) == 2


def test_shared_coverage_keeps_its_newest_documents_within_its_budget(world, monkeypatch):
    shared = SharedCoverage(kept=2)
    monkeypatch.setattr(coverage_module, "SHARED_COVERAGE", shared)
    for k in (1, 2, 3):
        world.story(k, ["daily-herald"], T - 30 * MIN + k, title=f"Story {k}")
    config = load_config()
    book = _book(config, default_registry(), [compact_change(c) for c in world.changes])
    p = RankParams.from_config(config)
    for k in (1, 2, 1, 3):
        shared_coverage(book, book.stories.row_of[k], p, 0)
    assert list(shared.docs) == [("en", 1), ("en", 3)]  # story 2, the least recently asked, went


def test_a_coverage_summary_is_what_an_episode_reads_of_the_document(world, monkeypatch):
    """A storyline's unchanged episodes are made from coverage_summary, without the article cards: the same title,
    time and counts as the whole document gives, made from the book or read from the kept document."""
    from transforms.editions.cycle.coverage import coverage_summary
    from transforms.editions.overlays.storyline_pages import summary_of

    shared, summaries = SharedCoverage(kept=1000), SharedCoverage(kept=1000)
    monkeypatch.setattr(coverage_module, "SHARED_COVERAGE", shared)
    monkeypatch.setattr(coverage_module, "SHARED_SUMMARIES", summaries)
    world.randomise(11, 40, T - 6 * 60 * MIN, T - 30 * MIN)
    config = load_config()
    book = _book(config, default_registry(), [compact_change(c) for c in world.changes])
    p = RankParams.from_config(config)
    for sid, row in book.stories.row_of.items():
        for prim in (int(book.stories.primary_section[row]), 0):
            want = summary_of(coverage_document(book, row, p, prim))
            assert coverage_summary(book, row, p, prim) == want, sid  # made from the book
            assert summaries.peek(book, row, p, prim) == want  # and kept at this version
            shared_coverage(book, row, p, prim)
            assert shared.peek(book, row, p, prim) is not None
            assert coverage_summary(book, row, p, prim) == want, sid  # read from the kept document


def test_a_card_is_shared_by_a_lineage_only_for_the_same_article_first_seen_version_and_labels(world, monkeypatch):
    """cards.py ``SHARED_CARDS``: a card is made once for the books of a lineage, and made again when the article's
    first-seen time, version (a new headline) or labels (another region's) differ, or when it is asked with its
    lede: its key holds each (the columns are changed in place here, so the lineage stays the same)."""
    from types import SimpleNamespace

    import numpy as np

    from transforms.editions.cycle import cards as cards_module
    from transforms.editions.cycle.cards import Cards
    from transforms.editions.cycle.context import CycleCache

    monkeypatch.setattr(cards_module, "SHARED_CARDS", LineageMemo(kept=8))
    world.story(1, ["daily-herald", "pacific-times"], T - 30 * MIN, title="Dam opens its gates")
    config, registry = load_config(), default_registry()
    events = [compact_change(c) for c in world.changes]
    a, b = _book(config, registry, events), _book(config, registry, events)
    art, arts = 0, np.zeros(1, np.int64)  # the story's first article: daily-herald's, a US publisher

    def card(book, with_lede=False, region="us"):  # a cycle's card with an empty edition cache: shared or new
        return Cards(book, region, CycleCache(), SimpleNamespace(by_section={}), arts).get(art, with_lede)

    first = card(a)
    assert card(b) is first and card(a, True) is not first and "lede" not in first
    assert "local" in first["labels"] and "local" not in card(a, region="gb")["labels"]  # another region's labels
    b.articles.first_seen[art] += 1
    seen = card(b)
    assert seen is not first and seen["first_seen_at"] != first["first_seen_at"]
    b.articles.version[art] += 1
    b.articles.card[art] = dict(b.articles.card[art], title="Dam gates open early")
    edited = card(b)
    assert edited is not seen and edited["title"] == "Dam gates open early"
    assert card(a) is first  # a's article is as it was


def test_a_page_entry_is_shared_by_a_lineage_only_for_the_same_key_row(world, monkeypatch):
    """cycle/run.py ``SHARED_PAGE_ENTRIES``: an edition takes the page entries another edition of its language made
    for the same section names and key row (story id, cards, labels, section, counts: run.page_keys), and makes
    its own where a row differs: here the 'local' label of a US publisher's card, which gb-en does not print. Its
    pages are the ones it makes with nothing shared."""
    from transforms.editions.cycle import run as run_module

    world.story(1, ["daily-herald", "pacific-times", "capital-post"], T - 30 * MIN, title="Dam opens its gates")
    world.story(2, ["mumbai-daily"], T - 20 * MIN, title="Monsoon reaches the coast early")  # the same row in both
    world.story(3, ["london-chronicle", "mumbai-daily"], T - 25 * MIN, title="Harbour strike ends after talks")

    def ranker(edition):
        r = Ranker(world, edition)
        r.config, r.registry, r.params = a.config, a.registry, a.params
        r.book = StoryBook(a.config, a.registry, "en")
        return r

    monkeypatch.setattr(run_module, "SHARED_PAGE_ENTRIES", LineageMemo(kept=8))
    a = Ranker(world, "us-en")
    b = ranker("gb-en")
    out_a, out_b = a.cycle(T), b.cycle(T)
    monkeypatch.setattr(run_module, "SHARED_PAGE_ENTRIES", LineageMemo(kept=8))
    alone = ranker("gb-en").cycle(T)  # nothing shared
    assert out_b.pages == alone.pages
    made_by_a = {id(e) for _, entries in a.cache.page_entries.values() for e in entries.values()}
    b_entries = [e for _, entries in b.cache.page_entries.values() for e in entries.values()]
    assert any(id(e) in made_by_a for e in b_entries)  # taken from a's
    top_a = {e["story_id"]: e for e in out_a.pages["top"]["stories"]}
    top_b = {e["story_id"]: e for e in out_b.pages["top"]["stories"]}
    assert "local" in top_a["1"]["representative"]["labels"]
    assert "local" not in top_b["1"]["representative"]["labels"]  # made by b: its row's label bits differ
    # the same rows under other section names (two swapped: the rows' section index names another section): made
    # again, not taken from the entries made under the names they had
    real = run_module.page_facts

    def swapped(ctx, ranked):
        facts = real(ctx, ranked)
        names = list(facts.section_names)
        k = int(facts.section_code[facts.ids_l.index(2)])
        j = next(j for j, name in enumerate(names) if name != names[k])
        names[k], names[j] = names[j], names[k]
        facts.section_names = tuple(names)
        return facts

    ranker("us-en").cycle(T)
    monkeypatch.setattr(run_module, "page_facts", swapped)
    renamed = ranker("us-en").cycle(T)
    monkeypatch.setattr(run_module, "SHARED_PAGE_ENTRIES", LineageMemo(kept=8))
    assert renamed.pages == ranker("us-en").cycle(T).pages
    assert renamed.pages != out_a.pages


def test_corroboration_figures_are_shared_by_a_lineage_at_a_minute_only(world, monkeypatch):
    """trust.py ``SHARED_SUPPORT``: a story's strong voices and top weight are made once per lineage and minute (the
    other book of the lineage finds them without looking at its pairs), and made again at another minute, when
    the story's pairs no longer count (it left the live window)."""
    import numpy as np
    import pytest

    from transforms.editions.cycle import trust
    from transforms.editions.cycle.scoring import features

    monkeypatch.setattr(trust, "SHARED_SUPPORT", LineageMemo(kept=8))
    world.story(1, ["daily-herald", "pacific-times", "capital-post"], T - 30 * MIN, title="Dam opens its gates")
    world.story(2, ["mumbai-daily"], T - 20 * MIN, title="Monsoon reaches the coast early")
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config)
    events = [compact_change(c) for c in world.changes]
    a, b = _book(config, registry, events), _book(config, registry, events)
    rows = np.sort(np.array([a.stories.row_of[1], a.stories.row_of[2]], np.int64))
    want = trust.support(a, p, features(a, T, p), rows)
    assert sorted(want[0].tolist()) == [1, 3]  # story 1: three strong voices; story 2: one
    got = trust.shared_support(a, p, features(a, T, p), rows, T)
    assert [x.tolist() for x in got] == [x.tolist() for x in want]

    def no_pairs(rows):
        raise AssertionError("looked at its pairs")

    monkeypatch.setattr(b, "pair_rows_of", no_pairs)
    shared = trust.shared_support(b, p, features(b, T, p), rows, T)
    assert [x.tolist() for x in shared] == [x.tolist() for x in want]
    with pytest.raises(AssertionError):  # another minute: made again
        trust.shared_support(b, p, features(b, T + MIN, p), rows, T + MIN)
    later = T + p.live_window_ms + 60 * MIN  # both stories out of the live window: no pair counts
    f = features(a, later, p)
    dead = trust.shared_support(a, p, f, rows, later)
    assert [x.tolist() for x in dead] == [x.tolist() for x in trust.support(a, p, f, rows)] == [[0, 0], [0.0, 0.0]]
