"""Namespaces: two backfills into one namespace, one after the other or at the same time,
minted the same story ids, merged unrelated events into one story, and both exited 0.

Now (stores/runs.py, pipelines/backfill.py): a namespace that holds a run is refused (exit 2, the message says
to pass --resume) unless the caller resumes it; the claim is one compare-and-set, so of two runs started at once
exactly one proceeds; a resumed run mints ids above every id the namespace ever applied, and a run superseded by
a resume stops writing (exit 1). Real components: the embedded stores, FnApiRunner, the ``newsroom`` command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest


def source_root() -> Path:
    """The tree the tests import (the subprocesses run the same code)."""
    import pipelines

    return Path(pipelines.__file__).resolve().parents[1]


QUAKE = [
    (
        "Magnitude 7.3 earthquake strikes Valparaiso Chile",
        "Chilean officials in Valparaiso counted damage after the quake.",
    ),
    ("Sbarro files for Chapter 11 bankruptcy again", "Pizza chain Sbarro filed for Chapter 11 protection again."),
]
VOLCANO = [
    ("Volcano erupts near Grindavik in Iceland", "Lava flows toward the town of Grindavik on the Reykjanes peninsula."),
    ("Titanfall launches on Xbox One at 792p", "Respawn confirmed Titanfall runs at 792p on the Xbox One console."),
]


def articles(path: Path, prefix: str, events) -> list[str]:
    """Untimed articles (decided in file order from the same start time: the case where ids collided)."""
    rows = []
    for k in range(3):
        for e, (title, text) in enumerate(events):
            rows.append(
                {
                    "id": f"{prefix}{e}{k}",
                    "language": "en",
                    "title": f"{title} {['report', 'update', 'live'][k]}",
                    "text": text,
                    "published_at": None,
                    "publisher": f"Pub {k}",
                }
            )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [r["id"] for r in rows]


def argv(inp: Path, out: Path, store: Path, *extra) -> list[str]:
    return [
        f"--input={inp}",
        f"--output={out}",
        "--embedder=hash",
        "--exact_index",
        "--namespace=shared",
        f"--data_dir={store}",
        *extra,
    ]


def backfill(*args, **kw) -> int:
    from pipelines.backfill import run

    return run(list(args), **kw)


def assignments(out: Path) -> dict[str, int]:
    path = out / "assignments.jsonl"
    return (
        {a["article_id"]: a["story_id"] for a in map(json.loads, path.read_text().splitlines())}
        if path.exists()
        else {}
    )


def stores_of(store: Path):
    from stores import StoreConfig, open_stores

    return open_stores(StoreConfig(data_dir=str(store), namespace="shared"))


def assert_no_story_mixes_runs(store: Path, runs: dict[str, set[str]]):
    """Every story row of the namespace holds the articles of one run only, and no id is shared by two runs."""
    stories = stores_of(store).stories
    owner = {aid: name for name, ids in runs.items() for aid in ids}
    conn = stories.db.connect()
    for (sid,) in conn.execute("SELECT story_id FROM stories"):
        row = stories.get_story(sid)
        members = set(row["members"])
        assert len({owner[a] for a in members}) <= 1, f"story {sid} mixes runs: {sorted(members)}"


@pytest.fixture
def files(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    return {"a": (a, set(articles(a, "a", QUAKE))), "b": (b, set(articles(b, "b", VOLCANO)))}


def test_second_run_into_a_namespace_is_refused_and_resume_continues_with_fresh_ids(tmp_path, files, capsys):
    store = tmp_path / "store"
    (a, a_ids), (b, b_ids) = files["a"], files["b"]
    assert backfill(*argv(a, tmp_path / "oa", store)) == 0
    first = assignments(tmp_path / "oa")
    assert set(first) == a_ids

    # One after the other, without --resume: refused, clearly, and nothing written.
    assert backfill(*argv(b, tmp_path / "ob", store)) == 2
    err = capsys.readouterr().err
    assert "already holds a run" in err and "--resume" in err
    assert assignments(tmp_path / "ob") == {}
    assert stores_of(store).pointers.get("run") == 1

    # With --resume it continues: epoch 2, ids above every id of the first run, no story shared.
    assert backfill(*argv(b, tmp_path / "ob", store, "--resume")) == 0
    second = assignments(tmp_path / "ob")
    assert set(second) == b_ids
    assert min(second.values()) > max(first.values()), "a resumed run re-minted an id of the earlier run"
    assert not set(first.values()) & set(second.values())
    manifest = json.loads((tmp_path / "ob" / "manifest.json").read_text())
    assert manifest["store"]["run_epoch"] == 2
    assert_no_story_mixes_runs(store, {"a": a_ids, "b": b_ids})


def test_concurrent_runs_through_the_newsroom_command_one_is_refused(tmp_path, files):
    store = tmp_path / "store"
    env = {**os.environ, "PYTHONPATH": str(source_root())}
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "pipelines.cli", "backfill", *argv(inp, tmp_path / f"o{name}", store)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, (inp, _) in files.items()
    }
    results = {name: (p.wait(timeout=240), p.stderr.read()) for name, p in procs.items()}
    codes = sorted(code for code, _ in results.values())
    assert codes == [0, 2], {n: (c, e[-600:]) for n, (c, e) in results.items()}
    loser = next(n for n, (c, _) in results.items() if c == 2)
    winner = next(n for n, (c, _) in results.items() if c == 0)
    assert "already holds a run" in results[loser][1] and "--resume" in results[loser][1]
    assert assignments(tmp_path / f"o{loser}") == {}
    assert set(assignments(tmp_path / f"o{winner}")) == files[winner][1]
    assert_no_story_mixes_runs(store, {n: ids for n, (_, ids) in files.items()})


def test_a_run_superseded_by_a_resume_stops_writing(tmp_path, files, capsys):
    """Concurrent with --resume: run A holds the namespace (claimed, not yet writing) when B resumes it; B owns the
    namespace from then on, and A stops before its first store write (exit 1) instead of interleaving with B."""
    from stores.runs import claim

    store = tmp_path / "store"
    (a, _a_ids), (b, b_ids) = files["a"], files["b"]
    pointers = stores_of(store).pointers
    a_claim = claim(pointers, "shared")  # A started: it has its epoch
    assert a_claim.epoch == 1
    assert backfill(*argv(b, tmp_path / "ob", store, "--resume")) == 0  # B resumes while A runs
    assert pointers.get("run") == 2
    assert backfill(*argv(a, tmp_path / "oa", store), run_claim=a_claim) == 1
    assert "claimed by a later run" in capsys.readouterr().err
    stories = stores_of(store).stories
    members = set()
    for (sid,) in stories.db.connect().execute("SELECT story_id FROM stories"):
        members |= set(stories.get_story(sid)["members"])
    assert members == b_ids, "the superseded run wrote to the namespace"


def test_claim_race_has_exactly_one_winner(tmp_path):
    """The claim itself, raced by 8 threads on one namespace: one epoch, seven refusals."""
    from stores.runs import NamespaceTaken, claim

    store = tmp_path / "store"
    stores_of(store)  # create the database before the race
    barrier = threading.Barrier(8)
    won, refused = [], []

    def one():
        pointers = stores_of(store).pointers
        barrier.wait()
        try:
            won.append(claim(pointers, "shared").epoch)
        except NamespaceTaken:
            refused.append(1)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert won == [1] and len(refused) == 7
