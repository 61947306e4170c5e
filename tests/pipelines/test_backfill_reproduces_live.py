"""The invariant analysts need, on a store like `newsroom run`'s: the stories job decides the sample world's items
into the embedded stores (articles and stories); `newsroom backfill --from_store` of that article store,
`newsroom export assignments` of its story store and `newsroom diff` between the two: the same stories (ids
differ; membership alike). Slow (the stories job and a backfill, ~80 s)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stores import StoreConfig, open_stores
from tests.pipelines.test_stories_job import store_argv, world_items

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_backfilling_the_live_history_reproduces_the_live_stories(tmp_path, capsys):
    from pipelines.cli import main as newsroom

    config = StoreConfig(data_dir=str(tmp_path / "live"))
    stores = open_stores(config)
    stores.bus.ensure_subscription("items-raw", "stories-items-raw")
    for item in world_items(1_709_294_400_000):
        stores.bus.publish_record("items-raw", item)
    argv = [sys.executable, "-m", "pipelines.stories", *store_argv(config), "--embedder=hash", "--editions_only=us-en"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    bf = tmp_path / "bf"
    assert newsroom(["backfill", f"--from_store={config.data_dir}", f"--output={bf}", "--embedder=hash"]) == 0
    assert newsroom(["export", "assignments", f"--data_dir={config.data_dir}", f"--out={tmp_path / 'prod'}"]) == 0
    capsys.readouterr()
    assert newsroom(["diff", str(tmp_path / "prod"), str(bf), "--json", f"--html={tmp_path / 'd.html'}"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["articles_compared"] > 10 and d["only_in_a"] == d["only_in_b"] == 0
    c = d["counts"]  # measured: 44 articles, 23 stories, all unchanged
    assert c["unchanged"] == c["stories_a"] == c["stories_b"] > 5, [s["changes"] for s in d["languages"].values()]
