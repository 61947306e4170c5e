"""The ingest job: options, the Beam graph under TestStream against the sample world, and the local driver with the
origin's WebSub and ping endpoints end to end (world -> hub push / ping -> origin -> bus -> ingest -> items-raw)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from devtools.world.server import SampleWorld
from schemas import codec
from stores import StoreConfig, open_store, open_stores

WORLD_AT = 1000.0


@pytest.fixture(autouse=True)
def only_loopback(monkeypatch):
    real_connect = socket.socket.connect

    def guarded(self, address):
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise AssertionError(f"connection attempt to {address!r}: only loopback is allowed")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


def ingest_options(tmp_path, *extra):
    from pipelines.ingest_options import IngestOptions

    return IngestOptions([f"--data_dir={tmp_path / 'data'}", "--min_host_delay_s=0", "--fetch_workers=2", *extra])


def write_feeds(tmp_path, world, urls) -> str:
    path = tmp_path / "feeds.json"
    path.write_text(json.dumps({"feeds": [f for f in world.feeds() if f["url"] in urls]}))
    return str(path)


def topic_records(data_dir, topic, message):
    bus = open_store("bus", StoreConfig(data_dir=str(data_dir)))
    bus.ensure_subscription(topic, f"test-{topic}-{time.monotonic_ns()}")
    conn = bus.db.connect()
    rows = conn.execute("SELECT data FROM bus_messages WHERE topic=? ORDER BY id", (topic,)).fetchall()
    return [codec.decode(message, r[0]) for r in rows]


# ------------------------------------------------------------------------------------------------ options


@pytest.mark.parametrize(
    "flag",
    [
        "--poll_max_s=0",
        "--schedule_scale=-1",
        "--host_overrides=a.test=nope",
        "--websub_callback_base=ftp://x",
        "--poll_floor_long_tail_s=7200",
    ],
)
def test_bad_flags_fail_fast_naming_the_flag(tmp_path, flag):
    from pipelines.ingest_options import resolve

    name = flag.split("=")[0]
    with pytest.raises(ValueError, match=name.lstrip("-") if name != "--poll_floor_long_tail_s" else "poll_max_s"):
        resolve(ingest_options(tmp_path, flag))


def test_every_flag_documents_its_default():
    import argparse

    from pipelines.ingest_options import IngestOptions

    parser = argparse.ArgumentParser()
    IngestOptions._add_argparse_args(parser)
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            assert "Default" in (action.help or ""), action.dest


# ------------------------------------------------------------------------------------------------ Beam graph


def test_ingest_feeds_under_teststream(tmp_path):
    """Registry entries at t=0 -> first polls; processing time advances -> timer polls (304s); a ping triggers a
    poll; the broken feed is dead-lettered while the others keep being polled."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.test_stream import TestStream
    from apache_beam.testing.util import assert_that, equal_to
    from apache_beam.transforms import trigger, window

    from pipelines.ingest_options import resolve
    from transforms.ingest.beam import IngestFeeds

    world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    try:
        urls = [
            "http://dailyherald.test/rss.xml",
            "http://northernecho.test/feeds/sport.xml",
            "http://agenciasur.test/rss/ultima-hora.xml",
        ]
        feeds = {f["url"]: f for f in world.feeds() if f["url"] in urls}
        options = ingest_options(tmp_path, "--schedule_scale=0.01")  # floors 0.6 s / 3 s, max 36 s
        ctx = resolve(options).local_context(host_overrides=world.host_overrides)
        ping = {
            "schema_version": 1,
            "request_id": "p1",
            "kind": "PING",
            "feed_url": urls[2],
            "url": None,
            "publisher_id": "agencia-sur",
            "priority": 0,
            "reason": "ping",
            "requested_at": 0,
            "expires_at": None,
        }
        stream = (
            TestStream()
            .add_elements([(u, {"config": feeds[u]}) for u in urls])
            .advance_processing_time(40)
            .add_elements([(urls[2], {"request": ping})])
            .advance_processing_time(40)
            .advance_watermark_to_infinity()
        )
        p = beam.Pipeline(runner="BundleBasedDirectRunner", options=PipelineOptions(["--streaming"]))
        out = p | stream | IngestFeeds(ctx, clock=lambda: 0, sleep=lambda s: None)

        def final(pcoll, label):  # one pane when the watermark reaches the end (TestStream ends at infinity)
            return pcoll | label >> beam.WindowInto(
                window.GlobalWindows(),
                trigger=trigger.AfterWatermark(),
                accumulation_mode=trigger.AccumulationMode.DISCARDING,
            )

        urls_fetched = final(out["items"], "WindowItems") | "Urls" >> beam.Map(lambda r: r["fetched_url"])
        herald = sorted(
            a["url"]
            for a in world.articles.values()
            if a["pub"] == "daily-herald" and world.is_public(a, world.clock.now_ms())
        )
        sur = sorted(
            a["url"]
            for a in world.articles.values()
            if a["pub"] == "agencia-sur" and world.is_public(a, world.clock.now_ms())
        )
        assert_that(urls_fetched, equal_to(herald + sur), label="EachItemOnce")
        reasons = final(out["dead_letters"], "WindowDead") | "Reasons" >> beam.Map(lambda d: (d["reason"], d["key"]))
        assert_that(reasons | beam.Distinct(), equal_to([("malformed_feed", urls[1])]), label="BrokenFeedDeadLettered")
        p.run().wait_until_finish()
        herald_polls = world.requests_for("dailyherald.test", "/rss.xml")
        sur_polls = world.requests_for("agenciasur.test", "/rss/ultima-hora.xml")
        broken_polls = world.requests_for("northernecho.test", "/feeds/sport.xml")
        # Timer polls went on after the first poll (conditional: 304 with no body), for the broken feed too.
        assert len(herald_polls) >= 2 and {r["status"] for r in herald_polls[1:]} == {304}
        assert len(sur_polls) >= 3 and len(broken_polls) >= 2
        # Pages were fetched once each.
        for u in herald + sur:
            path = u.split(".test", 1)[1]
            assert len(world.requests_for(u.split("/")[2], path)) == 1, u
    finally:
        world.stop()


