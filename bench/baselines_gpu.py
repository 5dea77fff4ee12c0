"""GPU benchmarks of the sequential baselines (one expansion per thread, SoA layout), in the paper's
best-case and memory-constrained (R * 256 bytes of shared memory per thread) scenarios; called by
:func:`bench.gpu.measure` for the ``campary`` and ``qd`` columns of Tables I-IV."""

from __future__ import annotations

import functools
import statistics

import numpy as np

from bench import gpu

SEQ = {("add", "campary"): "CertAdd", ("mul", "campary"): "CertMul",
       ("add", "qd", 2): "DdAddIeee", ("mul", "qd", 2): "DdMul",
       ("add", "qd", 4): "QdAddIeeeSeq", ("mul", "qd", 4): "QdMulSeq"}


def functor(op: str, alg: str, R: int) -> str | None:
    return SEQ.get((op, alg)) or SEQ.get((op, alg, R))


def name_expression(kind: str, op: str, alg: str, dtype: str, R: int) -> str:
    ct = {"float64": "double", "float32": "float"}[dtype]
    return f"bench::{kind}_seq<bench::{functor(op, alg, R)}, {ct}, {R}>"


def measure(op: str, alg: str, R: int, scenario: str, dtype: str = "float64", quick: bool = False) -> dict:
    import cupy  # optional dependency: needed only to measure on a GPU

    if functor(op, alg, R) is None:
        return {"note": f"{alg} has no R = {R} variant"}
    if scenario == "stream":
        return {"note": "streaming is measured for the parallel kernels"}
    facts = gpu.device_facts()
    kind = "best" if scenario == "best" else "shmem"
    fn = gpu._function(name_expression(kind, op, alg, dtype, R))
    repeats, K = (3, 2) if quick else (7, 8)
    results = []
    sweep = gpu.shapes(facts["sms"])
    largest = max(b * t for b, t in sweep)
    for blocks, threads in sweep:
        smem = gpu.SHMEM_PER_TERM * R * threads if kind == "shmem" else 0
        if smem > 48 * 1024:
            try:
                fn.max_dynamic_shared_size_bytes = smem
            except Exception:
                continue
        count = blocks * threads
        x = cupy.asarray(np.ascontiguousarray(gpu.operands(count, R, dtype, 5, largest).T))
        y = cupy.asarray(np.ascontiguousarray(gpu.operands(count, R, dtype, 6, largest).T))
        out = cupy.empty_like(x)
        args = (x, y, out, np.int64(count), np.int32(K))
        try:
            secs = gpu._time(functools.partial(fn, (blocks,), (threads,), args, shared_mem=smem), repeats)
        except cupy.cuda.driver.CUDADriverError as exc:
            results.append({"blocks": blocks, "threads": threads, "error": str(exc)})
            continue
        t = statistics.median(secs)
        results.append({"blocks": blocks, "threads": threads, "expansions": count, "K": K, "seconds": secs,
                        "mops": count * K / t / 1e6, "shared_bytes": smem,
                        "blocks_per_sm": gpu._occupancy(fn, threads, smem)})
    ok = [r for r in results if "mops" in r]
    if not ok:
        return {"note": "no launch shape ran", "shapes": results}
    best = max(ok, key=lambda r: r["mops"])
    return {"dtype": dtype, "layout": "SoA", "mops": best["mops"], "best_shape": [best["blocks"], best["threads"]],
            "paper_shape_mops": max((r["mops"] for r in ok if r["blocks"] == gpu.PAPER_BLOCKS), default=None),
            "registers": fn.num_regs, "blocks_per_sm": best["blocks_per_sm"], "shapes": results}
