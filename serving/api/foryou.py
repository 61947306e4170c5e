"""Private endpoints: the For you feed, the reader's controls and read events.

Reads the in-memory candidate pools and the reader's profile (through :class:`serving.personal.readers.ProfileCache`);
controls write the profile store; events go to the background folder. Every response here is
``Cache-Control: private, no-store`` and needs ``Authorization: Bearer <token>`` (:mod:`serving.http.auth`).

Every handler runs inside the process's private-request slots (:mod:`serving.http.shedding`): under overload the
controls and events answer 503 with Retry-After first, while the shared blueprints, which take no slot, keep
answering. For you never answers 503 for overload: without a slot it steps down a ladder (:func:`_shed`), each
rung recorded in ``degraded`` and the ``Newsroom-Degraded`` header:

1. full re-rank (a slot): every source, co-visitation and "readers like you" (MinHash user clusters,
   serving/personal/clusters.py) included, trend blended; ``degraded`` null (or as below).
2. ``cached_candidates`` (no slot, the reader's profile in the origin's cache within its TTL): the same
   in-memory re-rank of the pool without collaborative sources (no co-visitation, no user clusters, no store read
   at all; the trend blend stays, it is in memory); hidden
   sources and "fewer like this" still apply. About the CPU of rung 1 (0.5 ms median), no I/O, no wait.
3. ``edition_list`` (no slot and no cached profile): the edition's own order (the shared page's), what the
   cursor already served left out, reason ``edition``; no profile is read, so nothing personal applies.

- ``GET  /v1/feed/for-you?edition=&cursor=&limit=``  the edition's pool re-ranked for the reader, each item with a
  reason; the signed cursor carries what the reader was already shown (serving/personal/feed.py: no item twice, none
  skipped while the pool moves). ``degraded`` is null, or why the page is not the personal ranking:
  ``profile_unavailable`` (privacy unknown: non-personal page), ``rank_timeout`` (recency fallback), or a rung of
  the load ladder above (``cached_candidates``, ``edition_list``).
- ``GET|DELETE /v1/me/profile`` (DELETE forgets the reader entirely); ``POST|DELETE /v1/me/follows`` (kind
  topic|source|place|entity|storyline, value: a section id, publisher id, region code, entity id such as
  ``org:isro`` or ``{language}/{storyline id}``: a storyline's feed for the OPML export, no ranking term);
  ``POST|DELETE /v1/me/hidden-sources``; ``POST /v1/me/fewer-like-this``; ``DELETE /v1/me/history``;
  ``POST /v1/me/history/pause`` and ``/resume``.
- ``POST /v1/events``: up to 100 ReadEvent records (schemas/avro/read_event.avsc, ``reader_id`` comes from the
  token), validated one by one with schemas.codec; 202 with accepted/rejected counts.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from dataclasses import dataclass

import orjson
from flask import Blueprint, Response, current_app, g, request

from schemas import codec
from serving.http import auth
from serving.http import conventions as http
from serving.http import cursor as cursors
from serving.http.shedding import Overloaded
from serving.personal import feed
from serving.personal.ranking import FEWER_KEPT, FeedSlice, ProfileView, RankTimeout, rank, recency_fallback
from serving.personal.readers import vector_of
from serving.state.context import services
from stores import profile_versions as versions
from stores.base import StoreError
from transforms.articles.entities import topic_name

bp = Blueprint("foryou", __name__)
log = logging.getLogger(__name__)

EDITION = re.compile(r"^[a-z]{2}-[a-z]{2,3}$")
# "Not blank" spelled as an explicit class: ECMA-262 (JSON Schema) and Python disagree on what \s covers.
NOT_BLANK_CLASS = "[^\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]"
NOT_BLANK = re.compile(NOT_BLANK_CLASS)
FEED_PAGE = 20
FEED_MAX = 50
MAX_EVENTS = 100
MAX_FOLLOWS = 200
MAX_VALUE = 200
EVENT_PAST_MS = 30 * 24 * 3600 * 1000
EVENT_FUTURE_MS = 5 * 60 * 1000
MAX_ID = 128  # event_id and article_id: stored with each read, so bounded
FOLLOW_KINDS = {
    "topic": "topics",
    "source": "sources",
    "place": "places",
    "entity": "entities",
    "storyline": "storylines",  # "{language}/{id}": its feed in the OPML export (serving/web/opml.py)
}


@bp.after_request
def _private(resp: Response) -> Response:
    resp.headers["Cache-Control"] = http.PRIVATE
    return resp


def _rate_limited(ext, reader: str) -> Response | None:
    """429 when the reader's write budget (a token bucket in the profile store, shared by every worker and
    instance) is spent; None to go on. A store error lets the request through: the budget protects the store, and
    the request itself will meet the same store."""
    cfg = current_app.config
    take = getattr(ext.profiles, "take_token", None)
    if take is None:
        return None
    try:
        ok, wait_s = take(reader, float(cfg["NEWSROOM_READER_RATE"]), float(cfg["NEWSROOM_READER_BURST"]))
    except StoreError:
        return None
    if ok:
        return None
    retry = str(max(1, int(wait_s + 0.999)))
    return http.problem(
        429,
        "rate_limited",
        "too many writes from this reader; retry later",
        cache_control=http.PRIVATE,
        headers={"Retry-After": retry},
    )


def private(fn, slotted: bool = True):
    """Token check, the per-reader write budget, then the handler in a private slot (``slotted``; For you takes
    its own and falls down its ladder instead of a 503) with overload, body and store errors as problems."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        ext = services()
        g.accepted_at = versions.now_ms()  # the version this request's writes carry (stores/profile_versions.py)
        try:
            reader = ext.verifier.verify(auth.bearer(request.headers.get("Authorization")))
        except auth.AuthError as exc:
            return http.problem(
                401,
                "unauthorized",
                str(exc),
                cache_control=http.PRIVATE,
                headers={"WWW-Authenticate": 'Bearer realm="newsroom"'},
            )
        if request.method != "GET":
            limited = _rate_limited(ext, reader)
            if limited is not None:
                return limited
        try:
            if not slotted:
                return fn(reader, *args, **kwargs)
            with ext.shedder.slot():
                return fn(reader, *args, **kwargs)
        except TooLarge as exc:
            return http.problem(413, "body_too_large", str(exc), cache_control=http.PRIVATE)
        except Overloaded:
            return http.retry_later(
                "overloaded", "For you is shedding load; shared pages are unaffected", cache_control=http.PRIVATE
            )
        except StoreError as exc:
            return http.retry_later(
                "store_unavailable", f"profile store unavailable: {exc}", cache_control=http.PRIVATE
            )
        except versions.Superseded:
            detail = "the profile was deleted after this request was accepted; nothing was changed"
            return http.problem(409, "profile_deleted", detail, cache_control=http.PRIVATE)

    return wrapper


