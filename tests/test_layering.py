"""The layers point one way: schemas <- stores <- transforms <- pipelines / serving <- commands <- devtools, and
Beam stays in Beam modules.

Walks the product packages and devtools with ``ast`` and flags:

- an import of a higher layer (``transforms`` importing ``pipelines``: a transform reading a job's options is the
  cycle this test was written against); ``pipelines`` (the jobs) and ``serving`` (the origin) are peers that never
  import each other; the commands layer (``pipelines/commands/``: the ``newsroom`` subcommands that are not jobs,
  operator and analyst commands and ``newsroom serve``) sits above both and nothing below imports it;
- an import of ``devtools`` (the emulators, the sample world, the local whole-system run: developer tools, not
  product code, and neither in the wheel nor in the image) from any product module, commands included: no
  exception; ``devtools`` itself may import every product package (``newsroom stack`` and ``newsroom run`` reach it
  by module name through pipelines/cli.py's table, from a clone);
- an import of ``apache_beam`` outside the jobs (``pipelines/``, not its commands) and the modules that hold a stage's PTransforms and
  DoFns (``BEAM_MODULES``): everything else (devtools included) is plain Python that the backfill, the streaming
  job and the origin share and that tests and benchmarks call without a pipeline.

Inside the big packages, rooms (sub-packages by role) stand in an order too (``ROOMS``): a module of a room imports
only its own room and the rooms below it, so a newcomer reads a room knowing only what is under it. Each room's
``__init__.py`` says what it exports and may import.

And no circles: the modules of the product import each other as a graph without a cycle (``from p import m``
where ``m`` is a module is an edge to ``m``, not to ``p``'s face), whichever import form (function-level and
``TYPE_CHECKING`` imports included), so each can be read, tested and moved before the ones that import it.

The checkers themselves are tested on planted snippets, so this test can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYER = {"schemas": 0, "stores": 1, "transforms": 2, "pipelines": 3, "serving": 3, "commands": 4, "devtools": 5}
# The packages walked: every layer but ``commands``, which is the folder pipelines/commands/ (see ``layer_of``).
PACKAGES = ("schemas", "stores", "transforms", "pipelines", "serving", "devtools")
# The modules that may import Beam: each stage's Beam layer, the stores' Beam IO and the one timer helper.
BEAM_MODULES = {
    "stores/beam_io.py",
    "transforms/timers.py",
    "transforms/articles/beam.py",
    "transforms/ingest/beam.py",
    "transforms/stories/beam/embed.py",
    "transforms/stories/beam/writer.py",
    "transforms/stories/beam/apply.py",
    "transforms/stories/beam/links.py",
    "transforms/stories/beam/storylines.py",
    "transforms/stories/beam/backfill.py",
    "transforms/covisit/beam.py",
    "transforms/userclusters/beam.py",
    "transforms/authority/beam.py",
    "transforms/editions/beam/announce.py",
    "transforms/editions/beam/counters.py",
    "transforms/editions/beam/detection.py",
    "transforms/editions/beam/publishing.py",
    "transforms/editions/beam/ranking.py",
    "transforms/editions/beam/stage.py",
}


# The rooms of each big package, bottom to top: a room may import the rooms before it, never one after it.
# ``__init__`` is the package's own face where it is more than a table of contents (serving's app factory).
ROOMS = {
    "transforms.editions": ("vocabulary", "book", "bursts", "cycle", "overlays", "ranker", "publish", "beam"),
    "transforms.stories": ("vocabulary", "embed", "index", "writer", "links", "storylines", "backfill", "beam"),
    "serving": ("http", "state", "personal", "api", "web", "worker", "__init__"),
}


def _imports(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "import_module" and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def layer_of(parts: list[str]) -> str:
    """The layer of a module, from its path or dotted name split into parts: its top-level package, except the
    commands layer: ``pipelines/commands/`` and the dispatcher ``pipelines/cli.py``."""
    if parts[:2] == ["pipelines", "commands"] or parts[:2] in (["pipelines", "cli"], ["pipelines", "cli.py"]):
        return "commands"
    return parts[0]


def violations(source: str, relpath: str) -> list[str]:
    """``path:line: why`` for every import in ``source`` (module at ``relpath``) that breaks the layering."""
    top = layer_of(relpath.split("/"))
    found = []
    for line, module in _imports(source):
        target = layer_of(module.split("."))
        if target == "apache_beam" and top != "pipelines" and relpath not in BEAM_MODULES:
            found.append(f"{relpath}:{line}: imports Beam ({module}) in a plain module")
        if target not in LAYER or target == top:
            continue
        if target == "devtools":
            found.append(f"{relpath}:{line}: {top} imports devtools ({module}), developer tools, not product code")
            continue
        if LAYER[target] > LAYER[top]:
            found.append(f"{relpath}:{line}: {top} imports the higher layer {module}")
        elif LAYER[target] == LAYER[top]:
            found.append(f"{relpath}:{line}: {top} imports its peer {module}")
    return found


def _product_modules():
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path


def test_the_layers_point_one_way_and_beam_stays_in_beam_modules():
    found = [v for rel, path in _product_modules() for v in violations(path.read_text(), rel)]
    assert not found, "layering broken:\n" + "\n".join(found)


def test_every_listed_beam_module_exists_and_uses_beam():
    # The allowlist must not outlive a refactor: a module listed here that is gone or no longer imports Beam goes.
    missing = sorted(m for m in BEAM_MODULES if not (ROOT / m).exists())
    beam_free = sorted(
        m
        for m in BEAM_MODULES
        if (ROOT / m).exists()
        and not any(mod.split(".")[0] == "apache_beam" for _, mod in _imports((ROOT / m).read_text()))
    )
    assert not missing and not beam_free, f"stale BEAM_MODULES entries: missing {missing}, Beam-free {beam_free}"


@pytest.mark.parametrize(
    "source, relpath, expected",
    [
        ("from pipelines.backfill import BackfillOptions\n", "transforms/editions/x.py", "higher layer"),
        ("import serving.state.catalog\n", "stores/x.py", "higher layer"),
        ("from transforms.publishers import Registry\n", "schemas/x.py", "higher layer"),
        ("import importlib\nimportlib.import_module('pipelines.stories')\n", "transforms/x.py", "higher layer"),
        ("from pipelines import ingest\n", "serving/x.py", "peer"),
        ("from serving import create_app\n", "pipelines/main.py", "peer"),
        ("from pipelines.commands.control import parse_expires\n", "transforms/editions/x.py", "higher layer"),
        ("from pipelines.commands import evaluate\n", "pipelines/backfill.py", "higher layer"),
        ("from pipelines.cli import run_job\n", "pipelines/backfill.py", "higher layer"),
        ("import pipelines.cli\n", "serving/x.py", "higher layer"),
        ("from pipelines.commands.serve import main\n", "serving/x.py", "higher layer"),
        ("import apache_beam as beam\n", "pipelines/commands/x.py", "Beam"),
        ("import apache_beam as beam\n", "transforms/articles/urls.py", "Beam"),
        ("from apache_beam.metrics import Metrics\n", "serving/x.py", "Beam"),
        ("from devtools import emulators\n", "stores/x.py", "devtools"),
        ("from devtools.world.server import start_world\n", "pipelines/stories.py", "devtools"),
        ("from devtools.world.server import start_world\n", "pipelines/ingest_local.py", "devtools"),
        ("from devtools import emulators as stack\n", "pipelines/main.py", "devtools"),
        ("from devtools import run\n", "pipelines/commands/x.py", "devtools"),
        ("import importlib\nimportlib.import_module('devtools.samples')\n", "serving/x.py", "devtools"),
        ("import devtools.local_origin\n", "transforms/x.py", "devtools"),
        ("import apache_beam as beam\n", "devtools/world/server.py", "Beam"),
    ],
)
def test_the_checker_catches_a_planted_wrong_import(source, relpath, expected):
    found = violations(source, relpath)
    assert found and expected in found[0]


@pytest.mark.parametrize(
    "source, relpath",
    [
        ("from schemas import codec\nfrom stores import open_stores\n", "transforms/x.py"),
        ("from transforms.articles import normalize\n", "pipelines/stories.py"),
        ("import serving\n", "devtools/run.py"),
        ("from serving import create_app\n", "pipelines/commands/serve.py"),
        ("from transforms.editions.vocabulary.config import load_config\n", "pipelines/commands/control.py"),
        ("from pipelines.commands.control import CommandError\n", "pipelines/commands/takedown.py"),
        ("from pipelines.command_errors import run_job\n", "pipelines/backfill.py"),
        ("from pipelines.command_errors import CommandError\nfrom serving import create_app\n", "pipelines/cli.py"),
        ("import apache_beam as beam\n", "transforms/stories/beam/writer.py"),
        ("from . import sibling\n", "serving/x.py"),
        ("from devtools import emulators as stack\n", "devtools/run.py"),
        ("from serving import create_app\nfrom pipelines import cli\nfrom stores import gcp\n", "devtools/x.py"),
    ],
)
def test_the_checker_accepts_imports_that_point_down(source, relpath):
    assert violations(source, relpath) == []


def _room_imports(source: str, package: str) -> list[tuple[int, str, str]]:
    """(line, module, room) of every import in ``source`` of a module of ``package``: ``from serving import http``
    names the room ``http``; ``import serving`` or ``from serving import create_app``, the face ``__init__``."""
    base = ROOT.joinpath(*package.split("."))
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [(node.module, a.name) for a in node.names]
        else:
            continue
        for module, name in modules:
            if module == package and name is not None:
                is_room = (base / name).is_dir() or (base / f"{name}.py").exists()
                found.append((node.lineno, f"{module}.{name}", name if is_room else "__init__"))
            elif module == package:
                found.append((node.lineno, module, "__init__"))
            elif module.startswith(package + "."):
                found.append((node.lineno, module, module[len(package) + 1 :].split(".")[0]))
    return found


def room_violations(source: str, relpath: str, rooms: dict = ROOMS) -> list[str]:
    """``path:line: why`` for every import in ``source`` of a room above the module's own room in its package."""
    me = relpath[: -len(".py")].replace("/", ".")
    found = []
    for package, order in rooms.items():
        if me == package + ".__init__":
            mine = "__init__"
        elif me.startswith(package + "."):
            mine = me[len(package) + 1 :].split(".")[0]
        else:
            continue
        if mine not in order:
            continue
        for line, module, theirs in dict.fromkeys(_room_imports(source, package)):
            if theirs in order and order.index(theirs) > order.index(mine):
                found.append(f"{relpath}:{line}: room {mine} imports {module}, a room above it ({theirs})")
    return found


