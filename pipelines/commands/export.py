"""``newsroom export assignments``: what the live system decided, in the backfill's assignments format.

Reads the story store the store flags name (the embedded SQLite database under ``--data_dir``, or Bigtable with
``--backend gcp``; only through the StoryStore interface: :meth:`~stores.base.StoryStore.story_ids` pages and
:meth:`~stores.base.StoryStore.get_story`) and writes, under ``--out`` DIR, the files a backfill writes, so that
``newsroom diff``, ``newsroom evaluate`` and an analyst's scripts read both alike:

- ``assignments.jsonl``: one ``{"article_id", "story_id", "language", "group_id"}`` per article, ordered by its first
  seen time then id; ``story_id`` as the store holds it after every repair (splits move member rows, merges leave an
  alias whose survivor holds the members; a member row left under an alias is resolved to its survivor);
  ``group_id`` the smallest story id of the story's cross-language link component
  (transforms/stories/backfill/assignments.py :func:`link_groups`, as a backfill computes it).
- ``stories.jsonl``: one row per story (id, language, first/last time of its exported members, size, articles,
  links, group_id, its headline ``title`` and each member's ``titles``, for the diff's headlines).
- ``manifest.json``: the command, the store, the bounds and the counts.

``--from`` / ``--to`` keep the articles the live writer took at or after / before the bound (ISO 8601, the backfill's
flags): the store's member time, the first-seen time but for an article that arrived late (then its decision time),
``--language`` some languages: the export of the range a backfill covered. A story row the export cannot read
(no language, a member without a time) is counted and named in ``dead_letters.jsonl``, never guessed.
"""

from __future__ import annotations

import json
import os
import sys

from pipelines.command_errors import CommandError, shown

PAGE = 1000


def add_arguments(parser) -> None:
    from stores import add_store_arguments

    parser.add_argument("what", choices=["assignments"], help="what to export (assignments: the live stories)")
    parser.add_argument("--out", required=True, help="output folder (created; its export files are replaced)")
    parser.add_argument(
        "--from",
        dest="from_date",
        default=None,
        help="keep articles the live writer took at or after this UTC time (ISO 8601): their first-seen time, or "
        "their decision time when they reached it late",
    )
    parser.add_argument(
        "--to",
        dest="to_date",
        default=None,
        help="keep articles the live writer took before this UTC time (ISO 8601), as --from",
    )
    parser.add_argument("--language", default=None, help="comma-separated language codes to keep. Default: all")
    add_store_arguments(parser, with_project=True)
    for action in parser._actions:  # the story table only: no snapshot is read, so no bucket is needed
        if action.dest == "snapshot_bucket":
            action.help = "not needed: an export reads the story table only"


def bound(value: str | None, flag: str) -> int | None:
    """``value`` as ms since the epoch, or None; CommandError naming the flag when it is not a date or time."""
    if not value:
        return None
    from transforms.stories.vocabulary.features import parse_time

    t = parse_time(value)
    if t is None:
        raise CommandError(f"{flag} {shown(value)}: not an ISO 8601 date or time (e.g. 2026-12-01 or 2026-12-01T10:00)")
    return t


def scan(store):
    """Every stored story (aliases included), by ascending id, one page at a time."""
    after = -1
    while True:
        ids = store.story_ids(after=after, limit=PAGE)
        for sid in ids:
            story = store.get_story(sid)
            if story is not None:
                yield story
        if len(ids) < PAGE:
            return
        after = ids[-1]


def collect(stories, since=None, until=None, languages=None) -> tuple[dict, dict, list]:
    """(article -> (story, language, at, title), story -> {language, title, links}, dead letters) of the stored
    stories, aliases resolved and the bounds applied."""
    survivor = {s["story_id"]: s["alias_of"] for s in stories if s.get("alias_of") is not None}
    placed: dict[str, tuple] = {}
    info: dict[int, dict] = {}
    dead: list[dict] = []
    for s in stories:
        sid = int(s["story_id"])
        meta = s.get("meta") or {}
        entry = info.setdefault(survivor.get(sid, sid), {"language": None, "title": "", "links": set()})
        entry["links"].update(survivor.get(int(o), int(o)) for o in s.get("links") or {})  # links of a merged story too
        if s.get("alias_of") is None:
            entry.update(language=meta.get("language"), title=meta.get("title", ""))
        for aid, m in sorted((s.get("members") or {}).items()):
            target = survivor.get(sid, sid)
            at = (m or {}).get("at")
            if at is None:
                dead.append({"story_id": sid, "article_id": aid, "reason": "member row without a time (at)"})
                continue
            if aid in placed:
                dead.append({"story_id": sid, "article_id": aid, "reason": f"also a member of story {placed[aid][0]}"})
                continue
            placed[aid] = (target, int(at), m.get("title", ""))
    out: dict[str, tuple] = {}
    for aid, (sid, at, title) in placed.items():
        lang = (info.get(sid) or {}).get("language")
        if lang is None:
            dead.append({"story_id": sid, "article_id": aid, "reason": "its story has no meta (no language)"})
            continue
        if (since is not None and at < since) or (until is not None and at >= until):
            continue
        if languages and lang not in languages:
            continue
        out[aid] = (sid, lang, at, title)
    return out, info, dead


