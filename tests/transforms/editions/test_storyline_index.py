"""The storyline index: a topic page lists the storylines of its entity beyond the live pool (the ranker names each
storyline's entities, the publisher keeps a bounded per-entity list, newest first, per shard; the origin reads it
on demand for entity and place pages, JSON and web, with takedowns respected)."""

from __future__ import annotations

import json

import orjson
import pytest

from schemas.pages import storyline_index_path, storyline_index_shard, validate_page
from stores import StoreConfig, open_stores
from stores.takedowns import Tombstone
from transforms.common import MINUTE_MS
from transforms.editions.book.storylines import compact_storyline
from transforms.editions.overlays import storyline_index as sx
from transforms.editions.overlays.storyline_pages import storyline_items
from transforms.editions.publish.snapshots import SnapshotPublisher
from transforms.editions.ranker.rank import snapshot_items

DAY = 24 * 60 * 60 * 1000
ENTITY = "org:aqualux"


def sl_event(seq, kind, at, storyline_id, story_id=None, other=None):
    change = {"change_id": f"sl-{seq}", "kind": kind, "seq": seq, "at": at, "storyline_id": storyline_id}
    change.update(story_id=story_id, other_storyline_id=other, story_ids=[], language="en")
    return compact_storyline(change)


@pytest.fixture
def stores(tmp_path):
    return open_stores(StoreConfig(data_dir=str(tmp_path / "data")))


