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
