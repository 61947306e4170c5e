"""The backfill's Beam side of its files: ReadArticles (input files -> ArticleFeatures dicts and the input order),
the result writer (assignments.jsonl, stories.jsonl, storylines.jsonl, explanations.jsonl, summary.json) and the progress lines.

Reads local or gs:// files through Beam's FileSystems; the plain parsing and folding are
transforms/stories/backfill/backfill_files.py, the stage's transforms the other modules of this package.
"""

from __future__ import annotations

import io
import json
import os
import time

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from stores.beam_io import write_lines, write_text
from transforms.common import DEAD_LETTER, Progress
from transforms.stories.backfill import backfill_files
from transforms.stories.beam.common import STAGE

ORDER = "order"


class ReadArticleFileFn(beam.DoFn):
    """One input file (local or gs://) -> ArticleFeatures dicts timestamped at their first-seen time (main),
    ``(file index, line, article_id)`` on ``order``, DeadLetter records of unreadable lines on ``dead_letter``.
    With ``takedowns`` (a StoreConfig: the production one, whose tombstones a backfill honours), articles taken
    down (stores/takedowns.py, read once per worker) are skipped like filtered ones (``articles_taken_down``)."""

    def __init__(self, languages=None, since: int | None = None, until: int | None = None, takedowns=None):
        self.languages, self.since, self.until = languages, since, until
        self.takedowns = takedowns
        self.taken: frozenset = frozenset()
        self.read = Metrics.counter(STAGE, "articles_read")
        self.skipped = Metrics.counter(STAGE, "articles_filtered")
        self.taken_down = Metrics.counter(STAGE, "articles_taken_down")
        self.bad = Metrics.counter(STAGE, "bad_input")

    def setup(self):
        if self.takedowns is not None:  # a store error fails the run: a backfill must not bring back a takedown
            from stores.takedowns import open_takedown_store

            self.taken = open_takedown_store(self.takedowns).taken_down().articles

    def process(self, element):
        file_index, path = element
        with FileSystems.open(path) as raw:
            if path.endswith(".avro"):
                import fastavro

                parsed = backfill_files.avro_features(fastavro.reader(raw))
            else:
                parsed = backfill_files.labelled_features(io.TextIOWrapper(raw, encoding="utf-8", errors="replace"))
            for line, f, bad in parsed:
                if bad is not None:
                    self.bad.inc()
                    yield beam.pvalue.TaggedOutput(DEAD_LETTER, backfill_files.bad_input(path, line, *bad))
                else:
                    yield from self.route(f, (file_index, line, f.article_id))

    def route(self, f, order):
        """A read article: filtered (``--language``, ``--from``/``--to``), taken down, or out with its order."""
        if not backfill_files.keep(f, self.languages, self.since, self.until):
            self.skipped.inc()
        elif f.article_id in self.taken:
            self.taken_down.inc()
        else:
            self.read.inc()
            yield beam.pvalue.TaggedOutput(ORDER, order)
            yield beam.window.TimestampedValue(f.to_dict(), f.first_seen_at / 1000.0)


class DecodeStoreArticleFn(ReadArticleFileFn):
    """A row of the article store (stores.beam_io.ReadLatestArticles: ``(range, row, article id, record)``) -> what
    ReadArticleFileFn yields for an Avro line, its order ``(range, row, article id)`` (the ranges ascend, so the
    ids' order); a row without a record or whose record does not decode is a ``from_store`` dead letter, ``at`` the
    time it was read (the scan yields no time of the row's own)."""

    def process(self, element):
        from schemas import codec
        from transforms.common import dead_letter
        from transforms.stories.vocabulary import features as F

        index, row, aid, raw = element
        try:
            if raw is None:
                raise ValueError("the row has no record (d:record)")
            f = F.from_article(codec.check("Article", codec.decode("Article", raw)))
        except Exception as exc:  # a row this version cannot read: a dead letter, the run goes on
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                dead_letter("from_store", "undecodable", str(exc), aid, raw or b"", at_ms=int(time.time() * 1000)),
            )
            return
        yield from self.route(f, (index, row, f.article_id))


