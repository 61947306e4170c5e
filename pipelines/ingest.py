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

import dataclasses
import logging
import typing
from dataclasses import dataclass

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options import JobRun, StoreOptions, beam_options
from stores import StoreConfig
from transforms.ingest import schedule as sch
from transforms.ingest.fetcher import DEFAULT_USER_AGENT, FetcherConfig, user_agent_for
from transforms.ingest.guard import parse_allow, parse_overrides
from transforms.ingest.ordering import raw_item_key

if typing.TYPE_CHECKING:
    from transforms.ingest.beam import IngestContext

log = logging.getLogger("newsroom.ingest")


def _registry_flags(a) -> None:
    """The feed registry and the operator's host allowlist."""
    a(
        "--feeds",
        default="default",
        help="Feed registry: 'default' (the packaged publishers' feeds, i.e. the sample world), a JSON file path "
        "(local or gs://; publishers.json format, {'feeds': [...]} or a list of {url, publisher_id, tier, kind}), "
        "or 'table' (the feeds table, editable while the job runs). Default: default.",
    )
    a(
        "--registry_reload_s",
        type=float,
        default=60.0,
        help="Seconds between two reads of the feed registry. Default: 60.",
    )
    a(
        "--host_overrides",
        default="",
        help="Operator allowlist: comma-separated host=ip[:port] entries connected to without DNS and exempt from "
        "the private-address guard (the sample world: dailyherald.test=127.0.0.1:8123,...). Default: none.",
    )
    a(
        "--allow_hosts",
        default="",
        help="Operator allowlist of feeds on this machine or a private network: comma-separated host[:port] "
        "entries resolved as usual and then allowed a private address; nothing is allowed unless listed. Example: "
        "feeds.internal:8080. Default: none.",
    )


def _fetch_flags(a) -> None:
    """HTTP fetching: identity, timeouts, size limits, politeness."""
    a(
        "--user_agent",
        default=None,
        help="User-Agent of every request. Default: $NEWSROOM_USER_AGENT, else 'NewsroomBot/0.1 "
        "(+{websub_callback_base}/about/crawler; ...)', the origin's page for publishers, else "
        f"{DEFAULT_USER_AGENT}",
    )
    a("--connect_timeout_s", type=float, default=5.0, help="Connect timeout per request. Default: 5.")
    a(
        "--fetch_timeout_s",
        type=float,
        default=10.0,
        help="Read timeout per request; the whole request gets twice this. Default: 10.",
    )
    a(
        "--max_body_bytes",
        type=int,
        default=5 * 1024 * 1024,
        help="Largest page or feed accepted (larger: dead-lettered too_large). Default: 5242880.",
    )
    a("--max_redirects", type=int, default=5, help="Redirects followed per fetch. Default: 5.")
    a(
        "--min_host_delay_s",
        type=float,
        default=1.0,
        help="Minimum delay between two requests to one host (robots.txt Crawl-delay may raise it, up to 30 s). "
        "Default: 1.",
    )
    a("--robots_ttl_s", type=float, default=3600.0, help="How long robots.txt is cached per site. Default: 3600.")


def _schedule_flags(a) -> None:
    """Poll scheduling and WebSub."""
    a(
        "--poll_floor_authoritative_s",
        type=float,
        default=60.0,
        help="Shortest poll interval of authoritative publishers' feeds. Default: 60.",
    )
    a(
        "--poll_floor_long_tail_s",
        type=float,
        default=300.0,
        help="Shortest poll interval of other feeds (and of feeds whose validators are useless). Default: 300.",
    )
    a("--poll_max_s", type=float, default=3600.0, help="Longest poll interval. Default: 3600.")
    a(
        "--websub_backstop_s",
        type=float,
        default=900.0,
        help="Poll interval of a feed with a live WebSub lease. Default: 900.",
    )
    a(
        "--schedule_scale",
        type=float,
        default=1.0,
        help="Multiplies every schedule duration above (0.1 for the sample world at 10x speed). Default: 1.",
    )
    a(
        "--websub_callback_base",
        default=None,
        help="Public base URL of the origin (e.g. https://origin.example.com); WebSub subscriptions use "
        "{base}/v1/websub/{id} as callback. Default: none (WebSub off, feeds are polled).",
    )


def _bus_flags(a) -> None:
    """Topics and subscriptions."""
    a("--fetch_request_topic", default="fetch-requests", help="Topic of FetchRequests. Default: fetch-requests.")
    a(
        "--fetch_request_subscription",
        default="ingest-fetch-requests",
        help="Subscription the job pulls FetchRequests from. Default: ingest-fetch-requests.",
    )
    a(
        "--request_poll_s",
        type=float,
        default=1.0,
        help="Local runner only: seconds between two pulls of FetchRequests (the Beam graph reads them with "
        "Pub/Sub's streaming source). Default: 1.",
    )
    a("--items_topic", default="items-raw", help="Topic of the RawItems written. Default: items-raw.")
    a(
        "--dead_letter_topic",
        default="dead-letter-ingest",
        help="Topic of dead letters. Default: dead-letter-ingest.",
    )


def _local_flags(a) -> None:
    """The local runner only (LocalIngest)."""
    a("--fetch_workers", type=int, default=4, help="Local runner only: page-fetch threads. Default: 4.")
    a(
        "--replay_after_s",
        type=float,
        default=600.0,
        help="Local runner only: a claimed page the article store does not have this many seconds later (lost on the "
        "bus or by a killed stories job) is fetched and published again; then after twice as long, and so on. Longer "
        "than the stories job ever lags: a replay of what is only late adds work where it is behind. Default: 600.",
    )
    a(
        "--replay_held_at_start",
        action="store_true",
        help="Local runner only: the bus is new (newsroom run's emulator keeps messages in memory and died with the "
        "run before): every page still held from before is fetched and published again at once. Default: off.",
    )
    a(
        "--max_run_s",
        type=float,
        default=0.0,
        help="Local runner only: stop after this many seconds (0: run until Ctrl-C). Default: 0.",
    )


