"""WebSub callbacks and publisher pings: authenticated hints that turn into FetchRequest messages.

Blueprint ``bp`` (registered by ``serving.create_app``; :func:`init_app` runs first):

- ``GET /v1/websub/<sub_id>.<token>``: the hub's verification of intent. Answered (200, the ``hub.challenge``
  echoed as text/plain) only on a callback path whose token matches (transforms.ingest.websub.callback_token: an
  HMAC under the subscription's random secret, so the path cannot be derived from public feed links), for a
  subscription the ingest job asked for and that awaits verification (pending, or a renewal), with the same
  ``hub.topic``; ``hub.mode=denied`` is taken only for a pending one. The lease (clamped to 1 h .. 30 days) is
  activated and a ``FetchRequest(kind=PUSH, reason="websub_lease", expires_at=...)``
  tells the ingest job to relax that feed's backstop poll. Anything else: 404, nothing echoed.
- ``POST /v1/websub/<sub_id>.<token>``: a content delivery. Unknown path, wrong token, a subscription not active
  or its lease expired: 404 before the body is read, nothing stored (only counted). Accepted (202) only with a
  valid ``X-Hub-Signature`` (HMAC
  SHA-256 of the raw body with the subscription's secret, compared in constant time); then one
  ``FetchRequest(kind=PUSH, feed_url=<feed>)`` is published: the pushed content is never taken as the article, the
  ingest job polls the feed and fetches the pages itself. Missing or forged signature: 403, counted and
  dead-lettered without the body (reason ``missing_signature`` / ``bad_signature``), nothing is fetched. Answered in milliseconds:
  no parsing, one bus publish.
- ``POST /v1/ping``: a publisher's ping. Headers ``X-Newsroom-Publisher: <publisher_id>`` and
  ``X-Newsroom-Signature: sha256=<HMAC of the raw body with that publisher's key>``; body JSON
  ``{"feed_url": ..., "at": <ms>}`` (at most 5 min old). The feed must belong to the publisher (its registry
  feeds, or a feed-store registry entry of the publisher), matched on its canonical URL (URL variants are one
  feed; an unknown feed is refused and creates nothing). At most one triggered poll per canonical feed per 30 s,
  counted in a token bucket in the feed store (every worker and instance shares it): a second ping inside the
  window gets 429 with Retry-After and triggers nothing. An accepted ping sent again while it is still fresh (a
  captured ping replayed) gets 409 ``replayed_ping``: each accepted ping is kept in the feed's replay ledger in the
  feed store (shared by every worker and instance) for ``PING_LEDGER_MS``, then deleted. A body that is not ``{feed_url: str, at: number}`` with a
  finite ``at``: 400. Unsigned or forged pings are dead-lettered without their body.

Configuration (``app.config``):

- ``NEWSROOM_BUS``: a :class:`stores.base.MessageBus` (default: the bus of ``app.extensions["newsroom"].stores``).
- ``WEBSUB_SUBSCRIPTIONS``: the subscription store, a :class:`stores.feeds.FeedStore` (default: opened from the
  ``NEWSROOM_BACKEND`` / ``NEWSROOM_DATA_DIR`` / ... keys, i.e. the same store the ingest job writes).
- ``NEWSROOM_PING_KEYS``: ``{publisher_id: key}`` (default {}: pings are refused).
- ``NEWSROOM_PUBLISHERS``: a :class:`transforms.publishers.PublisherRegistry` (default: the packaged one).
- ``NEWSROOM_FETCH_TOPIC``: default ``"fetch-requests"`` (a namespace prefix is applied when
  ``NEWSROOM_NAMESPACE`` is set); dead letters go to ``NEWSROOM_PUSH_DEAD_LETTER_TOPIC`` (default
  ``"dead-letter-push"``).
- ``NEWSROOM_PUSH_MAX_BYTES``: largest delivery or ping body read (default 1 MiB; larger: 413).
- ``NEWSROOM_CLOCK``: a callable returning ms since the epoch (tests).

Errors are RFC 9457 problems like the rest of the API (serving/http/conventions.py ``problem``): ``unknown_subscription``,
``bad_signature``, ``foreign_feed``, ``stale_ping``, ``url_too_long`` (a ``feed_url`` over
transforms.common.MAX_URL_CHARS, dead-lettered without the body), ``invalid_body``, ``invalid_parameter``, ``unauthorized``,
``body_too_large``, ``replayed_ping``, ``rate_limited`` (the ping's 429 also carries ``triggered: false`` and ``retry_after_s``). Only
the answers a hub or publisher acts on stay plain: the echoed challenge (text/plain) and 202s.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app, jsonify, request

from serving.http import conventions as http
from serving.state.context import EXTENSION
from transforms import common
from transforms.ingest import websub

log = logging.getLogger(__name__)

bp = Blueprint("push", __name__)

PING_WINDOW_MS = 30_000
# How long an accepted ping stays in the feed's replay ledger (stores.feeds record_ping): until it would be refused
# as stale anyway. A ping may be dated up to PING_MAX_AGE_MS ahead of our clock, so it stays fresh up to twice that
# after it arrived.
PING_LEDGER_MS = 2 * websub.PING_MAX_AGE_MS
PUSH_DEFAULTS = {
    "NEWSROOM_BUS": None,
    "WEBSUB_SUBSCRIPTIONS": None,
    "NEWSROOM_PING_KEYS": {},
    "NEWSROOM_PUBLISHERS": None,
    "NEWSROOM_FETCH_TOPIC": "fetch-requests",
    "NEWSROOM_PUSH_DEAD_LETTER_TOPIC": "dead-letter-push",
    "NEWSROOM_PUSH_MAX_BYTES": 1024 * 1024,
    "NEWSROOM_CLOCK": None,
}


class PushState:
    """Per-app resources: lazily opened stores, the ping window, counters."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()
        self.topics_ready: set = set()
        self.counters: dict[str, int] = {}

    def count(self, name: str) -> None:
        with self.lock:
            self.counters[name] = self.counters.get(name, 0) + 1

    def _store_config(self):
        from stores import config_from_mapping

        return config_from_mapping(self.app.config)

    @property
    def bus(self):
        c = self.app.config
        if c.get("NEWSROOM_BUS") is None:
            ext = self.app.extensions.get(EXTENSION)
            stores = getattr(ext, "stores", None)
            bus = getattr(stores, "bus", None)
            if bus is None:
                from stores import open_store

                bus = open_store("bus", self._store_config())
            c["NEWSROOM_BUS"] = bus
        return c["NEWSROOM_BUS"]

    @property
    def subscriptions(self):
        c = self.app.config
        if c.get("WEBSUB_SUBSCRIPTIONS") is None:
            from stores.feeds import open_feed_store

            c["WEBSUB_SUBSCRIPTIONS"] = open_feed_store(self._store_config())
        return c["WEBSUB_SUBSCRIPTIONS"]

    @property
    def registry(self):
        c = self.app.config
        if c.get("NEWSROOM_PUBLISHERS") is None:
            from transforms.publishers import default_registry

            c["NEWSROOM_PUBLISHERS"] = default_registry()
        return c["NEWSROOM_PUBLISHERS"]

    def topic(self, key: str) -> str:
        base = self.app.config[key]
        ns = self.app.config.get("NEWSROOM_NAMESPACE") or ""
        name = f"{ns}-{base}" if ns else base
        if name not in self.topics_ready:
            self.bus.ensure_topic(name)
            self.topics_ready.add(name)
        return name

    def now_ms(self) -> int:
        clock = self.app.config.get("NEWSROOM_CLOCK")
        return int(clock()) if clock else int(time.time() * 1000)


