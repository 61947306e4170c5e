"""The OpenAPI 3.1 document of the whole origin API, served at ``GET /openapi.json``.

The paths are built here, one builder per route group (shared pages, the reader's endpoints, health, WebSub,
pings); ``components/schemas`` come from :mod:`serving.api.openapi_schemas`, which reads the page schemas (schemas/json)
so the served document and the snapshot contracts cannot drift. tests/serving/test_openapi.py runs schemathesis against the app (WSGI) to keep the
document true: every documented status, header and body is checked against what the app answers.
"""

from __future__ import annotations

import functools

import orjson
from flask import Blueprint, Response

from schemas.pages import MAX_LIMIT
from serving.api.foryou import FOLLOW_KINDS, NOT_BLANK_CLASS
from serving.api.openapi_feeds import cards_op, feed_paths, opml_op
from serving.api.openapi_schemas import STORY_ID, ref, schemas
from serving.api.topics import TOPIC_ID_PATTERN
from serving.http import conventions as http

bp = Blueprint("openapi", __name__)


def _json(schema_name: str, description: str, headers: dict | None = None) -> dict:
    out = {"description": description, "content": {"application/json": {"schema": ref(schema_name)}}}
    if headers:
        out["headers"] = headers
    return out


def _problem(description: str, headers: dict | None = None) -> dict:
    """An error answer: an RFC 9457 problem (serving/http/conventions.py ``problem``)."""
    return {
        "description": description,
        "headers": headers or NO_STORE,
        "content": {http.PROBLEM_JSON: {"schema": ref("Problem")}},
    }


def _text(description: str) -> dict:
    return {
        "description": description,
        "headers": NO_STORE_TEXT,
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }


def _header(description: str, required: bool = True, **schema) -> dict:
    return {"description": description, "required": required, "schema": schema or {"type": "string"}}


CORS = {
    "Access-Control-Allow-Origin": _header(
        "* (shared answers may be read by any origin; no credentials)", pattern=r"^\*$"
    )
}
SHARED_HEADERS = {
    "Cache-Control": _header(
        "public, s-maxage=60 (30 for stories and topics); the CDN serves a stale copy up to an hour"
    ),
    "ETag": _header("Strong validator of this page version and limit."),
    **CORS,
}
# On errors the CORS header is documented but not required: a URL that matches no route is answered by the app's
# 404, which belongs to no shared endpoint.
CORS_OPTIONAL = {"Access-Control-Allow-Origin": {**CORS["Access-Control-Allow-Origin"], "required": False}}
NO_STORE = {"Cache-Control": _header("no-store", pattern="no-store")}
PRIVATE = {"Cache-Control": _header("private, no-store", pattern="^private, no-store$")}
NO_STORE_TEXT = {
    "Cache-Control": {"description": "no-store", "required": True, "schema": {"type": "string", "pattern": "no-store"}}
}
DEGRADED = {
    "Newsroom-Degraded": _header(
        "Present when the page is degraded: the same value as the body's degraded (under load: cached_candidates, "
        "then edition_list; For you never answers 503 for overload).",
        required=False,
        enum=["profile_unavailable", "rank_timeout", "cached_candidates", "edition_list"],
    )
}
RETRY = {"Retry-After": _header("Seconds to wait before retrying.", pattern="^[0-9]+$")}


def _shared_errors(with_404: bool = True) -> dict:
    out = {
        "304": {"description": "Not modified (If-None-Match matched the ETag).", "headers": SHARED_HEADERS},
        "400": _problem(
            "Invalid parameter (invalid_limit, invalid_edition, invalid_cursor, invalid_topic), or the request "
            "carried Cookie or "
            "Authorization (personal_headers: shared endpoints reject them).",
            {**NO_STORE, **CORS_OPTIONAL},
        ),
        "503": _problem(
            "Pages are not loaded yet (not_ready), or the edition or section exists and has no live page yet "
            "(warming_up; never cached).",
            {**NO_STORE, **RETRY, **CORS_OPTIONAL},
        ),
    }
    if with_404:
        out["404"] = _problem(
            "No such edition, page or story, or no live story about the topic (unknown_edition, unknown_page, "
            "unknown_story, unknown_topic), or a configured edition whose language has no publisher yet "
            "(no_publishers: no Retry-After, it will not warm up); cached briefly at the edge.",
            CORS_OPTIONAL,
        )
    return out


