"""Times in UTC: RFC 822, W3C, JSON-LD, meta tags; zone-less times in the publisher's zone; the future refused."""

from __future__ import annotations

import pytest

from transforms.articles import dates, page, structured
from transforms.articles.page import Rejected

NOW = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize(
    "text,tz,iso,zoned",
    [
        ("Wed, 31 Dec 2025 23:15:00 GMT", "UTC", "2025-12-31T23:15:00Z", True),  # RFC 822
        ("Wed, 31 Dec 2025 18:15:00 -0500", "UTC", "2025-12-31T23:15:00Z", True),
        ("Wed, 31 Dec 2025 18:15:00 EST", "UTC", "2025-12-31T23:15:00Z", True),
        ("2025-12-31T23:15:00Z", "UTC", "2025-12-31T23:15:00Z", True),  # W3C
        ("2025-12-31T23:15:00.123+01:00", "UTC", "2025-12-31T22:15:00Z", True),
        ("2025-12-31T18:15:00-0500", "UTC", "2025-12-31T23:15:00Z", True),
        ("2025-12-31 18:15", "America/New_York", "2025-12-31T23:15:00Z", False),  # zone-less: publisher's zone
        ("2025-07-01T12:00:00", "Europe/Madrid", "2025-07-01T10:00:00Z", False),  # summer time
        ("2025-12-31", "Asia/Tokyo", "2025-12-30T15:00:00Z", False),
        ("20251231T231500Z", "UTC", "2025-12-31T23:15:00Z", True),
        ("1767222900", "UTC", "2025-12-31T23:15:00Z", True),
        ("December 31, 2025 6:15 PM", "America/New_York", "2025-12-31T23:15:00Z", False),
    ],
)
def test_parse(text, tz, iso, zoned):
    p = dates.parse(text, tz)
    assert p is not None
    assert dates.iso(p.ms) == iso
    assert p.zoned is zoned


@pytest.mark.parametrize("text", ["", "yesterday-ish", "no date here", None, "31/31/2025 99:99"])
def test_parse_garbage_is_none(text):
    assert dates.parse(text, "UTC") is None


def _meta(html: str):
    _, tree = page.load(html.encode(), {})
    return structured.read(tree), tree


def test_json_ld_beats_meta_beats_feed():
    pm, tree = _meta(
        "<html><head><meta property='article:published_time' content='2025-12-31T10:00:00Z'>"
        '<script type=\'application/ld+json\'>{"@type": "NewsArticle", "headline": "h", '
        '"datePublished": "2025-12-31T09:00:00Z", "dateModified": "2025-12-31T11:00:00Z"}</script>'
        "</head><body><p>x</p></body></html>"
    )
    got = dates.choose(pm, "Wed, 31 Dec 2025 08:00:00 GMT", "UTC", NOW, tree=tree)
    assert (dates.iso(got.stated_ms), got.source) == ("2025-12-31T09:00:00Z", "json_ld")
    assert dates.iso(got.modified_ms) == "2025-12-31T11:00:00Z"
    pm2, _ = _meta(
        "<html><head><meta property='article:published_time' content='2025-12-31T10:00:00Z'></head><body></body></html>"
    )
    assert dates.choose(pm2, "Wed, 31 Dec 2025 08:00:00 GMT", "UTC", NOW).source == "meta:article:published_time"
    pm3, _ = _meta("<html><head></head><body><p>x</p></body></html>")
    got = dates.choose(pm3, "Wed, 31 Dec 2025 08:00:00 GMT", "UTC", NOW)
    assert (dates.iso(got.stated_ms), got.source) == ("2025-12-31T08:00:00Z", "feed")


def test_future_stated_time_is_rejected():
    pm, _ = _meta("<html><head><meta property='article:published_time' content='2026-01-01T02:00:00Z'></head></html>")
    with pytest.raises(Rejected) as exc:
        dates.choose(pm, None, "UTC", NOW)
    assert exc.value.reason == "future_date"


def test_small_clock_skew_is_tolerated():
    pm, _ = _meta("<html><head><meta property='article:published_time' content='2026-01-01T00:05:00Z'></head></html>")
    assert dates.iso(dates.choose(pm, None, "UTC", NOW).stated_ms) == "2026-01-01T00:05:00Z"


def test_zoneless_time_a_few_hours_ahead_is_a_zone_problem_not_a_lie():
    # Written in Tokyo local time without a zone, registry says UTC: 9 h "ahead" -> kept (clamped by the caller).
    pm, _ = _meta("<html><head><meta property='article:published_time' content='2026-01-01T08:30:00'></head></html>")
    got = dates.choose(pm, None, "UTC", NOW)
    assert got.stated_ms > NOW and not got.zoned
    pm2, _ = _meta("<html><head><meta property='article:published_time' content='2026-01-03T08:30:00'></head></html>")
    with pytest.raises(Rejected):
        dates.choose(pm2, None, "UTC", NOW)


def test_future_feed_date_is_rejected_too():
    with pytest.raises(Rejected) as exc:
        dates.choose(None, "Fri, 01 Jan 2027 00:00:00 GMT", "UTC", NOW)
    assert exc.value.reason == "future_date"


def test_htmldate_guess_when_nothing_is_stated():
    pm, tree = _meta(
        "<html><head><title>t</title></head><body><article><h1>Title</h1>"
        "<p class='date'>Published on 2025-12-30</p><p>Some article text that goes on for a while.</p>"
        "</article></body></html>"
    )
    got = dates.choose(pm, None, "UTC", NOW, tree=tree, url="https://herald.test/2025/12/30/story")
    assert got.source == "htmldate"
    assert dates.iso(got.stated_ms).startswith("2025-12-30")


def test_nothing_stated():
    pm, _ = _meta("<html><head><title>t</title></head><body><p>no dates</p></body></html>")
    got = dates.choose(pm, None, "UTC", NOW)
    assert got.stated_ms is None and got.source == "none"
