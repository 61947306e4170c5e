"""Secrets and settings: the origin never signs with a secret from the source, refuses to
start in production without its secrets, reads every documented NEWSROOM_* setting from its environment, and its
cursors hold across instances. Plus the defences that held (token and cursor signatures) pinned here."""

from __future__ import annotations

import json
import os
import re
import runpy
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import serving
from serving import ConfigError, create_app
from serving.http import cursor as cursors
from serving.http.auth import AuthError, HmacTokenVerifier, issue_token
from stores import StoreConfig, open_stores
from stores.profiles import open_profile_store
from tests.serving.helpers import EDITION, STORY, publish_world
from transforms.ingest import websub

ROOT = Path(__file__).resolve().parents[2]
SOURCE_SECRET = "newsroom-local-development-secret"  # the constant main signed with when no secret was set
PING_FEED = "http://agenciasur.test/rss/ultima-hora.xml"


def documented_settings() -> set[str]:
    """Every NEWSROOM_* name README.md, docs/ and terraform/ document."""
    names = set()
    files = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "terraform").rglob("*.tf")),
        *sorted((ROOT / "terraform").rglob("*.md")),
    ]
    for f in files:
        names |= set(re.findall(r"\bNEWSROOM_[A-Z0-9_]*[A-Z0-9]\b", f.read_text(encoding="utf-8")))
    return names


@pytest.fixture
def world(tmp_path):
    config = StoreConfig(data_dir=str(tmp_path / "data"))
    stores = open_stores(config)
    publish_world(stores, pool_size=30)
    return stores, open_profile_store(config), config


def _objects(world) -> dict:
    stores, profiles, config = world
    return {"NEWSROOM_STORES": stores, "NEWSROOM_PROFILE_STORE": profiles, "NEWSROOM_BACKGROUND": False}


def test_production_backend_without_secrets_refuses_to_start(world, monkeypatch):
    for key in ("NEWSROOM_TOKEN_SECRET", "NEWSROOM_CURSOR_SECRET"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ConfigError, match="NEWSROOM_TOKEN_SECRET and NEWSROOM_CURSOR_SECRET"):
        create_app({**_objects(world), "NEWSROOM_BACKEND": "gcp"})
    monkeypatch.setenv("NEWSROOM_TOKEN_SECRET", "t" * 32)
    with pytest.raises(ConfigError, match="NEWSROOM_CURSOR_SECRET"):
        create_app({**_objects(world), "NEWSROOM_BACKEND": "gcp"})
    monkeypatch.setenv("NEWSROOM_CURSOR_SECRET", "c" * 32)
    app = create_app({**_objects(world), "NEWSROOM_BACKEND": "gcp"})
    assert app.extensions["newsroom"].verifier.verify(issue_token("t" * 32, "alice")) == "alice"


def test_newsroom_serve_with_gcp_and_no_secrets_exits_with_the_reason():
    env = {k: v for k, v in os.environ.items() if k not in ("NEWSROOM_TOKEN_SECRET", "NEWSROOM_CURSOR_SECRET")}
    env["PYTHONPATH"] = str(ROOT)
    args = ["--backend", "gcp", "--project", "p", "--snapshot_bucket", "b", "--port", "9"]
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "serve", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("newsroom serve --backend gcp without secrets started instead of refusing")
    assert out.returncode != 0 and "NEWSROOM_TOKEN_SECRET" in out.stderr, out.stderr[-2000:]


