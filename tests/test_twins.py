"""The CPU twins of the kernels against the exact scalar reference: bit-identical results.

The twins (NumPy, lanes on the last axis) are what CI can run of the GPU kernels' algorithms; the
reference (Fractions, every operation rounded exactly) is what defines them.  Inputs keep float64
2Prod errors above the underflow threshold, where the twin's Dekker product and the FMA may differ
(design decision 4)."""

import numpy as np
import pytest
from helpers import DTYPES, RS, bits, failure_table, reference

from expansions.cpu import kernels as K
from expansions.testing import product_safe_pairs, product_safe_random

OPS = ("add_safe", "add_fast", "mul_truncated", "sub_safe", "sub_fast")


def _n(R, op):
    # the exact reference is slow for long expansions; keep the suite in CI's budget
    cost = R * R if op == "mul_truncated" else R
    return int(max(6, min(160, 2400 // cost)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
@pytest.mark.parametrize("op", OPS)
def test_twin_equals_reference(op, R, dtype):
    N = _n(R, op)
    x, y = product_safe_pairs(N, R, dtype, seed=R)
    got = getattr(K, op)(x, y, R)
    want = reference(op, R, dtype, x, y)
    assert np.array_equal(bits(got), bits(want)), failure_table((x, y), got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
def test_renormalize_twin_equals_reference(R, dtype):
    N = max(20, 600 // R)
    rng = np.random.default_rng(R)
    ex = rng.integers(-30, 30, size=(N, R))
    x = (rng.standard_normal((N, R)) * np.ldexp(1.0, ex)).astype(dtype)
    x[rng.random((N, R)) < 0.15] = 0
    x[: N // 3] = K.add_fast(*product_safe_pairs(N // 3, R, dtype, seed=R + 1), R)
    got = K.renormalize(x, R)
    want = reference("renormalize", R, dtype, x)
    assert np.array_equal(bits(got), bits(want)), failure_table((x,), got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,m,R", [(1, 1, 2), (2, 4, 4), (4, 2, 8), (8, 8, 4), (3, 5, 7), (16, 1, 16), (1, 9, 3),
                                   (32, 32, 2), (5, 32, 32)])
@pytest.mark.parametrize("op", ("add_safe", "mul_truncated", "add_fast"))
def test_mixed_sizes_equal_reference(op, n, m, R, dtype):
    N = 40
    x = product_safe_random(N, n, dtype, seed=n) if n > 1 else product_safe_random(N, 2, dtype, seed=1)[:, :1]
    y = product_safe_random(N, m, dtype, seed=m + 50) if m > 1 else product_safe_random(N, 2, dtype, seed=2)[:, :1]
    got = getattr(K, op)(x, y, R)
    want = reference(op, R, dtype, x, y)
    assert np.array_equal(bits(got), bits(want)), failure_table((x, y), got, want)


def _nonfinite_inputs(R, dtype):
    fi = np.finfo(dtype)
    big = float(fi.max)
    rows = [
        [np.inf] + [0.0] * (R - 1),
        [-np.inf] + [0.0] * (R - 1),
        [np.nan] + [0.0] * (R - 1),
        [1.0, np.nan] + [0.0] * (R - 2),
        [1.0, np.inf] + [0.0] * (R - 2),
        [big, big * 2.0**-(fi.nmant + 1)] + [0.0] * (R - 2),
        [big] + [0.0] * (R - 1),
        [-big] + [0.0] * (R - 1),
        [0.0] * R,
        [-0.0] * R,
        [1.5] + [0.0] * (R - 1),
    ]
    a = np.array(rows, dtype=dtype)
    xs = np.repeat(a, len(rows), axis=0)
    ys = np.tile(a, (len(rows), 1))
    return xs, ys


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 8, pytest.param(32, marks=pytest.mark.slow)))
@pytest.mark.parametrize("op", OPS + ("renormalize",))
def test_nonfinite_and_overflow(op, R, dtype):
    """NaN, Inf and overflow: never finite garbage, always (IEEE value, 0, ..., 0) as the reference
    says, identical in the twin, and the loops are bounded (no hang)."""
    x, y = _nonfinite_inputs(R, dtype)
    with np.errstate(all="ignore"):
        if op == "renormalize":
            got = K.renormalize(x, R)
            want = reference(op, R, dtype, x)
        else:
            got = getattr(K, op)(x, y, R)
            want = reference(op, R, dtype, x, y)
    assert np.array_equal(bits(got), bits(want)), failure_table((x, y), got, want)
    bad = ~np.isfinite(got[:, 0])
    assert (got[bad, 1:] == 0).all()
    assert np.isfinite(got[~bad]).all()
    # an infinite or NaN input never yields a finite result
    if op != "renormalize":
        inf_in = ~np.isfinite(x).all(axis=1) | ~np.isfinite(y).all(axis=1)
        assert bad[inf_in].all()


def test_negate_is_exact():
    x = product_safe_random(50, 5, "float64", seed=3)
    assert np.array_equal(bits(K.negate(x)), bits(-x))
