"""Light, language-aware text features for story clustering: the lede, lexical terms and entity-like keys.

Reads plain strings (title, lede, body); writes plain Python lists/sets. No model, no network: this runs in the
clusterer's hot path and in tests. Used by :mod:`transforms.stories.vocabulary.features`.

Design choices
- Terms: lowercased word tokens minus a stop-word list and tokens shorter than 2 characters, with a crude plural
  strip (``-s``/``-es``) so "recalls"/"recall" meet. Good enough for TF-IDF between headlines and ledes in the
  languages we see; a real stemmer buys little for this and costs a dependency.
- Entity keys: what disambiguates two events of the same kind (two earthquakes, two boxing matches) is *who*,
  *where* and *which numbers*. Without an offline NER model we take (a) capitalised tokens that are not sentence
  starters or stop words, in runs ("Wladimir Klitschko" gives ``klitschko`` and ``wladimir``), (b) numbers with
  their unit-ish neighbour normalised ("7.3", "$526", "52-3"). Lowercased, accents kept. Headlines in Title Case
  capitalise every word, so the title only contributes tokens that are capitalised in the body too, or all its
  non-stop tokens when there is no body (a headline-only feed).
"""

from __future__ import annotations

import re
import unicodedata

# Stop words of the languages the product serves first. Small on purpose: frequent function words only; content
# words that are merely common ("said", "year") are left to IDF.
_STOP = {
    "en": """a about above after again against all also am an and any are as at be because been before being below
        between both but by can could did do does doing down during each few for from further had has have having he her
        here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
        off on once only or other our ours ourselves out over own same she should so some such than that the their theirs
        them themselves then there these they this those through to too under until up very was we were what when where
        which while who whom why will with would you your yours yourself yourselves says said say new after over via
        amp will's it's he's she's what's who's that's there's i'm we're they're you're isn't aren't wasn't weren't
        don't doesn't didn't won't wouldn't can't couldn't shouldn't mr mrs ms dr vs per un re update""",
    "es": """a al algo algunas algunos ante antes como con contra cual cuando de del desde donde durante e el ella ellas
        ellos en entre era eran es esa esas ese eso esos esta estaba estado estan estar este esto estos fue fueron ha han
        hasta hay la las le les lo los mas me mi muy nada ni no nos o otra otras otro otros para pero poco por porque que
        quien se sea ser si sin sobre son su sus tambien te tiene tienen todo todos tras tu un una uno unos y ya él más
        está están también qué según ha dijo""",
    "it": """a ad al alla alle allo agli ai anche che chi ci come con contro cui da dal dalla dalle dallo dai degli dei del
        della delle dello di dopo e ed è era erano essere gli ha hanno i il in io la le lei lo loro lui ma mi ne negli nei
        nel nella nelle nello no noi non o per perché più quale quando quella quelle quello questa queste questo se sia
        si sono su sua sue sui sul sulla sulle suo suoi tra tutti tutto un una uno sono stato stata detto""",
    "nl": """aan al alles als bij dan dat de der deze die dit doch doen door dus een eens en er ge geen geweest haar had
        heb hebben heeft hem het hier hij hoe hun iets ik in is ja je kan kon kunnen maar me meer men met mij mijn moet na
        naar niet niets nog nu of om omdat ons ook op over reeds te tegen toch toen tot u uit uw van veel voor want waren
        was wat we wel werd wezen wie wij wil worden wordt zal ze zei zelf zich zij zijn zo zonder zou volgens""",
    "de": """aber alle als am an auch auf aus bei bin bis bist da damit dann das dass dem den der des die dies doch dort du
        durch ein eine einem einen einer eines er es für hat hatte hier ich ihr im in ist ja jetzt kann kein man mit nach
        nicht noch nun nur ob oder ohne sehr sein sich sie sind so über um und uns unter vom von vor war was weil wenn wer
        wie wir wird wo zu zum zur""",
    "fr": """a au aux avec ce ces cette dans de des du elle en est et eux il ils je la le les leur lui ma mais me même mes
        moi mon ne nos notre nous on ou par pas pour qu que qui sa se ses son sur ta te tes toi ton tu un une vos votre
        vous été être avait sont selon après plus""",
    "pt": """a ao aos as com como da das de do dos e ela ele em entre era essa esse esta este eu foi foram há isso já mais
        mas me muito na nas no nos não o os ou para pela pelo por que se sem ser seu sua são também um uma é""",
}
STOPWORDS: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in _STOP.items()}

