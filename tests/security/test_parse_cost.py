"""Parse cost: one element with 40,000 attributes (an RSS item, an Atom entry, a sitemap url, a front page, an article
page; ~430 KB each) is refused by a linear scan before any parser runs, and what else a hostile body might make a
parser do is stopped by a CPU budget per parse (feeds, sitemaps, fronts) or per page (extraction), then
dead-lettered with its reason while the next item goes on.

On 55daf5d these bodies cost 21.7 s (feedparser) to ~20 s (lxml, trafilatura, htmldate) of CPU each, and nothing
bounded the feed parse. No timing asserts: the refusal itself is asserted, and the timeout marker only keeps a
regression from stalling the suite (the refusal takes well under a second; a budgeted child starts in a few)."""

from __future__ import annotations

import os

import pytest

from tests.transforms.articles.conftest import T0, WIRE_REPORT, make_html, make_raw
from transforms.ingest import poller
from transforms.ingest import schedule as sch
from transforms.ingest.feeds import FeedError, parse_feed
from transforms.ingest.fetcher import FetchResult
from transforms.ingest.fronts import parse_front

N = 40_000
LINK = "https://dailyherald.test/world/2026/01/01/quake-hits-the-coast"


def attrs(n: int = N) -> str:
    return " ".join(f'a{i}="{i}"' for i in range(n))


def hostile_rss(n: int = N) -> bytes:
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item {attrs(n)}><title>x</title>'
        f"<link>{LINK}</link></item></channel></rss>"
    ).encode()


def hostile_atom(n: int = N) -> bytes:
    return (
        f'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><entry {attrs(n)}>'
        f'<id>x</id><title>x</title><link href="{LINK}"/></entry></feed>'
    ).encode()


def hostile_sitemap(n: int = N) -> bytes:
    return (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        f'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"><url {attrs(n)}><loc>{LINK}</loc>'
        "<news:news><news:publication_date>2026-01-01T00:00:00Z</news:publication_date></news:news></url></urlset>"
    ).encode()


def hostile_front(n: int = N) -> bytes:
    return f'<html><body><div {attrs(n)}><a href="{LINK}">Quake</a></div></body></html>'.encode()


class OneBody:
    """A fetcher that answers every URL with one body (the poller's only use of it here)."""

    def __init__(self, body: bytes, content_type: str):
        self.body, self.content_type = body, content_type

    def fetch(self, url, headers=None, check_robots=True, **_):
        headers = {"content-type": self.content_type}
        return FetchResult(url=url, final_url=url, status=200, headers=headers, body=self.body, fetched_at_ms=T0)


def poll(body: bytes, kind: str, content_type: str = "application/xml"):
    cfg = poller.FeedConfig(url="https://dailyherald.test/feed", publisher_id="daily-herald", kind=kind)
    state = sch.FeedState(feed_url=cfg.url)
    out = poller.poll_feed(poller.Poll(OneBody(body, content_type), sch.SchedulePolicy(), T0), cfg, state)
    return out, state


@pytest.mark.timeout(15)
@pytest.mark.parametrize("body", [hostile_rss(), hostile_atom(), hostile_sitemap()], ids=["rss", "atom", "sitemap"])
def test_a_feed_with_a_40000_attribute_element_is_refused_before_parsing(body):
    assert 400_000 < len(body) < 600_000
    with pytest.raises(FeedError) as exc:
        parse_feed(body, "https://dailyherald.test/feed", T0)
    assert exc.value.reason == "hostile_markup" and "40000" in exc.value.detail


@pytest.mark.timeout(15)
def test_a_front_with_a_40000_attribute_element_is_refused_before_parsing():
    with pytest.raises(FeedError) as exc:
        parse_front(hostile_front(), "https://dailyherald.test/")
    assert exc.value.reason == "hostile_markup"


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "body, kind",
    [(hostile_rss(), "auto"), (hostile_atom(), "atom"), (hostile_sitemap(), "sitemap"), (hostile_front(), "front")],
    ids=["rss", "atom", "sitemap", "front"],
)
def test_a_polled_hostile_body_is_dead_lettered_and_the_feed_backs_off(body, kind):
    out, state = poll(body, kind, "text/html" if kind == "front" else "application/xml")
    assert [d["reason"] for d in out.dead_letters] == ["hostile_markup"]
    assert out.discoveries == [] and state.errors == 1


@pytest.mark.timeout(60)
def test_an_article_page_with_a_40000_attribute_element_is_dead_lettered():
    from transforms.articles.page import Rejected
    from transforms.articles.worker import NormalizeWorker

    page = make_html("Quake hits coast", WIRE_REPORT, canonical=LINK).replace(
        b"<article", f"<article {attrs()}".encode()
    )
    with NormalizeWorker(budget_s=10) as worker:
        with pytest.raises(Rejected) as exc:
            worker.normalize(make_raw(LINK, page, fetched_at=T0))
        assert exc.value.reason == "hostile_markup"
        good = make_html("Quake hits coast", WIRE_REPORT, canonical=LINK)
        assert worker.normalize(make_raw(LINK, good, fetched_at=T0))["title"] == "Quake hits coast"
        assert worker.restarts == 0  # refused by the scan, not by the budget


def nested_feed(depth: int) -> bytes:
    """Linear but slow for feedparser (~2 s per MiB): what the budget, not the scan, has to stop."""
    head = b'<rss version="2.0"><channel><title>t</title><item><link>' + LINK.encode() + b"</link>"
    return head + b"<b>" * depth + b"</item></channel></rss>"


