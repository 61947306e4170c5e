"""The local places an article names below the gazetteer: streets, courts, housing projects, parks, neighbourhoods.

Reads title + the start of the body (the same PLACE_CHARS as :mod:`transforms.stories.vocabulary.places`); writes a
frozenset of name keys: the name's words lowercased, ordinals as numbers, without its direction and its type, joined
("the 4300 block of West Monroe Street" -> ``"monroe"``, "Mosby Court" -> ``"mosby"``, "Bartlett and Fuller Streets"
-> ``"bartlett"``, ``"fuller"``, "U.S. Highway 41" -> ``"route41"``), so reports that spell a street "S. First St."
and "South First Street" meet. English: "<Name> <Type>", "<number> block of <Name>" and numbered routes; Spanish,
French, Italian and Portuguese: "<Type> <Name>" (calle, rue, via, rua ...); German and Dutch: compounds
("Bahnhofstraße", "Kalverstraat"). Other languages give none (neutral). No gazetteer, no model: capitalised words next
to a place-type word, less those that say what a place is rather than which ("High School Road", "Supreme Court",
"Wall Street"); a Title Case headline is not read (every word is capitalised there).

Why: shootings of one day read alike, and half of gva-dev's remaining wrong pairs named no place the gazetteer knows
("Mosby Court", "4300 block of West Monroe Street"). Measured on gva-dev (title + first 600 characters; pairs of one
language at most 72 h apart): 61 % of articles name a local place; where both of a pair do, same-event pairs share one
82 % of the time (352 against 77 conflicting), different events 0.1 % (22 against 14,686). They join the gazetteer's
places relation (:func:`transforms.stories.vocabulary.places.relation`), not a veto: one report names the street of
the shooting, another the street where the suspect was arrested.
"""

from __future__ import annotations

import re
from functools import lru_cache

PLACE_CHARS = 600  # as transforms/stories/vocabulary/places.py: the dateline and the first sentences

_EN_TYPES = (
    "street|streets|st|avenue|avenues|ave|road|roads|rd|boulevard|blvd|drive|dr|lane|ln|court|courts|ct|place|pl|"
    "parkway|pkwy|terrace|circle|trail|pike|alley|plaza|homes|apartments|heights|village|gardens|manor|estates|park"
)
_DIRECTIONS = frozenset(
    "n n. s s. e e. w w. ne nw se sw n.e. n.w. s.e. s.w. north south east west northeast northwest southeast "
    "southwest".split()
)
# Capitalised words that start a sentence or say what the place is rather than which ("Police Plaza", "High School
# Road"), courts of law ("Supreme Court", "Circuit Court") and streets that stand for an institution ("Wall Street",
# "Downing Street"): a name holding one is no local place.
_NOT_NAME = frozenset(
    """a an the on in at of and near by to from for into onto off along block police officers officer county city
    state monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
    september october november december national central memorial school high university college hospital church
    center centre district department office station mall intersection supreme superior circuit appeals appellate
    federal juvenile criminal family municipal magistrate probate claims bankruptcy international united nations
    wall downing fleet""".split()
)
_ORDINALS = {
    w: f"{i}{'st' if i == 1 else 'nd' if i == 2 else 'rd' if i == 3 else 'th'}"
    for i, w in enumerate("first second third fourth fifth sixth seventh eighth ninth tenth".split(), 1)
}
# A name word: capitalised (a one- or two-letter abbreviation may end in a period: "N.", "St.", "Mt."), or an ordinal.
_WORD = r"(?:[A-Z][a-z]?\.|[A-Z][\w'’-]*|\d+(?:st|nd|rd|th))"
_TYPE_WORD = re.compile(_EN_TYPES + "|highway|hwy|route|lane|estate|road")
_EN_NAMED = re.compile(r"\b((?:" + _WORD + r" ){1,3})((?i:" + _EN_TYPES + r"))\b(?![-’'])")
_EN_PAIR = re.compile(r"\b(" + _WORD + r") and (" + _WORD + r") (?i:streets|avenues|roads)\b")
_EN_BLOCK = re.compile(r"\b\d{1,6} block of ((?:" + _WORD + r" ?){1,3})")
_EN_ROUTE = re.compile(
    r"\b(?:Highway|Hwy\.?|Route|Rte\.?|Interstate|I-|U\.S\.|US|State Road|County Road|SR|CR) ?(\d{1,4})\b"
)
_ROMANCE = {
    "es": "calle|avenida|plaza|paseo|barrio|colonia",
    "fr": "rue|avenue|boulevard|place|quartier|cité|allée",
    "it": "via|viale|piazza|corso|quartiere|vicolo",
    "pt": "rua|avenida|praça|travessa|bairro|largo",
}
_ROMANCE_RE = {
    lang: re.compile(r"\b(?:" + types + r") (?:(?:de|del|de la|des|du|di|della|do|da|dos) )?((?:[A-Z][\w'’-]* ?){1,3})")
    for lang, types in _ROMANCE.items()
}
_COMPOUND = {
    "de": re.compile(r"\b([A-ZÄÖÜ][\wäöüß-]{2,}(?:straße|strasse|platz|allee|weg|gasse|ring|damm))\b"),
    "nl": re.compile(r"\b([A-Z][\w-]{2,}(?:straat|plein|laan|weg|gracht|kade|steeg|wijk))\b"),
}


