"""The local Google Cloud stack: Pub/Sub, Bigtable and GCS emulators for development and tests.

``newsroom stack up|down|status`` and the pytest fixtures (tests/conftest.py) use the same code here.

Reads: the emulator binaries (see :func:`find_binaries`: the gcloud SDK's Pub/Sub jar and ``cbtemulator``, and the
``gcp-storage-emulator`` script of the virtualenv; each overridable by an environment variable).
Writes: ``{data_dir}/stack/state.json`` (pids, ports, project) and one log file per emulator next to it, so that
``down`` and ``status`` work from another process than ``up``.

Design choices (measured facts in ../shared/docs/LOCAL_STACK.md):

- The binaries are started directly, not through ``gcloud beta emulators ...``: the gcloud wrappers fork children
  that survive when the wrapper is killed. Each emulator is the leader of its own process group and is stopped by
  signalling that group (SIGTERM, then SIGKILL after a grace period), so nothing is orphaned.
- Ports are picked free by the kernel (bind to port 0) and the emulators listen on 127.0.0.1 only. If an emulator
  dies at start-up (a port taken between our probe and its bind), it is restarted on another port.
- Readiness is probed, never assumed: Pub/Sub answers ``Ok`` on ``GET /``, Bigtable accepts a TCP connection, GCS
  answers 200 on ``GET /storage/v1/b``.
- Emulators started for a test session are tied to the starting process (PR_SET_PDEATHSIG): if pytest is killed,
  the kernel stops them. Those started by ``newsroom stack up`` outlive the command on purpose.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

DEFAULT_PROJECT = "newsroom-local"
DEFAULT_INSTANCE = "newsroom"
DEFAULT_BUCKET = "newsroom-snapshots"
DEFAULT_SDK_ROOT = "/usr/lib/google-cloud-sdk"
EMULATORS = ("pubsub", "bigtable", "gcs")

# Environment variables that override where each binary is found.
ENV_SDK_ROOT = "CLOUDSDK_ROOT"
ENV_JAVA = "NEWSROOM_JAVA"
ENV_PUBSUB_JAR = "NEWSROOM_PUBSUB_EMULATOR_JAR"
ENV_CBTEMULATOR = "NEWSROOM_BIGTABLE_EMULATOR"
ENV_GCS_EMULATOR = "NEWSROOM_GCS_EMULATOR"

STOP_GRACE_S = 5.0


class StackError(RuntimeError):
    """An emulator failed to start or to become ready."""


class MissingBinaries(StackError):
    """One or more emulator binaries are missing; the message says which and how to get them."""


@dataclass(frozen=True)
class Binaries:
    java: str
    pubsub_jar: str
    cbtemulator: str
    gcs_emulator: str

    def command(self, name: str, port: int) -> list[str]:
        if name == "pubsub":
            return [
                self.java,
                "-Xms64m",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-jar",
                self.pubsub_jar,
                "--host=127.0.0.1",
                f"--port={port}",
            ]
        if name == "bigtable":
            return [self.cbtemulator, "-host=127.0.0.1", f"-port={port}"]
        if name == "gcs":
            return [self.gcs_emulator, "start", "--host=127.0.0.1", f"--port={port}", "--in-memory"]
        raise ValueError(f"unknown emulator {name!r}; known: {', '.join(EMULATORS)}")


def sdk_root(environ: dict | None = None) -> str:
    """The gcloud SDK root: $CLOUDSDK_ROOT, else the SDK the ``gcloud`` on PATH belongs to, else the Debian
    package's path. The SDK of ``gcloud`` is read from its resolved location ({root}/bin/gcloud) when that holds a
    ``platform`` folder, and asked from ``gcloud info`` otherwise (which costs ~2 s of Python start-up)."""
    environ = os.environ if environ is None else environ
    if environ.get(ENV_SDK_ROOT):
        return environ[ENV_SDK_ROOT]
    gcloud = shutil.which("gcloud", path=environ.get("PATH"))
    if gcloud:
        beside = Path(os.path.realpath(gcloud)).parent.parent
        if (beside / "platform").is_dir():
            return str(beside)
        try:
            out = subprocess.run(
                [gcloud, "info", "--format=value(installation.sdk_root)"],
                capture_output=True,
                text=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
            )
            root = out.stdout.strip()
            if out.returncode == 0 and root and os.path.isdir(root):
                return root
        except (OSError, subprocess.SubprocessError):
            pass
    return DEFAULT_SDK_ROOT


def find_binaries(environ: dict | None = None) -> Binaries:
    """Locate the three emulators and Java. Raises MissingBinaries naming every missing piece and how to get it."""
    environ = os.environ if environ is None else environ
    missing: list[str] = []
    root = None

    def root_dir() -> str:
        nonlocal root
        if root is None:
            root = sdk_root(environ)
        return root

    java = environ.get(ENV_JAVA) or (
        os.path.join(environ["JAVA_HOME"], "bin", "java") if environ.get("JAVA_HOME") else None
    )
    java = java or shutil.which("java", path=environ.get("PATH"))
    if not java or not os.access(java, os.X_OK):
        missing.append(
            "java (Java 17+ runs the Pub/Sub emulator): install a JRE "
            f"(Debian: apt-get install openjdk-17-jre-headless) "
            f"or set ${ENV_JAVA}"
        )

    jar = environ.get(ENV_PUBSUB_JAR)
    if not jar:
        pattern = os.path.join(root_dir(), "platform", "pubsub-emulator", "lib", "cloud-pubsub-emulator-*-all.jar")
        jars = sorted(glob.glob(pattern))
        jar = jars[-1] if jars else None
    if not jar or not os.path.isfile(jar):
        missing.append(
            f"the Pub/Sub emulator jar (looked in {root_dir()}/platform/pubsub-emulator/lib/): "
            f"`gcloud components install pubsub-emulator` (or apt-get install google-cloud-cli-pubsub-emulator), "
            f"or set ${ENV_PUBSUB_JAR}; the SDK root comes from ${ENV_SDK_ROOT} or `gcloud info`"
        )

    cbt = environ.get(ENV_CBTEMULATOR) or os.path.join(root_dir(), "platform", "bigtable-emulator", "cbtemulator")
    if not os.access(cbt, os.X_OK):
        missing.append(
            f"the Bigtable emulator ({cbt}): `gcloud components install bigtable` "
            f"(or apt-get install google-cloud-cli-bigtable-emulator), or set ${ENV_CBTEMULATOR}"
        )

    gcs = environ.get(ENV_GCS_EMULATOR)
    if not gcs:
        candidate = Path(sys.executable).parent / "gcp-storage-emulator"
        gcs = str(candidate) if candidate.exists() else shutil.which("gcp-storage-emulator", path=environ.get("PATH"))
    if not gcs or not os.access(gcs, os.X_OK):
        missing.append(
            f"the GCS emulator (gcp-storage-emulator, a PyPI package): `{sys.executable} -m pip install "
            f"gcp-storage-emulator` (part of `pip install -e '.[test]'`), or set ${ENV_GCS_EMULATOR}"
        )
    if missing:
        raise MissingBinaries("cannot start the local cloud stack; missing:\n  - " + "\n  - ".join(missing))
    return Binaries(java=java, pubsub_jar=jar, cbtemulator=cbt, gcs_emulator=gcs)


@dataclass
class EmulatorProcess:
    name: str
    pid: int
    port: int
    command: list[str]
    log: str


@dataclass
class StackState:
    """What ``up`` started: written to ``state.json`` so another process can stop or inspect it."""

    project: str
    emulators: dict[str, EmulatorProcess] = field(default_factory=dict)
    instance: str = DEFAULT_INSTANCE
    bucket: str = DEFAULT_BUCKET

    def env(self) -> dict[str, str]:
        """The environment variables the Google Cloud client libraries read to find the emulators."""
        e = self.emulators
        return {
            "PUBSUB_EMULATOR_HOST": f"127.0.0.1:{e['pubsub'].port}",
            "BIGTABLE_EMULATOR_HOST": f"127.0.0.1:{e['bigtable'].port}",
            "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{e['gcs'].port}",
            "GOOGLE_CLOUD_PROJECT": self.project,
        }

    def exports(self) -> str:
        return "\n".join(f"export {k}={v}" for k, v in self.env().items())

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> StackState:
        raw = json.loads(text)
        emulators = {k: EmulatorProcess(**v) for k, v in raw.pop("emulators", {}).items()}
        return cls(emulators=emulators, **raw)


def state_dir(data_dir: str | os.PathLike) -> Path:
    return Path(data_dir) / "stack"


def _state_file(data_dir: str | os.PathLike) -> Path:
    return state_dir(data_dir) / "state.json"


def load_state(data_dir: str | os.PathLike) -> StackState | None:
    try:
        return StackState.from_json(_state_file(data_dir).read_text())
    except FileNotFoundError:
        return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: the session finaliser still stops the group
        pass


_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # probes never go through an HTTP proxy


def _probe(name: str, port: int) -> bool:
    try:
        if name == "bigtable":
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        path = "/" if name == "pubsub" else "/storage/v1/b"
        with _LOCAL.open(f"http://127.0.0.1:{port}{path}", timeout=1.0) as resp:
            body = resp.read()
            return resp.status == 200 and (name != "pubsub" or body.strip() == b"Ok")
    except (OSError, ValueError):
        return False


def is_alive(proc: EmulatorProcess) -> bool:
    """True if ``proc.pid`` still runs the emulator we started (guards against a recycled pid)."""
    try:
        os.kill(proc.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    try:
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode(errors="replace")
        stat = Path(f"/proc/{proc.pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust the pid
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    return f"{proc.port}" in cmdline


def _tail(path: str, lines: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop_group(proc: EmulatorProcess, popen: subprocess.Popen | None = None) -> None:
    if not is_alive(proc):
        if popen is not None:
            popen.poll()
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline:
        if popen is not None and popen.poll() is not None:
            break
        if popen is None and not is_alive(proc):
            break
        time.sleep(0.05)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group: children of the emulator too
    except ProcessLookupError:
        pass
    if popen is not None:
        try:
            popen.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass


def _launch(name: str, binaries: Binaries, sdir: Path, tie_to_parent: bool) -> tuple[EmulatorProcess, subprocess.Popen]:
    port = free_port()
    cmd = binaries.command(name, port)
    log = sdir / f"{name}.log"
    with open(log, "ab") as out:
        popen = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own session and process group: stopped as a group, no terminal signals
            preexec_fn=_die_with_parent if tie_to_parent else None,
            close_fds=True,
        )
    return EmulatorProcess(name=name, pid=popen.pid, port=port, command=cmd, log=str(log)), popen


def _wait_ready(proc: EmulatorProcess, popen: subprocess.Popen, timeout: float) -> int | None:
    """Wait until the emulator answers. Returns None when ready; raises StackError if it runs but never answers;
    returns its exit status if it died (typically a port taken between our probe and its bind)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = popen.poll()
        if code is not None:
            return code
        if _probe(proc.name, proc.port):
            return None
        time.sleep(0.05)
    raise StackError(
        f"{proc.name} emulator not ready on 127.0.0.1:{proc.port} after {timeout:.0f}s; "
        f"log {proc.log}:\n{_tail(proc.log)}"
    )


