"""Canonical URL choice: evidence order, cleaning, AMP, redirect wrappers, cross-host care."""

from __future__ import annotations

import hashlib

import pytest

from transforms.articles import urls
from transforms.publishers import PublisherRegistry

REGISTRY = PublisherRegistry.from_dicts(
    [
        {
            "publisher_id": "herald",
            "name": "Herald",
            "hosts": ["herald.test", "heraldnews.test"],
            "region": "us",
            "language": "en",
        },
        {
            "publisher_id": "wire",
            "name": "Wire",
            "hosts": ["wire.test"],
            "region": "",
            "language": "en",
            "is_wire": True,
        },
    ]
)


@pytest.mark.parametrize(
    "raw,clean",
    [
        ("https://herald.test/a/b?utm_source=rss&utm_medium=feed&id=7#comments", "https://herald.test/a/b?id=7"),
        ("https://herald.test/a/b/?fbclid=IwAR0&gclid=x&hpt=hp_t1", "https://herald.test/a/b/"),
        ("HTTPS://Herald.TEST:443/a//b", "https://herald.test/a/b"),
        (
            "https://herald.test/news?idx=8576&page=1&bc=03&find=&sch_date=",
            "https://herald.test/news?idx=8576&page=1&bc=03&find=&sch_date=",
        ),
        ("https://www.google.com/url?q=https%3A%2F%2Fherald.test%2Fa%3Futm_source%3Dx&sa=D", "https://herald.test/a"),
        ("https://l.facebook.com/l.php?u=https%3A%2F%2Fherald.test%2Fa&h=AT0", "https://herald.test/a"),
        ("javascript:void(0)", None),
        ("not a url", None),
    ],
)
def test_clean(raw, clean):
    assert urls.clean(raw) == clean


@pytest.mark.parametrize(
    "amp,main",
    [
        ("https://herald.test/world/story-1/amp", "https://herald.test/world/story-1"),
        ("https://herald.test/world/story-1/amp/", "https://herald.test/world/story-1/"),
        ("https://herald.test/amp/world/story-1", "https://herald.test/world/story-1"),
        ("https://herald.test/world/story-1.amp.html", "https://herald.test/world/story-1.html"),
        ("https://herald.test/world/story-1?outputType=amp", "https://herald.test/world/story-1"),
        ("https://amp.herald.test/world/story-1", "https://www.herald.test/world/story-1"),
        ("https://herald-test.cdn.ampproject.org/c/s/herald.test/world/story-1", "https://herald.test/world/story-1"),
    ],
)
def test_amp_to_main(amp, main):
    assert urls.is_amp_url(amp)
    assert urls.clean(urls.amp_to_main(amp)) == main


def test_evidence_order_rel_canonical_first():
    url, source = urls.canonical(
        "https://herald.test/x?utm_source=a",
        [("rel_canonical", "/world/story-1"), ("og_url", "https://herald.test/og"), ("json_ld", None)],
        REGISTRY,
    )
    assert (url, source) == ("https://herald.test/world/story-1", "rel_canonical")


def test_falls_back_to_og_then_json_ld_then_fetched():
    assert (
        urls.canonical("https://herald.test/x", [("rel_canonical", None), ("og_url", "https://herald.test/og")])[1]
        == "og_url"
    )
    assert (
        urls.canonical("https://herald.test/x", [("json_ld", "https://herald.test/ld")])[0] == "https://herald.test/ld"
    )
    assert urls.canonical("https://herald.test/x?utm_campaign=y#top", []) == (
        "https://herald.test/x",
        "fetched_url_cleaned",
    )


def test_amp_page_without_canonical_is_mapped():
    assert urls.canonical("https://herald.test/world/story-1/amp", []) == (
        "https://herald.test/world/story-1",
        "amp_mapped",
    )


def test_cross_host_canonical_is_rejected_and_recorded():
    # A syndicated copy naming the wire's URL keeps its own URL (and so its own article id and publisher).
    url, source = urls.canonical(
        "https://herald.test/world/copy", [("rel_canonical", "https://wire.test/story/9")], REGISTRY
    )
    assert url == "https://herald.test/world/copy"
    assert source == "fetched_url_cleaned;cross_host_rejected:wire.test"


def test_cross_host_canonical_of_the_same_publisher_is_accepted():
    url, source = urls.canonical(
        "https://heraldnews.test/s/1", [("rel_canonical", "https://herald.test/s/1")], REGISTRY
    )
    assert url == "https://herald.test/s/1"
    assert source == "rel_canonical;cross_host_same_publisher"
    # subdomains of one site are not "cross host"
    assert (
        urls.canonical("https://edition.herald.test/s/1", [("rel_canonical", "https://www.herald.test/s/1")])[1]
        == "rel_canonical"
    )


def test_amp_cache_page_may_name_its_origin():
    url, source = urls.canonical(
        "https://herald-test.cdn.ampproject.org/c/s/herald.test/s/1/amp", [("rel_canonical", "https://herald.test/s/1")]
    )
    assert (url, source) == ("https://herald.test/s/1", "rel_canonical")


def test_homepage_canonical_is_rejected():
    url, source = urls.canonical("https://herald.test/world/story-1", [("rel_canonical", "https://herald.test/")])
    assert url == "https://herald.test/world/story-1"
    assert "homepage_rejected" in source


def test_saved_page_og_url_tells_the_host_when_canonical_points_elsewhere():
    # No fetched URL (a saved page): og:url on the portal, rel=canonical at the original publisher.
    url, source = urls.canonical(
        None,
        [("rel_canonical", "https://www.cnn.test/2019/x.html"), ("og_url", "https://www.portal.test/en-us/x/ar-1")],
    )
    assert url == "https://www.portal.test/en-us/x/ar-1"
    assert source == "og_url;cross_host_rejected:www.cnn.test"


def test_article_id_is_sha256_prefix():
    u = "https://herald.test/world/story-1"
    assert urls.article_id(u) == hashlib.sha256(u.encode()).hexdigest()[:32]


def test_same_url_ignores_scheme_www_and_trailing_slash():
    assert urls.same_url("http://www.herald.test/a/", "https://herald.test/a")
    assert not urls.same_url("https://herald.test/a", "https://herald.test/b")
    assert not urls.same_url(None, "https://herald.test/a")


def test_a_bare_relative_canonical_is_refused_but_a_rooted_path_is_resolved():
    """``href="8003098"`` (a CMS id) resolved against the fetched URL names a page that does not exist; a path from
    the site's root and a scheme-relative URL are references the page meant."""
    page = "https://herald.test/food/2014/12/story.html"
    cands = [("rel_canonical", "8003098"), ("og_url", "https://herald.test/food/2014/12/story.html")]
    assert urls.canonical(page, cands) == (page, "og_url;relative_rejected")
    assert urls.canonical(page, [("rel_canonical", "story.html")]) == (page, "fetched_url_cleaned;relative_rejected")
    assert urls.canonical(page, [("rel_canonical", "/s/1")]) == ("https://herald.test/s/1", "rel_canonical")
    assert urls.canonical(page, [("rel_canonical", "//herald.test/s/1")])[1] == "rel_canonical"
