"""serving.state.context.services() is the one way a handler reaches the origin's resources (flaskr's get_db())."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from serving.state.context import services

SERVING = Path(__file__).resolve().parents[2] / "serving"
# The accessor itself and the module that sets the extension.
ALLOWED = {"context.py", "__init__.py"}
LOOKUP = re.compile(r"""current_app\.extensions\[\s*["']newsroom["']\s*\]""")


def test_services_is_the_apps_newsroom(app):
    with app.app_context():
        assert services() is app.extensions["newsroom"]


def test_no_serving_module_repeats_the_lookup():
    offenders = [
        f"{p.name}:{n}"
        for p in sorted(SERVING.rglob("*.py"))
        if p.name not in ALLOWED
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if LOOKUP.search(line)
    ]
    assert offenders == [], f"use serving.state.context.services() instead: {offenders}"


def key_literals(source: str) -> list[int]:
    """Lines of ``source`` that name the extension by the literal "newsroom" (``x.extensions["newsroom"]`` or
    ``x.extensions.get("newsroom")``) rather than by serving.state.context.EXTENSION."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript):
            target, key = node.value, node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            target, key = node.func.value, (node.args or [None])[0]
        else:
            continue
        named = isinstance(target, ast.Attribute) and target.attr == "extensions"
        if named and isinstance(key, ast.Constant) and key.value == "newsroom":
            lines.append(node.lineno)
    return lines


def test_the_key_is_spelled_once_in_serving():
    """init_app stores the extension under serving.state.context.EXTENSION, the key services() and push read."""
    spelled = {p.name: key_literals(p.read_text()) for p in sorted(SERVING.rglob("*.py"))}
    assert {k: v for k, v in spelled.items() if v} == {}
    assert key_literals('app.extensions["newsroom"] = self\next = app.extensions.get("newsroom")') == [1, 2]
    assert key_literals("app.extensions[EXTENSION] = self\nd.get('newsroom')") == []


def test_the_scan_sees_a_lookup():
    assert LOOKUP.search('ext = current_app.extensions["newsroom"]')
    assert not LOOKUP.search("ext = services()")
