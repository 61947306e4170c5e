"""``newsroom fairness``: a per-publisher report of one edition's day of snapshots (JSON and HTML), to show a
publisher what it got and why it lost.

Reads the snapshot store the store flags name (``--data_dir`` for the embedded backend's local snapshot files):
every page version of the edition (``pages/{edition}/{section}/v{n}.json``, ``n`` = the cycle's minute) live
during the UTC day, the pool versions (their ``concentration.capped``) and the latest coverage of every story
shown (``stories/{id}/v{n}.json``). Writes ``fairness-{edition}-{day}.json`` and ``.html`` into ``--out``.

Per publisher:

- ``impressions``: estimated representative impressions, the position weight of each slot it represents
  (transforms/editions/cycle/fairness.py: ``1 / log2(rank + 1)``) times the minutes that page version was live that day
  (an unchanged page is not rewritten, so a version stands for every minute until the next one);
- ``headline_wins``: stories whose card showed its article (as representative) on any page that day;
- ``close_calls_lost``: stories shown that day in which it had an article but another ownership group's article
  represented the story, each with the reason, checked in this order: ``capped`` (its group was passed over by
  the share cap when the story was shown), ``copy`` (its article is a syndicated copy: labelled wire, and it is
  not a wire service), ``paywalled`` (its article is paid, the winner free), ``older`` (its article was first
  seen before the winner's: the representative prefers the freshest telling), else ``less_central`` (its headline
  was less typical of the story or its authority lower). The snapshots keep no scores of articles not chosen,
  so every lost story counts, not only the near-ties;
- the edition's ``concentration`` over the day: the Herfindahl index of the publishers' impression shares.
"""

from __future__ import annotations

import bisect
import html
import json
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from transforms.common import DAY_MS, MINUTE_MS
from transforms.editions.cycle.fairness import herfindahl, position_weight

REASONS = ("capped", "copy", "paywalled", "older", "less_central")
MAX_EXAMPLES = 5
_VERSION = re.compile(r"/v(\d+)\.json$")
EDITION = re.compile(r"^[a-z]{2}-[a-z]{2,3}$")  # as the origin's (serving/api/foryou.py)
DAY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def add_arguments(parser) -> None:
    parser.add_argument("--edition", required=True, help="Edition id, e.g. us-en.")
    parser.add_argument("--day", required=True, help="UTC day of the snapshots, YYYY-MM-DD.")
    parser.add_argument("--out", default=".", help="Directory for the JSON and HTML report. Default: here.")
    parser.add_argument(
        "--publishers", default=None, help="Publisher registry (ownership groups, wire services). Default: packaged."
    )
    from stores import add_store_arguments

    add_store_arguments(parser, with_project=True)


def _versions(stores, prefix: str) -> list[tuple[int, str]]:
    out = []
    for path in stores.snapshots.list(prefix):
        m = _VERSION.search(path)
        if m:
            out.append((int(m.group(1)), path))
    return sorted(out)


def _day_spans(versions: list[tuple[int, str]], start: int, end: int) -> list[tuple[int, str, int]]:
    """(version, path, minutes live within [start, end)) of the versions live during the day (minute numbers)."""
    out = []
    for k, (v, path) in enumerate(versions):
        nxt = versions[k + 1][0] if k + 1 < len(versions) else end
        live = min(nxt, end) - max(v, start)
        if live > 0:
            out.append((v, path, live))
    return out


def build_report(stores, registry, edition: str, day: str) -> dict:
    """The report document (module docstring); ValueError for a day that is not YYYY-MM-DD."""
    try:
        d0 = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"--day must be YYYY-MM-DD, got {day!r}") from None
    start = int(d0.timestamp() * 1000) // MINUTE_MS
    end = start + DAY_MS // MINUTE_MS
    load = lambda path: json.loads(stores.snapshots.get(path))  # noqa: E731
    pools = [(v, load(p).get("concentration", {}).get("capped", ())) for v, p, _ in _day_spans(
        _versions(stores, f"pools/{edition}/"), start, end)]  # fmt: skip
    pool_v = [v for v, _ in pools]
    group = lambda pid: registry.get(pid).group if registry.get(pid) else pid  # noqa: E731
    pubs: dict[str, dict] = {}

    def entry(pid: str, name: str = "") -> dict:
        e = pubs.setdefault(pid, {"name": name or pid, "group": group(pid), "impressions": 0.0, "headline_wins": 0,
                                  "close_calls_lost": 0, "lost_because": dict.fromkeys(REASONS, 0), "examples": []})  # fmt: skip
        e["name"] = name or e["name"]
        return e

    shown: dict[str, tuple] = {}  # story id -> (representative card, capped groups when first shown)
    won: set = set()
    n_versions = 0
    for path in sorted({p.rsplit("/", 2)[0] + "/" for _, p in _versions(stores, f"pages/{edition}/")}):
        for v, p, minutes in _day_spans(_versions(stores, path), start, end):
            n_versions += 1
            k = bisect.bisect_right(pool_v, v) - 1
            capped = set(pools[k][1]) if k >= 0 else set()
            for s in load(p)["stories"]:
                rep = s["representative"]
                e = entry(rep["publisher_id"], rep.get("publisher_name", ""))
                e["impressions"] += position_weight(int(s["rank"])) * minutes
                if (rep["publisher_id"], s["story_id"]) not in won:
                    won.add((rep["publisher_id"], s["story_id"]))
                    e["headline_wins"] += 1
                shown.setdefault(s["story_id"], (rep, capped))
    for sid, (rep, capped) in sorted(shown.items()):
        _close_calls(stores, registry, sid, rep, capped, entry, group)
    impressions = {pid: e["impressions"] for pid, e in pubs.items()}
    for e in pubs.values():
        e["impressions"] = round(e["impressions"], 3)
    return {
        "edition": edition,
        "day": day,
        "page_versions": n_versions,
        "stories_shown": len(shown),
        "concentration": round(herfindahl(impressions), 6),
        "position_weights": "1 / log2(rank + 1), times the minutes each page version was live",
        "publishers": dict(sorted(pubs.items(), key=lambda kv: (-kv[1]["impressions"], kv[0]))),
    }