class TooLarge(Exception):
    """A private body over NEWSROOM_MAX_BODY_BYTES (answered 413, never parsed)."""


def json_depth_ok(doc, limit: int) -> bool:
    """True when no container in ``doc`` is nested deeper than ``limit`` (iterative: no recursion to exhaust)."""
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = node.values()
        elif not isinstance(node, list):
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in node if isinstance(child, (dict, list)))
    return True


def json_body() -> dict:
    """The request's JSON object. Size first (413 from the declared length or while reading, before any parsing),
    then orjson (no float beyond double: 1e400 is a parse error, as is nesting beyond 1,024), then the depth bound
    NEWSROOM_MAX_JSON_DEPTH (our bodies are 3 levels deep). Every failure is a ValueError (400) or TooLarge (413)."""
    limit = int(current_app.config["NEWSROOM_MAX_BODY_BYTES"])
    if request.content_length is not None and request.content_length > limit:
        raise TooLarge(f"body larger than {limit} bytes")
    raw = request.stream.read(limit + 1)
    if len(raw) > limit:
        raise TooLarge(f"body larger than {limit} bytes")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ValueError("body must be a JSON object") from None
    if not isinstance(data, dict):
        raise ValueError("body must be a JSON object")
    if not json_depth_ok(data, int(current_app.config["NEWSROOM_MAX_JSON_DEPTH"])):
        raise ValueError(f"body nests deeper than {current_app.config['NEWSROOM_MAX_JSON_DEPTH']} levels")
    return data