# Popen handles of emulators started by this process (lets stop() reap them instead of leaving zombies).
_POPENS: dict[int, subprocess.Popen] = {}


def start(
    data_dir: str | os.PathLike,
    project: str = DEFAULT_PROJECT,
    *,
    instance: str = DEFAULT_INSTANCE,
    bucket: str = DEFAULT_BUCKET,
    timeout: float = 90.0,
    tie_to_parent: bool = False,
    environ: dict | None = None,
) -> StackState:
    """Start the three emulators (or return the running stack recorded under ``data_dir``) and wait until each
    answers. Raises MissingBinaries / StackError; on failure nothing started here is left running."""
    current = load_state(data_dir)
    if current is not None:
        if all(n in current.emulators and is_alive(current.emulators[n]) for n in EMULATORS) and all(
            _probe(n, current.emulators[n].port) for n in EMULATORS
        ):
            return current
        stop(data_dir)  # a half-dead stack: start clean
    binaries = find_binaries(environ)
    sdir = state_dir(data_dir)
    sdir.mkdir(parents=True, exist_ok=True)
    state = StackState(project=project, instance=instance, bucket=bucket)

    def launch(name: str) -> None:
        proc, popen = _launch(name, binaries, sdir, tie_to_parent)
        _POPENS[proc.pid] = popen
        state.emulators[name] = proc
        _state_file(data_dir).write_text(state.to_json())  # recorded at once: `down` can stop a partial stack

    try:
        for name in EMULATORS:  # all three start in parallel (the JVM takes longest)
            launch(name)
        for name in EMULATORS:
            for _attempt in range(3):
                proc = state.emulators[name]
                code = _wait_ready(proc, _POPENS[proc.pid], timeout)
                if code is None:
                    break
                _stop_group(proc, _POPENS.pop(proc.pid, None))
                error = f"{name} emulator exited with status {code} at start; log {proc.log}:\n{_tail(proc.log)}"
                launch(name)
            else:
                raise StackError(error)
    except BaseException:
        stop(data_dir)
        raise
    return state


