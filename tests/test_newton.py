"""Reciprocal, division and square root by Newton iterations (expansions/cpu/newton.py, twins of
expansions/cuda/newton.cuh): the twins equal the exact reference bit for bit, the exact errors stay
within the proven bounds of expansions.bounds, and the special values follow the documented rule.
(The kernels themselves are checked against these twins in test_cuda_emulated.py and test_gpu.py.)"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from helpers import bits

import expansions as ex
from expansions import bounds
from expansions.cpu import newton as twin
from expansions.formats import format_of, tiny_format
from expansions.generate import random_terms
from expansions.reference import newton as ref
from expansions.reference.exact import exact_rows
from expansions.reference.fp import from_float, to_float


def _rows(a):
    return [tuple(from_float(v) for v in r) for r in a]


def _reference(name, R, dtype, *arrays):
    fmt = format_of(dtype)
    rows = [_rows(a) for a in arrays]
    out = [[to_float(v) for v in getattr(ref, name)(*[r[i] for r in rows], R, fmt)] for i in range(len(rows[0]))]
    return np.array(out, dtype=dtype).reshape(-1, R)


def _operands(count, R, dtype, seed, m=None):
    """Random ulp-nonoverlapping x, y and a nonnegative a, with special rows and hard cases."""
    m = R if m is None else m
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    x = random_terms(count, R, dtype, seed=seed, p_ulp=0.2, p_zero=0.1)
    y = random_terms(count, m, dtype, seed=seed + 1, p_ulp=0.2, p_zero=0.1)
    a = (np.where(x[:, :1] < 0, -1, 1) * x).astype(dt)  # x with a nonnegative leading term
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0]
    for arr in (x, y, a):
        k = min(len(specials), count // 4)
        arr[:k] = 0
        arr[:k, 0] = np.array(specials[:k], dtype=dt)
    y[5 % count] = x[5 % count, :m]  # x / x
    y[6 % count, 0] = dt.type(2) ** -3  # powers of two
    a[7 % count, 0] = dt.type(-1.5)  # negative radicand
    tiny = dt.type(np.finfo(dt).smallest_subnormal)
    y[8 % count] = 0
    y[8 % count, 0] = tiny  # a subnormal divisor: the quotient overflows
    y[9 % count] = 0
    y[9 % count, 0] = np.finfo(dt).max  # the quotient underflows
    x[10 % count] = rng.permutation(x[10 % count])  # unordered terms
    return np.ascontiguousarray(x), np.ascontiguousarray(y), np.ascontiguousarray(a)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("R", [2, 3, 5, 8])
def test_twins_equal_reference(R, dtype):
    x, y, a = _operands(24, R, dtype, seed=R)
    y1 = np.ascontiguousarray(y[:, :1])
    with np.errstate(all="ignore"):
        cases = [("div", (x, y)), ("div", (x, y1)), ("reciprocal", (y,)), ("sqrt", (a,)), ("sqrt", (a[:, :1],))]
        for name, args in cases:
            got = getattr(twin, name)(*args, R)
            want = _reference(name, R, dtype, *args)
            bad = np.flatnonzero((bits(got) != bits(want)).any(axis=1))
            assert bad.size == 0, (f"{name} R={R} {dtype} row {bad[0]}: {args[0][bad[0]]} "
                                   f"got {got[bad[0]]} want {want[bad[0]]}")


def _finite_rows(*arrays):
    ok = np.ones(arrays[0].shape[0], dtype=bool)
    for a in arrays:
        ok &= np.isfinite(a).all(axis=1) & (a[:, 0] != 0)
    return ok


def _check_quotients(q, x, y, bound, slack):
    worst = -math.inf
    for qi, xi, yi in zip(exact_rows(q), exact_rows(x), exact_rows(y)):
        exact = xi / yi
        err = abs(qi - exact)
        assert err <= bound * abs(exact) + slack, f"error {float(err / abs(exact))} over the bound"
        if err:
            worst = max(worst, math.log2(err / abs(exact)))
    return worst


DIV_CASES = [(R, "float64") for R in (2, 3, 4, 5, 8, 13, 16)] + [(R, "float32") for R in (2, 3, 4, 5, 8)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("m", [1, 2, 5])
def test_double_word_start_within_its_bound(m, dtype):
    """The iteration's start (twin.start: DWDivDW2(1, a), or DWDivDW2(1, SQRTDWtoDW(a))) on scaled
    operands, a's leading term in [1, 2) ([1, 4) for the square root), its second term up to a whole
    ulp (not a double word: made one first), the leading term at 1 and just below 2 and 4: the exact
    error stays within bounds.newton_start, and the twin equals the exact reference bit for bit."""
    fmt = format_of(dtype)
    dt = np.dtype(dtype)
    count = 400
    a = np.abs(random_terms(count, m, dtype, seed=50 + m, p_ulp=0.5, same_sign=True))
    lead = a[:, 0]
    a[:, :] = a * np.exp2(-np.floor(np.log2(lead)))[:, None].astype(dt)  # leading term in [1, 2)
    eps = np.finfo(dt).eps
    a[:4, 0] = [1, 2 - eps, 1 + eps, 1.5]
    if m > 1:
        a[4:12, 1] = np.array([1, -1, 0.5, -0.5, 1, -1, 0.75, -0.75], dtype=dt) * eps * a[4:12, 0]  # ulp-sized
    r = a.copy()
    r[::2] *= dt.type(2)  # the square root's operands: leading term in [1, 4)
    with np.errstate(all="ignore"):
        z = twin.start(a)
        y = twin.start(r, rsqrt=True)
    B = bounds.newton_start(m, fmt)
    Bs = bounds.newton_start(m, fmt, rsqrt=True)
    for zi, ai in zip(exact_rows(z), exact_rows(a)):
        assert abs(ai * zi - 1) <= B
    for yi, ri in zip(exact_rows(y), exact_rows(r)):  # |sqrt(r) y - 1| <= Bs, decided on r y^2
        assert (1 - Bs) ** 2 <= ri * yi * yi <= (1 + Bs) ** 2
    fmt_rows = [tuple(from_float(v) for v in row) for row in a]
    want = np.array([[to_float(v) for v in ref.start(row, fmt)] for row in fmt_rows], dtype=dt)
    assert np.array_equal(bits(z), bits(want))
    fmt_rows = [tuple(from_float(v) for v in row) for row in r]
    want = np.array([[to_float(v) for v in ref.start(row, fmt, rsqrt=True)] for row in fmt_rows], dtype=dt)
    assert np.array_equal(bits(y), bits(want))


@pytest.mark.parametrize("R,dtype", DIV_CASES)
def test_division_and_reciprocal_within_bounds(R, dtype):
    fmt = format_of(dtype)
    count = 300 if R <= 8 else 120
    x = random_terms(count, R, dtype, seed=100 + R, p_ulp=0.3, p_zero=0.1)
    y = random_terms(count, R, dtype, seed=200 + R, p_ulp=0.3, p_zero=0.1)
    y[: count // 10] = x[: count // 10]  # quotients of 1
    y[count // 10: count // 5, 1:] = 0  # one-term divisors inside R-term expansions
    y[count // 5: count // 4, 0] = np.exp2(np.round(np.log2(np.abs(y[count // 5: count // 4, 0])))).astype(dtype)
    slack = bounds.newton_underflow_term(R, fmt)
    with np.errstate(all="ignore"):
        q = twin.div(x, y, R)
        r = twin.reciprocal(y, R)
        q1 = twin.div(x, np.ascontiguousarray(y[:, :1]), R)
    worst = _check_quotients(q, x, y, bounds.div(R, fmt).value, slack)
    ones = np.zeros_like(y[:, :1])
    ones[:] = 1
    _check_quotients(r, ones, y, bounds.reciprocal(R, fmt).value, slack)
    _check_quotients(q1, x, y[:, :1], bounds.div(R, fmt, m=1).value, slack)
    assert worst > -math.inf  # the check saw inexact quotients, not only exact ones


@pytest.mark.parametrize("R,dtype", DIV_CASES)
def test_square_root_within_bound(R, dtype):
    fmt = format_of(dtype)
    count = 200 if R <= 8 else 80
    a = random_terms(count, R, dtype, seed=300 + R, p_ulp=0.3, p_zero=0.1, same_sign=True)
    a = np.ascontiguousarray(np.abs(a))  # same-sign terms: their absolute values are an expansion of |a|
    k = count // 8
    a[:k] = 0
    a[:k, 0] = (np.arange(1, k + 1) ** 2).astype(dtype)  # perfect squares
    B, slack = bounds.sqrt(R, fmt).value, bounds.newton_underflow_term(R, fmt)
    with np.errstate(all="ignore"):
        s = twin.sqrt(a, R)
    for si, ai in zip(exact_rows(s), exact_rows(a)):
        # |s - sqrt(a)| <= B sqrt(a) + slack, decided exactly: s - slack <= (1 + B) sqrt(a) and
        # s + slack >= (1 - B) sqrt(a), both sides nonnegative
        hi = si - slack
        assert hi <= 0 or hi * hi <= (1 + B) ** 2 * ai
        lo = si + slack
        assert lo >= 0 and lo * lo >= (1 - B) ** 2 * ai


def test_bounds_track_the_precision():
    """The step sequence makes the proven error of each operation that of its last product (within
    a factor 2**2), about R(p-1) - p bits, where pure doubling would prove about half as many."""
    for fmt in (format_of("float64"), format_of("float32")):
        for R in (3, 4, 8, 13, 16):
            if R * fmt.p > 400 and fmt.p == 24:
                continue
            last = bounds.newton._mul_relative(R, fmt)
            for b in (bounds.reciprocal(R, fmt), bounds.div(R, fmt), bounds.sqrt(R, fmt)):
                assert b.value <= 8 * last, (R, fmt.name, b.log2, math.log2(last))
            steps = bounds.newton_steps(R, fmt)
            assert steps[-1] == R and all(b > a for a, b in zip(steps, steps[1:]))
            assert all(b <= 2 * a for a, b in zip((1,) + steps, steps))


def test_pure_doubling_proves_fewer_bits():
    """The finding behind bounds.newton_steps (README): from the double-word start, steps 4, 8, 16
    prove only about 2**-618 for R = 16 float64, against about 2**-735 with the library's steps."""
    f64 = format_of("float64")
    doubling = bounds.reciprocal_with_steps(16, f64, (2, 4, 8, 16))
    ours = bounds.reciprocal(16, f64)
    assert -625 < doubling.log2 < -610 and ours.log2 < -730
    assert bounds.reciprocal_with_steps(16, f64, bounds.newton_steps(16, f64)).value == ours.value


