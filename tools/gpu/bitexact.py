"""The bit-exactness parts: ``bitexact`` (first stage: every kernel family of
:mod:`tools.gpu.families` against the CPU, bit for bit, per R in {2, 3, 4, 8, 16, 32}, float64 and
float32) and ``bitexact_exp`` (third stage: exp at large R on more rows); the CPU sides on a pool of
processes, the device's results compared as they come back, the failing rows kept as hex.  Also the
numba warm-up the compile pool runs for the CPU sides (:func:`warm_engine`)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from expansions import backends, engine
from expansions.cuda import build
from expansions.generate import random_terms

from .common import (
    CUDA_INIT_S,
    DTYPES,
    GPU_MACHINE_CPU_JOBS,
    LAUNCH_S,
    MODULE_LOAD_S,
    RESERVE_S,
    TRANSFER_BPS,
    Context,
    cpu_figure,
    device_seconds,
    hex_row,
    load_budget,
    lpt_makespan,
    part,
    process_start,
    same_rows,
)
from .families import (
    BITEXACT_COUNT,
    EXP_ROWS,
    SPECIAL_ROWS,
    Family,
    bitexact_configs,
    families,
    family,
    random_rows,
)
from .units import kernel_unit, numba_units

#: Failing rows kept per (family, R, dtype) in the result file (inputs, GPU and CPU results, as hex).
KEEP_FAILURES = 8

PARTS: dict = {}


def _units_bitexact():
    return [u for fam, R, dtype in bitexact_configs() for u in fam.units(R, dtype)] + numba_units(
        [fam.name for fam in families()])


def warm_engine(name: str, dtype: str | None = None) -> None:
    """Run family ``name``'s CPU side on a few rows of ``dtype`` (default: every dtype): numba compiles
    the engine code it needs and caches it on disk (the compile pool's ``numba`` units; the parts' processes then load
    it).  ``elementary``: the engine's operations the elementary functions run on
    (:class:`expansions.cpu.elementary.Arithmetic`: the safe addition, the truncated multiplication,
    the renormalization, the Newton division and square root), each called once per dtype, and the
    compiled elementary functions (:mod:`expansions.engine.elementary`, one specialization per dtype
    for all of them)."""
    with np.errstate(all="ignore"):
        if name == "elementary":
            e = backends.engine_backend()
            for dt in [dtype] if dtype else DTYPES:
                x, y = (random_terms((4,), 2, dt, seed=k) for k in (1, 2))
                e.renormalize(e.add_safe(x, y, 2), 2)
                e.mul_truncated(x, y, 2)
                e.newton_div(x, y, 2)
                e.newton_sqrt(np.abs(x), 2)
                # the compiled elementary functions: one specialization per dtype for all of them
                engine.compiled_elementary("exp")(x, 2)
            return
        fam = family(name)
        for dt in [dtype] if dtype else DTYPES:
            bitexact_cpu_side(fam, fam.rs[0], dt, 4, 2)


def bitexact_cpu_side(fam: Family, R: int, dtype: str, count: int, special: int, chunk: int = 0) -> tuple:
    """The CPU side of one comparison (what the budget measures): its input sets, the arrays, the CPU's
    result and the seconds the CPU took to compute it.  ``chunk``: one of several comparisons of the
    same (family, R, dtype) on other random operands."""
    seed = 7919 * R + (0 if dtype == "float64" else 1) + 1_000_003 * chunk
    sets = fam.inputs(R, dtype, count, special, seed)
    arrays = [np.ascontiguousarray(np.concatenate([s[k] for s in sets])) for k in range(1, len(sets[0]))]
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        want = fam.cpu(R, *arrays)
    return sets, arrays, want, time.perf_counter() - t0


def _cpu_job(args) -> dict:
    """A worker of the CPU pool: one comparison's CPU side, its arrays saved in ``folder`` (.npy)."""
    name, R, dtype, count, special, chunk, folder = args
    t0 = time.perf_counter()
    sets, arrays, want, ref = bitexact_cpu_side(family(name), R, dtype, count, special, chunk)
    stem = Path(folder) / f"{name}-{R}-{dtype}-{chunk}"
    paths = []
    for k, a in enumerate(arrays + [want]):
        paths.append(f"{stem}-{k}.npy")
        np.save(paths[-1], a)
    return {"family": name, "R": R, "dtype": dtype, "chunk": chunk, "sets": [(s[0], len(s[1])) for s in sets],
            "paths": paths,
            "cpu_seconds": round(time.perf_counter() - t0, 3), "reference_seconds": round(ref, 3),
            "reference_threads": int(os.environ.get("NUMBA_NUM_THREADS", "0")) or None}