def stop(data_dir: str | os.PathLike) -> list[str]:
    """Stop every emulator recorded under ``data_dir`` (by process group) and forget the state. Returns the names
    of the emulators that were still running."""
    state = load_state(data_dir)
    if state is None:
        return []
    stopped = []
    for name, proc in state.emulators.items():
        if is_alive(proc):
            stopped.append(name)
        _stop_group(proc, _POPENS.pop(proc.pid, None))
    try:
        _state_file(data_dir).unlink()
    except FileNotFoundError:
        pass
    return stopped


def status(data_dir: str | os.PathLike) -> dict[str, dict]:
    """``{name: {"pid", "port", "alive", "ready", "log"}}`` of the stack recorded under ``data_dir`` ({} if none)."""
    state = load_state(data_dir)
    if state is None:
        return {}
    out = {}
    for name in EMULATORS:
        proc = state.emulators.get(name)
        if proc is None:
            out[name] = {"pid": None, "port": None, "alive": False, "ready": False, "log": None}
            continue
        alive = is_alive(proc)
        out[name] = {
            "pid": proc.pid,
            "port": proc.port,
            "alive": alive,
            "ready": alive and _probe(name, proc.port),
            "log": proc.log,
        }
    return out


def provision(config) -> None:
    """Create what ``config`` (a gcp StoreConfig) needs: Bigtable tables with the families and GC rules of
    schemas.tables.TABLES, the snapshot bucket, and the topics of schemas.tables.TOPICS (all idempotent)."""
    from stores import gcp

    gcp.provision(config)


