"""The snapshot publisher treats each document kind by its policy (transforms/editions/publish/snapshots.py
``POLICIES``): every kind it can store has one, and ``SnapshotPublisher.publish`` never branches on a kind's name
(it had 12 such branches, so a new kind meant reading all of them). Behaviour is the publish tests' (test_publish.py,
test_storyline_pages.py, test_controls.py ...): the policies reproduce what the branches did."""

from __future__ import annotations

import ast
import inspect
import textwrap

from schemas.pages import PAGES
from transforms.editions.publish import snapshots
from transforms.editions.publish.snapshots import POLICIES, KindPolicy, SnapshotPublisher, path_of, policy_of

POINTERS = {
    "edition_page": "us-en/top",
    "candidate_pool": "pool/us-en",
    "story_coverage": "story/7",
    "aliases": "aliases",
    "topic_page": "topic/us-en/entity:x",
    "storyline": "storyline/en/1",
    "storyline_index": "storyline_index/en/3",
}


def _storable(kind: str) -> bool:
    try:
        path_of(kind, POINTERS.get(kind, "a/b/c"), 1)
    except ValueError:
        return False
    return True


def test_every_kind_the_publisher_can_store_has_a_policy():
    assert {k for k in PAGES if _storable(k)} == set(POLICIES)
    assert all(isinstance(p, KindPolicy) for p in POLICIES.values())
    assert policy_of("no_such_kind") == KindPolicy()  # path_of refuses it later, as before


def test_the_special_cases_are_the_kinds_that_need_them():
    def kinds(field: str) -> set[str]:
        return {k for k, p in POLICIES.items() if getattr(p, field) not in (False, None)}

    assert kinds("holds") == kinds("heartbeat") == kinds("page_events") == {"edition_page"}
    assert kinds("merges") == {"storyline", "storyline_index"}
    assert {k for k, p in POLICIES.items() if not p.skips_unchanged} == {"story_coverage"} == kinds("retained")
    assert kinds("cycle_versions") == {"edition_page", "storyline"} and kinds("tracks_activity") == {"topic_page"}


def kind_branches(source: str) -> list[str]:
    """Comparisons of a name with a string constant that names a document kind (``kind == "edition_page"``,
    ``kind in ("storyline", ...)``)."""
    found = []
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, ast.Compare):
            for c in ast.walk(node):
                if isinstance(c, ast.Constant) and c.value in PAGES:
                    found.append(f"line {node.lineno}: {c.value}")
    return found


def test_publish_reads_policies_instead_of_branching_on_the_kind():
    for method in (SnapshotPublisher.publish, SnapshotPublisher._validate, SnapshotPublisher._moved):
        assert kind_branches(inspect.getsource(method)) == [], method.__name__
    assert kind_branches('if kind == "edition_page":\n    pass\nif k in ("storyline", "x"):\n    pass\n') == [
        "line 1: edition_page",
        "line 3: storyline",
    ]
    assert KindPolicy() == snapshots.PLAIN
