"""DirectorySnapshotStore keeps every object under its root: a path that leaves it (``..``, a symlink out, the root
itself) is refused with a clear error; the root is resolved once, not at every put."""

from __future__ import annotations

import os

import pytest

from stores import AlreadyExists
from stores.embedded import DirectorySnapshotStore


def test_paths_that_leave_the_root_are_refused(tmp_path):
    store = DirectorySnapshotStore(tmp_path / "snaps")
    store.put("pages/us-en/top/v1.json", b"{}")
    assert store.get("pages/us-en/top/v1.json") == b"{}"
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, tmp_path / "snaps" / "link")
    for bad in ("../escaped.json", "pages/../../escaped.json", "link/x.json", "", "."):
        with pytest.raises(ValueError, match="escapes the store"):
            store.put(bad, b"{}")
    assert list(outside.iterdir()) == [] and not (tmp_path / "escaped.json").exists()


def test_a_folder_is_checked_and_created_at_its_first_put_only(tmp_path, monkeypatch):
    store = DirectorySnapshotStore(tmp_path / "snaps")
    store.put("pages/us-en/top/v1.json", b"1")
    resolved = []
    real = type(tmp_path).resolve
    monkeypatch.setattr(type(tmp_path), "resolve", lambda self, *a, **k: resolved.append(self) or real(self, *a, **k))
    store.put("pages/us-en/top/v2.json", b"2")  # the folder is known: nothing resolved or created again
    assert resolved == [] and store.get("pages/us-en/top/v2.json") == b"2"
    for bad in ("pages/us-en/top/..", "pages/us-en/top/../../../../escaped.json", "pages/us-en/top/"):
        with pytest.raises((ValueError, AlreadyExists)):
            store.put(bad, b"{}")
    assert not (tmp_path / "escaped.json").exists()
    with pytest.raises(AlreadyExists):
        store.put("pages/us-en/top/v1.json", b"other")
