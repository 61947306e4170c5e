"""Parse a polled body (feed, sitemap or section front) under a CPU budget, in a reusable child process.

Reads the fetched bytes of one poll; writes the :class:`transforms.ingest.feeds.ParsedFeed` that
:func:`transforms.ingest.feeds.parse_feed` or :func:`transforms.ingest.fronts.parse_front` makes of them, or raises
:class:`transforms.ingest.feeds.FeedError`, which the poller dead-letters (and backs the feed off) as it does any
malformed feed:

- ``parse_budget_exceeded`` when one parse used more than :func:`budget_s` seconds of CPU: the child is killed;
- ``parse_worker_died`` when the child died on the body;
- the parsers' own reasons (``malformed_feed``, ``hostile_markup``, ...).

Why: the 20 s fetch deadline bounds the download, not what the parsers do with up to 5 MiB of it. Elements whose
parse cost grows with the square of their attributes are refused before parsing (transforms/markup.py); the
budget stops whatever else a hostile body might make a parser do (transforms/budget.py). The normal cost is about
0.6 s of CPU per MiB of feed (the 31 real feeds of ../shared/data/feeds, benchmarks/parse_cost.py), so a feed at
the 5 MiB cap takes about 3 s; :data:`DEFAULT_BUDGET_S` (15 s) is five times that.

``NEWSROOM_PARSE_BUDGET_S`` sets the budget (seconds of CPU; ``0``: parse in-process, no budget). Workers are
pooled per process: a poll takes an idle child or starts one (each poll thread holds at most one at a time), and
gives it back; the children are daemons, ended with the process.
"""

from __future__ import annotations

import os
import threading

from transforms.budget import BudgetedWorker
from transforms.ingest.feeds import FeedError, parse_feed
from transforms.ingest.fronts import parse_front

DEFAULT_BUDGET_S = 15.0
BUDGET_REASON = "parse_budget_exceeded"
DIED_REASON = "parse_worker_died"

_IDLE: list = []
_LOCK = threading.Lock()


def budget_s() -> float:
    """The CPU budget of one parse, from ``NEWSROOM_PARSE_BUDGET_S`` (default 15; 0: none)."""
    value = os.environ.get("NEWSROOM_PARSE_BUDGET_S", "")
    try:
        return float(value) if value.strip() else DEFAULT_BUDGET_S
    except ValueError:
        return DEFAULT_BUDGET_S


def parse_polled(body: bytes, url: str, now_ms: int, headers: dict | None = None, kind: str | None = None):
    """In this process, no budget: a front (``kind="front"``) through parse_front, anything else through
    parse_feed (``kind`` "rss" / "atom" / "sitemap" a hint, None: the bytes decide)."""
    if kind == "front":
        return parse_front(body, url)
    return parse_feed(body, url, now_ms, headers, kind)


class _Parsers:
    """The child's target (one method, so the worker protocol's method name is fixed)."""

    def parse(self, body, url, now_ms, headers, kind):
        return parse_polled(body, url, now_ms, headers, kind)


def make_parsers() -> _Parsers:
    """In the child: warm the parsers up (their lazy imports are not charged to the first feed's budget)."""
    rss = b'<rss version="2.0"><channel><title>t</title><item><link>https://example.com/a</link></item></channel></rss>'
    parse_polled(rss, "https://example.com/feed", 0)
    parse_polled(
        b'<html><body><a href="/news/2026/01/01/a-b-c">a</a></body></html>', "https://example.com/", 0, None, "front"
    )
    return _Parsers()


def _rejected(reason: str, detail: str) -> FeedError:
    return FeedError(reason, detail)


class ParseWorker(BudgetedWorker):
    """One child that parses polled bodies under ``budget`` CPU seconds each."""

    preload = ("transforms.ingest.parsing", "feedparser", "defusedxml", "courlan")

    def __init__(self, budget: float):
        super().__init__(budget, make_parsers, (), _rejected, (BUDGET_REASON, DIED_REASON, "parse"))

    def parse(self, body: bytes, url: str, now_ms: int, headers: dict | None = None, kind: str | None = None):
        return self.call("parse", bytes(body), url, now_ms, dict(headers or {}), kind)


def parse(body: bytes, url: str, now_ms: int, headers: dict | None = None, kind: str | None = None):
    """:func:`parse_polled` under the budget (see the module docstring); FeedError on any refusal."""
    budget = budget_s()
    if budget <= 0:
        return parse_polled(body, url, now_ms, headers, kind)
    with _LOCK:
        stale = [w for w in _IDLE if w.budget_s != budget]  # the setting changed: their children go
        worker = next((w for w in _IDLE if w.budget_s == budget), None)
        for w in stale + [worker] * (worker is not None):
            _IDLE.remove(w)
    for w in stale:
        w.close()
    if worker is None:
        worker = ParseWorker(budget)
    try:
        return worker.parse(body, url, now_ms, headers, kind)
    finally:
        with _LOCK:
            _IDLE.append(worker)
