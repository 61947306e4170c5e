"""Opaque, signed cursors (story pages and For you).

A cursor is ``base64url(json payload) + "." + base64url(hmac_sha256(secret, payload)[:12])``. Signing makes a
cursor tamper-evident, so the origin can trust the version and keyset it carries without storing anything. The
secret comes from config (``NEWSROOM_CURSOR_SECRET``) and must be the same on every origin process behind the CDN;
``newsroom serve`` passes one secret to all its workers.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import orjson


class CursorError(ValueError):
    """A cursor that is malformed, forged or meant for something else."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode(secret: bytes, kind: str, payload: list) -> str:
    body = orjson.dumps([kind, *payload])
    mac = hmac.new(secret, body, hashlib.sha256).digest()[:12]
    return f"{_b64(body)}.{_b64(mac)}"


def decode(secret: bytes, kind: str, cursor: str) -> list:
    try:
        body_text, mac_text = cursor.split(".")
        body, mac = _unb64(body_text), _unb64(mac_text)
    except (ValueError, TypeError):
        raise CursorError("malformed cursor") from None
    if not hmac.compare_digest(mac, hmac.new(secret, body, hashlib.sha256).digest()[:12]):
        raise CursorError("cursor signature does not match (forged, or minted by another deployment)")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise CursorError("malformed cursor") from None
    if not isinstance(data, list) or not data or data[0] != kind:
        raise CursorError(f"not a {kind} cursor")
    return data[1:]
