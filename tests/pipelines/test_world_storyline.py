"""The sample world's storyline, end to end: E12's plant opening and E14's election over its water bills
(``STORYLINE_EPISODES``, devtools/world/content.py) go through the stories transforms with the embedder ``newsroom
run`` uses (the default: the pair is written against its scores), the writer and the repair keep them as two
stories, the storyline stage links them, the ranker writes the storyline's page and the origin built on those
stores serves it with both episodes, newest first.

Before E14 every storyline of a local run had one episode, so no story page linked a storyline.

The bounded stories job has no storyline stage (pipelines/stories.py ``storylining``: only a streaming run has
one), so the world's English news goes through ``newsroom backfill --snapshots``, which runs the same transforms and
the same storyline stage tick by tick and feeds its StorylineChanges to the ranker as the streaming job does.
"""

from __future__ import annotations

import json

from devtools.world.content import ARTICLES, STORYLINE_EPISODES
from stores import StoreConfig, open_stores

START_MS = 1_709_294_400_000
SPEED = 10.0  # newsroom run's default: virtual seconds per wall second


def world_rows() -> list[dict]:
    """The world's English originals (wire copies carry their original's text) as backfill input rows, each
    published when the world releases it."""
    from devtools.world.server import _iso

    by_id = {a["id"]: a for a in ARTICLES}
    rows = []
    for a in sorted(ARTICLES, key=lambda a: (a["at"], a["id"])):
        if a["lang"] != "en" or a.get("members"):
            continue
        text = by_id[a["copy_of"]] if a.get("copy_of") else a
        rows.append(
            {
                "id": a["id"],
                "language": "en",
                "title": text["headline"],
                "text": "\n\n".join(text["paras"]),
                "published_at": _iso(START_MS + int(max(a["at"], 0) / SPEED * 1000)),
                "publisher": a["pub"],
                "url": f"https://{a['pub']}.test/{a['id']}",
            }
        )
    return rows


def test_the_world_makes_a_storyline_of_two_episodes_that_the_origin_serves(tmp_path):
    from pipelines.backfill import run
    from stores.profiles import open_profile_store
    from tests.serving.helpers import make_app

    src, out, root = tmp_path / "in.jsonl", tmp_path / "out", tmp_path / "snap"
    with open(src, "w", encoding="utf-8") as f:
        for row in world_rows():
            f.write(json.dumps(row) + "\n")
    assert run([f"--input={src}", f"--output={out}", f"--snapshots={root}"]) == 0  # --embedder auto

    story_of = {r["article_id"]: r["story_id"] for r in map(json.loads, open(out / "assignments.jsonl"))}
    episodes = [{story_of[a] for a in group} for group in STORYLINE_EPISODES]
    assert all(len(e) == 1 for e in episodes)  # each episode's reports are one story ...
    first, second = (e.pop() for e in episodes)
    assert first != second  # ... and the two are apart: two events
    (line,) = [r for r in map(json.loads, open(out / "storylines.jsonl")) if first in r["stories"]]
    assert second in line["stories"]  # one subject: one storyline
    storyline_id = line["storyline_id"]

    stores = open_stores(StoreConfig(data_dir=str(root)))
    assert stores.pointers.get(f"storyline/en/{storyline_id}") is not None
    app = make_app(stores, open_profile_store(StoreConfig(data_dir=str(tmp_path / "profiles"))))
    try:
        client = app.test_client()
        r = client.get(f"/v1/storylines/en/{storyline_id}")
        assert r.status_code == 200, r.get_data(as_text=True)
        doc = r.get_json()
        assert doc["episode_count"] >= 2
        assert [e["story_id"] for e in doc["episodes"]][:2] == [str(second), str(first)]  # newest first
        assert [e["publisher_count"] for e in doc["episodes"][:2]] == [2, 2]
        html = client.get(f"/storylines/en/{storyline_id}")
        assert html.status_code == 200 and f"/stories/{first}" in html.get_data(as_text=True)
    finally:
        app.extensions["newsroom"].close()
