"""Beam transforms of the ingest job: per-feed schedule (state + processing-time timers), polite page fetching,
WebSub subscription, registry loading, decoding fetch requests. Publishing to the bus is
:class:`stores.beam_io.PublishToBusFn` (the one publishing DoFn of every job).

Reads keyed feed inputs ``(feed_url, {"config": FeedConfig dict} | {"request": FetchRequest dict})``; writes
``RawItem`` dicts (main output of :class:`IngestFeeds`) and ``DeadLetter`` dicts (tag ``dead_letter``). The domain
logic is :mod:`transforms.ingest.poller` and :mod:`transforms.ingest.schedule`; these DoFns hold state and I/O.

Clocks are injected (``clock``: a callable returning ms since the epoch): under TestStream the processing-time
domain starts at 0, so tests pass a clock in that domain; on timers the firing timestamp is used when it is later
than the clock (the runner's processing time is then authoritative).

Retry policy: a store error (:class:`stores.base.StoreError`: the feed store or the bus unreachable) is transient and
raised, so the runner retries the bundle from its committed input (on Dataflow the fetch request read from Pub/Sub
is acknowledged only once that input is committed; a retried request re-polls its feed, and the page claims make the
retry fetch nothing twice). Anything else a feed or page input raises is a bug or bad input: dead-lettered with the
input as payload, and the job goes on.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import typing
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import apache_beam as beam
from apache_beam.coders import StrUtf8Coder
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.transforms import userstate
from apache_beam.transforms.timeutil import TimeDomain

from transforms.common import DEAD_LETTER
from transforms.ingest import poller
from transforms.ingest import schedule as sch
from transforms.ingest.fetcher import Fetcher, FetcherConfig
from transforms.ingest.gone import open_publisher_gone
from transforms.ingest.guard import AddressGuard
from transforms.ingest.registry import load_feeds, read_local
from transforms.timers import at, to_ms

log = logging.getLogger(__name__)

SUBSCRIBE = "subscribe"


def transient(exc: BaseException) -> bool:
    """Errors the runner should retry (the bundle fails and is processed again) instead of dead-lettering."""
    from stores.base import StoreError

    return isinstance(exc, StoreError)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class IngestContext:
    """Everything a worker needs to build its fetcher and stores (picklable; resources are made in setup())."""

    fetcher: FetcherConfig = field(default_factory=FetcherConfig)
    host_overrides: tuple = ()  # ((host, "ip:port"), ...) the operator's allowlist
    allow_hosts: tuple = ()  # ("host[:port]", ...) listed hosts may be private addresses (--allow_hosts)
    policy: sch.SchedulePolicy = field(default_factory=sch.SchedulePolicy)
    store_config: object | None = None  # stores.StoreConfig; None: no checkpoints, no seen-URL claims
    websub_callback_base: str | None = None
    resolver: object | None = None  # tests: a fake DNS resolver (host, port) -> [ip]

    def key(self) -> tuple:
        return (self.fetcher, self.host_overrides, self.allow_hosts, id(self.resolver))


_SHARED_LOCK = threading.Lock()
_FETCHERS: dict = {}
_STORES: dict = {}


def shared_fetcher(ctx: IngestContext) -> Fetcher:
    """One fetcher per worker process and context: one connection pool and one politeness gate per host."""
    with _SHARED_LOCK:
        f = _FETCHERS.get(ctx.key())
        if f is None:
            f = Fetcher(
                ctx.fetcher, AddressGuard(dict(ctx.host_overrides), resolver=ctx.resolver, allow=ctx.allow_hosts)
            )
            _FETCHERS[ctx.key()] = f
        return f


def shared_feed_store(ctx: IngestContext):
    if ctx.store_config is None:
        return None
    with _SHARED_LOCK:
        key = repr(ctx.store_config)
        s = _STORES.get(key)
        if s is None:
            from stores.feeds import open_feed_store

            s = _STORES[key] = open_feed_store(ctx.store_config)
        return s


class ScheduleFeedFn(beam.DoFn):
    """Polls one feed (the key) on its own schedule.

    State: CONFIG (the registry entry, JSON), STATE (transforms.ingest.schedule.FeedState, JSON: validators, last
    200 guids, decayed rates per hour of week, WebSub lease, validators-useless flag, next poll). Timer: POLL
    (processing time) at the next poll. The state is also checkpointed to the feed store after every change, and
    loaded from it when a key has no Beam state yet (a restarted local run resumes where it stopped).

    Yields Discovery dicts keyed by page host; tagged outputs ``dead_letter`` (DeadLetter dicts) and ``subscribe``
    (SubscribeAction dicts).
    """

    CONFIG = userstate.ReadModifyWriteStateSpec("config", StrUtf8Coder())
    STATE = userstate.ReadModifyWriteStateSpec("state", StrUtf8Coder())
    POLL = userstate.TimerSpec("poll", TimeDomain.REAL_TIME)

    def __init__(self, ctx: IngestContext, clock=wall_clock_ms):
        self.ctx, self.clock = ctx, clock
        self.polls = Metrics.counter("ingest", "feed_polls")
        self.not_modified = Metrics.counter("ingest", "feed_not_modified")
        self.new_items = Metrics.counter("ingest", "new_items")
        self.deferred = Metrics.counter("ingest", "discoveries_deferred")  # poller.MAX_DISCOVERIES_PER_POLL
        self.feed_errors = Metrics.counter("ingest", "feed_errors")

    def setup(self):
        self.fetcher = shared_fetcher(self.ctx)
        self.store = shared_feed_store(self.ctx)

    def _load(self, key, config_state, state_state):
        raw_c, raw_s = config_state.read(), state_state.read()
        config = poller.FeedConfig.from_dict(json.loads(raw_c)) if raw_c else None
        if raw_s:
            state = sch.FeedState.from_dict(json.loads(raw_s), key)
        else:
            checkpoint = self.store.get_state(key) if self.store is not None else None
            state = sch.FeedState.from_dict(checkpoint, key)
        return config, state

    def _finish(self, key, step: poller.Step, config_state, state_state, timer):
        if step.config is not None:
            config_state.write(json.dumps(step.config.to_dict(), sort_keys=True))
        state_json = json.dumps(step.state.to_dict(), sort_keys=True)
        state_state.write(state_json)
        if self.store is not None:
            self.store.put_state(key, step.state.to_dict())
        if step.state.next_poll_ms is not None:
            timer.set(at(step.state.next_poll_ms))
        else:
            timer.clear()
        out = step.outcome
        if out is None:
            return
        self.polls.inc()
        if out.status == 304:
            self.not_modified.inc()
        self.new_items.inc(out.new_items)
        self.deferred.inc(out.deferred)
        for d in out.discoveries:
            yield ((urlsplit(d.url).hostname or "").lower(), d.to_dict())
        for dl in out.dead_letters:
            self.feed_errors.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dl)
        if out.subscribe is not None:
            yield beam.pvalue.TaggedOutput(SUBSCRIBE, out.subscribe.__dict__)

    def process(
        self,
        element,
        config_state=beam.DoFn.StateParam(CONFIG),
        state_state=beam.DoFn.StateParam(STATE),
        timer=beam.DoFn.TimerParam(POLL),
    ):
        key, item = element
        try:
            config, state = self._load(key, config_state, state_state)
            poll = poller.Poll(self.fetcher, self.ctx.policy, self.clock(), None, bool(self.ctx.websub_callback_base))
            step = poller.on_input(poll, config, state, item)
        except Exception as exc:  # a bug must not take the job down: dead-letter the input and move on
            if transient(exc):
                raise  # the runner retries the bundle: the request is processed again, not lost
            log.exception("schedule input failed for %s", key)
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, poller.dead_letter("schedule_error", repr(exc), key, item, self.clock())
            )
            return
        yield from self._finish(key, step, config_state, state_state, timer)

    @userstate.on_timer(POLL)
    def poll(
        self,
        key=beam.DoFn.KeyParam,
        fired=beam.DoFn.TimestampParam,
        config_state=beam.DoFn.StateParam(CONFIG),
        state_state=beam.DoFn.StateParam(STATE),
        timer=beam.DoFn.TimerParam(POLL),
    ):
        now = max(self.clock(), to_ms(fired))
        try:
            config, state = self._load(key, config_state, state_state)
            poll = poller.Poll(self.fetcher, self.ctx.policy, now, None, bool(self.ctx.websub_callback_base))
            step = poller.on_timer(poll, config, state)
        except Exception as exc:
            if transient(exc):
                raise
            log.exception("poll failed for %s", key)
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, poller.dead_letter("schedule_error", repr(exc), key, None, now))
            return
        yield from self._finish(key, step, config_state, state_state, timer)


class FetchPageFn(beam.DoFn):
    """Fetches discovered pages, keyed by host so that one worker owns a host: its politeness delay holds across
    the whole job (LAST_FETCH state), on top of the per-process gate of the fetcher. Yields RawItem dicts; tagged
    ``dead_letter`` for failures. Duplicates (claimed by another discovery) are counted and dropped."""

    LAST_FETCH = userstate.ReadModifyWriteStateSpec("last_fetch", StrUtf8Coder())

    def __init__(self, ctx: IngestContext, clock=wall_clock_ms, sleep=time.sleep):
        self.ctx, self.clock, self.sleep = ctx, clock, sleep
        self.fetched = Metrics.counter("ingest", "pages_fetched")
        self.duplicates = Metrics.counter("ingest", "pages_duplicate")
        self.failed = Metrics.counter("ingest", "pages_failed")

    def setup(self):
        self.fetcher = shared_fetcher(self.ctx)
        self.store = shared_feed_store(self.ctx)
        self.gone = open_publisher_gone(self.ctx.store_config)  # a re-fetch's 404/410 takes the article down

    def process(self, element, last_fetch=beam.DoFn.StateParam(LAST_FETCH)):
        host, d = element
        now = self.clock()
        last = int(last_fetch.read() or 0)
        gap_ms = int(self.ctx.fetcher.min_host_delay_s * 1000)
        if last and now < last + gap_ms:
            self.sleep((last + gap_ms - now) / 1000)  # bounded by the host delay; the fetcher's gate agrees
            now = self.clock()
        try:
            discovery = poller.Discovery.from_dict(d)
            raw, dl = poller.fetch_page(self.fetcher, discovery, self.store, now, sleep=self.sleep, gone=self.gone)
        except Exception as exc:
            if transient(exc):
                raise  # e.g. the claim could not be written: retried (the same discovery keeps its claim)
            log.exception("page fetch failed for %s", d.get("url") if isinstance(d, dict) else d)
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, poller.dead_letter("fetch_error", repr(exc), host, d, now))
            return
        last_fetch.write(str(now))
        if raw is not None:
            self.fetched.inc()
            yield raw
        elif dl is not None:
            self.failed.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dl)
        else:
            self.duplicates.inc()


class SubscribeFeedFn(beam.DoFn):
    """Sends WebSub subscription requests (records the pending subscription in the feed store first)."""

    def __init__(self, ctx: IngestContext, clock=wall_clock_ms):
        self.ctx, self.clock = ctx, clock

    def setup(self):
        self.fetcher = shared_fetcher(self.ctx)
        self.store = shared_feed_store(self.ctx)

    def process(self, action):
        if self.store is None or not self.ctx.websub_callback_base:
            return
        try:
            sub = poller.subscribe(
                self.fetcher, self.store, poller.SubscribeAction(**action), self.ctx.websub_callback_base, self.clock()
            )
        except Exception as exc:
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, poller.dead_letter("subscribe_error", repr(exc), action.get("topic"), action, self.clock())
            )
            return
        if sub.get("hub_error") or (sub.get("hub_status") or 0) >= 300:
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                poller.dead_letter(
                    "subscribe_refused",
                    f"{sub.get('hub_status')} {sub.get('hub_error')}",
                    action.get("topic"),
                    action,
                    self.clock(),
                ),
            )


class IngestFeeds(beam.PTransform):
    """Keyed feed inputs -> {"items": RawItem dicts, "dead_letters": DeadLetter dicts}."""

    def __init__(self, ctx: IngestContext, clock=wall_clock_ms, sleep=time.sleep):
        super().__init__()
        self.ctx, self.clock, self.sleep = ctx, clock, sleep

    def expand(self, inputs):
        kv = beam.typehints.KV[str, typing.Any]
        scheduled = inputs | "ScheduleFeeds" >> beam.ParDo(ScheduleFeedFn(self.ctx, self.clock)).with_input_types(
            kv
        ).with_outputs(DEAD_LETTER, SUBSCRIBE, main="discoveries")
        fetched = scheduled.discoveries | "FetchPages" >> beam.ParDo(
            FetchPageFn(self.ctx, self.clock, self.sleep)
        ).with_input_types(kv).with_outputs(DEAD_LETTER, main="items")
        subscribed = scheduled[SUBSCRIBE] | "SubscribeFeeds" >> beam.ParDo(
            SubscribeFeedFn(self.ctx, self.clock)
        ).with_outputs(DEAD_LETTER, main="unused")
        dead = (
            scheduled[DEAD_LETTER],
            fetched[DEAD_LETTER],
            subscribed[DEAD_LETTER],
        ) | "MergeDeadLetters" >> beam.Flatten()
        return {"items": fetched.items, "dead_letters": dead}


def read_beam_file(path: str) -> str:
    """The text of a registry file on any Beam filesystem (``gs://...`` on Dataflow) or a local path."""
    if "://" not in path:
        return read_local(path)
    with FileSystems.open(path) as f:
        return f.read().decode("utf-8")


class LoadFeedRegistryFn(beam.DoFn):
    """On every tick, reads the feed registry (a JSON file or the feeds table) and yields ``(url, {"config"})``:
    an updated entry reaches its feed's state on the next tick, a new feed starts polling at once."""

    def __init__(self, source: str, ctx: IngestContext):
        self.source, self.ctx = source, ctx

    def setup(self):
        self.store = shared_feed_store(self.ctx) if self.source == "table" else None

    def process(self, _tick):
        for entry in load_feeds(self.source, self.store, read=read_beam_file):
            yield entry["url"], {"config": entry}


class DecodeFetchRequestFn(beam.DoFn):
    """Bus messages ``(data, attributes)`` of the fetch-requests topic -> ``(feed_url, {"request": FetchRequest})``.

    A request naming only a publisher (kind BURST, from the stories job's burst pull) goes to each of that
    publisher's enabled feeds in the feed registry ``feeds`` (at most BURST_FEEDS_PER_PUBLISHER:
    :func:`transforms.ingest.registry.request_targets`), re-read every ``reload_s`` as the registry ticks are. Messages
    carrying the heartbeat attribute are dropped (they only move a test's Pub/Sub watermark). Undecodable
    messages and requests without a feed (no feed_url, and no publisher with an enabled feed) are dead-lettered
    (tag ``dead_letter``) with the message as payload. The read itself (stores.beam_io.ReadBus: ReadFromPubSub on
    Pub/Sub) acknowledges a message only once the runner has committed it, so a failure downstream retries the
    request instead of losing it.
    """

    def __init__(self, clock=wall_clock_ms, feeds: str | None = None, ctx: IngestContext | None = None, reload_s=60.0):
        self.clock = clock
        self.feeds, self.ctx, self.reload_s = feeds, ctx, float(reload_s)
        self.decoded = Metrics.counter("ingest", "fetch_requests")
        self.bad = Metrics.counter("ingest", "fetch_requests_bad")

    def setup(self):
        self._index, self._loaded = {}, None

    def _by_publisher(self) -> dict:
        """The publisher -> feeds index, re-read at most every ``reload_s`` (wall clock); {} without a registry."""
        if self.feeds is None:
            return {}
        now = time.monotonic()
        if self._loaded is None or now - self._loaded >= self.reload_s:
            from transforms.ingest.registry import feeds_by_publisher

            store = shared_feed_store(self.ctx) if self.feeds == "table" and self.ctx else None
            self._loaded = now
            try:
                self._index = feeds_by_publisher(load_feeds(self.feeds, store, read=read_beam_file))
            except Exception as exc:  # keep the previous index, as the local driver keeps its previous registry
                log.error("feed registry %s unreadable: %s (keeping the previous one)", self.feeds, exc)
        return self._index

    def process(self, message):
        from schemas import codec
        from stores.beam_io import HEARTBEAT_ATTRIBUTE
        from transforms.ingest.registry import request_targets

        data, attributes = message
        if HEARTBEAT_ATTRIBUTE in (attributes or {}):
            return
        try:
            req = codec.decode("FetchRequest", bytes(data))
        except Exception as exc:
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, poller.dead_letter("bad_fetch_request", repr(exc), None, bytes(data), self.clock())
            )
            return
        targets = request_targets(req, {} if req.get("feed_url") else self._by_publisher())
        if not targets:
            self.bad.inc()
            detail = "fetch requests must name a feed, or a publisher with an enabled feed"
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, poller.dead_letter("no_feed", detail, req.get("url"), bytes(data), self.clock())
            )
            return
        self.decoded.inc()
        for url, r in targets:
            yield url, {"request": r}
