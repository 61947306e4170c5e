"""The shape of each job's Beam graph, built (not run) as Dataflow would receive it: the steps that must be there,
and for the stories job the path from the cross-language linker to the ranker.

Built with ``Pipeline.to_runner_api()``: nothing is contacted (ReadBus on Pub/Sub is a pure graph), no model loads.
"""

from __future__ import annotations

from collections import defaultdict

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions


class Graph:
    """The leaf transforms of a pipeline proto and the edges between them (an output PCollection of one is an
    input of the other)."""

    def __init__(self, pipeline: beam.Pipeline):
        proto = pipeline.to_runner_api()
        ts = proto.components.transforms
        self.names = {t.unique_name for t in ts.values()}
        self.leaves = {tid: t for tid, t in ts.items() if not t.subtransforms}
        consumers = defaultdict(set)
        for tid, t in self.leaves.items():
            for pc in t.inputs.values():
                consumers[pc].add(tid)
        self.edges = {tid: {c for pc in t.outputs.values() for c in consumers[pc]} for tid, t in self.leaves.items()}

    def has(self, name: str) -> bool:
        return name in self.names

    def missing(self, names) -> list[str]:
        return [n for n in names if n not in self.names]

    def reaches(self, src_prefix: str, dst_prefix: str) -> bool:
        """Whether data flows from any leaf under ``src_prefix`` to any leaf under ``dst_prefix``."""
        todo = [tid for tid, t in self.leaves.items() if t.unique_name.startswith(src_prefix)]
        seen = set(todo)
        while todo:
            tid = todo.pop()
            if self.leaves[tid].unique_name.startswith(dst_prefix):
                return True
            for nxt in self.edges[tid] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return False


# ------------------------------------------------------------------------------------------------ ingest

INGEST_STEPS = [
    "RegistryTicks",
    "LoadFeedRegistry",
    "ReadFetchRequests",
    "ReadFetchRequests/ReadFromPubSub",  # Beam's Pub/Sub source: acked when the bundle commits
    "DecodeFetchRequests",
    "MergeFeedInputs",
    "IngestFeeds/ScheduleFeeds",
    "IngestFeeds/FetchPages",
    "IngestFeeds/SubscribeFeeds",
    "PublishRawItems",
    "PublishDeadLetters",
]


def test_ingest_graph_reads_requests_from_pubsub_and_publishes_in_batches(tmp_path):
    from pipelines.ingest import build_pipeline
    from pipelines.ingest_options import resolve
    from stores.beam_io import PublishToBusFn

    argv = [f"--data_dir={tmp_path}", "--bus=pubsub", "--project=newsroom-test", "--streaming"]
    options = PipelineOptions(argv)
    p = beam.Pipeline(runner="BundleBasedDirectRunner", options=options)
    out = build_pipeline(p, resolve(options))
    g = Graph(p)
    assert not g.missing(INGEST_STEPS), g.missing(INGEST_STEPS)
    assert not any("PullFetchRequests" in n or "RequestTicks" in n for n in g.names)  # no pull-and-ack DoFn
    assert g.reaches("ReadFetchRequests/", "IngestFeeds/ScheduleFeeds")
    assert g.reaches("IngestFeeds/FetchPages", "PublishRawItems")
    publishers = [t for t in p.transforms_stack[0].parts if t.full_label in ("PublishRawItems", "PublishDeadLetters")]
    assert [type(t.transform.fn) for t in publishers] == [PublishToBusFn, PublishToBusFn]
    assert set(out) == {"items", "dead_letters"}


# ------------------------------------------------------------------------------------------------ stories

STORIES_STEPS = [
    "ReadRawItems",
    "DecodeRawItems",
    "ProcessArticles",
    "ArticleFeatures",
    "EmbedArticles",
    "ClusterStories",
    "ApplyStoryChanges",
    "PublishEditions/RankEditions",
    "PublishEditions/PublishSnapshots",
    "PublishFetchRequests",
    "PublishEditions/AnnounceBreaking/OncePerStoryAndEdition",
    "PublishBreaking",
    "PublishDeadLetters",
]
LINK_STEPS = ["LinkStories", "LinkStories/ProposeLinks", "ApplyLinks"]


def _stories_graph(tmp_path, *extra) -> Graph:
    from pipelines.stories import build_pipeline, resolve

    options = PipelineOptions([f"--data_dir={tmp_path}", *extra])
    p = beam.Pipeline(runner="BundleBasedDirectRunner", options=options)
    build_pipeline(p, resolve(options))
    return Graph(p)