def export_rows(placed: dict, info: dict) -> tuple[list[dict], list[dict]]:
    """(assignment rows, story rows) in the backfill's formats."""
    from transforms.stories.backfill.assignments import link_groups

    stories: dict[int, dict] = {}
    for aid, (sid, lang, at, title) in sorted(placed.items(), key=lambda kv: (kv[1][2], kv[0])):
        st = stories.setdefault(
            sid, {"story_id": sid, "language": lang, "first_at": at, "title": info[sid]["title"], "titles": {}}
        )
        st["last_at"] = at
        st.setdefault("articles", []).append(aid)
        st["titles"][aid] = title
        st.setdefault("decided_at", {})[aid] = at  # when the live writer decided it (newsroom diff's timing)
    for sid, st in stories.items():
        st["articles"].sort()
        st["size"] = len(st["articles"])
        st["links"] = sorted(o for o in info[sid]["links"] if o in stories and o != sid)
    groups = link_groups(stories)
    rows = [
        {"article_id": aid, "story_id": sid, "language": lang, "group_id": groups[sid]}
        for aid, (sid, lang, _at, _t) in sorted(placed.items(), key=lambda kv: (kv[1][2], kv[0]))
    ]
    story_rows = [dict(stories[sid], group_id=groups[sid]) for sid in sorted(stories)]
    return rows, story_rows


def write_jsonl(path: str, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n")


def main(args) -> int:
    from stores import config_from_args, open_store

    since, until = bound(args.from_date, "--from"), bound(args.to_date, "--to")
    if since is not None and until is not None and since >= until:
        raise CommandError(f"--from {shown(args.from_date)} is not before --to {shown(args.to_date)}")
    config = config_from_args(args, project=getattr(args, "project", None), snapshots=False)  # the story table only
    if config.backend == "embedded" and not os.path.exists(config.embedded_db):
        raise CommandError(
            f"--data_dir {shown(config.data_dir)}: no story store there (no {shown(config.embedded_db)}); "
            "export reads the stores `newsroom run` or the stories job wrote"
        )
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise CommandError(f"--out {shown(args.out)}: is a file, not a folder")
    languages = {x.strip().lower() for x in args.language.split(",")} if args.language else None
    stories = list(scan(open_store("stories", config)))
    placed, info, dead = collect(stories, since, until, languages)
    rows, story_rows = export_rows(placed, info)
    os.makedirs(args.out, exist_ok=True)
    write_jsonl(os.path.join(args.out, "assignments.jsonl"), rows)
    write_jsonl(os.path.join(args.out, "stories.jsonl"), story_rows)
    write_jsonl(os.path.join(args.out, "dead_letters.jsonl"), dead)
    manifest = {
        "command": "newsroom export assignments",
        "store": {"backend": config.backend, "data_dir": config.data_dir, "namespace": config.namespace},
        "options": {"from_date": args.from_date, "to_date": args.to_date, "language": args.language},
        "counts": {"articles": len(rows), "stories": len(story_rows), "dead_letters": len(dead)},
    }
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
    print(
        f"exported {len(rows)} articles in {len(story_rows)} stories to {args.out}"
        + (f"; {len(dead)} unreadable rows in dead_letters.jsonl" if dead else "")
        + (_outside(stories) if not rows and (since is not None or until is not None or languages) else ""),
        file=sys.stderr,
    )
    return 0


def _outside(stories) -> str:
    """Why an export of a range or language came out empty: when and in which languages the store's articles were
    taken (an example range copied from the docs, or a store of other days)."""
    import datetime as dt

    everything = collect(stories)[0]
    if not everything:
        return ""
    times = [at for _sid, _lang, at, _title in everything.values()]
    langs = ", ".join(sorted({lang for _sid, lang, _at, _title in everything.values()}))

    def utc(ms):
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")

    return (
        f"; none of the store's {len(everything)} articles is in the range or languages asked: they were taken "
        f"from {utc(min(times))} to {utc(max(times))}, in {langs}"
    )
