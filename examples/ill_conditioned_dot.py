"""Ill-conditioned dot products: float64 gets no digit right, expansions of R terms do, provably.

The vectors come from the generator GenDot of Ogita, Rump and Oishi ("Accurate sum and dot
product", SIAM J. Sci. Comput. 26(6), 2005, Algorithm 6.1), written here from its published
description: n float64 pairs whose dot product has a chosen condition number

    cond = 2 sum |x_i y_i| / |sum x_i y_i|.

The first half of the pairs have random signs and exponents spread over [0, log2(cond)/2]; each
pair of the second half is chosen so that the running exact sum is cancelled down to a smaller
and smaller size (we compute the running sum exactly with Fractions where the paper uses Dot2),
and the pairs are shuffled.  The exact dot product and the actual condition number are computed
with Fractions.

float64 (``numpy.dot``) has a relative error of about cond * 2^-53: for cond >= 1e17 it usually
has no correct digit, and its result can even be of the wrong sign or size.  ``expansions.dot``
converts the floats exactly to R-term expansions, forms each product x_i y_i with the truncated
multiplication (Algorithm 2 of Collange et al. 2016) and adds them with a pairwise tree of safe
additions (Algorithm 1).  Its proven bound, ``expansions.bounds.dot`` (Prop. IV.2 for each product,
Prop. III.1 at each node of the tree, see its docstring), is relative to sum |x_i y_i|, plus an
absolute term for the underflow threshold (``expansions.bounds.dot_underflow_term``):

    |dot(x, y) - x.y| <= dot(n, R, 53).value * sum |x_i y_i| + dot_underflow_term(n, R, float64)

so, relative to the result, the bound is about cond/2 * 2^(-(p-1)R + ...): R terms are enough when
R*52 exceeds log2(cond) by the number of bits wanted.  The program checks this inequality exactly
(rationals, no rounding) for every condition number and R, prints a table and exits with status 1
if any check fails.

Columns: "cond" the target and the actual condition number, "np.dot" the relative error of
float64, then for each R the observed relative error of ``expansions.dot``, the bound divided by
|x.y|, and the correct significant digits observed / guaranteed by the bound (floor of -log10 of
the relative error, 0 when the relative error is >= 1).

    python examples/ill_conditioned_dot.py                 # n = 200, cond 1e10 .. 1e60, R = 2, 4, 6, 8
    python examples/ill_conditioned_dot.py --quick         # n = 40, cond 1e30 and 1e60, R = 4, 8
    python examples/ill_conditioned_dot.py --device cuda   # the same on the GPU
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from fractions import Fraction

import numpy as np

import expansions as ex
from expansions import bounds

try:
    dot = ex.dot
except AttributeError:  # not exported from the package yet: it lives in expansions.reduce
    from expansions.reduce import dot


def exact_dot(x, y) -> Fraction:
    return sum((Fraction(a) * Fraction(b) for a, b in zip(x.tolist(), y.tolist())), Fraction(0))


def gen_dot(n: int, cond: float, rng: np.random.Generator):
    """Ogita-Rump-Oishi GenDot (2005, Algorithm 6.1): float64 x, y with 2 sum|x_i y_i| / |x.y| ~ cond."""
    if n < 6:
        raise ValueError("GenDot needs n >= 6")
    b = math.log2(cond)
    n2 = round(n / 2)
    x = np.empty(n)
    y = np.empty(n)
    e = np.rint(rng.random(n2) * b / 2).astype(int)
    e[0] = round(b / 2) + 1
    e[-1] = 0
    x[:n2] = (2 * rng.random(n2) - 1) * np.ldexp(1.0, e)
    y[:n2] = (2 * rng.random(n2) - 1) * np.ldexp(1.0, e)
    running = exact_dot(x[:n2], y[:n2])
    e2 = np.rint(np.linspace(b / 2, 0, n - n2)).astype(int)
    for i in range(n2, n):
        x[i] = (2 * rng.random() - 1) * math.ldexp(1.0, int(e2[i - n2]))
        y[i] = ((2 * rng.random() - 1) * math.ldexp(1.0, int(e2[i - n2])) - float(running)) / x[i]
        running += Fraction(x[i]) * Fraction(y[i])
    perm = rng.permutation(n)
    return x[perm], y[perm]


def rel(err: Fraction, ref: Fraction) -> float:
    """err / |ref| as a float (inf for ref = 0)."""
    return float(err / abs(ref)) if ref != 0 else math.inf


def digits(r: float) -> str:
    """Correct significant digits for a relative error r: floor(-log10 r), 0 when r >= 1."""
    if r == 0:
        return "exact"
    return str(max(0, math.floor(-math.log10(r))))


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--quick", action="store_true", help="n = 40, cond 1e30 and 1e60, R = 4, 8")
    ap.add_argument("-n", type=int, default=None, help="vector length (default 200, 40 with --quick)")
    ap.add_argument("--cond", type=float, nargs="+", default=None, help="target condition numbers")
    ap.add_argument("--terms", type=int, nargs="+", default=None, help="values of R")
    ap.add_argument("--seed", type=int, default=2005)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    n = args.n or (40 if args.quick else 200)
    conds = args.cond or ([1e30, 1e60] if args.quick else [1e10, 1e20, 1e30, 1e40, 1e50, 1e60])
    Rs = args.terms or ([4, 8] if args.quick else [2, 4, 6, 8])
    dev = args.device
    t0 = time.perf_counter()
    try:
        ex.zeros(1, terms=2, device=dev)
    except RuntimeError as exc:
        print(f"cannot run on {dev}: {exc}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)

    print(f"Dot products of n = {n} float64 pairs from GenDot (Ogita, Rump, Oishi 2005), on {dev}")
    print("bound: |dot - exact| <= bounds.dot(n, R, 53) * sum|x_i y_i| + bounds.dot_underflow_term(n, R)")
    print("       (below: the bound divided by |exact|; every check is done exactly with Fractions)")
    for R in Rs:
        print(f"  R = {R}: bounds.dot(n={n}, R={R}, p=53) = 2^{bounds.dot(n, R, 53).log2:.1f}")
    print()
    hdr = (f"{'cond target':>11} {'actual':>9} | {'np.dot':>9} | {'R':>2} {'rel.err':>9} {'bound':>9} "
           f"{'digits obs/guar':>15} | check")
    print(hdr)
    print("-" * len(hdr))
    failures = 0
    worst_f64 = None
    for cond in conds:
        x, y = gen_dot(n, cond, rng)
        exact = exact_dot(x, y)
        abs_sum = sum((abs(Fraction(a) * Fraction(b)) for a, b in zip(x.tolist(), y.tolist())), Fraction(0))
        actual = float(2 * abs_sum / abs(exact)) if exact != 0 else math.inf
        f64 = float(np.dot(x, y))
        f64_rel = rel(abs(Fraction(f64) - exact), exact)
        if worst_f64 is None or f64_rel > worst_f64[0]:
            worst_f64 = (f64_rel, cond, f64, float(exact))
        for k, R in enumerate(Rs):
            X = ex.array(x, terms=R, device=dev)
            Y = ex.array(y, terms=R, device=dev)
            D = dot(X, Y)
            err = abs(D.to_fraction() - exact)
            bnd = bounds.dot(n, R, 53).value * abs_sum + bounds.dot_underflow_term(n, R, ex.FLOAT64)
            ok = err <= bnd
            failures += not ok
            r_obs, r_bnd = rel(err, exact), rel(bnd, exact)
            lead = f"{cond:>11.0e} {actual:>9.2e} | {f64_rel:>9.2e}" if k == 0 else " " * 33
            print(f"{lead} | {R:>2} {r_obs:>9.2e} {r_bnd:>9.2e} "
                  f"{digits(r_obs) + ' / ' + digits(r_bnd):>15} | {'ok' if ok else 'VIOLATED'}")
    print()
    r, cond, f64, exact = worst_f64
    print(f"worst float64 case: cond {cond:.0e}: np.dot = {f64:.17g}, exact = {exact:.17g} "
          f"(relative error {r:.2e})")
    print(f"time: {time.perf_counter() - t0:.1f} s")
    if failures:
        print(f"FAILED: {failures} results exceed the proven bound")
        return 1
    print("OK: every result of expansions.dot is within the proven bound")
    return 0


if __name__ == "__main__":
    sys.exit(main())
