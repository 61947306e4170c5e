"""The stories stage keeps its shape: the writer's repairs and restore change its state only through the state's
methods: each takes the state typed as ``WriterState`` and never assigns to one of its fields. Checked on the source
(AST), and the checker on planted code, so these tests can fail. The parameter limit (no function over 7) is every
package's: tests/test_limits.py."""

from __future__ import annotations

import ast
from pathlib import Path

STORIES = Path(__file__).resolve().parents[3] / "transforms" / "stories" / "writer"
# The modules that change a writer's state from outside its class: the two repairs and the restore.
STATE_USERS = ("repair.py", "recluster.py", "restore.py")


def state_misuse(source: str) -> list[str]:
    """Functions whose parameter ``w`` (the writer state) is not annotated ``WriterState``, and assignments to a field
    of ``w`` (``w.x = ...``, ``w.x += ...``, ``w.x[k] = ...``) anywhere in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
                if arg.arg == "w" and not (isinstance(arg.annotation, ast.Name) and arg.annotation.id == "WriterState"):
                    found.append(f"{node.name}: untyped w")
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            while isinstance(t, ast.Subscript):
                t = t.value
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "w":
                found.append(f"line {node.lineno}: assigns w.{t.attr}")
    return found


def test_repair_and_restore_change_the_writer_state_only_through_its_methods():
    found = {name: state_misuse((STORIES / name).read_text()) for name in STATE_USERS}
    assert {name: misuse for name, misuse in found.items() if misuse} == {}


def test_the_checker_sees_planted_code():
    planted = (
        "def f(w, tick: int):\n    w.seq = 1\n    w.stats['x'] += 1\n"
        "def g(w: WriterState):\n    w.tally('x')\n    s = w.stories[1]\n    s.last_repair_at = 2\n"
    )
    assert state_misuse(planted) == ["f: untyped w", "line 2: assigns w.seq", "line 3: assigns w.stats"]
