"""Front pages as a feed kind: the article-link rule on real pages, and a front polled against the sample world."""

from __future__ import annotations

import gzip
import json
import time
from urllib.parse import urldefrag, urljoin

import lxml.html
import pytest

from stores import StoreConfig
from stores.feeds import open_feed_store
from transforms.ingest import fronts, poller, registry
from transforms.ingest import schedule as sch

POLICY = sch.SchedulePolicy()
FRONT = "http://dailyherald.test/"


@pytest.mark.parametrize(
    "url",
    [
        "https://www.example.com/2019/10/03/markets-fall/",
        "https://news.example.com/world/europe-12345678",
        "https://www.example.com/politics/senate-passes-the-budget-bill",
        "https://www.example.com/a/b/quake-hits.html",
    ],
)
def test_article_shaped_links_are_kept(url):
    assert fronts.is_article_link(url, "https://www.example.com/")


@pytest.mark.parametrize(
    "url",
    [
        "https://www.example.com/",
        "https://www.example.com/world",
        "https://www.example.com/sport/football/",
        "https://www.example.com/tag/brexit-and-the-eu-vote",
        "https://www.example.com/author/jane-marie-doe",
        "https://www.example.com/terms-of-service-and-privacy",
        "https://www.example.com/2019/10/03/photo-of-the-day.jpg",
        "https://other.org/2019/10/03/markets-fall/",
        "mailto:desk@example.com",
    ],
)
def test_navigation_foreign_and_non_page_links_are_dropped(url):
    assert not fronts.is_article_link(url, "https://www.example.com/")


def _real_pages(shared_data):
    root = shared_data / "pages"
    truth = json.loads((root / "extraction-benchmark" / "ground-truth.json").read_text(encoding="utf-8"))
    for key, value in truth.items():
        path = root / "extraction-benchmark" / "html" / f"{key}.html.gz"
        if value.get("url") and path.exists():
            yield gzip.decompress(path.read_bytes()), value["url"]
    for meta_path in sorted(root.glob("newspaper4k-fixtures/*/metadata/*.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        html = meta_path.parent.parent / "html" / (meta_path.stem + ".html")
        if meta.get("url") and html.exists():
            yield html.read_bytes(), meta["url"]


def _nav_links(body: bytes, url: str) -> set:
    doc = lxml.html.fromstring(body)
    out = set()
    for el in doc.xpath("//nav|//*[@role='navigation']"):
        for a in el.iter("a"):
            href = (a.get("href") or "").strip()
            if href and not href.startswith(("#", "javascript:", "mailto:")):
                out.add(urldefrag(urljoin(url, href))[0])
    return out


def test_rule_on_real_pages(shared_data):
    """The figures of the module docstring: own URL kept (recall), same-site <nav> links dropped."""
    own = own_kept = nav = nav_kept = 0
    for body, url in _real_pages(shared_data):
        home = urljoin(url, "/")
        own += 1
        own_kept += fronts.is_article_link(url, home)
        for link in _nav_links(body, url):
            if fronts._site(link) == fronts._site(url) and link.rstrip("/") != url.rstrip("/"):
                nav += 1
                nav_kept += fronts.is_article_link(link, home)
    assert own >= 100 and nav >= 2000
    assert own_kept / own >= 0.93, (own_kept, own)
    assert 1 - nav_kept / nav >= 0.82, (nav_kept, nav)


def test_parse_front_reads_links_and_rejects_junk():
    body = b'<html><body><a href="/news/a-big-story-today#c">A</a><a href="/world">W</a></body></html>'
    parsed = fronts.parse_front(body, "https://www.example.com/")
    assert [e.link for e in parsed.entries] == ["https://www.example.com/news/a-big-story-today"]
    assert parsed.entries[0].summary == "A" and parsed.entries[0].title is None
    with pytest.raises(fronts.FeedError):
        fronts.parse_front(b"   ", "https://www.example.com/")


def test_registry_accepts_the_front_kind():
    reg = registry.default_registry()
    (entry,) = registry.entries_from_document([{"url": FRONT, "kind": "front"}], reg)
    assert entry["kind"] == "front" and entry["publisher_id"] == "daily-herald"


def test_front_feed_yields_new_articles_once_and_respects_robots(world, fetcher, tmp_path):
    store = open_feed_store(StoreConfig(data_dir=str(tmp_path / "data")))
    cfg = poller.FeedConfig(url=FRONT, publisher_id="daily-herald", tier="authoritative", kind="front")
    st = sch.FeedState(feed_url=cfg.url)
    out = poller.poll_feed(poller.Poll(fetcher, POLICY, int(time.time() * 1000)), cfg, st)
    now = world.clock.now_ms()
    public = {a["url"] for a in world.articles.values() if a["pub"] == "daily-herald" and world.is_public(a, now)}
    assert out.status == 200 and not out.dead_letters
    assert {d.url for d in out.discoveries} == public  # nav, tag, author, about, other site: dropped
    assert {d.source for d in out.discoveries} == {"FEED"}
    for d in out.discoveries:
        raw, dead = poller.fetch_page(fetcher, d, store, int(time.time() * 1000), sleep=lambda s: None)
        assert raw and not dead
    assert world.requests_for("dailyherald.test", "/robots.txt")  # a front is a page: robots are asked
    again = poller.poll_feed(poller.Poll(fetcher, POLICY, int(time.time() * 1000)), cfg, st)
    assert again.status == 304 and not again.discoveries  # conditional GET
    st.etag = st.last_modified = None  # a server without validators: the seen set alone
    again = poller.poll_feed(poller.Poll(fetcher, POLICY, int(time.time() * 1000)), cfg, st)
    assert again.status == 200 and not again.discoveries
