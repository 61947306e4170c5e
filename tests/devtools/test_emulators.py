"""``newsroom stack`` (devtools/emulators.py): finding the binaries, the clear message when they are missing, and a
full up/status/down cycle driven from separate processes (what a developer does in a shell)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from devtools import emulators
from pipelines import cli
from stores import StoreConfig, open_stores


@pytest.fixture
def nothing_installed(tmp_path, monkeypatch):
    """An environment where no emulator can be found."""
    env = {
        "PATH": str(tmp_path / "empty-bin"),
        emulators.ENV_SDK_ROOT: str(tmp_path / "no-sdk"),
        emulators.ENV_JAVA: str(tmp_path / "no-java"),
        emulators.ENV_GCS_EMULATOR: str(tmp_path / "no-gcs-emulator"),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    return env


def test_missing_binaries_are_named_with_how_to_get_them(nothing_installed):
    with pytest.raises(emulators.MissingBinaries) as info:
        emulators.find_binaries()
    msg = str(info.value)
    needles = ("java", "Pub/Sub emulator jar", "Bigtable emulator", "gcp-storage-emulator", "gcloud components install")
    for needle in needles:
        assert needle in msg, needle


def test_cli_up_without_binaries_fails_clearly(nothing_installed, tmp_path, capsys):
    code = cli.main(["stack", "up", "--data_dir", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert code != 0
    assert "missing" in err and "Pub/Sub emulator jar" in err
    assert emulators.load_state(tmp_path / "d") is None  # nothing half-started left behind


def test_cli_status_and_down_without_a_stack(tmp_path, capsys):
    assert cli.main(["stack", "status", "--data_dir", str(tmp_path)]) == 1
    assert cli.main(["stack", "down", "--data_dir", str(tmp_path)]) == 0
    assert "no local stack" in capsys.readouterr().err


def test_sdk_root_override_and_binary_overrides(tmp_path):
    jar = tmp_path / "my-pubsub.jar"
    jar.write_bytes(b"")
    exe = tmp_path / "fake"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    env = {
        "PATH": "/nonexistent",
        emulators.ENV_SDK_ROOT: str(tmp_path / "sdk"),
        emulators.ENV_JAVA: str(exe),
        emulators.ENV_PUBSUB_JAR: str(jar),
        emulators.ENV_CBTEMULATOR: str(exe),
        emulators.ENV_GCS_EMULATOR: str(exe),
    }
    assert emulators.sdk_root(env) == str(tmp_path / "sdk")
    b = emulators.find_binaries(env)
    assert (b.java, b.pubsub_jar, b.cbtemulator, b.gcs_emulator) == (str(exe), str(jar), str(exe), str(exe))
    cmd = b.command("pubsub", 1234)
    assert cmd[:5] == [str(exe), "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-jar"] and "--port=1234" in cmd
    assert b.command("bigtable", 1) == [str(exe), "-host=127.0.0.1", "-port=1"]
    assert b.command("gcs", 2) == [str(exe), "start", "--host=127.0.0.1", "--port=2", "--in-memory"]


def test_state_round_trips():
    procs = {n: emulators.EmulatorProcess(n, 10 + i, 2000 + i, ["x"], "l") for i, n in enumerate(emulators.EMULATORS)}
    st = emulators.StackState(project="p", emulators=procs)
    again = emulators.StackState.from_json(st.to_json())
    assert again == st
    assert again.env() == {
        "PUBSUB_EMULATOR_HOST": "127.0.0.1:2000",
        "BIGTABLE_EMULATOR_HOST": "127.0.0.1:2001",
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:2002",
        "GOOGLE_CLOUD_PROJECT": "p",
    }


def _run(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "stack", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=os.path.dirname(os.path.dirname(emulators.__file__)),
    )


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.emulator
def test_stack_up_in_one_process_status_and_down_in_another(tmp_path, emulator_stack, monkeypatch, capsys):
    # emulator_stack only guarantees the binaries exist (skip otherwise); this test runs its own second stack.
    # `up` runs as a separate command that exits (its emulators must outlive it); status/down run here.
    data_dir = str(tmp_path / "dev")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_EMULATOR_HOST")}
    up = _run("up", "--data_dir", data_dir, "--project", "dev-proj", env=env)
    state = emulators.load_state(data_dir)
    pids = [p.pid for p in state.emulators.values()] if state else []
    try:
        assert up.returncode == 0, up.stderr
        exports = dict(line[len("export ") :].split("=", 1) for line in up.stdout.splitlines())
        assert set(exports) == {
            "PUBSUB_EMULATOR_HOST",
            "BIGTABLE_EMULATOR_HOST",
            "STORAGE_EMULATOR_HOST",
            "GOOGLE_CLOUD_PROJECT",
        }
        assert exports["STORAGE_EMULATOR_HOST"].startswith("http://127.0.0.1:")
        assert exports["GOOGLE_CLOUD_PROJECT"] == "dev-proj"
        assert all(os.getpgid(pid) == pid for pid in pids)  # each emulator leads its own process group

        assert cli.main(["stack", "status", "--data_dir", data_dir]) == 0
        assert capsys.readouterr().out.count("ready") == 3

        # `up` provisioned the default layout: the stores work at once with the printed variables.
        for k, v in exports.items():
            monkeypatch.setenv(k, v)
        s = open_stores(StoreConfig(backend="gcp", bucket=emulators.DEFAULT_BUCKET))
        assert s.pointers.compare_and_set("en-us/top", None, 1)
        s.snapshots.put("pages/en-us/top/v1.json", b"{}")
        assert s.bus.publish("story-changes", b"x")

        assert cli.main(["stack", "up", "--data_dir", data_dir]) == 0  # idempotent: the running stack is reused
        assert emulators.load_state(data_dir).emulators == state.emulators
    finally:
        down = cli.main(["stack", "down", "--data_dir", data_dir])
    assert down == 0
    assert all(_gone(pid) for pid in pids), "an emulator survived `stack down`"
    assert cli.main(["stack", "status", "--data_dir", data_dir]) == 1
