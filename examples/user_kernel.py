"""The Leibniz series for pi in a user's own CUDA kernel, with the per-thread type
``expansions::Expansion<double, R>`` of the C++ API (``expansions/cuda/user.cuh``, guide in
``docs/cuda_api.md``).

Seed 000's program: pi = 4 (1 - 1/3 + 1/5 - ...).  Each of ``threads`` threads sums ``per``
consecutive terms 4 (-1)^k / (2k + 1) in R-term arithmetic (a division and an addition per term, in
registers); the library then adds the threads' partial sums with ``expansions.sum`` (its pairwise
tree).  The result S is compared with the exact partial sum S_N of the same N = threads * per terms,
computed with mpmath at 4 R * 53 bits, and with the same loop in float64.  S_N itself differs from pi
by about 1/N (the series converges slowly); that is the series' error, not the arithmetic's.

On a GPU (``--device cuda``) the kernel is compiled by ``expansions.cuda.user.load`` with the
library's options; on the CPU its NumPy twin (``leibniz_twin``: the same operations in the same order,
:mod:`expansions.baselines.thread`) runs instead, and on the GPU both run and must give the same bits.

    python examples/user_kernel.py                    # CPU: 4096 threads x 64 terms, R = 4
    python examples/user_kernel.py --device cuda      # GPU: 2^20 threads x 64 terms, R = 4 and 8
    python examples/user_kernel.py --quick            # 256 threads x 16 terms
"""

from __future__ import annotations

import argparse
import sys
import time

import mpmath
import numpy as np

import expansions as ex
from expansions import cuda
from expansions.baselines import cpu as certified
from expansions.baselines import thread

KERNEL = r"""
#include "user.cuh"

// Thread t sums the terms k = t * per .. t * per + per - 1 of 4 (-1)^k / (2k + 1) and writes its
// R-term partial sum to out[t * R .. t * R + R - 1].
template <int R>
__global__ void leibniz(double* out, long long threads, long long per) {
    using E = expansions::Expansion<double, R>;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads) return;
    E s(0.0);
    for (long long j = 0; j < per; ++j) {
        const long long k = t * per + j;
        const E term = E(k % 2 == 0 ? 4.0 : -4.0) / E(double(2 * k + 1));
        s = s + term;
    }
    s.store(out, t);
}
"""


def name(R: int) -> str:
    """The kernel's name expression for R terms."""
    return f"leibniz<{R}>"


def leibniz_twin(threads: int, per: int, R: int) -> np.ndarray:
    """NumPy twin of ``leibniz<R>``: (threads, R) partial sums, the kernel's operations in its order."""
    k0 = np.arange(threads, dtype=np.int64) * per
    s = np.zeros((threads, R))
    num, den = np.zeros((threads, R)), np.zeros((threads, R))
    for j in range(per):
        k = k0 + j
        num[:, 0] = np.where(k % 2 == 0, 4.0, -4.0)
        den[:, 0] = (2 * k + 1).astype(np.float64)
        s = certified.certified_add(s, thread.div(num, den, R), R)
    return s


def exact_partial_sum(n: int, bits: int):
    """4 sum_{k<n} (-1)^k / (2k+1) with mpmath at ``bits`` bits (a 2n-term sum: error about n 2^-bits)."""
    with mpmath.workprec(bits):
        return 4 * mpmath.fsum((-1) ** k / mpmath.mpf(2 * k + 1) for k in range(n))


def float64_sum(threads: int, per: int) -> float:
    k = np.arange(threads * per, dtype=np.int64).reshape(threads, per)
    terms = np.where(k % 2 == 0, 4.0, -4.0) / (2 * k + 1).astype(np.float64)
    s = np.zeros(threads)
    for j in range(per):  # the same order: per thread, then the threads' sums by NumPy's pairwise sum
        s = s + terms[:, j]
    return float(s.sum())


def run_gpu(threads: int, per: int, R: int):
    import cupy  # optional dependency: the GPU path

    from expansions.cuda import user

    module = user.load(KERNEL, [name(R)])
    out = cupy.zeros((threads, R))
    block = 128
    kernel = module.get_function(name(R))
    kernel(((threads + block - 1) // block,), (block,), (out, np.int64(threads), np.int64(per)))
    cupy.cuda.Device().synchronize()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--terms", type=int, nargs="*", default=None, help="R values (default 4; 4 and 8 on a GPU)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--per", type=int, default=None, help="series terms per thread")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not cuda.available():
        print("no CUDA GPU visible to CuPy", file=sys.stderr)
        return 2
    gpu = args.device == "cuda"
    threads = args.threads or (256 if args.quick else (1 << 20 if gpu else 4096))
    per = args.per or (16 if args.quick else 64)
    rs = args.terms or ([4, 8] if gpu else [4])
    n = threads * per
    ok = True
    f64 = float64_sum(threads, per)
    print(f"Leibniz series, N = {threads} threads x {per} terms = {n} terms")
    for R in rs:
        exact = exact_partial_sum(n, 4 * R * 53)
        t0 = time.perf_counter()
        if gpu:
            partial = run_gpu(threads, per, R)
            secs = time.perf_counter() - t0
            if threads * per <= (1 << 22):
                same = np.array_equal(partial.get(), leibniz_twin(threads, per, R))
                print(f"  R = {R}: GPU kernel == NumPy twin bit for bit: {same}")
                ok &= bool(same)
            total = ex.sum(ex.from_terms(partial)).to_device("cpu")
        else:
            partial = leibniz_twin(threads, per, R)
            secs = time.perf_counter() - t0
            total = ex.sum(ex.from_terms(partial))
        got = mpmath.mpf(0)
        with mpmath.workprec(4 * R * 53):
            for t in total.terms.tolist():
                got += t
            err = abs(got - exact) / abs(exact)
            f64_err = abs(mpmath.mpf(f64) - exact) / abs(exact)
            series_err = abs(exact - mpmath.pi)
        unit = mpmath.mpf(2) ** (-52 * R)
        print(f"  R = {R} ({52 * R + 1} bits): S = {mpmath.nstr(got, 30)}...  ({secs:.2f} s, "
              f"{'GPU kernel' if gpu else 'NumPy twin of the kernel'})")
        print(f"    relative error against S_N (mpmath): {mpmath.nstr(err, 3)} = {mpmath.nstr(err / unit, 3)} "
              f"units of 2^-{52 * R}; float64 loop: {mpmath.nstr(f64_err, 3)}")
        print(f"    (S_N - pi = {mpmath.nstr(series_err, 3)}: the series' own error after N terms)")
        # each of the N terms and additions errs by at most a few units of 2^-(52R) of its size, and the
        # terms are at most 4: n * 16 units relative to |S_N| ~ 3 is a generous check, not a proof
        ok &= bool(err <= n * 16 * unit)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
