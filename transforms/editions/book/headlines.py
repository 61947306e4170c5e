"""The design's headline check: a clickbait score and a quality score per headline, and the ranking rule on them.

Reads a headline and its language; writes nothing. Plain Python regular expressions (no model, no dependency),
memoised per (headline, language): the book scores each article version once, and a headline seen again (a copy,
a re-fetch) costs a dictionary look-up.

Clickbait score (0..1, :func:`assess`), the sum of the signals found, capped at 1:

    phrase        0.6 for the first, + 0.2 per further: the curiosity-gap phrases of the language ("you won't
                  believe", "will shock you", "what happened next", "(number 7", "number 7 will", "doctors hate";
                  es "no creerás", "te sorprenderá", "(el número 7"; de "wirst du nicht glauben", "(Nummer 7"; fr
                  "vous n'allez pas croire", "va vous choquer", "(numéro 7") -- the headline withholds its news to
                  earn a click; a plain "number 7" ("the event number 7", "route number 9") is no phrase
    listicle      0.5: a leading number (optionally "top" or an article) then, within two words, a list noun
                  ("10 foods", "7 surprising reasons", "los 5 trucos", "10 Dinge", "8 astuces"); numbers of
                  news ("10 people killed", "5 injured") are not list nouns
    shouting      0.3: more than 70 % of 12 or more letters in capitals (acronyms inside a normal headline do
                  not reach it)
    punctuation   0.35 for "!!", "?!", "!?" or two or more "!"; else 0.15 for one "!"
    question      0.25: the headline asks ("?" or "¿" anywhere); news asks questions too, so alone it never flags

A headline is clickbait at a score >= 0.5 (:data:`CLICKBAIT`): one phrase or one listicle opening alone, or two
weaker signals together (shouting + a question, a question + "!!"). Languages other than en, es, de and fr use the
English phrases and list nouns (cheap, and English clickbait travels); shouting, punctuation and questions are
language-independent. Measured on the real headlines of the shared stories files (tests/transforms/editions/
test_headlines.py prints the share): of 3,874 headlines in en, es, it and nl, 15 flag (0.4 %), all of them
listicles ("5 Ways Lindsay Lohan's Life Is Still Like Mean Girls") or shouting ("FIRED IN PHILLY!!").

Quality (0..1): ``length * (1 - clickbait)``, where length is 1 for 25-120 characters, falls linearly to 0.3 for
an empty headline below that (a bare "Budget" informs nobody) and to 0.5 at 250+ characters above it. The
representative choice weighs quality (editions.json ``ranking.representative.w_headline``), so a plain headline
beats a clickbait one of the same story.

Ranking rule (:func:`demoted`): a story whose best headline is clickbait (every article of it scores >= 0.5) and
whose sources are all low-authority (the highest topic authority of its publishers < ``ranking.
clickbait_authority``, 0.3: the content farms and unknown hosts the registry gives 0.1) is left out of the top
page (top stories) and placed after every other story on section pages. A clickbait headline from an
authoritative newsroom is not demoted (its reporting stands; the representative choice shows its plainest
headline), nor is a plain headline from a small site. The page orders are rewritten with the trust gates' in one
place, :func:`transforms.editions.cycle.trust.page_order`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

import numpy as np

CLICKBAIT = 0.5  # score at which a headline counts as clickbait

W_PHRASE, W_PHRASE_MORE = 0.6, 0.2
W_LISTICLE = 0.5
W_SHOUTING = 0.3
W_PUNCT_HEAVY, W_PUNCT_ONE = 0.35, 0.15
W_QUESTION = 0.25

_PHRASES = {
    "en": (
        r"you won'?t believe",
        r"you'?ll never (guess|believe)",
        r"(will|would|might) (shock|amaze|stun|surprise|blow) you",
        r"(blow|blew) your mind",
        r"what happen(s|ed) next",
        r"\(number \d+|\bnumber \d+ (will|is|might|may|made|left)\b",
        r"doctors (hate|never|don'?t want)",
        r"this (one )?(weird |simple )?trick",
        r"\bjaw-?dropping\b",
        r"\bmind-?blowing\b",
        r"can'?t stop (laughing|watching|crying)",
        r"(is|are) breaking the internet",
        r"\bthe reason (why )?(will|is shocking)",
        r"\byou need to see\b",
    ),
    "es": (
        r"no (te )?(vas a |podr[aá]s )?creer",
        r"no creer[aá]s",
        r"te (sorprender|dejar|impactar|asombrar)[aá]",
        r"lo que pas[oó] despu[eé]s",
        r"\((el |la )?n[uú]mero \d+|\bn[uú]mero \d+ (te|le|os|les|es)\b",
        r"\bimpactante\b",
        r"los m[eé]dicos (odian|nunca)",
    ),
    "de": (
        r"(wirst du|werden sie|werdet ihr) nicht glauben",
        r"(du|sie|ihr) (wirst|werden|werdet) (es )?nicht glauben",
        r"glaub(st|t) (du|ihr) nicht",
        r"was dann (geschah|passierte|passiert)",
        r"\((die |der |das )?nummer \d+|\bnummer \d+ (wird|ist)\b",
        r"wird (dich|sie|euch) (schockieren|umhauen|überraschen)",
        r"ärzte (hassen|essen nie)",
    ),
    "fr": (
        r"vous n'?allez (pas|jamais) (le )?croire",
        r"(va|vont|devrait) vous (choquer|surprendre|étonner|bluffer)",
        r"ce qui s'?est pass[ée] ensuite",
        r"\((le |la )?num[ée]ro \d+|\bnum[ée]ro \d+ (va|vous|est)\b",
        r"les m[ée]decins (détestent|ne mangent jamais)",
    ),
}
_LIST_NOUNS = {
    "en": "things|reasons|ways|foods|tips|tricks|facts|signs|secrets|mistakes|photos|pictures|habits|hacks|"
    "celebrities|lessons|myths|products|gadgets|questions|rules|words|moments|ideas",
    "es": "cosas|razones|formas|maneras|alimentos|comidas|trucos|consejos|señales|secretos|errores|fotos|"
    "hábitos|claves|motivos|mitos",
    "de": "dinge|gründe|wege|tipps|tricks|lebensmittel|fakten|anzeichen|geheimnisse|fehler|fotos|bilder|"
    "gewohnheiten|mythen",
    "fr": "choses|raisons|façons|manières|aliments|astuces|conseils|signes|secrets|erreurs|photos|habitudes|mythes",
}
_LEAD = r"^\s*(?:top\s+|the\s+|los\s+|las\s+|die\s+|les\s+)?\d{1,3}\s+(?:[\w'-]+\s+){0,2}?(?:%s)\b"


def _compile(lang: str) -> tuple[re.Pattern, re.Pattern]:
    phrases = re.compile("|".join(f"(?:{p})" for p in _PHRASES[lang]))
    return phrases, re.compile(_LEAD % _LIST_NOUNS[lang])


_PATTERNS = {lang: _compile(lang) for lang in _PHRASES}
_HEAVY_PUNCT = re.compile(r"!!|\?!|!\?")


class Headline(NamedTuple):
    quality: float
    clickbait: float
    reasons: tuple[str, ...]


def length_quality(n: int) -> float:
    if n < 25:
        return 0.3 + 0.7 * n / 25
    if n <= 120:
        return 1.0
    return max(0.5, 1.0 - 0.5 * (n - 120) / 130)


@lru_cache(maxsize=1 << 16)
def assess(title: str, language: str = "en") -> Headline:
    """Quality and clickbait score of one headline (the module docstring has the rule and weights)."""
    t = (title or "").strip()
    if not t:
        return Headline(0.0, 0.0, ())
    low = t.lower().replace("\u2019", "'")
    phrases, listicle = _PATTERNS.get((language or "en")[:2].lower(), _PATTERNS["en"])
    score, reasons = 0.0, []
    hits = len(phrases.findall(low))
    if hits:
        score += W_PHRASE + W_PHRASE_MORE * (hits - 1)
        reasons.append("phrase")
    if listicle.search(low):
        score += W_LISTICLE
        reasons.append("listicle")
    letters = [c for c in t if c.isalpha()]
    if len(letters) >= 12 and sum(c.isupper() for c in letters) > 0.7 * len(letters):
        score += W_SHOUTING
        reasons.append("shouting")
    if _HEAVY_PUNCT.search(t) or t.count("!") >= 2:
        score += W_PUNCT_HEAVY
        reasons.append("punctuation")
    elif "!" in t:
        score += W_PUNCT_ONE
        reasons.append("punctuation")
    if "?" in t or "¿" in t:
        score += W_QUESTION
        reasons.append("question")
    clickbait = min(1.0, score)
    return Headline(round(length_quality(len(t)) * (1.0 - clickbait), 6), round(clickbait, 6), tuple(reasons))


def headline_quality(title: str, language: str = "en") -> float:
    return assess(title, language).quality


def is_clickbait(title: str, language: str = "en") -> bool:
    return assess(title, language).clickbait >= CLICKBAIT


def demoted(book, reps, prim: np.ndarray, max_authority: float) -> np.ndarray:
    """Per candidate of ``reps`` (a :class:`~transforms.editions.cycle.representatives.Representatives`): True when the
    story's best headline is clickbait and all its publishers are below ``max_authority`` (module docstring)."""
    out = np.zeros(reps.rows.size, bool)
    has = np.flatnonzero(reps.start >= 0)  # groups of ``reps.ordered``: contiguous, in candidate order
    if has.size == 0:
        return out
    arts, starts = reps.ordered, reps.start[has]
    auth = book.publishers.authority[book.articles.publisher[arts], prim[book.articles.story[arts]] + 1]
    least_bait = np.minimum.reduceat(book.articles.clickbait[arts], starts)
    top_auth = np.maximum.reduceat(auth, starts)
    out[has] = (least_bait >= CLICKBAIT) & (top_auth < max_authority)
    return out


def demoted_ids(book, ranked, max_authority: float) -> set[int]:
    """Story ids of a cycle's :class:`~transforms.editions.cycle.run.Ranked` candidates that :func:`demoted` flags."""
    flagged = np.flatnonzero(demoted(book, ranked.reps, ranked.f.prim, max_authority))
    return set(book.stories.id[ranked.cand.rows[flagged]].tolist()) if flagged.size else set()
