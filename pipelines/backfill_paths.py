"""The backfill's paths: the input files ``--input`` names and the ``--output`` folder it writes (pipelines/backfill.py).

Reads the file system through Beam's FileSystems (local or gs://); removes an earlier run's files only under
``--overwrite`` and only when the folder holds nothing a backfill does not write.
"""

from __future__ import annotations

import os


def input_patterns(pattern: str) -> list[str]:
    """The comma-separated paths/globs of ``--input``, unexpanded (what a dry run translates: it reads nothing)."""
    return [x.strip() for x in pattern.split(",") if x.strip()]


def expand_inputs(pattern: str) -> list[str]:
    """Sorted, de-duplicated file paths of a comma-separated list of paths/globs. Raises ValueError if none, or
    when a local path names a folder (a folder is not an input file: the run would fail reading it)."""
    from apache_beam.io.filesystems import FileSystems

    paths = []
    for p in input_patterns(pattern):
        if "://" not in p and os.path.isdir(p):
            raise ValueError(f"--input {p}: is a folder; give its files, e.g. --input '{os.path.join(p, '*.jsonl')}'")
        found = FileSystems.match([p])[0].metadata_list
        paths.extend(m.path for m in found)
    paths = sorted(set(paths))
    if not paths:
        raise ValueError(f"--input: no file matches {pattern!r}")
    return paths


# What a backfill writes into --output (and --overwrite may therefore remove); anything else there is not ours.
OUTPUT_FILES = frozenset(
    {
        "assignments.jsonl",
        "stories.jsonl",
        "storylines.jsonl",
        "storyline_changes.jsonl",
        "explanations.jsonl",
        "dead_letters.jsonl",
        "manifest.json",
        "summary.json",
        "run.json",
        "from_store.avro",  # written by --from_store runs before it read the store in the graph
    }
    | {"evaluate.html"}
)
CHECKPOINT_DIR = "checkpoint"  # the writer's checkpoint (transforms/stories/backfill/checkpoint.py), for --resume
OUTPUT_DIRS = frozenset({"store", "snapshots", CHECKPOINT_DIR})


def prepare_output(output: str, overwrite: bool = False, resume: bool = False) -> None:
    """Check ``--output`` before anything runs. A folder that is not empty holds an earlier run: refused (ValueError
    naming what is there) unless ``--resume`` continues it or ``--overwrite`` replaces it. ``--overwrite`` removes
    the earlier run's files (with ``--resume``: all but its ``store``), and refuses a folder holding anything a
    backfill does not write: a mistyped ``--output $HOME`` is never emptied. A file given for the folder is refused.
    gs:// outputs: objects under the prefix, the same rules."""
    if "://" in output:
        return _prepare_remote_output(output, overwrite, resume)
    if os.path.exists(output) and not os.path.isdir(output):
        raise ValueError(f"--output {output}: is a file, not a folder")
    held = sorted(os.listdir(output)) if os.path.isdir(output) else []
    if held and not overwrite:
        if resume:
            return
        raise ValueError(
            f"--output {output}: not empty ({', '.join(held[:5])}{', ...' if len(held) > 5 else ''}); "
            "--overwrite replaces the earlier run, --resume continues it"
        )
    foreign = [x for x in held if x not in OUTPUT_FILES | OUTPUT_DIRS]
    if foreign:
        raise ValueError(
            f"--output {output}: holds files a backfill does not write ({', '.join(foreign[:5])}); "
            "--overwrite only replaces a backfill's output: choose an empty folder"
        )
    import shutil

    for name in held:
        if resume and name == "store":
            continue
        path = os.path.join(output, name)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    os.makedirs(output, exist_ok=True)


def _prepare_remote_output(output: str, overwrite: bool, resume: bool) -> None:
    from apache_beam.io.filesystems import FileSystems

    held = [m.path for m in FileSystems.match([output.rstrip("/") + "/**"])[0].metadata_list]
    if held and not overwrite and not resume:
        raise ValueError(f"--output {output}: not empty ({len(held)} objects); --overwrite replaces them")
    if held and overwrite:
        FileSystems.delete(held)


RUN_FILE = "run.json"  # the run's store, namespace and flags, written when it starts: what --resume finds

# The flags that choose what a run decides (BackfillJob's fields; since/until are --from/--to in ms): a resumed run
# continues the namespace's stories, so with another value its files would be neither run's.
RESUME_FLAGS = {
    "input": "--input",
    "from_store": "--from_store",
    "since": "--from",
    "until": "--to",
    "language": "--language",
    "embedder": "--embedder",
    "links": "--links",
    "exact_index": "--exact_index",
    "snapshots": "--snapshots",
}


def check_resumed_flags(output: str, flags: dict) -> None:
    """``--resume``: ValueError naming each flag of :data:`RESUME_FLAGS` whose value differs from the one the run in
    ``output`` started with (its ``run.json``); nothing to check when the folder holds no such record (a remote
    output, or a run started before the flags were recorded)."""
    import json

    from pipelines.command_errors import utc_text

    try:
        with open(os.path.join(output, RUN_FILE), encoding="utf-8") as f:
            held = json.load(f).get("flags")
    except (OSError, ValueError, AttributeError):
        return
    if not isinstance(held, dict):
        return

    def shown(name, value):
        if value is None or value is False:
            return "(not given)"
        if name in ("since", "until") and isinstance(value, int):
            return utc_text(value, "ms")
        return str(value)

    differ = [n for n in RESUME_FLAGS if n in held and held[n] != flags.get(n)]
    if differ:
        said = "; ".join(f"{RESUME_FLAGS[n]} {shown(n, held[n])} there, {shown(n, flags.get(n))} here" for n in differ)
        raise ValueError(
            f"--resume: the run in {output} was started with other flags ({said}); resume it with its own flags, "
            "or start a new run with --overwrite (or another --output)"
        )


def resumed_namespace(output: str) -> str | None:
    """The namespace of the run an ``--output`` folder holds (its ``run.json``, else its ``manifest.json``, else
    the one namespace folder under its ``store/``), for ``--resume`` without ``--namespace``; None when it holds
    none (the run starts afresh) or the output is remote (give ``--namespace``)."""
    import json

    if "://" in output or not os.path.isdir(output):
        return None
    for name, key in ((RUN_FILE, ("namespace",)), ("manifest.json", ("store", "namespace"))):
        try:
            with open(os.path.join(output, name), encoding="utf-8") as f:
                value = json.load(f)
            for k in key:
                value = value[k]
            if value:
                return str(value)
        except (OSError, ValueError, KeyError, TypeError):
            continue
    store = os.path.join(output, "store")
    found = (
        sorted(x for x in os.listdir(store) if os.path.isdir(os.path.join(store, x))) if os.path.isdir(store) else []
    )
    if len(found) > 1:
        raise ValueError(f"--resume: {output}/store holds several runs ({', '.join(found[:5])}): give --namespace")
    return found[0] if found else None