# Capitalised but not names: weekdays, months and titles say nothing about *which* event (every story has a Tuesday).
CALENDAR = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
    september october november december jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
    lunes martes miércoles jueves viernes sábado domingo enero febrero marzo abril mayo junio julio agosto septiembre
    octubre noviembre diciembre lunedì martedì mercoledì giovedì venerdì sabato domenica gennaio febbraio aprile maggio
    giugno luglio settembre ottobre dicembre maandag dinsdag woensdag donderdag vrijdag zaterdag zondag januari februari
    maart mei juni juli augustus oktober montag dienstag mittwoch donnerstag freitag samstag sonntag januar februar
    märz dezember lundi mardi mercredi jeudi vendredi samedi dimanche janvier février mars avril mai juin juillet août
    septembre octobre novembre décembre today yesterday tomorrow""".split()
)
_ALL_STOP = frozenset().union(*STOPWORDS.values())

_WORD = re.compile(r"[^\W_](?:[^\W_]|['’\-.](?=[^\W_]))*", re.UNICODE)
_NUM = re.compile(r"\d")
_SENT_END = re.compile(r"[.!?:;\"“”]\s*$")
_DATE_LINE = re.compile(
    r"^\s*(?:[A-Za-z]+\s+\d{1,2}\s*,\s*\d{4}|\d{1,2}\s+[^\W\d_]+\s+\d{4}|\d{4}-\d{2}-\d{2}|[^\W\d_]+\s+\d{1,2}\s+[^\W\d_]+\s+\d{4})\s*$",
    re.UNICODE,
)


def stopwords(language: str) -> frozenset[str]:
    """The language's stop words; for an unknown language the union of all (harmless, and 'und' text is mixed)."""
    return STOPWORDS.get(language, _ALL_STOP)


def _fold(token: str) -> str:
    return unicodedata.normalize("NFC", token.lower().replace("’", "'"))


