"""The JSON Schemas of ``components/schemas`` in the origin's OpenAPI document (serving/api/openapi.py).

The page, story-page and card schemas are read from schemas/json (via :func:`schemas.pages.schema`) with ``$defs``
lifted into ``components/schemas``, so the served document and the snapshot contracts cannot drift; the request
and response bodies of the private endpoints and the health checks are written here.
"""

from __future__ import annotations

from schemas.pages import schema as page_schema
from serving.api.foryou import NOT_BLANK_CLASS
from serving.http.conventions import PROBLEMS

_REFS = {"card": "Card", "story_entry": "StoryEntry", "episode": "StorylineEpisode"}
STORY_ID = {"type": "string", "pattern": "^[0-9]{1,20}$"}


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


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _name_value(max_length: int = 200) -> dict:
    return {"type": "string", "minLength": 1, "maxLength": max_length, "pattern": NOT_BLANK_CLASS}


def _page_schemas() -> dict:
    """Card, StoryEntry, EditionPage, StoryPage, StorylineEpisode and StorylinePage: the snapshot contracts."""
    edition_page = _rewrite(page_schema("edition_page"))
    defs = edition_page.pop("$defs")
    story_page = _rewrite(page_schema("story_page"))
    return {
        "Card": defs["card"],
        "StoryEntry": defs["story_entry"],
        "EditionPage": edition_page,
        "StoryPage": story_page,
        "StorylineEpisode": _rewrite(page_schema("storyline")["$defs"]["episode"]),
        "StorylinePage": _rewrite(page_schema("storyline_page")),
    }


def _error_schemas() -> dict:
    """Problem (RFC 9457, every error answer), Moved (the 301 of a merged story) and Rejected (one bad event)."""
    problem = {
        "type": "object",
        "description": "RFC 9457 problem details (application/problem+json). code is the stable machine name; "
        "type is https://newsroom.example/problems/{code}; detail describes this occurrence.",
        "required": ["type", "title", "status", "detail", "code"],
        "properties": {
            "type": {"type": "string", "format": "uri"},
            "title": {"type": "string"},
            "status": {"type": "integer", "minimum": 400, "maximum": 599},
            "detail": {"type": "string"},
            "code": {"enum": sorted(PROBLEMS)},
            "carried": {"type": "array", "items": {"type": "string"}},
            "rejected": {"type": "array", "items": {"$ref": "#/components/schemas/Rejected"}},
            "triggered": {"const": False},
            "retry_after_s": {"type": "integer", "minimum": 1},
        },
    }
    moved = {
        "type": "object",
        "required": ["status", "detail", "survivor"],
        "properties": {"status": {"const": 301}, "detail": {"type": "string"}, "survivor": dict(STORY_ID)},
    }
    rejected = {
        "type": "object",
        "required": ["index", "error"],
        "properties": {"index": {"type": "integer"}, "error": {"type": "string"}},
    }
    return {"Problem": problem, "Moved": moved, "Rejected": rejected}


def _discovery_schemas() -> dict:
    """GET /v1/editions and /v1/editions/{edition} (serving/state/catalog.py edition_infos)."""
    section = {
        "type": "object",
        "required": ["section", "version", "url"],
        "additionalProperties": False,
        "properties": {
            "section": {"type": "string"},
            "version": {"type": "integer", "minimum": 1},
            "url": {"type": "string", "pattern": "^/v1/editions/[a-z]{2}-[a-z]{2,3}/sections/"},
        },
    }
    edition = {
        "type": "object",
        "required": ["edition", "cycle", "pool_version", "version_url", "sections"],
        "additionalProperties": False,
        "properties": {
            "edition": {"type": "string"},
            "cycle": {"type": "string", "format": "date-time"},
            "pool_version": {"type": ["integer", "null"]},
            "version_url": {"type": "string"},
            "sections": {"type": "array", "items": ref("EditionSection"), "description": "top first, then by name"},
        },
    }
    index = {
        "type": "object",
        "required": ["editions"],
        "additionalProperties": False,
        "properties": {"editions": {"type": "array", "items": ref("EditionDocument")}},
    }
    return {"EditionSection": section, "EditionDocument": edition, "EditionIndex": index}


def _pool_item(**more: dict) -> dict:
    """A candidate pool's story item as the API sends it, every property required; For you adds its rank and
    reason (``more``)."""
    properties = {
        "story_id": dict(STORY_ID),
        "section": {"type": "string"},
        "labels": {"type": "array", "items": {"type": "string"}},
        "representative": ref("Card"),
        **more,
    }
    return {"type": "object", "required": list(properties), "additionalProperties": False, "properties": properties}


