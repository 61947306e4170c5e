"""The reader's controls in chromium, clicked through as a reader would on a local stack: sign in on /sign-in
(no token pasted), follow and unfollow a source and a section, hide a source (its cards fold away) and show it
again, "fewer like this", the read beacon when a card is opened (a batched POST /v1/events the origin folds into
the reader's reads), the For you slice on the top page filled in after load, and the "new stories" pill once the
section has a newer version. Each step is checked in the reader's stored profile, not only on screen. The shared
page's bytes are the same signed in or out (tests/serving/test_signin.py checks them byte for byte).

Its own origin (``local``): the browser tests' sample world with local sign-in on and the version polled every
second; the watcher and the event folder are driven by the test (no background threads)."""

from __future__ import annotations

import json
import re
import threading
import urllib.request

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (fails under CI=true) with the reason
    expect = None

from devtools import samples
from tests.browser.test_a11y_browser import AUDIT
from tests.serving.helpers import EDITION, make_app, publish, publish_world


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    from werkzeug.serving import make_server

    from stores import StoreConfig, open_stores
    from stores.profiles import open_profile_store

    config = StoreConfig(data_dir=str(tmp_path_factory.mktemp("reader") / "data"))
    stores = open_stores(config)
    publish_world(stores)
    app = make_app(stores, open_profile_store(config), NEWSROOM_LOCAL_SIGN_IN=True, NEWSROOM_VERSION_POLL_S=1)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="reader-origin", daemon=True)
    thread.start()
    app.base = f"http://127.0.0.1:{server.server_port}"
    app.stores = stores
    yield app
    server.shutdown()
    app.extensions["newsroom"].close()


def profile_of(app, reader: str) -> dict:
    return app.extensions["newsroom"].profiles.get(reader) or {}


def sign_in(page, app, name: str, start: str) -> None:
    page.goto(app.base + start)
    page.get_by_role("link", name="Sign in").click()
    page.wait_for_url(f"{app.base}/sign-in?**")
    page.get_by_role("textbox", name="Reader name").fill(name)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(app.base + start)
    expect(page.locator("#reader .who")).to_have_text(f"Signed in as local:{name}")
    assert page.context.cookies() == []  # the token is kept in localStorage, never a cookie


def first_card(page):
    return page.locator("main li.story[data-publisher-id]").first


def test_sign_in_follow_hide_and_fewer_like_this(local, page, shots):
    sign_in(page, local, "ana", f"/e/{EDITION}/tech")
    card = first_card(page)
    pub, name, sid = (card.get_attribute(a) for a in ("data-publisher-id", "data-publisher-name", "data-story-id"))
    reader = "local:ana"

    follow = card.get_by_role("button", name=f"Follow {name}")
    expect(follow).to_have_attribute("aria-pressed", "false")
    follow.click()
    expect(card.get_by_role("button", name=f"Unfollow {name}")).to_have_attribute("aria-pressed", "true")
    assert pub in profile_of(local, reader)["follows"]["sources"]
    # every card of that publisher shows the state
    for other in page.locator(f'main li.story[data-publisher-id="{pub}"]').all():
        expect(other.locator("button.follow")).to_have_attribute("aria-pressed", "true")

    page.locator("#reader").get_by_role("button", name="Follow Tech").click()
    expect(page.locator("#reader").get_by_role("button", name="Unfollow Tech")).to_be_visible()
    assert "tech" in profile_of(local, reader)["follows"]["topics"]
    shots(page, "reader-1-controls")

    page.reload()  # the state comes back from the profile
    card = page.locator(f'main li.story[data-story-id="{sid}"]')
    unfollow = card.get_by_role("button", name=f"Unfollow {name}")
    unfollow.click()
    expect(card.get_by_role("button", name=f"Follow {name}")).to_have_attribute("aria-pressed", "false")
    assert pub not in profile_of(local, reader)["follows"]["sources"]

    card.get_by_role("button", name="Fewer like this").click()
    expect(card.get_by_role("button", name="You will see fewer stories like this.")).to_be_disabled()
    assert [f["story_id"] for f in profile_of(local, reader)["fewer"]] == [sid]

    card.get_by_role("button", name=f"Hide {name}").click()
    expect(card.locator("article")).to_be_hidden()
    expect(card.locator(".hidden-note")).to_contain_text(f"Stories from {name} are hidden.")
    assert profile_of(local, reader)["hidden_sources"] == [pub]
    shots(page, "reader-2-hidden")
    page.reload()
    card = page.locator(f'main li.story[data-story-id="{sid}"]')
    expect(card.locator("article")).to_be_hidden()  # folded on every visit
    card.get_by_role("button", name=f"Show {name} again").click()
    expect(card.locator("article")).to_be_visible()
    assert profile_of(local, reader)["hidden_sources"] == []

    page.locator("#reader").get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("link", name="Sign in")).to_be_visible()
    expect(page.locator("button.control")).to_have_count(0)
    assert page.problems == [], page.problems