def lede_of(title: str, body: str, max_chars: int = 300) -> str:
    """The first paragraph(s) of ``body`` up to about ``max_chars``, without a repeated title or a date line."""
    text = (body or "").strip()
    t = (title or "").strip()
    if t and text.startswith(t):
        text = text[len(t) :].strip()
    out = ""
    for line in text.split("\n"):
        line = line.strip()
        if not line or _DATE_LINE.match(line):
            continue
        out = f"{out} {line}".strip()
        if len(out) >= max_chars:
            break
    if len(out) > max_chars:
        cut = out.rfind(" ", 0, max_chars)
        out = out[: cut if cut > max_chars // 2 else max_chars]
    return out


MIN_SENTENCE = 20
_SENTENCE = re.compile(r"(?<=[.!?])[\"”’)]?\s+(?=[\"“‘(]?[A-Z0-9ÀÁÂÄÇÉÈÊËÍÎÏÑÓÔÖÚÜ¿¡])")


def title_of(title: str, body: str, max_chars: int = 200) -> str:
    """The headline of an article: its title, else the first sentence of its lede (an article without a title, e.g.
    a body-only input, is told by its opening sentence, as ECB+'s titles are), cut at a word near ``max_chars``."""
    t = (title or "").strip()
    if t:
        return t
    lede = lede_of("", body, max_chars=4 * max_chars)
    # the first sentence end after MIN_SENTENCE characters ("Mr. Smith went ..." does not end at "Mr.")
    ends = [m.start() for m in _SENTENCE.finditer(lede) if m.start() >= MIN_SENTENCE]
    first = lede[: ends[0]].strip() if ends else lede.strip()
    if len(first) > max_chars:
        cut = first.rfind(" ", 0, max_chars)
        first = first[: cut if cut > max_chars // 2 else max_chars]
    return first


def embed_text(title: str, lede: str) -> str:
    """What the embedder sees: title + lede (the headline alone for headline-only feeds)."""
    title = (title or "").strip()
    lede = (lede or "").strip()
    if not lede:
        return title
    if not title:
        return lede
    sep = " " if _SENT_END.search(title) else ". "
    return f"{title}{sep}{lede}"


def _stem(token: str) -> str:
    # Crude plural strip, shared by all languages (it only has to make "recalls"/"recall" meet).
    if len(token) > 4 and not _NUM.search(token):
        if token.endswith("ies"):
            return token[:-3] + "y"
        if token.endswith("es") and token[-3] in "sxz":
            return token[:-2]
        if token.endswith("s") and not token.endswith("ss"):
            return token[:-1]
    return token


def terms(text: str, language: str) -> list[str]:
    """Lexical terms of ``text`` (with repeats, in order)."""
    stop = stopwords(language)
    out = []
    for m in _WORD.finditer(text or ""):
        tok = _fold(m.group(0)).strip(".-'")
        if len(tok) < 2 or tok in stop:
            continue
        if tok.endswith("'s"):
            tok = tok[:-2]
        out.append(_stem(tok))
    return out


def _norm_number(tok: str) -> str | None:
    t = tok.lower().replace(",", "").rstrip(".")
    if not any(c.isdigit() for c in t):
        return None
    return t


def entities(title: str, body: str, language: str, max_body_chars: int = 3000) -> set[str]:
    """Entity-like keys: proper-noun tokens and numbers of title + body (see the module docstring)."""
    stop = stopwords(language)
    body = (body or "")[:max_body_chars]
    keys: set[str] = set()
    lower_seen: set[str] = set()
    caps_body: set[str] = set()
    for text, _is_title in ((body, False),):
        prev_end = True
        for m in _WORD.finditer(text):
            raw = m.group(0)
            tok = _fold(raw)
            start = m.start()
            # A token starts a sentence when the text before it (since the previous token) ends a sentence.
            before = text[max(0, start - 3) : start]
            sentence_start = prev_end or bool(re.search(r"[.!?\n\"“]\s*$", before))
            prev_end = False
            num = _norm_number(raw) if _NUM.search(raw) else None
            if num:
                keys.add(num)
                continue
            if raw[:1].isupper():
                if not sentence_start and tok not in stop and len(tok) > 1:
                    caps_body.add(tok)
            else:
                lower_seen.add(tok)
    # A capitalised word that also appears in lower case in the same text is a common word, not a name.
    keys |= {t for t in caps_body if t not in lower_seen}
    title_tokens = [(m.group(0), _fold(m.group(0))) for m in _WORD.finditer(title or "")]
    have_body = bool(body.strip())
    for i, (raw, tok) in enumerate(title_tokens):
        if _NUM.search(raw):
            num = _norm_number(raw)
            if num:
                keys.add(num)
            continue
        if tok in stop or len(tok) < 2:
            continue
        if have_body:
            if tok in caps_body or (i > 0 and raw[:1].isupper() and tok not in lower_seen and not raw.isupper()):
                keys.add(tok)
        elif raw[:1].isupper() or raw.isupper():
            keys.add(tok)
    out = {k.strip(".-'").removesuffix("'s") for k in keys}
    return {k for k in out if len(k) > 1 and k not in CALENDAR}


def title_keys(title: str, keys) -> set[str]:
    """The entity keys (of :func:`entities`) that the title itself states: its names and numbers."""
    have = set(keys)
    out = set()
    for m in _WORD.finditer(title or ""):
        raw = m.group(0)
        k = _norm_number(raw) if _NUM.search(raw) else _fold(raw)
        k = (k or "").strip(".-'").removesuffix("'s")
        if k in have:
            out.add(k)
    return out
