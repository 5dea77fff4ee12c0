"""Linear algebra at BLAS speed (issue 29): matrix products by exact slices and solves, beside NumPy's
float64 BLAS, the element-wise product path, python-flint's ``arb_mat`` and mpmath's matrices at the
same precision, in one run.

Cells: for n in ``--ns`` and R in ``--rs``, float64 terms, random full-precision expansions
(:func:`expansions.generate.random_terms`, leading exponents in [-8, 8]):

* ``matmul``: ``x @ y`` (the default method: the slice product where the cost model picks it, which it
  does at these sizes), NumPy's float64 ``a @ b`` on the leading terms (the ratio is the figure that
  matters), ``expansions.matmul(x, y, method="elementwise")`` (today's element-wise path: timed on
  ``r`` rows of x and scaled by n / r where the whole product would take longer than
  ``--elementwise-budget`` seconds; each output row costs the same, so the scaling is exact up to
  timing noise, and the results say which cells are scaled), python-flint ``arb_mat`` products at
  53 R bits and mpmath ``matrix`` products at 53 R bits where they are predicted (cubic from the
  previous n) to finish in ``--peer-budget`` seconds (else skipped, with the prediction);
* ``solve``: ``expansions.linalg.solve(a, b)`` (recursive LU, products by slices), the same with
  ``refine=True`` (float64 LAPACK factors and refinement; these random matrices are well
  conditioned), NumPy's float64 ``solve``, ``arb_mat.solve`` and ``mpmath.lu_solve`` at 53 R bits
  under the same budget rule;
* every cell on one core and on all cores: each thread count runs in its own process with
  ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``NUMBA_NUM_THREADS`` set (the
  BLAS reads them at start), so NumPy's figure in a cell has the same threads as the expansions';
* ``ill-conditioned``: a 1000 x 1000 system (``--ill-n``) of condition number 1e20 at R = 2: A =
  U diag(s) V^T with U, V float64 orthogonal factors of Gaussian matrices and s from 1 to 1e-20
  (geometric), formed at R = 4 by slice products and rounded to R = 2 (its condition number is that of
  the construction: the rounding moves A by about 1e-32), b = A x* at R = 2; ``solve`` timed on all
  cores, its backward error ||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf) computed exactly in
  integers, against the stated bound 8 n u (u = 2^-(52 R)).

Timings are the minimum of ``--repeats`` runs (one run where a call takes more than 10 s), after one
untimed call of every operation per R at a small size (which compiles the engine's kernels).

    python -m bench.linalg            # the full table (n up to 2000, R = 2, 3, 4, 8: one to two hours on 2 cores)
    python -m bench.linalg --quick    # n = 100, 300; R = 2, 4; no ill-conditioned system beyond n = 200

writes ``bench/results/linalg_<device>.md`` (tables, the issue's goals met or not, the GPU estimate),
``.json`` (every timing) and ``.log`` (this run's output).

    python -m bench.linalg --spectral  # eigh and svd only: n = 50, 200; R = 2, 4 (printed, no files)

times ``expansions.linalg.eigh`` (random symmetric matrices) and ``svd`` (random square ones) beside
NumPy's float64 ``eigh`` and ``svd`` on the leading terms and mpmath's ``eigsy`` and ``svd_r`` at
53 R bits (n <= ``--spectral-mpmath-n``), in this process with the threads the environment gives
(set ``OPENBLAS_NUM_THREADS`` etc. to 1 for one core).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from fractions import Fraction
from functools import partial
from pathlib import Path

import mpmath
import numpy as np

import expansions as ex
from expansions import linalg as la
from expansions import slices
from expansions.__main__ import device_slug, environment
from expansions.generate import random_terms
from expansions.reduce import choose_method

from . import cpu_model, load_note

NS = (100, 300, 1000, 2000)
RS = (2, 3, 4, 8)
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
#: FP64 tensor-core rate of an H100 SXM (NVIDIA H100 Tensor Core GPU datasheet: 67 TFLOPS; PCIe 51).
H100_FP64_TENSOR_FLOPS = 67e12
#: HBM3 bandwidth of an H100 SXM (same datasheet: 3.35 TB/s).
H100_BANDWIDTH = 3.35e12


#: CPU seconds (this process, all its threads) of the last :func:`timed` measurement's best call.
LAST_CPU = [0.0]


def timed(f, repeats: int):
    """Minimum wall time of ``repeats`` calls of f (one call if the first takes more than 10 s); the
    process CPU time of that call is left in :data:`LAST_CPU` (on one thread, the time the machine's
    other work did not take from it)."""
    best, cpu = math.inf, 0.0
    for i in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        f()
        wall, used = time.perf_counter() - t, time.process_time() - c
        if wall < best:
            best, cpu = wall, used
        if best > 10 and i == 0:
            break
    LAST_CPU[0] = cpu
    return best


def data(n: int, R: int, seed: int):
    A = ex.from_terms(random_terms((n, n), R, seed=seed))
    B = ex.from_terms(random_terms((n, n), R, seed=seed + 1))
    b = ex.from_terms(random_terms((n,), R, seed=seed + 2))
    return A, B, b


# ----------------------------------------------------------------------------------------------
# peers


def flint_matrix(x: ex.ExpansionArray, R: int):
    import flint  # optional peer (the bench extra)

    flint.ctx.prec = 53 * R
    rows = []
    for row in (x.terms if x.ndim == 2 else x.terms[:, None, :]):
        rows.append([sum((flint.arb(float(t)) for t in e[1:]), flint.arb(float(e[0]))) for e in row])
    return flint.arb_mat(rows)


def mpmath_matrix(x: ex.ExpansionArray, R: int):
    mpmath.mp.prec = 53 * R
    t = x.terms if x.ndim == 2 else x.terms[:, None, :]
    return mpmath.matrix([[sum((mpmath.mpf(float(v)) for v in e[1:]), mpmath.mpf(float(e[0]))) for e in row]
                          for row in t])


def predicted(history: dict, key, n: int, power: int = 3):
    """The time at n predicted from the largest smaller n measured for key (cubic), or None."""
    known = [(m, t) for (k, m), t in history.items() if k == key and m < n and t is not None]
    if not known:
        return None
    m, t = max(known)
    return t * (n / m) ** power


# ----------------------------------------------------------------------------------------------
# one thread setting (a worker process)


def elementwise_time(A, B, n, budget, R):
    """(seconds for the whole element-wise product, rows timed): all rows if one row's time times n
    fits the budget, else the rows that fit, scaled by n / rows."""
    t1 = timed(lambda: ex.matmul(A[:1], B, method="elementwise"), 1)
    rows = n if t1 * n <= budget else max(1, min(n, int(budget / max(t1, 1e-9))))
    if rows == n:
        return timed(lambda: ex.matmul(A, B, method="elementwise"), 1), n
    t = timed(lambda: ex.matmul(A[:rows], B, method="elementwise"), 1)
    return t * n / rows, rows


def measure(n: int, R: int, args, history: dict, threads: str) -> dict:
    """One cell: the products and solves of (n, R) by every executor (see the module docstring)."""
    A, B, b = data(n, R, seed=n + R)
    a0, b0, v0 = A.terms[..., 0].copy(), B.terms[..., 0].copy(), b.terms[:, 0].copy()
    reps = args.repeats if n <= 300 else max(1, args.repeats // 2)
    cell = {"n": n, "R": R, "threads": threads, "method": choose_method(n, n, n, R, "float64"),
            "gemms": slices.plan(n, R, "float64").gemms}
    cell["numpy_matmul"] = timed(lambda: a0 @ b0, max(3, args.repeats))
    cell["numpy_matmul_cpu"] = LAST_CPU[0]
    cell["matmul"] = timed(lambda: ex.matmul(A, B), reps)
    cell["matmul_cpu"] = LAST_CPU[0]
    cell["elementwise"], cell["elementwise_rows"] = elementwise_time(A, B, n, args.elementwise_budget, R)
    cell["numpy_solve"] = timed(lambda: np.linalg.solve(a0, v0), max(3, args.repeats))
    cell["numpy_solve_cpu"] = LAST_CPU[0]
    cell["solve"] = timed(lambda: la.solve(A, b), 1 if n >= 1000 else reps)
    cell["solve_cpu"] = LAST_CPU[0]
    cell["solve_refine"] = timed(lambda: la.solve(A, b, refine=True), 1 if n >= 1000 else reps)
    peers = (("flint", flint_matrix, lambda p, q: p * q, lambda p, q: p.solve(q)),
             ("mpmath", mpmath_matrix, lambda p, q: p * q, mpmath.lu_solve))
    for peer, make, mul, solve in peers:
        for what, f in (("matmul", mul), ("solve", solve)):
            key = f"{peer}_{what}"
            guess = predicted(history, key, n)
            if guess is not None and guess > args.peer_budget:
                cell[key], cell[key + "_skipped"] = None, f"predicted {guess:.0f} s > {args.peer_budget:.0f} s"
                history[(key, n)] = None
                continue
            try:
                P = make(A, R)
                Q = make(B, R) if what == "matmul" else make(b, R)
            except ImportError as exc:
                cell[key], cell[key + "_skipped"] = None, f"absent: {exc}"
                continue
            t = timed(lambda f=f, P=P, Q=Q: f(P, Q), 1)
            cell[key], cell[key + "_cpu"] = t, LAST_CPU[0]
            history[(key, n)] = t
    return cell


def warm_up(rs):
    """One untimed call of every measured operation per R at a small size: compiles (or loads) the
    engine's kernels, so that no timing includes compilation."""
    for R in rs:
        A, B, b = data(40, R, 0)
        ex.matmul(A, B)
        ex.matmul(A[:2], B, method="elementwise")
        la.solve(A, b)
        la.solve(A, b, refine=True)


