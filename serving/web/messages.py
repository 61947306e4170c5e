"""The reader web pages' interface strings, localised per edition language from one small catalogue.

Reads ``serving/web/messages.json`` (package data: a mapping language -> key -> text); writes nothing. Why a JSON
catalogue and not gettext: four languages and ~60 short strings, no build step, and a test can check every language
has every key of English. English is the fallback of every missing key and of every language the catalogue lacks,
so a new edition language shows English until its strings are added (one block of the file).

Plural forms: an entry may be ``{"one": ..., "other": ...}``; :meth:`Messages.plural` picks the form by the
language's rule (CLDR: French counts 0 and 1 as "one", English, Spanish and German only 1). Placeholders are
``{name}`` (``str.format``); everything is escaped by the templates' autoescape like any other text.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

FALLBACK = "en"
ZERO_IS_ONE = frozenset({"fr"})  # CLDR plural rule "one": i = 0,1
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


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


@functools.cache
def catalogue() -> dict[str, dict]:
    text = resources.files("serving.web").joinpath("messages.json").read_text(encoding="utf-8")
    return {k: v for k, v in json.loads(text).items() if k != "doc"}


def plural_form(language: str, n: int) -> str:
    if language in ZERO_IS_ONE:
        return "one" if n in (0, 1) else "other"
    return "one" if n == 1 else "other"


class Messages:
    """The strings of one language (``lang`` may be a BCP 47 tag: ``es-ES`` reads ``es``)."""

    def __init__(self, lang: str | None):
        self.language = (lang or FALLBACK).split("-")[0].split("_")[0].lower()
        cat = catalogue()
        self._own = cat.get(self.language, {})
        self._fallback = cat[FALLBACK]

    def _entry(self, key: str):
        found = self._own.get(key)
        if found is None:
            found = self._fallback.get(key)
        if found is None:
            raise KeyError(f"no interface string {key!r} in serving/web/messages.json")
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
        form = plural_form(self.language, int(n)) if self.language in catalogue() else plural_form(FALLBACK, int(n))
        return entry.get(form, entry["other"]).format(n=n, **values)

    def forms(self, key: str) -> tuple[str, str]:
        """The raw ("one", "other") forms of a plural entry, placeholders kept (for a page's script to fill)."""
        entry = self._entry(key)
        return entry["one"], entry["other"]

    @property
    def zero_is_one(self) -> bool:
        return self.language in ZERO_IS_ONE

    def coverage(self, articles: int, publishers: int) -> str:
        """ "12 articles from 7 publishers", "1 article from 1 publisher" in the page's language."""
        return self(
            "coverage", articles=self.plural("articles", articles), publishers=self.plural("publishers", publishers)
        )


@functools.cache
def messages(lang: str | None) -> Messages:
    return Messages(lang)
