"""Helpers of the offline deployment checks (tests/deploy/), importable from the test modules as ``deploy_helpers``
(tests/deploy/conftest.py registers this file under that name; the suite runs with --import-mode=importlib and
tests/ is not a package).

- ``JOBS``: the Dataflow jobs that have a Flex Template: module, whether it streams.
- ``import_job(job)``: imports ``pipelines.<job>``, failing (never skipping) with a message naming the missing file:
  every job must be deployable, so a job that does not exist yet is a failing deploy check, not a silent one.
- ``options_classes(module)`` / ``options_of(module)``: the project's options classes of a job and every option they
  define (argparse actions by option name), StoreOptions included.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# job -> (module, streaming)
JOBS: dict[str, tuple[str, bool]] = {
    "ingest": ("pipelines.ingest", True),
    "stories": ("pipelines.stories", True),
    "backfill": ("pipelines.backfill", False),
    "covisit": ("pipelines.covisit", True),
    "authority": ("pipelines.authority", False),
    "userclusters": ("pipelines.userclusters", False),
}

# Packages whose PipelineOptions classes count as the project's own (a job's options may mix one in).
PROJECT_PACKAGES = ("pipelines", "transforms", "stores", "serving", "schemas")


def import_job(job: str):
    module_name = JOBS[job][0]
    path = REPO_ROOT / (module_name.replace(".", "/") + ".py")
    if not path.exists():
        pytest.fail(
            f"{path.relative_to(REPO_ROOT)} does not exist yet: the {job} job has no pipeline to check its "
            f"Flex Template (templates/{job}/metadata.json) and its Dataflow dry run against",
            pytrace=False,
        )
    return importlib.import_module(module_name)


def options_classes(module) -> list[type]:
    """The project's PipelineOptions classes a job module defines or inherits: its own classes (subclasses of
    StoreOptions the module defines or imports, as pipelines/ingest.py its pipelines/ingest_options.py) and every project options class in their MRO, StoreOptions included."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.options import StoreOptions

    own = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, StoreOptions) and obj is not StoreOptions
    ]
    if not own:
        pytest.fail(
            f"{module.__name__} defines no PipelineOptions subclass of pipelines.options.StoreOptions", pytrace=False
        )
    classes: list[type] = []
    for cls in own:
        for base in cls.__mro__:
            if (
                isinstance(base, type)
                and issubclass(base, PipelineOptions)
                and base is not PipelineOptions
                and base.__module__.split(".")[0] in PROJECT_PACKAGES
                and "_add_argparse_args" in vars(base)
                and base not in classes
            ):
                classes.append(base)
    return classes


def options_of(module) -> dict[str, argparse.Action]:
    """Option name (without --) -> argparse action, for every option of the job's own classes and StoreOptions."""
    actions: dict[str, argparse.Action] = {}
    for cls in options_classes(module):
        parser = argparse.ArgumentParser(add_help=False)
        cls._add_argparse_args(parser)
        for action in parser._actions:
            longs = [s for s in action.option_strings if s.startswith("--")]
            if longs:
                actions[longs[0][2:]] = action
    return actions
