"""Bad inputs are rejected with their reason (each dead-letter reason of the issue), good ones decode."""

from __future__ import annotations

import gzip

import pytest

from transforms.articles import page
from transforms.articles.page import Rejected

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<html><body><p>&lol9;</p></body></html>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<html><body><p>&xxe;</p></body></html>"""


def reason(body, headers=None):
    with pytest.raises(Rejected) as exc:
        page.load(body, headers or {"content-type": "text/html"})
    return exc.value.reason


def test_giant_page_is_too_large():
    body = b"<html><body>" + b"<p>x</p>" * (page.MAX_PAGE_BYTES // 8 + 10) + b"</body></html>"
    assert reason(body) == "too_large"


@pytest.mark.parametrize("body", [b"", b"   \n\t "])
def test_empty_response_is_empty_body(body):
    assert reason(body) == "empty_body"


@pytest.mark.parametrize(
    "body,headers",
    [
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3 binary", {"content-type": "application/pdf"}),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3 binary", {"content-type": "text/html"}),  # mislabelled: sniffed
        (b"\x89PNG\r\n\x1a\n....", {}),
        (b'{"articles": [1, 2, 3]}', {"content-type": "application/json"}),
        (b'{"articles": [1, 2, 3]}', {"content-type": "text/html"}),
        (
            b'<?xml version="1.0"?><rss version="2.0"><channel><title>x</title></channel></rss>',
            {"content-type": "text/xml"},
        ),
        (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>', {}),
        (b"just some plain words, no markup at all", {"content-type": "text/plain"}),
        (gzip.compress(b"<html><body><p>compressed twice</p></body></html>"), {"content-type": "text/html"}),
    ],
)
def test_not_html(body, headers):
    assert reason(body, headers) == "not_html"


def test_undecodable_bytes():
    # Invalid UTF-8 declared as UTF-8, full of control bytes: no charset makes text of it.
    body = b"<html><body><p>" + bytes(range(0, 32)) * 200 + b"\xff\xfe\xfa" * 300 + b"</p></body></html>"
    assert reason(body, {"content-type": "text/html; charset=utf-8"}) == "undecodable"


@pytest.mark.parametrize("body", [BILLION_LAUGHS, EXTERNAL_ENTITY])
def test_xml_bomb(body):
    assert reason(body) == "xml_bomb"


def test_declared_charset_is_honoured():
    text = "<html><head><meta charset='iso-8859-1'></head><body><p>Caf\u00e9 cr\u00e8me \u00e0 Paris</p></body></html>"
    decoded, tree = page.load(text.encode("latin-1"), {"content-type": "text/html"})
    assert "Caf\u00e9 cr\u00e8me" in decoded
    assert tree.xpath("string(//p)") == "Caf\u00e9 cr\u00e8me \u00e0 Paris"


def test_header_charset_wins_over_guessing():
    text = "<html><body><p>\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440</p></body></html>"
    decoded, _ = page.load(text.encode("cp1251"), {"content-type": "text/html; charset=windows-1251"})
    assert "\u041f\u0440\u0438\u0432\u0435\u0442" in decoded


def test_xhtml_with_xml_declaration_parses():
    body = (
        b'<?xml version="1.0" encoding="utf-8"?><!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
        b'"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"><html xmlns="http://www.w3.org/1999/xhtml">'
        b"<head><title>t</title></head><body><p>Hello</p></body></html>"
    )
    _, tree = page.load(body, {"content-type": "application/xhtml+xml"})
    assert tree.xpath("string(//p)") == "Hello"


def test_content_encoding_gzip_is_undone_and_bounded():
    html = b"<html><body><p>Hello compressed world</p></body></html>"
    _, tree = page.load(gzip.compress(html), {"content-type": "text/html", "content-encoding": "gzip"})
    assert tree.xpath("string(//p)") == "Hello compressed world"
    bomb = gzip.compress(b"<html><body>" + b" " * (page.MAX_PAGE_BYTES + 10) + b"</body></html>")
    assert len(bomb) < 100_000
    assert reason(bomb, {"content-type": "text/html", "content-encoding": "gzip"}) == "too_large"


def test_entity_text_anywhere_is_refused():
    """Entity declarations are refused anywhere (an unescaped quote of one in a page is the accepted price)."""
    body = (
        b"<!DOCTYPE html><html><head><title>XML tips</title></head><body><article>"
        b'<pre><code><!ENTITY lol "lol"></code></pre><p>Never expand entities from untrusted input.</p>'
        b"</article></body></html>"
    )
    assert reason(body) == "xml_bomb"
    escaped = body.replace(b'<!ENTITY lol "lol">', b"&lt;!ENTITY lol &quot;lol&quot;&gt;")  # how HTML quotes it
    _, tree = page.load(escaped, {"content-type": "text/html"})
    assert "<!ENTITY" in tree.xpath("string(//code)") and "Never expand" in tree.xpath("string(//p)")