def _private_errors() -> dict:
    return {
        "400": _problem("Invalid request (invalid_body, invalid_parameter, invalid_edition, ...).", PRIVATE),
        "401": _problem(
            "Missing, malformed, forged or expired bearer token (unauthorized).",
            {**PRIVATE, "WWW-Authenticate": _header("Bearer realm")},
        ),
        "503": _problem(
            "Shedding load (overloaded: the controls and events; For you steps down its ladder instead), profile store unavailable (store_unavailable) or "
            "event queue full (queue_full).",
            {**PRIVATE, **RETRY},
        ),
    }


EDITION_SCHEMA = {"type": "string", "pattern": "^[a-z]{2}-[a-z]{2,3}$"}
EDITION = {"name": "edition", "in": "path", "required": True, "schema": EDITION_SCHEMA, "example": "us-en"}
SECTION = {
    "name": "section",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[a-z][a-z0-9_-]{0,31}$"},
    "example": "top",
}
CURSOR = {
    "name": "cursor",
    "in": "query",
    "required": False,
    "description": "Opaque: the next_cursor of the previous page. Anything else is answered 400.",
    "schema": {"type": "string"},
}
IF_NONE_MATCH = {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"}}


WRITE_LIMITS = {
    "413": _problem(
        "Body larger than NEWSROOM_MAX_BODY_BYTES (64 KiB); refused before parsing (body_too_large).", PRIVATE
    ),
    "429": _problem(
        "(rate_limited) The reader's write budget is spent (NEWSROOM_READER_RATE a second, NEWSROOM_READER_BURST at most).",
        {**PRIVATE, **RETRY},
    ),
}


def _private_op(
    summary: str, ok: dict, body: str | None = None, params: list | None = None, extra=None, write: bool = False
) -> dict:
    """``write``: a POST/DELETE (charged to the reader's budget, its body bounded): documents 413 and 429."""
    op = {
        "summary": summary,
        "security": [{"bearerAuth": []}],
        "responses": {**ok, **_private_errors(), **(WRITE_LIMITS if write or body else {}), **(extra or {})},
    }
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": ref(body)}}}
    if params:
        op["parameters"] = params
    return op


PROFILE_OK = {"200": _json("ProfileSummary", "The reader's profile after the change.", PRIVATE)}
GONE = "the profile was deleted after this request was accepted, nothing changed (profile_deleted)"
DELETED = {"409": _problem(GONE[0].upper() + GONE[1:] + ".", PRIVATE)}
FOLLOW_QUERY = [
    {"name": "kind", "in": "query", "required": True, "schema": {"enum": list(FOLLOW_KINDS)}},
    {
        "name": "value",
        "in": "query",
        "required": True,
        "schema": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NOT_BLANK_CLASS},
    },
]


LIMIT_100 = {
    "name": "limit",
    "in": "query",
    "required": False,
    "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
}