def test_pipeline_translates_for_dataflow(tmp_path):
    """build_pipeline builds a complete streaming graph (offline Dataflow dry run when available)."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.ingest import build_pipeline
    from pipelines.ingest_options import resolve

    options = PipelineOptions([f"--data_dir={tmp_path}", "--streaming"])
    p = beam.Pipeline(runner="BundleBasedDirectRunner", options=options)
    out = build_pipeline(p, resolve(options))
    labels = {t.full_label for t in p.transforms_stack[0].parts}
    assert {
        "RegistryTicks",
        "LoadFeedRegistry",
        "ReadFetchRequests",
        "DecodeFetchRequests",
        "IngestFeeds",
        "PublishRawItems",
        "PublishDeadLetters",
    } <= labels
    assert set(out) == {"items", "dead_letters"}
    proto = p.to_runner_api()
    assert any("ScheduleFeeds" in t.unique_name for t in proto.components.transforms.values())


# ------------------------------------------------------------------------------------------------ local driver


def test_local_ingest_broken_feed_does_not_stop_the_others_and_resume_fetches_nothing_twice(tmp_path):
    from pipelines.ingest_local import LocalIngest

    world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    try:
        urls = [
            "http://wirepress.test/feeds/world.xml",
            "http://northernecho.test/feeds/sport.xml",
            "http://lequotidien.test/sitemap-news.xml",
        ]
        opts = ingest_options(tmp_path, f"--feeds={write_feeds(tmp_path, world, urls)}", "--schedule_scale=0.002")
        ingest = LocalIngest.from_options(opts, host_overrides=world.host_overrides)
        stats = ingest.run(max_run_s=3.0)
        ingest.stop()
        assert stats["dead_letter:malformed_feed"] >= 2  # polled again (backing off) and dead-lettered again
        assert stats["polls"] >= 6 and stats["pages_fetched"] > 0
        items = topic_records(tmp_path / "data", "items-raw", "RawItem")
        assert len(items) == stats["pages_fetched"] == len({i["item_id"] for i in items})
        assert {i["publisher_id"] for i in items} == {"wirepress", "le-quotidien"}
        assert {d["reason"] for d in topic_records(tmp_path / "data", "dead-letter-ingest", "DeadLetter")} == {
            "malformed_feed"
        }
        page_gets = sum(1 for r in world.requests_for() if r["path"].startswith("/news/"))

        again = LocalIngest.from_options(opts, host_overrides=world.host_overrides)  # restart: resumes checkpoints
        stats2 = again.run(max_run_s=1.5)
        again.stop()
        assert stats2.get("pages_fetched", 0) == 0 and stats2.get("new_items", 0) == 0
        assert sum(1 for r in world.requests_for() if r["path"].startswith("/news/")) == page_gets
        assert len(topic_records(tmp_path / "data", "items-raw", "RawItem")) == len(items)
    finally:
        world.stop()


def serve_origin(app):
    from werkzeug.serving import make_server

    srv = make_server("127.0.0.1", 0, app, threaded=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    return srv, f"http://127.0.0.1:{srv.server_port}"


def test_websub_push_ping_and_poll_fetch_a_new_item_once(tmp_path):
    """World hub -> origin callback (verified subscription, signed delivery) and world ping -> origin -> bus ->
    local ingest, plus the regular poll: the new article's page is fetched exactly once."""
    from pipelines.ingest_local import LocalIngest
    from stores.feeds import open_feed_store
    from stores.profiles import open_profile_store
    from tests.serving.helpers import make_app

    cfg = StoreConfig(data_dir=str(tmp_path / "data"))
    stores = open_stores(cfg)
    app = make_app(
        stores,
        open_profile_store(cfg),
        WEBSUB_SUBSCRIPTIONS=open_feed_store(cfg),
        NEWSROOM_PING_KEYS={"wirepress": "wire-key"},
    )
    srv, origin = serve_origin(app)
    world = SampleWorld(
        speed=1.0, start_s=time.time() - WORLD_AT, ping_url=origin + "/v1/ping", ping_keys={"wirepress": "wire-key"}
    )
    slug = "calder-bay-quake-injuries-power"
    world.articles[slug]["at"] = 10**9  # not yet published
    world.start()
    try:
        feed = "http://wirepress.test/feeds/world.xml"
        opts = ingest_options(
            tmp_path,
            f"--feeds={write_feeds(tmp_path, world, [feed])}",
            f"--websub_callback_base={origin}",
            "--request_poll_s=0.05",
        )
        ingest = LocalIngest.from_options(opts, host_overrides=world.host_overrides)
        ingest.run(max_run_s=1.5)  # first poll, hub discovered, subscription requested and verified
        subs = open_feed_store(cfg).list_subscriptions()
        assert [(s["topic"], s["state"]) for s in subs] == [(feed, "active")]
        assert ingest.states[feed].lease_expires_ms and ingest.states[feed].lease_expires_ms > time.time() * 1000
        # A live lease relaxes the backstop poll (15 min at scale 1).
        assert ingest.states[feed].next_poll_ms - time.time() * 1000 > 10 * 60 * 1000
        world.release_now(slug)  # -> hub delivery to the origin, and a ping, within ~0.1 s
        ingest.run(max_run_s=2.5)
        # ... and the regular (backstop) poll comes too: bring it forward.
        import heapq

        ingest.states[feed].next_poll_ms = int(time.time() * 1000)
        heapq.heappush(ingest.timers, (ingest.states[feed].next_poll_ms, feed))
        ingest.run(max_run_s=1.5)
        ingest.stop()
        assert [d["status"] for d in world.deliveries] == [202]
        assert [p["status"] for p in world.pings_sent] == [202]
        stats = ingest.stats()
        assert stats["requests:PUSH"] >= 2 and stats["requests:PING"] == 1  # lease + delivery, ping
        assert len(world.requests_for("wirepress.test", f"/news/{slug}")) == 1
        items = [i for i in topic_records(tmp_path / "data", "items-raw", "RawItem") if i["fetched_url"].endswith(slug)]
        assert len(items) == 1 and items[0]["source"] in ("WEBSUB", "PING", "FEED")
        polls = world.requests_for("wirepress.test", "/feeds/world.xml")
        assert len(polls) >= 3  # first poll, the triggered one(s), the regular one
    finally:
        world.stop()
        srv.shutdown()
        app.extensions["newsroom"].close()


