"""Kernel compilation out of the GPU's 15 minutes: the compile units of each runbook stage, the process
pool that fills the disk cache before a stage's first launch, and the measurement of NVRTC's times
without a GPU.

    python tools/gpu_compile.py --stage first --arch sm_90 [--jobs 16] [--out FILE.json]
    python tools/gpu_compile.py --measure [--stages first,second] [--pool 2]

A *unit* is one NVRTC program exactly as a loader of the library compiles it: one instance of
``kernels.cu`` (what :func:`expansions.cuda.build.kernels` compiles when a launcher asks for one
instance), the double-word module (every kernel of ``dw.cuh``), one benchmark kernel
(``bench/kernels.cu``), one build of seed 004's microbenchmarks, or one traced program
(:mod:`expansions.programs.cuda`).  Every loader goes through :func:`expansions.cuda.build.cached_cubin`,
whose key (source, options, target, NVRTC version, file name, name expressions) this module computes
the same way: a unit compiled here by any process is found on disk by the launcher that needs it.

Why a pool on the GPU machine and not a cache carried from here: the key holds the NVRTC version, and
the GPU machine's CuPy (cupy-cuda13x, with the CUDA 13 toolkit's NVRTC) is not the NVRTC of this
machine (the ``cuda12`` extra); a carried cache would only be hit if both NVRTCs were the same release,
which nothing here can check.  The pool needs no match, and ``--measure`` says what it costs.

``--measure`` (no GPU): compiles every unit of the stages for sm_90 in this process, one after the
other (per-unit seconds, one core), then again into a fresh cache with ``--pool`` processes (the wall
time), and predicts the wall time with 16 processes by scheduling the one-core times longest first on
16 workers (plus the measured start-up of a worker), scaled by the ratio measured/predicted of the
``--pool`` run (how much the processes slow each other down here).  Writes
``tools/gpu_budget/compile.json`` and ``compile.md`` (and the raw log ``compile.log`` beside them).
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import gpu as bench_gpu
from expansions.cuda import build, dw_kernels
from expansions.programs import cuda as programs_cuda
from paper_repro import seed004_gpu

from . import stages
from .bitexact import warm_engine
from .common import BUDGET, GPU_MACHINE_JOBS, ROOT, lpt_makespan
from .units import Unit, program_source

#: The command line of this module (``python tools/gpu_compile.py``), which also warms numba's cache
#: in a fresh process for the measurement (``--warm``).
ENTRY = ROOT / "tools" / "gpu_compile.py"


def resolve(unit: Unit) -> tuple:
    """(source text, name expressions, file name, options or None) of a unit: what its loader compiles."""
    if unit.kind == "kernels":
        return build.source(), list(unit.key), build.ENTRY, None
    if unit.kind == "dw":
        return dw_kernels.source(), dw_kernels.all_names(), "dw.cu", None
    if unit.kind == "bench":
        return bench_gpu._source(), list(unit.key), "bench.cu", None
    if unit.kind == "seed004":
        text, options, names = seed004_gpu.sources()[unit.key[0]]
        return text, names, seed004_gpu.FILENAME, options
    if unit.kind == "program":
        name, text = program_source(*unit.key)
        return programs_cuda.full_source(text), [name], "program.cu", None
    raise ValueError(f"unknown unit kind {unit.kind!r}")


def compile_unit(unit: Unit, arch: str) -> dict:
    """Compile ``unit`` into the disk cache (nothing to do when it is there): its label, seconds and
    whether it was found cached."""
    t0 = time.perf_counter()
    if unit.kind == "numba":
        try:
            warm_engine(*unit.key)
            return {"unit": unit.label, "seconds": round(time.perf_counter() - t0, 3), "cached": False}
        except Exception as exc:
            return {"unit": unit.label, "seconds": round(time.perf_counter() - t0, 3),
                    "error": f"{type(exc).__name__}: {str(exc)[:2000]}"}
    try:
        text, names, filename, options = resolve(unit)
        hit = _cached(text, names, arch, filename, options)
        build.cached_cubin(text, names, arch, filename, options)
        return {"unit": unit.label, "seconds": round(time.perf_counter() - t0, 3), "cached": hit}
    except Exception as exc:  # recorded, the pool goes on: the launch that needs it will say more
        return {"unit": unit.label, "seconds": round(time.perf_counter() - t0, 3),
                "error": f"{type(exc).__name__}: {str(exc)[:2000]}"}


def _cached(text, names, arch, filename, options) -> bool:
    key = build.cache_key(text, names, arch, filename, options)
    return (build.cache_dir() / f"{key}.cubin").exists() and (build.cache_dir() / f"{key}.json").exists()


def _worker(args):
    unit, arch = args
    return compile_unit(unit, arch)


def prewarm(units, arch: str, jobs: int, order: dict | None = None, progress=None) -> dict:
    """Compile ``units`` into the disk cache with ``jobs`` processes (spawned: they touch no CUDA
    context), longest first by ``order`` ({label: seconds}, the measured one-core times; unknown units
    first).  Returns the per-unit records, the wall time and the worker count."""
    units = list(dict.fromkeys(units))
    order = order or {}
    units.sort(key=lambda u: -order.get(u.label, 1e9))
    t0 = time.perf_counter()
    records = []
    if jobs <= 1:
        for u in units:
            records.append(compile_unit(u, arch))
            if progress:
                progress(records[-1])
    else:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(jobs) as pool:
            for rec in pool.imap_unordered(_worker, [(u, arch) for u in units], chunksize=1):
                records.append(rec)
                if progress:
                    progress(rec)
    wall = time.perf_counter() - t0
    return {"arch": arch, "jobs": jobs, "units": len(units), "wall_seconds": round(wall, 2),
            "errors": sum(1 for r in records if "error" in r), "cached": sum(1 for r in records if r.get("cached")),
            "records": records}


def worker_startup_seconds() -> float:
    """Seconds for a spawned process to start and import the compiler (measured, two processes)."""
    ctx = multiprocessing.get_context("spawn")
    t0 = time.perf_counter()
    with ctx.Pool(1) as pool:
        pool.apply(_import_compiler)
    return time.perf_counter() - t0


def _cold_numba(unit: Unit, cache: Path) -> float:
    """Seconds of a numba unit in a fresh process with an empty numba cache (imports included)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(ENTRY), "--warm", ":".join(unit.key)], cwd=ROOT, env=env, check=True)
    return time.perf_counter() - t0


