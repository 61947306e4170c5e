"""The operators' audit trail (stores/audit.py) on both backends (embedded SQLite; Bigtable emulator)."""

from __future__ import annotations

import pytest

from stores.audit import open_audit_log, operator


@pytest.fixture
def audit(store_config):
    return open_audit_log(store_config)


def test_entries_are_kept_in_order_with_who_and_why_and_filtered_by_target(audit):
    first = audit.record("takedown", "article:a1", why="court order 114", who="alice", detail={"url": "https://x/1"})
    audit.record("hold", "page:us-en/top", why="bad ranking", who="bob")
    audit.record("takedown-lifted", "article:a1", why="order overturned", who="alice")
    everything = audit.entries()
    assert [e["action"] for e in everything] == ["takedown", "hold", "takedown-lifted"]
    assert everything[0] == first and first["who"] == "alice" and first["detail"] == {"url": "https://x/1"}
    assert [e["action"] for e in audit.entries("article:")] == ["takedown", "takedown-lifted"]
    assert audit.entries(since_ms=everything[-1]["at"] + 1) == []
    assert len(audit.entries(limit=2)) == 2


def test_entries_written_within_one_millisecond_keep_their_order(audit):
    """The trail is append-only and ordered: entries recorded in the same millisecond (a takedown and its lift by a
    script) come back in the order they were written, on every backend, and each ``at`` never goes backwards."""
    for i in range(40):
        audit.record("hold" if i % 2 else "takedown", f"article:a{i}", why=f"step {i}")
    got = audit.entries()
    assert [e["why"] for e in got] == [f"step {i}" for i in range(40)]
    assert [e["at"] for e in got] == sorted(e["at"] for e in got)


def test_an_entry_without_a_reason_or_target_is_refused(audit):
    with pytest.raises(ValueError):
        audit.record("takedown", "article:a1", why="  ")
    with pytest.raises(ValueError):
        audit.record("takedown", "", why="x")
    assert audit.entries() == []


def test_the_operator_is_the_flag_else_the_environment_else_user_at_host(monkeypatch):
    monkeypatch.setenv("NEWSROOM_OPERATOR", "oncall@newsroom")
    assert operator("carol") == "carol"
    assert operator() == "oncall@newsroom"
    monkeypatch.delenv("NEWSROOM_OPERATOR")
    assert "@" in operator()
