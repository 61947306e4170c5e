"""The feed registry: packaged default, JSON files in three shapes, the feeds table; edits reach a running job."""

from __future__ import annotations

import json

import pytest

from stores import StoreConfig
from stores.feeds import open_feed_store
from transforms.ingest.registry import load_feeds


def test_default_registry_is_the_sample_worlds_feeds():
    feeds = load_feeds("default")
    assert len(feeds) == 16 and len({f["url"] for f in feeds}) == 16
    kinds = {f["kind"] for f in feeds}
    assert kinds == {"rss", "atom", "sitemap"}
    herald = next(f for f in feeds if f["publisher_id"] == "daily-herald")
    assert herald["tier"] == "authoritative" and herald["enabled"]


@pytest.mark.parametrize("shape", ["list", "feeds", "publishers"])
def test_json_files(tmp_path, shape):
    entry = {"url": "https://news.example.org/rss", "kind": "rss"}
    doc = {
        "list": [entry],
        "feeds": {"feeds": [entry]},
        "publishers": {
            "publishers": [
                {
                    "publisher_id": "ex",
                    "name": "Ex",
                    "hosts": ["news.example.org"],
                    "region": "",
                    "language": "en",
                    "tier": "authoritative",
                    "feeds": [entry],
                }
            ]
        },
    }[shape]
    path = tmp_path / "feeds.json"
    path.write_text(json.dumps(doc))
    (f,) = load_feeds(str(path))
    assert f["url"] == entry["url"] and f["kind"] == "rss"
    if shape == "publishers":
        assert (f["publisher_id"], f["tier"]) == ("ex", "authoritative")
    else:
        assert (f["publisher_id"], f["tier"]) == ("news.example.org", "long_tail")  # unknown host: provisional


@pytest.mark.parametrize("bad", [{"url": "ftp://x.test/feed"}, {"url": "http://x.test/f", "kind": "json"}])
def test_bad_entries_fail_naming_the_problem(tmp_path, bad):
    path = tmp_path / "feeds.json"
    path.write_text(json.dumps([bad]))
    with pytest.raises(ValueError):
        load_feeds(str(path))


def test_feeds_table_is_read_on_every_reload(tmp_path):
    store = open_feed_store(StoreConfig(data_dir=str(tmp_path)))
    assert load_feeds("table", store) == []
    store.put_feed({"url": "http://dailyherald.test/rss.xml"})
    (f,) = load_feeds("table", store)
    assert f["publisher_id"] == "daily-herald" and f["tier"] == "authoritative"
    store.put_feed({"url": "http://dailyherald.test/rss.xml", "enabled": False})
    assert load_feeds("table", store)[0]["enabled"] is False