def _ok(doc, status: int = 200) -> Response:
    return Response(orjson.dumps(doc), status=status, content_type=http.JSON)


@bp.get("/v1/feed/for-you")
@functools.partial(private, slotted=False)
def for_you(reader: str):
    ext = services()
    page = feed_page(ext, reader)
    if isinstance(page, Response):
        return page
    parts = []
    language = page.edition.partition("-")[2]
    for n, (i, reason) in enumerate(page.ranked, start=page.depth + 1):
        named = orjson.dumps(reason) + b',"reason_name":' + orjson.dumps(reason_name(reason, language))
        parts.append(page.pool.item_bytes[i] + b',"rank":%d,"reason":' % n + named + b"}")
    head = orjson.dumps(
        {
            "schema": "newsroom.for_you/v1",
            "edition": page.edition,
            "pool_version": page.pool.version,
            "degraded": page.degraded,
        }
    )
    body = head[:-1] + b',"items":[' + b",".join(parts) + b'],"next_cursor":' + orjson.dumps(page.next_cursor) + b"}"
    return page.headers(Response(body, content_type=http.JSON))


@dataclass(frozen=True)
class FeedPage:
    """One page of a reader's For you feed: ``ranked`` (pool index, reason) pairs from position ``depth`` on."""

    edition: str
    pool: object
    ranked: list
    depth: int
    next_cursor: str | None
    degraded: str | None
    rebased: int | None

    def headers(self, resp: Response) -> Response:
        if self.rebased is not None:
            resp.headers["Newsroom-Cursor-Rebased"] = f"v{self.rebased}"
        if self.degraded is not None:
            resp.headers["Newsroom-Degraded"] = self.degraded
        return resp


def feed_page(ext, reader: str) -> FeedPage | Response:
    """The request's page of the reader's feed (``edition``, ``cursor``, ``limit`` from the query), down the load
    ladder without a private slot; or the problem answer of a bad request. The JSON feed and the web page's cards
    (serving/web/foryou_cards.py) are the same page."""
    cat = ext.holder.current
    edition = request.args.get("edition")
    if not edition or not EDITION.match(edition):
        return http.problem(400, "invalid_edition", "edition is required and must look like 'us-en'")
    try:
        limit = http.parse_limit(request.args.get("limit"), FEED_MAX) or FEED_PAGE
    except ValueError as exc:
        return http.problem(400, "invalid_limit", str(exc))
    pool = cat.pools.get(edition)
    if pool is None:
        if not cat.ready:
            return http.not_ready()
        return http.problem(404, "unknown_edition", f"no candidate pool for edition {edition}")
    raw = request.args.get("cursor")
    try:
        pos = feed.read(ext.cursor_secret, raw, edition, pool, ext.pool_history) if raw else feed.start(pool)
    except cursors.CursorError as exc:
        return http.problem(400, "invalid_cursor", f"invalid cursor: {exc}")
    limit = min(limit, feed.MAX_DEPTH - pos.depth)
    try:
        with ext.shedder.slot():
            ranked, degraded = _ranked(ext, pool, ext.profile_cache.view(reader), pos, limit)
    except Overloaded:
        ranked, degraded = _shed(ext, pool, reader, pos, limit)
    next_cursor = feed.advance(ext.cursor_secret, edition, pool, pos, [i for i, _ in ranked], limit)
    return FeedPage(edition, pool, ranked, pos.depth, next_cursor, degraded, pos.rebased)


