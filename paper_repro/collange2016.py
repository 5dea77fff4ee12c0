"""Tables I-IV of Collange, Joldes, Muller, Popescu, "Parallel floating-point expansions for
extended-precision GPU computations", ASAP 2016 (seed 001): Mop/s of the parallel safe and fast
additions and the truncated multiplication, against the sequential CAMPARY-style and QD-style
algorithms, for R = 2, 4, 8, 16, 32 float64 terms.

On a GPU the figures are measured by the benchmark harness (:mod:`bench.gpu`: CUDA events, warm-up,
median of repeats) in the paper's two scenarios (best case, operands in registers; memory-constrained,
256 bytes of shared memory per term).  Without a GPU the same algorithms are timed on the CPU (their
NumPy twins, vectorized over many expansions): those rows say "cpu" and only the best-case tables
(I and III) have CPU figures, since the shared-memory scenario has no CPU meaning.  The paper's K40
figures come from ``anchors/collange2016_tables.csv``.
"""

from __future__ import annotations

import csv
import json
import statistics
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from bench import baselines_gpu, gpu
from expansions.baselines import cpu as base
from expansions.cpu import kernels as K
from expansions.generate import random_terms

ANCHORS = Path(__file__).resolve().parent / "anchors"
RS = (2, 4, 8, 16, 32)
TABLES = {"I": ("add", "best"), "II": ("add", "shmem256"), "III": ("mul", "best"), "IV": ("mul", "shmem256")}
ALGORITHMS = {"add": ("safe", "fast", "campary", "qd"), "mul": ("parallel", "campary", "qd")}
LABELS = {
    "safe": "Safe (Alg. 1)",
    "fast": "Fast (Fig. 5)",
    "parallel": "Algorithm 2",
    "campary": "CAMPARY-style",
    "qd": "QD-style",
}


def paper_figures() -> dict:
    """{(table, R, algorithm): Mop/s on the K40} from the anchors CSV."""
    out = {}
    with open(ANCHORS / "collange2016_tables.csv") as f:
        rows = [r for r in f if not r.startswith("#")]
    for r in csv.DictReader(rows):
        out[(r["table"], int(r["R"]), r["algorithm"])] = float(r["mops"])
    return out


def cpu_function(op: str, algorithm: str, R: int):
    """The CPU twin that computes (op, algorithm) at R terms, as f(x, y) on (N, R) arrays, or None."""
    if op == "add" and algorithm == "safe":
        return lambda x, y: K.add_safe(x, y, R)
    if op == "add" and algorithm == "fast":
        return lambda x, y: K.add_fast(x, y, R)
    if op == "mul" and algorithm == "parallel":
        return lambda x, y: K.mul_truncated(x, y, R)
    if algorithm == "campary":
        f = base.certified_add if op == "add" else base.certified_mul
        return lambda x, y: f(x, y, R)
    if algorithm == "qd":
        name = {("add", 2): "dd_add_ieee", ("add", 4): "qd_add_ieee", ("mul", 2): "dd_mul", ("mul", 4): "qd_mul"}
        fn = getattr(base, name.get((op, R), ""), None)
        return None if fn is None else (lambda x, y: fn(x, y))
    return None


def time_cpu(f, x, y, repeats: int) -> list[float]:
    """Seconds per call of f(x, y): one warm-up call, then ``repeats`` timed calls."""
    with np.errstate(all="ignore"):
        f(x, y)
        out = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            f(x, y)
            out.append(time.perf_counter() - t0)
    return out


