"""The public API on the CPU beside the Python peers: Mop/s of add, sub, mul, div, sqrt and dot at
R = 2, 4, 8, 16, 32, measured in one run on the same data at the same precision.  (The native peers,
QD and MPFR compiled here, and the elementary functions: ``python -m bench.native``.)

Numbers are float64 expansions of R terms (``expansions.generate.random_terms``, leading exponents in
[-8, 8]; the square root takes |x|), so the peers work at R * 53 bits, the nominal precision of R
float64 terms (106, 212, 424, 848, 1696 bits).  Every peer gets the same numbers: each expansion is
summed exactly and rounded once to R * 53 bits.

Executors (``Mop/s`` = elements per second / 10^6; for dot, multiply-adds per second, one dot of
``n`` elements):

* ``expansions 1T`` / ``expansions allT``: the public API as a user calls it, ``x + y``, ``x - y``,
  ``x * y``, ``x / y``, ``ex.sqrt(x)``, ``ex.dot(x, y)`` on ExpansionArrays (``ex.from_terms`` of the
  terms, no copy), with the default CPU backend, the compiled engine: the dispatch, the algorithm,
  its renormalization and the non-finite rule, all timed.  One thread and all threads
  (``numba.set_num_threads``);
* ``expansions twins``: the same calls with ``ex.set_cpu_backend('twins')``, the NumPy twins;
* ``python-flint``: ``arb`` at R * 53 bits, a Python loop over arb values (dot: ``arb_mat``
  product of 1 x n and n x 1, which is Arb's own dot);
* ``gmpy2``: MPFR at R * 53 bits, a Python loop (dot: ``gmpy2.fsum`` of the rounded products);
* ``mpmath``: ``mpf`` at R * 53 bits, a Python loop (dot: ``mpmath.fdot``);
* ``xprec`` (R = 2 only): its ``ddouble`` NumPy dtype, vectorized;
* ``float64``: plain NumPy on the leading terms, the ceiling.

The Python-loop peers run on fewer elements (``--slow-n``), the twins on ``--twin-n``; every figure
is normalized to Mop/s, the median of ``--repeats`` timings after one untimed call (which also
compiles the engine).

    python -m bench.peers [--quick] [--n 100000] [--slow-n 2000] [--twin-n 20000] [--repeats 5]
                          [--rs 2,4,8,16,32] [--ops add,sub,mul,div,sqrt,dot]

writes ``bench/results/peers_<device>.md`` (tables and the issue's goals, met or not, per cell) and
``.json`` (every timing).
"""

from __future__ import annotations

import argparse
import datetime
import json
import operator
import os
import platform
import statistics
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import mpmath
import numpy as np
import numpy.ma  # noqa: F401  (before xprec: numpy.ma's import fails once ddouble is registered)

import expansions as ex
from expansions.__main__ import device_slug, environment
from expansions.generate import random_terms

from . import cpu_model, load_note

OPS = ("add", "sub", "mul", "div", "sqrt", "dot")
RS = (2, 4, 8, 16, 32)
COLUMNS = ("expansions 1T", "expansions allT", "expansions twins", "python-flint", "gmpy2", "mpmath", "xprec",
           "float64")


# ---------------------------------------------------------------------------------------------
# data


def make_data(n, R, seed=0):
    """x, y: (n, R) float64 expansions; s = |x| for the square root."""
    x = random_terms((n,), R, "float64", seed=seed)
    y = random_terms((n,), R, "float64", seed=seed + 1)
    s = x * np.where(x[:, :1] < 0, -1.0, 1.0)
    return x, y, s


def to_mpfr(rows, R):
    """Each row summed exactly, rounded once to R * 53 bits (gmpy2 mpfr)."""
    import gmpy2  # optional peer: absent, the Python-loop peers are skipped

    exact = gmpy2.context(precision=4400)  # more than the span of any R <= 32 float64 expansion
    out = []
    for row in rows:
        v = gmpy2.mpfr(0)
        for t in row:
            v = exact.add(v, gmpy2.mpfr(float(t)))
        out.append(gmpy2.mpfr(v, R * 53))
    return out