def _shared_paths() -> dict:
    """The shared pages: identical for every reader, CDN-cached."""
    return {
        "/v1/editions": {
            "get": {
                "summary": "Discovery: every edition the origin has loaded, with its sections, versions and URLs.",
                "parameters": [IF_NONE_MATCH],
                "responses": {
                    "200": _json("EditionIndex", "The loaded editions, by id.", SHARED_HEADERS),
                    **_shared_errors(with_404=False),
                },
            }
        },
        "/v1/editions/{edition}": {
            "get": {
                "summary": "One edition's discovery document: cycle, pool version, sections with versions and URLs.",
                "parameters": [EDITION, IF_NONE_MATCH],
                "responses": {
                    "200": _json("EditionDocument", "The edition.", SHARED_HEADERS),
                    **_shared_errors(),
                },
            }
        },
        "/v1/editions/{edition}/sections/{section}": {
            "get": {
                "summary": "One edition section page (shared, identical for every reader).",
                "parameters": [EDITION, SECTION, LIMIT_100, IF_NONE_MATCH],
                "responses": {"200": _json("EditionPage", "The page.", SHARED_HEADERS), **_shared_errors()},
            }
        },
        "/v1/editions/{edition}/version": {
            "get": {
                "summary": "Tiny version document for the 'new stories' pill (shared).",
                "parameters": [EDITION, IF_NONE_MATCH],
                "responses": {
                    "200": _json("EditionVersion", "Versions of the edition.", SHARED_HEADERS),
                    **_shared_errors(),
                },
            }
        },
        "/v1/stories/{story_id}": {
            "get": {
                "summary": "Full coverage of one story version, keyset-paged (shared).",
                "parameters": [
                    {
                        "name": "story_id",
                        "in": "path",
                        "required": True,
                        "schema": dict(STORY_ID),
                        "example": "7300000000000000000",
                    },
                    {"name": "edition", "in": "query", "required": False, "schema": EDITION_SCHEMA},
                    CURSOR,
                    LIMIT_100,
                    IF_NONE_MATCH,
                ],
                "responses": {
                    "200": _json("StoryPage", "One page of the story's articles.", SHARED_HEADERS),
                    "301": _json(
                        "Moved",
                        "The story was merged: Location names the survivor (always one hop).",
                        {
                            "Location": _header("/v1/stories/{survivor}"),
                            "Cache-Control": SHARED_HEADERS["Cache-Control"],
                        },
                    ),
                    **_shared_errors(),
                },
            }
        },
    }


def _storyline_path() -> dict:
    """GET /v1/storylines/{language}/{storyline_id} (serving/api/storylines.py): shared, loaded on demand."""
    language = {
        "name": "language",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[a-z]{2,3}$"},
    }
    storyline_id = {"name": "storyline_id", "in": "path", "required": True, "schema": dict(STORY_ID)}
    moved = {"Location": _header("/v1/storylines/{language}/{survivor}")}
    return {
        "/v1/storylines/{language}/{storyline_id}": {
            "get": {
                "summary": "One storyline's episodes (stories of one subject, archived ones too), newest first, "
                "keyset-paged (shared).",
                "parameters": [language, storyline_id, CURSOR, LIMIT_100, IF_NONE_MATCH],
                "responses": {
                    "200": _json("StorylinePage", "One page of the storyline's episodes.", SHARED_HEADERS),
                    "301": _json(
                        "Moved",
                        "The storyline was merged: Location names the survivor.",
                        {**moved, "Cache-Control": SHARED_HEADERS["Cache-Control"]},
                    ),
                    **_shared_errors(),
                },
            }
        }
    }


def _topic_path() -> dict:
    """GET /v1/topics/{topic_id} (serving/api/topics.py): shared; pre-built by the editions stage for followed and
    trending topics, built on demand from the edition's pool for the others."""
    topic_id = {
        "name": "topic_id",
        "in": "path",
        "required": True,
        "description": "entity:{id} (alias-table entity id), place:{code} (region code, or a city of the gazetteer such as "
        "place:chicago) or topic:{name} (section).",
        "schema": {"type": "string", "pattern": TOPIC_ID_PATTERN},
        "example": "entity:org:isro",
    }
    edition = {"name": "edition", "in": "query", "required": True, "schema": EDITION_SCHEMA, "example": "us-en"}
    return {
        "/v1/topics/{topic_id}": {
            "get": {
                "summary": "The edition's live stories about an entity, place or topic, by the edition's own score "
                "(shared, s-maxage=30, a city page of the edition's region 300; pre-built every cycle for followed and trending topics, on demand otherwise).",
                "parameters": [topic_id, edition, LIMIT_100, IF_NONE_MATCH],
                "responses": {"200": _json("TopicPage", "The topic page.", SHARED_HEADERS), **_shared_errors()},
            }
        }
    }


