"""`newsroom run` end to end: the sample world, ingest, the streaming stories job and the origin on this machine.

Runs the README's main command twice on one data directory: the first run must put the world's breaking earthquake
on top of us-en, labelled, and link the world's translated pair across languages on the served story pages; the
second (a resume, the world going on with new news) must settle what the first left in flight, store news of its
own, and not store or assign anything twice. Figures (latency) are printed, not asserted: this machine is shared.

Each run is stopped the way a user stops it (Ctrl-C, which still writes --report) as soon as what it must show is
there, with a deadline (FIRST_RUN_DEADLINE_MIN, RESUMED_RUN_DEADLINE_MIN): the invariant is "eventually on top and
linked", not a latency. A fixed --minutes bound made the test fail on a loaded CI machine (the earthquake not yet
corroborated when the bound hit) and cost the full bound on a quiet one (the resumed run's fixed minute too).
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing

import pytest

from devtools import emulators
from stores import StoreConfig, open_stores

FIRST_RUN_DEADLINE_MIN = 8.0  # at normal load the first run shows everything in ~2 min; a loaded 2-core CI needs more
RESUMED_RUN_DEADLINE_MIN = 5.0  # the resumed run's goal usually takes well under a minute


def _run_cmd(data_dir, report) -> list[str]:
    cmd = [sys.executable, "-m", "pipelines.cli", "run", f"--data_dir={data_dir}", "--port=0"]
    return cmd + ["--progress_s=5", f"--report={report}"]


_BREAKING_QUAKE = re.compile(r"BREAKING on top: .*us-en: [^;|]*earthquake", re.IGNORECASE)


def _newsroom_run_until(data_dir, report, done, deadline_min: float):
    """``newsroom run`` until ``done(printed lines)`` holds (checked every 2 s while it runs), then Ctrl-C; at the
    deadline, Ctrl-C anyway and let the caller's assertions say what was missing. Returns (report, output)."""
    proc = subprocess.Popen(
        _run_cmd(data_dir, report), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
    )
    lines: list[str] = []
    errors: list[str] = []
    readers = [
        threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True),
        threading.Thread(target=lambda: errors.extend(iter(proc.stderr.readline, "")), daemon=True),
    ]
    for t in readers:
        t.start()
    deadline = time.time() + deadline_min * 60
    try:
        while time.time() < deadline and proc.poll() is None:
            time.sleep(2)
            if done(list(lines)):
                break
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for t in readers:
            t.join(timeout=10)
    out = "".join(lines)
    print(out[-4000:])
    assert proc.returncode == 0, "".join(errors)[-4000:]
    return json.loads(report.read_text()), out


def _shown(data_dir):
    """The first run's goal: the earthquake Breaking on top of us-en (printed by the run) and the translated pairs
    linked on their served story pages (checked on the run's stores)."""
    return lambda lines: any(_BREAKING_QUAKE.search(line) for line in lines) and _pairs_linked(data_dir)


def _resumed(data_dir, articles_before: int, started_ms: int):
    """The resumed run's goal: every page an earlier run left in the ingest outbox settled (stored, or
    dead-lettered) and an article stored that the earlier run had not: its ingest and stories job both went on."""

    def done(_lines) -> bool:
        try:
            with closing(sqlite3.connect(data_dir / "newsroom.sqlite3", timeout=5)) as db:
                held = db.execute("SELECT COUNT(*) FROM feeds_outbox WHERE first_seen_at < ?", (started_ms,)).fetchone()
                stored = db.execute("SELECT COUNT(*) FROM articles").fetchone()
        except sqlite3.Error:  # a busy database: next check
            return False
        return held[0] == 0 and stored[0] > articles_before

    return done


def _pairs_linked(data_dir) -> bool:
    """Whether every translated pair is linked both ways on its served story pages now (False while not yet known)."""
    try:
        return all(
            b in links_a and a in links_b for a, b, links_a, links_b in _served_links_of_translated_pairs(data_dir)
        )
    except (AssertionError, sqlite3.Error, OSError, KeyError, ValueError):  # not yet published, or a busy database
        return False


