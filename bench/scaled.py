"""Badly scaled matrix products: time and componentwise accuracy of ``x @ y`` beside NumPy's float64
product and python-flint's ``arb_mat`` at 53 R bits, in one run.

Operands: n x n full-precision float64 expansions (R terms) whose entries have leading exponents
drawn uniformly from [-span, span] (span 0: every entry in [1, 2) in magnitude), random signs; the
same data for every executor (NumPy gets the leading terms, python-flint the exact values).
Accuracy: the worst componentwise error |C_ij - exact_ij| / sum_k |a_ik b_kj| over ``--samples``
entries, computed exactly with rationals, for each executor (python-flint: its midpoints).  Time:
the minimum of ``--repeats`` calls, one core (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and
``NUMBA_NUM_THREADS`` set to 1 before NumPy starts); each cell also says which method "auto" chose,
the plan's extra bits and its number of float64 products.

    python -m bench.scaled            # n = 100, 300; R = 2, 4; spans 0, 8, 20, 80, 200 (a few minutes)

writes ``bench/results/scaled_<device>.md``, ``.json`` (every figure) and ``.log`` (this run's output).
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
from fractions import Fraction  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import expansions as ex  # noqa: E402
from expansions import bounds, slices  # noqa: E402
from expansions.__main__ import device_slug, environment  # noqa: E402
from expansions.formats import FLOAT64  # noqa: E402
from expansions.reduce import choose_method  # noqa: E402

from . import load_note, log_to  # noqa: E402
from .linalg import timed  # noqa: E402


def data(n: int, R: int, span: int, seed: int) -> ex.ExpansionArray:
    """n x n full-precision expansions of R float64 terms, leading exponents uniform in [-span, span]."""
    rng = np.random.default_rng(seed)
    t = np.zeros((n, n, R))
    e = rng.integers(-span, span + 1, size=(n, n))
    t[..., 0] = rng.uniform(1, 2, size=(n, n)) * np.ldexp(1.0, e) * rng.choice([-1.0, 1.0], size=(n, n))
    for r in range(1, R):
        t[..., r] = rng.uniform(-0.5, 0.5, size=(n, n)) * np.ldexp(np.abs(t[..., r - 1]), -53)
    return ex.renormalize(ex.from_terms(t))


def worst_error(a_exact, b_exact, value, entries) -> float:
    """max over ``entries`` of |value(i, j) - C_ij| / sum_k |a_ik b_kj|, exactly; log2 of it."""
    worst = Fraction(0)
    n = len(a_exact)
    for i, j in entries:
        c = sum(a_exact[i][k] * b_exact[k][j] for k in range(n))
        s = sum(abs(a_exact[i][k] * b_exact[k][j]) for k in range(n))
        if s:
            worst = max(worst, abs(value(i, j) - c) / s)
    return math.log2(worst.numerator) - math.log2(worst.denominator) if worst else -math.inf


def flint_product(A: ex.ExpansionArray, B: ex.ExpansionArray, R: int):
    """(function computing the arb_mat product, its midpoints as exact rationals) or None without flint."""
    try:
        import flint  # optional peer (the bench extra): absent, its columns say so
    except ImportError:
        return None
    flint.ctx.prec = 53 * R

    def mat(x):
        return flint.arb_mat([[sum((flint.arb(float(t)) for t in e[1:]), flint.arb(float(e[0]))) for e in row]
                              for row in x.terms])

    P, Q = mat(A), mat(B)

    def exact(v):
        man, exp = v.mid().man_exp()
        return Fraction(int(man)) * Fraction(2) ** int(exp)

    return (lambda: P * Q), exact


def cell(n: int, R: int, span: int, samples: int, repeats: int) -> dict:
    A, B = data(n, R, span, 2 * n + R + span), data(n, R, span, 2 * n + R + span + 1)
    try:
        extra = slices.componentwise_extra(A.terms, B.terms, R, np.float64)
    except ValueError:
        extra = None
    method = choose_method(n, n, n, R, np.float64, "auto", extra)
    out = {"n": n, "R": R, "span": span, "method": method, "extra_bits": extra,
           "gemms": slices.plan(n, R, np.float64, extra=extra).gemms if method == "slices" else None}
    a0, b0 = A.terms[..., 0].copy(), B.terms[..., 0].copy()
    C = A @ B
    out["matmul"] = timed(lambda: A @ B, repeats)
    out["numpy_matmul"] = timed(lambda: a0 @ b0, max(3, repeats))
    c0 = a0 @ b0
    rng = np.random.default_rng(n + R + span)
    entries = [tuple(int(v) for v in rng.integers(n, size=2)) for _ in range(samples)]
    ax = [list(r) for r in np.asarray(A.to_fraction(), dtype=object)]
    bx = [list(r) for r in np.asarray(B.to_fraction(), dtype=object)]
    cx = np.asarray(C.to_fraction(), dtype=object)
    out["error_log2"] = worst_error(ax, bx, lambda i, j: cx[i, j], entries)
    out["numpy_error_log2"] = worst_error(ax, bx, lambda i, j: Fraction(float(c0[i, j])), entries)
    flint_run = flint_product(A, B, R)
    if flint_run is None:
        out["flint_matmul"] = out["flint_error_log2"] = None
    else:
        run, exact = flint_run
        out["flint_matmul"] = timed(run, 1)
        Cf = run()
        out["flint_error_log2"] = worst_error(ax, bx, lambda i, j: exact(Cf[i, j]), entries)
    # what the componentwise guarantee costs: the normwise plan (extra = 0, the plan before the
    # guarantee), timed alternately with x @ y in the same run, its error, and the spread measure alone
    if method == "slices":
        both = [[], []]
        for _ in range(max(3, repeats)):
            both[0].append(timed(lambda: A @ B, 1))
            both[1].append(timed(lambda: slices.matmul(A, B, extra=0), 1))
        out["matmul_alternating"], out["normwise_matmul"] = min(both[0]), min(both[1])
        out["normwise_gemms"] = slices.plan(n, R, np.float64, extra=0).gemms
        out["spread_measure"] = timed(lambda: slices.componentwise_extra(A.terms, B.terms, R, np.float64), repeats)
        cn = np.asarray(slices.matmul(A, B, extra=0).to_fraction(), dtype=object)
        out["normwise_error_log2"] = worst_error(ax, bx, lambda i, j: cn[i, j], entries)
    else:
        out["matmul_alternating"] = out["normwise_matmul"] = out["normwise_gemms"] = None
        out["spread_measure"] = out["normwise_error_log2"] = None
    out["bound_log2"] = bounds.matmul(n, R, FLOAT64).log2
    out["level_log2"] = -(FLOAT64.p - 1) * R
    return out


def fmt_s(v) -> str:
    if v is None:
        return "–"
    return f"{v * 1e3:.2f} ms" if v < 1 else f"{v:.2f} s"


def fmt_e(v) -> str:
    return "–" if v is None else ("exact" if v == -math.inf else f"2^{v:.1f}")


def markdown(res: dict) -> str:
    env = res["environment"]
    lines = [
        "# Badly scaled matrix products: time and componentwise accuracy", "",
        f"`{res['command']}` at commit {env['commit']}, {res['date']}, one core of {env['processor']}; "
        f"{load_note(res['load'], os.cpu_count() or 1)}. Raw output: `{res['log']}`.", "",
        "n x n full-precision expansions of R float64 terms whose entries have exponents uniform in "
        "[-span, span]; errors are the worst |C_ij - exact| / sum_k |a_ik b_kj| over "
        f"{res['samples']} sampled entries, computed exactly (python-flint: its midpoints at 53 R bits; "
        "NumPy: float64 on the leading terms). The R-term level is 2^-(52 R).", "",
        "| n | R | span | method (extra bits, float64 products) | `x @ y` | error | NumPy float64 | its error | "
        "python-flint | its error | `x @ y` / NumPy | python-flint / `x @ y` |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in res["cells"]:
        how = c["method"] + (f" ({c['extra_bits']}, {c['gemms']})" if c["method"] == "slices" else "")
        ratio = c["matmul"] / c["numpy_matmul"]
        flint_ratio = f"{c['flint_matmul'] / c['matmul']:.1f}x" if c["flint_matmul"] else "–"
        lines.append(f"| {c['n']} | {c['R']} | ±{c['span']} | {how} | {fmt_s(c['matmul'])} | "
                     f"{fmt_e(c['error_log2'])} | {fmt_s(c['numpy_matmul'])} | {fmt_e(c['numpy_error_log2'])} | "
                     f"{fmt_s(c['flint_matmul'])} | "
                     f"{fmt_e(c['flint_error_log2'])} | {ratio:.0f}x | {flint_ratio} |")
    met = [c for c in res["cells"] if c["error_log2"] <= c["level_log2"]]
    lines += ["", f"At the R-term level (error <= 2^-(52 R)): {len(met)} of {len(res['cells'])} cells.", ""]
    cost = [c for c in res["cells"] if c.get("normwise_matmul")]
    if cost:
        lines += [
            "## What the componentwise guarantee costs", "",
            "The slice plan that meets the componentwise bound takes extra bits for the operands' spread; "
            "the plan of the normwise bound alone (`extra=0`, the product before the guarantee) beside it, "
            "timed alternately in this run, with its error on the same entries. The spread measure "
            "(`componentwise_extra`) is part of `x @ y`'s time.", "",
            "| n | R | span | `x @ y` (float64 products) | normwise plan (float64 products) | ratio | spread measure | "
            "`x @ y` error | normwise plan's error |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for c in cost:
            lines.append(f"| {c['n']} | {c['R']} | ±{c['span']} | {fmt_s(c['matmul_alternating'])} ({c['gemms']}) | "
                         f"{fmt_s(c['normwise_matmul'])} ({c['normwise_gemms']}) | "
                         f"{c['matmul_alternating'] / c['normwise_matmul']:.2f}x | {fmt_s(c['spread_measure'])} | "
                         f"{fmt_e(c['error_log2'])} | {fmt_e(c['normwise_error_log2'])} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", default="100,300")
    ap.add_argument("--rs", default="2,4")
    ap.add_argument("--spans", default="0,8,20,80,200")
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"scaled_{device_slug()}"
    say = log_to(f"{stem}.log")

    env = environment()
    load = {"start": list(os.getloadavg())}
    command = "python -m bench.scaled " + " ".join(argv if argv is not None else sys.argv[1:])
    say(f"{command.strip()}  (commit {env['commit']})")
    ex.array(np.ones((4, 4)), terms=2) @ ex.array(np.ones((4, 4)), terms=2)  # compile outside the timings
    cells = []
    for R in map(int, args.rs.split(",")):
        data(8, R, 4, 0) @ data(8, R, 4, 1)
        for n in map(int, args.ns.split(",")):
            for span in map(int, args.spans.split(",")):
                c = cell(n, R, span, args.samples, args.repeats)
                cells.append(c)
                say(json.dumps(c))
    load["end"] = list(os.getloadavg())
    res = {"command": command.strip(), "environment": env, "date": datetime.date.today().isoformat(),
           "load": load, "samples": args.samples, "log": Path(f"{stem}.log").name, "cells": cells}
    Path(f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n")
    Path(f"{stem}.md").write_text(markdown(res))
    say(f"wrote {stem}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