def init_app(app) -> None:
    for k, v in PUSH_DEFAULTS.items():
        app.config.setdefault(k, v)
    app.extensions["newsroom_push"] = PushState(app)


def _state() -> PushState:
    st = current_app.extensions.get("newsroom_push")
    if st is None:
        init_app(current_app)
        st = current_app.extensions["newsroom_push"]
    return st


def _text(status: int, body: str = "", headers: dict | None = None) -> Response:
    resp = Response(body, status=status, mimetype="text/plain")
    resp.headers["Cache-Control"] = "no-store"
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def _publish_request(
    st: PushState,
    kind: str,
    feed_url: str | None,
    reason: str,
    request_id: str,
    publisher_id: str | None = None,
    expires_at: int | None = None,
) -> None:
    st.bus.publish_record(
        st.topic("NEWSROOM_FETCH_TOPIC"),
        {
            "schema_version": 1,
            "request_id": request_id,
            "kind": kind,
            "feed_url": feed_url,
            "url": None,
            "publisher_id": publisher_id,
            "priority": 0,
            "reason": reason,
            "requested_at": st.now_ms(),
            "expires_at": expires_at,
        },
    )


def _dead_letter(st: PushState, reason: str, detail: str, key: str | None, payload: bytes) -> None:
    st.count(reason)
    log.warning("push rejected: %s (%s)", reason, key)
    try:
        # detail cut to 500 characters (push dead letters always were; the helper's own cap is 1,000) and the body
        # to the helper's 64 KiB, which it does not cut for bytes
        record = common.dead_letter("push", reason, detail[:500], key, payload[: common.MAX_PAYLOAD], st.now_ms())
        st.bus.publish_record(st.topic("NEWSROOM_PUSH_DEAD_LETTER_TOPIC"), record)
    except Exception:  # the rejection stands even if the dead-letter topic is unreachable
        log.exception("could not dead-letter a rejected push")


