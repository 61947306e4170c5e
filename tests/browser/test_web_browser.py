"""The reader web front end in a real browser (Debian's chromium via Playwright): edition -> section -> story,
and For you with a pasted token, one screenshot per page in $NEWSROOM_TEST_ARTIFACTS/browser/.

What only a browser shows: the Content-Security-Policy lets the pages' own CSS and JS run and nothing else (a
violation is a console error, collected and asserted empty), the For you script keeps the token in localStorage
and never in a cookie, and the pages work by following their links."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (fails under CI=true) with the reason
    expect = None

from serving.http.auth import issue_token
from tests.browser.conftest import STORYLINE, TECH_STORY, TOPIC
from tests.serving.helpers import EDITION, STORY, TOKEN_SECRET


def _json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _story_ids(page) -> list[str]:
    return page.eval_on_selector_all("li.story", "els => els.map(e => e.getAttribute('data-story-id'))")


def test_edition_section_story(origin, page, shots):
    page.goto(origin + "/")
    assert page.url == f"{origin}/e/{EDITION}/"
    assert page.locator("h1").inner_text() == "Top stories"
    assert page.evaluate("document.documentElement.lang") == "en-US"
    top = _json(f"{origin}/v1/editions/{EDITION}/sections/top")
    assert _story_ids(page) == [s["story_id"] for s in top["stories"]]
    # the stylesheet applied (CSP style-src 'self' lets /assets/web.css in)
    assert page.evaluate("getComputedStyle(document.querySelector('.skip')).position") == "absolute"
    shots(page, "1-edition")

    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Tech", exact=True).click()
    page.wait_for_url(f"{origin}/e/{EDITION}/tech")
    assert page.locator("h1").inner_text() == "Tech"
    tech = _json(f"{origin}/v1/editions/{EDITION}/sections/tech")
    assert _story_ids(page) == [s["story_id"] for s in tech["stories"]]
    nav = page.get_by_role("navigation", name="Sections")  # a card's "Tech" topic chip is a link too
    assert nav.get_by_role("link", name="Tech", exact=True).get_attribute("aria-current") == "page"
    shots(page, "2-section")

    page.locator(f'li.story[data-story-id="{TECH_STORY}"] h2 a').click()
    page.wait_for_url(f"{origin}/stories/{TECH_STORY}")
    assert page.locator("h1").inner_text() == "Tech story with full coverage"
    coverage = _json(f"{origin}/v1/stories/{TECH_STORY}?limit=100")
    ids = page.eval_on_selector_all("[data-article-id]", "els => els.map(e => e.getAttribute('data-article-id'))")
    assert ids == [a["article_id"] for a in coverage["articles"]]
    for heading in ("Fact checks and opinion", "Timeline", "Publishers", "In other languages"):
        assert page.get_by_role("heading", name=heading).count() == 1
    shots(page, "3-story")

    page.get_by_role("link", name="A story", exact=True).click()  # the linked story in another language
    page.wait_for_url(f"{origin}/stories/{STORY}")
    assert page.context.cookies() == []
    assert page.problems == [], page.problems


@pytest.mark.parametrize("size", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_a_story_page_leads_to_its_storyline(origin, browser, shots, size):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    try:
        page.goto(f"{origin}/stories/{TECH_STORY}")
        page.get_by_role("link", name=re.compile("storyline")).click()
        page.wait_for_url(f"{origin}/storylines/en/{STORYLINE}")
        doc = _json(f"{origin}/v1/storylines/en/{STORYLINE}")
        assert page.locator("h1").inner_text() == doc["title"]
        items = page.locator("ol.storyline > li")
        assert items.count() == len(doc["episodes"]) == 6
        for i, e in enumerate(doc["episodes"]):  # newest first: date, headline (a link to it), sources
            item = items.nth(i)
            assert item.locator("time").get_attribute("datetime") == e["first_at"]
            assert item.get_by_role("link").inner_text() == e["title"]
            assert f"from {e['publisher_count']} publisher" in item.locator(".sources").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= size[0]  # no sideways scroll on a phone
        shots(page, f"storyline-{size[0]}")
        items.nth(1).get_by_role("link").click()
        assert page.url.startswith(f"{origin}/stories/")
        assert problems == [] and context.cookies() == []
    finally:
        context.close()


def test_a_topic_page_from_the_top_page(origin, page, shots):
    page.goto(f"{origin}/e/{EDITION}/")
    page.get_by_role("navigation", name="Topics").get_by_role("link", name="World Health Organization").click()
    page.wait_for_url(f"{origin}/e/{EDITION}/topics/**")
    assert page.locator("h1").inner_text() == "World Health Organization"
    doc = _json(f"{origin}/v1/topics/{TOPIC}?edition={EDITION}&limit=100")
    assert doc["stories"] and _story_ids(page) == [s["story_id"] for s in doc["stories"]]
    shots(page, "4-topic")
    first = doc["stories"][0]["story_id"]
    page.locator(f'li.story[data-story-id="{first}"] h2 a').click()
    page.wait_for_url(f"{origin}/stories/{first}")
    assert page.context.cookies() == []
    assert page.problems == [], page.problems


def test_for_you_with_a_pasted_token(origin, page, shots):
    """Signed out: the token box and the status asking for one. Signed in: the feed as the edition pages' own
    cards (labels, relative times, Full Coverage, each card's reason) and no token box; Sign out (the reader bar)
    brings the box back."""
    token = issue_token(TOKEN_SECRET, "browser-reader")
    page.clock.set_fixed_time("2025-03-01T12:01:30Z")  # the sample world's last cycle: times within the week
    response = page.goto(f"{origin}/e/{EDITION}/for-you")
    assert "Content-Security-Policy" in {k.title() for k in response.headers} or response.headers.get(
        "content-security-policy"
    )
    assert page.locator("#feed-status").inner_text().startswith("Paste your reader token")
    expect(page.locator("#token-box")).to_be_visible()
    shots(page, "5-for-you-empty")

    page.get_by_role("textbox", name="Reader token").fill(token)
    page.get_by_role("button", name="Save and show my feed").click()
    page.wait_for_selector("#feed li.story")
    assert page.locator("#feed li.story").count() == 20
    assert page.locator("#feed-status").inner_text() == "20 stories for you."
    assert page.evaluate("localStorage.getItem('newsroom.readerToken')") == token
    assert page.context.cookies() == []  # the token is never a cookie
    assert token not in page.content() and token not in page.url
    expect(page.locator("#token-box")).to_be_hidden()  # signed in: no token box, no "Forget my token"
    assert page.get_by_role("button", name="Forget my token").count() == 0
    card = page.locator("#feed li.story").first
    expect(card.get_by_role("link", name=re.compile("^Full Coverage"))).to_have_attribute(
        "href", re.compile("^/stories/")
    )
    expect(card.locator("time[data-relative]")).not_to_have_text(re.compile(r"UTC$"))  # worded by reltime.js
    expect(card.locator("p.reason")).to_contain_text("Why:")
    expect(card.locator("p.coverage")).to_contain_text(re.compile(r"\d+ articles? from \d+ publishers?"))
    shots(page, "6-for-you-feed")

    page.get_by_role("button", name="More stories").click()
    expect(page.locator("#feed li.story")).to_have_count(40)  # (not wait_for_function: the CSP forbids its eval)

    page.reload()  # the token stays in this browser: the feed loads again without pasting
    page.wait_for_selector("#feed li.story")
    assert not page.locator("#token-form").is_visible()  # signed in: no empty token box
    first = page.locator("#feed li.story h2 a").first
    href = first.get_attribute("href")
    assert href.startswith("/stories/")

    page.locator("#reader").get_by_role("button", name="Sign out").click()
    expect(page.locator("#token-box")).to_be_visible()
    expect(page.locator("#feed li.story")).to_have_count(0)
    assert page.evaluate("localStorage.getItem('newsroom.readerToken')") is None
    assert page.problems == [], page.problems


def test_a_bad_token_is_explained(origin, page):
    page.goto(f"{origin}/e/{EDITION}/for-you")
    page.get_by_role("textbox", name="Reader token").fill("not-a-token")
    page.get_by_role("button", name="Save and show my feed").click()
    expect(page.locator("#feed-status")).to_contain_text("not accepted")
    assert page.locator("#feed li.story").count() == 0
    # the 401 from the API is a console error of the fetch, nothing else (no CSP violation)
    assert all("401" in p for p in page.problems), page.problems


def test_card_times_are_worded_relatively_in_the_browser(origin, page):
    """reltime.js runs under the CSP and rewords the shared page's absolute times at the reader's clock (set
    here to the sample world's last cycle, 2025-03-01 12:01 UTC); the absolute time moves to the title."""
    page.clock.set_fixed_time("2025-03-01T12:01:30Z")
    page.goto(f"{origin}/e/{EDITION}/")
    first = page.locator("li.story time[data-relative]").first
    expect(first).not_to_have_text(re.compile(r"UTC$"))
    assert re.search(r"ago|now|minute", first.inner_text()), first.inner_text()
    assert first.get_attribute("title").endswith(" UTC")
    assert first.get_attribute("title") == first.get_attribute("data-absolute")
