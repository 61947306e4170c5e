"""Turn the bytes of a fetched page into a parsed HTML tree, or reject them with a reason.

Reads: the raw response body (bytes) and its HTTP headers (lower-cased names). Writes: a decoded ``str`` and an
lxml ``HtmlElement`` tree, or raises :class:`Rejected` with one of the machine-readable reasons below (they become
``DeadLetter.reason`` and a Beam counter each).

Checks, in order (cheap before expensive):
- ``too_large``: more than ``MAX_PAGE_BYTES`` (4 MiB), before or after undoing a gzip/deflate Content-Encoding
  (decompression stops at the limit, so a zip bomb costs nothing). News pages of the benchmark average ~150 KB;
  the largest page in ../shared/data is 2.8 MB. 4 MiB keeps such pages while bounding parse memory and time
  (lxml needs several times the input in RAM).
- ``empty_body``: nothing (or only whitespace) was received.
- ``not_html``: a Content-Type that is not HTML/XHTML (PDF, images, JSON, feeds), or content that sniffs as
  something else (``%PDF``, binary magic numbers, an RSS/Atom/sitemap root, JSON).
- ``undecodable``: the bytes do not decode in the declared charset, nor as UTF-8, nor in the charset a detector
  guesses with confidence; or the decoded text is mostly control characters (binary served as text/html).
- ``xml_bomb``: the document contains an entity declaration (``<!ENTITY``) or a DOCTYPE internal subset
  (``<!DOCTYPE x [``) *anywhere* (billion laughs, quadratic blow-up, external entities). The whole text is
  searched, not only the prolog: a declaration placed after a long leading comment or after the first element
  passed an earlier prolog-only check, and parsers disagree on where a prolog ends. Legitimate HTML never
  declares entities (none of the 282 saved HTML pages in ../shared/data/pages contains either string); the price
  is that a page quoting ``<!ENTITY`` unescaped (it should be ``&lt;!ENTITY``) is refused too.
- ``hostile_markup``: an element with more than 256 attributes (transforms/markup.py): libxml2, trafilatura and
  htmldate spend time in the square of an element's attributes (a page with one element of 20,000 attributes took
  5.2 s to extract, 40,000 about 20 s); a linear scan refuses it before any parser runs.

Charsets (the decoding order, first that works): a BOM; the Content-Type charset; the page's ``<meta charset>`` /
XML declaration; UTF-8; then charset detection (charset-normalizer, which requests already pulls in). Rules:
- Strict allowlist (:data:`ALLOWED_ENCODINGS`, the WHATWG Encoding Standard's legacy encodings): any other label
  is ignored as if absent. UTF-7, ISO-2022-* and HZ are stateful 7-bit encodings that turn ASCII-looking bytes
  into markup (``+ADw-script+AD4-`` is ``<script>`` in UTF-7), so a declaration of one never applies. ``latin-1``
  and ``ascii`` labels decode as windows-1252 (WHATWG, and what such pages really are); a UTF-16 label in the
  markup means UTF-8 (if the label is readable as ASCII, the page is not UTF-16), as browsers do.
- A declared UTF-8 that is not valid UTF-8 is not trusted: the bytes go to the other declared labels, then to
  detection (Latin-1/windows-1252 pages labelled UTF-8 are the web's commonest mislabel); among the detector's
  near-best candidates the code page of the page's ``<html lang>`` wins, else windows-1252 (the detector's own
  first choice turned "crème" into "crčme").
- A declared single-byte charset over bytes that are valid, non-ASCII UTF-8 is taken as UTF-8 (the reverse
  mislabel: "CafÃ©"); random legacy text is practically never valid UTF-8.

Parsing uses lxml's HTML parser without comments and processing instructions (what trafilatura expects), and
never resolves entities or network resources.
"""

from __future__ import annotations

import codecs
import re
import threading

from transforms import markup

MAX_PAGE_BYTES = 4 * 1024 * 1024

