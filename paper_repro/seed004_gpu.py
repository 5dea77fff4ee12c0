"""Surineni 2017 (seed 004), chapter 3 and Figure 27: the characterization of GPU arithmetic, on the
GPU of the run (skipped, with a line saying so, when there is none).

The microbenchmarks are in ``paper_repro/seed004_microbench.cu`` (its header says how each is built
and timed with ``clock64()``):

* **Latency** (the thesis's Tables IV and V): one warp runs a dependent chain of one operation; the
  cycles per step, from the difference of two iteration counts (the fixed cost of the clock reads
  cancels).  FP32 and FP64 add, mul, fma, div, rcp, sqrt, exp2, the warp shuffle, and FP32
  ``__fdividef``; the FP32 operations also from a ``--use_fast_math`` build (the thesis's "fast"
  columns; FP64 has no fast-math variant);
* **Throughput**: 4 independent chains per thread, 8 blocks of 256 threads per multiprocessor; each
  block records its clocks and its multiprocessor, and the operations a multiprocessor ran divided
  by its cycles (first start to last stop) give operations per cycle per multiprocessor; times the
  multiprocessors and the clock rate, operations per second;
* **Mixed precision** (Figure 27, Table IX): float additions only, double additions only, and both
  interleaved 50:50 in each thread, in additions per second, beside the device's theoretical rates
  (FP32 and FP64 additions per cycle per multiprocessor of the CUDA C++ Programming Guide's
  "Arithmetic Instructions" throughput table: 128 and 64 for compute capability 9.0) and the thesis's
  Maxwell TitanX figures;
* **The library's operations**: the R = 2 double-word algorithms of ``dw.cuh`` (the defaults:
  Algorithms 6, 10, 17 and the square root) one thread per number, and the R-term safe addition and
  truncated multiplication (each renormalized, as the op-by-op kernels do) on lane groups, R = 2, 4,
  8 for float64 (and 4 for float32), latency and throughput as above.

The tables put this GPU's figures beside the thesis's Fermi, Kepler, Maxwell and Pascal columns from
``paper_repro/anchors/surineni2017_tables.csv``.  The sources compile with NVRTC without a GPU
(:func:`compile_all`, tested in CI).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
from pathlib import Path

import numpy as np

from expansions.__main__ import environment, gpu_environment
from expansions.cuda import build

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "seed004_microbench.cu"
#: the file name NVRTC is given (and part of the disk-cache key, :func:`expansions.cuda.build.cache_key`)
FILENAME = "seed004_microbench.cu"
ANCHORS = HERE / "anchors" / "surineni2017_tables.csv"
ARCHES = ("fermi", "kepler", "maxwell", "pascal")
UNROLL = 16
CHAINS = 4

#: operation: its number in the source's enum
OPS = {"add": 0, "mul": 1, "fma": 2, "div": 3, "rcp": 4, "sqrt": 5, "exp2": 6, "__fdividef": 7, "shfl": 8}
#: the operations measured per dtype ("__fdividef" is a float intrinsic)
MEASURED = {"float": ("add", "mul", "fma", "div", "__fdividef", "rcp", "sqrt", "exp2", "shfl"),
            "double": ("add", "mul", "fma", "div", "rcp", "sqrt", "exp2", "shfl")}
#: builds of the primitive operations: NVRTC's defaults (IEEE division and square root, denormals
#: kept, contraction allowed) and the fast-math build
BUILDS = {"standard": ("-std=c++17",), "fast": ("-std=c++17", "--use_fast_math")}
#: the operands (a0, b, c) of each operation's chain (see the source's header)
OPERANDS = {"add": (1.0, 2.0 ** -40, 0.0), "mul": (1.5, 1.0, 0.0), "fma": (1.5, 1.0, 0.0), "div": (1.5, 1.0, 0.0),
            "__fdividef": (1.5, 1.0, 0.0), "rcp": (1.5, 1.0, 0.0), "sqrt": (2.0, 1.0, 0.0),
            "exp2": (0.5, 1.0, 0.0), "shfl": (1.5, 1.0, 0.0)}
#: the library's double-word operations: (algorithm, functor arity, (xh, xl, yh, yl))
DW_OPS = {"add": ("dw_add_accurate", 2, (1.0, 2.0 ** -60, 2.0 ** -40, 2.0 ** -100)),
          "mul": ("dw_times_dw1", 2, (1.5, 2.0 ** -60, 1.0, 2.0 ** -60)),
          "div": ("dw_div_dw2", 2, (1.5, 2.0 ** -60, 1.0, 2.0 ** -60)),
          "sqrt": ("dw_sqrt", 1, (2.0, 2.0 ** -60, 0.0, 0.0))}
#: the library's R-term operations on lane groups: (R values per dtype), op numbers of the source
GROUP_R = {"double": (2, 4, 8), "float": (4,)}
GROUP_OPS = {"add_safe": 0, "mul_truncated": 1}
GROUP_OPERANDS = {"add_safe": (1.0, 2.0 ** -30), "mul_truncated": (1.5, 1.0)}
#: FP32 and FP64 additions per cycle per multiprocessor, CUDA C++ Programming Guide, "Arithmetic
#: Instructions", throughput table (compute capability: (fp32, fp64))
ADD_RATES = {90: (128, 64), 80: (64, 32), 70: (64, 32)}


def _functor(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def primitive_names() -> list[str]:
    names = []
    for dt, ops in MEASURED.items():
        for op in ops:
            names += [f"microbench::latency<{dt}, {OPS[op]}>", f"microbench::throughput<{dt}, {OPS[op]}, {CHAINS}>"]
    names += [f"microbench::mixed<{f}, {d}>" for f, d in ((CHAINS, 0), (0, CHAINS), (CHAINS, CHAINS))]
    return names


def library_names() -> list[str]:
    names = []
    for dt in ("float", "double"):
        for alg, arity, _ in DW_OPS.values():
            for chains in (1, CHAINS):
                names.append(f"microbench::dw_chain<{dt}, expansions::{_functor(alg)}, {arity}, {chains}>")
    for dt, rs in GROUP_R.items():
        for R in rs:
            for opn in GROUP_OPS.values():
                names += [f"microbench::group_chain<{dt}, {R}, {opn}, {c}>" for c in (1, CHAINS)]
    return names


def sources() -> dict:
    """{build: (source text, options, name expressions)}: the primitive operations in the standard and
    fast-math builds, the library's operations after kernels.cu with the library's options."""
    text = SOURCE.read_text()
    out = {b: (text, opts, primitive_names()) for b, opts in BUILDS.items()}
    out["library"] = (build.source() + "\n#define LIBRARY\n" + text, build.OPTIONS, library_names())
    return out


def compile_all(arch: str = "sm_90") -> dict:
    """{build: (binary, {name: lowered}, log)} compiled with NVRTC for ``arch`` (no GPU needed)."""
    return {b: build.compile_source(text, names, arch, verbose=True, filename=FILENAME, options=opts)
            for b, (text, opts, names) in sources().items()}


# ----------------------------------------------------------------------------------------------
# the thesis's figures


def anchors() -> dict:
    """{'IV': {op: {arch: (std, fast)}}, 'V': {op: {arch: cycles}}, 'IX': {label: value}}."""
    rows = {"IV": {}, "V": {}}
    lines = ANCHORS.read_text().splitlines()
    for r in csv.DictReader(line for line in lines if not line.startswith("#")):
        if r["table"] not in rows:
            continue
        vals = {}
        for a in ARCHES:
            parts = r[a].split("/")
            vals[a] = (float(parts[0]), float(parts[1])) if len(parts) == 2 else (float(parts[0]), None)
        rows[r["table"]][r["op"]] = vals
    ix = next(line for line in lines if line.startswith("# Table IX"))
    nums = {k: float(v) * {"T": 1e12, "G": 1e9}[u] for k, v, u in
            re.findall(r"(single|double|mixed 50:50) ([\d.]+) ([TG])Flops", ix)}
    theo = re.search(r"theoretical single ([\d.]+) TFlops / double ([\d.]+) GFlops", ix)
    rows["IX"] = {"theoretical single": float(theo[1]) * 1e12, "theoretical double": float(theo[2]) * 1e9,
                  "single": nums["single"], "double": nums["double"], "mixed": nums["mixed 50:50"]}
    return rows


# ----------------------------------------------------------------------------------------------
# measurement (GPU)


def _per_sm_rate(clocks, ops_per_block: float) -> float:
    """Operations per cycle per multiprocessor: clocks is (blocks, 3) = start, stop, smid."""
    by_sm: dict = {}
    for start, stop, sm in clocks.tolist():
        lo, hi, n = by_sm.get(sm, (start, stop, 0))
        by_sm[sm] = (min(lo, start), max(hi, stop), n + 1)
    rates = [n * ops_per_block / (hi - lo) for lo, hi, n in by_sm.values() if hi > lo]
    return statistics.median(rates)


class _Runner:
    def __init__(self, quick: bool):
        import cupy  # optional dependency: CuPy is needed only on the GPU path

        self.cp = cupy
        dev = cupy.cuda.Device()
        self.sms = dev.attributes["MultiProcessorCount"]
        self.clock_hz = dev.attributes["ClockRate"] * 1e3
        self.cc = int(dev.compute_capability)
        self.arch = build.device_arch(dev.id)
        self.quick = quick
        self.modules = {}
        for b, (text, opts, names) in sources().items():
            cubin, lowered = build.cached_cubin(text, names, self.arch, FILENAME, opts)
            self.modules[b] = (cupy.RawModule(path=str(cubin)), lowered)

    def fn(self, b, name):
        module, lowered = self.modules[b]
        return module.get_function(lowered[name])

    def _launch(self, fn, blocks, threads, args, dtypes=("float64",)):
        cp = self.cp
        outs = [cp.empty(blocks * threads, dtype=d) for d in dtypes]
        clocks = cp.zeros((blocks, 3), dtype=cp.int64)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn((blocks,), (threads,), tuple(outs) + (clocks,) + tuple(args))
        stop.record()
        stop.synchronize()
        return clocks.get(), cp.cuda.get_elapsed_time(start, stop) * 1e-3

    def latency(self, b, name, scalars, np_dtype, per_step: float = 1.0, threads: int = 32) -> float:
        """Cycles per step of one dependent chain (one warp): the difference of two iteration counts."""
        n1, n2 = (8, 16) if self.quick else (32, 64)
        fn = self.fn(b, name)
        cyc = []
        for n in (n1, n2):
            clocks, _ = self._launch(fn, 1, threads, [np_dtype(s) for s in scalars] + [_i32(n)], (np_dtype,))
            cyc.append(int(clocks[0, 1] - clocks[0, 0]))
        return (cyc[1] - cyc[0]) / ((n2 - n1) * UNROLL * per_step)

    def throughput(self, b, name, scalars, np_dtype, ops_per_thread_step: float, threads: int = 256) -> dict:
        """Operations per cycle per multiprocessor (clock64) and per second (events)."""
        iters = 8 if self.quick else 32
        blocks = 8 * self.sms
        fn = self.fn(b, name)
        self._launch(fn, blocks, threads, [np_dtype(s) for s in scalars] + [_i32(1)], (np_dtype,))  # warm-up
        clocks, secs = self._launch(fn, blocks, threads, [np_dtype(s) for s in scalars] + [_i32(iters)], (np_dtype,))
        per_block = threads * iters * UNROLL * ops_per_thread_step
        per_cycle = _per_sm_rate(clocks, per_block)
        return {"per_cycle_per_sm": per_cycle, "per_second_clock": per_cycle * self.sms * self.clock_hz,
                "per_second_events": blocks * per_block / secs}

    def mixed(self, f, d) -> dict:
        iters = 8 if self.quick else 32
        blocks, threads = 8 * self.sms, 256
        fn = self.fn("standard", f"microbench::mixed<{f}, {d}>")
        args = [np.float32(2.0 ** -20), np.float64(2.0 ** -40)]
        self._launch(fn, blocks, threads, args + [_i32(1)], (np.float32, np.float64))
        clocks, secs = self._launch(fn, blocks, threads, args + [_i32(iters)], (np.float32, np.float64))
        per_block = threads * iters * UNROLL * (f + d)
        per_cycle = _per_sm_rate(clocks, per_block)
        return {"per_cycle_per_sm": per_cycle, "per_second_clock": per_cycle * self.sms * self.clock_hz,
                "per_second_events": blocks * per_block / secs}


def _i32(n):
    return np.int32(n)


def measure(quick: bool = True) -> dict:
    """Every microbenchmark on the current GPU (see the module docstring)."""
    r = _Runner(quick)
    npdt = {"float": np.float32, "double": np.float64}
    prim = []
    for dt, ops in MEASURED.items():
        for op in ops:
            for b in BUILDS:
                if b == "fast" and dt == "double":
                    continue
                lat = r.latency(b, f"microbench::latency<{dt}, {OPS[op]}>", OPERANDS[op], npdt[dt])
                thr = r.throughput(b, f"microbench::throughput<{dt}, {OPS[op]}, {CHAINS}>", OPERANDS[op], npdt[dt],
                                   CHAINS)
                prim.append({"dtype": dt, "op": op, "build": b, "latency_cycles": lat, **thr})
    lib = []
    for dt in ("float", "double"):
        for op, (alg, arity, vals) in DW_OPS.items():
            names = [f"microbench::dw_chain<{dt}, expansions::{_functor(alg)}, {arity}, {c}>" for c in (1, CHAINS)]
            lat = r.latency("library", names[0], vals, npdt[dt])
            thr = r.throughput("library", names[1], vals, npdt[dt], CHAINS)
            lib.append({"dtype": dt, "op": op, "algorithm": alg, "R": 2, "latency_cycles": lat, **thr})
    for dt, rs in GROUP_R.items():
        for R in rs:
            W = 1 << (R - 1).bit_length()
            for op, opn in GROUP_OPS.items():
                names = [f"microbench::group_chain<{dt}, {R}, {opn}, {c}>" for c in (1, CHAINS)]
                lat = r.latency("library", names[0], GROUP_OPERANDS[op], npdt[dt])
                thr = r.throughput("library", names[1], GROUP_OPERANDS[op], npdt[dt], CHAINS / W)
                lib.append({"dtype": dt, "op": op, "algorithm": f"{op} + renormalize (lane groups of {W})", "R": R,
                            "latency_cycles": lat, **thr})
    mixed = {label: r.mixed(f, d) for label, (f, d) in
             {"single": (CHAINS, 0), "double": (0, CHAINS), "mixed": (CHAINS, CHAINS)}.items()}
    fp32, fp64 = ADD_RATES.get(r.cc, ADD_RATES[90])
    theory = {"theoretical single": fp32 * r.sms * r.clock_hz, "theoretical double": fp64 * r.sms * r.clock_hz}
    return {"primitives": prim, "library": lib, "mixed": mixed, "theory": theory, "sms": r.sms,
            "clock_hz": r.clock_hz, "arch": r.arch, "quick": quick, "environment": environment()}


def run(quick: bool = True, seed: int = 2017) -> dict:
    env = gpu_environment()
    if not env.get("gpu_available"):
        return {"skipped": f"no GPU ({env.get('gpu_reason', 'CuPy sees none')}): the characterization of chapter 3 "
                           "(Tables IV, V, IX) runs only on a GPU"}
    return measure(quick)


# ----------------------------------------------------------------------------------------------
# tables


def _fmt(v, nd=3):
    return "-" if v is None else f"{v:.{nd}g}"


def markdown(res: dict) -> str:
    out = ["## Seed 004 (Surineni 2017), chapter 3: latencies and throughputs on the GPU", ""]
    if "skipped" in res:
        return "\n".join(out + [f"Skipped: {res['skipped']}.", ""]) + "\n"
    a = anchors()
    gpu = res["environment"].get("gpu_name", "this GPU")
    out += [f"{gpu} ({res['arch']}, {res['sms']} multiprocessors, clock {res['clock_hz'] / 1e9:.3g} GHz"
            f"{', quick run' if res.get('quick') else ''}); latencies in cycles per dependent step (clock64, "
            "one warp); throughputs in operations per cycle per multiprocessor (clock64) and Gop/s (events).", ""]
    prim = {(r["dtype"], r["op"], r["build"]): r for r in res["primitives"]}
    names = {"add": "add", "mul": "mul", "fma": "fma", "div": "div", "rcp": "rcp", "sqrt": "sqrt", "exp2": "ex2"}
    for table, dt in (("IV", "float"), ("V", "double")):
        title = "single" if dt == "float" else "double"
        fast = dt == "float"
        head = "| operation | " + " | ".join(x.capitalize() for x in ARCHES) + " | this GPU" + \
            (" std / fast" if fast else "") + " | ops/cycle/SM" + (" std / fast" if fast else "") + " | Gop/s |"
        out += [f"### Table {table}: {title}-precision latencies (cycles){' (std/fast)' if fast else ''}", "", head,
                "|---|" + "---|" * (len(ARCHES) + 3)]
        for op in MEASURED[dt]:
            thesis = a[table].get(names.get(op, op), {})
            cols = []
            for arch in ARCHES:
                v = thesis.get(arch)
                cols.append("-" if v is None else (f"{v[0]:g}/{v[1]:g}" if v[1] is not None else f"{v[0]:g}"))
            std, fst = prim.get((dt, op, "standard")), prim.get((dt, op, "fast"))
            lat, thr = ((_fmt(std and std[k]) + (f" / {_fmt(fst and fst[k])}" if fast else ""))
                        for k in ("latency_cycles", "per_cycle_per_sm"))
            gops = _fmt(std and std["per_second_events"] / 1e9)
            out.append(f"| {op} | " + " | ".join(cols) + f" | {lat} | {thr} | {gops} |")
        out.append("")
    ix = a["IX"]
    out += ["### Table IX / Figure 27: addition throughput, single, double and mixed (50:50) precision", "",
            "| kernel | thesis (Maxwell TitanX) | this GPU, clock64 | this GPU, events |", "|---|---|---|---|"]
    for label in ("theoretical single", "theoretical double"):
        out.append(f"| {label} | {ix[label] / 1e9:.4g} Gflop/s | {res['theory'][label] / 1e9:.4g} Gflop/s | - |")
    for label in ("single", "double", "mixed"):
        m = res["mixed"][label]
        out.append(f"| {label} | {ix[label] / 1e9:.4g} Gflop/s | {m['per_second_clock'] / 1e9:.4g} Gflop/s | "
                   f"{m['per_second_events'] / 1e9:.4g} Gflop/s |")
    out += ["", "### The library's operations (R = 2: double-word functors, one thread per number; R-term: lane "
            "groups)", "", "| dtype | operation | algorithm | R | latency (cycles) | ops/cycle/SM | Gop/s |",
            "|---|---|---|---|---|---|---|"]
    for r in res["library"]:
        out.append(f"| {r['dtype']} | {r['op']} | {r['algorithm']} | {r['R']} | {_fmt(r['latency_cycles'])} | "
                   f"{_fmt(r['per_cycle_per_sm'])} | {_fmt(r['per_second_events'] / 1e9)} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    """``python -m paper_repro.seed004_gpu [--quick] --out DIR``: the characterization alone (the GPU
    runbook's ``characterize`` phase), written as seed004_gpu.md and seed004_gpu.json; on a machine
    without a GPU, the line saying it was skipped."""
    ap = argparse.ArgumentParser(prog="python -m paper_repro.seed004_gpu", description=main.__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    res = run(quick=args.quick)
    text = markdown(res)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "seed004_gpu.md").write_text(text)
        (args.out / "seed004_gpu.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
