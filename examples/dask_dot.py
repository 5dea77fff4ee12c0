"""An ill-conditioned dot product of 10^8 elements on a local Dask cluster, with its proven bound.

The vectors: a core of 200 float64 pairs from GenDot (Ogita, Rump, Oishi 2005; the generator of
``ill_conditioned_dot.py``) with a chosen condition number, padded to n elements with pairs that
cancel exactly, (a, b) at one place and (a, -b) at another, a and b with 15-bit significands and one
shared exponent, so that every padding product is exact and the padding's share of sum |x_i y_i|
is an exact integer sum.  The exact dot product is the core's (computed with Fractions), and
sum |x_i y_i| = core's + 2 * sum |a_k b_k| exactly.

``expansions.dask.dot`` converts the chunks to R-term expansions (exactly), forms the products with
the truncated multiplication and adds them with the library's canonical pairwise tree over the
global indices: the result has the same bits as ``expansions.dot`` on one device, whatever the
chunking and the number of worker processes, and it obeys

    |dot - x.y| <= bounds.dot(n, R, 53) * sum |x_i y_i| + bounds.dot_underflow_term(n, R, float64),

which the program checks exactly (rationals).  ``numpy.dot`` of the same vectors is printed beside.

    python examples/dask_dot.py                  # n = 10^8, R = 4, 2 worker processes
    python examples/dask_dot.py --quick          # n = 10^5 (also checks the single-device bits)
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ill_conditioned_dot as icd  # noqa: E402 - the GenDot generator of the neighbouring example

import expansions as ex  # noqa: E402
import expansions.dask as exd  # noqa: E402
from expansions import bounds  # noqa: E402


def padded_vectors(n: int, cond: float, seed: int):
    """(x, y, exact dot, exact sum |x_i y_i|): a GenDot core of 200 pairs padded by cancelling pairs."""
    rng = np.random.default_rng(seed)
    core_x, core_y = icd.gen_dot(200, cond, rng)
    m = (n - 200) // 2
    a = rng.integers(1, 1 << 15, m).astype(np.float64)
    b = rng.integers(1, 1 << 15, m).astype(np.float64) * rng.choice([-1.0, 1.0], m)
    scale = 2.0 ** -10
    x = np.concatenate([core_x, a * scale, a * scale, np.zeros(n - 200 - 2 * m)])
    y = np.concatenate([core_y, b * scale, -b * scale, np.zeros(n - 200 - 2 * m)])
    perm = rng.permutation(n)
    exact = icd.exact_dot(core_x, core_y)
    core_abs = sum((abs(Fraction(p) * Fraction(q)) for p, q in zip(core_x.tolist(), core_y.tolist())), Fraction(0))
    pad_abs = 2 * int(np.abs(a.astype(np.int64) * b.astype(np.int64)).sum()) * Fraction(scale) ** 2
    return x[perm], y[perm], exact, core_abs + pad_abs


def main(argv=None) -> int:
    import distributed  # optional dependency (the dask extra)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 10^5")
    ap.add_argument("-n", type=int, default=None)
    ap.add_argument("--terms", type=int, default=4)
    ap.add_argument("--cond", type=float, default=1e40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunks", type=int, default=None, help="elements per chunk (default n / 16)")
    ap.add_argument("--device", choices=("cpu",), default="cpu")
    ap.add_argument("--seed", type=int, default=18)
    args = ap.parse_args(argv)
    n = args.n or (10**5 if args.quick else 10**8)
    R = args.terms
    chunks = args.chunks or -(-n // 16)
    t0 = time.perf_counter()
    x, y, exact, abs_sum = padded_vectors(n, args.cond, args.seed)
    f64 = float(np.dot(x, y))
    print(f"n = {n} float64 pairs, condition number 2 sum|x_i y_i| / |x.y| = {float(2 * abs_sum / abs(exact)):.2e}")
    print(f"exact x.y = {float(exact):.17g}; numpy.dot = {f64:.17g} (relative error "
          f"{float(abs(Fraction(f64) - exact) / abs(exact)):.2e})")
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=40) as cluster, \
            distributed.Client(cluster):
        X = exd.from_floats(x, terms=R, chunks=chunks)  # converted to expansions on the workers
        Y = exd.from_floats(y, terms=R, chunks=chunks)
        t1 = time.perf_counter()
        D = exd.dot(X, Y).compute()
        secs = time.perf_counter() - t1
    err = abs(D.to_fraction() - exact)
    bnd = bounds.dot(n, R, 53).value * abs_sum + bounds.dot_underflow_term(n, R, ex.FLOAT64)
    print(f"expansions.dask.dot, R = {R}, {args.workers} worker processes, chunks of {chunks}: {secs:.1f} s")
    print(f"  = {D}")
    print(f"  relative error {float(err / abs(exact)):.2e}, proven bound {float(bnd / abs(exact)):.2e} "
          f"(relative to |x.y|)")
    ok = err <= bnd
    if args.quick:
        same = np.array_equal(D.terms, ex.dot(ex.array(x, terms=R), ex.array(y, terms=R)).terms)
        print(f"  same bits as expansions.dot on one process: {same}")
        ok &= bool(same)
    print(f"time: {time.perf_counter() - t0:.1f} s")
    print("OK: within the proven bound" if ok else "FAILED: the proven bound is exceeded")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
