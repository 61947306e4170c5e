"""The For you page's cards (serving/web/foryou_cards.py): the JSON feed's page rendered by the edition pages' own
card macro, so For you cards carry the story labels (BREAKING), relative times, Full Coverage and the counts; private
like the feed."""

from __future__ import annotations

import re

import orjson
import pytest

from devtools import samples
from serving.web.messages import messages
from tests.serving.helpers import EDITION, make_app, publish
from tests.serving.test_web import outline

URL = f"/v1/feed/for-you/cards?edition={EDITION}"


@pytest.fixture
def breaking_app(world, profiles):
    pool = samples.candidate_pool(EDITION, 2, n=300)
    pool["stories"][0]["labels"] = ["breaking"]  # as the ranker pins a Breaking story
    pool["stories"][0]["representative"]["labels"] = ["wire"]
    publish(world, pool)
    app = make_app(world, profiles)
    yield app
    app.extensions["newsroom"].close()


def cards(html: bytes) -> list[str]:
    return re.findall(r'<li class="story" data-story-id="([0-9]+)"', html.decode())


def card_of(html: bytes, story_id: str) -> str:
    text = html.decode()
    start = text.index(f'data-story-id="{story_id}"')
    return text[start : text.index("</li>\n", start)]


def test_the_cards_are_the_json_feeds_page_as_edition_cards(breaking_app, auth):
    client = breaking_app.test_client()
    feed = orjson.loads(client.get(f"/v1/feed/for-you?edition={EDITION}", headers=auth("alice")).data)
    r = client.get(URL, headers=auth("alice"))
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert r.headers["Cache-Control"] == "private, no-store" and "Access-Control-Allow-Origin" not in r.headers
    assert cards(r.data) == [it["story_id"] for it in feed["items"]]  # the same page, in the same order
    first = feed["items"][0]
    card = card_of(r.data, first["story_id"])
    assert first["labels"] == ["breaking"]
    assert '<p class="story-labels"><span class="label label-breaking">Breaking</span>' in card  # the story's
    assert '<span class="label label-wire">' in card  # the representative's, on its line
    assert re.search(r'<time datetime="[^"]+" data-relative>', card)  # worded relatively by reltime.js
    assert f'href="/stories/{first["story_id"]}">Full Coverage' in card
    assert re.search(r"\d+ articles? from \d+ publishers?", card)
    assert first["reason_name"] is None  # a reason naming nothing: the catalogue's words for its kind
    assert f'<p class="reason">Why: {messages("en").reason(first["reason"])}</p>' in card
    o = outline(r.data)
    assert all(text.strip() for _, text in o.links) and not o.inline


def test_the_next_page_continues_without_repeats(breaking_app, auth):
    client = breaking_app.test_client()
    one = client.get(URL + "&limit=10", headers=auth("bob"))
    cursor = one.headers["Newsroom-Next-Cursor"]
    two = client.get(URL + f"&limit=10&cursor={cursor}", headers=auth("bob"))
    assert len(cards(one.data)) == len(cards(two.data)) == 10
    assert not set(cards(one.data)) & set(cards(two.data))


def test_the_cards_are_private_and_checked_like_the_feed(breaking_app, auth):
    client = breaking_app.test_client()
    for headers in ({}, {"Authorization": "Bearer forged"}):
        r = client.get(URL, headers=headers)
        assert r.status_code == 401 and r.headers["Cache-Control"] == "private, no-store"
    assert client.get("/v1/feed/for-you/cards", headers=auth("a")).json["code"] == "invalid_edition"
    assert client.get(URL + "&cursor=forged", headers=auth("a")).json["code"] == "invalid_cursor"
    assert client.get("/v1/feed/for-you/cards?edition=zz-zz", headers=auth("a")).json["code"] == "unknown_edition"


def test_the_for_you_page_has_no_token_box_until_the_script_knows_the_reader_is_signed_out(client):
    html = client.get(f"/e/{EDITION}/for-you").data.decode()
    assert '<section aria-labelledby="h-token" id="token-box" hidden>' in html
    assert "token-forget" not in html and "Forget my token" not in html  # Sign out is in the reader bar
    assert "reltime.js" in html and "foryou.js" in html
