"""The ingest job: poll feeds on per-feed schedules, take WebSub pushes, pings and burst requests, fetch each new
item's page once, politely and through the address guard.

Reads the feed registry (``--feeds``: the packaged publishers' feeds, a JSON file, or the ``feeds`` table, re-read
every ``--registry_reload_s``), FetchRequests from the ``fetch-requests`` topic (WebSub deliveries and pings via
serving/api/push.py, burst requests from the stories job's burst pull, which name a publisher and reach up to 4 of its
enabled feeds: transforms/ingest/registry.py), publishers' feeds and pages over HTTP. Writes RawItem messages to
``items-raw``, DeadLetter messages to ``dead-letter-ingest``, schedule checkpoints, seen-URL claims and WebSub
subscriptions to the feed store (stores/feeds.py).

Two ways to run the same logic (transforms/ingest/poller.py + schedule.py):

- On Dataflow (``--runner=DataflowRunner``, streaming): :func:`build_pipeline`. PeriodicImpulse ticks drive the
  registry reload; fetch requests come from Beam's Pub/Sub source (acknowledged when the bundle commits);
  ScheduleFeedFn holds each feed's state with a processing-time timer; FetchPageFn is keyed by host; raw items and
  dead letters are published in batches.
- On this machine (any other runner, the default): :class:`pipelines.ingest_local.LocalIngest`, a small in-process
  driver that calls the same on_input / on_timer / fetch_page functions with the state in a dict, timers in a heap,
  and the embedded bus.
  Why not BundleBasedDirectRunner: in Beam 2.77 the Python direct runner cannot host a live source other than
  Pub/Sub (PeriodicImpulse and other splittable DoFns fail there, and once a bounded root's watermark reaches
  +inf it stops firing processing-time timers). The Beam graph itself is tested under TestStream.

Stopping and resuming: every state change is checkpointed to the feed store and every page fetch claims its URL
there first, so a stopped run resumes each feed's validators, guids and schedule and never fetches an item twice.
The local driver checkpoints in outbox order: a feed's state (which remembers the guids its polls saw) is written
only once every item those polls discovered is published on items-raw (or dead-lettered); a failed publish is
retried with backoff. A crash between a poll and the publishing of its items therefore loses nothing: the restarted
run polls from the previous checkpoint and publishes them (again, at worst: the stories job dedupes). On Dataflow the
Beam state is the truth: a feed's state and the discoveries of its poll commit in the same bundle.
"""

from __future__ import annotations

import typing

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.ingest_options import IngestJob, IngestOptions, resolve  # noqa: F401  (IngestOptions: the job's flags)
from pipelines.options import beam_options
from transforms.ingest.ordering import raw_item_key


def build_pipeline(p, job: IngestJob, registry_ticks=None):
    """The streaming ingest graph (Dataflow). Returns {"items": ..., "dead_letters": ...}.

    ::

        RegistryTicks (PeriodicImpulse) -> LoadFeedRegistry ----------------------+
        ReadFetchRequests (ReadBus: ReadFromPubSub) -> DecodeFetchRequests -------+-> MergeFeedInputs -> IngestFeeds
        IngestFeeds.items -> PublishRawItems (batches);  dead letters of every step -> PublishDeadLetters (batches)

    Fetch requests are read with Beam's Pub/Sub source (through stores.beam_io.ReadBus): the runner acknowledges a
    message once its output is committed, so a bundle that fails downstream is retried instead of the request being
    lost (the former design pulled and acked inside a DoFn every second). Raw items and dead letters are
    published a bundle at a time (stores.beam_io.PublishToBusFn, raw items with their per-URL ordering key), all
    futures of a batch awaited before the bundle commits.

    Args:
        registry_ticks: a PCollection replacing the RegistryTicks root (tests on BundleBasedDirectRunner, which
            cannot run PeriodicImpulse: LOCAL_STACK.md); each element triggers one read of the registry.
    """
    import apache_beam as beam

    from stores.beam_io import PublishToBusFn, ReadBus
    from transforms.ingest.beam import DEAD_LETTER, DecodeFetchRequestFn, IngestFeeds, LoadFeedRegistryFn

    o, cfg, ctx = job, job.run.store, job.context
    kv = beam.typehints.KV[str, typing.Any]
    if registry_ticks is None:
        from apache_beam.transforms.periodicsequence import PeriodicImpulse

        registry_ticks = p | "RegistryTicks" >> PeriodicImpulse(fire_interval=o.registry_reload_s)
    configs = registry_ticks | "LoadFeedRegistry" >> beam.ParDo(LoadFeedRegistryFn(o.feeds, ctx)).with_output_types(kv)
    decoded = (
        p
        | "ReadFetchRequests" >> ReadBus(cfg, o.fetch_request_topic, o.fetch_request_subscription)
        | "DecodeFetchRequests"
        >> beam.ParDo(DecodeFetchRequestFn(feeds=o.feeds, ctx=ctx, reload_s=o.registry_reload_s)).with_outputs(
            DEAD_LETTER, main="requests"
        )
    )
    requests = decoded.requests | "TypeRequests" >> beam.Map(lambda x: x).with_output_types(kv)
    out = (configs, requests) | "MergeFeedInputs" >> beam.Flatten() | "IngestFeeds" >> IngestFeeds(ctx)
    out["items"] | "PublishRawItems" >> beam.ParDo(
        PublishToBusFn(cfg, o.items_topic, "RawItem", ordering_key=raw_item_key)
    )
    dead = (out["dead_letters"], decoded[DEAD_LETTER]) | "MergeAllDeadLetters" >> beam.Flatten()
    dead | "PublishDeadLetters" >> beam.ParDo(PublishToBusFn(cfg, o.dead_letter_topic, "DeadLetter"))
    return {"items": out["items"], "dead_letters": dead}


def run(argv: list[str] | None = None) -> int:
    """``python -m pipelines.ingest [flags]``: Dataflow when ``--runner=DataflowRunner``, else the local driver."""
    job = resolve(PipelineOptions(argv))
    job.run.refuse_non_production_graph("ingest")
    if not job.run.local:
        import apache_beam as beam

        p = beam.Pipeline(options=beam_options(argv, streaming=True))
        build_pipeline(p, job)
        p.run()
        return 0
    from pipelines.ingest_local import run_local

    return run_local(job)


if __name__ == "__main__":
    import sys

    from pipelines.command_errors import run_job

    sys.exit(run_job("ingest", run, sys.argv[1:]))