def worker(args) -> list:
    threads = os.environ.get("NUMBA_NUM_THREADS", "all")
    warm_up(args.rs)
    cells, history = [], {}
    for R in args.rs:
        for n in args.ns:
            cell = measure(n, R, args, history, threads)
            cells.append(cell)
            print(json.dumps(cell), flush=True)
    return cells


# ----------------------------------------------------------------------------------------------
# the ill-conditioned system


def exact_integers(terms):
    """(object array of Python ints M, exponent e) with terms' values summed = M 2**e, exactly."""
    t = np.asarray(terms, dtype=np.float64)
    nz = t[t != 0]
    e = int(np.frexp(np.abs(nz))[1].min()) - 53 if nz.size else 0
    m, ex_ = np.frexp(t)
    ints = (m * 2.0**53).astype(np.int64).astype(object)
    shifts = (ex_.astype(np.int64) - 53 - e).astype(object)
    vals = np.vectorize(lambda i, s: i << s if s >= 0 else 0, otypes=[object])(ints, shifts)
    return vals.sum(axis=-1), e


def backward_error(A, x, b) -> float:
    """||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf), exactly (integers), as a float."""
    Ai, ea = exact_integers(A.terms)
    xi, exv = exact_integers(x.terms)
    bi, eb = exact_integers(b.terms)
    e = min(ea + exv, eb)
    r = np.array([int(v) for v in Ai.dot(xi)], dtype=object) * (1 << (ea + exv - e)) \
        - bi * (1 << (eb - e))
    num = Fraction(int(max(abs(v) for v in r))) * Fraction(2) ** e
    normA = Fraction(int(max(sum(abs(v) for v in row) for row in Ai))) * Fraction(2) ** ea
    den = normA * Fraction(int(max(abs(v) for v in xi))) * Fraction(2) ** exv + \
        Fraction(int(max(abs(v) for v in bi))) * Fraction(2) ** eb
    return float(num / den)