@contextlib.contextmanager
def cpu_pool(jobs: int):
    """A pool of ``jobs`` spawned processes for the CPU sides, the engine single-threaded in each (the
    processes share the machine's cores), and a scratch folder for their arrays."""
    saved = os.environ.get("NUMBA_NUM_THREADS")
    os.environ["NUMBA_NUM_THREADS"] = "1"
    try:
        with tempfile.TemporaryDirectory(prefix="expansions-cpu-") as tmp, \
                multiprocessing.get_context("spawn").Pool(jobs) as pool:
            yield pool, tmp
    finally:
        if saved is None:
            os.environ.pop("NUMBA_NUM_THREADS", None)
        else:
            os.environ["NUMBA_NUM_THREADS"] = saved


def cpu_jobs() -> int:
    """Processes of the CPU pool: every core but one (the one that drives the GPU)."""
    return max(1, (os.cpu_count() or 2) - 1)


def compare(dev, fam: Family, R: int, dtype: str, count: int, special: int) -> dict:
    """One (family, R, dtype), CPU side in this process (see :func:`compare_prepared`)."""
    with tempfile.TemporaryDirectory(prefix="expansions-cpu-") as tmp:
        return compare_prepared(dev, fam, _cpu_job((fam.name, R, dtype, count, special, 0, tmp)))


def compare_prepared(dev, fam: Family, job: dict) -> dict:
    """One (family, R, dtype): the device's result against the CPU's (``job``: :func:`_cpu_job`'s), bit
    for bit; the first failing rows with their inputs, as hex (material for emulator tests)."""
    R, dtype = job["R"], job["dtype"]
    loaded = [np.load(p) for p in job["paths"]]
    for p in job["paths"]:
        os.unlink(p)
    arrays, want = loaded[:-1], loaded[-1]
    t1 = time.perf_counter()
    with np.errstate(all="ignore"):
        got = fam.gpu(dev, R, *arrays)
    t2 = time.perf_counter()
    same, nan_only = same_rows(got, want)
    bounds = np.cumsum([0] + [n for _, n in job["sets"]])
    if fam.name.startswith("reduce"):  # result rows are the 8 reductions, not the elements
        bounds = np.array([0, len(want)])
        names = ["all sets, 8 rows"]
    else:
        names = [s for s, _ in job["sets"]]
    bad = np.flatnonzero(~same)
    rec = {"family": fam.name, "R": R, "dtype": dtype, "chunk": job.get("chunk", 0), "rows": int(len(want)),
           "operands": int(sum(n for _, n in job["sets"])), "sets": names, "mismatches": int(bad.size),
           "nan_payload_only_rows": int(nan_only.sum()), "cpu_seconds": job["cpu_seconds"],
           "reference_seconds": job["reference_seconds"], "device_seconds": round(t2 - t1, 3)}
    if bad.size:
        rec["mismatches_by_set"] = {names[k]: int(((bad >= bounds[k]) & (bad < bounds[k + 1])).sum())
                                    for k in range(len(names)) if ((bad >= bounds[k]) & (bad < bounds[k + 1])).any()}
        rec["failures"] = [{"row": int(i), "inputs": [hex_row(a[i]) for a in arrays] if len(want) == len(arrays[0])
                            else "reduction: see the family's inputs", "gpu": hex_row(got[i]), "cpu": hex_row(want[i])}
                           for i in bad[:KEEP_FAILURES]]
        if fam.labels is not None:  # which of the results held in a row differ
            blocks = ~same_rows(got.reshape(len(got), -1, R).transpose(1, 0, 2).reshape(-1, R),
                                 want.reshape(len(want), -1, R).transpose(1, 0, 2).reshape(-1, R))[0]
            blocks = blocks.reshape(-1, len(got)).any(axis=1)
            rec["mismatching_results"] = [lb for lb, b in zip(fam.labels(), blocks) if b]
    return rec


