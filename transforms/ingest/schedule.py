"""Per-feed poll schedule: plain Python, shared by the ingest DoFn, the local driver and benchmarks/poll_sim.py.

Reads and writes a :class:`FeedState` (JSON-able; the Beam state of ScheduleFeedFn and the ``s:state`` checkpoint
of the feeds table). Nothing here does I/O or reads a clock: every call takes ``now_ms``.

Design choices (DESIGN.md section 1):

- Expected publishing rate. Two decayed estimators of items per hour: a *recent* one (exponential decay, time
  constant 3 h: follows a news day) and one per *hour of the week* (168 buckets, each decayed with a 4-week
  half-life: learns that a business desk is quiet on Sunday night). Both are ratios of decayed item counts over
  decayed exposure (hours observed), with a weak prior so that a new feed starts near ``PRIOR_RATE`` per hour and
  a silent feed drifts toward zero. Once a bucket has seen >= 2 h of exposure the two are averaged.
- Interval = half the expected gap between items (0.5 / rate), clamped to [floor, 60 min]; floor is 1 min for
  authoritative publishers and 5 min for the long tail. Half the gap keeps the mean discovery delay at about a
  quarter of the gap while >= ~60 % of polls still find nothing (answered 304).
- Right after new items, the next poll comes at max(floor, interval / 2): news comes in clusters.
- A BURST fetch request (burst detection upstream: transforms/editions/bursts/coverage.py says which feeds) moves the feed
  to the 1-minute lane until the request's ``expires_at`` (an hour after the burst's window, editions.json
  ``bursts.fetch_ttl_min``; 60 min when a request gives none): the interval is ``burst_floor_ms`` (1 min) whatever
  the feed's tier, rate, hints or WebSub lease, then returns to the rate model. A feed whose validators proved
  useless (every poll a full 200) keeps the long-tail floor even then.
- A changed ETag is never trusted alone: only guid-new items count. A feed whose ETag changes on every request
  while its items do not (3 times running) is flagged ``validators_useless``: we stop sending If-None-Match /
  If-Modified-Since (the server would never answer 304) and it never polls faster than the long-tail floor.
- A feed with a live WebSub lease is polled only as a backstop, about every 15 min.
- Triggered polls (PUSH, PING, BURST) happen at most once per 30 s per feed; a request inside that window moves
  the next poll to the end of the window instead of being lost.
- Errors back off exponentially (floor * 2^errors, capped at 60 min).
- Feed hints (RSS ``ttl``, ``skipHours``, ``skipDays``; a sitemap's ``changefreq`` as a ttl; read by
  transforms/ingest/feeds.py, kept in the state as ``hint_*``) shape the *long tail* only, and only while the
  measured rate agrees with them: a hint holds while the expected items in the hinted interval (the ttl, at most
  the 60-min ceiling; the ceiling for skip hints alone) are at most one. A feed that publishes more often than
  that contradicts its hints and follows its rate; an authoritative feed never reads them. While a hint holds the
  interval is at least min(ttl, ceiling) (also right after new items: a feed slower than its ttl has no
  clusters), and a next poll inside a skipped GMT hour or day moves to the first hour that is not skipped, at most
  24 h later (wrong hints cost at most a day; skipping all 24 hours or all 7 days is read as no hint). A BURST
  request and a pending backlog override both. Skipped hours are clock hours (not scaled).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from transforms.common import HOUR_MS, MINUTE_MS, SECOND_MS, WEEK_MS  # noqa: F401  (re-exported)

RECENT_TAU_MS = 3 * HOUR_MS
HOW_HALF_LIFE_MS = 4 * WEEK_MS
PRIOR_RATE = 1.0  # items/hour a feed is assumed to publish before we know anything
PRIOR_HOURS = 0.25  # weight of that prior, in hours of observation (weak: 15 min of data outweigh it)
HOW_MIN_EXPOSURE_H = 2.0
GUID_MEMORY = 200
CHURN_LIMIT = 3
HINT_MAX_SKIP_MS = 24 * HOUR_MS
TRIGGER_MIN_GAP_MS = 30 * SECOND_MS
BURST_DEFAULT_MS = 60 * MINUTE_MS  # a BURST request without expires_at holds the 1-minute lane this long


@dataclass(frozen=True)
class SchedulePolicy:
    """Clamps and constants. ``scale`` multiplies every duration (0.1 runs the sample world's demo 10x faster)."""

    floor_authoritative_ms: int = 1 * MINUTE_MS
    floor_long_tail_ms: int = 5 * MINUTE_MS
    burst_floor_ms: int = 1 * MINUTE_MS  # the lane of a feed pulled by a burst, every tier
    max_interval_ms: int = 60 * MINUTE_MS
    websub_backstop_ms: int = 15 * MINUTE_MS
    trigger_min_gap_ms: int = TRIGGER_MIN_GAP_MS
    scale: float = 1.0

    def floor_ms(self, tier: str, validators_useless: bool = False) -> int:
        base = self.floor_authoritative_ms if tier == "authoritative" else self.floor_long_tail_ms
        if validators_useless:
            base = max(base, self.floor_long_tail_ms)
        return int(base * self.scale)

    def burst_ms(self, validators_useless: bool = False) -> int:
        base = max(self.burst_floor_ms, self.floor_long_tail_ms) if validators_useless else self.burst_floor_ms
        return int(base * self.scale)

    @property
    def max_ms(self) -> int:
        return int(self.max_interval_ms * self.scale)

    @property
    def backstop_ms(self) -> int:
        return int(self.websub_backstop_ms * self.scale)


@dataclass
class FeedState:
    """Everything the scheduler remembers about one feed. Serialised with :meth:`to_dict` / :meth:`from_dict`."""

    feed_url: str = ""
    next_poll_ms: int | None = None
    last_poll_ms: int | None = None
    etag: str | None = None  # the server's strings, echoed back verbatim
    last_modified: str | None = None
    guids: dict = field(default_factory=dict)  # guid -> fingerprint, insertion-ordered, last GUID_MEMORY kept
    # (or the whole feed, when it lists more: poller.poll_feed)
    recent_items: float = 0.0  # decayed item count (tau RECENT_TAU_MS)
    recent_hours: float = 0.0  # decayed exposure in hours
    recent_at_ms: int | None = None
    how: dict = field(default_factory=dict)  # "hour of week" -> [decayed items, decayed hours, updated at ms]
    lease_expires_ms: int | None = None  # WebSub lease
    hub: str | None = None
    self_url: str | None = None
    validators_useless: bool = False
    etag_churn: int = 0
    last_digest: str | None = None  # digest of the entry list at the last 200
    last_triggered_ms: int | None = None
    burst_until_ms: int | None = None
    hint_ttl_min: int | None = None  # the feed's <ttl> (or sitemap <changefreq>) in minutes, as last served
    hint_skip_hours: list = field(default_factory=list)  # <skipHours>: GMT hours 0-23
    hint_skip_days: list = field(default_factory=list)  # <skipDays>: 0 = Monday .. 6 = Sunday (GMT)
    errors: int = 0
    polls: int = 0
    not_modified: int = 0
    items_found: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None, feed_url: str = "") -> FeedState:
        if not d:
            return cls(feed_url=feed_url)
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        st = cls(**known)
        if not st.feed_url:
            st.feed_url = feed_url
        return st

    # -- guid memory --------------------------------------------------------------------------------------
    def remember(self, guid: str, fingerprint: str, keep: int = GUID_MEMORY) -> None:
        """Remember ``guid`` as the newest, keeping the last ``keep`` (the poller passes at least the feed's
        length)."""
        self.guids.pop(guid, None)
        self.guids[guid] = fingerprint
        while len(self.guids) > max(1, keep):
            self.guids.pop(next(iter(self.guids)))


