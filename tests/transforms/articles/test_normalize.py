"""RawItem -> Article: every field of a realistic page, and each rejection reason surfaced by the normaliser."""

from __future__ import annotations

import hashlib

import pytest

from schemas import codec
from transforms.articles import dates
from transforms.articles.normalize import content_hash
from transforms.articles.page import Rejected

SPANISH = [
    "El Gobierno regional aprobó este martes un plan de emergencia para reforzar los servicios de urgencias de los "
    "hospitales durante el invierno, después de varias semanas de saturación en las salas de espera.",
    "El consejero de Sanidad explicó en rueda de prensa que el plan incluye la contratación de trescientos "
    "profesionales y la apertura de camas adicionales en los centros con más presión asistencial.",
    "Los sindicatos del sector consideraron la medida insuficiente y recordaron que la falta de personal se arrastra "
    "desde hace años, por lo que pidieron una negociación inmediata de las plantillas.",
    "La oposición criticó que el anuncio llegue tarde y exigió que el consejero comparezca en el parlamento para "
    "explicar el calendario y el coste total de las contrataciones previstas.",
]


def test_full_article(normalizer, kit):
    ld = {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": "Earthquake shakes coast, no deaths reported",
        "datePublished": "2025-12-31T09:12:00Z",
        "articleSection": "World",
        "keywords": ["earthquake", "Valparaiso", "tsunami"],
        "mentions": [{"@type": "Person", "name": "Elena Duarte"}, {"@type": "Place", "name": "Valparaiso Province"}],
        "image": {"@type": "ImageObject", "url": "https://dailyherald.test/img/quake.jpg"},
    }
    html = kit.make_html(
        "Earthquake shakes coast, no deaths reported",
        kit.WIRE_REPORT,
        canonical="https://dailyherald.test/world/2025/12/31/earthquake-coast",
        jsonld=ld,
        body_extra="<p>Related: Storm season begins early on the coast</p>",
    )
    raw = kit.make_raw(
        "https://dailyherald.test/world/2025/12/31/earthquake-coast?utm_source=rss",
        html,
        fetched_at=kit.T0,
        first_seen_at=kit.T0 - 5 * 60_000,
    )
    art = normalizer.normalize(raw)
    codec.check("Article", art)  # a valid Article record
    assert art["canonical_url"] == "https://dailyherald.test/world/2025/12/31/earthquake-coast"
    assert art["canonical_source"] == "rel_canonical"
    assert art["article_id"] == hashlib.sha256(art["canonical_url"].encode()).hexdigest()[:32]
    assert art["publisher_id"] == "daily-herald" and art["publisher_name"] == "The Daily Herald"
    assert art["title"] == "Earthquake shakes coast, no deaths reported"
    assert art["language"] == "en"
    assert art["body"].startswith("A magnitude 6.1 earthquake struck")
    assert art["body"].rstrip().endswith("bridge inspection.")
    for boilerplate in ("Sign up", "newsletter", "Related", "Copyright", "Home", "Privacy", "By Staff Reporter"):
        assert boilerplate not in art["body"]
    assert art["lede"] == kit.WIRE_REPORT[0]
    assert art["image_url"] == "https://dailyherald.test/img/lead.jpg"  # og:image first
    # stated 2025-12-31T09:12Z is earlier than first seen: published = min(stated, first seen)
    assert dates.iso(art["published_at"]) == "2025-12-31T09:12:00Z"
    assert art["first_seen_at"] == kit.T0 - 5 * 60_000
    assert art["section"] == "world" and "world" in art["topics"]
    assert art["keywords"][:3] == ["earthquake", "Valparaiso", "tsunami"]
    names = {e["name"]: e for e in art["entities"]}
    assert names["Elena Duarte"]["kind"] == "PERSON"
    assert names["Valparaiso Province"]["kind"] == "PLACE"
    assert not art["is_opinion"] and not art["is_fact_check"]
    assert art["content_hash"] == content_hash(art["title"], art["body"])
    assert art["version"] == 1 and art["copy_of"] is None and art["syndication_group"] is None
    assert art["raw_item_id"] == raw["item_id"]


def test_published_is_first_seen_when_the_page_claims_later(normalizer, kit):
    html = kit.make_html("Later claim", kit.WIRE_REPORT, published="2025-12-31T23:58:00Z")
    raw = kit.make_raw("https://dailyherald.test/x/later", html, fetched_at=kit.T0, first_seen_at=kit.T0 - 10 * 60_000)
    art = normalizer.normalize(raw)
    assert art["published_at"] == kit.T0 - 10 * 60_000


def test_zoneless_time_uses_publisher_zone(normalizer, kit):
    html = kit.make_html("Zone-less", kit.WIRE_REPORT, published="2025-12-31 09:00:00")  # New York publisher
    art = normalizer.normalize(kit.make_raw("https://dailyherald.test/x/zoneless", html, fetched_at=kit.T0))
    assert dates.iso(art["published_at"]) == "2025-12-31T14:00:00Z"


def test_language_comes_from_the_body_not_the_label(normalizer, kit):
    html = kit.make_html("Plan de urgencias para el invierno", SPANISH, lang="en", site="Diario Central")
    raw = kit.make_raw(
        "https://diariocentral.test/sociedad/plan-urgencias",
        html,
        entry={"language": "en", "title": "x", "categories": []},
    )
    art = normalizer.normalize(raw)
    assert art["language"] == "es"
    assert art["publisher_id"] == "el-diario-central"


