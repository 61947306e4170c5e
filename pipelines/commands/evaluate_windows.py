"""Per-window scores of ``newsroom evaluate``: each day (and each 7-day week) of the gold articles scored alone, the
windows' scores then averaged, beside the whole-stream scores.

The field reports both (SCStory scores 7-day windows): a window only holds the pairs of its own articles, so a story
that runs for weeks is scored piecewise, and a window score is not comparable with a whole-stream score; the report
prints them apart, labelled. Windows follow the gold rows' ``published_at`` (UTC days from midnight; weeks of 7 days
from the first timed article's day); untimed gold articles (no ``published_at``; in a run taken as gold, one its
writer decided at the stand-in clock of untimed input) are left out of the windows and counted. Both metrics,
B-cubed and pairwise, each averaged over the windows that hold an article (unweighted: a quiet day counts as
much as a busy one, as in the per-window figures of the literature).
"""

from __future__ import annotations

from collections import defaultdict

from transforms.common import DAY_MS, WEEK_MS

WINDOWS = {"day": DAY_MS, "week": WEEK_MS}
METRICS = ("b3_precision", "b3_recall", "b3_f1", "pair_precision", "pair_recall", "pair_f1")


def parse_ms(value) -> int | None:
    """ms since the epoch of a gold row's ``published_at`` (ISO 8601 or ms), None when absent or unreadable."""
    if value in (None, ""):
        return None
    from transforms.stories.vocabulary.features import parse_time

    return parse_time(value)


def gold_times(rows: list[dict], gold_path: str) -> tuple[dict[str, int | None], str]:
    """(article -> ms, where the times came from): the gold ``rows``' ``published_at``; when none has one and the gold
    is another run's assignments, that run's times (an export's ``decided_at``, a backfill's decision times:
    :func:`pipelines.commands.diff.run_titles`), its first-seen time but for an article the live writer took late."""
    import os

    times = {str(r["id"]): parse_ms(r.get("published_at")) for r in rows}
    if any(t is not None for t in times.values()) or not any("article_id" in r for r in rows):
        return times, "published_at"
    from pipelines.commands.diff import run_titles

    folder = os.path.dirname(os.path.abspath(gold_path))
    decided = run_titles(folder)[2]
    return {a: decided.get(a) for a in times}, "the gold run's decision times (decided_at)"


def window_scores(gold: dict[str, str], pred: dict, times: dict[str, int], score) -> dict:
    """{"day": {...}, "week": {...}}: per window size, the number of windows, of timed and untimed articles and the
    mean of each metric over the windows, each window scored by ``score(gold, pred)`` (evaluate's)."""
    timed = {a: t for a, t in times.items() if a in gold and t is not None}
    out = {}
    if not timed:
        return {"untimed": len(gold)}
    start = min(timed.values()) // DAY_MS * DAY_MS
    for name, size in WINDOWS.items():
        buckets: dict[int, dict[str, str]] = defaultdict(dict)
        for a, t in timed.items():
            buckets[(t - start) // size][a] = gold[a]
        scores = [score(g, pred) for g in buckets.values()]
        out[name] = {"windows": len(scores), "articles": len(timed)}
        out[name].update({m: sum(s[m] for s in scores) / len(scores) for m in METRICS})
    out["untimed"] = len(gold) - len(timed)
    return out


def format_windows(w: dict | None) -> list[str]:
    if not w:
        return []
    if "day" not in w:
        return ["windows: none (no gold article has a published_at, nor a decision time in its run's files)"]
    lines = [
        "per window (each window scored alone, then the mean over windows; not comparable with the whole-stream rows):"
    ]
    if w.get("times", "published_at") != "published_at":
        lines.append(f"  windows by {w['times']}")
    for name in WINDOWS:
        s = w[name]
        vals = " ".join(f"{s[m]:8.3f}" for m in METRICS)
        lines.append(f"{'mean/' + name:10s} {s['windows']:6d} {vals}   ({s['windows']} {name} windows)")
    if w.get("untimed"):
        lines.append(f"  {w['untimed']} gold articles without a time are in no window")
    return lines