# ---------------------------------------------------------------------------------------------
# executors: each returns {op: (callable, elements per call)} or raises ImportError with a reason


def public_ops(x, y, s):
    """The public API on the terms arrays x, y (s = |x|, for sqrt), as a user calls it: ``x + y``,
    ``x - y``, ``x * y``, ``x / y``, ``ex.sqrt(s)``, ``ex.dot(x, y)`` on ExpansionArrays wrapped
    without a copy; whichever CPU backend is selected runs (the dispatch, the algorithm, the
    renormalization and the non-finite rule, all timed)."""
    X, Y, S = ex.from_terms(x), ex.from_terms(y), ex.from_terms(s)
    return {"add": lambda: X + Y, "sub": lambda: X - Y, "mul": lambda: X * Y, "div": lambda: X / Y,
            "sqrt": lambda: ex.sqrt(S), "dot": lambda: ex.dot(X, Y)}


def on_twins(ops):
    """The same calls with the NumPy twins as the CPU backend (``ex.set_cpu_backend('twins')`` for
    the call, the default backend again afterwards)."""
    def wrap(f):
        def call():
            ex.set_cpu_backend("twins")
            try:
                return f()
            finally:
                ex.set_cpu_backend(None)
        return call
    return {op: wrap(f) for op, f in ops.items()}


def flint_ops(xm, ym, sm, R):
    import flint  # optional peer (python-flint): absent, the column says so

    flint.ctx.prec = R * 53

    def conv(vals):  # exact: R * 53 bits fit the working precision
        return [flint.arb(flint.fmpq(*(int(t) for t in v.as_integer_ratio()))) for v in vals]

    xs, ys, ss = conv(xm), conv(ym), conv(sm)
    row, col = flint.arb_mat([xs]), flint.arb_mat([[v] for v in ys])
    return {"add": lambda: [a + b for a, b in zip(xs, ys)],
            "sub": lambda: [a - b for a, b in zip(xs, ys)],
            "mul": lambda: [a * b for a, b in zip(xs, ys)],
            "div": lambda: [a / b for a, b in zip(xs, ys)],
            "sqrt": lambda: [a.sqrt() for a in ss],
            "dot": lambda: row * col}


def gmpy2_ops(xm, ym, sm, R):
    import gmpy2  # optional peer: absent, the column says so

    gmpy2.get_context().precision = R * 53
    sqrt = gmpy2.sqrt
    return {"add": lambda: [a + b for a, b in zip(xm, ym)],
            "sub": lambda: [a - b for a, b in zip(xm, ym)],
            "mul": lambda: [a * b for a, b in zip(xm, ym)],
            "div": lambda: [a / b for a, b in zip(xm, ym)],
            "sqrt": lambda: [sqrt(a) for a in sm],
            "dot": lambda: gmpy2.fsum(map(operator.mul, xm, ym))}


def mpmath_ops(xm, ym, sm, R):
    mpmath.mp.prec = R * 53

    def conv(vals):
        return [mpmath.mpf(tuple(int(t) for t in v.as_mantissa_exp())) for v in vals]

    xs, ys, ss = conv(xm), conv(ym), conv(sm)
    sqrt = mpmath.sqrt
    return {"add": lambda: [a + b for a, b in zip(xs, ys)],
            "sub": lambda: [a - b for a, b in zip(xs, ys)],
            "mul": lambda: [a * b for a, b in zip(xs, ys)],
            "div": lambda: [a / b for a, b in zip(xs, ys)],
            "sqrt": lambda: [sqrt(a) for a in ss],
            "dot": lambda: mpmath.fdot(xs, ys)}


