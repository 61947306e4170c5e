"""StoryBook: story changes fold into the same aggregates in any order; MERGE, SPLIT, EXPIRE, LINK, replays."""

from __future__ import annotations

import numpy as np
import pytest

from tests.transforms.editions.loop_reference import LoopMemory, run_cycle_loop
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key, headline_quality
from transforms.editions.cycle.context import CycleCache, CycleContext
from transforms.editions.cycle.run import EditionMemory, run_cycle
from transforms.editions.cycle.scoring import features
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams
from transforms.publishers import default_registry


def fold(changes, order=None, pulses=()):
    book = StoryBook(load_config(), default_registry(), "en")
    events = [compact_change(c) for c in changes] + list(pulses)
    if order is None:
        events.sort(key=event_sort_key)
    else:
        events = [events[i] for i in order]
    for e in events:
        book.apply(e)
    book.flush()
    return book


def summary(book, now):
    """What ranking can see of a book: per live story, its aggregates and members."""
    p = RankParams.from_config(load_config())
    f = features(book, now, p)
    out = {}
    for sid, row in book.stories.row_of.items():
        if not f.live[row]:
            continue
        out[sid] = (
            round(float(f.coverage[row]), 9),
            int(book.stories.n_articles[row]),
            int(book.stories.n_originals[row]),
            int(book.stories.first_seen[row]),
            int(book.stories.newest_seen[row]),
            tuple(book.stories.section_counts[row].tolist()),
            frozenset(book.articles.id[a] for a in book.stories.members[row]),
            tuple(np.round(book.stories.centroid[row], 6).tolist()) if book.dim else (),
            int(book.stories.version[row]),
            int(book.stories.breaking_start[row]),
            frozenset(book.stories.links[row]),
        )
    return out


def test_merge_moves_members_to_the_survivor(world):
    T, MIN = world.T0, world.MIN
    a = world.story(1, ["daily-herald", "capital-post"], T - 30 * MIN)
    b = world.story(2, ["pacific-times", "london-chronicle"], T - 20 * MIN)
    world.merge(1, 2, T - 10 * MIN)
    world.add(2, world.article("mumbai-daily", T - 5 * MIN))  # a late writer decision still naming the alias
    book = fold(world.changes)
    s = summary(book, T)
    assert set(s) == {1}
    members = s[1][6]
    assert members == {c["article_id"] for c in a + b} | {world.changes[-1]["article_id"]}
    assert s[1][1] == 5 and book.resolve(2) == 1


def test_merge_chains_resolve_in_one_hop(world):
    T, MIN = world.T0, world.MIN
    for sid in (1, 2, 3):
        world.story(sid, ["daily-herald"], T - 30 * MIN + sid * MIN)
    world.merge(2, 3, T - 10 * MIN)
    world.merge(1, 2, T - 5 * MIN)
    book = fold(world.changes)
    assert book.resolve(3) == 1 and book.resolve(2) == 1
    assert set(summary(book, T)) == {1}


def test_split_moves_the_listed_members_to_the_new_story(world):
    T, MIN = world.T0, world.MIN
    arts = world.story(1, ["daily-herald", "capital-post", "pacific-times", "london-chronicle"], T - 30 * MIN)
    moved = [arts[2]["article_id"], arts[3]["article_id"]]
    world.split(1, 9, moved, T - 10 * MIN)
    s = summary(fold(world.changes), T)
    assert s[1][6] == {arts[0]["article_id"], arts[1]["article_id"]}
    assert s[9][6] == set(moved)
    assert s[9][2] == 2 and s[1][2] == 2


def test_a_split_into_an_existing_story_keeps_that_storys_own_centroid(world):
    """The re-clustering repair moves articles into a live story with a SPLIT naming it: only a new story starts
    from the kept story's centroid; an existing one keeps its own."""
    import numpy as np

    T, MIN = world.T0, world.MIN
    arts = world.story(1, ["daily-herald", "capital-post", "pacific-times"], T - 30 * MIN)
    world.story(2, ["london-chronicle"], T - 25 * MIN)
    world.split(1, 2, [arts[2]["article_id"]], T - 10 * MIN)
    book = fold(world.changes)
    s = summary(book, T)
    assert arts[2]["article_id"] in s[2][6] and arts[2]["article_id"] not in s[1][6]
    row = book.stories.row_of[2]
    assert np.allclose(book.stories.centroid[row], world.centroids[2], atol=1e-6)


def test_expire_hides_a_story_until_a_later_placement(world):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald"], T - 30 * MIN)
    world.expire(1, T - 20 * MIN)
    assert 1 not in summary(fold(world.changes), T)
    world.add(1, world.article("capital-post", T - 10 * MIN))
    assert 1 in summary(fold(world.changes), T)


