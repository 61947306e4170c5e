"""Editorial controls (stores/controls.py) on both backends (embedded SQLite; Bigtable emulator): one record per
page, kind and story, replaced when set again, read per edition in one scan, expired ones ignored by readers."""

from __future__ import annotations

import pytest

from stores.controls import Control, open_control_store

T = 1_709_294_400_000
MIN = 60_000


def pin(story="11", position=1, section="top", edition="us-en", **kw) -> Control:
    base = dict(
        kind="pin",
        edition=edition,
        section=section,
        story_id=story,
        position=position,
        set_at=T,
        expires_at=T + 60 * MIN,
        who="alice",
        why="lead story",
    )
    base.update(kw)
    return Control(**base)


@pytest.fixture
def controls(store_config):
    return open_control_store(store_config)


def test_controls_are_read_per_edition_and_replaced_by_key(controls):
    controls.set(pin("11", 1))
    controls.set(pin("12", 3, section="world"))
    controls.set(
        Control(
            kind="demote",
            edition="us-en",
            section="top",
            story_id="13",
            factor=0.5,
            set_at=T,
            expires_at=T + 10 * MIN,
            who="bob",
            why="stale",
        )
    )
    controls.set(
        Control(
            kind="label",
            edition="us-en",
            section="top",
            story_id="11",
            label="developing",
            set_at=T,
            expires_at=T + 10 * MIN,
            who="bob",
            why="still moving",
        )
    )
    controls.set(
        Control(
            kind="hold",
            edition="us-en",
            section="top",
            version=28488241,
            set_at=T,
            expires_at=T + 120 * MIN,
            who="carol",
            why="bad ranking",
        )
    )
    controls.set(pin("11", 1, edition="gb-en"))  # another edition: not in us-en's scan
    controls.set(pin("11", 2))  # same page, kind and story: replaces the first pin
    got = controls.edition_controls("us-en")
    assert sorted((c.section, c.kind, c.story_id) for c in got) == [
        ("top", "demote", "13"),
        ("top", "hold", ""),
        ("top", "label", "11"),
        ("top", "pin", "11"),
        ("world", "pin", "12"),
    ]
    by_kind = {(c.section, c.kind): c for c in got}
    assert by_kind[("top", "pin")].position == 2 and by_kind[("top", "pin")].who == "alice"
    assert by_kind[("top", "demote")].factor == 0.5
    assert by_kind[("top", "label")].label == "developing"
    assert by_kind[("top", "hold")].version == 28488241 and by_kind[("top", "hold")].pointer == "us-en/top"
    assert [c.edition for c in controls.edition_controls("gb-en")] == ["gb-en"]


def test_expired_and_future_controls_are_not_active_and_expired_ones_can_be_removed(controls):
    controls.set(pin("11", 1, expires_at=T + 5 * MIN))
    controls.set(pin("12", 2, expires_at=T + 50 * MIN))
    controls.set(pin("13", 3, set_at=T + 20 * MIN))
    assert {c.story_id for c in controls.edition_controls("us-en", now_ms=T + MIN)} == {"11", "12"}
    assert {c.story_id for c in controls.edition_controls("us-en", now_ms=T + 30 * MIN)} == {"12", "13"}
    assert {c.story_id for c in controls.edition_controls("us-en")} == {"11", "12", "13"}  # None: every record
    assert controls.remove_expired("us-en", T + 30 * MIN) == 1
    assert {c.story_id for c in controls.edition_controls("us-en")} == {"12", "13"}


def test_clear_removes_one_record_and_returns_it(controls):
    controls.set(pin("11", 1))
    controls.set(pin("12", 2))
    removed = controls.clear("us-en", "top", "pin", "11")
    assert removed is not None and removed.story_id == "11"
    assert controls.clear("us-en", "top", "pin", "11") is None
    assert [c.story_id for c in controls.edition_controls("us-en")] == ["12"]


@pytest.mark.parametrize(
    "bad",
    [
        dict(kind="boost"),
        dict(story_id=""),
        dict(story_id="abc"),
        dict(position=0),
        dict(expires_at=T),
        dict(why=" "),
        dict(kind="label", label="sponsored"),
        dict(kind="label", label="breaking"),
        dict(kind="demote", factor=1.5),
        dict(kind="hold", story_id="", version=None),
        dict(section="Top Stories"),
    ],
)
def test_bad_records_are_refused(bad):
    with pytest.raises(ValueError):
        pin(**bad)
