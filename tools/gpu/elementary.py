"""The ``elementary`` part (second stage): the elementary functions at R = 2, float64 and float32, bit
for bit against the CPU engine (the comparison of :mod:`tools.gpu.bitexact` on their families), and
their speed on the GPU beside the engine's."""

from __future__ import annotations

import statistics

import numpy as np

from expansions.cuda import build

from .bitexact import compare_prepared, cpu_job_safe, cpu_jobs, cpu_pool
from .common import (
    CUDA_INIT_S,
    DTYPES,
    GPU_MACHINE_CPU_JOBS,
    RESERVE_S,
    TRANSFER_BPS,
    Context,
    cpu_figure,
    device_seconds,
    lpt_makespan,
    part,
    process_start,
)
from .families import family
from .units import kernel_unit, numba_units

PARTS: dict = {}


ELEMENTARY_COUNT = 100_000
#: Arguments of the GPU's speed measurement.  The engine's figure beside it is its reference
#: computation in the comparison (10^5 arguments and the special values, one thread): a separate
#: timed call on the engine costs about 8 s at any size here (atan: 7.9 s for 2^10 arguments, 10.8 s
#: for 2^14, 15.4 s for 2^16), too much for 34 of them.
ELEMENTARY_GPU_TIMED = 1 << 20


def _units_elementary():
    return [kernel_unit(build.instance(f, dtype, 2)) for f, _, _ in build.ELEMENTARY for dtype in DTYPES] + \
        numba_units(["elementary"], per_dtype=True)


def elementary_configs():
    return [(f, dtype) for f, _, _ in build.ELEMENTARY for dtype in DTYPES]


def _estimate_elementary(budget):
    compare_s = cpu_figure(budget, "elementary_compare_seconds", {})
    keys = [f"{f} {dtype}" for f, dtype in elementary_configs()]
    missing = [k for k in keys if k not in compare_s]
    pooled = lpt_makespan([compare_s.get(k, 5.0) for k in keys], GPU_MACHINE_CPU_JOBS)
    per_term = cpu_figure(budget, "random_terms_seconds_per_term", 1e-7)
    speed_cpu = len(keys) * (2 * (1 << 16) * 2 * per_term + 0.2)  # 2^16 domain arguments drawn and tiled
    device = len(keys) * (ELEMENTARY_GPU_TIMED * 2 * 16 / TRANSFER_BPS + 7 * device_seconds("", ELEMENTARY_GPU_TIMED))
    total = 2 * process_start(budget) + CUDA_INIT_S + pooled + speed_cpu + device
    return {"seconds": round(total, 1), "cpu": round(sum(compare_s.get(k, 5.0) for k in keys) + speed_cpu, 1),
            "device": round(device, 1), "missing": missing,
            "detail": f"{len(keys)} (function, dtype): {ELEMENTARY_COUNT} domain arguments + specials against the "
                      f"engine (CPU sides measured here one thread each, on {GPU_MACHINE_CPU_JOBS} processes: "
                      f"{pooled:.0f} s), then the GPU timed on 2^20 arguments (at 50 Mop/s at least: the model "
                      "holds no elementary kernel)"}


@part(PARTS, "elementary", "second",
      "the 17 elementary functions at R = 2, float64 and float32: bit for bit against the CPU "
      "engine on tests/test_elementary_emulated.py's domains and special values, and Mop/s on the GPU beside the "
      "engine's (its reference computation, one thread)", units=_units_elementary, estimate=_estimate_elementary)
def run_elementary(ctx: Context):
    dev = ctx.device
    count = ctx.size(ELEMENTARY_COUNT)
    rec = {"part": "elementary", "device": dev.label, "status": "partial", "results": [], "errors": []}
    configs = elementary_configs()
    rows = {}
    with cpu_pool(1 if dev.rehearsal else cpu_jobs()) as (pool, tmp):  # the comparisons, CPU sides pooled
        results = pool.imap_unordered(cpu_job_safe, [(f, 2, dtype, count, 0, 0, tmp) for f, dtype in configs])
        for k in range(len(configs)):
            try:
                job = results.next(timeout=max(0.1, ctx.left() - RESERVE_S))
            except Exception as exc:
                rec["stopped"] = f"{type(exc).__name__}: {len(configs) - k} comparisons not run"
                pool.terminate()
                break
            try:
                if "error" in job:
                    raise RuntimeError(job["error"])
                row = compare_prepared(dev, family(job["family"]), job)
                row["cpu_mops"] = row["rows"] / job["reference_seconds"] / 1e6 if job["reference_seconds"] else None
                row["cpu_threads"] = job["reference_threads"]
                rows[job["family"], job["dtype"]] = row
                rec["results"].append(row)
            except Exception as exc:
                rec["errors"].append({"function": job["family"], "dtype": job["dtype"],
                                      "error": f"{type(exc).__name__}: {exc}"})
            _elementary_summary(rec)
            ctx.save("elementary", rec)
    for f, dtype in configs:  # the GPU's speeds
        if "stopped" in rec or ctx.left() < RESERVE_S:
            rec.setdefault("stopped", "deadline: speeds not all measured")
            break
        if (f, dtype) in rows:
            try:
                rows[f, dtype] |= _elementary_speed(dev, family(f), dtype, ctx.size(ELEMENTARY_GPU_TIMED, 1024))
            except Exception as exc:
                rec["errors"].append({"function": f, "dtype": dtype, "error": f"speed: {type(exc).__name__}: {exc}"})
            _elementary_summary(rec)
            ctx.save("elementary", rec)
    if "stopped" not in rec:
        rec["status"] = "failed" if rec["errors"] or any(r["mismatches"] for r in rec["results"]) else "passed"
    _elementary_summary(rec)
    ctx.save("elementary", rec)


def _elementary_summary(rec):
    bad = [r for r in rec["results"] if r["mismatches"]]
    rec["summary"] = [f"{len(rec['results'])} of {2 * len(build.ELEMENTARY)} (function, dtype): {len(bad)} with "
                      f"mismatches, {len(rec['errors'])} errors"]
    rec["summary"] += [f"MISMATCH {r['family']} {r['dtype']}: {r['mismatches']} rows" for r in bad[:8]]
    rec["summary"] += [f"ERROR {e['function']} {e['dtype']}: {e['error'][:200]}" for e in rec["errors"][:4]]
    sp = [r for r in rec["results"] if r.get("gpu_mops") and r.get("cpu_mops")]
    if sp:
        rec["summary"].append("GPU / CPU engine (one thread) speed: " + ", ".join(
            f"{r['family']} {r['dtype'][-2:]} {r['gpu_mops'] / r['cpu_mops']:.3g}x" for r in sp))


def elementary_speed_arguments(fam, dtype, n) -> list:
    """``n`` domain arguments of an elementary function (2^16 drawn, tiled)."""
    sets = fam.inputs(2, dtype, min(n, 1 << 16), 0, 11)
    return [np.ascontiguousarray(np.tile(a, (-(-n // len(a)), 1))[:n]) for a in sets[0][1:]]


def _elementary_speed(dev, fam, dtype, n) -> dict:
    """Mop/s of the function on the device: ``n`` domain arguments, median of 5 calls."""
    with np.errstate(all="ignore"):
        dargs = [dev.to_device(a) for a in elementary_speed_arguments(fam, dtype, n)]
        fn = dev.backend.elementary(fam.name)
        secs = dev.time(lambda: fn(*dargs, 2), 5)
    return {"gpu_timed_arguments": n, "gpu_mops": n / statistics.median(secs) / 1e6, "gpu_seconds": secs}