def _import_compiler():
    build.nvrtc_version()


def stage_units(stage: str, only=None) -> list[Unit]:
    """Every unit the parts of ``stage`` (or those named in ``only``) launch (:mod:`tools.gpu.stages`)."""
    out = []
    for part in stages.parts(stage):
        if not only or part.name in only:
            out += part.units()
    return list(dict.fromkeys(out))


def load_measurement() -> dict:
    """The committed measurement (``tools/gpu_budget/compile.json``), or {} when absent."""
    path = BUDGET / "compile.json"
    return json.loads(path.read_text()) if path.exists() else {}


def estimate(units, measurement: dict, workers: int = GPU_MACHINE_JOBS) -> dict:
    """The compile estimate of ``units`` on the GPU machine from the measurement: one-core seconds of
    each unit, the 16-worker schedule (LPT) plus a worker's start-up, times the contention factor the
    ``--pool`` run measured here.  ``missing``: units the measurement does not hold (the estimate is
    then not valid: rerun ``--measure``)."""
    per = measurement.get("one_core", {})
    labels = [u.label for u in units]
    missing = [lb for lb in labels if lb not in per]
    secs = [per[lb] for lb in labels if lb in per]
    factor = measurement.get("contention_factor", 1.0)
    startup = measurement.get("worker_startup_seconds", 0.0)
    wall = (lpt_makespan(secs, workers) * factor + startup) if secs else 0.0
    return {"units": len(labels), "one_core_seconds": round(sum(secs), 1), "workers": workers,
            "wall_seconds": round(wall, 1), "longest_unit_seconds": round(max(secs, default=0.0), 1),
            "contention_factor": factor, "missing": missing}


# ---------------------------------------------------------------------------------------------
# --measure


