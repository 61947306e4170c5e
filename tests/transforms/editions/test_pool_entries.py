"""Pool entries kept across an edition's cycles (transforms/editions/cycle/context.py ``KeptEntries``, keyed by
run.py ``pool_keys``): an entry is reused only while every input it is made of is the same, so a warm cache gives
the pool a fresh one gives, minute after minute, including when a label changes with no new article (the
developing label ending an hour after the change, a Breaking pin ending)."""

from __future__ import annotations

import copy
import pickle
from types import SimpleNamespace

import numpy as np

from tests.transforms.editions.test_kept_features import busy_world
from tests.transforms.editions.test_ownership_groups import owned_registry
from transforms.editions.book.storybook import StoryBook, compact_change, event_sort_key
from transforms.editions.cycle import trust
from transforms.editions.cycle.assembly import DiversityRules, Gram, StoryTraits, assemble
from transforms.editions.cycle.context import CycleCache, CycleContext, EditionMemory, KeptEntries
from transforms.editions.cycle.run import POOL_STORY_KEYS, PageFacts, pool_positions, run_cycle
from transforms.editions.cycle.trust import KeptFacts
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams


def test_a_kept_entry_is_found_only_while_its_id_names_and_every_key_are_equal():
    ids = np.array([7, 3, 5], np.int64)
    keys = np.arange(24, dtype=np.int64).reshape(3, 8)
    entries = [{"story_id": "7"}, {"story_id": "3"}, {"story_id": "5"}]
    kept = KeptEntries(ids, keys, entries, ("world", "nation"))
    assert kept.find(ids, keys, ("world", "nation")) == entries
    assert kept.find(np.array([5, 9], np.int64), keys[[2, 0]], ("world", "nation")) == [entries[2], None]
    for col in range(8):  # any one input changed: that entry is rebuilt, the others are reused
        changed = keys.copy()
        changed[1, col] += 1
        assert kept.find(ids, changed, ("world", "nation")) == [entries[0], None, entries[2]], col
    assert kept.find(ids, keys, ("world", "local")) == [None] * 3  # another section table
    assert KeptEntries().find(ids, keys, ()) == [None] * 3


def test_a_pool_entry_s_story_fields_are_kept_only_while_its_version_and_centroid_are_the_same():
    """run.py ``_fresh_pool_entries``: an entry rebuilt for its card, labels or section (the hourly rotation of
    representatives) takes its topics, publishers, places, entities and vector from last cycle's entry of the story
    only while the story's coverage version and centroid sequence (pool_keys' first POOL_STORY_KEYS columns) are
    equal; the section table is not among them."""
    ids = np.array([7, 3, 5], np.int64)
    keys = np.arange(24, dtype=np.int64).reshape(3, 8)
    entries = [{"story_id": "7"}, {"story_id": "3"}, {"story_id": "5"}]
    kept = KeptEntries(ids, keys, entries, ("world", "nation"))
    assert POOL_STORY_KEYS == 2
    for col in range(8):
        changed = keys.copy()
        changed[1, col] += 1
        want = [entries[0], None if col < POOL_STORY_KEYS else entries[1], entries[2]]
        assert kept.find_prefix(ids, changed, POOL_STORY_KEYS) == want, col
    assert kept.find_prefix(np.array([9, 5], np.int64), keys[[0, 2]], POOL_STORY_KEYS) == [None, entries[2]]
    assert KeptEntries().find_prefix(ids, keys, POOL_STORY_KEYS) == [None] * 3


def test_pool_keys_first_columns_are_the_story_s_version_and_centroid(world, make_ranker):
    """What POOL_STORY_KEYS stands for: the coverage version and the centroid sequence, read off the book."""
    T, MIN = world.T0, world.MIN
    world.story(1, ["daily-herald", "pacific-times", "capital-post"], T - 30 * MIN)
    world.story(2, ["london-chronicle", "mumbai-daily"], T - 40 * MIN)
    r = make_ranker(world)
    r.cycle(T)
    book, kept = r.book, r.cache.pool
    rows = np.array([int(np.flatnonzero(book.stories.id[: book.stories.size] == sid)[0]) for sid in kept.ids])
    assert kept.keys[:, 0].tolist() == book.stories.version[rows].tolist()
    seq = np.ascontiguousarray(book.stories.centroid_seq[rows], np.float64).view(np.int64)
    assert kept.keys[:, 1].tolist() == seq.tolist()


