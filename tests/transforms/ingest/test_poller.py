"""Polling and page fetching against the sample world (plain Python, real HTTP on loopback)."""

from __future__ import annotations

import copy
import time

import pytest

from schemas import codec
from stores import StoreConfig
from stores.feeds import open_feed_store
from transforms.ingest import poller
from transforms.ingest import schedule as sch

POLICY = sch.SchedulePolicy()


def now_ms():
    return int(time.time() * 1000)


@pytest.fixture
def store(tmp_path):
    return open_feed_store(StoreConfig(data_dir=str(tmp_path / "data")))


def config(world, url):
    (entry,) = [f for f in world.feeds() if f["url"] == url]
    return poller.FeedConfig.from_dict(entry)


def fetch_all(fetcher, outcome, store):
    items, dead = [], []
    for d in outcome.discoveries:
        raw, dl = poller.fetch_page(fetcher, d, store, now_ms(), sleep=lambda s: None)
        if raw:
            items.append(raw)
        if dl:
            dead.append(dl)
    return items, dead


def test_first_poll_discovers_and_fetches_pages_as_raw_items(world, fetcher, store):
    cfg = config(world, "http://dailyherald.test/rss.xml")
    st = sch.FeedState(feed_url=cfg.url)
    t = now_ms()
    public = len(world.public_items("daily-herald", t))  # what the world's content holds by now (4 or more)
    out = poller.poll_feed(poller.Poll(fetcher, POLICY, t), cfg, st)
    assert public >= 4 and out.status == 200 and out.new_items == public and not out.dead_letters
    items, dead = fetch_all(fetcher, out, store)
    assert len(items) == public and not dead
    for raw in items:
        codec.check("RawItem", raw)
        assert raw["source"] == "FEED" and raw["publisher_id"] == "daily-herald"
        assert raw["first_seen_at"] == t and raw["fetched_at"] >= t
        assert raw["item_id"] == poller.item_id(raw["fetched_url"])
        assert raw["headers"]["content-type"].startswith("text/html")
        assert b'"@type": "NewsArticle"' in raw["body"] and raw["entry"]["guid"].startswith("daily-herald-")
    assert st.etag and st.last_modified and len(st.guids) == public
    assert st.next_poll_ms > t


def test_304_carries_no_body_and_changes_nothing(world, fetcher, store):
    cfg = config(world, "http://londonchronicle.test/feeds/latest.atom")
    st = sch.FeedState(feed_url=cfg.url)
    poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st)
    before = copy.deepcopy(st)
    out = poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st)
    assert out.status == 304 and out.discoveries == [] and out.dead_letters == []
    assert world.requests_for("londonchronicle.test", "/feeds/latest.atom")[-1]["status"] == 304
    for field in ("etag", "last_modified", "guids", "last_digest", "validators_useless", "lease_expires_ms"):
        assert getattr(st, field) == getattr(before, field), field
    assert st.not_modified == before.not_modified + 1


def test_new_item_is_found_once_and_a_correction_is_a_new_version(world, fetcher, store):
    cfg = config(world, "http://capitalpost.test/feed/")
    st = sch.FeedState(feed_url=cfg.url)
    first = poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st)
    fetch_all(fetcher, first, store)
    world.release_now("aurora-recall-regulators-review")
    out = poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st)
    assert [d.url for d in out.discoveries] == [
        "http://capitalpost.test/news/aurora-recall-regulators-review?utm_source=rss&utm_medium=feed&utm_campaign=newsroom"
    ]
    items, _ = fetch_all(fetcher, out, store)
    assert items[0]["fetched_url"].endswith("utm_campaign=newsroom")  # the normaliser strips tracking parameters
    assert poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st).discoveries == []
    world.correct_now("aurora-recall-regulators-review", "Regulators open review of Aurora's SUV recall")
    corrected = poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st)
    assert corrected.updates == 1 and corrected.new_items == 0
    (d,) = corrected.discoveries
    assert d.is_update and d.claim_key.startswith(d.url + "#")
    again, _ = fetch_all(fetcher, corrected, store)
    assert b"Aurora&#x27;s SUV recall" in again[0]["body"] or b"Aurora's SUV recall" in again[0]["body"]
    assert again[0]["item_id"] == items[0]["item_id"]  # same article, new version