def _estimate_bitexact(budget):
    measured = cpu_figure(budget, "bitexact", {})
    secs, missing, device, loads, nbytes = [], [], 0.0, 0, 0.0
    for fam, R, dtype in bitexact_configs():
        key = f"{fam.name} {R} {dtype}"
        if key in measured:
            secs.append(measured[key])
        else:
            missing.append(key)
        rows = random_rows(fam, R) + 10 * SPECIAL_ROWS
        item = 8 if dtype == "float64" else 4
        nbytes += 4 * rows * R * item  # up to three operands in, one result out
        loads += len(fam.units(R, dtype))
        device += sum(device_seconds(u.key[0], rows) for u in fam.units(R, dtype) if u.kind == "kernels")
    transfer = 2 * nbytes / TRANSFER_BPS + nbytes / 1e9  # to and from the device; the workers' .npy files
    launches = 40 * len(secs) * LAUNCH_S
    wall = lpt_makespan(secs, GPU_MACHINE_CPU_JOBS)
    total = (process_start(budget) + CUDA_INIT_S + process_start(budget) + wall + transfer + device + launches
             + loads * MODULE_LOAD_S)
    return {"seconds": round(total, 1), "cpu": round(sum(secs), 1), "device": round(device + transfer + launches, 1),
            "missing": missing, "detail": f"{len(list(bitexact_configs()))} (family, R, dtype), "
            f"{BITEXACT_COUNT} random rows (exp: {EXP_ROWS} at large R) + {SPECIAL_ROWS} per special set; CPU sides "
            f"measured here one thread each ({sum(secs):.0f} s in all), on {GPU_MACHINE_CPU_JOBS} processes "
            f"longest first: {wall:.0f} s; transfers {transfer:.1f} s"}


@part(PARTS, "bitexact", "first", "every kernel family against the CPU (the engine, or the twins for the dw.cuh "
      "kernels), bit for bit (a NaN matches any NaN), per R in {2, 3, 4, 8, 16, 32}, float64 and float32, on 10^5 "
      "random operands plus tests/test_gpu.py's special and adversarial sets; failing operands kept",
      units=_units_bitexact, estimate=_estimate_bitexact)
def run_bitexact(ctx: Context):
    configs = list(bitexact_configs())
    order = cpu_figure(load_budget(), "bitexact", {})
    configs.sort(key=lambda c: -order.get(f"{c[0].name} {c[1]} {c[2]}", 0.0))  # longest first (the pool's plan)
    special = ctx.size(SPECIAL_ROWS, 4)
    run_comparisons(ctx, "bitexact", [(fam.name, R, dtype, ctx.size(random_rows(fam, R)), special, 0)
                                      for fam, R, dtype in configs])


