"""Why the story writer put an article where it is: the explanation records of its decisions (writer side).

A writer with ``explain`` on (the backfill turns it on: pipelines/backfill.py) attaches one record to each
:class:`~transforms.stories.writer.state.WriterOutput` that places or moves articles; the backfill writes them, in
(language, seq) order, to ``explanations.jsonl`` in its ``--output`` and ``newsroom explain``
(pipelines/commands/explain.py) prints them. Plain dicts of JSON types; floats are the writer's own values
(JSON keeps a float's every bit), so an explanation can be re-scored exactly with
:meth:`transforms.stories.writer.scoring.Scorer.article_score` (tests/transforms/stories/test_explanations.py does).

Kinds (every record has ``kind``, ``language``, ``seq``, ``at`` (ms) and ``story_id``):

- ``decision``: an arrival. ``decision`` is ``join`` (the best candidate whose score reached ``bar`` and whose
  second opinion agreed), ``new`` (no candidate did: the article founded ``story_id``; a candidate over the bar
  that the second opinion or the place veto turned down carries ``"declined": true``) or ``copy`` (``copy_of`` is a member of a live story: joined
  whatever the score). ``candidates``: the EXPLAIN_TOP best scored stories, best first (the writer's order: score,
  then the smaller id), each with its features: ``dense`` (cosine with the centroid), ``lexical`` (TF-IDF cosine),
  ``entities`` (entity cosine), ``time_known``, ``gap_ms`` (article time - story's last article), ``time_penalty``
  and ``score``; ``considered`` says how many the index returned. ``weights`` are the calibration's entity and
  lexical weights (score = dense + entities x w + lexical x w - time_penalty).
- ``split``: a repair split ``story_id``; ``moved`` (ids) went to the new story ``new_story_id``, because the best
  bisection's halves scored ``score`` below ``bar`` (the merge bar less the split margin).
- ``merge``: a repair merged ``merged_story_id`` (``moved`` articles) into ``story_id``; ``detail`` is the merge
  criterion of the pair whose merge joined it (``criterion``, its features, ``score`` >= ``bar``), between the group
  of ``merged_story_id`` and that of ``with_story_id`` (group leaders at that moment of the tick).

Bounded: a decision holds at most EXPLAIN_TOP candidates; a split lists its moved articles once (one entry per moved
membership); a merge lists no ids (its moved articles are the absorbed story's members).
"""

from __future__ import annotations

from transforms.stories.writer.writer_state import WriterState

EXPLAIN_TOP = 5  # candidate stories kept per decision (the writer scores ~ClusterConfig.candidates = 10)
TITLE_CHARS = 160  # a headline is kept to this length: enough to recognise it


def candidate(scorer, story_id: int, sc: tuple, f, s) -> dict:
    """One scored candidate story of an arrival (``sc`` = :meth:`Scorer.score_article` of ``f`` against ``s``),
    taken before the decision changes any story."""
    known = bool(f.time_known and s.time_known)
    gap = int(f.first_seen_at - s.last_at)
    return {
        "story_id": int(story_id),
        "score": float(sc[0]),
        "dense": float(sc[1]),
        "lexical": float(sc[2]),
        "entities": float(sc[3]),
        "time_known": known,
        "gap_ms": gap,
        "time_penalty": float(scorer.penalty(known, gap)),
    }


def decline(cands: list[dict] | None, story_id: int) -> None:
    """Mark candidate ``story_id`` as over the bar but turned down by the join's second opinion (or place veto)."""
    for c in cands or ():
        if c["story_id"] == int(story_id):
            c["declined"] = True


def decision(w: WriterState, f, kind: str, story_id: int, seq: int, bar: float | None, cands: list[dict]) -> dict:
    """The record of an arrival decided ``kind`` (join / new / copy) into ``story_id`` by the writer whose state is ``w``."""
    top = sorted(cands, key=lambda c: (-c["score"], c["story_id"]))[:EXPLAIN_TOP]
    return {
        "kind": "decision",
        "language": w.language,
        "seq": int(seq),
        "at": int(f.first_seen_at),
        "time_known": bool(f.time_known),  # False: ``at`` is the stand-in of an untimed article (explain: unknown)
        "article_id": f.article_id,
        "title": (f.title or "")[:TITLE_CHARS],
        "source": f.source,
        "story_id": int(story_id),
        "decision": kind,
        "copy_of": f.copy_of if kind == "copy" else None,
        "has_body": bool(f.has_body),
        "bar": bar,
        "weights": {"entities": w.config.w_entity, "lexical": w.config.w_lexical},
        "considered": len(cands),
        "candidates": top,
    }


def split(w: WriterState, ch: dict, score: float, bar: float, kept: int) -> dict:
    """The record of a repair split (``ch``: its SPLIT change)."""
    return {
        "kind": "split",
        "language": w.language,
        "seq": int(ch["seq"]),
        "at": int(ch["at"]),
        "story_id": int(ch["story_id"]),
        "new_story_id": int(ch["other_story_id"]),
        "score": float(score),
        "bar": float(bar),
        "kept": int(kept),
        "moved": list(ch.get("article_ids") or []),
    }


def merge(w: WriterState, ch: dict, moved: int, why: tuple | None) -> dict:
    """The record of a repair merge (``ch``: its MERGE change); ``why`` = (with_story_id, criterion detail)."""
    with_id, detail = why or (None, {})
    return {
        "kind": "merge",
        "language": w.language,
        "seq": int(ch["seq"]),
        "at": int(ch["at"]),
        "story_id": int(ch["story_id"]),
        "merged_story_id": int(ch["other_story_id"]),
        "with_story_id": with_id,
        "moved": int(moved),
        "detail": detail,
    }