def test_every_room_imports_only_the_rooms_below_it():
    found = [v for rel, path in _product_modules() for v in room_violations(path.read_text(), rel)]
    assert not found, "rooms out of order:\n" + "\n".join(found)


def test_every_room_of_every_package_exists_with_a_face():
    for package, order in ROOMS.items():
        base = ROOT.joinpath(*package.split("."))
        rooms = [room for room in order if room != "__init__"]
        faceless = [room for room in rooms if not (base / room / "__init__.py").exists()]
        assert not faceless, f"{package}: rooms without an __init__.py: {faceless}"
        for room in rooms:
            face = (base / room / "__init__.py").read_text()
            assert "Exports" in face and "May import" in face, f"{package}.{room}: the face says what it exports"
        loose = sorted(p.name for p in base.glob("*.py") if p.name != "__init__.py")
        assert not loose, f"{package}: modules outside every room: {loose}"


@pytest.mark.parametrize(
    "source, relpath, expected",
    [
        ("from transforms.editions.overlays import Overlays\n", "transforms/editions/cycle/run.py", "overlays"),
        ("import transforms.editions.publish.snapshots\n", "transforms/editions/book/storybook.py", "publish"),
        ("from transforms.editions.beam import X\n", "transforms/editions/vocabulary/config.py", "beam"),
        ("from serving import web\n", "serving/api/stories.py", "web"),
        ("def f():\n    from serving import SECRETS_FILE\n", "serving/web/signin.py", "__init__"),
        ("import serving\n", "serving/state/context.py", "__init__"),
        ("from serving.worker.fastpath import X\n", "serving/web/pages.py", "worker"),
    ],
)
def test_the_room_checker_catches_an_import_from_above(source, relpath, expected):
    found = room_violations(source, relpath)
    assert len(found) == 1 and f"({expected})" in found[0]