HTML_TYPES = (
    "text/html",
    "application/xhtml+xml",
    "application/xml",
    "text/xml",
    "text/plain",
    "application/octet-stream",
    "",
)
_BINARY_MAGIC = (
    b"%PDF",
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"RIFF",
    b"\x00\x00\x01\x00",
    b"OggS",
    b"ID3",
    b"\x7fELF",
)
_CHARSET_HEADER = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.I)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.I)
_XML_ENCODING = re.compile(rb"<\?xml[^>]+encoding\s*=\s*[\"']([\w.:-]+)", re.I)
# Any entity declaration or DOCTYPE internal subset, anywhere. "[^>]" would stop at a quoted ">" in a public id
# ('<!DOCTYPE x PUBLIC "a>b" [') and let the subset through, so a declaration's body is read past quoted strings.
# One search over the text was quadratic (every "<!DOCTYPE" rescanned to the next ">": 96 KB of them took 22 s), so
# the body of each declaration is read once and the next one is looked for after it (_doctype_subset).
_DOCTYPE = re.compile(r"<!\s*DOCTYPE", re.I)
_DOCTYPE_BODY = re.compile(r"""(?:[^>\["']+|"[^"]*"|'[^']*')*""")
_ENTITY_DECL = re.compile(r"<!\s*ENTITY", re.I)

