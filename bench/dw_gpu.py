"""The double-word (R = 2) algorithms on the GPU, one thread per number: their benchmark kernels
(``bench::best_dw`` and ``bench::best_dw_unary`` in ``bench/kernels.cu``: K dependent operations in
registers per number, no floating-point harness), the names the instruction model uses
(:mod:`bench.model`, section "R = 2: double-word kernels beside CCCL fpmp"), and :func:`measure`, the
timing of one on a GPU in the way of :func:`bench.gpu.measure`'s best case.

The algorithms are the library's R = 2 methods (:data:`expansions.dispatch.R2_METHODS`; the
defaults :data:`expansions.dispatch.R2_DEFAULTS`), each a functor of ``expansions/cuda/dw.cuh``.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from bench import gpu
from expansions import backends, cuda
from expansions.cuda import dw_kernels
from expansions.dispatch import R2_DEFAULTS, R2_METHODS
from expansions.dw import ALGORITHMS

#: Every R = 2 method of the library, operation by operation, the default first.
METHODS = tuple((op, name) for op, names in R2_METHODS.items()
                for name in sorted(names, key=lambda n: n != R2_DEFAULTS[op]))
KERNELS = {("dw", "dw"): "best_dw", ("dw",): "best_dw_unary"}
#: Operations per loop iteration of the benchmark kernels (the model divides by it).
OPS_PER_ITERATION = 2


def name_expression(name: str, dtype: str) -> str:
    """The benchmark kernel of double-word algorithm ``name`` (e.g. ``dw_add_accurate``)."""
    ct = {"float64": "double", "float32": "float"}[dtype]
    kern = KERNELS[ALGORITHMS[name].operands]
    return f"bench::{kern}<expansions::{dw_kernels.functor(name)}, {ct}>"


def inputs(name: str, count: int, dtype: str, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """(count, 2) double-words x and y for the chain of ``name``: hi + lo with lo below half an ulp of
    hi; positive for the square root; for the products, factors within 2^-6 of 1 (the chain's
    logarithms grow as Fibonacci numbers: K = 16 stays far from overflow, in float32 too)."""
    rng = np.random.default_rng(seed)
    t = np.dtype(dtype).type
    eps = float(np.finfo(dtype).eps)
    op = ALGORITHMS[name].operation
    out = []
    for _ in range(2):
        if op == "mul":
            hi = 1 + rng.uniform(-1, 1, count) / 64
        else:
            hi = rng.uniform(1, 2, count) * 2.0 ** rng.integers(-8, 9, count)
            hi *= 1 if op == "sqrt" else rng.choice([-1, 1], count)
        hi = hi.astype(dtype)
        lo = (hi.astype(np.float64) * eps / 4 * rng.uniform(-1, 1, count)).astype(dtype)
        out.append(np.stack([hi, lo], axis=1).astype(t))
    return out[0], out[1]


def measure(name: str, dtype: str = "float64", quick: bool = False) -> dict:
    """Mop/s of the benchmark kernel of ``name`` over launch shapes (the paper's 1024 blocks, and
    2, 4, 8 blocks per SM): the best shape, its registers and occupancy, and the raw times."""
    import cupy  # optional dependency: needed only to measure on a GPU

    facts = gpu.device_facts()
    fn = gpu._function(name_expression(name, dtype))
    repeats, K = (3, 4) if quick else (7, 16)
    results = []
    for blocks, threads in gpu.shapes(facts["sms"]):
        count = blocks * threads
        x, y = (cupy.asarray(a) for a in inputs(name, count, dtype))
        out = cupy.empty_like(x)
        args = (x, y, out, np.int64(count), np.int32(K))
        try:
            secs = gpu._time(functools.partial(fn, (blocks,), (threads,), args), repeats)
        except cupy.cuda.driver.CUDADriverError as exc:
            results.append({"blocks": blocks, "threads": threads, "error": str(exc)})
            continue
        t = statistics.median(secs)
        results.append({"blocks": blocks, "threads": threads, "numbers": count, "K": K, "seconds": secs,
                        "mops": count * K / t / 1e6, "blocks_per_sm": gpu._occupancy(fn, threads, 0),
                        "finite": bool(cupy.isfinite(out).all())})
    ok = [r for r in results if "mops" in r]
    if not ok:
        return {"name": name, "dtype": dtype, "note": "no launch shape ran", "shapes": results}
    best = max(ok, key=lambda r: r["mops"])
    return {"name": name, "dtype": dtype, "kernel": name_expression(name, dtype), "mops": best["mops"],
            "best_shape": [best["blocks"], best["threads"]], "registers": fn.num_regs,
            "blocks_per_sm": best["blocks_per_sm"], "device": facts["name"], "shapes": results}



def main(argv=None) -> int:
    """``python -m bench.dw_gpu --out FOLDER [--quick]``: every R = 2 method, float64 and float32,
    measured on the GPU, beside the instruction model's bound of its cell (the committed
    bench/results/model_sm90.json, the device's column): ``r2_measured.json`` and ``.md`` in FOLDER.
    Exit status 2 without a GPU."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if not cuda.available():
        print("no CUDA GPU visible to CuPy")
        return 2
    model_json = Path(__file__).resolve().parent / "results" / "model_sm90.json"
    bounds = {(r["kernel"], r["dtype"]): r.get("bound") for r in json.loads(model_json.read_text())["records"]
              if r.get("source") == "bench" and r["R"] == 2}
    rows = []
    for op, name in METHODS:
        for dtype in ("float64", "float32"):
            rec = measure(name, dtype, quick=args.quick) | {"operation": op}
            dev = "H200" if "H200" in str(rec.get("device", "")) else "H100 SXM"
            bound = (bounds.get((name_expression(name, dtype), dtype)) or {}).get(dev)
            if bound and rec.get("mops"):
                rec |= {"model_device": dev, "model_mops": bound["mops"],
                        "measured_over_bound": rec["mops"] / bound["mops"]}
            rows.append(rec)
            ratio = rec.get("measured_over_bound")
            print(f"{name} {dtype}: {rec.get('mops', float('nan')):.4g} Mop/s"
                  + (f", {ratio:.2f} of the model's bound" if ratio else ""), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python -m bench.dw_gpu " + " ".join(sys.argv[1:] if argv is None else argv)
    meta = {"environment": backends.gpu_environment(), "command": command}
    text = json.dumps({"meta": meta, "records": rows}, indent=1, default=str)
    (args.out / "r2_measured.json").write_text(text + "\n")
    lines = ["# R = 2 double-word kernels measured (bench.dw_gpu) beside the instruction model's bound", "",
             "| operation | algorithm | dtype | measured Mop/s | model bound Mop/s | measured / bound |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['operation']} | {r['name']} | {r['dtype']} | {r.get('mops', float('nan')):.4g} | "
                     f"{r.get('model_mops', float('nan')):.4g} | {r.get('measured_over_bound', float('nan')):.2f} |")
    (args.out / "r2_measured.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
