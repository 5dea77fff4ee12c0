"""Table 5 of da Graça and Defour, "Implementation of float-float operators on graphics hardware",
RNC 7, 2006 (seed 002): the largest relative error (log2) of Add12, Mul12, Add22 and Mul22 over
random float-float inputs, measured against an exact result.

Ours: the NumPy twins of :mod:`expansions.dw.cpu` (``dg_add12``, ``dg_mul12``, ``dg_add22``,
``dg_mul22``; on CuPy arrays when a GPU is visible) on float32 words, IEEE rounding to nearest.  The
paper ran 2**24 vectors on an Nvidia 7800GTX (whose additions, it says, lose a bit in some
opposite-sign cases); we run 2**24 on a GPU and fewer on the CPU (configurable).

Inputs: high words with a random sign, a random 24-bit significand and an exponent uniform in
[-30, 30]; low words a random float below half an ulp of the high word (gap 0..24 bits), the pair
normalized by Fast2Sum.  Add12 and Mul12 take the high words.  Errors: every exact result is a sum of
at most six float64 numbers (float32 products are exact in float64), summed by SumK (K = 3; Ogita,
Rump, Oishi 2005), which is exact to far below the errors reported; Add12 and Mul12 are also checked
exactly, with rationals, on the first cases.  The proven bounds are the paper's Theorems 2-6
(Add22: ``max(2**-24 |al + bl|, 2**-44 |a + b|)``; Mul22: ``2**-44``).
"""

from __future__ import annotations

import csv
import math
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from expansions.cuda import dw_kernels
from expansions.dw import cpu

from .timing import median_seconds

ANCHORS = Path(__file__).resolve().parent / "anchors" / "dagraca2006_tables.csv"
OPERATIONS = ("Add12", "Mul12", "Add22", "Mul22")
EXPONENTS = (-30, 30)


def paper_table5() -> dict:
    """{operation: printed max error} of Table 5 (``-48.0``, ``exact``...)."""
    with open(ANCHORS) as f:
        lines = [line for line in f if not line.startswith("#")]
    out = {}
    for r in csv.reader(lines):
        if r and r[0] == "5":
            out[r[1]] = r[2]
    return out


def _xp(backend):
    if backend in ("auto", "cuda"):
        try:
            import cupy  # optional dependency: CuPy is needed only on the GPU path

            if cupy.cuda.runtime.getDeviceCount() > 0:
                return cupy, "cuda"
        except Exception:  # noqa: BLE001 - no CuPy, driver or device: the CPU it is
            if backend == "cuda":
                raise
    return np, "cpu"


def random_floatfloat(n, rng):
    """``n`` float-float numbers (hi, lo) as float32 NumPy arrays (see the module doc)."""
    p = 24
    e = rng.integers(EXPONENTS[0], EXPONENTS[1] + 1, size=n)
    m = rng.integers(1 << (p - 1), 1 << p, size=n).astype(np.float64)
    hi = (rng.choice([-1.0, 1.0], size=n) * np.ldexp(m, (e - p + 1).astype(np.int32))).astype(np.float32)
    ml = rng.integers(1 << (p - 1), 1 << p, size=n).astype(np.float64)
    gap = rng.integers(0, p + 1, size=n)
    lo = rng.choice([-1.0, 1.0], size=n) * np.ldexp(ml, (e - p - 1 - gap - p + 1).astype(np.int32))
    lo = lo.astype(np.float32)
    s = hi + lo
    return s, lo - (s - hi)  # Fast2Sum: a valid float-float


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def sum_k(terms, K=3):
    """SumK of Ogita, Rump and Oishi: ``K - 1`` error-free VecSum passes, then a plain sum; as
    accurate as a sum in K-fold precision."""
    ts = list(terms)
    for _ in range(K - 1):
        s = ts[0]
        out = []
        for t in ts[1:]:
            s, e = _two_sum(s, t)
            out.append(e)
        ts = out + [s]
    total = ts[0]
    for t in ts[1:]:
        total = total + t
    return total


