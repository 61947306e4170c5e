"""Restore of a story writer from the story store: its live stories, their members and meta, bit for bit.

Reads the store's live stories of a language (meta with the centroid's sum and time, member rows) and the token
Beam keeps (:meth:`transforms.stories.writer.writer_state.WriterState.token`); writes nothing. A restored writer decides
exactly as the uninterrupted one would: every counter is a function of the live members, added in id order.
"""

from __future__ import annotations

import numpy as np

from stores.base import StoryStore
from transforms.stories.writer.state import Member, StoreBehind, Story
from transforms.stories.writer.writer_state import WriterState


def restore_state(w: WriterState, store: StoryStore, token: dict | None = None) -> None:
    """Fill the fresh writer state ``w`` from ``store`` and ``token``.

    When the store's ``writer_seq`` is lower than the token's seq, the store has not applied every change yet and
    :class:`StoreBehind` is raised (transient: retry later).
    """
    token = token or {}
    seq = store.writer_seq(w.language)
    if seq < int(token.get("seq", 0)):
        raise StoreBehind(f"story store at seq {seq} for {w.language!r}, writer at {token['seq']}")
    minted = 0
    rows = []
    for sid in store.live_stories(w.language):
        row = store.get_story(sid)
        if row is not None and row.get("alias_of") is None and row.get("members"):
            rows.append(row)
    for row in sorted(rows, key=lambda r: r["story_id"]):
        sid = int(row["story_id"])
        meta = row["meta"] or {}
        s = Story(
            sid,
            w.language,
            csum=np.asarray(meta["centroid_sum"], dtype=np.float64),
            ct=int(meta["centroid_t"]),
            last_repair_at=meta.get("last_repair_at"),
        )
        w.put_story(s, [Member.from_record(aid, r) for aid, r in row["members"].items()])
        minted = max(minted, sid, int(meta.get("writer_minted") or 0))
        if not w.model and meta.get("model"):
            w.adopt_model(meta["model"])
    w.resume(
        seq=seq,
        # Ids of stories no longer live (expired, merged) count too: a resumed namespace never re-mints them.
        last_minted=max(minted, int(store.minted_floor(w.language) or 0)),
        clock=int(token.get("clock", max((s.last_at for s in w.stories.values()), default=0))),
        last_repair_tick=int(token.get("last_repair_tick", 0)),
        until=token.get("until"),
    )