def test_an_item_is_fetched_once_whatever_the_path(world, fetcher, store):
    """Found by a poll, then by a ping-triggered and a push-triggered poll, and listed in a second feed: one fetch."""
    cfg = config(world, "http://agenciasur.test/rss/ultima-hora.xml")
    world.articles["terremoto-calder-bay"]["at"] = 10**9  # not yet public
    st = sch.FeedState(feed_url=cfg.url)
    fetch_all(fetcher, poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st), store)
    world.release_now("terremoto-calder-bay")
    found = []
    for trigger in (None, "PING", "PUSH"):
        st.last_triggered_ms = None
        if trigger:
            assert poller.apply_request(st, {"kind": trigger}, POLICY, now_ms())
        o = poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms(), trigger=trigger), cfg, st)
        found += o.discoveries
        fetch_all(fetcher, o, store)
    # Another feed state (as if the item were listed in a second feed) rediscovers it; the claim stops the fetch.
    dup = poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, sch.FeedState(feed_url=cfg.url))
    assert "http://agenciasur.test/news/terremoto-calder-bay" in [d.url for d in dup.discoveries]
    # (a second feed has another URL, hence another discovery owner)
    dup.discoveries = [poller.Discovery(**dict(d.to_dict(), owner="other-feed")) for d in dup.discoveries]
    items, dead = fetch_all(fetcher, dup, store)
    assert [d.url for d in found] == ["http://agenciasur.test/news/terremoto-calder-bay"]
    assert items == [] and dead == []
    assert len(world.requests_for("agenciasur.test", "/news/terremoto-calder-bay")) == 1


def test_claims_survive_a_restart_and_retries_keep_their_claim(tmp_path, world, fetcher):
    cfg_store = StoreConfig(data_dir=str(tmp_path / "data"))
    d = poller.Discovery(
        url="http://wirepress.test/news/calder-bay-earthquake-flash",
        feed_url="f",
        publisher_id="wirepress",
        source="FEED",
        first_seen_at=1,
        claim_key="http://wirepress.test/news/calder-bay-earthquake-flash",
        owner="discovery-1",
    )
    raw, _ = poller.fetch_page(fetcher, d, open_feed_store(cfg_store), now_ms())
    assert raw is not None
    reopened = open_feed_store(cfg_store)  # a new process
    assert poller.fetch_page(fetcher, d, reopened, now_ms())[0] is not None  # a retry of the same discovery
    other = poller.Discovery(**dict(d.to_dict(), owner="discovery-2"))
    assert poller.fetch_page(fetcher, other, reopened, now_ms()) == (None, None)


def test_broken_feed_is_dead_lettered_and_backs_off(world, fetcher):
    cfg = config(world, "http://northernecho.test/feeds/sport.xml")
    st = sch.FeedState(feed_url=cfg.url)
    t = now_ms()
    out = poller.poll_feed(poller.Poll(fetcher, POLICY, t), cfg, st)
    (dl,) = out.dead_letters
    codec.check("DeadLetter", dl)
    assert dl["reason"] == "malformed_feed" and dl["key"] == cfg.url and dl["payload"].startswith(b"<?xml")
    assert st.errors == 1 and st.next_poll_ms == t + 2 * POLICY.floor_ms(cfg.tier)


def test_etag_churning_feed_stops_getting_validators(world, fetcher):
    cfg = config(world, "http://contentfarm.test/feed.xml")
    st = sch.FeedState(feed_url=cfg.url)
    for _ in range(1 + sch.CHURN_LIMIT):
        out = poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st)
        assert out.status == 200
    assert st.validators_useless and sch.conditional_headers(st) == {}
    poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st)
    last = world.requests_for("contentfarm.test", "/feed.xml")[-1]
    assert last["status"] == 200


def test_news_sitemap_feed_and_robots_dead_letter(world, fetcher, store):
    cfg = config(world, "http://mumbaidaily.test/sitemap-news.xml")
    st = sch.FeedState(feed_url=cfg.url)
    out = poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), cfg, st)
    assert {d.source for d in out.discoveries} == {"SITEMAP"}
    assert all("/archive/" not in d.url for d in out.discoveries)  # older than 2 days: dropped
    sg = config(world, "http://springfieldgazette.test/news/rss")
    out = poller.poll_feed(poller.Poll(fetcher, POLICY, now_ms()), sg, sch.FeedState(feed_url=sg.url))
    items, dead = fetch_all(fetcher, out, store)
    assert [d["reason"] for d in dead] == ["robots_disallowed"]
    assert any(i["final_url"].endswith("/news/riverside-park-approved") and "/go/" in i["fetched_url"] for i in items)


def test_requests_other_than_polls(world):
    st = sch.FeedState(next_poll_ms=now_ms() + 600_000)
    lease_end = now_ms() + 86_400_000
    assert not poller.apply_request(
        st, {"kind": "PUSH", "reason": "websub_lease", "expires_at": lease_end}, POLICY, now_ms()
    )
    assert st.lease_expires_ms == lease_end
    assert poller.apply_request(st, {"kind": "BURST", "priority": 3, "expires_at": now_ms() + 60_000}, POLICY, now_ms())
    assert st.burst_until_ms