def hour_of_week(now_ms: int) -> int:
    # The epoch was a Thursday; bucket 0 is Monday 00:00 UTC.
    return int(((now_ms // HOUR_MS) + 72) % 168)


def _decay(value: float, dt_ms: float, tau_ms: float) -> float:
    return value * math.exp(-max(0.0, dt_ms) / tau_ms)


def record_observation(state: FeedState, now_ms: int, new_items: int, scale: float = 1.0) -> None:
    """Fold one poll's outcome (``new_items`` guid-new items since the last poll) into both rate estimators.
    ``scale`` < 1 compresses time (the sample world's demo): rates are per *scaled* hour."""
    prev = state.last_poll_ms
    exposure_h = 0.0 if prev is None else max(0.0, (now_ms - prev) / (HOUR_MS * scale))
    if state.recent_at_ms is not None:
        dt = (now_ms - state.recent_at_ms) / scale
        state.recent_items = _decay(state.recent_items, dt, RECENT_TAU_MS)
        state.recent_hours = _decay(state.recent_hours, dt, RECENT_TAU_MS)
    state.recent_items += new_items
    state.recent_hours += exposure_h
    state.recent_at_ms = now_ms
    h = str(hour_of_week(now_ms))
    bucket = state.how.get(h)
    if bucket is None:
        state.how[h] = [float(new_items), exposure_h, now_ms]
    else:
        f = 0.5 ** (max(0, now_ms - bucket[2]) / scale / HOW_HALF_LIFE_MS)
        state.how[h] = [bucket[0] * f + new_items, bucket[1] * f + exposure_h, now_ms]


def seed_rate(state: FeedState, now_ms: int, published_ms: list, scale: float = 1.0) -> None:
    """First sight of a feed: estimate its rate from its entries' publication times instead of the bare prior
    (n items over the span from the oldest dated entry to now, at most 48 h), so that a busy feed is polled at
    its pace from the second poll on."""
    dated = [p for p in published_ms if p is not None and now_ms - 48 * HOUR_MS * scale <= p <= now_ms]
    if len(dated) < 2:
        return
    span_h = max((now_ms - min(dated)) / (HOUR_MS * scale), 1 / 60)
    state.recent_items = float(len(dated))
    state.recent_hours = span_h
    state.recent_at_ms = now_ms


def expected_rate(state: FeedState, now_ms: int, scale: float = 1.0) -> float:
    """Expected items per (scaled) hour around ``now_ms``."""
    recent_items, recent_hours = state.recent_items, state.recent_hours
    if state.recent_at_ms is not None:
        dt = (now_ms - state.recent_at_ms) / scale
        recent_items = _decay(recent_items, dt, RECENT_TAU_MS)
        recent_hours = _decay(recent_hours, dt, RECENT_TAU_MS)
    recent = (recent_items + PRIOR_RATE * PRIOR_HOURS) / (recent_hours + PRIOR_HOURS)
    bucket = state.how.get(str(hour_of_week(now_ms)))
    if bucket is not None and bucket[1] >= HOW_MIN_EXPOSURE_H:
        return 0.5 * recent + 0.5 * bucket[0] / bucket[1]
    return recent


def base_interval_ms(state: FeedState, tier: str, policy: SchedulePolicy, now_ms: int) -> int:
    rate = expected_rate(state, now_ms, policy.scale)
    gap_ms = HOUR_MS * policy.scale / max(rate, 1e-6)
    interval = 0.5 * gap_ms
    floor = policy.floor_ms(tier, state.validators_useless)
    return int(min(max(interval, floor), policy.max_ms))


def lease_active(state: FeedState, now_ms: int) -> bool:
    return state.lease_expires_ms is not None and state.lease_expires_ms > now_ms


def _skip_sets(state: FeedState) -> tuple[set, set]:
    hours = {int(h) % 24 for h in state.hint_skip_hours or ()}
    days = {int(d) % 7 for d in state.hint_skip_days or ()}
    return (hours if len(hours) < 24 else set()), (days if len(days) < 7 else set())


def hints_hold(state: FeedState, tier: str, policy: SchedulePolicy, now_ms: int) -> bool:
    """True when the feed's hints apply: a long-tail feed with a hint whose measured rate expects fewer than one
    item in the hinted interval (min(ttl, ceiling), or the ceiling for skip hints alone). A new feed's prior
    (1 item/h) is no measurement and does not contradict a ttl of an hour or more."""
    hours, days = _skip_sets(state)
    if tier == "authoritative" or not (state.hint_ttl_min or hours or days):
        return False
    horizon_ms = policy.max_ms
    if state.hint_ttl_min:
        horizon_ms = min(horizon_ms, int(state.hint_ttl_min * MINUTE_MS * policy.scale))
    return expected_rate(state, now_ms, policy.scale) * horizon_ms / (HOUR_MS * policy.scale) <= 1.0


def skip_past(state: FeedState, t_ms: int, policy: SchedulePolicy) -> int:
    """The first time >= ``t_ms`` outside the feed's skipped GMT hours and days, at most HINT_MAX_SKIP_MS
    (scaled) later."""
    hours, days = _skip_sets(state)
    limit = t_ms + int(HINT_MAX_SKIP_MS * policy.scale)
    t = t_ms
    while t < limit:
        how = hour_of_week(t)
        if how // 24 not in days and how % 24 not in hours:
            return t
        t = (t // HOUR_MS + 1) * HOUR_MS
    return limit


def plan_next_poll(state: FeedState, tier: str, policy: SchedulePolicy, now_ms: int, new_items: int = 0) -> int:
    """Set and return ``state.next_poll_ms`` after a poll at ``now_ms`` that found ``new_items``."""
    floor = policy.floor_ms(tier, state.validators_useless)
    bursting = bool(state.burst_until_ms and state.burst_until_ms > now_ms)
    hinted = not bursting and hints_hold(state, tier, policy, now_ms)
    if state.errors:
        interval = min(policy.max_ms, floor * (2 ** min(state.errors, 10)))
    else:
        interval = base_interval_ms(state, tier, policy, now_ms)
        if new_items and not state.validators_useless:
            interval = max(floor, interval // 2)
        if hinted and state.hint_ttl_min:
            interval = max(interval, min(int(state.hint_ttl_min * MINUTE_MS * policy.scale), policy.max_ms))
        if bursting:
            interval = policy.burst_ms(state.validators_useless)
        elif lease_active(state, now_ms):
            interval = max(interval, policy.backstop_ms)
    state.next_poll_ms = now_ms + int(interval)
    if hinted:
        state.next_poll_ms = skip_past(state, state.next_poll_ms, policy)
    return state.next_poll_ms


def conditional_headers(state: FeedState) -> dict:
    """Validators to send: the server's own strings, unless they proved useless."""
    if state.validators_useless:
        return {}
    headers = {}
    if state.etag:
        headers["If-None-Match"] = state.etag
    if state.last_modified:
        headers["If-Modified-Since"] = state.last_modified
    return headers


@dataclass(frozen=True)
class PollResponse:
    """A successful poll's answer: ``status`` 200 or 304, the validators the server sent (None: keep none), the
    guid-new items it listed and the digest of its item list (None: not computed). A 304 needs the status only."""

    status: int
    etag: str | None = None
    last_modified: str | None = None
    new_items: int = 0
    digest: str | None = None


def record_response(state: FeedState, now_ms: int, response: PollResponse, scale: float = 1.0) -> None:
    """Update counters, validators and the churn detector after a successful poll (200 or 304)."""
    etag, new_items, digest = response.etag, response.new_items, response.digest
    sent_validators = bool(conditional_headers(state))
    state.polls += 1
    state.errors = 0
    if response.status == 304:
        state.not_modified += 1
        # A 304 changes nothing else: validators and guids stay as they were.
    else:
        if (
            sent_validators
            and state.etag
            and etag
            and etag != state.etag
            and new_items == 0
            and digest is not None
            and digest == state.last_digest
        ):
            state.etag_churn += 1
            if state.etag_churn >= CHURN_LIMIT:
                state.validators_useless = True
        elif new_items or digest != state.last_digest:
            state.etag_churn = 0
        state.etag = etag
        state.last_modified = response.last_modified
        state.last_digest = digest
    state.items_found += new_items
    record_observation(state, now_ms, new_items, scale)
    state.last_poll_ms = now_ms


def record_error(state: FeedState, now_ms: int) -> None:
    state.polls += 1
    state.errors += 1
    state.last_poll_ms = now_ms


def request_poll(
    state: FeedState,
    kind: str,
    now_ms: int,
    policy: SchedulePolicy,
    priority: int = 0,
    expires_at_ms: int | None = None,
) -> int | None:
    """Apply a PUSH / PING / BURST request. Returns ``now_ms`` when the caller must poll at once, else None (the
    caller then (re)arms its timer for ``state.next_poll_ms``, which this call may have moved earlier).

    At most one triggered poll per feed per 30 s: a PING inside the window is dropped; a PUSH or BURST inside it
    moves the next poll to the end of the window, unless a poll is already due by then."""
    if kind == "BURST" or priority > 0:
        until = expires_at_ms or (now_ms + BURST_DEFAULT_MS)
        state.burst_until_ms = max(state.burst_until_ms or 0, until)
    earliest = now_ms
    if state.last_triggered_ms is not None:
        earliest = max(now_ms, state.last_triggered_ms + policy.trigger_min_gap_ms)
    if state.next_poll_ms is not None and state.next_poll_ms <= earliest:
        return None  # a poll is already due at or before the earliest allowed trigger
    if earliest > now_ms:
        if kind == "PING":
            return None  # pings carry no content: one per 30 s is all they get
        # A push or burst inside the window: poll at the end of the window instead (never lost), and reserve
        # that slot so that further requests in the window add nothing.
        state.next_poll_ms = earliest
        state.last_triggered_ms = earliest
        return None
    state.last_triggered_ms = now_ms
    return now_ms
