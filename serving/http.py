"""HTTP conventions shared by the blueprints: cache headers, ETags, the shared-endpoint guard and error bodies.

Reads request headers; writes nothing. The rules (DESIGN.md section 7):

- Shared responses are identical for every reader: ``Cache-Control: public, s-maxage=60, stale-while-revalidate=60,
  stale-if-error=3600`` (story pages ``s-maxage=30``), a strong ETag, no ``Vary`` (the origin never varies on a
  request header; compression is the CDN's), never ``Set-Cookie``.
- A request to a shared endpoint carrying ``Cookie`` or ``Authorization`` is rejected with 400 and
  ``Cache-Control: no-store``. Rejections must never be cached: the CDN's cache key ignores cookies, so a cached
  rejection would be served to every reader of that URL.
- Private responses (For you, controls) are ``Cache-Control: private, no-store``.
- Shared 404s are cached briefly (``public, max-age=0, s-maxage=10``) so a flood on a missing page stays at the
  edge; every other error is ``no-store``.
"""

from __future__ import annotations

import orjson
from flask import Response, current_app, request

PRIVATE = "private, no-store"
NO_STORE = "no-store"
NEGATIVE = "public, max-age=0, s-maxage=10"
JSON = "application/json"

SHARED_REJECT_MESSAGE = (
    "shared endpoints are public and identical for every reader: send no Cookie and no Authorization "
    "(a CDN in front of the origin must strip them)"
)


def shared_cache_control(s_maxage: int, swr: int = 60, sie: int = 3600) -> str:
    return f"public, s-maxage={s_maxage}, stale-while-revalidate={swr}, stale-if-error={sie}"


def error(status: int, message: str, cache_control: str = NO_STORE, headers: dict | None = None, **extra) -> Response:
    body = {"error": message, "status": status}
    body.update(extra)
    resp = Response(orjson.dumps(body), status=status, content_type=JSON)
    resp.headers["Cache-Control"] = cache_control
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def reject_personal_headers() -> Response | None:
    """before_request of every shared blueprint."""
    env = request.environ
    if env.get("HTTP_COOKIE") or env.get("HTTP_AUTHORIZATION"):
        carried = [h for h, k in (("Cookie", "HTTP_COOKIE"), ("Authorization", "HTTP_AUTHORIZATION")) if env.get(k)]
        return error(400, SHARED_REJECT_MESSAGE, carried=carried)
    return None


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Weak comparison (RFC 9110 13.1.2), as GET If-None-Match requires: a CDN may have weakened our tag."""
    if not if_none_match:
        return False
    if if_none_match == etag:
        return True
    if if_none_match.strip() == "*":
        return True
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag == etag:
            return True
    return False


def shared_response(body: bytes, etag: str, cache_control: str, status: int = 200) -> Response:
    """A shared answer (or its 304). Headers are the same for every reader."""
    if etag_matches(request.environ.get("HTTP_IF_NONE_MATCH"), etag):
        resp = Response(status=304)
    else:
        resp = Response(body, status=status, content_type=JSON)
    resp.headers["ETag"] = etag
    resp.headers["Cache-Control"] = cache_control
    return resp


def not_ready() -> Response:
    retry = str(current_app.config["NEWSROOM_RETRY_AFTER_S"])
    return error(503, "pages are not loaded yet", headers={"Retry-After": retry})


def parse_limit(raw: str | None, maximum: int) -> int | None:
    """None when absent; raises ValueError with a message when invalid."""
    if raw is None:
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= maximum:
        raise ValueError(f"limit must be an integer from 1 to {maximum}, got {raw!r}")
    return int(raw)
