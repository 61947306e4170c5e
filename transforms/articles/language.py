"""Language of an article, detected from its text with py3langid (its model ships inside the PyPI package).

Reads: body, title and lede text; the page's ``<html lang>`` only as a tie-breaker. Writes: an ISO 639-1 code or
``und``.

The feed's or the page's language label is never trusted first: multi-edition publishers label every page with
the site's default, and feeds are often wrong. The body is what readers read, so it decides. Only the first
``SAMPLE_CHARS`` characters are scored (~0.5 ms at 800 characters of mixed scripts; news paragraphs decide well
before that). Short texts
(a caption-only page) are unreliable: below ``MIN_CHARS`` the title and lede are added, and when the normalised
probability stays under ``MIN_PROB`` the page's declared language (if any) wins, else ``und``.
py3langid's few non-639-1 labels are folded into their macrolanguage (wuu, yue -> zh; ary, arz -> ar ...).
"""

from __future__ import annotations

import functools
import re

SAMPLE_CHARS = 800
MIN_CHARS = 200
MIN_PROB = 0.5

_FOLD = {
    "wuu": "zh",
    "yue": "zh",
    "ary": "ar",
    "arz": "ar",
    "uzs": "uz",
    "hbo": "he",
    "grc": "el",
    "nn": "no",
    "zxx": "und",
}


@functools.lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _fold(code: str) -> str:
    code = _FOLD.get(code, code)
    return code if re.fullmatch(r"[a-z]{2}", code) else "und"


def detect(body: str, title: str = "", lede: str = "", declared: str = "") -> tuple[str, float]:
    """(language, probability). ``declared`` is the page's own label (html lang), used only when unsure."""
    text = (body or "")[:SAMPLE_CHARS]
    if len(text) < MIN_CHARS:
        text = " ".join(x for x in (title, lede, text) if x)
    declared_code = (declared or "").split("-")[0].split("_")[0].strip().lower()
    if not re.fullmatch(r"[a-z]{2}", declared_code):
        declared_code = ""
    if not text.strip():
        return (declared_code or "und"), 0.0
    lang, prob = _identifier().classify(text)
    lang = _fold(lang)
    if (prob < MIN_PROB or lang == "und") and declared_code:
        return declared_code, float(prob)
    return lang, float(prob)
