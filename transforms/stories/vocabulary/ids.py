"""Story ids and change ids: minted by the per-language writer, deterministic under replay.

Story id layout (63 bits, always a positive signed 64-bit integer)::

    [ first-seen milliseconds since the epoch : 43 bits ][ counter : 12 bits ][ language : 8 bits ]

- Time-ordered: ids sort by the first-seen time of the story (a split's new half by the repair time).
- The writer mints ``max(candidate, last_minted + 1 << 8)``: ids of one writer strictly increase, so two stories
  first seen in the same millisecond get consecutive counters; past 4,096 in one millisecond the counter carries
  into the time bits, which keeps ids unique and ordered (the id then claims a slightly later millisecond).
- The low 8 bits name the writer's language (:data:`LANGUAGE_CODES`; unknown codes hash into 200..254), so two
  language writers never mint the same id without coordinating.
- Deterministic: the writer decides in a deterministic order and ``last_minted`` is part of its durable state
  (the largest live id of the language, see :meth:`transforms.stories.writer.cluster.StoryClusterer.restore`).

Change ids: ``"{language}:{seq:012d}:{kind}"`` hashed to 24 hex characters with the seq in clear in front
(``"en-000000000042-ASSIGN"`` style, readable in logs), so a replay of the same decision has the same id.
"""

from __future__ import annotations

import zlib

TIME_SHIFT = 20
COUNTER_SHIFT = 8
LANGUAGE_MASK = (1 << COUNTER_SHIFT) - 1
MAX_MS = (1 << 43) - 1

# ISO 639-1 codes of the languages we expect, each with a fixed slot (never renumber: ids embed them).
_LANGS = [
    "und",
    "en",
    "es",
    "it",
    "nl",
    "de",
    "fr",
    "pt",
    "ru",
    "zh",
    "ja",
    "ko",
    "ar",
    "hi",
    "bn",
    "pa",
    "ur",
    "id",
    "ms",
    "vi",
    "th",
    "tr",
    "pl",
    "uk",
    "ro",
    "hu",
    "cs",
    "sk",
    "sl",
    "hr",
    "sr",
    "bg",
    "el",
    "sv",
    "da",
    "no",
    "nb",
    "nn",
    "fi",
    "et",
    "lv",
    "lt",
    "he",
    "fa",
    "sw",
    "ta",
    "te",
    "mr",
    "gu",
    "kn",
    "ml",
    "si",
    "ne",
    "my",
    "km",
    "lo",
    "tl",
    "ca",
    "eu",
    "gl",
    "is",
    "ga",
    "cy",
    "mt",
    "sq",
    "mk",
    "bs",
    "af",
    "zu",
    "xh",
    "am",
    "ha",
    "yo",
    "ig",
    "so",
    "mn",
    "kk",
    "uz",
    "az",
    "ka",
    "hy",
    "be",
    "lb",
    "mul",
]
LANGUAGE_CODES: dict[str, int] = {code: i for i, code in enumerate(_LANGS)}


def language_code(language: str) -> int:
    code = LANGUAGE_CODES.get((language or "und").lower())
    if code is not None:
        return code
    return 200 + zlib.crc32(language.encode()) % 55


def candidate_id(first_seen_ms: int, language: str) -> int:
    ms = min(max(int(first_seen_ms), 0), MAX_MS)
    return (ms << TIME_SHIFT) | language_code(language)


def mint(first_seen_ms: int, language: str, last_minted: int) -> int:
    """The next story id of ``language``'s writer for a story first seen at ``first_seen_ms``."""
    cand = candidate_id(first_seen_ms, language)
    if last_minted and cand <= last_minted:
        cand = last_minted + (1 << COUNTER_SHIFT)
    return cand


def first_seen_ms(story_id: int) -> int:
    """The millisecond an id claims (the story's first-seen time unless the counter carried)."""
    return story_id >> TIME_SHIFT


def id_language_code(story_id: int) -> int:
    return story_id & LANGUAGE_MASK


def change_id(language: str, seq: int, kind: str) -> str:
    """Deterministic change id: the same (writer, seq, kind) always gives the same id."""
    digest = zlib.crc32(f"{language}:{seq}:{kind}".encode()) & 0xFFFFFFFF
    return f"{language}-{seq:012d}-{kind}-{digest:08x}"
