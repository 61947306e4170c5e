"""The storyline page of the web front end: episodes with dates, headlines and source counts; a story page links
its storyline, a topic page the storylines of its stories; shared, accessible HTML like the other pages."""

from __future__ import annotations

import orjson
import pytest

from devtools import samples
from serving.web.messages import messages
from tests.serving.helpers import EDITION, STORY, STORY_CC, make_app, publish
from tests.serving.test_web import outline

SL = samples.story_id(7000)


def topic_story() -> tuple[str, str]:
    """A pool story of the sample world about an entity, and that entity."""
    for i in range(1, 300):
        sid = samples.story_id(i)
        if samples._entities(sid):
            return sid, samples._entities(sid)[0]
    raise AssertionError("no pool story with an entity")


@pytest.fixture
def sl_app(world, profiles):
    doc = samples.storyline(SL, 3, 4)
    doc["episodes"][0] = dict(doc["episodes"][0], story_id=STORY, title="The latest episode <b>now</b>")
    publish(world, doc)
    cov = samples.story_coverage(STORY, 2, samples.coverage_articles(STORY, 5))
    publish(world, dict(cov, storyline_id=SL))
    sid, _ = topic_story()
    publish(world, dict(samples.story_coverage(sid, 1, samples.coverage_articles(sid, 2)), storyline_id=SL))
    app = make_app(world, profiles)
    yield app
    app.extensions["newsroom"].close()


def test_the_storyline_page_shows_each_episode_with_date_headline_and_sources(sl_app):
    client = sl_app.test_client()
    r = client.get(f"/storylines/en/{SL}")
    assert r.status_code == 200 and r.headers["Cache-Control"] == STORY_CC
    html = r.data.decode()
    doc = orjson.loads(client.get(f"/v1/storylines/en/{SL}").data)
    positions = []
    for e in doc["episodes"]:
        href = f'href="/stories/{e["story_id"]}"'
        assert href in html
        positions.append(html.index(href))
        assert f'<time datetime="{e["first_at"]}">{messages("en").date(e["first_at"])}</time>' in html
        n, p = e["article_count"], e["publisher_count"]
        assert f"{n} article{'s' if n != 1 else ''} from {p} publisher{'s' if p != 1 else ''}" in html
    assert positions == sorted(positions)  # newest first, as the JSON
    assert "&lt;b&gt;now&lt;/b&gt;" in html and "<b>now" not in html
    o = outline(r.data)
    assert o.headings[0] == 1 and o.headings.count(1) == 1
    assert all(text.strip() for _, text in o.links) and not o.inline
    assert client.get(f"/storylines/en/{samples.story_id(7001)}").status_code == 404
    plain = client.get(f"/storylines/en/{SL}")
    noisy = sl_app.test_client().get(f"/storylines/en/{SL}", headers={"Cookie": "sid=1", "Authorization": "Bearer x"})
    assert noisy.data == plain.data and noisy.headers == plain.headers  # the same bytes for every reader


def test_a_story_page_links_its_storyline(sl_app, world):
    client = sl_app.test_client()
    links = dict(outline(client.get(f"/stories/{STORY}").data).links)
    assert f"/storylines/en/{SL}" in links and links[f"/storylines/en/{SL}"].strip()
    other = samples.story_id(1)
    assert not any(h.startswith("/storylines/") for h, _ in outline(client.get(f"/stories/{other}").data).links)


def test_a_topic_page_links_the_storylines_of_its_entity(sl_app):
    sid, entity = topic_story()
    html = sl_app.test_client().get(f"/e/{EDITION}/topics/entity:{entity}")
    assert html.status_code == 200
    links = [h for h, _ in outline(html.data).links]
    assert f"/storylines/en/{SL}" in links


def story_links(client, story_id: str) -> tuple[list[str], dict, str]:
    """The storyline links of the story page, its JSON document and the JSON's ETag."""
    html = client.get(f"/stories/{story_id}").data
    r = client.get(f"/v1/stories/{story_id}")
    return [h for h, _ in outline(html).links if h.startswith("/storylines/")], orjson.loads(r.data), r.headers["ETag"]


def test_a_storyline_of_one_episode_is_not_linked_until_it_has_two(world, profiles):
    """README: a story page links its storyline from two episodes on. The coverage names a storyline whose page
    lists one episode (a split or a story merge left it at one): neither the page nor the JSON links it; once the
    published storyline has a second episode both do, and the JSON's ETag changes with it."""
    one = samples.storyline(SL, 3, 1)
    one["episodes"][0] = dict(one["episodes"][0], story_id=STORY)
    publish(world, one)
    publish(world, dict(samples.story_coverage(STORY, 2, samples.coverage_articles(STORY, 5)), storyline_id=SL))
    app = make_app(world, profiles)
    ext = app.extensions["newsroom"]
    try:
        client = app.test_client()
        links, doc, etag = story_links(client, STORY)
        assert links == [] and "storyline_id" not in doc
        two = samples.storyline(SL, 4, 2)
        two["episodes"][0] = dict(two["episodes"][0], story_id=STORY)
        publish(world, two)
        ext.watcher.poll_once()
        links, doc, etag2 = story_links(client, STORY)
        assert links == [f"/storylines/en/{SL}"] and doc["storyline_id"] == SL and etag2 != etag
    finally:
        ext.close()


def test_a_merged_storyline_is_linked_through_its_survivor(world, profiles):
    """The coverage still names an absorbed storyline (its story was not re-versioned yet): the link goes to the
    survivor when that has two episodes, never to the redirect of a one-episode page."""
    absorbed = samples.storyline(samples.story_id(7002), 5, 1)
    absorbed["merged_into"] = SL
    publish(world, absorbed)
    publish(world, samples.storyline(SL, 3, 3))
    cov = samples.story_coverage(STORY, 2, samples.coverage_articles(STORY, 5))
    publish(world, dict(cov, storyline_id=absorbed["storyline_id"]))
    app = make_app(world, profiles)
    try:
        links, doc, _ = story_links(app.test_client(), STORY)
        assert links == [f"/storylines/en/{SL}"] and doc["storyline_id"] == SL
    finally:
        app.extensions["newsroom"].close()
