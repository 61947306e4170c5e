"""WebSub (W3C Recommendation) and publisher-ping helpers shared by the ingest job, the origin and the sample world.

Reads nothing; writes nothing. Signatures: ``X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body with the
subscription's secret>``; verification uses ``hmac.compare_digest`` (constant time). Pings use the same scheme
with the publisher's key in ``X-Newsroom-Signature`` over the raw JSON body, which carries a timestamp: a ping
older than :data:`PING_MAX_AGE_MS` (or from the future by as much) is refused, so a captured ping cannot be replayed
later.

Subscriptions: the ingest job discovers rel=hub / rel=self (feed links or Link headers), creates a subscription
record (id, topic, hub, a fresh random secret) in the feed store, and POSTs hub.mode=subscribe with
``hub.callback = {callback_base}/v1/websub/{sub_id}.{callback_token(secret, sub_id)}``. The id is derivable from
public feed links, the token is not (an HMAC under the subscription's random secret): the origin answers a
verification GET or takes a delivery only on a callback path carrying the right token, for a subscription we asked
for and that is pending (a verification) or active with an unexpired lease (a delivery). Leases a hub grants are
clamped to [:data:`MIN_LEASE_S`, :data:`MAX_LEASE_S`]. Leases are renewed when less than a third remains (and at least
an hour before expiry), well before they lapse.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from transforms.common import MINUTE_MS

SIGNATURE_HEADER = "X-Hub-Signature"
PING_SIGNATURE_HEADER = "X-Newsroom-Signature"
PING_PUBLISHER_HEADER = "X-Newsroom-Publisher"
PING_MAX_AGE_MS = 5 * MINUTE_MS
DEFAULT_LEASE_S = 24 * 3600
MIN_LEASE_S = 3600  # a shorter lease would have us re-subscribe constantly
MAX_LEASE_S = 30 * 24 * 3600  # a longer one outlives any plausible hub promise (and keeps ms timestamps in range)
CALLBACK_TOKEN_CHARS = 32


def sign(secret: str | bytes, body: bytes, algo: str = "sha256") -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    return f"{algo}=" + hmac.new(key, body, getattr(hashlib, algo)).hexdigest()


def verify(secret: str | bytes | None, body: bytes, header: str | None) -> bool:
    """True only for a well-formed ``sha256=<hex>`` header matching ``body`` under ``secret``."""
    if not secret or not header or "=" not in header:
        return False
    algo, _, given = header.strip().partition("=")
    if algo.lower() not in ("sha256", "sha384", "sha512"):
        return False  # sha1 is accepted by the spec but too weak to trust here
    expected = sign(secret, body, algo.lower()).split("=", 1)[1]
    return hmac.compare_digest(expected.encode(), given.strip().lower().encode())


def new_secret() -> str:
    return secrets.token_hex(32)


def subscription_id(topic: str, hub: str) -> str:
    return hashlib.sha256(f"{hub}\x1f{topic}".encode()).hexdigest()[:24]


def callback_token(secret: str | bytes, sub_id: str) -> str:
    """The unguessable part of a callback path: HMAC-SHA256(secret, sub_id), hex, truncated (128 bits)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, b"callback\x1f" + sub_id.encode(), hashlib.sha256).hexdigest()[:CALLBACK_TOKEN_CHARS]


def callback_url(callback_base: str, sub_id: str, secret: str | bytes | None = None) -> str:
    """The hub.callback of a subscription; with its secret, the path carries :func:`callback_token` (required by
    the origin)."""
    tail = f"{sub_id}.{callback_token(secret, sub_id)}" if secret else sub_id
    return f"{callback_base.rstrip('/')}/v1/websub/{tail}"


def split_callback(path_id: str) -> tuple[str, str]:
    """``"{sub_id}.{token}"`` -> (sub_id, token); token is "" when absent."""
    sub_id, _, token = path_id.partition(".")
    return sub_id, token


def callback_ok(secret: str | bytes | None, sub_id: str, token: str) -> bool:
    """Constant-time check of a callback path's token."""
    if not secret or not token:
        return False
    return hmac.compare_digest(callback_token(secret, sub_id).encode(), token.encode())


def clamp_lease(raw, default: int = DEFAULT_LEASE_S) -> int:
    """A hub's hub.lease_seconds as a sane int: unparseable, non-finite, negative or huge values are clamped to
    [MIN_LEASE_S, MAX_LEASE_S] (``"1e20"`` -> MAX_LEASE_S, ``"-5"`` -> MIN_LEASE_S, ``"x"`` -> default)."""
    try:
        value = float(raw) if raw not in (None, "") else float(default)
    except (TypeError, ValueError):
        value = float(default)
    if value != value:  # NaN
        value = float(default)
    return int(min(max(value, MIN_LEASE_S), MAX_LEASE_S))


def needs_renewal(lease_expires_ms: int | None, lease_seconds: int | None, now_ms: int) -> bool:
    if not lease_expires_ms:
        return True
    remaining = lease_expires_ms - now_ms
    lease_ms = (lease_seconds or DEFAULT_LEASE_S) * 1000
    return remaining < max(lease_ms / 3, 3600 * 1000) or remaining <= 0
