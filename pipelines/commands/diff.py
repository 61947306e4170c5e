"""``newsroom diff RUN_A RUN_B``: how two runs' stories differ (backfill outputs or exports, in any pairing).

Reads each run's ``assignments.jsonl`` (RUN is its folder, or the file itself): a ``newsroom backfill`` output or a
``newsroom export assignments`` folder. Headlines come from the run's ``stories.jsonl`` (an export's ``titles``) or its
``explanations.jsonl`` (a backfill's decision records). Story ids of two runs are unrelated numbers: stories are
matched by their articles. Only the articles both runs placed are compared (the others are counted apart: a run over
another range). Per language (each story of A against the stories of B its articles went to):

- unchanged: an A story whose articles are exactly one B story's;
- split: an A story whose articles went to several B stories, two of them or more with two articles or more;
- merged: a B story that took two A stories or more of two articles or more each;
- moved: the articles of an A story that left its largest part, when neither of the above (one article changing
  story is a move, not a split);
- joined: the articles of A stories that went whole into a B story holding another A story's articles (a singleton
  that joined a story, two small stories put together), when the B story is not a merge: with the moves, what
  explains every B story that is not an A story.

Then the cross-language groups (``group_id``, when both runs' rows carry it): an A group is unchanged when its
articles are exactly one B group's, else linked otherwise, listed with its stories and the B groups its articles
went to (every story can be unchanged while the links between languages differ).

Where the two runs decided an article of a changed story at different times (the live writer decides an article that
arrives after its clock has passed the article's first-seen time at that clock, a backfill at its first-seen time:
the live order differed), the change lists those articles with both times (``timing``): the reason a backfill of the
live history can decide otherwise. Times come from an export's ``decided_at`` and a backfill's explanations.

Prints the counts per language, then each changed story (up to ``--top`` per language) with its parts, their
headlines, and the ``newsroom explain --output DIR --story ID`` command of each side that has explanations (a
backfill); writes the same as one self-contained HTML page (``--html``, default ``diff.html`` in the current folder),
every text escaped. ``--json`` prints the whole comparison as JSON. A missing run, a folder without assignments or
a malformed line is one line on stderr and exit status 2.
"""

from __future__ import annotations

import html
import json
import os
import shlex
import sys
from collections import Counter, defaultdict

from pipelines.command_errors import CommandError, shown, utc_text
from pipelines.commands.evaluate_scores import InputError, read_jsonl, run_file


def add_arguments(parser) -> None:
    parser.add_argument("run_a", metavar="RUN_A", help="a backfill's --output or an export's --out (or its file)")
    parser.add_argument("run_b", metavar="RUN_B", help="the run to compare with RUN_A (the same kinds)")
    parser.add_argument("--top", type=int, default=20, help="changed stories listed per language. Default: 20")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--html", default="diff.html", help="the HTML page to write. Default: diff.html")
    parser.add_argument("--no-html", dest="write_html", action="store_false", help="do not write the HTML page")


class Run:
    """One run's assignments (article -> (story, language)), headlines and folder."""

    def __init__(self, path: str, flag: str):
        file = run_file(path, flag)
        self.folder = os.path.dirname(os.path.abspath(file))
        self.path = path
        self.story: dict[str, int] = {}
        self.language: dict[str, str] = {}
        self.group: dict[str, object] = {}  # cross-language group, when every row has one
        for r in read_jsonl(file, ("article_id", "story_id"), flag):
            aid = str(r["article_id"])
            self.story[aid] = int(r["story_id"]) if str(r["story_id"]).lstrip("-").isdigit() else r["story_id"]
            self.language[aid] = str(r.get("language") or "und")
            if r.get("group_id") is not None:
                self.group[aid] = r["group_id"]
        self.titles, self.headline, self.at = run_titles(self.folder)
        self.explains = os.path.exists(os.path.join(self.folder, "explanations.jsonl"))

    def explain(self, story) -> str | None:
        """The command that says why this run's story holds its articles (a backfill's), else None."""
        if not self.explains:
            return None
        return f"newsroom explain --output {shlex.quote(self.folder)} --story {story}"

    def title(self, story, members) -> str:
        return self.headline.get(story) or next((self.titles[a] for a in sorted(members) if self.titles.get(a)), "")


