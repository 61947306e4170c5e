"""The stories job: raw items -> articles -> stories -> bursts and minute ranking -> edition snapshots + pointers.

Reads RawItem messages (schemas/avro/raw_item.avsc) from the ``items-raw`` topic through a subscription
(``--input_subscription``; Pub/Sub with ``--backend=gcp`` or ``--bus=pubsub``, the embedded bus otherwise), or from
RawItem Avro files (``--input``). Writes through the stores only: articles (ArticleStore), stories (StoryStore), page/pool/coverage/
aliases snapshots (SnapshotStore) and their latest pointers (PointerStore); FetchRequest messages (kind BURST) to
``fetch-requests`` and DeadLetter messages of every stage to ``--dead_letter_topic``.

The graph, one labelled step per stage (the same transforms as the backfill and the tests):

    ReadRawItems -> DecodeRawItems -> ProcessArticles (normalise, dedupe, syndication; transforms/articles)
      -> ArticleFeatures -> EmbedArticles -> ClusterStories -> ApplyStoryChanges (transforms/stories)
      -> PublishEditions (DetectBursts, RankEditions, TrackAliases, PublishSnapshots; transforms/editions)
    streaming (--links auto|on): ClusterStories -> LinkStories -> ApplyLinks, and LINK changes -> PublishEditions
    streaming: writer outputs and links -> Storylines -> PublishEditions/RankEditions (one story per storyline in
      each edition's top 5)
    dead letters of every stage -> PublishDeadLetters;  burst polls -> PublishFetchRequests

Runners: reading Pub/Sub (``--backend=gcp`` or ``--bus=pubsub``) is a streaming job: DataflowRunner in production
(``--runner``), BundleBasedDirectRunner here by default (the one local runner that reads Pub/Sub; see
LOCAL_STACK.md). With files or the embedded bus the input is bounded: FnApiRunner, batch, with the same event-time
results (minute timers fire in order when the input ends). Messages carrying the ``heartbeat`` attribute are dropped on read (they only move a
test's Pub/Sub watermark).

Retry policy: store errors (StoreError) are transient and raised, so the bundle is retried; an unreadable message or
item is permanent: counted, dead-lettered with its reason, and the job goes on.
"""

from __future__ import annotations

import functools
import logging
import sys
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options import JobRun, StoreOptions
from transforms.common import DEAD_LETTER, dead_letter
from transforms.stories.embed.embedder_specs import EMBEDDER_CHOICES, embedder_arg

log = logging.getLogger("newsroom.stories")

STAGE = "stories-job"


class StoriesOptions(StoreOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--input_subscription",
            default="stories-items-raw",
            help="Subscription (base name; the namespace prefix is added) on the items-raw topic the job reads; "
            "local runs create it when missing. Ignored with --input. Default: stories-items-raw.",
        )
        parser.add_argument(
            "--input",
            default=None,
            help="RawItem Avro container file(s) (path or glob, local or gs://) to read instead of the bus; the job "
            "is then bounded (batch). Example: /data/items-2026-01-01.avro. Default: none (read the bus).",
        )
        parser.add_argument(
            "--dead_letter_topic",
            default="dead-letter",
            help="Topic (base name) receiving the DeadLetter records of every stage. Default: dead-letter.",
        )
        parser.add_argument(
            "--fetch_topic",
            default="fetch-requests",
            help="Topic (base name) receiving burst poll requests (FetchRequest, kind BURST). Default: fetch-requests.",
        )
        _add_breaking_args(parser)
        parser.add_argument(
            "--publishers",
            default=None,
            help="Publisher registry JSON (path). Default: the packaged transforms/data/publishers.json.",
        )
        parser.add_argument(
            "--editions",
            default=None,
            help="Editions file (path). Default: the packaged transforms/editions/vocabulary/editions.json.",
        )
        parser.add_argument(
            "--editions_only",
            default=None,
            help="Comma-separated edition ids to rank (small local runs). Example: us-en,gb-en. Default: all.",
        )
        parser.add_argument(
            "--embedder",
            default="auto",
            type=embedder_arg,
            help=f"Embedder spec, one of {EMBEDDER_CHOICES} (transforms/stories/embed/embed.py): auto = English "
            "all-MiniLM-L6-v2, others multilingual USE v3; st:PATH a sentence-transformers directory; hash for tests. "
            "Default: auto.",
        )
        parser.add_argument(
            "--links",
            default="auto",
            choices=["auto", "on", "off"],
            help="Cross-language links between stories (multilingual USE v3 vector per article, ~375 texts/s per "
            "worker, linked at each 10-minute tick; recorded as links, never merges). auto = on when the job "
            "streams (Pub/Sub), off for a bounded local run, where FnApiRunner can drop the story writer's timer "
            "output when a second timer stage reads it (the backfill links its final stories instead). Default: auto.",
        )
        parser.add_argument(
            "--link_interval_s",
            type=float,
            default=600.0,
            help="Event-time seconds between two link ticks (each links the live stories across languages; LINK "
            "changes reach story pages and Full Coverage at the next ranking cycle), and between two storyline "
            "ticks of a streaming job. `newsroom run` divides it by "
            "the sample world's --speed. Default: 600.",
        )


