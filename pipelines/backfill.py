"""``newsroom backfill``: cluster a historical set of articles into stories, in batch, for analysts.

Reads labelled JSONL files (``{id, story_id, language, title, text, published_at, publisher, url, topic}``; the
``story_id`` and ``topic`` labels are stripped on read and never reach the pipeline) and Article Avro files
(``*.avro``, records of schemas/avro/article.avsc), local or on GCS, one glob or several comma-separated. Runs the
stories transforms of the streaming job (EmbedArticles -> ClusterStories -> ApplyStoryChanges, transforms/stories/)
on FnApiRunner and writes, under ``--output`` DIR:

- ``assignments.jsonl``: one ``{"article_id", "story_id", "language", "group_id"}`` per input article, in input
  order; ``story_id`` after repair and alias resolution; ``group_id`` the cross-language link component.
- ``stories.jsonl``: one row per final story (id, language, first/last time, size, articles, links, group_id).
- ``storylines.jsonl``: one ``{"storyline_id", "stories"}`` per storyline (stories of one subject over weeks,
  transforms/stories/storylines/storyline.py), the stage run tick by tick over the writers' outputs as the streaming job runs
  it; ``storyline_changes.jsonl`` its StorylineChange records (schemas/avro/storyline_change.avsc), in seq order.
- ``explanations.jsonl``: why each article is where it is (transforms/stories/writer/explanations.py): the candidate
  stories of its arrival with their features and scores, and the splits and merges that moved it since;
  ``newsroom explain --output DIR --story ID`` (or ``--article ID``) prints it.
- ``dead_letters.jsonl``: unreadable input lines with the reason.
- ``manifest.json``: options, models, counts, duration and throughput.

The run writes its story store into its own namespace (default ``backfill-<utc time>-<random>``, under
``DIR/store`` for the embedded backend) and never touches production pointers or stores. Progress goes to stderr.
A namespace holds one run: a run into a namespace that already holds one is refused (exit status 2, the message
says why) unless ``--resume`` asks to continue it; the claim is atomic (stores/runs.py), so of two runs started at
once exactly one proceeds, and a resumed run mints story ids above every id the namespace ever had.

Runner: Beam's option convention. Every flag this module does not define goes to PipelineOptions (``--runner``,
``--project``, ``--region``, ``--temp_location``, ``--sdk_container_image``, ``--dry_run`` ...), whether the job
is started as ``newsroom backfill`` or ``python -m pipelines.backfill``. Without ``--runner`` the bounded job runs
on FnApiRunner in this process (the local default); ``--runner=DataflowRunner`` submits it to Dataflow (gs://
``--input``/``--output``, ``--backend=gcp``) and waits for it; ``--dry_run=True`` translates it without submitting
(no namespace claim, no output written).

Embedding and the writer (:func:`overlaps`): on every runner but Dataflow the one writer of each language embeds its
own articles, batch by batch (``--batch_size``) in decision order, and decides each batch as soon as it is embedded
(transforms/stories/writer/overlap.py); before, all articles were embedded in one stage and then decided in the next, one
after the other. The worker model: the encoder runs in one process of its own (transforms/stories/embed/embed_process.py,
started by the first article so that its start-up overlaps the input), with its own threads on every core, fed by
one thread of the writer's process; the writer, plain Python, runs beside it. Not threads in the writer's process:
the writer holds the GIL the encoder's forward pass needs (one busy Python thread halved the encoder here). Not a
pool: the encoder already uses every core, and one process loads the model once. The files are byte-identical either
way (tests/pipelines/test_backfill_overlap.py); ``manifest.json`` says which ran (``embedding``: ``overlapped`` or
``stage``). Dataflow keeps the embedding stage: there it spreads over the workers ahead of the single writer. Input
with links (``--links``, or auto on more than one language) also keeps it: link vectors come from that stage.

Input order and time: articles are decided in (first_seen_at, article_id) order, first_seen_at being
``published_at``; an article without a time gets the previous article's time in its file plus one second
(transforms/stories/vocabulary/features.py), so untimed files are decided in file order, deterministically.

Takedowns: articles tombstoned in production (stores/takedowns.py, the un-namespaced takedowns table; ``newsroom
takedown``) are skipped at read, counted ``articles_taken_down``: a backfill never brings a takedown back.

``--snapshots``: the editions stage over the run's story changes (page snapshots of a backfill); see
:func:`add_snapshots`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.backfill_flags import FLAGS, add_arguments  # noqa: F401  (add_arguments: the CLI's parser)
from pipelines.backfill_paths import (
    CHECKPOINT_DIR,
    RESUME_FLAGS,
    RUN_FILE,
    check_resumed_flags,
    expand_inputs,
    input_patterns,
    prepare_output,
    resumed_namespace,
)
from pipelines.options import JobRun, StoreOptions
from stores import StoreConfig


# PipelineOptions is named again so that Beam's get_all_options (which only walks direct subclasses) knows the
# backfill flags and does not warn that they are unparseable.
class BackfillOptions(StoreOptions, PipelineOptions):
    """Options of the backfill job (the store flags come from StoreOptions)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        # No required flags here: Beam parses every options class of the process when any pipeline runs
        # (get_all_options), so a required flag would fail every later pipeline; resolve() checks them instead.
        for a, kw in FLAGS:
            parser.add_argument(*a, **{k: v for k, v in kw.items() if k != "required"})


