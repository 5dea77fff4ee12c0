"""Tables I-IV of Collange, Joldes, Muller, Popescu, "Parallel floating-point expansions for
extended-precision GPU computations", ASAP 2016 (seed 001): Mop/s of the parallel safe and fast
additions and the truncated multiplication, against the sequential CAMPARY-style and QD-style
algorithms, for R = 2, 4, 8, 16, 32 float64 terms.

On a GPU the figures are measured by the benchmark harness (:mod:`bench.gpu`: CUDA events, warm-up,
median of repeats) in the paper's two scenarios (best case, operands in registers; memory-constrained,
256 bytes of shared memory per term).  Without a GPU the same algorithms are timed on the CPU by the
CPU backend users get (:func:`expansions.backends.cpu_backend`: the compiled engine, on all cores,
with the engine's compiled baselines; the NumPy twins where numba is missing or
``EXPANSIONS_CPU=twins``), and, in separate columns, on the NumPy twins: the executable
specification, far slower, not what users run.  Every record names its backend.  Only the best-case
tables (I and III) have CPU figures, since the shared-memory scenario has no CPU meaning.  The
paper's K40 figures come from ``anchors/collange2016_tables.csv``.
"""

from __future__ import annotations

import csv
import importlib
import json
import statistics
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from bench import baselines_gpu, gpu
from expansions import backends
from expansions.baselines import cpu as base
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


#: The CPU timings' operands, per mode (quick / full): the default backend gets enough expansions for
#: CALL_SECONDS a call (so that its parallel loop's start-up is a small part of the time), as its
#: rate on DISTINCT expansions predicts, between DISTINCT and BACKEND_TERMS // R (the first DISTINCT
#: random expansions repeated); the NumPy twins (the specification) get TWIN_EXPANSIONS.
BACKEND_TERMS = {True: 2**20, False: 2**22}
CALL_SECONDS = {True: 0.02, False: 0.05}
TWIN_EXPANSIONS = {True: 4096, False: 16384}
REPEATS = {True: 3, False: 5}
#: Distinct random expansions in the default backend's operands (repeated up to their count).
DISTINCT = 4096
#: What the twins' columns are (the markdown's and the plot's label).
SPECIFICATION = "NumPy twins, the specification"


def _baselines_of(backend):
    """The module holding the baselines for ``backend``: the engine's compiled twins of them, or the
    NumPy twins (:mod:`expansions.baselines.cpu`)."""
    if backend.name == "engine":
        return importlib.import_module("expansions.engine.baselines")  # imports numba, loaded with the engine
    return base


def cpu_function(op: str, algorithm: str, R: int, backend=backends.cpu):
    """The function of ``backend`` (a :class:`expansions.backends.Backend` on the CPU: the twins by
    default) that computes (op, algorithm) at R terms, as f(x, y) on (N, R) arrays, or None."""
    if op == "add" and algorithm == "safe":
        return lambda x, y: backend.add_safe(x, y, R)
    if op == "add" and algorithm == "fast":
        return lambda x, y: backend.add_fast(x, y, R)
    if op == "mul" and algorithm == "parallel":
        return lambda x, y: backend.mul_truncated(x, y, R)
    module = _baselines_of(backend)
    if algorithm == "campary":
        f = module.certified_add if op == "add" else module.certified_mul
        return lambda x, y: f(x, y, R)
    if algorithm == "qd":
        name = {("add", 2): "dd_add_ieee", ("add", 4): "qd_add_ieee", ("mul", 2): "dd_mul", ("mul", 4): "qd_mul"}
        fn = getattr(module, name.get((op, R), ""), None)
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


def backend_label(backend) -> str:
    """What runs the CPU figures: the engine (with its thread count) or the twins."""
    if backend.name == "engine":
        import numba  # the engine's dependency, loaded with it

        return f"engine, {numba.get_num_threads()} threads"
    return SPECIFICATION


