"""The size limits of the product code, over every package (not only the editions stage, whose
tests/transforms/editions/test_shape.py pins its own): no file over 600 lines and no function over 80 in
pipelines/, transforms/, serving/, schemas/ and stores/. Merges of parallel branches pushed three places past them
before this test covered the whole tree."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipelines", "transforms", "serving", "schemas", "stores")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


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
    return found


def test_no_file_over_600_lines_and_no_function_over_80_in_the_product():
    assert oversized() == []


def test_the_check_sees_a_planted_long_function(tmp_path):
    (tmp_path / "stores").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "stores" / "planted.py").write_text(f"def planted():\n{body}\n", encoding="utf-8")
    for package in PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    assert oversized(tmp_path) == ["stores/planted.py:1 planted: 81 lines"]
