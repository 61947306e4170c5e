"""Cards a reader expects on the shared web pages (serving/web/pages.py): the representative's
image with its own dimensions, lazy loading and alt text (none when there is none), times as ``<time datetime>``
that the page's script words relatively, the story and article labels (Breaking, opinion, fact-check, paid), topic
chips linking to topic pages, and a topics index per edition."""

from __future__ import annotations

import re

from devtools import samples
from serving.web.pages import STATIC_DIR
from tests.serving.helpers import EDITION, publish
from tests.serving.test_web import outline


def _publish_page(app, world, section: str, mutate) -> str:
    page = samples.edition_page(EDITION, section, 1, n_stories=3, first_story=0)
    mutate(page["stories"])
    publish(world, page)
    app.extensions["newsroom"].watcher.poll_once()
    return section


def _li(html: str, story_id: str) -> str:
    m = re.search(
        rf'<li class="story" data-story-id="{story_id}"[^>]*>(.*?)</li>\s*(?=<li class="story"|</ol>)', html, re.S
    )
    assert m, story_id
    return m.group(1)


def test_the_image_has_its_dimensions_lazy_loading_and_the_headline_as_alt(app, world, client):
    def mutate(stories):
        stories[0]["representative"].update(
            image_url="https://img.example/a.jpg", image_width=1200, image_height=675, title="Rover lands"
        )
        stories[1]["representative"].update(image_url="https://img.example/b.jpg")  # dimensions unknown
        stories[2]["representative"]["image_url"] = None

    _publish_page(app, world, "images", mutate)
    html = client.get(f"/e/{EDITION}/images").data.decode()
    o = outline(html.encode())
    imgs = {i["src"]: i for i in o.images}
    first = imgs["https://img.example/a.jpg"]
    assert (first["width"], first["height"], first["loading"], first["alt"]) == ("1200", "675", "lazy", "Rover lands")
    second = imgs["https://img.example/b.jpg"]
    assert second["loading"] == "lazy" and second["alt"] and "width" not in second  # no made-up dimensions
    assert len(o.images) == 2  # the card without an image has none


def test_times_are_absolute_in_the_page_and_relative_in_the_script(client):
    html = client.get(f"/e/{EDITION}/").data.decode()
    times = re.findall(r'<time datetime="([^"]+)" data-relative>([^<]+)</time>', html)
    assert times and all(text.endswith(" UTC") for _, text in times)  # the shared bytes say no "ago"
    assert re.search(r'<script src="/assets/[0-9a-f]{10}/reltime.js" defer></script>', html)
    js = (STATIC_DIR / "reltime.js").read_text()
    assert "RelativeTimeFormat" in js and "data-relative" in js


def test_story_and_article_labels_show_on_cards(app, world, client):
    def mutate(stories):
        stories[0]["labels"] = ["breaking"]
        stories[1]["representative"]["labels"] = ["paid"]
        stories[2]["labels"] = ["opinion", "fact_check"]
        stories[2]["representative"]["labels"] = ["opinion"]

    _publish_page(app, world, "labels", mutate)
    html = client.get(f"/e/{EDITION}/labels").data.decode()
    ids = [samples.story_id(i) for i in range(3)]
    assert 'class="label label-breaking">Breaking<' in _li(html, ids[0])
    assert 'class="label label-paid">Paid<' in _li(html, ids[1])
    third = _li(html, ids[2])
    story_line = re.search(r'<p class="story-labels">(.*?)</p>', third, re.S).group(1)
    meta = re.search(r'<p class="meta">(.*?)</p>', third, re.S).group(1)
    assert 'label-fact_check">Fact check in coverage<' in story_line and "label-opinion" not in story_line
    assert 'label-opinion">Opinion<' in meta and "label-fact_check" not in meta  # the article's own, once
    assert third.count("label-opinion") == 1
    es = client.get("/e/gb-en/").data.decode()
    assert "label-paid" not in es  # only cards that carry a label show it


def test_cards_have_topic_chips_that_link_to_topic_pages(client):
    html = client.get(f"/e/{EDITION}/").data.decode()
    chips = re.findall(r'<a class="chip" href="(/e/[^"]+/topics/[^"]+)">([^<]+)</a>', html)
    assert chips
    for href, _ in chips[:8]:
        assert client.get(href).status_code == 200, href


def test_each_edition_has_a_topics_index(client):
    r = client.get(f"/e/{EDITION}/topics")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    o = outline(r.data)
    links = [href for href, _ in o.links if f"/e/{EDITION}/topics/" in href]
    assert len(links) >= 5 and "<h1>Topics</h1>" in r.data.decode()
    for href in links[:5]:
        assert client.get(href).status_code == 200, href
    top = outline(client.get(f"/e/{EDITION}/").data)
    assert f"/e/{EDITION}/topics" in [href for href, _ in top.links]  # found from every page's navigation
    assert client.get("/e/zz-zz/topics").status_code == 404