FEED_PARAMS = [
    {"name": "edition", "in": "query", "required": True, "schema": EDITION_SCHEMA, "example": "us-en"},
    CURSOR,
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 50}},
]


def _private_paths() -> dict:
    """The reader's own endpoints: bearer token, never cached."""
    return {
        "/v1/feed/for-you": {
            "get": _private_op(
                "The edition's candidate pool re-ranked for the reader, each item with its reason.",
                {"200": _json("ForYouFeed", "A page of the reader's feed.", {**PRIVATE, **DEGRADED})},
                params=FEED_PARAMS,
                extra={"404": _problem("No pool for that edition (unknown_edition).", PRIVATE)},
            )
        },
        "/v1/feed/for-you/cards": {
            "get": cards_op(
                _private_op,
                FEED_PARAMS,
                {"private": PRIVATE, "not_found": _problem("No pool for that edition (unknown_edition).", PRIVATE)},
            )
        },
        "/v1/me/profile": {
            "get": _private_op("The reader's own profile.", {"200": _json("ProfileSummary", "Profile.", PRIVATE)}),
            "delete": _private_op(
                "Delete the whole profile: follows, hidden sources, reads, interest and write budget.",
                {"204": {"description": "Deleted (also when there was nothing to delete).", "headers": PRIVATE}},
                write=True,
            ),
        },
        "/v1/me/follows.opml": {
            "get": opml_op(
                _private_op, EDITION_SCHEMA, PRIVATE, _problem("No such edition (unknown_edition).", PRIVATE)
            )
        },
        "/v1/me/follows": {
            "post": _private_op(
                "Follow a topic, source, place or entity (an alias-table id such as org:isro).",
                PROFILE_OK,
                body="FollowRequest",
                extra={"409": _problem(f"Too many follows (profile_limit), or {GONE}.", PRIVATE)},
            ),
            "delete": _private_op("Stop following.", PROFILE_OK, params=FOLLOW_QUERY, extra=DELETED, write=True),
        },
        "/v1/me/hidden-sources": {
            "post": _private_op(
                "Hide a source: its stories never appear in For you.",
                PROFILE_OK,
                body="HideSourceRequest",
                extra={"409": _problem(f"Too many hidden sources (profile_limit), or {GONE}.", PRIVATE)},
            ),
            "delete": _private_op(
                "Unhide a source.",
                PROFILE_OK,
                params=[
                    {
                        "name": "source",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NOT_BLANK_CLASS},
                    }
                ],
                extra=DELETED,
                write=True,
            ),
        },
        "/v1/me/fewer-like-this": {
            "post": _private_op("Show fewer stories like this one.", PROFILE_OK, body="FewerRequest", extra=DELETED)
        },
        "/v1/me/history": {
            "delete": _private_op("Delete the reader's read history and interest vector.", PROFILE_OK, write=True)
        },
        "/v1/me/history/pause": {"post": _private_op("Stop recording reads.", PROFILE_OK, extra=DELETED, write=True)},
        "/v1/me/history/resume": {"post": _private_op("Record reads again.", PROFILE_OK, extra=DELETED, write=True)},
        "/v1/events": {
            "post": _private_op(
                "A batch of reads / impressions / clicks, folded into the profile in the background.",
                {"202": _json("EventsAccepted", "Accepted (invalid events are listed, not folded).", PRIVATE)},
                body="EventsRequest",
            )
        },
    }


