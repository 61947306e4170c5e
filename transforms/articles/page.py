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
- ``xml_bomb``: the document declares entities in a DOCTYPE internal subset (billion laughs, quadratic blow-up,
  external entities). Such a prolog is parsed with defusedxml, which refuses entity declarations; legitimate
  HTML never declares entities, so any refusal rejects the page.

Parsing uses lxml's HTML parser without comments and processing instructions (what trafilatura expects), and
never resolves entities or network resources.
"""

from __future__ import annotations

import codecs
import re
import threading

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
_DOCTYPE_SUBSET = re.compile(r"<!DOCTYPE[^>\[]*\[", re.I)
_ENTITY_DECL = re.compile(r"<!ENTITY", re.I)
_FIRST_ELEMENT = re.compile(r"<[A-Za-z][\w:.-]*[\s/>]")
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


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


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
    bom = _bom_codec(body)
    candidates = [bom, _codec(header_charset)]
    m = _META_CHARSET.search(body[:4096]) or _XML_ENCODING.search(body[:512])
    candidates.append(_codec(m.group(1).decode("ascii", "ignore")) if m else None)
    candidates.append("utf-8")
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


def _detect(body: bytes) -> str | None:
    """charset-normalizer's best guess, accepted only when its chaos score is low."""
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - installed with requests
        return None
    best = from_bytes(body[:200000]).best()
    if best is None or best.chaos > 0.2:
        return None
    try:
        return body.decode(best.encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def check_markup(text: str) -> None:
    """Raise Rejected for XML bombs (entity declarations) and for documents that are not HTML."""
    # The prolog: everything before the first element. Entity declarations can only live there (a DOCTYPE
    # internal subset); "<!ENTITY" quoted later in a script or an article about XML is harmless text.
    first_element = _FIRST_ELEMENT.search(text, 0, 65536)
    prolog = text[: first_element.start() if first_element else 8192]
    if _DOCTYPE_SUBSET.search(prolog) or _ENTITY_DECL.search(prolog):
        _check_entities(text)
    if _NON_HTML_ROOT.match(text[:4096]):
        root = _NON_HTML_ROOT.match(text[:4096]).group(1)
        raise Rejected("not_html", f"XML document with root <{root}>")
    stripped = text.lstrip()[:1]
    if stripped in ("{", "["):
        raise Rejected("not_html", "JSON document")
    if not _HTML_MARKERS.search(text[:200000]):
        raise Rejected("not_html", "no HTML markup")


def _check_entities(text: str) -> None:
    """Parse the DOCTYPE (plus a dummy root) with defusedxml, which refuses entity declarations."""
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    start = _DOCTYPE_SUBSET.search(text[:8192]) or _ENTITY_DECL.search(text[:8192])
    end = text.find("]>", start.start())
    if end < 0:
        end = text.find(">", start.start())
    root = re.search(r"<!DOCTYPE\s+([\w:.-]+)", text[start.start() : end], re.I)
    name = root.group(1) if root else "html"
    prolog = text[start.start() : end + 2] if text[end : end + 2] == "]>" else text[start.start() : end + 1]
    try:
        fromstring(f"{prolog}<{name}/>", forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise Rejected("xml_bomb", type(exc).__name__) from None
    except ParseError:
        # An internal subset that does not even parse, but declares entities: treat as hostile.
        if _ENTITY_DECL.search(prolog):
            raise Rejected("xml_bomb", "unparseable DOCTYPE with entity declarations") from None


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
