"""Reading articles for a backfill, and folding its results (plain Python: no Beam).

Reads labelled JSONL lines (labels stripped on read) and Article Avro records into ArticleFeatures
(:func:`labelled_features`, :func:`avro_features`, :func:`keep`) and builds the DeadLetter record of an unreadable
line (:func:`bad_input`). At the end of a backfill, :func:`fold_results` folds the writer outputs into the rows of
``assignments.jsonl`` / ``stories.jsonl`` and a summary, and :func:`storyline_rows` runs the storyline stage over
them (``storylines.jsonl``), the driver turns into ``manifest.json``.

The Beam side -- ReadArticles over Beam's FileSystems (local paths and gs://), which timestamps ArticleFeatures dicts
at their first-seen time and emits the input order ``(file index, line, article_id)``, and the result writers -- is
in :mod:`transforms.stories.beam.backfill`.

Named for the files it parses and folds; "readers" is the origin's word for people (serving/personal/readers.py).
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Iterable, Iterator, Sequence

from transforms import common
from transforms.stories.backfill.assignments import assignment_rows
from transforms.stories.backfill.local import link_outputs
from transforms.stories.storylines import storyline
from transforms.stories.vocabulary import features as F

STAGE = "stories-backfill"
MAX_BAD_PAYLOAD = 100_000


def keep(f: F.ArticleFeatures, languages=None, since: int | None = None, until: int | None = None) -> bool:
    """Whether an article passes the backfill's filters (``--language``, ``--from``, ``--to``); untimed articles
    are kept whatever the time bounds."""
    if languages and f.language not in languages:
        return False
    if f.time_known:
        if since is not None and f.first_seen_at < since:
            return False
        if until is not None and f.first_seen_at >= until:
            return False
    return True


def labelled_features(lines: Iterable[str]) -> Iterator[tuple[int, F.ArticleFeatures | None, tuple | None]]:
    """Labelled JSONL lines -> ``(line number, features, None)`` or ``(line number, None, (reason, detail,
    payload))`` for a line that cannot be read. Blank lines are skipped; an untimed line gets the previous line's
    time plus one second (:func:`transforms.stories.vocabulary.features.time_after`)."""
    prev = None
    for line_no, raw_line in enumerate(lines, 1):
        if not raw_line.strip():
            continue
        try:
            rec = json.loads(raw_line)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
            rec = F.strip_labels(rec)  # the gold labels never go further than this line
            t, known = F.time_after(rec, prev)
            prev = t
            if not (rec.get("title") or rec.get("text")):
                raise ValueError("no title and no text")
            yield line_no, F.from_labelled(rec, t, known), None
        except Exception as exc:  # a bad line is dead-lettered, the file goes on
            yield line_no, None, ("bad_json_line", repr(exc), raw_line.encode("utf-8", "replace"))


def avro_features(records: Iterable[dict]) -> Iterator[tuple[int, F.ArticleFeatures | None, tuple | None]]:
    """Article Avro records -> the same triples as :func:`labelled_features`."""
    from schemas import codec

    for n, rec in enumerate(records, 1):
        try:
            yield n, F.from_article(codec.check("Article", dict(rec))), None
        except Exception as exc:
            yield n, None, ("bad_article_record", repr(exc), repr(rec)[:4000].encode())


def bad_input(path: str, line: int, reason: str, detail: str, payload: bytes) -> dict:
    """The DeadLetter record of an unreadable input line (key ``path:line``)."""
    key = f"{path}:{line}"
    return common.dead_letter(STAGE, reason, detail, key, payload[:MAX_BAD_PAYLOAD], int(time.time() * 1000))


def slim_output(out: dict) -> dict:
    """A writer output without what the fold does not need (centroids, article records, member vectors)."""
    ch = out["change"]
    slim = {
        k: ch[k] for k in ("language", "seq", "kind", "story_id", "other_story_id", "article_id", "article_ids", "at")
    }
    members = {}
    for aid, m in (out.get("members") or {}).items():
        members[aid] = {
            "link_vector": m.get("link_vector"),
            "entities": m.get("entities", []),
            "is_copy": m.get("is_copy", False),
            "title": m.get("title", ""),
            "at": m.get("at"),  # the linker's time condition (transforms/stories/links/links.py)
            "time_known": m.get("time_known", False),
            "lead_only": m.get("lead_only", False),  # the manifest's ``assumed`` (:func:`assumptions`)
        }
    meta = out.get("story_meta") or {}
    slim_out = {"change": slim, "members": members, "model": meta.get("model"), "storyline": storyline.compact(out)}
    if out.get("explain") is not None:
        slim_out["explain"] = out["explain"]
    return slim_out


def packed_slim_output(out: dict) -> bytes:
    """:func:`slim_output` pickled: what the backfill's result fold collects (:class:`Packed`)."""
    return pickle.dumps(slim_output(out), protocol=pickle.HIGHEST_PROTOCOL)


class Packed(Sequence):
    """The run's slim outputs as the pickles :func:`packed_slim_output` made, decoded one at a time on access: the
    fold below reads them in a few passes and never holds them all decoded (a decoded slim output is ~4x its
    pickle: ~10 KB an article in a month_sim run)."""

    def __init__(self, blobs: Sequence[bytes]):
        self.blobs = blobs

    def __len__(self) -> int:
        return len(self.blobs)

    def __getitem__(self, i: int) -> dict:
        return pickle.loads(self.blobs[i])

    def __iter__(self) -> Iterator[dict]:
        for b in self.blobs:
            yield pickle.loads(b)