def _add_breaking_args(parser) -> None:
    """Where Breaking records go and where the pages newly showing a Breaking story are purged."""
    parser.add_argument(
        "--breaking_topic",
        default="breaking",
        help="Topic (base name) receiving one Breaking record per story and edition when a story first shows the "
        "Breaking label on an edition's pages (schemas/avro/breaking.avsc). Default: breaking.",
    )
    parser.add_argument(
        "--cdn",
        default="auto",
        choices=["auto", "none", "queue", "gcp"],
        help="Where the pages newly showing a Breaking story are purged (stores/cdn.py): queue (the embedded "
        "purge queue the local edge applies), gcp (Cloud CDN invalidation on --cdn_url_map), none. auto = queue "
        "on the embedded backend, gcp on the gcp backend when --cdn_url_map is given, else none. Default: auto.",
    )
    parser.add_argument(
        "--cdn_url_map",
        default="",
        help="The origin's URL map (Cloud CDN invalidations; terraform output url_map). Example: newsroom-api. "
        "Default: none.",
    )


def DecodeRawItemFn(clock=None) -> beam.DoFn:  # noqa: N802 - reads as the DoFn it returns
    """(data, attributes) -> RawItem dict; heartbeats dropped; undecodable messages dead-lettered (``dead_letter``)."""
    from stores.beam_io import DecodeBusFn

    bad = functools.partial(dead_letter, STAGE, "undecodable_raw_item")
    return DecodeBusFn("RawItem", STAGE, "raw_items", bad, DEAD_LETTER, clock=clock)


def _read_avro_files(pattern: str):
    """RawItem records of Avro container files, as (data, attributes) pairs like bus messages."""
    import io

    import fastavro
    from apache_beam.io.filesystems import FileSystems

    from schemas import codec

    class ReadAvroFn(beam.DoFn):
        def process(self, path):
            with FileSystems.open(path) as f:
                for record in fastavro.reader(io.BytesIO(f.read())):
                    yield (codec.encode("RawItem", record), {})

    globs = [g.strip() for g in pattern.split(",") if g.strip()]
    paths = sorted({m.path for g in globs for m in FileSystems.match([g])[0].metadata_list})
    if not paths:
        raise ValueError(f"--input: no file matches {pattern!r}")
    return beam.Create(paths) | "ReadAvroRecords" >> beam.ParDo(ReadAvroFn())


