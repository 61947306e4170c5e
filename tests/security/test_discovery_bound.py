"""One poll of one feed yields at most ``poller.MAX_DISCOVERIES_PER_POLL`` discoveries; the rest of a huge feed is
kept for the next polls (nothing lost, nothing found twice), which come at the feed's floor interval. The bound
is in ``poller.poll_feed``, which the Beam graph (ScheduleFeedFn) and the local ingest loop (LocalIngest) share:
both are driven here."""

from __future__ import annotations

import hashlib
from email.utils import formatdate

from transforms.ingest import poller
from transforms.ingest import schedule as sch
from transforms.ingest.fetcher import FetchResult

FEED = "http://flood.test/rss.xml"
T0 = 1_780_000_000_000
POLICY = sch.SchedulePolicy()
BOUND = poller.MAX_DISCOVERIES_PER_POLL


def rss(n: int, now_ms: int) -> bytes:
    """``n`` items, all within the last 2 days (the feed parser drops older ones)."""
    items = []
    for i in range(n):
        when = formatdate((now_ms - 3_600_000 - i * 1000) / 1000, usegmt=True)
        items.append(
            f"<item><guid>g{i}</guid><link>http://flood.test/a/{i}</link><title>Item {i}</title>"
            f"<pubDate>{when}</pubDate></item>"
        )
    return (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Flood</title><link>http://flood.test/</link>'
        + "".join(items)
        + "</channel></rss>"
    ).encode()


class FeedServer:
    """A fetcher serving one feed with an ETag, answering 304 to a matching If-None-Match."""

    def __init__(self, n: int):
        self.set(n)
        self.requests: list[dict] = []

    def set(self, n: int) -> None:
        self.body = rss(n, T0)
        self.etag = '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'

    def fetch(self, url, headers=None, check_robots=True, **kw):
        headers = headers or {}
        self.requests.append(headers)
        if headers.get("If-None-Match") == self.etag:
            return FetchResult(url=url, final_url=url, status=304, fetched_at_ms=T0)
        hdrs = {"etag": self.etag, "content-type": "application/rss+xml"}
        return FetchResult(url=url, final_url=url, status=200, headers=hdrs, body=self.body, fetched_at_ms=T0)


def config() -> poller.FeedConfig:
    return poller.FeedConfig(url=FEED, publisher_id="flood", tier="authoritative", kind="rss")


def test_one_huge_feed_yields_a_bounded_poll():
    """A 20,000-item feed yielded 20,000 discoveries in one poll."""
    server = FeedServer(20_000)
    state = sch.FeedState(feed_url=FEED)
    out = poller.poll_feed(poller.Poll(server, POLICY, T0), config(), state)
    assert out.status == 200
    assert len(out.discoveries) == BOUND and out.deferred == 20_000 - BOUND
    assert state.next_poll_ms == T0 + POLICY.floor_ms("authoritative")  # the rest soon
    assert state.etag is None  # no 304 may hide the rest from the next poll


def _drain(server, state, step) -> tuple[list[str], int]:
    """Poll until a poll finds nothing; (urls discovered in order, polls)."""
    urls, polls, now = [], 0, T0
    while True:
        found = step(state, now)
        polls += 1
        urls += found
        if not found:
            return urls, polls
        assert len(found) <= BOUND
        now = state.next_poll_ms


def _plain_step(server):
    def step(state, now):
        return [d.url for d in poller.poll_feed(poller.Poll(server, POLICY, now), config(), state).discoveries]

    return step


def test_the_rest_is_found_by_the_next_polls_once_each():
    n = 2 * BOUND + 37
    server = FeedServer(n)
    state = sch.FeedState(feed_url=FEED)
    urls, polls = _drain(server, state, _plain_step(server))
    assert sorted(urls) == sorted(f"http://flood.test/a/{i}" for i in range(n)) and len(set(urls)) == n
    assert urls[-1] == "http://flood.test/a/0"  # oldest first: the newest item comes last
    assert polls == 4  # three bounded polls, then one that finds nothing
    # drained: validators are kept again, the unchanged feed answers 304, a new item is found on the next poll
    assert state.etag == server.etag
    out = poller.poll_feed(poller.Poll(server, POLICY, state.next_poll_ms), config(), state)
    assert out.status == 304
    server.set(n + 1)
    out = poller.poll_feed(poller.Poll(server, POLICY, state.next_poll_ms), config(), state)
    assert [d.url for d in out.discoveries] == [f"http://flood.test/a/{n}"]


def test_the_beam_schedule_fn_is_bounded_and_keeps_the_rest():
    """ScheduleFeedFn (the Beam graph's poller) on its own state and timer: each firing emits at most the bound,
    and re-arms its timer at the floor while a backlog remains."""
    from tests.transforms.fakes import Timer, Value
    from transforms.ingest.beam import IngestContext, ScheduleFeedFn
    from transforms.timers import at

    n = BOUND + 50
    server = FeedServer(n)
    clock = [T0]
    fn = ScheduleFeedFn(IngestContext(policy=POLICY), clock=lambda: clock[0])
    fn.fetcher, fn.store = server, None  # what setup() makes: the fetcher, no checkpoint store
    cfg_state, st_state, timer = Value(), Value(), Timer()
    out = list(fn.process((FEED, {"config": config().to_dict()}), cfg_state, st_state, timer))
    found = [d["url"] for _, d in out]
    assert len(found) == BOUND and timer.at == T0 + POLICY.floor_ms("authoritative")
    clock[0] = timer.at
    found += [d["url"] for _, d in fn.poll(FEED, at(timer.at), cfg_state, st_state, timer)]
    assert sorted(found) == sorted(f"http://flood.test/a/{i}" for i in range(n))


def test_the_local_ingest_loop_is_bounded_and_keeps_the_rest(tmp_path):
    """LocalIngest (``newsroom run``'s ingest) submits at most the bound per poll, polls again at the floor and
    counts what it deferred."""
    from pipelines.ingest_local import LocalIngest
    from pipelines.ingest_options import IngestOptions

    n = BOUND + 50
    server = FeedServer(n)
    clock = [T0]
    ingest = LocalIngest.from_options(IngestOptions([f"--data_dir={tmp_path / 'data'}"]), clock=lambda: clock[0])
    ingest.fetcher = server
    submitted = []
    ingest._submit = lambda url, d, attempt: submitted.append(d.url)  # the page fetches are not under test
    ingest.handle_input(FEED, {"config": config().to_dict()})
    assert len(submitted) == BOUND
    assert ingest.states[FEED].next_poll_ms == T0 + POLICY.floor_ms("authoritative")
    clock[0] = ingest.states[FEED].next_poll_ms
    assert ingest.fire_due() == 1
    assert sorted(submitted) == sorted(f"http://flood.test/a/{i}" for i in range(n))
    assert ingest.stats()["discoveries_deferred"] == 50
