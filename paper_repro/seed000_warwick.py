"""Warwick, "The analysis of using extended-precision with single-precision floats for near
double-precision values", Bath 2020 (seed 000): Table 1 (ulp statistics of float-float ``+ - * /``
against FP64) and the Leibniz series for pi (Table 3's test; the speed-up itself is a GPU figure).

The float-float ("EP") operations are Warwick's: addition = QD's IEEE addition (his Algorithm 6,
our ``qd_add_ieee``), subtraction = the same with TwoDiff (his Algorithm 7; equal to adding the
negation, up to the sign of a zero low word), multiplication = his Algorithm 8 (``ww_mul``), division
= his Algorithm 9 (``ww_div``), all on float32 words through the NumPy twins of :mod:`expansions.dw.cpu`.
Inputs as in the paper: uniform FP64 values in [-1e6, 1e6] (1,024,000 pairs; fewer in quick mode),
converted by FP64ToEP (``hi = float32(x)``, ``lo = float32(x - hi)``); the EP result is converted back
as ``float64(hi) + float64(lo)`` and compared with the FP64 result of the FP64 inputs, in FP64 ulps
(the distance between the two doubles in units in the last place, i.e. the difference of their
ordered bit patterns).

Leibniz: ``4 * sum_{k < 2000} (-1)**k / (2k + 1)``, each term an EP division ``EP(1) / EP(2k + 1)``
added or subtracted into an EP accumulator, as the paper's CUDA code did, against the same loop in
FP64 (the paper: "the EP number having an ULP error of 5 from the FP64 estimation").  The exact
partial sum (rationals) is reported too.
"""

from __future__ import annotations

import csv
import math
import re
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from expansions.cuda import dw_kernels
from expansions.dw import cpu

from .timing import gpu_available, median_seconds

ANCHORS = Path(__file__).resolve().parent / "anchors" / "warwick2020_tables.csv"
OPS = ("add", "sub", "mul", "div")
STATS = ("mean", "median", "max", "min", "sd")
N_PAPER = 1_024_000
LEIBNIZ_TERMS = 2000


def paper_figures() -> dict:
    """Table 1 ({stat: {op: value}}), Table 3 ({gpu: speedup}) and the Leibniz ulp figure."""
    with open(ANCHORS) as f:
        text = f.read()
    rows = list(csv.reader(line for line in text.splitlines() if line and not line.startswith("#")))
    t1, t3 = {}, {}
    for r in rows:
        if r[0] == "1":
            t1[r[1]] = dict(zip(OPS, (float(v) for v in r[2:6])))
        elif r[0] == "3":
            t3[r[1]] = float(r[2])
    m = re.search(r"EP result was (\d+) FP64 ulps", text)
    return {"table1": t1, "table3": t3, "leibniz_ulps": int(m.group(1)) if m else None}


def fp64_to_ep(x):
    """FP64ToEP (Warwick's Algorithm 1): ``hi = float32(x)``, ``lo = float32(x - hi)``."""
    hi = x.astype(np.float32)
    lo = (x - hi.astype(np.float64)).astype(np.float32)
    return hi, lo


def ep_to_fp64(hi, lo):
    return hi.astype(np.float64) + lo.astype(np.float64)


def ep_op(op, a, b):
    """One of Warwick's EP operations on (hi, lo) pairs of float32 arrays."""
    with np.errstate(all="ignore"):
        if op == "add":
            return cpu.qd_add_ieee(a[0], a[1], b[0], b[1])
        if op == "sub":
            return cpu.qd_add_ieee(a[0], a[1], -b[0], -b[1])
        if op == "mul":
            return cpu.ww_mul(a[0], a[1], b[0], b[1])
        return cpu.ww_div(a[0], a[1], b[0], b[1])


def ulp_distance(x, y):
    """|x - y| in FP64 ulps: the difference of the doubles' positions in the ordered set of doubles."""
    def ordinal(v):
        i = np.ascontiguousarray(v, dtype=np.float64).view(np.int64)
        return np.where(i < 0, np.int64(-(2**63)) - i, i)

    return np.abs(ordinal(x) - ordinal(y)).astype(np.float64)


