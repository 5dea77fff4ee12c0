"""Operands the library calls valid but that the algorithms' proofs do not take as they are.

* R = 2: the double-word algorithms (JMP 2017, Lefèvre et al. 2023) assume ``hi = RN(hi + lo)``; an
  ulp-nonoverlapping pair with ``ulp(hi)/2 < |lo| < ulp(hi)`` (about a fifth of ``ex.random(...,
  terms=2)``) is not one.  The operations make each such operand a double word first (2Sum, exact),
  per element, on every backend with the same bits.

Checked: the reported operands, exact errors (Fractions) against the stated bounds; random operands of
that kind; the twins, the engine and the kernels (warp emulator) give the same bits on them.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers import bits

import expansions as ex
from expansions import backends, dispatch
from expansions.dw import R2_METHODS
from expansions.dw import bounds as dw_bounds
from expansions.formats import format_of

h = float.fromhex
DTYPES = ("float64", "float32")


def exact_rows(terms) -> list:
    """The exact value of each expansion of a (count, R) array."""
    return [sum((Fraction(float(v)) for v in row), Fraction(0)) for row in np.asarray(terms)]


def relative_errors(got, want) -> list:
    return [abs(g - w) / abs(w) for g, w in zip(exact_rows(got), want)]


def non_double_words(n: int, dtype: str, seed: int) -> np.ndarray:
    """(n, 2) ulp-nonoverlapping pairs that are not double words: ``ulp(hi)/2 < |lo| < ulp(hi)``
    (``|lo| = ulp(hi)/2`` with an odd ``hi``, which rounds away, among them), leading exponents in
    [-8, 8]."""
    rng = np.random.default_rng(seed)
    p = format_of(dtype).p
    e = rng.integers(-8, 9, n)
    mant = rng.integers(1 << (p - 1), 1 << p, n)
    hi = np.ldexp(mant.astype(np.float64), e - (p - 1)) * rng.choice([-1.0, 1.0], n)
    lo_mant = rng.integers((1 << (p - 1)) + 1, 1 << p, n)  # ulp(hi)/2 < |lo| < ulp(hi)
    lo = np.ldexp(lo_mant.astype(np.float64), e - 2 * (p - 1) - 1) * rng.choice([-1.0, 1.0], n)
    half = rng.random(n) < 0.1  # |lo| = ulp(hi)/2 on an odd hi: RN(hi + lo) != hi
    hi = np.where(half, np.ldexp(np.float64(1 << (p - 1)) + 1, e - (p - 1)), hi)
    lo = np.where(half, np.ldexp(1.0, e - p) * np.sign(hi), lo)
    out = np.stack([hi, lo], axis=1).astype(dtype)
    assert ((out[:, 0] + out[:, 1]) != out[:, 0]).all()
    return out


# ---------------------------------------------------------------------------------------------
# R = 2: operands that are not double words


def test_reported_r2_product_within_the_double_word_bound():
    x = np.array([[h("0x1.000000000003dp-1"), h("0x1.fffffffffff5dp-54")]])
    y = np.array([[h("-0x1.000000000000fp+0"), h("-0x1.fffffffffffd9p-53")]])
    want = [a * b for a, b in zip(exact_rows(x), exact_rows(y))]
    for method, name in (("auto", "dw_times_dw1"), ("dw_times_dw2", "dw_times_dw2")):
        z = ex.mul(ex.from_terms(x), ex.from_terms(y), method=method).terms
        (err,) = relative_errors(z, want)
        assert err <= dw_bounds.bound(name, 53).value, (method, dw_bounds.in_u2(err, 53))


def test_reported_r2_quotient_within_the_double_word_bound():
    x = np.array([[h("-0x1.16p+2"), h("0x1.ffffffff64c00p-51")]])
    y = np.array([[h("-0x1.0000000000034p-3"), h("-0x1.ffffffffffca7p-56")]])
    want = [a / b for a, b in zip(exact_rows(x), exact_rows(y))]
    (err,) = relative_errors((ex.from_terms(x) / ex.from_terms(y)).terms, want)
    assert err <= dw_bounds.bound("dw_div_dw2", 53).value, dw_bounds.in_u2(err, 53)


OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
       "div": lambda a, b: a / b}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "sqrt"])
def test_r2_operations_on_non_double_words_within_bounds(op, dtype):
    """Every algorithm with a proven bound, on operands none of which is a double word."""
    p = format_of(dtype).p
    x = non_double_words(400, dtype, 1)
    y = non_double_words(400, dtype, 2)
    if op == "sqrt":
        x = np.abs(x)
    xs, ys = exact_rows(x), exact_rows(y)
    for name in R2_METHODS["add" if op == "sub" else op]:
        b = dw_bounds.bound(name, p)
        if b is None:
            continue
        if op == "sqrt":
            z = ex.sqrt(ex.from_terms(x), method=name).terms
            errs = [abs(v * v - a) / a for v, a in zip(exact_rows(z), xs)]  # |z^2 - x| / x ~ 2 |z - √x| / √x
            assert max(errs) <= 2 * b.value + b.value**2, (name, dtype)
            continue
        fn = {"add": ex.add, "sub": ex.sub, "mul": ex.mul, "div": ex.div}[op]
        z = fn(ex.from_terms(x), ex.from_terms(y), method=name).terms
        want = [OPS[op](a, c) for a, c in zip(xs, ys)]
        errs = [e for e, w in zip(relative_errors(z, want), want) if w != 0]
        assert max(errs) <= b.value, (name, dtype, dw_bounds.in_u2(max(errs), p))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "sqrt"])
def test_r2_non_double_words_same_bits_twins_and_engine(op, dtype):
    pytest.importorskip("numba")
    engine = backends.engine_backend()
    x = non_double_words(3000, dtype, 3)
    y = non_double_words(3000, dtype, 4)
    x[::3] = ex.random(1000, terms=2, dtype=dtype, seed=5).terms  # mixed with other operands
    if op == "sqrt":
        x = np.abs(x)
    for name in R2_METHODS["add" if op == "sub" else op]:
        for renormalize in (True, False):
            args = (x, 2) if op == "sqrt" else (x, y, 2)
            with np.errstate(all="ignore"):
                want = dispatch.run(op, name, backends.cpu, renormalize, *args)
                got = dispatch.run(op, name, engine, renormalize, *args)
            assert (bits(got) == bits(want)).all(), (name, renormalize)
