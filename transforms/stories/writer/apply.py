"""Apply the story writer's decisions to the story store, idempotently and in sequence.

Reads :class:`transforms.stories.writer.cluster.WriterOutput` dicts (a ``StoryChange`` plus its durable effect); writes the
StoryStore (stores/base.py): story meta and centroid, member rows, aliases, links, the live set, the change markers
and the per-language ``writer_seq``.

Idempotency: a writer's changes are applied strictly in ``seq`` order. A change whose seq is not above the store's
``writer_seq`` is a replay and is skipped without touching anything (so replaying an old change can never overwrite
newer state). The operations of one change are themselves idempotent (put/overwrite/delete), so a crash between them
and ``set_writer_seq`` is repaired by applying the same change again. ``mark_change`` records the change id for
consumers that dedupe by id. A change that arrives ahead of its predecessors is refused (``False``): the Beam
applier buffers it until the gap is filled.

Merged stories: the absorbed story becomes an alias of the survivor (``set_alias`` re-points older aliases, so
resolution is always one hop), leaves the live set, and its members move to the survivor, whose meta (counters,
centroid) the writer recomputed from the union of members.
"""

from __future__ import annotations

from stores.base import StoryStore
from transforms.common import ASSIGN, EXPIRE, LINK, MERGE, NEW_STORY, SPLIT


class OutOfOrder(RuntimeError):
    """A change arrived before the change it follows (its seq is more than writer_seq + 1)."""


REPLAY, NEXT, AHEAD = "replay", "next", "ahead"


def sequence_step(seq: int, current: int) -> str:
    """Where change ``seq`` stands against a store whose ``writer_seq`` is ``current``: REPLAY (at or below it:
    skipped), NEXT (exactly one above: applied) or AHEAD (a gap before it: refused here, held by the Beam applier).
    The one statement of the rule, for :func:`apply_output` and the Beam applier's buffer."""
    if seq <= current:
        return REPLAY
    return NEXT if seq == current + 1 else AHEAD


def apply_output(store: StoryStore, out: dict, strict: bool = False) -> bool:
    """Apply one writer output. True if applied, False if it was a replay (or, unless ``strict``, out of order)."""
    ch = out["change"]
    lang, seq = ch["language"], int(ch["seq"])
    current = store.writer_seq(lang)
    step = sequence_step(seq, current)
    if step == REPLAY:
        return False
    if step == AHEAD:
        if strict:
            raise OutOfOrder(f"{lang}: change seq {seq} arrived with the store at {current}")
        return False
    kind = ch["kind"]
    sid = int(ch["story_id"])
    centroid = ch.get("centroid") or None
    if kind == NEW_STORY:
        store.raise_minted_floor(lang, sid)  # before the story exists: a restore never mints this id again
        store.put_story(sid, out["story_meta"], centroid)
        store.add_members(sid, out["members"])
        store.set_live(lang, sid, True)
    elif kind == ASSIGN:
        store.add_members(sid, out["members"])
        store.put_story(sid, out["story_meta"], centroid)
    elif kind == MERGE:
        gone = int(ch["other_story_id"])
        store.add_members(sid, out["members"])
        store.put_story(sid, out["story_meta"], centroid)
        store.put_story(gone, out.get("other_meta") or {}, None)
        store.remove_members(gone, list(out["members"]))
        store.set_live(lang, gone, False)
        store.set_alias(gone, sid)
    elif kind == SPLIT:
        new = int(ch["other_story_id"])
        store.raise_minted_floor(lang, new)
        store.put_story(new, out["other_meta"], out.get("other_centroid"))
        store.add_members(new, out["other_members"])
        store.set_live(lang, new, True)
        store.remove_members(sid, list(ch.get("article_ids") or out["other_members"]))
        store.put_story(sid, out["story_meta"], centroid)
    elif kind == EXPIRE:
        store.put_story(sid, out["story_meta"], None)
        store.set_live(lang, sid, False)
    elif kind == LINK:
        other = int(ch["other_story_id"])
        info = {"score": ch.get("score"), "at": ch.get("at"), "change_id": ch["change_id"]}
        store.add_link(sid, other, info)
        store.add_link(other, sid, info)
    else:
        raise ValueError(f"unknown change kind {kind!r}")
    store.mark_change(ch["change_id"])
    store.set_writer_seq(lang, seq)
    return True


def apply_in_order(store: StoryStore, outputs) -> int:
    """Apply a batch of outputs of any writers in (language, seq) order. Returns how many were applied."""
    applied = 0
    for out in sorted(outputs, key=lambda o: (o["change"]["language"], int(o["change"]["seq"]))):
        applied += apply_output(store, out)
    return applied
