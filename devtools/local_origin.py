"""Run the origin under gunicorn and nginx as its CDN stand-in on loopback ports (tests and benchmarks).

Starts processes, never on fixed ports (the kernel picks free ones), 127.0.0.1 only. Each process leads its own
process group, is tied to its parent (PR_SET_PDEATHSIG: if the test or benchmark dies, the kernel stops it) and is
stopped by signalling its group by PID. Writes an nginx prefix directory (config, cache, logs) where it is told.

CDN purges (stores/cdn.py): the embedded purger queues requests in the ``cdn_purges`` table; :func:`apply_purges`
deletes the nginx cache files of their paths (every query-string variant; ``/prefix/*`` every key under it), and
:class:`PurgeWatcher` does it continuously (a thread polling the queue), as Cloud CDN applies invalidations. nginx
treats a cached entry whose file is gone as a miss: the next request goes to the origin (``X-Edge-Cache: MISS``).
"""

from __future__ import annotations

import ctypes
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote

TEMPLATE = Path(__file__).with_name("edge_nginx.conf")
# Cloud CDN's serve-while-stale of the shared pages' backend (terraform/modules/origin `serve_while_stale_sec`;
# tests/deploy/test_edge_policy.py checks they agree): how long past expiry the stand-in, like Cloud CDN, serves a
# stale page, while revalidating and while the origin fails.
SERVE_WHILE_STALE_S = 3600
REPO_ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # in the child, between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _spawn(cmd: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
            env=env,
            cwd=str(REPO_ROOT),
        )


def stop(proc: subprocess.Popen | None, grace: float = 5.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def wait_http(
    url: str, timeout: float, proc: subprocess.Popen | None = None, log: Path | None = None, status: int = 200
) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log else ""
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == status:
                    return
        except urllib.error.HTTPError as exc:
            last = exc.code
        except OSError as exc:
            last = exc
        time.sleep(0.05)
    raise RuntimeError(f"{url} not answering {status} after {timeout}s (last: {last})")


def start_origin(
    data_dir: str | os.PathLike,
    log: Path,
    port: int | None = None,
    workers: int = 2,
    threads: int = 8,
    worker_class: str | None = None,
    env: dict | None = None,
    access_log: Path | None = None,
    timeout: float = 60.0,
) -> tuple[subprocess.Popen, int]:
    """``newsroom serve`` on 127.0.0.1:port (embedded stores under ``data_dir``); returns once /readyz is 200.
    ``worker_class`` None: the one serving/worker/gunicorn.conf.py ships (what production runs)."""
    port = port or free_port()
    cmd = [
        sys.executable,
        "-m",
        "pipelines.cli",
        "serve",
        "--data_dir",
        str(data_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--threads",
        str(threads),
    ]
    if worker_class:
        cmd += ["--worker_class", worker_class]
    if access_log:
        cmd += ["--access_logfile", str(access_log)]
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.setdefault("PYTHONPATH", str(REPO_ROOT))
    proc = _spawn(cmd, log, full_env)
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz", timeout, proc, log)
    except BaseException:
        stop(proc)
        raise
    return proc, port


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.path.exists(p)), None
    )


def write_nginx_conf(
    prefix: Path,
    port: int,
    origin_port: int,
    static_dir: Path | None = None,
    access_log: bool = True,
    serve_while_stale: int = SERVE_WHILE_STALE_S,
) -> Path:
    prefix.mkdir(parents=True, exist_ok=True)
    for sub in ("tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi", "cache", "static"):
        (prefix / sub).mkdir(parents=True, exist_ok=True)
    user = f"user {getpass.getuser()};" if os.geteuid() == 0 else ""  # workers run as us, not as nobody
    conf = TEMPLATE.read_text()
    for key, value in {
        "USER": user,
        "PREFIX": str(prefix),
        "PORT": str(port),
        "ORIGIN_PORT": str(origin_port),
        "SERVE_WHILE_STALE": str(int(serve_while_stale)),
        "STATIC_DIR": str(static_dir or prefix / "static"),
        "ACCESS_LOG": f"{prefix}/access.log edge" if access_log else "off",
    }.items():
        conf = conf.replace(f"@@{key}@@", value)
    path = prefix / "nginx.conf"
    path.write_text(conf)
    return path


