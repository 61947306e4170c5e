"""The reader web front end (serving/web/pages.py): every page renders from the sample world, HTML agrees with the JSON
API, everything from articles is escaped, and the pages are shared (cache headers, ETag, CSP, no cookie)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import orjson
import pytest

from devtools import samples
from serving.web.shell import CSP
from tests.serving.helpers import EDITION, MERGED, PAGE_CC, STORY, STORY_CC, make_app, publish
from tests.serving.test_topics import TOPIC_CC, prebuild

PAGES = [
    (f"/e/{EDITION}/", PAGE_CC),
    (f"/e/{EDITION}/tech", PAGE_CC),
    (f"/e/{EDITION}/for-you", PAGE_CC),
    ("/e/gb-en/", PAGE_CC),
    (f"/stories/{STORY}", STORY_CC),
    (f"/e/{EDITION}/topics/entity:org:who", TOPIC_CC),
]
NEGATIVE = "public, max-age=0, s-maxage=10"


class Outline(HTMLParser):
    """What the accessibility and CSP checks need: tags, headings, link texts, images, inline scripts/styles."""

    def __init__(self):
        super().__init__()
        self.tags, self.headings, self.links, self.images, self.inline = [], [], [], [], []
        self.html_lang = None
        self._link = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "html":
            self.html_lang = a.get("lang")
        if re.fullmatch(r"h[1-6]", tag):
            self.headings.append(int(tag[1]))
        if tag == "a":
            self._link = [a.get("href"), ""]
            self.links.append(self._link)
        if tag == "img":
            self.images.append(a)
        if tag == "script" and not a.get("src"):
            self.inline.append("inline <script>")
        if tag == "style" or "style" in a or any(k.startswith("on") for k in a):
            self.inline.append(f"inline style/handler on <{tag}>")

    def handle_endtag(self, tag):
        if tag == "a":
            self._link = None

    def handle_data(self, data):
        if self._link is not None:
            self._link[1] += data


def outline(body: bytes) -> Outline:
    o = Outline()
    o.feed(body.decode())
    return o


@pytest.mark.parametrize("url,cc", PAGES)
def test_every_page_renders_shared_accessible_html(client, url, cc):
    r = client.get(url)
    assert r.status_code == 200, url
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert r.headers["Cache-Control"] == cc
    assert r.headers["Content-Security-Policy"] == CSP
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "unsafe-eval" not in CSP
    assert "Set-Cookie" not in r.headers and "Vary" not in r.headers
    etag = r.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    o = outline(r.data)
    assert o.html_lang and o.html_lang.startswith("en")
    for landmark in ("header", "nav", "main", "footer"):
        assert landmark in o.tags, (url, landmark)
    assert o.headings[0] == 1 and o.headings.count(1) == 1, (url, o.headings)
    assert all(b - a <= 1 for a, b in zip(o.headings, o.headings[1:])), (url, o.headings)  # no skipped level
    assert o.links and all(text.strip() for _, text in o.links), url  # every link has text
    assert all("alt" in img for img in o.images), url
    assert not o.inline, (url, o.inline)  # everything the CSP would block


@pytest.mark.parametrize("url,cc", PAGES)
def test_etag_gives_304(client, url, cc):
    etag = client.get(url).headers["ETag"]
    for inm in (etag, f"W/{etag}", f'"other", {etag}'):
        r = client.get(url, headers={"If-None-Match": inm})
        assert r.status_code == 304 and r.data == b"", (url, inm)
        assert r.headers["ETag"] == etag and r.headers["Cache-Control"] == cc
    assert client.get(url, headers={"If-None-Match": '"stale"'}).status_code == 200


@pytest.mark.parametrize("url,cc", PAGES)
def test_cookies_and_tokens_on_the_request_change_nothing(app, token, url, cc):
    plain = app.test_client().get(url)
    jar = app.test_client()
    jar.set_cookie("sid", "123")
    noisy = app.test_client(use_cookies=False)
    for r in (
        jar.get(url),
        noisy.get(url, headers={"Cookie": "session=abc; other=1", "Authorization": f"Bearer {token('alice')}"}),
    ):
        assert r.status_code == 200, url  # ignored, not rejected: a browser sends what its jar holds
        assert r.data == plain.data and r.headers == plain.headers, url
        assert "Set-Cookie" not in r.headers
        assert b"alice" not in r.data and token("alice").encode() not in r.data


def test_home_redirects_to_the_default_edition(client):
    r = client.get("/")
    assert r.status_code == 302 and r.headers["Location"] == f"/e/{EDITION}/"
    assert r.headers["Cache-Control"] == PAGE_CC
    assert client.get(f"/e/{EDITION}").data == client.get(f"/e/{EDITION}/").data == client.get(f"/e/{EDITION}/top").data


def _story_ids(body: bytes) -> list[str]:
    return re.findall(r'<li class="story" data-story-id="([0-9]+)"', body.decode())


@pytest.mark.parametrize("edition,section", [(EDITION, "top"), (EDITION, "tech"), ("gb-en", "top")])
def test_html_has_the_json_pages_stories_in_order(client, edition, section):
    doc = orjson.loads(client.get(f"/v1/editions/{edition}/sections/{section}").data)
    html = client.get(f"/e/{edition}/{section}").data
    assert _story_ids(html) == [s["story_id"] for s in doc["stories"]]
    text = html.decode()
    for s in doc["stories"]:
        rep = s["representative"]
        assert rep["title"] in text and rep["publisher_name"] in text and rep["published_at"] in text
        assert f'href="/stories/{s["story_id"]}"' in text


def test_story_html_has_the_json_articles_in_order(client):
    doc = orjson.loads(client.get(f"/v1/stories/{STORY}?limit=100").data)
    html = client.get(f"/stories/{STORY}").data.decode()
    assert re.findall(r'data-article-id="([^"]+)"', html) == [a["article_id"] for a in doc["articles"]]
    assert f"{doc['article_count']} articles from {doc['publisher_count']} publishers" in html
    for h in ("Timeline", "Publishers"):
        assert f">{h}</h2>" in html


def test_section_nav_marks_the_current_page(client):
    html = client.get(f"/e/{EDITION}/tech").data.decode()
    assert f'<a href="/e/{EDITION}/tech" aria-current="page">Tech</a>' in html
    assert f'<a href="/e/{EDITION}/">Top stories</a>' in html
    assert f'<a href="/e/{EDITION}/for-you">For you</a>' in html


def test_merged_story_redirects_to_the_survivor(client):
    r = client.get(f"/stories/{MERGED}")
    assert r.status_code == 301 and r.headers["Location"] == f"/stories/{STORY}"
    assert r.headers["Cache-Control"] == STORY_CC


@pytest.mark.parametrize(
    "url",
    ["/e/xx-yy/", "/e/NOT/", f"/e/{EDITION}/nope", "/e/xx-yy/for-you", "/stories/123", "/stories/abc", "/assets/x.js"],
)
def test_unknown_pages_are_html_404_cached_briefly(client, url):
    r = client.get(url)
    assert r.status_code == 404, url
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert r.headers["Cache-Control"] == NEGATIVE
    assert r.headers["Content-Security-Policy"] == CSP
    o = outline(r.data)
    assert "main" in o.tags and o.headings[0] == 1
    assert "Not found" in r.data.decode()


def test_pages_before_the_first_load_are_503_not_cached(stores, profiles):
    """Except those of a configured edition, which warm up (tests/serving/test_first_run.py)."""
    app = make_app(stores, profiles)  # nothing published
    for url in ("/e/xx-yy/", f"/stories/{STORY}"):
        r = app.test_client().get(url)
        assert r.status_code == 503 and r.headers["Cache-Control"] == "no-store" and "Retry-After" in r.headers
    app.extensions["newsroom"].close()


def test_for_you_shell_keeps_the_token_client_side(client):
    r = client.get(f"/e/{EDITION}/for-you")
    html = r.data.decode()
    assert f'data-edition="{EDITION}"' in html
    scripts = re.findall(r'<script src="([^"]+)"', html)
    # the helpers every page's scripts share, the cards' relative times, the shell's own script, and reader.js (the
    # controls every page has)
    names = ["common", "reltime", "foryou", "reader"]
    assert [re.fullmatch(r"/assets/[0-9a-f]{10}/(\w+)\.js", u).group(1) for u in scripts] == names
    for url in scripts:
        js = client.get(url).data.decode()
        assert "document.cookie" not in js and "innerHTML" not in js
        if "common.js" in url:
            assert "localStorage" in js  # the token is read from this browser's storage, nowhere else
            # For you's cards (its page and the top page's slice): the token in a header, never a cookie
            assert "Authorization" in js and "/v1/feed/for-you/cards" in js and 'credentials: "omit"' in js
        elif "reltime.js" in url:
            assert "localStorage" not in js and "fetch" not in js  # words times, reads and sends nothing
        elif "foryou.js" in url:
            assert "common.fetchCards(" in js and "fetch(" not in js.replace("common.fetchCards(", "")
        else:
            assert "Authorization" in js and "common.fetchCards(" in js and 'credentials: "omit"' in js


def test_assets_are_shared_and_typed(client):
    css = client.get("/assets/web.css")
    js = client.get("/assets/foryou.js")
    assert css.headers["Content-Type"].startswith("text/css") and js.headers["Content-Type"].startswith(
        "text/javascript"
    )
    for r in (css, js):
        assert r.status_code == 200 and r.headers["Cache-Control"] == PAGE_CC and r.headers["ETag"]
        assert client.get(r.request.path, headers={"If-None-Match": r.headers["ETag"]}).status_code == 304


def test_versioned_assets_are_immutable_for_a_year_and_only_at_their_own_version(client):
    """Every asset a page links has its content version in the path (the CDN's cache key drops unknown query
    strings, so ``?v=`` would share one edge copy across deploys) and is immutable for a year there; the same name
    under another version (a page rendered before a deploy) is served with a page TTL, never pinned."""
    html = client.get(f"/e/{EDITION}/for-you").data.decode() + client.get(f"/e/{EDITION}/").data.decode()
    linked = set(re.findall(r'(?:src|href)="(/assets/[^"]+)"', html))
    assert any(u.endswith("/web.css") for u in linked) and any(u.endswith("/foryou.js") for u in linked)
    for url in linked:
        assert "?" not in url, url
        r = client.get(url)
        assert r.status_code == 200 and r.headers["Cache-Control"] == "public, max-age=31536000, immutable", url
        name = url.rsplit("/", 1)[1]
        assert r.data == client.get(f"/assets/{name}").data
        other = client.get(f"/assets/0000000000/{name}")
        assert other.status_code == 200 and other.headers["Cache-Control"] == PAGE_CC
    assert client.get("/assets/0000000000/nope.js").status_code == 404


EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_everything_from_articles_is_escaped(app, client, world):
    page = samples.edition_page(EDITION, "evil", 1, n_stories=2, first_story=500)
    rep = page["stories"][0]["representative"]
    rep.update(title=EVIL, lede=EVIL, publisher_name=EVIL, url="javascript:alert(1)", image_url="javascript:alert(2)")
    rep["labels"] = ["opinion"]
    publish(world, page)
    arts = samples.coverage_articles(samples.story_id(500), 3)
    arts[0].update(title=EVIL, publisher_name=EVIL, url="javascript:alert(3)", labels=["fact_check"])
    arts[1]["labels"] = ["opinion"]
    cov = samples.story_coverage(samples.story_id(500), 1, arts, title=EVIL)
    cov["links"] = [STORY]
    publish(world, cov)
    app.extensions["newsroom"].watcher.poll_once()
    for url in (f"/e/{EDITION}/evil", f"/stories/{samples.story_id(500)}"):
        r = client.get(url)
        assert r.status_code == 200, url
        html = r.data.decode()
        assert "<script>alert" not in html and "<img src=x" not in html, url
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html, url
        assert "javascript:" not in html, url  # unsafe URLs lose their link, never become an href or src
        assert not outline(r.data).inline, url
    story_html = client.get(f"/stories/{samples.story_id(500)}").data.decode()
    assert ">Fact checks and opinion</h2>" in story_html
    assert 'class="label label-fact_check">Fact check<' in story_html
    assert 'class="label label-opinion">Opinion<' in story_html
    assert f'<a href="/stories/{STORY}" hreflang="en" lang="en">A story</a>' in story_html  # other languages


def test_a_new_page_version_changes_the_html_and_its_etag(app, client, world):
    before = client.get(f"/e/{EDITION}/")
    publish(world, samples.edition_page(EDITION, "top", 2, n_stories=12, first_story=300))
    app.extensions["newsroom"].watcher.poll_once()
    after = client.get(f"/e/{EDITION}/", headers={"If-None-Match": before.headers["ETag"]})
    assert after.status_code == 200 and after.headers["ETag"] != before.headers["ETag"]
    doc = orjson.loads(client.get(f"/v1/editions/{EDITION}/sections/top").data)
    assert _story_ids(after.data) == [s["story_id"] for s in doc["stories"]] and len(doc["stories"]) == 12


@pytest.mark.parametrize(
    "topic_id, title",
    [
        ("entity:org:who", "World Health Organization"),  # the alias table's canonical name
        ("place:pune", "Pune"),
        ("topic:tech", "Tech"),
    ],
)
def test_topic_html_has_the_json_topic_pages_stories_in_order(client, topic_id, title):
    doc = orjson.loads(client.get(f"/v1/topics/{topic_id}?edition={EDITION}&limit=100").data)
    html = client.get(f"/e/{EDITION}/topics/{topic_id}").data
    assert doc["stories"] and _story_ids(html) == [s["story_id"] for s in doc["stories"]]
    assert f"<h1>{title}</h1>" in html.decode()
    assert f'href="/v1/topics/{topic_id}?edition={EDITION}"' in html.decode()
    assert doc["name"] == title  # the JSON page names it as the HTML page does
    assert 'href="https://www.geonames.org/"' in html.decode()  # CC BY 4.0: the gazetteer's credit


def test_the_top_page_links_the_topics_pre_built_this_cycle(app, world, client):
    assert 'aria-label="Topics"' not in client.get(f"/e/{EDITION}/").data.decode()  # none pre-built yet
    prebuild(app, world, {"entity:org:who": 3, "place:pune": 2})
    o = outline(client.get(f"/e/{EDITION}/").data)
    links = {text: href for href, text in o.links if "/topics/" in href}
    assert set(links) >= {"World Health Organization", "Pune"}
    for href in links.values():
        r = client.get(href)
        city = href.endswith("new-york")  # a gazetteer city of us-en: a local page (test_local_pages.py)
        assert r.status_code == 200 and r.headers["Cache-Control"] == ("public, s-maxage=300" if city else TOPIC_CC)
    assert 'aria-label="Topics"' not in client.get(f"/e/{EDITION}/tech").data.decode()  # the top page only


@pytest.mark.parametrize("url", [f"/e/{EDITION}/topics/entity:org:nobody", f"/e/{EDITION}/topics/nonsense"])
def test_unknown_or_malformed_topics_are_html_404(client, url):
    r = client.get(url)
    assert r.status_code == 404 and r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert r.headers["Cache-Control"] == NEGATIVE


def test_the_edition_switcher_lists_only_live_editions_grouped_by_language(world, profiles):
    """An edition is live when its top page is: one with only a World page (its top not yet published) is not
    offered. The switcher groups editions by language under the language's own name, folded in one <details> so it
    takes one row on a phone."""
    publish(world, samples.edition_page("es-es", "top", 1, n_stories=5, first_story=300))
    publish(world, samples.edition_page("ar-es", "world", 1, n_stories=5, first_story=400))
    app = make_app(world, profiles)
    try:
        html = app.test_client().get(f"/stories/{STORY}").data.decode()
    finally:
        app.extensions["newsroom"].close()
    nav = html[
        html.index('<nav aria-label="Editions"') : html.index("</nav>", html.index('<nav aria-label="Editions"'))
    ]
    assert "<details" in nav and "<summary" in nav
    assert re.findall(r'href="/e/([a-z-]+)/"', nav) == ["gb-en", "us-en", "es-es"]
    assert "ar-es" not in nav
    groups = re.findall(r'<li lang="([a-z]+)"><span>([^<]+)</span>', nav)
    assert groups == [("en", "English"), ("es", "Español")]


def test_every_edition_language_has_its_own_name_in_the_switcher():
    from serving.web.messages import LANGUAGE_NAMES
    from transforms.editions.vocabulary.config import load_config

    assert {e.language for e in load_config().editions} <= set(LANGUAGE_NAMES)
