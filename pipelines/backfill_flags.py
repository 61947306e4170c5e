"""The backfill's own flags (pipelines/backfill.py): one list for the ``newsroom backfill`` parser, which checks them
before Beam is imported, and for :class:`pipelines.backfill.BackfillOptions`, the PipelineOptions the job resolves."""

from __future__ import annotations

import argparse

from transforms.stories.embed.embedder_specs import EMBEDDER_CHOICES, embedder_arg

FLAGS: list[tuple[tuple, dict]] = [
    (
        ("--input",),
        dict(
            default=None,
            help="JSONL or Avro file(s): a path or glob, several comma-separated (local or gs://). Required "
            "unless --from_store.",
        ),
    ),
    (
        ("--from_store",),
        dict(
            nargs="?",
            const=".newsroom",
            default=None,
            help="Read the articles from the system's own article store instead of --input: the latest version of "
            "each, from the embedded store under this data dir (default .newsroom, where `newsroom run` keeps it), "
            "or with --backend=gcp (no data dir, or bigtable) from production's Bigtable article table, key ranges "
            "read in parallel; through the same transforms and --from/--to/--language; rows it cannot read go to "
            "dead_letters.jsonl.",
        ),
    ),
    (
        ("--output",),
        dict(required=True, help="Directory for assignments.jsonl, stories.jsonl, manifest.json. Required."),
    ),
    (
        ("--from",),
        dict(
            dest="from_date",
            default=None,
            help="Keep articles first seen at or after this UTC date "
            "or time (ISO 8601). Untimed articles are kept. Default: no bound.",
        ),
    ),
    (
        ("--to",),
        dict(
            dest="to_date",
            default=None,
            help="Keep articles first seen before this UTC date or time "
            "(ISO 8601). Untimed articles are kept. Default: no bound.",
        ),
    ),
    (("--language",), dict(default=None, help="Comma-separated ISO 639-1 codes to keep. Default: all.")),
    (
        ("--embedder",),
        dict(
            default="auto",
            type=embedder_arg,
            help=f"Embedder, one of {EMBEDDER_CHOICES}: auto = English all-MiniLM-L6-v2 int8, others "
            "multilingual USE v3; minilm = int8 where the CPU measures it faster; minilm-int8 / minilm-fp32 forced "
            "(fp32 is the reference, half the speed); st:PATH a sentence-transformers directory; hash for tests. "
            "Default: auto.",
        ),
    ),
    (
        ("--links",),
        dict(
            default="auto",
            choices=["auto", "on", "off"],
            help="Cross-language links (multilingual "
            "vectors): auto = on when the input has more than one language. Default: auto.",
        ),
    ),
    (
        ("--exact_index",),
        dict(
            action="store_true",
            default=False,
            help="Exact nearest-centroid search instead of the ANN index. Default: off.",
        ),
    ),
    (
        ("--batch_size",),
        dict(
            type=int,
            default=1024,
            help="Articles per embedding call: the embedder runs texts of "
            "equal token length together, so larger batches fill its groups (texts/s on 2 cores: "
            "255 at 128, ~430 at 1,024). Default: 1024.",
        ),
    ),
    (
        ("--resume",),
        dict(
            action="store_true",
            default=False,
            help="Continue the run the namespace already holds "
            "(its stories, writer state and ids) instead of refusing it; a run still writing there is "
            "stopped (it fails with 'superseded'). Default: off (a namespace that holds a run is refused).",
        ),
    ),
    (
        ("--overwrite",),
        dict(
            action="store_true",
            default=False,
            help="Replace what an earlier backfill left in --output (every file of it, so no stale "
            "evaluate.html or dead letters stay beside the new ones). Default: off (an --output that is not empty "
            "is refused; --resume continues the run it holds).",
        ),
    ),
    (
        ("--snapshots",),
        dict(
            nargs="?",
            const=True,
            default=False,
            metavar="DIR",
            help="Also publish the edition "
            "pages, pools, story coverage and aliases a streaming run would have shown, minute by "
            "minute: into the run's own namespace, or with DIR into an embedded store rooted at DIR "
            "(transforms/editions). Default: off.",
        ),
    ),
    (
        ("--snapshots_every_minute",),
        dict(
            action="store_true",
            help="With --snapshots: build every minute, not only "
            "those where a page can change (same bytes, slower: the tests' and benchmark's baseline). Default: off.",
        ),
    ),
]

# The store flags are every job's (stores.add_store_arguments); the backfill's defaults of two of them differ, and
# pipelines/backfill.py resolve() applies them.
STORE_HELP = {
    "data_dir": "Root of the embedded stores. Default: OUTPUT/store.",
    "namespace": "The run's own namespace. Letters, digits, dashes. Default: backfill-<utc time>-<random>.",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The job's own flags, for ``newsroom backfill --help`` and the CLI's early check of them (pipelines/cli.py);
    any other flag is Beam's and goes to PipelineOptions untouched."""
    from stores import add_store_arguments

    for args, kwargs in FLAGS:
        parser.add_argument(*args, **kwargs)
    add_store_arguments(parser, helps=STORE_HELP)
