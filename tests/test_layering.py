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

The checker itself is tested on planted snippets, so this test can fail.
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
    commands layer, ``pipelines/commands/``."""
    if parts[:2] == ["pipelines", "commands"]:
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
        ("import serving.catalog\n", "stores/x.py", "higher layer"),
        ("from transforms.publishers import Registry\n", "schemas/x.py", "higher layer"),
        ("import importlib\nimportlib.import_module('pipelines.stories')\n", "transforms/x.py", "higher layer"),
        ("from pipelines import ingest\n", "serving/x.py", "peer"),
        ("from serving import create_app\n", "pipelines/main.py", "peer"),
        ("from pipelines.commands.control import parse_expires\n", "transforms/editions/x.py", "higher layer"),
        ("from pipelines.commands import evaluate\n", "pipelines/backfill.py", "higher layer"),
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
        ("from transforms.editions.config import load_config\n", "pipelines/commands/control.py"),
        ("from pipelines.commands.control import CommandError\n", "pipelines/commands/takedown.py"),
        ("import apache_beam as beam\n", "transforms/stories/beam/writer.py"),
        ("from . import sibling\n", "serving/x.py"),
        ("from devtools import emulators as stack\n", "devtools/run.py"),
        ("from serving import create_app\nfrom pipelines import cli\nfrom stores import gcp\n", "devtools/x.py"),
    ],
)
def test_the_checker_accepts_imports_that_point_down(source, relpath):
    assert violations(source, relpath) == []