def test_link_is_kept_and_bumps_the_coverage_version(world):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald"], T - 30 * MIN)
    before = summary(fold(world.changes), T)[1][8]
    world.link(1, 77, T - 5 * MIN)
    after = summary(fold(world.changes), T)[1]
    assert after[10] == {77} and after[8] > before


def test_replayed_changes_are_no_ops(world):
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "capital-post"], T - 30 * MIN)
    once = summary(fold(world.changes), T)
    twice = summary(fold(world.changes + world.changes), T)
    assert once == twice


def test_an_article_update_keeps_its_first_seen_time_and_replaces_its_card(world):
    T, MIN = world.T0, world.MIN
    (ch,) = world.story(1, ["daily-herald"], T - 30 * MIN, title="Old headline of the story in question")
    upd = dict(ch["article"], version=2, title="Corrected headline of the story in question", first_seen_at=T - MIN)
    world.add(1, upd)
    book = fold(world.changes)
    a = book.articles.row_of[upd["article_id"]]
    assert book.articles.card[a]["title"].startswith("Corrected") and book.articles.first_seen[a] == T - 30 * MIN
    assert book.stories.n_articles[book.stories.row_of[1]] == 1


def test_fold_is_order_independent(world):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    world.randomise(seed=5, stories=40, start=T - 3 * HOUR, end=T - 30 * MIN)
    sids = sorted(world.centroids)
    world.merge(sids[0], sids[1], T - 20 * MIN)
    world.merge(sids[2], sids[0], T - 15 * MIN)
    victim = [c for c in world.changes if c["story_id"] == sids[5] and c["article"]]
    if len(victim) > 1:
        world.split(sids[5], 99, [victim[-1]["article_id"]], T - 12 * MIN)
    world.expire(sids[7], T - 10 * MIN)
    world.link(sids[8], 12345, T - 9 * MIN)
    pulses = [
        {
            "type": "pulse",
            "id": f"pulse|breaking|{sids[1]}|{T - 25 * MIN}",
            "kind": "breaking",
            "story_id": sids[1],
            "language": "en",
            "window_end": T - 25 * MIN,
            "at": T - 25 * MIN - 1,
        }
    ]
    reference = summary(fold(world.changes, pulses=pulses), T)
    assert len(reference) >= 30
    rng = np.random.default_rng(1)
    n = len(world.changes) + len(pulses)
    for _ in range(5):
        shuffled = summary(fold(world.changes, order=rng.permutation(n).tolist(), pulses=pulses), T)
        assert shuffled.keys() == reference.keys()
        for sid in reference:
            assert shuffled[sid][1:] == reference[sid][1:], sid  # members, counts, times, centroid, version...
            assert shuffled[sid][0] == pytest.approx(reference[sid][0])  # float sums may differ in the last bit
    assert reference[sids[2]][9] == T - 25 * MIN  # the breaking pulse followed the merges to the survivor


@pytest.mark.parametrize("seed", [2, 8])
def test_vectorised_cycle_equals_the_per_story_loop(world, seed):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    world.randomise(seed=seed, stories=150, start=T - 6 * HOUR, end=T + 20 * MIN, near_duplicates=10)
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config)
    books = {m: StoryBook(config, registry, "en") for m in ("vector", "loop")}
    mems = {"vector": EditionMemory(), "loop": LoopMemory()}
    caches = {(m, e): CycleCache() for m in books for e in ("us-en", "gb-en")}
    events = sorted((compact_change(c) for c in world.changes), key=event_sort_key)
    for edition in ("us-en", "gb-en"):
        ed = config.edition(edition)
        for m in range(0, 25, 4):
            now = T + m * MIN
            outs = {}
            for mode, book in books.items():
                for e in events:
                    if e["at"] < now:
                        book.apply(e)
                cycle = run_cycle_loop if mode == "loop" else run_cycle
                outs[mode] = cycle(CycleContext(book, ed, config, p, mems[mode], now, cache=caches[mode, edition]))
            for sec in ed.sections:
                v, lp = outs["vector"].pages[sec]["stories"], outs["loop"].pages[sec]["stories"]
                assert [s["story_id"] for s in v] == [s["story_id"] for s in lp], (edition, m, sec)
                assert [s["representative"]["article_id"] for s in v] == [s["representative"]["article_id"] for s in lp]
                assert [s["score"] for s in v] == pytest.approx([s["score"] for s in lp], rel=1e-9)
            assert [s["story_id"] for s in outs["vector"].pool["stories"]] == [
                s["story_id"] for s in outs["loop"].pool["stories"]
            ]


