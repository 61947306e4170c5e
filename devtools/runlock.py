"""``newsroom run``'s hold on its data directory, and the child jobs tied to it.

- :class:`RunLock`: an exclusive ``flock`` on ``{data_dir}/run.lock`` (holding the pid), taken before anything
  starts. A second ``newsroom run`` on the same directory finds it held and refuses (:class:`DataDirBusy`, one line
  and exit status 2 in devtools/run.py). The kernel drops the lock when the holder dies, however it dies, so a
  killed run never leaves a stale lock; the descriptor is not inherited by the children (Python opens files
  non-inheritable), so only the parent holds it.
- :func:`tied_to_parent`: the ``preexec_fn`` of every child job: PR_SET_PDEATHSIG makes the kernel send SIGTERM
  to the child when the parent dies (a ``kill -9`` included), and a parent that died before the child got there is
  caught by comparing ``getppid()``. The jobs' own children follow them (the extraction worker and Beam's
  forkserver exit on the EOF of their pipe to the job).
- :class:`JobRecord`: the pid and kernel start time of every child, in ``{data_dir}/run-jobs.json``. Should a child
  outlive its parent anyway (PDEATHSIG is Linux-only), the next run that takes the lock stops the recorded jobs
  still running (the start time guards against a recycled pid) and says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import time
from pathlib import Path

LOCK_NAME = "run.lock"
JOBS_NAME = "run-jobs.json"
STOP_GRACE_S = 10.0


class DataDirBusy(Exception):
    """Another ``newsroom run`` holds the data directory; ``pid`` is its process id (None when unreadable)."""

    def __init__(self, data_dir: str, pid: int | None):
        self.data_dir, self.pid = data_dir, pid
        holder = f"pid {pid}" if pid else "another process"
        super().__init__(
            f"{data_dir} is in use by another newsroom run ({holder}); stop it first or pass another --data_dir"
        )


class RunLock:
    """``with RunLock(data_dir):`` or :meth:`acquire` / :meth:`release`. Raises :class:`DataDirBusy`."""

    def __init__(self, data_dir: str | os.PathLike):
        self.data_dir = str(data_dir)
        self.path = Path(data_dir, LOCK_NAME)
        self._file = None

    def acquire(self) -> RunLock:
        Path(self.data_dir).mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+")  # noqa: SIM115 - held open for the lifetime of the run
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            text = f.read().strip()
            f.close()
            raise DataDirBusy(self.data_dir, int(text) if text.isdigit() else None) from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        self._file = f
        return self

    def release(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.seek(0)
                self._file.truncate()
            self._file.close()  # closing the descriptor drops the lock
            self._file = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _prctl():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except Exception:  # not Linux: JobRecord's sweep at the next run is what stops an orphan
        return None


_PRCTL = _prctl()  # resolved here: the preexec_fn runs between fork and exec, where importing could deadlock


def tied_to_parent(parent_pid: int):
    """A ``preexec_fn``: the child gets SIGTERM when ``parent_pid`` dies (runs between fork and exec; the parent's
    thread that forks must be one that lives as long as the child should: PDEATHSIG follows the forking thread)."""

    def preexec() -> None:
        if _PRCTL is None:
            return
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent_pid:  # the parent died before the prctl: nobody would signal us
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks after boot (/proc/PID/stat field 22), None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    if fields[0] == "Z":  # a zombie is gone for our purpose
        return None
    return int(fields[19])


class JobRecord:
    """The child jobs of the run holding the lock, kept in ``{data_dir}/run-jobs.json``."""

    def __init__(self, data_dir: str | os.PathLike):
        self.path = Path(data_dir, JOBS_NAME)
        self.jobs: list[dict] = []

    def add(self, name: str, pid: int) -> None:
        self.jobs.append({"name": name, "pid": pid, "start": start_time(pid)})
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.jobs))
        tmp.replace(self.path)

    def stop_leftovers(self) -> list[str]:
        """Stop the jobs an earlier run recorded that still run (same pid and start time): SIGTERM to each one's
        process group, SIGKILL after STOP_GRACE_S. Returns ``name (pid N)`` of each one stopped; forgets them."""
        try:
            earlier = json.loads(self.path.read_text())
        except (OSError, ValueError):
            earlier = []
        alive = [j for j in earlier if j.get("start") is not None and start_time(int(j["pid"])) == j["start"]]
        for j in alive:
            with contextlib.suppress(OSError):
                os.killpg(int(j["pid"]), signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and any(start_time(int(j["pid"])) == j["start"] for j in alive):
            time.sleep(0.1)
        for j in alive:
            if start_time(int(j["pid"])) == j["start"]:
                with contextlib.suppress(OSError):
                    os.killpg(int(j["pid"]), signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.path.unlink()
        return [f"{j['name']} (pid {j['pid']})" for j in alive]