def ill_conditioned(n: int, cond: float, seed: int = 7) -> dict:
    warm_up([2, 4])
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((n, n)))[0]
    V = np.linalg.qr(rng.standard_normal((n, n)))[0]
    s = np.geomspace(1.0, 1.0 / cond, n)
    US = ex.array(U, terms=4) * ex.array(s, terms=4)[None, :]  # exact: float64 products in 4 terms
    t = time.perf_counter()
    A4 = ex.matmul(US, ex.array(V.T.copy(), terms=4))
    A = ex.array(A4, terms=2)
    xs = ex.array(rng.standard_normal(n), terms=2)
    b = ex.matmul(A, xs)
    build = time.perf_counter() - t
    t = time.perf_counter()
    x = la.solve(A, b)
    secs = time.perf_counter() - t
    eta = backward_error(A, x, b)
    u = 2.0 ** (-52 * 2)
    fwd = float(np.abs((x - xs).to_float()).max() / np.abs(xs.to_float()).max())
    return {"n": n, "R": 2, "condition": cond, "construction_seconds": build, "solve_seconds": secs,
            "backward_error": eta, "bound": 8 * n * u, "within_bound": eta <= 8 * n * u,
            "forward_error": fwd, "threads": os.environ.get("NUMBA_NUM_THREADS", "all")}