def _shed(ext, pool, reader: str, pos, limit: int) -> tuple[list[tuple[int, str]], str]:
    """For you without a private slot (see the module docstring): rung 2 with a cached profile, else rung 3."""
    view = ext.profile_cache.cached(reader)
    if view is not None and view.known:
        try:
            deadline = time.monotonic() + ext.rank_budget_s
            return rank(pool, view, FeedSlice(pos.depth, limit, pos.served), deadline=deadline), "cached_candidates"
        except Exception:  # RankTimeout or a bug: the next rung, never a 503
            log.warning("For you under load: cached re-rank failed, edition list", exc_info=True)
    return edition_list(pool, limit, pos.served), "edition_list"


def edition_list(pool, limit: int, served) -> list[tuple[int, str]]:
    """The last rung: the pool in the edition's own order (index order), served items left out, reason ``edition``."""
    out = []
    for i in range(len(pool.story_ids)):
        if served is not None and served[i]:
            continue
        out.append((i, "edition"))
        if len(out) == limit:
            break
    return out


def _ranked(ext, pool, view, pos, limit: int) -> tuple[list[tuple[int, str]], str | None]:
    """The page's (candidate, reason) pairs and why it is degraded (None when it is not).

    Privacy unknown (the profile store down, nothing cached): the page is non-personal (no profile applied, so
    nothing about the reader shows), flagged ``profile_unavailable``. Co-visitation (neighbours of the reader's
    newest reads) is one more term of the personal ranking; its store failing only drops the term (fail-open). A re-rank past its budget, or one that fails:
    the recency fallback, flagged ``rank_timeout``; hidden sources still apply to it.
    """
    page = FeedSlice(pos.depth, limit, pos.served)
    if not view.known:
        return rank(pool, ProfileView(reader_id=view.reader_id), page), "profile_unavailable"
    try:
        deadline = time.monotonic() + ext.rank_budget_s
        covisit = ext.covisit_cache.boost(view) if ext.covisit_cache is not None else None
        clusters = ext.cluster_cache.boost(view) if ext.cluster_cache is not None else None
        ranked = rank(pool, view, page, deadline=deadline, covisit=covisit, clusters=clusters)
        return ranked, None
    except RankTimeout:
        log.warning("For you re-rank over its %.0f ms budget: recency fallback", ext.rank_budget_s * 1000)
    except Exception:  # a ranking bug must not cost the reader the page
        log.exception("For you re-rank failed: recency fallback")
    return recency_fallback(pool, view, limit, pos.served), "rank_timeout"


def summary(reader: str, doc: dict | None, reads: int | None = None) -> dict:
    doc = doc or {}
    follows = doc.get("follows") or {}
    return {
        "reader_id": reader,
        "follows": {k: list(follows.get(k) or []) for k in FOLLOW_KINDS.values()},
        "hidden_sources": list(doc.get("hidden_sources") or []),
        "fewer_like": [f["story_id"] for f in doc.get("fewer") or []],
        "paused": bool(doc.get("paused")),
        "reads": len(doc.get("reads") or []) if reads is None else reads,
        "revision": int(doc.get("revision") or 0),
    }


def _update(reader: str, fn) -> Response:
    """Apply a control: refused (409 profile_deleted) when the reader deleted the profile after it was accepted."""
    ext = services()
    doc = ext.profiles.update(reader, fn, accepted_at=g.accepted_at)
    ext.profile_cache.write_through(reader, doc)
    cached = ext.profile_cache.doc(reader) or {}
    return _ok(summary(reader, doc, reads=len(cached.get("reads") or [])))


def _add_to(reader: str, pick, value: str, what: str) -> Response:
    """Add ``value`` to the list ``pick(doc)`` of the reader's profile (follows of a kind, hidden sources), at most
    MAX_FOLLOWS of them (409 profile_limit past it, naming ``what``); adding what is there already writes nothing."""

    def apply(doc):
        items = pick(doc)
        if value in items:
            return None
        if len(items) >= MAX_FOLLOWS:
            raise ValueError(f"at most {MAX_FOLLOWS} {what}")
        items.append(value)
        return doc

    try:
        return _update(reader, apply)
    except ValueError as exc:
        return http.problem(409, "profile_limit", str(exc))


