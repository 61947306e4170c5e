"""The scoring and the reading of ``newsroom evaluate`` (pipelines/commands/evaluate.py), shared with its report
page (evaluate_html.py), its storylines (evaluate_storylines.py) and the commands that read the same files (diff,
explain): B-cubed and pairwise scores, the gold and prediction files read with one-line errors (:class:`InputError`).
Below all of them, so none imports the command that hands work to it. No heavy imports (loaded at start-up)."""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict


class InputError(ValueError):
    """A user error in the command's inputs (missing file, folder, malformed line, no overlap): one line, exit 2."""


ASSIGNMENTS = "assignments.jsonl"


def run_file(path: str, flag: str) -> str:
    """``path``, or its ``assignments.jsonl`` when it is a run's folder (a backfill's output or an export);
    :class:`InputError` for a folder without one."""
    if not os.path.isdir(path):
        return path
    file = os.path.join(path, ASSIGNMENTS)
    if not os.path.exists(file):
        raise InputError(f"{flag} {path}: no {ASSIGNMENTS} (not a backfill's output nor an export)")
    return file


def read_jsonl(path: str, fields: tuple[str, ...], what: str):
    """Yield the JSON objects of a JSON lines file, each holding ``fields``; raises :class:`InputError` naming the
    file (and line) for a missing file, a folder, unreadable text, or a line that is not such an object."""
    if os.path.isdir(path):
        raise InputError(f"{what} {path}: is a folder, not a file")
    if not os.path.exists(path):
        raise InputError(f"{what} {path}: no such file")
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError as exc:
                    raise InputError(f"{what} {path}:{n}: not a JSON object ({exc})") from None
                if not isinstance(r, dict):
                    raise InputError(f"{what} {path}:{n}: not a JSON object")
                absent = [k for k in fields if r.get(k) is None]
                if absent:
                    raise InputError(f"{what} {path}:{n}: no {', '.join(absent)} (needs {', '.join(fields)})")
                yield r
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{what} {path}: {exc.strerror or exc}") from None


def pair_count(n: int) -> int:
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
    tp = sum(pair_count(c) for c in jc.values())
    pp = sum(pair_count(c) for c in pc.values())
    gp = sum(pair_count(c) for c in gc.values())
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
        "b3_f1": f1_score(b3p, b3r),
        "pair_precision": pairp,
        "pair_recall": pairr,
        "pair_f1": f1_score(pairp, pairr),
        "gold_stories_split": sum(1 for v in gold_split.values() if len(v) > 1),
        "pred_stories_mixing": sum(1 for v in pred_mix.values() if len(v) > 1),
    }


def f1_score(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def gold_rows(path: str, fields: tuple[str, ...] = ("story_id",)):
    """The rows of a gold file, each with ``id``: a labelled file (``id``, ``story_id``) or another run's
    assignments (``article_id``, ``story_id``: a backfill's or an export's, scored as the reference); an
    :class:`InputError` naming the line when a row has neither id."""
    for n, r in enumerate(read_jsonl(path, fields, "--gold"), 1):
        if r.get("id") is None:
            if r.get("article_id") is None:
                raise InputError(f"--gold {path}: row {n}: no id (needs id or article_id, and story_id)")
            r["id"] = r["article_id"]
        yield r


class Inputs:
    """The gold file and the predictions of one evaluation, each read once (the report, its windows and its HTML page
    all read them): the gold's rows first, so a broken gold file is the error named when both are."""

    def __init__(self, gold_path: str, pred_path: str):
        gold_path, pred_path = run_file(gold_path, "--gold"), run_file(pred_path, "--pred")
        self.gold_path, self.pred_path = gold_path, pred_path
        self.gold_rows = list(gold_rows(gold_path))
        self.pred_rows = list(read_jsonl(pred_path, ("article_id", "story_id"), "--pred"))
        self.lang = {str(r["id"]): r.get("language") or "und" for r in self.gold_rows}

    def gold(self, links: bool = False) -> dict[str, str]:
        """Article -> gold event. A labelled file's ``story_id`` is an event across languages; a run's assignments
        (another run as the reference) hold per-language stories, its events across languages being its
        ``group_id``: with ``links`` (the all-languages scores, against the prediction's groups) that is the event."""
        return {str(r["id"]): str(_key(r, links)) for r in self.gold_rows}

    def pred(self, links: bool = True) -> dict[str, object]:
        """Article -> predicted story: its ``group_id`` (the link component) with ``links`` when it has one."""
        return {str(r["article_id"]): _key(r, links) for r in self.pred_rows}


def _key(row: dict, links: bool):
    return row.get("group_id") if links and row.get("group_id") is not None else row["story_id"]


def check_overlap(gold: dict, pred: dict, min_overlap: float) -> None:
    """Raise :class:`InputError` when fewer than ``min_overlap`` of the gold articles have a prediction."""
    if not gold:
        raise InputError("--gold: the file holds no article")
    shared = sum(1 for a in gold if a in pred)
    if shared < min_overlap * len(gold):
        raise InputError(
            f"only {shared} of {len(gold)} gold articles ({shared / len(gold):.1%}) have a prediction "
            f"(--min-overlap {min_overlap:g}): are --gold and --pred of the same data set? (a run over part of them, "
            "--from/--to or --language, is scored on what it placed with --scope run)"
        )


def in_scope(gold: dict, pred: dict, scope: str) -> dict:
    """The gold articles scored: all of them (``gold``: a missing prediction is a singleton) or only those the run
    placed (``run``: a run over a date range or one language is scored on what it covered); InputError when the
    run covered none."""
    if scope != "run":
        return gold
    kept = {a: g for a, g in gold.items() if a in pred}
    if not kept:
        raise InputError(f"--scope run: none of the {len(gold)} gold articles has a prediction")
    return kept
