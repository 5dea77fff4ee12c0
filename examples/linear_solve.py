"""A linear system of condition number about 1e40, solved with expansions at R = 4 and R = 8.

The system: the n x n Hilbert matrix scaled by L = lcm(1, ..., 2n - 1), A_ij = L / (i + j + 1), an
integer matrix (exact in two float64 terms for n <= 28) with the Hilbert matrix's condition number
(about 1e40 for n = 28), and b = A x* for x* = (1, ..., 1), so the exact solution is known.  The
program solves it with ``expansions.linalg.solve`` (LU with partial pivoting, every operation at the
expansion's precision) at R = 4 and R = 8, with mpmath's ``lu_solve`` at the same precision
(52 R + 1 bits), and with float64 ``numpy.linalg.solve`` (on A and b rounded to float64, which is all
a float64 user has), and prints each one's largest relative error against x*, computed exactly.

With ``--measure`` it measures the error behaviour of the routines of ``expansions.linalg`` on
random matrices: the backward error of solve, ||A x - b|| / (||A|| ||x|| + ||b||) (infinity norms),
and the residuals ||P A - L U|| / ||A||, ||A - L L^T|| / ||A||, ||A - Q R|| / ||A||, ||Q^T Q - I||,
||A inv(A) - I||, all computed exactly with rationals, in units of the format's precision
u = 2^-(52 R).

    python examples/linear_solve.py              # n = 28 (condition ~1e40), R = 4 and 8
    python examples/linear_solve.py --quick      # n = 16 (condition ~1e22)
    python examples/linear_solve.py --measure    # the error table of expansions.linalg
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from fractions import Fraction

import mpmath
import numpy as np

import expansions as ex
from expansions import linalg as la


def system(n: int):
    """(A as an object array of Python ints, b likewise, the exact solution as Fractions)."""
    L = math.lcm(*range(1, 2 * n))
    A = np.array([[L // (i + j + 1) for j in range(n)] for i in range(n)], dtype=object)
    b = A.dot(np.ones(n, dtype=object))
    return A, b, [Fraction(1)] * n


def condition(A) -> float:
    """The infinity-norm condition number of A, with mpmath at 600 bits."""
    with mpmath.workprec(600):
        M = mpmath.matrix(A.tolist())
        return float(mpmath.mnorm(M, 1) * mpmath.mnorm(mpmath.inverse(M), 1))


def rel_error(values, exact) -> float:
    err = max(abs(Fraction(v) - e) for v, e in zip(values, exact))
    return float(err / max(abs(e) for e in exact))


def solve_table(n: int, Rs) -> int:
    A, b, exact = system(n)
    print(f"scaled Hilbert system, n = {n}: A_ij = lcm(1..{2 * n - 1}) / (i + j + 1), b = A (1, ..., 1)")
    print(f"condition number (infinity norm) = {condition(A):.3e}")
    print()
    print(f"{'method':<34} {'precision':>12} {'max relative error':>20} {'seconds':>8}")
    f64 = np.linalg.solve(A.astype(np.float64), b.astype(np.float64))
    print(f"{'numpy.linalg.solve (float64)':<34} {'53 bits':>12} {rel_error(f64.tolist(), exact):>20.3e} {'':>8}")
    failures = 0
    for R in Rs:
        t0 = time.perf_counter()
        x = la.solve(ex.array(A, terms=R), ex.array(b, terms=R))
        secs = time.perf_counter() - t0
        e_ex = rel_error(np.asarray(x.to_fraction()).tolist(), exact)
        with mpmath.workprec(52 * R + 1):
            xm = mpmath.lu_solve(mpmath.matrix(A.tolist()), mpmath.matrix(b.tolist()))
            e_mp = rel_error([Fraction(*mpmath.mpf(v).as_integer_ratio()) for v in xm], exact)
        print(f"{f'expansions.linalg.solve, R = {R}':<34} {f'{52 * R + 1} bits':>12} {e_ex:>20.3e} {secs:>8.2f}")
        print(f"{f'mpmath.lu_solve, {52 * R + 1} bits':<34} {f'{52 * R + 1} bits':>12} {e_mp:>20.3e}")
        # LU's error is about cond * u (up to a modest factor): a check of the order of magnitude
        if e_ex > condition(A) * 2.0 ** (-52 * R) * 64 * n:
            failures += 1
            print(f"  FAILED: the error exceeds 64 n cond u = {condition(A) * 2.0 ** (-52 * R) * 64 * n:.3e}")
    print()
    print("OK: each error is within 64 n cond u" if not failures else f"FAILED: {failures} results")
    return 1 if failures else 0


def _fr(x):
    return np.asarray(x.to_fraction(), dtype=object)


def _inf_norm(M) -> Fraction:
    M = np.asarray(M, dtype=object)
    if M.ndim == 1:
        return max(abs(v) for v in M)
    return max(sum(abs(v) for v in row) for row in M)


def measure(Rs, n: int, count: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    print(f"Error behaviour of expansions.linalg on {count} random {n} x {n} matrices (standard normal entries,"
          " float64, taken exactly) per R, in units of u = 2^-(52 R); largest over the matrices, computed exactly.")
    print()
    hdr = f"{'R':>2} | {'solve backward':>14} | {'PA - LU':>9} | {'A - LL^T':>9} | {'A - QR':>9} | {'Q^TQ - I':>9} | " \
          f"{'A inv - I':>9}"
    print(hdr)
    print("-" * len(hdr))
    for R in Rs:
        u = Fraction(1, 2 ** (52 * R))
        worst = [Fraction(0)] * 6
        for _ in range(count):
            a = rng.standard_normal((n, n))
            A = ex.array(a, terms=R)
            Af = _fr(A)
            b = ex.array(rng.standard_normal(n), terms=R)
            x = la.solve(A, b)
            xf, bf = _fr(x), _fr(b)
            be = _inf_norm(Af.dot(xf) - bf) / (_inf_norm(Af) * _inf_norm(xf) + _inf_norm(bf))
            P, L, U = la.lu(A)
            lu = P.T.astype(int).astype(object).dot(Af) - _fr(L).dot(_fr(U))
            S = ex.array(a @ a.T + n * np.eye(n), terms=R)
            C = la.cholesky(S)
            ch = _fr(S) - _fr(C).dot(_fr(C).T)
            Q, Rq = la.qr(A)
            qr = Af - _fr(Q).dot(_fr(Rq))
            orth = _fr(Q).T.dot(_fr(Q)) - np.eye(n, dtype=int).astype(object)
            iv = Af.dot(_fr(la.inv(A))) - np.eye(n, dtype=int).astype(object)
            vals = [be, _inf_norm(lu) / _inf_norm(Af), _inf_norm(ch) / _inf_norm(_fr(S)), _inf_norm(qr) / _inf_norm(Af),
                    _inf_norm(orth), _inf_norm(iv)]
            worst = [max(w, v / u) for w, v in zip(worst, vals)]
        print(f"{R:>2} | " + " | ".join(f"{float(w):>{14 if i == 0 else 9}.3g}" for i, w in enumerate(worst)))
    print()
    print("(A inv - I grows with the condition number of A, as for any inverse; the others are backward errors.)")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 16 (condition ~1e22)")
    ap.add_argument("-n", type=int, default=None)
    ap.add_argument("--terms", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--measure", action="store_true", help="the error table on random matrices")
    ap.add_argument("--count", type=int, default=20, help="matrices per R for --measure")
    ap.add_argument("--device", choices=("cpu",), default="cpu")
    args = ap.parse_args(argv)
    if args.measure:
        return measure((2, 3, 4, 8), args.n or 8, 3 if args.quick else args.count, 21)
    return solve_table(args.n or (16 if args.quick else 28), args.terms)


if __name__ == "__main__":
    sys.exit(main())
