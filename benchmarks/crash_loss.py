"""How many claimed pages a ``kill -9`` of the stories job loses: the scenario of tests/pipelines/test_crash_replay.py
as a figure, for this tree and (copied there) any older one.

The sample world at 1x with 1,000 s released; ingest (embedded stores) polls every feed for 4 s and claims and
publishes each page; the stories job (hash embedder) runs in a child process that hangs while deciding its second
article and is killed with SIGKILL there; then ingest runs again for 3 s (``--replay_after_s=2``: an older tree
warns about the unknown flag and goes on) and the stories job runs to the end of the bus. Prints
``{"claimed": N, "lost": M}``: lost = claimed pages not in the article store under their canonical URL, leaving out
what the stories job rightly does not store (future-dated pages, robots-disallowed pages, the second URL of a wire
story's exact text). Measured 2026-12-06: 55daf5d {"claimed": 43, "lost": 40}; with the ingest outbox 43 / 0.

Usage: python benchmarks/crash_loss.py [--dir /tmp/crash_loss]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import sys, time
from pathlib import Path
from transforms.articles import dedupe

marker, real, calls = Path(sys.argv[1]), dedupe.decide, []

def decide(store, article):
    if calls:
        marker.write_text(article["fetched_url"])
        time.sleep(3600)
    calls.append(1)
    return real(store, article)

dedupe.decide = decide
from pipelines.stories import run
run(sys.argv[2:])
"""


def _kill_the_stories_job_while_deciding(root: Path, stories: list[str]) -> None:
    marker = root / "deciding"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(marker), *stories], env=env, start_new_session=True)
    while not marker.exists() and child.poll() is None:
        time.sleep(0.1)
    time.sleep(0.3)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def _lost(world, config, claimed: list[str]) -> list[str]:
    from stores import open_store
    from transforms.articles.urls import article_id, clean

    articles = open_store("articles", config)
    stored_families, unstored = set(), []
    for url in claimed:
        a = world.article_by_url(url)
        if articles.get(article_id(clean(a["url"]))) is None:
            unstored.append(a)
        else:
            stored_families.add(a.get("copy_of") or a["id"])
    skip = lambda a: a.get("future_days") or a.get("members") or (a.get("copy_of") or a["id"]) in stored_families  # noqa: E731
    return [a["url"] for a in unstored if not skip(a)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/crash_loss", help="Scratch directory (emptied first).")
    a = ap.parse_args(argv)
    from devtools.world.server import SampleWorld
    from pipelines.ingest_local import LocalIngest
    from pipelines.ingest_options import IngestOptions
    from pipelines.stories import run
    from stores import StoreConfig, open_store

    root = Path(a.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    data = root / "data"
    config = StoreConfig(data_dir=str(data))
    open_store("bus", config).ensure_subscription("items-raw", "stories-items-raw")
    world = SampleWorld(speed=1.0, start_s=time.time() - 1000).start()
    try:
        (root / "feeds.json").write_text(json.dumps({"feeds": world.feeds()}))
        flags = [f"--data_dir={data}", f"--feeds={root / 'feeds.json'}", "--min_host_delay_s=0", "--replay_after_s=2"]
        stories = [f"--data_dir={data}", "--embedder=hash", "--editions_only=us-en"]

        def ingest(seconds: float) -> None:
            job = LocalIngest.from_options(IngestOptions(flags), host_overrides=world.host_overrides)
            job.run(max_run_s=seconds)
            job.stop()

        ingest(4.0)
        with sqlite3.connect(data / "newsroom.sqlite3") as conn:
            keys = [json.loads(r[0])["key"] for r in conn.execute("SELECT claim FROM feeds_claims")]
        claimed = sorted(k for k in keys if "#" not in k)  # first fetches (a correction claims url#fingerprint)
        _kill_the_stories_job_while_deciding(root, stories)
        time.sleep(2.5)
        ingest(3.0)
        run(stories)
        print(json.dumps({"claimed": len(claimed), "lost": len(_lost(world, config, claimed))}), flush=True)
    finally:
        world.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