def _parse_bound(value: str | None, flag: str) -> int | None:
    if not value:
        return None
    from transforms.stories.vocabulary.features import parse_time

    t = parse_time(value)
    if t is None:
        raise ValueError(f"{flag}: cannot read {value!r} as an ISO 8601 date or time")
    return t


@dataclass(frozen=True)
class BackfillJob:
    """The backfill's options, resolved once (:func:`resolve`): the flags of :data:`FLAGS` as given (the
    manifest records them), the time bounds read, and the run's stores with its namespace and embedded root
    chosen."""

    run: JobRun
    input: str | None
    output: str
    from_store: str | None = None  # the embedded data dir whose article store is the input (--from_store)
    from_date: str | None = None
    to_date: str | None = None
    language: str | None = None
    embedder: str = "auto"
    links: str = "auto"
    exact_index: bool = False
    batch_size: int = 1024
    resume: bool = False
    overwrite: bool = False
    snapshots: bool | str = False
    snapshots_every_minute: bool = False
    since: int | None = None  # from_date in ms
    until: int | None = None  # to_date in ms

    @property
    def store(self) -> StoreConfig:
        return self.run.store

    @property
    def source(self) -> StoreConfig | None:
        """``--from_store``: the article store read (production's namespace): the embedded one under the data dir
        it names, or with ``--backend=gcp`` the article table of ``--bigtable_instance``."""
        if not self.from_store:
            return None
        if self.store.backend == "gcp":
            return dataclasses.replace(self.store, namespace="")
        return StoreConfig(backend="embedded", data_dir=self.from_store)

    @property
    def languages(self) -> set[str] | None:
        return {x.strip().lower() for x in self.language.split(",")} if self.language else None

    def flags(self) -> dict:
        """The job's own flags by name, as given (the manifest's ``options``)."""
        return {name: getattr(self, name) for name in FLAG_NAMES}


FLAG_NAMES = tuple(kw.get("dest") or a[0].lstrip("-") for a, kw in FLAGS)  # BackfillJob's fields of the same names


