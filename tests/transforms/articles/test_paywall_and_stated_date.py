"""The normaliser reads what a page says about access and its own date: schema.org
``isAccessibleForFree`` into ``accessible_for_free``, and the stated publication time, unclamped, into
``stated_published_at`` (the authority job's re-dating evidence; ``published_at`` stays min(stated, first seen))."""

from __future__ import annotations

import pytest

from schemas import codec
from transforms.articles import dates

URL = "https://dailyherald.test/world/2025/12/31/earthquake-coast"


def article(normalizer, kit, ld: dict | None, first_seen=None, **html_kw):
    html = kit.make_html("Earthquake shakes coast, no deaths reported", kit.WIRE_REPORT, canonical=URL, jsonld=ld)
    raw = kit.make_raw(URL, html, fetched_at=kit.T0, first_seen_at=first_seen or kit.T0 - 5 * 60_000)
    art = normalizer.normalize(raw)
    codec.check("Article", art)
    return art


def news(**kw) -> dict:
    return {"@context": "https://schema.org", "@type": "NewsArticle", "headline": "Earthquake shakes coast", **kw}


@pytest.mark.parametrize("value", [False, "False", "false", "https://schema.org/False"])
def test_an_article_stated_not_free_is_paywalled(normalizer, kit, value):
    assert article(normalizer, kit, news(isAccessibleForFree=value))["accessible_for_free"] is False


def test_the_paywall_markup_on_the_web_page_object_counts_too(normalizer, kit):
    ld = {"@context": "https://schema.org", "@graph": [news(), {"@type": "WebPage", "isAccessibleForFree": "False"}]}
    assert article(normalizer, kit, ld)["accessible_for_free"] is False


@pytest.mark.parametrize("ld", [None, news(), news(isAccessibleForFree=True), news(isAccessibleForFree="True")])
def test_unstated_or_stated_free_is_free(normalizer, kit, ld):
    assert article(normalizer, kit, ld)["accessible_for_free"] is True


def test_the_stated_publication_time_is_kept_unclamped(normalizer, kit):
    # re-fetched now, the page claims it was published an hour ago; we first saw it two days ago: a re-dating
    two_days_ago = kit.T0 - 48 * 3600_000
    art = article(normalizer, kit, news(datePublished="2025-12-31T23:00:00Z"), first_seen=two_days_ago)
    assert art["published_at"] == two_days_ago  # min(stated, first seen), as before
    assert dates.iso(art["stated_published_at"]) == "2025-12-31T23:00:00Z"
