"""The names readers see for entity ids (chips, topic pages, For you reasons): :func:`display`, :func:`topic_name`,
:func:`title_words`, and :func:`generic` for ids that name nothing worth a page. Below the extractor
(:mod:`transforms.articles.entities`, which re-exports them) and beside the gazetteer, so the editions stage and the
origin name ids without the extractor's code."""

from __future__ import annotations

import functools
import re

from transforms.articles import places
from transforms.articles.entity_aliases import default_aliases, lone_words, stopwords
from transforms.articles.entity_words import CONNECTORS, GENERIC


def title_words(words: str) -> str:
    """Words of a folded id as a name: each word capitalised, hyphenated parts too ("ocasio-cortez" ->
    "Ocasio-Cortez"), a letter after an apostrophe only when a name follows ("o'brien" -> "O'Brien", "lumen's" ->
    "Lumen's"), name particles inside lower case ("bank of england" -> "Bank of England"); a word the id keeps with
    its capitals (:func:`transforms.articles.entity_aliases.entity_key`: "McConnell", "U.S.", "NSA") as it is."""

    def cap(w: str) -> str:
        if not w.islower():
            return w  # spelt as the article spells it ("McConnell", "Chick-fil-A", "U.S.")
        parts = re.split(r"(['’])", w)
        out = parts[0][:1].upper() + parts[0][1:]
        for k in range(1, len(parts) - 1, 2):
            rest = parts[k + 1]
            out += parts[k] + (rest[:1].upper() + rest[1:] if len(rest) > 2 else rest)
        return out

    out = []
    for i, w in enumerate(words.split()):
        if i and w in CONNECTORS:
            out.append(w)
        else:
            out.append(cap(w) if not w.islower() else "-".join(cap(p) for p in w.split("-")))
    return " ".join(out)


def display(entity_id: str, language: str | None = None) -> tuple[str, str] | None:
    """(name a reader sees, kind) of an entity id: a gazetteer place (``place:{slug}``, a country in ``language``),
    the alias table's canonical name, else the id's words as a name (:func:`title_words`); None for an id that is a
    generic or function word ("us", "in", "state"): no page, no chip."""
    if entity_id.startswith("place:"):
        name = places.place_name(entity_id[6:], language)
        if name is not None:
            return name, "PLACE"
    found = default_aliases().entity(entity_id)
    if found is not None:
        return found[2], found[1]
    if generic(entity_id, language):
        return None
    words = entity_id.split(":", 1)[-1].replace("_", " ").replace("-", " ") if ":" in entity_id else entity_id
    return title_words(words), "PLACE" if entity_id.startswith("place:") else "OTHER"


@functools.lru_cache(maxsize=64)
def _common_words(language: str) -> frozenset:
    return GENERIC | stopwords(language) | CONNECTORS


def generic(entity_id: str, language: str | None = None) -> bool:
    """Whether an unlinked entity id is only generic and function words ("us", "in", "state", "erdbeben der
    stärke"), or one common word of the language (:func:`transforms.articles.entity_aliases.lone_words`: "web",
    "new", "year"; not "GM", which the id keeps in capitals): ids stored before those stopped being entities, or
    codes; no topic page, no chip."""
    if ":" in entity_id:
        return False
    common = _common_words(language or "en")
    words = entity_id.replace("_", " ").replace("-", " ").replace("’", "'").casefold().split()
    if len(entity_id) < 2 or all(w in common for w in words):
        return True
    return len(words) == 1 and entity_id.islower() and words[0] in lone_words(language or "en")


@functools.lru_cache(maxsize=65536)
def topic_name(topic_id: str, language: str | None = None) -> str:
    """The name of a topic page id (``entity:{id}``, ``place:{code}``, ``topic:{section}``) in ``language``: what
    :func:`display` shows, a place code's gazetteer name (a region's code is its country), else the id's words. The
    ``name`` of a topic page, pre-built (transforms/editions/overlays/topics.py) or built by the origin (serving/api/topics.py)."""
    kind, _, value = topic_id.partition(":")
    if kind == "place":
        shown = display(value if value.startswith("place:") else "place:" + value, language)
    elif kind == "entity":
        shown = display(value, language)
    else:
        shown = None
    if shown is not None:
        return shown[0]
    words = value.split(":", 1)[-1].replace("-", " ").replace("_", " ")
    return title_words(words) if words.islower() else words
