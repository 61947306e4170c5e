"""Flex Template entry point: build the Newsroom job named by ``$NEWSROOM_JOB`` and submit it, without waiting.

Reads: ``NEWSROOM_JOB`` (ingest, stories, backfill, covisit, authority or userclusters; set by the JOB build-arg of templates/Dockerfile) and the
arguments the Flex Template launcher passes (``--name=value`` for each parameter of templates/<job>/metadata.json,
plus Dataflow's own options: runner, project, region, temp location, worker image ...).
Writes: nothing itself; ``pipelines.<job>.build_pipeline(p, pipelines.<job>.resolve(options))`` builds the graph
and ``p.run()`` submits it.

Design choices:
- The launcher must exit once the job is submitted (a Flex Template launcher that waits times out), so this calls
  the job's ``build_pipeline`` and ``p.run()`` and never ``wait_until_finish`` (a job's own ``run()`` may wait,
  which is right on a laptop and wrong here).
- Flex Templates pass every parameter as ``--name=value``, booleans included, and argparse's ``store_true`` flags
  refuse a value ("ignored explicit argument"). For the flags the options classes declare without a value,
  ``--name=true`` becomes ``--name`` and ``--name=false`` is dropped. Flags whose value is optional and whose bare
  form means "on" (``nargs="?"``, ``const=True``: the backfill's ``--snapshots [DIR]``) get the same rewriting for
  true/false, since argparse would otherwise take the word itself as the value (``--snapshots=false`` would turn
  snapshots on, into a directory named "false"); any other value passes through.
- A template runs in the cloud: ``--backend=gcp`` is put first (an explicit ``--backend`` still wins, argparse
  keeps the last value), and the streaming jobs always get ``--streaming`` (Beam's flag cannot be a template
  parameter, see above; metadata.json says ``"streaming": true`` for the console).

The same function is what tests/deploy/test_dry_run.py runs, with ``--dry_run=True``, so CI translates exactly
the graph a template would submit.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

JOBS = ("ingest", "stories", "backfill", "covisit", "authority", "userclusters")
STREAMING_JOBS = frozenset({"ingest", "stories", "covisit"})
TRUE = frozenset({"true", "1", "yes", "y", "on"})
FALSE = frozenset({"false", "0", "no", "n", "off", ""})


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _flags_where(test) -> set[str]:
    from apache_beam.options.pipeline_options import PipelineOptions

    flags: set[str] = set()
    for cls in _subclasses(PipelineOptions):
        parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
        try:
            cls._add_argparse_args(parser)
        except Exception:  # an options class of an unrelated library that cannot register here
            continue
        for action in parser._actions:
            if test(action):
                flags.update(s for s in action.option_strings if s.startswith("--"))
    return flags


def boolean_flags() -> set[str]:
    """Option strings (``--streaming``, ``--dry_run`` ...) of every PipelineOptions flag that takes no value."""
    return _flags_where(lambda a: a.nargs == 0)


def optional_value_flags() -> set[str]:
    """Option strings of the flags whose value is optional and whose bare form means on (``--snapshots [DIR]``)."""
    return _flags_where(lambda a: a.nargs == "?" and a.const is True)


def template_argv(
    job: str, argv: list[str], flags: set[str] | None = None, optional: set[str] | None = None
) -> list[str]:
    """The job's argv for a template launch: cloud defaults first, then the launcher's arguments with
    ``--flag=true|false`` rewritten for value-less flags (``flags``) and for flags with an optional value
    (``optional``; other values pass through). Raises ValueError naming a value-less flag given a non-boolean value."""
    if job not in JOBS:
        raise ValueError(f"NEWSROOM_JOB must be one of {', '.join(JOBS)}, got {job!r}")
    flags = boolean_flags() if flags is None else flags
    optional = optional_value_flags() if optional is None else optional
    out = ["--backend=gcp"]
    if job in STREAMING_JOBS:
        out.append("--streaming")
    for arg in argv:
        name, eq, value = arg.partition("=")
        if eq and (name in flags or name in optional):
            v = value.strip().lower()
            if v in TRUE:
                out.append(name)
            elif v in FALSE:
                pass
            elif name in flags:
                raise ValueError(f"{name} takes true or false, got {value!r}")
            else:
                out.append(arg)
            continue
        out.append(arg)
    return out


def load_job(job: str):
    """Imports ``pipelines.<job>``, which defines its options class, so that the flag discovery above sees its flags."""
    return importlib.import_module(f"pipelines.{job}")


def launch(job: str, argv: list[str]):
    """Build ``pipelines.<job>`` with the template's arguments and submit it. Returns the PipelineResult."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    module = load_job(job)
    options = PipelineOptions(template_argv(job, argv))
    pipeline = beam.Pipeline(options=options)
    module.build_pipeline(pipeline, module.resolve(options))
    return pipeline.run()


def main() -> int:
    job = os.environ.get("NEWSROOM_JOB", "")
    launch(job, sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