def xprec_ops(x, y, s):
    import xprec  # optional peer (R = 2); numpy.ma is imported first, at the top

    dd = xprec.ddouble

    def conv(t):
        return t[:, 0].astype(dd) + t[:, 1].astype(dd)

    X, Y, S = conv(x), conv(y), conv(s)
    return {"add": lambda: X + Y, "sub": lambda: X - Y, "mul": lambda: X * Y, "div": lambda: X / Y,
            "sqrt": lambda: np.sqrt(S), "dot": lambda: np.dot(X, Y)}


def float64_ops(x, y, s):
    a, b, c = (np.ascontiguousarray(t[:, 0]) for t in (x, y, s))
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
            "sqrt": lambda: np.sqrt(c), "dot": lambda: np.dot(a, b)}


# ---------------------------------------------------------------------------------------------
# timing


def measure(make, n, repeats, budget):
    """Time ``make(n)()``: one untimed call (it also compiles), then the median of ``repeats`` timed
    calls; where a call takes more than ``budget`` seconds, on fewer elements (at least 100), so that
    one call takes about ``budget``.  Returns (Mop/s, seconds, elements)."""
    with np.errstate(all="ignore"):
        f = make(n)
        f()
        t0 = time.perf_counter()
        f()
        took = time.perf_counter() - t0
        if took > budget and n > 100:
            n = max(100, int(n * budget / took))
            f = make(n)
            f()
        secs = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            f()
            secs.append(time.perf_counter() - t0)
    return n / statistics.median(secs) / 1e6, secs, n


def versions() -> dict:
    v = {}
    for dist in ("numpy", "numba", "llvmlite", "python-flint", "mpmath", "xprec"):
        try:
            v[dist] = version(dist)
        except PackageNotFoundError:
            v[dist] = "absent"
    try:
        import gmpy2  # optional peer

        v["gmpy2"] = f"{gmpy2.version()} ({gmpy2.mpfr_version()}, {gmpy2.mp_version()})"
    except ImportError as exc:
        v["gmpy2"] = f"absent ({exc})"
    return v



def executors_for(R, x, y, s, xm, ym, sm, args, all_threads, notes):
    """(name, builder of the operations on the first k elements, elements, threads, repeats) of every
    executor at R; an absent peer is noted instead."""
    executors = [("expansions 1T", lambda k: public_ops(x[:k], y[:k], s[:k]), args.n, 1, args.repeats),
                 ("expansions allT", lambda k: public_ops(x[:k], y[:k], s[:k]), args.n, all_threads,
                  args.repeats),
                 ("expansions twins", lambda k: on_twins(public_ops(x[:k], y[:k], s[:k])), args.twin_n, None,
                  args.repeats)]
    if xm is not None:
        for name, build in (("python-flint", flint_ops), ("gmpy2", gmpy2_ops), ("mpmath", mpmath_ops)):
            try:
                build(xm[:1], ym[:1], sm[:1], R)
            except ImportError as exc:
                notes.append(f"{name} absent: {exc}")
                continue
            executors.append((name, lambda k, b=build: b(xm[:k], ym[:k], sm[:k], R), args.slow_n, None,
                              args.slow_repeats))
    if R == 2:
        try:
            xprec_ops(x[:1], y[:1], s[:1])
            executors.append(("xprec", lambda k: xprec_ops(x[:k], y[:k], s[:k]), args.n, None, args.repeats))
        except ImportError as exc:
            notes.append(f"xprec absent: {exc}")
    executors.append(("float64", lambda k: float64_ops(x[:k], y[:k], s[:k]), args.n, None, args.repeats))
    return executors


