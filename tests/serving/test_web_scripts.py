"""The origin's page scripts (serving/web/static/*.js) share their helpers through common.js instead of each
defining its own: a helper is defined in one script, the reader token's storage key is spelled once, and every page
loads common.js before the scripts that read it (deferred scripts run in document order)."""

from __future__ import annotations

import re
from collections import defaultdict

from serving.web.pages import STATIC_DIR
from tests.serving.helpers import EDITION, STORY

DEFINITION = re.compile(r"\bfunction\s+([A-Za-z_$][\w$]*)\s*\(")
TOKEN_KEY = '"newsroom.readerToken"'


def scripts() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(STATIC_DIR.glob("*.js"))}


def defined_twice(sources: dict[str, str]) -> dict[str, list[str]]:
    """Function names defined in more than one of ``sources`` (name -> the files)."""
    where = defaultdict(set)
    for name, js in sources.items():
        for fn in DEFINITION.findall(js):
            where[fn].add(name)
    return {fn: sorted(files) for fn, files in where.items() if len(files) > 1}


def test_no_helper_is_defined_in_two_scripts():
    assert defined_twice(scripts()) == {}


def test_the_check_sees_a_helper_defined_twice():
    el = "function el(tag, text) { return document.createElement(tag); }"
    assert defined_twice({"a.js": el, "b.js": "var x = 1;\n  " + el}) == {"el": ["a.js", "b.js"]}
    assert defined_twice({"a.js": el, "b.js": "var node = el('p');"}) == {}


def test_the_token_key_is_spelled_once():
    assert [name for name, js in scripts().items() if TOKEN_KEY in js] == ["common.js"]


def test_every_page_loads_common_js_first(client):
    for path in (f"/e/{EDITION}/", f"/e/{EDITION}/for-you", "/sign-in", f"/stories/{STORY}"):
        html = client.get(path).data.decode()
        loaded = [u.rsplit("/", 1)[1] for u in re.findall(r'<script src="([^"]+)"', html)]
        assert loaded and loaded[0] == "common.js", (path, loaded)
