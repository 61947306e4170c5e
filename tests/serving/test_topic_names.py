"""Topic chips and titles show names worth showing: a region's code is its country (never "Us", "Gb", "In"), an
unlinked id is title-cased word by word ("Lumen's Orbit"), a generic word has no chip, one name shows once per card
(no "Springfield, Springfield"), a country in the edition's language."""

from __future__ import annotations

from types import SimpleNamespace

from serving.web.messages import messages
from serving.web.pages import chip_name, topic_title, with_chips

BAD_CHIPS = {"Us", "In", "Gb", "State", "Magnitude", "Lumen'S Orbit", "Erdbeben Der Stärke"}


def test_region_codes_are_countries_never_raw_codes():
    assert topic_title("place:us") == ("United States", "Place")
    assert topic_title("place:gb")[0] == "United Kingdom"
    assert topic_title("place:in")[0] == "India"
    assert topic_title("place:de", messages("de"))[0] == "Deutschland"
    assert topic_title("place:jp", messages("ja"))[0] == "日本"


def test_unlinked_ids_are_names_and_generic_words_have_no_chip():
    assert topic_title("entity:lumen's orbit")[0] == "Lumen's Orbit"
    assert topic_title("entity:o'brien")[0] == "O'Brien"
    assert topic_title("entity:place:springfield-us-il")[0] == "Springfield, Illinois"
    for generic in ("entity:us", "entity:in", "entity:gb", "entity:state", "entity:magnitude"):
        assert chip_name(generic) is None, generic
    assert chip_name("entity:erdbeben der stärke", messages("de")) is None
    assert chip_name("entity:person:donald-trump") == "Donald Trump"


def _pool(entities, places, topics):
    return SimpleNamespace(index={7: 0}, entities=[entities], places=[places], topics=[topics], edition="us-en")


def test_a_card_shows_each_name_once_and_no_bad_chip():
    pool = _pool(("springfield", "state", "us", "magnitude"), ("us", "springfield"), ("local",))
    cat = SimpleNamespace(pools={"us-en": pool})
    [card] = with_chips(cat, "us-en", [{"story_id": 7}])
    names = [name for _, name in card["chips"]]
    assert names == ["Springfield", "United States", "Local"]
    assert not set(names) & BAD_CHIPS


def test_for_you_reasons_name_places_and_follows_never_codes():
    from serving.api.foryou import reason_name

    assert reason_name("local:us", "en") == "United States"
    assert reason_name("local:gb", "de") == "Vereinigtes Königreich"
    assert reason_name("local:place:springfield-us-il", "en") == "Springfield, Illinois"
    assert reason_name("follows:entity/person:donald-trump", "en") == "Donald Trump"
    assert reason_name("top_story", "en") is None and reason_name("follows:source/pub-7", "en") is None


def _card_of_articles(articles, edition: str, stored=()) -> list[str]:
    """The chips a card shows for a one-story pool built the way the editions stage builds it: each article's
    extracted entity ids (and the ids of ``stored`` articles, extracted by an older release), the story's most
    mentioned ids, the region code, the city codes they name."""
    from collections import Counter

    from transforms.articles import entities
    from transforms.editions.overlays.topics import add_cities, city_codes
    from transforms.editions.vocabulary.config import load_config

    counts = Counter(e["id"] for title, body, lang in articles for e in entities.extract(title, body, lang))
    counts.update(e["id"] for ents in stored for e in ents)
    entry = {"entities": tuple(sorted(counts, key=lambda e: (-counts[e], e))[:8]), "places": (edition[:2],)}
    add_cities({"stories": [entry]}, city_codes(load_config()))
    pool = _pool(entry["entities"], entry["places"], ("local",))
    [card] = with_chips(SimpleNamespace(pools={edition: pool}), edition, [{"story_id": 7}])
    return [name for _, name in card["chips"]]


def test_a_card_shows_one_springfield_and_a_city_state_once():
    body = (
        "A Springfield man was charged on Friday after a shooting in Springfield, Illinois, that left a 24-year-old "
        "wounded, police said. The suspect was held overnight and will appear in court on Monday, a police spokesman "
        "told reporters outside the station."
    )
    before_places = [{"id": "springfield", "name": "Springfield", "kind": "PLACE"}]  # stored by an older release
    names = _card_of_articles([("Man charged after Springfield shooting", body, "en")], "us-en", [before_places])
    assert [n for n in names if n.startswith("Springfield")] == ["Springfield, Illinois"], names
    assert topic_title("place:singapore-sg")[0] == "Singapore"  # the city of the city-state
    assert topic_title("place:hong-kong-hk")[0] == "Hong Kong"


def test_cards_in_other_languages_show_no_code_title_or_headline_words():
    cases = {
        "de-de": (
            "US-Präsident Biden Trifft Bundeskanzler Scholz In Berlin",
            "US-Präsident Joe Biden hat am Mittwoch in Berlin Bundeskanzler Olaf Scholz getroffen. US-Präsident Joe "
            "Biden sagte, die USA stünden an der Seite Europas. Bundeskanzler Olaf Scholz dankte für den Besuch. Die "
            "Polizei sperrte das Regierungsviertel.",
        ),
        "ru-ru": (
            "Президент США Джо Байден Прибыл В Берлин",
            "Президент США Джо Байден прибыл в Берлин, где встретился с канцлером Олафом Шольцем. Президент США Джо "
            "Байден заявил, что США поддерживают Европу. Полиция перекрыла центр города на время визита.",
        ),
    }
    for edition, article in cases.items():
        names = _card_of_articles([(*article, edition[3:])] * 2, edition)
        assert "Joe Biden" in names or "Джо Байден" in names, (edition, names)
        assert not any(n.startswith(("Us", "Сша", "US-", "Президент", "Bundeskanzler")) for n in names), names
