"""``newsroom evaluate``: score story assignments against gold labels.

Reads a gold file (the labelled JSONL schema: ``id``, ``story_id``, ``language``; or another run's assignments,
``article_id`` for ``id``: two runs compared, one taken as the reference) and predicted assignments
(``{"article_id", "story_id"[, "group_id"]}`` per line, as ``newsroom backfill`` writes them); writes a report to
stdout (text, or JSON with ``--json``) and an HTML page for an analyst (:mod:`pipelines.commands.evaluate_html`,
``--html``): B-cubed and pairwise (pair-counting) precision / recall / F1 overall and per
language, the number of gold stories split over several predicted stories, and the number of predicted stories that
mix several gold events.

``--scope run`` scores only the gold articles the run placed (a backfill of a date range or of one language); the
report says how many were left out. Beside the whole-stream scores, the mean of per-window scores (each UTC day, each
7-day week scored alone: :mod:`pipelines.commands.evaluate_windows`), labelled apart since the two do not compare.

Cross-language links count as the same story: by default the predicted cluster of an article is its ``group_id``
(the link component, see transforms/stories/backfill/assignments.py) when the file has one; ``--no-links`` scores the
per-language ``story_id`` instead. Per-language figures always use pairs inside that language. Articles missing from
the predictions are counted as singletons (and reported).

Misuse is refused, never scored: gold and predictions whose article ids barely overlap (fewer than ``--min-overlap``
of the gold articles, default half, have a prediction: two different data sets, or a backfill of another file)
exit with status 2 and the overlap in the message, since the scores would be meaningless (a set scored against
nothing but singletons reads as perfect precision). A missing file, a folder given for a file, or a line that is not
a JSON object with the fields the file needs is one line on stderr (file and line number) and status 2, never a
traceback (:class:`InputError`).

No heavy imports: this module is loaded by the ``newsroom`` command at start-up.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict

from pipelines.command_errors import CommandError
from pipelines.commands.evaluate_scores import (
    InputError,
    Inputs,
    check_overlap,
    in_scope,
    score,
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--gold",
        required=True,
        help="labelled JSONL file (id, story_id, language), or a run's assignments.jsonl (a backfill's or an "
        "export's: its group_id are the events), or the folder holding it",
    )
    parser.add_argument(
        "--pred",
        required=True,
        help="assignments.jsonl written by `newsroom backfill` or `newsroom export assignments` (or their folder)",
    )
    parser.add_argument(
        "--no-links",
        dest="links",
        action="store_false",
        help="score the per-language story ids, ignoring cross-language links (default: links count as same story)",
    )
    parser.add_argument(
        "--storyline-label",
        default="topic",
        help="gold field holding the storyline label: storylines are scored when every gold row has it and "
        "storylines.jsonl is beside --pred (pipelines/commands/evaluate_storylines.py; default topic)",
    )
    parser.add_argument("--storylines", default=None, help="storylines.jsonl (default: beside --pred)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--html",
        default=None,
        help="write the HTML report (worst split and mixed stories with their headlines, per language) to this path "
        "(default: evaluate.html next to --pred)",
    )
    parser.add_argument("--no-html", dest="write_html", action="store_false", help="do not write the HTML report")
    parser.add_argument(
        "--html-top", type=int, default=10, help="split and mixed stories listed per language in the HTML (default 10)"
    )
    parser.add_argument(
        "--scope",
        choices=["gold", "run"],
        default="gold",
        help="which gold articles are scored: gold (all; those the run did not place count as singletons) or run "
        "(only those the run placed: a --from/--to or --language run). Default: gold",
    )
    parser.add_argument(
        "--min-overlap",
        type=float,
        default=0.5,
        help="refuse (exit 2) when fewer than this share of the gold articles have a prediction: gold and "
        "predictions from different data sets (default 0.5; 0 scores whatever overlaps)",
    )


def report(gold_path: str, pred_path: str, links: bool = True, min_overlap: float = 0.0, scope: str = "gold") -> dict:
    """The scores of ``pred_path`` against ``gold_path`` (:func:`report_of` the two files read)."""
    return report_of(Inputs(gold_path, pred_path), links, min_overlap, scope)


def report_of(inputs: Inputs, links: bool = True, min_overlap: float = 0.0, scope: str = "gold") -> dict:
    from pipelines.commands.evaluate_windows import gold_times, window_scores

    gold, lang = inputs.gold(links), inputs.lang
    gold_own = inputs.gold()  # a run as gold: its per-language stories (its groups are in ``gold``)
    pred = inputs.pred(links)
    full = len(gold)
    gold = in_scope(gold, pred, scope)
    check_overlap(gold, pred, min_overlap)
    by_lang = defaultdict(dict)
    for a in gold:
        by_lang[lang[a]][a] = gold_own[a]
    out = {"gold": inputs.gold_path, "pred": inputs.pred_path, "links": links, "overall": score(gold, pred)}
    out["scope"] = {"scope": scope, "scored": len(gold), "outside": full - len(gold)}
    # per language: the language's own story ids (a link to another language is not a pair inside the language)
    pred_own = inputs.pred(links=False)
    out["languages"] = {lg: score(g, pred_own) for lg, g in sorted(by_lang.items())}
    times, source = gold_times(inputs.gold_rows, inputs.gold_path)
    out["windows"] = window_scores(gold, pred, times, score)
    if "day" in out["windows"]:
        out["windows"]["times"] = source
    return out


def format_report(r: dict) -> str:
    cols = ("b3_precision", "b3_recall", "b3_f1", "pair_precision", "pair_recall", "pair_f1")
    head = f"{'':10s} {'n':>6s} " + " ".join(
        f"{c.replace('_precision', '_P').replace('_recall', '_R'):>8s}" for c in cols
    )
    head += f" {'gold':>5s} {'pred':>5s} {'split':>5s} {'mixed':>5s}"
    lines = [f"gold {r['gold']}  pred {r['pred']}  (links {'on' if r['links'] else 'off'})"]
    sc = r.get("scope") or {"scope": "gold"}
    if sc["scope"] == "run":
        lines.append(
            f"scope run: the {sc['scored']} gold articles the run placed; {sc['outside']} outside the run not scored"
        )
    lines += ["whole stream (all scored articles together):", head]

    def row(name, s):
        if not s.get("articles"):
            return f"{name:10s} {0:6d}"
        vals = " ".join(f"{s[c]:8.3f}" for c in cols)
        return (
            f"{name:10s} {s['articles']:6d} {vals} {s['gold_stories']:5d} {s['pred_stories']:5d} "
            f"{s['gold_stories_split']:5d} {s['pred_stories_mixing']:5d}"
        )

    lines.append(row("overall", r["overall"]))
    for lg, s in r["languages"].items():
        lines.append(row(lg, s))
    if r["overall"].get("missing"):
        lines.append(f"warning: {r['overall']['missing']} gold articles have no prediction (scored as singletons)")
    from pipelines.commands.evaluate_storylines import format_storylines
    from pipelines.commands.evaluate_windows import format_windows

    lines += format_windows(r.get("windows"))

    lines += format_storylines(r.get("storylines"))
    return "\n".join(lines)


def add_storylines(r: dict, inputs: Inputs, args) -> None:
    """The storyline scores (:mod:`pipelines.commands.evaluate_storylines`) when the gold has a storyline label."""
    from pipelines.commands.evaluate_storylines import storyline_report

    label = getattr(args, "storyline_label", "topic")
    r["storylines"] = storyline_report(inputs, label, getattr(args, "storylines", None))


def main(args) -> int:
    try:
        scope = getattr(args, "scope", "gold")
        inputs = Inputs(args.gold, args.pred)
        r = report_of(inputs, args.links, getattr(args, "min_overlap", 0.5), scope)
        add_storylines(r, inputs, args)
    except InputError as exc:  # one line, escaped, status 2 (pipelines/command_errors.py)
        raise CommandError(str(exc)) from None
    if args.json:
        json.dump(r, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(format_report(r))
    if getattr(args, "write_html", True):
        from pipelines.commands.evaluate_html import write_html

        path = args.html or os.path.join(os.path.dirname(os.path.abspath(inputs.pred_path)), "evaluate.html")
        try:
            write_html(r, inputs, path, top=getattr(args, "html_top", 10), scope=scope)
        except OSError as exc:
            print(f"newsroom evaluate: error: --html {path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"HTML report: {path}", file=sys.stderr)
    return 0