def table1(n, rng):
    a = rng.uniform(-1e6, 1e6, size=n)
    b = rng.uniform(-1e6, 1e6, size=n)
    A, B = fp64_to_ep(a), fp64_to_ep(b)
    control = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}
    out = {}
    for op in OPS:
        got = ep_to_fp64(*ep_op(op, A, B))
        d = ulp_distance(got, control[op])
        out[op] = {"mean": float(d.mean()), "median": float(np.median(d)), "max": float(d.max()),
                   "min": float(d.min()), "sd": float(d.std())}
    return out


def leibniz(terms=LEIBNIZ_TERMS):
    """(EP result as a double, FP64 result, exact partial sum as a double)."""
    acc64 = 0.0
    acc = (np.zeros(1, np.float32), np.zeros(1, np.float32))
    one = (np.ones(1, np.float32), np.zeros(1, np.float32))
    exact = Fraction(0)
    for k in range(terms):
        d = float(2 * k + 1)
        term = ep_op("div", one, fp64_to_ep(np.array([d])))
        acc = ep_op("add" if k % 2 == 0 else "sub", acc, term)
        acc64 = acc64 + 1.0 / d if k % 2 == 0 else acc64 - 1.0 / d
        exact += Fraction((-1) ** k, 2 * k + 1)
    four = (np.full(1, 4.0, np.float32), np.zeros(1, np.float32))
    ep = ep_to_fp64(*ep_op("mul", acc, four))[0]
    return float(ep), 4.0 * acc64, float(4 * exact)


def table2_speedup(quick: bool = True, device: str = "cpu", seed: int = 2020) -> dict:
    """Table 2: speed-up of the float-float operations over FP64 (``t_fp64 / t_ep``, > 1: EP faster)
    on arrays of uniform values in [-1e6, 1e6].  On the GPU: CuPy's FP64 operations against the
    kernels of ``expansions/cuda/dw.cuh`` (qd_add_ieee, the same on -y, ww_mul, ww_div); on the CPU:
    NumPy against the twins."""
    n = 2**18 if quick else 2**22
    rng = np.random.default_rng(seed)
    x64, y64 = rng.uniform(-1e6, 1e6, n), rng.uniform(-1e6, 1e6, n)
    a, b = fp64_to_ep(x64), fp64_to_ep(y64)
    fp64 = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
    if device == "cuda":
        import cupy as xp  # optional dependency: CuPy is needed only on the GPU path

        x64, y64 = xp.asarray(x64), xp.asarray(y64)
        pa = xp.asarray(np.stack(a, axis=1))
        pb = xp.asarray(np.stack(b, axis=1))
        pbn = -pb
        ep = {"add": lambda: dw_kernels.run("qd_add_ieee", pa, pb),
              "sub": lambda: dw_kernels.run("qd_add_ieee", pa, pbn),
              "mul": lambda: dw_kernels.run("ww_mul", pa, pb),
              "div": lambda: dw_kernels.run("ww_div", pa, pb)}
        fp64 = {k: getattr(xp, f.__name__) for k, f in fp64.items()}
    else:
        ep = {op: (lambda op=op: ep_op(op, a, b)) for op in OPS}
    repeats = 3 if quick else 9
    out = {}
    with np.errstate(all="ignore"):
        for op in OPS:
            t64 = median_seconds(lambda op=op: fp64[op](x64, y64), device, repeats)
            tep = median_seconds(ep[op], device, repeats)
            out[op] = {"fp64_seconds": t64, "ep_seconds": tep, "speedup": t64 / tep}
    return {"device": device, "n": n, "ops": out}