def publish_cycle(ranker, now, publisher):
    """One cycle of the edition, every item it makes published as the ranker's DoFn emits them."""
    out = ranker.cycle(now)
    storylines = storyline_items(ranker.book, out, ranker.params, now)
    items = snapshot_items(out, ranker.config) + storylines + sx.index_items(storylines, "en", now // MINUTE_MS)
    for it in items:
        publisher.publish(it)
    return items


def shard_doc(stores, entity):
    shard = storyline_index_shard(entity)
    version = stores.pointers.get(sx.pointer_of("en", shard))
    doc = json.loads(stores.snapshots.get(storyline_index_path("en", shard, version)))
    validate_page("storyline_index", doc)
    return doc


def test_a_storyline_whose_stories_left_the_live_pool_stays_on_its_entity_topic_page(stores, make_ranker, tmp_path):
    from stores.profiles import open_profile_store
    from tests.serving.helpers import make_app
    from tests.transforms.editions.conftest import World

    publisher = SnapshotPublisher(stores, languages=("en",))
    T, MIN = World.T0, World.MIN
    old = World()
    old.story(1, ["paper-a", "paper-b", "paper-c"], T - 20 * DAY, title="Aqualux opens a desalination plant",
              places=[ENTITY, "place:almera"])  # fmt: skip
    old.story(2, ["paper-a", "paper-d"], T - 19 * DAY, title="Almera re-elects its mayor over water bills",
              places=[ENTITY, "place:almera"])  # fmt: skip
    old.story(3, ["paper-b", "paper-c"], T - 19 * DAY, title="Aqualux hires", places=[ENTITY])
    r1 = make_ranker(old)
    r1.pulses.append(sl_event(1, "NEW_STORYLINE", T - 20 * DAY + 10 * MIN, 70, story_id=1))
    r1.pulses.append(sl_event(2, "ATTACH", T - 19 * DAY + 10 * MIN, 70, story_id=2))
    r1.pulses.append(sl_event(3, "NEW_STORYLINE", T - 19 * DAY + 10 * MIN, 71, story_id=3))
    items = publish_cycle(r1, T - 19 * DAY + 30 * MIN, publisher)
    assert any(it["kind"] == "storyline_index" for it in items)
    entry = shard_doc(stores, ENTITY)["entities"][ENTITY]
    # the storyline of two episodes, titled by its newest; 71, one story, is that story's page: not listed
    assert [(e["storyline_id"], e["story_id"]) for e in entry] == [("70", "2")]

    # Weeks later: the plant's story left the live set; the live pool holds other stories, none about the firm.
    now = World()
    for k in range(6):
        now.story(10 + k, ["paper-a", "paper-b"], T + k * MIN, title=f"An unrelated event {k} unfolds", places=["x"])
    r2 = make_ranker(now)
    publish_cycle(r2, T + 30 * MIN, publisher)
    assert ENTITY in shard_doc(stores, ENTITY)["entities"]  # the index kept it: no state in the ranker

    app = make_app(stores, open_profile_store(StoreConfig(data_dir=str(tmp_path / "profiles"))))
    try:
        client = app.test_client()
        r = client.get(f"/v1/topics/entity:{ENTITY}?edition=us-en")
        assert r.status_code == 200, r.data
        doc = orjson.loads(r.data)
        assert doc["story_count"] == 0 and doc["stories"] == []
        assert [(s["storyline_id"], s["title"]) for s in doc["storylines"]] == [
            ("70", "Almera re-elects its mayor over water bills")
        ]
        assert client.get(f"/v1/topics/entity:{ENTITY}?edition=us-en").headers["ETag"] == r.headers["ETag"]
        html = client.get(f"/e/us-en/topics/entity:{ENTITY}")
        assert html.status_code == 200 and "/storylines/en/70" in html.get_data(as_text=True)
        live = orjson.loads(client.get("/v1/topics/entity:x?edition=us-en").data)
        assert live["story_count"] == 6 and "storylines" not in live  # no storyline of x: the page as before

        # a takedown of the story the entry is titled by hides it at the origin
        watcher = app.extensions["newsroom"].watcher
        watcher.takedowns.set(Tombstone(kind="story", id="2", reason="legal", who="test", at=T))
        watcher.poll_once()
        assert client.get(f"/v1/topics/entity:{ENTITY}?edition=us-en").status_code == 404
    finally:
        app.extensions["newsroom"].close()


def entry(sl, day, story=None):
    return {"storyline_id": str(sl), "title": f"t{sl}", "story_id": str(story or sl), "updated_at": f"2026-01-{day:02d}T00:00:00Z"}  # fmt: skip


def item(entities, drop=()):
    doc = {"schema": sx.INDEX_SCHEMA, "language": "en", "shard": 3, "version": 9, "entities": entities}
    return {"pointer": "storyline_index/en/3", "doc": doc, "drop": list(drop)}


def test_merged_index_keeps_each_entity_newest_first_and_bounded(monkeypatch):
    live = {"entities": {"a": [entry(2, 5), entry(1, 1)], "b": [entry(1, 1)]}}
    merged = sx.merged_index(item({"a": [entry(1, 9)]}), lambda p: live)
    assert [e["storyline_id"] for e in merged["entities"]["a"]] == ["1", "2"]  # re-listed: its entry replaced
    assert merged["entities"]["b"] == [entry(1, 1)]  # untouched entities kept
    # a storyline merged into another leaves the lists its survivor is put on
    merged = sx.merged_index(item({"a": [entry(3, 10)]}, drop=["2"]), lambda p: live)
    assert [e["storyline_id"] for e in merged["entities"]["a"]] == ["3", "1"]
    monkeypatch.setattr(sx, "PER_ENTITY", 2)
    monkeypatch.setattr(sx, "ENTITIES_PER_SHARD", 2)
    merged = sx.merged_index(item({"a": [entry(4, 11)], "c": [entry(5, 12)]}), lambda p: live)
    assert [e["storyline_id"] for e in merged["entities"]["a"]] == ["4", "2"]  # the oldest fell off
    assert sorted(merged["entities"]) == ["a", "c"]  # b, whose newest storyline is oldest, fell off the shard


def test_index_items_put_each_storyline_under_its_entities_one_item_per_shard():
    def sl_item(sl, entities, sources=(), merged_into=None):
        ep = {"story_id": str(sl * 10), "title": f"t{sl}", "first_at": "2026-01-01T00:00:00Z",
              "last_at": "2026-01-01T00:00:00Z", "article_count": 1, "publisher_count": 1}  # fmt: skip
        doc = {"storyline_id": str(sl), "updated_at": "2026-01-02T00:00:00Z", "episodes": [] if merged_into else [ep]}
        if merged_into:
            doc["merged_into"] = merged_into
        return {"doc": doc, "entities": entities, "sources": list(sources)}

    items = sx.index_items([sl_item(1, ["a", "b"], sources=[[2, None]]), sl_item(2, [], merged_into="1")], "en", 5)
    shards = {sx.shard_of("a"), sx.shard_of("b")}
    assert sorted(it["doc"]["shard"] for it in items) == sorted(shards)
    for it in items:
        validate_page("storyline_index", sx.merged_index(it, lambda p: None))
        assert it["drop"] == ["2"] and it["pointer"] == sx.pointer_of("en", it["doc"]["shard"])
        for entries in it["doc"]["entities"].values():
            assert [(e["storyline_id"], e["story_id"]) for e in entries] == [("1", "10")]


def test_index_items_list_an_entity_of_several_storylines_newest_first_and_share_no_list_they_write():
    """index_of takes an entity named by one storyline as that part's own one-entry list (shared by the editions
    that share the part) and gives an entity of several storylines a list of its own, newest first: the same items
    as one list per entity sorted afresh, whichever order the parts come in."""
    import random

    rng = random.Random(5)

    def sl_item(sl):
        ep = {"story_id": str(sl * 10), "title": f"t{sl}", "first_at": "2026-01-01T00:00:00Z",
              "last_at": "2026-01-01T00:00:00Z", "article_count": 1, "publisher_count": 1}  # fmt: skip
        doc = {"storyline_id": str(sl), "updated_at": f"2026-01-{rng.randint(1, 9):02d}T00:00:00Z", "episodes": [ep]}
        entities = rng.sample([f"e{k}" for k in range(40)], rng.randint(1, 12))
        sources = [[sl + 1000, None]] if sl % 7 == 0 else []
        return {"doc": doc, "entities": entities, "sources": sources}

    items = [sl_item(sl) for sl in range(1, 60)]
    want: dict = {}  # shard -> entity -> entries newest first; shard -> drops
    drops: dict = {}
    for it in items:
        doc = it["doc"]
        entry = {k: doc[k] for k in ("storyline_id", "updated_at")}
        entry.update(title=doc["episodes"][0]["title"], story_id=doc["episodes"][0]["story_id"])
        for e in it["entities"]:
            want.setdefault(sx.shard_of(e), {}).setdefault(e, []).append(entry)
            if it["sources"]:
                drops.setdefault(sx.shard_of(e), set()).add(str(it["sources"][0][0]))
    parts = [sx.index_part(it) for it in items]
    for order in (parts, parts[::-1]):
        got = sx.index_of(order, "en", 5)
        assert [it["doc"]["shard"] for it in got] == sorted(want)
        for it in got:
            shard, entities = it["doc"]["shard"], it["doc"]["entities"]
            assert list(entities) == sorted(want[shard]) and it["drop"] == sorted(drops.get(shard, ()))
            for e, entries in entities.items():
                newest = sorted(want[shard][e], key=lambda x: (x["updated_at"], int(x["storyline_id"])), reverse=True)
                assert entries == newest
                if len(entries) == 1:  # the part's own list, as the other editions get it
                    assert any(entries is part[3] for part in parts)
    assert all(len(part[3]) == 1 for part in parts)  # no edition's index wrote into a shared list
