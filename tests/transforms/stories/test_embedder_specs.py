"""One list of embedder specs (transforms/stories/embed/embedder_specs.py): the check, the routing, the backend factory and
the templates' EMBEDDER regex accept exactly the same specs."""

from __future__ import annotations

import argparse
import re

import pytest

from templates.write_metadata import EMBEDDER
from transforms.stories.embed.embed import EmbedderRouting, create_embedder
from transforms.stories.embed.embedder_specs import EMBEDDER_NAMES, EMBEDDER_PATTERN, check_embedder, embedder_arg

GOOD = [*EMBEDDER_NAMES, "hash:16", "hash:512", "st:/models/labse", "st:gs-free/dir"]
BAD = [
    "minilmm",
    "",
    "MINILM",
    "hash:",
    "hash:0",
    "hash:01",
    "hash:x",
    "hashx",
    "st",
    "st:",
    "st:/a b",
    "auto:1",
    " use",
]


@pytest.mark.parametrize("spec", GOOD)
def test_every_valid_spec_passes_the_check_the_routing_and_the_template(spec):
    assert check_embedder(spec) == spec
    assert EmbedderRouting(spec).spec == spec
    assert re.match(EMBEDDER, spec), spec


@pytest.mark.parametrize("spec", BAD)
def test_every_invalid_spec_is_refused_by_all_of_them(spec):
    with pytest.raises(ValueError, match="valid: auto, minilm"):
        check_embedder(spec)
    with pytest.raises(argparse.ArgumentTypeError, match="unknown embedder"):
        embedder_arg(spec)
    if spec:  # "" is the routing's "auto" default and the factory's "minilm" one
        with pytest.raises(ValueError, match="--embedder"):
            EmbedderRouting(spec)
        with pytest.raises(ValueError, match="unknown embedder"):
            create_embedder(spec)
    assert not re.match(EMBEDDER, spec), spec


def test_the_template_regex_is_the_pattern_the_check_matches():
    assert EMBEDDER == EMBEDDER_PATTERN


def test_the_names_need_no_escaping_in_the_template_regex():
    assert all(re.fullmatch(r"[a-z0-9-]+", n) for n in EMBEDDER_NAMES)


def test_argparse_names_the_flag_and_the_choices(capsys):
    parser = argparse.ArgumentParser(prog="newsroom backfill")
    parser.add_argument("--embedder", type=embedder_arg)
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["--embedder", "minilmm"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --embedder: unknown embedder 'minilmm' (valid: auto, minilm" in err
