"""Which arithmetic the CPU embedder runs on the CPU it is on: int8 (``torch._int_mm``) only where it beats fp32.

Reads the CPU's flags (``/proc/cpuinfo``; elsewhere only torch's reported capability) and times both matrix products
once per process; writes nothing. Used by :mod:`transforms.stories.embed.embed` (``--embedder minilm``, the default for
English) and recorded in the backfill's ``manifest.json`` (``embedder_paths``) and its log.

Why: ``torch._int_mm`` is fast only where the CPU has 8-bit dot-product instructions (AVX-512 VNNI, AVX-VNNI, AMX);
on an AVX2-only CPU (this project's 2-core AMD EPYC) it falls back to a generic loop and is ~15-26x *slower* than an
fp32 GEMM of the same shape, which made the int8 default run the backfill at ~10 articles/s against ~109/s in fp32.
Developer, CI and Dataflow worker CPUs differ, so the choice is made where the embedder runs, not where it was tuned.

Choice rule (deterministic given its two inputs, both recorded):
1. ``NEWSROOM_EMBED_PATH=int8|fp32`` in the environment pins the path (e.g. to make a streaming job and a backfill
   on different machines use the same arithmetic); the reason says so.
2. Without an 8-bit dot-product flag (:data:`INT8_FLAGS`) the path is fp32: no measurement can make a generic int8
   loop worth it, and skipping it keeps the choice free of timing noise on such CPUs. (The ratio is still measured,
   for the record, unless ``measure=False``.)
3. With such a flag, int8. The micro-benchmark still runs and is recorded (``int8_speedup``), but it does not
   decide: on a loaded machine it measured this VNNI CPU anywhere from 0.13x to 7.4x between runs minutes apart,
   so a timed choice made two backfills of one input on one machine run different arithmetic (and could give
   different stories). The flags name hardware 8-bit dot products, which is what makes ``torch._int_mm`` fast; a
   CPU where that is not so (none seen) is pinned with ``NEWSROOM_EMBED_PATH=fp32``, and a measured ratio below
   :data:`MIN_SPEEDUP` is named in the reason and logged as a warning so that such a CPU shows up.

The micro-benchmark alternates the two products ``ROUNDS`` times and keeps each one's fastest time (the minimum is the
least noisy estimate on a shared machine); it costs ~0.1 s on a VNNI CPU and ~1 s on this one, once per process.
"""

from __future__ import annotations

import logging
import os
import threading
import time

log = logging.getLogger("newsroom.stories.cpu")

INT8_FLAGS = ("avx512_vnni", "avx512vnni", "avx_vnni", "avxvnni", "amx_int8", "asimddp", "i8mm")  # x86 and Arm
SHAPE = (256, 384, 1536)  # rows (tokens of a block) x in x out: MiniLM's largest Linear
MIN_SPEEDUP = 1.25
ROUNDS = 3
ENV = "NEWSROOM_EMBED_PATH"

_CHOICE: dict | None = None
_LOCK = threading.Lock()


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (Linux, x86 ``flags`` / Arm ``Features``); empty elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        pass
    return set()


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def measure_int8_speedup(shape: tuple[int, int, int] = SHAPE, rounds: int = ROUNDS) -> dict:
    """fp32 time / int8 time of one ``shape`` product (int8 includes quantising the rows), single-threaded.

    Single-threaded because the embedder's workers each run one intra-op thread
    (:class:`transforms.stories.embed.embed.SentenceTransformerEmbedder`). Returns the two best times in ms and the ratio.
    """
    import torch

    m, k, n = shape
    g = torch.Generator().manual_seed(0)
    x = torch.randn(m, k, generator=g)
    w = torch.randn(k, n, generator=g)
    wq = torch.randint(-127, 128, (k, n), dtype=torch.int8, generator=g)

    def fp32():
        return x @ w

    def int8():
        scale = x.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 127.0
        q = torch.round(x / scale).to(torch.int8)
        return torch._int_mm(q, wq).to(torch.float32).mul_(scale)

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best = {"fp32": float("inf"), "int8": float("inf")}
        with torch.no_grad():
            fp32(), int8()  # warm up (kernel selection, allocations)
            for _ in range(rounds):
                for name, fn in (("fp32", fp32), ("int8", int8)):
                    t0 = time.perf_counter()
                    fn()
                    best[name] = min(best[name], time.perf_counter() - t0)
    finally:
        torch.set_num_threads(before)
    return {
        "fp32_ms": round(best["fp32"] * 1000, 3),
        "int8_ms": round(best["int8"] * 1000, 3),
        "int8_speedup": round(best["fp32"] / max(best["int8"], 1e-9), 3),
        "shape": list(shape),
    }


def decide(flags: set[str], speedup: float | None, pinned: str | None = None) -> tuple[str, str]:
    """(path, reason) by the module's rule from the CPU flags, the measured int8 speedup and an optional pin."""
    if pinned:
        if pinned not in ("int8", "fp32"):
            raise ValueError(f"{ENV}={pinned!r}: expected int8 or fp32")
        return pinned, f"pinned by {ENV}={pinned}"
    have = sorted(f for f in INT8_FLAGS if f in flags)
    if not have:
        return "fp32", "no 8-bit dot-product instructions (" + "/".join(INT8_FLAGS[::2]) + ") on this CPU"
    if speedup is None:
        return "int8", f"{','.join(have)} present (int8 speed not measured)"
    if speedup >= MIN_SPEEDUP:
        return "int8", f"{','.join(have)} present; int8 measured {speedup:.2f}x fp32"
    return "int8", (
        f"{','.join(have)} present; int8 measured only {speedup:.2f}x fp32 this time (timing is noisy on a loaded "
        f"machine, so it does not decide; pin {ENV}=fp32 if this CPU's int8 is really slower)"
    )


def choose_path(measure: bool = True) -> dict:
    """The process's choice (computed once, then cached): ``{"path", "reason", "cpu", "torch_capability",
    "int8_flags", "int8_speedup", "fp32_ms", "int8_ms", ...}``; logged at INFO when first made."""
    global _CHOICE
    with _LOCK:
        if _CHOICE is not None:
            return dict(_CHOICE)
        import torch

        flags = cpu_flags()
        pinned = os.environ.get(ENV, "").strip().lower() or None
        timing = measure_int8_speedup() if measure else {}
        path, reason = decide(flags, timing.get("int8_speedup"), pinned)
        try:
            capability = torch.backends.cpu.get_cpu_capability()
        except Exception:  # pragma: no cover - older torch
            capability = None
        _CHOICE = {
            "path": path,
            "reason": reason,
            "cpu": cpu_model(),
            "torch_capability": capability,
            "int8_flags": sorted(f for f in INT8_FLAGS if f in flags),
            "avx2": "avx2" in flags,
            **timing,
        }
        slow = path == "int8" and not pinned and timing.get("int8_speedup", MIN_SPEEDUP) < MIN_SPEEDUP
        (log.warning if slow else log.info)("embedder arithmetic: %s (%s; %s)", path, reason, timing or "not measured")
        return dict(_CHOICE)


def adopt(choice: dict) -> None:
    """Take ``choice`` (another process's :func:`choose_path`) as this process's: an embedding child process uses
    its parent's arithmetic, the one the backfill's manifest records."""
    global _CHOICE
    with _LOCK:
        _CHOICE = dict(choice)


def reset() -> None:
    """Forget the cached choice (tests)."""
    global _CHOICE
    with _LOCK:
        _CHOICE = None


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, else os.cpu_count())."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