def storyline_rows(outputs: Sequence[dict], links, n_languages: int) -> tuple[list[dict], list[dict]]:
    """(``storylines.jsonl`` rows, the StorylineChange records): the storyline stage over the run's outputs, tick by
    tick as the streaming stage decides them (transforms/stories/storylines/storyline.py). The cross-language links of a backfill
    are made over its final stories (:func:`link_outputs`), so they reach the storyline stage at its last tick.
    ``outputs``: a list or :class:`Packed`; each output's compact is read in the stage's order, one at a time."""
    want_links = links is True or (links == "auto" and n_languages > 1)
    keys = [(*storyline.compact_key(o["storyline"]), i) for i, o in enumerate(outputs) if o.get("storyline")]
    linked = [storyline.compact({"change": ch, "members": {}}) for ch in link_outputs(outputs)] if want_links else []
    keys += [(*storyline.compact_key(c), len(outputs) + j) for j, c in enumerate(linked)]
    keys.sort()  # the stage's order; ties (none: a (language, seq) is one output) in input order, as a stable sort

    def ordered():
        for *_, i in keys:
            yield outputs[i]["storyline"] if i < len(outputs) else linked[i - len(outputs)]

    changes, _ = storyline.storyline_changes_in_order(ordered())
    return storyline.fold_storylines(changes), changes


def explanation_rows(outputs: Sequence[dict]) -> Iterator[dict]:
    """The rows of ``explanations.jsonl`` (transforms/stories/writer/explanations.py), in (language, seq) order,
    one at a time."""
    keys = sorted(
        (o["explain"]["language"], int(o["explain"]["seq"]), i)
        for i, o in enumerate(outputs)
        if o.get("explain") is not None
    )
    for *_, i in keys:
        yield outputs[i]["explain"]


def fold_results(outputs: Sequence[dict], order: list, n_languages: int, links) -> tuple[list, list, dict]:
    """Fold the run's outputs (a list or :class:`Packed`, read in passes) -> (assignments.jsonl rows, stories.jsonl
    rows, the summary). The files are written by :func:`transforms.stories.beam.backfill.write_results` (through
    Beam's filesystems: local or gs://)."""
    import dataclasses

    from transforms.stories.writer.cluster import calibration

    want_links = links is True or (links == "auto" and n_languages > 1)
    link_changes = link_outputs(outputs) if want_links else []
    changes = [o["change"] for o in outputs] + link_changes
    input_order = [aid for _, _, aid in sorted(order)]
    seen = set()
    unique_order = [a for a in input_order if not (a in seen or seen.add(a))]
    rows, story_rows = assignment_rows(changes, unique_order)
    firsts = {st["articles"][0] for st in story_rows if st["articles"]}
    titles, models = {}, {}
    for o in outputs:
        for aid, m in o["members"].items():
            if aid in firsts:
                titles[aid] = m.get("title", "")
        if o.get("model"):
            models[o["change"]["language"]] = o["model"]
    for st in story_rows:
        st["title"] = titles.get(st["articles"][0], "") if st["articles"] else ""
    kinds = {}
    for ch in changes:
        kinds[ch["kind"]] = kinds.get(ch["kind"], 0) + 1
    summary = {
        "counts": {
            "articles": len(unique_order),
            "assigned": len(rows),
            "stories": len(story_rows),
            "languages": n_languages,
            "link_groups": len({r["group_id"] for r in rows}),
            "changes": kinds,
        },
        "models": models,
        "calibration": {f"{m}:{lang}": dataclasses.asdict(calibration(m, lang)) for lang, m in sorted(models.items())},
        "links": want_links,
        "assumed": assumptions(outputs),
    }
    return rows, story_rows, summary


def assumptions(outputs: Iterable[dict]) -> dict:
    """What the run assumed about its input's times (the manifest's ``assumed``): how many articles had a time
    (``published_at``, else a printed dateline) and what the writer did with the others."""
    known: dict[str, bool] = {}
    leads: set[str] = set()
    for o in outputs:
        for aid, m in o["members"].items():
            known[aid] = bool(m.get("time_known", True))
            if m.get("lead_only"):
                leads.add(aid)
    timed = sum(known.values())
    untimed = len(known) - timed
    untimed_leads = sum(1 for aid in leads if not known[aid])
    if not untimed:
        note = "every article has a time (published_at or a printed dateline)"
    else:
        note = (
            f"{untimed} of {len(known)} articles have no time (no published_at, no dateline): they are read in input "
            "order, one second apart, and their times are neutral: they neither cut a pair (far_apart_hours) nor "
            "bring one closer; their join and merge scores bear the unknown-time penalty (unknown_time_penalty, "
            "above the time penalty of two articles two days apart), so bodies without times join only on close text"
        )
        if not timed:
            note = "no article has a time: " + note.split(": ", 1)[1]
    out = {"articles_timed": timed, "articles_untimed": untimed, "times": note}
    if untimed_leads:
        out["articles_untimed_leads"] = untimed_leads
        out["leads"] = (
            f"{untimed_leads} untimed articles are leads only (a body of at most {F.LEAD_CHARS} characters): where "
            "a time is unknown and every article on both sides is a lead, a join or merge needs every article pair "
            "at the learned pair score's body bar (complete linkage, untimed_lead_min_pair), so the items of a saga "
            "do not chain through a centroid"
        )
    return out
