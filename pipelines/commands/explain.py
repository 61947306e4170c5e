"""``newsroom explain``: why a backfill put an article in its story, read from the backfill's ``--output``.

Reads ``explanations.jsonl`` (the writer's records, transforms/stories/writer/explanations.py) of one backfill output
folder; prints, for ``--article ID``, the arrival decision (every candidate story kept, with its features and score
against the join bar) and each repair that moved the article since, then the story it ends in; for ``--story ID``,
the story's articles with how each got there (founded it, joined at which score, moved by which merge or split) and
the repairs of the story, and the stories of other languages it is linked with (``stories.jsonl``). ``--story`` takes a final story id (``assignments.jsonl``, ``stories.jsonl``, the evaluate
report) or one a merge absorbed (then its survivor is shown).

A missing folder, a folder without explanations, a malformed line or an unknown id is one line on stderr and exit
status 2 (:class:`ExplainError`). Imports no model, no numpy and no Beam: the command answers in a fraction of a second.
"""

from __future__ import annotations

import json
import os
import sys

from pipelines.command_errors import CommandError, utc_text
from pipelines.commands.evaluate_scores import InputError, read_jsonl
from transforms.common import DAY_MS, HOUR_MS

UNTIMED_EPOCH_MS = 946_684_800_000  # transforms/stories/vocabulary/features.py's (not imported: it loads numpy)

FILE = "explanations.jsonl"


class ExplainError(ValueError):
    """A user error (missing folder or file, malformed line, unknown id): one line, exit 2."""


