"""A reader's delete and pause as versions every later write of the profile store checks (stores/profiles.py).

Writes to a reader's profile reach the store after they were accepted: read events wait in the origin's fold queue
(serving/personal/readers.py, up to a second or a retried batch), and a control's request can lose a race to a delete sent
just after it. So every write carries the wall-clock time (ms) it was accepted at, and the profile document keeps:

- ``deleted_at``: when the reader last deleted the profile (DELETE /v1/me/profile). A delete leaves a tombstone,
  the empty profile with ``deleted_at`` and ``gone`` set (no follows, reads, interest or rate bucket); nothing
  accepted at or before ``deleted_at`` is written afterwards, whenever it arrives (a replay included). A later
  write accepted after the delete starts a new profile on top of the tombstone.
- ``history_deleted_at``: the same for reads after DELETE /v1/me/history (follows and controls are kept).
- ``pauses``: the reader's pause intervals ``[start, end]`` in ms (``end`` 0 while still paused). A read accepted
  inside one is dropped even when it is folded after the resume. At most PAUSES_KEPT intervals: past that the two
  oldest merge into one spanning both (conservative: a read accepted between them, long folded, would be dropped).

The store checks these inside the write itself (a SQLite transaction; a Bigtable CheckAndMutateRow on the exact
document version), so a delete or pause committed between the caller's read and its write still wins.

Clocks: ``accepted_at`` and ``deleted_at`` are read from the wall clock of the origin process handling each request;
across instances they are ordered as well as the instances' clocks agree (NTP: milliseconds), and a write accepted
in the same millisecond as the delete is dropped.
"""

from __future__ import annotations

import time

PAUSES_KEPT = 16


class Superseded(Exception):
    """A write accepted at or before the reader's newer delete: nothing was written."""


def now_ms() -> int:
    return int(time.time() * 1000)


def deleted_since(doc: dict | None, accepted_at: int) -> bool:
    """True when the profile was deleted at or after ``accepted_at`` (so a write accepted then must not land)."""
    return int(accepted_at) <= int((doc or {}).get("deleted_at") or 0)


def paused_at(doc: dict | None, accepted_at: int) -> bool:
    """True when ``accepted_at`` falls in one of the reader's pause intervals (or the reader is paused with no
    recorded interval: a profile paused before intervals were kept)."""
    doc = doc or {}
    pauses = doc.get("pauses") or []
    for start, end in pauses:
        if start <= accepted_at and (not end or accepted_at < end):
            return True
    return bool(doc.get("paused")) and not any(not end for _, end in pauses)


def read_admitted(doc: dict | None, accepted_at: int) -> bool:
    """May a read accepted at ``accepted_at`` be written to this profile (not deleted since, not paused then)?"""
    doc = doc or {}
    if deleted_since(doc, accepted_at) or int(accepted_at) <= int(doc.get("history_deleted_at") or 0):
        return False
    return not paused_at(doc, accepted_at)


def erased_at(doc: dict | None) -> int:
    """When the reader last deleted the profile or the history (ms; 0: never)."""
    doc = doc or {}
    return max(int(doc.get("deleted_at") or 0), int(doc.get("history_deleted_at") or 0))


def accepted_at_of(read: dict, default: int) -> int:
    at = read.get("accepted_at")
    return int(at) if isinstance(at, int) and not isinstance(at, bool) else default


def set_paused(doc: dict, paused: bool, at: int) -> dict | None:
    """``doc`` paused or resumed at ``at`` with its interval recorded; None when it already is."""
    if bool(doc.get("paused")) == paused:
        return None
    pauses = [list(p) for p in doc.get("pauses") or []]
    if paused:
        pauses.append([int(at), 0])
    elif pauses and not pauses[-1][1]:
        pauses[-1][1] = max(int(at), pauses[-1][0] + 1)
    else:  # paused before intervals were recorded: everything before the resume counts as paused
        pauses.append([0, int(at)])
    while len(pauses) > PAUSES_KEPT:
        pauses[0:2] = [[pauses[0][0], pauses[1][1]]]
    doc["pauses"] = pauses
    doc["paused"] = paused
    return doc


def tombstone(old: dict, at: int, empty: dict) -> dict:
    """The document a delete at ``at`` leaves: ``empty`` (the empty profile) marked gone, at the next revision."""
    doc = dict(empty)
    doc["deleted_at"] = max(int(at), int(old.get("deleted_at") or 0))
    doc["gone"] = True
    return doc
