"""One store factory: stores.open_store is the one backend switch of every store kind (the row stores of
stores.ROW_STORES, the snapshot store and the bus), every typed opener and open_stores go through it, and every
Bigtable store is given the raw data-plane handles of its tables (one layout)."""

from __future__ import annotations

import importlib

import pytest
from google.api_core import exceptions as gx

from stores import ROW_STORES, STORE_KINDS, StoreError, open_store, open_stores

OPENERS = {
    "audit": ("stores.audit", "open_audit_log"),
    "controls": ("stores.controls", "open_control_store"),
    "covisit": ("stores.covisit", "open_covisit_store"),
    "feeds": ("stores.feeds", "open_feed_store"),
    "profiles": ("stores.profiles", "open_profile_store"),
    "takedowns": ("stores.takedowns", "open_takedown_store"),
    "userclusters": ("stores.userclusters", "open_user_cluster_store"),
}
CORE = ("articles", "stories", "pointers")


def _class(spec):
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def test_every_row_store_has_one_row_in_the_table_and_the_core_stores_no_typed_opener():
    assert set(ROW_STORES) == set(OPENERS) | set(CORE)
    assert set(STORE_KINDS) == set(ROW_STORES) | {"snapshots", "bus"}


@pytest.mark.parametrize("kind", sorted(ROW_STORES))
def test_the_typed_opener_and_the_factory_open_the_class_the_table_names(kind, store_config):
    embedded_class, bigtable_class, _ = ROW_STORES[kind]
    expected = _class(embedded_class if store_config.backend == "embedded" else bigtable_class)
    if kind in OPENERS:
        opener = getattr(importlib.import_module(OPENERS[kind][0]), OPENERS[kind][1])
        assert type(opener(store_config)) is expected
    assert type(open_store(kind, store_config)) is expected


def test_open_stores_holds_the_classes_the_factory_opens(store_config):
    stores = open_stores(store_config)
    for kind in (*CORE, "snapshots", "bus"):
        assert type(getattr(stores, kind)) is type(open_store(kind, store_config))
    assert stores.config == store_config


def test_the_embedded_core_stores_share_one_database(embedded_store_config):
    stores = open_stores(embedded_store_config)
    assert stores.articles.db is stores.stories.db is stores.pointers.db is stores.bus.db


class _Unavailable:
    """A raw Bigtable table handle whose every call fails as an unreachable server does."""

    table_id = "t-unavailable"

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise gx.ServiceUnavailable("connection refused")

        return fail


@pytest.mark.parametrize("kind", CORE)
def test_every_core_bigtable_store_takes_the_raw_handle_and_maps_its_errors(kind):
    store = _class(ROW_STORES[kind][1])(_Unavailable())
    read = {"articles": lambda s: s.get("x"), "stories": lambda s: s.get_story(1), "pointers": lambda s: s.get("p")}
    with pytest.raises(StoreError, match="connection refused"):
        read[kind](store)


def test_an_unknown_kind_is_refused_naming_the_kinds():
    with pytest.raises(ValueError, match="unknown store 'profile' .*profiles"):
        open_store("profile")