def _errors(op, words, xp):
    """Relative errors (float64 arrays) and, for Add22, the ratio to its Theorem 5 bound."""
    f64 = xp.float64
    if op in ("Add12", "Mul12"):
        a, b = words[0], words[2]
        z = cpu.dg_add12(a, b) if op == "Add12" else cpu.dg_mul12(a, b)
        A, B = a.astype(f64), b.astype(f64)
        exact_terms = [A, B] if op == "Add12" else [A * B]
    else:
        ah, al, bh, bl = words
        z = cpu.dg_add22(ah, al, bh, bl) if op == "Add22" else cpu.dg_mul22(ah, al, bh, bl)
        AH, AL, BH, BL = (w.astype(f64) for w in words)
        exact_terms = [AH, AL, BH, BL] if op == "Add22" else [AH * BH, AH * BL, AL * BH, AL * BL]
    zh, zl = (v.astype(f64) for v in z)
    err = xp.abs(sum_k([zh, zl] + [-t for t in exact_terms]))
    ref = xp.abs(sum_k(exact_terms))
    ok = ref > 0
    rel = xp.where(ok, err / xp.where(ok, ref, 1.0), 0.0)
    ratio = None
    if op == "Add22":
        bound = xp.maximum(2.0**-24 * xp.abs(sum_k([AL, BL])), 2.0**-44 * ref)
        ratio = xp.where(bound > 0, err / xp.where(bound > 0, bound, 1.0), xp.where(err > 0, xp.inf, 0.0))
    elif op == "Mul22":
        ratio = rel / 2.0**-44
    else:
        ratio = xp.where(err > 0, xp.inf, 0.0)
    return rel, ratio, z


def _exact_check(op, words, z, count):
    """Exact (rational) errors of the first ``count`` cases of Add12 / Mul12: all zero?"""
    a, b = (np.asarray(w[:count].get() if hasattr(w, "get") else w[:count]) for w in (words[0], words[2]))
    zh, zl = (np.asarray(v[:count].get() if hasattr(v, "get") else v[:count]) for v in z)
    for x, y, h, lo in zip(a.tolist(), b.tolist(), zh.tolist(), zl.tolist()):
        want = Fraction(x) + Fraction(y) if op == "Add12" else Fraction(x) * Fraction(y)
        if Fraction(h) + Fraction(lo) != want:
            return False
    return True


def run(quick: bool = True, n: int | None = None, backend: str = "auto", seed: int = 2006) -> dict:
    """Measure Table 5: ``n`` random inputs (default 2**24 on a GPU; 2**16 quick, 2**20 full on the CPU)."""
    xp, device = _xp(backend)
    if n is None:
        n = (2**20 if quick else 2**24) if device == "cuda" else (2**16 if quick else 2**20)
    rng = np.random.default_rng(seed)
    paper = paper_table5()
    rows = []
    chunk = 2**20
    for op in OPERATIONS:
        t0 = time.perf_counter()
        worst_rel, worst_ratio, exact_ok = 0.0, 0.0, None
        done = 0
        while done < n:
            m = min(chunk, n - done)
            a = random_floatfloat(m, rng)
            b = random_floatfloat(m, rng)
            words = [xp.asarray(v) for v in (a[0], a[1], b[0], b[1])]
            with np.errstate(all="ignore"):
                rel, ratio, z = _errors(op, words, xp)
            worst_rel = max(worst_rel, float(rel.max()))
            worst_ratio = max(worst_ratio, float(ratio.max()))
            if op in ("Add12", "Mul12") and done == 0:
                exact_ok = _exact_check(op, words, z, min(m, 4096))
            done += m
        rows.append({
            "operation": op,
            "cases": n,
            "paper_max_error_log2": paper.get(op, ""),
            "max_relative_error": worst_rel,
            "max_error_log2": math.log2(worst_rel) if worst_rel > 0 else None,
            "exact": worst_rel == 0 and exact_ok is not False if op in ("Add12", "Mul12") else None,
            "max_error_over_bound": worst_ratio,
            "within_bound": worst_ratio <= 1.0,
            "bound": {"Add12": "exact (Theorem 2)", "Mul12": "exact (Theorem 4)",
                      "Add22": "max(2^-24 |al+bl|, 2^-44 |a+b|) (Theorem 5)", "Mul22": "2^-44 (Theorem 6)"}[op],
            "seconds": time.perf_counter() - t0,
        })
    return {"table": "da Graca and Defour 2006, Table 5", "device": device, "cases": n, "seed": seed, "rows": rows,
            "table3": table3_timing(quick, device, seed)}


TABLE3_SIZES = (4096, 16384, 65536, 262144, 1048576)
TABLE3_COLUMNS = ("Add", "Mul", "Mad", "Add12", "Mul12", "Add22", "Mul22")


