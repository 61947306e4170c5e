"""Which ScaNN kernels the centroid index searches with on the CPU it runs on: measured once per CPU signature.

Reads /proc/cpuinfo and ``NEWSROOM_ANN_KERNELS``; times searches of the index it is given; writes one small JSON
cache (``$NEWSROOM_CACHE_DIR`` or ``~/.cache/newsroom``, ``ann_kernels.json``: CPU signature -> choice and
figures). Used by :class:`transforms.stories.ann.CentroidIndex` at its first ScaNN build in a process.

Why: the scann 1.4.2 wheel has its CPU detection compiled out, so it searches with its SSE4/AVX baseline on every
x86 CPU unless its exported switches (``research_scann::flags_internal::should_use_avx2`` / ``..._avx512``, bools
in scann_pybind.so) are set. How much the AVX2 kernels gain depends on the CPU: 1.19x on the project's AMD EPYC,
1.7x on an Intel Xeon with AVX-512 (raw search of benchmarks/ann_bench.py's 250,000-story index: 890-970 us
baseline, 510-570 us with AVX2; AVX-512 on top of AVX2 no faster there), where the baseline gave 848-954
assignments per CPU second, under half the goal. Developer, CI and Dataflow CPUs differ, so the choice is made
where the index runs, by measuring.

Choice (:func:`choose`), once per process:
1. ``NEWSROOM_ANN_KERNELS=baseline|avx2|avx512`` pins it (e.g. so that two machines return the same candidates).
2. Else the cache's entry for this CPU signature (the CPU model and its SIMD flags), if any, measured by METHOD.
3. Else, on an index of at least CALIBRATE_MIN (20,000) vectors, a calibration on the index just built: ``ROUNDS``
   rounds of ``QUERIES`` searches, in batches of BATCH as the writer searches (transforms/stories/index/index.py
   Lookahead), with each kernel set the CPU's flags allow (baseline always), each set's fastest round kept; the
   fastest set wins if it is at least ``MIN_GAIN`` faster than the baseline. ~0.3-0.6 s once per CPU kind, plus a
   second training of that index when the choice is not the baseline. Written to the cache. A smaller index
   searches with the baseline until then.
An index is trained with the kernels already known (:func:`known`: 1, 2 or an earlier calibration; else the
baseline), and the index that calibrates is trained again when the choice differs, so every index of a process is
trained with the kernels it searches with. The choice is logged (``newsroom.stories.ann``: "ANN kernels: avx2 on
<signature> (...)") and kept in :data:`CHOICE` for the backfill manifest and the benchmarks.

Results: the kernels compute the same approximate distances in a different order of operations, so near-ties in
ScaNN's candidate order may differ between kernel sets (the 400 queries measured here gave identical top-10s);
returned scores are exact either way (transforms/stories/ann.py rescores every candidate). Within one machine the
choice is fixed by the cache, so a run is reproducible; pin the variable to make two kinds of CPU agree.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import time
from pathlib import Path

log = logging.getLogger("newsroom.stories.ann")

ENV = "NEWSROOM_ANN_KERNELS"
CACHE_ENV = "NEWSROOM_CACHE_DIR"
KERNELS = ("baseline", "avx2", "avx512")
NEEDS = {"avx2": {"avx2", "fma"}, "avx512": {"avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"}}
SWITCHES = {"avx2": ("avx2",), "avx512": ("avx2", "avx512")}
QUERIES = 48
BATCH = 16  # the calibration times batched searches of this many queries: the writer's path (index.Lookahead)
METHOD = f"batched searches of {BATCH}"  # a cached choice measured otherwise (one query at a time) is measured again
ROUNDS = 3
MIN_GAIN = 1.1
CALIBRATE_MIN = 20_000  # vectors: a smaller index's search is mostly Python, not the kernels

CHOICE: dict | None = None


def cpu_description() -> tuple[str, set[str]]:
    """(model name, flags) from /proc/cpuinfo; ("", set()) elsewhere."""
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not model:
                    model = value.strip()
                elif key.strip() in ("flags", "Features") and not flags:
                    flags = set(value.split())
                if model and flags:
                    break
    except OSError:
        pass
    return model, flags


def signature(model: str, flags: set[str]) -> str:
    simd = sorted(f for f in flags if f.startswith(("avx", "sse", "fma", "amx")))
    return f"{model or 'unknown'} [{hashlib.sha256(' '.join(simd).encode()).hexdigest()[:12]}]"


def _switches():
    """The scann switches as ctypes bools, or None when the wheel does not export them."""
    try:
        import scann

        lib = ctypes.CDLL(str(Path(scann.__file__).parent / "scann_ops" / "cc" / "python" / "scann_pybind.so"))
        return {
            k: ctypes.c_bool.in_dll(lib, f"_ZN14research_scann14flags_internal{len(k) + 11}should_use_{k}E")
            for k in ("avx2", "avx512")
        }
    except (OSError, ValueError, ImportError, AttributeError):
        return None


def apply(kernel: str) -> bool:
    """Set scann's switches for ``kernel``; False when they cannot be set (then the baseline runs)."""
    switches = _switches()
    if switches is None:
        return kernel == "baseline"
    on = set(SWITCHES.get(kernel, ()))
    for name, flag in switches.items():
        flag.value = name in on
    return True


