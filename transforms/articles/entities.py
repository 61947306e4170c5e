"""Entities (people, places, organisations) of an article, linked through an extensible alias table.

Reads: the page's schema.org ``about`` / ``mentions`` objects and keywords (JSON-LD via extruct, see
:mod:`transforms.articles.structured`), the title and body text, the detected language, and the alias table
(``aliases.tsv`` next to this module: ``id<TAB>kind<TAB>name<TAB>alias|alias...``; pass another file to extend it).
Writes: ``[{"id", "name", "kind"}]`` (the Article's ``entities``), most salient first, at most ``MAX_ENTITIES``.

Why this design: no NER model installs offline (spaCy models are not on PyPI), and the clusterer needs entities
mainly as a bonus for shared names between articles of one event, in every language of the sample. So:
- Publishers' own markup first: ``about``/``mentions`` objects carry a type (Person/Place/Organization) and often a
  ``sameAs`` link; their names are linked through the alias table like everything else.
- Cased scripts (Latin, Cyrillic, Greek, Armenian): capitalised n-grams (1-5 tokens, with name particles such as
  "of", "de", "van", "al" inside), with per-language function-word lists (``stopwords.json``) to trim sentence-initial
  words ("The", "Der", "El"); a lone capitalised word at a sentence start is kept only if the text never uses it in
  lower case. Short mentions are folded into longer names of the same document ("Noem" -> "Kristi Noem").
  Kind: the alias table's, else honorifics and titles before the name (Mr, Sen., Präsident ...) or a speech verb
  after a multi-word name ("... said", "... dijo") -> PERSON,
  organisational words (Inc, Ministry, Party, Universidad ...) -> ORG, a locative preposition before it ("in", "en",
  "à", "nach") -> PLACE, else OTHER.
- Caseless scripts (Chinese, Japanese, Korean, Thai, Arabic, Hebrew, Devanagari ...): the alias table's surface
  forms are searched in the text, plus Japanese katakana runs and 《》-quoted titles that recur.
- Salience: mentions in the title count double, repeated and multi-word names rank first; single unlinked words
  mentioned once are dropped as noise.
- Places: a name the gazetteer holds (:mod:`transforms.articles.places`: GeoNames countries, US states, cities of
  15,000+, in every edition language) becomes ``place:{slug}`` of one GeoNames row, read in the context of the
  article's other places; a lone word must earn it (``_resolve_places``). Caseless scripts: one Aho-Corasick pass.
- Worth showing: generic and boilerplate words (``GENERIC``: "State", "Magnitude", "Rights Reserved", codes such as
  "US"), a Title Case headline's words and a sentence's first word that the body never says mid-sentence, a title
  word the body writes in lower case, and a German noun after its article ("ein Erdbeben der Stärke") are not
  entities. :func:`display` / :func:`topic_name` give the name a reader sees for an id (a region code is its country
  in the edition's language; "lumen's orbit" -> "Lumen's Orbit"; a generic id has none).
- Runs are cut where names end: before a capitalised function word (a Title Case headline: "Erdbeben Der Stärke",
  "Man Shot In Stockton"), at "and"/"und"/"y"/"и" between names ("the UK and India", unless the whole is one name:
  "Bosnia and Herzegovina", "Food and Drug Administration"), after a known possessor ("Intel's Atom"); an office
  before a name goes, compounds too ("US-Präsident", "President-elect", "Bundeskanzler", "Премьер-министр"), with a
  code after it ("Президент США Джо Байден" -> "Джо Байден"); a generic word before a connector too ("Estado de
  California" -> California).
Unlinked entities get the normalised surface form as id (:func:`transforms.articles.entity_aliases.entity_key`:
case-folded, spaces collapsed, but a word with inner capitals such as "NSA", "U.S." or "McConnell" keeps them, so
readers see the article's spelling), so two articles naming "Kristi Noem" share an id even before the alias table
knows her. The display functions are in :mod:`transforms.articles.entity_names` (re-exported here). The word lists (titles, name particles,
organisation and place words, speech verbs) are in :mod:`transforms.articles.entity_words`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from transforms.articles import places
from transforms.articles.entity_aliases import (
    CASELESS_SCRIPT,
    POSSESSIVE,
    AliasTable,
    default_aliases,
    entity_key,
    normalise,
    stopwords,
)
from transforms.articles.entity_names import (  # noqa: F401 (display, title_words, topic_name: their callers' import)
    display,
    generic,
    title_words,
    topic_name,
)
from transforms.articles.entity_words import (
    CONNECTORS,
    COORDINATORS,
    GENERIC,
    NAME_PARTICLES,
    NOUN_ARTICLES,
    NOUN_CAPITALISING,
    ORG_WORDS,
    PLACE_PREPS,
    PLACE_WORDS,
    SPEECH,
    TITLE_ENDINGS,
    TITLES,
    TYPE_KIND,
)

MAX_ENTITIES = 25
CONFIRM_BODY_CHARS = 200  # a body this long must say an unlinked name mid-sentence for it to count (_salient)
SCAN_CHARS = 4000  # ~650 words: the names that matter appear early; more costs time and adds noise

_TOKEN = re.compile(r"(?:[^\W\d_]\.){2,}|[^\W\d_][\w'’\-]*(?:&\w[\w'’\-]*)*\.?|\d[\d.,:]*|[.!?;:,\"“”«»„()\[\]|•—–/]")
_SENTENCE_END = {".", "!", "?", ";", ":", '"', "“", "”", "«", "»", "„", "(", ")", "[", "]", "|", "•", "—", "–"}
_BREAK = _SENTENCE_END | {",", "/"}
_INITIALS = re.compile(r"(?:[^\W\d_]\.){2,}")
_ELIDED = re.compile(r"(?:[ldjnsctm]|qu|lorsqu|puisqu|dell|all|nell|sull|dall|coll|un|quell|d[eo]ll)['’]")

_KATAKANA = re.compile(r"[\u30a0-\u30ffー・]{3,}")
_BOOK_TITLE = re.compile(r"《([^《》]{2,20})》")


@dataclass(frozen=True)
class Entity:
    id: str
    name: str
    kind: str

    def as_record(self) -> dict:
        return {"id": self.id, "name": self.name, "kind": self.kind}


def _kind_of_type(obj) -> str:
    types = obj.get("@type") if isinstance(obj, dict) else None
    if isinstance(types, str):
        types = [types]
    for t in types or []:
        k = TYPE_KIND.get(str(t).rsplit("/", 1)[-1].lower())
        if k:
            return k
    return "OTHER"


class _Tally:
    def __init__(self):
        self.items: dict[str, dict] = {}

    def add(self, eid: str, name: str, kind: str, weight: float, pos: int, linked: bool, mid: bool = True):
        """Tally a mention; ``mid``: said inside a sentence of the body or in markup (not a title word, not a
        sentence's first word, not a German noun after an article)."""
        it = self.items.get(eid)
        if it is None:
            self.items[eid] = {
                "name": name,
                "kind": kind,
                "score": weight,
                "pos": pos,
                "linked": linked,
                "count": 1,
                "kinds": {kind: 1},
                "mid": mid,
            }
            return
        it["mid"] = it["mid"] or mid
        it["score"] += weight
        it["count"] += 1
        it["pos"] = min(it["pos"], pos)
        it["kinds"][kind] = it["kinds"].get(kind, 0) + 1
        if linked:
            it["linked"] = True
        if it["kind"] == "OTHER" and kind != "OTHER":
            it["kind"] = kind


def _merge(items: dict[str, dict], eid: str, it: dict) -> None:
    """Fold tally item ``it`` into ``items[eid]`` (or store it there)."""
    have = items.get(eid)
    if have is None:
        items[eid] = it
        return
    for k in ("score", "count"):
        have[k] += it[k]
    have["pos"] = min(have["pos"], it["pos"])
    have["mid"] = have["mid"] or it["mid"]
    have["linked"] = have["linked"] or it["linked"]


def _tokens(text: str) -> list[tuple[str, int]]:
    """(token, position) of words, numbers and punctuation; a word's final period is split off unless the word is an
    abbreviation ("Gov.", "J.", "U.S."); an elided article before a name is a token of its own ("l'Élysée",
    "d'Emmanuel Macron", "dell'Unione": the name is capitalised, the article is not)."""
    toks = []
    for m in _TOKEN.finditer(text):
        t, start = m.group(0), m.start()
        if ("'" in t or "’" in t) and (elided := _ELIDED.match(t)) and t[elided.end() :][:1].isupper():
            toks.append((t[: elided.end()], start))
            t, start = t[elided.end() :], start + elided.end()
        if t[-1] == "." and len(t) > 1 and not _INITIALS.fullmatch(t):
            word = t[:-1]
            if word.casefold() in TITLES or len(word) == 1:
                # "Gov." / "J." : an abbreviation, not a sentence end; an initial keeps its period ("George W. Bush")
                toks.append((t if len(word) == 1 and word.isupper() else word, start))
                continue
            toks.append((word, start))
            toks.append((".", m.end() - 1))
            continue
        toks.append((t, start))
    return toks


def _name_follows(toks: list[tuple[str, int]], j: int) -> bool:
    """Whether a capitalised word follows, after at most one more connector ("von der Leyen", "Luis de la Fuente")."""
    if j < len(toks) and toks[j][0].casefold() in CONNECTORS:
        j += 1
    return j < len(toks) and toks[j][0][:1].isupper()


def _run_from(toks: list[tuple[str, int]], i: int, nouns_capitalised: bool = False) -> list[str]:
    """The run of capitalised tokens starting at ``i`` (at most 8: two names joined by "and"), with lower-case
    connectors inside; where every noun is capitalised (German) an article joins two words only after a name
    particle ("von der Leyen"), not two nouns ("Angaben der Polizei", "Zahl der Arbeitslosen")."""
    n = len(toks)
    j = i
    run: list[str] = []
    while j < n and len(run) < 8:
        t = toks[j][0]
        low = t.casefold()
        joins = (
            low in CONNECTORS
            and run
            and _name_follows(toks, j + 1)
            and not (nouns_capitalised and low in NOUN_ARTICLES and run[-1].casefold() not in NAME_PARTICLES)
        )
        if t[:1].isupper() and t not in _BREAK or joins:
            run.append(t)
            j += 1
        else:
            break
    return run


@functools.lru_cache(maxsize=65536)
def _is_title(word: str) -> bool:
    """An office or honorific before a name: a title ("Gov.", "Präsident", "Губернатор"), a compound of one
    ("US-Präsident", "President-elect", "Премьер-министр", "Ex-President") or a German compound ending in one
    ("Bundeskanzler", "Außenministerin")."""
    w = word.casefold().rstrip(".")
    if w in TITLES:
        return True
    if "-" in w:
        first, *_, last = w.split("-")
        return first in TITLES and len(first) > 3 or len(last) > 3 and _is_title(last)
    return len(w) > 9 and w.endswith(TITLE_ENDINGS)


def _is_code(word: str) -> bool:
    """A country or organisation code written in capitals ("US", "США", "UK")."""
    return 2 <= len(word) <= 4 and word.isupper()


def _trim(run: list[str], start_of_sentence: bool, sw: frozenset) -> tuple[list[str], str, bool]:
    """(run, kind hint, still at the sentence start) with titles (and a code after one: "Президент США Джо Байден"),
    leading stopwords, a generic word before a connector ("Estado de California") and trailing connectors cut."""
    kind = "OTHER"
    # a title inside the run starts a person's name: "South Dakota Gov. Kristi Noem" -> "Kristi Noem"
    for k in range(len(run) - 1, 0, -1):
        if _is_title(run[k]) and k + 1 < len(run):
            run = run[k:]
            start_of_sentence = False
            break
    # trim: leading stopwords (sentence-initial "The"), titles (-> PERSON), trailing connectors
    while run and _is_title(run[0]):
        kind = "PERSON"
        run.pop(0)
        start_of_sentence = False
        if len(run) > 2 and _is_code(run[0]):
            run.pop(0)
    while run and (run[0].casefold() in sw or run[0].casefold() in CONNECTORS):
        run.pop(0)
        start_of_sentence = False
    if len(run) > 2 and run[0].casefold() in GENERIC and run[1].casefold() in CONNECTORS:
        run = run[2:]
        start_of_sentence = False
    while run and (run[-1].casefold() in CONNECTORS or run[-1].casefold() in sw):
        run.pop()
    return run, kind, start_of_sentence


def _coordinated(run: list[str]) -> list[list[str]]:
    """A run split at the words that join names into a list ("UK and India", "NSA and AMD"), unless the whole is
    one name: a place ("Bosnia and Herzegovina"), an alias, or an organisation ("Food and Drug Administration")."""
    if len(run) < 3 or not any(w.casefold() in COORDINATORS for w in run[1:-1]):
        return [run]
    whole = " ".join(run)
    if (
        run[-1].casefold().rstrip(".") in ORG_WORDS
        or default_aliases().link(whole)
        or places.gazetteer().candidates(whole)
    ):
        return [run]
    parts: list[list[str]] = [[]]
    for w in run:
        if w.casefold() in COORDINATORS:
            parts.append([])
        else:
            parts[-1].append(w)
    out = []
    for p in parts:  # "and the Bank of England": the connectors at a part's edges go
        while p and p[0].casefold() in CONNECTORS:
            p = p[1:]
        while p and p[-1].casefold() in CONNECTORS:
            p = p[:-1]
        if p:
            out.append(p)
    return out


def _possessor(run: list[str]) -> list[list[str]]:
    """A run split after a possessive whose possessor is a known name ("Indonesia's Aceh", "Intel's Atom": the
    alias table or the gazetteer holds it); "Lumen's Orbit" stays one name."""
    for k in range(len(run) - 1):
        w = run[k]
        if w[-2:] in ("'s", "’s"):
            owner = " ".join([*run[:k], POSSESSIVE.sub("", w)])
            if default_aliases().link(owner) or places.gazetteer().candidates(owner):
                return [run[: k + 1], run[k + 1 :]]
    return [run]


def _cut_title_case(run: list[str], sw: frozenset) -> list[str]:
    """A run ends before a capitalised function word inside it: a Title Case headline ("Erdbeben Der Stärke",
    "Произошло У Берегов Японии", "Man Shot In Stockton") is several runs; names write those words in lower case
    ("Bank of America"), unless the gazetteer holds the whole ("Frankfurt Am Main")."""
    for k in range(1, len(run)):
        w = run[k]
        if w[:1].isupper() and (len(w) == 1 or not w.isupper()) and w.casefold() in sw:
            return run if places.gazetteer().candidates(" ".join(run)) else run[:k]
    return run


def _is_name(run: list[str], start_of_sentence: bool, lower_seen: set) -> bool:
    """Whether a trimmed run is a name, not a capitalised common word or a shouted heading."""
    if not run:
        return False
    if len(run) == 1:
        word = run[0]
        if start_of_sentence and word.casefold() in lower_seen:
            return False
        if word.casefold() in lower_seen and not word.isupper():
            return False  # a common word capitalised for emphasis or in a heading
        if len(word) < 2:
            return False
    return not (len(run) > 1 and all(w.isupper() and len(w) > 5 for w in run))  # not SHOUTED HEADINGS


def _kind_of_run(run: list[str], prev: str, following: str) -> str:
    """ORG by an organisational word, PLACE by a place word or a locative preposition before it, PERSON by a
    speech verb after a multi-word name, else OTHER."""
    last = run[-1].casefold().rstrip(".")
    if last in ORG_WORDS or run[0].casefold() in ("university", "universidad", "ministry", "bank"):
        return "ORG"
    if last in PLACE_WORDS or prev in PLACE_PREPS:
        return "PLACE"
    if len(run) >= 2 and SPEECH.match(following):
        return "PERSON"  # "Kristi Noem said", "Pedro Horrach dijo": a speaker is a person
    return "OTHER"


def _after_article(run: list[str], prev: str) -> tuple[list[str], bool]:
    """German capitalises every noun: after an article the run's first word is a common noun ("ein Erdbeben der
    Stärke" -> nothing; "der SPD-Politiker Lars Klingbeil" -> "Lars Klingbeil"); (rest, whether a noun was cut)."""
    cut = False
    if run and run[0].casefold() in NOUN_ARTICLES:  # "Das Erdbeben ..." at a sentence start
        prev, run = run[0].casefold(), run[1:]
    while run and prev in NOUN_ARTICLES:
        run = run[1:]
        cut = True
        prev = run[0].casefold() if run else ""
        if run and prev in NOUN_ARTICLES:
            run = run[1:]
        else:
            break
    return run, cut


def _capitalised_runs(text: str, language: str, lower_seen: set[str]) -> list[tuple[str, str, int, bool]]:
    """(surface, kind hint, position, said mid-sentence) for each capitalised n-gram of a cased-script text;
    ``lower_seen`` (the words the article writes in lower case) gains this text's."""
    nouns_capitalised = language in NOUN_CAPITALISING
    sw = stopwords(language)
    toks = _tokens(text)
    lower_seen.update(t.casefold() for t, _ in toks if t[:1].islower())
    out = []
    i, n = 0, len(toks)
    sentence_start = True
    while i < n:
        tok, pos = toks[i]
        if tok in _BREAK or tok[:1].isdigit():
            sentence_start = tok in _SENTENCE_END
            i += 1
            continue
        if not tok[:1].isupper():
            sentence_start = False
            i += 1
            continue
        run = _run_from(toks, i, nouns_capitalised)
        if len(run) > 1:
            run = _cut_title_case(run, sw)
        j = i + len(run)
        prev = toks[i - 1][0].casefold() if i > 0 else ""
        following = " ".join(t for t, _ in toks[j : j + 2]).casefold()
        cut = False
        if nouns_capitalised:
            run, cut = _after_article(run, prev)
        # "São Paulo", "Los Angeles", "El Paso": a place's name is no stop word to trim
        whole = len(run) > 1 and run[0].casefold() in sw and places.gazetteer().candidates(" ".join(run))
        run, kind, start_of_sentence = _trim(run, sentence_start and not cut, frozenset() if whole else sw)
        # a lone capitalised word at a sentence start or after a German article may be any noun; a run of several
        # capitalised words is a name wherever it stands
        at_start = len(run) == 1 and (start_of_sentence or cut)
        sentence_start = False
        i = j
        for part in [run] if len(run) < 2 else [p for c in _coordinated(run) for p in _possessor(c)]:
            if not _is_name(part, start_of_sentence, lower_seen):
                continue
            surface = POSSESSIVE.sub("", " ".join(part))
            hint = _kind_of_run(part, prev, following) if kind == "OTHER" else kind
            lone_generic = len(part) == 1 and part[0].casefold() in GENERIC
            out.append((surface, hint, pos, not at_start and not lone_generic))
    return out


def _adder(tally: _Tally, aliases: AliasTable):
    """``add(surface, kind, weight, pos, mid=True)``: tallies a cleaned mention, linked through the aliases."""

    def add(surface: str, kind: str, weight: float, pos: int, mid: bool = True):
        surface = " ".join((surface or "").split()).strip(" .,;:'\"“”‘’()[]")
        if len(surface) < 2 or len(surface) > 80:
            return
        linked = aliases.link(surface)
        if linked:
            eid, lkind, name = linked
            tally.add(eid, name, lkind, weight, pos, True)
        else:
            tally.add(entity_key(surface), surface, kind, weight, pos, False, mid)

    return add


def _add_markup(add, article: dict | None, keywords: list[str] | None, aliases: AliasTable) -> None:
    """1. the publisher's markup: ``about`` / ``mentions`` objects and names, and keywords the aliases know."""
    for key in ("about", "mentions"):
        value = (article or {}).get(key)
        objs = value if isinstance(value, list) else [value] if value else []
        for obj in objs[:30]:
            if isinstance(obj, dict):
                name = obj.get("name")
                if isinstance(name, str):
                    add(name, _kind_of_type(obj), 3.0, -1)
            elif isinstance(obj, str):
                add(obj, "OTHER", 2.0, -1)
    for kw in (keywords or [])[:30]:
        if aliases.link(kw):
            add(kw, "OTHER", 1.5, -1)


def _add_text(add, tally: _Tally, title: str, body: str, language: str, aliases: AliasTable) -> None:
    """2. the text: capitalised runs (cased scripts) or katakana and 《》 titles (caseless), and alias surfaces."""
    title = title or ""
    text = (body or "")[:SCAN_CHARS]
    caseless = bool(CASELESS_SCRIPT.search(title + text[:2000])) and len(
        CASELESS_SCRIPT.findall(text[:2000])
    ) > 0.3 * len(re.findall(r"\w", text[:2000]) or [1])
    lower_seen: set[str] = set()  # the body first: a title word the body writes in lower case is a common word
    for offset, chunk, weight in ((len(title) + 1, text, 1.0), (0, title, 2.0)):
        if not chunk:
            continue
        if not caseless:
            for surface, kind, pos, mid in _capitalised_runs(chunk, language, lower_seen):
                add(surface, kind, weight, offset + pos, mid=mid and offset > 0)
        for surface, (eid, kind, name) in aliases.scan(chunk):
            tally.add(eid, name, kind, weight, offset + chunk.find(surface), True)
        if caseless:
            _add_caseless_places(tally, (chunk, offset, weight), language, aliases)
            for m in _KATAKANA.finditer(chunk):
                add(m.group(0), "OTHER", weight * 0.5, offset + m.start())
            for m in _BOOK_TITLE.finditer(chunk):
                add(m.group(1), "OTHER", weight * 0.5, offset + m.start())


def _add_caseless_places(tally: _Tally, text: tuple[str, int, float], language: str, aliases: AliasTable) -> None:
    """Gazetteer place names in a caseless-script text (chunk, offset, weight); the alias table's own surfaces are
    tallied by its scan."""
    chunk, offset, weight = text
    g = places.gazetteer()
    for pos, surface in g.scan(chunk):
        found = g.candidates(surface, language) if aliases.link(surface) is None else ()
        if found:
            tally.add(found[0].entity_id, found[0].name, "PLACE", weight, offset + pos, True)


def _resolve_places(items: dict[str, dict], language: str) -> None:
    """4. unlinked names the gazetteer holds become its places (``place:{slug}``), each read in the context of the
    article's other places (:meth:`transforms.articles.places.Gazetteer.resolve`) and kept when
    :func:`transforms.articles.places.accept` says the way the article says it names the place (a lone word must
    earn it: "in Stockton", a big city, its country named too, its accents). A stop word or a generic word is never
    a place."""
    todo = {eid: it for eid, it in items.items() if not it["linked"] and it["kind"] in ("PLACE", "OTHER")}
    if not todo:
        return
    g = places.gazetteer()
    found = g.resolve((it["name"] for it in todo.values()), language)
    linked = [p for eid, it in items.items() if it["linked"] and (p := g.by_entity(eid)) is not None]
    shared = places.shared_countries([*found.values(), *linked])
    generic = stopwords(language) | GENERIC
    for eid, it in todo.items():
        p = found.get(it["name"])
        if p is None or eid.casefold() in generic:
            continue
        if not places.accept(p, it["name"], bool(it["kinds"].get("PLACE")), it["mid"], shared[p.key]):
            continue
        del items[eid]
        it.update(name=p.name, kind="PLACE", linked=True)
        _merge(items, p.entity_id, it)


def _title_case(title: str) -> bool:
    """Whether a headline capitalises its words (most words of 4+ letters): its runs are no evidence of names."""
    words = re.findall(r"[^\W\d_]{4,}", title or "")
    return len(words) >= 3 and sum(w[:1].isupper() for w in words) > 0.7 * len(words)


def _fold_short_mentions(items: dict[str, dict], headline_end: int = -1) -> None:
    """3. fold short mentions into longer names of the same document ("Noem" -> "Kristi Noem"; one that two names
    end or start with is dropped: it would show one person twice); not into a run of
    a Title Case headline (positions before ``headline_end``) that the body never says ("Берегов Японии")."""
    by_edge: dict[str, list] = {}
    for oid, o in items.items():
        parts = normalise(o["name"]).split()
        if len(parts) > 1 and (o["mid"] or o["pos"] >= headline_end):
            for w in {parts[0], parts[-1]}:
                by_edge.setdefault(w, []).append((oid, o))
    for eid, it in list(items.items()):
        if it["linked"] or " " in it["name"].strip():
            continue
        owners = by_edge.get(normalise(it["name"]), [])
        if len(owners) == 1:
            oid, o = owners[0]
            o["score"] += it["score"]
            o["count"] += it["count"]
            o["pos"] = min(o["pos"], it["pos"])
            o["mid"] = o["mid"] or it["mid"]
            if o["kind"] == "OTHER" and it["kind"] != "OTHER":
                o["kind"] = it["kind"]
            del items[eid]
        elif len(owners) > 1:
            del items[eid]  # "Bush" beside "George W. Bush" and "Reggie Bush": either, so neither on its own


def _fold_case_twins(items: dict[str, dict]) -> None:
    """An unlinked id that keeps capitals (:func:`transforms.articles.entity_aliases.entity_key`) folds into the
    same name's folded id of the same article: a shouted "TRUMP" in the title is the body's "Trump"."""
    for eid in [e for e in items if not e.islower() and ":" not in e]:
        low = eid.casefold()
        if low != eid and low in items and not items[eid]["linked"]:
            _merge(items, low, items.pop(eid))


def _salient(items: dict[str, dict], confirm: bool, language: str) -> list[dict]:
    """5. salience: linked and multi-word names first; lone unlinked words mentioned once are dropped, and so is,
    when ``confirm`` (the article has a body), an unlinked name the body never says inside a sentence: a word of a
    Title Case headline ("Magnitude"), a sentence's first word, a German noun after its article."""
    out = []
    for eid, it in items.items():
        multiword = len(it["name"].split()) > 1
        if not it["linked"] and not multiword and it["count"] < 2 and it["score"] < 2:
            continue
        if not it["linked"] and (confirm and not it["mid"] or generic(eid, language)):
            continue
        rank = it["score"] + (1.0 if it["linked"] else 0.0) + (0.5 if multiword else 0.0)
        out.append((-rank, it["pos"], eid, it))
    out.sort(key=lambda x: (x[0], x[1], x[2]))
    return [Entity(eid, it["name"], it["kind"]).as_record() for _, _, eid, it in out[:MAX_ENTITIES]]


def extract(
    title: str,
    body: str,
    language: str,
    article: dict | None = None,
    keywords: list[str] | None = None,
    aliases: AliasTable | None = None,
) -> list[dict]:
    """Entities of an article, most salient first (``Entity`` records as dicts)."""
    aliases = aliases or default_aliases()
    tally = _Tally()
    add = _adder(tally, aliases)
    _add_markup(add, article, keywords, aliases)
    _add_text(add, tally, title, body, language, aliases)
    _fold_short_mentions(tally.items, len(title or "") if _title_case(title) else -1)
    _fold_case_twins(tally.items)
    _resolve_places(tally.items, language)
    return _salient(tally.items, len((body or "").strip()) >= CONFIRM_BODY_CHARS, language)
