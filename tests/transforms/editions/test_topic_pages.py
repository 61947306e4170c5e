"""Topic pages pre-built by the editions stage (transforms/editions/overlays/topics.py): every cycle, the pages of the
edition's followed topics (the profile store's follower counts: aggregated, no reader id) and trending topics
(most pool stories), at most MAX_TOPIC_PAGES, published as snapshots under ``topic/{edition}/{id}``; the pool
lists them (``topic_pages``). The rest (the long tail) the origin builds on demand (tests/serving/test_topics.py)."""

from __future__ import annotations

import json
from array import array

from apache_beam.utils.timestamp import Timestamp

from schemas.pages import topic_path, validate_page
from stores import open_stores
from stores.profiles import open_profile_store
from tests.transforms.fakes import Bag, Timer, Value
from transforms.editions.beam.publishing import PublishSnapshotFn
from transforms.editions.beam.ranking import RankEditionsFn
from transforms.editions.book.storybook import compact_change
from transforms.editions.overlays import topics
from transforms.editions.vocabulary import documents as docs
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.settings import RankSettings


def run_stage(world, config, at_ms) -> list[dict]:
    """One RankEditionsFn cycle of us-en (its stores: controls and follower counts) -> published items."""
    fn = RankEditionsFn(RankSettings(editions_only=["us-en"], overrides={"idle_cycles": 120}), config)
    fn.setup()
    pub = PublishSnapshotFn(config)
    pub.setup()
    state = dict(inbox=Bag(), chain=Value(), memory=Value(), timer=Timer())
    for c in world.changes:
        fn.process(("us-en", compact_change(c)), **state)
    state["timer"].at = None
    items = list(
        fn.on_cycle(
            key="us-en",
            ts=Timestamp(micros=at_ms * 1000),
            inbox=state["inbox"],
            event_log=Bag(),
            memory=state["memory"],
            chain=state["chain"],
            timer=state["timer"],
        )
    )
    for it in items:
        # the publisher also yields tagged Breaking / hot-story candidates beside each result: only results here
        outcome = [r["outcome"] for r in pub.process(it) if isinstance(r, dict)]
        if it["kind"] in ("topic_page", "candidate_pool"):  # (small sections are rejected: too few stories)
            assert outcome == ["published"], it["pointer"]
    return items


def topic_world(world):
    """Chicago: 4 stories (trending); Boston: 1 story (long tail); 8 stories about nowhere in particular."""
    T, MIN = world.T0, world.MIN
    for s in range(4):
        world.story(10 + s, [f"paper-{s}", "capital-post"], T - (s + 1) * 5 * MIN, places=("place:chicago",))
    world.story(20, ["paper-9", "capital-post"], T - 7 * MIN, places=("place:boston",))
    for s in range(8):
        world.story(30 + s, [f"paper-{s}", "daily-herald"], T - (s + 2) * 3 * MIN)


def test_the_stage_publishes_followed_and_trending_topic_pages_and_the_pool_lists_them(embedded_store_config, world):
    topic_world(world)
    profiles = open_profile_store(embedded_store_config)
    for reader in [f"reader-{i}" for i in range(topics.MIN_FOLLOWERS)]:
        profiles.update(reader, lambda p: {**p, "follows": {**p["follows"], "entities": ["place:boston"]}})
    assert profiles.followed_topics() == {"entity:place:boston": topics.MIN_FOLLOWERS}
    items = run_stage(world, embedded_store_config, world.T0 + world.MIN)
    pool = next(it["doc"] for it in items if it["kind"] == "candidate_pool")
    pages = {it["doc"]["topic"]: it for it in items if it["kind"] == "topic_page"}
    # followed (the long tail: one story) first, then trending: Chicago's 4 stories, as an entity and as a place
    assert list(pages)[0] == "entity:place:boston"
    assert {"entity:place:chicago", "place:chicago"} <= set(pages)
    assert "place:boston" not in pages  # one story, not followed as a place: built on demand
    assert list(pool["topic_pages"]) == list(pages)
    stores = open_stores(embedded_store_config)
    by_id = {s["story_id"]: s for s in pool["stories"]}
    for topic, it in pages.items():
        doc = it["doc"]
        assert it["pointer"] == f"topic/us-en/{topic}" and stores.pointers.get(it["pointer"]) == pool["version"]
        stored = json.loads(stores.snapshots.get(topic_path("us-en", topic, doc["version"])))
        validate_page("topic_page", stored)
        assert stored["story_count"] == len(stored["stories"]) >= 1 and stored["pool_version"] == pool["version"]
        scores = [by_id[s["story_id"]]["score"] for s in stored["stories"]]
        assert scores == sorted(scores, reverse=True)  # the edition's own score, as the pool orders it
    chicago = json.loads(docs.canonical_bytes(pages["place:chicago"]["doc"]))
    assert {s["story_id"] for s in chicago["stories"]} == {"10", "11", "12", "13"}


