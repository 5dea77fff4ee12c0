"""The reduction kernels on a GPU (expansions.cuda.reduce_launch) against their twin
(expansions.cpu.reduce), bit for bit.  Needs a CUDA GPU visible to CuPy; skipped otherwise (the warp
emulator test, test_reduce_emulated.py, checks the kernel code on the CPU).

* >= 10^5 rows per (mode, R, dtype): the launcher (its own chunk choice, and fixed chunkings) against
  the twin run on the same CuPy arrays (the twins are array-module generic).  CuPy's element-wise
  kernels flush float32 subnormals, so float32 inputs stay far above the subnormal range; float64
  product inputs have no term below 2**-450 (the twin's Dekker product equals 2ProdFMA there).
* Adversarial families (cancellation, zeros, non-finite, overflow) against the NumPy twin.
* The public sum / dot / matmul on device='cuda' against the same calls on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from expansions import cuda
from expansions.cpu import reduce as twin
from expansions.generate import random_terms

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)"
    ),
]

RS = (2, 3, 4, 8, 13, 16, 32)
DTYPES = ("float64", "float32")
UINT = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}
ROWS = 100_003  # >= 10^5 rows, not a multiple of any group count


def _cp():
    import cupy

    return cupy


def _launch():
    from expansions.cuda import reduce_launch

    return reduce_launch


def _terms(count, R, dtype, seed, product=False, **kw):
    if dtype == "float32":
        kw.setdefault("min_exponent", -60)
    elif product:
        kw.setdefault("min_exponent", -450)
    return random_terms((count,), R, dtype, seed=seed, **kw)


def _same(got, want, what):
    cp = _cp()
    got, want = cp.asnumpy(got), cp.asnumpy(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    bad = np.flatnonzero((got.view(UINT[got.dtype]) != want.view(UINT[want.dtype])).any(axis=1))
    assert not bad.size, f"{what}: {bad.size} of {len(got)} rows differ, first {bad[0]}: " \
                         f"gpu {got[bad[0]].tolist()} twin {want[bad[0]].tolist()}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
def test_large_sum_equals_twin(R, dtype):
    cp = _cp()
    n = 7
    x = _terms(ROWS * n, R, dtype, seed=R)
    x[1::2][: ROWS * n // 2 : 3] *= -1  # some cancellation between neighbours
    xg = cp.asarray(x)
    want = twin.reduce(xg, ROWS, n, R)  # the twin on the GPU arrays
    _same(_launch().reduce(xg, ROWS, n, R), want, f"sum R={R} {dtype}")
    _same(_launch().reduce(xg, ROWS, n, R, chunk=(4, 2)), want, f"sum R={R} {dtype} chunks (4, 2)")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
def test_large_dot_equals_twin(R, dtype):
    """matmul addressing: (m, K) @ (K, N), rows (i, l), x at i*K + j, y at j*N + l."""
    cp = _cp()
    m, K, N = 317, 5, 317  # 100489 rows
    a = cp.asarray(_terms(m * K, R, dtype, seed=R + 1, product=True))
    b = cp.asarray(_terms(K * N, R, dtype, seed=R + 2, product=True))
    args = dict(n2=N, xs=(K, 0, 1), y=b, ys=(0, 1, N))
    want = twin.reduce(a, m * N, K, R, **args)
    _same(_launch().reduce(a, m * N, K, R, **args), want, f"dot R={R} {dtype}")
    _same(_launch().reduce(a, m * N, K, R, chunk=16, **args), want, f"dot R={R} {dtype} chunk 16")


@pytest.mark.parametrize("dtype", DTYPES)
def test_long_rows_many_passes(dtype):
    """One row of 10^6 + 3 elements: several passes of the largest chunks."""
    cp = _cp()
    R, n = 4, 10**6 + 3
    x = cp.asarray(_terms(n, R, dtype, seed=5))
    want = twin.reduce(x, 1, n, R)
    for chunk in (None, 256, (64, 4), 4):
        _same(_launch().reduce(x, 1, n, R, chunk=chunk), want, f"n={n} chunk={chunk}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 8, 32))
def test_families_equal_numpy_twin(R, dtype):
    """Adversarial families against the NumPy twin (exact float32 subnormals included)."""
    cp = _cp()
    rng = np.random.default_rng(R)
    rows, n = 2003, 9
    for kind in ("cancel", "zeros", "nonfinite", "overflow", "underflow"):
        x = random_terms((rows * n,), R, dtype, seed=R, exponent_range=(-20, 20))
        if kind == "cancel":
            x[1::2] = -x[0::2][: rows * n // 2]
            x[rng.random(rows * n) < 0.1] *= 3
        elif kind == "zeros":
            x[rng.random(rows * n) < 0.5] = 0
            x[rng.random(x.shape) < 0.3] *= -0.0
        elif kind == "nonfinite":
            hit = rng.random(x.shape) < 0.02
            x[hit] = np.array([np.inf, -np.inf, np.nan], dtype=dtype)[rng.integers(0, 3, int(hit.sum()))]
        elif kind == "overflow":
            big = 1023 if dtype == "float64" else 127
            x = random_terms((rows * n,), R, dtype, seed=R, exponent_range=(big - 3, big), same_sign=True)
        elif kind == "underflow":
            lo = -1000 if dtype == "float64" else -120
            x = random_terms((rows * n,), R, dtype, seed=R, exponent_range=(lo, lo + 20))
        with np.errstate(all="ignore"):
            want = twin.reduce(x, rows, n, R)
        _same(_launch().reduce(cp.asarray(x), rows, n, R), want, f"{kind} R={R} {dtype}")
        if kind in ("cancel", "nonfinite", "overflow"):
            y = random_terms((rows * n,), R, dtype, seed=R + 9, min_exponent=-450 if dtype == "float64" else -60)
            if kind == "overflow":
                half = 511 if dtype == "float64" else 63
                x = random_terms((rows * n,), R, dtype, seed=R, exponent_range=(half - 1, half + 1))
                y = random_terms((rows * n,), R, dtype, seed=R + 9, exponent_range=(half - 1, half + 1))
            if dtype == "float64":  # 2Prod errors above the underflow range (twin's Dekker = FMA)
                x, y = (np.where(np.abs(a) < 2.0**-450, 0, a).astype(dtype) for a in (x, y))
            args = dict(n2=1, xs=(n, 0, 1), ys=(n, 0, 1))
            with np.errstate(all="ignore"):
                want = twin.reduce(x, rows, n, R, y=y, **args)
            _same(_launch().reduce(cp.asarray(x), rows, n, R, y=cp.asarray(y), **args), want,
                  f"dot {kind} R={R} {dtype}")


def test_public_api_on_the_gpu():
    import expansions as ex
    from expansions import reduce as red

    for R, dtype in ((2, "float64"), (4, "float64"), (3, "float32")):
        kw = dict(min_exponent=-60) if dtype == "float32" else dict(min_exponent=-450)
        x = ex.from_terms(random_terms((6, 50, 7), R, dtype, seed=R, **kw))
        a = ex.from_terms(random_terms((40, 30), R, dtype, seed=R + 1, **kw))
        b = ex.from_terms(random_terms((30, 20), R, dtype, seed=R + 2, **kw))
        xg, ag, bg = (v.to_device("cuda") for v in (x, a, b))
        for cpu, gpu in ((red.sum(x), red.sum(xg)), (red.sum(x, axis=1), red.sum(xg, axis=1)),
                         (red.sum(x, axis=(0, 2), keepdims=True), red.sum(xg, axis=(0, 2), keepdims=True)),
                         (red.matmul(a, b), red.matmul(ag, bg)), (red.dot(a[0], b[:, 3]), red.dot(ag[0], bg[:, 3]))):
            assert gpu.device == "cuda" and gpu.shape == cpu.shape
            _same(gpu.terms.reshape(-1, R), cpu.terms.reshape(-1, R), "public API")
