"""One store factory: stores.open_store maps a kind of row store to its embedded and Bigtable classes
(stores.ROW_STORES), and every typed opener goes through it, on both backends."""

from __future__ import annotations

import importlib

import pytest

from stores import ROW_STORES, open_store

OPENERS = {
    "audit": ("stores.audit", "open_audit_log"),
    "controls": ("stores.controls", "open_control_store"),
    "covisit": ("stores.covisit", "open_covisit_store"),
    "feeds": ("stores.feeds", "open_feed_store"),
    "profiles": ("stores.profiles", "open_profile_store"),
    "takedowns": ("stores.takedowns", "open_takedown_store"),
    "userclusters": ("stores.userclusters", "open_user_cluster_store"),
}


def test_every_row_store_has_one_row_in_the_table_and_one_typed_opener():
    assert set(OPENERS) == set(ROW_STORES)


@pytest.mark.parametrize("kind", sorted(ROW_STORES))
def test_the_typed_opener_and_the_factory_open_the_class_the_table_names(kind, store_config):
    module, embedded_class, bigtable_class, _ = ROW_STORES[kind]
    classes = importlib.import_module(module)
    expected = getattr(classes, embedded_class if store_config.backend == "embedded" else bigtable_class)
    opener = getattr(importlib.import_module(OPENERS[kind][0]), OPENERS[kind][1])
    assert type(opener(store_config)) is expected
    assert type(open_store(kind, store_config)) is expected


def test_an_unknown_kind_is_refused_naming_the_kinds():
    with pytest.raises(ValueError, match="unknown store 'profile' .*profiles"):
        open_store("profile")
