"""transforms/common.py is the one definition of time units, the dead-letter tag and record, and change kinds (no
other product module builds a DeadLetter dict by hand)."""

import ast
import pathlib

import pytest

from schemas import codec
from transforms import common

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = {"SECOND_MS", "MINUTE_MS", "HOUR_MS", "DAY_MS", "WEEK_MS", "DEAD_LETTER", "CHANGE_KINDS", "PLACEMENTS"}
SHARED |= {"MAX_URL_CHARS", "URL_TOO_LONG"}
SHARED_FUNCTIONS = {"dead_letter_json", "dead_letter_record"}
DEAD_LETTER_FIELDS = {"stage", "reason", "detail", "key", "payload"}  # a dict with these is a DeadLetter record


def redefinitions(source: str) -> set[str]:
    """Names of SHARED constants assigned, or shared builders defined, at a module's top level."""
    found = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name) and t.id in SHARED}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in SHARED:
            found.add(node.target.id)
        elif isinstance(node, ast.FunctionDef) and node.name in SHARED_FUNCTIONS:
            found.add(node.name)
    for node in ast.walk(ast.parse(source)):  # a DeadLetter record built by hand, at any depth
        keys = {k.value for k in getattr(node, "keys", ()) if isinstance(k, ast.Constant)}
        if isinstance(node, ast.Dict) and keys >= DEAD_LETTER_FIELDS:
            found.add("dead_letter record")
    return found


def test_the_checker_finds_a_planted_copy():
    assert redefinitions("MINUTE_MS = 60_000\nDEAD_LETTER: str = 'x'\ndef dead_letter_json(d): ...\n") == {
        "MINUTE_MS",
        "DEAD_LETTER",
        "dead_letter_json",
    }
    assert redefinitions("from transforms.common import MINUTE_MS\n") == set()
    planted = "def f(r):\n    return {'stage': 'x', 'reason': r, 'detail': '', 'key': None, 'payload': b''}\n"
    assert redefinitions(planted) == {"dead_letter record"}


def test_no_production_module_redefines_a_shared_name():
    offenders = {}
    for top in ("transforms", "pipelines", "serving", "stores", "schemas"):
        for path in (ROOT / top).rglob("*.py"):
            if path == ROOT / "transforms" / "common.py":
                continue
            found = redefinitions(path.read_text(encoding="utf-8"))
            if found:
                offenders[str(path.relative_to(ROOT))] = sorted(found)
    assert offenders == {}


def test_units_and_kinds():
    assert common.MINUTE_MS == 60_000 and common.HOUR_MS == 60 * common.MINUTE_MS
    assert common.DAY_MS == 24 * common.HOUR_MS and common.WEEK_MS == 7 * common.DAY_MS
    assert set(common.PLACEMENTS) <= set(common.CHANGE_KINDS)
    schema = codec.parsed_schema("StoryChange")
    kind = next(f for f in schema["fields"] if f["name"] == "kind")
    assert tuple(kind["type"]["symbols"]) == common.CHANGE_KINDS


def test_a_dead_letter_record_is_valid_and_bounded():
    rec = common.dead_letter("stories", "bad_json", "x" * 5000, "k1", {"a": 1}, 42)
    assert rec["detail"] == "x" * common.MAX_DETAIL and rec["payload"] == b'{"a": 1}' and rec["at"] == 42
    codec.decode("DeadLetter", codec.encode("DeadLetter", rec))
    odd = common.dead_letter("ingest", "weird", payload=object())
    assert odd["payload"].startswith(b"<object") and odd["key"] is None
    assert common.dead_letter_json(rec)["payload"] == '{"a": 1}'


def test_backoff_grows_is_capped_and_jittered_by_the_injected_random_source():
    from transforms.common import backoff_s

    assert [backoff_s(a, 0.5, 4.0, lambda: 0.0) for a in range(6)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert [backoff_s(a, 0.5, 4.0, lambda: 1.0) for a in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    draws = iter([0.1, 0.9])
    assert backoff_s(1, 0.5, 4.0, lambda: next(draws)) == pytest.approx(0.55)
    assert backoff_s(1, 0.5, 4.0, lambda: next(draws)) == pytest.approx(0.95)  # two callers, two pauses


def test_a_transient_page_fetch_retries_after_jittered_pauses():
    from transforms.ingest import poller
    from transforms.ingest.fetcher import FetchResult

    class Flaky:
        calls = 0

        def fetch(self, url):
            Flaky.calls += 1
            status = 503 if Flaky.calls < 3 else 200
            return FetchResult(url, url, status, {}, b"<p>", fetched_at_ms=1)

    d = poller.Discovery("https://p.example/a", None, None, "FEED", 1, "k", "o")
    slept = []
    raw, _ = poller.fetch_page(Flaky(), d, None, 1, sleep=slept.append, rand=lambda: 0.5)
    assert raw is not None and slept == [0.375, 0.75]


def test_progress_prints_at_most_every_interval_and_at_the_total():
    from transforms.common import Progress

    lines, now = [], [100.0]
    p = Progress("decided", 4, every_s=5.0, emit=lines.append, clock=lambda: now[0])
    p(1)  # the first call starts the clock: nothing to report yet
    now[0] = 102.0
    p(2)
    now[0] = 106.0
    p(3)
    now[0] = 107.0
    p(4)
    # the first line has no rate to estimate with (the start-up is not one); the next, the rate since the first
    assert lines == ["decided: 3 of 4 (75%, no rate yet, no estimate)", "decided: 4 of 4 (100%, 1/s, done)"]


def test_a_phase_done_at_its_first_line_says_done_not_no_estimate():
    """A small backfill's phases finish before their first line: "56 of 56 (100%, no rate yet, no estimate)" read
    as if the count were still running."""
    from transforms.common import Progress

    lines = []
    Progress("articles read", 56, emit=lines.append, clock=lambda: 0.0)(56)
    assert lines == ["articles read: 56 of 56 (100%, done)"]


def test_an_estimate_ignores_the_start_up():
    from transforms.common import Progress

    lines, now = [], [0.0]
    p = Progress("read", 1000, every_s=5.0, emit=lines.append, clock=lambda: now[0])
    p(1)
    now[0] = 30.0  # 30 s of start-up for 10 articles: at that rate the rest would take 50 minutes
    p(10)
    now[0] = 35.0
    p(510)  # then 100 articles a second
    assert lines == ["read: 10 of 1000 (1%, no rate yet, no estimate)", "read: 510 of 1000 (51%, 100/s, ~5s left)"]


def test_the_writer_reports_each_decided_article_to_its_progress():
    from tests.transforms.stories.synth import TEST_CONFIG, make_articles
    from transforms.stories.writer.cluster import StoryClusterer

    arts, _ = make_articles(n_events=2, per_event=3)
    w = StoryClusterer("en", model="test", config=TEST_CONFIG, exact_index=True)
    for a in arts:
        w.add(a)
    seen: list[int] = []
    w.advance(2**62, progress=seen.append)
    assert seen == list(range(1, 7))
