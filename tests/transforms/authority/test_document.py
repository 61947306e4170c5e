"""The authority document in the stores (both backends): publish, load, overlay on the hand-set registry."""

from __future__ import annotations

import pytest

from stores import open_store, open_stores
from transforms import authority as au
from transforms.publishers import UNKNOWN_AUTHORITY, default_registry


def doc(**publishers):
    return {"computed_at": 0, "params": {}, "stories": 1, "publishers": publishers}


def test_publish_versions_and_load_the_live_one(store_config):
    stores = open_stores(store_config)
    assert au.load(stores) is None
    assert au.publish(stores, doc(wirepress={"authority": 0.5})) == 1
    assert au.publish(stores, doc(wirepress={"authority": 0.6})) == 2
    live = au.load(stores)
    assert live["version"] == 2 and live["publishers"]["wirepress"]["authority"] == 0.6
    assert [h["version"] for h in stores.pointers.history(au.POINTER)] == [1, 2]
    # An object left by a run that lost the race is skipped, never overwritten.
    stores.snapshots.put(au.object_path(3), b"{}")
    assert au.publish(stores, doc()) == 4
    # Rollback is the pointer store's: the previous computation is live again.
    stores.pointers.rollback(au.POINTER)
    assert au.load(stores)["version"] == 2


def test_apply_overlays_authority_and_adds_rated_unknown_publishers():
    reg = default_registry()
    herald = reg.get("daily-herald")
    assert herald.authority_for("business") == 0.9 and herald.authority == 0.85
    out = au.apply(
        reg,
        doc(**{"daily-herald": {"authority": 0.6, "topic_authority": {"sports": 0.3}}, "new.test": {"authority": 0.7}}),
    )
    h = out.get("daily-herald")
    assert (h.authority, h.authority_for("sports"), h.authority_for("business")) == (0.6, 0.3, 0.9)
    assert h.hosts == herald.hosts and out.for_host("dailyherald.test").authority == 0.6
    assert out.get("new.test").authority == 0.7 and not out.get("new.test").known
    assert out.get("wirepress").authority == reg.get("wirepress").authority  # not rated: unchanged
    assert out.for_host("other.test").authority == UNKNOWN_AUTHORITY
    assert au.apply(reg, None) is reg


def test_current_registry_falls_back_to_the_hand_set_file(embedded_store_config, tmp_path):
    reg = au.current_registry(None, embedded_store_config)
    assert reg.get("wirepress").authority == 0.95  # nothing published yet
    au.publish(open_stores(embedded_store_config), doc(wirepress={"authority": 0.4}))
    assert au.current_registry(None, embedded_store_config).get("wirepress").authority == 0.4
    assert au.current_registry(None, None).get("wirepress").authority == 0.95
    # An unreadable document: the hand-set file, not a crash of the editions stage.
    open_store("pointers", embedded_store_config).compare_and_set(au.POINTER, 1, 9)
    assert au.current_registry(None, embedded_store_config).get("wirepress").authority == 0.95


@pytest.mark.parametrize("bad", [{"kind": "other", "version": 1}, {"kind": au.KIND, "version": 7}])
def test_load_refuses_a_document_that_is_not_the_pointer_s(embedded_store_config, bad):
    import json

    stores = open_stores(embedded_store_config)
    stores.snapshots.put(au.object_path(1), json.dumps(bad).encode())
    stores.pointers.compare_and_set(au.POINTER, None, 1)
    with pytest.raises(ValueError):
        au.load(stores)


def test_the_watcher_rereads_when_the_pointer_moves(store_config):
    """A long-running stage's view: the pointer is read at most every refresh_s; a move brings the new document."""
    t = [0.0]
    stores = open_stores(store_config)
    w = au.AuthorityWatcher(None, store_config, refresh_s=600.0, clock=lambda: t[0])
    assert w.version is None and w.registry.get("wirepress").authority == 0.95
    au.publish(stores, doc(wirepress={"authority": 0.4}))
    t[0] = 10.0
    assert not w.poll()  # not due yet: no store read
    t[0] = 700.0
    assert w.poll() and w.version == 1 and w.registry.get("wirepress").authority == 0.4
    t[0] = 1400.0
    assert not w.poll()  # due, but the pointer did not move
    au.publish(stores, doc(wirepress={"authority": 0.7}))
    stores.pointers.compare_and_set(au.POINTER, 2, 9)  # points at an object that does not exist
    t[0] = 2100.0
    assert not w.poll() and w.registry.get("wirepress").authority == 0.4  # unreadable: keeps what it has
    stores.pointers.rollback(au.POINTER, 2)
    t[0] = 2800.0
    assert w.poll() and w.registry.get("wirepress").authority == 0.7


def test_a_new_registry_makes_the_ranker_rebuild_its_books():
    from transforms.editions.ranker.rank import EditionRanker
    from transforms.editions.vocabulary.config import load_config
    from transforms.editions.vocabulary.params import RankParams

    config = load_config()
    ranker = EditionRanker(config, default_registry(), RankParams.from_config(config))
    ranker._cache["us-en"] = object()
    new = au.apply(default_registry(), doc(wirepress={"authority": 0.4}))
    ranker.set_registry(new)
    assert ranker.registry is new and ranker._cache == {}
