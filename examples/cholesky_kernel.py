"""Seed 003's benchmark as a user's CUDA kernel: each thread inverts a 5x5 symmetric positive-definite
matrix twice with ``expansions::Expansion<double, R>`` (the C++ API, docs/cuda_api.md), R = 2 and 4.

The algorithm is paper_repro/seed003_innocente.py's ``invert`` (square-root-free Cholesky
A = L D L^T, L^-1 by forward substitution, inv(A) = L^-T D^-1 L^-1), written once in CUDA C++ below
and run as the same Python code on a number system of the kernel's twins (certified addition and
multiplication, the per-thread Newton reciprocal: :class:`ThreadSystem`).  The precision is
``max |A - inv(inv(A))|`` over the elements, computed exactly with rationals, beside float64 (the
same algorithm in NumPy, the seed's "double" column).

On a GPU (``--device cuda``) the kernel runs (compiled by ``expansions.cuda.user.load``) and must give
its twin's bits; on the CPU the twin runs.

    python examples/cholesky_kernel.py               # 2000 matrices, R = 2 and 4 (CPU: the twin)
    python examples/cholesky_kernel.py --quick       # 200 matrices
    python examples/cholesky_kernel.py --device cuda
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from expansions import cuda  # noqa: E402
from expansions.baselines import cpu as certified  # noqa: E402
from expansions.baselines import thread  # noqa: E402
from paper_repro.seed003_innocente import N, Plain, invert, random_spd  # noqa: E402

KERNEL = r"""
#include "user.cuh"

// inv(A) of one 5x5 SPD matrix: A = L D L^T without square roots, inv(A) = L^-T D^-1 L^-1; the
// operations of paper_repro/seed003_innocente.py's invert, in its order.
template <int R>
__device__ void invert5(const expansions::Expansion<double, R> (&A)[5][5],
                        expansions::Expansion<double, R> (&out)[5][5]) {
    using E = expansions::Expansion<double, R>;
    E L[5][5], W[5][5], r[5], M[5][5];
    for (int j = 0; j < 5; ++j) {
        E d = A[j][j];
        for (int k = 0; k < j; ++k) d = d - L[j][k] * W[j][k];
        r[j] = reciprocal(d);
        for (int i = j + 1; i < 5; ++i) {
            E t = A[i][j];
            for (int k = 0; k < j; ++k) t = t - L[i][k] * W[j][k];
            W[i][j] = t;
            L[i][j] = t * r[j];
        }
    }
    for (int j = 0; j < 5; ++j) {
        for (int i = j + 1; i < 5; ++i) {
            E t = L[i][j];
            for (int k = j + 1; k < i; ++k) t = t + L[i][k] * M[k][j];
            M[i][j] = -t;
        }
    }
    for (int i = 0; i < 5; ++i) {
        for (int j = 0; j <= i; ++j) {
            E t = (i != j) ? M[i][j] * r[i] : r[i];
            for (int k = i + 1; k < 5; ++k) t = t + (M[k][i] * r[k]) * M[k][j];
            out[i][j] = t;
            out[j][i] = t;
        }
    }
}

