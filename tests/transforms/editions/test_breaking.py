"""Breaking announcements (transforms/editions/publish/breaking.py, beam/announce.py): one Breaking record per story and
edition however many cycles keep the label, the pages newly showing the story purged once each, nothing again on
a replay; the plain-Python ledger and candidates; and the records on the Pub/Sub emulator's breaking topic."""

from __future__ import annotations

import logging
import time
import uuid

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from schemas import codec
from stores import StoreConfig, StoreError, open_store
from stores.cdn import CloudCdnPurger, open_purger
from tests.stores.test_cdn import _ComputeStub, _session, compute  # noqa: F401 (compute: the Compute stub fixture)
from tests.transforms.editions.test_editions_streaming import minute_stream, streaming_pipeline
from transforms.editions.beam.announce import AnnounceBreakingFn
from transforms.editions.publish.breaking import HOT_STORIES, Ledger, candidates, hot_candidate

IDLE = 8


def _unique_and_includes(key):
    def check(actual):
        assert len(actual) == len(set(actual)), f"announced twice: {sorted(actual)}"
        assert key in actual, f"{key} not announced: {sorted(actual)}"

    return check


def _more_than(n):
    def check(actual):
        assert len(actual) > n, actual

    return check


def _page(pointer="us-en/top", version=1000, labels=("breaking",), sid="7"):
    rep = {"article_id": "a1", "url": "https://x.example/a", "title": "Dam bursts", "publisher_id": "wirepress"}
    return {
        "kind": "edition_page",
        "pointer": pointer,
        "version": version,
        "doc": {"stories": [{"story_id": sid, "labels": list(labels), "section": "world", "representative": rep}]},
    }


def test_candidates_are_the_breaking_stories_of_published_edition_pages_only():
    published = {"outcome": "published"}
    [(edition, cand)] = candidates(_page(), published)
    assert edition == "us-en" and cand["story_id"] == 7 and cand["section"] == "top" and cand["cycle"] == 60_000_000
    assert candidates(_page(), {"outcome": "unchanged"}) == []  # a replay or an unchanged page: nothing new
    assert candidates(_page(labels=("developing",)), published) == []
    assert candidates(dict(_page(), kind="candidate_pool"), published) == []


def test_the_ledger_announces_once_purges_each_section_once_and_forgets_after_a_day():
    led = Ledger()
    cand = candidates(_page(), {"outcome": "published"})[0][1]
    record, purge = led.see("us-en", cand, clock=lambda: 1.5)
    codec.check("Breaking", record)
    assert (
        record["breaking_id"] == "us-en-7" and record["sections"] == ["top", "world"] and record["emitted_at"] == 1500
    )
    assert purge
    assert led.see("us-en", dict(cand, cycle=cand["cycle"] + 60_000)) == (None, False)  # next cycle: nothing
    assert led.see("us-en", dict(cand, section="world")) == (None, True)  # a new section page: purge only
    later = dict(cand, story_id=8, cycle=cand["cycle"] + 25 * 3600 * 1000)
    assert led.see("us-en", later)[0]["story_id"] == 8 and 7 not in led.announced  # 7 forgotten after 24 h


class _LedgerState:
    """The ReadModifyWriteState a runner hands AnnounceBreakingFn.process (read / write)."""

    def __init__(self):
        self.value = None

    def read(self):
        return self.value

    def write(self, value):
        self.value = value


def test_a_breaking_purge_compute_refuses_is_logged_and_raised_so_the_bundle_retries(compute, caplog):  # noqa: F811
    """The Cloud CDN purger against a Compute stub answering 403: the job logs newsroom.cdn_purge_failed (the
    purge-failure alert's log metric, terraform/modules/monitoring) and raises; the ledger is not written, so the
    retry purges and announces."""
    _, endpoint = compute
    _ComputeStub.status = 403
    fn = AnnounceBreakingFn(StoreConfig(), cdn="none")
    fn.purger = CloudCdnPurger("proj-1", "newsroom-api", None, _session(), endpoint)
    state, cand = _LedgerState(), candidates(_page(), {"outcome": "published"})[0][1]
    with caplog.at_level(logging.WARNING, logger="transforms.editions.beam.announce"), pytest.raises(StoreError):
        list(fn.process(("us-en", cand), ledger=state))
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert line.startswith("newsroom.cdn_purge_failed edition=us-en section=top story=7 error=StoreError:"), line
    assert "HTTP_403" in line and " " not in line.split(" error=", 1)[1]
    assert state.value is None  # nothing remembered: the retry purges again
    _ComputeStub.status = 200
    caplog.clear()
    assert [r["breaking_id"] for r in fn.process(("us-en", cand), ledger=state)] == ["us-en-7"]
    assert not [r for r in caplog.records if "cdn_purge_failed" in r.getMessage()]


