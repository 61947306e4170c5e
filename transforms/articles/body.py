"""The article's text: main content extraction plus boilerplate removal.

Reads: the parsed page tree (it is MODIFIED: call this last), the page text (to re-parse for a second opinion), the
headline, and the publisher's own JSON-LD ``articleBody`` when present. Writes: ``Body(text, method)``, the text as
paragraphs separated by newlines.

How (measured on ../shared/data/pages/extraction-benchmark with ``newsroom extract --score``; see the README):
1. Scripts, styles, SVG and embeds are stripped (C-speed), then page chrome (nav, header, footer, aside, forms)
   unless it holds the article. When one ``<article>``/``articleBody`` element holds >= 70 % of the page's
   paragraph text, only it is kept. Hidden markup goes next (``hidden``, ``display:none``, ``aria-hidden`` pull
   quotes, hover cards): readers never see it, extractors otherwise keep it. Together these remove most elements
   before the extractor's many XPath passes, whose cost is proportional (~17 -> ~11 ms a page).
2. trafilatura in precision mode without its fallback cascade and without comments (``fast``): ~11 ms for a
   150 KB page after step 1, against ~40 ms for the full cascade on the raw page. Precision mode is the better
   base (0.960 vs 0.950 token F1 in trafilatura's own default/full comparison), and dropping comments keeps
   newsletter and consent forms out.
3. A plausibility check picks a second opinion only when the first looks wrong: precision mode sometimes collapses
   to a caption or a table cell on table-laid-out or unusual pages (a few hundred characters out of thousands of
   paragraph text). Then the full trafilatura cascade (readability/justext comparison) runs on a fresh parse, and
   the publisher's JSON-LD ``articleBody`` is a candidate too; the candidate that best agrees with the page's
   visible paragraph text wins. Most pages never pay for the second run.
4. Split bodies: CMSs that cut the article into several same-class containers around ads (Condé Nast's
   ``article__body`` blocks and the like) lose everything after the first block. When the extracted text starts
   inside such a container and sibling containers of the same tag+class hold further paragraphs, those are
   appended in document order.
5. Line filters that hold across publishers and languages: the headline repeated as the first line, a bare
   dateline/reading-time line at the head, "Related:/Read more:/Don't miss" teaser headers with the link list that
   follows them, teaser links tagged ``[VIDEO]``/``[INSIGHT]``, and a trailing block of newsletter/follow-us/
   contact-the-author lines. The patterns are short and generic on purpose; each was checked to remove more
   non-article than article text over the benchmark and the newspaper4k fixtures, not tuned to single pages.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass

MIN_PLAUSIBLE_CHARS = 250
PLAUSIBLE_SHARE = 0.25  # of the page's paragraph text
SPLIT_MIN_NEW_CHARS = 200
REGION_SHARE = 0.7

_WORD = re.compile(r"\w+", re.U)

# Candidates for hidden markup; refined in Python (XPath string functions over every element cost ~2x more).
_HIDDEN_CANDIDATES = (
    "//*[@hidden] | //*[@style][contains(@style, 'none') or contains(@style, 'hidden')] | //*[@aria-hidden='true']"
    " | //*[@class][contains(@class, 'rollover') or contains(@class, 'hovercard') or contains(@class, 'tooltip')"
    " or contains(@class, 'popover') or contains(@class, 'sr-only') or contains(@class, 'visually-hidden')]"
)
_HIDDEN_CLASS = re.compile(
    r"(?:^|\s)(?:rollover-people-block|[\w-]*hovercard[\w-]*|tooltip-content|popover-content|sr-only|visually-hidden)(?:\s|$)"
)
# Never content: dropped before anything else reads the tree for text (C-speed strip, ~20% faster extraction).
NON_CONTENT_TAGS = (
    "script",
    "style",
    "noscript",
    "svg",
    "template",
    "link",
    "meta",
    "iframe",
    "object",
    "embed",
    "canvas",
)
CHROME_TAGS = ("nav", "header", "footer", "aside", "form", "input", "select", "button", "textarea")

# Teaser headers: the line is a label for links to other articles.
_TEASER_HEAD = re.compile(
    r"^\s*(?:related(?:\s+(?:post|posts|articles?|stories|story|coverage|content|reading|links?))?|read\s+more|read\s+also|"
    r"see\s+more|see\s+also|also\s+read|also\s+see|more\s+from|more\s+on\s+this|more\s+coverage|don'?t\s+miss|do\s+not\s+miss|"
    r"you\s+may\s+also\s+like|you\s+might\s+also\s+like|recommended(?:\s+for\s+you)?|most\s+read(?:\s+in\s+[\w ]+)?|"
    r"most\s+popular|trending(?:\s+now)?|watch(?:\s+now)?|lesen\s+sie\s+auch|mehr\s+zum\s+thema|auch\s+interessant|"
    r"lire\s+aussi|[àa]\s+lire\s+aussi|voir\s+aussi|leia\s+tamb[ée]m|veja\s+tamb[ée]m|saiba\s+mais|lee\s+tambi[ée]n|"
    r"ver\s+tambi[ée]n|leggi\s+anche|potrebbe\s+interessarti|lees\s+ook|czytaj\s+te[żz])\b\s*(?:[:…|»>-]|\.\.\.|$)",
    re.I,
)
_TEASER_TAG = re.compile(r"\[[A-Z][A-Z ]{2,14}\]\s*\|?\s*$")
_BULLET = re.compile(r"^\s*(?:[-•*·▪►]|\d{1,2}[.)])\s+")
# Trailing promotion / contact lines (checked only in the last lines of the body).
_PROMO = re.compile(
    r"(?:newsletter|subscribe\b|subscription|sign\s+up\b|sign-up|signup|inscreva-se|abonnieren|abonnez-vous|suscr[íi]bete|"
    r"follow\s+(?:us|him|her|them|me|@)|follow\s+\w+(?:\s+\w+)?\s+on\s+(?:twitter|facebook|instagram)|"
    r"(?:on|at)\s+twitter\s+at\b|click\s+(?:here|to\s+tweet)|have\s+a\s+(?:news\s+)?tip\b|tell\s+us\s+what\s+you\s+think|"
    r"get\s+(?:the\s+latest|access\s+to)|delivered\s+(?:to|through)\s+your\s+(?:inbox|letterbox|door)|"
    r"reach\s+the\s+(?:reporters?|writers?|authors?)|(?:e-?mail|contact)\s+(?:the\s+)?(?:reporter|author|writer)\b|"
    r"^\s*(?:e-?mail|contact)\s+[\w .'-]{2,40}\s+at\s+\S+@|more\s+ap\s+\w+:|follow\s+ap'?s|"
    r"all\s+(?:our|the)\s+latest\s+|download\s+(?:our|the)\s+app|^\s*(?:tags?|topics|keywords|schlagw[öo]rter|etiquetas)\s*:?\s*$|"
    r"^\s*\d*\s*comments?\s*$|^\s*share\s+(?:this|on)\b|^\s*advertisement\s*$|^\s*anzeige\s*$|^\s*publicidad\s*$)",
    re.I,
)
_MONTHS = (
    "jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april|june|july|august|september|"
    "october|november|december|janvier|février|fevrier|mars|avril|mai|juin|juillet|août|aout|septembre|octobre|"
    "novembre|décembre|decembre|januar|februar|märz|maerz|juni|juli|oktober|dezember|enero|febrero|marzo|abril|"
    "mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre|janeiro|fevereiro|março|marco|maio|"
    "junho|julho|setembro|outubro|novembro|dezembro|gennaio|febbraio|aprile|maggio|giugno|luglio|settembre|"
    "ottobre|dicembre"
)
_DATELINE_WORDS = re.compile(
    rf"\b(?:{_MONTHS}|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|segunda-feira|terça-feira|terca-feira|quarta-feira|quinta-feira|sexta-feira|sábado|sabado|"
    r"domingo|lunes|martes|miércoles|miercoles|jueves|viernes|montag|dienstag|mittwoch|donnerstag|freitag|samstag|"
    r"sonntag|lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|am|pm|a\.m|p\.m|utc|gmt|est|edt|cst|cdt|pst|pdt|"
    r"bst|cet|cest|ist|amt|at|às|as|um|à|de|del|du|der|den|le|la|el|um|on|updated|published|posted|publicado|"
    r"publié|publie|veröffentlicht|aktualisiert|actualizado|atualizado|last|modified|em|en|el|by|por|von|par|"
    r"h|hs|hrs|uhr|min|mins|minute|minutes|minuto|minutos|minuten|read|reading|time|tempo|leitura|lectura|"
    r"lesezeit|temps|lecture|de|ago|hours|hour|horas|hora|stunden|heures|ore)\b",
    re.I,
)


@dataclass
class Body:
    text: str
    method: str


def words(text: str) -> list[str]:
    return _WORD.findall((text or "").lower())


def _bag(text: str) -> Counter:
    return Counter(words(text))


def overlap_f1(a: str, b: str) -> float:
    """Token-bag F1 of two texts (the benchmark's measure, reused as an agreement score)."""
    ca, cb = _bag(a), _bag(b)
    if not ca or not cb:
        return 0.0
    common = sum((ca & cb).values())
    if not common:
        return 0.0
    p, r = common / sum(ca.values()), common / sum(cb.values())
    return 2 * p * r / (p + r)


_LOCAL = threading.local()  # compiled XPath objects are not thread-safe in lxml: one per thread


def _is_hidden(el) -> bool:
    if el.get("hidden") is not None:
        return True
    style = (el.get("style") or "").replace(" ", "").lower()
    if "display:none" in style or "visibility:hidden" in style:
        return True
    if el.get("aria-hidden") == "true":
        if el.tag in ("aside", "div"):
            return True
        if el.tag == "span":
            try:
                return len(" ".join(el.text_content().split())) > 40
            except ValueError:
                return False
    return bool(_HIDDEN_CLASS.search(el.get("class") or ""))


def remove_hidden(tree) -> None:
    """Drop markup readers never see (hidden attribute, display:none, aria-hidden pull quotes, hover cards)."""
    import lxml.etree

    xpath = getattr(_LOCAL, "hidden", None)
    if xpath is None:
        xpath = _LOCAL.hidden = lxml.etree.XPath(_HIDDEN_CANDIDATES)
    for el in xpath(tree):
        parent = el.getparent()
        if parent is None or el.tag in ("html", "body", "head") or not _is_hidden(el):
            continue
        el.drop_tree()  # keeps the tail text


def strip_non_content(tree) -> None:
    """Scripts, styles, embeds (always), then page chrome: nav, header, footer, aside, form and form controls,
    unless one of them holds the article (some CMSs wrap the whole page in a <form> or the story in an <aside>):
    an element inside <article>/<main>, or holding an <article>/articleBody or 40 % of the page's paragraphs,
    stays. Roughly half the elements of a typical page go (same F1 on the benchmark and the newspaper4k pages)."""
    import lxml.etree

    lxml.etree.strip_elements(tree, *NON_CONTENT_TAGS, with_tail=False)
    total_p = tree.xpath("count(//p)")
    for el in list(tree.iter(*CHROME_TAGS)):
        if el.getparent() is None:
            continue
        if el.tag not in ("input", "select", "button", "textarea"):
            if el.tag != "nav" and next(el.iterancestors("article", "main"), None) is not None:
                continue  # an article's own header/footer/aside may hold its text (gallery intros, transcripts)
            if el.find(".//article") is not None or el.xpath("boolean(.//*[@itemprop='articleBody'])"):
                continue
            if total_p and el.xpath("count(.//p)") > 0.4 * total_p:
                continue
        el.drop_tree()


def _ptext(el) -> int:
    total = 0
    for p in el.iter("p"):
        try:
            total += len(p.text_content().strip())
        except ValueError:
            continue
    return total


def article_region(tree, ptext_total: int):
    """The page cut down to its article element, when the markup says so unambiguously: the smallest
    ``[itemprop=articleBody]`` or ``<article>`` holding >= ``REGION_SHARE`` of the page's paragraph text. The
    extractor then works on ~1/3 of the elements (-20 % CPU; F1 -0.001 on the benchmark, +0.000 on the
    newspaper4k fixtures). Returns the original tree when no such element exists."""
    import lxml.etree
    import lxml.html

    if ptext_total < 500:
        return tree
    best, best_size = None, None
    for el in tree.xpath("//*[@itemprop='articleBody'] | //article"):
        if _ptext(el) >= REGION_SHARE * ptext_total:
            size = sum(1 for _ in el.iter())
            if best is None or size < best_size:
                best, best_size = el, size
    if best is None:
        return tree
    html = lxml.html.Element("html")
    body = lxml.etree.SubElement(html, "body")
    body.append(best)
    return html


def paragraph_text_len(tree) -> int:
    return _ptext(tree)


def _traf(tree, *, fast: bool, precision: bool = True) -> str:
    from trafilatura import bare_extraction

    try:
        doc = bare_extraction(
            tree,
            fast=fast,
            favor_precision=precision,
            include_comments=False,
            include_tables=True,
            include_images=False,
            include_formatting=False,
            with_metadata=False,
            deduplicate=False,
        )
    except Exception:  # noqa: BLE001 - an extractor failure is a missing candidate, not a failed page
        return ""
    if doc is None:
        return ""
    text = getattr(doc, "text", None) if not isinstance(doc, dict) else doc.get("text")
    return text or ""


def _split_containers(tree, first_text: str, have: str = "") -> list[str]:
    """New paragraphs from sibling containers sharing the tag+class of the container holding ``first_text``.

    A sibling container counts only when it brings at least ``SPLIT_MIN_NEW_CHARS`` of text not already in
    ``have`` (normalised): real continuations are paragraphs long, while the same class reused for a trailing
    "more from us" or sign-up box adds one short line.
    """
    probe = " ".join(first_text.split())[:60]
    if len(probe) < 30:
        return []
    container = None
    for p in tree.iter("p"):
        try:
            t = " ".join(p.text_content().split())
        except ValueError:
            continue
        if t.startswith(probe):
            container = p.getparent()
            break
    if container is None:
        return []
    cls = (container.get("class") or "").strip()
    if not cls or not re.search(r"body|content|article|story|text|entry|post", cls, re.I):
        return []
    same = [el for el in tree.iter(container.tag) if (el.get("class") or "").strip() == cls]
    if len(same) < 2 or len(same) > 30:
        return []
    out: list[str] = []
    seen_first = False
    for el in same:
        if el is container:
            seen_first = True
            continue
        if not seen_first:
            continue
        new: list[str] = []
        for p in el.iter("p", "h2", "h3", "blockquote", "li"):
            if p.getparent() is not None and p.getparent().tag in ("blockquote", "li"):
                continue
            try:
                t = " ".join(p.text_content().split())
                linked = sum(len(" ".join(a.text_content().split())) for a in p.iter("a"))
            except ValueError:
                continue
            if not t or linked > 0.5 * len(t):  # link lists (teasers) are not article text
                continue
            n = _norm_line(t)
            if n and n[:80] not in have:
                new.append(t)
        if sum(len(t) for t in new) >= SPLIT_MIN_NEW_CHARS:
            out.extend(new)
    return out


def _norm_line(s: str) -> str:
    return " ".join(words(s))


def _is_dateline(line: str) -> bool:
    s = line.strip()
    if not s or len(s) > 80 or not re.search(r"\d", s):
        return False
    rest = _DATELINE_WORDS.sub(" ", s.lower())
    rest = re.sub(r"[\d\s:/.,|\-–—()+]+", " ", rest)
    return len(rest.strip()) <= 3


def _similar_title(line: str, title: str) -> bool:
    a, b = _norm_line(line), _norm_line(title)
    if not a or not b:
        return False
    if a == b:
        return True
    # one a prefix of the other ("Headline" vs "Headline | Site"), but never a paragraph that merely starts with it
    if len(a) > 15 and len(a) <= 1.3 * len(b) + 10 and (b.startswith(a) or a.startswith(b)):
        return True
    wa, wb = set(a.split()), set(b.split())
    return len(wa) >= 3 and len(wa & wb) / len(wa | wb) >= 0.8


def clean_lines(text: str, title: str = "") -> str:
    lines = [ln.strip() for ln in (text or "").split("\n")]
    lines = [ln for ln in lines if ln and _norm_line(ln)]
    # head: headline repeated, bare datelines / reading times
    for _ in range(3):
        if not lines:
            break
        if title and _similar_title(lines[0], title):
            lines.pop(0)
            continue
        if _is_dateline(lines[0]):
            lines.pop(0)
            continue
        break
    # teaser headers and the link lists that follow them; tagged teaser links
    out: list[str] = []
    in_teaser = False
    for ln in lines:
        if len(ln) < 120 and _TEASER_HEAD.match(ln):
            in_teaser = True
            continue
        if in_teaser and len(ln) < 160 and (_BULLET.match(ln) or _TEASER_TAG.search(ln)):
            continue
        in_teaser = False
        if len(ln) < 200 and _TEASER_TAG.search(ln):
            continue
        out.append(ln)
    # tail: promotion, follow-us and contact lines, and a final dateline
    while out and len(out) > 1:
        last = out[-1]
        if (len(last) < 300 and _PROMO.search(last)) or _is_dateline(last):
            out.pop()
            continue
        break
    return "\n".join(out)


def _jsonld_plausible(body: str | None) -> str:
    if not body or not isinstance(body, str):
        return ""
    if "<" in body and ">" in body:
        body = re.sub(r"<[^<>]+>", " ", body)  # "[^>]" rescanned from every unclosed "<": quadratic
    body = re.sub(r"[ \t]+", " ", body).strip()
    if len(body) < 400 or body.endswith(("...", "…")):
        return ""  # truncated teasers are common (500 chars + ellipsis)
    return body


def extract(tree, text: str, title: str = "", jsonld_body: str | None = None, reparse=None) -> Body:
    """Extract the body. ``tree`` is modified. ``reparse(text)`` gives a fresh tree for the second opinion."""
    strip_non_content(tree)
    ptext = paragraph_text_len(tree)
    from copy import deepcopy

    pristine = deepcopy(tree) if reparse is None else None
    tree = article_region(tree, ptext)
    remove_hidden(tree)  # after the cut: on the article alone when there is one
    first = _traf(tree, fast=True, precision=True)
    method = "trafilatura_precision"
    body = first
    ld = _jsonld_plausible(jsonld_body)
    if len(first) < MIN_PLAUSIBLE_CHARS or len(first) < PLAUSIBLE_SHARE * ptext:
        fresh = reparse(text) if reparse is not None else pristine
        if fresh is not None:
            strip_non_content(fresh)
            remove_hidden(fresh)
            second = _traf(fresh, fast=False, precision=True)
            candidates = [("trafilatura_precision", first), ("trafilatura_full", second)]
            if ld:
                candidates.append(("json_ld", ld))
            ref_tree = reparse(text) if reparse is not None else None
            reference = _paragraph_reference(ref_tree) if ref_tree is not None else ""
            method, body = _pick(candidates, reference)
    elif ld and len(first) < 0.5 * len(ld):
        method, body = "json_ld", ld
    if body and method.startswith("trafilatura"):
        added = _split_containers(tree, body.split("\n", 1)[0], _norm_line(body))
        if added:
            body = body + "\n" + "\n".join(added)
            method += "+split_containers"
    return Body(clean_lines(body, title), method)


def _paragraph_reference(tree) -> str:
    if tree is None:
        return ""
    strip_non_content(tree)
    remove_hidden(tree)
    parts = []
    for p in tree.iter("p"):
        try:
            t = " ".join(p.text_content().split())
        except ValueError:
            continue
        if len(t) > 60:
            parts.append(t)
    return "\n".join(parts)


def _pick(candidates: list[tuple[str, str]], reference: str) -> tuple[str, str]:
    """The candidate that best agrees with the page's paragraph text; the longest when there is none."""
    candidates = [(m, t) for m, t in candidates if t and t.strip()]
    if not candidates:
        return "none", ""
    if reference:
        scored = [(overlap_f1(t, reference), len(t), m, t) for m, t in candidates]
        best = max(scored, key=lambda x: (round(x[0], 3), x[1]))
        if best[0] > 0.2:
            return best[2], best[3]
    m, t = max(candidates, key=lambda c: len(c[1]))
    return m, t
