"""The ingest job on this machine: :class:`LocalIngest`, the in-process driver of pipelines/ingest.py's logic.

Calls the same on_input / on_timer / fetch_page functions (transforms/ingest/poller.py) as the Beam graph, with the
state in a dict, timers in a heap and the embedded bus (why not BundleBasedDirectRunner: pipelines/ingest.py).
Checkpoints in outbox order: a feed's state is written only once every item its polls discovered is published (or
dead-lettered); a failed publish is retried with backoff (tests/security/test_ingest_outbox.py). And every claimed
page is held in the feed store's outbox until the stories job settles it (its article stored, or dead-lettered):
entries still held ``--replay_after_s`` after their claim are fetched and published again, at start and then
periodically, with a doubling delay (all of them at start with ``--replay_held_at_start``: newsroom run's bus is new) (tests/pipelines/test_crash_replay.py). A crash of any job therefore loses no
claimed URL: what the bus or a killed consumer lost is republished, and the article store's conditional write keeps
it stored once.

:func:`run_local` is ``python -m pipelines.ingest`` with a local runner: the driver until Ctrl-C or ``--max_run_s``,
then the stats as JSON. The sample world and its discovery delays: ``benchmarks/ingest_world.py``.
"""

from __future__ import annotations

import heapq
import json
import logging
import threading
import time
import typing
from concurrent.futures import ThreadPoolExecutor

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: F401  (the usage above)

from pipelines.ingest_options import IngestJob, resolve
from transforms.ingest import poller
from transforms.ingest import schedule as sch
from transforms.ingest.fetcher import Fetcher
from transforms.ingest.guard import AddressGuard
from transforms.ingest.ordering import raw_item_key
from transforms.ingest.registry import feeds_by_publisher, request_targets

log = logging.getLogger("newsroom.ingest")

MAX_REPLAY_DOUBLINGS = 5  # a held page is republished after the grace, then 2x, 4x ... 32x the grace later
FOREVER_MS = 2**62  # a due time after every entry's


