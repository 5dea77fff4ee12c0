"""Exact errors against the proven bounds, the output properties the proofs promise, and the
paper's claim about s_0 (which does not hold: see test_s0_is_not_always_correctly_rounded)."""

from fractions import Fraction

import numpy as np
import pytest
from helpers import DTYPES, RS, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from expansions import bounds as B
from expansions.cpu import kernels as K
from expansions.formats import FLOAT64, format_of
from expansions.reference import algorithms as A
from expansions.reference.exact import exact_rows
from expansions.reference.fp import round_fraction
from expansions.testing import product_safe_random
from expansions.verify import verify_one


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
@pytest.mark.parametrize("op", ("add_safe", "mul", "renormalize"))
def test_no_bound_violation(op, R, dtype):
    """The adversarial families (the edge families: tests/test_verify.py)."""
    row = verify_one(op, R, dtype, samples=800, seed=7, edge=False)
    assert row.cases >= 700
    assert row.violations == 0, row.counterexample
    assert row.property_violations == 0


def test_add_fast_row_reports_without_bound():
    row = verify_one("add_fast", 4, "float64", samples=400, seed=1)
    assert row.bound_log2 is None and row.violations == 0 and row.max_error_log2 is not None


def test_s0_is_not_always_correctly_rounded():
    """Section III states that s_0 is the correctly rounded sum.  It is not: with x = (1, 2^-53) and
    y = (2^-53 (1 + 2^-52), 0), lane 0 rounds x0 + y0 up to 1 + 2^-51, then adds x1 = 2^-53 without
    seeing the error 2^-53(1-2^-52) sent to lane 1, and the tie 1 + 3*2^-53 rounds to even, up; the
    exact sum is 1 + 2^-52 + 2^-105, whose correct rounding is 1 + 2^-52.  The result as a whole is
    still exact here, and within the proven bound."""
    u = Fraction(1, 2**53)
    x, y = (Fraction(1), u), (u * (1 + Fraction(1, 2**52)), 0.0)
    s = A.add_safe(x, y, 2, FLOAT64)
    exact = x[0] + x[1] + y[0]
    assert s[0] == 1 + 4 * u
    assert round_fraction(exact, FLOAT64) == 1 + 2 * u
    assert sum(Fraction(v) for v in s) == exact
    # and the twin agrees
    got = K.add_safe(np.array([[1.0, 2.0**-53]]), np.array([[float(y[0]), 0.0]]), 2)
    assert got[0, 0] == 1 + 2.0**-51


def test_s0_counterexamples_are_common():
    row = verify_one("add_safe", 4, "float64", samples=2000, seed=3)
    assert row.s0_not_rn > 0 and "s0" in row.counterexample


def test_bounds_are_exact_rationals_with_sources():
    b = B.add_safe(4, 53)
    assert b.value == Fraction(2) ** (-4 * 53 + 3 * 4 - 1) / (1 - Fraction(2) ** -52)
    assert b.hypotheses_hold and "Prop. III.1" in b.source
    assert not B.add_safe(32, 24).hypotheses_hold
    m = B.mul_truncated(2, 53)
    assert m.value == Fraction(2) ** -104 * (1 + Fraction(2) ** 51 * (1 + Fraction(2) ** -53) + 6)
    t = B.mul_truncation(3, 53)
    assert t.value == Fraction(2) ** -156 * 2 / (1 - Fraction(2) ** -52)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 4, 8))
def test_truncation_bound_prop_iv1(R, dtype):
    """Prop. IV.1: the products the truncated multiplication leaves out add up to at most its bound."""
    x = product_safe_random(300, R, dtype, seed=R)
    y = product_safe_random(300, R, dtype, seed=R + 9)
    b = B.mul_truncation(R, format_of(dtype).p).value
    for i in range(x.shape[0]):
        left = sum(Fraction(float(x[i, a])) * Fraction(float(y[i, c]))
                   for a in range(R) for c in range(R) if a + c >= R)
        assert abs(left) <= b * abs(Fraction(float(x[i, 0])) * Fraction(float(y[i, 0])))


finite64 = st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e300, max_value=1e300)
finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32, min_value=-(2.0**120), max_value=2.0**120)


@pytest.mark.parametrize("dtype,elements", [("float64", finite64), ("float32", finite32)])
@given(data=st.data())
@settings(max_examples=examples(150), deadline=None)
def test_renormalize_any_terms(dtype, elements, data):
    """Renormalization of ANY finite terms (unordered, overlapping, zeros, subnormals): error-free
    and ulp-nonoverlapping."""
    R = data.draw(st.integers(2, 32))
    terms = data.draw(st.lists(elements, min_size=R, max_size=R))
    x = np.array([terms], dtype=dtype)
    out = K.renormalize(x, R)
    assert np.isfinite(out).all()
    assert exact_rows(out)[0] == exact_rows(x)[0]
    assert B.ulp_nonoverlapping([Fraction(float(v)) if v != 0 else 0.0 for v in out[0]], format_of(dtype))


def test_renormalize_fewer_terms_drops_only_the_tail():
    x = product_safe_random(200, 8, "float64", seed=4)
    out = K.renormalize(x, 4)
    for i in range(200):
        err = abs(exact_rows(x[i : i + 1])[0] - exact_rows(out[i : i + 1])[0])
        assert err <= 4 * abs(Fraction(float(out[i, 3])))