def _key(name: str) -> str:
    """A name's key: its words lowercased, ordinals as numbers, without directions and without a possessive's owner
    ("Chicago's Brighton" -> "brighton"), joined without spaces ("Little Leaf" and "Littleleaf" meet); "" when a word
    says it is no street name (:data:`_NOT_NAME`)."""
    ws = [w.strip(".,").lower() for w in name.split()]
    for i in range(len(ws) - 1, -1, -1):
        if ws[i].endswith(("'s", "’s")):
            ws = ws[i + 1 :]
            break
    ws = [_ORDINALS.get(w, w) for w in ws if w and w not in _DIRECTIONS]
    if (
        not ws
        or any(p in _NOT_NAME for w in ws for p in w.split("-"))
        or (len(ws) == 1 and _TYPE_WORD.fullmatch(ws[0]))
    ):
        return ""
    return "".join(ws)


def _title_case(title: str) -> bool:
    """Whether a headline capitalises every word of four letters or more ("4 Teens Hurt In Drive-By Shooting"): then a
    capitalised word is no evidence of a name."""
    ws = [w for w in title.split() if len(w) > 3 and w[0].isalpha()]
    return len(ws) >= 2 and all(w[0].isupper() for w in ws)


def _english(text: str) -> set[str]:
    out = {_key(m.group(1)) for m in _EN_NAMED.finditer(text)}
    for m in _EN_PAIR.finditer(text):
        out.update((_key(m.group(1)), _key(m.group(2))))
    for m in _EN_BLOCK.finditer(text):
        out.add(_key(re.split(rf"\s(?i:{_EN_TYPES})\b", m.group(1))[0]))
    out.update(f"route{int(n)}" for n in _EN_ROUTE.findall(text))
    out.discard("")
    return out


@lru_cache(maxsize=65536)
def local_places(title: str, body: str, language: str) -> frozenset[str]:
    """The local place names of an article (module docstring); empty for a language without patterns."""
    lang = (language or "").split("-")[0].lower()
    head = "" if _title_case(title or "") else (title or "")
    text = f"{head}\n{(body or '')[:PLACE_CHARS]}"
    if lang == "en":
        return frozenset(_english(text))
    if lang in _ROMANCE_RE:
        return frozenset(k for m in _ROMANCE_RE[lang].finditer(text) if (k := _key(m.group(1))))
    if lang in _COMPOUND:
        return frozenset(m.group(1).lower() for m in _COMPOUND[lang].finditer(text))
    return frozenset()


def relation(a, b) -> float:
    """+1 when two articles share a local place name, -1 when both name some and none is shared, 0 otherwise."""
    if not a or not b:
        return 0.0
    return 1.0 if set(a) & set(b) else -1.0