def start_nginx(
    prefix: Path,
    origin_port: int,
    static_dir: Path | None = None,
    port: int | None = None,
    access_log: bool = True,
    timeout: float = 15.0,
    serve_while_stale: int = SERVE_WHILE_STALE_S,
) -> tuple[subprocess.Popen, int]:
    binary = nginx_binary()
    if binary is None:
        raise FileNotFoundError("nginx is not installed (Debian: apt-get install -y nginx)")
    port = port or free_port()
    conf = write_nginx_conf(prefix, port, origin_port, static_dir, access_log, serve_while_stale)
    log = prefix / "stderr.log"
    proc = _spawn([binary, "-p", str(prefix), "-c", str(conf)], log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"nginx exited with {proc.returncode}:\n{log.read_text(errors='replace')}"
                f"\n{(prefix / 'error.log').read_text(errors='replace') if (prefix / 'error.log').exists() else ''}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, port
        except OSError:
            time.sleep(0.05)
    stop(proc)
    raise RuntimeError(f"nginx not listening on {port} after {timeout}s")


# ------------------------------------------------------------------------------------------------ CDN purges
def _cache_key(path: Path) -> str | None:
    """The ``KEY:`` line nginx writes in a cache file's header (``$uri$is_args$args`` here)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    start = head.find(b"\nKEY: ")
    if start < 0:
        return None
    end = head.find(b"\n", start + 6)
    return head[start + 6 : end if end >= 0 else None].decode("utf-8", "replace")


def _matches(key: str, path: str) -> bool:
    """``path`` is percent-encoded (stores.cdn.public_paths), the key holds nginx's decoded ``$uri``: a trailing
    ``*`` (never encoded) is the wildcard, the rest is compared decoded."""
    if path.endswith("*"):
        return key.startswith(unquote(path[:-1]))
    path = unquote(path)
    return key == path or key.startswith(path + "?")


def apply_purges(cache_dir: Path, paths) -> int:
    """Delete the cache files under ``cache_dir`` whose key is one of ``paths`` (with any query string) or under a
    ``/prefix/*`` of them; returns how many were deleted."""
    paths = list(paths)
    deleted = 0
    for f in Path(cache_dir).rglob("*"):
        if not f.is_file():
            continue
        key = _cache_key(f)
        if key is not None and any(_matches(key, p) for p in paths):
            try:
                f.unlink()
                deleted += 1
            except FileNotFoundError:
                pass
    return deleted


class PurgeWatcher:
    """Applies the embedded purge queue (stores.cdn.QueuedPurger of ``data_dir``) to the nginx cache under
    ``prefix`` every ``interval`` seconds, from the requests queued after it started (``from_start``: all of
    them). :meth:`apply_pending` does one round (tests call it directly); :meth:`stop` ends the thread.

    Each request is applied twice: at once, and again ``settle_s`` later (default: the origin's pointer watch
    interval, 2 s, plus a margin). A purge queued right after a pointer moved can reach the edge before the origin
    has reloaded the page; a request in that gap would cache the old page again for its whole TTL."""

    def __init__(self, data_dir, prefix: Path, interval: float = 0.2, from_start: bool = False, settle_s=2.5):
        from stores import StoreConfig
        from stores.cdn import QueuedPurger
        from stores.embedded import Database

        self.purger = QueuedPurger(Database(StoreConfig(data_dir=str(data_dir)).embedded_db))
        self.cache = Path(prefix) / "cache"
        self.interval = interval
        pending = self.purger.pending()
        self.last_id = 0 if from_start or not pending else pending[-1][0]
        self.applied = 0  # cache files deleted so far
        self.settle_s = settle_s
        self._again: list[tuple[float, tuple]] = []  # (monotonic time due, paths) of the second passes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def apply_pending(self) -> int:
        with self._lock:
            deleted, now = 0, time.monotonic()
            due = [paths for at, paths in self._again if at <= now]
            self._again = [(at, paths) for at, paths in self._again if at > now]
            for paths in due:
                deleted += apply_purges(self.cache, paths)
            for request_id, request in self.purger.pending(self.last_id):
                deleted += apply_purges(self.cache, request.paths)
                self._again.append((now + self.settle_s, request.paths))
                self.last_id = request_id
            self.applied += deleted
            return deleted

    def start(self) -> PurgeWatcher:
        self._thread = threading.Thread(target=self._run, name="edge-purges", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.apply_pending()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