class LocalIngest:
    """The ingest job on one machine: same domain logic as the Beam graph, driven by an in-process loop.

    Usage (the main job)::

        ingest = LocalIngest.from_options(PipelineOptions([...]), host_overrides=world.host_overrides)
        ingest.start()          # background thread; or ingest.run(stop_event) in the foreground
        ingest.stats()          # {"polls", "not_modified", "new_items", "pages_fetched", "dead_letters", ...}
                                # pages_fetched = pages_new + pages_updated (corrections) + pages_replayed (outbox)
        ingest.stop()
    """

    def __init__(self, job: IngestJob, host_overrides: dict | None = None, resolver=None, clock=None, on_item=None):
        self.o = job
        self.ctx = job.local_context(host_overrides, resolver)
        self.cfg = self.ctx.store_config
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.on_item = on_item  # optional callback(raw_item) (progress display)
        from stores import open_store
        from stores.feeds import open_feed_store

        self.bus = open_store("bus", self.cfg)
        self.store = open_feed_store(self.cfg)
        from transforms.ingest.gone import open_publisher_gone

        self.gone = open_publisher_gone(self.cfg)  # a re-fetch's 404/410 takes the article down
        self.fetcher = Fetcher(
            self.ctx.fetcher, AddressGuard(dict(self.ctx.host_overrides), resolver=resolver, allow=self.ctx.allow_hosts)
        )
        # base names: the bus puts them in the config's namespace itself (a second prefix was a topic nobody read)
        self.items_topic = self.o.items_topic
        self.dead_topic = self.o.dead_letter_topic
        self.request_topic = self.o.fetch_request_topic
        self.request_sub = self.o.fetch_request_subscription
        for t in (self.items_topic, self.dead_topic, self.request_topic):
            self.bus.ensure_topic(t)
        self.bus.ensure_subscription(self.request_topic, self.request_sub)
        self.configs: dict[str, poller.FeedConfig] = {}
        self.by_publisher: dict[str, list[str]] = {}  # publisher -> its enabled feeds (BURST requests)
        self.states: dict[str, sch.FeedState] = {}
        self.timers: list[tuple[int, str]] = []
        self.pool = ThreadPoolExecutor(max(1, self.o.fetch_workers), thread_name_prefix="ingest-fetch")
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Outbox order: a feed's state is checkpointed only once every item its polls discovered is published
        # (or dead-lettered). Fetches in flight: (feed url, discovery, attempt, replays, future); failed publishes
        # wait in _retry as (not before, feed url, discovery, attempt, replays); _inflight counts both per feed.
        self._pending: list[tuple[str, poller.Discovery, int, int, typing.Any]] = []
        self._retry: list[tuple[float, str, poller.Discovery, int, int]] = []
        self._inflight: dict[str, int] = {}
        self._unsaved: set[str] = set()

    @classmethod
    def from_options(cls, options, **kwargs) -> LocalIngest:
        """The driver of a job's PipelineOptions (resolved here, once: :func:`pipelines.ingest_options.resolve`)."""
        return cls(resolve(options), **kwargs)

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
        if out.deferred:
            self._count("discoveries_deferred", out.deferred)
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

    def _fetch(self, d: poller.Discovery, replays: int = 0) -> None:
        item = poller.item_id(d.url)
        try:
            raw, dl = poller.fetch_page(self.fetcher, d, self.store, self.clock(), gone=self.gone)
        except Exception as exc:
            log.exception("page fetch crashed for %s", d.url)
            raw, dl = None, poller.dead_letter("fetch_error", repr(exc), d.url, d.to_dict(), self.clock())
        if raw is not None:
            self.bus.publish_record(self.items_topic, raw, ordering_key=raw_item_key(raw))  # per-URL order
            self._count("pages_fetched")  # every fetch published: a new page's, a correction's, a replay's
            self._count("pages_replayed" if replays else "pages_updated" if d.is_update else "pages_new")
            if self.on_item:
                try:
                    self.on_item(raw)
                except Exception:
                    log.exception("on_item callback failed")
        elif dl is not None:
            self._dead(dl)
            self.store.release(item, d.owner)  # the page's outcome is its dead letter
        else:
            self._count("pages_duplicate")
            self.store.release(item, d.owner)  # claimed by another discovery, which holds its own entry

    # -- the outbox: claimed pages not yet in the article store -----------------------------------------------
    def _hold(self, d: poller.Discovery, replays: int) -> None:
        """Held before the claim: a page claimed is always either held or settled."""
        delay_ms = int(self.o.replay_after_s * 1000) * 2 ** min(replays, MAX_REPLAY_DOUBLINGS)
        self.store.hold(
            {
                "item": poller.item_id(d.url),
                "owner": d.owner,
                "first_seen_at": d.first_seen_at,
                "due": self.clock() + delay_ms,
                "replays": replays,
                "discovery": d.to_dict(),
            }
        )

    def replay_due(self, limit: int = 200, everything: bool = False) -> int:
        """Fetch and publish again the held pages whose grace is over (lost on the bus, or by a killed consumer), or
        ``everything`` held (the bus is new: nothing held is on it); the claim is the same owner's, so it is granted
        again. Returns how many."""
        entries = self.store.due(FOREVER_MS if everything else self.clock(), limit)
        for rec in entries:
            d = poller.Discovery.from_dict(rec["discovery"])
            self._submit(d.feed_url or "", d, 0, replays=int(rec.get("replays", 0)) + 1)
        if entries:
            self._count("replayed", len(entries))
            log.warning("republishing %d claimed pages the article store does not have yet", len(entries))
        return len(entries)

    # -- outbox order -----------------------------------------------------------------------------------------
    def _submit(self, url: str, d: poller.Discovery, attempt: int, replays: int = 0) -> None:
        if attempt == 0:
            self._hold(d, replays)
        self._inflight[url] = self._inflight.get(url, 0) + 1
        self._pending.append((url, d, attempt, replays, self.pool.submit(self._fetch, d, replays)))

    def _settle(self) -> None:
        """Loop thread: collect finished fetches, re-queue those whose publishing failed (a store error: the bus
        did not take the item; the retry keeps the discovery's claim), then checkpoint every feed that has no
        item in flight. Why this order: the checkpoint remembers the feed's guids, so written before the items
        are out, a crash in between lost them for good; written after, a crash only means the
        restarted run polls from the previous checkpoint and publishes them again (the stories job dedupes)."""
        running = []
        for url, d, attempt, replays, fut in self._pending:
            if not fut.done():
                running.append((url, d, attempt, replays, fut))
                continue
            self._inflight[url] -= 1
            exc = fut.exception()
            if exc is not None:
                delay = min(30.0, 0.5 * 2**attempt)
                log.warning("publishing %s failed (%s); retrying in %.1f s", d.url, exc, delay)
                self._count("publish_retries")
                self._inflight[url] += 1
                self._retry.append((time.monotonic() + delay, url, d, attempt + 1, replays))
        self._pending = running
        due = [r for r in self._retry if r[0] <= time.monotonic()]
        if due:
            self._retry = [r for r in self._retry if r[0] > time.monotonic()]
            for _, url, d, attempt, replays in due:
                self._inflight[url] -= 1
                self._submit(url, d, attempt, replays)
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
        self.by_publisher = feeds_by_publisher(entries)

    def handle_input(self, url: str, item: dict) -> None:
        poll = poller.Poll(self.fetcher, self.ctx.policy, self.clock(), None, bool(self.o.websub_callback_base))
        step = poller.on_input(poll, self.configs.get(url), self._state(url), item)
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
            targets = request_targets(req, self.by_publisher)
            if not targets:
                detail = "fetch requests must name a feed, or a publisher with an enabled feed"
                self._dead(poller.dead_letter("no_feed", detail, req.get("url"), m.data, self.clock()))
                continue
            for url, r in targets:  # a BURST names a publisher: each of its feeds (registry.request_targets)
                self.handle_input(url, {"request": r})
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
            poll = poller.Poll(self.fetcher, self.ctx.policy, max(now, at), None, bool(self.o.websub_callback_base))
            step = poller.on_timer(poll, self.configs.get(url), st)
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
        next_reload = next_replay = 0.0
        if self.o.replay_held_at_start:
            self.replay_due(limit=1_000_000, everything=True)  # the held pages: those in flight, a few hundred
        while not stop.is_set():
            if max_run_s and time.monotonic() - started >= max_run_s:
                break
            if time.monotonic() >= next_reload:
                self.load_registry()
                next_reload = time.monotonic() + self.o.registry_reload_s
            if time.monotonic() >= next_replay:
                self.replay_due()
                next_replay = time.monotonic() + min(30.0, max(0.5, self.o.replay_after_s / 4))
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


def run_local(job: IngestJob) -> int:
    """The local runner of ``python -m pipelines.ingest``: prints the stats as JSON when it stops.

    The sample world is not started here: a job never imports the developer tools. To ingest the world with its
    release-to-discovery delays, ``benchmarks/ingest_world.py`` starts world, origin and this driver together.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ingest = LocalIngest(job)
    try:
        stats = ingest.run()
    except KeyboardInterrupt:
        stats = ingest.stats()
    finally:
        ingest.stop()
    print(json.dumps(stats, sort_keys=True), flush=True)
    return 0
