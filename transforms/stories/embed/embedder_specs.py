"""The one list of embedder specs ``--embedder`` accepts, and its check, without numpy or a model.

Every reader follows it: the ``--embedder`` flag of ``newsroom stories``, ``backfill`` and ``run`` (``type=``
:func:`embedder_arg`, so argparse refuses a typo at parse time, naming the flag and the valid specs, instead of a
worker's ``setup()`` failing after the job was launched), :func:`transforms.stories.embed.embed.create_embedder`,
:class:`transforms.stories.embed.embed.EmbedderRouting`, and the templates' ``EMBEDDER`` regex
(templates/write_metadata.py takes :data:`EMBEDDER_PATTERN`, the pattern :func:`check_embedder` matches). Kept apart from
embed.py so that the commands' parsers import it without numpy. What each spec means: transforms/stories/embed/embed.py.
"""

from __future__ import annotations

import argparse
import re

EMBEDDER_NAMES = ("auto", "minilm", "minilm-int8", "minilm-fp32", "use", "hash")
EMBEDDER_FORMS = ("hash:DIM", "st:PATH")  # hash with DIM dimensions (digits), a sentence-transformers directory
EMBEDDER_CHOICES = ", ".join(EMBEDDER_NAMES + EMBEDDER_FORMS)
# Every valid spec and nothing else: the names, hash:DIM (DIM > 0, no leading zero), st:PATH (no whitespace). The
# Flex Templates' metadata carries it as the parameter's regex, so the console refuses what the command refuses.
EMBEDDER_PATTERN = "^(" + "|".join(EMBEDDER_NAMES) + r"|hash:[1-9][0-9]*|st:\S+)$"  # names need no escaping
_SPEC = re.compile(EMBEDDER_PATTERN)


def check_embedder(spec: str) -> str:
    """``spec`` unchanged when it is one of :data:`EMBEDDER_NAMES` / :data:`EMBEDDER_FORMS`, else ValueError naming
    the valid ones: a typo must stop the command that reads it, not a worker's ``setup()`` an hour later."""
    if not _SPEC.fullmatch(spec):
        raise ValueError(f"unknown embedder {spec!r} (valid: {EMBEDDER_CHOICES})")
    return spec


def embedder_arg(value: str) -> str:
    """argparse ``type=`` of ``--embedder``: argparse prints ``argument --embedder: unknown embedder ...`` and exits 2."""
    try:
        return check_embedder(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