def test_topic_pages_are_bounded_per_cycle_followed_first():
    pool = {"edition": "us-en", "version": 5, "cycle": "2024-03-01T12:00:00Z", "stories": []}
    for i in range(60):  # 60 entities with 3..62 stories each would be 60 trending pages
        for _ in range(3 + i):
            pool["stories"].append(
                {
                    "story_id": str(len(pool["stories"]) + 1),
                    "score": 1.0,
                    "section": "world",
                    "entities": (f"org:e{i}",),
                    "topics": ("world",),
                    "representative": {"title": "t", "url": "https://x.test/a"},
                }
            )
    for k in range(5):  # an id the origin cannot serve gets no page, however many stories
        pool["stories"].append(dict(pool["stories"][0], story_id=str(1000 + k), entities=("ac/dc",)))
    assert topics.topic_ids_of(pool["stories"][-1]) == ["topic:world"]
    followed = {"entity:org:e0": 7, "topic:world": 3, "entity:org:nobody-writes-about": 99}
    chosen = [d["topic"] for d in topics.topic_documents(pool, followed)]
    assert len(chosen) == topics.MAX_TOPIC_PAGES
    assert chosen[:2] == ["entity:org:e0", "topic:world"]  # followed with stories, most followers first
    assert chosen[2:5] == ["entity:org:e59", "entity:org:e58", "entity:org:e57"]  # then most stories
    world = next(d for d in topics.topic_documents(pool, followed) if d["topic"] == "topic:world")
    assert world["story_count"] == len(pool["stories"]) and len(world["stories"]) == topics.MAX_STORIES
    assert world["name"] == "World"


def test_pre_built_topic_pages_carry_the_name_readers_see():
    pool = {"edition": "de-de", "version": 1, "cycle": "2024-03-01T12:00:00Z", "stories": []}
    for i in range(3):
        entry = {"story_id": str(i), "score": 1.0, "section": "world", "entities": ("place:united-states",)}
        pool["stories"].append(dict(entry, places=("us",), representative={"title": "t", "url": "https://x.test/a"}))
    names = {d["topic"]: d["name"] for d in topics.topic_documents(pool, {})}
    assert set(names.values()) == {"Vereinigte Staaten"}  # the region's code and the place entity: one name
    assert {"place:us", "place:united-states"} <= set(names)