// Thread m inverts matrix m (25 float64 values, row-major) twice and writes the 25 R-term elements of
// inv(inv(A)) to out[(m * 25 + i * 5 + j) * R ...].
template <int R>
__global__ void cholesky_twice(const double* a, double* out, long long n) {
    using E = expansions::Expansion<double, R>;
    const long long m = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= n) return;
    E A[5][5], B[5][5], C[5][5];
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 5; ++j) A[i][j] = E(a[m * 25 + i * 5 + j]);
    invert5<R>(A, B);
    invert5<R>(B, C);
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 5; ++j) C[i][j].store(out, m * 25 + i * 5 + j);
}
"""


def name(R: int) -> str:
    return f"cholesky_twice<{R}>"


class ThreadSystem:
    """The kernel's arithmetic as a number system for ``invert``: each value a (count, R) array of
    terms, one row per matrix; the operators of ``expansions::Expansion<double, R>`` by their twins."""

    def __init__(self, R: int):
        self.R = R

    def add(self, x, y):
        return certified.certified_add(x, y, self.R)

    def sub(self, x, y):
        return certified.certified_add(x, -y, self.R)  # x - y = x + (-y), as the header's operator-

    def mul(self, x, y):
        return certified.certified_mul(x, y, self.R)

    def recip(self, x):
        return thread.reciprocal(x, self.R)


def cholesky_twice_twin(A64: np.ndarray, R: int) -> np.ndarray:
    """NumPy twin of ``cholesky_twice<R>``: (n, 5, 5, R) terms of inv(inv(A))."""
    S = ThreadSystem(R)

    def lift(v):
        t = np.zeros((v.shape[0], R))
        t[:, 0] = v
        return t

    A = [[lift(A64[:, i, j]) for j in range(N)] for i in range(N)]
    with np.errstate(all="ignore"):
        C = invert(S, invert(S, A))
    return np.stack([np.stack([C[i][j] for j in range(N)], axis=1) for i in range(N)], axis=1)


def run_gpu(A64: np.ndarray, R: int):
    import cupy  # optional dependency: the GPU path

    from expansions.cuda import user

    module = user.load(KERNEL, [name(R)])
    out = cupy.zeros((A64.shape[0], N, N, R))
    block = 64
    module.get_function(name(R))(((A64.shape[0] + block - 1) // block,), (block,),
                                 (cupy.asarray(np.ascontiguousarray(A64)), out, np.int64(A64.shape[0])))
    cupy.cuda.Device().synchronize()
    return out.get()


def precision(C: np.ndarray, A64: np.ndarray):
    """(mean over matrices, largest) of max |A - C| over the elements, exactly (C: terms or floats)."""
    terms = C if C.ndim == 4 else C[..., None]
    per = []
    for m in range(A64.shape[0]):
        worst = Fraction(0)
        for i in range(N):
            for j in range(N):
                v = sum((Fraction(float(t)) for t in terms[m, i, j]), Fraction(0))
                worst = max(worst, abs(v - Fraction(float(A64[m, i, j]))))
        per.append(float(worst))
    return float(np.mean(per)), float(np.max(per))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--matrices", type=int, default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=2025)
    args = ap.parse_args(argv)
    if args.device == "cuda" and not cuda.available():
        print("no CUDA GPU visible to CuPy", file=sys.stderr)
        return 2
    n = args.matrices or (200 if args.quick else 2000)
    A64 = random_spd(n, np.random.default_rng(args.seed))
    f64 = Plain(np.float64)
    Af = [[A64[:, i, j] for j in range(N)] for i in range(N)]
    with np.errstate(all="ignore"):
        C64 = invert(f64, invert(f64, Af))
    C64 = np.stack([np.stack([C64[i][j] for j in range(N)], axis=1) for i in range(N)], axis=1)
    mean64, max64 = precision(C64, A64)
    print(f"{n} random 5x5 SPD matrices (seed 003's generator), each inverted twice; max |A - inv(inv(A))|:")
    print(f"  float64 (NumPy)                  mean {mean64:.3g}  largest {max64:.3g}")
    ok = True
    for R in (2, 4):
        t0 = time.perf_counter()
        twin = cholesky_twice_twin(A64, R)
        secs = time.perf_counter() - t0
        label = "NumPy twin of the kernel"
        if args.device == "cuda":
            got = run_gpu(A64, R)
            same = np.array_equal(got.view(np.uint64), twin.view(np.uint64))
            print(f"  R = {R}: GPU kernel == NumPy twin bit for bit: {same}")
            ok &= bool(same)
            label = "GPU kernel"
        mean, worst = precision(twin, A64)
        print(f"  Expansion<double, {R}> ({label:24s}) mean {mean:.3g}  largest {worst:.3g}  ({secs:.2f} s twin)")
        # the double inversion at R terms: each element's error is the conditioning (<= 1e4 by the
        # generator) times the format's precision; a loose check that R terms beat float64 by far
        ok &= worst < max64 * 2.0 ** (-40 * (R - 1))
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
