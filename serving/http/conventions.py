"""HTTP conventions shared by the blueprints: cache headers, ETags, the shared-endpoint guard and error bodies.

Reads request headers; writes nothing. The rules (DESIGN.md section 7):

- Shared responses are identical for every reader: ``Cache-Control: public, s-maxage=60`` (story and topic pages
  ``s-maxage=30``, city pages 300: serving/api/topics.py), a strong ETag, no ``Vary`` (the origin never varies on a request header; compression is the
  CDN's), never ``Set-Cookie``. No ``stale-while-revalidate`` and no ``stale-if-error``, on purpose: Cloud CDN
  ignores ``stale-if-error`` and applies its own serve-while-stale policy (terraform/modules/origin: an hour, for
  asynchronous revalidation and for an origin that fails) only to responses *without* ``stale-while-revalidate``; a
  directive here would cut the hour down to its value. Browsers get no stale directive either, so a returning reader
  revalidates (ETag, 304) instead of being shown an old page.
- Every shared answer carries ``Cache-Tag``: its query-less path's tag (:func:`stores.cdn.cache_tag`), which a
  purge invalidates in ~10 s at Cloud CDN, where an invalidation by path takes minutes.
- Content-versioned web assets (``/assets/{hash}/{name}`` whose hash is the bytes') are ``public,
  max-age=31536000, immutable``: a new version is a new URL.
- A request to a shared endpoint carrying ``Cookie`` or ``Authorization`` is rejected with 400 and
  ``Cache-Control: no-store``. Rejections must never be cached: the CDN's cache key ignores cookies, so a cached
  rejection would be served to every reader of that URL.
- Private responses (For you, controls) are ``Cache-Control: private, no-store``.
- Shared 404s are cached briefly (``public, max-age=0, s-maxage=10``) so a flood on a missing page stays at the
  edge; every other error is ``no-store``. An edition or section the editions file configures is never a 404:
  until its first page is live the API answers 503 ``warming_up`` (Retry-After, no-store) and the web page a
  "warming up" page (200, ``public, max-age=0, s-maxage=5``).
- Every error is an RFC 9457 problem (``Content-Type: application/problem+json``): ``type``
  (``https://newsroom.example/problems/<code>``), ``title`` (fixed per code), ``status``, ``detail`` (this
  occurrence) and ``code``, a stable machine name from :data:`PROBLEMS`; some add members (``carried``,
  ``rejected``, ``triggered``, ``retry_after_s``).
- CORS: shared GET/HEAD answers (and their errors and 304s) carry ``Access-Control-Allow-Origin: *`` and expose
  ETag, Retry-After and Newsroom-Cursor-Rebased; an OPTIONS preflight on a shared URL answers 204. The value is the
  same for every Origin, so no ``Vary: Origin`` is needed and the CDN keeps one copy. No credentials are ever
  allowed. Private endpoints (For you, /v1/me/*, /v1/events) send no CORS header at all: a browser on another
  origin cannot call them.
"""

from __future__ import annotations

import orjson
from flask import Blueprint, Response, current_app, request

PRIVATE = "private, no-store"
NO_STORE = "no-store"
NEGATIVE = "public, max-age=0, s-maxage=10"
# A configured edition (or section) that is not live yet: an HTML "warming up" page, 200, that the edge keeps a few
# seconds at most and never serves stale, so the first real page shows as soon as it is loaded.
WARMING = "public, max-age=0, s-maxage=5"
JSON = "application/json"
PROBLEM_JSON = "application/problem+json"
PROBLEM_BASE = "https://newsroom.example/problems/"

# code -> title: the stable part of every problem (README lists them). ``detail`` says what happened this time.
PROBLEMS = {
    "personal_headers": "Shared endpoints take no Cookie and no Authorization",
    "invalid_limit": "Invalid limit",
    "invalid_edition": "Invalid edition",
    "invalid_cursor": "Invalid cursor",
    "invalid_parameter": "Invalid query parameter",
    "invalid_body": "Invalid request body",
    "no_valid_event": "No valid event in the batch",
    "bad_request": "Bad request",
    "unauthorized": "Missing or invalid bearer token",
    "forbidden": "Forbidden",
    "not_found": "No such endpoint",
    "unknown_edition": "Unknown edition",
    "unknown_page": "Unknown section page",
    "unknown_story": "Unknown story",
    "unknown_storyline": "Unknown storyline",
    "invalid_topic": "Invalid topic id",
    "unknown_topic": "No live story about this topic",
    "unknown_subscription": "Unknown or unexpected WebSub subscription",
    "bad_signature": "Missing or forged signature",
    "foreign_feed": "Feed does not belong to the publisher",
    "stale_ping": "Stale ping",
    "url_too_long": "URL too long",
    "replayed_ping": "Replayed ping",
    "method_not_allowed": "Method not allowed",
    "profile_limit": "Profile limit reached",
    "profile_deleted": "Profile deleted after this request was accepted",
    "body_too_large": "Request body too large",
    "unsupported_media_type": "Unsupported media type",
    "rate_limited": "Too many requests",
    "not_ready": "Pages are not loaded yet",
    "warming_up": "Edition not live yet",
    "no_publishers": "No publishers for this edition yet",
    "overloaded": "Shedding load",
    "store_unavailable": "Profile store unavailable",
    "story_unavailable": "Story coverage temporarily unavailable",
    "storyline_unavailable": "Storyline temporarily unavailable",
    "queue_full": "Event queue full",
    "internal_error": "Internal server error",
}
# CORS on shared answers (module docstring). Preflights may be cached by the browser for a day.
CORS_EXPOSE = "ETag, Retry-After, Newsroom-Cursor-Rebased"
CORS_HEADERS = (("Access-Control-Allow-Origin", "*"), ("Access-Control-Expose-Headers", CORS_EXPOSE))
PREFLIGHT_HEADERS = (
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS"),
    ("Access-Control-Allow-Headers", "If-None-Match"),
    ("Access-Control-Max-Age", "86400"),
)

