"""Nothing but stores/ talks to Bigtable, GCS or Pub/Sub: every other module goes through the store interfaces.

Walks the source tree with ``ast`` (not tests/, not the virtualenv) and flags, outside stores/: imports of the
Bigtable, Storage and Pub/Sub client libraries or of Beam's Pub/Sub, Bigtable and GCS connectors (any import form,
``importlib.import_module("...")`` included), and attribute use of those connectors (``beam.io.ReadFromPubSub``).
The checker is itself tested on synthetic snippets, so this test can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FORBIDDEN_MODULES = (
    "google.cloud.bigtable",  # also bigtable_admin*, bigtable_v2
    "google.cloud.storage",
    "google.cloud.pubsub",  # also pubsub_v1, pubsublite
    "google.pubsub",
    "google.pubsub_v1",
    "apache_beam.io.gcp.pubsub",
    "apache_beam.io.gcp.bigtableio",
    "apache_beam.io.gcp.gcsio",
    "apache_beam.io.gcp.gcsfilesystem",
)
FORBIDDEN_NAMES = {
    "ReadFromPubSub",
    "WriteToPubSub",
    "ReadStringsFromPubSub",
    "WriteStringsToPubSub",
    "ReadFromPubSubLite",
    "WriteToPubSubLite",
    "PubsubMessage",
    "WriteToBigTable",
    "ReadFromBigtable",
    "BigtableDataClient",
    "GcsIO",
}
ALLOWED_TOP = "stores"
SKIP_DIRS = {"tests", ".venv", "venv", "build", "dist", "node_modules", "__pycache__", "terraform"}


def _forbidden_module(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") or name.startswith(m + "_") for m in FORBIDDEN_MODULES)


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def violations(source: str, filename: str = "<snippet>") -> list[str]:
    """``line: what`` for every use of a cloud client or connector in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _forbidden_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _forbidden_module(node.module):
                found.append(f"{node.lineno}: from {node.module} import ...")
            for a in node.names:
                if _forbidden_module(f"{node.module}.{a.name}") or a.name in FORBIDDEN_NAMES:
                    found.append(f"{node.lineno}: from {node.module} import {a.name}")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_NAMES:
            found.append(f"{node.lineno}: {_dotted(node) or node.attr}")
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            connector = dotted and any(f".io.gcp.{m}." in dotted + "." for m in ("pubsub", "bigtableio", "gcsio"))
            if dotted and (_forbidden_module(dotted) or connector):
                found.append(f"{node.lineno}: {dotted}")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            fn = _dotted(node.func) or ""
            arg = node.args[0].value
            if fn.split(".")[-1] in ("import_module", "__import__") and isinstance(arg, str) and _forbidden_module(arg):
                found.append(f"{node.lineno}: {fn}({arg!r})")
    return sorted(set(found), key=lambda s: int(s.split(":")[0]))


def source_files(root: Path) -> list[Path]:
    out = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if any(part in SKIP_DIRS or part.startswith(".") or part.endswith(".egg-info") for part in rel.parts[:-1]):
            continue
        out.append(path)
    return sorted(out)


def test_only_stores_talk_to_bigtable_gcs_and_pubsub(repo_root):
    files = source_files(repo_root)
    tops = {f.relative_to(repo_root).parts[0] for f in files}
    assert {"pipelines", "schemas", "stores"} <= tops, f"the walk found no source tree under {repo_root}: {tops}"
    problems = []
    for path in files:
        rel = path.relative_to(repo_root)
        if rel.parts[0] == ALLOWED_TOP:
            continue
        for v in violations(path.read_text(encoding="utf-8"), str(rel)):
            problems.append(f"{rel}:{v}")
    assert not problems, "only stores/ may talk to Bigtable, GCS or Pub/Sub; use the store interfaces:\n" + "\n".join(
        problems
    )


def test_stores_do_use_the_clients(repo_root):
    # The walk is real: the one place allowed to use the clients does use them.
    assert violations((repo_root / "stores" / "gcp" / "clients.py").read_text(encoding="utf-8"))


BAD = [
    "import google.cloud.bigtable",
    "import google.cloud.storage as gcs",
    "from google.cloud import bigtable",
    "from google.cloud import storage, bigquery",
    "from google.cloud import pubsub_v1",
    "from google.cloud.bigtable import row_filters",
    "from google.cloud.bigtable_admin_v2 import BigtableTableAdminClient",
    "from google.pubsub_v1 import SubscriberClient",
    "from apache_beam.io.gcp import pubsub",
    "from apache_beam.io.gcp.pubsub import ReadFromPubSub",
    "from apache_beam.io.gcp.bigtableio import WriteToBigTable",
    "import apache_beam.io.gcp.gcsio",
    "from apache_beam.io import ReadFromPubSub",
    "import apache_beam as beam\np | beam.io.ReadFromPubSub(topic='t')",
    "import apache_beam as beam\np | beam.io.WriteToPubSub('t')",
    "import apache_beam as beam\nx = beam.io.gcp.bigtableio.WriteToBigTable",
    "import importlib\nm = importlib.import_module('google.cloud.storage')",
    "def f():\n    from google.cloud import storage\n    return storage.Client()",
    "import google.cloud\nc = google.cloud.bigtable.Client()",
]

GOOD = [
    "from stores import open_stores, StoreConfig",
    "from google.cloud import bigquery",
    "import google.auth",
    "import apache_beam as beam\np | beam.io.ReadFromText('x') | beam.Map(str)",
    "from apache_beam.io.gcp.internal.clients import bigquery",
    "from apache_beam.options.pipeline_options import GoogleCloudOptions",
    "storage = {'pubsub': 1}  # words are not imports",
    "from . import storage",
]


@pytest.mark.parametrize("snippet", BAD)
def test_checker_flags(snippet):
    assert violations(snippet), snippet


@pytest.mark.parametrize("snippet", GOOD)
def test_checker_allows(snippet):
    assert violations(snippet) == []


def test_checker_reports_lines_and_skips_stores(tmp_path):
    (tmp_path / "stores").mkdir()
    (tmp_path / "stores" / "gcp.py").write_text("from google.cloud import bigtable\n")
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "job.py").write_text("import os\n\nfrom google.cloud import storage\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("from google.cloud import storage\n")
    files = [f.relative_to(tmp_path).as_posix() for f in source_files(tmp_path)]
    assert files == ["pipelines/job.py", "stores/gcp.py"]
    assert violations((tmp_path / "pipelines" / "job.py").read_text()) == ["3: from google.cloud import storage"]
