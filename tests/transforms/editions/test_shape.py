"""The editions stage keeps its shape: small files and functions, no reference loop in production code, and no
import of a job (pipelines/) from the transform. The parameter limit is every package's: tests/test_limits.py."""

from __future__ import annotations

import ast
from pathlib import Path

EDITIONS = Path(__file__).resolve().parents[3] / "transforms" / "editions"


def _modules():
    return sorted(EDITIONS.rglob("*.py"))  # the Beam layer's sub-package too


def test_no_file_over_600_lines_and_no_function_over_80():
    long_files = [p.name for p in _modules() if len(p.read_text().splitlines()) > 600]
    long_functions = []
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80:
                long_functions.append(f"{p.name}:{node.name}")
    assert long_files == [] and long_functions == []


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
