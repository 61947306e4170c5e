"""The launchable jobs (one module per Dataflow job, with its options) and, above them, the ``newsroom`` command.

Two layers live here (tests/test_layering.py): the jobs (``pipelines/*.py``: backfill, stories, ingest, covisit,
authority, userclusters, with their options and :mod:`pipelines.command_errors`, the one error policy a job run
as a command shares) and the commands layer above the jobs and the origin: the dispatcher ``pipelines/cli.py``
(the ``newsroom`` console script, setup.py) and ``pipelines/commands/`` (the subcommands that are not jobs:
operator and analyst commands and ``newsroom serve``). The dispatcher reaches jobs and commands by module name
through its ``COMMANDS`` table; nothing below it imports it. Kept inside pipelines/ (not a top-level package) so
``python -m pipelines.cli`` and the console script's ``pipelines.cli:main`` stay what every document and image
names.
"""