@pytest.mark.parametrize("p", [4, 5])
def test_tiny_precision_exhaustive_reciprocal(p):
    """Every 2-term ulp-nonoverlapping divisor of a tiny format with leading term in [1, 2): the
    exact reference's reciprocal and square root stay within the bounds for that format."""
    fmt = tiny_format(p)
    R = 2
    lead = [Fraction(2**(p - 1) + k, 2**(p - 1)) for k in range(2**(p - 1))]
    tails = [Fraction(0)] + [s * Fraction(m, 2 ** (p - 1)) * Fraction(1, 2**e) for s in (1, -1)
                             for m in range(2**(p - 2), 2**(p - 1)) for e in range(p, p + 4)]
    B, Bs = bounds.reciprocal(R, fmt).value, bounds.sqrt(R, fmt).value
    checked = 0
    for a0 in lead:
        for t in tails:
            if t != 0 and abs(t) > a0 / 2 ** (p - 1):
                continue
            a = (a0, t if t != 0 else 0.0)
            x = ref.reciprocal(a, R, fmt)
            val = a0 + t
            err = abs(sum(Fraction(v) for v in x) - 1 / val)
            assert err <= B / val
            s = sum(Fraction(v) for v in ref.sqrt(a, R, fmt))
            with mpmath.workprec(200):
                root = mpmath.sqrt(mpmath.mpf(val.numerator) / val.denominator)
                e = abs(mpmath.mpf(s.numerator) / s.denominator - root)
                assert e <= mpmath.mpf(Bs.numerator) / Bs.denominator * root
            checked += 1
    assert checked > 50