def test_opinion_and_fact_check_flags(normalizer, kit):
    op = kit.make_html(
        "Why the harbour plan is wrong",
        kit.INDEPENDENT_B,
        jsonld={"@type": "OpinionNewsArticle", "headline": "Why the harbour plan is wrong"},
    )
    art = normalizer.normalize(kit.make_raw("https://dailyherald.test/news/harbour-plan", op))
    assert art["is_opinion"] and "opinion" in art["topics"]
    by_path = normalizer.normalize(
        kit.make_raw("https://dailyherald.test/opinion/harbour-plan-2", kit.make_html("x y z", kit.INDEPENDENT_A))
    )
    assert by_path["is_opinion"]
    fc = kit.make_html(
        "Did the quake really cut power to 40,000 homes?",
        kit.INDEPENDENT_A,
        jsonld={
            "@type": "ClaimReview",
            "claimReviewed": "40,000 homes lost power",
            "reviewRating": {"alternateName": "True"},
        },
    )
    art = normalizer.normalize(kit.make_raw("https://dailyherald.test/news/quake-claim", fc))
    assert art["is_fact_check"] and not art["is_opinion"]


def test_unknown_publisher_is_provisional_not_dropped(normalizer, kit):
    art = normalizer.normalize(
        kit.make_raw("https://www.unknown-outlet.test/n/1", kit.make_html("Quake", kit.WIRE_REPORT))
    )
    assert art["publisher_id"] == "unknown-outlet.test"


@pytest.mark.parametrize(
    "mutate,reason",
    [
        (lambda r: r.update(http_status=404), "http_error"),
        (lambda r: r.update(body=b"<html><body><nav><a href='/'>Home</a></nav></body></html>"), "empty_body"),
        (lambda r: r.update(body=b""), "empty_body"),
        (lambda r: r.update(body=b"%PDF-1.4 ...", headers={"content-type": "application/pdf"}), "not_html"),
        (
            lambda r: r.update(
                body=b"<html><body><p>" + b"\xff\xfe\x00\x01" * 5000 + bytes(range(32)) * 100,
                headers={"content-type": "text/html; charset=utf-8"},
            ),
            "undecodable",
        ),
        (lambda r: r.update(body=b"<html>" + b"<p>a</p>" * 600_000 + b"</html>"), "too_large"),
        (
            lambda r: r.update(
                body=b'<!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><html><body>&b;</body></html>'
            ),
            "xml_bomb",
        ),
    ],
)
def test_rejections(normalizer, kit, mutate, reason):
    raw = kit.make_raw("https://dailyherald.test/x/bad", kit.make_html("Quake", kit.WIRE_REPORT))
    mutate(raw)
    with pytest.raises(Rejected) as exc:
        normalizer.normalize(raw)
    assert exc.value.reason == reason


def test_future_date_is_rejected(normalizer, kit):
    html = kit.make_html("From the future", kit.WIRE_REPORT, published="2026-03-01T00:00:00Z")
    with pytest.raises(Rejected) as exc:
        normalizer.normalize(kit.make_raw("https://dailyherald.test/x/future", html, fetched_at=kit.T0))
    assert exc.value.reason == "future_date"


def test_content_hash_ignores_spacing_and_punctuation_but_not_words():
    assert content_hash("A title", "Body text, here.") == content_hash("A  title", "Body text here")
    assert content_hash("A title", "Body text") != content_hash("A corrected title", "Body text")


def test_concurrent_threads_give_the_same_articles(kit):
    """Beam runs a DoFn's instances on several threads of one process: parsers and XPaths are per thread."""
    from concurrent.futures import ThreadPoolExecutor

    from transforms.articles.normalize import Normalizer

    raws = [
        kit.make_raw(f"https://dailyherald.test/n/{i}", kit.make_html(f"Story {i}", texts))
        for i, texts in enumerate([kit.WIRE_REPORT, kit.INDEPENDENT_A, kit.INDEPENDENT_B] * 4)
    ]

    def run(raw):
        art = Normalizer(clock=lambda: kit.T0).normalize(raw)
        return art["article_id"], art["content_hash"], art["language"], len(art["entities"])

    serial = [run(r) for r in raws]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(run, raws)) == serial


def test_a_saved_page_naming_itself_only_in_its_twitter_card_gets_that_url(normalizer, kit):
    """twitter:url is the weakest claim a page makes about itself, after rel=canonical, og:url and JSON-LD, but a
    claim: without a fetched URL it names the article (some CMSs fill only the Twitter card)."""
    card = "<meta name='twitter:url' content='http://ultimas.test/local/noticia-1.html'>"
    html = kit.make_html("Sólo la tarjeta", kit.WIRE_REPORT, head_extra=card)
    art = normalizer.extract(html, url=None, now_ms=kit.T0)
    assert (art["canonical_url"], art["canonical_source"]) == (
        "http://ultimas.test/local/noticia-1.html",
        "twitter_url",
    )
    both = kit.make_html("Both", kit.WIRE_REPORT, og_url="http://ultimas.test/local/og-1.html", head_extra=card)
    assert normalizer.extract(both, url=None, now_ms=kit.T0)["canonical_source"] == "og_url"
    fetched = normalizer.extract(html, url="http://ultimas.test/local/noticia-1.html?utm_source=x", now_ms=kit.T0)
    assert fetched["canonical_url"] == "http://ultimas.test/local/noticia-1.html"
    home = card.replace("local/noticia-1.html", "")
    deep = normalizer.extract(
        kit.make_html("Home card", kit.WIRE_REPORT, head_extra=home), url="http://ultimas.test/a/b.html", now_ms=kit.T0
    )
    assert deep["canonical_url"] == "http://ultimas.test/a/b.html"  # a card naming the home page is refused
