"""The operators' acceptance, on the emulators (Pub/Sub, Bigtable, GCS): an operator imports a publishers file and an
OPML file with the commands, starts the ingest and stories jobs, and an edition page appears whose stories come
from those publishers.

The publishers are the sample world's own outlets (the world serves their feeds and pages on 127.0.0.1 through
the ingest job's host overrides) under new ids and names (``op-...``): a story on the page can only carry such
an id if the stories job read the imported registry from the stores, not the packaged sample baked into the code.
"""

from __future__ import annotations

import json
import threading
import time
from xml.sax.saxutils import quoteattr

import pytest

from pipelines.cli import main as newsroom
from stores import open_stores
from tests.pipelines.commands.test_rollback import store_flags
from tests.pipelines.test_stories_job import pages, store_argv

SPEED = 10.0


def imported_registry(world) -> tuple[list[dict], str]:
    """(publisher rows, OPML text) of the world's publishers, renamed ``op-{id}``."""
    rows, outlines = [], []
    for p in world.registry:
        row = {
            "publisher_id": f"op-{p.publisher_id}",
            "name": f"Imported {p.name}",
            "hosts": list(p.hosts),
            "region": p.region,
            "language": p.language,
            "timezone": p.timezone,
            "authority": p.authority,
            "is_wire": p.is_wire,
            "tier": p.tier,
        }
        if p.city:
            row["city"] = p.city
        rows.append(row)
        for f in p.feeds:
            attrs = {
                "text": row["name"],
                "type": f.get("kind", "rss"),
                "xmlUrl": f["url"],
                "publisher_id": row["publisher_id"],
            }
            outlines.append("      <outline " + " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items()) + "/>")
    opml = "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            '<opml version="2.0">',
            "  <head><title>Operator feeds</title></head>",
            "  <body>",
            '    <outline text="News">',
            *outlines,
            "    </outline>",
            "  </body>",
            "</opml>",
        ]
    )
    return rows, opml


def dead_reasons(stores) -> dict:
    out: dict = {}
    for m in stores.bus.pull("test-dead", 500, timeout=2):
        d = stores.bus.decode("dead-letter", m)
        out[(d["stage"], d["reason"], d.get("detail", "")[:200])] = out.get((d["stage"], d["reason"]), 0) + 1
    return out


@pytest.mark.emulator
@pytest.mark.slow  # ~2.5 min (the streaming stories job on the emulators)
@pytest.mark.timeout(600)
def test_imported_publishers_and_opml_feeds_reach_an_edition_page(gcp_store_config, tmp_path):
    from devtools.world.server import SampleWorld
    from pipelines.ingest_local import LocalIngest
    from pipelines.ingest_options import IngestOptions
    from pipelines.stories import run
    from stores.beam_io import HEARTBEAT_ATTRIBUTE

    config = gcp_store_config
    flags = store_flags(config)
    world = SampleWorld(speed=SPEED, start_s=time.time() - 1700 / SPEED).start()  # the scripted news is out
    stop = threading.Event()
    ingest = result = beat = None
    try:
        rows, opml = imported_registry(world)
        (tmp_path / "publishers.json").write_text(json.dumps({"publishers": rows}, indent=1))
        (tmp_path / "feeds.opml").write_text(opml)
        assert newsroom(["publishers", "import", str(tmp_path / "publishers.json"), *flags]) == 0
        assert newsroom(["feeds", "import", str(tmp_path / "feeds.opml"), *flags]) == 0

        stores = open_stores(config)
        stores.bus.ensure_subscription("items-raw", "stories-items-raw")
        stores.bus.ensure_subscription("dead-letter", "test-dead")
        options = IngestOptions([*store_argv(config), "--feeds=table", "--min_host_delay_s=0"])
        ingest = LocalIngest.from_options(options, host_overrides=world.host_overrides)
        stats = ingest.run(max_run_s=30)  # every feed once (the next polls are minutes away): the world's news
        assert stats.get("pages_fetched", 0) >= 20, stats

        def heartbeat():  # Pub/Sub's watermark follows the wall clock only while messages flow
            while not stop.wait(1.0):
                stores.bus.publish("items-raw", b"", {HEARTBEAT_ATTRIBUTE: "1"})

        beat = threading.Thread(target=heartbeat, daemon=True)
        beat.start()
        result = run(store_argv(config) + ["--embedder=hash", "--editions_only=us-en"], wait=False)

        deadline, page = time.time() + 300, None
        while time.time() < deadline and page is None:
            time.sleep(5)
            if stores.pointers.get("us-en/top") is not None:
                history = pages(stores, "us-en/top")
                page = next((history[v] for v in sorted(history, reverse=True) if history[v]["stories"]), None)
        assert page is not None, (
            f"no us-en/top page within 7 minutes; ingest: {stats}; stories job: {result.state}; "
            f"pointers: {sorted(stores.pointers.names())[:20]}; dead letters: {dead_reasons(stores)}"
        )
        shown = {s["representative"]["publisher_id"] for s in page["stories"]}
        shown |= {a["publisher_id"] for s in page["stories"] for a in s["supporting"]}
        imported = {r["publisher_id"] for r in rows}
        assert shown and shown <= imported, shown - imported
        names = {s["representative"].get("publisher_name") for s in page["stories"]}
        assert all(n and n.startswith("Imported ") for n in names), names
    finally:
        if result is not None:  # before the heartbeat stops: its pull returns at the next message, not after 30 s
            result.cancel()
        stop.set()
        if beat is not None:
            beat.join(timeout=5)
        if ingest is not None:
            ingest.stop()
        world.stop()
