"""The reader web pages' interface strings, localised per edition language from gettext message catalogues.

Reads ``serving/web/locale/<language>.po`` (package data, one gettext catalogue per edition language, read with
Babel's PO reader when first used: the wheel carries the .po files, no compile step); writes nothing. A message id
is a key (``section.top``); a plural entry is one id per CLDR plural category of the language (``articles|one``,
``articles|few``, ``articles|many``, ``articles|other``: Russian needs four, Japanese one), the category chosen by
Babel's plural rules. English is the fallback of a missing key and of a language without a catalogue; a test
(tests/serving/test_web_counts.py) fails when an edition language of editions.json lacks a catalogue, a key or a
plural category. Placeholders are ``{name}`` (``str.format``); the templates' autoescape escapes everything.

Dates and numbers are Babel's for the language (:meth:`Messages.datetime`, :meth:`Messages.number`), and the
writing direction (``dir``: ``rtl`` for Arabic and Hebrew editions) is the locale's character order.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from importlib import resources

from babel import Locale, UnknownLocaleError
from babel.dates import format_date, format_time
from babel.messages.pofile import read_po
from babel.numbers import format_decimal

FALLBACK = "en"
# Each edition language under its own name (the edition switcher groups by it): a reader looks for the name of the
# language they read, not its English one. Every language of transforms/editions/vocabulary/editions.json is here (a test
# checks it); an unknown code shows as itself.
LANGUAGE_NAMES = {
    "ar": "العربية", "bg": "Български", "bn": "বাংলা", "cs": "Čeština", "da": "Dansk", "de": "Deutsch",
    "el": "Ελληνικά", "en": "English", "es": "Español", "fi": "Suomi", "fr": "Français", "he": "עברית",
    "hi": "हिन्दी", "hu": "Magyar", "id": "Bahasa Indonesia", "it": "Italiano", "ja": "日本語", "ko": "한국어",
    "lt": "Lietuvių", "lv": "Latviešu", "ml": "മലയാളം", "mr": "मराठी", "nl": "Nederlands", "no": "Norsk",
    "pl": "Polski", "pt": "Português", "ro": "Română", "ru": "Русский", "sk": "Slovenčina", "sl": "Slovenščina",
    "sr": "Српски", "sv": "Svenska", "ta": "தமிழ்", "te": "తెలుగు", "th": "ไทย", "tr": "Türkçe",
    "uk": "Українська", "vi": "Tiếng Việt", "zh": "中文",
}  # fmt: skip


# The problem codes of the API (serving/http/conventions.py PROBLEMS) that a page's script may show a reader, and the
# interface string that tells each: a problem's ``detail`` is for developers (English, this occurrence, and on a
# shared answer it may not vary by language: the origin never varies on a request header), so the pages carry the
# code's meaning in their own language (base.html: data-msg-problem-{code}; common.js problemText) and show that.
PROBLEM_MESSAGES = {
    "unauthorized": "problem.unauthorized",
    "rate_limited": "problem.rate_limited",
    "profile_limit": "problem.profile_limit",
    "profile_deleted": "problem.profile_deleted",
    "overloaded": "problem.busy",
    "store_unavailable": "problem.busy",
    "queue_full": "problem.busy",
    "not_ready": "problem.busy",
}

# For you's reasons (serving/personal/ranking.py: ``top_story``, ``local:{place}``, ``follows:entity/{id}``, ...) as a
# reader reads them after "Why:", by the reason's kind; a reason naming a place or a followed entity or topic says
# its name (serving/api/foryou.py reason_name), never a code, on the server's For you cards (foryou_cards.py).
REASON_MESSAGES = {
    "top_story": "reason.top_story",
    "local": "reason.local",
    "follows": "reason.follows",
    "follows-source": "reason.follows_source",
    "also_read": "reason.also_read",
    "readers_like_you": "reason.readers_like_you",
    "similar_to": "reason.similar_to",
    "interest": "reason.interest",
    "popular": "reason.popular",
}


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def _locale(language: str) -> Locale | None:
    try:
        return Locale.parse(language)
    except (ValueError, UnknownLocaleError):
        return None


@functools.cache
def catalogue() -> dict[str, dict]:
    """language -> key -> text, or -> {CLDR category: text} for a plural entry (``key|category`` ids)."""
    out: dict[str, dict] = {}
    for entry in resources.files("serving.web").joinpath("locale").iterdir():
        if not entry.name.endswith(".po"):
            continue
        language = entry.name[:-3]
        with entry.open("rb") as fh:
            po = read_po(fh, locale=language)
        strings: dict = {}
        for m in po:
            if not m.id or not m.string:
                continue
            key, _, form = str(m.id).partition("|")
            if form:
                strings.setdefault(key, {})[form] = m.string
            else:
                strings[key] = m.string
        out[language] = strings
    return out


def plural_tags(language: str) -> frozenset[str]:
    """The CLDR plural categories a language's plural entries must have ("other" always)."""
    loc = _locale(language)
    return frozenset((loc.plural_form.tags if loc else set()) | {"other"})