# ----------------------------------------------------------------------------------------------
# the report


def spectral(ns, rs, repeats: int, mpmath_n: int) -> list:
    """``--spectral``: one record per (n, R) with the seconds of eigh and svd in expansions, NumPy's
    float64 eigh and svd, and mpmath's eigsy and svd_r at 53 R bits where n <= mpmath_n (printed as
    it goes)."""
    records = []
    for n in ns:
        rng = np.random.default_rng(n)
        M = rng.standard_normal((n, n))
        S = M + M.T
        base = {"numpy_eigh": timed(partial(np.linalg.eigh, S), repeats),
                "numpy_svd": timed(partial(np.linalg.svd, M), repeats)}
        for R in rs:
            A, B = ex.array(S, terms=R), ex.array(M, terms=R)
            la.eigh(A[:4, :4]), la.svd(B[:4, :4])  # compile the engine's kernels for R
            rec = {"n": n, "R": R, **base, "eigh": timed(partial(la.eigh, A), repeats),
                   "svd": timed(partial(la.svd, B), repeats)}
            line = (f"n={n} R={R}: eigh {rec['eigh']:.4g} s ({rec['eigh'] / rec['numpy_eigh']:.0f}x NumPy float64"
                    f" {rec['numpy_eigh']:.3g} s), svd {rec['svd']:.4g} s ({rec['svd'] / rec['numpy_svd']:.0f}x NumPy"
                    f" float64 {rec['numpy_svd']:.3g} s)")
            if n <= mpmath_n:
                with mpmath.workprec(53 * R):
                    rec["mpmath_eigsy"] = timed(partial(mpmath.eigsy, mpmath.matrix(S.tolist())), 1)
                    rec["mpmath_svd_r"] = timed(partial(mpmath.svd_r, mpmath.matrix(M.tolist())), 1)
                line += (f"; mpmath eigsy {rec['mpmath_eigsy']:.3g} s ({rec['mpmath_eigsy'] / rec['eigh']:.0f}x"
                         f" slower), svd_r {rec['mpmath_svd_r']:.3g} s"
                         f" ({rec['mpmath_svd_r'] / rec['svd']:.0f}x slower)")
            print(line, flush=True)
            records.append(rec)
    return records


def gpu_estimate(n: int, R: int) -> dict:
    """Estimated time of an n x n slice product on an H100 (not measured): the slice products at the
    FP64 tensor-core rate, plus the passes over memory of the folds (a product read, two
    accumulator levels read and written) and of the slicing and finishing, at the HBM bandwidth."""
    plan = slices.plan(n, R, "float64")
    gemm = plan.gemms * 2 * n**3 / H100_FP64_TENSOR_FLOPS
    memory = 8 * n * n * (5 * plan.gemms + 2 * plan.slices * 2 + 2 * R + (plan.levels + 2) * 2) / H100_BANDWIDTH
    return {"n": n, "R": R, "gemms": plan.gemms, "gemm_seconds": gemm, "memory_seconds": memory,
            "seconds": gemm + memory}


def fmt_s(v) -> str:
    """Seconds with a unit: ms below one second."""
    return "-" if v is None else (f"{v:.3g} s" if v >= 1 else f"{v * 1e3:.3g} ms")


