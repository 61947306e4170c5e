"""``newsroom evaluate``: score story assignments against gold labels.

Reads a gold file (the labelled JSONL schema: ``id``, ``story_id``, ``language``) and predicted assignments
(``{"article_id", "story_id"[, "group_id"]}`` per line, as ``newsroom backfill`` writes them); writes a report to
stdout (text, or JSON with ``--json``) and an HTML page for an analyst (:mod:`transforms.stories.evaluate_html`,
``--html``): B-cubed and pairwise (pair-counting) precision / recall / F1 overall and per
language, the number of gold stories split over several predicted stories, and the number of predicted stories that
mix several gold events.

Cross-language links count as the same story: by default the predicted cluster of an article is its ``group_id``
(the link component, see transforms/stories/assignments.py) when the file has one; ``--no-links`` scores the
per-language ``story_id`` instead. Per-language figures always use pairs inside that language. Articles missing from
the predictions are counted as singletons (and reported).

No heavy imports: this module is loaded by the ``newsroom`` command at start-up.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter, defaultdict


def add_arguments(parser) -> None:
    parser.add_argument("--gold", required=True, help="labelled JSONL file (id, story_id, language)")
    parser.add_argument("--pred", required=True, help="assignments.jsonl written by `newsroom backfill`")
    parser.add_argument(
        "--no-links",
        dest="links",
        action="store_false",
        help="score the per-language story ids, ignoring cross-language links (default: links count as same story)",
    )
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


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


def score(gold: dict[str, str], pred: dict[str, object]) -> dict:
    """B-cubed and pairwise scores of ``pred`` against ``gold`` over the articles of ``gold``."""
    items = sorted(gold)
    if not items:
        return {"articles": 0}
    missing = [a for a in items if a not in pred]
    p = {a: pred.get(a, ("missing", a)) for a in items}
    gc = Counter(gold[a] for a in items)
    pc = Counter(p[a] for a in items)
    jc = Counter((gold[a], p[a]) for a in items)
    n = len(items)
    b3p = sum(jc[(gold[a], p[a])] / pc[p[a]] for a in items) / n
    b3r = sum(jc[(gold[a], p[a])] / gc[gold[a]] for a in items) / n
    tp = sum(_pairs(c) for c in jc.values())
    pp = sum(_pairs(c) for c in pc.values())
    gp = sum(_pairs(c) for c in gc.values())
    pairp = tp / pp if pp else 1.0
    pairr = tp / gp if gp else 1.0
    gold_split = defaultdict(set)
    pred_mix = defaultdict(set)
    for a in items:
        gold_split[gold[a]].add(p[a])
        pred_mix[p[a]].add(gold[a])
    return {
        "articles": n,
        "gold_stories": len(gc),
        "pred_stories": len(pc),
        "missing": len(missing),
        "b3_precision": b3p,
        "b3_recall": b3r,
        "b3_f1": _f1(b3p, b3r),
        "pair_precision": pairp,
        "pair_recall": pairr,
        "pair_f1": _f1(pairp, pairr),
        "gold_stories_split": sum(1 for v in gold_split.values() if len(v) > 1),
        "pred_stories_mixing": sum(1 for v in pred_mix.values() if len(v) > 1),
    }


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def load_gold(path: str) -> tuple[dict[str, str], dict[str, str]]:
    gold, lang = {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                gold[str(r["id"])] = str(r["story_id"])
                lang[str(r["id"])] = r.get("language") or "und"
    return gold, lang


def load_pred(path: str, links: bool = True) -> dict[str, object]:
    pred = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                key = r.get("group_id") if links and r.get("group_id") is not None else r["story_id"]
                pred[str(r["article_id"])] = key
    return pred


def report(gold_path: str, pred_path: str, links: bool = True) -> dict:
    gold, lang = load_gold(gold_path)
    pred = load_pred(pred_path, links)
    by_lang = defaultdict(dict)
    for a, g in gold.items():
        by_lang[lang[a]][a] = g
    out = {"gold": gold_path, "pred": pred_path, "links": links, "overall": score(gold, pred)}
    # per language: the language's own story ids (a link to another language is not a pair inside the language)
    pred_own = load_pred(pred_path, links=False)
    out["languages"] = {lg: score(g, pred_own) for lg, g in sorted(by_lang.items())}
    return out


def format_report(r: dict) -> str:
    cols = ("b3_precision", "b3_recall", "b3_f1", "pair_precision", "pair_recall", "pair_f1")
    head = f"{'':10s} {'n':>6s} " + " ".join(
        f"{c.replace('_precision', '_P').replace('_recall', '_R'):>8s}" for c in cols
    )
    head += f" {'gold':>5s} {'pred':>5s} {'split':>5s} {'mixed':>5s}"
    lines = [f"gold {r['gold']}  pred {r['pred']}  (links {'on' if r['links'] else 'off'})", head]

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
    return "\n".join(lines)


def main(args) -> int:
    r = report(args.gold, args.pred, links=args.links)
    if args.json:
        json.dump(r, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(format_report(r))
    if getattr(args, "write_html", True):
        from transforms.stories.evaluate_html import write_html

        path = args.html or os.path.join(os.path.dirname(os.path.abspath(args.pred)), "evaluate.html")
        write_html(r, args.gold, args.pred, path, top=getattr(args, "html_top", 10))
        print(f"HTML report: {path}", file=sys.stderr)
    return 0