def test_opening_a_card_sends_a_read_in_a_batch(local, page):
    sign_in(page, local, "ben", f"/e/{EDITION}/")
    card = page.locator("main > ol.stories > li.story[data-publisher-id]").nth(1)  # the shared list, not For you's
    sid = card.get_attribute("data-story-id")
    with page.expect_request(lambda r: r.url.endswith("/v1/events") and r.method == "POST") as sent:
        card.locator("h2 a").click()  # navigates to Full Coverage: the queue goes out as the page is hidden
        page.wait_for_url(f"{local.base}/stories/{sid}")
    body = json.loads(sent.value.post_data)
    assert [(e["kind"], e["story_id"], e["edition"]) for e in body["events"]] == [("CLICK", sid, EDITION)]
    assert sent.value.headers["authorization"].startswith("Bearer ") and "cookie" not in sent.value.headers
    page.wait_for_timeout(300)
    local.extensions["newsroom"].folder.drain()
    reads = profile_of(local, "local:ben").get("reads") or local.extensions["newsroom"].profiles.get("local:ben")
    stored = local.extensions["newsroom"].profile_cache.doc("local:ben") or {}
    assert [r["story_id"] for r in stored.get("reads") or []] == [sid], (reads, stored)
    page.wait_for_timeout(2500)  # the story page sent what was left, if anything; nothing stays queued
    assert page.evaluate("JSON.parse(localStorage.getItem('newsroom.events') || '[]').length") == 0
    assert page.problems == [], page.problems


def test_the_for_you_slice_comes_after_the_shared_page(local, page, shots):
    served = []
    page.on("request", lambda r: served.append(r.url.replace(local.base, "")))
    page.goto(f"{local.base}/e/{EDITION}/")
    expect(page.locator("#foryou-slice")).to_be_hidden()  # signed out: the shared page only
    sign_in(page, local, "cleo", f"/e/{EDITION}/")
    slice_ = page.locator("#foryou-slice")
    expect(slice_).to_be_visible()
    expect(slice_.locator("li.story")).to_have_count(5)
    feed = [u for u in served if u.startswith("/v1/feed/for-you")]
    assert feed and all(u.startswith("/v1/feed/for-you/cards?") and "limit=5" in u for u in feed)
    # the edition pages' own cards (one renderer: serving/web/foryou_cards.py), not a simpler card of a script:
    # coverage, Full Coverage, a relative time (reltime.js ran on them), the reason, the reader's controls
    cards = slice_.locator("li.story")
    for k in range(5):
        card = cards.nth(k)
        expect(card.locator("p.coverage")).to_contain_text("Full Coverage")
        expect(card.locator("time[data-relative]")).to_have_attribute("title", re.compile(r"\d"))
        expect(card.locator("p.reason")).to_contain_text(re.compile(r"^Why: \w"))
        name = card.get_attribute("data-publisher-name")
        expect(card.get_by_role("button", name=f"Follow {name}")).to_be_visible()
    # the shared page was complete before: the feed is asked for after the page's own requests
    assert served.index(feed[-1]) > max(i for i, u in enumerate(served) if u == f"/e/{EDITION}/")
    problems = page.evaluate(AUDIT)
    assert problems == [], problems  # the signed-in page passes the same accessibility audit
    shots(page, "reader-3-foryou-slice")
    assert page.problems == [], page.problems


def test_the_new_stories_pill(local, page, shots):
    page.goto(f"{local.base}/e/{EDITION}/tech")
    page.wait_for_timeout(1500)
    expect(page.locator("#new-stories")).to_have_count(0)  # nothing newer yet
    publish(local.stores, samples.edition_page(EDITION, "tech", 2, n_stories=12, first_story=110))
    local.extensions["newsroom"].watcher.poll_once()
    pill = page.get_by_role("button", name="New stories: show them")
    expect(pill).to_be_visible(timeout=5000)
    shots(page, "reader-4-pill")
    pill.click()
    page.wait_for_load_state()
    expect(page.locator("#reader")).to_have_attribute("data-version", "2")
    with urllib.request.urlopen(f"{local.base}/v1/editions/{EDITION}/version", timeout=10) as r:
        assert json.loads(r.read())["sections"]["tech"] == 2
    assert page.problems == [], page.problems


def test_the_for_you_page_follows_sign_in(local, page, shots):
    """Signed out on a local stack, For you points to Sign in; signed in, it shows the feed as the edition's cards
    with the reader's controls and no token box; signed out again, the box and the pointer come back."""
    page.goto(f"{local.base}/e/{EDITION}/for-you")
    status = page.locator("#feed-status")
    expect(status.get_by_role("link", name="Sign in")).to_have_attribute("href", re.compile(r"^/sign-in\?next="))
    expect(page.locator("#token-box")).to_be_visible()
    status.get_by_role("link", name="Sign in").click()  # the pointer leads to sign-in and back here
    page.get_by_role("textbox", name="Reader name").fill("dora")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{local.base}/e/{EDITION}/for-you")
    # (a first render in a cold process loads the name tables of the cards' chips: seconds on a loaded machine)
    expect(page.locator("#feed li.story")).to_have_count(20, timeout=60_000)
    expect(page.locator("#token-box")).to_be_hidden()
    card = page.locator("#feed li.story").first
    expect(card.get_by_role("link", name=re.compile("^Full Coverage"))).to_be_visible()
    name = card.get_attribute("data-publisher-name")
    expect(card.get_by_role("button", name=f"Follow {name}")).to_be_visible()  # reader.js on the added cards
    problems = page.evaluate(AUDIT)
    assert problems == [], problems
    shots(page, "reader-5-for-you-signed-in")
    page.locator("#reader").get_by_role("button", name="Sign out").click()
    expect(page.locator("#token-box")).to_be_visible()
    expect(status.get_by_role("link", name="Sign in")).to_be_visible()
    assert page.problems == [], page.problems
