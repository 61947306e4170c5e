"""Fold a writer's change log into final assignments and story summaries (what a backfill writes).

Reads StoryChange records (any order; folded per language in ``seq`` order) and the cross-language LINK changes;
writes ``{"article_id", "story_id", "language", "group_id"}`` rows and story summary dicts. ``story_id`` is the id
after repair and alias resolution (MERGE: the absorbed id resolves to the survivor, one hop by construction since
merges always name the current survivor; SPLIT: moved articles carry the receiving story's id, a new
story or, from the re-clustering repair, a live one). ``group_id`` is the smallest story
id of the story's cross-language link component (the story itself when it has no links): the "same story across
languages" view used by ``newsroom evaluate``.
"""

from __future__ import annotations

from collections import defaultdict

from transforms.common import EXPIRE, LINK, MERGE, PLACEMENTS, SPLIT


def fold(changes) -> tuple[dict[str, int], dict[int, dict], dict[int, int]]:
    """(article -> story, story -> summary, alias -> survivor) after applying ``changes`` in (language, seq) order."""
    assign: dict[str, int] = {}
    article_lang: dict[str, str] = {}
    held: dict[int, set[str]] = defaultdict(set)
    stories: dict[int, dict] = {}
    alias: dict[int, int] = {}
    links: list[tuple[int, int, float | None]] = []
    for ch in sorted(changes, key=lambda c: (c["language"], int(c["seq"]))):
        kind = ch["kind"]
        sid = int(ch["story_id"])
        if kind in PLACEMENTS:
            aid = ch["article_id"]
            if aid in assign:
                raise ValueError(f"article {aid} assigned twice (seq {ch['seq']})")
            assign[aid] = sid
            held[sid].add(aid)
            article_lang[aid] = ch["language"]
            st = stories.setdefault(
                sid, {"story_id": sid, "language": ch["language"], "first_at": ch["at"], "expired_at": None}
            )
            st["last_at"] = max(st.get("last_at", ch["at"]), ch["at"])
        elif kind == MERGE:
            gone = int(ch["other_story_id"])
            for a in held.pop(gone, set()):
                assign[a] = sid
                held[sid].add(a)
            for k, v in list(alias.items()):
                if v == gone:
                    alias[k] = sid
            alias[gone] = sid
            if gone in stories:
                g = stories.pop(gone)
                st = stories.setdefault(sid, {"story_id": sid, "language": ch["language"], "first_at": g["first_at"]})
                st["first_at"] = min(st["first_at"], g["first_at"])
                st["last_at"] = max(st.get("last_at", g.get("last_at", 0)), g.get("last_at", 0))
        elif kind == SPLIT:
            new = int(ch["other_story_id"])
            for a in ch.get("article_ids") or []:
                held[assign[a]].discard(a)
                assign[a] = new
                held[new].add(a)
            if new not in stories:  # else a live story receiving moved articles (the re-clustering repair)
                stories[new] = {"story_id": new, "language": ch["language"], "first_at": ch["at"], "split_from": sid}
        elif kind == EXPIRE:
            if sid in stories:
                stories[sid]["expired_at"] = ch["at"]
        elif kind == LINK:
            links.append((sid, int(ch["other_story_id"]), ch.get("score")))
    members: dict[int, list[str]] = defaultdict(list)
    for a, s in assign.items():
        members[s].append(a)
    for sid, st in stories.items():
        st["articles"] = sorted(members.get(sid, []))
        st["size"] = len(st["articles"])
        st["links"] = []
    for a, b, _score in links:
        a, b = alias.get(a, a), alias.get(b, b)
        for x, y in ((a, b), (b, a)):
            if x in stories and y not in stories[x]["links"]:
                stories[x]["links"].append(y)
    for st in stories.values():
        st["links"].sort()
    return assign, {k: v for k, v in stories.items() if v["size"]}, alias


def link_groups(stories: dict[int, dict]) -> dict[int, int]:
    """story -> smallest story id of its link component (union-find over the stories' links)."""
    parent = {s: s for s in stories}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for s, st in sorted(stories.items()):
        for o in st.get("links", []):
            if o in parent:
                ra, rb = find(s), find(o)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    return {s: find(s) for s in stories}


def assignment_rows(changes, input_order: list[str] | None = None) -> tuple[list[dict], list[dict]]:
    """(assignment rows, story rows) of a backfill. Rows follow ``input_order`` when given, else article id."""
    assign, stories, _ = fold(changes)
    groups = link_groups(stories)
    order = input_order if input_order is not None else sorted(assign)
    rows = []
    for aid in order:
        sid = assign.get(aid)
        if sid is None:
            continue
        rows.append(
            {
                "article_id": aid,
                "story_id": sid,
                "language": stories[sid]["language"] if sid in stories else None,
                "group_id": groups.get(sid, sid),
            }
        )
    story_rows = []
    for sid in sorted(stories):
        st = dict(stories[sid])
        st["group_id"] = groups.get(sid, sid)
        story_rows.append(st)
    return rows, story_rows