@pytest.mark.parametrize(
    "source, relpath",
    [
        ("from transforms.editions.book import StoryBook\n", "transforms/editions/cycle/run.py"),
        ("from transforms.editions.cycle import fairness\n", "transforms/editions/cycle/run.py"),
        ("from transforms.editions.publish import SnapshotPublisher\n", "transforms/editions/beam/publishing.py"),
        ("from transforms.editions.beam import PublishEditions\n", "pipelines/stories.py"),
        ("from serving.http import conventions as http\n", "serving/api/stories.py"),
        ("from serving import http\n", "serving/state/watcher.py"),
        ("from serving.web import pages\nfrom serving.worker import fastpath\n", "serving/__init__.py"),
    ],
)
def test_the_room_checker_accepts_imports_from_below(source, relpath):
    assert room_violations(source, relpath) == []


def import_graph(modules: dict[str, str]) -> dict[str, set[str]]:
    """``{module: the modules it imports}`` among ``modules`` (``{dotted name: source}``)."""
    graph = {name: set() for name in modules}
    for name, source in modules.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                targets = [t for t in subs if t in modules]
                targets += [node.module] if len(targets) < len(subs) else []
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def _dotted(rel: str) -> str:
    name = rel[: -len(".py")].replace("/", ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


ACYCLIC = ("schemas", "stores", "transforms", "serving", "pipelines")  # every product package
# Circles known and not yet untangled, each with why; the test fails when one goes (take it off) or a new one comes.
KNOWN_CIRCLES = []


def test_no_circles_among_the_modules():
    modules = {_dotted(rel): path.read_text() for rel, path in _product_modules() if rel.startswith(ACYCLIC)}
    found = circles(import_graph(modules))
    assert sorted(found) == sorted(KNOWN_CIRCLES), "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_checker_finds_a_planted_circle_and_passes_a_chain():
    planted = {
        "p": "from p.b import x\n",  # a face importing its module is no circle by itself
        "p.a": "from p.b import x\n",
        "p.b": "def f():\n    from p.c import y\n",
        "p.c": "from p import a\n",  # p.a is a module: the edge goes to it
        "p.d": "from p import b\n",
    }
    assert circles(import_graph(planted)) == [["p.a", "p.b", "p.c"]]
    planted["p.c"] = "import json\n"
    assert circles(import_graph(planted)) == []
