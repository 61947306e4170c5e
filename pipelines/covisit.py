"""The co-visitation job: read events -> "read together" pairs per reader -> bounded, decayed neighbours per story.

Reads ReadEvent messages (schemas/avro/read_event.avsc) from the ``read-events`` topic through a subscription
(``--input_subscription``; Pub/Sub with ``--backend=gcp`` or ``--bus=pubsub``, the embedded bus otherwise) and
writes each story's neighbour list to the co-visitation store (stores/covisit.py: embedded SQLite or Bigtable table
``covisit``), which the origin reads for For you (reason ``also_read:{story_id}``). The same accepted reads also
update, online, the decayed click counts per story of each user cluster the reader belongs to (memberships written
daily by pipelines/userclusters.py; counts in stores/userclusters.py; For you's ``readers_like_you``; off with
``--no_cluster_counts``). Undecodable messages go to ``--dead_letter_topic``. The logic is transforms/covisit/counts.py; the Beam stage transforms/covisit/beam.py.

    ReadReadEvents -> DecodeReadEvents -> CovisitNeighbours (KeyByReader -> PairsPerReader -> NeighboursPerStory,
                                                             accepted reads -> ClusterCounts)
    dead letters -> PublishDeadLetters

Runners as the stories job: reading Pub/Sub is a streaming job (DataflowRunner in production, BundleBasedDirectRunner
here by default); the embedded bus is drained once, bounded, on FnApiRunner (flush timers fire when the input ends).
Messages carrying the ``heartbeat`` attribute are dropped (they only move a test's Pub/Sub watermark).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options import JobRun, StoreOptions
from transforms.common import HOUR_MS
from transforms.covisit.counts import MAX_PAIRS, Params

log = logging.getLogger("newsroom.covisit")

TOPIC = "read-events"


class CovisitOptions(StoreOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--input_subscription",
            default="covisit-read-events",
            help="Subscription (base name; the namespace prefix is added) on the read-events topic the job reads; "
            "local runs create it when missing. Default: covisit-read-events.",
        )
        parser.add_argument(
            "--dead_letter_topic",
            default="dead-letter",
            help="Topic (base name) receiving DeadLetter records of undecodable events. Default: dead-letter.",
        )
        parser.add_argument(
            "--window_hours",
            type=float,
            default=6.0,
            help="Two stories read by one reader within this many hours are 'read together'. Default: 6.",
        )
        parser.add_argument(
            "--half_life_hours",
            type=float,
            default=24.0,
            help="A pair's count halves every this many hours without new co-reads. Default: 24.",
        )
        parser.add_argument(
            "--top_k", type=int, default=50, help="Neighbours kept per story (the largest counts). Default: 50."
        )
        parser.add_argument(
            "--max_reads_per_hour",
            type=int,
            default=120,
            help="A reader with more reads than this in an hour is abnormal (bot, crawler) and ignored until a "
            "window passes below the bar. Default: 120.",
        )
        parser.add_argument(
            "--flush_s",
            type=float,
            default=10.0,
            help="Event-time seconds between a story's first new pair and the write of its list (one write per "
            "story per interval). Default: 10.",
        )
        parser.add_argument(
            "--no_cluster_counts",
            action="store_true",
            default=False,
            help="Do not keep the per-cluster click counts of the user clusters (For you's 'readers like you'; "
            "the memberships come from the daily `newsroom userclusters` job). Default: keep them.",
        )


@dataclass(frozen=True)
class CovisitJob:
    """The covisit job's options, resolved once (:func:`resolve`)."""

    run: JobRun
    params: Params
    input_subscription: str = "covisit-read-events"
    dead_letter_topic: str = "dead-letter"
    flush_ms: int = 10_000
    cluster_counts: bool = True

    @property
    def streaming(self) -> bool:
        """Reading Pub/Sub (the gcp backend or ``--bus=pubsub``) is streaming; the embedded bus is bounded."""
        return self.run.store.bus_kind == "pubsub"


def params(o: CovisitOptions) -> Params:
    """The counts' parameters from the job's flags (ValueError naming the flag when one is out of range)."""
    if not 0 < o.top_k <= 50:
        raise ValueError(f"--top_k must be 1 to 50 (the store keeps 50), got {o.top_k}")
    for flag in ("window_hours", "half_life_hours", "max_reads_per_hour"):
        if not getattr(o, flag) > 0:
            raise ValueError(f"--{flag} must be > 0, got {getattr(o, flag)}")
    return Params(
        window_ms=int(o.window_hours * HOUR_MS),
        half_life_ms=int(o.half_life_hours * HOUR_MS),
        top_k=int(o.top_k),
        max_per_hour=int(o.max_reads_per_hour),
        max_pairs=MAX_PAIRS,
    )


def resolve(options: PipelineOptions) -> CovisitJob:
    """The job's options, checked once (ValueError naming the flag when one is out of range)."""
    o = options.view_as(CovisitOptions)
    run = JobRun.of(options)
    counts = params(o)
    if not o.flush_s > 0:
        raise ValueError(f"--flush_s must be > 0, got {o.flush_s}")
    return CovisitJob(
        run=run,
        params=counts,
        input_subscription=o.input_subscription,
        dead_letter_topic=o.dead_letter_topic,
        flush_ms=int(o.flush_s * 1000),
        cluster_counts=not o.no_cluster_counts,
    )


def build_pipeline(p, job: CovisitJob) -> dict:
    """Adds the job to pipeline ``p``; returns its main PCollections (for tests)."""
    from stores.beam_io import PublishToBusFn, ReadBus
    from transforms.common import DEAD_LETTER
    from transforms.covisit.beam import CovisitNeighbours, DecodeReadEventFn

    cfg = job.run.store
    messages = p | "ReadReadEvents" >> ReadBus(cfg, TOPIC, job.input_subscription)
    decoded = messages | "DecodeReadEvents" >> beam.ParDo(DecodeReadEventFn()).with_outputs(DEAD_LETTER, main="events")
    covisit = CovisitNeighbours(cfg, job.params, job.flush_ms, clusters=job.cluster_counts)
    out = decoded.events | "CovisitNeighbours" >> covisit
    written, clusters = (out["written"], out["clusters"]) if job.cluster_counts else (out, None)
    decoded[DEAD_LETTER] | "PublishDeadLetters" >> beam.ParDo(PublishToBusFn(cfg, job.dead_letter_topic))
    return {"events": decoded.events, "written": written, "clusters": clusters, "dead_letter": decoded[DEAD_LETTER]}


def run(argv: list[str] | None = None, wait: bool = True):
    """Build and run the job. Returns the PipelineResult (streaming: running until cancelled when ``wait`` is False).

    Default runner: BundleBasedDirectRunner (streaming) when reading Pub/Sub, FnApiRunner otherwise; ``--runner``
    (for example DataflowRunner) overrides it.
    """
    job = resolve(PipelineOptions(argv))
    job.run.refuse_non_production_graph("covisit")
    return job.run.launch(
        "covisit",
        argv,
        job.streaming,
        lambda p: build_pipeline(p, job),
        wait=wait,
        subscription=(TOPIC, job.input_subscription),
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    from pipelines.command_errors import run_job

    sys.exit(run_job("covisit", run, sys.argv[1:]))
