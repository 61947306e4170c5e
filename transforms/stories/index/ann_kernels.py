"""Which ScaNN kernels, and which index profile, the centroid index uses on the CPU it runs on: measured once per
CPU signature (the profile per kernel set).

Reads /proc/cpuinfo, ``NEWSROOM_ANN_KERNELS`` and ``NEWSROOM_ANN_PROFILE``; times searches of the index it is given;
writes one small JSON cache (``$NEWSROOM_CACHE_DIR`` or ``~/.cache/newsroom``, ``ann_kernels.json``: CPU signature ->
choice and figures). Used by :class:`transforms.stories.ann.CentroidIndex` at its first ScaNN build in a process.

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

Index profile (:func:`choose_profile`), once per process after the kernels, the same way: ``NEWSROOM_ANN_PROFILE``
pins it; else the cache's entry for this CPU signature and kernel set; else the index that calibrated the kernels
measures the profiles of :data:`PROFILES` in order (most accurate first; each keeps recall@10 >= 0.95 at 250,000
stories on benchmarks/ann_bench.py's vectors): trained with the profile, its batched search is timed scanning every
partition and a third of them (a line through both: CPU per query and per datapoint scanned) and its own
rescoring of a query's candidates; :func:`predicted_rate` turns these into assignments per CPU second at
DESIGN_SIZE (250,000) live stories, and the first profile predicted to reach GOAL x HEADROOM (2,000 x 1.15) wins,
else the fastest. Why: with the SSE4 baseline (a CPU without AVX2) the default profile assigned 1,964 per CPU second
on this Xeon, 2 % under the goal, and the kernel set alone cannot be changed there; a profile that scans cheaper
datapoints can. The choice is logged ("ANN profile: ..."), cached, kept in :data:`PROFILE` and recorded by the
backfill's manifest (``ann_index``: :func:`describe`). Every index of a process is trained with it, except the
settings its caller gave explicitly (``CentroidIndex(dim, pca_dims=...)``).

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
PROFILE_ENV = "NEWSROOM_ANN_PROFILE"
# Index profiles, most accurate first: overrides of CentroidIndex's defaults (its docstring). Each keeps recall@10
# >= 0.95 on benchmarks/ann_bench.py's vectors at 250,000 stories (docs/architecture.md has the figures).
PROFILES = {
    "default": {},  # PCA to 128 dims, 30 % of the partitions searched: recall@10 ~0.96
    "lean": {"pca_dims": 96, "leaves_fraction": 0.36},  # each scanned datapoint 25 % cheaper: recall@10 ~0.96
}
GOAL = 2_000  # assignments per CPU second at DESIGN_SIZE live stories (docs/DESIGN.md)
HEADROOM = 1.15  # the prediction must clear the goal by this much (its error, a loaded machine)
DESIGN_SIZE = 250_000  # live stories of one language's writer: the size the goal is set at
DEFAULT_SHARE, DEFAULT_MIN_SCAN = 0.3, 50_000  # CentroidIndex's leaves_fraction and min_scan defaults
REST_FACTOR = 3.0  # an assignment's CPU outside ScaNN's search / the rescoring timed (ann_bench, see predicted_rate)
PROFILE_METHOD = "fit of batched searches of 16 at two shares + rescoring, v1"

CHOICE: dict | None = None
PROFILE: dict | None = None


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


def known_profile() -> str:
    """The index profile (:data:`PROFILES`) this process already knows without measuring: pinned by PROFILE_ENV,
    chosen earlier in this process for its kernels, or cached for this CPU signature and kernel set; else "default"
    (also while the kernels are not chosen yet). Called before ScaNN trains an index, like :func:`known`, so that
    every index of a process is trained with the profile it searches with."""
    global PROFILE
    pinned = os.environ.get(PROFILE_ENV, "").strip().lower()
    if pinned:
        if pinned not in PROFILES:
            raise ValueError(f"{PROFILE_ENV} must be one of {', '.join(PROFILES)}, got {pinned!r}")
        return pinned
    kernels = CHOICE["kernels"] if CHOICE is not None else None
    if kernels is None:
        return "default"
    if PROFILE is not None and PROFILE["kernels"] == kernels:
        return PROFILE["profile"]
    cached = _read_cache().get(signature(*cpu_description()), {}).get("profiles", {}).get(kernels, {})
    if cached.get("method") == PROFILE_METHOD and cached.get("profile") in PROFILES:
        _remember_profile(cached["profile"], kernels, "cached calibration", cached.get("figures"))
        return cached["profile"]
    return "default"


def predicted_rate(figures: dict, overrides: dict) -> float:
    """Assignments per CPU second a writer would make at DESIGN_SIZE live stories with this profile (``overrides``
    of the index's defaults), from ``figures`` measured on the index at hand: ScaNN's batched search, ``fixed_us`` +
    ``us_per_point`` x the datapoints a query scans at DESIGN_SIZE, plus REST_FACTOR x ``rest_us`` (the index's own
    rescoring and ranking of a query's candidates, timed: the rest of an assignment scales with it)."""
    share = overrides.get("leaves_fraction", DEFAULT_SHARE)
    points = max(share * DESIGN_SIZE, DEFAULT_MIN_SCAN)
    us = figures["fixed_us"] + figures["us_per_point"] * points + REST_FACTOR * figures["rest_us"]
    return 1e6 / us


def choose_profile(measure, size: int) -> str:
    """The index profile of this process (module docstring), chosen on the index that calibrated the kernels
    unless pinned or cached: ``measure(name)`` trains that index with profile ``name`` (with the kernels chosen)
    and returns its figures (:func:`predicted_rate`); the most accurate profile (PROFILES' order) predicted to reach
    GOAL x HEADROOM wins, else the fastest. Cached per CPU signature and kernel set, logged, kept in PROFILE."""
    name = known_profile()
    if os.environ.get(PROFILE_ENV, "").strip() or CHOICE is None or size < CALIBRATE_MIN:
        return name
    kernels = CHOICE["kernels"]
    if PROFILE is not None and PROFILE["kernels"] == kernels:
        return name
    figures: dict[str, dict] = {}
    for name, overrides in PROFILES.items():
        fig = dict(measure(name))
        fig["predicted_per_cpu_s"] = round(predicted_rate(fig, overrides))
        figures[name] = {k: round(v, 4) if isinstance(v, float) else v for k, v in fig.items()}
        if fig["predicted_per_cpu_s"] >= GOAL * HEADROOM:
            break
    else:
        name = max(figures, key=lambda n: figures[n]["predicted_per_cpu_s"])
    _remember_profile(name, kernels, "calibrated", figures)
    sig = signature(*cpu_description())
    entry = _read_cache().get(sig, {})
    entry.setdefault("profiles", {})[kernels] = {"profile": name, "figures": figures, "method": PROFILE_METHOD}
    _write_cache(sig, entry)
    return name


def _remember_profile(name: str, kernels: str, reason: str, figures: dict | None) -> None:
    global PROFILE
    PROFILE = {"profile": name, "kernels": kernels, "tuning": PROFILES[name], "reason": reason, "figures": figures}
    log.info("ANN profile: %s %s with the %s kernels (%s; %s)", name, PROFILES[name], kernels, reason, figures)


def describe() -> dict:
    """What this process chose (kernels and index profile, with the figures measured), for manifests and logs."""
    out = dict(CHOICE or {"kernels": "baseline", "reason": "not calibrated"})
    out["profile"] = dict(PROFILE) if PROFILE is not None else {"profile": known_profile(), "reason": "default"}
    return out