def test_registry_edits_reach_the_running_job(tmp_path):
    """--feeds=table: a feed added while the job runs is polled at the next reload; a removed one stops."""
    from pipelines.ingest_local import LocalIngest
    from stores.feeds import open_feed_store

    world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    try:
        store = open_feed_store(StoreConfig(data_dir=str(tmp_path / "data")))
        opts = ingest_options(tmp_path, "--feeds=table", "--registry_reload_s=0.2", "--schedule_scale=0.002")
        ingest = LocalIngest.from_options(opts, host_overrides=world.host_overrides)
        ingest.run(max_run_s=0.5)
        assert ingest.stats().get("polls", 0) == 0
        store.put_feed({"url": "http://torontoledger.test/rss.xml"})
        ingest.run(max_run_s=1.0)
        polled = len(world.requests_for("torontoledger.test", "/rss.xml"))
        assert polled >= 1
        store.delete_feed("http://torontoledger.test/rss.xml")
        ingest.run(max_run_s=0.5)  # the reload disables it
        settled = len(world.requests_for("torontoledger.test", "/rss.xml"))
        ingest.run(max_run_s=1.0)
        ingest.stop()
        assert len(world.requests_for("torontoledger.test", "/rss.xml")) == settled
    finally:
        world.stop()


def test_local_ingest_front_page_feed_fetches_each_article_once(tmp_path):
    """A front-page feed in the local loop: its article links are fetched once over several polls, its navigation
    never."""
    from pipelines.ingest_local import LocalIngest

    world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    try:
        front = {"url": "http://dailyherald.test/", "publisher_id": "daily-herald", "kind": "front"}
        path = tmp_path / "feeds.json"
        path.write_text(json.dumps({"feeds": [front]}))
        opts = ingest_options(tmp_path, f"--feeds={path}", "--schedule_scale=0.002")
        ingest = LocalIngest.from_options(opts, host_overrides=world.host_overrides)
        stats = ingest.run(max_run_s=3.0)
        ingest.stop()
        assert len(world.requests_for("dailyherald.test", "/")) >= 2  # re-polled
        now = world.clock.now_ms()
        public = {a["url"] for a in world.articles.values() if a["pub"] == "daily-herald" and world.is_public(a, now)}
        items = topic_records(tmp_path / "data", "items-raw", "RawItem")
        assert sorted(i["fetched_url"] for i in items) == sorted(public)
        assert stats["pages_fetched"] == len(public)
        for nav in ("/world", "/sport/", "/tag/elections", "/author/jane-doe", "/about-us"):
            assert not world.requests_for("dailyherald.test", nav)
    finally:
        world.stop()


