"""A publisher's 404/410 on a re-fetch tombstones the article (transforms/ingest/gone.py through
poller.fetch_page): reason ``publisher_gone_404``/``_410``, who ``ingest``, audited once; a first fetch's 404 is
only a dead letter. On both backends (embedded; Bigtable emulator)."""

from __future__ import annotations

import pytest

from stores.audit import open_audit_log
from stores.takedowns import open_takedown_store
from transforms.articles.urls import article_id
from transforms.ingest import poller
from transforms.ingest.fetcher import FetchResult
from transforms.ingest.gone import open_publisher_gone

URL = "http://wirepress.test/news/withdrawn-story?utm_source=rss"
CLEAN = "http://wirepress.test/news/withdrawn-story"


def discovery(is_update: bool, url: str = URL) -> poller.Discovery:
    return poller.Discovery(
        url=url,
        feed_url="http://wirepress.test/rss.xml",
        publisher_id="wirepress",
        source="FEED",
        first_seen_at=1,
        claim_key=url + ("#fp" if is_update else ""),
        owner="d-" + str(is_update),
        is_update=is_update,
    )


class Answers:
    """A fetcher whose publisher answers ``status`` (the real Fetcher is exercised by the world test below)."""

    def __init__(self, status: int):
        self.status = status

    def fetch(self, url, **kw):
        return FetchResult(url=url, final_url=url, status=self.status, fetched_at_ms=1)


@pytest.mark.parametrize("status", [404, 410])
def test_a_refetch_answering_404_or_410_takes_the_article_down_once(store_config, status):
    gone = open_publisher_gone(store_config)
    raw, dl = poller.fetch_page(Answers(status), discovery(True), None, 1, gone=gone)
    assert raw is None and dl["reason"] == f"http_{status}"
    (t,) = open_takedown_store(store_config).all()
    assert (t.kind, t.id, t.url, t.reason, t.who) == (
        "article",
        article_id(CLEAN),
        CLEAN,
        f"publisher_gone_{status}",
        "ingest",
    )
    poller.fetch_page(Answers(status), discovery(True), None, 2, gone=gone)  # fetched again: nothing twice
    (entry,) = open_audit_log(store_config).entries(f"article:{article_id(CLEAN)}")
    assert (entry["action"], entry["who"], entry["why"]) == ("takedown", "ingest", f"publisher_gone_{status}")


def test_a_first_fetch_404_or_another_error_takes_nothing_down(embedded_store_config):
    gone = open_publisher_gone(embedded_store_config)
    assert poller.fetch_page(Answers(404), discovery(False), None, 1, gone=gone)[1]["reason"] == "http_404"
    assert poller.fetch_page(Answers(403), discovery(True), None, 1, gone=gone)[1]["reason"] == "http_403"
    assert open_takedown_store(embedded_store_config).all() == []


def test_the_world_publisher_withdrawing_a_page_is_seen_through_the_real_fetcher(world, fetcher, embedded_store_config):
    gone = open_publisher_gone(embedded_store_config)
    d = discovery(True, "http://wirepress.test/news/no-such-article")
    raw, dl = poller.fetch_page(fetcher, d, None, 1, sleep=lambda s: None, gone=gone)
    assert raw is None and dl["reason"] == "http_404"
    (t,) = open_takedown_store(embedded_store_config).all()
    assert t.reason == "publisher_gone_404" and t.url == "http://wirepress.test/news/no-such-article"
