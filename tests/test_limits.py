"""The size limits of the product code, over every package: no file over 600 lines, no function over 80 and no
function taking more than 7 parameters in pipelines/, transforms/, serving/, schemas/ and stores/. Merges of parallel
branches pushed three places past them before this test covered the whole tree; a longer parameter list is a state
or a setting that wants a typed value (the ranking cycle's context, the writer's state, a job's resolved options)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipelines", "transforms", "serving", "schemas", "stores")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 7


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters a caller passes: positional, keyword-only, ``*args`` and ``**kwargs`` (one each); a method's
    ``self`` or ``cls`` is not counted."""
    a = node.args
    positional = [x.arg for x in a.posonlyargs + a.args]
    n = len(positional) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return n - 1 if positional and positional[0] in ("self", "cls") else n


def oversized(root: Path = ROOT) -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            name = path.relative_to(root).as_posix()
            if len(text.splitlines()) > MAX_FILE_LINES:
                found.append(f"{name}: {len(text.splitlines())} lines")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
                    if parameter_count(node) > MAX_PARAMETERS:
                        found.append(f"{name}:{node.lineno} {node.name}: {parameter_count(node)} parameters")
    return found


def test_no_file_over_600_lines_and_no_function_over_80_lines_or_7_parameters_in_the_product():
    assert oversized() == []


def test_the_check_sees_a_planted_long_function(tmp_path):
    (tmp_path / "stores").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "stores" / "planted.py").write_text(f"def planted():\n{body}\n", encoding="utf-8")
    for package in PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    assert oversized(tmp_path) == ["stores/planted.py:1 planted: 81 lines"]


def test_the_check_counts_the_parameters_a_caller_passes(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "serving" / "planted.py").write_text(
        "def f(a, b, c, d, e, f, g):\n    pass\n"
        "class C:\n    def m(self, a, b, c, d, e, f, g):\n        pass\n"
        "    def n(self, a, b, c, d, e, f, *args, **kwargs):\n        pass\n"
        "def h(a, /, b, *, c, d, e, f, g, x=1):\n    pass\n",
        encoding="utf-8",
    )
    assert sorted(oversized(tmp_path)) == [
        "serving/planted.py:6 n: 8 parameters",
        "serving/planted.py:8 h: 8 parameters",
    ]