def run_titles(folder: str) -> tuple[dict[str, str], dict, dict[str, int]]:
    """(article -> headline, story -> headline, article -> decision time in ms) of a run folder: an export's
    stories.jsonl (``titles``, ``title``, ``decided_at``), else a backfill's explanations.jsonl decision records;
    empty when neither is there. An untimed article (``time_known`` false: decided at the stand-in clock from
    2000-01-01, transforms/stories/vocabulary/features.py) has no time here."""
    titles: dict[str, str] = {}
    headline: dict = {}
    at: dict[str, int] = {}
    stories = os.path.join(folder, "stories.jsonl")
    if os.path.exists(stories):
        for r in read_jsonl(stories, ("story_id",), "stories"):
            titles.update({str(a): str(t) for a, t in (r.get("titles") or {}).items()})
            at.update({str(a): int(t) for a, t in (r.get("decided_at") or {}).items() if isinstance(t, int)})
            if r.get("title"):
                headline[r["story_id"]] = str(r["title"])
    explanations = os.path.join(folder, "explanations.jsonl")
    if not titles and os.path.exists(explanations):
        for r in read_jsonl(explanations, ("kind",), "explanations"):
            if r["kind"] == "decision" and r.get("article_id") is not None:
                titles[str(r["article_id"])] = str(r.get("title") or "")
                if isinstance(r.get("at"), int) and r.get("time_known") is not False:  # not untimed's stand-in clock
                    at[str(r["article_id"])] = r["at"]
    return titles, headline, at


def compare(a: Run, b: Run) -> dict:
    """The comparison of module docstring: per language, counts and the changed stories."""
    common = sorted(set(a.story) & set(b.story))
    langs: dict[str, list[str]] = defaultdict(list)
    for aid in common:
        langs[a.language[aid]].append(aid)
    out = {
        "run_a": a.path,
        "run_b": b.path,
        "articles_compared": len(common),
        "only_in_a": len(set(a.story) - set(b.story)),
        "only_in_b": len(set(b.story) - set(a.story)),
        "languages": {lg: _language(a, b, ids) for lg, ids in sorted(langs.items())},
    }
    out["only"] = {"a": _only(a, b), "b": _only(b, a)}
    out["groups"] = _groups(a, b, common)
    totals = Counter()
    for s in out["languages"].values():
        totals.update(s["counts"])
    out["counts"] = dict(totals)
    return out


def _only(run: Run, other: Run) -> list[dict]:
    """The articles ``run`` placed and ``other`` did not, by time then id, with their time and headline there."""
    ids = sorted(set(run.story) - set(other.story), key=lambda x: (run.at.get(x) or 0, x))
    return [
        {"article_id": x, "at": run.at.get(x), "language": run.language[x], "title": run.titles.get(x, "")} for x in ids
    ]


# Why an article is in one run only (newsroom diff's text and page print it beside the articles).
ONLY_WHY = (
    "at a --from/--to bound an export keeps an article by the time the live writer took it (after its first-seen "
    "time when it arrived late), a backfill by its first-seen time; or the runs covered other ranges or languages"
)


def _language(a: Run, b: Run, ids: list[str]) -> dict:
    a_members, b_members = defaultdict(set), defaultdict(set)
    for aid in ids:
        a_members[a.story[aid]].add(aid)
        b_members[b.story[aid]].add(aid)
    changes = []
    counts = Counter(stories_a=len(a_members), stories_b=len(b_members), articles=len(ids))
    for sid, members in sorted(a_members.items(), key=lambda kv: (-len(kv[1]), str(kv[0]))):
        parts = _parts(members, b.story)
        if len(parts) == 1 and b_members[parts[0][0]] == members:
            counts["unchanged"] += 1
            continue
        big = [p for p in parts if len(p[1]) >= 2]
        if len(big) >= 2:
            counts["split"] += 1
            changes.append(_change("split", a, b, sid, members, parts))
        elif len(parts) > 1:
            moved = sum(len(p[1]) for p in parts[1:])
            counts["moved"] += moved
            changes.append(_change("moved", a, b, sid, members, parts))
    for sid, members in sorted(b_members.items(), key=lambda kv: (-len(kv[1]), str(kv[0]))):
        parts = _parts(members, a.story)
        if sum(1 for p in parts if len(p[1]) >= 2) >= 2:
            counts["merged"] += 1
            changes.append(_change("merged", b, a, sid, members, parts, reverse=True))
            continue
        whole = [arts for asid, arts in parts[1:] if len(arts) == len(a_members[asid])]  # came whole, not moved
        if whole:
            counts["joined"] += sum(len(arts) for arts in whole)
            changes.append(_change("joined", b, a, sid, members, parts, reverse=True))
    return {"counts": dict(counts), "changes": changes}


