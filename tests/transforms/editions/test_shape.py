"""The editions stage keeps its shape: small files and functions with few parameters, no reference loop in
production code, and no import of a job (pipelines/) from the transform."""

from __future__ import annotations

import ast
from pathlib import Path

EDITIONS = Path(__file__).resolve().parents[3] / "transforms" / "editions"


MAX_PARAMETERS = 7  # a function that needs more is threading a state or a setting that wants a typed value


def _modules():
    return sorted(EDITIONS.rglob("*.py"))  # the Beam layer's sub-package too


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters of a function: positional, keyword-only, ``*args`` and ``**kwargs`` (one each); a method's
    ``self`` or ``cls`` is not counted."""
    a = node.args
    positional = [x.arg for x in a.posonlyargs + a.args]
    n = len(positional) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return n - 1 if positional and positional[0] in ("self", "cls") else n


def too_many_parameters(source: str, name: str) -> list[str]:
    found = [
        (node.lineno, f"{name}:{node.lineno} {node.name}: {parameter_count(node)} parameters")
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and parameter_count(node) > MAX_PARAMETERS
    ]
    return [text for _, text in sorted(found)]


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


def test_no_function_takes_more_than_seven_parameters():
    found = [v for p in _modules() for v in too_many_parameters(p.read_text(), p.relative_to(EDITIONS).as_posix())]
    assert found == []


def test_the_parameter_check_counts_what_a_caller_passes():
    planted = (
        "def f(a, b, c, d, e, f, g):\n    pass\n"
        "class C:\n    def m(self, a, b, c, d, e, f, g):\n        pass\n"
        "    def n(self, a, b, c, d, e, f, *args, **kwargs):\n        pass\n"
        "def h(a, /, b, *, c, d, e, f, g, x=1):\n    pass\n"
    )
    assert too_many_parameters(planted, "x.py") == ["x.py:6 n: 8 parameters", "x.py:8 h: 8 parameters"]
