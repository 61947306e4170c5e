"""OPML export of a signed-in reader's follows (serving/web/opml.py): private, parsed as an OPML subscription list
by listparser, one outline per followed section, place and entity with a feed URL the origin answers."""

from __future__ import annotations

from urllib.parse import urlsplit

import feedparser
import listparser
import pytest

from tests.serving.helpers import EDITION

URL = f"/v1/me/follows.opml?edition={EDITION}"
FOLLOWS = [
    ("topic", "tech"),  # a section page of us-en: its section feed
    ("source", "daily-herald"),  # a publisher: no feed of ours, not listed
    ("place", "chicago"),  # a city: its place page's feed
    ("entity", "org:isro"),
    ("topic", "opinion pieces"),  # not a section: the topic page's feed, percent-encoded
]


@pytest.fixture
def followed(client, auth):
    for kind, value in FOLLOWS:
        assert (
            client.post("/v1/me/follows", json={"kind": kind, "value": value}, headers=auth("alice")).status_code == 200
        )
    return client


def test_the_export_lists_each_follow_with_its_feed_and_page(followed, auth):
    r = followed.get(URL, headers=auth("alice"))
    assert r.status_code == 200 and r.headers["Cache-Control"] == "private, no-store"
    assert r.headers["Content-Type"].startswith("text/x-opml")
    assert r.headers["Content-Disposition"] == f'attachment; filename="newsroom-follows-{EDITION}.opml"'
    assert "Access-Control-Allow-Origin" not in r.headers
    parsed = listparser.parse(r.data)
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "opml2"
    feeds = [(f.title, urlsplit(f.url).path) for f in parsed.feeds]
    assert feeds == [
        ("Tech", f"/e/{EDITION}/tech/feed.rss"),
        ("Opinion pieces", f"/e/{EDITION}/topics/topic:opinion%20pieces/feed.rss"),
        ("Chicago", f"/e/{EDITION}/topics/place:chicago/feed.rss"),
        ("ISRO", f"/e/{EDITION}/topics/entity:org:isro/feed.rss"),
    ]
    assert all(f.url.startswith("http://localhost/") for f in parsed.feeds)  # absolute on the request's host
    assert b'htmlUrl="http://localhost/e/us-en/tech"' in r.data
    for path in (feeds[0][1], feeds[3][1]):  # the feeds the sample world has stories for answer as feeds
        feed = followed.get(path)
        assert feed.status_code == 200 and not feedparser.parse(feed.data).bozo


def test_atom_on_request_and_an_empty_list_is_still_valid(followed, auth):
    r = followed.get(URL + "&format=atom", headers=auth("alice"))
    parsed = listparser.parse(r.data)
    assert not parsed.bozo and parsed.feeds[0].url.endswith("/tech/feed.atom")
    assert b'version="RSS2"' not in r.data
    nobody = followed.get(URL, headers=auth("bob"))  # follows nothing
    assert nobody.status_code == 200 and not listparser.parse(nobody.data).bozo
    assert listparser.parse(nobody.data).feeds == []


def test_the_export_is_private_and_its_parameters_are_checked(followed, auth):
    for headers in ({}, {"Cookie": "session=alice"}, {"Authorization": "Bearer forged"}):
        r = followed.get(URL, headers=headers)
        assert r.status_code == 401 and r.headers["Cache-Control"] == "private, no-store"
        assert r.headers["Content-Type"] == "application/problem+json"
    assert followed.get("/v1/me/follows.opml", headers=auth("alice")).json["code"] == "invalid_edition"
    assert followed.get(URL + "&format=json", headers=auth("alice")).json["code"] == "invalid_parameter"
    r = followed.get("/v1/me/follows.opml?edition=zz-zz", headers=auth("alice"))
    assert r.status_code == 404 and r.json["code"] == "unknown_edition"
    assert r.headers["Cache-Control"] == "private, no-store"


def test_names_and_links_are_escaped(client, auth):
    value = 'x" onload="alert(1)<&>'
    client.post("/v1/me/follows", json={"kind": "entity", "value": value}, headers=auth("eve"))
    r = client.get(URL, headers=auth("eve"))
    parsed = listparser.parse(r.data)
    assert not parsed.bozo and len(parsed.feeds) == 1
    assert "%22" in parsed.feeds[0].url and "<" not in parsed.feeds[0].url and '"' not in parsed.feeds[0].url


def test_an_empty_export_says_so_in_the_editions_language():
    from serving.web.messages import messages
    from serving.web.opml import render_opml

    doc = render_opml("Newsroom · DE-DE", "de-DE", [], "rss", "http://localhost/").decode()
    assert f'<outline text="{messages("de")("opml.empty")}"' in doc and "No follows yet" not in doc


def test_a_followed_storyline_is_exported_with_its_feed(world, profiles, auth):
    """ "Follow" on a storyline page (kind storyline, value "{language}/{id}"): the export lists its feed, named by
    its title; a merged one by its survivor; a value that names no storyline page is left out."""
    from devtools import samples
    from tests.serving.helpers import make_app, publish

    sl = samples.storyline(samples.story_id(7000), 3, 2)
    publish(world, sl)
    absorbed = dict(samples.storyline(samples.story_id(7002), 4, 1), merged_into=sl["storyline_id"])
    publish(world, absorbed)
    app = make_app(world, profiles)
    try:
        client = app.test_client()
        page = client.get(f"/storylines/en/{sl['storyline_id']}").data.decode()
        assert f'data-follow-kind="storyline" data-follow-value="en/{sl["storyline_id"]}"' in page
        for value in (f"en/{sl['storyline_id']}", f"en/{absorbed['storyline_id']}", "not a storyline"):
            r = client.post("/v1/me/follows", json={"kind": "storyline", "value": value}, headers=auth("sam"))
            assert r.status_code == 200
        assert r.json["follows"]["storylines"][0] == f"en/{sl['storyline_id']}"
        parsed = listparser.parse(client.get(URL, headers=auth("sam")).data)
        assert not parsed.bozo
        path = f"/storylines/en/{sl['storyline_id']}/feed.rss"
        assert [(f.title, urlsplit(f.url).path) for f in parsed.feeds] == [(f"Storyline: {sl['title']}", path)]
        assert not feedparser.parse(client.get(path).data).bozo
    finally:
        app.extensions["newsroom"].close()
