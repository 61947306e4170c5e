"""Served page schemas: a good page of each kind validates; a bad one is refused naming the JSON path."""

from __future__ import annotations

import copy

import pytest

from schemas import pages

CARD = {
    "article_id": "3f0c6a1e9b2d4c8f7a6e5d4c3b2a1908",
    "url": "https://www.example-news.com/world/2026/01/01/flood-warnings-issued",
    "title": "Flood warnings issued as river levels rise",
    "lede": "Residents in low-lying areas were told to prepare for evacuation.",
    "publisher_id": "example-news",
    "publisher_name": "Example News",
    "image_url": None,
    "published_at": "2026-01-01T00:59:00Z",
    "first_seen_at": "2026-01-01T01:00:00Z",
    "language": "en",
    "labels": ["first_report"],
}

GOOD = {
    "edition_page": {
        "schema": "newsroom.edition_page/v1",
        "edition": "en-us",
        "section": "top",
        "version": 12,
        "cycle": "2026-01-01T01:05:00Z",
        "generated_at": "2026-01-01T01:05:07Z",
        "stories": [
            {
                "story_id": "7394201113445597184",
                "rank": 1,
                "score": 3.25,
                "labels": ["breaking"],
                "section": "world",
                "representative": CARD,
                "supporting": [dict(CARD, article_id="b" * 32, publisher_id="other", labels=["wire"])],
                "article_count": 14,
                "publisher_count": 9,
                "updated_at": "2026-01-01T01:04:00Z",
            }
        ],
    },
    "story_page": {
        "schema": "newsroom.story_page/v1",
        "story_id": "7394201113445597184",
        "story_version": 3,
        "language": "en",
        "title": "Flood warnings issued",
        "edition": "en-us",
        "article_count": 14,
        "publisher_count": 9,
        "links": ["7394201113445597999"],
        "articles": [CARD],
        "next_cursor": "eyJwIjoxNzY3MjI5MTQwMDAwfQ",
    },
    "candidate_pool": {
        "schema": "newsroom.candidate_pool/v1",
        "edition": "en-us",
        "version": 12,
        "cycle": "2026-01-01T01:05:00Z",
        "stories": [
            {
                "story_id": "7394201113445597184",
                "score": 3.25,
                "section": "world",
                "topics": ["weather"],
                "publishers": ["example-news"],
                "places": ["springfield"],
                "vector": [0.1] * 64,
                "labels": ["breaking"],
                "representative": CARD,
            }
        ],
    },
    "story_coverage": {
        "schema": "newsroom.story_coverage/v1",
        "story_id": "7394201113445597184",
        "version": 3,
        "language": "en",
        "title": "Flood warnings issued",
        "updated_at": "2026-01-01T01:04:00Z",
        "links": [],
        "articles": [CARD, dict(CARD, article_id="c" * 32)],
    },
    "aliases": {"schema": "newsroom.aliases/v1", "version": 2, "aliases": {"101": "105", "102": "105"}},
    "topic_page": {
        "schema": "newsroom.topic_page/v1",
        "topic": "entity:org:isro",
        "kind": "entity",
        "value": "org:isro",
        "edition": "in-en",
        "version": 12,
        "pool_version": 12,
        "cycle": "2026-01-01T01:05:00Z",
        "story_count": 1,
        "stories": [{"story_id": "7394201113445597184", "section": "science", "labels": [], "representative": CARD}],
    },
}
EPISODE = {
    "story_id": "7394201113445597184",
    "title": "Probe lands on the moon",
    "first_at": "2026-01-20T08:00:00Z",
    "last_at": "2026-01-20T18:00:00Z",
    "article_count": 14,
    "publisher_count": 9,
}
GOOD["storyline"] = {
    "schema": "newsroom.storyline/v1",
    "storyline_id": "7394201113445590000",
    "language": "en",
    "version": 29412000,
    "title": EPISODE["title"],
    "updated_at": "2026-01-20T18:00:00Z",
    "episodes": [EPISODE, dict(EPISODE, story_id="7394201113445500000", first_at="2026-01-02T08:00:00Z")],
}
GOOD["storyline_page"] = {
    "schema": "newsroom.storyline_page/v1",
    "storyline_id": "7394201113445590000",
    "storyline_version": 29412000,
    "language": "en",
    "title": EPISODE["title"],
    "updated_at": "2026-01-20T18:00:00Z",
    "episode_count": 2,
    "episodes": [EPISODE],
    "next_cursor": "abc.def",
}

