"""Poll one feed, diff its items, and fetch each new item's page: the plain-Python core of the ingest job.

Reads feeds and pages through a :class:`transforms.ingest.fetcher.Fetcher`; reads and writes a
:class:`transforms.ingest.schedule.FeedState`; claims page URLs in a :class:`stores.feeds.FeedStore`. Writes
:class:`Discovery` records (an item to fetch), ``RawItem`` records (schemas/avro/raw_item.avsc) and ``DeadLetter``
records (schemas/avro/dead_letter.avsc, stage ``ingest``). Used by the Beam DoFns of
:mod:`transforms.ingest.beam` and by the local driver of :mod:`pipelines.ingest` alike.

Front pages (``kind: "front"``, :mod:`transforms.ingest.fronts`): polled like a feed (same schedule, conditional
GET, guid memory keyed by link), but the fetch obeys robots.txt (a front is a page) and the body's article-shaped
links are the entries; their discoveries carry source ``FEED`` (RawItem's source enum has no FRONT).

Item identity: RSS guid / Atom id / link (see :mod:`transforms.ingest.feeds`). An entry whose guid is new is a new
item; an entry whose guid is known but whose fingerprint (title + updated) changed is a *correction*: its page is
fetched again once, as a new version of the same article (claim key ``url#fingerprint``). Each page fetch first
claims its key in the feed store (create-if-absent, owner = a deterministic discovery id), so the same item found
by a feed poll, a ping-triggered poll and a push-triggered poll, or listed in two feeds, is fetched once, also
across restarts; a retry of the same discovery holds the same owner and may proceed.

Retry policy: feed polls are not retried (the schedule backs off: floor * 2^errors); page fetches are retried
twice on transient failures (timeouts, connection errors, 5xx) with a short pause, then dead-lettered with the
discovery as replayable payload. Permanent failures (blocked address, robots, too large, 4xx) are dead-lettered
at once.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from dataclasses import asdict, dataclass, field, replace

from transforms import common
from transforms.ingest import parsing, websub
from transforms.ingest import schedule as sch
from transforms.ingest.feeds import FeedError
from transforms.ingest.fetcher import Fetcher

log = logging.getLogger(__name__)

STAGE = "ingest"
PAGE_RETRIES = 2
# Most discoveries one poll of one feed yields. A feed listing more new items than this (a flood: one feed once
# listed 20,000) yields the oldest MAX_DISCOVERIES_PER_POLL; the rest stay unknown to the guid memory and come out
# of the next polls, which are planned at the feed's floor interval and sent without validators (a 304 must not
# hide them) until the backlog is drained. Nothing is lost, nothing is found twice (the memory holds at least the
# whole feed meanwhile, see poll_feed), and one feed cannot flood the page fetchers and items-raw in one go. 200
# is about what one host's politeness delay lets us fetch before the next poll at the authoritative floor, and
# far more than a real feed adds between two polls.
MAX_DISCOVERIES_PER_POLL = 200


@dataclass(frozen=True)
class FeedConfig:
    url: str
    publisher_id: str | None = None
    tier: str = "long_tail"  # authoritative | long_tail
    kind: str = "auto"  # rss | atom | sitemap | front | auto
    enabled: bool = True

    @classmethod
    def from_dict(cls, d: dict) -> FeedConfig:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Discovery:
    url: str
    feed_url: str | None
    publisher_id: str | None
    source: str  # FEED | SITEMAP | WEBSUB | PING
    first_seen_at: int
    claim_key: str
    owner: str
    entry: dict | None = None
    is_update: bool = False
    tier: str = "long_tail"  # the feed's tier (FeedConfig.tier): the discovery-delay metric's label
    published_ms: int | None = None  # the entry's stated publish time, if the feed gave one

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Discovery:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


@dataclass
class SubscribeAction:
    feed_url: str
    topic: str
    hub: str


@dataclass
class PollOutcome:
    status: int = 0
    discoveries: list = field(default_factory=list)
    dead_letters: list = field(default_factory=list)
    subscribe: SubscribeAction | None = None
    new_items: int = 0
    updates: int = 0
    deferred: int = 0  # new items or corrections left for the next poll (MAX_DISCOVERIES_PER_POLL)


def item_id(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


def dead_letter(reason: str, detail: str, key: str | None, payload: bytes | dict | None, now_ms: int) -> dict:
    return common.dead_letter(STAGE, reason, detail, key, payload, now_ms)


@dataclass(frozen=True)
class Poll:
    """What one poll of a feed is done with and when: the fetcher, the schedule policy, the time, the request that
    triggered it (PUSH, PING, BURST; None for the schedule's own poll) and whether WebSub subscriptions are made.
    The feed itself (its FeedConfig and FeedState) is passed beside it: the state is the one thing a poll changes."""

    fetcher: Fetcher
    policy: sch.SchedulePolicy
    now_ms: int
    trigger: str | None = None
    websub_enabled: bool = False


@dataclass(frozen=True)
class _Listing:
    """One poll's reading of a feed's entries: the feed, its remembered guids (``keep`` of them), the Discovery
    source, the time."""

    config: FeedConfig
    state: sch.FeedState
    source: str
    now_ms: int
    keep: int


def _source(trigger: str | None, feed_kind: str) -> str:
    """The Discovery source: the request that triggered the poll, else the kind of feed."""
    if trigger == "PUSH":
        return "WEBSUB"
    if trigger == "PING":
        return "PING"
    return "SITEMAP" if feed_kind == "sitemap" else "FEED"


def _diff_entry(e, listing: _Listing, out: PollOutcome) -> None:
    """One feed entry against the guids the feed's state remembers (``listing.keep`` of them): a new item or a
    correction becomes a Discovery, or, once the poll has MAX_DISCOVERIES_PER_POLL of them, is deferred (not
    remembered, so the next poll finds it)."""
    config, state, keep = listing.config, listing.state, listing.keep
    fp = e.fingerprint
    known = state.guids.get(e.guid)
    if known is None and e.link in state.guids:
        known = state.guids[e.link]
    if known == fp:
        state.remember(e.guid, fp, keep)  # refresh its place in the memory
        return
    if len(out.discoveries) >= MAX_DISCOVERIES_PER_POLL:
        out.deferred += 1
        return
    is_update = known is not None
    claim_key = f"{e.link}#{fp}" if is_update else e.link
    owner = hashlib.sha256(f"{config.url}\x1f{e.guid}\x1f{fp if is_update else ''}".encode()).hexdigest()[:24]
    out.discoveries.append(
        Discovery(
            url=e.link,
            feed_url=config.url,
            publisher_id=config.publisher_id,
            source=listing.source,
            first_seen_at=listing.now_ms,
            claim_key=claim_key,
            owner=owner,
            entry=e.to_feed_entry(),
            is_update=is_update,
            tier=config.tier,
            published_ms=e.published_ms,
        )
    )
    if is_update:
        out.updates += 1
    else:
        out.new_items += 1
    state.remember(e.guid, fp, keep)


def _drop_long_urls(parsed, config: FeedConfig, now_ms: int, out: PollOutcome) -> None:
    """Entries whose link is over common.MAX_URL_CHARS are dropped (never claimed, fetched nor remembered): one
    dead letter ``url_too_long`` per poll says how many and quotes the first; a hub or self link that long is
    ignored. The guid memory does not keep them, so each later poll that still lists them says so again."""
    long_links = [e.link for e in parsed.entries if common.url_too_long(e.link)]
    if long_links:
        parsed.entries = [e for e in parsed.entries if not common.url_too_long(e.link)]
        detail = f"{len(long_links)} link(s) dropped, the first {common.url_excerpt(long_links[0])}"
        out.dead_letters.append(dead_letter(common.URL_TOO_LONG, detail, config.url, None, now_ms))
    if common.url_too_long(parsed.hub) or common.url_too_long(parsed.self_url):
        parsed.hub = parsed.self_url = None


def poll_feed(poll: Poll, config: FeedConfig, state: sch.FeedState) -> PollOutcome:
    """One conditional GET of ``config.url``; updates ``state`` (validators, guids, rates, next poll)."""
    fetcher, policy, now_ms = poll.fetcher, poll.policy, poll.now_ms
    out = PollOutcome()
    front = config.kind == "front"  # a section front is a page, not a feed: robots.txt rules it (fronts.py)
    res = fetcher.fetch(config.url, headers=sch.conditional_headers(state), check_robots=front)
    out.status = res.status
    if res.error or res.status not in (200, 304):
        reason = res.error or f"http_{res.status}"
        sch.record_error(state, now_ms)
        out.dead_letters.append(dead_letter(f"feed_{reason}", res.detail, config.url, config.to_dict(), now_ms))
        sch.plan_next_poll(state, config.tier, policy, now_ms)
        return out
    if res.status == 304:
        sch.record_response(state, now_ms, sch.PollResponse(304), policy.scale)
        sch.plan_next_poll(state, config.tier, policy, now_ms)
        return out
    try:  # in a child process under a CPU budget (transforms/ingest/parsing.py)
        if front:
            parsed = parsing.parse(res.body, res.final_url or config.url, now_ms, None, "front")
        else:
            parsed = parsing.parse(
                res.body, config.url, now_ms, res.headers, None if config.kind == "auto" else config.kind
            )
    except FeedError as exc:
        sch.record_error(state, now_ms)
        out.dead_letters.append(dead_letter(exc.reason, exc.detail, config.url, res.body[:65536], now_ms))
        sch.plan_next_poll(state, config.tier, policy, now_ms)
        return out
    _drop_long_urls(parsed, config, now_ms, out)
    source = _source(poll.trigger, parsed.kind)
    # The memory holds at least the whole feed: an entry still listed is never forgotten and found again (a feed
    # longer than GUID_MEMORY, or one drained over several polls). The body limit bounds the feed, so the memory.
    keep = max(sch.GUID_MEMORY, len(parsed.entries))
    # Oldest first, so that a burst is fetched in publication order (and a deferred rest is the newest).
    listing = _Listing(config, state, source, now_ms, keep)
    for e in sorted(parsed.entries, key=lambda e: (e.published_ms or 0, e.guid)):
        _diff_entry(e, listing, out)
    first_sight = state.recent_at_ms is None
    state.hint_ttl_min = parsed.ttl_min  # as the feed serves them now: a hint it dropped is forgotten
    state.hint_skip_hours = list(parsed.skip_hours)
    state.hint_skip_days = list(parsed.skip_days)
    backlog = out.deferred > 0  # no validators kept: the next poll must get the feed, not a 304
    response = sch.PollResponse(
        200,
        None if backlog else res.headers.get("etag"),
        None if backlog else res.headers.get("last-modified"),
        out.new_items,
        parsed.digest,
    )
    sch.record_response(state, now_ms, response, policy.scale)
    if first_sight:
        sch.seed_rate(state, now_ms, [e.published_ms for e in parsed.entries], policy.scale)
    if parsed.hub:
        state.hub = parsed.hub
        state.self_url = parsed.self_url or config.url
        if poll.websub_enabled and websub.needs_renewal(state.lease_expires_ms, None, now_ms):
            out.subscribe = SubscribeAction(config.url, state.self_url, parsed.hub)
    sch.plan_next_poll(state, config.tier, policy, now_ms, out.new_items)
    if backlog:  # the rest of the feed soon, whatever the rate estimate or a WebSub lease say
        state.next_poll_ms = min(state.next_poll_ms, now_ms + policy.floor_ms(config.tier))
    return out


def apply_request(state: sch.FeedState, request: dict, policy: sch.SchedulePolicy, now_ms: int) -> bool:
    """Fold a FetchRequest into ``state``. True when the caller must poll the feed now."""
    kind = request.get("kind")
    if kind == "PUSH" and request.get("reason") == "websub_lease":
        state.lease_expires_ms = request.get("expires_at")
        if sch.lease_active(state, now_ms) and not (state.burst_until_ms and state.burst_until_ms > now_ms):
            # Pushes now bring the news: relax the next poll to the backstop.
            backstop = (state.last_poll_ms or now_ms) + policy.backstop_ms
            state.next_poll_ms = max(state.next_poll_ms or 0, backstop)
        return False
    if kind == "POLL":
        if state.next_poll_ms is None or state.next_poll_ms > now_ms:
            state.next_poll_ms = now_ms
        return True
    return (
        sch.request_poll(state, kind, now_ms, policy, int(request.get("priority") or 0), request.get("expires_at"))
        is not None
    )


def fetch_page(
    fetcher: Fetcher, discovery: Discovery, store, now_ms: int, sleep=time.sleep, gone=None, rand=random.random
) -> tuple[dict | None, dict | None]:
    """Fetch one discovered page. Returns (RawItem, None), (None, DeadLetter), or (None, None) for a duplicate.
    ``gone(url, status)``: called when a re-fetch (``discovery.is_update``) answers 404 or 410, before the dead
    letter is returned (transforms/ingest/gone.py tombstones the article); a store error there raises (retried)."""
    if store is not None and not store.claim(discovery.claim_key, discovery.owner, now_ms):
        return None, None
    res = None
    for attempt in range(PAGE_RETRIES + 1):
        res = fetcher.fetch(discovery.url)
        if not res.transient:
            break
        if attempt < PAGE_RETRIES:
            sleep(common.backoff_s(attempt, 0.5, 4.0, rand))  # jittered: a host's failing pages do not retry in step
    if res.error or not (200 <= res.status < 300):
        reason = res.error or f"http_{res.status}"
        if gone is not None and discovery.is_update and not res.error and res.status in (404, 410):
            gone(discovery.url, res.status)
        return None, dead_letter(reason, res.detail or res.final_url, discovery.url, discovery.to_dict(), now_ms)
    record = {
        "schema_version": 1,
        "item_id": item_id(discovery.url),
        "source": discovery.source,
        "feed_url": discovery.feed_url,
        "publisher_id": discovery.publisher_id,
        "fetched_url": discovery.url,
        "final_url": res.final_url,
        "http_status": res.status,
        "headers": {k.lower(): str(v) for k, v in res.headers.items()},
        "body": res.body,
        "fetched_at": res.fetched_at_ms,
        "first_seen_at": discovery.first_seen_at,
        "entry": discovery.entry,
    }
    if not discovery.is_update:
        log.info("%s", discovered_event(discovery, res.fetched_at_ms))
    return record, None


_VIA = {"FEED": "poll", "SITEMAP": "poll", "WEBSUB": "websub", "PING": "ping"}


def discovered_event(discovery: Discovery, fetched_at_ms: int) -> str:
    """The operations log line of a new item about to be published on items-raw (terraform/modules/monitoring's
    discovery-latency metric reads it): ``newsroom.item_discovered tier=<tier> via=<poll|websub|ping>
    [discovery_s=<s>]``. ``discovery_s`` runs from the publisher's stated publish time to the fetch; it is left out
    when the feed stated none (a delay from an unknown start is no figure) and is 0 for a date in the future (a
    publisher's clock or zone error). Corrections are not logged: their delay is not a discovery's."""
    parts = ["newsroom.item_discovered", f"tier={discovery.tier}", f"via={_VIA.get(discovery.source, 'poll')}"]
    if discovery.published_ms is not None:
        parts.append(f"discovery_s={max(0, fetched_at_ms - discovery.published_ms) / 1000:.1f}")
    return " ".join(parts)


def subscribe(
    fetcher: Fetcher,
    store,
    action: SubscribeAction,
    callback_base: str,
    now_ms: int,
    lease_seconds: int = websub.DEFAULT_LEASE_S,
) -> dict:
    """Ask ``action.hub`` for a subscription to ``action.topic``; the origin verifies intent and activates it.
    Returns the subscription record (state ``pending`` until the hub's verification GET arrives)."""
    sub_id = websub.subscription_id(action.topic, action.hub)
    existing = store.get_subscription(sub_id) or {}
    if existing.get("state") == "pending" and now_ms - existing.get("requested_at", 0) < common.MINUTE_MS:
        return existing  # a request is in flight
    secret = existing.get("secret") or websub.new_secret()
    sub = {
        "sub_id": sub_id,
        "feed_url": action.feed_url,
        "topic": action.topic,
        "hub": action.hub,
        "secret": secret,
        "callback": websub.callback_url(callback_base, sub_id, secret),
        "state": "pending" if existing.get("state") != "active" else "active",
        "requested_at": now_ms,
        "lease_seconds": lease_seconds,
        "lease_expires_ms": existing.get("lease_expires_ms"),
    }
    store.put_subscription(sub)
    from urllib.parse import urlencode

    form = urlencode(
        {
            "hub.mode": "subscribe",
            "hub.topic": action.topic,
            "hub.callback": sub["callback"],
            "hub.secret": sub["secret"],
            "hub.lease_seconds": str(lease_seconds),
        }
    ).encode()
    res = fetcher.fetch(
        action.hub,
        method="POST",
        body=form,
        check_robots=False,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    # Not written back: the hub may already have verified intent (and the origin activated the record).
    return dict(sub, hub_status=res.status, hub_error=res.error)


@dataclass
class Step:
    """What one input or timer firing did to a feed: the new state, the config in force, and a poll outcome (None
    when no poll happened). The caller re-arms its timer at ``state.next_poll_ms`` (None: stop polling)."""

    state: sch.FeedState
    config: FeedConfig | None
    outcome: PollOutcome | None = None


def on_input(poll: Poll, config: FeedConfig | None, state: sch.FeedState, item: dict) -> Step:
    """Apply one keyed input: ``{"config": {...}}`` (registry entry, possibly updated) or ``{"request": {...}}``
    (a FetchRequest). A newly registered feed is polled at once; a request may trigger a poll (see apply_request),
    whose trigger it is."""
    now_ms = poll.now_ms
    poll_now = False
    if "config" in item:
        config = FeedConfig.from_dict(item["config"])
        if not config.enabled:
            state.next_poll_ms = None
            return Step(state, config)
        if state.next_poll_ms is None or state.next_poll_ms <= now_ms:
            poll_now = True
    elif "request" in item:
        if config is None or not config.enabled:
            return Step(state, config)  # a request for a feed we do not (yet) poll: the registry decides
        poll_now = apply_request(state, item["request"], poll.policy, now_ms)
        poll = replace(poll, trigger=item["request"].get("kind"))
    if poll_now:
        outcome = poll_feed(poll, config, state)
        return Step(state, config, outcome)
    return Step(state, config)


def on_timer(poll: Poll, config: FeedConfig | None, state: sch.FeedState, tolerance_ms: int = 1000) -> Step:
    """A poll timer fired. Idempotent: a firing well before ``next_poll_ms`` (a duplicate or stale timer) only
    re-arms."""
    if config is None or not config.enabled or state.next_poll_ms is None:
        return Step(state, config)
    if poll.now_ms < state.next_poll_ms - tolerance_ms:
        return Step(state, config)
    outcome = poll_feed(poll, config, state)
    return Step(state, config, outcome)
