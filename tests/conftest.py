"""Fixtures shared by the whole suite (other test folders rely on these names; keep them stable).

- ``repo_root``: the checkout's root (Path).
- ``shared_data``: ../shared/data next to the checkout (labelled data); the test is skipped when it is absent.
- ``emulator_stack``: session-scoped; starts the Pub/Sub, Bigtable and GCS emulators once (devtools/emulators.py), sets
  PUBSUB_EMULATOR_HOST / BIGTABLE_EMULATOR_HOST / STORAGE_EMULATOR_HOST / GOOGLE_CLOUD_PROJECT for the session and
  stops the emulators (by process group) at the end. Skips, naming what is missing, when a binary is absent. Only
  tests marked ``@pytest.mark.emulator`` should use it.
- ``gcp_store_config``: a StoreConfig(backend="gcp") with a fresh namespace (own tables, topics, object prefix),
  provisioned on the emulators.
- ``embedded_store_config``: a StoreConfig(backend="embedded") under tmp_path.
- ``store_config``: parametrised over both ("embedded", "gcp"; the gcp case carries the emulator marker).
- ``sample_record``: ``sample_record(name, **overrides)`` returns a fresh, realistic, valid record of any message of
  schemas.codec.MESSAGES.

In CI (``CI`` set to anything but empty/0/false, as `.ci/run` runs) a skip is a failure: the emulator, edge and
browser tests must run there, not be skipped for a missing binary. The one exception is ../shared/data (the project
needs none of it to install, run or pass): its skip reason starts with ``labelled data not present``.
"""

from __future__ import annotations

import copy
import os
import sys
import uuid
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA_SKIP = "labelled data not present"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI, turn a skip (other than missing ../shared/data) into a failure that keeps the skip's reason."""
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and in_ci()) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if SHARED_DATA_SKIP in reason:
        return
    report.outcome = "failed"
    report.longrepr = f"skipped in CI, which must run every test (set CI= to allow skips locally): {reason}"


@pytest.fixture(autouse=True)
def _collector_unparked():
    """A test that set up a ranking worker turned on the parking of the collector's survivors for this process
    (transforms/editions/cycle/collector.py): it is turned off after every test, and what it parked is handed back,
    so one test's garbage is never kept from the collector in the next."""
    yield
    collector = sys.modules.get("transforms.editions.cycle.collector")
    if collector is not None:
        collector.stop_parking()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_data(repo_root) -> Path:
    path = repo_root.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"{SHARED_DATA_SKIP} at {path} (../shared/data next to the checkout)")
    return path


@pytest.fixture(scope="session")
def emulator_stack(tmp_path_factory):
    from devtools import emulators as stack

    try:
        stack.find_binaries()
    except stack.MissingBinaries as exc:
        pytest.skip(str(exc))
    data_dir = tmp_path_factory.mktemp("emulators")
    state = stack.start(data_dir, project="newsroom-test", tie_to_parent=True)
    env = state.env()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield state
    finally:
        stack.stop(data_dir)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def gcp_store_config(emulator_stack, tmp_path):
    from devtools import emulators as stack

    config = stack.stack_config(emulator_stack, namespace=f"t{uuid.uuid4().hex[:12]}", data_dir=str(tmp_path))
    stack.provision(config)
    return config


@pytest.fixture
def embedded_store_config(tmp_path):
    from stores import StoreConfig

    return StoreConfig(backend="embedded", data_dir=str(tmp_path / "newsroom"))


@pytest.fixture(params=["embedded", pytest.param("gcp", marks=pytest.mark.emulator)])
def store_config(request):
    return request.getfixturevalue(f"{request.param}_store_config")


# --------------------------------------------------------------------------------------------------------------
# Realistic records of every message type (floats are exact in float32 so that records compare equal after Avro).

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms

_ARTICLE = {
    "schema_version": 1,
    "article_id": "3f0c6a1e9b2d4c8f7a6e5d4c3b2a1908",
    "version": 1,
    "canonical_url": "https://www.example-news.com/world/2026/01/01/flood-warnings-issued",
    "canonical_source": "rel_canonical",
    "fetched_url": "https://www.example-news.com/world/2026/01/01/flood-warnings-issued?utm_source=rss",
    "raw_item_id": "9a8b7c6d5e4f30211203948576afbecd",
    "publisher_id": "example-news",
    "publisher_name": "Example News",
    "language": "en",
    "title": "Flood warnings issued as river levels rise across the valley",
    "lede": "Residents in low-lying areas were told to prepare for evacuation on Thursday.",
    "body": "Residents in low-lying areas were told to prepare for evacuation on Thursday. "
    "The river rose 1.2 metres overnight, the agency said. \u00c9vacuation centres opened in three towns.",
    "image_url": "https://img.example-news.com/flood.jpg",
    "published_at": T0 - 60_000,
    "first_seen_at": T0,
    "modified_at": None,
    "entities": [
        {"id": "Q1234", "name": "Valley River Agency", "kind": "ORG"},
        {"id": "springfield", "name": "Springfield", "kind": "PLACE"},
    ],
    "keywords": ["flood", "evacuation"],
    "section": "world",
    "topics": ["weather"],
    "is_opinion": False,
    "is_fact_check": False,
    "content_hash": "5d41402abc4b2a76b9719d911017c592a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5",
    "copy_of": None,
    "syndication_group": None,
    "stated_published_at": None,  # revision 2 (schemas/codec.py REVISION), at its defaults: the revision-1
    "accessible_for_free": True,  # bytes of tests/schemas/data/revision1.json decode to this sample
    "image_width": None,
    "image_height": None,
}

