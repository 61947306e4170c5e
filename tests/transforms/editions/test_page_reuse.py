"""A section page rebuilt from the entries kept for its inputs (transforms/editions/cycle/run.py ``page_keys``, the
change-only replay) is the page built from scratch: one minute ranked with a warm cache, then each input a page's
entries are made of changed in turn (the story's article count and newest time, its fact-check label, its
representative's card, a supporting article's first-seen time, its voice count, its developing label and card
section: the last three as the cycle's own phases hand them to the page), with the page slots unchanged;
the next minute's pages must equal those of the same minute with an empty cache. A page whose inputs did not change
reuses the kept entries and the digest found for them (steady.py ``unproposed``)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tests.transforms.editions.test_ownership_groups import owned_registry
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.cycle import run
from transforms.editions.cycle.assembly import Slot
from transforms.editions.cycle.context import CycleCache, CycleContext, EditionMemory
from transforms.editions.cycle.representatives import labels_for
from transforms.editions.cycle.run import run_cycle
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams


class Full:
    """A change-only replay's steady test that always builds the minute (run_cycle's ``ctx.steady``)."""

    def __call__(self, *args) -> bool:
        return False

    def record(self, out) -> None:  # pragma: no cover - only the overlays call it
        pass


def _world(world):
    T, MIN = world.T0, world.MIN
    for k, sid in enumerate((101, 102, 103, 104, 105, 106)):
        world.story(sid, ["daily-herald", "capital-post", "metro-times"][: 1 + k % 3], T - (30 - 3 * k) * MIN)
    return [compact_change(c) for c in world.changes]


def _setup(world):
    config = load_config()
    registry = owned_registry()
    book = StoryBook(config, registry, "en")
    for e in sorted(_world(world), key=event_sort_key):
        book.apply(e)
    return config, book


def _cycle(config, book, memory, cache, now):
    p = RankParams.from_config(config)
    ctx = CycleContext(book, config.edition("us-en"), config, p, memory, now, cache=cache, steady=Full())
    return run_cycle(ctx)


def _content(page: dict) -> list:
    return [{k: v for k, v in e.items() if k != "score"} for e in page["stories"]]


def _slots(page: dict) -> list:
    return [e["story_id"] for e in page["stories"]]


def _row_of(book, page: dict, rank: int = 0) -> int:
    return book.stories.row_of[int(page["stories"][rank]["story_id"])]


def _rep_row(book, page: dict, rank: int = 0) -> int:
    return book.articles.row_of[page["stories"][rank]["representative"]["article_id"]]


def _article_count(book, page):
    book.stories.n_articles[_row_of(book, page)] += 1


def _newest(book, page):
    book.stories.newest_seen[_row_of(book, page)] += 1  # one millisecond: the same order, another updated_at


def _fact_check(book, page):
    book.stories.n_fact_checks[_row_of(book, page)] += 1


def _card(book, page):
    a = _rep_row(book, page)
    book.articles.version[a] += 1  # a new version of the representative with another title
    book.articles.card[a] = dict(book.articles.card[a], title="A corrected headline")


def _supporting_first_seen(book, page):
    for entry in page["stories"]:
        if entry["supporting"]:
            a = book.articles.row_of[entry["supporting"][0]["article_id"]]
            book.articles.first_seen[a] += 1
            return
    raise AssertionError("no supporting article on the page")


BOOK_INPUTS = (_article_count, _newest, _fact_check, _card, _supporting_first_seen)


def _at_next_minute(monkeypatch, module, name, edit):
    """``module.name`` with ``edit(result, ctx-or-args)`` applied to what it returns, from the next cycle on."""
    original = getattr(module, name)

    def patched(*args, **kwargs):
        return edit(original(*args, **kwargs), args)

    monkeypatch.setattr(module, name, patched)


def _publisher_count(book, page, monkeypatch):
    row = _row_of(book, page)

    def edit(ranked, args):
        ranked.f.pub_count = ranked.f.pub_count.copy()
        ranked.f.pub_count[row] += 1  # one more voice, nothing else
        return ranked

    _at_next_minute(monkeypatch, run, "rank", edit)


def _developing(book, page, monkeypatch):
    sid = int(page["stories"][0]["story_id"])

    def edit(gates, args):
        ranked = args[4]
        i = int(np.searchsorted(ranked.cand.rows, book.stories.row_of[sid]))
        gates.developing_l = list(gates.developing_l)
        gates.developing_l[i] = not gates.developing_l[i]
        return gates

    _at_next_minute(monkeypatch, run.trust, "gates", edit)


def _section(book, page, monkeypatch):
    sid = int(page["stories"][0]["story_id"])

    def edit(facts, args):
        i, names = facts.ids_l.index(sid), facts.section_names
        facts.section_code = facts.section_code.copy()
        facts.section_code[i] = names.index("science" if facts.section(i) != "science" else "sports")
        return facts

    _at_next_minute(monkeypatch, run, "page_facts", edit)


def _section_names(book, page, monkeypatch):
    """The first story's section index naming another section (two section names swapped): the key rows are the
    same, the names they index are not."""
    sid = int(page["stories"][0]["story_id"])

    def edit(facts, args):
        k = int(facts.section_code[facts.ids_l.index(sid)])
        names = list(facts.section_names)
        j = next(j for j, name in enumerate(names) if name != names[k])
        names[k], names[j] = names[j], names[k]
        facts.section_names = tuple(names)
        return facts

    _at_next_minute(monkeypatch, run, "page_facts", edit)


def _first_slot(edit_entry):
    """From the next cycle on, the top page's first slot as ``edit_entry`` rewrites it (choose_page_slots')."""

    def edit(page_slots, args):
        chosen = page_slots.by_section["top"]
        chosen[0] = edit_entry(*chosen[0])
        return page_slots

    return edit


def _pinned(book, page, monkeypatch):
    def entry(slot, i, rep, sup, score):
        return Slot(slot.story_id, not slot.pinned, slot.alt_rep), i, rep, sup, score

    _at_next_minute(monkeypatch, run, "choose_page_slots", _first_slot(entry))


def _twin(book, article: int) -> int:
    """Another story's article given the card inputs of ``article`` (first seen, version, labels: what
    ``Cards._check`` holds), so only its row tells it apart."""
    story = book.articles.story[article]
    want = labels_for(book, np.array([article]), "us")[0]
    for twin in np.flatnonzero(book.articles.story[: book.articles.size] != story).tolist():
        seen, version = book.articles.first_seen[twin], book.articles.version[twin]
        book.articles.first_seen[twin] = book.articles.first_seen[article]
        book.articles.version[twin] = book.articles.version[article]
        if labels_for(book, np.array([twin]), "us")[0] == want:
            return twin
        book.articles.first_seen[twin], book.articles.version[twin] = seen, version
    raise AssertionError("no twin")


def _swap(story_id: str, edit_entry):
    """From the next cycle on, the top page's slot of ``story_id`` as ``edit_entry`` rewrites it."""

    def edit(page_slots, args):
        chosen = page_slots.by_section["top"]
        k = next(k for k, (slot, *_) in enumerate(chosen) if str(slot.story_id) == story_id)
        chosen[k] = edit_entry(*chosen[k])
        return page_slots

    return edit