def resolve(options: PipelineOptions) -> BackfillJob:
    """The backfill's options, checked and resolved once: ValueError naming the flag when one is missing or
    unreadable; the namespace defaults to ``backfill-<utc time>-<random>`` and the embedded store's root to
    ``OUTPUT/store``. Reads nothing from disk (a dry run and a template launch resolve too)."""
    o = options.view_as(BackfillOptions)
    if not (o.input or o.from_store) or not o.output:
        raise ValueError("--input (or --from_store) and --output are required")
    if o.input and o.from_store:
        raise ValueError("--input and --from_store: give one (the files, or the article store)")
    if o.from_store not in (None, ".newsroom", "bigtable") and options.view_as(StoreOptions).backend == "gcp":
        raise ValueError(
            f"--from_store {o.from_store}: a data dir names an embedded store; with --backend=gcp give --from_store "
            "alone or --from_store=bigtable (it reads the article table of --bigtable_instance)"
        )
    run = JobRun.of(options)
    store = run.store
    if not store.namespace and o.resume:  # the run the output folder holds (backfill_paths.resumed_namespace)
        store = dataclasses.replace(store, namespace=resumed_namespace(o.output) or "")
    if not store.namespace:
        store = dataclasses.replace(
            store, namespace=f"backfill-{dt.datetime.now(dt.UTC):%Y%m%d%H%M%S}-{uuid.uuid4().hex[:6]}"
        )
    if store.backend == "embedded" and store.data_dir in (None, ".newsroom"):
        store = dataclasses.replace(store, data_dir=os.path.join(o.output, "store"))
    own = {name: getattr(o, name) for name in FLAG_NAMES}
    return BackfillJob(
        run=dataclasses.replace(run, store=store),
        since=_parse_bound(o.from_date, "--from"),
        until=_parse_bound(o.to_date, "--to"),
        **own,
    )


# ---------------------------------------------------------------------------------------------------------------


def claim_namespace(job: BackfillJob):
    """Claim the run's namespace (stores/runs.py): refused (NamespaceTaken) when it holds a run and ``--resume`` is
    off. A dry run claims nothing (returns a claim of epoch 0 that is never checked against the stores)."""
    from stores import open_store
    from stores.runs import RunClaim, claim

    if job.run.translate_only:
        return RunClaim(job.store.namespace, 0)
    return claim(open_store("pointers", job.store), job.store.namespace, resume=job.resume)


def overlaps(job: BackfillJob, overlap: bool | None = None) -> bool:
    """Whether the writer embeds its articles itself, overlapped with its decisions (``overlap`` None: on every
    runner but Dataflow). Locally the two stages otherwise run one after the other on the same cores; on Dataflow
    the embedding stage spreads over the workers ahead of the one writer per language, which is faster there."""
    return bool(overlap) if overlap is not None else not job.run.dataflow