def measure(quick: bool, backend: str, progress: bool = True) -> list[dict]:
    """One record per (table, R, algorithm): our Mop/s (or None where not measured), the paper's,
    the ratio, and the raw timings."""
    paper = paper_figures()
    jobs = [(t, R, a) for t, (op, _) in TABLES.items() for R in RS for a in ALGORITHMS[op]]
    records = []
    on_gpu = backend == "cuda"
    N = 4096 if quick else 16384
    repeats = 3 if quick else 5
    for table, R, alg in tqdm(jobs, disable=not progress, leave=False, desc="Tables I-IV"):
        op, scenario = TABLES[table]
        rec = {"table": table, "operation": op, "scenario": scenario, "R": R, "algorithm": alg,
               "paper_mops_k40": paper.get((table, R, alg)), "device": backend}
        if on_gpu:
            harness = gpu if (op, alg) in gpu.OPS else baselines_gpu
            rec.update(harness.measure(op, alg, R, scenario, quick=quick))
        elif scenario == "best":
            f = cpu_function(op, alg, R)
            if f is None:
                rec["note"] = "not available at this R"
            else:
                x = random_terms((N,), R, "float64", seed=R)
                y = random_terms((N,), R, "float64", seed=R + 1)
                secs = time_cpu(f, x, y, repeats)
                rec.update(expansions=N, seconds=secs, mops=N / statistics.median(secs) / 1e6)
        else:
            rec["note"] = "GPU scenario (shared memory per term): not measured on the CPU"
        if rec.get("mops") and rec["paper_mops_k40"]:
            rec["ratio_to_k40"] = rec["mops"] / rec["paper_mops_k40"]
        records.append(rec)
    return records


def measure_stream(quick: bool, progress: bool = True) -> list[dict]:
    """GPU only: the library's kernels streaming (load two arrays, one operation, store), GB/s."""
    jobs = [(op, a, R) for (op, a) in gpu.OPS for R in RS]
    out = []
    for op, a, R in tqdm(jobs, disable=not progress, leave=False, desc="streaming"):
        out.append({"operation": op, "algorithm": a, "R": R, "scenario": "stream"}
                   | gpu.measure(op, a, R, "stream", quick=quick))
    return out


def aims(records: list[dict], stream: list[dict]) -> list[dict]:
    """The benchmark aims on an H100/H200, each with what was measured and whether it is met:
    best case >= 25x the K40 figure for every (algorithm, R); in the memory-constrained scenario the
    parallel algorithms beat the sequential baselines for R >= 8 by more than the paper's ratios;
    streaming kernels at >= 80% of the memory bandwidth for R <= 8."""
    out = []
    for r in records:
        if r["scenario"] == "best" and r.get("mops") and r["paper_mops_k40"]:
            ratio = r["mops"] / r["paper_mops_k40"]
            out.append({"aim": f"Table {r['table']} {r['algorithm']} R={r['R']}: >= 25x K40",
                        "measured": f"{ratio:.1f}x", "met": ratio >= 25})
    by = {(r["table"], r["R"], r["algorithm"]): r for r in records}
    for table, par in (("II", ("safe", "fast")), ("IV", ("parallel",))):
        for R in (8, 16, 32):
            seq = by.get((table, R, "campary"))
            for a in par:
                p = by.get((table, R, a))
                if not (p and seq and p.get("mops") and seq.get("mops") and p["paper_mops_k40"]
                        and seq["paper_mops_k40"]):
                    continue
                ours, theirs = p["mops"] / seq["mops"], p["paper_mops_k40"] / seq["paper_mops_k40"]
                out.append({"aim": f"Table {table} R={R}: {a} / CAMPARY-style > paper's {theirs:.2f}",
                            "measured": f"{ours:.2f}", "met": ours > theirs})
    for r in stream:
        if r["R"] <= 8 and r.get("fraction_of_bandwidth") is not None:
            frac = r["fraction_of_bandwidth"]
            out.append({"aim": f"streaming {r['operation']} {r['algorithm']} R={r['R']}: >= 80% of bandwidth",
                        "measured": f"{100 * frac:.0f}%", "met": frac >= 0.8})
    return out


MODEL_JSON = Path(__file__).resolve().parents[1] / "bench" / "results" / "model_sm90.json"
MODEL_DEVICE = "H100 SXM"