def test_topic_pointers_no_cycle_chose_for_hours_are_retired_and_come_back_when_chosen(tmp_path):
    from stores import StoreConfig
    from transforms.editions.publish.snapshots import PointerRetention, SnapshotPublisher

    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    now = [1_000_000.0]
    pub = SnapshotPublisher(
        stores,
        languages=("en",),
        retention=PointerRetention(retire_every_s=60, topic_keep_s=3600),
        clock=lambda: now[0],
    )
    pool = {"edition": "us-en", "version": 100, "cycle": "2024-03-01T12:00:00Z", "stories": []}
    for i, e in enumerate(["org:a"] * 3 + ["org:b"] * 3):
        card = {
            "article_id": "a" * 32,
            "url": f"https://x.test/{i}",
            "title": "t",
            "publisher_id": "p",
            "publisher_name": "P",
            "image_url": None,
            "published_at": "2024-03-01T11:00:00Z",
            "first_seen_at": "2024-03-01T11:00:00Z",
            "language": "en",
            "labels": [],
        }
        pool["stories"].append(
            {
                "story_id": str(i + 1),
                "score": 1.0 - i / 10,
                "section": "world",
                "entities": (e,),
                "representative": card,
            }
        )

    def cycle(version, followed, max_pages):
        doc = dict(pool, version=version)
        return [pub.publish(it)["outcome"] for it in topics.topic_items(doc, followed, max_pages)]

    assert cycle(100, {}, 2) == ["published", "published"]
    now[0] += 1800
    assert cycle(130, {"entity:org:a": 1}, 1) == ["unchanged"]  # a chosen, unchanged: its pointer stays at v100
    now[0] += 1900
    assert pub.maybe_retire() == ["topic/us-en/entity:org:b"]  # not chosen for more than an hour
    assert set(stores.pointers.versions("topic/")) == {"topic/us-en/entity:org:a"}
    assert cycle(200, {}, 2) == ["unchanged", "published"]  # chosen again: back


def test_gazetteer_cities_are_followable_places_with_their_own_page(embedded_store_config, world):
    """A city of the gazetteer (editions.json local_places), named by its alias id or by its unlinked surface form,
    is a place of the pool entry (after the region codes): followed, its page is pre-built as place:{code}."""
    T, MIN = world.T0, world.MIN
    world.story(40, ["paper-1", "capital-post"], T - 5 * MIN, places=("los angeles",))  # unlinked surface form
    world.story(41, ["paper-2", "capital-post"], T - 6 * MIN, places=("place:los-angeles",))  # alias-table id
    world.story(42, ["paper-3", "capital-post"], T - 7 * MIN, places=("california",))  # a state: local, not LA
    for s in range(8):
        world.story(50 + s, [f"paper-{s}", "daily-herald"], T - (s + 2) * 3 * MIN)
    for reader in [f"cy-{i}" for i in range(topics.MIN_FOLLOWERS)]:  # followed by enough readers to be listed
        open_profile_store(embedded_store_config).update(
            reader, lambda p: {**p, "follows": {**p["follows"], "places": ["los-angeles"]}}
        )
    items = run_stage(world, embedded_store_config, T + MIN)
    pool = next(it["doc"] for it in items if it["kind"] == "candidate_pool")
    places = {s["story_id"]: s["places"] for s in pool["stories"]}
    assert "los-angeles" in places["40"] and "los-angeles" in places["41"] and "los-angeles" not in places["42"]
    assert places["40"][0] == "us"  # the region code first, as before
    assert "california" in places["42"]
    page = next(it["doc"] for it in items if it["kind"] == "topic_page" and it["doc"]["topic"] == "place:los-angeles")
    assert {s["story_id"] for s in page["stories"]} == {"40", "41"} and page["kind"] == "place"
    assert topics.city_codes(load_config())["new york"] == "new-york"


def test_a_topic_followed_by_fewer_than_the_floor_is_not_pre_built_as_followed():
    """Pre-built pages are listed on the shared top page: one reader's follow must not put a topic there."""

    class Counts:
        def followed_topics(self, limit):
            return {
                "entity:person:someone": 1,
                "entity:org:many": topics.MIN_FOLLOWERS,
                "place:x": topics.MIN_FOLLOWERS - 1,
            }

    assert topics.FollowedTopics(Counts())() == {"entity:org:many": topics.MIN_FOLLOWERS}
    assert topics.FollowedTopics(Counts(), min_followers=1)() == Counts().followed_topics(0)


def test_memoised_city_codes_and_topic_ids_follow_their_inputs():
    """The memos (a story's entities seen again, in another edition or cycle) give what a fresh computation gives:
    per gazetteer (two CityCodes never share answers), and per (entities, places, topics)."""
    la, paris = topics.CityCodes({"place:los-angeles": "los-angeles"}), topics.CityCodes({"place:paris": "paris"})
    for cities, want in ((la, ("us", "los-angeles")), (paris, ("us",)), (la, ("us", "los-angeles"))):
        pool = {"stories": [{"entities": ["place:los-angeles", "org:x"], "places": ("us",)}]}
        topics.add_cities(pool, cities)
        assert pool["stories"][0]["places"] == want
    entry = {"entities": ["org:x"], "places": ("us",), "topics": ["world"]}
    assert topics.topic_ids_of(entry) == ["entity:org:x", "place:us", "topic:world"]
    assert topics.topic_ids_of(dict(entry, topics=["science"])) == ["entity:org:x", "place:us", "topic:science"]
    assert topics.topic_ids_of(entry) == ["entity:org:x", "place:us", "topic:world"]