def run_comparisons(ctx: Context, name: str, jobs: list):
    """Comparisons (family, R, dtype, random rows, special rows, chunk), their CPU sides on the pool, the
    device's results compared as the CPU sides come back; ``OUT/<name>.json``."""
    dev = ctx.device
    rec = {"part": name, "device": dev.label, "status": "partial", "results": [], "errors": []}
    with cpu_pool(1 if dev.rehearsal else cpu_jobs()) as (pool, tmp):
        results = pool.imap_unordered(cpu_job_safe, [job + (tmp,) for job in jobs])
        for k in range(len(jobs)):
            try:
                job = results.next(timeout=max(0.1, ctx.left() - RESERVE_S))
            except Exception as exc:  # the deadline (multiprocessing.TimeoutError) or a worker lost
                rec["stopped"] = f"{type(exc).__name__}: {len(jobs) - k} of {len(jobs)} comparisons not run"
                pool.terminate()
                break
            if "error" in job:
                rec["errors"].append(job)
            else:
                try:
                    rec["results"].append(compare_prepared(dev, family(job["family"]), job))
                except Exception as exc:
                    rec["errors"].append({"family": job["family"], "R": job["R"], "dtype": job["dtype"],
                                          "error": f"{type(exc).__name__}: {exc}"})
            _bitexact_summary(rec, len(jobs))
            ctx.save(name, rec)
    if "stopped" not in rec:
        rec["status"] = "failed" if rec["errors"] or any(r["mismatches"] for r in rec["results"]) else "passed"
    _bitexact_summary(rec, len(jobs))
    ctx.save(name, rec)


def cpu_job_safe(args) -> dict:
    try:
        return _cpu_job(args)
    except Exception as exc:
        return {"family": args[0], "R": args[1], "dtype": args[2], "error": f"CPU side: {type(exc).__name__}: {exc}"}


def _bitexact_summary(rec, total):
    res = rec["results"]
    bad = [r for r in res if r["mismatches"]]
    lines = [f"{len(res)} of {total} comparisons (family, R, dtype) done, {sum(r['rows'] for r in res)} result rows: "
             f"{len(bad)} with mismatches, {len(rec['errors'])} errors"]
    lines += [f"MISMATCH {r['family']} R={r['R']} {r['dtype']}: {r['mismatches']} rows "
              f"{r.get('mismatches_by_set', {})}" for r in bad[:12]]
    lines += [f"ERROR {e['family']} R={e['R']} {e['dtype']}: {e['error'][:200]}" for e in rec["errors"][:6]]
    nan = sum(r["nan_payload_only_rows"] for r in res)
    if nan:
        lines.append(f"{nan} rows differ only in NaN sign/payload (counted as equal)")
    rec["summary"] = lines


#: The third stage's exponential at R = 8, 16, 32: 10^5 random rows as 16 chunks on the pool.
EXP_FULL_CHUNKS = 16


def _exp_full_jobs():
    n = BITEXACT_COUNT // EXP_FULL_CHUNKS
    return [("exp", R, dtype, n, 0, k) for R in sorted(EXP_ROWS, reverse=True) for dtype in DTYPES
            for k in range(EXP_FULL_CHUNKS)]


def _estimate_bitexact_exp(budget):
    measured = cpu_figure(budget, "bitexact", {})
    secs = []
    for _, R, dtype, n, _, _ in _exp_full_jobs():
        secs.append(measured.get(f"exp {R} {dtype}", 60.0) * n / EXP_ROWS[R])  # per row, as measured
    wall = lpt_makespan(secs, GPU_MACHINE_CPU_JOBS)
    return {"seconds": round(2 * process_start(budget) + CUDA_INIT_S + wall, 1), "cpu": round(sum(secs), 1),
            "device": None, "detail": f"{len(secs)} chunks of {BITEXACT_COUNT // EXP_FULL_CHUNKS} rows, the CPU sides "
            f"scaled per row from the measured comparisons, on {GPU_MACHINE_CPU_JOBS} processes"}


def _units_bitexact_exp():
    return [kernel_unit(_exp_instance(R, d)) for R in EXP_ROWS for d in DTYPES] + numba_units(["exp"], per_dtype=True)


@part(PARTS, "bitexact_exp", "third", "exp against the engine at R = 8, 16, 32 on 10^5 random rows (the first stage "
      "runs 10^4, 2000, 1000 there), in 16 chunks", units=_units_bitexact_exp, estimate=_estimate_bitexact_exp)
def run_bitexact_exp(ctx: Context):
    run_comparisons(ctx, "bitexact_exp", [(f, R, d, ctx.size(n), s, k) for f, R, d, n, s, k in _exp_full_jobs()])


def _exp_instance(R, dtype):
    return build.instance("exp", dtype, R)