# -- the public API ------------------------------------------------------------------------------


@pytest.mark.parametrize("R", [3, 4, 7])
def test_api_division_any_R(R):
    x = ex.array(["1", "2", "-7", "1e150"], terms=R)
    y = ex.array(["3", "-0.1", "11", "1e-150"], terms=R)
    q = x / y
    for qi, xi, yi in zip(q.to_fraction().reshape(-1), x.to_fraction().reshape(-1), y.to_fraction().reshape(-1)):
        assert abs(qi - xi / yi) <= bounds.div(R, 53).value * abs(xi / yi)
    assert bits(ex.div(x, y).terms).tolist() == bits(q.terms).tolist()
    with pytest.raises(ValueError, match="double-word"):
        ex.div(x, y, method="dw_div_dw1")
    with pytest.raises(ValueError, match="unknown division method"):
        ex.div(x, y, method="long")


def test_api_division_by_a_float_uses_one_term():
    x = ex.array(["1", "-2.5", "1e-5"], terms=5)
    q = ex.div(x, 3.0)
    want = twin.div(x.terms, np.full((3, 1), 3.0), 5)
    want = ex.renormalize(ex.from_terms(want)).terms
    assert np.array_equal(bits(q.terms), bits(want))
    q2 = ex.div(x, np.array([3.0, 7.0, -1.0]))
    for qi, xi, d in zip(q2.to_fraction(), x.to_fraction(), (3, 7, -1)):
        assert abs(qi - xi / d) <= bounds.div(5, 53, m=1).value * abs(xi / d)