def test_an_editions_kept_annotations_and_items_give_what_a_fresh_cycle_gives():
    """The edition's last-cycle annotations and topic page items (``CycleCache.topics``/``topic_items``) are reused
    only while an entry holds the very same entity, place and topic tuples, page sections and representative: the
    pool entries and topic pages equal a cold computation's every cycle, and a changed input is recomputed."""
    la = topics.CityCodes({"place:los-angeles": "los-angeles"})
    rep = {"title": "t", "url": "https://x.test/a"}
    statics = [
        {"story_id": str(i), "section": "world", "labels": (), "representative": rep, "topics": ("world",)}
        | {"entities": ("place:los-angeles", f"org:e{i % 2}"), "places": ("us",)}
        for i in range(6)
    ]

    def cycle(statics, pages, kept, kept_items):
        pool = {"edition": "us-en", "version": 1, "cycle": "2024-03-01T12:00:00Z"}
        pool["stories"] = [dict(s, score=1.0 - k / 10) for k, s in enumerate(statics)]  # per-cycle copies
        ids_of = topics.annotate_pool(pool, pages, la, True, kept)
        return pool, topics.topic_documents(pool, {}, ids_of=ids_of, kept=kept_items)

    page = {"stories": [{"story_id": "2"}]}
    kept, kept_items = {}, {}
    for pages in ({}, {}, {"sports": page}, {"sports": page}, {}):
        pool, docs_ = cycle(statics, pages, kept, kept_items)
        assert (pool, docs_) == cycle(statics, pages, None, None)  # a cold cycle: the same pool and pages
    assert pool["stories"][0]["places"] == ("us", "los-angeles")
    assert {d["topic"] for d in docs_} >= {"entity:org:e0", "place:los-angeles"}
    first = next(d for d in docs_ if d["topic"] == "entity:org:e0")["stories"][0]
    pool, docs_ = cycle(statics, {}, kept, kept_items)
    assert next(d for d in docs_ if d["topic"] == "entity:org:e0")["stories"][0] is first  # reused, not rebuilt
    statics[0] = dict(statics[0], entities=("org:e1",), representative=dict(rep, title="u"))  # a rebuilt entry
    pool, docs_ = cycle(statics, {}, kept, kept_items)
    assert (pool, docs_) == cycle(statics, {}, None, None)
    assert pool["stories"][0]["places"] == ("us",) and "entity:org:e0" not in {d["topic"] for d in docs_}


def test_the_choice_sorts_only_the_most_counted_ids_and_chooses_what_sorting_them_all_chooses():
    """choose_topics sorts only the ids counted at least as often as the k-th most counted (growing k until enough
    are eligible): the same choice as the rule over every id, whatever the ties, section ids and followed ids at
    the top of the counts."""
    import random

    def every_id(counts, followed, max_pages):  # the rule, over every id
        chosen = sorted((t for t in followed if counts.get(t)), key=lambda t: (-followed[t], t))[:max_pages]
        trending = sorted(
            (t for t, n in counts.items() if n >= topics.TRENDING_MIN_STORIES), key=lambda t: (-counts[t], t)
        )
        trending = [t for t in trending if not t.startswith("topic:") and t not in chosen]
        return chosen + trending[: max(0, max_pages - len(chosen))]

    rnd = random.Random(5)
    for case in range(300):
        kinds = ("entity:", "place:", "topic:") if case % 3 else ("topic:", "topic:", "place:")
        counts = {
            f"{rnd.choice(kinds)}{i}": rnd.choice((1, 2, 3, 3, 4, 5, 9, 40, 40)) for i in range(rnd.randint(0, 300))
        }
        followed = {t: rnd.randint(10, 12) for t in rnd.sample(sorted(counts), min(len(counts), rnd.randint(0, 50)))}
        followed["entity:nowhere"] = 99  # followed, no story: not chosen
        for max_pages in (0, 1, 5, 40):
            assert topics.choose_topics(counts, followed, max_pages) == every_id(counts, followed, max_pages)
            assert topics.choose_topics(counts, {}, max_pages) == every_id(counts, {}, max_pages)