def _health_paths() -> dict:
    return {
        "/healthz": {"get": {"summary": "Liveness.", "responses": {"200": _json("Health", "Alive.", NO_STORE)}}},
        "/readyz": {
            "get": {
                "summary": "Readiness: pages loaded.",
                "responses": {
                    "200": _json("Ready", "Ready.", NO_STORE),
                    "503": {
                        "description": "Not ready (a not_ready problem with the readiness fields).",
                        "headers": NO_STORE,
                        "content": {http.PROBLEM_JSON: {"schema": {"allOf": [ref("Problem"), ref("Ready")]}}},
                    },
                },
            }
        },
    }


def _query(name: str) -> dict:
    return {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}


def _websub_path() -> dict:
    sub_id = {"name": "sub_id", "in": "path", "required": True, "schema": {"type": "string"}}
    verify = {
        "summary": "WebSub verification of intent (echoes hub.challenge for a subscription we asked for).",
        "parameters": [
            dict(sub_id),
            *(_query(q) for q in ("hub.mode", "hub.topic", "hub.challenge", "hub.lease_seconds")),
        ],
        "responses": {
            "200": _text("The challenge."),
            "400": _problem("Missing or oversized hub.challenge (invalid_parameter)."),
            "404": _problem(
                "Unknown subscription, wrong callback token, or a verification not expected now (only a "
                "pending subscription or a requested renewal is verified)."
            ),
        },
    }
    deliver = {
        "summary": "WebSub content delivery (X-Hub-Signature HMAC SHA-256 required); triggers one poll.",
        "parameters": [
            dict(sub_id),
            {"name": "X-Hub-Signature", "in": "header", "required": False, "schema": {"type": "string"}},
        ],
        "requestBody": {"required": False, "content": {"application/octet-stream": {"schema": {}}}},
        "responses": {
            "202": _text("Accepted."),
            "403": _problem("Missing or forged signature (bad_signature)."),
            "404": _problem(
                "Unknown subscription, wrong callback token, not active or lease expired (unknown_subscription)."
            ),
            "413": _problem("Body too large (NEWSROOM_PUSH_MAX_BYTES, 1 MiB; body_too_large)."),
        },
    }
    return {"/v1/websub/{sub_id}": {"get": verify, "post": deliver}}


def _ping_path() -> dict:
    any_json = {"application/json": {"schema": {"type": "object"}}}
    return {
        "/v1/ping": {
            "post": {
                "summary": "A publisher's signed ping (X-Newsroom-Publisher, X-Newsroom-Signature); one poll per 30 s.",
                "parameters": [
                    {"name": "X-Newsroom-Publisher", "in": "header", "required": False, "schema": {"type": "string"}},
                    {"name": "X-Newsroom-Signature", "in": "header", "required": False, "schema": {"type": "string"}},
                ],
                "requestBody": {"required": False, "content": {"application/json": {"schema": {}}}},
                "responses": {
                    "202": {"description": "Poll triggered.", "content": any_json},
                    "400": _problem(
                        "Body is not {feed_url, at} (invalid_body), the ping is stale (stale_ping) or its feed_url is"
                        " over 2,048 characters (url_too_long)."
                    ),
                    "401": _problem("Unsigned (unauthorized)."),
                    "403": _problem("Bad signature (bad_signature) or foreign feed (foreign_feed)."),
                    "409": _problem("This ping was accepted before (replayed_ping): sign a new one."),
                    "413": _problem("Body too large (body_too_large)."),
                    "429": _problem(
                        "A poll was triggered less than 30 s ago (rate_limited; the problem also carries "
                        "triggered: false and retry_after_s).",
                        {**NO_STORE, **RETRY},
                    ),
                },
            }
        },
    }


def _self_path() -> dict:
    ok = {"description": "OpenAPI 3.1", "content": {"application/json": {"schema": {"type": "object"}}}}
    return {"/openapi.json": {"get": {"summary": "This document.", "responses": {"200": ok}}}}


