"""Stories as feeds (serving/web/feeds.py, feed_routes.py): RSS 2.0 and Atom for section, topic, Full Coverage and
storyline pages, one item per story on list pages, linked from each page, with the page's cache headers; every
feed parses with feedparser (no bozo) and passes a strict check: well-formed XML with each format's required
elements."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import feedparser
import orjson
import pytest

from devtools import samples
from tests.serving.helpers import EDITION, PAGE_CC, STORY, STORY_CC
from tests.serving.test_topics import TOPIC_CC, prebuild
from tests.serving.test_web_storylines import SL, sl_app  # noqa: F401 (sl_app: the storyline fixture)

A = "{http://www.w3.org/2005/Atom}"


def strict(fmt: str, body: bytes) -> list[ET.Element]:
    """Well-formed XML with the required elements (RSS 2.0: channel title, link, description; item title or
    description. Atom 1.0: feed id, title, updated; entry id, title, updated, a link; an author somewhere)."""
    root = ET.fromstring(body)
    if fmt == "rss":
        assert root.tag == "rss" and root.get("version") == "2.0"
        ch = root.find("channel")
        assert all((ch.findtext(tag) or "").strip() for tag in ("title", "link", "description"))
        items = ch.findall("item")
        for it in items:
            assert (it.findtext("title") or it.findtext("description") or "").strip()
            assert re.match(r"https?://", it.findtext("link")) and it.findtext("guid")
            assert re.match(r"\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}$", it.findtext("pubDate"))
        return items
    assert root.tag == f"{A}feed"
    assert all((root.findtext(f"{A}{tag}") or "").strip() for tag in ("id", "title", "updated"))
    assert root.find(f"{A}author/{A}name") is not None and root.find(f"{A}link[@rel='self']") is not None
    entries = root.findall(f"{A}entry")
    for e in entries:
        assert all((e.findtext(f"{A}{tag}") or "").strip() for tag in ("id", "title", "updated"))
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