def _remove_from(reader: str, pick, value: str) -> Response:
    """Remove ``value`` from the list ``pick(doc)`` of the reader's profile; removing what is absent writes nothing."""

    def apply(doc):
        items = pick(doc)
        if value not in items:
            return None
        items.remove(value)
        return doc

    return _update(reader, apply)


@bp.get("/v1/me/profile")
@private
def profile(reader: str):
    ext = services()
    doc = ext.profiles.get(reader)
    return _ok(summary(reader, doc))


def _value(data: dict, key: str) -> str:
    v = data.get(key)
    # Same rule as the OpenAPI schema (pattern NOT_BLANK_CLASS, maxLength): one definition on both sides.
    if not isinstance(v, str) or not NOT_BLANK.search(v) or len(v) > MAX_VALUE:
        raise ValueError(f"{key} must be a string of at most {MAX_VALUE} characters, not blank")
    return v


def _follow_args(data: dict) -> tuple[str, str]:
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in FOLLOW_KINDS:
        raise ValueError(f"kind must be one of {', '.join(FOLLOW_KINDS)}")
    return FOLLOW_KINDS[kind], _value(data, "value")


@bp.post("/v1/me/follows")
@private
def follow(reader: str):
    try:
        field, value = _follow_args(json_body())
    except ValueError as exc:
        return http.problem(400, "invalid_body", str(exc))

    return _add_to(reader, lambda doc: doc["follows"][field], value, "follows per kind")


@bp.delete("/v1/me/follows")
@private
def unfollow(reader: str):
    try:
        field, value = _follow_args(dict(request.args))
    except ValueError as exc:
        return http.problem(400, "invalid_parameter", str(exc))

    return _remove_from(reader, lambda doc: doc["follows"][field], value)


@bp.post("/v1/me/hidden-sources")
@private
def hide_source(reader: str):
    try:
        source = _value(json_body(), "source")
    except ValueError as exc:
        return http.problem(400, "invalid_body", str(exc))

    return _add_to(reader, lambda doc: doc["hidden_sources"], source, "hidden sources")


@bp.delete("/v1/me/hidden-sources")
@private
def unhide_source(reader: str):
    try:
        source = _value(dict(request.args), "source")
    except ValueError as exc:
        return http.problem(400, "invalid_parameter", str(exc))

    return _remove_from(reader, lambda doc: doc["hidden_sources"], source)


@bp.post("/v1/me/fewer-like-this")
@private
def fewer_like_this(reader: str):
    ext = services()
    try:
        data = json_body()
        story_id = _value(data, "story_id")
        edition = data.get("edition") or ""
        if not isinstance(edition, str) or (edition and not EDITION.match(edition)):
            raise ValueError("edition must look like 'us-en'")
        if not re.match(r"^[0-9]{1,20}$", story_id):
            raise ValueError("story_id must be a decimal story id")
    except ValueError as exc:
        return http.problem(400, "invalid_body", str(exc))
    vector = vector_of(ext.holder.current, edition, story_id)

    def apply(doc):
        fewer = [f for f in doc["fewer"] if f.get("story_id") != story_id]
        fewer.append({"story_id": story_id, "vector": [round(x, 4) for x in vector] if vector else None})
        doc["fewer"] = fewer[-FEWER_KEPT:]
        return doc

    return _update(reader, apply)


@bp.delete("/v1/me/profile")
@private
def delete_profile(reader: str):
    """Forget the reader: its user-cluster memberships first (a failure answers 503 before anything is gone, so a
    retry completes it), the stored profile, every read, the interest vector and the rate bucket, then the cached
    copies in this process (other processes hold them at most NEWSROOM_PROFILE_TTL_S). The store keeps a tombstone
    with the delete's time: no read or control accepted before it (one still in the fold queue, a retried batch, a
    control racing this request) is written afterwards (stores/profile_versions.py)."""
    ext = services()
    if ext.cluster_cache is not None:
        ext.cluster_cache.forget(reader)
    ext.profiles.delete(reader)
    ext.profile_cache.invalidate(reader)
    return Response(status=204)


