"""The backfill's embedder process (transforms/stories/embed/embed_process.py) gives the vectors of the in-process embedder,
says what it runs, and turns a failure into an error, not a hang."""

from __future__ import annotations

import numpy as np
import pytest

from transforms.stories.embed.embed import HashEmbedder
from transforms.stories.embed.embed_process import EmbedderProcess, wants_process

TEXTS = ["Magnitude 7.3 earthquake strikes Valparaiso Chile", "Sbarro files for Chapter 11 again", "x"]


def test_an_embedder_process_gives_the_in_process_vectors():
    proc = EmbedderProcess("hash:32")
    try:
        name, dim, _ = proc.ready()
        assert (name, dim) == ("test", 32)
        got = proc.encode(TEXTS)
        assert np.array_equal(got, HashEmbedder(32).encode(TEXTS)) and got.dtype == np.float32
        assert proc.encode([]).shape == (0, 32)
    finally:
        proc.close()
    assert not proc._proc.is_alive()


def test_a_spec_the_child_cannot_load_is_an_error():
    proc = EmbedderProcess("hash:notanumber")
    try:
        with pytest.raises(RuntimeError, match="embedder process hash:notanumber"):
            proc.ready()
    finally:
        proc.close()


def test_only_the_sentence_transformers_specs_get_a_process():
    assert wants_process("minilm") and wants_process("minilm-fp32") and wants_process("st:/m")
    assert not wants_process("hash") and not wants_process("use")