def _body(st: PushState) -> bytes | None:
    limit = int(current_app.config["NEWSROOM_PUSH_MAX_BYTES"])
    if request.content_length is not None and request.content_length > limit:
        return None
    data = request.stream.read(limit + 1)
    return None if len(data) > limit else data


def _subscription(st: PushState, path_id: str) -> dict | None:
    """The subscription a callback path names, only when the path carries its unguessable token."""
    sub_id, token = websub.split_callback(path_id)
    if not sub_id or len(path_id) > 200:
        return None
    sub = st.subscriptions.get_subscription(sub_id)
    if sub is None or not websub.callback_ok(sub.get("secret"), sub_id, token):
        return None
    return sub


def _awaiting_verification(sub: dict) -> bool:
    """Pending, or active with a renewal requested after the last verification: the only states in which a hub's
    verification is expected."""
    if sub.get("state") == "pending":
        return True
    return sub.get("state") == "active" and int(sub.get("requested_at") or 0) > int(sub.get("verified_at") or 0)


@bp.get("/v1/websub/<sub_id>")
def websub_verify(sub_id: str):
    st = _state()
    mode = request.args.get("hub.mode", "")
    topic = request.args.get("hub.topic", "")
    challenge = request.args.get("hub.challenge", "")
    sub = _subscription(st, sub_id)
    if sub is None or topic != sub.get("topic"):
        st.count("unknown_subscription")
        return http.problem(404, "unknown_subscription", "unknown subscription")
    sub_id = sub["sub_id"]
    if mode == "denied":
        if sub.get("state") != "pending":  # a hub may refuse only what we asked for and it has not granted
            st.count("unexpected_verification")
            return http.problem(404, "unknown_subscription", "verification not expected")
        st.subscriptions.put_subscription(
            dict(sub, state="denied", denied_reason=request.args.get("hub.reason", "")[:200])
        )
        return _text(200, "")
    if not challenge or len(challenge) > 1024:
        return http.problem(400, "invalid_parameter", "hub.challenge is required (at most 1024 characters)")
    if mode == "subscribe" and _awaiting_verification(sub):
        lease = websub.clamp_lease(request.args.get("hub.lease_seconds") or sub.get("lease_seconds"))
        now = st.now_ms()
        sub = st.subscriptions.activate_subscription(sub_id, lease, now)
        _publish_request(
            st,
            "PUSH",
            sub.get("feed_url") or topic,
            "websub_lease",
            f"lease-{sub_id}-{sub['lease_expires_ms']}",
            expires_at=sub["lease_expires_ms"],
        )
        return _text(200, challenge)
    if mode == "unsubscribe" and sub.get("state") == "unsubscribing":
        st.subscriptions.put_subscription(dict(sub, state="unsubscribed"))
        return _text(200, challenge)
    st.count("unexpected_verification")
    return http.problem(404, "unknown_subscription", "verification not expected")


