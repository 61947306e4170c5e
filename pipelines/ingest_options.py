"""The ingest job's flags and their resolution into :class:`IngestJob` (:func:`resolve`, once), below the job's
two drivers: the Beam graph (pipelines/ingest.py, which runs ``python -m pipelines.ingest`` and picks the driver)
and the local driver (pipelines/ingest_local.py), so the local driver resolves options without importing the job
that chose it. What each flag means: its help."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options import JobRun, StoreOptions
from stores import StoreConfig
from transforms.ingest import schedule as sch
from transforms.ingest.fetcher import DEFAULT_USER_AGENT, FetcherConfig, user_agent_for
from transforms.ingest.guard import parse_allow, parse_overrides

if typing.TYPE_CHECKING:
    from transforms.ingest.beam import IngestContext


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


def context_of(o: IngestOptions, store: StoreConfig):
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
    return IngestJob(run=run, context=context_of(o, run.store), **{name: getattr(o, name) for name in _AS_GIVEN})
