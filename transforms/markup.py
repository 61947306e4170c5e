"""A linear pre-check of fetched markup: elements with absurd numbers of attributes are refused before any parser.

Why: the parsers we use check each new attribute of an element against all the earlier ones, so one element with
n attributes costs n^2. Measured on 55daf5d (one element with 10,000 / 20,000 distinct attributes, 128 / 278 KB):
feedparser 1.1 / 4.6 s (xml.sax's ``AttributesNSImpl.getValueByQName`` is a linear search, called once per
attribute by feedparser's strict parser), lxml's HTML parser (libxml2 2.14) 0.2 / 1.0 s, a whole page extraction
(lxml, trafilatura, htmldate) 1.0 / 5.2 s; 40,000 attributes in a 430 KB feed cost 21.7 s, so a 5 MiB body could
hold a worker for about 50 minutes. Nothing else we tried is superlinear (deep or unclosed nesting, many elements,
entities, comments, long names: benchmarks/parse_cost.py).

The rule: an element (start or end tag) with more than :data:`MAX_ATTRIBUTES` (256) attributes makes the whole
document hostile (a feed: ``FeedError("hostile_markup")``, a page: ``Rejected("hostile_markup")``, each
dead-lettered with the offset). 256 is four times the most any real element has in ../shared/data: 64 in one of
282 saved article pages (median page: under 20), 12 in the 31 saved feeds. With at most 256 attributes per
element, the quadratic term is bounded by 256 x the bytes, so parsing is linear in the bytes again.

The scanner is linear itself (0.02 s per MiB of real pages; benchmarks/parse_cost.py measures it): one regular
expression walks the document once, tag by tag, the way an HTML5 tokenizer does (a quote opens a value only after
``=``; a value with no closing quote, or a comment or raw-text element with no end, runs to the end of the input,
as in the parsers), and only tags longer than :data:`MAX_ATTRIBUTES` bytes have their attributes counted. What a
parser never reads as attributes is skipped: comments everywhere, CDATA sections and processing instructions in
XML, and in HTML the text of the elements libxml2 reads as raw text (script, style, textarea, title, xmp, iframe,
noembed, noframes, plaintext; not noscript, whose content libxml2 parses as elements). The count is an upper
bound: an attribute is a name, with or without a value, so an element the parsers read with n attributes counts at
least n. A hostile input that still gets past this check meets the per-item CPU budget (transforms/budget.py).
"""

from __future__ import annotations

import re

MAX_ATTRIBUTES = 256
REASON = "hostile_markup"

# One attribute (or the tag name), as an HTML5 tokenizer reads it: a name, then optionally "=" and a value that is
# double-quoted, single-quoted (both may run to the end of the input) or unquoted (to whitespace or ">").
_ATTR = r"""[^\s/>=]+(?:\s*=\s*(?:"[^"]*"?|'[^']*'?|[^\s>]*))?"""
# The rest of a tag after "<" and its first character: names, values and separators up to ">" or the end.
_TAG_REST = r"""(?:[^\s/>="']+|[\s/]+|=\s*(?:"[^"]*"?|'[^']*'?|[^\s>]*)|["'])*"""
_RAW = r"script|style|textarea|title|xmp|iframe|noembed|noframes|plaintext"
_HTML = (
    r"<!--(?:.*?-->|.*)"  # a comment (to its end, or to the end of the input)
    r"|(<("
    + _RAW
    + r")(?=[\s/>])"
    + _TAG_REST
    + r")(?:>.*?</\2[\s/>]|.*)"  # a raw-text element: its tag, skip its text
    r"|(</?[A-Za-z]" + _TAG_REST + r")"
)
_XML = r"<!--(?:.*?-->|.*)|<!\[CDATA\[(?:.*?\]\]>|.*)|<\?(?:.*?\?>|.*)|()()(</?[^\s<>!?/=\"']" + _TAG_REST + r")"


def _compile(pattern: str, as_bytes: bool):
    flags = re.S | re.I
    return re.compile(pattern.encode("ascii") if as_bytes else pattern, flags)


_SCANNERS = {
    (xml, as_bytes): _compile(_XML if xml else _HTML, as_bytes) for xml in (False, True) for as_bytes in (False, True)
}
_ATTRS = {as_bytes: _compile(_ATTR, as_bytes) for as_bytes in (False, True)}


def crowded_element(data: bytes | bytearray | str, xml: bool = False) -> tuple[int, int] | None:
    """``(offset, attributes)`` of the first element of ``data`` with more than :data:`MAX_ATTRIBUTES` attributes
    (counted as described in the module docstring), or None. ``xml``: XML rules (feeds, sitemaps), else HTML."""
    as_bytes = not isinstance(data, str)
    if as_bytes:
        data = bytes(data)
    attrs = _ATTRS[as_bytes]
    for m in _SCANNERS[(xml, as_bytes)].finditer(data):
        tag = m.group(1) or m.group(3)
        if tag and len(tag) > MAX_ATTRIBUTES:
            n = sum(1 for _ in attrs.finditer(tag, 1)) - 1  # minus the tag name
            if n > MAX_ATTRIBUTES:
                return m.start(), n
    return None


def hostile_detail(data: bytes | bytearray | str, xml: bool = False) -> str | None:
    """The dead letter's detail when ``data`` is refused (see :func:`crowded_element`), else None."""
    found = crowded_element(data, xml)
    if found is None:
        return None
    offset, n = found
    return f"an element with more than {MAX_ATTRIBUTES} attributes ({n}) at offset {offset}"