def model_bounds() -> dict:
    """{(table, R, algorithm): the instruction model's bound in Mop/s on an H100 SXM} for the best-case
    tables (I and III, float64), read from the committed ``bench/results/model_sm90.json`` (written by
    ``python -m bench.model``; not recomputed here); empty when that file is absent."""
    if not MODEL_JSON.exists():
        return {}
    records = json.loads(MODEL_JSON.read_text())["records"]
    table = {"add": "I", "mul": "III"}
    return {(table[r["operation"]], r["R"], r["algorithm"]): r["bound"][MODEL_DEVICE]["mops"]
            for r in records if r["source"] == "bench" and r["dtype"] == "float64" and "bound" in r
            and r.get("operation") in table}


def _cell(v, digits=4):
    if v is None:
        return "—"
    return f"{v:.{digits}g}"


def markdown(records: list[dict], device_label: str) -> str:
    """The four tables in the paper's layout: for each algorithm, ours, the paper's K40, the ratio."""
    out = []
    titles = {
        "I": "Table I: addition, best case (no memory use), Mop/s",
        "II": "Table II: addition, memory-constrained (256 B shared memory per term), Mop/s",
        "III": "Table III: multiplication, best case, Mop/s",
        "IV": "Table IV: multiplication, memory-constrained, Mop/s",
    }
    bounds = model_bounds()
    for table, (op, _) in TABLES.items():
        algs = ALGORITHMS[op]
        with_model = bool(bounds) and table in ("I", "III")
        out += [f"### {titles[table]}", ""]
        head = ["R"]
        for a in algs:
            head += [f"{LABELS[a]} ({device_label})", f"{LABELS[a]} (K40, paper)", "ratio"]
            head += [f"{LABELS[a]} (model bound, {MODEL_DEVICE})"] if with_model else []
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for R in RS:
            row = [str(R)]
            for a in algs:
                rec = next(r for r in records if r["table"] == table and r["R"] == R and r["algorithm"] == a)
                row += [_cell(rec.get("mops")), _cell(rec["paper_mops_k40"]), _cell(rec.get("ratio_to_k40"), 3)]
                row += [_cell(bounds.get((table, R, a)))] if with_model else []
            out.append("| " + " | ".join(row) + " |")
        if with_model:
            out += ["", f"Model bound: bench/results/model_sm90.md (instruction model of the compiled kernel, "
                        f"{MODEL_DEVICE}; an upper bound, not a measurement)."]
        notes = sorted({r["note"] for r in records if r["table"] == table and r.get("note")})
        out += [""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(out)


def plot(records: list[dict], path: Path, device_label: str) -> Path | None:
    """Log-scale Mop/s against R, one panel per scenario; ours solid, the paper's K40 dashed."""
    try:
        import matplotlib  # optional dependency (the plot extra)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # optional dependency (the plot extra)
    except ImportError:
        return None
    scenarios = [s for s in ("best", "shmem256") if any(r["scenario"] == s and r.get("mops") for r in records)]
    scenarios = scenarios or ["best"]
    fig, axes = plt.subplots(1, len(scenarios), figsize=(6.5 * len(scenarios), 4.6), squeeze=False)
    for ax, sc in zip(axes[0], scenarios):
        for op in ("add", "mul"):
            for a in ALGORITHMS[op]:
                rs = [r for r in records if r["scenario"] == sc and r["operation"] == op and r["algorithm"] == a]
                ours = [(r["R"], r["mops"]) for r in rs if r.get("mops")]
                ref = [(r["R"], r["paper_mops_k40"]) for r in rs if r["paper_mops_k40"]]
                label = f"{op} {LABELS[a]}"
                if ours:
                    line = ax.plot(*zip(*ours), marker="o", label=f"{label} ({device_label})")[0]
                    color = line.get_color()
                else:
                    color = None
                if ref:
                    ax.plot(*zip(*ref), ls="--", marker="x", color=color, alpha=0.6, label=f"{label} (K40, paper)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(RS, [str(r) for r in RS])
        ax.set_xlabel("R (terms)")
        ax.set_ylabel("Mop/s")
        ax.set_title(f"{'best case' if sc == 'best' else '256 B shared memory per term'}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