def run(quick: bool = True, n: int | None = None, seed: int = 2020) -> dict:
    n = n or (2**15 if quick else N_PAPER)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    t1 = table1(n, rng)
    t_table = time.perf_counter() - t0
    ep, f64, exact = leibniz()
    paper = paper_figures()
    return {
        "paper": "Warwick 2020",
        "device": "cpu",
        "cases": n,
        "table1": t1,
        "paper_table1": paper["table1"],
        "leibniz": {
            "terms": LEIBNIZ_TERMS,
            "ep": ep,
            "fp64": f64,
            "exact_partial_sum": exact,
            "ep_vs_fp64_ulps": float(ulp_distance(np.array([ep]), np.array([f64]))[0]),
            "ep_vs_exact_ulps": float(ulp_distance(np.array([ep]), np.array([exact]))[0]),
            "fp64_vs_exact_ulps": float(ulp_distance(np.array([f64]), np.array([exact]))[0]),
            "pi_minus_ep": math.pi - ep,
            "paper_ep_vs_fp64_ulps": paper["leibniz_ulps"],
        },
        "paper_table3_speedup": paper["table3"],
        "seconds_table1": t_table,
        "table2": table2_speedup(quick, "cuda" if gpu_available() else "cpu", seed),
        "paper_table2": paper_table2(),
    }


def paper_table2() -> dict:
    """{gpu: {op: speed-up}} of the paper's Table 2, from the anchors CSV."""
    with open(ANCHORS) as f:
        rows = list(csv.reader(line for line in f.read().splitlines() if line and not line.startswith("#")))
    return {r[1]: dict(zip(OPS, (float(v) for v in r[2:6]))) for r in rows if r[0] == "2"}


def _g(v):
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.0f}"


def markdown(result: dict) -> str:
    t1, p1 = result["table1"], result["paper_table1"]
    lines = [
        "### Warwick 2020, Table 1: float-float vs FP64, error in FP64 ulps",
        "",
        f"{result['cases']} uniform pairs in [-1e6, 1e6] (the paper: {N_PAPER}), FP64ToEP, Warwick's algorithms "
        "6-9 as NumPy twins (CPU). Each cell: ours / paper.",
        "",
        "| stat | + | - | x | / |",
        "|---|---|---|---|---|",
    ]
    for s in STATS:
        cells = [f"{_g(t1[op][s])} / {_g(p1[s][op])}" if s in p1 else _g(t1[op][s]) for op in OPS]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lz = result["leibniz"]
    lines += [
        "",
        f"Leibniz series, {lz['terms']} terms, times 4 (the paper's Table 3 test; its speed-ups are GPU "
        "figures, not measured here): float-float "
        f"{lz['ep']!r}, FP64 {lz['fp64']!r}; float-float vs FP64: {lz['ep_vs_fp64_ulps']:.0f} ulps "
        f"(paper: {lz['paper_ep_vs_fp64_ulps']}); vs the exact partial sum: float-float "
        f"{lz['ep_vs_exact_ulps']:.0f} ulps, FP64 {lz['fp64_vs_exact_ulps']:.0f} ulps; pi - float-float = "
        f"{lz['pi_minus_ep']:.3e}.",
        "",
        "Paper's Table 3 (GPU speed-up of float-float over FP64 for this loop): "
        + ", ".join(f"{g} {v}" for g, v in result["paper_table3_speedup"].items()) + ".",
    ]
    if "table2" in result:
        t2 = result["table2"]
        where = "this GPU (CuPy FP64 against the dw.cuh kernels)" if t2["device"] == "cuda" else \
            "this CPU (NumPy FP64 against the NumPy twins; the paper's figures are GPU figures)"
        lines += ["", "### Warwick 2020, Table 2: speed-up of float-float over FP64 (> 1: float-float faster)", "",
                  f"{t2['n']} operations, median of repeats, on {where}.", "",
                  "| device | " + " | ".join(OPS) + " |", "|---|" + "---|" * len(OPS),
                  "| ours | " + " | ".join(f"{t2['ops'][op]['speedup']:.3g}" for op in OPS) + " |"]
        for gpu, row in result.get("paper_table2", {}).items():
            lines.append(f"| {gpu} (paper) | " + " | ".join(f"{row[op]:.3g}" for op in OPS) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(run(quick=False)))