def _supporting_article(book, page, monkeypatch):
    """Another article with the card inputs of the supporting article it replaces."""
    entry0 = next(e for e in page["stories"] if e["supporting"])
    twin = _twin(book, book.articles.row_of[entry0["supporting"][0]["article_id"]])

    def entry(slot, i, rep, sup, score):
        return slot, i, rep, (twin, *sup[1:]), score

    _at_next_minute(monkeypatch, run, "choose_page_slots", _swap(entry0["story_id"], entry))


def _representative(book, page, monkeypatch):
    """Another article with the card inputs of the representative it replaces (one that is not a story's first
    report: a twin of another story would not be one)."""
    entry0 = next(e for e in page["stories"] if "first_report" not in e["representative"]["labels"])
    twin = _twin(book, book.articles.row_of[entry0["representative"]["article_id"]])

    def entry(slot, i, rep, sup, score):
        return slot, i, twin, sup, score

    _at_next_minute(monkeypatch, run, "choose_page_slots", _swap(entry0["story_id"], entry))


def _story(book, page, monkeypatch):
    """Another live story of the same card section, not on the page, in the first slot with the first story's
    articles and counts: only the story id tells the pages apart."""
    first = page["stories"][0]
    shown = {e["story_id"] for e in page["stories"]}
    other = next(s for s in (101, 102, 103, 104, 105, 106) if str(s) not in shown)

    def entry(slot, i, rep, sup, score):
        return Slot(other, slot.pinned, slot.alt_rep), i, rep, sup, score

    _at_next_minute(monkeypatch, run, "choose_page_slots", _swap(first["story_id"], entry))


