"""Places resolved to GeoNames ids with their hierarchy (transforms/articles/places.py), in every edition language,
and entities worth showing: no generic words, no German nouns, no raw codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transforms.articles import entities, places
from transforms.articles.places import compatible, gazetteer, places_of, relation

# (edition language, a sentence naming a place as a local reporter writes it, its GeoNames id)
PLACE_IN_EACH_LANGUAGE = [
    ("ar", "ضرب زلزال قوي مدينة طوكيو يوم الاثنين وفق السلطات", 1850147),
    ("bg", "Силно земетресение разтърси София в понеделник, съобщиха властите.", 727011),
    ("bn", "ঢাকায় সোমবার ভারী বৃষ্টিতে জনজীবন বিপর্যস্ত হয়েছে", 1185241),
    ("cs", "Praha v pondělí oznámila nová opatření proti povodním.", 3067696),
    ("da", "Kraftigt uvejr ramte København mandag, oplyser politiet.", 2618425),
    ("de", "In München hat am Montag ein Erdbeben der Stärke 4,1 die Stadt erschüttert.", 2867714),
    ("el", "Ισχυρός σεισμός συγκλόνισε την Αθήνα τη Δευτέρα, ανέφεραν οι αρχές.", 264371),
    ("en", "A strong earthquake shook Stockton on Monday, officials said.", 5399020),
    ("es", "Un fuerte terremoto sacudió Guadalajara el lunes, informaron las autoridades.", 4005539),
    ("fi", "Myrsky iski Tampere maanantaina, kertoi poliisi.", 634963),
    ("fr", "Un violent séisme a frappé Marseille lundi, selon les autorités.", 2995469),
    ("he", "רעידת אדמה חזקה פקדה את חיפה ביום שני, כך נמסר", 294801),
    ("hi", "दिल्ली में सोमवार को भारी बारिश से जनजीवन अस्त-व्यस्त हो गया", 1273294),
    ("hu", "Erős földrengés rázta meg Debrecen városát hétfőn.", 721472),
    ("id", "Gempa kuat mengguncang Surabaya pada hari Senin, kata pejabat setempat.", 1625822),
    ("it", "Un forte terremoto ha colpito Napoli lunedì, secondo le autorità.", 3172394),
    ("ja", "大阪で月曜日に強い地震が発生した。", 1853909),
    ("ko", "부산에서 월요일 강한 지진이 발생했다.", 1838524),
    ("lt", "Stipri audra pirmadienį smogė Kaunas miestui, pranešė policija.", 598316),
    ("lv", "Spēcīga vētra pirmdien skāra Rīga pilsētu, ziņo policija.", 456172),
    ("ml", "കൊച്ചിയിൽ തിങ്കളാഴ്ച കനത്ത മഴ പെയ്തു", 1273874),
    ("mr", "मुंबईत सोमवारी मुसळधार पाऊस झाला", 1275339),
    ("nl", "Een zware storm trof Rotterdam maandag, meldt de politie.", 2747891),
    ("no", "Et kraftig uvær rammet Bergen mandag, opplyser politiet.", 3161732),
    ("pl", "Silna burza nawiedziła Kraków w poniedziałek, poinformowała policja.", 3094802),
    ("pt", "Um forte temporal atingiu São Paulo na segunda-feira, disseram as autoridades.", 3448439),
    ("ro", "Un cutremur puternic a zguduit Cluj-Napoca luni, au anunțat autoritățile.", 681290),
    ("ru", "Сильное землетрясение произошло в понедельник, Новосибирск остался без света.", 1496747),
    ("sk", "Silná búrka zasiahla Košice v pondelok, oznámila polícia.", 724443),
    ("sl", "Župan mesta Ljubljana je v ponedeljek sporočil, da je neurje minilo.", 3196359),
    ("sr", "Јако невреме погодило је Нови Сад у понедељак, саопштила је полиција.", 3194360),
    ("sv", "En kraftig storm drabbade Göteborg på måndagen, uppger polisen.", 2711537),
    ("ta", "சென்னையில் திங்கள்கிழமை கனமழை பெய்தது", 1264527),
    ("te", "హైదరాబాదు నగరంలో సోమవారం భారీ వర్షం కురిసింది", 1269843),
    ("th", "เกิดแผ่นดินไหวรุนแรงที่เชียงใหม่เมื่อวันจันทร์", 1153671),
    ("tr", "Pazartesi günü İzmir'de şiddetli bir deprem meydana geldi.", 311046),
    ("uk", "Сильна буря вразила Львів у понеділок, повідомила поліція.", 702550),
    ("vi", "Một trận động đất mạnh làm rung chuyển Đà Nẵng hôm thứ Hai.", 1583992),
    ("zh", "成都周一发生强烈地震，当局表示。", 1815286),
]


def test_every_edition_language_has_a_case():
    editions = json.loads(Path("transforms/editions/vocabulary/editions.json").read_text(encoding="utf-8"))["editions"]
    assert {e["language"] for e in editions} <= {lang for lang, _, _ in PLACE_IN_EACH_LANGUAGE}


@pytest.mark.parametrize("language,text,geonameid", PLACE_IN_EACH_LANGUAGE, ids=[c[0] for c in PLACE_IN_EACH_LANGUAGE])
def test_a_place_in_each_edition_language_resolves_to_its_geonames_id(language, text, geonameid):
    ents = entities.extract("", text, language)
    found = places_of("", text, language, ents)
    assert geonameid in [p.gid for p in found], ents
    place = next(p for p in found if p.gid == geonameid)
    assert {"id": place.entity_id, "name": place.name, "kind": "PLACE"} in ents
    assert place in places_of("", text, language)  # the writer's path (quick_places) reads it too


def test_hierarchy_keeps_a_city_with_its_state_and_apart_from_another_city():
    g = gazetteer()
    stockton = places_of("2 teens wounded in Stockton", "Two teens were wounded in Stockton on Friday night.", "en")
    california = places_of("", "Police across California searched on Saturday for the gunman.", "en")
    indianapolis = places_of("", "A 14-year-old was killed in an Indianapolis parking lot, police said.", "en")
    assert [p.slug for p in stockton] == ["stockton"] and stockton[0].gid == 5399020
    assert compatible(stockton[0], california[0]) and stockton[0].within(california[0])
    assert relation(stockton, california) == "compatible"
    assert relation(stockton, indianapolis) == "conflict"
    assert relation(stockton, stockton) == "same"
    assert relation(stockton, ()) == "unknown"
    assert g.country("US").key in places.place_keys(stockton)


def test_an_ambiguous_name_reads_the_article_s_other_places():
    g = gazetteer()
    assert g.resolve(["Springfield", "Illinois"])["Springfield"].admin1 == "US.IL"
    assert g.resolve(["Springfield"])["Springfield"].admin1 == "US.MO"  # the most populous without context
    assert g.resolve(["Georgia", "Atlanta"])["Georgia"].kind == "admin1"
    assert g.resolve(["Georgia", "Tbilisi"])["Georgia"].kind == "country"
    assert g.resolve(["Paris"])["Paris"].country == "FR"
    assert g.resolve(["Paris", "Texas"])["Paris"].country == "US"


def test_slugs_are_unique_and_keep_the_alias_table_ids():
    g = gazetteer()
    assert g.by_slug("new-york").gid == 5128581 and g.by_slug("united-states").gid == 6252001
    assert g.by_slug("washington-dc").gid == 4140963
    slugs = [g.by_slug(s).key for s in ("springfield", "springfield-us", "springfield-us-il")]
    assert len(set(slugs)) == 3
    assert g.display(g.by_slug("springfield-us-il")) == "Springfield, Illinois"
    assert g.display(g.country("US"), "de") == "Vereinigte Staaten"


def test_codes_and_generic_words_are_never_places_or_entities():
    g = gazetteer()
    for code in ("US", "IN", "GB", "UK", "Us", "In", "Gb"):
        assert g.candidates(code) == ()
    body = (
        "Magnitude 6.2 earthquake strikes off the coast. State officials said the quake struck at 3 a.m. "
        "In the capital, residents ran into the streets. The magnitude was revised later by the agency. "
        "Us and them: the state of the roads is poor, the governor said in a statement on Monday."
    )
    ents = entities.extract("Magnitude 6.2 Earthquake Strikes State, Officials Say", body, "en")
    names = {e["name"].casefold() for e in ents}
    assert not names & {"us", "in", "gb", "state", "magnitude", "officials say", "earthquake strikes state"}


def test_german_nouns_after_their_article_are_not_entities():
    body = (
        "Ein Erdbeben der Stärke 5,4 hat am Montag die Region erschüttert. Das Erdbeben der Stärke 5,4 war auch "
        "in München zu spüren, sagte der Sprecher des Landratsamts. Der SPD-Politiker Lars Klingbeil sagte, die "
        "Schäden würden geprüft. Lars Klingbeil besuchte am Abend die Feuerwehr."
    )
    ents = entities.extract("Erdbeben Der Stärke 5,4 erschüttert Bayern", body, "de")
    names = {e["name"].casefold() for e in ents}
    assert not {n for n in names if "erdbeben" in n or "stärke" in n}
    assert "lars klingbeil" in names and "place:munich" in {e["id"] for e in ents}


def test_people_and_organisations_have_normalised_keys():
    ents = [
        {"id": "person:donald-trump", "name": "Donald Trump", "kind": "PERSON"},
        {"id": "maría lópez", "name": "María López's", "kind": "PERSON"},
        {"id": "sen. jane roe", "name": "Sen. Jane Roe", "kind": "PERSON"},
        {"id": "acme corp", "name": "Acme Corp", "kind": "ORG"},
        {"id": "place:paris", "name": "Paris", "kind": "PLACE"},
    ]
    assert places.people_keys(ents) == {"person:donald-trump", "maria lopez", "jane roe"}
    assert places.org_keys(ents) == {"acme corp"}


def test_generic_ids_have_no_topic_page():
    from transforms.editions.overlays.topics import topic_ids_of

    entry = {"entities": ("us", "state", "magnitude", "erdbeben der stärke", "kristi noem"), "places": ("us",)}
    assert topic_ids_of(entry) == ["entity:kristi noem", "place:us"]


def test_words_that_are_places_elsewhere_are_not_places_here():
    g = gazetteer()
    assert "isle-of-man" in [p.slug for p in g.candidates("Man", "no")]  # Norwegian CLDR calls it "Man"
    assert "isle-of-man" not in [p.slug for p in g.candidates("Man", "en")]
    body = (
        "Former President George Bush spoke in Houston, Texas, on Monday. A man was shot nearby. Bush said the "
        "state would recover. In God we trust, Bush added, and the crowd in Houston cheered for a long while."
    )
    ents = entities.extract("Man shot as Bush visits Houston", body, "en")
    assert [e["id"] for e in ents if e["kind"] == "PLACE"] == ["place:houston", "place:texas"]
    assert not {"bush", "man", "god", "place:bush", "place:man", "place:god"} & {e["id"] for e in ents}


def test_every_gazetteer_place_of_a_local_name_is_that_city():
    from transforms.editions.overlays.topics import city_codes
    from transforms.editions.vocabulary.config import load_config

    codes = city_codes(load_config())
    assert codes["place:springfield-us-il"] == codes["place:springfield"] == "springfield"
    assert codes["place:los-angeles"] == "los-angeles"


def test_a_big_city_s_name_in_another_language_beats_a_small_town_of_that_name():
    g = gazetteer()
    assert g.candidates("Tolosa")[0].slug == "toulouse"  # Italian and Spanish for Toulouse, also a Basque town
    assert g.candidates("Sídney")[0].country == "AU"
    ents = entities.extract("", "L'Airbus A380 è stato presentato a Tolosa, in Francia, davanti ai clienti.", "it")
    assert "place:toulouse" in {e["id"] for e in ents}


def test_places_of_reads_an_article_extracted_before_the_gazetteer():
    old = [
        {"id": "stockton", "name": "Stockton", "kind": "PLACE"},
        {"id": "jane roe", "name": "Jane Roe", "kind": "PERSON"},
    ]
    assert [p.gid for p in places_of("", "", "en", old)] == [5399020]


def test_the_writer_s_quick_path_reads_the_alias_table_and_skips_organisations():
    body = (
        "The White House said on Monday that the U.S. would send aid to New York after a shooting outside a "
        "Sam's Club in Bloomington, Indiana. Officials in Albuquerque, New Mexico, offered help."
    )
    found = places.quick_places("Shooting outside Bloomington store", body, "en")
    slugs = [p.slug for p in found]
    assert found[0].name == "Bloomington" and found[0].admin1 == "US.IN"  # the title's, in the Indiana it names
    assert "casablanca" not in slugs and "damascus" not in slugs
    assert {"united-states", "new-york", "indiana", "albuquerque", "new-mexico"} <= set(slugs)