# The WHATWG Encoding Standard's encodings (Python codec names), minus the stateful 7-bit ones (UTF-7 is not in
# it at all; ISO-2022-JP and HZ can smuggle markup through escape sequences). Anything else is ignored.
ALLOWED_ENCODINGS = frozenset(
    ["utf-8", "utf-16", "utf-16-le", "utf-16-be", "cp866", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic"]
    + [f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)]
    + [f"cp{n}" for n in (874, 1250, 1251, 1252, 1253, 1254, 1255, 1256, 1257, 1258)]
    + ["gbk", "gb2312", "gb18030", "big5", "big5hkscs", "euc_jp", "shift_jis", "cp932", "euc_kr", "cp949"]
    + ["tis-620"]
)
_AS_WINDOWS_1252 = ("iso8859-1", "ascii", "latin-1")
_UTF16 = ("utf-16", "utf-16-le", "utf-16-be")
_SINGLE_BYTE = frozenset(e for e in ALLOWED_ENCODINGS if e.startswith(("cp", "iso8859", "koi8", "mac-", "tis")))
_SINGLE_BYTE = _SINGLE_BYTE - {"cp932", "cp949"}
_HTML_MARKERS = re.compile(
    r"<(?:!doctype\s+html|html|head|body|meta|title|div|p|article|main|section|span)[\s>/]", re.I
)
_NON_HTML_ROOT = re.compile(
    r"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(rss|feed|urlset|sitemapindex|rdf:RDF|opml|svg)\b", re.I | re.S
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")


class Rejected(Exception):
    """An input that cannot become an article. ``reason`` is a short code (DeadLetter.reason)."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def content_type(headers: dict | None) -> tuple[str, str | None]:
    """(media type, charset) from a Content-Type header; ("", None) when absent."""
    value = (headers or {}).get("content-type", "") or ""
    media = value.split(";", 1)[0].strip().lower()
    m = _CHARSET_HEADER.search(value)
    return media, (m.group(1) if m else None)


def _codec(name: str | None, in_markup: bool = False) -> str | None:
    """The Python codec of a charset label, or None when the label is unknown or not allowed."""
    if not name:
        return None
    try:
        codec = codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None
    if codec in _AS_WINDOWS_1252:
        return "cp1252"
    if in_markup and codec in _UTF16:
        return "utf-8"
    return codec if codec in ALLOWED_ENCODINGS else None


def _valid_utf8_non_ascii(body: bytes) -> bool:
    if body.isascii():
        return False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decode(body: bytes, headers: dict | None = None) -> str:
    """Decode a page's bytes to text, or raise Rejected (too_large, empty_body, not_html, undecodable)."""
    if body is None or not isinstance(body, (bytes, bytearray)):
        raise Rejected("empty_body", "no body")
    if len(body) > MAX_PAGE_BYTES:
        raise Rejected("too_large", f"{len(body)} bytes > {MAX_PAGE_BYTES}")
    encoding = ((headers or {}).get("content-encoding") or "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate") and bytes(body[:2]) in (
        b"\x1f\x8b",
        b"\x78\x9c",
        b"\x78\x01",
        b"\x78\xda",
    ):
        body = _inflate(bytes(body))
    if not body.strip():
        raise Rejected("empty_body", "0 bytes of content")
    media, header_charset = content_type(headers)
    if media and media not in HTML_TYPES:
        raise Rejected("not_html", f"content-type {media}")
    head = bytes(body[:16])
    for magic in _BINARY_MAGIC:
        if head.startswith(magic):
            raise Rejected("not_html", f"binary content ({magic!r})")

    text = None
    tried = []
    body = bytes(body)
    bom = _bom_codec(body)
    candidates = [bom, _codec(header_charset)]
    m = _META_CHARSET.search(body[:4096]) or _XML_ENCODING.search(body[:512])
    candidates.append(_codec(m.group(1).decode("ascii", "ignore"), in_markup=True) if m else None)
    candidates.append("utf-8")
    if not bom:
        declared = next((c for c in candidates if c), "utf-8")
        if declared in _SINGLE_BYTE and _valid_utf8_non_ascii(body):
            candidates.insert(0, "utf-8")  # labelled legacy, really UTF-8
    for enc in candidates:
        if not enc or enc in tried:
            continue
        tried.append(enc)
        try:
            text = bytes(body).decode(enc)
            if enc == "utf-8" and text.startswith("\ufeff"):
                text = text[1:]
            break
        except (UnicodeDecodeError, LookupError):
            continue
    if text is None:
        text = _detect(bytes(body))
    if text is None:
        raise Rejected("undecodable", f"not valid in {', '.join(tried) or 'any charset'} and no confident guess")
    sample = text[:20000]
    if sample and len(_CONTROL.findall(sample)) > 0.02 * len(sample):
        raise Rejected("undecodable", "decoded text is mostly control or replacement characters")
    return text


def _inflate(body: bytes) -> bytes:
    """Undo a gzip/deflate Content-Encoding, never producing more than MAX_PAGE_BYTES (a zip bomb stops there)."""
    import zlib

    d = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib header, auto-detected
    try:
        out = d.decompress(body, MAX_PAGE_BYTES + 1)
    except zlib.error as exc:
        raise Rejected("undecodable", f"bad compressed body: {exc}") from None
    if len(out) > MAX_PAGE_BYTES or d.unconsumed_tail:
        raise Rejected("too_large", f"decompresses to more than {MAX_PAGE_BYTES} bytes")
    return out


def _bom_codec(body: bytes) -> str | None:
    if body.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if body.startswith(codecs.BOM_UTF16_LE) or body.startswith(codecs.BOM_UTF16_BE):
        return "utf-16"
    return None


_HTML_LANG = re.compile(rb"<html[^>]*\slang\s*=\s*[\"']?([a-zA-Z]{2,3})", re.I)
# The legacy charset a page in this language most likely uses (windows code pages, the web's usual ones).
_LANG_CHARSET = {
    **dict.fromkeys(("pl", "cs", "sk", "hu", "sl", "hr", "ro", "bs"), "cp1250"),
    **dict.fromkeys(("ru", "uk", "be", "bg", "sr", "mk"), "cp1251"),
    "el": "cp1253",
    "tr": "cp1254",
    "az": "cp1254",
    "he": "cp1255",
    **dict.fromkeys(("ar", "fa", "ur"), "cp1256"),
    **dict.fromkeys(("lt", "lv", "et"), "cp1257"),
    "vi": "cp1258",
    "th": "cp874",
}


def _detect(body: bytes) -> str | None:
    """charset-normalizer's best allowed guess, accepted only when its chaos score is low.

    On short texts the detector's first choice is often a neighbour code page that decodes the same bytes with
    equal or slightly lower "chaos" (French in cp1257 gives "brūlé", in cp1250 "crčme"). So among its candidates
    within 0.1 chaos of the best: the code page of the page's ``<html lang>`` wins when there is one, else
    windows-1252 (by far the commonest legacy charset on the web; the detector drops it itself when it reads as
    chaos, as for Polish, Czech, Russian or Greek text)."""
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - installed with requests
        return None
    allowed = sorted(ALLOWED_ENCODINGS - set(_UTF16) - {"utf-8"})
    results = [r for r in from_bytes(body[:200000], cp_isolation=allowed) if _codec(r.encoding) in ALLOWED_ENCODINGS]
    if not results:
        return None
    best = min(results, key=lambda r: r.chaos)
    near = {_codec(r.encoding): r for r in results if r.chaos <= best.chaos + 0.1}
    m = _HTML_LANG.search(body[:4096])
    preferred = _LANG_CHARSET.get(m.group(1).decode("ascii").lower()) if m else None
    chosen = near.get(preferred) or near.get("cp1252") or best
    if chosen.chaos > 0.2:
        return None
    try:
        return body.decode(_codec(chosen.encoding) or chosen.encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _doctype_subset(text: str) -> int | None:
    """Offset of the first DOCTYPE declaration with an internal subset ("[" before its end, quoted strings passed
    over), or None. Linear: a declaration's body is read once, and the next declaration is looked for after it (or
    after the unmatched quote that stopped it)."""
    pos = 0
    while True:
        start = _DOCTYPE.search(text, pos)
        if start is None:
            return None
        end = _DOCTYPE_BODY.match(text, start.end()).end()
        if text[end : end + 1] == "[":
            return start.start()
        pos = max(end, start.end())


def check_markup(text: str) -> None:
    """Raise Rejected for XML bombs (entity declarations anywhere), elements with absurd numbers of attributes and
    documents that are not HTML."""
    entity = _ENTITY_DECL.search(text)
    if entity:
        raise Rejected("xml_bomb", f"entity declaration at offset {entity.start()}")
    subset = _doctype_subset(text)
    if subset is not None:
        raise Rejected("xml_bomb", f"DOCTYPE internal subset at offset {subset}")
    crowded = markup.hostile_detail(text)
    if crowded:
        raise Rejected(markup.REASON, crowded)
    if _NON_HTML_ROOT.match(text[:4096]):
        root = _NON_HTML_ROOT.match(text[:4096]).group(1)
        raise Rejected("not_html", f"XML document with root <{root}>")
    stripped = text.lstrip()[:1]
    if stripped in ("{", "["):
        raise Rejected("not_html", "JSON document")
    if not _HTML_MARKERS.search(text[:200000]):
        raise Rejected("not_html", "no HTML markup")


_LOCAL = threading.local()  # lxml parsers must not be shared between threads (Beam runs DoFns in several)


def parse(text: str):
    """An lxml HTML tree (comments and processing instructions dropped), or Rejected('not_html')."""
    import lxml.etree
    import lxml.html

    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = lxml.html.HTMLParser(
            collect_ids=False, default_doctype=False, remove_comments=True, remove_pis=True, no_network=True
        )
    # An XML declaration with an encoding makes lxml refuse a str: drop it (we already decoded).
    if text.lstrip().startswith("<?xml"):
        text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text, count=1)
    try:
        tree = lxml.html.fromstring(text, parser=parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        raise Rejected("not_html", f"unparseable: {exc}") from None
    if tree is None:
        raise Rejected("not_html", "unparseable")
    # fromstring on a fragment returns the fragment's element; we want the document root.
    root = tree.getroottree().getroot()
    return root


def load(body: bytes, headers: dict | None = None) -> tuple[str, object]:
    """decode + check_markup + parse."""
    text = decode(body, headers)
    check_markup(text)
    return text, parse(text)
