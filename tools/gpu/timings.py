"""The timing parts: the paper's tables (``tables``), the R = 2 double-word throughput beside CCCL
fpmp (``r2``), the fused x*y+z streaming beside the memory bandwidth (``stream``), the instruction
model's bound beside the measured speed cell by cell (``model``, and ``model_rest`` in the third stage),
and seed 004's characterization (``characterize``).  In a rehearsal they run their code with the
benchmark harnesses' GPU measurements replaced (:meth:`tools.gpu.devices.Rehearsal.installed`)."""

from __future__ import annotations

import functools
import json
import os
import statistics

import numpy as np

import expansions as ex
from bench import baselines_gpu, dw_gpu, gpu, model
from expansions.cuda import build
from expansions.formats import group_width
from expansions.generate import random_terms
from paper_repro import collange2016 as C
from paper_repro import seed004_gpu

from .common import (
    CUDA_INIT_S,
    CUPY_KERNEL_S,
    LAUNCH_S,
    MODEL_DEVICE,
    MODEL_JSON,
    RESERVE_S,
    TRANSFER_BPS,
    Context,
    cpu_figure,
    device_seconds,
    model_bounds,
    part,
    process_start,
)
from .units import PROGRAMS, Unit

PARTS: dict = {}


# ---------------------------------------------------------------------------------------------
# tables (first): Tables I-IV, quick


def _table_jobs():
    return [(t, R, a) for t, (op, _) in C.TABLES.items() for R in C.RS for a in C.ALGORITHMS[op]]


def _units_tables():
    out = []
    for table, R, alg in _table_jobs():
        op, scenario = C.TABLES[table]
        kind = "best" if scenario == "best" else "shmem"
        if (op, alg) in gpu.OPS:
            out.append(Unit("bench", (gpu.name_expression(kind, op, alg, "float64", R),)))
        elif baselines_gpu.functor(op, alg, R) is not None:
            out.append(Unit("bench", (baselines_gpu.name_expression(kind, op, alg, "float64", R),)))
    return out


def bench_shapes(sms: int = 132):
    return gpu.shapes(sms)


