"""PublishSnapshots: validate, store immutable versions, move pointers by compare-and-set; rejections are counted
and the previous version keeps serving. TrackAliases: one-hop aliases map."""

from __future__ import annotations

import copy
import json

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from schemas.pages import page_path, validate_page
from stores import StoreConfig, open_store, open_stores
from transforms.editions.beam.publishing import PublishSnapshotFn, PublishSnapshots
from transforms.editions.publish.aliases import aliases_document, resolve_aliases
from transforms.editions.ranker.rank import snapshot_items
from transforms.editions.vocabulary import documents as docs


@pytest.fixture
def cycle_output(world, make_ranker):
    T, MIN = world.T0, world.MIN
    for s in range(12):
        world.story(s + 1, [f"paper-{s}", "capital-post"], T - (s + 1) * 5 * MIN)
    r = make_ranker(world)
    return r.cycle(T)


def page_item(doc, min_stories=5):
    return {
        "kind": "edition_page",
        "path": page_path(doc["edition"], doc["section"], doc["version"]),
        "pointer": f"{doc['edition']}/{doc['section']}",
        "version": doc["version"],
        "doc": doc,
        "min_stories": min_stories,
    }


def with_version(doc, version, stories=None):
    d = copy.deepcopy(doc)
    d["version"] = version
    if stories is not None:
        d["stories"] = d["stories"][:stories]
    return d


def run_fn(fn, item):
    return list(fn.process(item))[0]


def stored(doc):
    """The JSON a reader gets: documents hold tuples where the stored JSON has arrays."""
    return json.loads(docs.canonical_bytes(doc))


def test_every_document_of_a_cycle_is_schema_valid(cycle_output):
    for page in cycle_output.pages.values():
        validate_page("edition_page", stored(page))
    validate_page("candidate_pool", stored(cycle_output.pool))
    assert cycle_output.coverage
    for cov in cycle_output.coverage:
        validate_page("story_coverage", stored(cov))
    assert all(len(s["vector"]) == 64 for s in cycle_output.pool["stories"])


def test_a_page_that_would_empty_is_rejected_and_the_old_version_keeps_serving(tmp_path, cycle_output):
    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    fn = PublishSnapshotFn(stores.config)
    fn.setup()
    top = cycle_output.pages["top"]
    v = top["version"]
    assert run_fn(fn, page_item(top))["outcome"] == "published"
    assert stores.pointers.get("us-en/top") == v
    empty = run_fn(fn, page_item(with_version(top, v + 1, stories=0)))
    assert (empty["outcome"], empty["reason"]) == ("rejected", "too_few_stories")
    halved = run_fn(fn, page_item(with_version(top, v + 2, stories=5)))  # 12 -> 5: lost more than half
    assert (halved["outcome"], halved["reason"]) == ("rejected", "lost_more_than_half")
    assert stores.pointers.get("us-en/top") == v  # still the good version
    assert not stores.snapshots.exists(page_path("us-en", "top", v + 1))  # a rejected page is never stored
    served = json.loads(stores.snapshots.get(page_path("us-en", "top", v)))
    assert len(served["stories"]) == 12


def test_unchanged_pages_replays_and_conflicts(tmp_path, cycle_output):
    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    fn = PublishSnapshotFn(stores.config)
    fn.setup()
    top = cycle_output.pages["top"]
    v = top["version"]
    assert run_fn(fn, page_item(top))["outcome"] == "published"
    same = with_version(top, v + 1)
    same["cycle"] = same["generated_at"] = docs.iso((v + 1) * 60_000)
    for s in same["stories"]:
        s["score"] *= 0.99  # only scores moved: readers see the same page
    assert run_fn(fn, page_item(same))["outcome"] == "unchanged"
    assert not stores.snapshots.exists(page_path("us-en", "top", v + 1))
    assert run_fn(fn, page_item(top))["outcome"] == "stale"  # a replay of the live version
    reordered = with_version(top, v + 2)
    reordered["stories"] = list(reversed(reordered["stories"]))
    for i, s in enumerate(reordered["stories"], start=1):
        s["rank"] = i
    stores.snapshots.put(page_path("us-en", "top", v + 2), b'{"someone":"else"}')
    assert run_fn(fn, page_item(reordered))["outcome"] == "conflict"
    assert stores.pointers.get("us-en/top") == v
    fresh = PublishSnapshotFn(stores.config)  # a new worker reads the live version from the store
    fresh.setup()
    reordered["version"] = v + 3
    assert run_fn(fresh, page_item(reordered))["outcome"] == "published"
    assert stores.pointers.get("us-en/top") == v + 3
    assert [h["version"] for h in stores.pointers.history("us-en/top")] == [v, v + 3]