def test_announcements_are_counted_per_edition_for_the_dashboard():
    """The dashboard's "Breaking records announced per edition" chart reads breaking/announced_<edition>
    (terraform/modules/monitoring): one per record, none for a story already announced in that edition."""
    from apache_beam.metrics.metric import MetricsFilter

    cand = candidates(_page(), {"outcome": "published"})[0][1]
    later = dict(cand, cycle=cand["cycle"] + 60_000)  # the next cycle still shows it: no second record
    p = beam.Pipeline()
    records = (
        p
        | beam.Create([("us-en", cand), ("us-en", later), ("gb-en", cand)])
        | beam.ParDo(AnnounceBreakingFn(StoreConfig(), cdn="none"))
    )
    assert_that(records | beam.Map(lambda r: r["breaking_id"]), equal_to(["us-en-7", "gb-en-7"]))
    result = p.run()
    result.wait_until_finish()
    counted = {
        c.key.metric.name: c.committed
        for c in result.metrics().query(MetricsFilter().with_namespace("breaking"))["counters"]
    }
    assert counted == {"announced": 2, "announced_us-en": 1, "announced_gb-en": 1}, counted


def _breaking_world(world):
    T, MIN = world.T0, world.MIN
    for s in range(6):
        world.story(100 + s, ["daily-herald", "capital-post", f"paper-{s}"], T - 12 * MIN + 2 * s * MIN)
    world.story(7, world.AUTHORITATIVE_EN[:5] * 2, T + 2 * MIN, step=20_000, title="Dam bursts upstream of the city")
    return world.sorted_changes()


def _run(changes, MIN, store, editions, cdn="queue"):
    p = streaming_pipeline()
    out = p | minute_stream(changes, MIN, tail=IDLE + 2) | PublishEditionsFor(store, editions, cdn)
    return p, out


def PublishEditionsFor(store, editions, cdn):
    from transforms.editions.beam import PublishEditions
    from transforms.editions.vocabulary.settings import PublishSettings, RankSettings

    ranking = RankSettings(editions_only=editions, overrides={"idle_cycles": IDLE})
    return PublishEditions(store, ranking, PublishSettings(cdn=cdn))


def test_one_breaking_record_per_story_and_edition_across_cycles_and_none_on_a_replay(world, tmp_path):
    changes = _breaking_world(world)
    store = StoreConfig(data_dir=str(tmp_path))
    p, out = _run(changes, world.MIN, store, ["us-en", "gb-en"])
    keys = out["breaking"] | beam.Map(lambda r: (r["story_id"], r["edition"]))
    assert_that(keys, _unique_and_includes((7, "us-en")), label="OncePerStoryAndEdition")
    pinned = (
        out["items"]
        | beam.Filter(lambda it: it["pointer"] == "us-en/top")
        | beam.Filter(lambda it: any("breaking" in s["labels"] for s in it["doc"]["stories"]))
        | beam.Map(lambda it: it["version"])
    )
    assert_that(pinned, _more_than(3), label="PinnedForManyCycles")  # many cycles showed it, one record
    us = out["breaking"] | beam.Filter(lambda r: r["edition"] == "us-en")
    assert_that(
        us | beam.Map(lambda r: (r["story_id"], r["breaking_id"], r["sections"][0], r["labels"][0])),
        equal_to([(7, "us-en-7", "top", "breaking")]),
        label="UsEnStory7",
    )
    p.run().wait_until_finish()

    queued = open_purger(store).pending()
    reasons = [r.reason for _, r in queued]
    assert "breaking 7 us-en" in reasons
    paths = [path for _, r in queued if r.reason.startswith("breaking ") for path in r.paths]
    assert "/v1/editions/us-en/sections/top" in paths and "/e/us-en/" in paths
    assert len(paths) == len(set(paths))  # each section page of each edition purged once
    # hot stories whose headline or labels changed on a later top page: their story pages, one request each time
    hot = [r for _, r in queued if r.reason.startswith("hot ")]
    assert all(len(r.paths) == 2 and r.paths[0].startswith("/v1/stories/") for r in hot)

    # The same input again (a replay on the same stores): every page is stale or unchanged, nothing announced.
    p2, out2 = _run(changes, world.MIN, store, ["us-en", "gb-en"])
    assert_that(out2["breaking"], equal_to([]), label="NothingOnReplay")
    p2.run().wait_until_finish()
    assert len(open_purger(store).pending()) == len(queued)


@pytest.fixture(params=["gcp", "pubsub-bus"])
def emulator_config(request, tmp_path):
    if request.param == "gcp":  # Bigtable, GCS and Pub/Sub emulators; no Compute emulator: no purge
        return request.getfixturevalue("gcp_store_config"), "none"
    state = request.getfixturevalue("emulator_stack")  # Pub/Sub emulator, embedded tables and purge queue
    config = StoreConfig(
        data_dir=str(tmp_path / "local"), bus="pubsub", project=state.project, namespace=f"t{uuid.uuid4().hex[:10]}"
    )
    return config, "queue"


