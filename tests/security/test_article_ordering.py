"""Ordering: when a newer fetch of an article is processed before an older one, the older one
must not overwrite the corrected headline. On 60feb56 items-raw had no ordering key and the store judged STALE only
for texts it already knew, so the late older fetch became the next version."""

from __future__ import annotations

import pytest

from stores import StoreConfig, open_store
from tests.transforms.articles.conftest import HOUR, T0, WIRE_REPORT, make_html, make_raw
from transforms.articles.dedupe import NEW, STALE, UPDATE, decide
from transforms.articles.normalize import Normalizer
from transforms.articles.urls import article_id

URL = "https://dailyherald.test/world/quake"


def fetch(title: str, at: int, modified: str | None = None) -> dict:
    html = make_html(title, WIRE_REPORT, canonical=URL)
    if modified:
        html = html.replace(b"</head>", f'<meta property="article:modified_time" content="{modified}"></head>'.encode())
    return make_raw(URL, html, fetched_at=at, first_seen_at=at - 5_000)


@pytest.fixture
def store(tmp_path):
    return open_store("articles", StoreConfig(backend="embedded", data_dir=str(tmp_path / "store")))


@pytest.mark.parametrize("stated", [False, True], ids=["fetch-time", "modified-time"])
def test_newer_fetch_first_then_older_keeps_the_newest(store, stated):
    norm = Normalizer(clock=lambda: T0 + 10 * HOUR)
    original = fetch("Quake hits coast, forty hurt", T0 + HOUR, "2026-01-01T01:00:00Z" if stated else None)
    corrected = fetch("Quake hits coast, four hurt", T0 + 2 * HOUR, "2026-01-01T02:00:00Z" if stated else None)
    assert decide(store, norm.normalize(corrected)).outcome == NEW  # the newer fetch is processed first
    late = decide(store, norm.normalize(original))  # the older fetch arrives late
    assert late.outcome == STALE and not late.emit
    kept = store.get(article_id(URL))
    assert kept["title"] == "Quake hits coast, four hurt" and kept["version"] == 1
    # the order still lets a genuinely newer fetch through
    newest = fetch("Quake hits coast, five hurt", T0 + 3 * HOUR, "2026-01-01T03:00:00Z" if stated else None)
    assert decide(store, norm.normalize(newest)).outcome == UPDATE
    assert store.get(article_id(URL))["title"] == "Quake hits coast, five hurt"


def test_in_order_fetches_still_update(store):
    norm = Normalizer(clock=lambda: T0 + 10 * HOUR)
    assert decide(store, norm.normalize(fetch("Quake hits coast, forty hurt", T0 + HOUR))).outcome == NEW
    assert decide(store, norm.normalize(fetch("Quake hits coast, four hurt", T0 + 2 * HOUR))).outcome == UPDATE
    assert store.get(article_id(URL))["version"] == 2


def test_ordering_key_is_per_canonical_ish_url():
    from transforms.ingest.ordering import ordering_key, raw_item_key

    same = [
        "https://dailyherald.test/world/quake",
        "http://www.dailyherald.test/world/quake/",
        "https://DailyHerald.test/world/quake?utm_source=rss&utm_medium=feed",
        "https://dailyherald.test/world/quake/amp",
        "https://dailyherald.test/world/quake#comments",
    ]
    assert len({ordering_key(u) for u in same}) == 1
    assert ordering_key("https://dailyherald.test/world/flood") != ordering_key(same[0])
    assert ordering_key("https://dailyherald.test/world/quake?id=2") != ordering_key(same[0])  # real query kept
    assert len(ordering_key("https://dailyherald.test/" + "x" * 5000)) == 32  # bounded (Pub/Sub: 1 KB)
    assert raw_item_key(fetch("t", T0)) == ordering_key(URL)


def test_raw_items_are_published_with_their_ordering_key(tmp_path):
    """The Beam publisher of the ingest graph (and LocalIngest, same call) sends the key; the embedded bus keeps it."""
    from stores.beam_io import PublishToBusFn
    from transforms.ingest.ordering import ordering_key, raw_item_key

    config = StoreConfig(backend="embedded", data_dir=str(tmp_path / "store"))
    bus = open_store("bus", config)
    bus.ensure_subscription("items-raw", "raw-sub")
    fn = PublishToBusFn(config, "items-raw", "RawItem", ordering_key=raw_item_key)
    fn.setup()
    fn.start_bundle()
    fn.process(fetch("Quake hits coast", T0))
    fn.finish_bundle()
    (msg,) = bus.pull("raw-sub", timeout=1.0)
    assert msg.attributes["ordering_key"] == ordering_key(URL)