def test_a_lasting_shrink_is_accepted_after_the_confirmation_cycles(tmp_path, cycle_output):
    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    fn = PublishSnapshotFn(stores.config, confirm_shrink_cycles=3)
    fn.setup()
    top = cycle_output.pages["top"]
    v = top["version"]
    run_fn(fn, page_item(top))
    outcomes = [run_fn(fn, page_item(with_version(top, v + k, stories=5)))["outcome"] for k in (1, 2, 3)]
    assert outcomes == ["rejected", "rejected", "published"]


def test_rejections_are_counted_as_beam_metrics(tmp_path, cycle_output):
    config = StoreConfig(data_dir=str(tmp_path))
    top = cycle_output.pages["top"]
    v = top["version"]
    items = [page_item(top), page_item(with_version(top, v + 1, stories=0))]
    p = beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions())
    _ = p | beam.Create(items[:1]) | "First" >> PublishSnapshots(config)
    p.run().wait_until_finish()
    p = beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions())
    _ = p | beam.Create(items[1:]) | "Second" >> PublishSnapshots(config)
    result = p.run()
    result.wait_until_finish()
    counters = {
        c.key.metric.name: c.committed
        for c in result.metrics().query(MetricsFilter().with_namespace("snapshots"))["counters"]
    }
    assert counters.get("rejected") == 1 and counters.get("rejected_too_few_stories") == 1
    assert open_store("pointers", config).get("us-en/top") == v


def test_coverage_and_pool_are_published_with_their_pointers(tmp_path, cycle_output):
    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    fn = PublishSnapshotFn(stores.config)
    fn.setup()
    from transforms.editions.vocabulary.config import load_config

    items = snapshot_items(cycle_output, load_config())
    results = [run_fn(fn, it) for it in items]
    published = {r["pointer"] for r in results if r["outcome"] == "published"}
    assert "pool/us-en" in published and "us-en/top" in published
    assert {f"story/{c['story_id']}" for c in cycle_output.coverage} <= published
    again = [run_fn(fn, it)["outcome"] for it in items if it["kind"] == "story_coverage"]
    assert set(again) == {"stale"}  # another edition emitting the same coverage version changes nothing
    cov = cycle_output.coverage[0]
    assert stores.snapshots.get(f"stories/{cov['story_id']}/v{cov['version']}.json") == docs.canonical_bytes(cov)


def test_aliases_resolve_in_one_hop():
    merges = [
        {"id": "a", "story_id": 2, "other_story_id": 3, "seq": 1, "at": 10},
        {"id": "b", "story_id": 1, "other_story_id": 2, "seq": 2, "at": 20},
        {"id": "c", "story_id": 9, "other_story_id": 8, "seq": 3, "at": 30},
    ]
    alias = resolve_aliases(merges)
    assert alias == {3: 1, 2: 1, 8: 9}
    doc = aliases_document(alias, 5)
    validate_page("aliases", doc)
    assert doc["aliases"] == {"2": "1", "3": "1", "8": "9"}


def test_canonical_bytes_and_projection_are_deterministic():
    doc = {"b": 1.5, "a": ["é", 2]}
    assert docs.canonical_bytes(doc) == '{"a":["é",2],"b":1.5}'.encode()
    import numpy as np

    c = np.random.default_rng(0).standard_normal((3, 384))
    v1, v2 = docs.project(c), docs.project(c.copy())
    assert (v1 == v2).all() and v1.shape == (3, 64)
    assert np.allclose(np.linalg.norm(v1, axis=1), 1.0, atol=1e-3)
    # the projection keeps cosines roughly: a near-duplicate stays near, an unrelated vector does not
    a = c[0] / np.linalg.norm(c[0])
    b = 0.95 * a + 0.05 * c[1] / np.linalg.norm(c[1])
    pa, pb, pc = docs.project(np.stack([a, b, c[2]]))
    assert pa @ pb > 0.9 and abs(pa @ pc) < 0.5
    assert docs.iso(1_709_294_400_123) == "2024-03-01T12:00:00.123Z"