def measure(names, pool: int, log) -> dict:
    """Compile every unit of the stages ``names`` here (see the module docstring) and return the record."""
    units = []
    of_stage = {}
    for s in names:
        su = stage_units(s)
        of_stage[s] = [u.label for u in su]
        units += su
    units = list(dict.fromkeys(units))
    log(f"{len(units)} units for stages {', '.join(names)}; NVRTC {'.'.join(map(str, build.nvrtc_version()))}, "
        f"sm_90, {os.cpu_count()} CPUs here")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="expansions-measure-") as tmp:
        os.environ["EXPANSIONS_CACHE_DIR"] = str(Path(tmp) / "one")
        one = {}
        t0 = time.perf_counter()
        startup = worker_startup_seconds()
        for k, u in enumerate(units):
            if u.kind == "numba":  # cold: a fresh process and an empty numba cache (its imports not counted)
                secs = _cold_numba(u, Path(tmp) / f"numba-{k}") - startup
            else:
                rec = compile_unit(u, "sm_90")
                if "error" in rec:
                    raise RuntimeError(f"{u.label}: {rec['error']}")
                secs = rec["seconds"]
            one[u.label] = round(max(0.0, secs), 3)
            log(f"one-core {k + 1}/{len(units)} {one[u.label]:8.2f} s  {u.label}")
        one_wall = time.perf_counter() - t0
        log(f"one core: {one_wall:.1f} s in all; a spawned worker starts in {startup:.2f} s")
        os.environ["EXPANSIONS_CACHE_DIR"] = str(Path(tmp) / "pool")
        os.environ["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba-pool")
        pooled = prewarm(units, "sm_90", pool, one)
        predicted = lpt_makespan(list(one.values()), pool) + startup
        factor = pooled["wall_seconds"] / predicted if predicted else 1.0
        log(f"{pool} processes: {pooled['wall_seconds']:.1f} s measured, {predicted:.1f} s predicted from the "
            f"one-core times (contention factor {factor:.2f})")
    rec = {"command": "python tools/gpu_compile.py --measure --stages " + ",".join(names) + f" --pool {pool}",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "nvrtc": ".".join(map(str, build.nvrtc_version())), "arch": "sm_90", "cpus_here": os.cpu_count(),
           "load_average_before": [round(v, 2) for v in load],
           "load_average_after": [round(v, 2) for v in os.getloadavg()],
           "one_core": one, "one_core_wall_seconds": round(one_wall, 1), "worker_startup_seconds": round(startup, 2),
           "pool": {"processes": pool, "wall_seconds": pooled["wall_seconds"],
                    "predicted_seconds": round(predicted, 1)},
           "contention_factor": round(max(1.0, factor), 3), "stage_units": of_stage}
    for s in names:
        rec.setdefault("stages", {})[s] = estimate([Unit(*_parse(lb)) for lb in of_stage[s]], rec)
        rec["stages"][s]["pool_here_seconds"] = round(lpt_makespan([one[lb] for lb in of_stage[s]], pool) * factor
                                                      + startup, 1)
    return rec


def missing_units() -> list:
    """The labels of the units the stages launch that the committed measurement lacks (after a change
    to the kernels' template arguments, say), in order."""
    rec = load_measurement()
    need = dict.fromkeys(u.label for s in rec.get("stages", {}) for u in stage_units(s))
    return [lb for lb in need if lb not in rec["one_core"]]


def remeasure(labels) -> int:
    """Remeasure some units' one-core times (after a change to what they compile), keeping the rest of
    the committed measurement and saying so in it (``remeasured``) and in the log."""
    rec = load_measurement()
    with tempfile.TemporaryDirectory(prefix="expansions-measure-") as tmp, open(BUDGET / "compile.log", "a") as logf:
        os.environ["EXPANSIONS_CACHE_DIR"] = str(Path(tmp) / "one")
        startup = rec.get("worker_startup_seconds", 0.0)
        stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        logf.write(f"--- remeasured {stamp}, load average {[round(v, 2) for v in os.getloadavg()]}\n")
        for k, lb in enumerate(labels):
            u = Unit(*_parse(lb))
            secs = (_cold_numba(u, Path(tmp) / f"numba-{k}") - startup if u.kind == "numba"
                    else compile_unit(u, "sm_90")["seconds"])
            rec["one_core"][lb] = round(max(0.0, secs), 3)
            line = f"remeasured one-core {rec['one_core'][lb]:8.2f} s  {lb}"
            print(line, flush=True)
            logf.write(line + "\n")
            rec.setdefault("remeasured", []).append({"unit": lb, "date": stamp})
    for s in rec.get("stages", {}):  # the stages' units as they are now (a remeasured unit may be new)
        rec["stage_units"][s] = [u.label for u in stage_units(s)]
    used = {lb for labels_s in rec["stage_units"].values() for lb in labels_s}
    rec["one_core"] = {lb: t for lb, t in rec["one_core"].items() if lb in used}  # units no stage runs any more go
    for s in rec.get("stages", {}):
        labels_s = rec["stage_units"][s]
        rec["stages"][s] = estimate([Unit(*_parse(lb)) for lb in labels_s], rec) | {
            "pool_here_seconds": rec["stages"][s].get("pool_here_seconds")}
    (BUDGET / "compile.json").write_text(json.dumps(rec, indent=1) + "\n")
    (BUDGET / "compile.md").write_text(markdown(rec))
    return 0


def _parse(label: str) -> tuple:
    kind, _, rest = label.partition(":")
    if not rest:
        return kind, ()
    if kind == "program":
        name, R, dtype = rest.split(" ")
        return kind, (name, int(R), dtype)
    if kind == "numba":  # a family, or a family and a term dtype
        return kind, tuple(rest.split(" "))
    return kind, (rest,)


