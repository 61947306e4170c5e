"""Retiring story pointers: which ``story/{id}`` pointers the snapshot publisher should retire (so listings and the
origin's memory stop growing).

Reads nothing by itself; :func:`retire` writes through :meth:`stores.base.PointerStore.retire` only. Without
retirement every story pointer ever published stays listed: the origin's poll (``PointerStore.versions``) and the
publisher's own listings grow by ~2,000 pointers a day per language.

The rule: a story pointer is retired when its story is not live (not in any page or pool the publisher just wrote,
not in the story store's live set, whatever the caller passes as ``live_story_ids``) and has not been updated or
seen live for ``keep_s`` seconds. Retirement is conditional on the version listed, so a story that moved meanwhile is
left alone (retired on a later cycle if it still qualifies), and the pointer's tombstone stops a replayed older
coverage from bringing it back; a genuinely newer coverage version revives it.

How the publisher uses it, once per cycle (or every few cycles)::

    tracker = StoryRetention(keep_s=48 * 3600)          # in DoFn.setup
    tracker.seen(live_ids, now)                           # the ids its pages / pools / live set hold this cycle
    tracker.moved(pointer, version, now)                  # each story pointer it moved this cycle
    expired = tracker.expired(stores.pointers.versions("story/"), live_ids, now)
    retire(stores.pointers, expired)

A restarted publisher knows no ages: it takes every pointer it lists as seen at its first listing, so retirement is
delayed by up to ``keep_s`` after a restart, never early.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

STORY_PREFIX = "story/"


def story_id_of(name: str) -> str | None:
    """The story id of a ``story/{id}`` pointer name, or None for any other pointer."""
    return name[len(STORY_PREFIX) :] if name.startswith(STORY_PREFIX) else None


def expired_story_pointers(
    pointers: Mapping[str, tuple[int, float]],
    live_story_ids: Iterable[str | int],
    now: float,
    keep_s: float,
) -> dict[str, int]:
    """``{name: version}`` of the story pointers to retire.

    ``pointers``: ``{name: (version, last_active)}`` where ``last_active`` (seconds, same clock as ``now``) is when
    the story last moved or was last seen live; other pointer names are ignored. ``live_story_ids``: stories that
    must stay (ints or strings). A pointer expires when its story is not live and ``now - last_active > keep_s``."""
    live = {str(s) for s in live_story_ids}
    out = {}
    for name, (version, last_active) in pointers.items():
        sid = story_id_of(name)
        if sid is None or sid in live:
            continue
        if now - last_active > keep_s:
            out[name] = int(version)
    return dict(sorted(out.items()))


class StoryRetention:
    """The publisher-side memory of when each story pointer was last active (moved or live); see the module doc."""

    def __init__(self, keep_s: float):
        self.keep_s = float(keep_s)
        self.last_active: dict[str, float] = {}  # pointer name -> seconds

    def seen(self, live_story_ids: Iterable[str | int], now: float) -> None:
        for sid in live_story_ids:
            self.last_active[f"{STORY_PREFIX}{sid}"] = now

    def moved(self, name: str, version: int, now: float) -> None:
        self.last_active[name] = now

    def expired(self, listed: Mapping[str, int], live_story_ids: Iterable[str | int], now: float) -> dict[str, int]:
        """``{name: version}`` to retire among ``listed`` (``PointerStore.versions("story/")``). Pointers seen for
        the first time start their clock now; names no longer listed are forgotten."""
        for name in [n for n in self.last_active if n not in listed]:
            del self.last_active[name]
        ages = {}
        for name, version in listed.items():
            ages[name] = (version, self.last_active.setdefault(name, now))
        return expired_story_pointers(ages, live_story_ids, now, self.keep_s)


def retire(pointers, expired: Mapping[str, int]) -> list[str]:
    """Retire each ``{name: version}`` by :meth:`PointerStore.retire` (conditional: a pointer that moved since it
    was listed stays). Returns the names retired. Store errors propagate (transient: retry next cycle)."""
    return [name for name, version in expired.items() if pointers.retire(name, version)]