class IngestOptions(StoreOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        a = parser.add_argument
        _registry_flags(a)
        _fetch_flags(a)
        _schedule_flags(a)
        _bus_flags(a)
        _local_flags(a)


def validate(o: IngestOptions) -> None:
    """Fail fast, naming the flag."""
    for flag in (
        "registry_reload_s",
        "connect_timeout_s",
        "fetch_timeout_s",
        "poll_floor_authoritative_s",
        "poll_floor_long_tail_s",
        "poll_max_s",
        "websub_backstop_s",
        "schedule_scale",
        "request_poll_s",
        "replay_after_s",
    ):
        if getattr(o, flag) <= 0:
            raise ValueError(f"--{flag} must be > 0, got {getattr(o, flag)}")
    if o.poll_floor_authoritative_s > o.poll_max_s or o.poll_floor_long_tail_s > o.poll_max_s:
        raise ValueError("--poll_max_s must be >= both poll floors")
    if o.max_body_bytes <= 0 or o.max_redirects < 0 or o.min_host_delay_s < 0 or o.fetch_workers < 1:
        raise ValueError("--max_body_bytes > 0, --max_redirects >= 0, --min_host_delay_s >= 0, --fetch_workers >= 1")
    try:
        parse_overrides(o.host_overrides)
    except ValueError as exc:
        raise ValueError(f"--host_overrides: {exc}") from None
    parse_allow(o.allow_hosts)  # ValueError naming --allow_hosts
    if o.websub_callback_base and not o.websub_callback_base.startswith(("http://", "https://")):
        raise ValueError("--websub_callback_base must be an http(s) URL")


def policy_of(o: IngestOptions) -> sch.SchedulePolicy:
    return sch.SchedulePolicy(
        floor_authoritative_ms=int(o.poll_floor_authoritative_s * 1000),
        floor_long_tail_ms=int(o.poll_floor_long_tail_s * 1000),
        max_interval_ms=int(o.poll_max_s * 1000),
        websub_backstop_ms=int(o.websub_backstop_s * 1000),
        scale=o.schedule_scale,
    )


def _context(o: IngestOptions, store: StoreConfig):
    from transforms.ingest.beam import IngestContext

    overrides = parse_overrides(o.host_overrides)
    return IngestContext(
        fetcher=FetcherConfig(
            user_agent=o.user_agent or user_agent_for(o.websub_callback_base),
            connect_timeout_s=o.connect_timeout_s,
            read_timeout_s=o.fetch_timeout_s,
            total_timeout_s=2 * o.fetch_timeout_s,
            max_bytes=o.max_body_bytes,
            max_redirects=o.max_redirects,
            min_host_delay_s=o.min_host_delay_s,
            robots_ttl_s=o.robots_ttl_s,
        ),
        host_overrides=_pairs(overrides),
        allow_hosts=allow_entries(o.allow_hosts),
        policy=policy_of(o),
        store_config=store,
        websub_callback_base=o.websub_callback_base,
    )


def allow_entries(spec: str) -> tuple:
    """``--allow_hosts`` as the context's sorted ``host[:port]`` entries (IPv6 hosts in brackets)."""
    hosts = parse_allow(spec)
    return tuple(sorted((f"[{h}]" if ":" in h else h) + (f":{p}" if p else "") for h, p in hosts))


def _pairs(overrides: dict) -> tuple:
    return tuple(sorted((h, f"{ip}:{port}" if port else ip) for h, (ip, port) in overrides.items()))


@dataclass(frozen=True)
class IngestJob:
    """The ingest job's options, resolved once (:func:`resolve`); the flags keep their names (see their help).

    context: what a worker builds its fetcher and stores from (transforms/ingest/beam.py IngestContext).
    """

    run: JobRun
    context: IngestContext
    feeds: str | None = None
    registry_reload_s: float = 300.0
    fetch_request_topic: str = "fetch-requests"
    fetch_request_subscription: str = "ingest-fetch-requests"
    request_poll_s: float = 1.0
    items_topic: str = "items-raw"
    dead_letter_topic: str = "dead-letter-ingest"
    fetch_workers: int = 4
    max_run_s: float = 0.0
    replay_after_s: float = 600.0
    replay_held_at_start: bool = False

    @property
    def websub_callback_base(self) -> str | None:
        return self.context.websub_callback_base

    def local_context(self, host_overrides: dict | None = None, resolver=None):
        """The context with more allowed hosts (the sample world's) and a fake DNS resolver (tests)."""
        merged = dict(self.context.host_overrides)
        merged.update(_pairs(parse_overrides(host_overrides or {})))
        return dataclasses.replace(self.context, host_overrides=tuple(sorted(merged.items())), resolver=resolver)


_AS_GIVEN = (
    "feeds",
    "registry_reload_s",
    "fetch_request_topic",
    "fetch_request_subscription",
    "request_poll_s",
    "items_topic",
    "dead_letter_topic",
    "fetch_workers",
    "max_run_s",
    "replay_after_s",
    "replay_held_at_start",
)


def resolve(options: PipelineOptions) -> IngestJob:
    """The job's options, checked once (ValueError naming the flag)."""
    o = options.view_as(IngestOptions)
    run = JobRun.of(options)
    validate(o)
    return IngestJob(run=run, context=_context(o, run.store), **{name: getattr(o, name) for name in _AS_GIVEN})


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
