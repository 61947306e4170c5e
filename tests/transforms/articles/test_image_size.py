"""The card image's size as the page states it: the article's JSON-LD ImageObject width/height (inline, or an
``@id`` reference into the page's ``@graph``), else og:image:width/height for the og:image. Both sides or none:
the web card sets ``width``/``height`` from them so the image has its box before it loads (no layout shift), and
never a guessed box."""

from __future__ import annotations

import pytest

from schemas import codec
from transforms.articles import structured

URL = "https://dailyherald.test/world/2025/12/31/earthquake-coast"
IMG = "https://dailyherald.test/img/lead.jpg"


def article(normalizer, kit, ld=None, head_extra: str = "", image: str | None = IMG) -> dict:
    html = kit.make_html(
        "Earthquake shakes coast, no deaths reported",
        kit.WIRE_REPORT,
        canonical=URL,
        jsonld=ld,
        head_extra=head_extra,
        image=image,
    )
    art = normalizer.normalize(kit.make_raw(URL, html, fetched_at=kit.T0, first_seen_at=kit.T0 - 60_000))
    codec.check("Article", art)
    return codec.decode("Article", codec.encode("Article", art))  # the fields survive the wire


def news(**kw) -> dict:
    return {"@context": "https://schema.org", "@type": "NewsArticle", "headline": "Earthquake shakes coast", **kw}


def size(art: dict) -> tuple:
    return art["image_url"], art["image_width"], art["image_height"]


def test_an_inline_image_object_gives_the_size(normalizer, kit):
    ld = news(image={"@type": "ImageObject", "url": IMG, "width": 1200, "height": 675})
    assert size(article(normalizer, kit, ld)) == (IMG, 1200, 675)


def test_a_graph_reference_and_a_relative_url_and_text_sizes(normalizer, kit):
    # the @graph style of common CMS plugins: the article names its image by @id; sizes as text, url relative
    ld = {
        "@context": "https://schema.org",
        "@graph": [
            news(image={"@id": URL + "#primaryimage"}),
            {
                "@type": "ImageObject",
                "@id": URL + "#primaryimage",
                "url": "/img/lead.jpg",
                "width": "1600px",
                "height": {"@type": "QuantitativeValue", "value": 900},
            },
        ],
    }
    assert size(article(normalizer, kit, ld)) == (IMG, 1600, 900)


def test_og_image_size_for_the_og_image(normalizer, kit):
    head = "<meta property='og:image:width' content='800'><meta property='og:image:height' content='450'>"
    assert size(article(normalizer, kit, news(), head_extra=head)) == (IMG, 800, 450)


@pytest.mark.parametrize(
    "ld, head",
    [
        (news(), ""),  # no size stated anywhere
        (news(image={"@type": "ImageObject", "url": IMG, "width": 1200}), ""),  # one side: no aspect ratio
        (news(image={"@type": "ImageObject", "url": IMG, "width": 0, "height": 675}), ""),  # not believed
        (news(image={"@type": "ImageObject", "url": IMG, "width": 99_999, "height": 675}), ""),
        (news(image={"@type": "ImageObject", "url": IMG, "width": True, "height": 675}), ""),
        # the size of another image than the card's: not the card image's size
        (
            news(
                image={
                    "@type": "ImageObject",
                    "url": "https://dailyherald.test/img/other.jpg",
                    "width": 10,
                    "height": 10,
                }
            ),
            "",
        ),
        (news(), "<meta property='og:image:width' content='wide'><meta property='og:image:height' content='450'>"),
    ],
)
def test_no_size_when_the_page_does_not_state_both(normalizer, kit, ld, head):
    art = article(normalizer, kit, ld, head_extra=head)
    assert art["image_url"] == IMG and (art["image_width"], art["image_height"]) == (None, None)


def test_no_image_no_size(normalizer, kit):
    ld = news(image={"@type": "ImageObject", "width": 1200, "height": 675})  # an image object without a url
    art = article(normalizer, kit, ld, image=None)
    assert size(art) == (None, None, None)


def test_pixels_rule():
    assert [structured._pixels(v) for v in (640, "640", " 640 px", 640.0, {"value": "640"})] == [640] * 5
    assert [structured._pixels(v) for v in (None, "", "64.5", -1, 0, 20_001, False, [640])] == [None] * 8