def _estimate_tables(budget):
    per_term = cpu_figure(budget, "random_terms_seconds_per_term", 1e-7)
    shapes = bench_shapes()
    cpu = device = 0.0
    launches = 0
    generated = set()
    for table, R, alg in _table_jobs():
        op, scenario = C.TABLES[table]
        par = (op, alg) in gpu.OPS
        if not par and baselines_gpu.functor(op, alg, R) is None:
            continue
        repeats, K = (3, 4) if par else (3, 2)
        W = group_width(R) if par else 1
        counts = [b * t // W for b, t in shapes]
        if (par, R) not in generated:  # the operands of the largest shape, drawn once (bench.gpu.operands)
            cpu += 2 * max(counts) * R * per_term
            generated.add((par, R))
        kind = "best" if scenario == "best" else "shmem"
        name = (gpu.name_expression(kind, op, alg, "float64", R) if par
                else baselines_gpu.name_expression(kind, op, alg, "float64", R))
        best = (gpu.name_expression("best", op, alg, "float64", R) if par
                else baselines_gpu.name_expression("best", op, alg, "float64", R))
        for c in counts:
            # the model bounds the best case; the shared-memory scenario runs at most that fast
            device += device_seconds(name if name in model_bounds() else best, c * K * (repeats + 2))
            nbytes = 3 * c * R * 8
            device += nbytes / TRANSFER_BPS
            launches += repeats + 2
    total = process_start(budget) + CUDA_INIT_S + cpu + device + launches * LAUNCH_S
    return {"seconds": round(total, 1), "cpu": round(cpu, 1), "device": round(device, 1),
            "detail": f"{len(_table_jobs())} records x {len(shapes)} launch shapes (paper_repro --quick sizes); "
                      f"operands drawn once per (R, kind) ({cpu:.0f} s at the measured rate), kernels at the model's "
                      "bound, transfers"}


@part(PARTS, "tables", "first", "Tables I-IV of Collange et al. 2016 in their quick form (paper_repro.collange2016, "
      "quick): best case and 256 B of shared memory per term, R = 2..32, beside the K40 figures and the model's bound",
      units=_units_tables, estimate=_estimate_tables)
def run_tables(ctx: Context):
    rec = {"part": "tables", "device": ctx.device.label, "status": "partial"}
    ctx.save("tables", rec)
    records = C.measure(True, "cuda", progress=False)
    label = ctx.device.facts()["name"]
    rec.update(status="measured", records=records, markdown=C.markdown(records, label),
               aims=C.aims(records, []))
    best = [r for r in records if r["scenario"] == "best" and r.get("mops")]
    rec["summary"] = [f"{len([r for r in records if r.get('mops')])} of {len(records)} cells measured"]
    for r in best:
        if r["R"] in (2, 8, 32) and r["algorithm"] in ("safe", "parallel"):
            rec["summary"].append(f"Table {r['table']} {r['algorithm']} R={r['R']}: {r['mops']:.4g} Mop/s, "
                                  f"{r.get('ratio_to_k40', float('nan')):.3g}x the K40")
    ctx.save("tables", rec)


# ---------------------------------------------------------------------------------------------
# r2 (first): the double-word add and mul beside CCCL fpmp


def _r2_methods():
    return [(op, name) for op, name in dw_gpu.METHODS if op in ("add", "mul")]


def _units_r2():
    return [Unit("bench", (dw_gpu.name_expression(name, "float64"),)) for _, name in _r2_methods()]


def _estimate_r2(budget):
    shapes = bench_shapes()
    per_number = cpu_figure(budget, "dw_inputs_seconds_per_number", 2e-7)
    cpu = device = 0.0
    for _, name in _r2_methods():
        for b, t in shapes:
            c = b * t
            cpu += c * per_number
            device += device_seconds(dw_gpu.name_expression(name, "float64"), c * 4 * 5) + 2 * c * 16 / TRANSFER_BPS
    total = process_start(budget) + CUDA_INIT_S + 2 * CUPY_KERNEL_S + cpu + device
    return {"seconds": round(total, 1), "cpu": round(cpu, 1), "device": round(device, 1),
            "detail": f"{len(_r2_methods())} algorithms x {len(shapes)} launch shapes (bench.dw_gpu --quick)"}


@part(PARTS, "r2", "first",
      "R = 2 double-word addition and multiplication throughput (bench.dw_gpu, quick, float64, every "
      "algorithm of R2_METHODS) beside CCCL fpmp's figures and the model's bound", units=_units_r2,
      estimate=_estimate_r2)
def run_r2(ctx: Context):
    rec = {"part": "r2", "device": ctx.device.label, "status": "partial", "fpmp": model.FPMP, "records": []}
    bounds = model_bounds()
    for op, name in _r2_methods():
        if ctx.left() < RESERVE_S:
            rec["stopped"] = "deadline"
            break
        r = dw_gpu.measure(name, "float64", quick=True) | {"operation": op, "algorithm": name}
        kernel = dw_gpu.name_expression(name, "float64")
        r["model_bound_tops"] = bounds.get(kernel, 0) / 1e6 or None
        r["fpmp_h100_tops"] = model.FPMP["h100_equivalent_tops"][op]
        if r.get("mops"):
            r["tops"] = r["mops"] / 1e6
            r["over_fpmp"] = r["tops"] / r["fpmp_h100_tops"]
            r["over_bound"] = r["tops"] / r["model_bound_tops"] if r["model_bound_tops"] else None
        rec["records"].append(r)
        ctx.save("r2", rec)
    rec["status"] = "measured" if "stopped" not in rec else "partial"
    rec["summary"] = [f"{r['operation']} {r['algorithm']}: " + (
        f"{r['tops']:.3g} Tops/s = {r['over_fpmp']:.2f} x fpmp ({r['fpmp_h100_tops']} Tops/s H100-equiv.), "
        f"{r['over_bound'] or float('nan'):.2f} of the model's bound" if r.get("tops")
        else r.get("note", "not measured")) for r in rec["records"]]
    ctx.save("r2", rec)


# ---------------------------------------------------------------------------------------------
# stream (first): the fused x*y+z beside the memory bandwidth


STREAM_RS = (2, 4, 8)
#: Expansions per streaming call (operands drawn for 2^20 and tiled: the values do not matter to the
#: bandwidth, the size does: 4 arrays of 2^24 x R terms).
STREAM_COUNT = 1 << 24
STREAM_DRAWN = 1 << 20
STREAM_REPEATS = 7


def _units_stream():
    return [Unit("program", ("fma", R, "float64")) for R in STREAM_RS]


def _estimate_stream(budget):
    per_term = cpu_figure(budget, "random_terms_seconds_per_term", 1e-7)
    cpu = sum(3 * STREAM_DRAWN * R * per_term for R in STREAM_RS)
    tile = sum(3 * STREAM_COUNT * R * 8 for R in STREAM_RS) / 2e9  # np.tile at about 2 GB/s
    nbytes = sum(3 * STREAM_COUNT * R * 8 for R in STREAM_RS)
    device = sum(2 * (STREAM_REPEATS + 2) * 4 * STREAM_COUNT * R * 8 / 3.0e12 for R in STREAM_RS) + 0.5
    total = process_start(budget) + CUDA_INIT_S + cpu + tile + nbytes / TRANSFER_BPS + device
    return {"seconds": round(total, 1), "cpu": round(cpu + tile, 1), "device": round(nbytes / TRANSFER_BPS + device, 1),
            "detail": f"x*y+z fused and op by op, R in {STREAM_RS}, 2^24 expansions, {STREAM_REPEATS} repeats"}


@part(PARTS, "stream", "first",
      "the fused x*y+z (expansions.fuse: one kernel) streaming 2^24 float64 expansions, R = 2, 4, "
      "8, in GB/s beside the HBM bandwidth (nominal and a measured device copy); the same op by op",
      units=_units_stream, estimate=_estimate_stream)
def run_stream(ctx: Context):
    dev = ctx.device
    facts = dev.facts()
    rec = {"part": "stream", "device": dev.label, "status": "partial", "facts": facts, "records": []}
    rec["copy_gbs"] = dev.copy_bandwidth() / 1e9
    count = ctx.size(STREAM_COUNT, 1024)
    drawn = min(count, ctx.size(STREAM_DRAWN, 1024))
    fused = ex.fuse(PROGRAMS["fma"])
    for R in STREAM_RS:
        if ctx.left() < RESERVE_S:
            rec["stopped"] = "deadline"
            break
        arrays = []
        for k in range(3):
            t = random_terms((drawn,), R, "float64", seed=k + 1, min_exponent=-450)
            arrays.append(dev.expansion(np.tile(t, (-(-count // drawn), 1))[:count]))
        nbytes = 4 * count * R * 8  # three inputs read, one output written
        row = {"R": R, "expansions": count, "bytes_per_call": nbytes}
        calls = (("fused", lambda a=arrays: fused(*a)), ("op_by_op", lambda a=arrays: a[0] * a[1] + a[2]))
        for label, fn in calls:
            secs = dev.time(fn, STREAM_REPEATS)
            t = statistics.median(secs)
            row[label] = {"seconds": secs, "gbs": nbytes / t / 1e9, "mops": count / t / 1e6}
            if facts.get("bandwidth_gbs") and not dev.rehearsal:
                row[label]["fraction_of_bandwidth"] = row[label]["gbs"] / facts["bandwidth_gbs"]
                row[label]["fraction_of_copy"] = row[label]["gbs"] / rec["copy_gbs"]
        rec["records"].append(row)
        ctx.save("stream", rec)
        arrays = calls = None  # free the device memory before the next R
    rec["status"] = "measured" if "stopped" not in rec else "partial"
    rec["summary"] = [f"device copy {rec['copy_gbs']:.4g} GB/s; nominal {facts.get('bandwidth_gbs') or 0:.4g} GB/s"]
    for r in rec["records"]:
        f = r["fused"]
        rec["summary"].append(f"x*y+z R={r['R']}: fused {f['gbs']:.4g} GB/s ({f.get('fraction_of_bandwidth', 0):.2f} "
                              f"of nominal), op by op {r['op_by_op']['gbs']:.4g} GB/s"
                              + (" (rehearsal: CPU timings)" if dev.rehearsal else ""))
    ctx.save("stream", rec)


# ---------------------------------------------------------------------------------------------
# model (second): the instruction model's bound beside the measured Mop/s, per cell


#: Seconds the model part may spend measuring (cells in order of value until their estimates fill it).
MODEL_CAP_S = 45.0
#: Expansions per launch of a library kernel (operands drawn for 2^16 and tiled) and repeats.
MODEL_STREAM_COUNT = 1 << 22
MODEL_DRAWN = 1 << 16
MODEL_REPEATS = 5


@functools.cache
def model_cells() -> tuple:
    """The modeled cells of the committed model, in order of value: the instances the library launches
    (renormalizing, group kernels) in float64, the paper's benchmark kernels (Tables I and III), the R =
    2 double-word kernels, then float32, the raw kernels, the baselines."""
    if not MODEL_JSON.exists():
        return ()
    recs = [r for r in json.loads(MODEL_JSON.read_text())["records"] if "bound" in r]

    def rank(r):
        lib = r["source"] == "library"
        return (r["dtype"] != "float64", not (lib and r.get("renormalize")), not (r["source"] == "bench"
                and r.get("mapping") == "group"), not r.get("double_word"), r["mapping"] == "thread", r["R"])

    return tuple(sorted(recs, key=rank))


#: The operand generation rate the model part's plan assumes (seconds per term, about what
#: ``--measure-cpu`` measured here: 3.4e-7; the estimate uses the measured one): a constant, so that the
#: cells chosen, and the kernels compiled, do not move with a remeasurement.
PLAN_SECONDS_PER_TERM = 3.5e-7


def cell_cost(cell, budget) -> float:
    """Estimated seconds to measure one cell (operands, transfers, launches at the bound); ``budget``
    None: the plan's fixed operand rate."""
    per_term = PLAN_SECONDS_PER_TERM if budget is None else cpu_figure(budget, "random_terms_seconds_per_term", 1e-7)
    R = cell["R"]
    if cell["source"] == "library":
        item = 8 if cell["dtype"] == "float64" else 4
        return (2 * MODEL_DRAWN * R * per_term + 3 * MODEL_STREAM_COUNT * R * item / TRANSFER_BPS
                + device_seconds(cell["kernel"], MODEL_STREAM_COUNT * (MODEL_REPEATS + 2)) + 0.2)
    shapes = bench_shapes()
    W = cell["W"] or 1
    counts = [b * t // W for b, t in shapes]
    return (2 * max(counts) * R * per_term + sum(3 * c * R * 8 / TRANSFER_BPS for c in counts)
            + sum(device_seconds(cell["kernel"], c * 4 * 5) for c in counts) + len(counts) * 5 * LAUNCH_S)


@functools.cache
def model_plan() -> tuple[tuple, tuple]:
    """(cells measured in the second stage, the rest for the third): in order of value while the sum
    of their planned costs stays within :data:`MODEL_CAP_S`."""
    taken, rest, spent = [], [], 0.0
    for c in model_cells():
        cost = cell_cost(c, None)
        if not rest and spent + cost <= MODEL_CAP_S:
            taken.append(c)
            spent += cost
        else:
            rest.append(c)
    return tuple(taken), tuple(rest)


def _cell_unit(cell) -> Unit:
    return Unit("kernels" if cell["source"] == "library" else "bench", (cell["kernel"],))


def _units_model():
    return [_cell_unit(c) for c in model_plan()[0]]


def _estimate_model(budget):
    taken, rest = model_plan()
    cost = sum(cell_cost(c, budget) for c in taken)
    return {"seconds": round(process_start(budget) + CUDA_INIT_S + cost, 1), "cpu": None, "device": round(cost, 1),
            "detail": f"{len(taken)} of {len(model_cells())} modeled cells in order of value (cap {MODEL_CAP_S:g} s); "
                      f"the other {len(rest)} in the third stage"}


def measure_cell(dev, cell, scale: float = 1.0) -> dict:
    """The measured Mop/s of one model cell: a library kernel streaming (its launcher, 2^22
    expansions), or a benchmark kernel's best case (bench.gpu / dw_gpu / baselines_gpu, quick)."""
    if cell["source"] == "bench":
        if cell.get("double_word"):
            return dw_gpu.measure(cell["algorithm"], cell["dtype"], quick=True)
        if cell["mapping"] == "group":
            return gpu.measure(cell["operation"], cell["algorithm"], cell["R"], "best", cell["dtype"], quick=True)
        return baselines_gpu.measure(cell["operation"], cell["algorithm"], cell["R"], "best", cell["dtype"], quick=True)
    R, dtype, op = cell["R"], cell["dtype"], cell["op"]
    info = build.OPERATIONS[op]
    count = max(1024, int(MODEL_STREAM_COUNT * scale))
    drawn = min(count, max(1024, int(MODEL_DRAWN * scale)))
    ops = []
    for k in range(info.operands):
        t = random_terms((drawn,), R, dtype, seed=k + 1, min_exponent=-450 if dtype == "float64" else None)
        t = np.tile(t, (-(-count // drawn), 1))[:count]
        ops.append(dev.to_device(np.ascontiguousarray(t.T) if info.layout == "soa" else t))
    f = dev.launcher(op)
    args = list(ops)
    if not (info.mapping == "term" or (info.mapping == "thread" and info.terms)):
        args.append(R)
    kw = {"renormalize": True} if cell.get("renormalize") and not dev.rehearsal else {}
    with np.errstate(all="ignore"):
        secs = dev.time(lambda: f(*args, **kw), MODEL_REPEATS)
    t = statistics.median(secs)
    return {"mops": count / t / 1e6, "seconds": secs, "expansions": count}


@part(PARTS, "model", "second",
      "the instruction model's bound (bench/results/model_sm90.json) beside the measured Mop/s "
      "per cell, in order of value within its cap; the rest in the third stage", units=_units_model,
      estimate=_estimate_model)
def run_model(ctx: Context, cells=None):
    dev = ctx.device
    cells = model_plan()[0] if cells is None else cells
    rec = {"part": "model", "device": dev.label, "status": "partial", "cells": []}
    device_name = dev.facts()["name"]
    col = "H200" if "H200" in device_name else MODEL_DEVICE
    full = {r["kernel"]: r for r in json.loads(MODEL_JSON.read_text())["records"]} if MODEL_JSON.exists() else {}
    for k, cell in enumerate(cells):
        if ctx.left() < RESERVE_S:
            rec["stopped"] = f"deadline: {len(cells) - k} cells not measured"
            break
        row = {"kernel": cell["kernel"], "dtype": cell["dtype"], "R": cell["R"], "source": cell["source"],
               "bound_mops": full.get(cell["kernel"], cell)["bound"][col]["mops"], "model_device": col,
               "binding": full.get(cell["kernel"], cell)["bound"][col]["binding"]}
        try:
            m = measure_cell(dev, cell, ctx.scale)
            row["measured_mops"] = m.get("mops")
            row["raw"] = {k2: v for k2, v in m.items() if k2 != "shapes"}
            if row["measured_mops"]:
                row["measured_over_bound"] = row["measured_mops"] / row["bound_mops"]
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rec["cells"].append(row)
        if k % 8 == 7:
            ctx.save("model", rec)
    rec["status"] = "measured" if "stopped" not in rec else "partial"
    ratios = [r["measured_over_bound"] for r in rec["cells"] if r.get("measured_over_bound")]
    rec["summary"] = [f"{len(rec['cells'])} cells, {len(ratios)} measured" + (
        f": measured / bound median {statistics.median(ratios):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f}"
        if ratios else "")]
    over = [r for r in rec["cells"] if (r.get("measured_over_bound") or 0) > 1.0]
    rec["summary"] += [f"ABOVE THE BOUND: {r['kernel']} {r['measured_over_bound']:.2f}" for r in over[:5]]
    ctx.save("model", rec)


def _estimate_model_rest(budget):
    taken, rest = model_plan()
    cost = sum(cell_cost(c, budget) for c in rest)
    return {"seconds": round(process_start(budget) + CUDA_INIT_S + cost, 1), "cpu": None, "device": round(cost, 1),
            "detail": f"the {len(rest)} model cells the second stage leaves"}


@part(PARTS, "model_rest", "third", "the model cells the second stage's cap leaves, in order of value",
      units=lambda: [_cell_unit(c) for c in model_plan()[1]], estimate=_estimate_model_rest)
def run_model_rest(ctx: Context):
    run_model(ctx, model_plan()[1])
    path = ctx.out / "model.json"
    if path.exists():
        os.replace(path, ctx.out / "model_rest.json")


# ---------------------------------------------------------------------------------------------
# characterize (second): seed 004's chapter 3


def _units_characterize():
    return [Unit("seed004", (b,)) for b in ("standard", "fast", "library")]


def _estimate_characterize(budget):
    return {"seconds": round(process_start(budget) + CUDA_INIT_S + 20.0, 1), "cpu": None, "device": 20.0,
            "detail": "about 130 short launches (one warp for the latencies, 8 blocks per SM for the throughputs), "
                      "20 s assumed"}


@part(PARTS, "characterize", "second", "seed 004's characterization (paper_repro.seed004_gpu, quick): latencies and "
      "throughputs of the FP32/FP64 operations and of the library's, Tables IV, V, IX beside the thesis",
      units=_units_characterize, estimate=_estimate_characterize)
def run_characterize(ctx: Context):
    rec = {"part": "characterize", "device": ctx.device.label, "status": "partial"}
    ctx.save("characterize", rec)
    res = seed004_gpu.measure(quick=True)
    rec.update(status="measured", result=res)
    if "library" in res:
        rec["markdown"] = seed004_gpu.markdown(res)
        lib = [r for r in res["library"] if r["op"] in ("add", "mul") and r["R"] == 2]
        rec["summary"] = [f"{r['dtype']} {r['algorithm']}: latency {r['latency_cycles']:.3g} cycles, "
                          f"{r['per_second_events'] / 1e9:.3g} Gop/s" for r in lib]
    else:
        rec["summary"] = [res.get("note") or res.get("skipped") or "no result"]
    ctx.save("characterize", rec)

