"""GPU benchmark harness: CUDA events, warm-up, median of repeats (design notes, "Performance").

Scenarios of Collange et al. 2016, Sec. VI, for the parallel algorithms (one expansion per group of
W lanes):

* ``best``: operands in registers, K operations per load (``bench/kernels.cu``, ``best``);
* ``shmem256``: the same with 256 bytes of dynamic shared memory per expansion term reserved (and
  touched), which limits occupancy (``shmem``);
* ``stream``: the library's own kernels (load two arrays, one operation, store), reported in GB/s
  against the device's memory bandwidth.

Each measurement records Mop/s, the launch shape (the paper's 1024 blocks of 1024/512/256 threads,
and the best shape found over a sweep), registers, occupancy (blocks per SM from the CUDA occupancy
calculator), the fraction of the device's FP64 (or FP32) instruction issue rate reached, and the raw
times.  The sequential baselines are measured by :mod:`bench.baselines_gpu` when present.
"""

from __future__ import annotations

import functools
import statistics
from pathlib import Path

import numpy as np

from expansions.cuda import build, launch
from expansions.formats import group_width
from expansions.generate import random_terms

HERE = Path(__file__).resolve().parent
OPS = {("add", "safe"): "SafeAdd", ("add", "fast"): "FastAdd", ("mul", "parallel"): "TruncMul"}
PAPER_BLOCKS = 1024
PAPER_THREADS = (1024, 512, 256)
SWEEP_THREADS = (128, 256, 512, 1024)
SHMEM_PER_TERM = 256


def instructions_per_op(op: str, alg: str, R: int) -> int:
    """Floating-point instructions one lane issues per operation (adds, subtractions, products and
    FMAs of the algorithm as written, upper bound for the data-dependent loops), for the issue-rate
    fraction.  2Sum = 6, 2Prod = 2 (FMA), plain add or product = 1."""
    if (op, alg) == ("add", "safe"):
        return 6 * (1 + 2 * (R - 1) + (R - 2)) + 1
    if (op, alg) == ("add", "fast"):
        return 6 * (1 + (R - 2)) + 1
    if (op, alg) == ("mul", "parallel"):
        return (R - 1) * (2 + 6 + 2 * R * 6) + 2
    raise KeyError((op, alg))


def _source() -> str:
    return build.source() + "\n" + (HERE / "kernels.cu").read_text()


def name_expression(kind: str, op: str, alg: str, dtype: str, R: int) -> str:
    ct = {"float64": "double", "float32": "float"}[dtype]
    return f"bench::{kind}<bench::{OPS[(op, alg)]}, {ct}, {R}>"


def compile_bench(names, arch: str, verbose: bool = False):
    """Compile benchmark kernels with the library's NVRTC options (no GPU needed): (binary, lowered
    names, ptxas log)."""
    return build.compile_source(_source(), names, arch, verbose, "bench.cu")


@functools.cache
def _function(name: str):
    import cupy  # optional dependency: needed only to load on a GPU

    arch = build.device_arch(cupy.cuda.Device().id)
    path, lowered = build.cached_cubin(_source(), [name], arch, "bench.cu")
    module = cupy.RawModule(path=str(path))
    _MODULES.append(module)  # keep the module loaded as long as its function may be used
    return module.get_function(lowered[name])


_MODULES: list = []


@functools.cache
def device_facts() -> dict:
    """SM count, clock, FP64/FP32 lanes per SM and peak memory bandwidth of the current device."""
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    dev = cupy.cuda.Device()
    p = cupy.cuda.runtime.getDeviceProperties(dev.id)
    major = p["major"]
    fp64_per_sm = {6: 32, 7: 32, 8: 32, 9: 64}.get(major, 2)  # FP64 lanes per SM (x2 flops with FMA)
    if p.get("minor", 0) != 0 and major == 8:
        fp64_per_sm = 2  # GA10x consumer parts
    mem_clock_khz = p.get("memoryClockRate", 0)
    bus_bits = p.get("memoryBusWidth", 0)
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    return {
        "name": name,
        "sms": p["multiProcessorCount"],
        "clock_khz": p["clockRate"],
        "fp64_lanes_per_sm": fp64_per_sm,
        "fp32_lanes_per_sm": 128,
        "bandwidth_gbs": 2 * mem_clock_khz * 1e3 * bus_bits / 8 / 1e9 if mem_clock_khz else None,
        "compute_capability": f"{major}.{p.get('minor', 0)}",
    }


def shapes(sms: int) -> list[tuple[int, int]]:
    """The launch shapes of a measurement: the paper's 1024 blocks of 1024, 512 and 256 threads, and
    2, 4, 8 blocks per SM of 128 to 1024 threads."""
    return [(PAPER_BLOCKS, t) for t in PAPER_THREADS] + [(sms * k, t) for t in SWEEP_THREADS for k in (2, 4, 8)]


@functools.lru_cache(maxsize=4)
def _drawn(count: int, R: int, dtype: str, seed: int) -> np.ndarray:
    return random_terms((count,), R, dtype, seed=seed)