def test_headline_quality_prefers_plain_informative_headlines():
    good = headline_quality("Parliament approves the new budget after a long night of votes")
    assert good == 1.0
    assert headline_quality("YOU WON'T BELIEVE WHAT PARLIAMENT JUST DID!!!") < 0.5
    assert headline_quality("Budget?") < good
    assert headline_quality("") == 0.0


def test_pool_stories_carry_their_main_entity_ids(world, make_ranker):
    """Pool entries list the story's entity ids (alias-table ids: one id whatever the script of the name) by how many
    of its articles mention them (ties: by id), at most ENTITIES_PER_STORY; a new article updates the cached entry."""
    T, MIN = world.T0, world.MIN

    def article(pub, at, *entities):
        art = world.article(pub, at, title="ISRO launches a lunar probe from the Sriharikota spaceport in the morning")
        art["entities"] = [{"id": i, "name": n, "kind": k} for i, n, k in entities]
        return art

    isro, isro_hi = ("org:isro", "ISRO", "ORG"), ("org:isro", "इसरो", "ORG")
    pune = ("place:pune", "Pune", "PLACE")
    world.add(1, article("daily-herald", T - 30 * MIN, isro, pune, ("person:a", "A", "PERSON"), ("b", "B", "OTHER")))
    world.add(1, article("capital-post", T - 25 * MIN, isro_hi, pune, isro, ("person:c", "C", "PERSON")))
    world.add(1, article("pacific-times", T - 20 * MIN, isro, ("d", "D", "OTHER"), ("e", "", "OTHER")))
    r = make_ranker(world)
    out = r.cycle(T)
    entry = {s["story_id"]: s for s in out.pool["stories"]}["1"]
    assert list(entry["entities"]) == ["org:isro", "place:pune", "b", "d", "e"]
    world.add(1, article("metro-daily", T + MIN, ("person:c", "C.", "PERSON"), isro))
    entry = {s["story_id"]: s for s in r.cycle(T + 5 * MIN).pool["stories"]}["1"]
    assert list(entry["entities"]) == ["org:isro", "person:c", "place:pune", "b", "d"]  # ties: by id


def test_a_centroid_as_float32_bytes_folds_as_the_list_did(world):
    """compact_change carries a change's centroid as the float32 bytes the book stores (storybook.centroid_bytes:
    one object for Beam's state cache to weigh instead of ~385); the book holds the same centroids as when the
    event carried the list of floats, through placements, a split and a merge."""
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "capital-post"], T)
    world.story(2, ["metro-times"], T + MIN)
    world.split(1, 3, [world.changes[1]["article_id"]], T + 2 * MIN)
    world.merge(1, 2, T + 3 * MIN)
    events = sorted((compact_change(c) for c in world.changes), key=event_sort_key)
    assert all(isinstance(e["centroid"], bytes) for e in events)
    changes = world.sorted_changes()  # the order of event_sort_key: (at, seq)
    as_lists = [dict(e, centroid=[float(x) for x in c["centroid"]]) for e, c in zip(events, changes, strict=True)]
    books = []
    for evs in (events, as_lists):
        book = StoryBook(load_config(), default_registry(), "en")
        for e in evs:
            book.apply(e)
        books.append(book)
    a, b = books
    n = a.stories.size
    assert n == b.stories.size >= 3 and a.dim == b.dim
    assert np.array_equal(a.stories.centroid[:n], b.stories.centroid[:n]) and a.stories.centroid[:n].any()
    assert np.array_equal(a.stories.centroid_seq[:n], b.stories.centroid_seq[:n])


def test_table_rows_start_at_fill_and_a_column_set_around_add_is_refused():
    """Table.add writes only the values given (d5ee912): a new row's other columns are at their fill because the
    columns grow together, filled ahead. A column replaced by hand (a harness filling a book directly) would break
    that silently (a story row 0 where -1 means none), so growing past it raises a clear error instead."""
    from transforms.editions.book.tables import ArticleTable

    t = ArticleTable(title_dim=4)
    for i in range(70):  # past the first capacity (64): the second growth copies and fills
        t.add(i, first_seen=i)
    assert t.story[: t.size].tolist() == [-1] * 70 and t.section[: t.size].tolist() == [-1] * 70
    assert t.first_seen[: t.size].tolist() == list(range(70))
    assert t.capacity >= 70 and all(getattr(t, c).shape[0] == t.capacity for c in ArticleTable.COLUMNS)
    t.story = np.zeros(t.capacity + 5, np.int32)  # set around add(), longer than the table holds
    while t.size < t.capacity:
        t.add()
    with pytest.raises(ValueError, match="ArticleTable.story holds"):
        t.add()
