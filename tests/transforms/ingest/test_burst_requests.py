"""BURST fetch requests name a publisher, not a feed: the ingest job sends them to that publisher's feeds (the
Beam graph's DecodeFetchRequestFn and the local driver share transforms.ingest.registry.request_targets)."""

from __future__ import annotations

from schemas import codec
from transforms.ingest.beam import DecodeFetchRequestFn
from transforms.ingest.registry import BURST_FEEDS_PER_PUBLISHER, feeds_by_publisher, load_feeds, request_targets

T0 = 1_780_000_000_000
BURST = {
    "request_id": "r1",
    "kind": "BURST",
    "publisher_id": "northern-echo",
    "priority": 2,
    "reason": "burst story 7",
    "requested_at": T0,
    "expires_at": T0 + 3_600_000,
}
NORTHERN_ECHO = ["http://northernecho.test/feeds/sport.xml", "http://northernecho.test/rss.xml"]


def test_a_publisher_request_reaches_each_enabled_feed_of_the_publisher_and_no_more_than_the_cap():
    index = feeds_by_publisher(load_feeds("default"))
    assert [url for url, _ in request_targets(BURST, index)] == NORTHERN_ECHO
    assert all(
        r["feed_url"] == url and r["expires_at"] == BURST["expires_at"] for url, r in request_targets(BURST, index)
    )
    many = {"northern-echo": [f"http://n.test/{i}.xml" for i in range(10)]}
    assert len(request_targets(BURST, many)) == BURST_FEEDS_PER_PUBLISHER
    disabled = [{"url": NORTHERN_ECHO[0], "publisher_id": "northern-echo", "enabled": False}]
    assert request_targets(BURST, feeds_by_publisher(disabled)) == []
    named = dict(BURST, feed_url="http://x.test/feed")
    assert request_targets(named, index) == [("http://x.test/feed", named)]  # a named feed is that feed only


def test_the_beam_decoder_fans_a_burst_out_to_the_feeds_and_dead_letters_an_unknown_publisher():
    fn = DecodeFetchRequestFn(clock=lambda: T0, feeds="default")
    fn.setup()
    out = list(fn.process((codec.encode("FetchRequest", BURST), {})))
    assert [(url, r["request"]["feed_url"]) for url, r in out] == [(u, u) for u in NORTHERN_ECHO]
    unknown = list(fn.process((codec.encode("FetchRequest", dict(BURST, publisher_id="nobody")), {})))
    assert len(unknown) == 1 and unknown[0].value["reason"] == "no_feed"
