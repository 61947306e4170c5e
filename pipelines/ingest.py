"""The ingest job: poll feeds on per-feed schedules, take WebSub pushes, pings and burst requests, fetch each new
item's page once, politely and through the address guard.

Reads the feed registry (``--feeds``: the packaged publishers' feeds, a JSON file, or the ``feeds`` table, re-read
every ``--registry_reload_s``), FetchRequests from the ``fetch-requests`` topic (WebSub deliveries and pings via
serving/push.py, burst requests from ranking), publishers' feeds and pages over HTTP. Writes RawItem messages to
``items-raw``, DeadLetter messages to ``dead-letter-ingest``, schedule checkpoints, seen-URL claims and WebSub
subscriptions to the feed store (stores/feeds.py).

Two ways to run the same logic (transforms/ingest/poller.py + schedule.py):

- On Dataflow (``--runner=DataflowRunner``, streaming): :func:`build_pipeline`. PeriodicImpulse ticks drive the
  registry reload; fetch requests come from Beam's Pub/Sub source (acknowledged when the bundle commits);
  ScheduleFeedFn holds each feed's state with a processing-time timer; FetchPageFn is keyed by host; raw items and
  dead letters are published in batches.
- On this machine (any other runner, the default): :class:`LocalIngest`, a small in-process driver that calls the
  same on_input / on_timer / fetch_page functions with the state in a dict, timers in a heap, and the embedded bus.
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

import heapq
import json
import logging
import threading
import time
import typing
from concurrent.futures import ThreadPoolExecutor

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipelines.options import StoreOptions, store_config
from transforms.ingest import poller
from transforms.ingest import schedule as sch
from transforms.ingest.fetcher import DEFAULT_USER_AGENT, Fetcher, FetcherConfig
from transforms.ingest.guard import AddressGuard, parse_overrides
from transforms.ingest.ordering import raw_item_key

log = logging.getLogger("newsroom.ingest")

LOCAL_RUNNERS = (None, "", "DirectRunner", "BundleBasedDirectRunner", "FnApiRunner", "SwitchingDirectRunner", "local")


class IngestOptions(StoreOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        a = parser.add_argument
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
            "--user_agent",
            default=DEFAULT_USER_AGENT,
            help=f"User-Agent of every request. Default: {DEFAULT_USER_AGENT}",
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
            help="Multiplies every schedule duration above (0.1 with the sample world at --world_speed=10). "
            "Default: 1.",
        )
        a(
            "--websub_callback_base",
            default=None,
            help="Public base URL of the origin (e.g. https://origin.example.com); WebSub subscriptions use "
            "{base}/v1/websub/{id} as callback. Default: none (WebSub off, feeds are polled).",
        )
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
        a("--fetch_workers", type=int, default=4, help="Local runner only: page-fetch threads. Default: 4.")
        a(
            "--max_run_s",
            type=float,
            default=0.0,
            help="Local runner only: stop after this many seconds (0: run until Ctrl-C). Default: 0.",
        )
        a(
            "--world",
            action="store_true",
            default=False,
            help="Local runner only: start the sample publisher world in-process and ingest it (sets the host "
            "overrides). Default: off.",
        )
        a(
            "--world_speed",
            type=float,
            default=10.0,
            help="With --world: virtual seconds per wall second of the world's release clock. Default: 10.",
        )


def _view(options) -> IngestOptions:
    return options.view_as(IngestOptions)


def validate(options) -> None:
    """Fail fast, naming the flag."""
    o = _view(options)
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
    if o.websub_callback_base and not o.websub_callback_base.startswith(("http://", "https://")):
        raise ValueError("--websub_callback_base must be an http(s) URL")


def policy_from_options(options) -> sch.SchedulePolicy:
    o = _view(options)
    return sch.SchedulePolicy(
        floor_authoritative_ms=int(o.poll_floor_authoritative_s * 1000),
        floor_long_tail_ms=int(o.poll_floor_long_tail_s * 1000),
        max_interval_ms=int(o.poll_max_s * 1000),
        websub_backstop_ms=int(o.websub_backstop_s * 1000),
        scale=o.schedule_scale,
    )


def context_from_options(options, host_overrides: dict | None = None, resolver=None):
    from transforms.ingest.beam import IngestContext

    o = _view(options)
    overrides = parse_overrides(o.host_overrides)
    overrides.update(parse_overrides(host_overrides or {}))
    return IngestContext(
        fetcher=FetcherConfig(
            user_agent=o.user_agent,
            connect_timeout_s=o.connect_timeout_s,
            read_timeout_s=o.fetch_timeout_s,
            total_timeout_s=2 * o.fetch_timeout_s,
            max_bytes=o.max_body_bytes,
            max_redirects=o.max_redirects,
            min_host_delay_s=o.min_host_delay_s,
            robots_ttl_s=o.robots_ttl_s,
        ),
        host_overrides=tuple(sorted((h, f"{ip}:{port}" if port else ip) for h, (ip, port) in overrides.items())),
        policy=policy_from_options(options),
        store_config=store_config(options),
        websub_callback_base=o.websub_callback_base,
        resolver=resolver,
    )


def build_pipeline(p, options, registry_ticks=None):
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

    validate(options)
    o = _view(options)
    cfg = store_config(options)
    ctx = context_from_options(options)
    kv = beam.typehints.KV[str, typing.Any]
    if registry_ticks is None:
        from apache_beam.transforms.periodicsequence import PeriodicImpulse

        registry_ticks = p | "RegistryTicks" >> PeriodicImpulse(fire_interval=o.registry_reload_s)
    configs = registry_ticks | "LoadFeedRegistry" >> beam.ParDo(LoadFeedRegistryFn(o.feeds, ctx)).with_output_types(kv)
    decoded = (
        p
        | "ReadFetchRequests" >> ReadBus(cfg, o.fetch_request_topic, o.fetch_request_subscription)
        | "DecodeFetchRequests" >> beam.ParDo(DecodeFetchRequestFn()).with_outputs(DEAD_LETTER, main="requests")
    )
    requests = decoded.requests | "TypeRequests" >> beam.Map(lambda x: x).with_output_types(kv)
    out = (configs, requests) | "MergeFeedInputs" >> beam.Flatten() | "IngestFeeds" >> IngestFeeds(ctx)
    out["items"] | "PublishRawItems" >> beam.ParDo(
        PublishToBusFn(cfg, o.items_topic, "RawItem", ordering_key=raw_item_key)
    )
    dead = (out["dead_letters"], decoded[DEAD_LETTER]) | "MergeAllDeadLetters" >> beam.Flatten()
    dead | "PublishDeadLetters" >> beam.ParDo(PublishToBusFn(cfg, o.dead_letter_topic, "DeadLetter"))
    return {"items": out["items"], "dead_letters": dead}


class LocalIngest:
    """The ingest job on one machine: same domain logic as the Beam graph, driven by an in-process loop.

    Usage (the main job)::

        ingest = LocalIngest.from_options(IngestOptions([...]), host_overrides=world.host_overrides)
        ingest.start()          # background thread; or ingest.run(stop_event) in the foreground
        ingest.stats()          # {"polls", "not_modified", "new_items", "pages_fetched", "dead_letters", ...}
        ingest.stop()
    """

    def __init__(self, options, host_overrides: dict | None = None, resolver=None, clock=None, on_item=None):
        validate(options)
        self.options = options
        self.o = _view(options)
        self.ctx = context_from_options(options, host_overrides, resolver)
        self.cfg = self.ctx.store_config
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.on_item = on_item  # optional callback(raw_item) (progress display)
        from stores import open_stores
        from stores.feeds import open_feed_store

        self.bus = open_stores(self.cfg).bus
        self.store = open_feed_store(self.cfg)
        self.fetcher = Fetcher(self.ctx.fetcher, AddressGuard(dict(self.ctx.host_overrides), resolver=resolver))
        self.items_topic = self.cfg.name(self.o.items_topic)
        self.dead_topic = self.cfg.name(self.o.dead_letter_topic)
        self.request_topic = self.cfg.name(self.o.fetch_request_topic)
        self.request_sub = self.cfg.name(self.o.fetch_request_subscription)
        for t in (self.items_topic, self.dead_topic, self.request_topic):
            self.bus.ensure_topic(t)
        self.bus.ensure_subscription(self.request_topic, self.request_sub)
        self.configs: dict[str, poller.FeedConfig] = {}
        self.states: dict[str, sch.FeedState] = {}
        self.timers: list[tuple[int, str]] = []
        self.pool = ThreadPoolExecutor(max(1, self.o.fetch_workers), thread_name_prefix="ingest-fetch")
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Outbox order: a feed's state is checkpointed only once every item its polls discovered is published
        # (or dead-lettered). Fetches in flight: (feed url, discovery, attempt, future); failed publishes wait in
        # _retry as (not before, feed url, discovery, attempt); _inflight counts both per feed.
        self._pending: list[tuple[str, poller.Discovery, int, typing.Any]] = []
        self._retry: list[tuple[float, str, poller.Discovery, int]] = []
        self._inflight: dict[str, int] = {}
        self._unsaved: set[str] = set()

    @classmethod
    def from_options(cls, options, **kwargs) -> LocalIngest:
        return cls(options, **kwargs)

    # -- bookkeeping -----------------------------------------------------------------------------------------------
    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + n

    def stats(self) -> dict:
        with self._lock:
            return dict(self._counts)

    def _state(self, url: str) -> sch.FeedState:
        st = self.states.get(url)
        if st is None:
            st = sch.FeedState.from_dict(self.store.get_state(url), url)
            self.states[url] = st
        return st

    def _apply(self, url: str, step: poller.Step) -> None:
        if step.config is not None:
            self.configs[url] = step.config
        self.states[url] = step.state
        self._unsaved.add(url)
        if step.state.next_poll_ms is not None:
            heapq.heappush(self.timers, (step.state.next_poll_ms, url))
        out = step.outcome
        if out is None:
            return
        self._count("polls")
        if out.status == 304:
            self._count("not_modified")
        self._count("new_items", out.new_items)
        self._count("updates", out.updates)
        for dl in out.dead_letters:
            self._dead(dl)
        for d in out.discoveries:
            self._submit(url, d, 0)
        if out.subscribe is not None and self.o.websub_callback_base:
            try:
                poller.subscribe(self.fetcher, self.store, out.subscribe, self.o.websub_callback_base, self.clock())
                self._count("subscribe_requests")
            except Exception as exc:  # never let a hub take the loop down
                self._dead(poller.dead_letter("subscribe_error", repr(exc), out.subscribe.topic, None, self.clock()))

    def _dead(self, record: dict) -> None:
        self._count("dead_letters")
        self._count("dead_letter:" + record["reason"])
        log.info("dead letter %s: %s %s", record["reason"], record.get("key"), record.get("detail", "")[:120])
        self.bus.publish_record(self.dead_topic, record)

    def _fetch(self, d: poller.Discovery) -> None:
        try:
            raw, dl = poller.fetch_page(self.fetcher, d, self.store, self.clock())
        except Exception as exc:
            log.exception("page fetch crashed for %s", d.url)
            raw, dl = None, poller.dead_letter("fetch_error", repr(exc), d.url, d.to_dict(), self.clock())
        if raw is not None:
            self.bus.publish_record(self.items_topic, raw, ordering_key=raw_item_key(raw))  # per-URL order
            self._count("pages_fetched")
            if self.on_item:
                try:
                    self.on_item(raw)
                except Exception:
                    log.exception("on_item callback failed")
        elif dl is not None:
            self._dead(dl)
        else:
            self._count("pages_duplicate")

    # -- outbox order -----------------------------------------------------------------------------------------
    def _submit(self, url: str, d: poller.Discovery, attempt: int) -> None:
        self._inflight[url] = self._inflight.get(url, 0) + 1
        self._pending.append((url, d, attempt, self.pool.submit(self._fetch, d)))

    def _settle(self) -> None:
        """Loop thread: collect finished fetches, re-queue those whose publishing failed (a store error: the bus
        did not take the item; the retry keeps the discovery's claim), then checkpoint every feed that has no
        item in flight. Why this order: the checkpoint remembers the feed's guids, so written before the items
        are out, a crash in between lost them for good (issue 12, class 8); written after, a crash only means the
        restarted run polls from the previous checkpoint and publishes them again (the stories job dedupes)."""
        running = []
        for url, d, attempt, fut in self._pending:
            if not fut.done():
                running.append((url, d, attempt, fut))
                continue
            self._inflight[url] -= 1
            exc = fut.exception()
            if exc is not None:
                delay = min(30.0, 0.5 * 2**attempt)
                log.warning("publishing %s failed (%s); retrying in %.1f s", d.url, exc, delay)
                self._count("publish_retries")
                self._inflight[url] += 1
                self._retry.append((time.monotonic() + delay, url, d, attempt + 1))
        self._pending = running
        due = [r for r in self._retry if r[0] <= time.monotonic()]
        if due:
            self._retry = [r for r in self._retry if r[0] > time.monotonic()]
            for _, url, d, attempt in due:
                self._inflight[url] -= 1
                self._submit(url, d, attempt)
        for url in sorted(self._unsaved):
            if not self._inflight.get(url):
                self.store.put_state(url, self.states[url].to_dict())
                self._unsaved.discard(url)

    # -- loop ---------------------------------------------------------------------------------------------------
    def load_registry(self) -> None:
        from transforms.ingest.beam import read_beam_file
        from transforms.ingest.registry import load_feeds

        try:
            entries = load_feeds(self.o.feeds, self.store, read=read_beam_file)
        except Exception as exc:
            log.error("feed registry %s unreadable: %s (keeping the previous one)", self.o.feeds, exc)
            return
        listed = {e["url"] for e in entries}
        for url, cfg in list(self.configs.items()):
            if url not in listed and cfg.enabled:  # removed from the registry: stop polling it
                self.handle_input(url, {"config": dict(cfg.to_dict(), enabled=False)})
        for entry in entries:
            self.handle_input(entry["url"], {"config": entry})

    def handle_input(self, url: str, item: dict) -> None:
        step = poller.on_input(
            self.fetcher,
            self.ctx.policy,
            self.configs.get(url),
            self._state(url),
            item,
            self.clock(),
            websub_enabled=bool(self.o.websub_callback_base),
        )
        self._apply(url, step)

    def pull_requests(self, timeout: float = 0.0) -> int:
        msgs = self.bus.pull(self.request_sub, 500, timeout=timeout)
        for m in msgs:
            try:
                req = self.bus.decode(self.request_topic, m)
            except Exception as exc:
                self._dead(poller.dead_letter("bad_fetch_request", repr(exc), m.message_id, m.data, self.clock()))
                continue
            self._count("requests:" + req["kind"])
            if not req.get("feed_url"):
                self._dead(
                    poller.dead_letter(
                        "no_feed", "fetch requests must name a feed", req.get("url"), m.data, self.clock()
                    )
                )
                continue
            self.handle_input(req["feed_url"], {"request": req})
        self.bus.ack(self.request_sub, [m.ack_id for m in msgs])
        return len(msgs)

    def fire_due(self) -> int:
        fired = 0
        now = self.clock()
        while self.timers and self.timers[0][0] <= now:
            at, url = heapq.heappop(self.timers)
            st = self.states.get(url)
            if st is None or st.next_poll_ms != at:
                continue  # superseded timer
            step = poller.on_timer(
                self.fetcher,
                self.ctx.policy,
                self.configs.get(url),
                st,
                max(now, at),
                websub_enabled=bool(self.o.websub_callback_base),
            )
            self._apply(url, step)
            fired += 1
        return fired

    def drain(self, timeout: float = 30.0) -> None:
        """Wait for the page fetches in flight (tests, shutdown) and checkpoint what they settled. Feeds whose
        items are still not published when the time is up keep their previous checkpoint (a restart re-polls)."""
        deadline = time.monotonic() + timeout
        self._settle()
        while (self._pending or self._retry) and time.monotonic() < deadline:
            time.sleep(0.02)
            self._settle()

    def run(self, stop: threading.Event | None = None, max_run_s: float | None = None) -> dict:
        stop = stop or self._stop
        max_run_s = self.o.max_run_s if max_run_s is None else max_run_s
        started = time.monotonic()
        next_reload = 0.0
        while not stop.is_set():
            if max_run_s and time.monotonic() - started >= max_run_s:
                break
            if time.monotonic() >= next_reload:
                self.load_registry()
                next_reload = time.monotonic() + self.o.registry_reload_s
            self.fire_due()
            self.pull_requests(timeout=0.0)
            self._settle()
            wait = self.o.request_poll_s
            if self.timers:
                wait = min(wait, max(0.0, (self.timers[0][0] - self.clock()) / 1000))
            stop.wait(max(0.02, min(wait, 0.25)))
        self.drain()
        return self.stats()

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run, name="ingest", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.pool.shutdown(wait=True)
        self.fetcher.close()


def run(argv: list[str] | None = None) -> int:
    """``python -m pipelines.ingest [flags]``: Dataflow when ``--runner=DataflowRunner``, else the local driver."""
    options = PipelineOptions(argv)
    o = _view(options)
    validate(options)
    runner = options.view_as(StandardOptions).runner
    if runner not in LOCAL_RUNNERS:
        import apache_beam as beam

        options.view_as(StandardOptions).streaming = True
        p = beam.Pipeline(options=options)
        build_pipeline(p, options)
        p.run()
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    world = None
    overrides = {}
    delays: list[tuple[int, int]] = []  # (release -> first seen, release -> fetched) ms, items released after start
    on_item = None
    if o.world:
        from pipelines.world.server import start_world

        world = start_world(speed=o.world_speed)
        overrides = world.host_overrides
        started_ms = int(time.time() * 1000)
        print(f"sample world on {world.base_url} ({len(world.feeds())} feeds, speed x{o.world_speed})", flush=True)

        def on_item(raw):
            a = world.article_by_url(raw["fetched_url"])
            if a is not None and world.released_ms(a) >= started_ms:
                released = world.released_ms(a)
                fix = a.get("correction")
                if fix and (raw.get("entry") or {}).get("title") == fix["headline"]:
                    released = world.clock.release_ms(fix["at"])  # a corrected headline: its own release
                delays.append((raw["first_seen_at"] - released, raw["fetched_at"] - released))

    ingest = LocalIngest(options, host_overrides=overrides, on_item=on_item)
    try:
        stats = ingest.run()
    except KeyboardInterrupt:
        stats = ingest.stats()
    finally:
        ingest.stop()
        if world is not None:
            world.stop()
    if delays:
        seen = sorted(d[0] for d in delays)
        fetched = sorted(d[1] for d in delays)

        def pct(v, q):
            return v[min(len(v) - 1, int(q / 100 * (len(v) - 1) + 0.5))] / 1000

        stats["world_items_released_during_run"] = len(delays)
        stats["release_to_discovery_s_p50_p95_max"] = [pct(seen, 50), pct(seen, 95), seen[-1] / 1000]
        stats["release_to_fetch_s_p50_p95_max"] = [pct(fetched, 50), pct(fetched, 95), fetched[-1] / 1000]
    print(json.dumps(stats, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(run(sys.argv[1:]))
