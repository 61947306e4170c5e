"""The local loop (``newsroom run``'s ingest): a BURST request from the stories job, which names a publisher, reaches
the publisher's feeds through the bus and moves them to the 1-minute lane (on main it was dead-lettered no_feed)."""

from __future__ import annotations

import time

from devtools.world.server import SampleWorld
from tests.pipelines.test_ingest import WORLD_AT, ingest_options, only_loopback, topic_records, write_feeds  # noqa: F401

# northern-echo has two feeds in the world (sport.xml is served malformed), content-farm one
FEEDS = [
    "http://northernecho.test/rss.xml",
    "http://northernecho.test/feeds/sport.xml",
    "http://contentfarm.test/feed.xml",
]


def test_a_burst_request_naming_a_publisher_polls_its_feeds_now_and_every_minute_for_the_hour(tmp_path):
    from pipelines.ingest_local import LocalIngest

    world = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    try:
        opts = ingest_options(tmp_path, f"--feeds={write_feeds(tmp_path, world, FEEDS)}", "--request_poll_s=0.05")
        ingest = LocalIngest.from_options(opts, host_overrides=world.host_overrides)
        ingest.run(max_run_s=1.0)  # first polls; long-tail feeds next poll minutes away
        before = {u: len(world.requests_for(u.split("/")[2], "/" + u.split("/", 3)[3])) for u in FEEDS}
        now = int(time.time() * 1000)
        burst = {
            "request_id": "burst-1",
            "kind": "BURST",
            "publisher_id": "northern-echo",
            "priority": 2,
            "reason": "burst story 7",
            "requested_at": now,
            "expires_at": now + 3_600_000,
        }
        ingest.bus.publish_record(ingest.request_topic, burst)
        ingest.run(max_run_s=1.0)
        ingest.stop()
        stats = ingest.stats()
        assert stats["requests:BURST"] == 1 and not stats.get("dead_letter:no_feed")
        after = {u: len(world.requests_for(u.split("/")[2], "/" + u.split("/", 3)[3])) for u in FEEDS}
        for url in FEEDS[:2]:  # both feeds of the publisher: polled at once, in the lane for the hour
            assert after[url] == before[url] + 1
            assert ingest.states[url].burst_until_ms == burst["expires_at"]
        healthy, broken = ingest.states[FEEDS[0]], ingest.states[FEEDS[1]]
        assert healthy.next_poll_ms - healthy.last_poll_ms == 60_000  # next poll in a minute (a long-tail feed)
        assert broken.errors and broken.next_poll_ms - broken.last_poll_ms > 60_000  # errors still back off
        assert after[FEEDS[2]] == before[FEEDS[2]]  # another publisher's feed is untouched
        assert ingest.states[FEEDS[2]].next_poll_ms - ingest.states[FEEDS[2]].last_poll_ms >= 5 * 60_000
    finally:
        world.stop()
