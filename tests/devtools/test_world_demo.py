"""The sample world as a reader's browser sees it (devtools/world/demo.py): the address
``newsroom run`` prints answers with an index of the publishers, each site's pages answer by path on it
(``/world/{host}/{path}``) with their links kept on the same server, and every article has a picture (an SVG the
world serves, named by ``og:image``) that the normaliser puts on the card."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from devtools.world.server import SampleWorld

WORLD_AT = 10 * 86400  # virtual seconds since the world started: every scripted article is public


@pytest.fixture(scope="module")
def world():
    w = SampleWorld(speed=1.0, start_s=time.time() - WORLD_AT).start()
    yield w
    w.stop()


def _get(url: str, host: str | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _article(world) -> dict:
    return next(a for a in world.articles.values() if not a.get("members") and a["host"] == "dailyherald.test")


def test_the_printed_world_address_answers_with_its_publishers(world):
    status, headers, body = _get(world.base_url + "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    for p in world.registry:
        assert f'href="/world/{p.hosts[0]}/"'.encode() in body
    assert _get(world.base_url + "/nothing")[0] == 404  # only the index and /world/ paths answer by address


def test_an_article_answers_by_path_with_its_links_on_the_same_server(world):
    a = _article(world)
    status, _, body = _get(f"{world.base_url}/world/{a['host']}/news/{a['id']}")
    assert status == 200
    html = body.decode()
    assert a["paras"][0].split()[0] in html
    assert 'href="http://' not in html and 'src="http://' not in html  # no link a browser cannot open
    assert f'href="/world/{a["host"]}/' in html
    assert _get(f"{world.base_url}/world/nowhere.test/news/{a['id']}")[0] == 404
    # the virtual host keeps the publisher's real URLs (what ingest fetches and stores)
    _, _, direct = _get(f"{world.base_url}/news/{a['id']}", host=a["host"])
    assert f'<link rel="canonical" href="{a["url"]}">'.encode() in direct


def test_every_article_has_an_image_the_world_serves(world):
    a = _article(world)
    _, _, page = _get(f"{world.base_url}/news/{a['id']}", host=a["host"])
    image = f"http://{a['host']}/img/{a['id']}.svg"
    assert f'<meta property="og:image" content="{image}">'.encode() in page
    status, headers, svg = _get(f"{world.base_url}/world/{a['host']}/img/{a['id']}.svg")
    assert status == 200 and headers["Content-Type"] == "image/svg+xml" and svg.startswith(b"<svg")
    assert _get(f"{world.base_url}/world/{a['host']}/img/no-such-article.svg")[0] == 404


def test_the_normaliser_puts_the_worlds_image_on_the_article(world):
    from transforms.articles.normalize import Normalizer

    a = _article(world)
    _, _, page = _get(f"{world.base_url}/news/{a['id']}", host=a["host"])
    art = Normalizer(registry=world.registry).extract(page, url=a["url"], headers={}, now_ms=int(time.time() * 1000))
    assert art["image_url"] == f"http://{a['host']}/img/{a['id']}.svg"
    assert (art["image_width"], art["image_height"]) == (1200, 630)
