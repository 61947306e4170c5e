"""``newsroom control`` end to end: records set and cleared through the stores, each change audited with who and
why, bad input refused with a clear message and nothing written, a hold at an older version moving the pointer
back and queueing a CDN purge of the page."""

from __future__ import annotations

import pytest

from pipelines.cli import main as newsroom
from stores import open_store, open_stores
from stores.audit import open_audit_log
from stores.cdn import open_purger
from stores.controls import open_control_store
from tests.pipelines.commands import test_rollback
from tests.pipelines.commands.test_rollback import store_flags

published = test_rollback.published  # its fixture: three versions of us-en/top published


def control(config, *args) -> int:
    return newsroom(["control", *args, *store_flags(config)])


def page(*extra):
    return ["--edition", "us-en", "--section", "top", *extra]


@pytest.fixture
def live_story(published):
    config, versions = published
    open_store("stories", config).put_story(7, {"language": "en", "state": "live"})
    return config, versions


def test_pin_demote_label_and_clear_are_recorded_and_audited(live_story, capsys):
    config, _ = live_story
    common = ["--story", "7", "--expires", "2h", "--who", "alice"]
    assert control(config, "pin", *page(*common, "--position", "1", "--reason", "lead")) == 0
    assert control(config, "demote", *page(*common, "--factor", "0.5", "--reason", "stale")) == 0
    assert control(config, "label", *page(*common, "--label", "developing", "--reason", "moving")) == 0
    kinds = {c.kind: c for c in open_control_store(config).edition_controls("us-en")}
    assert set(kinds) == {"pin", "demote", "label"}
    assert kinds["pin"].position == 1 and kinds["demote"].factor == 0.5 and kinds["label"].label == "developing"
    assert all(c.who == "alice" and c.story_id == "7" for c in kinds.values())
    assert 0 < kinds["pin"].expires_at - kinds["pin"].set_at <= 2 * 3600 * 1000
    assert control(config, "clear", *page("--kind", "pin", "--story", "7", "--reason", "done", "--who", "bob")) == 0
    assert {c.kind for c in open_control_store(config).edition_controls("us-en")} == {"demote", "label"}
    entries = open_audit_log(config).entries("page:us-en/top")
    assert [(e["action"], e["who"], e["why"]) for e in entries] == [
        ("control-pin", "alice", "lead"),
        ("control-demote", "alice", "stale"),
        ("control-label", "alice", "moving"),
        ("control-clear-pin", "bob", "done"),
    ]
    assert entries[0]["detail"]["story_id"] == "7" and entries[0]["detail"]["position"] == 1
    assert control(config, "list", "--edition", "us-en") == 0
    out = capsys.readouterr().out
    assert "demote" in out and "developing" in out


def test_a_hold_at_an_older_version_moves_the_pointer_back_and_purges_the_page(published, capsys):
    config, (v1, v2, v3) = published
    stores = open_stores(config)
    # the embedded purge queue (the Cloud CDN purger is stores/cdn.py's; without it the command says it did not purge)
    purger = open_purger(config if config.backend == "embedded" else None)
    before = purger.pending()
    args = page("--version", str(v1), "--expires", "30m", "--reason", "bad ranking", "--who", "carol")
    assert control(config, "hold", *args) == 0
    assert stores.pointers.get("us-en/top") == v1
    if config.backend == "embedded":
        new = purger.pending(before[-1][0] if before else 0)
        assert len(new) == 1 and "/v1/editions/us-en/sections/top" in new[0][1].paths
    else:
        assert "not purged" in capsys.readouterr().err
    (hold,) = open_control_store(config).edition_controls("us-en")
    assert hold.kind == "hold" and hold.version == v1
    (entry,) = open_audit_log(config).entries("page:us-en/top")
    assert entry["action"] == "control-hold" and entry["who"] == "carol" and entry["detail"]["version"] == v1
    # a hold at the live version moves nothing and purges nothing
    assert control(config, "hold", *page("--expires", "1h", "--reason", "keep it")) == 0
    assert stores.pointers.get("us-en/top") == v1
    if config.backend == "embedded":
        assert len(purger.pending()) == len(before) + 1


@pytest.mark.parametrize(
    "args, status, message",
    [
        (
            ["pin", "--edition", "xx-yy", "--section", "top", "--story", "7", "--expires", "1h", "--reason", "r"],
            2,
            "--edition",
        ),
        (
            ["pin", "--edition", "us-en", "--section", "gardening", "--story", "7", "--expires", "1h", "--reason", "r"],
            2,
            "--section",
        ),
        (["pin", *page("--story", "8", "--expires", "1h", "--reason", "r")], 1, "no story 8"),
        (["pin", *page("--expires", "1h", "--reason", "r")], 2, "--story"),
        (["pin", *page("--story", "7", "--expires", "soon", "--reason", "r")], 2, "--expires"),
        (["pin", *page("--story", "7", "--expires", "30d", "--reason", "r")], 2, "--expires"),
        (["pin", *page("--story", "7", "--expires", "2020-01-01T00:00:00Z", "--reason", "r")], 2, "--expires"),
        (["pin", *page("--story", "7", "--expires", "1h", "--reason", " ")], 2, "--reason"),
        (["label", *page("--story", "7", "--label", "sponsored", "--expires", "1h", "--reason", "r")], 2, "--label"),
        (["hold", *page("--version", "12345", "--expires", "1h", "--reason", "r")], 1, "does not exist"),
        (["clear", *page("--kind", "pin", "--story", "7", "--reason", "r")], 1, "no pin"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message_and_nothing_written(live_story, capsys, args, status, message):
    config, (v1, v2, v3) = live_story
    assert control(config, *args) == status
    assert message in capsys.readouterr().err
    assert open_control_store(config).edition_controls("us-en") == []
    assert open_audit_log(config).entries() == []
    assert open_store("pointers", config).get("us-en/top") == v3


@pytest.mark.parametrize("command", ["rollback", "hold"])
def test_cdn_flags_reach_the_purger(published, monkeypatch, command):
    """``--cdn gcp --cdn_url_map M`` on an operator command opens the Cloud CDN purger on M (the flags are shared by
    rollback, control and takedown: pipelines/commands/control.add_operator_arguments)."""
    import stores.cdn

    config, (v1, _v2, _v3) = published
    opened = []

    def fake_open_purger(store_config, cdn=None, url_map=None, session=None):
        opened.append((cdn, url_map))
        return stores.cdn.NullPurger()

    monkeypatch.setattr(stores.cdn, "open_purger", fake_open_purger)
    flags = ["--cdn", "gcp", "--cdn_url_map", "newsroom-origin-urls"]
    if command == "rollback":
        status = newsroom(["rollback", *page("--to-version", str(v1), "--reason", "r", *flags), *store_flags(config)])
    else:
        status = control(config, "hold", *page("--version", str(v1), "--expires", "1h", "--reason", "r", *flags))
    assert status == 0 and opened == [("gcp", "newsroom-origin-urls")]
