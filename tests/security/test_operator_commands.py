"""The operator commands (rollback, control, takedown): malformed ids end in a clear message and status 2, never a
traceback; every action that changes what the public sees needs --reason; the listings print who and why with
control characters escaped (no forged lines, no terminal escapes); a topic id holding ``?`` or ``#`` is purged
like any other (paths are percent-encoded), instead of failing the whole purge request."""

from __future__ import annotations

import json

import pytest

from pipelines.cli import main as newsroom
from schemas.pages import page_path
from stores import StoreConfig, open_stores
from stores.cdn import QueuedPurger, public_paths
from stores.embedded import Database

HUGE = "99999999999999999999999"  # more than 64 bits


@pytest.fixture
def config(tmp_path):
    return StoreConfig(data_dir=str(tmp_path / "data"))


def flags(config) -> list[str]:
    return ["--data_dir", config.data_dir, "--cdn", "queue"]


@pytest.fixture
def two_versions(config):
    """us-en/top published at v1 then v2 (tiny documents: rollback checks only that the object exists)."""
    stores = open_stores(config)
    for v in (1, 2):
        stores.snapshots.put(page_path("us-en", "top", v), json.dumps({"version": v, "stories": []}).encode())
        assert stores.pointers.compare_and_set("us-en/top", v - 1 or None, v, "publish")
    stores.stories.put_story(7, {"language": "en", "state": "live"})
    return stores


@pytest.mark.parametrize(
    "argv",
    [
        ["takedown", "--story", HUGE, "--reason", "r"],
        ["takedown", "--story", "-1", "--reason", "r"],
        ["takedown", "--story", "\u0661\u0662", "--reason", "r"],  # Arabic-Indic digits: isdigit() says yes
        ["takedown", "--story", HUGE, "--undo", "--reason", "r"],
        [
            "control",
            "pin",
            "--edition",
            "us-en",
            "--section",
            "top",
            "--story",
            HUGE,
            "--expires",
            "1h",
            "--reason",
            "r",
        ],
        [
            "control",
            "clear",
            "--edition",
            "us-en",
            "--section",
            "top",
            "--kind",
            "pin",
            "--story",
            HUGE,
            "--reason",
            "r",
        ],
        ["rollback", "--edition", "us-en", "--section", "top", "--to-version", HUGE, "--reason", "r"],
    ],
)
def test_malformed_ids_are_status_2_with_a_message(config, two_versions, capsys, argv):
    status = newsroom([*argv, *flags(config)])  # an exception here is the traceback an operator saw
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.strip() and "Traceback" not in err
    assert two_versions.pointers.get("us-en/top") == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["rollback", "--edition", "us-en", "--section", "top"],
        ["rollback", "--edition", "us-en", "--section", "top", "--to-version", "1", "--reason", "  "],
        ["rollback", "--edition", "us-en", "--pool"],
        ["takedown", "--story", "7"],
        ["control", "pin", "--edition", "us-en", "--section", "top", "--story", "7", "--expires", "1h"],
        ["control", "hold", "--edition", "us-en", "--section", "top", "--version", "1", "--expires", "1h"],
        ["control", "clear", "--edition", "us-en", "--section", "top", "--kind", "hold"],
    ],
)
def test_every_operator_action_needs_a_reason(config, two_versions, capsys, argv):
    """`rollback` without --reason moved the live page (audited as "no --reason given")."""
    from stores.audit import open_audit_log
    from stores.takedowns import open_takedown_store

    assert newsroom([*argv, *flags(config)]) == 2
    assert "--reason" in capsys.readouterr().err
    assert two_versions.pointers.get("us-en/top") == 2
    assert open_audit_log(config).entries() == []
    assert open_takedown_store(config).all() == []


def test_listings_never_print_raw_control_characters(config, two_versions, capsys):
    """--who and --reason are free text: a newline forged a second tombstone line in `takedown --list`, and ANSI
    escapes reached the operator's terminal. They are shown escaped (\\n, \\x1b) in every listing and echo."""
    who, why = "mallory\n7  2026-01-01 00:00:00Z by ceo: approved", "court order\x1b[2J\x1b[31m\r\u2028\x00"
    assert newsroom(["takedown", "--story", "7", "--who", who, "--reason", why, *flags(config)]) == 0
    assert newsroom(["control", "pin", "--edition", "us-en", "--section", "top", "--story", "7", "--expires", "1h",
                     "--who", who, "--reason", why, *flags(config)]) == 0  # fmt: skip
    assert newsroom(["takedown", "--list", *flags(config)]) == 0
    assert newsroom(["control", "list", "--edition", "us-en", *flags(config)]) == 0
    out = capsys.readouterr().out
    for bad in ("\x1b", "\r", "\x00", "\u2028"):
        assert bad not in out
    lines = out.splitlines()
    assert not any(line.startswith("7  2026") for line in lines)  # no forged line
    assert sum("story:7" in line for line in lines) == 2  # the takedown's echo and its listing: one line each
    assert "mallory\\n7" in out and "\\x1b[2J" in out


def test_topic_ids_with_reserved_characters_are_purged_encoded(config):
    """Paths are percent-encoded as a browser sends them: a ``?`` or ``#`` in a topic id no longer looks like a
    query or a fragment (which refused the whole request), ``%`` and ``*`` are literal characters of the id."""
    assert public_paths("topic/us-en/entity:a?b#c") == [
        "/v1/topics/entity:a%3Fb%23c",
        "/e/us-en/topics/entity:a%3Fb%23c",
    ]
    assert public_paths("topic/us-en/100%*") == ["/v1/topics/100%25%2A", "/e/us-en/topics/100%25%2A"]
    purger = QueuedPurger(Database(config.embedded_db))
    request = purger.purge_pointers(["us-en/top", "topic/us-en/entity:a?b#c", "topic/us-en/entity:ok"], "takedown")
    assert "/v1/topics/entity:a%3Fb%23c" in request.paths and "/v1/topics/entity:ok" in request.paths
    assert "/v1/editions/us-en/sections/top" in request.paths


def test_the_local_edge_purges_the_decoded_page_of_an_encoded_path(tmp_path):
    """nginx keys its cache on the decoded $uri: the local edge decodes each purge path first; an encoded ``*``
    is a character of the id, only a trailing ``*`` is a wildcard."""
    from devtools.local_origin import apply_purges

    keys = {
        "a": "/v1/topics/entity:a?b#c?limit=3",
        "star": "/v1/topics/100%*",
        "starred-sibling": "/v1/topics/100%*-more",
        "other": "/v1/topics/entity:ok",
    }
    for name, key in keys.items():
        (tmp_path / name).write_bytes(b"\x00" * 16 + b"\nKEY: " + key.encode() + b"\nHTTP/1.1 200 OK\n")
    paths = public_paths("topic/us-en/entity:a?b#c") + public_paths("topic/us-en/100%*")
    assert apply_purges(tmp_path, paths) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "starred-sibling"]
