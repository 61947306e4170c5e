"""The API's problems a reader sees are told in the page's language: every page carries, for each problem code its
scripts may show (serving/web/messages.py PROBLEM_MESSAGES), the code's meaning from the edition language's
catalogue (data-msg-problem-{code} on #reader), and the scripts show that, never a problem's English ``detail``. The
API itself is unchanged: the same codes and English details (they are for developers, and a shared answer never
varies by a request's language: tests/serving/test_shared.py). The browser half is in
tests/browser/test_languages_browser.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markupsafe import escape

from serving.http.conventions import PROBLEMS
from serving.web.messages import PROBLEM_MESSAGES, messages

STATIC = Path(__file__).resolve().parents[2] / "serving" / "web" / "static"


def test_every_problem_a_script_may_show_is_an_api_code():
    assert set(PROBLEM_MESSAGES) <= set(PROBLEMS), set(PROBLEM_MESSAGES) - set(PROBLEMS)


@pytest.mark.parametrize("edition", ["ru-ru", "il-he", "th-th", "us-en"])
def test_every_page_carries_the_problems_in_its_language(client, edition):
    t = messages(edition.split("-")[1])
    for path in (f"/e/{edition}/for-you", f"/e/{edition}/"):
        html = client.get(path).data.decode()
        for code, key in PROBLEM_MESSAGES.items():
            assert f'data-msg-problem-{code.replace("_", "-")}="{escape(t(key))}"' in html, (path, code)


def test_the_sign_in_page_tells_a_refused_name_in_its_language(world, profiles):
    from tests.serving.helpers import make_app

    app = make_app(world, profiles, NEWSROOM_LOCAL_SIGN_IN=True)
    html = app.test_client().get("/sign-in?next=/e/ru-ru/").data.decode()
    app.extensions["newsroom"].close()
    assert f'data-msg-problem-invalid-body="{escape(messages("ru")("signin.invalid_name"))}"' in html


def test_the_api_keeps_its_codes_and_english_details(client):
    r = client.get("/v1/feed/for-you?edition=us-en", headers={"Authorization": "Bearer nope", "Accept-Language": "ru"})
    doc = r.get_json()
    assert r.status_code == 401 and doc["code"] == "unauthorized" and doc["detail"] == "malformed token"


@pytest.mark.parametrize("script", ["foryou.js", "reader.js", "signin.js"])
def test_the_scripts_show_a_problems_meaning_never_its_detail(script):
    js = (STATIC / script).read_text()
    assert not re.search(r"\.detail\b", js), f"{script} shows an API problem's English detail"
    assert "problemText(" in js


def test_an_editions_not_found_page_says_why_in_its_language(app, world, client):
    from devtools import samples
    from tests.serving.helpers import publish

    publish(world, samples.edition_page("es-es", "top", 1, n_stories=2, first_story=860))
    app.extensions["newsroom"].watcher.poll_once()
    r = client.get("/e/es-es/no-such-section")
    html = r.data.decode()
    said = messages("es")("not_found.section", section="No such section")
    assert r.status_code == 404 and f"<p>{escape(said)}</p>" in html and "has no section" not in html


@pytest.mark.parametrize(
    "language, reason, name, said",
    [
        ("en", "top_story", None, "a top story of this edition"),
        ("en", "local:us", "United States", "news from United States"),
        ("de", "follows:entity/org:isro", "ISRO", "du folgst ISRO"),
        ("ru", "follows:source/pub-7", None, "вы подписаны на этот источник"),
        ("ja", "popular", None, "いま話題"),
        ("en", "local:zz", None, "local zz"),  # should name a place and cannot: its words, never a sentence with a hole
        ("en", "brand_new:x", None, "brand new x"),  # a kind the catalogue does not know: its words
    ],
)
def test_for_you_reasons_read_in_the_pages_language(language, reason, name, said):
    assert messages(language).reason(reason, name) == said