def markdown(rec: dict) -> str:
    lines = ["# NVRTC compile times of the GPU runbook's stages (no GPU)", "",
             f"Generated by `{rec['command']}` on {rec['date']}, NVRTC {rec['nvrtc']}, {rec['arch']}, on a shared "
             f"{rec['cpus_here']}-core machine (load average {rec['load_average_before']} before, "
             f"{rec['load_average_after']} after): timings are noisy.  Raw log: compile.log.", "",
             "Method: every unit (one NVRTC program, as the library's loaders compile it) compiled in one process, "
             "one after the other (one core); then all again into an empty cache by a pool of "
             f"{rec['pool']['processes']} processes: {rec['pool']['wall_seconds']} s measured against "
             f"{rec['pool']['predicted_seconds']} s predicted from the one-core times, a contention factor of "
             f"{rec['contention_factor']}.  The GPU machine (16 cores): the one-core times scheduled longest first on "
             f"16 workers, times that factor, plus a worker's start-up ({rec['worker_startup_seconds']} s).", "",
             "| stage | units | one core (s) | longest unit (s) | pool of 2 here (s, predicted) | 16 processes (s, "
             "predicted) |", "|---|---|---|---|---|---|"]
    for s, e in rec["stages"].items():
        lines.append(f"| {s} | {e['units']} | {e['one_core_seconds']} | {e['longest_unit_seconds']} | "
                     f"{e['pool_here_seconds']} | {e['wall_seconds']} |")
    lines += ["", f"One core, all units of the stages together: {rec['one_core_wall_seconds']} s.", "",
              "## Slowest units (one core)", "", "| unit | seconds |", "|---|---|"]
    for lb, s in sorted(rec["one_core"].items(), key=lambda kv: -kv[1])[:25]:
        lines.append(f"| `{lb}` | {s} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/gpu_compile.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stage", default=None, help="fill the cache with this stage's units")
    ap.add_argument("--parts", default=None, help="only these parts' units (comma-separated)")
    ap.add_argument("--arch", default="auto", help="NVRTC target (auto: the current device's, by CuPy)")
    ap.add_argument("--jobs", type=int, default=GPU_MACHINE_JOBS)
    ap.add_argument("--out", type=Path, default=None, help="write the per-unit records here (JSON)")
    ap.add_argument("--measure", action="store_true", help="measure the compile times here (see above)")
    ap.add_argument("--stages", default="first,second")
    ap.add_argument("--pool", type=int, default=2, help="processes of the measured pool (--measure)")
    ap.add_argument("--only", default=None, help="with --measure: remeasure these units (labels separated by ';', "
                    "a kernel's label holding commas; or 'missing': the stages' units without a measurement; one "
                    "core) in the committed compile.json, keeping the rest")
    ap.add_argument("--warm", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.warm:
        name, _, dtype = args.warm.partition(":")
        warm_engine(name, dtype or None)
        return 0
    if args.measure and args.only:
        return remeasure(missing_units() if args.only == "missing" else args.only.split(";"))
    if args.measure:
        BUDGET.mkdir(parents=True, exist_ok=True)
        with open(BUDGET / "compile.log", "w") as logf:
            def log(line):
                print(line, flush=True)
                logf.write(line + "\n")
                logf.flush()

            rec = measure(args.stages.split(","), args.pool, log)
        (BUDGET / "compile.json").write_text(json.dumps(rec, indent=1) + "\n")
        (BUDGET / "compile.md").write_text(markdown(rec))
        print(f"wrote {BUDGET / 'compile.json'} and compile.md")
        return 0
    if not args.stage:
        ap.error("--stage or --measure")
    arch = args.arch
    if arch == "auto":
        import cupy  # optional dependency: present on the GPU machine

        arch = build.device_arch(cupy.cuda.Device().id)
    units = stage_units(args.stage, args.parts.split(",") if args.parts else None)
    order = load_measurement().get("one_core", {})
    res = prewarm(units, arch, args.jobs, order,
                  progress=lambda r: print(f"  {r['seconds']:7.2f} s {r['unit']}" + (f"  ERROR {r['error'][:200]}"
                                                                                    if "error" in r else ""),
                                           flush=True))
    print(f"compiled {res['units']} units with {res['jobs']} processes in {res['wall_seconds']} s "
          f"({res['cached']} cached, {res['errors']} errors)")
    if args.out:
        args.out.write_text(json.dumps(res, indent=1) + "\n")
    return 1 if res["errors"] else 0
