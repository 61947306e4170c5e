"""The OpenAPI 3.1 document of the whole origin API, served at ``GET /openapi.json``.

Reads the page schemas (schemas/json, via :func:`schemas.pages.schema`) so the served document and the snapshot
contracts cannot drift: the page, story-page and card schemas are the same JSON Schemas, with ``$defs`` lifted into
``components/schemas``. tests/serving/test_openapi.py runs schemathesis against the app (WSGI) to keep the
document true: every documented status, header and body is checked against what the app answers.
"""

from __future__ import annotations

import copy
import functools

import orjson
from flask import Blueprint, Response

from schemas.pages import schema as page_schema
from serving.foryou import NOT_BLANK_CLASS

bp = Blueprint("openapi", __name__)

_REFS = {"card": "Card", "story_entry": "StoryEntry"}


def _rewrite(node):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in ("$schema", "$id"):
                continue
            if k == "$ref" and "#/$defs/" in v:
                out[k] = "#/components/schemas/" + _REFS[v.rsplit("/", 1)[1]]
            else:
                out[k] = _rewrite(v)
        return out
    if isinstance(node, list):
        return [_rewrite(v) for v in node]
    return node


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema_name: str, description: str, headers: dict | None = None) -> dict:
    out = {"description": description, "content": {"application/json": {"schema": _ref(schema_name)}}}
    if headers:
        out["headers"] = headers
    return out


def _text(description: str) -> dict:
    return {
        "description": description,
        "headers": NO_STORE_TEXT,
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }


def _header(description: str, required: bool = True, **schema) -> dict:
    return {"description": description, "required": required, "schema": schema or {"type": "string"}}


SHARED_HEADERS = {
    "Cache-Control": _header("public, s-maxage=60 (30 for stories), stale-while-revalidate=60, stale-if-error=3600"),
    "ETag": _header("Strong validator of this page version and limit."),
}
NO_STORE = {"Cache-Control": _header("no-store", pattern="no-store")}
PRIVATE = {"Cache-Control": _header("private, no-store", pattern="^private, no-store$")}
NO_STORE_TEXT = {
    "Cache-Control": {"description": "no-store", "required": True, "schema": {"type": "string", "pattern": "no-store"}}
}
RETRY = {"Retry-After": _header("Seconds to wait before retrying.", pattern="^[0-9]+$")}


def _shared_errors(with_404: bool = True) -> dict:
    out = {
        "304": {"description": "Not modified (If-None-Match matched the ETag).", "headers": SHARED_HEADERS},
        "400": _json(
            "Error",
            "Invalid parameter, or the request carried Cookie or Authorization (shared endpoints reject them).",
            NO_STORE,
        ),
        "503": _json("Error", "Pages are not loaded yet.", {**NO_STORE, **RETRY}),
    }
    if with_404:
        out["404"] = _json("Error", "No such page (cached briefly at the edge).")
    return out


def _private_errors() -> dict:
    return {
        "400": _json("Error", "Invalid request.", PRIVATE),
        "401": _json(
            "Error",
            "Missing, malformed, forged or expired bearer token.",
            {**PRIVATE, "WWW-Authenticate": _header("Bearer realm")},
        ),
        "503": _json(
            "Error", "Shedding load (For you is shed first) or profile store unavailable.", {**PRIVATE, **RETRY}
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
    "413": _json("Error", "Body larger than NEWSROOM_MAX_BODY_BYTES (64 KiB); refused before parsing.", PRIVATE),
    "429": _json(
        "Error",
        "The reader's write budget is spent (NEWSROOM_READER_RATE a second, NEWSROOM_READER_BURST at most).",
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
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(body)}}}
    if params:
        op["parameters"] = params
    return op


PROFILE_OK = {"200": _json("ProfileSummary", "The reader's profile after the change.", PRIVATE)}
FOLLOW_QUERY = [
    {"name": "kind", "in": "query", "required": True, "schema": {"enum": ["topic", "source", "place"]}},
    {
        "name": "value",
        "in": "query",
        "required": True,
        "schema": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NOT_BLANK_CLASS},
    },
]