def table3_timing(quick: bool = True, device: str = "cpu", seed: int = 2006) -> dict:
    """Table 3-style timing: time of each operator on arrays of each size, normalized to the time of
    4096 single-precision additions (the paper's unit).  On the GPU: CuPy's float32 ``+ * `` and the
    kernels of ``expansions/cuda/dw.cuh`` (one thread per number); on the CPU: NumPy and the twins."""
    rng = np.random.default_rng(seed)
    sizes = TABLE3_SIZES[:3] if quick else TABLE3_SIZES
    repeats = 3 if quick else 9
    if device == "cuda":
        import cupy as xp  # optional dependency: CuPy is needed only on the GPU path

        def pair(h, lo):
            return xp.ascontiguousarray(xp.stack([h, lo], axis=1))

        ops = {
            "Add12": lambda a, b: dw_kernels.run("dg_add12", a[0], b[0]),
            "Mul12": lambda a, b: dw_kernels.run("dg_mul12", a[0], b[0]),
            "Add22": lambda a, b: dw_kernels.run("dg_add22", pair(*a), pair(*b)),
            "Mul22": lambda a, b: dw_kernels.run("dg_mul22", pair(*a), pair(*b)),
        }
    else:
        xp = np
        ops = {
            "Add12": lambda a, b: cpu.dg_add12(a[0], b[0]),
            "Mul12": lambda a, b: cpu.dg_mul12(a[0], b[0]),
            "Add22": lambda a, b: cpu.dg_add22(a[0], a[1], b[0], b[1]),
            "Mul22": lambda a, b: cpu.dg_mul22(a[0], a[1], b[0], b[1]),
        }
    seconds = {}
    for n in sizes:
        a = [xp.asarray(v) for v in random_floatfloat(n, rng)]
        b = [xp.asarray(v) for v in random_floatfloat(n, rng)]
        c = xp.asarray(random_floatfloat(n, rng)[0])
        seconds[n] = _time_row(a, b, c, ops, device, repeats, median_seconds)
    unit = seconds[sizes[0]]["Add"]
    return {"device": device, "unit_seconds": unit, "seconds": seconds,
            "normalized": {n: {k: v / unit for k, v in row.items()} for n, row in seconds.items()}}


def _time_row(a, b, c, ops, device, repeats, median_seconds) -> dict:
    row = {
        "Add": median_seconds(lambda: a[0] + b[0], device, repeats),
        "Mul": median_seconds(lambda: a[0] * b[0], device, repeats),
        "Mad": median_seconds(lambda: a[0] * b[0] + c, device, repeats),
    }
    with np.errstate(all="ignore"):
        for name, f in ops.items():
            row[name] = median_seconds(lambda f=f: f(a, b), device, repeats)
    return row


def paper_table3(table: str = "3") -> dict:
    """{size: {column: normalized time}} of the paper's Table 3 (GPU) or Table 4 (CPU), anchors CSV."""
    out = {}
    with open(ANCHORS) as f:
        rows = [r for r in f if not r.startswith("#")]
    for r in csv.reader(rows):
        if r and r[0] == table:
            out[int(r[1])] = dict(zip(TABLE3_COLUMNS, (float(v) for v in r[2:9])))
    return out


def markdown(result: dict) -> str:
    dev = "GPU (CuPy)" if result["device"] == "cuda" else "CPU (NumPy twins)"
    lines = [
        "### da Graça and Defour 2006, Table 5: largest error of the float-float operators",
        "",
        f"{result['cases']} random float-float inputs per operation, measured on the {dev}; the paper's figures "
        "(7800GTX, 2^24 inputs) from `anchors/dagraca2006_tables.csv`. Errors are log2 of the largest relative "
        "error; `error/bound` is the largest ratio of the error to the paper's proven bound.",
        "",
        "| operation | paper (log2) | ours (log2) | proven bound | error/bound | within bound |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        ours = "exact" if r["max_error_log2"] is None else f"{r['max_error_log2']:.1f}"
        ratio = r["max_error_over_bound"]
        lines.append(f"| {r['operation']} | {r['paper_max_error_log2']} | {ours} | {r['bound']} | "
                     f"{'-' if math.isinf(ratio) else f'{ratio:.3g}'} | {'yes' if r['within_bound'] else 'NO'} |")
    if "table3" in result:
        t3 = result["table3"]
        gpu = t3["device"] == "cuda"
        paper = paper_table3("3" if gpu else "4")
        where = "this GPU (CuPy and the dw.cuh kernels)" if gpu else "this CPU (NumPy and the twins)"
        theirs = "Table 3, 7800GTX GPU" if gpu else "Table 4, their CPU"
        lines += ["", "### da Graça and Defour 2006, Tables 3/4: time normalized to 4096 float additions", "",
                  f"Measured on {where}, median of repeats; each cell ours / the paper's ({theirs}).", "",
                  "| size | " + " | ".join(TABLE3_COLUMNS) + " |", "|---|" + "---|" * len(TABLE3_COLUMNS)]
        for n, row in t3["normalized"].items():
            ref = paper.get(int(n), {})
            lines.append(f"| {n} | " + " | ".join(f"{row[c]:.3g} / {ref.get(c, '-')}" for c in TABLE3_COLUMNS) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(run(quick=False)))
