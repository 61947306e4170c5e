"""The OpenAPI paths of the RSS 2.0 and Atom feeds (serving/web/feed_routes.py): shared like the HTML pages they
mirror (same Cache-Control and a strong ETag), one item per story on list pages; an unknown page answers the
pages' HTML 404, an origin not loaded yet the HTML 503."""

from __future__ import annotations


def _h(description: str, required: bool = True) -> dict:
    return {"description": description, "required": required, "schema": {"type": "string"}}


FEED_HEADERS = {
    "Cache-Control": _h("The page's: public, s-maxage=60 (30 for stories and topics)"),
    "ETag": _h("Strong."),
}
FORMAT = {"name": "fmt", "in": "path", "required": True, "schema": {"type": "string", "enum": ["rss", "atom"]}}
IF_NONE_MATCH = {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"}}
XML = {"schema": {"type": "string"}}


def _op(summary: str, params: list, operation_id: str) -> dict:
    html = {"text/html": {"schema": {"type": "string"}}}
    return {
        "get": {
            "operationId": operation_id,
            "summary": summary,
            "parameters": [*params, FORMAT, IF_NONE_MATCH],
            "responses": {
                "200": {
                    "description": "RSS 2.0 (fmt rss) or Atom 1.0 (fmt atom).",
                    "headers": FEED_HEADERS,
                    "content": {"application/rss+xml": XML, "application/atom+xml": XML},
                },
                "304": {"description": "Not modified (If-None-Match matched the ETag).", "headers": FEED_HEADERS},
                "404": {"description": "No such page (the pages' HTML 404).", "content": html},
                "503": {"description": "Pages are not loaded yet (HTML, Retry-After).", "content": html},
            },
        }
    }


def feed_paths(edition: dict, section: dict, story_id: dict, topic_id: dict, language: dict) -> dict:
    return {
        "/e/{edition}/{section}/feed.{fmt}": _op(
            "An edition section's stories as a feed, one item per story (section top: the front page).",
            [edition, section],
            "getSectionFeed",
        ),
        "/e/{edition}/topics/{topic_id}/feed.{fmt}": _op(
            "A topic's (entity, place or city, section) stories in an edition as a feed, one item per story.",
            [edition, topic_id],
            "getTopicFeed",
        ),
        "/stories/{story_id}/feed.{fmt}": _op(
            "Full Coverage of a story as a feed, one item per article.", [story_id], "getStoryFeed"
        ),
        "/storylines/{language}/{storyline_id}/feed.{fmt}": _op(
            "A storyline as a feed, one item per episode (story).",
            [language, {**story_id, "name": "storyline_id"}],
            "getStorylineFeed",
        ),
    }


def opml_op(private_op, edition_schema: dict, private: dict, not_found) -> dict:
    """GET /v1/me/follows.opml (serving/web/opml.py): the reader's follows as an OPML 2.0 subscription list,
    private like the other /v1/me/* operations (``private_op``: bearer token, the private errors)."""
    return private_op(
        "The reader's followed sections, cities and places, and entities as an OPML 2.0 subscription list: one "
        "outline per follow with its feed of this edition (xmlUrl, RSS or Atom) and its page (htmlUrl). A followed "
        "source has no feed here and is not listed. Never cached (private, no-store; the edge routes /v1/me/* "
        "around the CDN).",
        {
            "200": {
                "description": "OPML 2.0 (http://opml.org/spec2.opml), as a download.",
                "headers": {
                    **private,
                    "Content-Disposition": _h('attachment; filename="newsroom-follows-{edition}.opml"'),
                },
                "content": {"text/x-opml": XML},
            }
        },
        params=[
            {"name": "edition", "in": "query", "required": True, "schema": edition_schema, "example": "us-en"},
            {"name": "format", "in": "query", "required": False, "schema": {"type": "string", "enum": ["rss", "atom"]}},
        ],
        extra={"404": not_found},
    )


def cards_op(private_op, feed_params: list, extra: dict) -> dict:
    """GET /v1/feed/for-you/cards (serving/web/foryou_cards.py): the For you page's cards, private like the feed."""
    return private_op(
        "The same page of the reader's feed as /v1/feed/for-you, as the edition pages' story cards (an HTML "
        "fragment: labels, relative times, Full Coverage, each card's reason) for the For you page's script.",
        {
            "200": {
                "description": 'An HTML fragment: <ol class="stories"> of the page\'s cards.',
                "headers": {
                    **extra["private"],
                    "Newsroom-Next-Cursor": _h("The next page's cursor; absent on the last page.", required=False),
                },
                "content": {"text/html": {"schema": {"type": "string"}}},
            }
        },
        params=feed_params,
        extra={"404": extra["not_found"]},
    )