@functools.lru_cache(maxsize=1)
def document() -> dict:
    edition_page = _rewrite(page_schema("edition_page"))
    defs = edition_page.pop("$defs")
    story_page = _rewrite(page_schema("story_page"))
    error = {
        "type": "object",
        "required": ["error", "status"],
        "properties": {
            "error": {"type": "string"},
            "status": {"type": "integer"},
            "carried": {"type": "array", "items": {"type": "string"}},
            "survivor": {"type": "string"},
            "rejected": {"type": "array", "items": {"$ref": "#/components/schemas/Rejected"}},
        },
    }
    schemas = {
        "Card": defs["card"],
        "StoryEntry": defs["story_entry"],
        "EditionPage": edition_page,
        "StoryPage": story_page,
        "Error": error,
        "Rejected": {
            "type": "object",
            "required": ["index", "error"],
            "properties": {"index": {"type": "integer"}, "error": {"type": "string"}},
        },
        "EditionVersion": {
            "type": "object",
            "required": ["edition", "cycle", "sections", "pool_version"],
            "additionalProperties": False,
            "properties": {
                "edition": {"type": "string"},
                "cycle": {"type": "string", "format": "date-time"},
                "sections": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}},
                "pool_version": {"type": ["integer", "null"]},
            },
        },
        "ForYouItem": {
            "type": "object",
            "required": ["story_id", "section", "labels", "representative", "rank", "reason"],
            "additionalProperties": False,
            "properties": {
                "story_id": {"type": "string", "pattern": "^[0-9]{1,20}$"},
                "section": {"type": "string"},
                "labels": {"type": "array", "items": {"type": "string"}},
                "representative": _ref("Card"),
                "rank": {"type": "integer", "minimum": 1},
                "reason": {
                    "type": "string",
                    "pattern": "^(top_story|popular|interest|recent|follows:(topic|source)/.+|local:.+"
                    "|similar_to:[0-9]{1,20})$",
                },
            },
        },
        "ForYouFeed": {
            "type": "object",
            "required": ["schema", "edition", "pool_version", "degraded", "items", "next_cursor"],
            "additionalProperties": False,
            "properties": {
                "schema": {"const": "newsroom.for_you/v1"},
                "edition": {"type": "string"},
                "pool_version": {"type": "integer"},
                "degraded": {
                    "enum": [None, "profile_unavailable", "rank_timeout"],
                    "description": "Null, or why this page is not the personal ranking: the profile could not be "
                    "read (a non-personal page) or the re-rank ran past its budget (newest first).",
                },
                "items": {"type": "array", "items": _ref("ForYouItem")},
                "next_cursor": {"type": ["string", "null"]},
            },
        },
        "ProfileSummary": {
            "type": "object",
            "required": ["reader_id", "follows", "hidden_sources", "fewer_like", "paused", "reads", "revision"],
            "additionalProperties": False,
            "properties": {
                "reader_id": {"type": "string"},
                "follows": {
                    "type": "object",
                    "properties": {
                        k: {"type": "array", "items": {"type": "string"}} for k in ("topics", "sources", "places")
                    },
                },
                "hidden_sources": {"type": "array", "items": {"type": "string"}},
                "fewer_like": {"type": "array", "items": {"type": "string"}},
                "paused": {"type": "boolean"},
                "reads": {"type": "integer", "minimum": 0},
                "revision": {"type": "integer", "minimum": 0},
            },
        },
        "FollowRequest": {
            "type": "object",
            "required": ["kind", "value"],
            "properties": {
                "kind": {"enum": ["topic", "source", "place"]},
                "value": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NOT_BLANK_CLASS},
            },
        },
        "HideSourceRequest": {
            "type": "object",
            "required": ["source"],
            "properties": {"source": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NOT_BLANK_CLASS}},
        },
        "FewerRequest": {
            "type": "object",
            "required": ["story_id"],
            "properties": {
                "story_id": {"type": "string", "pattern": "^[0-9]{1,20}$"},
                "edition": {"type": "string", "pattern": "^([a-z]{2}-[a-z]{2,3})?$"},
            },
        },
        "ReadEventIn": {
            "type": "object",
            "description": "A ReadEvent (schemas/avro/read_event.avsc); reader_id comes from the token. Events "
            "older than 30 days or more than 5 minutes in the future (clock skew allowance) are rejected one by one. "
            "event_id and article_id: at most 128 printable characters.",
            "required": ["event_id", "kind", "edition", "at"],
            "properties": {
                "schema_version": {"type": "integer"},
                "event_id": {"type": "string", "minLength": 1, "maxLength": 128},
                "reader_id": {"type": "string"},
                "kind": {"enum": ["IMPRESSION", "READ", "CLICK"]},
                "edition": {"type": "string"},
                "story_id": {"type": ["string", "integer", "null"]},
                "article_id": {"type": ["string", "null"], "maxLength": 128},
                "at": {"type": "integer", "description": "ms since epoch, UTC"},
                "dwell_ms": {"type": ["integer", "null"]},
            },
        },
        "EventsRequest": {
            "type": "object",
            "required": ["events"],
            "properties": {"events": {"type": "array", "minItems": 1, "maxItems": 100, "items": _ref("ReadEventIn")}},
        },
        "EventsAccepted": {
            "type": "object",
            "required": ["accepted", "rejected"],
            "properties": {
                "accepted": {"type": "integer", "minimum": 1},
                "rejected": {"type": "array", "items": _ref("Rejected")},
            },
        },
        "Health": {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}},
        "Ready": {
            "type": "object",
            "required": ["ready", "pages"],
            "properties": {"ready": {"type": "boolean"}, "pages": {"type": "integer"}},
        },
    }
    paths = {
        "/v1/editions/{edition}/sections/{section}": {
            "get": {
                "summary": "One edition section page (shared, identical for every reader).",
                "parameters": [
                    EDITION,
                    SECTION,
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 1, "maximum": 100},
                    },
                    IF_NONE_MATCH,
                ],
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
                        "schema": {"type": "string", "pattern": "^[0-9]{1,20}$"},
                        "example": "7300000000000000000",
                    },
                    {"name": "edition", "in": "query", "required": False, "schema": EDITION_SCHEMA},
                    CURSOR,
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 1, "maximum": 100},
                    },
                    IF_NONE_MATCH,
                ],
                "responses": {
                    "200": _json("StoryPage", "One page of the story's articles.", SHARED_HEADERS),
                    "301": _json(
                        "Error",
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
        "/v1/feed/for-you": {
            "get": _private_op(
                "The edition's candidate pool re-ranked for the reader, each item with its reason.",
                {"200": _json("ForYouFeed", "A page of the reader's feed.", PRIVATE)},
                params=[
                    {"name": "edition", "in": "query", "required": True, "schema": EDITION_SCHEMA, "example": "us-en"},
                    CURSOR,
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 1, "maximum": 50},
                    },
                ],
                extra={"404": _json("Error", "No pool for that edition.", PRIVATE)},
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
        "/v1/me/follows": {
            "post": _private_op(
                "Follow a topic, source or place.",
                PROFILE_OK,
                body="FollowRequest",
                extra={"409": _json("Error", "Too many follows.", PRIVATE)},
            ),
            "delete": _private_op("Stop following.", PROFILE_OK, params=FOLLOW_QUERY, write=True),
        },
        "/v1/me/hidden-sources": {
            "post": _private_op(
                "Hide a source: its stories never appear in For you.",
                PROFILE_OK,
                body="HideSourceRequest",
                extra={"409": _json("Error", "Too many hidden sources.", PRIVATE)},
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
                write=True,
            ),
        },
        "/v1/me/fewer-like-this": {
            "post": _private_op("Show fewer stories like this one.", PROFILE_OK, body="FewerRequest")
        },
        "/v1/me/history": {
            "delete": _private_op("Delete the reader's read history and interest vector.", PROFILE_OK, write=True)
        },
        "/v1/me/history/pause": {"post": _private_op("Stop recording reads.", PROFILE_OK, write=True)},
        "/v1/me/history/resume": {"post": _private_op("Record reads again.", PROFILE_OK, write=True)},
        "/v1/events": {
            "post": _private_op(
                "A batch of reads / impressions / clicks, folded into the profile in the background.",
                {"202": _json("EventsAccepted", "Accepted (invalid events are listed, not folded).", PRIVATE)},
                body="EventsRequest",
            )
        },
        "/healthz": {"get": {"summary": "Liveness.", "responses": {"200": _json("Health", "Alive.", NO_STORE)}}},
        "/readyz": {
            "get": {
                "summary": "Readiness: pages loaded.",
                "responses": {"200": _json("Ready", "Ready.", NO_STORE), "503": _json("Ready", "Not ready.", NO_STORE)},
            }
        },
        # serving/push.py (ingest helper): hubs and publishers, not readers; routed around the CDN.
        "/v1/websub/{sub_id}": {
            "get": {
                "summary": "WebSub verification of intent (echoes hub.challenge for a subscription we asked for).",
                "parameters": [
                    {"name": "sub_id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "hub.mode", "in": "query", "required": False, "schema": {"type": "string"}},
                    {"name": "hub.topic", "in": "query", "required": False, "schema": {"type": "string"}},
                    {"name": "hub.challenge", "in": "query", "required": False, "schema": {"type": "string"}},
                    {"name": "hub.lease_seconds", "in": "query", "required": False, "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": _text("The challenge."),
                    "400": _text("Missing or oversized hub.challenge."),
                    "404": _text(
                        "Unknown subscription, wrong callback token, or a verification not expected now (only a "
                        "pending subscription or a requested renewal is verified)."
                    ),
                },
            },
            "post": {
                "summary": "WebSub content delivery (X-Hub-Signature HMAC SHA-256 required); triggers one poll.",
                "parameters": [
                    {"name": "sub_id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "X-Hub-Signature", "in": "header", "required": False, "schema": {"type": "string"}},
                ],
                "requestBody": {"required": False, "content": {"application/octet-stream": {"schema": {}}}},
                "responses": {
                    "202": _text("Accepted."),
                    "403": _text("Missing or forged signature."),
                    "404": _text("Unknown subscription, wrong callback token, not active or lease expired."),
                    "413": _text("Body too large (NEWSROOM_PUSH_MAX_BYTES, 1 MiB)."),
                },
            },
        },
        "/v1/ping": {
            "post": {
                "summary": "A publisher's signed ping (X-Newsroom-Publisher, X-Newsroom-Signature); one poll per 30 s.",
                "parameters": [
                    {"name": "X-Newsroom-Publisher", "in": "header", "required": False, "schema": {"type": "string"}},
                    {"name": "X-Newsroom-Signature", "in": "header", "required": False, "schema": {"type": "string"}},
                ],
                "requestBody": {"required": False, "content": {"application/json": {"schema": {}}}},
                "responses": {
                    "202": {
                        "description": "Poll triggered.",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    "400": _text("Body is not {feed_url, at} or the ping is stale."),
                    "401": _text("Unsigned."),
                    "403": _text("Bad signature or foreign feed."),
                    "413": _text("Body too large."),
                    "429": {
                        "description": "A poll was triggered less than 30 s ago.",
                        "headers": RETRY,
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                },
            }
        },
        "/openapi.json": {
            "get": {
                "summary": "This document.",
                "responses": {
                    "200": {
                        "description": "OpenAPI 3.1",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    }
                },
            }
        },
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
        "paths": paths,
        "components": {
            "schemas": copy.deepcopy(schemas),
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
