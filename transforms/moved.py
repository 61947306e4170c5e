"""Old module paths of classes that Beam state pickled, kept importable after the modules moved into rooms.

A stateful DoFn's state is pickled (``PickleCoder``): a pickle names each class by its module path and name, so a
job updated in place (``--update``) unpickles state written by the build before it. When a module holding a class
kept in state moves, its old path must still import, or the updated job fails reading its first key. :data:`MOVED`
maps each old module path to where the module is now; :func:`install` (called by transforms/__init__.py, so it is
in place before any ``transforms.*`` module is imported, a pickle's included) makes ``import <old>`` give the new
module itself (the same classes, not copies). Paths that are now a package face (``transforms.editions.cycle``,
which still exports EditionMemory) need no entry.

What is kept in state, by module (grep ``PickleCoder`` under transforms/): EditionMemory and its Smoothing (the
ranker), CoverageMemory and StoryCoverage (burst detection), Ledger (Breaking announcements), StorylineWriter (the
storyline stage). tests/transforms/test_moved_state.py unpickles state pickled at the old paths by 55daf5d.
An entry stays while a running job may still hold state pickled before its move: docs/operations.md says when
one can go.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

MOVED = {
    "transforms.editions.scoring": "transforms.editions.cycle.scoring",
    "transforms.editions.coverage": "transforms.editions.bursts.coverage",
    "transforms.editions.breaking": "transforms.editions.publish.breaking",
    "transforms.stories.storyline": "transforms.stories.storylines.storyline",
}


class _OldPath(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds only the old paths of :data:`MOVED` (after every other finder) and loads each as its new module."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module) -> None:
        pass


def install() -> None:
    """Put the old-path finder last on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _OldPath) for f in sys.meta_path):
        sys.meta_path.append(_OldPath())
