"""One ``newsroom run`` per data directory, and no job outliving its run (devtools/runlock.py).

The refusal is checked on the real command: a second run on a directory whose lock is held exits 2 with one line,
before it starts anything. The sweep of an earlier run's leftover jobs runs on a real process recorded as a job.
The kill -9 of a whole run (its jobs stop within seconds): tests/devtools/test_run_crash.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from devtools.runlock import DataDirBusy, JobRecord, RunLock, start_time, tied_to_parent

REPO = Path(__file__).resolve().parents[2]


def test_a_second_run_on_a_held_data_dir_refuses_with_one_line(tmp_path):
    data = tmp_path / "run"
    with RunLock(data):
        done = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "run", f"--data_dir={data}", "--port=0", "--minutes=0.1"],
            cwd=str(REPO),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "in use by another newsroom run" in lines[0] and f"pid {os.getpid()}" in lines[0]
    assert not (data / "stack").exists() and not (data / "logs").exists()  # nothing was started
    with RunLock(data) as again:  # released by the holder: free again
        assert again.path.read_text().strip() == str(os.getpid())


def test_the_lock_is_exclusive_and_dies_with_its_holder(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import time; from devtools.runlock import RunLock; lock = RunLock({str(tmp_path)!r}).acquire(); time.sleep(60)",
        ],
        cwd=str(REPO),
    )
    try:
        deadline = time.monotonic() + 30
        busy = None
        while time.monotonic() < deadline and busy is None:
            try:
                RunLock(tmp_path).acquire().release()
                time.sleep(0.05)
            except DataDirBusy as exc:
                busy = exc
        assert busy is not None and busy.pid == holder.pid
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    RunLock(tmp_path).acquire().release()  # a killed holder leaves no stale lock


def test_a_tied_child_stops_when_its_parent_is_killed(tmp_path):
    """The parent (a python process) starts a child tied to it, then is killed with SIGKILL: the child goes."""
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, subprocess, sys, time\n"
            "from devtools.runlock import tied_to_parent\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], start_new_session=True,"
            " preexec_fn=tied_to_parent(os.getpid()))\n"
            f"open({str(pid_file)!r}, 'w').write(str(c.pid))\n"
            "time.sleep(120)\n",
        ],
        cwd=str(REPO),
    )
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the parent never started its child"
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert start_time(child) is not None
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
    deadline = time.monotonic() + 5
    while start_time(child) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert start_time(child) is None, "the child outlived its parent"


def test_the_next_run_stops_the_jobs_an_earlier_run_left(tmp_path):
    left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        JobRecord(tmp_path).add("stories", left.pid)
        record = JobRecord(tmp_path)
        record.path.write_text(
            record.path.read_text().replace("]", f', {{"name": "gone", "pid": {other.pid}, "start": 1}}]')
        )
        assert JobRecord(tmp_path).stop_leftovers() == [f"stories (pid {left.pid})"]
        assert left.wait(timeout=15) == -signal.SIGTERM
        assert other.poll() is None  # a recorded pid whose start time differs (recycled) is left alone
        assert JobRecord(tmp_path).stop_leftovers() == []  # forgotten once stopped
    finally:
        for p in (left, other):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_tied_to_parent_is_a_preexec_that_kills_an_orphan_at_once():
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], preexec_fn=tied_to_parent(os.getpid() + 10**6)
    )
    assert child.wait(timeout=10) == -signal.SIGTERM  # "its parent" was already gone when it started