SAMPLES: dict[str, dict] = {
    "RawItem": {
        "schema_version": 1,
        "item_id": "9a8b7c6d5e4f30211203948576afbecd",
        "source": "FEED",
        "feed_url": "https://www.example-news.com/rss/world.xml",
        "publisher_id": "example-news",
        "fetched_url": "https://www.example-news.com/world/2026/01/01/flood-warnings-issued?utm_source=rss",
        "final_url": "https://www.example-news.com/world/2026/01/01/flood-warnings-issued",
        "http_status": 200,
        "headers": {"content-type": "text/html; charset=utf-8", "etag": '"abc123"'},
        "body": "<html><head><title>Flood warnings</title></head><body><p>\u00c9vacuation</p></body></html>".encode(),
        "fetched_at": T0 + 1500,
        "first_seen_at": T0,
        "entry": {
            "guid": "https://www.example-news.com/?p=123456",
            "title": "Flood warnings issued",
            "link": "https://www.example-news.com/world/2026/01/01/flood-warnings-issued?utm_source=rss",
            "published": "Thu, 01 Jan 2026 00:59:00 +0100",
            "summary": "Residents told to prepare.",
            "language": "en-gb",
            "categories": ["World", "Weather"],
        },
    },
    "Article": _ARTICLE,
    "StoryChange": {
        "schema_version": 1,
        "change_id": "en-000000000042-ASSIGN",
        "language": "en",
        "seq": 42,
        "kind": "ASSIGN",
        "story_id": 7_394_201_113_445_597_184,
        "other_story_id": None,
        "article_id": _ARTICLE["article_id"],
        "article_ids": [],
        "is_copy": False,
        "score": 0.8125,
        "at": T0,
        "centroid": [0.25, -0.5, 0.125, 0.0, 1.0],
        "article": _ARTICLE,
    },
    "FetchRequest": {
        "schema_version": 1,
        "request_id": "ping-example-news-1767225600",
        "kind": "PING",
        "feed_url": "https://www.example-news.com/rss/world.xml",
        "url": None,
        "publisher_id": "example-news",
        "priority": 2,
        "reason": "publisher ping",
        "requested_at": T0,
        "expires_at": T0 + 300_000,
    },
    "ReadEvent": {
        "schema_version": 1,
        "event_id": "e-5b1f0c2a",
        "reader_id": "r-8f14e45fceea167a",
        "kind": "READ",
        "edition": "en-us",
        "story_id": 7_394_201_113_445_597_184,
        "article_id": _ARTICLE["article_id"],
        "at": T0 + 120_000,
        "dwell_ms": 45_000,
    },
    "DeadLetter": {
        "schema_version": 1,
        "stage": "normalize",
        "reason": "future_date",
        "detail": "published 2031-01-01T00:00:00Z is in the future",
        "key": "https://www.example-news.com/world/2026/01/01/flood-warnings-issued",
        "payload": b"\x00\x01raw bytes\xff",
        "at": T0,
    },
    "Breaking": {
        "schema_version": 1,
        "breaking_id": "en-us-7394201113445597184",
        "story_id": 7_394_201_113_445_597_184,
        "edition": "en-us",
        "sections": ["top", "world"],
        "labels": ["breaking", "fact_check"],
        "first_seen": T0 + 60_000,
        "representative": {
            "article_id": _ARTICLE["article_id"],
            "url": "https://www.example-news.com/world/2026/01/01/flood-warnings-issued",
            "title": "Flood warnings issued",
            "publisher_id": "example-news",
            "publisher_name": "Example News",
            "language": "en",
            "image_url": None,
        },
        "emitted_at": T0 + 61_500,
    },
    "StorylineChange": {
        "schema_version": 1,
        "change_id": "storyline-000000000001-ATTACH-5e0c3a1b",
        "seq": 1,
        "kind": "ATTACH",
        "storyline_id": 7_394_201_113_445_597_011,
        "other_storyline_id": None,
        "story_id": 7_394_201_113_445_597_184,
        "story_ids": [],
        "language": "en",
        "entities": ["flood", "thames"],
        "score": 1.23,
        "at": T0 + 60_000,
    },
}


def make_sample(name: str, **overrides) -> dict:
    record = copy.deepcopy(SAMPLES[name])
    record.update(copy.deepcopy(overrides))
    return record


@pytest.fixture(scope="session")
def sample_record():
    return make_sample


def pytest_collection_modifyitems(config, items):
    # A test that needs the emulators is an emulator test even if its author forgot the marker, so that
    # `-m "not emulator"` reliably runs without them.
    for item in items:
        if "emulator_stack" in getattr(item, "fixturenames", ()) and item.get_closest_marker("emulator") is None:
            item.add_marker(pytest.mark.emulator)
