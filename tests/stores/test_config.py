"""StoreConfig: the flags every command shares, the NEWSROOM_* keys the origin reads, and the bus choice."""

import argparse

import pytest

from stores import StoreConfig, add_store_arguments, config_from_args, config_from_mapping, config_to_env


def _parse(argv):
    parser = argparse.ArgumentParser()
    add_store_arguments(parser, with_project=True)
    return parser.parse_args(argv)


def test_flags_env_and_back_give_the_same_config(tmp_path):
    config = config_from_args(_parse([f"--data_dir={tmp_path}", "--bus=pubsub", "--namespace=bf-1", "--project=p"]))
    assert config.bus_kind == "pubsub" and config.backend == "embedded"
    assert config_from_mapping(config_to_env(config)) == config


def test_the_bus_follows_the_backend_unless_chosen():
    assert StoreConfig().bus_kind == "embedded"
    assert StoreConfig(backend="gcp", bucket="b").bus_kind == "pubsub"
    with pytest.raises(ValueError, match="--bus"):
        StoreConfig(bus="kafka")


def test_gcp_without_a_bucket_names_the_flag():
    with pytest.raises(ValueError, match="--snapshot_bucket"):
        config_from_args(_parse(["--backend=gcp"]))
    # a config built without the flags (the origin's NEWSROOM_* keys, a test) names the real flag and key too
    with pytest.raises(ValueError, match="--snapshot_bucket .*NEWSROOM_SNAPSHOT_BUCKET"):
        _ = StoreConfig(backend="gcp").gcs_bucket


def test_namespaces_get_their_own_embedded_file(tmp_path):
    assert (
        StoreConfig(data_dir=str(tmp_path)).embedded_db
        != StoreConfig(data_dir=str(tmp_path), namespace="bf").embedded_db
    )
