"""The Beam PTransforms on FnApiRunner: outputs, dead letters with reasons, metrics, store-backed dedupe, and
deterministic syndication (identical to the plain-Python index fed the same order)."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.articles.beam import DEAD_LETTER, DedupeArticles, DetectSyndication, NormalizeArticles
from transforms.articles.syndication import SyndicationIndex

CLOCK = lambda: 1_767_229_200_000  # noqa: E731  (fixed DeadLetter.at)


def _counters(result) -> dict:
    out = {}
    for c in result.metrics().query(MetricsFilter().with_namespace("articles"))["counters"]:
        out[c.key.metric.name] = out.get(c.key.metric.name, 0) + c.committed
    return out


def _bad_raws(kit):
    good = kit.make_html("Quake", kit.WIRE_REPORT)
    base = lambda url, **kw: kit.make_raw(url, good, **kw)  # noqa: E731
    raws = {
        "http_error": base("https://dailyherald.test/bad/1", status=503),
        "not_html": kit.make_raw(
            "https://dailyherald.test/bad/2", b"%PDF-1.5 binary", headers={"content-type": "application/pdf"}
        ),
        "empty_body": kit.make_raw("https://dailyherald.test/bad/3", b"<html><body><nav>Home</nav></body></html>"),
        "undecodable": kit.make_raw(
            "https://dailyherald.test/bad/4",
            b"<html><body>" + bytes(range(32)) * 500 + b"\xff" * 900,
            headers={"content-type": "text/html; charset=utf-8"},
        ),
        "too_large": kit.make_raw("https://dailyherald.test/bad/5", b"<html><body>" + b"<p>x</p>" * 600_000),
        "xml_bomb": kit.make_raw(
            "https://dailyherald.test/bad/6",
            b'<!DOCTYPE h [<!ENTITY a "a"><!ENTITY b "&a;&a;">]><html><body>&b;</body></html>',
        ),
        "future_date": kit.make_raw(
            "https://dailyherald.test/bad/7", kit.make_html("Future", kit.WIRE_REPORT, published="2027-01-01T00:00:00Z")
        ),
    }
    return raws


def test_normalize_articles_routes_every_bad_input_to_the_dead_letter(kit):
    good = [
        kit.make_raw("https://dailyherald.test/world/quake", kit.make_html("Quake hits coast", kit.WIRE_REPORT)),
        kit.make_raw(
            "https://pacifictimes.test/world/night-outdoors", kit.make_html("A night outdoors", kit.INDEPENDENT_A)
        ),
    ]
    bad = _bad_raws(kit)
    p = TestPipeline(runner="FnApiRunner")
    out = p | beam.Create(good + list(bad.values())) | NormalizeArticles(clock=CLOCK)
    assert_that(
        out.articles | beam.Map(lambda a: (a["canonical_url"], a["version"], a["language"])),
        equal_to(
            [
                ("https://dailyherald.test/world/quake", 1, "en"),
                ("https://pacifictimes.test/world/night-outdoors", 1, "en"),
            ]
        ),
        label="Articles",
    )
    assert_that(
        out[DEAD_LETTER] | beam.Map(lambda d: (d["stage"], d["reason"], d["key"], d["at"], len(d["payload"]) > 0)),
        equal_to([("normalize", reason, raw["item_id"], CLOCK(), True) for reason, raw in bad.items()]),
        label="DeadLetters",
    )
    result = p.run()
    result.wait_until_finish()
    counters = _counters(result)
    assert counters["normalized"] == 2
    for reason in bad:
        assert counters[f"dead_letter_{reason}"] == 1, reason


def test_malformed_raw_item_is_dead_lettered_not_raised(kit):
    page = kit.make_html("Quake", kit.WIRE_REPORT)
    broken = [
        {"item_id": "x", "fetched_url": 5, "body": page, "first_seen_at": "yesterday"},  # wrong types everywhere
        {"unexpected": True},  # not a RawItem at all (no body)
    ]
    p = TestPipeline(runner="FnApiRunner")
    out = p | beam.Create(broken) | NormalizeArticles(clock=CLOCK)
    assert_that(
        out[DEAD_LETTER] | beam.Map(lambda d: d["reason"]), equal_to(["internal_error", "empty_body"]), label="Reasons"
    )
    assert_that(out.articles, equal_to([]), label="NoArticles")
    p.run().wait_until_finish()


def test_dedupe_articles_emits_only_new_articles_and_new_versions(kit, tmp_path):
    from stores import StoreConfig, open_store

    config = StoreConfig(backend="embedded", data_dir=str(tmp_path / "store"))
    canonical = "https://dailyherald.test/world/quake"
    page = kit.make_html("Quake hits coast", kit.WIRE_REPORT, canonical=canonical)
    raws = [
        kit.make_raw(canonical + "?utm_source=rss", page, fetched_at=kit.T0),
        kit.make_raw(
            canonical + "/amp",
            kit.make_html("Quake hits coast", kit.WIRE_REPORT, canonical=canonical, amp=True),
            fetched_at=kit.T0 + 1000,
        ),
        kit.make_raw(canonical, page, fetched_at=kit.T0 + 2000),
    ]
    p = TestPipeline(runner="FnApiRunner")
    normalized = p | "Raw" >> beam.Create(raws) | "Normalize" >> NormalizeArticles(clock=CLOCK)
    deduped = normalized.articles | DedupeArticles(config)
    assert_that(deduped.articles | beam.Map(lambda a: (a["canonical_url"], a["version"])), equal_to([(canonical, 1)]))
    result = p.run()
    result.wait_until_finish()
    counters = _counters(result)
    assert (counters["dedupe_new"], counters["dedupe_duplicate"]) == (1, 2)

    # a corrected headline later: version 2 goes downstream; replaying the first raw item again emits nothing
    corrected = kit.make_raw(
        canonical,
        kit.make_html("Quake hits coast, four hurt", kit.WIRE_REPORT, canonical=canonical),
        fetched_at=kit.T0 + 3_600_000,
    )
    p2 = TestPipeline(runner="FnApiRunner")
    second = p2 | "Raw" >> beam.Create([corrected, raws[0]]) | "Normalize" >> NormalizeArticles(clock=CLOCK)
    out2 = second.articles | DedupeArticles(config)
    assert_that(
        out2.articles | beam.Map(lambda a: (a["title"], a["version"])), equal_to([("Quake hits coast, four hurt", 2)])
    )
    p2.run().wait_until_finish()
    store = open_store("articles", config)
    from transforms.articles.urls import article_id

    assert store.get(article_id(canonical))["version"] == 2


def _stream(kit):
    wire, extra = kit.WIRE_REPORT, kit.LOCAL_EXTRA
    copy = wire[:4] + extra[:1] + wire[4:] + extra[1:]
    rows = [
        ("h1", "daily-herald", copy),
        ("p1", "pacific-times", kit.INDEPENDENT_A),
        ("w1", "wirepress", wire),
        ("c1", "capital-post", kit.INDEPENDENT_B),
        ("g1", "springfield-gazette", copy),
    ]
    return [
        {
            "article_id": aid,
            "publisher_id": pub,
            "language": "en",
            "body": "\n".join(ps),
            "first_seen_at": kit.T0 + i * 1000,
            "section": None,
            "copy_of": None,
            "syndication_group": None,
        }
        for i, (aid, pub, ps) in enumerate(rows)
    ]


def test_detect_syndication_matches_the_plain_python_index(kit):
    stream = _stream(kit)
    index = SyndicationIndex()
    expected = [(o["article_id"], o["copy_of"], o["syndication_group"]) for o in (index.assign(a)[0] for a in stream)]
    assert ("g1", "w1", "h1") in expected and ("p1", None, None) in expected  # the scenario is not trivial

    for _ in range(2):  # and the same twice (deterministic for the same input order)
        p = TestPipeline(runner="FnApiRunner")
        out = p | beam.Create(stream, reshuffle=False) | DetectSyndication()
        assert_that(
            out | beam.Map(lambda a: (a["article_id"], a["copy_of"], a["syndication_group"])), equal_to(expected)
        )
        result = p.run()
        result.wait_until_finish()
        counters = _counters(result)
        assert counters["syndication_copy"] == 1 and counters["syndication_original"] == 1  # g1 copy; w1 original
        assert counters["syndication_single"] == 3


@pytest.mark.parametrize("language", ["en", "es"])
def test_syndication_is_per_language(kit, language):
    stream = _stream(kit)
    stream[-1] = dict(stream[-1], language=language)  # g1 in another language cannot copy an English group
    p = TestPipeline(runner="FnApiRunner")
    out = p | beam.Create(stream, reshuffle=False) | DetectSyndication()
    want = ("g1", "w1", "h1") if language == "en" else ("g1", None, None)
    assert_that(
        out
        | beam.Filter(lambda a: a["article_id"] == "g1")
        | beam.Map(lambda a: (a["article_id"], a["copy_of"], a["syndication_group"])),
        equal_to([want]),
    )
    p.run().wait_until_finish()


def test_process_articles_end_to_end(kit, tmp_path):
    from stores import StoreConfig
    from transforms.articles.beam import ProcessArticles

    config = StoreConfig(backend="embedded", data_dir=str(tmp_path / "store"))
    wire, extra = kit.WIRE_REPORT, kit.LOCAL_EXTRA
    copy = wire[:4] + extra[:1] + wire[4:] + extra[1:]
    raws = [
        kit.make_raw("https://wirepress.test/world/quake", kit.make_html("Quake hits coast", wire), fetched_at=kit.T0),
        kit.make_raw(
            "https://wirepress.test/world/quake?utm_source=rss",
            kit.make_html("Quake hits coast", wire),
            fetched_at=kit.T0 + 1000,
        ),  # the same article again: a duplicate, not emitted
        kit.make_raw(
            "https://dailyherald.test/local/quake",
            kit.make_html("Quake shakes our town", copy),
            fetched_at=kit.T0 + 60_000,
        ),
        kit.make_raw(
            "https://pacifictimes.test/world/night",
            kit.make_html("A night outdoors", kit.INDEPENDENT_A),
            fetched_at=kit.T0 + 120_000,
        ),
        kit.make_raw("https://dailyherald.test/bad", b"%PDF-1.4", headers={"content-type": "application/pdf"}),
    ]
    p = TestPipeline(runner="FnApiRunner")
    out = p | beam.Create(raws, reshuffle=False) | ProcessArticles(config, clock=CLOCK)
    from transforms.articles.urls import article_id

    wire_id = article_id("https://wirepress.test/world/quake")
    assert_that(
        out["articles"] | beam.Map(lambda a: (a["canonical_url"], a["version"], a["copy_of"])),
        equal_to(
            [
                ("https://wirepress.test/world/quake", 1, None),
                ("https://dailyherald.test/local/quake", 1, wire_id),
                ("https://pacifictimes.test/world/night", 1, None),
            ]
        ),
        label="Articles",
    )
    assert_that(out["dead_letter"] | beam.Map(lambda d: d["reason"]), equal_to(["not_html"]), label="DeadLetters")
    p.run().wait_until_finish()


def test_a_torn_down_normalizer_child_is_kept_for_the_next_setup_of_the_process(monkeypatch):
    """Beam's local runner sets a pickled copy of the DoFn up and tears it down around every bundle: the extraction
    child (fork, warm-up: seconds) must outlive the bundle, not be started again for each one."""
    import pickle

    from transforms.articles import worker
    from transforms.articles.beam import NormalizeArticleFn

    monkeypatch.setattr(worker, "_IDLE", [], raising=False)
    fn = NormalizeArticleFn(budget_s=7)
    first = pickle.loads(pickle.dumps(fn))
    first.setup()
    kept = first.normalizer
    first.teardown()
    second = pickle.loads(pickle.dumps(fn))
    second.setup()
    assert second.normalizer is kept  # the same worker, so the same child once started
    other = NormalizeArticleFn(budget_s=8)
    other.setup()
    own = other.normalizer
    assert own is not kept  # another budget: a worker of its own
    second.teardown()
    other.teardown()
    assert [kept, own] == worker._IDLE