def build_pipeline(p, job: BackfillJob, files: list[str] | None = None, run_claim=None, overlap: bool | None = None):
    """Adds the backfill graph to pipeline ``p``. Returns a dict of the main PCollections (for tests).

    ``job``: :func:`resolve` of the options. ``run_claim``: the namespace claim of this run (:func:`claim_namespace`);
    claimed here when not given (a Flex Template launch builds the graph directly: templates/launch.py). Raises
    NamespaceTaken when refused. ``overlap``: :func:`overlaps` (the same graph either way; only where the vectors
    are computed differs)."""
    from stores.beam_io import CheckRunClaimFn, write_lines
    from transforms.common import DEAD_LETTER, dead_letter_json
    from transforms.stories import beam as sb
    from transforms.stories.backfill import backfill_files
    from transforms.stories.beam import backfill as bb

    cfg = job.store
    run_claim = run_claim or claim_namespace(job)
    read_args = dict(languages=job.languages, since=job.since, until=job.until)
    read_args["takedowns"] = dataclasses.replace(cfg, namespace="")  # production's tombstones: skipped at read
    if job.from_store:  # the article store's latest versions, key ranges read in parallel
        read = p | "ReadArticles" >> bb.ReadStoreArticles(job.source, store_split_points(job), **read_args)
    else:
        files = files or (input_patterns(job.input) if job.run.translate_only else expand_inputs(job.input))
        read = p | "ReadArticles" >> bb.ReadArticles(files, **read_args)
    articles = read["articles"]
    n_languages = (
        articles
        | "LanguageOf" >> beam.Map(lambda d: d["language"])
        | "DistinctLanguages" >> beam.Distinct()
        | "CountLanguages" >> beam.combiners.Count.Globally()
    )
    n_articles = articles | "CountArticles" >> beam.combiners.Count.Globally()  # the progress lines' total
    links = {"auto": "auto", "on": True, "off": False}[job.links]
    defer = overlaps(job, overlap)
    embedded = (
        articles
        | "EmbedArticles"
        >> sb.EmbedArticles(job.embedder, links, link_languages=n_languages, batch_size=job.batch_size, defer=defer)
        | "ReportEmbedded"
        >> beam.ParDo(
            bb.ReportProgressFn("articles read" if defer else "articles embedded"),
            total=beam.pvalue.AsSingleton(n_articles),
        )
    )
    embed = (job.embedder, job.batch_size) if defer else None  # the writer embeds what EmbedArticles deferred
    clustered = embedded | "ClusterStories" >> sb.ClusterStories(
        cfg, exact_index=job.exact_index, bounded=checkpoint_folder(job) or True, explain=True, embed=embed
    )
    outputs = clustered.outputs
    # The fence: no change reaches the stores once a later run has claimed the namespace.
    claimed = outputs | "CheckRunClaim" >> beam.ParDo(CheckRunClaimFn(cfg, run_claim))
    applied = claimed | "ApplyStoryChanges" >> sb.ApplyStoryChanges(cfg)
    # Pickled, so the one list the result fold needs holds bytes, decoded one at a time (bb.write_results)
    slim = (
        outputs | "SlimOutputs" >> beam.Map(backfill_files.packed_slim_output) | "AllOutputs" >> beam.combiners.ToList()
    )
    results = slim | "WriteResults" >> beam.Map(
        bb.write_results,
        order=beam.pvalue.AsList(read["order"]),
        n_languages=beam.pvalue.AsSingleton(n_languages),
        out_dir=job.output,
        links=links,
    )
    dead = (read[DEAD_LETTER], clustered[DEAD_LETTER]) | "MergeDeadLetters" >> beam.Flatten()
    (
        dead
        | "DeadLetterJson" >> beam.Map(dead_letter_json)
        | "AllDeadLetters" >> beam.combiners.ToList()
        | "WriteDeadLetters" >> beam.Map(write_lines, path=os.path.join(job.output, "dead_letters.jsonl"))
    )
    if job.snapshots:  # the ranker gets the run's StorylineChanges, as streaming's does (one story per storyline)
        storylines = slim | "StorylineChanges" >> beam.FlatMap(
            bb.storyline_changes, n_languages=beam.pvalue.AsSingleton(n_languages), links=links
        )
        add_snapshots(claimed, job, storylines=storylines)
    return {"articles": articles, "outputs": outputs, "applied": applied, "results": results, "claim": run_claim}


def checkpoint_folder(job: BackfillJob) -> str | None:
    """Where the writer checkpoints what it has decided (``OUTPUT/checkpoint``: transforms/stories/backfill/checkpoint.py),
    which ``--resume`` continues from; None for a remote output (Dataflow's own retries keep its work there)."""
    return None if "://" in job.output else os.path.join(job.output, CHECKPOINT_DIR)


FROM_STORE_SPLITS = 32  # key ranges of a --from_store read: enough to spread a month over Dataflow's workers


def store_split_points(job: BackfillJob, n: int = FROM_STORE_SPLITS) -> list[str]:
    """The ids that cut ``--from_store``'s article store into about ``n`` key ranges (the store's own split points:
    Bigtable's sample keys, the embedded store's quantiles); a dry run reads nothing: one range."""
    from stores import open_store

    return [] if job.run.translate_only else open_store("articles", job.source).split_points(n)


