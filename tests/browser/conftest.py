"""Fixtures of the browser tests: Debian's chromium driven by Playwright against a live origin on a free port.

- ``origin``: module-scoped; the sample world of tests/serving (plus a covered story in the tech section, with a
  storyline of six episodes) served by
  ``serving.create_app`` with werkzeug in a thread on 127.0.0.1:<free port>; yields the base URL.
- ``browser``: module-scoped; ``/usr/bin/chromium`` (``NEWSROOM_CHROMIUM`` overrides) launched headless by
  Playwright with no sandbox, GPU, background networking, updates or sync. Playwright's own browser downloads are
  never used (``make system-deps`` installs Debian's chromium).
- ``page``: a fresh context (no cookies, empty localStorage) and page; console errors and page errors are
  collected on ``page.problems`` (a CSP violation shows up there).
- ``shots``: ``shots(page, name)`` saves ``$NEWSROOM_TEST_ARTIFACTS/browser/{name}.png`` (default
  test-artifacts/browser/ in the checkout, git-ignored).

Missing chromium or playwright: skipped with the reason locally, a failure under ``CI=true`` (CI must run them).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path

import pytest

from devtools import samples
from tests.serving.helpers import STORY, make_app, publish, publish_topic_pages, publish_world

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
CHROMIUM = os.environ.get("NEWSROOM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TECH_STORY = samples.story_id(100)  # the first story of the sample world's us-en tech section
STORYLINE = samples.story_id(7000)  # a storyline of the sample world, linked from TECH_STORY's page
TOPIC = "entity:org:who"  # an alias-table entity of the sample pool: its page is titled by its canonical name


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[test]' installs it)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"chromium not found at {CHROMIUM} (`make system-deps` installs Debian's chromium)"
    return None


def require_browser() -> None:
    reason = missing()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run under CI=true: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    from werkzeug.serving import make_server

    from stores import StoreConfig, open_stores
    from stores.profiles import open_profile_store

    config = StoreConfig(data_dir=str(tmp_path_factory.mktemp("browser") / "data"))
    stores = open_stores(config)
    publish_world(stores)
    articles = samples.coverage_articles(TECH_STORY, 8)
    articles[0]["labels"] = ["fact_check"]
    articles[1]["labels"] = ["opinion"]
    coverage = samples.story_coverage(TECH_STORY, 1, articles, title="Tech story with full coverage")
    coverage["links"] = [STORY]
    coverage["storyline_id"] = STORYLINE  # its storyline page: this story and five earlier episodes
    publish(stores, coverage)
    storyline = samples.storyline(STORYLINE, 1, 6)
    storyline["episodes"][0] = dict(storyline["episodes"][0], story_id=TECH_STORY, title=coverage["title"])
    publish(stores, storyline)
    publish_topic_pages(stores, {TOPIC: 3})  # the top page links it (followed: pre-built by the editions stage)
    app = make_app(stores, open_profile_store(config))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="browser-origin", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    app.extensions["newsroom"].close()


@pytest.fixture(scope="module")
def browser():
    require_browser()
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
    except Exception as exc:  # a chromium that cannot start is as missing as an absent one
        pw.stop()
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"chromium at {CHROMIUM} did not start: {exc}")
        pytest.skip(f"chromium at {CHROMIUM} did not start: {exc}")
    yield chromium
    chromium.close()
    pw.stop()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    pg = context.new_page()
    pg.problems = []
    pg.on("console", lambda msg: pg.problems.append(msg.text) if msg.type == "error" else None)
    pg.on("pageerror", lambda exc: pg.problems.append(str(exc)))
    yield pg
    context.close()


@pytest.fixture(scope="session")
def shots():
    folder = Path(os.environ.get("NEWSROOM_TEST_ARTIFACTS") or REPO_ROOT / "test-artifacts") / "browser"
    folder.mkdir(parents=True, exist_ok=True)

    def save(pg, name: str) -> Path:
        path = folder / f"{name}.png"
        pg.screenshot(path=str(path), full_page=True)
        return path

    return save
