"""Reading articles for a backfill, and writing its results.

Reads labelled JSONL files (labels stripped on read) and Article Avro files, in file order, through Beam's
FileSystems (local paths and gs://); writes ArticleFeatures dicts timestamped at their first-seen time, the input
order ``(file index, line, article_id)``, and DeadLetter records for unreadable lines. At the end of a backfill,
:func:`write_results` folds the writer outputs into ``assignments.jsonl`` / ``stories.jsonl`` (plus a summary the
driver turns into ``manifest.json``).
"""

from __future__ import annotations

import io
import json
import os
import time

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from transforms.common import DEAD_LETTER, dead_letter_json  # noqa: E402,F401
from transforms.stories import features as F
from transforms.stories.assignments import assignment_rows
from transforms.stories.local import link_outputs

ORDER = "order"


class ReadArticleFileFn(beam.DoFn):
    """One input file -> ArticleFeatures dicts (main), (file, line, article_id) on ``order``, DeadLetters."""

    def __init__(self, languages=None, since: int | None = None, until: int | None = None):
        self.languages = languages
        self.since = since
        self.until = until
        self.read = Metrics.counter("stories", "articles_read")
        self.skipped = Metrics.counter("stories", "articles_filtered")
        self.bad = Metrics.counter("stories", "bad_input")

    def _keep(self, f: F.ArticleFeatures) -> bool:
        if self.languages and f.language not in self.languages:
            return False
        if f.time_known:
            if self.since is not None and f.first_seen_at < self.since:
                return False
            if self.until is not None and f.first_seen_at >= self.until:
                return False
        return True

    def _emit(self, f: F.ArticleFeatures, file_index: int, line: int):
        if not self._keep(f):
            self.skipped.inc()
            return
        self.read.inc()
        yield beam.pvalue.TaggedOutput(ORDER, (file_index, line, f.article_id))
        yield beam.window.TimestampedValue(f.to_dict(), f.first_seen_at / 1000.0)

    def _bad(self, path: str, line: int, reason: str, detail: str, payload: bytes):
        self.bad.inc()
        return beam.pvalue.TaggedOutput(
            DEAD_LETTER,
            {
                "schema_version": 1,
                "stage": "stories-backfill",
                "reason": reason,
                "detail": detail[:2000],
                "key": f"{path}:{line}",
                "payload": payload[:100_000],
                "at": int(time.time() * 1000),
            },
        )

    def process(self, element):
        file_index, path = element
        if path.endswith(".avro"):
            yield from self._read_avro(file_index, path)
            return
        prev = None
        with FileSystems.open(path) as raw:
            for line_no, raw_line in enumerate(io.TextIOWrapper(raw, encoding="utf-8", errors="replace"), 1):
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
                    f = F.from_labelled(rec, t, known)
                except Exception as exc:  # a bad line is dead-lettered, the file goes on
                    yield self._bad(path, line_no, "bad_json_line", repr(exc), raw_line.encode("utf-8", "replace"))
                    continue
                yield from self._emit(f, file_index, line_no)

    def _read_avro(self, file_index: int, path: str):
        import fastavro

        from schemas import codec

        with FileSystems.open(path) as raw:
            for n, rec in enumerate(fastavro.reader(raw), 1):
                try:
                    rec = codec.check("Article", dict(rec))
                    f = F.from_article(rec)
                except Exception as exc:
                    yield self._bad(path, n, "bad_article_record", repr(exc), repr(rec)[:4000].encode())
                    continue
                yield from self._emit(f, file_index, n)


class ReadArticles(beam.PTransform):
    """File paths -> {"articles", "order", "dead_letter"} PCollections."""

    def __init__(self, files: list[str], languages=None, since=None, until=None):
        super().__init__()
        self.files = list(files)
        self.languages = languages
        self.since = since
        self.until = until

    def expand(self, p):
        res = (
            p
            | "ListFiles" >> beam.Create(list(enumerate(self.files)))
            | "ReadFiles"
            >> beam.ParDo(ReadArticleFileFn(self.languages, self.since, self.until)).with_outputs(
                ORDER, DEAD_LETTER, main="articles"
            )
        )
        return {"articles": res.articles, "order": res[ORDER], "dead_letter": res[DEAD_LETTER]}


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
        }
    meta = out.get("story_meta") or {}
    return {"change": slim, "members": members, "model": meta.get("model")}


def write_text(path: str, text: str) -> None:
    """Write a result file locally or to any Beam filesystem (``gs://...`` on Dataflow: a worker's local disk
    would lose it)."""
    if "://" in path:
        from apache_beam.io.filesystems import FileSystems

        with FileSystems.create(path, mime_type="application/json") as f:
            f.write(text.encode("utf-8"))
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_lines(rows: list, path: str) -> int:
    write_text(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows))
    return len(rows)


def write_results(outputs: list[dict], order: list, n_languages: int, out_dir: str, links) -> dict:
    """Fold the run's outputs; write assignments.jsonl and stories.jsonl; return (and write) the summary."""
    import dataclasses

    from transforms.stories.cluster import calibration

    want_links = links is True or (links == "auto" and n_languages > 1)
    link_changes = link_outputs(outputs) if want_links else []
    changes = [o["change"] for o in outputs] + link_changes
    input_order = [aid for _, _, aid in sorted(order)]
    seen = set()
    unique_order = [a for a in input_order if not (a in seen or seen.add(a))]
    rows, story_rows = assignment_rows(changes, unique_order)
    titles = {}
    for o in outputs:
        for aid, m in o["members"].items():
            titles[aid] = m.get("title", "")
    for st in story_rows:
        st["title"] = titles.get(st["articles"][0], "") if st["articles"] else ""
    write_lines(rows, os.path.join(out_dir, "assignments.jsonl"))
    write_lines(story_rows, os.path.join(out_dir, "stories.jsonl"))
    kinds = {}
    for ch in changes:
        kinds[ch["kind"]] = kinds.get(ch["kind"], 0) + 1
    models = {}
    for o in outputs:
        if o.get("model"):
            models[o["change"]["language"]] = o["model"]
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
    }
    write_text(os.path.join(out_dir, "summary.json"), json.dumps(summary, sort_keys=True))
    return summary
