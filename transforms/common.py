"""What every stage shares: time units, the dead-letter tag and record, the story-change kinds, the URL length cap,
and the progress line of a long command (backfill, extract: done of total, rate, time left).

Plain Python (no Beam). One definition of each, so that a stage never spells a kind or a unit on its own:
the layering test keeps this module below every stage, and ``tests/transforms/test_common.py`` pins that no
stage redefines these names.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable

from schemas import codec

# Time units, in milliseconds (every timestamp on the bus and in the stores is epoch milliseconds).
SECOND_MS = 1_000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
WEEK_MS = 7 * DAY_MS

# The tagged output every DoFn routes unreadable input to (then the stage's dead-letter topic or file).
DEAD_LETTER = "dead_letter"

# The kinds of StoryChange records (schemas/avro/story_change.avsc); LINK comes from the cross-language linker.
NEW_STORY = "NEW_STORY"
ASSIGN = "ASSIGN"
MERGE = "MERGE"
SPLIT = "SPLIT"
EXPIRE = "EXPIRE"
LINK = "LINK"
CHANGE_KINDS = (NEW_STORY, ASSIGN, MERGE, SPLIT, EXPIRE, LINK)  # = the ChangeKind enum's symbols
# Kinds that place one article in one story (the highest writer sequence number decides).
PLACEMENTS = (NEW_STORY, ASSIGN)

# Old news: an article whose stated publication time is more than this before it was first seen (a page published
# years ago and discovered today) is kept (archive, storylines, its story's article list) but is not news: it adds
# nothing to a story's coverage, velocity, freshness or publisher count, cannot make it live, Breaking or developing,
# and is never its first report. The design's published = min(stated, first seen) keeps a re-dated page from
# gaining; this keeps a rediscovered one from gaining. The ranker uses its live window (editions.json
# ranking.live_window_h, 48 h by default); the burst detector this default.
STALE_AFTER_MS = 48 * HOUR_MS


def is_stale(published_at: int | None, first_seen_at: int | None, window_ms: int = STALE_AFTER_MS) -> bool:
    """True when an article was published (stated, clamped) more than ``window_ms`` before it was first seen."""
    if published_at is None or first_seen_at is None:
        return False
    return int(first_seen_at) - int(published_at) > window_ms


MAX_DETAIL = 1_000
MAX_PAYLOAD = 65_536

# The longest URL kept or fetched anywhere: discovered (a feed's, sitemap's or front's links, a feed's hub and self
# links, a page's canonical claims, a redirect's Location) or submitted (a publisher's ping, a feed registry row, an
# operator's --url). Longer ones are dead-lettered (or refused) with reason ``url_too_long``, never stored, claimed or
# fetched. Why 2,048 characters: the sitemaps protocol caps <loc> there (and Google's news sitemaps with it), it is
# the length browsers and CDNs have long been safe with, and real article URLs stay far below it (the longest of
# the 6,136 article URLs in ../shared/data has 531); a 1 MB link on a front page was kept as a discovery before.
MAX_URL_CHARS = 2048
URL_TOO_LONG = "url_too_long"


def url_too_long(url: str | None) -> bool:
    """True when ``url`` is longer than :data:`MAX_URL_CHARS` characters."""
    return url is not None and len(url) > MAX_URL_CHARS


def url_excerpt(url: str, keep: int = 120) -> str:
    """A long URL as a dead letter's detail may quote it: its first ``keep`` characters and its length."""
    return f"{url[:keep]!r}... ({len(url)} characters > {MAX_URL_CHARS})"


