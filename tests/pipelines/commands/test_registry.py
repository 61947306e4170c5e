"""``newsroom publishers`` and ``newsroom feeds``: the registries as data, on both backends (embedded, and the
Bigtable + GCS emulators), bad rows refused with their line, and the running jobs' registry following imports."""

from __future__ import annotations

import json

import pytest

from pipelines.cli import main as newsroom
from stores import open_stores
from stores.feeds import open_feed_store
from tests.pipelines.commands.test_rollback import store_flags
from transforms import publisher_store
from transforms.registry_files import RowError, read_feeds, read_publishers

RIVERSIDE = {
    "publisher_id": "riverside",
    "name": "Riverside Gazette",
    "hosts": ["riverside.example"],
    "region": "us",
    "language": "en",
    "timezone": "America/Chicago",
    "authority": 0.8,
    "is_wire": True,
    "tier": "authoritative",
    "feeds": [{"url": "http://riverside.example/rss.xml", "kind": "rss"}],
}
HILL = {"publisher_id": "hill", "name": "Hill Times", "hosts": ["hill.example"], "region": "gb", "language": "en"}

OPML = """<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0">
  <head><title>My reading</title></head>
  <body>
    <outline text="News">
      <outline text="Riverside" type="rss" xmlUrl="http://riverside.example/rss.xml"/>
      <outline text="Hill" type="atom" xmlUrl="https://hill.example/atom" publisher_id="hill"/>
    </outline>
  </body>
</opml>
"""


def publishers_file(tmp_path, rows, name="publishers.json"):
    path = tmp_path / name
    path.write_text('{"version": 1, "publishers": [\n' + ",\n".join(json.dumps(r) for r in rows) + "\n]}\n")
    return str(path)


def test_a_bad_publisher_row_is_refused_with_its_line_and_reason():
    text = "\n".join(
        [
            '{"doc": "x",',
            ' "publishers": [',
            json.dumps(RIVERSIDE) + ",",
            json.dumps(dict(HILL, region="GBR")) + ",",
            json.dumps(dict(HILL, publisher_id="hill2", hosts=["riverside.example"])) + ",",
            "  " + json.dumps(dict(HILL, publisher_id="hill3", hosts=["h3.example"], colour="red")),
            "]}",
        ]
    )
    with pytest.raises(RowError) as err:
        read_publishers(text)
    lines = dict(err.value.errors)
    assert sorted(lines) == [4, 5, 6]
    assert "region" in lines[4] and "'GBR'" in lines[4]
    assert "riverside.example" in lines[5] and "line 3" in lines[5]
    assert "unknown field 'colour'" in lines[6]
    jsonl = json.dumps(HILL) + "\n\n" + json.dumps(dict(RIVERSIDE, timezone="Mars/Olympus")) + "\n"
    with pytest.raises(RowError) as err:
        read_publishers(jsonl)
    assert err.value.errors[0][0] == 3 and "timezone" in err.value.errors[0][1]
    with pytest.raises(RowError) as err:  # a city must be a gazetteer place of the region
        read_publishers(json.dumps([dict(HILL, city="atlantis")]))
    assert "atlantis" in err.value.errors[0][1]
    with pytest.raises(ValueError, match="line 2: not JSON"):
        read_publishers("{\n\x01}")


def test_opml_and_json_feeds_read_with_lines_and_round_trip():
    from transforms.publishers import PublisherRegistry
    from transforms.registry_files import feeds_json, feeds_opml

    registry = PublisherRegistry.from_dicts(read_publishers(json.dumps([RIVERSIDE, HILL])))
    entries = read_feeds(OPML, registry)
    assert entries == [
        {
            "url": "http://riverside.example/rss.xml",
            "publisher_id": "riverside",
            "tier": "authoritative",
            "kind": "rss",
            "enabled": True,
        },
        {
            "url": "https://hill.example/atom",
            "publisher_id": "hill",
            "tier": "long_tail",
            "kind": "atom",
            "enabled": True,
        },
    ]
    disabled = [dict(entries[0], enabled=False), entries[1]]
    assert read_feeds(feeds_opml(disabled, registry), registry) == disabled
    assert read_feeds(feeds_json(disabled), registry) == disabled
    bad = OPML.replace('publisher_id="hill"', 'publisher_id="nobody"').replace("http://riverside", "gopher://riverside")
    with pytest.raises(RowError) as err:
        read_feeds(bad, registry)
    assert [n for n, _ in err.value.errors] == [6, 7]
    assert "http(s)" in err.value.errors[0][1] and "'nobody'" in err.value.errors[1][1]
    with pytest.raises(ValueError, match="line 3: not OPML"):
        read_feeds("<opml>\n<body>\n<outline></body></opml>", registry)