def test_api_sqrt_and_reciprocal_values():
    R = 8
    two = ex.array(2, terms=R)
    s = ex.sqrt(two)
    with mpmath.workprec(600):
        err = abs(s.to_mpmath() - mpmath.sqrt(2))
        assert err <= mpmath.mpf(bounds.sqrt(R, 53).value.numerator) / bounds.sqrt(R, 53).value.denominator * 2
    assert abs((s * s - 2).to_fraction()) < Fraction(1, 2**400)
    r = ex.reciprocal(ex.array(7, terms=R))
    assert abs(r.to_fraction() - Fraction(1, 7)) <= bounds.reciprocal(R, 53).value / 7


def test_api_special_values():
    R = 4
    x = ex.array([1, -1, 0, "-0", "inf", "-inf", "nan", 4], terms=R)
    s = ex.sqrt(x)
    lead = s.terms[:, 0]
    assert np.isnan(lead[1]) and np.isnan(lead[6]) and np.isnan(lead[5])
    assert lead[2] == 0 and not np.signbit(lead[2]) and lead[3] == 0 and np.signbit(lead[3])
    assert lead[4] == np.inf and lead[7] == 2 and lead[0] == 1
    r = ex.reciprocal(x)
    lead = r.terms[:, 0]
    assert lead[2] == np.inf and lead[3] == -np.inf and lead[4] == 0 and np.signbit(lead[5]) and np.isnan(lead[6])
    zero = ex.array(0, terms=R)
    q = ex.div(ex.array([1, 0, -1, 0], terms=R), ex.array([0, 0, 0, -5], terms=R))
    lead = q.terms[:, 0]
    assert lead[0] == np.inf and np.isnan(lead[1]) and lead[2] == -np.inf and lead[3] == 0 and np.signbit(lead[3])
    assert (q.terms[:, 1:] == 0).all()
    assert ex.div(ex.array(1, terms=R), zero).terms[0] == np.inf
    big = ex.array("1e300", terms=R)
    assert ex.div(big, ex.array("1e-300", terms=R)).terms[0] == np.inf  # overflow: (inf, 0, ...)
    assert ex.div(ex.array("1e-300", terms=R), big).terms[0] == 0  # underflow to zero


@pytest.mark.parametrize("op", ["div", "reciprocal", "sqrt"])
def test_verification_rows(op):
    """`python -m expansions verify --operations div,reciprocal,sqrt` on the adversarial families."""
    from expansions import verify

    for R, dtype in ((4, "float64"), (16, "float64"), (3, "float32")):
        row = verify.verify_one(op, R, dtype, 300, seed=7, edge=False)  # the edge families: test_verify.py
        assert row.cases > 250 and row.violations == 0 and row.max_ratio_log2 <= 0
        assert row.max_error_log2 > -math.inf


def test_round_up_is_an_upper_bound_with_64_bits():
    rng = np.random.default_rng(5)
    for _ in range(500):
        q = Fraction(int(rng.integers(1, 2**62)), int(rng.integers(1, 2**62)))
        q *= Fraction(2) ** int(rng.integers(-900, 900))
        r = bounds.round_up(q)
        assert q <= r < q * (1 + Fraction(1, 2**62))
        n = r.numerator
        odd = n >> ((n & -n).bit_length() - 1)
        assert r.denominator & (r.denominator - 1) == 0 and odd.bit_length() <= 64
