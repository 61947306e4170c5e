"""Fixtures of the origin tests: embedded stores in a temp dir, a small published world, the app and tokens."""

from __future__ import annotations

import pytest

from serving.http.auth import issue_token
from stores import StoreConfig, open_stores
from stores.profiles import open_profile_store
from tests.serving.helpers import TOKEN_SECRET, make_app, publish_world


@pytest.fixture
def stores(tmp_path):
    return open_stores(StoreConfig(data_dir=str(tmp_path / "data")))


@pytest.fixture
def profiles(tmp_path, stores):
    return open_profile_store(StoreConfig(data_dir=str(tmp_path / "data")))


@pytest.fixture
def world(stores):
    publish_world(stores)
    return stores


@pytest.fixture
def app(world, profiles):
    app = make_app(world, profiles)
    yield app
    app.extensions["newsroom"].close()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def token():
    return lambda reader: issue_token(TOKEN_SECRET, reader)


@pytest.fixture
def auth(token):
    return lambda reader: {"Authorization": f"Bearer {token(reader)}"}