def test_validation_in_parts_still_rejects_every_invalid_entry(cycle_output):
    from transforms.editions.vocabulary.documents import SnapshotRejected, validate

    pool, page = cycle_output.pool, cycle_output.pages["top"]
    validate("candidate_pool", pool)  # valid, and its entries are now remembered as valid
    validate("edition_page", page)

    def rejected(kind, doc):
        with pytest.raises(SnapshotRejected) as exc:
            validate(kind, doc, None, 0)
        return str(exc.value)

    bad = copy.deepcopy(stored(pool))
    del bad["stories"][3]["representative"]["url"]
    assert "stories/3/representative" in rejected("candidate_pool", bad)
    bad = copy.deepcopy(stored(pool))
    bad["stories"][0]["score"] = "high"
    assert "stories/0/score" in rejected("candidate_pool", bad)
    bad = copy.deepcopy(stored(page))
    bad["stories"][1]["rank"] = 0
    assert "stories/1/rank" in rejected("edition_page", bad)
    bad = copy.deepcopy(stored(page))
    bad["stories"][2]["labels"] = ["urgent"]
    assert "stories/2/labels" in rejected("edition_page", bad)
    bad = copy.deepcopy(stored(page))
    bad["stories"] = bad["stories"] * 9  # 108 > maxItems 100
    assert "more than 100" in rejected("edition_page", bad)
    bad = copy.deepcopy(stored(page))
    bad["edition"] = "USA"
    assert "edition" in rejected("edition_page", bad)


def test_published_and_rejected_pages_log_the_operations_events(tmp_path, cycle_output, caplog):
    """terraform/modules/monitoring's log-based metrics (stuck pointers, rejected snapshots) read these lines: their
    shape is a contract (`newsroom.<event> edition=.. section=.. version=..`, logfmt), pinned here and by the HCL
    tests on the Terraform side."""
    import logging
    import re

    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    fn = PublishSnapshotFn(stores.config)
    fn.setup()
    top = cycle_output.pages["top"]
    v = top["version"]
    with caplog.at_level(logging.INFO):
        run_fn(fn, page_item(top))
        run_fn(fn, page_item(with_version(top, v + 1, stories=0)))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("newsroom.")]
    assert lines == [
        f"newsroom.page_published edition=us-en section=top version={v}",
        f"newsroom.edition_heartbeat edition=us-en section=top version={v} outcome=published",
        f"newsroom.snapshot_rejected edition=us-en section=top version={v + 1} reason=too_few_stories",
    ]
    # the Terraform filters: jsonPayload.message=~"^newsroom[.]<event> " and label values [A-Za-z0-9_-]+
    for line in lines:
        assert re.fullmatch(r"newsroom[.][a-z_]+( [a-z_]+=[A-Za-z0-9_.-]+)+", line)


def test_a_page_with_a_new_article_logs_its_release_to_page_delay_and_quiet_cycles_keep_the_heartbeat(
    tmp_path, cycle_output, caplog
):
    """release_to_page_s: from the first-seen time of the newest article new on the page to the pointer move (the
    freshness alert's metric); a cycle whose page is unchanged is not republished but still beats, once per
    edition and cycle, so the stuck-pointer alert tells a quiet edition from a stalled one."""
    import logging
    from datetime import UTC, datetime

    from transforms.editions.publish.snapshots import SnapshotPublisher

    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    top = stored(cycle_output.pages["top"])
    v = top["version"]
    now = [datetime(2026, 1, 1, 12, 0, tzinfo=UTC).timestamp()]
    pub = SnapshotPublisher(stores, languages=("en",), clock=lambda: now[0])
    fresh = copy.deepcopy(top)
    fresh["version"] = v + 1
    card = fresh["stories"][0]["representative"]
    card["article_id"], card["first_seen_at"] = "brand-new", "2026-01-01T11:59:18Z"  # 42 s before the move
    with caplog.at_level(logging.INFO):
        assert pub.publish(page_item(top))["outcome"] == "published"
        assert pub.publish(page_item(fresh))["outcome"] == "published"
        assert pub.publish(page_item(with_version(fresh, v + 2)))["outcome"] == "unchanged"
        other = with_version(fresh, v + 2)
        other["section"] = "world"
        pub.publish(page_item(other))  # a second page of the same edition and cycle: no second heartbeat
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("newsroom.")]
    assert lines[:5] == [
        f"newsroom.page_published edition=us-en section=top version={v}",  # first publish: nothing to compare
        f"newsroom.edition_heartbeat edition=us-en section=top version={v} outcome=published",
        f"newsroom.page_published edition=us-en section=top version={v + 1} release_to_page_s=42.0",
        f"newsroom.edition_heartbeat edition=us-en section=top version={v + 1} outcome=published",
        f"newsroom.edition_heartbeat edition=us-en section=top version={v + 2} outcome=unchanged",
    ]
    assert sum("edition_heartbeat" in line for line in lines) == 3