INPUTS = [
    _article_count,
    _newest,
    _fact_check,
    _card,
    _supporting_first_seen,
    _publisher_count,
    _developing,
    _section,
    _section_names,
    _pinned,
    _supporting_article,
    _representative,
    _story,
]


@pytest.mark.parametrize("change", INPUTS, ids=[f.__name__.strip("_") for f in INPUTS])
def test_a_page_whose_input_changed_is_built_again(world, change, monkeypatch):
    config, book = _setup(world)
    now = world.T0 + world.MIN
    memory, cache = EditionMemory(), CycleCache()
    before = _cycle(config, book, memory, cache, now)
    top = before.pages["top"]
    assert len(top["stories"]) >= 3 and before.page_digests["top"][1] is cache.pages["top"]
    if change in BOOK_INPUTS:
        change(book, top)
    else:
        change(book, top, monkeypatch)  # before the copy: a book column it sets is in both
    cold_book, cold_memory = copy.deepcopy(book), copy.deepcopy(memory)
    warm = _cycle(config, book, memory, cache, now + world.MIN)
    cold = _cycle(config, cold_book, cold_memory, CycleCache(), now + world.MIN)
    if change is not _story:  # the same slots: only the changed input tells them apart
        assert _slots(cold.pages["top"]) == _slots(top)
    assert _content(cold.pages["top"]) != _content(top)  # ... and it shows on the page
    assert {s: _content(p) for s, p in warm.pages.items()} == {s: _content(p) for s, p in cold.pages.items()}
    assert warm.pages == cold.pages


def test_a_page_whose_inputs_did_not_change_reuses_its_entries_and_digest(world):
    config, book = _setup(world)
    now = world.T0 + world.MIN
    memory, cache = EditionMemory(), CycleCache()
    before = _cycle(config, book, memory, cache, now)
    kept = before.page_digests["top"][1]
    kept.digest = "digest of the kept entries"  # what steady.unproposed leaves there once it digested a page
    cold_book, cold_memory = copy.deepcopy(book), copy.deepcopy(memory)
    warm = _cycle(config, book, memory, cache, now + world.MIN)
    cold = _cycle(config, cold_book, cold_memory, CycleCache(), now + world.MIN)
    assert warm.page_digests["top"][1] is kept and warm.page_digests["top"][0] is warm.pages["top"]
    assert cold.page_digests["top"][1].digest is None  # an empty cache: built and digested anew
    assert warm.pages == cold.pages


def test_no_page_is_reused_outside_the_change_only_replay(world):
    config, book = _setup(world)
    p = RankParams.from_config(config)
    ctx = CycleContext(book, config.edition("us-en"), config, p, EditionMemory(), world.T0 + world.MIN)
    out = run_cycle(ctx)
    assert out.page_digests == {} and ctx.cache.pages == {}


def _pool(minute: int, entries: list, **top) -> dict:
    stories = [dict(e, score=1.0 / (minute + k + 1)) for k, e in enumerate(entries)]  # copies, new scores
    doc = {"schema": "p", "edition": "us-en", "version": minute, "cycle": str(minute), "stories": stories, **top}
    return {"kind": "candidate_pool", "pointer": "pool/us-en", "doc": doc, "min_stories": 1}