def test_the_streaming_stories_graph_links_stories_and_the_links_reach_the_ranker(tmp_path):
    # reads Pub/Sub: streaming, so --links auto = on
    g = _stories_graph(tmp_path, "--bus=pubsub", "--project=newsroom-test")
    assert not g.missing(STORIES_STEPS + LINK_STEPS), g.missing(STORIES_STEPS + LINK_STEPS)
    assert g.has("ReadRawItems/ReadFromPubSub")
    assert g.reaches("ClusterStories/", "LinkStories/ProposeLinks")
    assert g.reaches("LinkStories/", "ApplyLinks/")  # LINK changes into the story store
    assert g.reaches("LinkStories/", "PublishEditions/RankEditions/")  # ... and to the ranker: pages and coverage
    # ... and to the burst pull (a linked story's publishers are pulled too), whose requests go to ingest
    assert g.reaches("LinkStories/", "PublishEditions/DetectBursts/RequestBurstPolls")
    assert g.reaches("PublishEditions/DetectBursts/RequestBurstPolls", "PublishFetchRequests")
    # Breaking is announced (and its pages purged) from what was published, never from unpublished items
    assert g.reaches("PublishEditions/PublishSnapshots/", "PublishEditions/AnnounceBreaking/")
    assert g.reaches("PublishEditions/AnnounceBreaking/", "PublishBreaking")
    off = _stories_graph(tmp_path, "--bus=pubsub", "--project=newsroom-test", "--links=off")
    assert not off.missing(STORIES_STEPS) and not any(n.startswith("LinkStories") for n in off.names)


def test_the_streaming_stories_graph_sends_storylines_to_the_ranker_only(tmp_path):
    g = _stories_graph(tmp_path, "--bus=pubsub", "--project=newsroom-test")
    assert g.reaches("ClusterStories/", "Storylines/DecideStorylines")
    assert g.reaches("LinkStories/", "Storylines/DecideStorylines")  # linked languages share a storyline
    assert g.reaches("Storylines/", "PublishEditions/RankEditions/RankEachEdition")
    assert not g.reaches("Storylines/", "PublishEditions/TrackAliases/")  # a storyline MERGE is not a story alias
    assert not g.reaches("Storylines/", "PublishEditions/DetectBursts/")
    off = _stories_graph(tmp_path, "--bus=pubsub", "--project=newsroom-test", "--links=off")
    assert off.reaches("Storylines/", "PublishEditions/RankEditions/RankEachEdition")


def test_a_bounded_stories_graph_does_not_link(tmp_path):
    g = _stories_graph(tmp_path)  # the embedded bus: bounded (FnApiRunner), --links auto = off (see 09f2266)
    assert not g.missing(STORIES_STEPS), g.missing(STORIES_STEPS)
    assert not any(n.startswith(("LinkStories", "ApplyLinks", "Storylines")) for n in g.names)
    with pytest.raises(ValueError, match="--links=on needs a streaming run"):
        _stories_graph(tmp_path, "--links=on")
    with pytest.raises(ValueError, match="--link_interval_s"):
        _stories_graph(tmp_path, "--bus=pubsub", "--project=newsroom-test", "--link_interval_s=0")


# ------------------------------------------------------------------------------------------------ backfill

BACKFILL_STEPS = [
    "ReadArticles",
    "EmbedArticles",
    "ClusterStories",
    "ApplyStoryChanges",
    "WriteResults",  # assignments, stories and the links of the final stories (transforms/stories/beam/backfill.py)
    "WriteDeadLetters",
]


@pytest.mark.parametrize("snapshots", [False, True])
def test_backfill_graph(tmp_path, snapshots):
    from pipelines.backfill import build_pipeline, resolve

    src = tmp_path / "in.jsonl"
    src.write_text("")
    argv = [f"--input={src}", f"--output={tmp_path / 'out'}", f"--data_dir={tmp_path / 'store'}"]
    if snapshots:
        argv.append("--snapshots")
    options = PipelineOptions(argv)
    p = beam.Pipeline(runner="FnApiRunner", options=options)
    build_pipeline(p, resolve(options), files=[str(src)])
    g = Graph(p)
    assert not g.missing(BACKFILL_STEPS), g.missing(BACKFILL_STEPS)
    assert g.reaches("ClusterStories/", "WriteResults")
    assert g.has("PublishEditions/RankEditions") == snapshots
    assert not g.has("PublishEditions/DetectBursts/RequestBurstPolls")  # a backfill pulls no feeds
    if snapshots:
        assert g.reaches("ClusterStories/", "PublishEditions/RankEditions/")


# ------------------------------------------------------------------------------------------------ authority

AUTHORITY_STEPS = [
    "ScanStoryIds",
    "SpreadStories",  # the scan runs on one worker; the story reads spread over all of them
    "ReadStoryFacts",
    "StoryEvidence",
    "SumCounts",
    "AllCounts",
    "CountStories",
    "PublishAuthority",
]


def test_authority_graph(tmp_path):
    from pipelines.authority import build_pipeline, resolve

    options = PipelineOptions([f"--data_dir={tmp_path / 'store'}"])
    p = beam.Pipeline(runner="FnApiRunner", options=options)
    build_pipeline(p, resolve(options))
    g = Graph(p)
    assert not g.missing(AUTHORITY_STEPS), g.missing(AUTHORITY_STEPS)
    assert g.reaches("ScanStoryIds", "SpreadStories/")
    assert g.reaches("SpreadStories/", "ReadStoryFacts")
    assert g.reaches("SumCounts/", "PublishAuthority")
    assert g.reaches("CountStories/", "PublishAuthority")  # the story count is a side input of the publish step