def markdown(cells, ill, args, env, command, log_name, date=None, cpu=None, blas=None, load=None, cores=None) -> str:
    when = datetime.datetime.fromisoformat(date) if date else datetime.datetime.now(datetime.timezone.utc)
    lines = [f"# Linear algebra at BLAS speed ({env['machine']})", "",
             f"`{command}`, {when:%Y-%m-%d %H:%M} UTC, commit {env['commit']}. Raw output: `{log_name}`.", "",
             f"- CPU: {cpu or cpu_model()}, {cores or os.cpu_count()} cores; {platform.system()} "
             f"{platform.release()}; Python "
             f"{env['python']}, NumPy {env['numpy']} ({blas or blas_name()}); workers with OMP_WAIT_POLICY="
             f"{args.omp_wait_policy}; {load_note(load, cores or os.cpu_count())}.",
             "- Data: random full-precision float64 expansions of R terms (leading exponents in [-8, 8]); "
             "NumPy's float64 figures on their leading terms; peers at 53 R bits. Times in seconds (ms where "
             "marked), minimum of the repeats.",
             "- `ratio (CPU time)`: the same ratio from the process CPU times of the two calls (on one thread "
             "the time the machine's other work did not take from it; on all threads the sum over them).",
             "- `x @ y`: the default method (slices here: the `method` column in the JSON); `element-wise`: "
             "`method=\"elementwise\"`, scaled from the rows in `rows` where fewer than n; "
             "flint/mpmath: skipped where predicted (cubic) above the budget "
             f"({args.peer_budget:.0f} s).", ""]
    lines += ["## Matrix products", "",
              "| n | R | threads | NumPy float64 | `x @ y` | ratio | ratio (CPU time) | slice products | "
              "element-wise (rows) | speed-up | flint arb_mat | x faster than flint | mpmath |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        fl, mm = c.get("flint_matmul"), c.get("mpmath_matmul")
        lines.append(f"| {c['n']} | {c['R']} | {c['threads']} | {fmt_s(c['numpy_matmul'])} | {fmt_s(c['matmul'])} | "
                     f"{c['matmul'] / c['numpy_matmul']:.1f} | "
                     f"{c['matmul_cpu'] / max(c['numpy_matmul_cpu'], 1e-9):.1f} | "
                     f"{c['gemms']} | {fmt_s(c['elementwise'])} "
                     f"({c['elementwise_rows']}) | {c['elementwise'] / c['matmul']:.0f} | "
                     f"{fmt_s(fl) if fl else c.get('flint_matmul_skipped', '-')} | "
                     f"{(fl / c['matmul']) if fl else float('nan'):.1f} | "
                     f"{fmt_s(mm) if mm else c.get('mpmath_matmul_skipped', '-')} |")
    lines += ["", "## Solves (one right-hand side)", "",
              "| n | R | threads | NumPy float64 | `solve` (LU) | ratio | `solve(refine=True)` | ratio | "
              "flint arb_mat.solve | mpmath lu_solve |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        fs, ms = c.get("flint_solve"), c.get("mpmath_solve")
        lines.append(f"| {c['n']} | {c['R']} | {c['threads']} | {fmt_s(c['numpy_solve'])} | {fmt_s(c['solve'])} | "
                     f"{c['solve'] / c['numpy_solve']:.0f} | {fmt_s(c['solve_refine'])} | "
                     f"{c['solve_refine'] / c['numpy_solve']:.0f} | "
                     f"{fmt_s(fs) if fs else c.get('flint_solve_skipped', '-')} | "
                     f"{fmt_s(ms) if ms else c.get('mpmath_solve_skipped', '-')} |")
    if ill:
        lines += ["", "## An ill-conditioned system", "",
                  f"n = {ill['n']}, R = 2, condition number {ill['condition']:.0e} (by construction), threads "
                  f"{ill['threads']}: `solve` took {ill['solve_seconds']:.1f} s (building the system "
                  f"{ill['construction_seconds']:.1f} s); backward error (exact) {ill['backward_error']:.3e}, "
                  f"stated bound 8 n u = {ill['bound']:.3e}: {'within' if ill['within_bound'] else 'NOT within'}; "
                  f"forward error {ill['forward_error']:.2e} (about condition x u)."]
    lines += ["", "## The issue's goals", ""] + [f"- {g}" for g in goals(cells, ill)]
    lines += ["", "## Estimated GPU times (not measured)", "",
              "An H100 SXM would run the slice products on its FP64 tensor cores (67 TFLOP/s, NVIDIA's H100 "
              "datasheet) and the slicing, folding and finishing passes at its memory bandwidth (3.35 TB/s); "
              "the estimate adds both (kernel launch overheads not counted):", "",
              "| n | R | slice products | products | memory passes | total |", "|---|---|---|---|---|---|"]
    for n in args.ns:
        for R in args.rs:
            g = gpu_estimate(n, R)
            lines.append(f"| {n} | {R} | {g['gemms']} | {fmt_s(g['gemm_seconds'])} | {fmt_s(g['memory_seconds'])} | "
                         f"{fmt_s(g['seconds'])} |")
    return "\n".join(lines) + "\n"


def goals(cells, ill) -> list:
    out = []
    by = {(c["n"], c["R"], c["threads"]): c for c in cells}
    for (n, R, th), c in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1], str(kv[0][2]))):
        ratio = c["matmul"] / c["numpy_matmul"]
        if n == 1000 and R in (2, 4):
            limit = 25 if R == 2 else 100
            cpu = c["matmul_cpu"] / max(c["numpy_matmul_cpu"], 1e-9)
            out.append(f"n = 1000, R = {R}, threads {th}: `x @ y` {ratio:.1f}x NumPy float64 in wall time, "
                       f"{cpu:.1f}x in CPU time (goal <= {limit}x): {'met' if ratio <= limit else 'NOT met'} in "
                       f"wall time, {'met' if cpu <= limit else 'NOT met'} in CPU time")
        if n == 1000:
            sp = c["elementwise"] / c["matmul"]
            out.append(f"n = 1000, R = {R}, threads {th}: {sp:.0f}x faster than the element-wise path (goal >= 100x): "
                       f"{'met' if sp >= 100 else 'NOT met'}")
        if R <= 4 and c.get("flint_matmul"):
            f = c["flint_matmul"] / c["matmul"]
            out.append(f"n = {n}, R = {R}, threads {th}: {f:.1f}x faster than flint arb_mat (goal >= 10x): "
                       f"{'met' if f >= 10 else 'NOT met'}")
    if ill:
        ok = ill["solve_seconds"] < 60 and ill["within_bound"]
        out.append(f"solve, n = {ill['n']}, condition 1e20, R = 2: {ill['solve_seconds']:.1f} s (goal < 60 s), "
                   f"backward error {'within' if ill['within_bound'] else 'NOT within'} the stated bound: "
                   f"{'met' if ok else 'NOT met'}")
    return out