def _cache_path() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "newsroom") / "ann_kernels.json"


def _read_cache() -> dict:
    try:
        return json.loads(_cache_path().read_text())
    except (OSError, ValueError):
        return {}


def _write_cache(sig: str, entry: dict) -> None:
    path = _cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        cache = _read_cache()
        cache[sig] = entry
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("ANN kernels: cannot write the calibration cache %s: %s", path, exc)


def measure(search, queries, kernels) -> dict[str, float]:
    """Seconds per search of each kernel set (the fastest of ROUNDS rounds, sets interleaved)."""
    best = {k: float("inf") for k in kernels}
    for _ in range(ROUNDS):
        for k in kernels:
            apply(k)
            search(queries[0])
            t = time.process_time()
            for q in queries:
                search(q)
            best[k] = min(best[k], (time.process_time() - t) / len(queries))
    return best


def known() -> str:
    """The kernel set this process already knows without measuring (made earlier, pinned, or cached for this CPU),
    applied; else the baseline, applied. Called before ScaNN trains an index: training computes with the kernels
    too, and an index trained with other kernels partitions and quantises differently (the first index of a process
    was trained with the baseline and every later one with the choice, so two writers' decisions depended on which
    index a process built first)."""
    global CHOICE
    if CHOICE is None:
        model, flags = cpu_description()
        sig = signature(model, flags)
        allowed = _allowed(flags)
        pinned = os.environ.get(ENV, "").strip().lower()
        if pinned:
            if pinned not in KERNELS:
                raise ValueError(f"{ENV} must be one of {', '.join(KERNELS)}, got {pinned!r}")
            if pinned not in allowed:
                raise ValueError(f"{ENV}={pinned}: this CPU ({model}) or the scann wheel does not allow it")
            CHOICE = {"kernels": pinned, "signature": sig, "reason": f"pinned by {ENV}"}
        elif _read_cache().get(sig, {}).get("kernels") in allowed and _read_cache()[sig].get("method") == METHOD:
            CHOICE = dict(_read_cache()[sig], signature=sig, reason="cached calibration")
        if CHOICE is not None:
            log.info(
                "ANN kernels: %s on %s (%s; %s)", CHOICE["kernels"], sig, CHOICE["reason"], CHOICE.get("us_per_search")
            )
    kernels = CHOICE["kernels"] if CHOICE is not None else "baseline"
    apply(kernels)
    return kernels


def _allowed(flags: set[str]) -> list[str]:
    return [k for k in KERNELS if k == "baseline" or NEEDS[k] <= flags] if _switches() else ["baseline"]


def choose(search, queries, size: int) -> dict:
    """The kernel set of this process (module docstring), applied; ``search(q)``: one search of the index of
    ``size`` vectors, trained with :func:`known`'s kernels (the index passes batches of BATCH queries as ``q``, as
    the writer searches; ``us_per_search`` is then per batch). An index under CALIBRATE_MIN is too small to time the
    kernels on (Python overhead dominates): without a pin or a cached choice it searches with the baseline, and the
    next, larger build calibrates. The caller retrains when the choice differs from the kernels it trained with."""
    global CHOICE
    known()
    if CHOICE is not None:
        return CHOICE
    if size < CALIBRATE_MIN:
        return {"kernels": "baseline", "reason": f"index under {CALIBRATE_MIN:,}: not calibrated"}
    model, flags = cpu_description()
    sig = signature(model, flags)
    allowed = _allowed(flags)
    times = measure(search, queries[:QUERIES], allowed)
    fastest = min(allowed, key=lambda k: (times[k], KERNELS.index(k)))
    chosen = fastest if times["baseline"] >= MIN_GAIN * times[fastest] else "baseline"
    us = {k: round(v * 1e6, 1) for k, v in times.items()}
    CHOICE = {"kernels": chosen, "signature": sig, "us_per_search": us, "reason": "calibrated"}
    _write_cache(sig, {"kernels": chosen, "us_per_search": us, "method": METHOD, "at": int(time.time())})
    apply(CHOICE["kernels"])
    log.info("ANN kernels: %s on %s (%s; %s)", CHOICE["kernels"], sig, CHOICE["reason"], CHOICE.get("us_per_search"))
    return CHOICE