def run(argv: list[str] | None = None, run_claim=None, overlap: bool | None = None) -> int:
    """``python -m pipelines.backfill ARGS`` and ``newsroom backfill ARGS``: build the graph, run it, write the
    manifest. Returns 0, or 2 when the namespace is refused, 1 when a later run superseded this one (the message on
    stderr says which). ``run_claim``: an existing claim of the namespace (tests); claimed here when not given.
    ``overlap``: :func:`overlaps` (tests compare the two ways)."""
    from stores.runs import NamespaceTaken

    started = time.time()
    options = PipelineOptions(argv)
    job = resolve(options)
    job.run.refuse_non_production_graph("backfill")
    files = _prepare(job)
    runner = job.run.runner_for(streaming=False)
    try:
        run_claim = run_claim or claim_namespace(job)
    except NamespaceTaken as exc:
        print(f"[backfill] refused: {exc}", file=sys.stderr)
        return 2
    stop = _StopOnInterrupt()
    try:
        with stop:  # before the start line: a Ctrl-C right after it is this run's interrupt, not the dispatcher's
            _say_start(job, files, run_claim, runner)
            status = _execute(job, options, files, run_claim, runner, overlap)
    except BaseException:
        if stop.interrupted:  # Beam wraps the interrupt of a DoFn in a RuntimeError: the flag says it was Ctrl-C
            return _interrupted(job, argv)
        raise
    if status is not None:
        return status
    if job.run.translate_only:
        print("[backfill] dry run: translated, not submitted; nothing written", file=sys.stderr)
        return 0
    _write_manifest(job, argv, files, run_claim, started, "overlapped" if overlaps(job, overlap) else "stage")
    return 0


def _prepare(job: BackfillJob) -> list[str]:
    """Check ``--output`` (:func:`prepare_output`); returns the input files. A dry run reads and writes nothing: its
    inputs are the ``--input`` patterns as given (a gs:// glob is not listed: offline that is minutes of credential
    retries, then a failure)."""
    if job.run.translate_only:
        return input_patterns(job.input or "")
    files = expand_inputs(job.input) if job.input else []  # before anything is removed
    source = job.source
    if source is not None and source.backend == "embedded" and not os.path.exists(source.embedded_db):
        raise ValueError(
            f"--from_store {job.from_store}: no article store there (no {source.embedded_db}); give the --data_dir "
            "`newsroom run` wrote (default .newsroom, in the folder it ran from), or --backend=gcp for production's"
        )
    if job.resume:  # before anything in --output is touched
        check_resumed_flags(job.output, {name: getattr(job, name) for name in RESUME_FLAGS})
    prepare_output(job.output, overwrite=job.overwrite, resume=job.resume)
    stale = os.path.join(job.output, "evaluate.html")
    if job.resume and os.path.exists(stale):  # it scored the files the resumed run rewrites
        os.remove(stale)
    return files


class _StopOnInterrupt:
    """While the graph runs (main thread only): Ctrl-C silences logging first (Beam logs a DoFn's interrupt with
    its traceback before wrapping it), then interrupts as usual; ``interrupted`` says it happened."""

    def __init__(self):
        self.interrupted = False
        self._saved = None

    def _handler(self, signum, frame):
        import logging

        self.interrupted = True
        logging.disable(logging.CRITICAL)
        raise KeyboardInterrupt

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._saved = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        import signal

        if self._saved is not None:
            signal.signal(signal.SIGINT, self._saved)
        return False


def _interrupted(job: BackfillJob, argv) -> int:
    """Ctrl-C: one line saying how to continue (the stores hold every change applied so far; ``--resume`` finds
    the run in ``--output`` and continues it), exit status 130, no traceback."""
    again = " ".join(a for a in (argv or []) if a not in ("--resume", "--overwrite"))
    print(
        f"[backfill] interrupted; namespace {job.store.namespace} keeps what was applied: "
        f"`newsroom backfill {again} --resume` continues it",
        file=sys.stderr,
        flush=True,
    )
    return 130