def test_import_list_export_disable_on_both_backends(store_config, tmp_path, capsys):
    flags = store_flags(store_config)
    pubs = publishers_file(tmp_path, [RIVERSIDE, HILL])
    opml = tmp_path / "feeds.opml"
    opml.write_text(OPML)
    stores = open_stores(store_config)

    bad = publishers_file(tmp_path, [RIVERSIDE, dict(HILL, tier="sometimes")], "bad.json")
    assert newsroom(["publishers", "import", bad, *flags]) == 2
    err = capsys.readouterr().err
    assert "bad.json line 3: publisher 'hill': tier must be one of" in err and "nothing imported" in err
    assert publisher_store.load(stores) == (None, None)  # nothing written
    assert newsroom(["feeds", "import", str(opml), *flags]) == 2  # hill is not registered yet
    assert "feeds.opml line 7: publisher_id 'hill' is not in the publisher registry" in capsys.readouterr().err
    assert open_feed_store(store_config).list_feeds() == []

    assert newsroom(["publishers", "import", pubs, *flags]) == 0
    version, rows = publisher_store.load(stores)
    assert version == 1 and [r["publisher_id"] for r in rows] == ["hill", "riverside"]
    assert newsroom(["feeds", "import", str(opml), *flags]) == 0
    capsys.readouterr()
    assert newsroom(["feeds", "disable", "https://hill.example/atom", *flags]) == 0
    assert newsroom(["feeds", "list", *flags]) == 0
    listed = capsys.readouterr().out
    assert "https://hill.example/atom\thill\tlong_tail\tatom\tDISABLED" in listed
    assert "http://riverside.example/rss.xml\triverside\tauthoritative\trss\tenabled" in listed
    assert newsroom(["feeds", "export", "--format", "opml", *flags]) == 0
    exported = capsys.readouterr().out
    assert 'enabled="false"' in exported and 'publisher_id="riverside"' in exported

    again = publishers_file(tmp_path, [dict(HILL, authority=0.3)], "again.json")  # merged by id
    assert newsroom(["publishers", "import", again, *flags]) == 0
    assert "0 added, 1 changed, 0 removed, 2 in the registry" in capsys.readouterr().out
    assert newsroom(["publishers", "export", *flags]) == 0
    assert {r["publisher_id"]: r.get("authority") for r in read_publishers(capsys.readouterr().out)} == {
        "hill": 0.3,
        "riverside": 0.8,
    }
    clash = publishers_file(tmp_path, [dict(HILL, publisher_id="hill-2")], "clash.json")
    assert newsroom(["publishers", "import", clash, *flags]) == 2
    assert "clash.json line 2: publisher 'hill-2': host 'hill.example' belongs to stored publisher 'hill'" in (
        capsys.readouterr().err
    )
    assert [e["action"] for e in stores_audit(store_config)].count("publishers-import") == 2


def stores_audit(config):
    from stores.audit import open_audit_log

    return open_audit_log(config).entries("registry:")


def test_the_running_registry_follows_an_import(embedded_store_config, tmp_path):
    """What the stories job's stages hold (LiveRegistry, and the ranker's AuthorityWatcher over it): the packaged
    sample before any import, the stored registry within one refresh after it, with no restart."""
    from transforms.authority import AuthorityWatcher

    t = [0.0]
    live = publisher_store.LiveRegistry(None, embedded_store_config, refresh_s=180, clock=lambda: t[0])
    assert live.version is None and live.registry.get("wirepress") is not None  # the sample world
    stores = open_stores(embedded_store_config)
    publisher_store.publish(stores, read_publishers(json.dumps([RIVERSIDE, HILL])), reason="test")
    assert not live.poll() and live.registry.get("riverside") is None  # not due yet
    t[0] = 181.0
    assert live.poll() and live.version == 1
    assert live.registry.get("wirepress") is None and live.registry.for_host("www.riverside.example").is_wire
    watcher = AuthorityWatcher(None, embedded_store_config)
    assert watcher.registry.get("riverside").authority == 0.8