def _close_calls(stores, registry, sid: str, rep: dict, capped: set, entry, group) -> None:
    """Counts the story's lost close calls (module docstring) on the publishers that had an article in it."""
    versions = _versions(stores, f"stories/{sid}/")
    if not versions:
        return
    articles = json.loads(stores.snapshots.get(versions[-1][1]))["articles"]
    winner = group(rep["publisher_id"])
    rep_paid = "paid" in (rep.get("labels") or ())
    seen = set()
    for a in articles:
        pid = a["publisher_id"]
        if group(pid) == winner or pid in seen:
            continue
        seen.add(pid)
        pub = registry.get(pid)
        labels = set(a.get("labels") or ())
        if group(pid) in capped:
            reason = "capped"
        elif "wire" in labels and not (pub and pub.is_wire):
            reason = "copy"
        elif "paid" in labels and not rep_paid:
            reason = "paywalled"
        elif a.get("first_seen_at", "") < rep.get("first_seen_at", ""):
            reason = "older"  # ISO UTC strings of one format compare as times
        else:
            reason = "less_central"
        e = entry(pid, a.get("publisher_name", ""))
        e["close_calls_lost"] += 1
        e["lost_because"][reason] += 1
        if len(e["examples"]) < MAX_EXAMPLES:
            e["examples"].append({"story_id": sid, "winner": rep["publisher_id"], "reason": reason})


def render_html(report: dict) -> str:
    """The report as one self-contained HTML page (escaped; no script)."""
    esc = html.escape
    rows = []
    for pid, e in report["publishers"].items():
        why = ", ".join(f"{r} {n}" for r, n in e["lost_because"].items() if n) or "-"
        rows.append(
            f"<tr><td>{esc(e['name'])} <small>{esc(pid)}</small></td><td>{esc(e['group'])}</td>"
            f"<td>{e['impressions']:.1f}</td><td>{e['headline_wins']}</td><td>{e['close_calls_lost']}</td>"
            f"<td>{esc(why)}</td></tr>"
        )
    return (
        f"<!doctype html><html lang=en><meta charset=utf-8><title>Fairness {esc(report['edition'])} "
        f"{esc(report['day'])}</title><h1>Fairness report: {esc(report['edition'])}, {esc(report['day'])}</h1>"
        f"<p>{report['page_versions']} page versions, {report['stories_shown']} stories shown; concentration "
        f"(Herfindahl over impression shares) {report['concentration']:.4f}. Impressions: "
        f"{esc(report['position_weights'])}.</p><table><thead><tr><th>publisher</th><th>owner</th>"
        f"<th>impressions</th><th>headline wins</th><th>close calls lost</th><th>why</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></html>\n"
    )


def _registry(path: str | None):
    """The publisher registry of ``--publishers`` (checked row by row), else the packaged one."""
    from pipelines.command_errors import load_input
    from transforms.publishers import default_registry
    from transforms.registry_files import registry_file

    if path is None:
        return default_registry()
    return load_input("--publishers", path, registry_file, "a publishers file")  # bad rows named by line


def check_flags(args) -> None:
    """CommandError (exit 2, nothing written) for a malformed --edition or --day or an --out that is not a folder."""
    from pipelines.command_errors import CommandError, shown

    if not EDITION.fullmatch(args.edition):
        raise CommandError(f"--edition {shown(args.edition)}: not an edition id (like us-en)")
    try:
        ok = bool(DAY.fullmatch(args.day)) and datetime.strptime(args.day, "%Y-%m-%d") is not None
    except ValueError:
        ok = False
    if not ok:
        raise CommandError(f"--day {shown(args.day)}: not a day (YYYY-MM-DD)")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise CommandError(f"--out {shown(args.out)}: is a file, not a folder")


def main(args) -> int:
    from stores import config_from_args, open_stores

    check_flags(args)
    registry = _registry(args.publishers)
    report = build_report(open_stores(config_from_args(args)), registry, args.edition, args.day)
    if not report["page_versions"]:
        print(f"newsroom fairness: no page of {args.edition} was live on {args.day}", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = out / f"fairness-{args.edition}-{args.day}"
    base.with_suffix(".json").write_text(json.dumps(report, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    base.with_suffix(".html").write_text(render_html(report), encoding="utf-8")
    print(f"{base}.json, {base}.html: {len(report['publishers'])} publishers, concentration {report['concentration']}")
    return 0