def test_local_default_secret_is_random_persisted_and_not_from_the_source(world, monkeypatch):
    for key in ("NEWSROOM_TOKEN_SECRET", "NEWSROOM_CURSOR_SECRET"):
        monkeypatch.delenv(key, raising=False)
    stores, _, config = world
    data_dir = config.data_dir
    a = create_app({**_objects(world), "NEWSROOM_DATA_DIR": data_dir})
    b = create_app({**_objects(world), "NEWSROOM_DATA_DIR": data_dir})
    forged = issue_token(SOURCE_SECRET, "alice")
    for app in (a, b):
        with pytest.raises(AuthError):
            app.extensions["newsroom"].verifier.verify(forged)
    # One secret per data dir, shared by every worker and restart, readable by its owner only.
    assert a.extensions["newsroom"].verifier.secret == b.extensions["newsroom"].verifier.secret
    assert a.extensions["newsroom"].cursor_secret == b.extensions["newsroom"].cursor_secret
    path = Path(data_dir, "secrets.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(json.loads(path.read_text())["token"]) >= 32
    client = a.test_client()
    r = client.get(f"/v1/feed/for-you?edition={EDITION}", headers={"Authorization": f"Bearer {forged}"})
    assert r.status_code == 401


def test_cursors_hold_across_instances_of_one_serve_configuration(world, monkeypatch):
    """Two `newsroom serve` processes (say two Cloud Run instances, or a restart) on one configuration must accept
    each other's cursors: main generated a random cursor secret per serve, so a CDN spreading a reader's pages over
    instances broke them."""
    from pipelines.commands import serve as gunicorn_app

    stores, _, config = world
    import argparse

    parser = argparse.ArgumentParser()
    gunicorn_app.add_arguments(parser)
    args = parser.parse_args(["--data_dir", config.data_dir])
    apps = []
    for _ in range(2):
        env = gunicorn_app.environment(args, environ={})
        with monkeypatch.context() as m:
            for key in [k for k in os.environ if k.startswith("NEWSROOM_")]:
                m.delenv(key)
            for key, value in env.items():
                if key.startswith("NEWSROOM_"):
                    m.setenv(key, value)
            app = create_app({"NEWSROOM_BACKGROUND": False})
            app.extensions["newsroom"].watcher.poll_once()
            apps.append(app)
    first = apps[0].test_client().get(f"/v1/stories/{STORY}?limit=5").get_json()
    assert first["next_cursor"]
    r = apps[1].test_client().get(f"/v1/stories/{STORY}?limit=5&cursor={first['next_cursor']}")
    assert r.status_code == 200, r.get_json()


def _value_for(key: str, default, tmp_path):
    special = {
        "NEWSROOM_BACKEND": "gcp",
        "NEWSROOM_BUS_KIND": "pubsub",
        "NEWSROOM_DATA_DIR": str(tmp_path / "elsewhere"),
        "NEWSROOM_PING_KEYS": {"agencia-sur": "agencia-key-from-env"},
        "NEWSROOM_METRICS_EXPORTER": "memory",
    }
    if key in special:
        return special[key]
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 7
    if isinstance(default, float):
        return default + 0.5
    if isinstance(default, dict):
        return {"k": "v"}
    return f"value-of-{key.lower().replace('_', '-')}-0123456789abcdef"


def test_every_documented_setting_is_read_from_the_environment(world, tmp_path, monkeypatch):
    from serving.api.push import PUSH_DEFAULTS

    documented = documented_settings()
    assert {"NEWSROOM_TOKEN_SECRET", "NEWSROOM_CURSOR_SECRET", "NEWSROOM_PING_KEYS"} <= documented
    from transforms.stories.embed import cpu

    # Read elsewhere than the origin: the jobs' embedding path pin, the operator commands' audit identity and CDN
    # purge settings, the browser tests' chromium and artefact folder, the commands' traceback switch, the ingest
    # job's feed parse budget and User-Agent, the ANN kernel and profile pins, the stories benchmarks' vector cache,
    # the ranking workers' collector parking switch.
    elsewhere = {
        cpu.ENV: ROOT / "transforms" / "stories" / "embed" / "cpu.py",
        "NEWSROOM_OPERATOR": ROOT / "stores" / "audit.py",
        "NEWSROOM_CDN_URL_MAP": ROOT / "stores" / "cdn.py",
        "NEWSROOM_CDN_PURGE_RATE": ROOT / "stores" / "cdn.py",
        "NEWSROOM_CDN_PURGE_BURST": ROOT / "stores" / "cdn.py",
        "NEWSROOM_CHROMIUM": ROOT / "tests" / "browser" / "conftest.py",
        "NEWSROOM_TEST_ARTIFACTS": ROOT / "tests" / "browser" / "conftest.py",
        "NEWSROOM_TRACEBACK": ROOT / "pipelines" / "command_errors.py",
        "NEWSROOM_PARSE_BUDGET_S": ROOT / "transforms" / "ingest" / "parsing.py",
        "NEWSROOM_USER_AGENT": ROOT / "transforms" / "ingest" / "fetcher.py",
        "NEWSROOM_ANN_KERNELS": ROOT / "transforms" / "stories" / "index" / "ann_kernels.py",
        "NEWSROOM_ANN_PROFILE": ROOT / "transforms" / "stories" / "index" / "ann_kernels.py",
        "NEWSROOM_STORIES_CACHE": ROOT / "benchmarks" / "stories_calibrate.py",
        "NEWSROOM_COLLECTOR_PARKING": ROOT / "transforms" / "editions" / "cycle" / "collector.py",
    }
    for name, path in elsewhere.items():
        text = path.read_text(encoding="utf-8")
        assert "environ" in text and (f'"{name}"' in text or "ENV" in text), (name, path)
    readable = set(serving.env_settings())
    missing = documented - readable - set(elsewhere)
    assert not missing, f"documented but never read: {sorted(missing)}"
    # Every setting of the app's config: set in the environment, found in app.config.
    defaults = {**serving.DEFAULTS, **PUSH_DEFAULTS}
    wanted = {}
    for key in serving.env_settings():
        if key not in defaults:
            continue
        wanted[key] = _value_for(key, defaults[key], tmp_path)
        raw = wanted[key]
        monkeypatch.setenv(key, raw if isinstance(raw, str) else json.dumps(raw))
    assert {"NEWSROOM_PING_KEYS", "NEWSROOM_TOKEN_SECRET", "NEWSROOM_CURSOR_SECRET"} <= set(wanted)
    stores, profiles, _ = world
    app = create_app({"NEWSROOM_STORES": stores, "NEWSROOM_PROFILE_STORE": profiles})
    got = {k: app.config[k] for k in wanted}
    assert got == wanted
    app.extensions["newsroom"].close()
    # The ones other parts of the origin process read: gunicorn.conf.py, the worker, the emulator stack.
    monkeypatch.setenv("NEWSROOM_WORKERS", "3")
    monkeypatch.setenv("NEWSROOM_THREADS", "5")
    conf = runpy.run_path(str(ROOT / "serving" / "worker" / "gunicorn.conf.py"))
    assert (conf["workers"], conf["threads"]) == (3, 5)
    out = subprocess.run(
        [sys.executable, "-c", "import serving.worker.gworker as g; print(g.HEADER_TIMEOUT_S, g.WRITE_TIMEOUT_S)"],
        cwd=ROOT,
        env={
            **os.environ,
            "NEWSROOM_HEADER_TIMEOUT_S": "3.5",
            "NEWSROOM_WRITE_TIMEOUT_S": "7",
            "PYTHONPATH": str(ROOT),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "3.5 7.0", out.stderr
    from serving.http import telemetry

    monkeypatch.setenv("NEWSROOM_LOG_FORMAT", "json")
    assert telemetry.log_format() == "json"
    from devtools import emulators as em

    assert {em.ENV_JAVA, em.ENV_PUBSUB_JAR, em.ENV_CBTEMULATOR, em.ENV_GCS_EMULATOR} <= readable


def test_ping_keys_given_only_in_the_environment_are_used(world, monkeypatch):
    """As README and Terraform supply them (a Secret Manager secret mounted as an environment variable)."""
    stores, profiles, config = world
    monkeypatch.setenv("NEWSROOM_PING_KEYS", json.dumps({"agencia-sur": "agencia-key-from-env"}))
    app = create_app({**_objects(world), "NEWSROOM_DATA_DIR": config.data_dir, "TESTING": True})
    body = json.dumps({"feed_url": PING_FEED, "at": int(__import__("time").time() * 1000)}).encode()
    headers = {
        websub.PING_PUBLISHER_HEADER: "agencia-sur",
        websub.PING_SIGNATURE_HEADER: websub.sign("agencia-key-from-env", body),
        "Content-Type": "application/json",
    }
    r = app.test_client().post("/v1/ping", data=body, headers=headers)
    assert r.status_code == 202, r.get_data(as_text=True)


# ---- defences that held on main: pinned ------------------------------------------------------------------------


def test_tokens_and_cursors_are_signed(world):
    v = HmacTokenVerifier("s" * 32)
    token = issue_token("s" * 32, "alice")
    assert v.verify(token) == "alice"
    body, mac = token.split(".")
    for bad in (f"{body}.{mac[:-2]}AA", issue_token("other" * 8, "alice"), "x.y", "", token + "."):
        with pytest.raises(AuthError):
            v.verify(bad)
    c = cursors.encode(b"k" * 32, "story", [1, 2])
    assert cursors.decode(b"k" * 32, "story", c) == [1, 2]
    for bad in (cursors.encode(b"other", "story", [1, 2]), c[:-3] + "AAA", "nope", cursors.encode(b"k" * 32, "x", [1])):
        with pytest.raises(cursors.CursorError):
            cursors.decode(b"k" * 32, "story", bad)


# ---- the local secrets file: one writer, 0600 from its first byte, strong tokens -------------------------------


def test_newsroom_run_writes_the_secrets_file_0600_with_strong_tokens(tmp_path):
    """`newsroom run` wrote secrets.json with the process umask (0644: any local user could forge reader tokens)
    and 16-byte tokens; it now goes through serving.local_secrets like the origin."""
    from types import SimpleNamespace

    from devtools import run as run_main

    (tmp_path / "data").mkdir()  # `newsroom run` made it before the origin starts
    old = os.umask(0o022)
    cleanups = []
    try:
        config = StoreConfig(data_dir=str(tmp_path / "data"))
        args = SimpleNamespace(port=0)
        run_main._start_origin(args, config, SimpleNamespace(project="p"), {}, cleanups, print)
    finally:
        os.umask(old)
        for fn in reversed(cleanups):
            fn()
    path = tmp_path / "data" / "secrets.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert len(doc["token"]) >= 64 and len(doc["cursor"]) >= 64  # 32 random bytes, hex
    assert serving.local_secrets(str(tmp_path / "data")) == doc  # the origin's workers read the same file


def test_the_secrets_file_is_never_seen_partly_written_or_widely_readable(tmp_path, monkeypatch):
    """Written to a 0600 temp file, then linked into place (no clobber): a reader sees no file or the whole one, and
    racing workers agree on the winner's. A file an older release left world-readable is narrowed to 0600."""
    import threading

    data_dir = str(tmp_path / "d")
    os.makedirs(data_dir)
    opened = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *a, **kw):
        if str(path).startswith(data_dir) and flags & os.O_CREAT:
            opened.append((os.path.basename(str(path)), mode))
        return real_open(path, flags, mode, *a, **kw)

    monkeypatch.setattr(os, "open", spy)
    results, barrier = [], threading.Barrier(6)

    def worker():
        barrier.wait()
        results.append(serving.local_secrets(data_dir))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == results[0] for r in results) and len(results) == 6
    # the final name is never opened for writing: only temp files, each created 0600
    assert opened and all(name != "secrets.json" and mode == 0o600 for name, mode in opened)
    assert sorted(os.listdir(data_dir)) == ["secrets.json"]  # no temp file left behind
    path = Path(data_dir, "secrets.json")
    os.chmod(path, 0o644)
    assert serving.local_secrets(data_dir) == results[0]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