@dataclass(frozen=True)
class StoriesJob:
    """The stories job's options, resolved once (:func:`resolve`); the flags keep their names (see their help).

    reads_pubsub: the job reads Pub/Sub (the gcp backend or ``--bus=pubsub``, no ``--input``): it streams.
    links: ``--links`` resolved (:func:`resolve`). storylines: the storyline stage runs (when the job streams; a
    bounded run does not, for the reason ``--links`` gives; the backfill runs the same stage over its outputs).
    cdn: ``--cdn`` with auto resolved by backend and ``--cdn_url_map``. editions_only: the ids, or None for all.
    """

    run: JobRun
    reads_pubsub: bool
    links: bool
    storylines: bool
    cdn: str
    link_every_ms: int = 600_000
    editions_only: tuple[str, ...] | None = None
    input: str | None = None
    input_subscription: str = "stories-items-raw"
    dead_letter_topic: str = "dead-letter"
    fetch_topic: str = "fetch-requests"
    breaking_topic: str = "breaking"
    cdn_url_map: str = ""
    publishers: str | None = None
    editions: str | None = None
    embedder: str = "auto"


_AS_GIVEN = ("input", "input_subscription", "dead_letter_topic", "fetch_topic", "breaking_topic", "cdn_url_map")


def resolve(options: PipelineOptions) -> StoriesJob:
    """The job's options, checked once (ValueError naming the flag).

    ``--links``: measured, with LinkStories downstream a bounded FnApiRunner run of this job decided no story at
    all under some stage orders (PYTHONHASHSEED 1, 2, 3, 5 of 1-6); without it, under every one
    (tests/pipelines/test_stories_job.py::test_the_job_on_the_embedded_bus_whatever_the_hash_seed), so auto
    links only a streaming run and ``--links=on`` is refused on a bounded one.
    """
    o = options.view_as(StoriesOptions)
    run = JobRun.of(options)
    if not o.link_interval_s > 0:
        raise ValueError(f"--link_interval_s must be > 0, got {o.link_interval_s}")
    reads_pubsub = run.store.bus_kind == "pubsub" and not o.input
    streams = reads_pubsub or run.streaming
    if o.links == "on" and not streams:
        raise ValueError("--links=on needs a streaming run (Pub/Sub); a bounded run cannot link (see --links help)")
    only = tuple(e.strip() for e in o.editions_only.split(",") if e.strip()) if o.editions_only else None
    return StoriesJob(
        run=run,
        reads_pubsub=reads_pubsub,
        links=streams if o.links == "auto" else o.links == "on",
        storylines=streams,
        cdn=cdn_of(o.cdn, o.cdn_url_map, run.store),
        link_every_ms=int(o.link_interval_s * 1000),
        editions_only=only,
        publishers=o.publishers,
        editions=o.editions,
        embedder=o.embedder,
        **{name: getattr(o, name) for name in _AS_GIVEN},
    )


