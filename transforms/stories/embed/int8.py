"""Batch-independent int8 Linear layers for the CPU embedder (W8A8: per-channel weights, per-token activations).

Reads a torch module; replaces its ``nn.Linear`` layers in place with :class:`RowInt8Linear`. Imported only when an
int8 embedder is created (it imports torch).

Why not ``torch.ao.quantization.quantize_dynamic``: it scales the activations of a whole batch by one number, so a
text's vector depends on which other texts (and how much padding) share its batch: cosine down to 0.95 between two
batchings of the same texts, i.e. a backfill run twice could give different stories. Here every token row is
quantised with its own scale and multiplied exactly in int32 (``torch._int_mm``), then rescaled by the row's and the output channel's scale. A row's result therefore depends
on that row alone; with :class:`transforms.stories.embed.embed.SentenceTransformerEmbedder` feeding batches of equal token
length (no padding), a text's vector is bit-identical however the texts are batched. Per-token scales are also far
more accurate than one scale per batch: mean cosine 0.9976 to fp32 on the dev sets' title + lede texts (1st
percentile 0.996), against 0.941 for ``quantize_dynamic``.

Speed depends on the CPU: ``torch._int_mm`` is fast only with 8-bit dot-product instructions (VNNI, AMX; 4.4x an fp32
GEMM on the machine this was first tuned on) and ~15-26x slower than fp32 on an AVX2-only CPU. The embedder therefore
uses it only where :mod:`transforms.stories.embed.cpu` finds it faster on the CPU it runs on.
"""

from __future__ import annotations

import threading

import torch

_EPS = 1e-12


class _SharedInput(threading.local):
    """The last quantised input of a group of sibling layers (attention's query, key and value read one tensor).

    Thread-local: the embedder's worker threads run blocks through one shared model at the same time."""

    def __init__(self):
        self.x = None
        self.version = -1
        self.q = self.scale = None


class RowInt8Linear(torch.nn.Module):
    """``y = x W^T + b`` with W int8 per output channel and x int8 per row; exact int32 accumulation."""

    def __init__(self, linear: torch.nn.Linear, shared: _SharedInput | None = None):
        super().__init__()
        self._shared = shared if shared is not None else _SharedInput()
        w = linear.weight.detach().to(torch.float32)  # [out, in]
        scale = w.abs().amax(dim=1).clamp_min(_EPS) / 127.0
        self.register_buffer("weight_q", torch.round(w / scale[:, None]).to(torch.int8).t().contiguous())  # [in, out]
        self.register_buffer("weight_scale", scale)
        bias = linear.bias.detach().to(torch.float32) if linear.bias is not None else torch.zeros(w.shape[0])
        self.register_buffer("bias", bias)
        self.in_features = int(w.shape[1])
        self.out_features = int(w.shape[0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        c = self._shared
        if x is c.x and x._version == c.version:  # the sibling before us quantised this very tensor
            q, scale = c.q, c.scale
        else:
            rows = x.reshape(-1, self.in_features)
            scale = rows.abs().amax(dim=1, keepdim=True).clamp_min(_EPS) / 127.0
            q = torch.round(rows / scale).to(torch.int8)
            c.x, c.version, c.q, c.scale = x, x._version, q, scale
        acc = torch._int_mm(q, self.weight_q)  # int32, exact
        out = acc.to(torch.float32).mul_(scale).mul_(self.weight_scale).add_(self.bias)
        return out.reshape(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, w8a8 per-token"


def quantize_linears(module: torch.nn.Module) -> int:
    """Replace every ``nn.Linear`` under ``module`` with a :class:`RowInt8Linear`; returns how many were replaced.

    Siblings share their input's quantisation (query, key and value of one attention read the same tensor: one
    quantisation instead of three, ~5% of the embedder's time).
    """
    n = 0
    shared = _SharedInput()
    for name, child in list(module.named_children()):
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, RowInt8Linear(child, shared))
            n += 1
        else:
            n += quantize_linears(child)
    return n