def _served_links_of_translated_pairs(data_dir) -> list[tuple[str, str, list, list]]:
    """For each translated pair of the sample world: (story id of the original, story id of the translation, the
    ``links`` of each one's served story page). The origin is built on the run's stores after the run."""
    from devtools.world.content import ARTICLES
    from schemas.pages import story_path
    from stores.profiles import open_profile_store
    from tests.serving.helpers import make_app

    config = StoreConfig(data_dir=str(data_dir))
    stores = open_stores(config)
    story_of: dict[str, str] = {}  # world article id -> story id, from the published coverage documents
    for name, version in stores.pointers.versions("story/").items():
        sid = name.split("/", 1)[1]
        doc = json.loads(stores.snapshots.get(story_path(sid, version)))
        for card in doc["articles"]:
            story_of[card["url"].rstrip("/").rsplit("/", 1)[-1]] = sid
    pairs = [(a["translation_of"], a["id"]) for a in ARTICLES if a.get("translation_of")]
    assert pairs, "the sample world publishes no translated pair"
    app = make_app(stores, open_profile_store(config))
    client = app.test_client()
    out = []
    try:
        for original, translation in pairs:
            assert original in story_of and translation in story_of, (original, translation, sorted(story_of))
            a, b = story_of[original], story_of[translation]
            page_a, page_b = client.get(f"/v1/stories/{a}"), client.get(f"/v1/stories/{b}")
            assert page_a.status_code == 200 and page_b.status_code == 200
            out.append((a, b, page_a.get_json()["links"], page_b.get_json()["links"]))
    finally:
        app.extensions["newsroom"].close()
    return out


@pytest.mark.emulator
@pytest.mark.timeout(1260)
def test_the_main_job_serves_the_breaking_story_links_a_translation_and_resumes_without_duplicates(tmp_path):
    try:
        emulators.find_binaries()
    except emulators.MissingBinaries as exc:
        pytest.skip(str(exc))
    data = tmp_path / "run"
    first, out = _newsroom_run_until(data, tmp_path / "first.json", _shown(data), FIRST_RUN_DEADLINE_MIN)
    assert "/v1/editions/us-en/sections/top" in out  # says where to look
    assert first["live_pages"] > 0 and first["stories"] > 0
    assert "earthquake" in first["breaking_on_top"].get("us-en", "").lower(), first
    assert first["release_to_page_n"] > 0
    assert first["fetch_requests_without_feed"] == 0, first  # burst pulls name publishers: each reaches its feeds
    for original, translation, links_of_original, links_of_translation in _served_links_of_translated_pairs(data):
        assert original != translation
        assert translation in links_of_original and original in links_of_translation, (
            original,
            translation,
            links_of_original,
            links_of_translation,
        )

    db = sqlite3.connect(data / "newsroom.sqlite3")
    members = db.execute("SELECT COUNT(*), COUNT(DISTINCT article_id) FROM story_members").fetchone()
    assert members[0] == members[1], "an article was assigned to two stories"
    articles = db.execute("SELECT COUNT(*) FROM articles").fetchone()[0]
    urls = db.execute("SELECT COUNT(*), COUNT(DISTINCT article_id) FROM articles").fetchone()
    db.close()

    # resume: the world continues its clock (world.json), so what it released keeps its dates and it goes on
    # releasing generated news; nothing of the first run is fetched or stored twice (tests/devtools/test_world.py).
    # It runs until it settled what the first run left held and stored news of its own (not a fixed minute).
    resumed = _resumed(data, articles, int(time.time() * 1000))
    second, _ = _newsroom_run_until(data, tmp_path / "second.json", resumed, RESUMED_RUN_DEADLINE_MIN)
    assert resumed([]), "the resumed run did not settle the first run's held pages and store news of its own"
    db = sqlite3.connect(data / "newsroom.sqlite3")
    again = db.execute("SELECT COUNT(*), COUNT(DISTINCT article_id) FROM story_members").fetchone()
    assert again[0] == again[1]
    after = db.execute("SELECT COUNT(*), COUNT(DISTINCT article_id) FROM articles").fetchone()
    assert after[0] == after[1] and after[0] >= articles, "the resumed run stored duplicates"
    assert urls[0] == urls[1]
    assert second["live_pages"] >= first["live_pages"] - 1  # the last good pages are still live
    print("first run:", json.dumps(first), "\nresumed run:", json.dumps(second))
