"""The editions stage keeps its shape: no reference loop in production code, and no import of a job (pipelines/)
from the transform. The size limits are every package's, in code lines: tests/test_limits.py; the order of the
stage's rooms: tests/test_layering.py."""

from __future__ import annotations

import ast
from pathlib import Path

EDITIONS = Path(__file__).resolve().parents[3] / "transforms" / "editions"


def _modules():
    return sorted(EDITIONS.rglob("*.py"))  # the Beam layer's sub-package too


def test_no_reference_loop_and_no_job_import_in_production():
    offenders = []
    for p in _modules():
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ("loop" in node.name.lower()):
                offenders.append(f"{p.name}:{node.name}")
            if isinstance(node, ast.arg) and node.arg == "mode":
                offenders.append(f"{p.name}: parameter mode")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pipelines":
                offenders.append(f"{p.name}: imports {node.module}")
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "pipelines" for a in node.names):
                offenders.append(f"{p.name}: imports pipelines")
    assert offenders == []
