"""Stories as feeds (serving/web/feeds.py, feed_routes.py): RSS 2.0 and Atom for section, topic, city, Full Coverage
and storyline pages, one item per story on list pages, linked from each page, with the page's cache headers; every
feed parses with feedparser (no bozo) and passes a strict check: well-formed XML with each format's required
elements, every id and link a valid absolute IRI (feedparser takes 'http://localhostarticle:c1' as an id; a
validator does not), no id twice."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import feedparser
import orjson
import pytest

from devtools import samples
from tests.serving.helpers import EDITION, PAGE_CC, STORY, STORY_CC
from tests.serving.test_topics import TOPIC_CC, prebuild
from tests.serving.test_web_storylines import SL, sl_app  # noqa: F401 (sl_app: the storyline fixture)

A = "{http://www.w3.org/2005/Atom}"


def iri(value: str | None, ids: bool = False) -> bool:
    """An absolute http(s) IRI with a host and a numeric port, if any (or, for an id, a URN)."""
    value = (value or "").strip()
    if ids and re.match(r"urn:[a-z0-9][a-z0-9-]{0,31}:[\w%.:/-]+$", value, re.I):
        return True
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises on a port that is no number)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and " " not in value


def strict(fmt: str, body: bytes) -> list[ET.Element]:
    """Well-formed XML with the required elements (RSS 2.0: channel title, link, description; item title or
    description. Atom 1.0: feed id, title, updated; entry id, title, updated, a link; an author somewhere)."""
    root = ET.fromstring(body)
    if fmt == "rss":
        assert root.tag == "rss" and root.get("version") == "2.0"
        ch = root.find("channel")
        assert all((ch.findtext(tag) or "").strip() for tag in ("title", "link", "description"))
        assert iri(ch.findtext("link")) and re.match(r"[a-z]{2,3}(-[A-Z]{2})?$", ch.findtext("language"))
        items = ch.findall("item")
        guids = [it.findtext("guid") for it in items]
        assert len(set(guids)) == len(guids), "a guid twice"
        for it in items:
            assert (it.findtext("title") or it.findtext("description") or "").strip()
            assert iri(it.findtext("link")) and iri(it.findtext("guid"), ids=True), (
                it.findtext("link"),
                it.findtext("guid"),
            )
            assert it.findtext("comments") is None or iri(it.findtext("comments"))
            assert re.match(r"\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}$", it.findtext("pubDate"))
        return items
    assert root.tag == f"{A}feed"
    assert all((root.findtext(f"{A}{tag}") or "").strip() for tag in ("id", "title", "updated"))
    assert root.find(f"{A}author/{A}name") is not None and root.find(f"{A}link[@rel='self']") is not None
    assert iri(root.findtext(f"{A}id"), ids=True)
    entries = root.findall(f"{A}entry")
    ids = [e.findtext(f"{A}id") for e in entries]
    assert len(set(ids)) == len(ids), "an entry id twice"
    for e in entries:
        assert all((e.findtext(f"{A}{tag}") or "").strip() for tag in ("id", "title", "updated"))
        assert iri(e.findtext(f"{A}id"), ids=True), e.findtext(f"{A}id")
        assert all(iri(link.get("href")) for link in e.findall(f"{A}link")), e.findtext(f"{A}id")
        assert re.match(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", e.findtext(f"{A}updated"))
        assert e.find(f"{A}link[@rel='alternate']") is not None
    return entries


def check_feed(client, path: str, cache_control: str, fmt: str):
    r = client.get(f"{path.rstrip('/')}/feed.{fmt}")
    assert r.status_code == 200, (path, r.status_code)
    assert r.headers["Content-Type"].startswith(f"application/{fmt}+xml")
    assert r.headers["Cache-Control"] == cache_control and r.headers["ETag"]
    assert client.get(f"{path.rstrip('/')}/feed.{fmt}", headers={"If-None-Match": r.headers["ETag"]}).status_code == 304
    parsed = feedparser.parse(r.data)
    assert not parsed.bozo, parsed.bozo_exception
    assert parsed.version == ("rss20" if fmt == "rss" else "atom10")
    return parsed, strict(fmt, r.data)


@pytest.mark.parametrize("fmt", ["rss", "atom"])
def test_section_feeds_give_one_item_per_story_with_sources_and_are_linked_from_the_page(client, fmt):
    for edition, section in ((EDITION, "top"), (EDITION, "tech"), ("gb-en", "top")):
        page = f"/e/{edition}/" + ("" if section == "top" else section)
        html = client.get(page).data.decode()
        assert f'<link rel="alternate" type="application/{fmt}+xml" href="/e/{edition}/{section}/feed.{fmt}"' in html
        parsed, items = check_feed(client, f"/e/{edition}/{section}", PAGE_CC, fmt)
        stories = re.findall(r'<li class="story" data-story-id="([^"]+)"', html)
        assert len(parsed.entries) == len(items) == min(len(stories), 50) > 0
        ids = [e.get("id", "") for e in parsed.entries]
        assert [i.rsplit("/", 1)[1] for i in ids] == stories[:50]  # one item per story, in the page's order
        first = parsed.entries[0]
        assert first.title and first.link.startswith("http") and "publisher" in first.summary.lower() or first.summary


@pytest.mark.parametrize("fmt", ["rss", "atom"])
def test_topic_and_full_coverage_feeds(app, world, client, fmt):
    prebuild(app, world, {"entity:org:who": 3})
    parsed, _ = check_feed(client, f"/e/{EDITION}/topics/entity:org:who", TOPIC_CC, fmt)
    assert parsed.entries
    story_html = client.get(f"/stories/{STORY}").data.decode()
    assert f'href="/stories/{STORY}/feed.{fmt}"' in story_html
    parsed, items = check_feed(client, f"/stories/{STORY}", STORY_CC, fmt)
    assert len(items) == min(story_html.count('class="article"'), 50) > 0  # one item per article of the story


@pytest.mark.parametrize("fmt", ["rss", "atom"])
def test_a_city_pages_feed_is_its_stories_with_the_local_ttl(app, world, client, fmt):
    from tests.serving.test_local_pages import LOCAL_CC, publish_pool, with_chicago

    publish_pool(world, app, with_chicago)
    html = client.get(f"/e/{EDITION}/topics/place:chicago").data.decode()
    href = f"/e/{EDITION}/topics/place%3Achicago/feed.{fmt}"
    assert f'<link rel="alternate" type="application/{fmt}+xml" href="{href}"' in html
    assert client.get(href).data == client.get(f"/e/{EDITION}/topics/place:chicago/feed.{fmt}").data
    parsed, items = check_feed(client, f"/e/{EDITION}/topics/place:chicago", LOCAL_CC, fmt)
    stories = re.findall(r'<li class="story" data-story-id="([^"]+)"', html)
    assert [e.id.rsplit("/", 1)[1] for e in parsed.entries] == stories[:50] and len(items) == len(stories) > 0


@pytest.mark.parametrize("fmt", ["rss", "atom"])
def test_storyline_feed(sl_app, fmt):  # noqa: F811 (sl_app: the fixture)
    client = sl_app.test_client()
    parsed, items = check_feed(client, f"/storylines/en/{SL}", STORY_CC, fmt)
    assert "The latest episode <b>now</b>" in [e.title for e in parsed.entries]  # text, escaped, never markup
    episodes = orjson.loads(client.get(f"/v1/storylines/en/{SL}").data)["episodes"]
    assert len(items) == len(episodes) > 1  # one item per episode (a story)


def test_unknown_feeds_are_404_and_hostile_text_stays_text(client):
    assert client.get(f"/e/{EDITION}/nosuch/feed.rss").status_code == 404
    assert client.get(f"/e/{EDITION}/top/feed.json").status_code == 404
    assert client.get(f"/stories/{samples.story_id(99999)}/feed.atom").status_code in (404, 503)
