"""Cards, Full Coverage and topic pages agree on a story's counts (one source: the story coverage version the
origin holds), say them in grammatical singular and plural, and every interface string comes from the message
catalogue in the edition's language (serving/web/messages.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devtools import samples
from serving.web.messages import catalogue, messages, plural_form, plural_tags
from tests.serving.helpers import EDITION, STORY, publish


def _card_coverage(html: str, story_id: str) -> str:
    block = html.split(f'data-story-id="{story_id}"', 1)[1].split("</li>", 1)[0]
    return re.search(r'<p class="coverage">([^·<]+)·', block).group(1).strip()


def test_a_card_and_its_full_coverage_count_the_same_story_version(client):
    story = client.get(f"/stories/{STORY}").data.decode()
    full = re.search(r'<p class="coverage">Full Coverage: (.+? publishers?)[ .]', story).group(1)
    doc = client.get(f"/v1/stories/{STORY}").get_json()
    assert full == f"{doc['article_count']} articles from {doc['publisher_count']} publishers"
    card = _card_coverage(client.get(f"/e/{EDITION}/").data.decode(), STORY)
    assert card == full  # on main the card said the ranker's "N articles from 5 publishers"


def test_topic_page_cards_carry_the_same_counts(app, world, client):
    from tests.serving.test_topics import prebuild

    prebuild(app, world, {"entity:org:who": 3})
    pool = app.extensions["newsroom"].holder.current.pools[EDITION]
    sid = next(s for s in pool.story_ids if s == STORY or s == samples.story_id(1))
    topic = next(t for t in ("entity:org:who", "place:pune", "topic:tech") if sid in _topic_ids(client, t))
    html = client.get(f"/e/{EDITION}/topics/{topic}").data.decode()
    cov = client.get(f"/v1/stories/{sid}").get_json()
    assert _card_coverage(html, sid) == f"{cov['article_count']} articles from {cov['publisher_count']} publishers"


def _topic_ids(client, topic: str) -> list[str]:
    r = client.get(f"/v1/topics/{topic}?edition={EDITION}&limit=100")
    return [s["story_id"] for s in r.get_json()["stories"]] if r.status_code == 200 else []


def test_a_single_source_story_reads_in_the_singular(app, world, client):
    sid = samples.story_id(700)
    publish(world, samples.edition_page(EDITION, "health", 1, n_stories=1, first_story=700))
    publish(world, samples.story_coverage(sid, 1, samples.coverage_articles(sid, 1)))
    app.extensions["newsroom"].watcher.poll_once()
    card = _card_coverage(client.get(f"/e/{EDITION}/health").data.decode(), sid)
    assert card == "1 article from 1 publisher"
    story = client.get(f"/stories/{sid}").data.decode()
    assert "Full Coverage: 1 article from 1 publisher." in story
    assert "1 articles" not in story and "1 publishers" not in story


@pytest.mark.parametrize(
    "edition, top, coverage",
    [
        ("es-es", "Titulares", "Cobertura completa"),
        ("de-de", "Schlagzeilen", "Alle Berichte"),
        ("fr-fr", "À la une", "Couverture complète"),
        ("us-en", "Top stories", "Full Coverage"),
    ],
)
def test_pages_speak_the_editions_language(app, world, client, edition, top, coverage):
    first = 800 + 10 * ["es-es", "de-de", "fr-fr", "us-en"].index(edition)
    publish(world, samples.edition_page(edition, "top", 2, n_stories=2, first_story=first))
    publish(world, samples.edition_page(edition, "world", 1, n_stories=2, first_story=first))
    app.extensions["newsroom"].watcher.poll_once()
    html = client.get(f"/e/{edition}/").data.decode()
    t = messages(edition.split("-")[1])
    assert f"<h1>{top}</h1>" in html and coverage in html
    assert f">{t('section.world')}</a>" in html and f">{t('nav.for_you')}</a>" in html
    assert f">{t('skip')}</a>" in html and t("footer.page_json") in html


def test_full_coverage_of_a_spanish_story_is_in_spanish(app, world, client):
    sid = samples.story_id(750)
    cov = samples.story_coverage(sid, 1, samples.coverage_articles(sid, 2))
    cov["language"] = "es"
    publish(world, cov)
    app.extensions["newsroom"].watcher.poll_once()
    html = client.get(f"/stories/{sid}").data.decode()
    assert ">Cronología</h2>" in html and ">Medios</h2>" in html and "Timeline" not in html
    assert re.search(r"Cobertura completa: 2 artículos de \d medios?\.", html)
    # the timeline's days are Spanish dates, not ISO ones (they were "2025-03-01" in every language)
    days = re.findall(r'<h3><time datetime="(\d{4}-\d\d-\d\d)">([^<]+)</time></h3>', html)
    assert days and all(re.fullmatch(r"\d{1,2} de \w+ de \d{4}", text) for _, text in days), days


@pytest.mark.parametrize("language", ["ja", "ko", "zh", "th", "vi", "id"])
def test_an_edition_without_publishers_points_to_the_menu_by_its_name(language):
    """ "Other editions are in the menu" names the menu as its label does: ko and ja said 판/版 (a print run) under a
    menu labelled 에디션/エディション. Languages whose word for edition does not inflect, so the label is found as is."""
    t = messages(language)
    assert t("nav.editions").lower() in t("no_publishers.edition").lower()


@pytest.mark.parametrize(
    "language, said",
    [
        ("en", "March 1, 2025"),
        ("ru", "1 марта 2025\u202fг."),  # a narrow no-break space, as CLDR writes it
        ("ko", "2025년 3월 1일"),
        ("ar", "1 مارس 2025"),
        ("de", "1. März 2025"),
    ],
)
def test_a_timeline_day_is_the_locales_date(language, said):
    assert messages(language).date("2025-03-01") == said
    assert messages(language).date("not a day") == "not a day"


def _edition_languages() -> list[str]:
    from transforms.editions.vocabulary.config import load_config

    return sorted({e.language for e in load_config().editions})


@pytest.mark.parametrize("language", _edition_languages())
def test_every_edition_language_has_every_string_and_plural_form(language):
    cat = catalogue()
    assert language in cat, f"no serving/web/locale/{language}.po"
    strings, english = cat[language], cat["en"]
    assert set(strings) == set(english), set(english) ^ set(strings)
    for key, value in strings.items():
        if isinstance(english[key], dict):
            assert isinstance(value, dict) and set(value) == plural_tags(language), (key, sorted(value))
            assert all("{n}" in text for text in value.values()), key
        else:
            assert isinstance(value, str) and value.strip(), key
            assert set(re.findall(r"{(\w+)}", value)) == set(re.findall(r"{(\w+)}", english[key])), key


# families of keys the pages build from data (shell.py ``section.{id}``, _card.html ``'label.' ~ scope ~ label``,
# pages.py ``kind.{kind}``): each family must still be built so, or its keys are as unused as any other
DYNAMIC = {"section.": 'f"section.{', "label.": "'label.' ~", "kind.": 'f"kind.{'}


def test_no_catalogue_holds_a_string_nothing_uses():
    """A msgid no page, script or template names is dead weight in every one of the catalogues (and a translator's
    time): ``foryou.forget`` outlived its "Forget my token" button in all of them."""
    web = Path(__file__).resolve().parents[2] / "serving"
    source = "\n".join(p.read_text() for p in web.rglob("*") if p.suffix in (".py", ".html", ".js", ".xml"))
    assert all(built in source for built in DYNAMIC.values()), DYNAMIC
    unused = [
        key
        for key in catalogue()["en"]
        if f'"{key}"' not in source and f"'{key}'" not in source and not key.startswith(tuple(DYNAMIC))
    ]
    assert unused == []


def test_a_russian_count_takes_its_own_plural_and_numbers_and_dates_are_the_locale_s():
    ru = messages("ru-RU")
    assert ru.coverage(1, 1) == "1 статья из 1 издания"
    assert ru.coverage(3, 2) == "3 статьи из 2 изданий" and ru.coverage(5, 5) == "5 статей из 5 изданий"
    assert messages("en").plural("articles", 12345) == "12,345 articles"
    assert ru.datetime("2025-03-01T11:50:00Z") == "1 мар. 2025\u202fг. 11:50 UTC"  # CLDR: a narrow no-break space
    assert messages("ko").datetime("2025-03-01T11:50:00Z").endswith("11:50 UTC")
    assert messages("ar-EG").direction == "rtl" and messages("ru").direction == "ltr"


@pytest.mark.parametrize(
    "language, n, form",
    [
        ("en", 0, "other"),
        ("en", 1, "one"),
        ("en", 2, "other"),
        ("es", 1, "one"),
        ("de", 0, "other"),
        ("fr", 0, "one"),
        ("fr", 1, "one"),
        ("fr", 2, "other"),
        ("ru", 3, "few"),
        ("ru", 11, "many"),
    ],
)
def test_plural_rules(language, n, form):
    assert plural_form(language, n) == form


def test_coverage_phrases():
    assert messages("en").coverage(1, 1) == "1 article from 1 publisher"
    assert messages("en").coverage(12, 7) == "12 articles from 7 publishers"
    assert messages("es").coverage(1, 3) == "1 artículo de 3 medios"
    assert messages("de").coverage(2, 1) == "2 Artikel aus 1 Medium"
    assert messages("fr").coverage(0, 1) == "0 article de 1 média"
    assert messages("it").coverage(2, 2) == "2 articoli da 2 testate"
    assert messages("xx").coverage(2, 2) == "2 articles from 2 publishers"  # no catalogue: English


@pytest.mark.parametrize("edition", ["es-es", "de-de", "fr-fr", "us-en"])
def test_the_for_you_shell_and_its_script_speak_the_editions_language(client, edition):
    from pathlib import Path

    html = client.get(f"/e/{edition}/for-you").data.decode()
    t = messages(edition.split("-")[1])
    assert f"<h1>{t('nav.for_you')}</h1>" in html and t("foryou.token_heading") in html
    js = (Path(__file__).resolve().parents[2] / "serving" / "web" / "static" / "foryou.js").read_text()
    used = set(re.findall(r'msg\("([a-z-]+)"', js)) | {"count-one", "count-other"}
    given = set(re.findall(r'data-msg-([a-z-]+)="', html))
    assert used <= given, used - given  # every string the script shows comes from the page's language
    one, other = t.forms("foryou.count")
    assert f'data-msg-count-one="{one}"' in html and f'data-msg-count-other="{other}"' in html
    assert ('data-zero-is-one="1"' in html) == (edition == "fr-fr")


def test_the_for_you_count_carries_every_plural_category_of_the_language(client):
    html = client.get("/e/ru-ru/for-you").data.decode()
    for category, text in messages("ru").plural_forms("foryou.count"):
        assert f'data-msg-count-{category}="{text}"' in html
    assert 'data-msg-count-many="{n} сюжетов для вас."' in html  # "5 сюжетов": many, which one/other cannot say
    js = (Path(__file__).resolve().parents[2] / "serving" / "web" / "static" / "foryou.js").read_text()
    assert "Intl.PluralRules" in js


def test_full_coverage_ends_its_sentence_as_the_language_does(app, world, client):
    sid = samples.story_id(760)
    cov = samples.story_coverage(sid, 1, samples.coverage_articles(sid, 2))
    cov["language"] = "ja"
    publish(world, cov)
    app.extensions["newsroom"].watcher.poll_once()
    line = re.search(r'<p class="coverage">([^<]+)</p>', client.get(f"/stories/{sid}").data.decode()).group(1)
    doc, t = client.get(f"/v1/stories/{sid}").get_json(), messages("ja")
    assert line == t("full_coverage_of", coverage=t.coverage(doc["article_count"], doc["publisher_count"])) + "。"