@bp.delete("/v1/me/history")
@private
def delete_history(reader: str):
    """Every read, the interest vector and "fewer like this" go, and no read accepted before now is recorded later
    (one write: stores/profile_versions.py)."""
    ext = services()
    if ext.cluster_cache is not None:  # the clusters were computed from the history being deleted
        ext.cluster_cache.forget(reader)
    doc = ext.profiles.delete_history(reader)
    ext.profile_cache.invalidate(reader)
    return _ok(summary(reader, doc, reads=0))


def _pause(reader: str, paused: bool) -> Response:
    """A pause starts when it was accepted, a resume ends when it is applied: a read accepted in between (even one
    folded after the resume) is never recorded."""
    at = g.accepted_at if paused else versions.now_ms()
    return _update(reader, lambda doc: versions.set_paused(doc, paused, at))


@bp.post("/v1/me/history/pause")
@private
def pause_history(reader: str):
    return _pause(reader, True)


@bp.post("/v1/me/history/resume")
@private
def resume_history(reader: str):
    return _pause(reader, False)


def _event(raw, reader: str, now_ms: int) -> dict:
    if not isinstance(raw, dict):
        raise codec.CodecError("event must be an object")
    e = dict(raw)
    if e.get("reader_id", reader) != reader:
        raise codec.CodecError("reader_id differs from the token's reader")
    e["reader_id"] = reader
    sid = e.get("story_id")
    if isinstance(sid, str):
        if not re.match(r"^[0-9]{1,19}$", sid):
            raise codec.CodecError("ReadEvent.story_id must be a decimal story id")
        e["story_id"] = int(sid)
    for key in ("event_id", "article_id"):  # ids are stored with the read: bounded before the codec sees them
        v = e.get(key)
        if isinstance(v, str) and not (0 < len(v) <= MAX_ID and v.isprintable()):
            raise codec.CodecError(f"ReadEvent.{key} must be 1 to {MAX_ID} printable characters")
    record = codec.check("ReadEvent", e)
    if not now_ms - EVENT_PAST_MS <= record["at"] <= now_ms + EVENT_FUTURE_MS:
        raise codec.CodecError("ReadEvent.at must be within the last 30 days and not in the future")
    if not EDITION.match(record["edition"]):
        raise codec.CodecError("ReadEvent.edition must look like 'us-en'")
    return record


@bp.post("/v1/events")
@private
def events(reader: str):
    ext = services()
    try:
        data = json_body()
        raw = data.get("events")
        if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_EVENTS:
            raise ValueError(f"events must be a list of 1 to {MAX_EVENTS} ReadEvent objects")
    except ValueError as exc:
        return http.problem(400, "invalid_body", str(exc))
    now_ms = g.accepted_at
    ok, rejected = [], []
    for i, e in enumerate(raw):
        try:
            ok.append({**_event(e, reader, now_ms), "accepted_at": now_ms})
        except codec.CodecError as exc:
            rejected.append({"index": i, "error": str(exc)})
    if not ok:
        return http.problem(400, "no_valid_event", "no valid event in the batch", rejected=rejected)
    if not ext.folder.submit(ok):
        return http.retry_later("queue_full", "event queue is full", cache_control=http.PRIVATE)
    return _ok({"accepted": len(ok), "rejected": rejected}, status=202)


def reason_name(reason: str, language: str) -> str | None:
    """What a reader reads for a reason that names a place, a followed entity or a followed topic (``local:us`` ->
    "United States", ``follows:entity/org:isro`` -> "ISRO"): never a raw code or id; None for another reason."""
    kind, _, what = reason.partition(":")
    if kind == "local" and what:
        return topic_name(what if what.startswith("place:") else "place:" + what, language or None)
    sort, _, value = what.partition("/")
    if kind == "follows" and sort in ("entity", "topic") and value:
        return topic_name(f"{sort}:{value}", language or None)
    return None