def plural_form(language: str, n: int) -> str:
    loc = _locale(language) or _locale(FALLBACK)
    return loc.plural_form(n)


class Messages:
    """The strings of one language (``lang`` may be a BCP 47 tag: ``es-ES`` reads ``es``)."""

    def __init__(self, lang: str | None):
        self.language = (lang or FALLBACK).split("-")[0].split("_")[0].lower()
        cat = catalogue()
        self._own = cat.get(self.language, {})
        self._fallback = cat[FALLBACK]
        self._plural_language = self.language if self.language in cat else FALLBACK
        self.locale = _locale(self.language) or _locale(FALLBACK)

    def _entry(self, key: str):
        found = self._own.get(key)
        if found is None:
            found = self._fallback.get(key)
        if found is None:
            raise KeyError(f"no interface string {key!r} in serving/web/locale/{self.language}.po nor en.po")
        return found

    def has(self, key: str) -> bool:
        return key in self._own or key in self._fallback

    def __call__(self, key: str, **values) -> str:
        entry = self._entry(key)
        if isinstance(entry, dict):
            raise TypeError(f"{key!r} is a plural entry: use plural()")
        return entry.format(**values) if values else entry

    def plural(self, key: str, n: int, **values) -> str:
        entry = self._entry(key)
        if not isinstance(entry, dict):
            raise TypeError(f"{key!r} is not a plural entry")
        form = plural_form(self._plural_language, int(n))
        return entry.get(form, entry["other"]).format(n=self.number(n), **values)

    def forms(self, key: str) -> tuple[str, str]:
        """The raw ("one", "other") forms of a plural entry, placeholders kept (for a page's script to fill)."""
        entry = self._entry(key)
        return entry.get("one", entry["other"]), entry["other"]

    def plural_forms(self, key: str) -> list[tuple[str, str]]:
        """Every (CLDR category, raw text) of a plural entry, placeholders kept, "one" and "other" always (a page's
        script picks the category with the browser's Intl.PluralRules: Russian "5 сюжетов" is "many", not "other")."""
        entry = self._entry(key)
        forms = {"one": entry.get("one", entry["other"]), **entry}
        return sorted(forms.items(), key=lambda kv: ("zero", "one", "two", "few", "many", "other").index(kv[0]))

    def reason(self, reason: str, name: str | None = None) -> str:
        """A For you reason after "Why:" (``local:us``, "United States" -> "news from United States"); a reason of an
        unknown kind, or one that should name something and has no name, as its words."""
        kind, _, what = reason.partition(":")
        kind = "follows-source" if kind == "follows" and what.startswith("source/") else kind
        key = REASON_MESSAGES.get(kind)
        if key is None or (kind in ("local", "follows") and not name):
            return (f"{kind} {name}" if name else reason.replace(":", " ", 1)).replace("_", " ")
        return self(key, name=name)

    def problems(self) -> list[tuple[str, str]]:
        """(code as an attribute name, text) of every problem a page's script may show: ``rate-limited``, ..."""
        return [(code.replace("_", "-"), self(key)) for code, key in PROBLEM_MESSAGES.items()]

    @property
    def zero_is_one(self) -> bool:
        return plural_form(self._plural_language, 0) == "one"

    @property
    def direction(self) -> str:
        """``rtl`` for a right-to-left language (ar, he), else ``ltr``: the pages' ``dir`` attribute."""
        return "rtl" if self.locale.character_order == "right-to-left" else "ltr"

    def number(self, n) -> str:
        return format_decimal(n, locale=self.locale)

    def datetime(self, ts: str) -> str:
        """``2025-03-01T11:50:00Z`` -> the locale's medium date and short time in UTC ("1 мар. 2025 г. 11:50 UTC")."""
        try:
            dt = datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(UTC)
        except (TypeError, ValueError):
            return ts
        day = format_date(dt, "medium", locale=self.locale)
        return f"{day} {format_time(dt, 'short', tzinfo=UTC, locale=self.locale)} UTC"

    def date(self, day: str) -> str:
        """``2025-03-01`` (a timeline's day, UTC) -> the locale's long date ("1 March 2025", "1 марта 2025 г.")."""
        try:
            return format_date(datetime.fromisoformat(str(day)[:10]).date(), "long", locale=self.locale)
        except (TypeError, ValueError):
            return day

    def coverage(self, articles: int, publishers: int) -> str:
        """ "12 articles from 7 publishers", "1 article from 1 publisher" in the page's language."""
        return self(
            "coverage", articles=self.plural("articles", articles), publishers=self.plural("publishers", publishers)
        )


@functools.cache
def messages(lang: str | None) -> Messages:
    return Messages(lang)
