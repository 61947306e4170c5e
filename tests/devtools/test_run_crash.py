"""``kill -9`` of ``newsroom run`` in the middle of the world's releases: its jobs stop within seconds, and the
next run on the same data directory stores every page the killed one had claimed, once.

The killed run's bus (the Pub/Sub emulator, messages in memory) dies with it, and its stories job had acknowledged
what it was working on: without the ingest outbox (stores/feeds.py) those claimed pages were lost for good. The next
run republishes at start every page the outbox still holds (its bus is new), long before --replay_after_s (600 s).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtools import emulators
from devtools.runlock import start_time
from stores import StoreConfig

REPO = Path(__file__).resolve().parents[2]


def _start(data: Path, log: Path) -> subprocess.Popen:
    argv = [
        sys.executable,
        "-m",
        "pipelines.cli",
        "run",
        f"--data_dir={data}",
        "--port=0",
        "--embedder=hash",
        "--progress_s=2",
        "--userclusters_every_min=0",
    ]
    with open(log, "ab") as out:
        return subprocess.Popen(argv, cwd=str(REPO), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _query(data: Path, sql: str) -> list:
    try:
        with sqlite3.connect(data / "newsroom.sqlite3", timeout=5) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.Error:  # not created yet
        return []


def _wait(what: str, cond, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert proc.poll() is None, f"newsroom run exited ({proc.returncode}) before {what}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {what} within {timeout_s:g} s:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)


def _children(data: Path) -> dict[int, int]:
    """pid -> start time of the processes the run started: its jobs (their command line names the data dir) and
    the emulator (its state file)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"--data_dir={data}" in cmdline and "pipelines.cli" not in cmdline:
            found[int(proc.name)] = start_time(int(proc.name))
    state = emulators.load_state(data / "stack")
    for emulator in state.emulators.values() if state else ():
        found[emulator.pid] = start_time(emulator.pid)
    return {pid: start for pid, start in found.items() if start is not None}


def _claimed(data: Path) -> set[str]:
    keys = {json.loads(row[0])["key"] for row in _query(data, "SELECT claim FROM feeds_claims")}
    return {k for k in keys if "#" not in k}  # first fetches (a correction's claim is url#fingerprint)


def _world(data: Path):
    from devtools.world.server import SampleWorld

    doc = json.loads((data / "world.json").read_text())
    return SampleWorld(speed=doc["speed"], seed=doc["seed"], start_s=doc["start_s"]).start()


@pytest.mark.emulator
@pytest.mark.timeout(420)
def test_a_killed_run_leaves_no_job_behind_and_the_next_run_stores_what_it_claimed(tmp_path):
    from tests.pipelines.test_crash_replay import unstored_claims

    try:
        emulators.find_binaries()
    except emulators.MissingBinaries as exc:
        pytest.skip(str(exc))
    data, log = tmp_path / "run", tmp_path / "run.log"
    first = _start(data, log)
    try:
        stored = lambda: (_query(data, "SELECT COUNT(*) FROM articles") or [(0,)])[0][0]  # noqa: E731
        in_flight = lambda: (_query(data, "SELECT COUNT(*) FROM feeds_outbox") or [(0,)])[0][0]  # noqa: E731
        _wait("articles stored while others are in flight", lambda: stored() >= 3 and in_flight() >= 1, first, log, 240)
        children = _children(data)
        assert len(children) >= 3, children  # the stories and co-visitation jobs, the emulator
    finally:
        first.send_signal(signal.SIGKILL)  # the parent only, as `kill -9 PID` does
        first.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(start_time(p) == s for p, s in children.items()):
        time.sleep(0.2)
    assert [p for p, s in children.items() if start_time(p) == s] == [], "jobs outlived their killed run"

    claimed = _claimed(data)
    config = StoreConfig(data_dir=str(data))
    world = _world(data)
    second = _start(data, log)
    try:
        assert unstored_claims(config, claimed, world), "nothing was in flight when the run was killed"
        _wait(
            "every page the killed run claimed stored",
            lambda: not unstored_claims(config, claimed, world),
            second,
            log,
            240,
        )
    finally:
        world.stop()
        second.send_signal(signal.SIGINT)
        second.wait(timeout=120)