def test_a_pool_holding_the_last_ones_values_is_not_digested_again(monkeypatch):
    """steady.unproposed: a pool whose entries hold the very values the last pool with the proposed digest held
    (copies of the ranker's cached entries) has that digest without being digested; a value that is not the same
    object (but an equal string or integer) is digested, and a changed one proposed."""
    from transforms.editions.ranker import steady

    digested = []
    monkeypatch.setattr(steady, "digest_and_bytes", lambda doc: digested.append(doc) or steady_digest(doc))
    card = {"article_id": "a1", "title": "T", "url": "u", "image_url": None}
    cached = [{"story_id": "12", "topics": ("world",), "representative": card, "vector": (0.5, -0.5), "rank": 7}]
    watch, memory = steady.SteadyWatch(), type("M", (), {"page_max": {}})()

    def left(item):
        return watch.unproposed([item], memory, ())

    assert left(_pool(1, cached)) and len(digested) == 1
    assert left(_pool(2, cached)) == [] and len(digested) == 1  # the same values: not digested
    assert left(_pool(3, [dict(cached[0], story_id="".join(["1", "2"]))])) == [] and len(digested) == 1  # equal str
    assert left(_pool(4, [dict(cached[0], topics=("world",) + ())])) == [] and len(digested) == 1  # the same tuple
    assert left(_pool(5, [dict(cached[0], topics=tuple(t for t in ["world"]))])) == [] and len(digested) == 2
    assert left(_pool(6, [dict(cached[0], rank=True)])) != [] and len(digested) == 3  # true is not 1
    assert left(_pool(7, [dict(cached[0], representative=dict(card, title="U"))])) != [] and len(digested) == 4
    assert cached[0]["story_id"] is not "".join(["1", "2"])  # noqa: F632 (an equal string, another object)
    held = [{"story_id": "12"}]
    assert left(_pool(8, cached, held=held)) != [] and len(digested) == 5
    assert left(_pool(9, cached, held=held)) == [] and len(digested) == 6  # a list is digested every time


def steady_digest(doc):
    from transforms.editions.vocabulary.documents import digest_and_bytes

    return digest_and_bytes(doc)


def test_same_content_needs_the_same_keys_and_values():
    from transforms.editions.ranker.steady import same_content

    card, entry = {"a": 1}, {"story_id": "1", "score": 0.5, "representative": None}
    doc = {"edition": "e", "version": 1, "stories": [dict(entry, representative=card)]}
    assert same_content(doc, dict(doc, version=2, stories=[dict(doc["stories"][0], score=0.25)]))
    assert not same_content(doc, dict(doc, stories=[dict(doc["stories"][0], representative={"a": 1})]))
    assert not same_content(doc, dict(doc, stories=[dict(doc["stories"][0], extra=1)]))
    assert not same_content(doc, dict(doc, edition="f"))
    assert not same_content(doc, dict(doc, stories=doc["stories"] * 2))
    assert not same_content(doc, {k: v for k, v in doc.items() if k != "edition"})


def test_an_empty_section_is_the_empty_page_and_keeps_its_digest_and_gram(world):
    """Most sections of a small book have no story to place: choose_page_slots and page_documents skip their
    arrays. The page is still there in section order, empty, its digest kept while its key (section names) is the
    same, its hysteresis memory empty and its Gram (cosines of a page that had stories) left for a later cycle."""
    from transforms.editions.cycle.assembly import Gram

    config, book = _setup(world)
    now = world.T0 + world.MIN
    memory, cache = EditionMemory(), CycleCache()
    before = _cycle(config, book, memory, cache, now)
    empty = [s for s, page in before.pages.items() if not page["stories"]]
    assert empty and len(empty) < len(before.pages)
    for s in empty:
        before.page_digests[s][1].digest = f"digest of {s}"
    gram = cache.gram[empty[0]] = Gram()
    memory.prev_pages[empty[0]] = [101]  # a story the section no longer has: forgotten
    cold_book, cold_memory = copy.deepcopy(book), copy.deepcopy(memory)
    warm = _cycle(config, book, memory, cache, now + world.MIN)
    cold = _cycle(config, cold_book, cold_memory, CycleCache(), now + world.MIN)
    warm_names = (*book.section_ids, "nation", "world")  # run.PageFacts.section_names
    assert warm.pages == cold.pages and list(warm.pages) == list(config.edition("us-en").sections)
    for s in empty:
        assert warm.pages[s]["stories"] == [] and memory.prev_pages[s] == []
        assert warm.page_digests[s][1] is before.page_digests[s][1] and warm.page_digests[s][0] is warm.pages[s]
        assert cold.page_digests[s][1].digest is None and cold.page_digests[s][1].key == warm.page_digests[s][1].key
        assert cache.page_entries[s] == (warm_names, {})  # no entry kept
    assert cache.gram[empty[0]] is gram