def _groups(a: Run, b: Run, ids: list[str]) -> dict | None:
    """The runs' cross-language groups (``group_id``) over the articles both placed: an A group is unchanged when
    its articles are exactly one B group's, else linked otherwise (listed with the B groups its articles went to).
    None when a run's rows carry no groups. Stories can all be unchanged while their links differ."""
    if not all(x in a.group and x in b.group for x in ids):
        return None
    a_members, b_members = defaultdict(set), defaultdict(set)
    for x in ids:
        a_members[a.group[x]].add(x)
        b_members[b.group[x]].add(x)
    counts = Counter(groups_a=len(a_members), groups_b=len(b_members), unchanged=0, changed=0)
    changes = []
    for gid, members in sorted(a_members.items(), key=lambda kv: (-len(kv[1]), str(kv[0]))):
        parts = _parts(members, b.group)
        if len(parts) == 1 and b_members[parts[0][0]] == members:
            counts["unchanged"] += 1
            continue
        counts["changed"] += 1
        parts_b = [{"group_id": g, "stories": _group_stories(b, b_members[g])} for g, _ in parts]
        changes.append({"group_id": gid, "stories": _group_stories(a, members), "parts": parts_b})
    return {"counts": dict(counts), "changes": changes}


def _group_stories(run: Run, members: set[str]) -> list[dict]:
    """A group's stories in ``run``: language, story, how many of ``members`` it holds, headline."""
    by = defaultdict(set)
    for x in members:
        by[(run.language[x], run.story[x])].add(x)
    return [
        {"language": lg, "story_id": sid, "articles": len(arts), "headline": run.title(sid, arts)}
        for (lg, sid), arts in sorted(by.items(), key=lambda kv: (kv[0][0], -len(kv[1]), str(kv[0][1])))
    ]


def _group_line(side: str, g: dict) -> str:
    stories = " + ".join(
        f"{s['language']} story {s['story_id']} ({s['articles']}) {s['headline']!r}" for s in g["stories"]
    )
    return f"{side} group {g['group_id']}: {stories}"


def _parts(members: set[str], other: dict) -> list[tuple[object, list[str]]]:
    """The other run's stories holding ``members``, largest first: [(story, its articles of members)]."""
    by = defaultdict(list)
    for aid in sorted(members):
        by[other[aid]].append(aid)
    return sorted(by.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))


def _change(kind, run, other, sid, members, parts, reverse=False) -> dict:
    """One changed story: its side, headline and explain command, and its parts in the other run."""
    side, other_side = ("b", "a") if reverse else ("a", "b")
    return {
        "kind": kind,
        "side": side,
        "story_id": sid,
        "size": len(members),
        "headline": run.title(sid, members),
        "explain": run.explain(sid),
        "parts": [
            {
                "side": other_side,
                "story_id": osid,
                "articles": [{"article_id": x, "title": other.titles.get(x) or run.titles.get(x, "")} for x in arts],
                "explain": other.explain(osid),
            }
            for osid, arts in parts
        ],
        "timing": [
            {"article_id": x, f"at_{side}": run.at[x], f"at_{other_side}": other.at[x]}
            for x in sorted(members)
            if x in run.at and x in other.at and run.at[x] != other.at[x]
        ],
    }


COUNT_KEYS = ("stories_a", "stories_b", "unchanged", "split", "merged", "moved", "joined")


def format_text(d: dict, top: int) -> list[str]:
    lines = [
        f"diff A {d['run_a']}  B {d['run_b']}: {d['articles_compared']} articles in both"
        f" ({d['only_in_a']} only in A, {d['only_in_b']} only in B)",
        f"{'language':10s} " + " ".join(f"{k:>9s}" for k in COUNT_KEYS) + "  (moved, joined: articles)",
    ]
    for lg, s in [*d["languages"].items(), ("all", {"counts": d["counts"]})]:
        lines.append(f"{lg:10s} " + " ".join(f"{s['counts'].get(k, 0):9d}" for k in COUNT_KEYS))
    for side, only in sorted(d.get("only", {}).items()):
        if only:
            lines.append(f"only in {side.upper()} ({len(only)}): {ONLY_WHY}")
            lines += [f"    {x['article_id']} {side.upper()} {_at(x['at'])} {x['title']!r}" for x in only[:top]]
            if len(only) > top:
                lines.append(f"    and {len(only) - top} more (--top, --json)")
    lines += _groups_text(d.get("groups"), top)
    for lg, s in d["languages"].items():
        for ch in s["changes"][:top]:
            lines.append(
                f"{lg} {ch['kind']}: {ch['side'].upper()} story {ch['story_id']} ({ch['size']} articles)"
                f" {ch['headline']!r}"
            )
            if ch["explain"]:
                lines.append(f"    why: {ch['explain']}")
            for t in ch.get("timing", []):
                lines.append(
                    f"    decided at another time: {t['article_id']} A {_utc(t['at_a'])}, B {_utc(t['at_b'])}"
                    " (the runs took it in another order)"
                )
            for p in ch["parts"]:
                first = p["articles"][0]
                more = f" and {len(p['articles']) - 1} more" if len(p["articles"]) > 1 else ""
                lines.append(
                    f"  -> {p['side'].upper()} story {p['story_id']}: {first['title']!r} ({first['article_id']}){more}"
                )
                if p["explain"]:
                    lines.append(f"       why: {p['explain']}")
        if len(s["changes"]) > top:
            lines.append(f"{lg}: {len(s['changes']) - top} more changed stories (--top)")
    return lines


