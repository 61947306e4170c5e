"""Hostile page bytes. On 60feb56 an entity declaration after a long leading comment or after
the first element passed the XML-bomb check, Latin-1 declared as UTF-8 became silent mojibake, and a declared UTF-7
was honoured (encoded markup became a script element)."""

from __future__ import annotations

import pytest

from transforms.articles import page
from transforms.articles.page import Rejected

BOMB = '<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
HTML = "<html><head><title>{title}</title></head><body><article><p>{body}</p></article></body></html>"


def reason(body: bytes, headers=None) -> str:
    with pytest.raises(Rejected) as exc:
        page.load(body, headers or {"content-type": "text/html"})
    return exc.value.reason


@pytest.mark.parametrize(
    "doc",
    [
        "<!--" + "x" * 70000 + "-->" + BOMB + HTML.format(title="t", body="&lol2;"),  # after a long comment
        "<html>" + BOMB + "<head><title>t</title></head><body><p>&lol2;</p></body></html>",  # after the 1st element
        HTML.format(title="t", body="text") + BOMB,  # at the very end
        '<!DOCTYPE html PUBLIC "a>b" [<!ENTITY x "y">]>' + HTML.format(title="t", body="&x;"),  # quoted '>'
        "<!doctype\nhtml\n[ ]>" + HTML.format(title="t", body="empty subset"),  # any internal subset
        HTML.format(title="t", body='<!ENTITY xxe SYSTEM "file:///etc/passwd">'),  # a bare declaration
    ],
    ids=["after-long-comment", "after-first-element", "at-the-end", "quoted-gt", "empty-subset", "bare-entity"],
)
def test_entity_declarations_are_refused_anywhere(doc):
    assert reason(doc.encode()) == "xml_bomb"


FRENCH = "Le café crème coûte déjà trois euros à Paris, naïve façade, résumé brûlé."
SPANISH = "El niño comió piña en el año nuevo; la señora pagó la cuenta."


@pytest.mark.parametrize("text", [FRENCH, SPANISH])
@pytest.mark.parametrize("where", ["header", "meta"])
@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_latin1_declared_as_utf8_is_not_mojibake(text, where, encoding):
    doc = HTML.format(title="Nouvelles", body=text)
    headers = {"content-type": "text/html; charset=utf-8" if where == "header" else "text/html"}
    if where == "meta":
        doc = doc.replace("<head>", '<head><meta charset="utf-8">')
    decoded, tree = page.load(doc.encode(encoding), headers)
    assert tree.xpath("string(//p)") == text
    assert "\ufffd" not in decoded


def test_utf8_declared_as_latin1_is_not_mojibake():
    decoded, tree = page.load(
        HTML.format(title="t", body=FRENCH).encode("utf-8"), {"content-type": "text/html; charset=iso-8859-1"}
    )
    assert tree.xpath("string(//p)") == FRENCH


UTF7_PAGE = (
    b'<html><head><meta charset="utf-7"><title>News+ADw-/title+AD4-+ADw-script+AD4-alert(1)+ADw-/script+AD4-</title>'
    b"</head><body>+ADw-script+AD4-steal()+ADw-/script+AD4-<p>Plain text.</p></body></html>"
)


@pytest.mark.parametrize("where", ["header", "meta"])
@pytest.mark.parametrize("label", ["utf-7", "UTF7", "iso-2022-jp", "hz", "x-no-such-charset"])
def test_dangerous_or_unknown_declared_encodings_are_ignored(where, label):
    body = UTF7_PAGE.replace(b"utf-7", label.encode())
    headers = {"content-type": f"text/html; charset={label}" if where == "header" else "text/html"}
    decoded, tree = page.load(body, headers)
    assert not tree.xpath("//script"), "encoded markup became an element"
    assert "+ADw-script+AD4-" in decoded  # the bytes stay text
    assert "<script>" not in tree.xpath("string(//title)")


def test_allowlist_keeps_real_legacy_charsets():
    text = "Привет, мир: новости дня"
    decoded, tree = page.load(
        HTML.format(title="t", body=text).encode("cp1251"), {"content-type": "text/html; charset=windows-1251"}
    )
    assert tree.xpath("string(//p)") == text
    sjis = "東京の天気は晴れ"
    decoded, tree = page.load(
        HTML.format(title="t", body=sjis).replace("<head>", '<head><meta charset="shift_jis">').encode("shift_jis"),
        {"content-type": "text/html"},
    )
    assert tree.xpath("string(//p)") == sjis
    assert "utf-7" not in page.ALLOWED_ENCODINGS and "iso2022_jp" not in page.ALLOWED_ENCODINGS


@pytest.mark.parametrize(
    "text,encoding,lang",
    [
        ("Zażółć gęślą jaźń, powiedział minister w Warszawie.", "cp1250", "pl"),
        ("Привет, мир: новости дня и погода в Москве сегодня", "cp1251", "ru"),
        ("Türkiye'de hükümet yeni ekonomik önlemler açıkladı.", "cp1254", "tr"),
        ("Müller sagt: Größe zählt für alle Bürger der Stadt.", "cp1252", "de"),
    ],
)
def test_other_legacy_pages_mislabelled_utf8_decode_right(text, encoding, lang):
    doc = HTML.format(title="N", body=text).replace("<html>", f'<html lang="{lang}">')
    _, tree = page.load(doc.encode(encoding), {"content-type": "text/html; charset=utf-8"})
    assert tree.xpath("string(//p)") == text
