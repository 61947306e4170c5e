"""``newsroom evaluate``'s storyline scores: the backfill's storylines against a gold file's storyline label.

Used when the gold rows carry the label (``--storyline-label``, default ``topic``) and the backfill folder holds
``storylines.jsonl`` (beside ``--pred``). The unit is the article, as for stories: an article's predicted storyline
is the storyline of its final story (assignments.jsonl -> storylines.jsonl), its gold storyline its label. Articles,
not stories, because both sides define them without matching predicted stories to gold events (a gold event split
over two predicted stories would otherwise need a rule to pick one), and the figures then read like the story
scores. Scored twice:

- ``all``: B-cubed and pairwise precision / recall / F1 over every article (the story stage's own errors count too:
  two reports of one event are a pair of one storyline);
- ``cross_event``: pairwise precision / recall over the pairs of articles of *different* gold events only, the
  pairs only the storyline stage can join: precision = share of cross-event pairs put in one storyline that share a
  gold label, recall = share of gold cross-event pairs (same label, different events) put in one storyline.

What the label means differs by file (docs/stories.md): in MEANTIME ``topic`` is a corpus subject (Airbus, Apple:
30 events each over years), in BASIL one event's description (no two events share one: cross-event recall is
undefined and any cross-event link counts as false), in ECB+ two different events of one kind (which must not link).
"""

from __future__ import annotations

import os
from collections import Counter

from pipelines.commands import evaluate_scores as ev


def gold_labels(rows: list[dict], label: str) -> tuple[dict[str, str], dict[str, str]] | None:
    """(article -> label, article -> gold event) when every gold row (of ``rows``, read by
    :class:`~pipelines.commands.evaluate_scores.Inputs`) has the label, else None (no storyline label).

    An event's articles can spell its label differently (BASIL: "... Joe Sestak ..." and "... Sestak ..."): each
    event takes its most frequent label (ties: the smallest), so one event is never two storylines."""
    raw, events = {}, {}
    for r in rows:
        if r.get(label) in (None, ""):
            return None
        raw[str(r["id"])], events[str(r["id"])] = str(r[label]), str(r["story_id"])
    votes: dict[str, Counter] = {}
    for a, lab in raw.items():
        votes.setdefault(events[a], Counter())[lab] += 1
    of_event = {e: min(c, key=lambda lab: (-c[lab], lab)) for e, c in votes.items()}
    return {a: of_event[events[a]] for a in raw}, events


def predicted_storylines(pred_rows: list[dict], storylines_path: str) -> dict[str, int]:
    """article -> storyline id: its final story (assignments.jsonl ``story_id``) through storylines.jsonl."""
    of_story = {}
    for r in ev.read_jsonl(storylines_path, ("storyline_id", "stories"), "--storylines"):
        for s in r["stories"]:
            of_story[int(s)] = int(r["storyline_id"])
    out = {}
    for r in pred_rows:
        sl = of_story.get(int(r["story_id"]))
        if sl is not None:
            out[str(r["article_id"])] = sl
    return out


def _pairs_by(keys) -> int:
    return sum(ev.pair_count(c) for c in Counter(keys).values())


def cross_event(labels: dict[str, str], events: dict[str, str], pred: dict[str, object]) -> dict:
    """Pairwise scores over article pairs of different gold events (see the module docstring)."""
    items = sorted(labels)
    p = {a: pred.get(a, ("missing", a)) for a in items}
    gold_pairs = _pairs_by(labels[a] for a in items) - _pairs_by(events[a] for a in items)
    pred_pairs = _pairs_by(p[a] for a in items) - _pairs_by((events[a], p[a]) for a in items)
    true_pairs = _pairs_by((labels[a], p[a]) for a in items) - _pairs_by((events[a], p[a]) for a in items)
    precision = true_pairs / pred_pairs if pred_pairs else None
    recall = true_pairs / gold_pairs if gold_pairs else None
    f1 = ev.f1_score(precision, recall) if precision is not None and recall is not None else None
    return {
        "gold_pairs": gold_pairs,
        "pred_pairs": pred_pairs,
        "true_pairs": true_pairs,
        "pair_precision": precision,
        "pair_recall": recall,
        "pair_f1": f1,
    }


def storyline_report(read, label: str = "topic", storylines_path: str | None = None):
    """The ``storylines`` part of the report of the files ``read`` (:class:`~pipelines.commands.evaluate_scores.Inputs`),
    or None when the gold has no such label or there is no storylines.jsonl."""
    path = storylines_path or os.path.join(os.path.dirname(os.path.abspath(read.pred_path)), "storylines.jsonl")
    if not os.path.exists(path):
        return None
    gold = gold_labels(read.gold_rows, label)
    if gold is None:
        return None
    labels, events = gold
    pred = predicted_storylines(read.pred_rows, path)
    return {
        "label": label,
        "storylines": path,
        "gold_storylines": len(set(labels.values())),
        "all": ev.score(labels, pred),
        "cross_event": cross_event(labels, events, pred),
    }


def format_storylines(s: dict | None) -> list[str]:
    if s is None:
        return []
    a, x = s["all"], s["cross_event"]

    def num(v):
        return "n/a" if v is None else f"{v:.3f}"

    return [
        f"storylines (gold label {s['label']!r}: {s['gold_storylines']} gold storylines, "
        f"{a['pred_stories']} predicted over {a['articles']} articles)",
        f"  articles:    B3 P {a['b3_precision']:.3f} R {a['b3_recall']:.3f} F1 {a['b3_f1']:.3f}   "
        f"pair P {a['pair_precision']:.3f} R {a['pair_recall']:.3f} F1 {a['pair_f1']:.3f}",
        f"  cross-event: pair P {num(x['pair_precision'])} R {num(x['pair_recall'])} F1 {num(x['pair_f1'])}   "
        f"(pairs: gold {x['gold_pairs']}, predicted {x['pred_pairs']}, true {x['true_pairs']})",
    ]
