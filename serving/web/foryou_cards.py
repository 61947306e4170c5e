"""The For you page's cards: ``GET /v1/feed/for-you/cards?edition=&cursor=&limit=`` (private).

The same page of the reader's feed as ``GET /v1/feed/for-you`` (serving/api/foryou.py ``feed_page``: the same
ranking, cursor and load ladder), rendered by the edition pages' own card macro (``web/_stories.html``
``story_list``: story labels such as BREAKING above the headline, the representative's labels, its time as a
``<time data-relative>`` that reltime.js words relatively, topic chips, "12 articles from 7 publishers", Read at,
Full Coverage, supporting links), each card with its reason. One card renderer for every page: For you's script
(``/assets/foryou.js``) inserts this fragment instead of building cards of its own.

Private like the JSON feed: a bearer token, ``Cache-Control: private, no-store``, on the path the edge routes
around the CDN (``/v1/feed/*``); the next page's cursor is the ``Newsroom-Next-Cursor`` header (absent on the
last page), a degraded rung ``Newsroom-Degraded``. Everything from articles is escaped by Jinja's autoescape, so the
script may parse the fragment as markup. Problems (400, 401, 404, 503) are the JSON feed's.
"""

from __future__ import annotations

import functools

import orjson
from flask import Blueprint, Response

from serving.api.foryou import feed_page, private, reason_name
from serving.http import conventions as http
from serving.state.context import services
from serving.web.messages import messages
from serving.web.pages import story_views
from serving.web.shell import HTML, lang_of, render

bp = Blueprint("foryou_cards", __name__)


@bp.after_request
def _private(resp: Response) -> Response:
    resp.headers["Cache-Control"] = http.PRIVATE
    return resp


@bp.get("/v1/feed/for-you/cards")
@functools.partial(private, slotted=False)
def for_you_cards(reader: str):
    ext = services()
    page = feed_page(ext, reader)
    if isinstance(page, Response):
        return page
    language = page.edition.partition("-")[2]
    t = messages(language)
    stories = []
    for i, reason in page.ranked:
        s = orjson.loads(page.pool.item_bytes[i] + b"}")
        s["why"] = t.reason(reason, reason_name(reason, language))
        stories.append(s)
    cards = story_views(ext.holder.current, page.edition, stories)
    body = render("web/_foryou_cards.html", lang_of(page.edition), edition=page.edition, stories=cards)
    resp = page.headers(Response(body, content_type=HTML))
    if page.next_cursor:
        resp.headers["Newsroom-Next-Cursor"] = page.next_cursor
    return resp