def test_front_page_feed_under_teststream_yields_each_article_once(tmp_path):
    """The Beam poller graph with a front-page feed: first poll and timer re-polls, each article fetched once."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.test_stream import TestStream
    from apache_beam.testing.util import assert_that, equal_to
    from apache_beam.transforms import trigger, window

    from pipelines.ingest_options import resolve
    from transforms.ingest.beam import IngestFeeds

    world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    try:
        url = "http://dailyherald.test/"
        front = {"url": url, "publisher_id": "daily-herald", "tier": "authoritative", "kind": "front"}
        ctx = resolve(ingest_options(tmp_path, "--schedule_scale=0.01")).local_context(
            host_overrides=world.host_overrides
        )
        stream = (
            TestStream()
            .add_elements([(url, {"config": front})])
            .advance_processing_time(40)
            .advance_processing_time(40)
            .advance_watermark_to_infinity()
        )
        p = beam.Pipeline(runner="BundleBasedDirectRunner", options=PipelineOptions(["--streaming"]))
        out = p | stream | IngestFeeds(ctx, clock=lambda: 0, sleep=lambda s: None)
        fetched = (
            out["items"]
            | beam.WindowInto(
                window.GlobalWindows(),
                trigger=trigger.AfterWatermark(),
                accumulation_mode=trigger.AccumulationMode.DISCARDING,
            )
            | beam.Map(lambda r: r["fetched_url"])
        )
        now = world.clock.now_ms()
        public = sorted(
            a["url"] for a in world.articles.values() if a["pub"] == "daily-herald" and world.is_public(a, now)
        )
        assert_that(fetched, equal_to(public), label="EachArticleOnce")
        p.run().wait_until_finish()
        assert len(world.requests_for("dailyherald.test", "/")) >= 2  # re-polled by the timer
        for nav in ("/world", "/sport/", "/tag/elections", "/author/jane-doe", "/about-us"):
            assert not world.requests_for("dailyherald.test", nav)
    finally:
        world.stop()