def readme_table(result: dict, n: int = 1000, threads: str = "1") -> str:
    """The README's summary of a results JSON: the n = 1000 cells on one core (wall times, and the
    products' ratio from CPU times too), and the ill-conditioned solve."""
    lines = ["| R | NumPy float64 `a @ b` | `x @ y` | ratio (CPU time) | element-wise | python-flint | "
             "NumPy `solve` | `solve` | `solve(refine=True)` |", "|---|---|---|---|---|---|---|---|---|"]
    for c in sorted((c for c in result["cells"] if c["n"] == n and str(c["threads"]) == threads),
                    key=lambda c: c["R"]):
        fl = c.get("flint_matmul")
        lines.append(f"| {c['R']} | {fmt_s(c['numpy_matmul'])} | {fmt_s(c['matmul'])} | "
                     f"{c['matmul'] / c['numpy_matmul']:.0f}x ({c['matmul_cpu'] / c['numpy_matmul_cpu']:.0f}x) | "
                     f"{fmt_s(c['elementwise'])} | {fmt_s(fl) if fl else 'skipped'} | {fmt_s(c['numpy_solve'])} | "
                     f"{fmt_s(c['solve'])} | {fmt_s(c['solve_refine'])} |")
    ill = result.get("ill_conditioned")
    if ill:
        lines += ["", f"A {ill['n']} x {ill['n']} system of condition number {ill['condition']:.0e} at R = 2: "
                      f"solved in {ill['solve_seconds']:.1f} s, backward error {ill['backward_error']:.1e} "
                      f"(exact; stated bound 8 n u = {ill['bound']:.1e})."]
    return "\n".join(lines)



