"""The entity alias table and the per-language stopwords, below both readers: the extractor
(:mod:`transforms.articles.entities`) and the gazetteer (:mod:`transforms.articles.places`, which reads the table's
places and the stopwords without importing the extractor that calls it). Each loads once per process (cached).

The alias table: ``aliases.tsv`` next to this module (``id<TAB>kind<TAB>name<TAB>alias|alias...``; pass another file
to extend it); the stopwords: ``stopwords.json`` (per-language function words, English always added)."""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from importlib import resources
from pathlib import Path

KINDS = ("PERSON", "PLACE", "ORG", "OTHER")

CASELESS_SCRIPT = re.compile(
    r"[\u0600-\u06ff\u0590-\u05ff\u0e00-\u0e7f\u0900-\u0dff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u1000-\u109f\u10a0-\u10ff]"
)
POSSESSIVE = re.compile(r"['’]s$")
_INNER_PERIOD = re.compile(r"(?<=\w)\.")
_PERIOD_OR_DIGIT = re.compile(r"[.\d]")
_INITIAL = re.compile(r"[^\W\d_]\.")  # "W." of "George W. Bush"
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})


@functools.lru_cache(maxsize=65536)
def normalise(surface: str) -> str:
    """The folded form of a name (alias keys): case-folded, one apostrophe ("Lumen’s" = "Lumen's"), no possessive,
    inner periods as spaces ("N. Korea" / "N Korea", "U.S." / "U.S"), spaces collapsed."""
    s = unicodedata.normalize("NFKC", surface or "").translate(_APOSTROPHES)
    s = POSSESSIVE.sub("", s.strip())
    s = _INNER_PERIOD.sub(" ", s)
    return " ".join(s.casefold().split())


@functools.lru_cache(maxsize=65536)
def entity_key(surface: str) -> str:
    """The id of a name the alias table does not hold: :func:`normalise`'s form, except that a word written with a
    capital after its first letter, or an initial, keeps its spelling ("NSA", "U.S.", "McConnell", "SeaMicro", "LuAnn",
    "W."), so the
    name readers see (:func:`transforms.articles.entities.display`) is the article's, not "Nsa" or "U S Senate".
    A name all in capitals (a shouted heading, "KRISTI NOEM") is folded whole. Articles spell such words one way,
    so they still share the id."""
    if surface.istitle() and not _PERIOD_OR_DIGIT.search(surface):  # "Kristi Noem" (not "A400M"): folded
        return normalise(surface)
    s = unicodedata.normalize("NFKC", surface or "").translate(_APOSTROPHES)
    words = POSSESSIVE.sub("", s.strip()).split()
    shouted = len(words) > 1 and all(not any(c.islower() for c in w) for w in words)
    out = []
    for w in words:
        if not shouted and (any(c.isupper() for c in w[1:]) or _INITIAL.fullmatch(w)):
            out.append(w)
        else:
            out.append(_INNER_PERIOD.sub(" ", w).casefold())
    return " ".join(" ".join(out).split())


class AliasTable:
    """Surface form -> (id, kind, name). Loaded from a TSV file; more files (or rows) can be added."""

    def __init__(self, rows: list[tuple[str, str, str, list[str]]] = ()):
        self._by_surface: dict[str, tuple[str, str, str]] = {}
        self._exact: dict[str, tuple[str, str, str]] = {}  # short all-caps aliases match with their case only
        self._caseless: dict[str, tuple[str, str, str]] = {}
        self._by_id: dict[str, tuple[str, str, str]] = {}
        self._caseless_re = None
        self._rows: list[tuple[str, str, str, list[str]]] = []
        for row in rows:
            self.add(*row)

    def add(self, entity_id: str, kind: str, name: str, aliases: list[str]) -> None:
        kind = kind if kind in KINDS else "OTHER"
        self._rows.append((entity_id, kind, name, list(aliases)))
        target = (entity_id, kind, name)
        self._by_id.setdefault(entity_id, target)
        for surface in [name, *aliases]:
            surface = surface.strip()
            if not surface:
                continue
            if len(surface) <= 4 and surface.replace(".", "").isupper():
                self._exact.setdefault(surface, target)
                self._exact.setdefault(surface.replace(".", ""), target)
            else:
                self._by_surface.setdefault(normalise(surface), target)
            if CASELESS_SCRIPT.search(surface):
                self._caseless.setdefault(surface, target)
        self._caseless_re = None

    @classmethod
    def load(cls, path: str | Path | None = None) -> AliasTable:
        if path is None:
            text = resources.files("transforms.articles").joinpath("aliases.tsv").read_text(encoding="utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        rows = []
        for line in text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 3:
                continue
            aliases = parts[3].split("|") if len(parts) > 3 else []
            rows.append((parts[0].strip(), parts[1].strip().upper(), parts[2].strip(), aliases))
        return cls(rows)

    def link(self, surface: str) -> tuple[str, str, str] | None:
        s = surface.strip()
        for key in (s, s.replace(".", ""), s + "."):
            if key in self._exact:
                return self._exact[key]
        return self._by_surface.get(normalise(s))

    def rows(self) -> list[tuple[str, str, str, list[str]]]:
        """(id, kind, name, aliases) of every row added, in order."""
        return list(self._rows)

    def entity(self, entity_id: str) -> tuple[str, str, str] | None:
        """(id, kind, canonical name) of an entity id of the table; None for an id it does not hold."""
        return self._by_id.get(entity_id)

    def scan(self, text: str) -> list[tuple[str, tuple[str, str, str]]]:
        """Caseless-script aliases found in ``text`` (longest first, non-overlapping)."""
        if not self._caseless:
            return []
        if self._caseless_re is None:
            alts = sorted(self._caseless, key=len, reverse=True)
            self._caseless_re = re.compile("|".join(re.escape(a) for a in alts))
        return [(m.group(0), self._caseless[m.group(0)]) for m in self._caseless_re.finditer(text)]


@functools.lru_cache(maxsize=4)
def default_aliases(path: str | None = None) -> AliasTable:
    return AliasTable.load(path)


@functools.lru_cache(maxsize=1)
def _stopword_lists() -> dict[str, frozenset]:
    text = resources.files("transforms.articles").joinpath("stopwords.json").read_text(encoding="utf-8")
    return {k: frozenset(v) for k, v in json.loads(text).items()}


@functools.lru_cache(maxsize=128)
def stopwords(language: str) -> frozenset:
    lists = _stopword_lists()
    base = lists.get(language, frozenset())
    # English function words leak into every language's news (quotes, brand names): always include them.
    return base | lists["en"] if language != "en" else base


@functools.lru_cache(maxsize=128)
def lone_words(language: str) -> frozenset:
    """Words that name nothing on their own, written as a word ("Web", "New", "Year", "Results", "I've"): the
    stopwords-iso list of the language and of English (``stopwordsiso``, MIT; English leaks into every language's
    news) and the project's function words. Read for a lone word in lower case only: its lists also hold codes
    and acronyms ("gm", "tv", "sec"), which an article writes in capitals and which stay names."""
    import stopwordsiso

    return frozenset(stopwordsiso.stopwords([language, "en"])) | stopwords(language)