def operands(count: int, R: int, dtype: str, seed: int, largest: int) -> np.ndarray:
    """``count`` random expansions: the first rows of ``largest`` ones drawn once per (R, dtype, seed)
    and kept (a sweep over launch shapes draws its operands once, not once per shape)."""
    return _drawn(max(count, largest), R, dtype, seed)[:count]


def _time(launch, repeats: int, warmup: int = 2) -> list[float]:
    """Seconds per launch, with CUDA events on the current stream."""
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    stream = cupy.cuda.get_current_stream()
    for _ in range(warmup):
        launch()
    out = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        launch()
        stop.record(stream)
        stop.synchronize()
        out.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return out


def _occupancy(fn, threads: int, smem: int) -> int | None:
    try:
        from cupy.cuda import driver  # optional dependency: CuPy is needed only on the GPU path

        return driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, smem)
    except Exception:
        return None


def measure(op: str, alg: str, R: int, scenario: str, dtype: str = "float64", quick: bool = False) -> dict:
    """One benchmark record (see the module doc) of a parallel kernel (``OPS``); the sequential
    baselines are measured by :func:`bench.baselines_gpu.measure`."""
    if (op, alg) not in OPS:
        raise KeyError(f"{(op, alg)} is not a parallel kernel of the harness (see bench.baselines_gpu)")
    import cupy  # optional dependency: needed only to measure on a GPU

    facts = device_facts()
    W = group_width(R)
    repeats = 3 if quick else 7
    K = 4 if quick else 16
    rec = {"dtype": dtype, "W": W, "repeats": repeats}
    if scenario == "stream":
        n = (1 << 22) if quick else (1 << 24)
        x = cupy.asarray(random_terms((n,), R, dtype, seed=1))
        y = cupy.asarray(random_terms((n,), R, dtype, seed=2))
        f = {("add", "safe"): launch.add_safe, ("add", "fast"): launch.add_fast,
             ("mul", "parallel"): launch.mul_truncated}[(op, alg)]
        secs = _time(lambda: f(x, y, R), repeats)
        t = statistics.median(secs)
        nbytes = 3 * n * R * np.dtype(dtype).itemsize
        rec.update(expansions=n, seconds=secs, mops=n / t / 1e6, gbs=nbytes / t / 1e9)
        # the library's operation: the same kernel renormalizing in registers (one launch)
        secs_r = _time(lambda: f(x, y, R, renormalize=True), repeats)
        rec["renormalized"] = {"seconds": secs_r, "mops": n / statistics.median(secs_r) / 1e6}
        if facts["bandwidth_gbs"]:
            rec["fraction_of_bandwidth"] = rec["gbs"] / facts["bandwidth_gbs"]
        return rec
    kind = "best" if scenario == "best" else "shmem"
    fn = _function(name_expression(kind, op, alg, dtype, R))
    lanes_per_block_term = 1  # one term per lane
    sweep = shapes(facts["sms"])
    largest = max(b * t // W for b, t in sweep)
    results = []
    for blocks, threads in sweep:
        smem = SHMEM_PER_TERM * threads * lanes_per_block_term if kind == "shmem" else 0
        if smem > 48 * 1024:
            try:
                fn.max_dynamic_shared_size_bytes = smem
            except Exception:
                continue
        count = blocks * threads // W
        x = cupy.asarray(operands(count, R, dtype, 3, largest))
        y = cupy.asarray(operands(count, R, dtype, 4, largest))
        out = cupy.empty_like(x)
        try:
            args = (x, y, out, np.int64(count), np.int32(K))
            secs = _time(functools.partial(fn, (blocks,), (threads,), args, shared_mem=smem), repeats)
        except cupy.cuda.driver.CUDADriverError as exc:  # shape not launchable (resources)
            results.append({"blocks": blocks, "threads": threads, "error": str(exc)})
            continue
        t = statistics.median(secs)
        mops = count * K / t / 1e6
        lanes = facts["fp64_lanes_per_sm"] if dtype == "float64" else facts["fp32_lanes_per_sm"]
        issue = mops * 1e6 * W * instructions_per_op(op, alg, R) / (facts["sms"] * facts["clock_khz"] * 1e3 * lanes)
        results.append({"blocks": blocks, "threads": threads, "expansions": count, "K": K, "seconds": secs,
                        "mops": mops, "shared_bytes": smem, "blocks_per_sm": _occupancy(fn, threads, smem),
                        "fraction_of_issue_rate": issue})
    ok = [r for r in results if "mops" in r]
    if not ok:
        return rec | {"note": "no launch shape ran", "shapes": results}
    paper = [r for r in ok if r["blocks"] == PAPER_BLOCKS]
    best = max(ok, key=lambda r: r["mops"])
    rec.update(mops=best["mops"], best_shape=[best["blocks"], best["threads"]],
               paper_shape_mops=max((r["mops"] for r in paper), default=None),
               registers=fn.num_regs, fraction_of_issue_rate=best["fraction_of_issue_rate"],
               blocks_per_sm=best["blocks_per_sm"], shapes=results)
    return rec
