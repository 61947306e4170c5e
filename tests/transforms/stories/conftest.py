"""Fixtures of the stories tests (helpers in synth.py)."""

import pytest

from tests.transforms.stories.synth import TEST_CONFIG, make_articles


@pytest.fixture
def synthetic():
    return make_articles()


@pytest.fixture
def test_config():
    return TEST_CONFIG
