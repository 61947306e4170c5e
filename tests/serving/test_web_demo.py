"""Links a reader can follow: every href and src the pages print is percent-encoded (a publisher's
URL with a space or a non-ASCII letter), and in the local demo (``NEWSROOM_WORLD_URL``,
set by ``newsroom run``) the cards link to the sample world's pages and images on this machine instead of its
``*.test`` hosts, while the JSON API and the default (production) keep the publishers' real URLs."""

from __future__ import annotations

import re

import orjson

from devtools import samples
from tests.serving.helpers import EDITION, publish

# RFC 3986: unreserved, reserved and '%' (an escape): anything else in a link must be percent-encoded
ENCODED = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")
WORLD = "http://127.0.0.1:9"


def _publish(app, world, section: str, mutate) -> None:
    page = samples.edition_page(EDITION, section, 1, n_stories=3, first_story=0)
    mutate(page["stories"])
    publish(world, page)
    app.extensions["newsroom"].watcher.poll_once()


def _links(html: str) -> list[str]:
    return [h.replace("&amp;", "&") for h in re.findall(r'\s(?:href|src)="([^"]*)"', html)]


def test_every_href_and_src_on_rendered_pages_is_percent_encoded(app, world, client):
    def mutate(stories):
        rep = stories[0]["representative"]
        rep.update(url="https://news.example/a b/café?q=x y", image_url="https://img.example/pic one.jpg")
        stories[1]["supporting"][0]["url"] = "https://news.example/ok%20already/ü"

    _publish(app, world, "links", mutate)
    pages = [f"/e/{EDITION}/", f"/e/{EDITION}/links", f"/e/{EDITION}/topics", f"/e/{EDITION}/topics/topic:tech"]
    pages += [f"/stories/{samples.story_id(i)}" for i in range(2)]
    seen = []
    for url in pages:
        resp = client.get(url)
        assert resp.status_code == 200, url
        seen += _links(resp.data.decode())
    bad = [h for h in seen if not ENCODED.match(h)]
    assert not bad, bad[:10]
    assert "https://news.example/a%20b/caf%C3%A9?q=x%20y" in seen  # encoded, not dropped
    assert "https://news.example/ok%20already/%C3%BC" in seen  # an existing escape is not encoded twice


def _demo_card(stories):
    rep = stories[0]["representative"]
    rep.update(url="http://dailyherald.test/news/dh-1", image_url="http://dailyherald.test/img/dh-1.svg")
    rep.update(image_width=1200, image_height=630)


def test_local_demo_links_cards_and_images_to_the_world_on_this_machine(app, world, client):
    app.config["NEWSROOM_WORLD_URL"] = WORLD
    _publish(app, world, "demo", _demo_card)
    resp = client.get(f"/e/{EDITION}/demo")
    links = _links(resp.data.decode())
    assert f"{WORLD}/world/dailyherald.test/news/dh-1" in links
    assert f"{WORLD}/world/dailyherald.test/img/dh-1.svg" in links
    assert not [h for h in links if ".test/" in h and not h.startswith(WORLD)]
    assert f"img-src 'self' {WORLD}" in resp.headers["Content-Security-Policy"]
    # the JSON page (what is published and cached) keeps the publisher's own URL
    doc = orjson.loads(client.get(f"/v1/editions/{EDITION}/sections/demo").data)
    assert doc["stories"][0]["representative"]["url"] == "http://dailyherald.test/news/dh-1"


def test_without_the_demo_setting_pages_keep_the_publishers_urls(app, world, client):
    assert app.config["NEWSROOM_WORLD_URL"] == ""  # the default, production
    _publish(app, world, "demo", _demo_card)
    resp = client.get(f"/e/{EDITION}/demo")
    links = _links(resp.data.decode())
    assert "http://dailyherald.test/news/dh-1" in links and not [h for h in links if "/world/" in h]
    assert "127.0.0.1" not in resp.headers["Content-Security-Policy"]


def test_the_ingest_user_agent_names_the_operators_own_page_and_the_origin_serves_it(client):
    from pipelines.ingest_options import IngestOptions, context_of
    from stores import StoreConfig
    from transforms.ingest.fetcher import user_agent_for

    ua = user_agent_for("https://news.example.org/", env={})
    assert ua == "NewsroomBot/0.1 (+https://news.example.org/about/crawler; news aggregator; polite crawler)"
    assert "github.com/newsroom" not in user_agent_for(None, env={})  # no placeholder address when none is known
    assert user_agent_for("https://x.example", env={"NEWSROOM_USER_AGENT": "Mine/1 (+https://me.example)"}) == (
        "Mine/1 (+https://me.example)"
    )
    opts = IngestOptions(["--websub_callback_base=https://news.example.org", "--user_agent=Flag/2"])
    assert context_of(opts, StoreConfig(data_dir="unused")).fetcher.user_agent == "Flag/2"  # the flag wins
    resp = client.get("/about/crawler")
    assert resp.status_code == 200 and b"robots.txt" in resp.data and "public" in resp.headers["Cache-Control"]
