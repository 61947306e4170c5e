"""The polite fetcher against the sample world: User-Agent, robots.txt, redirects, size and time limits, politeness."""

from __future__ import annotations

import pytest

from tests.transforms.ingest.conftest import world_fetcher
from transforms.ingest.fetcher import DEFAULT_USER_AGENT, Fetcher, FetcherConfig, HostGate
from transforms.ingest.guard import AddressGuard


def test_identifying_user_agent_and_host_header(world, fetcher):
    res = fetcher.fetch("http://dailyherald.test/rss.xml")
    assert res.ok and b"<rss" in res.body
    (req,) = world.requests_for("dailyherald.test", "/rss.xml")
    assert req["user_agent"] == DEFAULT_USER_AGENT and "NewsroomBot" in req["user_agent"]
    assert all(k == k.lower() for k in res.headers)


def test_robots_txt_is_respected_and_cached(world, fetcher):
    res = fetcher.fetch("http://springfieldgazette.test/members/members-council-budget-analysis")
    assert res.error == "robots_disallowed"
    assert world.requests_for("springfieldgazette.test", "/members/members-council-budget-analysis") == []
    assert fetcher.fetch("http://springfieldgazette.test/news/riverside-park-approved").ok
    assert len(world.requests_for("springfieldgazette.test", "/robots.txt")) == 1  # cached per site


def test_redirect_wrapper_is_followed_by_hand(world, fetcher):
    res = fetcher.fetch("http://springfieldgazette.test/go/riverside-park-approved")
    assert res.ok and res.redirects == 1
    assert res.final_url == "http://springfieldgazette.test/news/riverside-park-approved"
    limited = world_fetcher(world, max_redirects=0)
    assert limited.fetch("http://springfieldgazette.test/go/riverside-park-approved").error == "too_many_redirects"


def test_size_limit_refuses_rather_than_truncates(world):
    small = world_fetcher(world, max_bytes=1000)
    res = small.fetch("http://dailyherald.test/news/aurora-recall-what-owners-need-to-know")
    assert res.error == "too_large" and res.body == b""


def test_timeouts(redirector):
    f = Fetcher(
        FetcherConfig(min_host_delay_s=0, read_timeout_s=0.3, total_timeout_s=1.0),
        AddressGuard({"redirector.test": redirector}),
    )
    res = f.fetch("http://redirector.test/slow")
    assert res.error == "timeout" and res.transient


def test_conditional_get_304_has_no_body(world, fetcher):
    first = fetcher.fetch("http://pacifictimes.test/atom.xml")
    again = fetcher.fetch("http://pacifictimes.test/atom.xml", headers={"If-None-Match": first.headers["etag"]})
    assert again.status == 304 and again.body == b""
    by_date = fetcher.fetch(
        "http://pacifictimes.test/atom.xml", headers={"If-Modified-Since": first.headers["last-modified"]}
    )
    assert by_date.status == 304 and by_date.body == b""


def test_host_gate_spaces_requests_per_host():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    gate = HostGate(clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        gate.wait("a.test", 1.0)
    gate.wait("b.test", 1.0)  # another host does not wait
    assert slept == [1.0, 1.0]


def test_politeness_delay_applies_to_real_fetches(world):
    import time

    f = world_fetcher(world, min_host_delay_s=0.2)
    t0 = time.monotonic()
    for _ in range(3):
        assert f.fetch(
            "http://wirepress.test/feeds/world.xml",
        ).ok
    assert time.monotonic() - t0 >= 0.4  # robots is not fetched for feeds; 3 requests, 2 gaps


@pytest.mark.parametrize("path", ["/news/no-such-article", "/news/aurora-recall-regulators-review"])
def test_missing_or_unreleased_pages_are_404(world, fetcher, path):
    assert fetcher.fetch("http://capitalpost.test" + path).status == 404