GOOD["storyline_index"] = {
    "schema": "newsroom.storyline_index/v1",
    "language": "en",
    "shard": 17,
    "version": 29412000,
    "entities": {
        "org:aqualux": [
            {
                "storyline_id": "7394201113445590000",
                "title": "Port Almera re-elects its mayor after a campaign fought over water bills",
                "story_id": "7394201113445590001",
                "updated_at": "2026-03-05T09:00:00Z",
            }
        ]
    },
}


def test_every_page_kind_has_a_good_example():
    assert set(GOOD) == set(pages.PAGES)


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_good_page_validates(kind):
    pages.validate_page(kind, copy.deepcopy(GOOD[kind]))


def _set(doc, path, value):
    *parents, last = path
    node = doc
    for p in parents:
        node = node[p]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value


_DELETE = object()

BAD = [
    ("edition_page", ["stories", 0, "representative", "published_at"], "now", "stories/0/representative/published_at"),
    ("edition_page", ["stories", 0, "story_id"], 7394201113445597184, "stories/0/story_id"),  # a number loses precision
    ("edition_page", ["stories", 0, "supporting", 0, "labels"], ["clickbait"], "stories/0/supporting/0/labels/0"),
    ("edition_page", ["edition"], "US English", "edition"),
    ("edition_page", ["stories", 0, "rank"], _DELETE, "stories/0"),
    ("edition_page", ["reader_id"], "r-1", "(root)"),  # no personal data can sneak into a shared page
    ("story_page", ["next_cursor"], 5, "next_cursor"),
    ("topic_page", ["topic"], "entity:a/b", "topic"),
    ("topic_page", ["stories", 0, "representative", "url"], _DELETE, "stories/0/representative"),
    ("story_page", ["articles", 0, "title"], _DELETE, "articles/0"),
    ("candidate_pool", ["stories", 0, "vector", 3], "x", "stories/0/vector/3"),
    ("candidate_pool", ["stories", 0, "representative", "url"], None, "stories/0/representative/url"),
    ("story_coverage", ["articles", 1, "first_seen_at"], "2026-13-45T99:00:00Z", "articles/1/first_seen_at"),
    ("aliases", ["aliases", "101"], 105, "aliases/101"),
    ("aliases", ["schema"], "newsroom.aliases/v2", "schema"),
    ("storyline", ["episodes", 0, "publisher_count"], -1, "episodes/0/publisher_count"),
    ("storyline", ["reader_id"], "r-1", "(root)"),
    ("storyline_page", ["episodes", 0, "first_at"], "yesterday", "episodes/0/first_at"),
    ("storyline_index", ["entities", "org:aqualux", 0, "story_id"], "x", "entities/org:aqualux/0/story_id"),
]


@pytest.mark.parametrize("kind, path, value, where", BAD, ids=[f"{b[0]}:{'/'.join(map(str, b[1]))}" for b in BAD])
def test_bad_page_names_the_path(kind, path, value, where):
    doc = copy.deepcopy(GOOD[kind])
    _set(doc, path, value)
    with pytest.raises(pages.PageError) as info:
        pages.validate_page(kind, doc)
    assert f"{kind} invalid at {where}:" in str(info.value)


def test_too_many_supporting_links_are_refused():
    doc = copy.deepcopy(GOOD["edition_page"])
    doc["stories"][0]["supporting"] = [CARD] * 5
    with pytest.raises(pages.PageError, match="stories/0/supporting"):
        pages.validate_page("edition_page", doc)


def test_snapshot_object_names():
    assert pages.page_path("en-us", "top", 12) == "pages/en-us/top/v12.json"
    assert pages.pool_path("en-us", 3) == "pools/en-us/v3.json"
    assert pages.story_path(7394201113445597184, 2) == "stories/7394201113445597184/v2.json"
    assert pages.aliases_path(4) == "aliases/v4.json"