def _say_start(job: BackfillJob, files: list[str], run_claim, runner) -> None:
    if not job.run.translate_only and "://" not in job.output:  # what --resume finds (resumed_namespace)
        with open(os.path.join(job.output, RUN_FILE), "w", encoding="utf-8") as f:
            flags = {name: getattr(job, name) for name in RESUME_FLAGS}  # what --resume must be given again
            json.dump(
                {"namespace": job.store.namespace, "backend": job.store.backend, "flags": flags}, f, sort_keys=True
            )
    dry = job.run.translate_only
    src, reading = job.source, f"{len(files)} {'input pattern(s), not listed (dry run)' if dry else 'input file(s)'}"
    if src is not None:
        reading = (
            f"article store {src.embedded_db if src.backend == 'embedded' else 'bigtable ' + src.name('articles')}"
        )
    print(
        f"[backfill] {reading}"
        f", namespace {job.store.namespace} (run epoch {run_claim.epoch}), "
        f"output {job.output}, runner {runner if isinstance(runner, str) else type(runner).__name__}",
        file=sys.stderr,
    )


def _execute(job: BackfillJob, options, files: list[str], run_claim, runner, overlap=None) -> int | None:
    """Run the graph; None when it ran (or was translated), 1 when a later run superseded this one (the fence of
    stores/runs.py, checked again after the last write). Other errors are raised."""
    from stores import open_store
    from stores.runs import RunSuperseded

    pointers = None if job.run.translate_only else open_store("pointers", job.store)
    try:
        with beam.Pipeline(runner=runner, options=options) as p:
            build_pipeline(p, job, files, run_claim=run_claim, overlap=overlap)
        if pointers is not None:
            run_claim.check(pointers)  # superseded after its last write: its outputs may miss the later run's
    except Exception as exc:
        superseded = isinstance(exc, RunSuperseded)
        if not superseded and pointers is not None:
            try:
                run_claim.check(pointers)
            except RunSuperseded as later:
                superseded, exc = True, later
        if not superseded:
            raise
        print(f"[backfill] failed: {exc}", file=sys.stderr)
        return 1
    return None


def _read_back(path: str) -> str | None:
    """A result file's text, local or gs:// alike; None when it is not there."""
    from apache_beam.io.filesystems import FileSystems

    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as f:
        return f.read().decode("utf-8")


def embedder_line(spec: str, info: dict) -> str:
    """The closing line of one embedder: the arithmetic chosen for this CPU, why and its workers; an embedder with
    no such choice (USE, hash) says so rather than "n/a (-), - worker(s)"."""
    if info.get("path") in (None, "n/a"):
        return f"[backfill] embedder {spec}: one arithmetic (no int8/fp32 choice), in this process"
    return f"[backfill] embedder {spec}: {info['path']} ({info.get('reason', 'no reason recorded')}), {info.get('workers', 1)} worker(s)"


