"""``newsroom run --feeds FILE``: the file is imported (its publishers reach every job through the stored registry,
its feeds the feeds table), and a feed the address guard refuses is said at once, with the flag that lifts it;
``--allow_hosts host:port`` lets exactly that host and port through, nothing else."""

from __future__ import annotations

import argparse
import json

import pytest

from devtools.run_feeds import prepare
from stores import StoreConfig, open_stores
from stores.feeds import open_feed_store
from transforms import publisher_store
from transforms.ingest.guard import AddressGuard, BlockedAddress, parse_allow


def test_allow_hosts_lets_exactly_the_listed_host_and_port_through():
    guard = AddressGuard(None, allow="127.0.0.1:8765,feeds.lan")
    assert guard.resolve("127.0.0.1", 8765).ip == "127.0.0.1"
    with pytest.raises(BlockedAddress, match="--allow_hosts 127.0.0.1:22"):
        guard.resolve("127.0.0.1", 22)  # another port of the same host stays guarded
    lan = AddressGuard(None, resolver=lambda h, p: ["10.0.0.7"], allow="feeds.lan")
    assert lan.resolve("feeds.lan", 8080).ip == "10.0.0.7"  # any port of a host listed without one
    with pytest.raises(BlockedAddress):
        lan.resolve("other.lan", 80)
    with pytest.raises(BlockedAddress):
        AddressGuard(None).resolve("127.0.0.1", 8765)  # nothing is allowed unless listed
    assert parse_allow("[::1]:80, Feeds.LAN.") == {("::1", 80), ("feeds.lan", None)}
    with pytest.raises(ValueError, match="--allow_hosts"):
        parse_allow("a.test=127.0.0.1")


def test_ingest_job_takes_allow_hosts():
    from pipelines.ingest_options import IngestOptions, resolve

    job = resolve(IngestOptions(["--allow_hosts=127.0.0.1:8765,[::1]:9"]))
    assert job.context.allow_hosts == ("127.0.0.1:8765", "[::1]:9")
    with pytest.raises(ValueError, match="--allow_hosts"):
        resolve(IngestOptions(["--allow_hosts=http://x/"]))


def run_args(path, allow=""):
    return argparse.Namespace(feeds=str(path), allow_hosts=allow)


def publishers_doc(port: int) -> dict:
    return {
        "publishers": [
            {
                "publisher_id": "loopback-news",
                "name": "Loopback News",
                "hosts": ["127.0.0.1"],
                "region": "us",
                "language": "en",
                "feeds": [{"url": f"http://127.0.0.1:{port}/rss.xml", "kind": "rss"}],
            }
        ]
    }


def test_a_loopback_feed_is_refused_at_once_and_allowed_with_the_flag(tmp_path, capsys):
    config = StoreConfig(data_dir=str(tmp_path / "data"))
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(publishers_doc(8765)))
    said = []
    assert prepare(run_args(path), config, said.append) == 2
    err = capsys.readouterr().err
    assert "feed refused: http://127.0.0.1:8765/rss.xml: blocked_address" in err
    assert "--allow_hosts 127.0.0.1:8765" in err and "no feed can be fetched" in err

    assert prepare(run_args(path, "127.0.0.1:8765"), config, said.append) == 0
    assert "feed refused" not in capsys.readouterr().err
    version, rows = publisher_store.load(open_stores(config))  # every job of the run reads this registry
    assert version is not None and [r["publisher_id"] for r in rows] == ["loopback-news"]
    feeds = open_feed_store(config).list_feeds()
    assert [(f["url"], f["publisher_id"]) for f in feeds] == [("http://127.0.0.1:8765/rss.xml", "loopback-news")]
    assert any("1 of 1 enabled feed(s) reachable" in s for s in said)


def test_a_bad_row_of_the_file_stops_the_run_with_its_line(tmp_path, capsys):
    doc = publishers_doc(8765)
    doc["publishers"][0]["language"] = "English"
    path = tmp_path / "mine.json"
    path.write_text('{"publishers": [\n' + json.dumps(doc["publishers"][0]) + "\n]}\n")
    assert prepare(run_args(path, "127.0.0.1:8765"), StoreConfig(data_dir=str(tmp_path / "d")), print) == 2
    assert "mine.json line 2: publisher 'loopback-news': language must be" in capsys.readouterr().err


def test_newsroom_run_refuses_before_starting_anything(tmp_path, capsys):
    """A refused feed list ends ``newsroom run`` at once (status 2): no emulator, no job, no silent zero."""
    import time

    from pipelines.cli import main as newsroom

    path = tmp_path / "mine.json"
    path.write_text(json.dumps(publishers_doc(8765)))
    started = time.monotonic()
    assert newsroom(["run", "--feeds", str(path), "--data_dir", str(tmp_path / "d"), "--minutes", "0.1"]) == 2
    assert time.monotonic() - started < 30
    assert "feed refused: http://127.0.0.1:8765/rss.xml" in capsys.readouterr().err
    assert not (tmp_path / "d" / "stack").exists()  # the Pub/Sub emulator was never started