def test_each_new_item_fetched_logs_its_discovery_delay_by_tier_and_path(world, fetcher, store, caplog):
    """newsroom.item_discovered (the discovery-latency alert's log metric): one line per new item handed to
    items-raw, with the feed's tier, the discovery path and the seconds since the entry's stated publish time."""
    import logging
    import re

    cfg = config(world, "http://dailyherald.test/rss.xml")
    t = now_ms()
    public = len(world.public_items("daily-herald", t))
    out = poller.poll_feed(poller.Poll(fetcher, POLICY, t), cfg, sch.FeedState(feed_url=cfg.url))
    assert all(d.published_ms for d in out.discoveries) and {d.tier for d in out.discoveries} == {cfg.tier}
    with caplog.at_level(logging.INFO, logger="transforms.ingest.poller"):
        items, _ = fetch_all(fetcher, out, store)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("newsroom.item_discovered ")]
    assert len(lines) == len(items) == public >= 4
    for d, raw, line in zip(out.discoveries, items, lines, strict=True):
        m = re.fullmatch(rf"newsroom[.]item_discovered tier={cfg.tier} via=poll discovery_s=([0-9]+[.][0-9])", line)
        assert m, line
        assert float(m.group(1)) == round(max(0, raw["fetched_at"] - d.published_ms) / 1000, 1)
    pushed = poller.Discovery.from_dict({**out.discoveries[0].to_dict(), "source": "WEBSUB", "published_ms": None})
    assert poller.discovered_event(pushed, 1) == f"newsroom.item_discovered tier={cfg.tier} via=websub"


def test_the_feeds_hints_are_kept_in_its_state_and_shape_its_next_poll(store):
    """ttl / skipHours / skipDays as the feed serves them now go into the state row (a 304 keeps them, a 200
    without them forgets them) and the schedule applies them to a quiet long-tail feed."""
    from transforms.ingest.fetcher import FetchResult

    t0 = 1_780_000_000_000
    hinted = (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>Q</title><link>http://quiet.test/</link>'
        b"<ttl>180</ttl><skipDays><day>Monday</day></skipDays><skipHours><hour>3</hour></skipHours>"
        b"</channel></rss>"
    )
    bodies = [hinted, None, hinted.replace(b"<ttl>180</ttl>", b"")]

    class Server:
        def fetch(self, url, headers=None, check_robots=True, **kw):
            body = bodies.pop(0)
            if body is None:
                return FetchResult(url=url, final_url=url, status=304, fetched_at_ms=t0)
            return FetchResult(
                url=url,
                final_url=url,
                status=200,
                headers={"etag": '"q"', "content-type": "application/rss+xml"},
                body=body,
            )

    cfg = poller.FeedConfig(url="http://quiet.test/rss", tier="long_tail", kind="rss")
    st = sch.FeedState(feed_url=cfg.url)
    poller.poll_feed(poller.Poll(Server(), POLICY, t0), cfg, st)
    assert (st.hint_ttl_min, st.hint_skip_hours, st.hint_skip_days) == (180, [3], [0])
    assert st.next_poll_ms - t0 >= 60 * sch.MINUTE_MS  # a new feed's prior alone would poll in 30 min
    store.put_state(cfg.url, st.to_dict())  # the s:state checkpoint (embedded backend; Bigtable stores the same JSON)
    restored = sch.FeedState.from_dict(store.get_state(cfg.url), cfg.url)
    assert (restored.hint_ttl_min, restored.hint_skip_hours, restored.hint_skip_days) == (180, [3], [0])
    poller.poll_feed(poller.Poll(Server(), POLICY, t0 + sch.HOUR_MS), cfg, restored)
    assert restored.hint_ttl_min == 180
    poller.poll_feed(poller.Poll(Server(), POLICY, t0 + 2 * sch.HOUR_MS), cfg, restored)
    assert (restored.hint_ttl_min, restored.hint_skip_hours) == (None, [3])


def test_a_request_polls_with_its_trigger_and_leaves_the_callers_poll_as_it_was(world, fetcher):
    """on_input takes one frozen Poll (fetcher, policy, time, websub): a PING request polls with trigger PING, so its
    discoveries say PING, and the caller's Poll, reused for the next input, still has no trigger."""
    cfg = config(world, "http://agenciasur.test/rss/ultima-hora.xml")
    world.articles["terremoto-calder-bay"]["at"] = 10**9  # not yet public
    st = sch.FeedState(feed_url=cfg.url)
    poll = poller.Poll(fetcher, POLICY, now_ms())
    poller.on_input(poll, None, st, {"config": cfg.to_dict()})
    world.release_now("terremoto-calder-bay")
    st.last_triggered_ms = None
    step = poller.on_input(poller.Poll(fetcher, POLICY, now_ms()), cfg, st, {"request": {"kind": "PING"}})
    assert [d.source for d in step.outcome.discoveries] == ["PING"]
    assert poll.trigger is None
    with pytest.raises(AttributeError):  # frozen: one poll's circumstances are not changed under it
        poll.trigger = "PUSH"