@pytest.mark.emulator
def test_breaking_records_reach_the_breaking_topic_once_per_story_and_edition(world, emulator_config):
    from stores.beam_io import PublishToBusFn

    config, cdn = emulator_config
    bus = open_store("bus", config)
    bus.ensure_subscription("breaking", "test-breaking")
    changes = _breaking_world(world)
    p, out = _run(changes, world.MIN, config, ["us-en", "gb-en"], cdn=cdn)
    out["breaking"] | beam.ParDo(PublishToBusFn(config, "breaking"))
    p.run().wait_until_finish()

    got, deadline = [], time.time() + 30
    while time.time() < deadline:
        messages = bus.pull("test-breaking", max_messages=100, timeout=2.0)
        if not messages and got:
            break
        got += [bus.decode("breaking", m) for m in messages]
        bus.ack("test-breaking", [m.ack_id for m in messages])
    assert [(r["story_id"], r["edition"]) for r in got] == [(7, "us-en")]
    record = got[0]
    assert record["breaking_id"] == "us-en-7" and record["labels"][0] == "breaking"
    assert record["representative"]["title"] == "Dam bursts upstream of the city"
    if cdn == "queue":
        assert "breaking 7 us-en" in [r.reason for _, r in open_purger(config).pending()]


# ------------------------------------------------------------------------------------------------ hot stories
def _top(version, stories, pointer="us-en/top"):
    """A published top page of ``stories``: [(story id, headline, labels)] in rank order."""
    entries = [
        {"story_id": str(sid), "labels": list(labels), "representative": {"title": title}}
        for sid, title, labels in stories
    ]
    return {"kind": "edition_page", "pointer": pointer, "version": version, "doc": {"stories": entries}}


def test_the_hot_stories_are_the_first_fifty_of_a_published_top_page():
    published = {"outcome": "published"}
    page = _top(1000, [(i, f"headline {i}", ()) for i in range(80)])
    [(edition, cand)] = hot_candidate(page, published)
    assert edition == "us-en" and cand["kind"] == "hot" and cand["cycle"] == 60_000_000
    assert list(cand["stories"]) == list(range(HOT_STORIES)) and HOT_STORIES == 50
    assert hot_candidate(page, {"outcome": "unchanged"}) == []
    assert hot_candidate(_top(1000, [(1, "x", ())], pointer="us-en/world"), published) == []


def test_a_hot_story_is_purged_when_its_headline_or_labels_change_and_only_then():
    led = Ledger()
    first = [(7, "Dam bursts", ()), (8, "Storm", ()), (9, "Vote", ())]
    assert led.hot_changes(hot_candidate(_top(1000, first), {"outcome": "published"})[0][1]) == []
    later = [(7, "Dam bursts upstream", ()), (8, "Storm", ("developing",)), (9, "Vote", ()), (10, "New", ())]
    cand = hot_candidate(_top(1001, later), {"outcome": "published"})[0][1]
    assert led.hot_changes(cand) == [7, 8]  # headline, labels; 9 unchanged, 10 new to the list
    assert led.hot_changes(cand) == []  # the same cycle again (a replay)
    assert led.hot_changes(hot_candidate(_top(999, first), {"outcome": "published"})[0][1]) == []  # older
    old = Ledger()
    del old.__dict__["announced"]  # a ledger pickled before hot stories has no "hot" either
    old.announced = {}
    assert old.hot_changes(cand) == []


def test_hot_story_purges_go_through_the_rate_limited_purger(tmp_path):
    """AnnounceBreakingFn purges the changed hot stories' pages (reason ``hot <story> <edition>``) through the
    purger and its token bucket: over the rate the request widens (stores/cdn.py), never dropped; no record."""
    from stores.cdn import QueuedPurger, TokenBucket
    from stores.embedded import Database

    fn = AnnounceBreakingFn(StoreConfig(), cdn="none")
    db = Database(str(tmp_path / "purges.db"))
    fn.purger = QueuedPurger(db, TokenBucket(rate=0.001, burst=2, db=db))
    state = _LedgerState()
    pages = [
        _top(1000, [(7, "Dam bursts", ()), (8, "Storm", ())]),
        _top(1001, [(7, "Dam bursts upstream", ()), (8, "Storm", ())]),
        _top(1002, [(7, "Dam bursts upstream", ()), (8, "Storm hits", ())]),
    ]
    for page in pages:
        for kv in hot_candidate(page, {"outcome": "published"}):
            assert list(fn.process(kv, ledger=state)) == []  # purges only, no Breaking record
    sent = [r for _, r in fn.purger.pending()]
    assert [r.reason for r in sent] == ["hot 7 us-en", "hot 8 us-en"]
    assert sent[0].paths == ("/v1/stories/7", "/stories/7") and not sent[0].widened
    assert sent[1].paths == ("/v1/stories/*", "/stories/*")  # the bucket was empty: widened, still sent