def test_pool_positions_are_kept_on_the_page_facts_for_the_same_ranking_and_params_only():
    """run.py ``pool_positions``: the steady test and the pool document ask one after the other, and get one
    answer; another ranking (other scores) or other params on the same facts are ranked anew."""
    facts = PageFacts([], [10, 11, 12], [], {}, {}, np.zeros(3, np.int64), {}, {}, None, [])

    def ranked(smoothed):
        cand = SimpleNamespace(rows=np.arange(3), pool=np.arange(3))
        return SimpleNamespace(cand=cand, reps=SimpleNamespace(rep=np.array([5, 6, 7])), smoothed=np.array(smoothed))

    p, other_p = object(), object()
    a, b = ranked([1.0, 2.0, 3.0]), ranked([3.0, 2.0, 1.0])
    first = pool_positions(a, facts, p)
    assert first.tolist() == [2, 1, 0] and pool_positions(a, facts, p) is first
    kept = pool_positions(b, facts, p)
    assert kept.tolist() == [0, 1, 2]
    again = pool_positions(b, facts, other_p)
    assert again.tolist() == [0, 1, 2] and again is not kept


def test_a_label_that_ends_without_a_new_article_rebuilds_the_entry(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    first = world.article("daily-herald", T - 30 * MIN, title="Storm kills 5 in Florida overnight, officials say")
    world.add(1, first)
    world.add(1, world.article("capital-post", T - 29 * MIN, title="Storm kills 5 in Florida overnight, officials say"))
    world.story(2, ["pacific-times", "london-chronicle", "wirepress"], T - 40 * MIN)
    upd = dict(first, version=2, title="Storm kills 7 in Florida overnight, officials say")
    world.add(1, upd)
    world.changes[-1]["at"] = T + 5 * MIN - 1000
    warm, cold = make_ranker(world), make_ranker(world)
    for r in (warm, cold):
        r.breaking(2, T + 3 * MIN)  # pinned for 2 h, then not, with no new article
    labels = []
    minutes = [T + m * MIN for m in (0, 5, 6, 64, 66)] + [T + 2 * HOUR + 30 * MIN, T + 2 * HOUR + 31 * MIN]
    for now in minutes:
        cold.cache = CycleCache()
        a, b = warm.cycle(now), cold.cycle(now)
        assert a.pool == b.pool and a.pages == b.pages, now
        labels.append({s["story_id"]: s["labels"] for s in a.pool["stories"]})
    assert [x["1"] for x in labels] == [(), ("developing",), ("developing",), ("developing",), (), (), ()]
    assert [x["2"] for x in labels] == [(), ("breaking",), ("breaking",), ("breaking",), ("breaking",), (), ()]
    assert warm.cache.pool.ids.size == 2


def test_a_warm_cache_gives_the_pool_of_an_empty_one_every_minute(world, monkeypatch):
    """Through merges, splits, expiries, links, headline edits and the hourly rotation; most entries reused."""
    T, MIN = world.T0, world.MIN
    busy_world(world)
    for k, c in enumerate([c for c in world.changes if c.get("article")][:40:4]):  # headline edits, new versions
        world.add(c["story_id"], dict(c["article"], version=2, title=c["article"]["title"] + f" (update {k})"))
        world.changes[-1]["at"] = T + (5 + k) * MIN
    events = sorted((compact_change(c) for c in world.changes), key=event_sort_key)
    config = load_config()
    p, edition = RankParams.from_config(config), config.edition("us-en")
    found = {"reused": 0, "asked": 0}
    real_find = KeptEntries.find

    def counted(self, ids, keys, names):
        got = real_find(self, ids, keys, names)
        found["asked"] += len(got)
        found["reused"] += sum(e is not None for e in got)
        return got

    monkeypatch.setattr(KeptEntries, "find", counted)
    books = {m: StoryBook(config, owned_registry(), "en") for m in ("warm", "cold")}
    memories = {m: EditionMemory() for m in books}
    warm_cache, done, compared = CycleCache(), 0, 0
    for now in range(T - 10 * MIN, T + 70 * MIN, 8 * MIN):
        while done < len(events) and events[done]["at"] < now:
            for book in books.values():
                book.apply(events[done])
            done += 1
        found_before = dict(found)
        cold = run_cycle(CycleContext(books["cold"], edition, config, p, memories["cold"], now, CycleCache()))
        found.update(found_before)  # count the warm cache's lookups only
        warm = run_cycle(CycleContext(books["warm"], edition, config, p, memories["warm"], now, warm_cache))
        assert warm.pool == cold.pool and warm.pages == cold.pages, now
        compared += 1
    assert compared == 10 and 0.5 * found["asked"] < found["reused"] < found["asked"]


def test_an_edited_supporting_link_rebuilds_its_page_entry(world, make_ranker):
    """A headline edit of a supporting article (a new version, nothing else of the story changes on the page)
    shows the new headline at once: the page entry is keyed by every card it shows."""
    T, MIN = world.T0, world.MIN
    arts = world.story(1, ["daily-herald", "pacific-times", "capital-post", "wirepress"], T - 30 * MIN)
    world.story(2, ["london-chronicle", "mumbai-daily"], T - 40 * MIN)
    warm, cold = make_ranker(world), make_ranker(world)
    first = warm.cycle(T)
    entry = next(e for e in first.pages["top"]["stories"] if e["story_id"] == "1")
    link = entry["supporting"][0]
    art = next(c["article"] for c in arts if c["article_id"] == link["article_id"])
    world.add(1, dict(art, version=2, title="A corrected headline of the story"))
    world.changes[-1]["at"] = T + MIN // 2
    cold.cycle(T)
    cold.cache = CycleCache()
    a, b = warm.cycle(T + MIN), cold.cycle(T + MIN)
    assert a.pages == b.pages and a.pool == b.pool
    entry = next(e for e in a.pages["top"]["stories"] if e["story_id"] == "1")
    assert "A corrected headline of the story" in [c["title"] for c in (entry["representative"], *entry["supporting"])]


def test_a_page_s_cosines_are_kept_only_for_the_same_stories_at_the_same_centroids():
    """assembly.Gram: the near-duplicate test's cosines are reused for the same set of stories in any order, and
    made again when a story's centroid sequence moves (here its new centroid makes it a near-duplicate)."""
    rng = np.random.default_rng(4)
    vecs = rng.standard_normal((6, 16))
    vecs /= np.linalg.norm(vecs, axis=1)[:, None]
    ids = [11, 12, 13, 14, 15, 16]
    index, seq = {sid: k for k, sid in enumerate(ids)}, dict.fromkeys(ids, 1.0)
    rules = DiversityRules(top_n=3, page_size=6)

    def page(order, matrix, gram):
        traits = StoryTraits({}, {}, index, matrix, dict(seq))
        return [s.story_id for s in assemble(order, [], traits, rules, None, gram)]

    gram = Gram()
    assert page(ids, vecs, gram) == ids
    kept = gram.sims
    assert page(ids[::-1], vecs, gram) == ids[::-1] and gram.sims is kept  # the same stories: reused
    moved = vecs.copy()
    moved[5] = 0.95 * vecs[0] + np.sqrt(1 - 0.95**2) * vecs[1]
    moved[5] /= np.linalg.norm(moved[5])
    seq[16] = 2.0  # story 16's new centroid, a near-duplicate of story 11
    assert page(ids, moved, gram) == page(ids, moved, None) == ids[:5]
    assert gram.sims is not kept
    assert page([11, 12, 13], moved, gram) == [11, 12, 13] and gram.key == ((11, 12, 13), (1.0, 1.0, 1.0))


def test_a_page_s_near_pairs_are_kept_with_its_cosines_for_one_cosine_limit_and_mean_what_the_cosines_do():
    """assembly.Gram ``near``: the pairs over the cosine limit, found once per matrix, are reused for the same
    stories at the same centroids and the same limit, made again under another limit or new cosines; a story is
    left out exactly when a placed story's cosine with it is over the limit, as the running maximum found it, and
    a matrix holding NaN keeps the running maximum (a NaN cosine hides the later ones)."""
    rng = np.random.default_rng(9)
    base = rng.standard_normal((3, 16))
    vecs = base[[0, 0, 1, 1, 2, 0]] + 0.3 * rng.standard_normal((6, 16))
    vecs /= np.linalg.norm(vecs, axis=1)[:, None]
    ids = [11, 12, 13, 14, 15, 16]
    index, seq = {sid: k for k, sid in enumerate(ids)}, dict.fromkeys(ids, 1.0)

    def page(matrix, gram, limit):
        traits = StoryTraits({}, {}, index, matrix, dict(seq))
        rules = DiversityRules(top_n=3, page_size=6, max_cosine=limit)
        return [s.story_id for s in assemble(ids, [], traits, rules, None, gram)]

    def running_max(matrix, limit):  # the rule as first written: each story's highest cosine with a placed one
        sims, closest, placed = matrix @ matrix.T, np.full(6, -1.0), []
        for k, sid in enumerate(ids):
            if not closest[k] > limit:
                placed.append(sid)
                np.maximum(closest, sims[k], out=closest)
        return placed

    sims = vecs @ vecs.T
    limits = sorted({float(x) for x in sims[np.triu_indices(6, 1)]})
    low, high = limits[len(limits) // 3], limits[-1] + 1e-6
    gram = Gram()
    want_low, want_high = running_max(vecs, low), running_max(vecs, high)
    assert want_low != want_high  # the limit decides which stories stay
    assert page(vecs, gram, low) == want_low
    near = gram.near
    assert page(vecs, gram, low) == want_low and gram.near is near  # the same limit: reused
    assert page(vecs, gram, high) == want_high and gram.near is not near  # another limit: made again
    nan = vecs.copy()
    nan[2] = np.nan
    seq[13] = 2.0
    assert page(nan, gram, low) == running_max(nan, low) and gram.near is None


def test_a_page_s_near_pairs_updated_row_by_row_decide_as_the_full_product():
    """assembly.Gram: when a few stories of the page are new or have new centroids, only their rows' cosines are
    made (``sims`` None) and the kept stories' pairs are taken at their new positions; the page is the one the full
    product gives (a moved centroid that makes or ends a near-duplicate, a new story, a story gone). A cosine within
    assembly.MARGIN of the limit, or a NaN, takes the full product."""
    from transforms.editions.cycle.assembly import MARGIN

    rng = np.random.default_rng(12)
    vecs = rng.standard_normal((31, 16))
    vecs[[3, 7]] = vecs[[0, 1]] + 0.1 * rng.standard_normal((2, 16))  # 3 and 7 near-duplicates of 0 and 1
    vecs /= np.linalg.norm(vecs, axis=1)[:, None]
    ids = list(range(100, 131))
    index, seq = {sid: k for k, sid in enumerate(ids)}, dict.fromkeys(ids, 1.0)
    rules = DiversityRules(top_n=3, page_size=31)

    def page(order, matrix, gram):
        traits = StoryTraits({}, {}, index, matrix, dict(seq))
        return [s.story_id for s in assemble(order, [], traits, rules, None, gram)]

    gram = Gram()
    first = page(ids[:30], vecs, gram)
    assert 103 not in first and 107 not in first and gram.sims is not None
    moved = vecs.copy()
    moved[7] = rng.standard_normal(16)  # no longer a near-duplicate of story 101
    moved[9] = 0.95 * vecs[2] + np.sqrt(1 - 0.95**2) * vecs[4]  # now one of story 102
    moved[[7, 9]] /= np.linalg.norm(moved[[7, 9]], axis=1)[:, None]
    seq[107], seq[109] = 2.0, 2.0
    order = ids[1:31]  # story 100 gone (103 stays), 130 new
    got = page(order, moved, gram)
    assert gram.sims is None  # three rows of thirty made
    assert got == page(order, moved, None) and 107 in got and 109 not in got and 103 in got
    edge = moved.copy()
    edge[11] = rng.standard_normal(16)
    edge[11] -= (edge[11] @ edge[5]) * edge[5]
    edge[11] /= np.linalg.norm(edge[11])
    cos = rules.max_cosine + MARGIN / 2  # within MARGIN of the limit: the full product decides
    edge[11] = cos * edge[5] + np.sqrt(1 - cos**2) * edge[11]
    seq[111] = 3.0
    assert page(order, edge, gram) == page(order, edge, None) and gram.sims is not None


def test_kept_facts_give_the_developing_labels_and_memory_of_a_full_look(world, make_ranker):
    """trust.KeptFacts: a candidate with the same representative at the same version skips its headline's facts;
    a new version of the headline (5 -> 7 dead), a rotation to another article and a memory read back from state
    (another dict) are looked at whole, with the same labels and facts as without the kept ones."""
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    first = world.article("daily-herald", T - 30 * MIN, title="Storm kills 5 in Florida overnight, officials say")
    world.add(1, first)
    world.add(1, world.article("capital-post", T - 29 * MIN, title="Storm kills 6 in Florida overnight, officials say"))
    world.story(2, ["pacific-times", "london-chronicle"], T - 40 * MIN)
    world.add(1, dict(first, version=2, title="Storm kills 7 in Florida overnight, officials say"))
    world.changes[-1]["at"] = T + 5 * MIN - 1000
    r = make_ranker(world)
    r.cycle(T)
    book, kept, memory = r.book, KeptFacts(), copy.deepcopy(r.memory)
    ranked = {}
    real_gates = trust.gates

    def spy(book, p, mem, now, rk, kept_=None):
        ranked["now"] = rk
        return real_gates(book, p, mem, now, rk, kept_)

    labels = []
    for now in [T + m * MIN for m in (1, 2, 5, 6, 30, 64, 66)] + [T + 2 * HOUR + m * MIN for m in (0, 1)]:
        trust.gates = spy
        try:
            r.cycle(now)
        finally:
            trust.gates = real_gates
        rk = ranked["now"]
        ids, reps = book.stories.id[rk.cand.rows].tolist(), rk.reps.rep.tolist()
        if now == T + 30 * MIN:
            memory = pickle.loads(pickle.dumps(memory))  # a restarted worker: the facts are another dict
        fresh = copy.deepcopy(memory)
        want = trust.developing(book, ids, reps, fresh, now, r.params)
        got = trust.developing(book, ids, reps, memory, now, r.params, kept)
        assert got == want and memory.facts == fresh.facts, now
        labels.append(got[ids.index(1)])
    assert labels == [False, False, True, True, True, True, False, False, False]
