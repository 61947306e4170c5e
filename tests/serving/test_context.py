"""serving.context.services() is the one way a handler reaches the origin's resources (flaskr's get_db())."""

from __future__ import annotations

import re
from pathlib import Path

from serving.context import services

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
        for p in sorted(SERVING.glob("*.py"))
        if p.name not in ALLOWED
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if LOOKUP.search(line)
    ]
    assert offenders == [], f"use serving.context.services() instead: {offenders}"


def test_the_scan_sees_a_lookup():
    assert LOOKUP.search('ext = current_app.extensions["newsroom"]')
    assert not LOOKUP.search("ext = services()")