def test_choose_codes_chooses_what_choose_topics_chooses_from_the_counted_ids():
    """topic_documents counts and chooses on codes (choose_codes: a numpy sort, the trending ids ranked down to
    the ties at the last count taken): the same choice as choose_topics over every id's count, whatever the ties,
    section ids, followed ids with few or no stories and ids the code table has never seen."""
    import random
    from collections import Counter

    import numpy as np

    rnd = random.Random(11)
    table = topics.TopicCodes()
    for case in range(200):
        kinds = ("entity:", "place:", "topic:") if case % 3 else ("topic:", "topic:", "place:")
        names = [f"{rnd.choice(kinds)}{case % 7}-{i}" for i in range(rnd.randint(0, 120))]
        entries = [rnd.sample(names, min(len(names), rnd.randint(0, 6))) for _ in range(rnd.randint(0, 150))]
        flat = np.frombuffer(b"".join(table.of(ids) for ids in entries), np.intc)
        counts = Counter(t for ids in entries for t in ids)
        followed = {t: rnd.randint(10, 12) for t in rnd.sample(names, min(len(names), rnd.randint(0, 30)))}
        followed[f"entity:never-seen-{case}"] = 99  # followed, no story, no code: not chosen
        for max_pages in (0, 1, 5, 40):
            for f in (followed, {}):
                assert topics.choose_codes(flat, table, f, max_pages) == topics.choose_topics(counts, f, max_pages)


def test_kept_annotations_hold_the_codes_of_their_table_and_a_new_table_codes_afresh(monkeypatch):
    """An annotation kept from last cycle is reused only with the code table it was coded with (another table, or
    a full one replaced by _codes): each entry's codes decode, in the table annotate_pool returns, to its topic ids
    (as the codes a table remembers per (entities, places, topics) do)."""
    la = topics.CityCodes({"place:los-angeles": "los-angeles"})
    statics = [
        {"story_id": str(i), "section": "world", "labels": (), "representative": {}, "topics": ("world",)}
        | {"entities": (f"org:e{i % 3}", "place:los-angeles")[: 1 + i % 2], "places": ("us",) if i % 4 else ()}
        for i in range(8)
    ]
    kept = {}

    def decoded():
        pool = {"stories": [dict(s) for s in statics]}
        codes_of, table = topics.annotate_pool(pool, {"sports": {"stories": [{"story_id": "3"}]}}, la, True, kept)
        assert table is topics._codes()
        got = [[table.name(c) for c in array("i", codes)] for codes in codes_of]
        assert got == [topics.topic_ids_of(e) for e in pool["stories"]]
        return table

    first = decoded()
    assert decoded() is first  # the same table: kept annotations reused
    base = {"story_id": "x", "entities": ("org:e0",), "places": ("us",), "topics": ("world",)}
    for one in ({}, {"entities": ("org:e1",)}, {"places": ("fr",)}, {"topics": ("science",)}, {}):
        pool = {"stories": [dict(base, **one)]}  # each differs from the first in one of the remembered key's parts
        codes_of, table = topics.annotate_pool(pool, {}, la, True, None)
        assert [table.name(c) for c in array("i", codes_of[0])] == topics.topic_ids_of(pool["stories"][0])
    seeded = topics.TopicCodes()
    seeded.of(["entity:org:coded-first"])  # another table, whose codes for the same ids are not first's
    monkeypatch.setattr(topics, "_CODES", seeded)
    assert decoded() is seeded
    monkeypatch.setattr(topics, "_CODES_MAX", len(seeded.names))  # full: replaced whole at the next cycle
    assert decoded() not in (first, seeded)