def test_a_small_edition_publishes_its_top_page_with_every_story_it_has(world, make_ranker, tmp_path):
    """An edition whose pool holds fewer stories than top's minimum (5) still gets a top page (a young or
    small-language edition is not broken): the minimum is half the pool, rounded up; its topical sections keep their
    own minimum, and a top page under that minimum is still refused."""
    from transforms.editions.vocabulary.config import load_config

    T, MIN = world.T0, world.MIN
    for s in range(3):
        world.story(s + 1, [f"paper-{s}", "capital-post"], T - (s + 1) * 5 * MIN)
    out = make_ranker(world).cycle(T)
    assert len(out.pool["stories"]) == 3
    items = {it["pointer"]: it for it in snapshot_items(out, load_config())}
    top = items["us-en/top"]
    assert top["min_stories"] == 2 and len(top["doc"]["stories"]) == 3
    docs.validate("edition_page", top["doc"], None, top["min_stories"])  # goes live
    others = [it for p, it in items.items() if it["kind"] == "edition_page" and p != "us-en/top"]
    assert others and all(it["min_stories"] == load_config().section(it["doc"]["section"]).min_stories for it in others)
    with pytest.raises(docs.SnapshotRejected):
        docs.validate("edition_page", with_version(top["doc"], top["version"], stories=1), None, top["min_stories"])


def test_a_content_rejected_before_is_rejected_again_unserialised_unless_its_minute_values_are_invalid(
    cycle_output, monkeypatch
):
    """documents.validate with the content digest: a page below its minimum, proposed again at a later minute (new
    version, cycle times, scores), is rejected for the same reason and detail without being serialised; a new
    minute's value that breaks the schema still makes it a schema rejection, and another minimum is checked anew."""
    top = cycle_output.pages["top"]
    v = top["version"]
    small = with_version(top, v + 1, stories=2)
    with pytest.raises(docs.SnapshotRejected) as first:
        docs.validate("edition_page", small, None, 5, digest=docs.content_digest(small))
    assert first.value.reason == "too_few_stories"
    later = with_version(small, v + 2)
    later["cycle"] = later["generated_at"] = "2031-01-01T00:00:00Z"
    later["stories"] = [dict(e, score=e["score"] * 0.5) for e in later["stories"]]
    digest = docs.content_digest(later)
    assert digest == docs.content_digest(small)

    def not_again(doc):
        raise AssertionError("serialised again")

    with monkeypatch.context() as m:
        m.setattr(docs, "canonical_bytes", not_again)
        with pytest.raises(docs.SnapshotRejected) as again:
            docs.validate("edition_page", later, None, 5, digest=digest)
    assert (again.value.reason, again.value.detail) == (first.value.reason, first.value.detail)
    for bad in (dict(later, version=0), dict(later, cycle="yesterday")):
        with pytest.raises(docs.SnapshotRejected) as schema:
            docs.validate("edition_page", bad, None, 5, digest=digest)
        assert schema.value.reason == "schema"
    bad_score = dict(later, stories=[dict(e, score="high") for e in later["stories"]])
    with pytest.raises(docs.SnapshotRejected) as schema:
        docs.validate("edition_page", bad_score, None, 5, digest=digest)
    assert schema.value.reason == "schema"
    assert docs.validate("edition_page", later, None, 2, digest=digest) == docs.canonical_bytes(later)


def test_the_bytes_the_ranker_wrote_with_the_digest_are_stored_without_being_written_again(
    tmp_path, cycle_output, monkeypatch
):
    """SteadyWatch.unproposed digests a page holding null (image_url) with its canonical bytes
    (documents.digest_and_bytes) and hands both on; the publisher validates and stores those very bytes, and a
    shrink confirmed after ``confirm_shrink_cycles`` stores them too."""
    from types import SimpleNamespace

    from transforms.editions.publish.snapshots import SnapshotPublisher
    from transforms.editions.ranker.steady import SteadyWatch

    top = cycle_output.pages["top"]
    v = top["version"]
    cards = [s["representative"] for s in top["stories"]]
    assert any(c.get("image_url") is None for c in cards)  # what needs the proof
    watch, memory = SteadyWatch(), SimpleNamespace(page_max={})
    (first,) = watch.unproposed([page_item(top)], memory, ())
    (small,) = watch.unproposed([page_item(with_version(top, v + 1, stories=5))], memory, ())
    assert first["data"] == docs.canonical_bytes(top) and small["data"] == docs.canonical_bytes(small["doc"])
    stores = open_stores(StoreConfig(data_dir=str(tmp_path)))
    publisher = SnapshotPublisher(stores, confirm_shrink_cycles=1)
    monkeypatch.setattr(docs, "canonical_bytes", lambda d: pytest.fail("written again"))
    assert publisher.publish(first)["outcome"] == "published"
    assert stores.snapshots.get(first["path"]) == first["data"]
    assert publisher.publish(small)["outcome"] == "published"  # 12 -> 5 stories, confirmed at once here
    assert stores.snapshots.get(small["path"]) == small["data"]