def _feed_schemas() -> dict:
    """EditionVersion (shared) and the For you feed."""
    return {
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
        "ForYouItem": _pool_item(
            rank={"type": "integer", "minimum": 1},
            reason={
                "type": "string",
                "pattern": "^(top_story|popular|interest|recent|edition|readers_like_you|follows:(topic|source|entity)/.+|local:.+"
                "|similar_to:[0-9]{1,20}|also_read:[0-9]{1,20})$",
            },
            reason_name={
                "type": ["string", "null"],
                "description": "The place, entity or topic a local or follows reason names, as readers see it "
                "(local:us -> United States); null for other reasons.",
            },
        ),
        "ForYouFeed": {
            "type": "object",
            "required": ["schema", "edition", "pool_version", "degraded", "items", "next_cursor"],
            "additionalProperties": False,
            "properties": {
                "schema": {"const": "newsroom.for_you/v1"},
                "edition": {"type": "string"},
                "pool_version": {"type": "integer"},
                "degraded": {
                    "enum": [None, "profile_unavailable", "rank_timeout", "cached_candidates", "edition_list"],
                    "description": "Null, or why this page is not the personal ranking: the profile could not be "
                    "read (a non-personal page), the re-rank ran past its budget (newest first), or the origin is "
                    "under load: re-ranked from the cached profile without collaborative sources "
                    "(cached_candidates), or the edition's own order (edition_list, reason edition). Also sent as "
                    "the Newsroom-Degraded header.",
                },
                "items": {"type": "array", "items": ref("ForYouItem")},
                "next_cursor": {"type": ["string", "null"]},
            },
        },
    }


def _topic_schemas() -> dict:
    """GET /v1/topics/{topic_id} (serving/api/topics.py): the pool's story items, by the edition's own score."""
    item = _pool_item()
    page = {
        "type": "object",
        "required": ["schema", "topic", "kind", "value", "edition", "pool_version", "cycle", "story_count", "stories"],
        "additionalProperties": False,
        "properties": {
            "schema": {"const": "newsroom.topic_page/v1"},
            "topic": {"type": "string"},
            "kind": {"enum": ["entity", "place", "topic"]},
            "value": {"type": "string"},
            "name": {
                "type": "string",
                "description": "What readers see: a gazetteer place's or an entity's name in the edition's language "
                "(a region's code is its country), never a raw code.",
            },
            "edition": {"type": "string"},
            "pool_version": {"type": "integer"},
            "cycle": {"type": "string", "format": "date-time"},
            "story_count": {
                "type": "integer",
                "minimum": 0,
                "description": "Live stories about it (all pages); 0 when only storylines of its entity are left.",
            },
            "stories": {"type": "array", "items": ref("TopicItem")},
            "storylines": {
                "type": "array",
                "description": "Storylines of its entity (entity and place topics), newest first, live or long "
                "out of the live pool: GET /v1/storylines/{language}/{storyline_id}.",
                "items": {
                    "type": "object",
                    "required": ["storyline_id", "language", "title", "updated_at"],
                    "additionalProperties": False,
                    "properties": {
                        "storyline_id": dict(STORY_ID),
                        "language": {"type": "string"},
                        "title": {"type": "string"},
                        "updated_at": {"type": "string", "format": "date-time"},
                    },
                },
            },
        },
    }
    return {"TopicItem": item, "TopicPage": page}


def _profile_schemas() -> dict:
    """The reader's profile and the bodies of the controls that change it."""
    return {
        "ProfileSummary": {
            "type": "object",
            "required": ["reader_id", "follows", "hidden_sources", "fewer_like", "paused", "reads", "revision"],
            "additionalProperties": False,
            "properties": {
                "reader_id": {"type": "string"},
                "follows": {
                    "type": "object",
                    "properties": {
                        k: {"type": "array", "items": {"type": "string"}}
                        for k in ("topics", "sources", "places", "entities", "storylines")
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
                "kind": {"enum": ["topic", "source", "place", "entity", "storyline"]},
                "value": _name_value(),
            },
        },
        "HideSourceRequest": {"type": "object", "required": ["source"], "properties": {"source": _name_value()}},
        "FewerRequest": {
            "type": "object",
            "required": ["story_id"],
            "properties": {
                "story_id": dict(STORY_ID),
                "edition": {"type": "string", "pattern": "^([a-z]{2}-[a-z]{2,3})?$"},
            },
        },
    }


def _event_schemas() -> dict:
    """POST /v1/events: a batch of ReadEvents and the answer."""
    return {
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
            "properties": {"events": {"type": "array", "minItems": 1, "maxItems": 100, "items": ref("ReadEventIn")}},
        },
        "EventsAccepted": {
            "type": "object",
            "required": ["accepted", "rejected"],
            "properties": {
                "accepted": {"type": "integer", "minimum": 1},
                "rejected": {"type": "array", "items": ref("Rejected")},
            },
        },
    }


def _health_schemas() -> dict:
    return {
        "Health": {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}},
        "Ready": {
            "type": "object",
            "required": ["ready", "pages"],
            "properties": {"ready": {"type": "boolean"}, "pages": {"type": "integer"}},
        },
    }


def schemas() -> dict:
    """``components/schemas``: a new dict on every call (the caller may keep it)."""
    return {
        **_page_schemas(),
        **_error_schemas(),
        **_discovery_schemas(),
        **_feed_schemas(),
        **_topic_schemas(),
        **_profile_schemas(),
        **_event_schemas(),
        **_health_schemas(),
    }
