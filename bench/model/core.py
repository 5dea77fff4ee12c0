"""The model of each cell (a kernel, a dtype, an R): its steady state walked in its SASS (bench/sass.py)
with the votes of :mod:`bench.model.votes`, the warp instructions per operation by class, the bound
per device, the floor, and the R = 2 double-word cells' fields (:func:`model_cell`, :func:`run`)."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import numpy as np

from bench import baselines_gpu, dw_gpu, gpu, sass
from bench.model import votes as V
from expansions.cuda import build
from expansions.formats import group_width

ROOT = Path(__file__).resolve().parents[2]
RS = (2, 3, 4, 8, 16, 32)
DTYPES = ("float64", "float32")
ANCHORS = ROOT / "paper_repro" / "anchors" / "collange2016_tables.csv"

#: Per SM and clock, in warp instructions, on compute capability 9.0 (Hopper).  Issue: four warp
#: schedulers per SM, each dispatching one warp instruction per clock (NVIDIA H100 Tensor Core GPU
#: Architecture whitepaper, "H100 SM architecture": four processing blocks per SM, each with a warp
#: scheduler and dispatch unit of 32 threads/clock).  FP64: 64 results per clock per SM = 2 warp
#: instructions, FP32: 128 = 4, warp shuffle: 32 = 1 (CUDA C++ Programming Guide, "Arithmetic
#: Instructions", throughput table, column 9.0).  Votes, selects and integer instructions are
#: charged to the issue slots only.
RATES = {"issue": 4.0, "fp64": 2.0, "fp32": 4.0, "shfl": 1.0}

#: Devices.  H100 SXM5: 132 SMs, boost clock 1.98 GHz, 3.35 TB/s HBM3 (NVIDIA H100 Tensor Core GPU
#: datasheet; its FP64 34 TFLOPS = 132 SMs x 64 FMA x 2 flops x 1.98 GHz, and the whitepaper's table
#: of H100 SXM5 SMs).  H200 SXM: the same GH100 SM count and clocks (NVIDIA H200 Tensor Core GPU
#: datasheet: FP64 34 TFLOPS, as the H100 SXM), 4.8 TB/s HBM3e.
DEVICES = {
    "H100 SXM": {"sms": 132, "clock_hz": 1.98e9, "bandwidth_bytes_s": 3.35e12},
    "H200": {"sms": 132, "clock_hz": 1.98e9, "bandwidth_bytes_s": 4.8e12},
}

#: The issue's goal (issue 13, item 2): the bound at least this many times the paper's K40 figure.
GOAL_OVER_K40 = 25.0

#: At most this many warp-iterations are walked per cell (all of them when they have fewer
#: distinct vote sequences); the mean is over the sample, chosen with a fixed seed.
SAMPLE = 256
#: The Newton kernels' walks are long (every step's products, additions and renormalizations): fewer.
NEWTON_SAMPLE = 32


def _events(row) -> list:
    return [sass.END if c == V.Votes.END_CODE else bool(c) for c in row if c >= 0]


# ---------------------------------------------------------------------------------------------
# Cells.


def cells(rs=RS, dtypes=DTYPES) -> list[dict]:
    """Every (kernel, dtype, R) of the model: name expression, kind of steady loop, the operation
    its votes follow, lanes per expansion and expansions per warp-iteration."""
    out = []
    for dtype in dtypes:
        for R in rs:
            W = group_width(R)
            for op, info in build.OPERATIONS.items():
                if info.terms is not None and info.terms != R:
                    continue
                if info.table:  # the elementary functions: sequences of the operations modeled here, and
                    continue    # NVRTC needs minutes per function at large R (build.ELEMENTARY_R)
                # the renormalizing instance is what the library launches; the raw one (renormalize=False)
                # is the paper's kernel (the K40 column); the Newton kernels: the renormalizing one only
                flags = ((True,) if info.newton else (False, True)) if info.renormalizes else (False,)
                for flag in flags:
                    inst = build.instance(op, dtype, R, renormalize=flag)
                    per_warp = {"group": 32 // W, "thread": 32, "term": 32 / R}[info.mapping]
                    out.append({"kernel": inst.name_expression, "source": "library", "op": op, "dtype": dtype,
                                "R": R, "W": W if info.mapping == "group" else None, "mapping": info.mapping,
                                "layout": info.layout, "kind": "grid", "per_warp_iteration": per_warp,
                                "operands": info.operands, "renormalize": flag})
            for (opn, alg), functor in gpu.OPS.items():
                out.append({"kernel": gpu.name_expression("best", opn, alg, dtype, R), "source": "bench",
                            "op": functor, "operation": opn, "algorithm": alg, "dtype": dtype, "R": R, "W": W,
                            "mapping": "group", "kind": "best", "per_warp_iteration": 32 // W})
            if R == 2:  # the library's R = 2 methods: the double-word kernels, one thread per number
                for opn, name in dw_gpu.METHODS:
                    out.append({"kernel": dw_gpu.name_expression(name, dtype), "source": "bench",
                                "op": dw_gpu.dw_kernels.functor(name), "operation": opn, "algorithm": name,
                                "dtype": dtype, "R": R, "W": None, "mapping": "thread", "kind": "best",
                                "per_warp_iteration": 32 * dw_gpu.OPS_PER_ITERATION, "double_word": True,
                                "default": name == dw_gpu.R2_DEFAULTS[opn]})
            for key in ("campary", "qd"):
                for opn in ("add", "mul"):
                    if baselines_gpu.functor(opn, key, R) is None:
                        continue
                    out.append({"kernel": baselines_gpu.name_expression("best", opn, key, dtype, R),
                                "source": "bench", "op": baselines_gpu.functor(opn, key, R), "operation": opn,
                                "algorithm": key, "dtype": dtype, "R": R, "W": None, "mapping": "thread",
                                "kind": "best", "per_warp_iteration": 32})
    return out


def paper_figures() -> dict:
    """{(operation, algorithm, R): K40 Mop/s, best case} from the anchors CSV (Tables I and III)."""
    with open(ANCHORS) as f:
        rows = [r for r in f if not r.startswith("#")]
    return {(r["operation"], r["algorithm"], int(r["R"])): float(r["mops"])
            for r in csv.DictReader(rows) if r["scenario"] == "best"}


#: The paper's algorithm of each library operation (for the K40 column).
LIBRARY_PAPER = {"add_safe": ("add", "safe"), "sub_safe": ("add", "safe"), "add_fast": ("add", "fast"),
                 "sub_fast": ("add", "fast"), "mul_truncated": ("mul", "parallel")}


def bound(per_op: dict, bytes_per_op: float | None) -> dict:
    """{device: {"mops", "binding", "cycles"}} from the warp instructions per operation by class."""
    use = {"issue": sum(per_op.values()), "fp64": per_op["fp64"], "fp32": per_op["fp32"], "shfl": per_op["shfl"]}
    out = {}
    for dev, d in DEVICES.items():
        cycles = {r: use[r] / RATES[r] for r in RATES}  # SM clocks per operation and resource
        rates = {r: d["sms"] * d["clock_hz"] / c for r, c in cycles.items() if c > 0}
        if bytes_per_op:
            rates["memory"] = d["bandwidth_bytes_s"] / bytes_per_op
        binding = min(rates, key=rates.get)
        out[dev] = {"mops": float(rates[binding] / 1e6), "binding": binding}
    return out


def floor_per_op(cell: dict, floor: dict, per_op: dict) -> dict | None:
    """The floor of a cell, in warp instructions per operation by class (:data:`sass.CLASSES`): the
    algorithm's own floating-point operations, shuffles and votes and nothing else (design decision
    12).  Parallel kernels: counted while the twins run on the benchmark's inputs
    (:mod:`bench.model.votes`; the data-dependent loops charge their rounds as each warp runs them),
    per warp-iteration, divided by the expansions per warp-iteration; a float64 shuffle is two 32-bit
    SHFL instructions.  Sequential baselines (one thread per expansion, no collective): the
    floating-point instructions the compiler emitted (explicit intrinsics, nothing contracted or
    added), so their overhead is everything else.  None where the cell has no votes counted."""
    out = {c: 0.0 for c in sass.CLASSES}
    fp = "fp64" if cell["dtype"] == "float64" else "fp32"
    if cell["mapping"] == "thread":
        out["fp64"], out["fp32"] = per_op["fp64"], per_op["fp32"]
        return out
    if not floor.get("warp_iterations"):
        return None
    n = floor["warp_iterations"] * cell["per_warp_iteration"]
    out[fp] = floor["fp"] / n
    out["shfl"] = floor["shfl"] / n * (2 if cell["dtype"] == "float64" else 1)
    out["vote"] = floor["vote"] / n
    return out


#: The operations whose first counted loop is the multiplication's loop over y_i (R - 1 steps).
MUL_OPS = ("mul_truncated", "TruncMul")


def sample_size(cell: dict) -> int:
    """At most this many distinct vote sequences of the cell are walked."""
    return NEWTON_SAMPLE if cell["op"].startswith("newton_") else SAMPLE


def _walk(func, events, cell: dict, info: dict) -> list:
    """:func:`bench.sass.walk` of one warp-iteration; where the compiler hid the trip count of the
    multiplication's loop over y_i (its code holds no constant bound, e.g. with the renormalization
    inlined after it), that count is given: R - 1 steps (Algorithm 2, lines 3-17)."""
    try:
        return sass.walk(func, events, kind=cell["kind"], info=info)
    except sass.ModelError as exc:
        if cell["op"] not in MUL_OPS or "no constant trip count" not in str(exc):
            raise
        return sass.walk(func, events, counted=(cell["R"] - 1,), kind=cell["kind"], info=info)


def model_cell(cell: dict, func, figures: dict) -> dict:
    """The modeled record of one cell (``func``: its parsed SASS)."""
    rec = dict(cell)
    renorm = bool(cell.get("renormalize"))
    info: dict = {}
    floor: dict = {}
    try:
        if cell["op"] in V.TWINS:
            seqs = V.vote_sequences(cell["op"], cell["dtype"], cell["R"], cell["kind"] == "best", renorm, floor)
            uniq, picks, weights, summary = V.summary(seqs, sample_size(cell))
            walks = [(sass.counts(_walk(func, _events(uniq[p]), cell, info)), w) for p, w in zip(picks, weights)]
            total = sum(w for _, w in walks)
            per_iter = {c: sum(cnt[c] * w for cnt, w in walks) / total for c in sass.CLASSES}
            rec["votes"] = summary
        else:
            per_iter = sass.counts(sass.walk(func, kind=cell["kind"], info=info))
    except sass.ModelError as exc:
        rec["not_modeled"] = str(exc)
        return rec
    rec["per_lane_branches"] = info.get("per_lane_branches", 0)
    if cell.get("double_word"):
        rec["algorithm_ops"] = DW_OPS[cell["algorithm"]]
    G = cell["per_warp_iteration"]
    per_op = {c: float(v / G) for c, v in per_iter.items()}
    rec["per_warp_iteration"] = G
    rec["instructions_per_op"] = per_op
    rec["total_per_op"] = sum(per_op.values())
    item = np.dtype(cell["dtype"]).itemsize
    nbytes = None
    if cell["source"] == "library" and cell["mapping"] == "group":
        nbytes = (cell["operands"] + 1) * cell["R"] * item  # inputs read and output written, N = M = R
    rec["bytes_per_op"] = nbytes
    rec["bound"] = bound(per_op, nbytes)
    fl = floor_per_op(cell, floor, per_op)
    if fl is not None:
        rec["floor_per_op"] = fl
        rec["floor_total"] = sum(fl.values())
        rec["floor_bound"] = bound(fl, nbytes)
        rec["over_floor"] = rec["total_per_op"] / rec["floor_total"] if rec["floor_total"] else None
    key = (cell.get("operation"), cell.get("algorithm"), cell["R"]) if cell["source"] == "bench" else (
        *LIBRARY_PAPER.get(cell["op"] if not renorm else None, (None, None)), cell["R"])
    k40 = figures.get(key) if cell["dtype"] == "float64" else None
    rec["paper_k40_mops"] = k40
    if k40:
        rec["over_k40"] = {dev: b["mops"] / k40 for dev, b in rec["bound"].items()}
        if cell["source"] == "bench" and cell["mapping"] == "group":
            rec["meets_goal"] = bool(rec["over_k40"]["H100 SXM"] >= GOAL_OVER_K40)
    return r2_fields(rec) if cell.get("double_word") else rec


def _source_for(cell) -> str:
    return gpu._source() if cell["source"] == "bench" else build.source()


def run(rs=RS, dtypes=DTYPES, only: str | None = None, progress: bool = True) -> list[dict]:
    """Model every cell (or those whose kernel name contains ``only``): one NVRTC program per source,
    dtype and R."""
    todo = [c for c in cells(rs, dtypes) if not only or only in c["kernel"]]
    figures = paper_figures()
    records = []
    groups: dict = {}
    for c in todo:
        groups.setdefault((c["source"], c["dtype"], c["R"]), []).append(c)
    for (source, dtype, R), group in groups.items():
        t0 = time.perf_counter()
        names = [c["kernel"] for c in group]
        try:
            funcs = sass.sass(_source_for(group[0]), names)
        except RuntimeError:  # one kernel may not compile alone; compile one by one to say which
            funcs = {}
            for n in names:
                try:
                    funcs.update(sass.sass(_source_for(group[0]), [n]))
                except RuntimeError as exc:
                    funcs[n] = exc
        for c in group:
            f = funcs[c["kernel"]]
            records.append(dict(c, not_modeled=f"does not compile: {f}") if isinstance(f, Exception)
                           else model_cell(c, f, figures))
        if progress:
            print(f"{source} {dtype} R={R}: {len(group)} kernels in {time.perf_counter() - t0:.1f} s", flush=True)
    return records


#: The double-word algorithms' own operations per operation, counted by hand from dw.cuh (and its
#: twins in expansions/dw/cpu.py): ``fp`` additions, subtractions, products, FMAs and comparisons
#: (2Sum 6, Fast2Sum 3, 2Prod 2 with the FMA; a negation is an operand modifier, free), ``div`` and
#: ``sqrt`` the IEEE divisions and square roots, each compiled to a sequence of instructions with a
#: slow path for special operands (the walk keeps the fast path: the cells are marked †).
DW_OPS = {
    "dw_add_accurate": {"fp": 20, "div": 0, "sqrt": 0},  # 2Sum, 2Sum, +, Fast2Sum, +, Fast2Sum
    "dw_add_sloppy": {"fp": 11, "div": 0, "sqrt": 0},  # 2Sum, +, +, Fast2Sum
    "qd_add_ieee": {"fp": 20, "div": 0, "sqrt": 0},  # 2Sum, 2Sum, +, Fast2Sum, +, Fast2Sum
    "qd_add_sloppy": {"fp": 11, "div": 0, "sqrt": 0},  # 2Sum, + (two), Fast2Sum
    "dg_add22": {"fp": 16, "div": 0, "sqrt": 0},  # +, two branches of 4, |a| >= |b|, Add12 (6)
    "dw_times_dw1": {"fp": 9, "div": 0, "sqrt": 0},  # 2Prod, x, x, +, +, Fast2Sum
    "dw_times_dw2": {"fp": 8, "div": 0, "sqrt": 0},  # 2Prod, x, FMA, +, Fast2Sum
    "dw_times_dw3": {"fp": 9, "div": 0, "sqrt": 0},  # 2Prod, x, FMA, FMA, +, Fast2Sum
    "dg_mul22": {"fp": 27, "div": 0, "sqrt": 0},  # Mul12 (x, two splits of 4, 3 x 2, 2), x, x, +, +, Add12
    "ww_mul": {"fp": 8, "div": 0, "sqrt": 0},  # 2Prod, 3 FMA, Fast2Sum
    "dw_div_dw1": {"fp": 22, "div": 2, "sqrt": 0},  # /, DWTimesFP1 (10), 2Sum, -, +, +, /, Fast2Sum
    "dw_div_dw2": {"fp": 16, "div": 2, "sqrt": 0},  # /, DWTimesFP1 (10), -, -, +, /, Fast2Sum
    "dw_div_dw3": {"fp": 30, "div": 1, "sqrt": 0},  # 1/y, FMA, x, Fast2Sum, DWTimesFP3 (6), DWPlusFP (10), Alg. 12 (9)
    "ww_div": {"fp": 9, "div": 2, "sqrt": 0},  # /, 2Prod, -, -, +, FMA, /, Fast2Sum
    "dw_sqrt": {"fp": 7, "div": 1, "sqrt": 1},  # sqrt, FMA, +, x, /, Fast2Sum, x_h == 0
}

#: NVIDIA CCCL ``fpmp`` (CUDA 13.6 documentation, as quoted by issue 13): double-double throughput on a
#: B200, high-accuracy addition 816 G/s and multiplication 1552 G/s; scaled to an H100 SXM per SM and
#: clock, the issue's figures 0.73 and 1.4 Tops/s (taken from the issue, not recomputed here: this
#: repository holds no B200 clock).  Goal of issue 13, item 4: the model's bound on an H100 at least
#: 0.8 Tops/s (addition) and 1.5 Tops/s (multiplication).
FPMP = {"source": "NVIDIA CCCL fpmp documentation, CUDA 13.6 (figures quoted by issue 13)", "device": "B200",
        "b200_gops": {"add": 816.0, "mul": 1552.0}, "h100_equivalent_tops": {"add": 0.73, "mul": 1.4},
        "h100_equivalent_note": "the issue's scaling per SM and clock to an H100 SXM (132 SMs, 1.98 GHz)",
        "goal_h100_tops": {"add": 0.8, "mul": 1.5}}

def r2_fields(rec: dict) -> dict:
    """The JSON fields of a double-word cell for the section: the bound in Tops/s per device, the
    algorithm's own FP operations (the floor) and the counted FP instructions over it, and for the
    additions and multiplications the fpmp figure (H100 equivalent), the goal and whether it is met."""
    # per thread and operation: a thread cell's warp instructions per operation times the warp's 32 threads
    fpc = 32 * (rec["instructions_per_op"]["fp64"] + rec["instructions_per_op"]["fp32"])
    rec["bound_tops"] = {d: b["mops"] / 1e6 for d, b in rec["bound"].items()}
    rec["fp_per_op"] = fpc
    ops = rec.get("algorithm_ops") or {}
    rec["fp_over_algorithm"] = fpc / ops["fp"] if ops.get("fp") and not ops.get("div") and not ops.get("sqrt") else None
    opn = rec["operation"]
    if opn in FPMP["goal_h100_tops"] and rec["dtype"] == "float64":
        rec["fpmp_h100_tops"] = FPMP["h100_equivalent_tops"][opn]
        rec["goal_h100_tops"] = FPMP["goal_h100_tops"][opn]
        rec["meets_r2_goal"] = bool(rec["bound_tops"]["H100 SXM"] >= rec["goal_h100_tops"])
        rec["over_fpmp"] = rec["bound_tops"]["H100 SXM"] / rec["fpmp_h100_tops"]
    return rec


def add_measured(records: list[dict], path: Path) -> int:
    """Put the measured Mop/s of ``paper_repro``'s results.json (its ``collange2016`` records, best
    case, float64, a GPU run) beside the bound of the benchmark cells: ``measured_mops`` and
    ``measured_over_bound`` (against the bound of the device the run names, H200 or else H100 SXM).
    Returns the number of cells matched."""
    summary = json.loads(path.read_text())
    measured = {(r["operation"], r["algorithm"], r["R"]): (r["mops"], r.get("device"))
                for r in summary.get("collange2016", []) if r.get("scenario") == "best" and r.get("mops")}
    if summary.get("backend") != "cuda":
        return 0  # CPU timings of the twins: nothing to compare with a GPU bound
    device = str(summary.get("device_label", ""))
    dev = "H200" if "H200" in device else "H100 SXM"
    n = 0
    for r in records:
        key = (r.get("operation"), r.get("algorithm"), r["R"])
        if r["source"] == "bench" and r["dtype"] == "float64" and key in measured and "bound" in r:
            r["measured_mops"] = measured[key][0]
            r["measured_over_bound"] = measured[key][0] / r["bound"][dev]["mops"]
            r["measured_device"] = dev
            n += 1
    return n
