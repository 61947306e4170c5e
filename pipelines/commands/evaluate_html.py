"""The HTML report of ``newsroom evaluate``: where a set's stories went wrong, with their headlines.

Reads the gold file (``id``, ``story_id``, ``language``, ``title``) and the predicted assignments (the same inputs as
:mod:`pipelines.commands.evaluate`); writes one self-contained HTML page (no scripts, no external resources) that an
analyst opens in a browser. Per set and per language (and across languages with links, when the set has several):
the scores, then the worst *split* gold stories (one event spread over several predicted stories: the articles
outside its largest fragment are recall lost) and the worst *mixed* predicted stories (several events in one story:
the articles outside its main event are precision lost), each with the headlines of every fragment, and beside each
headline its publisher and date (``publisher``, ``published_at``: whether a split is days apart or one outlet's
habit is what an analyst asks first). Beside a backfill's ``explanations.jsonl``, each predicted story of a split or
mixed entry names the ``newsroom explain --output DIR --story ID`` command that says why its articles are there
(pipelines/commands/explain.py). Every text from the files is HTML-escaped. No heavy imports (loaded by the ``newsroom`` command at start-up).
"""

from __future__ import annotations

import html
import os
import shlex
from collections import defaultdict
from dataclasses import dataclass, field

SCORE_COLUMNS = ("b3_precision", "b3_recall", "b3_f1", "pair_precision", "pair_recall", "pair_f1")
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table.scores { border-collapse: collapse; margin-bottom: 1em; }
table.scores td, table.scores th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
details { margin: 0.3em 0 0.6em 1em; }
.part { margin: 0.2em 0 0.4em 1.2em; }
.part h4 { margin: 0.3em 0 0.1em 0; font-weight: 600; font-size: 0.95em; }
.part ul { margin: 0.1em 0; }
.muted { color: #777; }
.byline { color: #555; font-size: 0.9em; }
.explain { margin: 0.1em 0 0.3em 1.2em; color: #555; font-size: 0.9em; }
"""


def articles_of(rows) -> dict[str, tuple[str, str, str]]:
    """Article id -> (headline, publisher, date) of a labelled file's rows; the date is the ``published_at`` day
    (YYYY-MM-DD, as written), "" when the file has none."""
    out = {}
    for r in rows:
        title = str(r.get("title") or "").strip() or str(r.get("text") or "").strip()[:120]
        publisher = str(r.get("publisher") or r.get("publisher_id") or "").strip()
        out[str(r["id"])] = (title, publisher, str(r.get("published_at") or "")[:10])
    return out


def _byline(meta: tuple[str, str, str] | None) -> str:
    """``publisher, date`` of a headline (the parts the file has), escaped; "" when neither."""
    _, publisher, date = meta or ("", "", "")
    parts = ", ".join(x for x in (publisher, date) if x)
    return f' <span class="byline">({html.escape(parts)})</span>' if parts else ""


def worst_split(gold: dict[str, str], pred: dict[str, object], top: int) -> list[dict]:
    """Gold stories spread over several predicted stories, most articles outside their largest fragment first."""
    return _worst(gold, pred, top, by_gold=True)


def worst_mixed(gold: dict[str, str], pred: dict[str, object], top: int) -> list[dict]:
    """Predicted stories holding several gold events, most articles outside their main event first."""
    return _worst(gold, pred, top, by_gold=False)


def _worst(gold: dict[str, str], pred: dict[str, object], top: int, by_gold: bool) -> list[dict]:
    """The ``top`` stories (gold ones when ``by_gold``, else predicted ones) whose articles fall into several
    stories of the other side, most articles outside the largest of those first (ties: larger, then key)."""
    parts: dict[object, dict] = defaultdict(lambda: defaultdict(list))
    for a in sorted(gold):
        g, p = gold[a], pred.get(a, ("missing", a))
        outer, inner = (g, p) if by_gold else (p, g)
        parts[outer][inner].append(a)
    out = []
    for key, groups in parts.items():
        if len(groups) < 2:
            continue
        sizes = sorted((len(v) for v in groups.values()), reverse=True)
        out.append({"key": key, "lost": sum(sizes[1:]), "size": sum(sizes), "parts": _ordered(groups)})
    out.sort(key=lambda d: (-d["lost"], -d["size"], str(d["key"])))
    return out[:top]


def _ordered(groups: dict) -> list[tuple[object, list[str]]]:
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))


@dataclass(frozen=True)
class ReportInputs:
    """What the page shows beside the scores, read from the gold and predicted files: the gold story and language
    of each article, its predicted story with cross-language links (``pred_linked``) and without (``pred_own``),
    its headline (``titles``) and, when given (:func:`articles_of`), its publisher and date (``articles``)."""

    gold: dict[str, str]
    lang: dict[str, str]
    pred_linked: dict[str, object]
    pred_own: dict[str, object]
    titles: dict[str, str]
    articles: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    gold_linked: dict[str, str] | None = None  # a run as gold: its cross-language groups (the all-languages events)


def render(
    report: dict, inputs: ReportInputs, top: int = 10, headlines: int = 12, explain_dir: str | None = None
) -> str:
    """The report page. ``report`` is :func:`pipelines.commands.evaluate.report`'s dict for the same files;
    ``inputs.articles`` adds each headline's publisher and date; ``explain_dir`` (a backfill output holding
    explanations.jsonl) adds to each predicted story the ``newsroom explain`` command that says why."""
    gold, lang, titles, articles = inputs.gold, inputs.lang, inputs.titles, inputs.articles
    pred_linked, pred_own = inputs.pred_linked, inputs.pred_own
    e = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Stories evaluation: {e(str(report['gold']))}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Stories evaluation</h1><p>gold <code>{e(str(report['gold']))}</code>, predictions "
        f"<code>{e(str(report['pred']))}</code>, cross-language links {'on' if report['links'] else 'off'}.</p>",
    ]
    sections = []
    languages = sorted(report["languages"])
    if len(languages) > 1 or not languages:
        sections.append(("all languages", report["overall"], inputs.gold_linked or gold, pred_linked))
    for lg in languages:
        g = {a: s for a, s in gold.items() if lang.get(a) == lg}
        sections.append((f"language {lg}", report["languages"][lg], g, pred_own))
    for name, scores, g, pred in sections:
        out.append(f"<h2>{e(name)}</h2>")
        out.append(_scores_table(scores))
        for title, items, what in (
            ("Worst split events (one gold event, several predicted stories)", worst_split(g, pred, top), "story"),
            ("Worst mixed stories (one predicted story, several gold events)", worst_mixed(g, pred, top), "event"),
        ):
            out.append(f"<h3>{e(title)}</h3>")
            if not items:
                out.append('<p class="muted">none</p>')
            for it in items:
                out.append(
                    f"<details><summary>{'event' if what == 'story' else 'story'} {e(_label(it['key']))}: "
                    f"{it['size']} articles in {len(it['parts'])} {'stories' if what == 'story' else 'events'}, "
                    f"{it['lost']} outside the largest"
                    "</summary>"
                )
                if what == "event":
                    out.append(_explain_line(explain_dir, it["key"]))
                for key, aids in it["parts"]:
                    why = _explain_line(explain_dir, key) if what == "story" else ""
                    out.append(f'<div class="part"><h4>{what} {e(_label(key))} ({len(aids)})</h4>{why}<ul>')
                    for a in aids[:headlines]:
                        out.append(
                            f'<li>{e(titles.get(a, ""))}{_byline(articles.get(a))} <span class="muted">[{e(a)}]</span></li>'
                        )
                    if len(aids) > headlines:
                        out.append(f'<li class="muted">and {len(aids) - headlines} more</li>')
                    out.append("</ul></div>")
                out.append("</details>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _explain_line(explain_dir: str | None, key: object) -> str:
    """``why: newsroom explain --output DIR --story ID`` for a predicted story, "" without explanations."""
    if explain_dir is None or isinstance(key, tuple):
        return ""
    command = f"newsroom explain --output {shlex.quote(explain_dir)} --story {key}"
    return f'<p class="explain">why: <code>{html.escape(command)}</code></p>'


def _label(key: object) -> str:
    if isinstance(key, tuple) and key and key[0] == "missing":
        return f"(no prediction for {key[1]})"
    return str(key)


def _scores_table(s: dict) -> str:
    if not s.get("articles"):
        return '<p class="muted">no articles</p>'
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ("articles", *SCORE_COLUMNS, "gold", "pred", "split", "mixed"))
    vals = [str(s["articles"])] + [f"{s[c]:.3f}" for c in SCORE_COLUMNS]
    vals += [str(s[c]) for c in ("gold_stories", "pred_stories", "gold_stories_split", "pred_stories_mixing")]
    return f'<table class="scores"><tr>{head}</tr><tr>{"".join(f"<td>{v}</td>" for v in vals)}</tr></table>'


def write_html(report: dict, read, out_path: str, top: int = 10, scope: str = "gold") -> str:
    """Render the report of the files ``read`` (:class:`~pipelines.commands.evaluate_scores.Inputs`) to ``out_path``
    (the gold articles ``scope`` scores); returns the path."""
    from pipelines.commands.evaluate_scores import in_scope

    folder = os.path.dirname(os.path.abspath(read.pred_path))
    explain_dir = folder if os.path.exists(os.path.join(folder, "explanations.jsonl")) else None
    own = read.pred(links=False)
    gold = in_scope(read.gold(), own, scope)
    linked = read.gold(report["links"])
    articles = articles_of(read.gold_rows)
    inputs = ReportInputs(
        gold,
        read.lang,
        read.pred(links=report["links"]),
        own,
        {a: title for a, (title, _, _) in articles.items()},
        articles,
        {a: linked[a] for a in gold},
    )
    page = render(report, inputs, top=top, explain_dir=explain_dir)
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(page)
    return out_path