@pytest.mark.timeout(120)
def test_a_parse_over_its_cpu_budget_is_killed_dead_lettered_and_the_next_poll_goes_on(monkeypatch):
    from transforms.ingest import parsing

    monkeypatch.setenv("NEWSROOM_PARSE_BUDGET_S", "0.5")
    ok, _ = poll(hostile_rss(3), "auto")  # starts the pool's child
    assert [d.url for d in ok.discoveries] == [LINK]
    (worker,) = [w for w in parsing._IDLE if w.budget_s == 0.5]
    pid = worker.pid
    out, state = poll(nested_feed(1_000_000), "auto")  # ~3 MB: several seconds of CPU in feedparser
    assert [(d["reason"], d["detail"]) for d in out.dead_letters] == [
        ("parse_budget_exceeded", "parse budget exceeded: more than 0.5 s")
    ]
    assert state.errors == 1 and worker.restarts == 1
    with pytest.raises(ProcessLookupError):  # the runaway child is gone, not left burning a core
        os.kill(pid, 0)
    again, _ = poll(hostile_rss(3), "auto")  # a fresh child takes the next feed
    assert [d.url for d in again.discoveries] == [LINK] and worker.pid != pid


@pytest.mark.parametrize(
    "tag, counted",
    [
        ("<p " + " ".join(f"a{i}" for i in range(256)) + ">", None),  # at the limit: kept
        ("<p " + " ".join(f"a{i}" for i in range(257)) + ">", 257),
        ("<p " + "".join(f'a{i}="1"' for i in range(300)) + ">", 300),  # no spaces between quoted values
        ("<p " + "/".join(f"a{i}" for i in range(300)) + ">", 300),  # "/" separates HTML attributes
        ('<p x=">" ' + " ".join(f"a{i}" for i in range(300)) + ">", 301),  # a quoted ">" does not end the tag
        ("</p " + " ".join(f"a{i}" for i in range(300)) + ">", 300),  # end tags too
        ("<noscript><p " + " ".join(f"a{i}" for i in range(300)) + "></noscript>", 300),  # libxml2 parses these
        ("<script>var s = '<p " + " ".join(f"a{i}" for i in range(300)) + ">';</script>", None),  # text, not a tag
        ("<!-- <p " + " ".join(f"a{i}" for i in range(300)) + "> -->", None),
    ],
)
def test_the_scan_counts_what_a_parser_reads_as_attributes(tag, counted):
    from transforms import markup

    found = markup.crowded_element("<html><body>" + tag + "</body></html>")
    assert (found and found[1]) == counted


def test_in_xml_a_cdata_section_is_text_but_a_script_element_is_not():
    from transforms import markup

    many = " ".join(f'a{i}="1"' for i in range(300))
    assert markup.crowded_element(f"<rss><![CDATA[<p {many}>]]></rss>".encode(), xml=True) is None
    assert markup.crowded_element(f"<rss><script><p {many}/></script></rss>".encode(), xml=True)[1] == 300


@pytest.mark.timeout(120)
def test_the_scan_reads_256_kib_of_hostile_shapes_once():
    # Shapes that make a naive scanner rescan (unclosed quotes, comments, raw-text elements): each must finish
    # (~0.2 s per MiB). No timing assert: the timeout marker catches a superlinear regression (quadratic on 256 KiB
    # of these is many minutes).
    from transforms import markup

    for unit in (b"<", b'<a x="', b"<a '", b"<!--", b"<script>", b"<a =", b"<a ", b"<title><p "):
        body = unit * (256 * 1024 // len(unit))
        assert markup.crowded_element(body) == markup.crowded_element(body.decode())  # bytes and text alike
        markup.crowded_element(body, xml=True)


@pytest.mark.timeout(30)
def test_many_doctype_openings_are_read_once():
    # The XML-bomb check's one regular expression rescanned from every "<!DOCTYPE" to the next ">": 96 KB of
    # openings took 22 s (quadratic); 200 KB now take milliseconds and the timeout marker catches a regression.
    from transforms.articles.page import Rejected, check_markup

    check_markup("<html><body>" + "<!DOCTYPE x " * 16_000 + "</body></html>")  # no subset: nothing to refuse
    for bomb in ('<!DOCTYPE x PUBLIC "a>b" [ <!-- -->', "<!doctype x 'q' [", '<!DOCTYPE a><p>"</p><!DOCTYPE b ['):
        with pytest.raises(Rejected) as exc:
            check_markup("<html><body>" + bomb + "</body></html>")
        assert exc.value.reason == "xml_bomb"


@pytest.mark.timeout(10)
def test_a_link_header_of_unclosed_targets_is_read_once():
    # feeds.py's Link header pattern rescanned to the end from every "<": 60,000 of them (a header line http.client
    # still takes) cost ~20 s of CPU per poll.
    from transforms.ingest.feeds import parse_link_header

    assert parse_link_header("<" * 60_000) == {}
    assert parse_link_header('<https://hub.test/>; rel="hub", <https://x.test/f>; rel="self"') == {
        "hub": "https://hub.test/",
        "self": "https://x.test/f",
    }


@pytest.mark.timeout(10)
def test_a_json_ld_article_body_of_unclosed_tags_is_read_once():
    # The JSON-LD articleBody's tag stripping rescanned from every "<" to the end: quadratic in a body of up to 4 MiB.
    from transforms.articles.body import _jsonld_plausible

    assert _jsonld_plausible(">" + "<" * 150_000) == ">" + "<" * 150_000
    assert _jsonld_plausible("<p>" + "word " * 100 + "</p>") == ("word " * 100).strip()