# (method, path) -> operationId: stable (clients generate method names from them), unique, camelCase. Every
# documented operation must be listed here (document() fails otherwise).
OPERATION_IDS = {
    ("get", "/v1/editions"): "listEditions",
    ("get", "/v1/editions/{edition}"): "getEdition",
    ("get", "/v1/editions/{edition}/sections/{section}"): "getSectionPage",
    ("get", "/v1/editions/{edition}/version"): "getEditionVersion",
    ("get", "/v1/stories/{story_id}"): "getStory",
    ("get", "/v1/topics/{topic_id}"): "getTopicPage",
    ("get", "/v1/storylines/{language}/{storyline_id}"): "getStorylinePage",
    ("get", "/v1/feed/for-you"): "getForYouFeed",
    ("get", "/v1/me/profile"): "getProfile",
    ("get", "/v1/me/follows.opml"): "exportFollowsOpml",
    ("get", "/v1/feed/for-you/cards"): "getForYouCards",
    ("delete", "/v1/me/profile"): "deleteProfile",
    ("post", "/v1/me/follows"): "follow",
    ("delete", "/v1/me/follows"): "unfollow",
    ("post", "/v1/me/hidden-sources"): "hideSource",
    ("delete", "/v1/me/hidden-sources"): "unhideSource",
    ("post", "/v1/me/fewer-like-this"): "fewerLikeThis",
    ("delete", "/v1/me/history"): "deleteHistory",
    ("post", "/v1/me/history/pause"): "pauseHistory",
    ("post", "/v1/me/history/resume"): "resumeHistory",
    ("post", "/v1/events"): "postEvents",
    ("get", "/healthz"): "getHealth",
    ("get", "/readyz"): "getReadiness",
    ("get", "/v1/websub/{sub_id}"): "verifyWebSubSubscription",
    ("post", "/v1/websub/{sub_id}"): "deliverWebSubContent",
    ("post", "/v1/ping"): "pingFeed",
    ("get", "/openapi.json"): "getOpenApiDocument",
}


def _with_operation_ids(paths: dict) -> dict:
    return {
        path: {method: {"operationId": OPERATION_IDS[(method, path)], **op} for method, op in item.items()}
        for path, item in paths.items()
    }


def _feed_paths() -> dict:
    """RSS and Atom of the reader pages (serving/api/openapi_feeds.py; operation ids there)."""
    story = {"name": "story_id", "in": "path", "required": True, "schema": dict(STORY_ID)}
    topic = {
        "name": "topic_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": TOPIC_ID_PATTERN},
    }
    language = {
        "name": "language",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[a-z]{2,3}$"},
    }
    return feed_paths(EDITION, SECTION, story, topic, language)


@functools.lru_cache(maxsize=1)
def document() -> dict:
    paths = {
        **_shared_paths(),
        **_topic_path(),
        **_storyline_path(),
        **_private_paths(),
        **_health_paths(),
        # serving/api/push.py (ingest helper): hubs and publishers, not readers; routed around the CDN.
        **_websub_path(),
        **_ping_path(),
        **_self_path(),
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Newsroom origin API",
            "version": "1.0.0",
            "description": "Shared pages (public, CDN-cached, identical for every reader; requests must carry no "
            "Cookie "
            "and no Authorization) and the private For you feed (bearer token, never cached).",
        },
        "servers": [{"url": "/"}],
        "paths": {**_with_operation_ids(paths), **_feed_paths()},
        "components": {
            "schemas": schemas(),
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
        },
    }


@functools.lru_cache(maxsize=1)
def _body() -> bytes:
    return orjson.dumps(document())


@bp.get("/openapi.json")
def openapi_json():
    resp = Response(_body(), content_type="application/json")
    resp.headers["Cache-Control"] = "public, max-age=300"
    return resp


bp.before_request(http.shared_preflight)  # public like the pages: any origin may read the document
bp.after_request(http.shared_cors)
