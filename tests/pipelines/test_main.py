"""`newsroom run` end to end: the sample world, ingest, the streaming stories job and the origin on this machine.

Runs the README's main command (bounded with --minutes) twice on one data directory: the first run must put the
world's breaking earthquake on top of us-en, labelled, and link the world's translated pair across languages on the
served story pages; the second (a resume, the world going on with new news) must not store or assign anything
twice. Figures (latency) are
printed, not asserted: this machine is shared.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from devtools import emulators
from stores import StoreConfig, open_stores


def _newsroom_run(data_dir, report, minutes):
    cmd = [
        sys.executable,
        "-m",
        "pipelines.cli",
        "run",
        f"--data_dir={data_dir}",
        "--port=0",
        f"--minutes={minutes}",
        "--progress_s=15",
        f"--report={report}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=minutes * 60 + 240)
    print(proc.stdout[-4000:])
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(report.read_text()), proc.stdout


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
@pytest.mark.timeout(900)
def test_the_main_job_serves_the_breaking_story_links_a_translation_and_resumes_without_duplicates(tmp_path):
    try:
        emulators.find_binaries()
    except emulators.MissingBinaries as exc:
        pytest.skip(str(exc))
    data = tmp_path / "run"
    first, out = _newsroom_run(data, tmp_path / "first.json", 3.5)
    assert "/v1/editions/us-en/sections/top" in out  # says where to look
    assert first["live_pages"] > 0 and first["stories"] > 0
    assert "earthquake" in first["breaking_on_top"].get("us-en", "").lower(), first
    assert first["release_to_page_n"] > 0
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
    # releasing generated news; nothing of the first run is fetched or stored twice (tests/devtools/test_world.py)
    second, _ = _newsroom_run(data, tmp_path / "second.json", 1.0)
    db = sqlite3.connect(data / "newsroom.sqlite3")
    again = db.execute("SELECT COUNT(*), COUNT(DISTINCT article_id) FROM story_members").fetchone()
    assert again[0] == again[1]
    after = db.execute("SELECT COUNT(*), COUNT(DISTINCT article_id) FROM articles").fetchone()
    assert after[0] == after[1] and after[0] >= articles, "the resumed run stored duplicates"
    assert urls[0] == urls[1]
    assert second["live_pages"] >= first["live_pages"] - 1  # the last good pages are still live
    print("first run:", json.dumps(first), "\nresumed run:", json.dumps(second))