class ReadArticles(beam.PTransform):
    """File paths -> ``{"articles", "order", "dead_letter"}`` PCollections (files read in order, one per worker)."""

    def __init__(self, files: list[str], languages=None, since=None, until=None, takedowns=None):
        super().__init__()
        self.files = list(files)
        self.languages, self.since, self.until = languages, since, until
        self.takedowns = takedowns  # a StoreConfig whose tombstoned articles are skipped (ReadArticleFileFn)

    def expand(self, p):
        res = (
            p
            | "ListFiles" >> beam.Create(list(enumerate(self.files)))
            | "ReadFiles"
            >> beam.ParDo(ReadArticleFileFn(self.languages, self.since, self.until, self.takedowns)).with_outputs(
                ORDER, DEAD_LETTER, main="articles"
            )
        )
        return {"articles": res.articles, "order": res[ORDER], "dead_letter": res[DEAD_LETTER]}


class ReadStoreArticles(beam.PTransform):
    """``newsroom backfill --from_store``: the latest version of every article of the article store ``source``
    (stores.beam_io.ReadLatestArticles, key ranges read in parallel) -> the same ``{"articles", "order",
    "dead_letter"}`` as :class:`ReadArticles`."""

    def __init__(self, source, points: list[str], languages=None, since=None, until=None, takedowns=None):
        super().__init__()
        self.source, self.points = source, list(points)
        self.languages, self.since, self.until, self.takedowns = languages, since, until, takedowns

    def expand(self, p):
        from stores.beam_io import ReadLatestArticles

        res = (
            p
            | "ReadStore" >> ReadLatestArticles(self.source, self.points)
            | "DecodeRows"
            >> beam.ParDo(DecodeStoreArticleFn(self.languages, self.since, self.until, self.takedowns)).with_outputs(
                ORDER, DEAD_LETTER, main="articles"
            )
        )
        return {"articles": res.articles, "order": res[ORDER], "dead_letter": res[DEAD_LETTER]}


def storyline_changes(packed: list[bytes], n_languages: int, links) -> list[dict]:
    """The run's StorylineChange records (what storyline_changes.jsonl holds), for ``--snapshots``' ranker, from the
    run's packed slim outputs (backfill_files.packed_slim_output)."""
    return backfill_files.storyline_rows(backfill_files.Packed(packed), links, n_languages)[1]


def write_results(packed: list[bytes], order: list, n_languages: int, out_dir: str, links) -> dict:
    """Fold the run's outputs (:func:`~transforms.stories.backfill.backfill_files.fold_results`); write assignments.jsonl,
    stories.jsonl, storylines.jsonl, storyline_changes.jsonl and the summary (summary.json); return the summary.

    ``packed``: every slim output pickled (backfill_files.packed_slim_output), in the order the run made them; the
    fold reads them in passes, decoding one at a time, and writes explanations.jsonl as it reads (the run's
    outputs decoded at once were O(history): ~10 KB an article, several times over)."""
    outputs = backfill_files.Packed(packed)
    rows, story_rows, summary = backfill_files.fold_results(outputs, order, n_languages, links)
    write_lines(rows, os.path.join(out_dir, "assignments.jsonl"))
    write_lines(story_rows, os.path.join(out_dir, "stories.jsonl"))
    write_lines(backfill_files.explanation_rows(outputs), os.path.join(out_dir, "explanations.jsonl"))
    storylines, storyline_changes = backfill_files.storyline_rows(outputs, links, n_languages)
    write_lines(storylines, os.path.join(out_dir, "storylines.jsonl"))
    write_lines(storyline_changes, os.path.join(out_dir, "storyline_changes.jsonl"))
    summary["counts"]["storylines"] = len(storylines)
    summary["counts"]["storylines_of_several"] = sum(1 for s in storylines if len(s["stories"]) > 1)
    write_text(os.path.join(out_dir, "summary.json"), json.dumps(summary, sort_keys=True))
    return summary


# ---------------------------------------------------------------------------------------------------------------
# Progress


class ReportProgressFn(beam.DoFn):
    """Prints ``what: n of total (pct, rate/s, ~eta left)`` on stderr at most every ``every_s`` seconds per worker
    thread, and once at the last element; passes through. ``total`` (a side input: the count of what will pass)
    gives the share and the time left at the rate so far; without it only ``n (rate/s)``."""

    def __init__(self, what: str, every_s: float = 5.0):
        self.what = what
        self.every_s = every_s

    def setup(self):
        self._n = 0
        self._progress = None

    def process(self, element, total=None):
        self._n += 1
        if self._progress is None:  # no estimate on its first line (progress_line: the start-up is no rate)
            self._progress = Progress(f"[backfill] {self.what}", total, self.every_s)
        self._progress(self._n)
        yield element