def stack_config(state: StackState, namespace: str = "", data_dir: str = ".newsroom"):
    """The gcp StoreConfig that points at this stack (the env vars of ``state.env()`` must be set)."""
    from stores import StoreConfig

    return StoreConfig(
        backend="gcp",
        data_dir=data_dir,
        project=state.project,
        bigtable_instance=state.instance,
        bucket=state.bucket,
        namespace=namespace,
    )


# ---------------------------------------------------------------------------------------------------------------
# `newsroom stack up|down|status`


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=["up", "down", "status"], help="start+provision, stop, or inspect")
    parser.add_argument(
        "--data_dir",
        default=".newsroom",
        help="Where the stack's state file and logs live ({data_dir}/stack). Default: .newsroom",
    )
    parser.add_argument(
        "--project",
        default=None,
        help=f"Project id the emulators serve. Default: $GOOGLE_CLOUD_PROJECT or {DEFAULT_PROJECT}.",
    )
    parser.add_argument("--bigtable_instance", default=DEFAULT_INSTANCE, help=f"Default: {DEFAULT_INSTANCE}.")
    parser.add_argument("--snapshot_bucket", default=DEFAULT_BUCKET, help=f"Default: {DEFAULT_BUCKET}.")
    parser.add_argument(
        "--namespace",
        default="",
        help="Also provision the tables and topics of this namespace. Default: '' (production names).",
    )
    parser.add_argument(
        "--timeout", type=float, default=90.0, help="Seconds to wait for each emulator to answer. Default: 90."
    )


def main(args) -> int:
    if args.action == "down":
        stopped = stop(args.data_dir)
        print(f"stopped: {', '.join(stopped)}" if stopped else "no local stack was running", file=sys.stderr)
        return 0
    if args.action == "status":
        st = status(args.data_dir)
        if not st:
            print(f"no local stack recorded under {state_dir(args.data_dir)}", file=sys.stderr)
            return 1
        for name, s in st.items():
            state = "ready" if s["ready"] else ("running, not answering" if s["alive"] else "stopped")
            print(f"{name:9s} pid {s['pid']}  127.0.0.1:{s['port']}  {state}  log {s['log']}")
        return 0 if all(s["ready"] for s in st.values()) else 1
    project = args.project or os.environ.get("GOOGLE_CLOUD_PROJECT") or DEFAULT_PROJECT
    try:
        state = start(
            args.data_dir, project, instance=args.bigtable_instance, bucket=args.snapshot_bucket, timeout=args.timeout
        )
    except MissingBinaries as exc:
        print(str(exc), file=sys.stderr)
        return 3
    except StackError as exc:
        print(f"local stack failed to start: {exc}", file=sys.stderr)
        return 1
    env = state.env()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        provision(stack_config(state, namespace=args.namespace, data_dir=args.data_dir))
    except Exception as exc:
        print(f"emulators are up but provisioning failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    for name, proc in state.emulators.items():
        print(f"{name:9s} pid {proc.pid}  127.0.0.1:{proc.port}  ready", file=sys.stderr)
    print(
        f"# provisioned: Bigtable instance {state.instance}, bucket {state.bucket}, topics; use --backend=gcp "
        f"--bigtable_instance={state.instance} --snapshot_bucket={state.bucket}\n"
        f'# eval "$(newsroom stack up)" sets these; `newsroom stack down` stops the emulators',
        file=sys.stderr,
    )
    print(state.exports())
    return 0