def build_pipeline(p, job: StoriesJob) -> dict:
    """Adds the stories job to pipeline ``p``; returns its main PCollections (for tests)."""
    from stores.beam_io import PublishToBusFn, ReadBus
    from transforms.articles.beam import ARTICLES, ProcessArticles
    from transforms.editions.beam import ChangesOfOutputs, PublishEditions
    from transforms.editions.vocabulary.settings import PublishSettings, RankSettings
    from transforms.stories import beam as sb
    from transforms.stories.beam.storylines import Storylines
    from transforms.stories.vocabulary.features import from_article

    o, cfg, links = job, job.run.store, job.links
    if o.input:
        messages = p | "ReadRawItems" >> _read_avro_files(o.input)
    else:
        messages = p | "ReadRawItems" >> ReadBus(cfg, "items-raw", o.input_subscription)
    decoded = messages | "DecodeRawItems" >> beam.ParDo(DecodeRawItemFn()).with_outputs(DEAD_LETTER, main="items")
    # read from the bus: each item settles its entry in ingest's outbox once stored (stores/feeds.py)
    settle = not o.input
    articles = decoded.items | "ProcessArticles" >> ProcessArticles(cfg, publishers=o.publishers, settle=settle)
    embedded = (
        articles[ARTICLES]
        | "ArticleFeatures" >> beam.Map(lambda a: from_article(a).to_dict())
        | "EmbedArticles" >> sb.EmbedArticles(o.embedder, links=links)
    )
    clustered = embedded | "ClusterStories" >> sb.ClusterStories(cfg)
    applied = clustered.outputs | "ApplyStoryChanges" >> sb.ApplyStoryChanges(cfg)
    story_changes = clustered.outputs
    link_outputs = None
    if links:
        # LINK outputs of the link writer ("mul"): into the story store like any writer's output, and to the
        # editions stage with the other changes, where the ranker records them on both stories' coverage.
        link_outputs = clustered.outputs | "LinkStories" >> sb.LinkStories(every_ms=job.link_every_ms)
        link_outputs | "ApplyLinks" >> sb.ApplyStoryChanges(cfg)
        story_changes = (clustered.outputs, link_outputs) | "WithLinks" >> beam.Flatten()
    to_rank = story_changes | "ChangesOfOutputs" >> ChangesOfOutputs()
    storylines = None
    if job.storylines:
        # The storyline stage (transforms/stories/beam/storylines.py) reads every writer output and link; its
        # StorylineChanges go to the ranker (one story per storyline in each edition's top 5).
        storylines = story_changes | "Storylines" >> Storylines(every_ms=job.link_every_ms)
        to_rank = {"changes": to_rank, "storylines": storylines}
    ranking = RankSettings(o.editions, o.publishers, list(job.editions_only) if job.editions_only else None)
    publishing = PublishSettings(cdn=job.cdn, cdn_url_map=o.cdn_url_map)
    editions = to_rank | "PublishEditions" >> PublishEditions(cfg, ranking, publishing)
    editions["fetch_requests"] | "PublishFetchRequests" >> beam.ParDo(PublishToBusFn(cfg, o.fetch_topic))
    editions["breaking"] | "PublishBreaking" >> beam.ParDo(PublishToBusFn(cfg, o.breaking_topic))
    dead = (
        decoded[DEAD_LETTER],
        articles[DEAD_LETTER],
        clustered[DEAD_LETTER],
        editions[DEAD_LETTER],
    ) | "MergeDeadLetters" >> beam.Flatten()
    dead | "PublishDeadLetters" >> beam.ParDo(PublishToBusFn(cfg, o.dead_letter_topic))
    return {
        "articles": articles[ARTICLES],
        "outputs": clustered.outputs,
        "applied": applied,
        "links": link_outputs,
        "storylines": storylines,
        "results": editions["results"],
        "fetch_requests": editions["fetch_requests"],
        "breaking": editions["breaking"],
        "dead_letter": dead,
    }


def cdn_of(cdn: str, url_map: str, cfg) -> str:
    """The purger ``--cdn`` names (see its help): auto resolved by backend and ``--cdn_url_map``."""
    if cdn != "auto":
        return cdn
    if cfg.backend == "embedded":
        return "queue"
    return "gcp" if url_map else "none"


def run(argv: list[str] | None = None, wait: bool = True):
    """Build and run the job. Returns the PipelineResult (streaming: running until cancelled when ``wait`` is False).

    Default runner: BundleBasedDirectRunner (streaming) when reading Pub/Sub, FnApiRunner otherwise; ``--runner``
    (for example DataflowRunner) overrides it.
    """
    job = resolve(PipelineOptions(argv))
    job.run.refuse_non_production_graph("stories", f"--input={job.input}" if job.input else None)
    subscription = None if job.input else ("items-raw", job.input_subscription)
    return job.run.launch(
        "stories", argv, job.reads_pubsub, lambda p: build_pipeline(p, job), wait=wait, subscription=subscription
    )


if __name__ == "__main__":
    # timestamped: logs/stories-job.log of `newsroom run` says when each step started (docs/operations.md)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from pipelines.command_errors import run_job

    sys.exit(run_job("stories", run, sys.argv[1:]))
