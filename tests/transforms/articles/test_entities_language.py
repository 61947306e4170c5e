"""Entities (markup, capitalised n-grams, alias table, caseless scripts) and language detection."""

from __future__ import annotations

import pytest

from transforms.articles import entities, language
from transforms.articles.entity_aliases import AliasTable


def ids(ents):
    return [e["id"] for e in ents]


def test_capitalised_ngrams_with_titles_and_stopwords():
    body = (
        "South Dakota Gov. Kristi Noem defended the campaign on Monday. The campaign was made by Broadhead. "
        "Noem said the ads worked. In Washington, the White House declined to comment. The New York Times "
        "reported that the Department of Social Services would continue the work. Noem spoke to Fox News."
    )
    ents = entities.extract("Noem defends 'Meth. We're on it' campaign", body, "en")
    by_name = {e["name"]: e for e in ents}
    assert by_name["Kristi Noem"]["kind"] == "PERSON" and by_name["Kristi Noem"]["id"] == "person:kristi-noem"
    assert ids(ents)[0] == "person:kristi-noem"  # mentioned most, and in the title
    assert "org:white-house" in ids(ents)
    assert by_name["Department of Social Services"]["kind"] == "ORG"
    assert not {"The", "In", "The New York Times"} & set(by_name)  # sentence-initial function words trimmed
    assert "new york times" in ids(ents)


def test_alias_table_links_across_languages():
    en = entities.extract("Putin meets Xi", "Vladimir Putin met Xi Jinping in Beijing on Tuesday. Putin said.", "en")
    ru = entities.extract(
        "Путин встретился с Си", "Владимир Путин встретился с Си Цзиньпином в Пекине. Путин заявил.", "ru"
    )
    zh = entities.extract("普京会见习近平", "俄罗斯总统普京在北京会见了习近平。普京表示", "zh")
    for ents in (en, zh):
        assert "person:vladimir-putin" in ids(ents)
        assert "person:xi-jinping" in ids(ents)
    assert "person:vladimir-putin" in ids(ru)
    assert "place:beijing" in ids(zh) and "place:russia" in ids(zh)


def test_markup_mentions_come_first_and_keep_their_type():
    article = {"about": [{"@type": "Organization", "name": "Ascom"}], "mentions": [{"@type": "Place", "name": "Baar"}]}
    ents = entities.extract("Ascom partners with GE", "Ascom said on Monday that ...", "en", article)
    assert ents[:2] == [
        {"id": "ascom", "name": "Ascom", "kind": "ORG"},
        {"id": "place:baar", "name": "Baar", "kind": "PLACE"},  # the gazetteer's Baar (Zug), not a surface form
    ]


def test_alias_table_is_extensible(tmp_path):
    f = tmp_path / "aliases.tsv"
    f.write_text("# comment\norg:acme\tORG\tAcme Corporation\tAcme|ACME|アクメ\n", encoding="utf-8")
    table = AliasTable.load(f)
    assert table.link("acme") == ("org:acme", "ORG", "Acme Corporation")
    assert table.link("ACME") == ("org:acme", "ORG", "Acme Corporation")
    ents = entities.extract("アクメが新製品", "アクメは火曜日に発表した。アクメの社長", "ja", aliases=table)
    assert ents[0]["id"] == "org:acme"
    table.add("person:jane-roe", "PERSON", "Jane Roe", ["J. Roe"])
    assert table.link("J. Roe")[0] == "person:jane-roe"


def test_single_words_mentioned_once_are_noise():
    ents = entities.extract("", "Yesterday Reuters reported. Markets rose slightly in afternoon trade.", "en")
    assert ents == []


@pytest.mark.parametrize(
    "text,lang",
    [
        ("The council approved the budget for the new harbour after a long debate on Tuesday evening.", "en"),
        ("El consejo aprobó el presupuesto del nuevo puerto tras un largo debate el martes por la noche.", "es"),
        ("Le conseil a approuvé le budget du nouveau port après un long débat mardi soir.", "fr"),
        ("Der Rat hat den Haushalt für den neuen Hafen nach einer langen Debatte am Dienstagabend gebilligt.", "de"),
        ("外国专家：中美合作共赢符合国际社会利益，美方应当采取更多行动。", "zh"),
        ("米朝首脳会談を巡って戦っていたのは、米大統領のトランプと北朝鮮委員長ばかりではなかった。", "ja"),
        ("أكدت جهات سورية معارضة أن فصائل مسلحة معارضة لنظام الرئيس تمكنت من السيطرة على مخازن", "ar"),
    ],
)
def test_language_from_text(text, lang):
    assert language.detect(text)[0] == lang


def test_language_ignores_a_wrong_label_but_uses_it_when_unsure():
    assert (
        language.detect("El consejo aprobó el presupuesto del nuevo puerto tras un largo debate.", declared="en")[0]
        == "es"
    )
    assert language.detect("", declared="pt-BR") == ("pt", 0.0)
    assert language.detect("")[0] == "und"


def test_speakers_are_people_in_several_languages():
    en = entities.extract("", "Maria Lopez said the plan was late. Lopez told reporters it would cost more.", "en")
    es = entities.extract("", "El fiscal Pedro Horrach dijo que el auto era firme. Horrach habló después.", "es")
    de = entities.extract("", "Anna Schmidt sagte, der Plan sei zu spät. Schmidt erklärte das am Montag.", "de")
    assert en[0] == {"id": "maria lopez", "name": "Maria Lopez", "kind": "PERSON"}
    assert es[0] == {"id": "pedro horrach", "name": "Pedro Horrach", "kind": "PERSON"}
    assert de[0] == {"id": "anna schmidt", "name": "Anna Schmidt", "kind": "PERSON"}
