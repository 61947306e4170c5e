"""Every edition language in chromium, at desktop and phone size: the top page of one edition per configured
language speaks that language (html lang and dir, the section names, "Full Coverage" and the coverage line from
its catalogue, dates formatted for the locale), links its RSS and Atom feeds, and does not scroll sideways; story
labels print once. Screenshots: ``shots`` (``lang-{edition}-{size}.png``)."""

from __future__ import annotations

import threading

import pytest

from devtools import samples
from serving.web.messages import catalogue, messages
from tests.browser.test_a11y_browser import AUDIT, VIEWPORTS
from tests.serving.helpers import make_app, publish, publish_world


def _editions() -> list[str]:
    """One edition per configured language (the first of editions.json)."""
    from transforms.editions.vocabulary.config import load_config

    seen: dict[str, str] = {}
    for e in load_config().editions:
        seen.setdefault(e.language, e.id)
    return [seen[lang] for lang in sorted(seen)]


EDITIONS = _editions()
SAMPLE = ("us-en", "gb-en")  # the sample world's own pages (tests/serving/helpers.py)


@pytest.fixture(scope="module")
def lang_origin(tmp_path_factory):
    from werkzeug.serving import make_server

    from stores import StoreConfig, open_stores
    from stores.profiles import open_profile_store

    config = StoreConfig(data_dir=str(tmp_path_factory.mktemp("langs") / "data"))
    stores = open_stores(config)
    publish_world(stores)
    for k, edition in enumerate(EDITIONS):
        if edition in SAMPLE:
            continue
        page = samples.edition_page(edition, "top", 1, n_stories=6, first_story=3000 + 10 * k)
        page["stories"][0]["labels"] = ["breaking"]
        page["stories"][1]["labels"] = ["fact_check"]
        page["stories"][1]["representative"]["labels"] = ["opinion"]
        publish(stores, page)
    app = make_app(stores, open_profile_store(config))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, name="lang-origin", daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    app.extensions["newsroom"].close()


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_every_edition_language_top_page(lang_origin, browser, shots, viewport):
    context = browser.new_context(viewport=VIEWPORTS[viewport])
    page = context.new_page()
    problems = []
    try:
        for edition in EDITIONS:
            language = edition.split("-")[1]
            t = messages(language)
            page.goto(f"{lang_origin}/e/{edition}/")
            html = page.locator("html")
            assert html.get_attribute("lang") == f"{language}-{edition.split('-')[0].upper()}"
            assert html.get_attribute("dir") == t.direction
            assert page.locator("h1").first.inner_text().strip() == t("section.top")
            first = page.locator("li.story").first
            assert t("full_coverage") in first.inner_text()
            assert page.locator(f'link[rel="alternate"][href="/e/{edition}/top/feed.rss"]').count() == 1
            if edition not in SAMPLE:
                second = page.locator("li.story").nth(1)
                assert second.locator(".label-opinion").count() == 1  # the article's label, once
                assert second.locator(".story-labels .label-fact_check").count() == 1
            if language in catalogue() and language != "en":
                assert "Full Coverage" not in page.locator("main").inner_text(), edition  # no English left
            if edition in ("us-en", "ru-ru", "kr-ko") or viewport == "phone" and language in ("ar", "ja"):
                shots(page, f"lang-{edition}-{viewport}")
            found = [p for p in page.evaluate(AUDIT) if p.startswith("horizontal scroll")]
            problems += [f"{edition}: {p}" for p in found]
    finally:
        context.close()
    assert problems == []


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_the_edition_switcher_is_on_every_page_and_full_coverage_leads_back(lang_origin, browser, viewport):
    from tests.serving.helpers import STORY

    context = browser.new_context(viewport=VIEWPORTS[viewport])
    page = context.new_page()
    try:
        for path in ("/e/ru-ru/", "/e/us-en/tech", f"/stories/{STORY}"):
            page.goto(f"{lang_origin}{path}")
            assert page.locator("nav.editions a[href='/e/kr-ko/']").count() == 1, path
        page.goto(f"{lang_origin}/e/kr-ko/")  # the reader's choice: a link, remembered in this browser only
        assert page.context.cookies() == []
        page.goto(f"{lang_origin}/stories/{STORY}")
        assert page.locator("p.brand a").get_attribute("href") == "/e/kr-ko/"
    finally:
        context.close()


@pytest.mark.parametrize("edition", ["ru-ru", "il-he"])
def test_a_refused_token_is_explained_in_the_pages_language(lang_origin, browser, edition):
    """The API's 401 says "malformed token" (English, for developers); the reader reads its code's meaning from the
    page's catalogue (tests/serving/test_web_problems.py)."""
    from playwright.sync_api import expect

    t = messages(edition.split("-")[1])
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{lang_origin}/e/{edition}/for-you")
        page.locator("#token-input").fill("not-a-token")
        page.locator("#token-form button[type=submit]").click()
        expect(page.locator("#feed-status")).to_have_text(t("foryou.rejected", detail=t("problem.unauthorized")))
        assert "malformed" not in page.locator("main").inner_text()
    finally:
        context.close()