def dead_letter(
    stage: str,
    reason: str,
    detail: str = "",
    key: str | None = None,
    payload=b"",
    at_ms: int = 0,
    message: str | None = None,
) -> dict:
    """A DeadLetter record (schemas/avro/dead_letter.avsc), the one way every stage builds them.

    ``payload`` is kept replayable where it can be: bytes as they are; a dict encoded as ``message`` (Avro) when
    given and valid, else as sorted JSON; anything else as its repr (cut to 64 KiB). ``detail`` is cut to
    1,000 characters.
    """
    if payload is None:
        payload = b""
    if isinstance(payload, dict):
        try:
            payload = (
                codec.encode(message, payload) if message else json.dumps(payload, sort_keys=True, default=str).encode()
            )
        except Exception:  # a record that does not even encode: keep what can be kept
            payload = json.dumps(payload, sort_keys=True, default=repr).encode("utf-8", "replace")
    elif not isinstance(payload, (bytes, bytearray, memoryview)):
        payload = repr(payload).encode("utf-8", "replace")[:MAX_PAYLOAD]
    return {
        "schema_version": 1,
        "stage": stage,
        "reason": reason,
        "detail": (detail or "")[:MAX_DETAIL],
        "key": key,
        "payload": bytes(payload),
        "at": int(at_ms),
    }


def dead_letter_json(record: dict) -> dict:
    """A DeadLetter record as JSON can hold it (payload as text), for the embedded dead-letter files."""
    record = dict(record)
    payload = record.get("payload") or b""
    record["payload"] = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload)
    return record


def progress_line(
    what: str, n: int, total: int | None, elapsed_s: float, since: tuple[int, float] | None = None
) -> str:
    """``what: n of total (pct, rate/s, ~eta left)``, ``done`` in place of the estimate at the total; the estimate
    is the rest at the rate so far, or, with
    ``since`` = (count, elapsed) of an earlier line, at the rate since that line (the start-up excluded: a model
    loading or a pipeline starting is no rate to plan with). No rate yet (the first line, nothing done since): the
    line says so instead of guessing a time."""
    n0, e0 = since or (0, 0.0)
    done = bool(total) and n >= total
    if n <= n0 or elapsed_s - e0 <= 0:
        share = f" of {total} ({n / total:.0%}, " if total else " ("
        return f"{what}: {n}{share}{'done' if done else 'no rate yet, no estimate'})"
    rate = (n - n0) / (elapsed_s - e0)
    if not total:
        return f"{what}: {n} ({rate:.0f}/s)"
    if done:
        return f"{what}: {n} of {total} ({n / total:.0%}, {rate:.0f}/s, done)"
    left = max(total - n, 0) / rate
    return f"{what}: {n} of {total} ({n / total:.0%}, {rate:.0f}/s, ~{format_duration(left)} left)"


class Progress:
    """The progress lines of one counted phase (:func:`progress_line`): call it with the count done so far; it
    emits at most one line every ``every_s`` seconds, and one when the count reaches ``total``. The first call
    starts the clock; the first line gives no estimate, and each later one the rate since the first line (start-up
    excluded). ``emit`` defaults to stderr; ``clock`` is injectable for tests."""

    def __init__(self, what: str, total: int | None, every_s: float = 5.0, emit=None, clock=time.monotonic):
        self.what, self.total, self.every_s, self.clock = what, total, every_s, clock
        self.emit = emit or (lambda line: print(line, file=sys.stderr, flush=True))
        self.t0: float | None = None
        self.last = 0.0
        self.base: tuple[int, float] | None = None

    def __call__(self, n: int) -> None:
        now = self.clock()
        if self.t0 is None:
            self.t0 = self.last = now
        if now - self.last >= self.every_s or (self.total and n == self.total):
            self.last = now
            since = self.base or (n, now - self.t0)
            self.emit(progress_line(self.what, n, self.total, now - self.t0, since))
            self.base = since


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``: the time left in the unit an analyst plans with."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def backoff_s(attempt: int, base_s: float, cap_s: float, rand: Callable[[], float] = random.random) -> float:
    """The pause before retry ``attempt`` (0 for the first retry) of an external call: exponential, capped, with
    "equal jitter" (half the step fixed, half drawn from ``rand()`` in [0, 1)), so callers that failed together (the
    workers of a job whose publisher hiccupped) do not retry in lockstep, while every retry still waits at least half
    its step. ``rand`` is injectable for deterministic tests."""
    step = min(cap_s, base_s * (2 ** max(0, attempt)))
    return step / 2 + rand() * step / 2