def _operands(R: int, count: int):
    """Two (count, R) float64 operands: :data:`DISTINCT` random expansions each, repeated."""
    x, y = (random_terms((min(count, DISTINCT),), R, "float64", seed=R + k) for k in (0, 1))
    reps = -(-count // len(x))
    return np.tile(x, (reps, 1))[:count].copy(), np.tile(y, (reps, 1))[:count].copy()


def _count(f, x, y, seconds: float) -> int:
    """Expansions of x and y for ``seconds`` a call of f, by the time of a call on the first
    :data:`DISTINCT` (which also compiles f where it is compiled on first use), within
    [DISTINCT, len(x)]."""
    with np.errstate(all="ignore"):
        f(x[:DISTINCT], y[:DISTINCT])
        t0 = time.perf_counter()
        f(x[:DISTINCT], y[:DISTINCT])
        t = time.perf_counter() - t0
    return int(min(len(x), max(DISTINCT, DISTINCT * seconds / max(t, 1e-9))))


def measure(quick: bool, backend: str, progress: bool = True) -> list[dict]:
    """One record per (table, R, algorithm): our Mop/s (or None where not measured) and where it comes
    from, the paper's, the ratio, and the raw timings; on the CPU also the twins' Mop/s
    (``spec_mops``; not measured when the CPU backend is the twins)."""
    paper = paper_figures()
    jobs = [(t, R, a) for t, (op, _) in TABLES.items() for R in RS for a in ALGORITHMS[op]]
    records = []
    on_gpu = backend == "cuda"
    repeats = REPEATS[quick]
    cpu = None if on_gpu else backends.cpu_backend()
    ours = "cuda" if on_gpu else ("engine" if cpu.name == "engine" else "twins")
    label = "cuda" if on_gpu else backend_label(cpu)
    operands = {}
    for table, R, alg in tqdm(jobs, disable=not progress, leave=False, desc="Tables I-IV"):
        op, scenario = TABLES[table]
        rec = {"table": table, "operation": op, "scenario": scenario, "R": R, "algorithm": alg,
               "paper_mops_k40": paper.get((table, R, alg)), "device": backend,
               "backend": ours, "backend_label": label}
        if on_gpu:
            harness = gpu if (op, alg) in gpu.OPS else baselines_gpu
            rec.update(harness.measure(op, alg, R, scenario, quick=quick))
        elif scenario == "best":
            f = cpu_function(op, alg, R, cpu)
            if f is None:
                rec["note"] = "not available at this R"
            else:
                if R not in operands:
                    operands[R] = _operands(R, BACKEND_TERMS[quick] // R)
                x, y = operands[R]
                count = _count(f, x, y, CALL_SECONDS[quick])
                x, y = x[:count], y[:count]
                secs = time_cpu(f, x, y, repeats)
                rec.update(expansions=len(x), seconds=secs, mops=len(x) / statistics.median(secs) / 1e6)
                if ours == "engine":
                    n = TWIN_EXPANSIONS[quick]
                    secs = time_cpu(cpu_function(op, alg, R), x[:n], y[:n], repeats)
                    rec.update(spec_backend="twins", spec_expansions=n, spec_seconds=secs,
                               spec_mops=n / statistics.median(secs) / 1e6)
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


def _ours(records: list[dict], device_label: str) -> str:
    """The label of our figures: the device, and on the CPU the backend that ran them."""
    labels = sorted({r["backend_label"] for r in records if r.get("mops") and r.get("backend_label")})
    return f"{device_label}, {labels[0]}" if len(labels) == 1 and labels[0] != "cuda" else device_label


def markdown(records: list[dict], device_label: str) -> str:
    """The four tables in the paper's layout: for each algorithm, ours, the paper's K40, the ratio (and
    the model's bound for the best case); on the CPU, the twins' figures in columns of their own."""
    out = []
    titles = {
        "I": "Table I: addition, best case (no memory use), Mop/s",
        "II": "Table II: addition, memory-constrained (256 B shared memory per term), Mop/s",
        "III": "Table III: multiplication, best case, Mop/s",
        "IV": "Table IV: multiplication, memory-constrained, Mop/s",
    }
    bounds = model_bounds()
    ours = _ours(records, device_label)
    for table, (op, _) in TABLES.items():
        algs = ALGORITHMS[op]
        rows = {(r["R"], r["algorithm"]): r for r in records if r["table"] == table}
        with_model = bool(bounds) and table in ("I", "III")
        with_spec = any(r.get("spec_mops") for r in rows.values())
        out += [f"### {titles[table]}", ""]
        head = ["R"]
        for a in algs:
            head += [f"{LABELS[a]} ({ours})", f"{LABELS[a]} (K40, paper)", "ratio"]
            head += [f"{LABELS[a]} (model bound, {MODEL_DEVICE})"] if with_model else []
        head += [f"{LABELS[a]} ({SPECIFICATION})" for a in algs] if with_spec else []
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for R in RS:
            row = [str(R)]
            for a in algs:
                rec = rows[(R, a)]
                row += [_cell(rec.get("mops")), _cell(rec["paper_mops_k40"]), _cell(rec.get("ratio_to_k40"), 3)]
                row += [_cell(bounds.get((table, R, a)))] if with_model else []
            row += [_cell(rows[(R, a)].get("spec_mops")) for a in algs] if with_spec else []
            out.append("| " + " | ".join(row) + " |")
        if with_model:
            out += ["", f"Model bound: bench/results/model_sm90.md (instruction model of the compiled kernel, "
                        f"{MODEL_DEVICE}; an upper bound, not a measurement)."]
        if with_spec:
            out += ["", f"Ours ({ours}): the default CPU backend, `expansions.backends.cpu_backend()`, what users "
                        f"run; ({SPECIFICATION}): the same algorithms on the NumPy twins, the executable "
                        "specification (same bits, not meant to be fast), for reference only."]
        notes = sorted({r["note"] for r in rows.values() if r.get("note")})
        out += [""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(out)


#: The plot's colours, one per algorithm (the same in every panel), and line styles, one per source.
COLORS = {"safe": "tab:blue", "fast": "tab:orange", "parallel": "tab:blue", "campary": "tab:green", "qd": "tab:red"}
STYLES = {
    "ours": {"ls": "-", "marker": "o", "lw": 2.0},
    "k40": {"ls": "--", "marker": "x", "lw": 1.2},
    "model": {"ls": ":", "marker": "^", "lw": 1.2, "markersize": 4},
    "spec": {"ls": "-.", "marker": ".", "lw": 0.8, "alpha": 0.6},
}


def plot(records: list[dict], path: Path, device_label: str) -> Path | None:
    """Mop/s against R in four panels (addition and multiplication; best case and memory-constrained),
    both axes logarithmic: one colour per algorithm, one line style per source (ours, the paper's K40,
    the model's bound, the twins)."""
    try:
        import matplotlib  # optional dependency (the plot extra)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # optional dependency (the plot extra)
        from matplotlib.lines import Line2D  # optional dependency (the plot extra)
    except ImportError:
        return None
    bounds = model_bounds()
    ours = _ours(records, device_label)
    sources = {"ours": ours, "k40": "Tesla K40 (paper)", "model": f"model bound ({MODEL_DEVICE})",
               "spec": SPECIFICATION}
    used = set()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5), sharex=True)
    for row, op in enumerate(("add", "mul")):
        for col, (table, scenario) in enumerate((t, sc) for t, (o, sc) in TABLES.items() if o == op):
            ax = axes[row][col]
            for a in ALGORITHMS[op]:
                rs = sorted((r for r in records if r["table"] == table and r["algorithm"] == a), key=lambda r: r["R"])
                lines = {"ours": [(r["R"], r.get("mops")) for r in rs],
                         "k40": [(r["R"], r["paper_mops_k40"]) for r in rs],
                         "model": [(r["R"], bounds.get((table, r["R"], a))) for r in rs],
                         "spec": [(r["R"], r.get("spec_mops")) for r in rs]}
                for source, points in lines.items():
                    points = [(R, v) for R, v in points if v]
                    if points:
                        ax.plot(*zip(*points), color=COLORS[a], **STYLES[source])
                        used.add(source)
            if not any(r.get("mops") for r in records if r["table"] == table):
                ax.text(0.5, 0.04, "not measured here (a GPU scenario)", transform=ax.transAxes, ha="center",
                        fontsize=9, color="0.35")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(RS, [str(r) for r in RS])
            ax.set_title(f"Table {table}: {'addition' if op == 'add' else 'multiplication'}, "
                         f"{'best case' if scenario == 'best' else '256 B shared memory per term'}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            ax.set_ylabel("Mop/s")
            ax.legend(handles=[Line2D([], [], color=COLORS[a], lw=2, label=LABELS[a]) for a in ALGORITHMS[op]],
                      fontsize=8, loc="upper right")
    for ax in axes[1]:
        ax.set_xlabel("R (terms)")
    fig.legend(handles=[Line2D([], [], color="0.2", label=sources[s], **STYLES[s]) for s in STYLES if s in used],
               loc="lower center", ncol=4, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