def add_arguments(parser) -> None:
    parser.add_argument(
        "--output", default=".", help="the backfill's --output folder (holds explanations.jsonl). Default: ."
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--story", help="a story id: its articles and how each got there")
    which.add_argument("--article", help="an article id: the decision that placed it and the repairs that moved it")


def load(output: str) -> list[dict]:
    """The explanation records of a backfill output folder, in (language, seq) order."""
    if not os.path.isdir(output):
        what = "is a file, not a folder" if os.path.exists(output) else "no such folder"
        raise ExplainError(f"--output {output}: {what}")
    path = os.path.join(output, FILE)
    if not os.path.exists(path):
        raise ExplainError(
            f"--output {output}: no {FILE} (not a backfill's output, or one written before explanations: rerun it)"
        )
    try:
        records = list(read_jsonl(path, ("kind", "seq", "language"), "explanations"))
    except InputError as exc:
        raise ExplainError(str(exc)) from None
    return sorted(records, key=lambda r: (r["language"], int(r["seq"])))


def memberships(records: list[dict]) -> tuple[dict[str, int], dict[str, list[dict]], dict[int, int]]:
    """(article -> final story, article -> the records that placed and moved it, absorbed story -> survivor),
    replaying the records in (language, seq) order as the backfill's fold replays the changes."""
    story: dict[str, int] = {}
    history: dict[str, list[dict]] = {}
    held: dict[int, set[str]] = {}
    alias: dict[int, int] = {}
    for r in records:
        kind = r["kind"]
        if kind == "decision":
            aid, sid = r["article_id"], int(r["story_id"])
            story[aid] = sid
            history[aid] = [r]
            held.setdefault(sid, set()).add(aid)
        elif kind == "split":
            for aid in r["moved"]:
                held.get(story[aid], set()).discard(aid)
                story[aid] = int(r["new_story_id"])
                held.setdefault(story[aid], set()).add(aid)
                history[aid].append(r)
        elif kind == "merge":
            sid, gone = int(r["story_id"]), int(r["merged_story_id"])
            for aid in held.pop(gone, set()):
                story[aid] = sid
                held.setdefault(sid, set()).add(aid)
                history[aid].append(r)
            for k, v in list(alias.items()):
                if v == gone:
                    alias[k] = sid
            alias[gone] = sid
    return story, history, alias


def when(ms, known: bool | None = None) -> str:
    """``ms`` as a UTC time, or "unknown time" when the record says it is unknown (``known`` False) or, for a record
    that does not say (a repair, an older file), when it is the stand-in clock of untimed input (2000-01-01, one
    second per article: transforms/stories/vocabulary/features.py), never a date nobody wrote."""
    ms = int(ms)
    if known is False or (known is None and UNTIMED_EPOCH_MS <= ms < UNTIMED_EPOCH_MS + DAY_MS):
        return "unknown time"
    return utc_text(ms, "min")


def candidate_line(c: dict, weights: dict) -> str:
    """``story S  score X = dense + entities x w + lexical x w - time penalty (gap)``."""
    gap = f"{c['gap_ms'] / HOUR_MS:+.1f} h from its last article" if c["time_known"] else "a time unknown"
    return (
        f"story {c['story_id']}  score {c['score']:.3f} = dense {c['dense']:.3f} + entities {c['entities']:.3f} x "
        f"{weights['entities']:g} + lexical {c['lexical']:.3f} x {weights['lexical']:g} - time {c['time_penalty']:.3f}"
        f" ({gap})"
    )


def decision_summary(r: dict) -> str:
    """One line: how an arrival was decided."""
    cands = r["candidates"]
    best = cands[0] if cands else None
    if r["decision"] == "copy":
        return f"joined story {r['story_id']} as a copy of {r['copy_of']} (copies join their original's story)"
    kind = "with a body" if r["has_body"] else "headline only"
    if r["decision"] == "join":
        return f"joined story {r['story_id']}: score {best['score']:.3f} >= join bar {r['bar']:.3f} ({kind})"
    if best is None:
        return f"founded story {r['story_id']}: no live story to compare with"
    return (
        f"founded story {r['story_id']}: best candidate story {best['story_id']} scored {best['score']:.3f} "
        f"< join bar {r['bar']:.3f} ({kind})"
    )


def repair_summary(r: dict) -> str:
    """One line: a split or a merge."""
    if r["kind"] == "split":
        return (
            f"{when(r['at'])}: split of story {r['story_id']}: {len(r['moved'])} articles moved to story "
            f"{r['new_story_id']}, {r['kept']} kept (the halves scored {r['score']:.3f} < split bar {r['bar']:.3f})"
        )
    d = r.get("detail") or {}
    crit = f"{d.get('criterion', '?')} {d['score']:.3f} >= merge bar {d['bar']:.3f}" if "score" in d else "?"
    with_id = r.get("with_story_id")
    via = f", its group joining story {with_id}'s" if with_id not in (None, r["story_id"]) else ""
    return (
        f"{when(r['at'])}: story {r['merged_story_id']} ({r['moved']} article{'s' * (r['moved'] != 1)}) merged into story "
        f"{r['story_id']}: {crit}{via}"
    )


def explain_article(records: list[dict], article_id: str) -> list[str]:
    story, history, _ = memberships(records)
    if article_id not in history:
        raise ExplainError(f"--article {article_id}: no such article in this backfill's explanations")
    first, moves = history[article_id][0], history[article_id][1:]
    lines = [
        f"article {article_id} ({first['language']}): {first['title']!r} ({first.get('source') or '?'}, "
        f"{when(first['at'], first.get('time_known'))})",
        f"  arrival: {decision_summary(first)}",
    ]
    if first["candidates"]:
        lines.append(f"  candidates ({first['considered']} scored, the best {len(first['candidates'])} shown):")
        for c in first["candidates"]:
            mark = "  <- joined" if first["decision"] == "join" and c["story_id"] == first["story_id"] else ""
            lines.append(f"    {candidate_line(c, first['weights'])}{mark}")
    for r in moves:
        lines.append(f"  moved: {repair_summary(r)}")
    lines.append(f"  now in story {story[article_id]}")
    return lines


def explain_story(records: list[dict], story_id: str, links: dict[int, tuple] | None = None) -> list[str]:
    try:
        sid = int(story_id)
    except ValueError:
        raise ExplainError(f"--story {story_id}: not a story id (a number, as in stories.jsonl)") from None
    story, history, alias = memberships(records)
    lines = []
    if sid in alias:
        lines.append(f"story {sid} was merged into story {alias[sid]}; showing story {alias[sid]}")
        sid = alias[sid]
    members = sorted((a for a, s in story.items() if s == sid), key=lambda a: (history[a][0]["at"], a))
    if not members:
        raise ExplainError(f"--story {story_id}: no such story in this backfill (its ids: stories.jsonl)")
    lang = history[members[0]][0]["language"]
    lines.append(f"story {sid} ({lang}): {len(members)} articles")
    if sid in (links or {}):
        group, linked = links[sid]
        lines.append(f"  linked across languages (group {group}) with {', '.join(f'story {x}' for x in linked)}")
    for a in members:
        first = history[a][0]
        lines.append(
            f"  {a} {first['title']!r} ({first.get('source') or '?'}, {when(first['at'], first.get('time_known'))})"
        )
        lines.append(f"    {decision_summary(first)}")
        for r in history[a][1:]:
            lines.append(f"    moved: {repair_summary(r)}")
    touched = [
        r
        for r in records
        if r["kind"] != "decision"
        and r["language"] == lang
        and sid in (r["story_id"], r.get("new_story_id"), r.get("merged_story_id"))
    ]
    if touched:
        lines.append("  repairs of this story:")
        lines.extend(f"    {repair_summary(r)}" for r in touched)
    lines.append("  (newsroom explain --article ID for every candidate of an arrival)")
    return lines


def load_links(output: str) -> dict[int, tuple]:
    """story -> (link group, linked stories of other languages) from the backfill's ``stories.jsonl`` ({} when
    absent): the evaluate report's "all languages" section keys stories by their link group."""
    path = os.path.join(output, "stories.jsonl")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(x) for x in f if x.strip()]
    return {int(r["story_id"]): (r.get("group_id"), r["links"]) for r in rows if r.get("links")}


def main(args) -> int:
    try:
        records = load(args.output)
        if args.article:
            lines = explain_article(records, args.article)
        else:
            lines = explain_story(records, args.story, load_links(args.output))
    except ExplainError as exc:  # one line, the flag values in it escaped (pipelines/command_errors.py)
        raise CommandError(str(exc)) from None
    except (KeyError, TypeError, IndexError) as exc:  # a record this version cannot read
        where = os.path.join(args.output, FILE)
        raise CommandError(f"{where}: a record lacks {exc} (another version's? rerun the backfill)") from None
    print("\n".join(lines))  # stored titles and ids: printed through SafeStream (no terminal escapes)
    sys.stdout.flush()  # a closed pipe (`| head`) ends the command quietly (command_errors.run_command)
    return 0
