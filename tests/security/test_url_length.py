"""URL length cap: no URL over transforms.common.MAX_URL_CHARS (2,048) is kept, claimed or fetched, whether a feed,
sitemap or front page lists it, a feed names it as its hub, a page claims it as its canonical URL, a redirect points
at it, or someone submits it (a publisher's ping, a feed registry row, an operator's --url). Each is dead-lettered
or refused with reason ``url_too_long``, quoting at most a short prefix. On 55daf5d the front-page crawl kept a
1 MB link as a discovery."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.security.test_parse_cost import LINK, poll
from tests.security.test_ping_limits import T0 as PING_T0
from tests.security.test_ping_limits import env, ping, requests  # noqa: F401 - env is a fixture
from tests.transforms.ingest.conftest import fake_resolver
from transforms.ingest.fetcher import Fetcher, FetcherConfig
from transforms.ingest.guard import AddressGuard

MB_LINK = "https://dailyherald.test/world/2026/01/01/" + "quake-" * (1024 * 1024 // 6)
JUST_OVER = "https://dailyherald.test/world/2026/01/01/quake-" + "x" * (2049 - 48)


def front(*links: str) -> bytes:
    return ("<html><body>" + "".join(f'<a href="{u}">story</a>' for u in links) + "</body></html>").encode()


def rss(*links: str, guid: str | None = None, hub: str | None = None) -> bytes:
    atom = f'<atom:link rel="hub" href="{hub}"/>' if hub else ""
    items = "".join(
        f"<item><title>t{i}</title><link>{u}</link>{f'<guid>{guid}</guid>' if guid else ''}</item>"
        for i, u in enumerate(links)
    )
    return (
        '<?xml version="1.0"?><rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>t</title>'
        f"{atom}{items}</channel></rss>"
    ).encode()


def sitemap(*links: str) -> bytes:
    urls = "".join(
        f"<url><loc>{u}</loc><news:news><news:publication_date>2026-01-01T00:00:00Z</news:publication_date>"
        "</news:news></url>"
        for u in links
    )
    return (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        f'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">{urls}</urlset>'
    ).encode()


def assert_dropped(out, state, long_url: str):
    assert [d.url for d in out.discoveries] == [LINK]
    ((reason, detail),) = [(d["reason"], d["detail"]) for d in out.dead_letters]
    assert reason == "url_too_long" and f"({len(long_url)} characters > 2048)" in detail and len(detail) < 400
    assert all(len(k) <= 2048 for k in state.guids)  # never remembered (the feed state is stored)


@pytest.mark.timeout(120)
def test_the_front_page_crawl_does_not_keep_a_1_mb_link():
    out, state = poll(front(LINK, MB_LINK), "front", "text/html")
    assert_dropped(out, state, MB_LINK)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind, body", [("auto", rss), ("sitemap", sitemap), ("front", front)])
def test_a_link_one_character_over_the_cap_is_dropped_from_every_kind_of_feed(kind, body):
    out, state = poll(body(LINK, JUST_OVER), kind, "text/html" if kind == "front" else "application/xml")
    assert_dropped(out, state, JUST_OVER)
    at_cap = JUST_OVER[:2048]
    out, _ = poll(body(LINK, at_cap), kind, "text/html" if kind == "front" else "application/xml")
    assert sorted(d.url for d in out.discoveries) == sorted([LINK, at_cap]) and not out.dead_letters


@pytest.mark.timeout(120)
def test_a_huge_guid_is_remembered_by_its_digest_and_a_huge_hub_is_ignored():
    out, state = poll(rss(LINK, guid="g" * 100_000, hub="https://hub.test/" + "h" * 5000), "auto")
    assert [d.url for d in out.discoveries] == [LINK] and not out.dead_letters
    (guid,) = state.guids
    assert guid.startswith("sha256:") and len(guid) == 71
    assert state.hub is None and out.subscribe is None


def test_a_canonical_claim_over_the_cap_is_passed_over():
    from transforms.articles.urls import canonical

    url, source = canonical(LINK, [("rel_canonical", JUST_OVER), ("og_url", LINK + "?utm_source=x")])
    assert (url, source) == (LINK, "og_url")
    assert canonical(JUST_OVER, [("rel_canonical", JUST_OVER)])[0] is None  # a fetched URL that long: no URL


class _RedirectToLong(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(302)
        self.send_header("Location", "http://redirector.test/" + "a" * 3000)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def redirector_long():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _RedirectToLong)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_the_fetcher_never_requests_a_url_over_the_cap(redirector_long):
    guard = AddressGuard({"redirector.test": redirector_long}, resolver=fake_resolver)
    fetcher = Fetcher(FetcherConfig(min_host_delay_s=0.0), guard)
    res = fetcher.fetch(JUST_OVER)
    assert res.error == "url_too_long" and len(res.detail) < 400 and fetcher.requests_sent == 0
    res = fetcher.fetch("http://redirector.test/to-long", check_robots=False)  # a redirect to a long URL
    assert res.error == "url_too_long" and res.redirects == 1 and fetcher.requests_sent == 1


def test_a_ping_for_a_feed_url_over_the_cap_is_refused_without_a_poll(env):  # noqa: F811
    status = ping(env.workers[0], "http://agenciasur.test/rss/ultima-hora.xml?" + "x" * 3000, PING_T0)
    assert status.status_code == 400 and status.get_json()["code"] == "url_too_long"
    assert requests(env) == []


def test_a_feed_registry_row_over_the_cap_is_refused():
    from transforms.ingest.registry import normalise
    from transforms.publishers import default_registry

    with pytest.raises(ValueError, match="over 2048 characters"):
        normalise({"url": JUST_OVER}, default_registry())


def test_takedown_of_a_url_over_the_cap_is_status_2_and_writes_nothing(tmp_path, capsys):
    from pipelines.cli import main as newsroom
    from stores import StoreConfig, open_stores

    data = str(tmp_path / "data")
    open_stores(StoreConfig(data_dir=data))
    status = newsroom(["takedown", "--url", MB_LINK, "--reason", "r", "--data_dir", data, "--cdn", "queue"])
    err = capsys.readouterr().err
    assert status == 2 and "2048" in err and len(err) < 1000
    assert newsroom(["takedown", "--list", "--data_dir", data, "--cdn", "queue"]) == 0
    assert "dailyherald" not in capsys.readouterr().out
