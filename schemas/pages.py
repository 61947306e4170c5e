"""JSON Schemas of what the origin serves: edition pages, story pages, storyline pages and candidate pools.

Reads ``schemas/json/*.schema.json``. Also names the snapshot objects and their pointers. :func:`validate_page` is used by the snapshot publisher before a pointer
moves and by the origin's tests; it raises :class:`PageError` with the JSON path of the first problem.
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources

import jsonschema
from referencing import Registry, Resource

# The most items one page of the public API returns (the ``limit`` query parameter's maximum on edition, story and
# topic pages, and the maximum the OpenAPI document states): the origin's routes, its fast path and the document
# read this one value, and pre-built topic pages keep this many stories so any allowed limit can be served.
MAX_LIMIT = 100

PAGES = {
    "edition_page": "edition_page.schema.json",
    "story_page": "story_page.schema.json",
    "candidate_pool": "candidate_pool.schema.json",
    "story_coverage": "story_coverage.schema.json",
    "aliases": "aliases.schema.json",
    "topic_page": "topic_page.schema.json",
    "storyline": "storyline.schema.json",
    "storyline_page": "storyline_page.schema.json",
    "storyline_index": "storyline_index.schema.json",
}

# Snapshot object names and the pointers that make them live (written by the snapshot publisher, read by the origin).
#   pages/{edition}/{section}/v{n}.json   edition_page     pointer "{edition}/{section}"
#   pools/{edition}/v{n}.json             candidate_pool   pointer "pool/{edition}"
#   stories/{story_id}/v{n}.json          story_coverage   pointer "story/{story_id}"
#   aliases/v{n}.json                     aliases          pointer "aliases"
#   topics/{edition}/{topic}/v{n}.json    topic_page       pointer "topic/{edition}/{topic}"
#   storylines/{language}/{id}/v{n}.json  storyline        pointer "storyline/{language}/{id}"
#   storyline_index/{language}/{shard}/v{n}.json  storyline_index  pointer "storyline_index/{language}/{shard}"


def page_path(edition: str, section: str, version: int) -> str:
    return f"pages/{edition}/{section}/v{version}.json"


def pool_path(edition: str, version: int) -> str:
    return f"pools/{edition}/v{version}.json"


def story_path(story_id: int | str, version: int) -> str:
    return f"stories/{story_id}/v{version}.json"


def aliases_path(version: int) -> str:
    return f"aliases/v{version}.json"


def topic_path(edition: str, topic: str, version: int) -> str:
    return f"topics/{edition}/{topic}/v{version}.json"


def storyline_path(language: str, storyline_id: int | str, version: int) -> str:
    return f"storylines/{language}/{storyline_id}/v{version}.json"


def storyline_index_path(language: str, shard: int | str, version: int) -> str:
    return f"storyline_index/{language}/{shard}/v{version}.json"


STORYLINE_INDEX_SHARDS = 64  # per language: the pointers the storyline index adds to the origin's listing


def storyline_index_shard(entity_id: str) -> int:
    """The shard of the storyline index holding an entity: a stable hash (not Python's per-process ``hash``), the
    same for the publisher that writes it and the origin that reads it."""
    return int(hashlib.sha1(entity_id.encode("utf-8")).hexdigest()[:8], 16) % STORYLINE_INDEX_SHARDS


class PageError(ValueError):
    """A page that does not match its schema."""


def schema(kind: str) -> dict:
    return json.loads(resources.files("schemas").joinpath("json", PAGES[kind]).read_text(encoding="utf-8"))


@functools.cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    registry = Registry()
    for name in PAGES:
        doc = schema(name)
        registry = registry.with_resource(doc["$id"], Resource.from_contents(doc))
        # Relative refs such as "edition_page/v1#/$defs/card" resolve against the base of each $id.
    cls = jsonschema.validators.validator_for(schema(kind))
    return cls(schema(kind), registry=registry, format_checker=cls.FORMAT_CHECKER)


def validate_page(kind: str, page: dict) -> None:
    errors = sorted(_validator(kind).iter_errors(page), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        path = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise PageError(f"{kind} invalid at {path}: {err.message}")