@bp.post("/v1/websub/<sub_id>")
def websub_deliver(sub_id: str):
    """Checked before the body is read: the callback token, an active unexpired lease. Unknown, unauthenticated or
    expired deliveries are counted and answered 404 without storing anything (no dead letter: an anonymous client
    must not be able to fill a topic). A known subscription whose signature fails gets a dead letter without the
    body (reason, subscription, sizes)."""
    st = _state()
    if request.content_length is not None and request.content_length > int(
        current_app.config["NEWSROOM_PUSH_MAX_BYTES"]
    ):
        st.count("too_large")
        return http.problem(413, "body_too_large", "body larger than NEWSROOM_PUSH_MAX_BYTES")
    sub = _subscription(st, sub_id)
    if sub is None or sub.get("state") != "active" or int(sub.get("lease_expires_ms") or 0) <= st.now_ms():
        st.count("unknown_subscription")
        return http.problem(404, "unknown_subscription", "unknown subscription")
    body = _body(st)
    if body is None:
        st.count("too_large")
        return http.problem(413, "body_too_large", "body larger than NEWSROOM_PUSH_MAX_BYTES")
    signature = request.headers.get(websub.SIGNATURE_HEADER)
    if not signature:
        _dead_letter(st, "missing_signature", f"delivery of {len(body)} bytes", sub["sub_id"], b"")
        return http.problem(403, "bad_signature", "signature required")
    if not websub.verify(sub.get("secret"), body, signature):
        _dead_letter(st, "bad_signature", f"delivery of {len(body)} bytes", sub["sub_id"], b"")
        return http.problem(403, "bad_signature", "bad signature")
    digest = hashlib.sha256(body).hexdigest()[:16]
    _publish_request(st, "PUSH", sub.get("feed_url") or sub.get("topic"), "websub", f"push-{sub['sub_id']}-{digest}")
    st.count("push_accepted")
    return _text(202, "accepted")


def known_feed(st: PushState, publisher_id: str, feed_url: str) -> str | None:
    """The canonical URL of the publisher's registered feed that ``feed_url`` names, else None. Canonical: tracking
    parameters, fragment and default port dropped, scheme and host lower-cased (transforms.articles.urls.clean).
    Known: a feed of the publisher in the packaged registry, or a feed-store registry entry of that publisher (or on
    one of its hosts). Only known feeds get a rate bucket, so URL variants neither bypass the window nor add rows."""
    from transforms.articles.urls import clean

    if common.url_too_long(feed_url):
        return None
    canon = clean(feed_url)
    pub = st.registry.get(publisher_id)
    if canon is None or pub is None:
        return None
    for f in pub.feeds:
        url = f.get("url")
        if url and clean(url) == canon:
            return url
    for candidate in dict.fromkeys((canon, feed_url)):
        entry = st.subscriptions.get_feed(candidate)
        if entry is None:
            continue
        owner = entry.get("publisher_id")
        host = (urlsplit(candidate).hostname or "").lower()
        if owner == publisher_id or (owner is None and st.registry.for_host(host).publisher_id == publisher_id):
            return entry.get("url") or candidate
    return None


def _replayed(st, publisher_id: str, feed_url: str):
    """409 for a ping the ledger holds: counted and dead-lettered without its body (whoever replays a captured
    ping must not be able to fill the topic), nothing triggered, the feed's token untouched."""
    st.count("ping_replayed")
    _dead_letter(st, "replayed_ping", f"{publisher_id} replayed a ping of {feed_url[:300]}", publisher_id, b"")
    return http.problem(409, "replayed_ping", "this ping was accepted before; sign a new one (a new at)")