def run(args) -> dict:
    import numba  # the engine's compiler; imported only when a benchmark runs

    all_threads = numba.config.NUMBA_NUM_THREADS
    cells, notes = [], []
    for R in args.rs:
        x, y, s = make_data(args.n, R, seed=R)
        xl, yl, sl = x[: args.slow_n], y[: args.slow_n], s[: args.slow_n]
        try:
            xm, ym, sm = to_mpfr(xl, R), to_mpfr(yl, R), to_mpfr(sl, R)
        except ImportError as exc:  # the values for the Python-loop peers are made with gmpy2
            notes.append(f"R = {R}: python-flint, gmpy2 and mpmath skipped (gmpy2 absent: {exc})")
            xm = ym = sm = None
        executors = executors_for(R, x, y, s, xm, ym, sm, args, all_threads, notes)
        for name, build, n, threads, repeats in executors:
            available = build(1)
            for op in args.ops:
                if op not in available:
                    continue
                if threads is not None:
                    numba.set_num_threads(threads)
                mops, secs, used_n = measure(lambda k, op=op, b=build: b(k)[op], n, repeats, args.budget)
                cells.append({"R": R, "bits": R * 53, "op": op, "executor": name, "n": used_n, "threads": threads,
                              "mops": mops, "seconds": secs})
                print(f"R={R:2d} {op:4s} {name:12s} n={used_n:6d} {mops:10.4g} Mop/s", flush=True)
        numba.set_num_threads(all_threads)
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel loop ran
        layer = "none"
    threading = {"threads": all_threads, "layer": layer,
                 **{v: os.environ.get(v, "unset") for v in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS")}}
    return {"cells": cells, "notes": notes, "all_threads": all_threads, "threading": threading}


# ---------------------------------------------------------------------------------------------
# goals of the issue


def goals(cells) -> list[dict]:
    """Per (R, op): the public API on one thread against python-flint and mpmath, and the goal it meets
    or misses (R = 2: >= 20x flint for add and mul; R = 4: >= 1x flint for add, mul, div; every R and
    operation: never slower than mpmath; R >= 8: the ratio, with the reason)."""
    mops = {(c["R"], c["op"], c["executor"]): c["mops"] for c in cells}
    out = []
    for R, op in sorted({(c["R"], c["op"]) for c in cells}, key=lambda k: (k[0], OPS.index(k[1]))):
        e = mops.get((R, op, "expansions 1T"))
        fl = mops.get((R, op, "python-flint"))
        mp = mops.get((R, op, "mpmath"))
        row = {"R": R, "op": op, "expansions": e, "flint": fl, "mpmath": mp,
               "vs_flint": e / fl if e and fl else None, "vs_mpmath": e / mp if e and mp else None}
        verdicts = []
        if e is None:
            verdicts.append("not measured")
        else:
            if R == 2 and op in ("add", "mul") and row["vs_flint"] is not None:
                verdicts.append(f">= 20x flint: {'met' if row['vs_flint'] >= 20 else 'NOT met'}")
            if R == 4 and op in ("add", "mul", "div") and row["vs_flint"] is not None:
                verdicts.append(f">= 1x flint: {'met' if row['vs_flint'] >= 1 else 'NOT met'}")
            if row["vs_mpmath"] is not None:
                verdicts.append(f">= 1x mpmath: {'met' if row['vs_mpmath'] >= 1 else 'NOT met'}")
        row["verdict"] = "; ".join(verdicts)
        out.append(row)
    return out


def markdown(result, args, env, vers, command) -> str:
    cells = result["cells"]
    mops = {(c["R"], c["op"], c["executor"]): c for c in cells}
    lines = [f"# The public API on the CPU beside its Python peers ({env['machine']})", "",
             f"`{command}`, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
             f"commit {env['commit']}.", "",
             f"- CPU: {cpu_model()}; {platform.system()} {platform.release()}; Python {env['python']}; "
             f"numba threads: {result['all_threads']}, threading layer {result['threading']['layer']}, "
             f"OMP_WAIT_POLICY {result['threading']['OMP_WAIT_POLICY']}, OPENBLAS_NUM_THREADS "
             f"{result['threading']['OPENBLAS_NUM_THREADS']} (float64 dot); "
             f"{load_note(result.get('load_average'), os.cpu_count())}.",
             "- Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()) + ".",
             "- Precision: R float64 terms against R * 53 bits in the arbitrary-precision peers "
             "(106, 212, 424, 848, 1696 bits); same numbers for every peer (random expansions, leading "
             "exponents in [-8, 8]; |x| for sqrt).",
             f"- Elements: expansions, xprec and float64 {args.n}; expansions twins {args.twin_n}; python-flint, "
             f"gmpy2, mpmath {args.slow_n} (Python loops); fewer where one call took more than {args.budget} s (each "
             "cell's count is in the JSON). Mop/s = elements / s / 10^6 (dot: multiply-adds of one dot of "
             f"that many elements), median of {args.repeats} timings ({args.slow_repeats} for the Python loops) "
             "after two untimed calls.",
             "- expansions: the public API (`x + y`, `x - y`, `x * y`, `x / y`, `ex.sqrt(x)`, `ex.dot(x, y)` on "
             "ExpansionArrays): dispatch, algorithm, renormalization and non-finite rule, as a user gets them; "
             "1T / allT: the compiled engine (the default CPU backend) on one / all numba threads; twins: the "
             "same calls with `ex.set_cpu_backend('twins')`.", ""]
    for note in result["notes"]:
        lines.append(f"- Note: {note}")
    lines += ["", "## Mop/s", "",
              "| R | bits | op | " + " | ".join(COLUMNS) + " |", "|---|---|---|" + "---|" * len(COLUMNS)]
    for R in args.rs:
        for op in args.ops:
            row = []
            for col in COLUMNS:
                c = mops.get((R, op, col))
                row.append("-" if c is None else f"{c['mops']:.3g}")
            lines.append(f"| {R} | {R * 53} | {op} | " + " | ".join(row) + " |")
    lines += ["", "## Goals (the public API on one thread)", "",
              "| R | op | expansions / python-flint | expansions / mpmath | verdict |", "|---|---|---|---|---|"]
    for g in goals(cells):
        vf = "-" if g["vs_flint"] is None else f"{g['vs_flint']:.3g}x"
        vm = "-" if g["vs_mpmath"] is None else f"{g['vs_mpmath']:.3g}x"
        lines.append(f"| {g['R']} | {g['op']} | {vf} | {vm} | {g['verdict']} |")
    lines += ["", "R = 8..32: the library's multiplication (and the Newton division and square root built on it) "
              "costs O(R^2) floating-point operations per element (Algorithm 2 forms about R^2/2 two-products "
              "and sums them), and its addition O(R log R); MPFR and Arb multiply R * 53-bit significands "
              "with limb-level (schoolbook to Karatsuba/Toom at these sizes) integer products on 64-bit "
              "words, sub-quadratic and about 53/64 of the word count, so their cost grows more slowly "
              "with R than the library's; the ratio to python-flint shows where the crossover falls."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a short run: n 20000, slow-n 300, twin-n 4000, 3 repeats")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--slow-n", type=int, default=2000)
    ap.add_argument("--twin-n", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--slow-repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per call above which fewer elements are used")
    ap.add_argument("--rs", default=",".join(map(str, RS)))
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.slow_n, args.twin_n, args.repeats, args.slow_repeats = 20_000, 300, 4000, 3, 3
    args.rs = [int(r) for r in str(args.rs).split(",")]
    args.ops = [o for o in args.ops.split(",")]
    unknown = set(args.ops) - set(OPS)
    if unknown:
        ap.error(f"unknown operations {sorted(unknown)}; use {OPS}")
    command = "python -m bench.peers " + " ".join(argv if argv is not None else __import__("sys").argv[1:])
    env, vers = environment(), versions()
    load_start = os.getloadavg()
    result = run(args)
    result["load_average"] = {"start": list(load_start), "end": list(os.getloadavg())}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"peers_{device_slug()}"
    (out / f"{stem}.json").write_text(json.dumps(
        {"command": command.strip(), "environment": env, "versions": vers, "cpu": cpu_model(),
         "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "args": vars(args),
         "notes": result["notes"], "threading": result["threading"], "load_average": result["load_average"],
         "cells": result["cells"],
         "goals": goals(result["cells"])}, indent=1))
    text = markdown(result, args, env, vers, command.strip())
    (out / f"{stem}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