SHARED_REJECT_MESSAGE = (
    "shared endpoints are public and identical for every reader: send no Cookie and no Authorization "
    "(a CDN in front of the origin must strip them)"
)


IMMUTABLE = "public, max-age=31536000, immutable"


def shared_cache_control(s_maxage: int) -> str:
    """A shared page's Cache-Control: the edge TTL only; the stale policy is the CDN's (module docstring)."""
    return f"public, s-maxage={int(s_maxage)}"


def tag_shared(resp: Response) -> Response:
    """after_request of the app: a shared answer (public Cache-Control) gets its path's cache tag."""
    if request.method in ("GET", "HEAD") and resp.headers.get("Cache-Control", "").startswith("public"):
        from stores.cdn import cache_tag

        resp.headers["Cache-Tag"] = cache_tag(request.path)
    return resp


def problem(
    status: int, code: str, detail: str, cache_control: str = NO_STORE, headers: dict | None = None, **extra
) -> Response:
    """An RFC 9457 problem answer; ``code`` must be a key of :data:`PROBLEMS`."""
    body = {"type": PROBLEM_BASE + code, "title": PROBLEMS[code], "status": status, "detail": detail, "code": code}
    body.update(extra)
    resp = Response(orjson.dumps(body), status=status, content_type=PROBLEM_JSON)
    resp.headers["Cache-Control"] = cache_control
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def shared_preflight() -> Response | None:
    """before_request of every shared blueprint (first, so that the answer never depends on request headers): an
    OPTIONS request is the CORS preflight, answered 204 for any Origin."""
    if request.method != "OPTIONS":
        return None
    resp = Response(status=204)
    for k, v in PREFLIGHT_HEADERS:
        resp.headers[k] = v
    resp.headers["Allow"] = "GET, HEAD, OPTIONS"
    resp.headers["Cache-Control"] = NO_STORE
    return resp


def shared_cors(resp: Response) -> Response:
    """after_request of every shared blueprint: any origin may read the answer (errors and 304s too)."""
    if "Access-Control-Allow-Methods" not in resp.headers:
        for k, v in CORS_HEADERS:
            resp.headers[k] = v
    return resp


def reject_personal_headers() -> Response | None:
    """before_request of every shared blueprint."""
    env = request.environ
    if env.get("HTTP_COOKIE") or env.get("HTTP_AUTHORIZATION"):
        carried = [h for h, k in (("Cookie", "HTTP_COOKIE"), ("Authorization", "HTTP_AUTHORIZATION")) if env.get(k)]
        return problem(400, "personal_headers", SHARED_REJECT_MESSAGE, carried=carried)
    return None


def shared_blueprint(name: str, import_name: str) -> Blueprint:
    """A blueprint of shared (edge-cached, same for every reader) endpoints: OPTIONS is the CORS preflight, any origin
    may read its answers, and a request carrying a cookie or Authorization is refused, so that nothing personal can
    reach a cached page. Every shared API blueprint is made here, so the rule is stated once."""
    bp = Blueprint(name, import_name)
    bp.before_request(shared_preflight)
    bp.before_request(reject_personal_headers)
    bp.after_request(shared_cors)
    return bp


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


def retry_later(code: str, detail: str, cache_control: str = NO_STORE) -> Response:
    """A 503 problem with the origin's Retry-After (``NEWSROOM_RETRY_AFTER_S``): the answer will come, soon."""
    retry = str(current_app.config["NEWSROOM_RETRY_AFTER_S"])
    return problem(503, code, detail, cache_control=cache_control, headers={"Retry-After": retry})


def not_ready() -> Response:
    return retry_later("not_ready", "pages are not loaded yet")


def warming_up(what: str) -> Response:
    """503 for a configured edition or section that has no live page yet: honest (it exists and will come), never
    cached (a cached 404 would hide the first page from readers for the edge's negative TTL)."""
    return retry_later("warming_up", f"{what} is configured and not live yet: its first page has not passed validation")


def parse_limit(raw: str | None, maximum: int) -> int | None:
    """None when absent; raises ValueError with a message when invalid."""
    if raw is None:
        return None
    # length first: int() of a long digit string is slow, and over 4,300 digits raises
    if not raw.isdigit() or len(raw) > len(str(maximum)) or not 1 <= int(raw) <= maximum:
        raise ValueError(f"limit must be an integer from 1 to {maximum}, got {raw!r}")
    return int(raw)
