"""Reader authentication for the private endpoints (For you, controls, events). Shared endpoints never look at it.

Pluggable: anything with ``verify(token) -> reader_id`` (raising :class:`AuthError`) can be set as
``app.config["NEWSROOM_TOKEN_VERIFIER"]`` (for example a verifier of the identity provider's JWTs in production).
The built-in :class:`HmacTokenVerifier` checks local tokens ``base64url({"sub", "exp"}) "." base64url(hmac)``
signed with ``NEWSROOM_TOKEN_SECRET``; :func:`issue_token` mints them (``newsroom serve --issue_token READER``).
Reader ids are pseudonymous (they reach profiles and read events, never a shared page).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time

import orjson

READER_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


class AuthError(Exception):
    """Missing, malformed, forged or expired credentials (answered 401)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def issue_token(secret: bytes | str, reader_id: str, ttl_s: int = 30 * 24 * 3600, now: float | None = None) -> str:
    if isinstance(secret, str):
        secret = secret.encode()
    if not READER_ID.match(reader_id):
        raise ValueError(f"reader id must match {READER_ID.pattern}, got {reader_id!r}")
    payload = orjson.dumps({"sub": reader_id, "exp": int((now or time.time()) + ttl_s)})
    return f"{_b64(payload)}.{_b64(hmac.new(secret, payload, hashlib.sha256).digest())}"


class HmacTokenVerifier:
    def __init__(self, secret: bytes | str, clock=time.time):
        self.secret = secret.encode() if isinstance(secret, str) else secret
        self.clock = clock

    def verify(self, token: str) -> str:
        try:
            body_text, mac_text = token.split(".")
            body, mac = _unb64(body_text), _unb64(mac_text)
        except (ValueError, TypeError):
            raise AuthError("malformed token") from None
        if not hmac.compare_digest(mac, hmac.new(self.secret, body, hashlib.sha256).digest()):
            raise AuthError("token signature does not match")
        try:
            claims = orjson.loads(body)
            reader, exp = claims["sub"], int(claims["exp"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            raise AuthError("malformed token claims") from None
        if exp < self.clock():
            raise AuthError("token expired")
        if not isinstance(reader, str) or not READER_ID.match(reader):
            raise AuthError("token subject is not a valid reader id")
        return reader


def bearer(header: str | None) -> str:
    if not header:
        raise AuthError("this endpoint needs Authorization: Bearer <token>")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("Authorization must be 'Bearer <token>'")
    return token.strip()