def _groups_text(g: dict | None, top: int) -> list[str]:
    if not g:
        return []
    c = g["counts"]
    lines = [
        f"cross-language groups: A {c['groups_a']}, B {c['groups_b']}, unchanged {c['unchanged']}, linked otherwise"
        f" {c['changed']}"
    ]
    for ch in g["changes"][:top]:
        lines.append(_group_line("A", ch))
        lines += [f"  -> {_group_line('B', p)}" for p in ch["parts"]]
    if len(g["changes"]) > top:
        lines.append(f"{len(g['changes']) - top} more groups linked otherwise (--top)")
    return lines


def _at(ms: int | None) -> str:
    return _utc(ms) if ms is not None else "unknown time"  # untimed, or no decision record in its files


def _utc(ms: int) -> str:
    return utc_text(ms, "ms")


def format_html(d: dict, top: int) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><th>{e(lg)}</th>" + "".join(f"<td>{s['counts'].get(k, 0)}</td>" for k in COUNT_KEYS) + "</tr>"
        for lg, s in [*d["languages"].items(), ("all", {"counts": d["counts"]})]
    )
    body = [
        f"<h1>diff</h1><p>A <code>{e(str(d['run_a']))}</code>, B <code>{e(str(d['run_b']))}</code>: "
        f"{d['articles_compared']} articles in both ({d['only_in_a']} only in A, {d['only_in_b']} only in B)</p>",
        "<table border=1><tr><th>language</th>" + "".join(f"<th>{k}</th>" for k in COUNT_KEYS) + f"</tr>{rows}</table>",
    ]
    for side, only in sorted(d.get("only", {}).items()):
        if only:
            items = "".join(
                f"<li>{e(x['title'])} <small>{e(x['article_id'])} {_at(x['at'])}</small></li>" for x in only[:top]
            )
            more = f"<p>and {len(only) - top} more</p>" if len(only) > top else ""
            body.append(f"<h2>only in {side.upper()} ({len(only)})</h2><p>{e(ONLY_WHY)}</p><ul>{items}</ul>{more}")
    if d.get("groups"):
        items = "".join(
            f"<li>{e(_group_line('A', ch))}<ul>"
            + "".join(f"<li>{e(_group_line('B', p))}</li>" for p in ch["parts"])
            + "</ul></li>"
            for ch in d["groups"]["changes"][:top]
        )
        body.append(f"<h2>cross-language groups</h2><p>{e(_groups_text(d['groups'], 0)[0])}</p><ul>{items}</ul>")
    for lg, s in d["languages"].items():
        body.append(f"<h2>{e(lg)}</h2>")
        for ch in s["changes"][:top]:
            why = f"<div><code>{e(ch['explain'])}</code></div>" if ch["explain"] else ""
            why += "".join(
                f"<div>decided at another time: {e(t['article_id'])} A {_utc(t['at_a'])}, B {_utc(t['at_b'])}</div>"
                for t in ch.get("timing", [])
            )
            parts = "".join(
                f"<li>{p['side'].upper()} story {e(str(p['story_id']))}"
                + (f" <code>{e(p['explain'])}</code>" if p["explain"] else "")
                + "<ul>"
                + "".join(f"<li>{e(x['title'])} <small>{e(x['article_id'])}</small></li>" for x in p["articles"])
                + "</ul></li>"
                for p in ch["parts"]
            )
            body.append(
                f"<h3>{e(ch['kind'])}: {ch['side'].upper()} story {e(str(ch['story_id']))} ({ch['size']} articles): "
                f"{e(ch['headline'])}</h3>{why}<ul>{parts}</ul>"
            )
    return "<!doctype html><meta charset=utf-8><title>newsroom diff</title>" + "".join(body) + "\n"


def main(args) -> int:
    if args.top < 0:
        raise CommandError(f"--top {args.top}: must be 0 or more")
    try:
        for flag, path in (("RUN_A", args.run_a), ("RUN_B", args.run_b)):
            if not os.path.exists(path):
                raise InputError(f"{flag} {path}: no such folder or file")
        d = compare(Run(args.run_a, "RUN_A"), Run(args.run_b, "RUN_B"))
    except InputError as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        json.dump(d, sys.stdout, indent=2, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        print("\n".join(format_text(d, args.top)))
    if args.write_html:
        try:
            with open(args.html, "w", encoding="utf-8") as f:
                f.write(format_html(d, args.top))
        except OSError as exc:
            raise CommandError(f"--html {shown(args.html)}: {exc.strerror or exc}") from None
        print(f"HTML page: {args.html}", file=sys.stderr)
    return 0
