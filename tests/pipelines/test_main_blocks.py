"""``python -m pipelines.X`` runs the module's ``if __name__ == "__main__"`` block where it stands: a function
defined below it does not exist yet (``python -m pipelines.backfill --snapshots DIR`` failed with NameError:
add_snapshots). The block must be each module's last statement."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MODULES = sorted(Path(__file__).resolve().parents[2].joinpath("pipelines").rglob("*.py"))


def _is_main_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_the_main_block_is_the_last_statement(path):
    body = ast.parse(path.read_text(encoding="utf-8")).body
    at = [i for i, node in enumerate(body) if _is_main_block(node)]
    assert not at or at == [len(body) - 1], f"{path.name}: statements after the __main__ block"
