"""The one list of embedder specs ``--embedder`` accepts, and its check, without numpy or a model.

Every reader follows it: the ``--embedder`` flag of ``newsroom stories``, ``backfill`` and ``run`` (``type=``
:func:`embedder_arg`, so argparse refuses a typo at parse time, naming the flag and the valid specs, instead of a
worker's ``setup()`` failing after the job was launched), :func:`transforms.stories.embed.create_embedder`,
:class:`transforms.stories.embed.EmbedderRouting`, and the templates' ``EMBEDDER`` regex
(templates/write_metadata.py, checked against this list by tests/transforms/stories/test_embedder_specs.py). Kept apart from
embed.py so that the commands' parsers import it without numpy. What each spec means: transforms/stories/embed.py.
"""

from __future__ import annotations

import argparse

EMBEDDER_NAMES = ("auto", "minilm", "minilm-int8", "minilm-fp32", "use", "hash")
EMBEDDER_FORMS = ("hash:DIM", "st:PATH")  # hash with DIM dimensions (digits), a sentence-transformers directory
EMBEDDER_CHOICES = ", ".join(EMBEDDER_NAMES + EMBEDDER_FORMS)


def check_embedder(spec: str) -> str:
    """``spec`` unchanged when it is one of :data:`EMBEDDER_NAMES` / :data:`EMBEDDER_FORMS`, else ValueError naming
    the valid ones: a typo must stop the command that reads it, not a worker's ``setup()`` an hour later."""
    name, colon, rest = spec.partition(":")
    if spec in EMBEDDER_NAMES:
        valid = True
    elif name == "hash" and colon:
        valid = rest.isdigit() and int(rest) > 0
    else:
        valid = name == "st" and bool(colon) and bool(rest) and not any(c.isspace() for c in rest)
    if not valid:
        raise ValueError(f"unknown embedder {spec!r} (valid: {EMBEDDER_CHOICES})")
    return spec


def embedder_arg(value: str) -> str:
    """argparse ``type=`` of ``--embedder``: argparse prints ``argument --embedder: unknown embedder ...`` and exits 2."""
    try:
        return check_embedder(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