def _write_manifest(job: BackfillJob, argv, files: list[str], run_claim, started: float, embedding: str) -> None:
    """manifest.json: options, store, inputs, models and embedder paths, counts, duration, throughput (the run's
    summary.json, written by the graph, is folded in and removed)."""
    from apache_beam.io.filesystems import FileSystems

    from stores.beam_io import write_text
    from transforms.stories.embed.embed import loaded_paths
    from transforms.stories.index import ann_kernels

    duration = time.time() - started
    summary_path = os.path.join(job.output, "summary.json")
    summary = json.loads(_read_back(summary_path) or "{}")
    if FileSystems.exists(summary_path):
        FileSystems.delete([summary_path])
    counts = summary.get("counts", {})
    dead = _read_back(os.path.join(job.output, "dead_letters.jsonl"))
    counts["dead_letters"] = len(dead.splitlines()) if dead else 0
    # the arithmetic each embedder ran (int8 or fp32, chosen per CPU: transforms/stories/embed/cpu.py), its workers and why;
    # read from this process's embedders (FnApiRunner runs the DoFns in process)
    embedder_paths = loaded_paths()
    for spec, info in sorted(embedder_paths.items()):
        print(embedder_line(spec, info), file=sys.stderr)
    manifest = {
        "command": "newsroom backfill",
        "argv": list(argv or []),
        "options": job.flags(),
        "store": {
            "backend": job.store.backend,
            "data_dir": job.store.data_dir,
            "namespace": job.store.namespace,
            "run_epoch": run_claim.epoch,
        },
        "inputs": files,
        "models": summary.get("models", {}),
        "embedder_paths": embedder_paths,
        "embedding": embedding,  # "overlapped" (the writer embeds: overlaps()) or "stage"
        # the centroid index's ScaNN kernels and profile, chosen per CPU by measuring (ann_kernels.describe)
        "ann_index": ann_kernels.describe(),
        "calibration": summary.get("calibration", {}),
        "assumed": summary.get("assumed", {}),  # what the writer assumed of the input (untimed articles)
        "counts": counts,
        "started_at": dt.datetime.fromtimestamp(started, dt.UTC).isoformat(),
        "duration_s": round(duration, 3),
        "articles_per_s": round(counts.get("articles", 0) / duration, 2) if duration > 0 else None,
        "beam_version": beam.__version__,
    }
    write_text(os.path.join(job.output, "manifest.json"), json.dumps(manifest, indent=2, sort_keys=True, default=str))
    print(
        f"[backfill] {counts.get('articles', 0)} articles -> {counts.get('stories', 0)} stories in {duration:.1f}s "
        f"({manifest['articles_per_s']}/s); {counts.get('dead_letters', 0)} dead letters; wrote {job.output}",
        file=sys.stderr,
    )


def add_snapshots(outputs, job, replay: bool = True, storylines=None) -> dict:
    """``--snapshots``: the pages, pools, coverage and aliases a streaming run would have published minute by minute
    over the input, from the backfill's writer outputs (bursts, minute ranking, validated snapshots and pointers:
    transforms/editions/beam/stage.py PublishEditions). Into the run's own stores and namespace for ``--snapshots`` alone,
    an embedded store rooted at DIR for ``--snapshots DIR``. Versions are cycle minutes and documents carry no
    wall-clock time, so the same input gives byte-identical objects every run.

    ``storylines``: the run's StorylineChange records (storyline_changes.jsonl), fed to the ranker as the streaming
    job's storyline stage feeds it, so the top page keeps one story per storyline in its first five as streaming's
    does; None: no storyline rule.

    ``replay``: each edition's minute chain runs to its end in one firing (a bounded, complete input); False: one
    timer round per minute as streaming (tests compare the two). Only minutes where a page can change are built
    (transforms/editions/ranker/steady.py), unless ``--snapshots_every_minute`` (the baseline; the same bytes)."""
    from stores import StoreConfig
    from transforms.editions.beam import ChangesOfOutputs, PublishEditions
    from transforms.editions.vocabulary.settings import RankSettings

    own = isinstance(job.snapshots, str) and job.snapshots not in ("", "True")  # True (the flag alone) or DIR
    config = StoreConfig(backend="embedded", data_dir=job.snapshots) if own else job.store
    changes, change_only = outputs | "ChangesForEditions" >> ChangesOfOutputs(), not job.snapshots_every_minute
    if storylines is not None:
        changes = {"changes": changes, "storylines": storylines}
    ranking = RankSettings(replay=replay, change_only=change_only)
    return changes | "PublishEditions" >> PublishEditions(config, ranking, burst_polls=False, bounded=True)


if __name__ == "__main__":
    from pipelines.command_errors import run_job

    sys.exit(run_job("backfill", run, sys.argv[1:]))