@bp.post("/v1/ping")
def ping():
    """Order: size, signature, body shape and age, feed known and owned, not a replay (the feed's ledger of
    accepted pings, checked before the bucket so that a replay takes no token), then the feed's shared bucket (one
    poll per PING_WINDOW_MS per canonical feed, across every worker and instance: stores.feeds take_ping_token);
    only a ping the bucket let through enters the ledger, so a ping answered 429 may be sent again."""
    st = _state()
    body = _body(st)
    if body is None:
        return http.problem(413, "body_too_large", "body larger than NEWSROOM_PUSH_MAX_BYTES")
    publisher_id = request.headers.get(websub.PING_PUBLISHER_HEADER, "")[:100]
    key = (current_app.config.get("NEWSROOM_PING_KEYS") or {}).get(publisher_id)
    signature = request.headers.get(websub.PING_SIGNATURE_HEADER)
    if not key or not websub.verify(key, body, signature):
        reason = "missing_signature" if not signature else "bad_signature"
        # No payload kept: an unauthenticated client must not be able to fill the dead-letter topic.
        _dead_letter(st, reason, f"ping from {publisher_id!r} ({len(body)} bytes)", publisher_id or None, b"")
        if not signature:
            return http.problem(401, "unauthorized", "unsigned ping")
        return http.problem(403, "bad_signature", "unauthenticated ping")
    try:
        doc = json.loads(body)
        feed_url = doc["feed_url"]
        at = doc.get("at") or 0
        if not isinstance(feed_url, str) or isinstance(at, bool) or not isinstance(at, (int, float)):
            raise TypeError("feed_url must be a string, at a number")
        if at != at or abs(at) > 1e15:  # NaN, or beyond any ms timestamp (1e400 parses as inf)
            raise ValueError("at out of range")
        at = int(at)
    except (ValueError, KeyError, TypeError, RecursionError):
        _dead_letter(st, "bad_ping", "unparseable ping body", publisher_id, body)
        return http.problem(400, "invalid_body", "body must be JSON {feed_url, at}")
    now = st.now_ms()
    if abs(now - at) > websub.PING_MAX_AGE_MS:
        _dead_letter(st, "stale_ping", f"at={at} now={now}", publisher_id, body)
        return http.problem(400, "stale_ping", "stale ping")
    if common.url_too_long(feed_url):
        _dead_letter(
            st, common.URL_TOO_LONG, f"{publisher_id} pinged {common.url_excerpt(feed_url)}", publisher_id, b""
        )
        return http.problem(400, common.URL_TOO_LONG, f"feed_url over {common.MAX_URL_CHARS} characters")
    canonical = known_feed(st, publisher_id, feed_url)
    if canonical is None:
        _dead_letter(st, "foreign_feed", f"{publisher_id} pinged {feed_url[:300]}", publisher_id, body)
        return http.problem(403, "foreign_feed", "feed does not belong to publisher")
    digest = hashlib.sha256(publisher_id.encode() + b"\x1f" + body).hexdigest()[:32]
    if st.subscriptions.ping_seen(canonical, digest):
        return _replayed(st, publisher_id, canonical)
    granted, wait = st.subscriptions.take_ping_token(canonical, 1000.0 / PING_WINDOW_MS, 1.0, now)
    if granted and not st.subscriptions.record_ping(canonical, digest, now, PING_LEDGER_MS):
        return _replayed(st, publisher_id, canonical)  # the same ping, accepted a moment ago by another worker
    if not granted:
        wait_s = max(1, int(wait + 0.999))
        st.count("ping_throttled")
        return http.problem(
            429,
            "rate_limited",
            "a poll of this feed was triggered less than 30 s ago",
            headers={"Retry-After": str(wait_s)},
            triggered=False,
            retry_after_s=wait_s,
        )
    feed_url = canonical
    _publish_request(
        st,
        "PING",
        feed_url,
        "ping",
        f"ping-{publisher_id}-{hashlib.sha256(body).hexdigest()[:16]}",
        publisher_id=publisher_id,
    )
    st.count("ping_accepted")
    resp = jsonify({"triggered": True})
    resp.status_code = 202
    resp.headers["Cache-Control"] = "no-store"
    return resp