def blas_name() -> str:
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # the configuration's layout differs between NumPy versions
        return "BLAS unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="n = 100, 300; R = 2, 4; ill-conditioned n = 200")
    ap.add_argument("--ns", default=",".join(map(str, NS)))
    ap.add_argument("--rs", default=",".join(map(str, RS)))
    ap.add_argument("--threads", default="1,all", help="thread counts, each in its own process ('all': unset)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-budget", type=float, default=60.0)
    ap.add_argument("--elementwise-budget", type=float, default=20.0)
    ap.add_argument("--ill-n", type=int, default=1000)
    ap.add_argument("--ill-condition", type=float, default=1e20)
    ap.add_argument("--omp-wait-policy", default=os.environ.get("OMP_WAIT_POLICY", "passive"),
                    help="OMP_WAIT_POLICY of the workers (numba's threads): 'passive' unless set; with the "
                         "default active spinning, a machine with more busy threads than cores makes every "
                         "parallel region of the engine cost milliseconds")
    ap.add_argument("--readme", metavar="JSON", help="print the README's table from a results JSON and exit")
    ap.add_argument("--render", metavar="JSON", help="write the .md of a results JSON again (its run's figures, "
                                                     "this version's layout) and exit")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ill-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--spectral", action="store_true", help="eigh and svd only (printed, no files)")
    ap.add_argument("--spectral-ns", default="50,200")
    ap.add_argument("--spectral-rs", default="2,4")
    ap.add_argument("--spectral-mpmath-n", type=int, default=50)
    args = ap.parse_args(argv)
    if args.spectral:
        spectral([int(v) for v in args.spectral_ns.split(",")], [int(v) for v in args.spectral_rs.split(",")],
                 args.repeats, args.spectral_mpmath_n)
        return 0
    if args.quick:
        args.ns, args.rs, args.ill_n = "100,300", "2,4", 200
    args.ns = [int(v) for v in str(args.ns).split(",")]
    args.rs = [int(v) for v in str(args.rs).split(",")]
    if args.readme:
        print(readme_table(json.loads(Path(args.readme).read_text())))
        return 0
    if args.render:
        res = json.loads(Path(args.render).read_text())
        run_args = argparse.Namespace(**res["args"])
        text = markdown(res["cells"], res["ill_conditioned"], run_args, res["environment"], res["command"],
                        Path(args.render).with_suffix(".log").name, res.get("date"), res.get("cpu"), res.get("blas"),
                        res.get("load_average"), res.get("cores"))
        Path(args.render).with_suffix(".md").write_text(text)
        print(text)
        return 0
    if args.worker:
        worker(args)
        return 0
    if args.ill_worker:
        print(json.dumps(ill_conditioned(args.ill_n, args.ill_condition)), flush=True)
        return 0
    argv = list(argv if argv is not None else sys.argv[1:])
    command = "python -m bench.linalg " + " ".join(argv)
    env = environment()
    load_start = os.getloadavg()
    log, cells, ill = [], [], None
    base = ["--ns", ",".join(map(str, args.ns)), "--rs", ",".join(map(str, args.rs)), "--repeats", str(args.repeats),
            "--peer-budget", str(args.peer_budget), "--elementwise-budget", str(args.elementwise_budget)]
    runs = [(t, ["--worker"] + base) for t in args.threads.split(",")]
    if args.ill_n:
        runs.append(("all", ["--ill-worker", "--ill-n", str(args.ill_n), "--ill-condition", str(args.ill_condition)]))
    for threads, extra in runs:
        child_env = dict(os.environ, OMP_WAIT_POLICY=args.omp_wait_policy)
        for v in THREAD_VARS:
            child_env.pop(v, None)
            if threads != "all":
                child_env[v] = threads
        head = f"# threads {threads}, OMP_WAIT_POLICY={args.omp_wait_policy}: python -m bench.linalg {' '.join(extra)}"
        print(head, flush=True)
        log.append(head)
        proc = subprocess.Popen([sys.executable, "-m", "bench.linalg", *extra], env=child_env, stdout=subprocess.PIPE,
                                text=True, cwd=Path(__file__).resolve().parents[1])
        for line in proc.stdout:
            print(line, end="", flush=True)
            log.append(line.rstrip("\n"))
            if line.startswith("{"):
                rec = json.loads(line)
                if "solve_seconds" in rec:
                    ill = rec
                else:
                    cells.append(rec)
        if proc.wait() != 0:
            raise SystemExit(f"the worker for threads {threads} failed (exit {proc.returncode})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"linalg_{device_slug()}"
    load = {"start": list(load_start), "end": list(os.getloadavg())}
    (out / f"{stem}.log").write_text("\n".join(log) + "\n")
    (out / f"{stem}.json").write_text(json.dumps(
        {"command": command.strip(), "environment": env, "cpu": cpu_model(), "blas": blas_name(),
         "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "args": vars(args),
         "load_average": load, "cores": os.cpu_count(), "cells": cells,
         "ill_conditioned": ill, "goals": goals(cells, ill),
         "gpu_estimate": [gpu_estimate(n, R) for n in args.ns for R in args.rs]}, indent=1))
    text = markdown(cells, ill, args, env, command.strip(), f"{stem}.log", load=load)
    (out / f"{stem}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
