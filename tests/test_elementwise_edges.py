"""Element-wise functions at their edges: floor division of tiny quotients, integer powers near
underflow and with huge exponents, non-finite lower terms.  Expected values are exact (Fractions)."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest

import expansions as ex
from expansions import bounds
from expansions import formats as F
from expansions.elementwise import power_bound

DTYPES = ["float64", "float32"]


def fr(x):
    q = x.to_fraction()
    return np.array(q, dtype=object) if isinstance(q, np.ndarray) else q


def exact_floor(a: Fraction, b: Fraction) -> int:
    return math.floor(a / b)


# ----------------------------------------------------------------------------------------------
# floor division and remainder


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [2, 3, 4, 8])
def test_tiny_negative_quotient_has_floor_minus_one(R, dtype):
    """x / y tiny and negative, far from any integer: floor -1, remainder y + x (the sign of y)."""
    p = F.format_of(np.dtype(dtype)).p
    k = p + 7  # 2^60 + 1 for float64: more bits than one term holds
    x = ex.from_terms(np.array([2.0**-k, 2.0**(-2 * k)] + [0.0] * (R - 2), dtype=dtype))
    y = ex.array(-(2**k + 1), terms=R, dtype=dtype)
    X, Y = fr(x), Fraction(-(2**k + 1))
    assert fr(x // y) == exact_floor(X, Y) == -1
    assert fr(-x // -y) == -1 and fr(x // -y) == 0 and fr(-x // y) == 0
    # the remainder x + y rounded once to R terms: within the R-term subtraction's error of the exact one
    r, exact = fr(x % y), X - Y * exact_floor(X, Y)
    assert exact < 0 and abs(r - exact) <= abs(exact) * Fraction(1, 2 ** (R * (p - 1)))
    assert fr(ex.fmod(x, y)) == X  # fmod truncates: quotient 0
    # a remainder the R terms hold exactly
    x1 = ex.array(2.0**-20, terms=R, dtype=dtype)
    y1 = ex.array(-(2**(p - 23) + 1), terms=R, dtype=dtype)
    assert fr(x1 // y1) == -1 and fr(x1 % y1) == Fraction(2.0**-20) - (2**(p - 23) + 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [2, 3, 4])
def test_floor_divide_random_against_exact(R, dtype):
    """Quotients of every size and sign, tiny ones included, against the exact floor."""
    rng = np.random.default_rng(R)
    bits = R * (F.format_of(np.dtype(dtype)).p - 1)
    x = ex.random((400,), terms=R, dtype=dtype, seed=R, exponent_range=(-60, 10))
    y = ex.random((400,), terms=R, dtype=dtype, seed=R + 100, exponent_range=(0, 40))
    flip = rng.integers(0, 2, size=400).astype(bool)
    y = ex.where(flip, -y, y)
    q = fr(x // y)
    for a, b, got in zip(fr(x), fr(y), q):
        assert got == exact_floor(a, b), (a, b, got)
    for a, b, got in zip(fr(x), fr(y), fr(x % y)):
        n = exact_floor(a, b)
        assert abs(got - (a - b * n)) <= (abs(a) + abs(b * n)) * Fraction(8, 2**bits), (a, b)


# ----------------------------------------------------------------------------------------------
# the integer power's bound in bounded time


@pytest.mark.parametrize("fmt", [F.FLOAT64, F.FLOAT32], ids=lambda f: f.name)
@pytest.mark.parametrize("R", [2, 3, 8])
def test_power_bound_above_the_exact_recurrence_and_close_to_it(R, fmt):
    e = bounds.mul_relative_to_product(R, fmt.p)
    r = bounds.reciprocal(R, fmt).value
    for n in [0, 1, 2, 3, 4, 5, 7, 8, 13, 64, 100, 255, 1000, 4097]:
        exact = (1 + e) ** max(n - 1, 0) - 1  # the product count's exact growth factor
        b = power_bound(n, R, fmt)
        assert exact <= b <= exact * (1 + Fraction(1, 2**60)), (n, R)
        if n > 0:
            exact_neg = (1 + r) / (1 - exact) - 1
            bn = power_bound(-n, R, fmt)
            assert exact_neg <= bn <= exact_neg * (1 + Fraction(1, 2**60)), (n, R)


def test_power_bound_runs_in_bounded_time():
    start = time.perf_counter()
    for n in (2**20 + 1, 2**40, -(2**40), 2**40 + 12345):
        b = power_bound(n, 8, F.FLOAT64)
        assert 0 < b < Fraction(1, 2**300)
    small = power_bound(2**20 + 1, 2, F.FLOAT64)
    e = bounds.mul_relative_to_product(2, 53)
    assert 2**20 * e <= small <= 2**20 * e * (1 + Fraction(1, 2**10))
    with pytest.raises(ValueError, match="no useful relative bound"):
        power_bound(2**100, 2, F.FLOAT32)
    assert time.perf_counter() - start < 2.0


# ----------------------------------------------------------------------------------------------
# negative integer powers near the underflow and overflow thresholds


def _power_cases(fmt):
    """(x, n) with x^-n representable: subnormal, near the underflow threshold, near overflow, and
    intermediates x^|n| that overflow or underflow (float64 exponents; float32 scaled by 1/8)."""
    cases = [(1.5, 1800), (1.5, 1700), (0.75, 2400), (-0.75, 2401), (-10.0, 309), (3.0, 20), (1.5, 1760),
             (-0.9, 6001)]
    if fmt is F.FLOAT64:
        return cases
    return [(v, n // 8 + (n % 2 and not (n // 8) % 2)) for v, n in cases]  # keeps an odd n odd


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [2, 3, 4, 8])
def test_negative_power_not_flushed(R, dtype):
    """x ** -n where x^n over- or underflows but x^-n is representable: the R-term bound of
    power_bound plus an absolute 2R units of the smallest subnormal (the terms rounded into the
    subnormal range); results that overflow are infinities of the right sign."""
    fmt = F.format_of(np.dtype(dtype))
    xs = ex.array([v for v, _ in _power_cases(fmt)], terms=R, dtype=dtype)
    for i, (v, n) in enumerate(_power_cases(fmt)):
        got = xs[i] ** -n
        exact = Fraction(v) ** -n
        assert abs(exact) <= fmt.largest
        assert abs(got.to_fraction() - exact) <= power_bound(-n, R, fmt) * abs(exact) + 2 * R * fmt.eta, (v, n)
    assert fr(ex.array(-10.0, terms=2) ** -309) == Fraction(np.float64(-10.0) ** -309)  # as float64 rounds it
    huge = ex.array([0.5, -0.5], terms=R, dtype=dtype) ** -(fmt.emax + 2)  # 2^(emax + 2), odd
    assert list(huge.terms[:, 0]) == [np.inf, -np.inf] and not huge.terms[:, 1:].any()


# ----------------------------------------------------------------------------------------------
# non-finite lower terms: the value of a row is its leading term where that is not finite, NaN where
# the leading term is finite but a lower term is not (the documented non-finite rule)

INF, NAN = math.inf, math.nan
ROWS = [[1.0, INF], [INF, -INF], [INF, NAN], [-INF, 1.0], [NAN, 0.0], [1.0, NAN], [-1.0, -INF], [INF, 0.0],
        [2.5, 0.0], [-2.5, 2.0**-60], [-0.0, 0.0]]


def _rule_value(row) -> float:
    if not math.isfinite(row[0]):
        return row[0]
    return NAN if not all(math.isfinite(t) for t in row) else row[0]


def _same(a, b) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.fixture(params=["engine", "twins"])
def cpu_backend(request):
    ex.set_cpu_backend(request.param)
    yield request.param
    ex.set_cpu_backend(None)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [2, 3])
def test_nonfinite_lower_terms_follow_the_rule(R, dtype, cpu_backend):
    rows = [r + [0.0] * (R - 2) for r in ROWS]
    x = ex.from_terms(np.array(rows, dtype=dtype))
    values = [_rule_value(r) for r in rows]
    exact = [sum(map(Fraction, r)) if math.isfinite(v) else None for r, v in zip(rows, values)]

    def check(r, i, want):
        """Row i of the result r: the non-finite IEEE value followed by zeros, or the exact value."""
        if exact[i] is None or not math.isfinite(want):
            assert _same(float(r.terms[i, 0]), want) and not r.terms[i, 1:].any(), (rows[i], want)
        else:
            assert fr(r[i]) == want, (rows[i], want)

    assert list(ex.isnan(x)) == [math.isnan(v) for v in values]
    assert list(ex.isinf(x)) == [math.isinf(v) for v in values]
    assert list(ex.isfinite(x)) == [math.isfinite(v) for v in values]
    for f, g in [(ex.maximum, max), (ex.minimum, min)]:
        r = f(x, 2.0)
        for i, v in enumerate(values):
            check(r, i, NAN if math.isnan(v) else g(exact[i] if exact[i] is not None else v, 2))
    c = ex.clip(x, 0, 4)
    for i, v in enumerate(values):
        check(c, i, NAN if math.isnan(v) else min(max(exact[i] if exact[i] is not None else v, 0), 4))
    for f, g in [(ex.floor, math.floor), (ex.ceil, math.ceil), (ex.trunc, math.trunc), (ex.rint, round)]:
        r = f(x)
        for i, v in enumerate(values):
            check(r, i, v if exact[i] is None else g(exact[i]))
    for op in ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]:
        for other in (INF, -INF, 4.0, 1.0):
            got = list(getattr(x, op)(other))
            for i, v in enumerate(values):
                if exact[i] is None:
                    assert got[i] == getattr(v, op)(other), (op, other, rows[i])
    s = ex.sign(x).terms[:, 0]
    for i, v in enumerate(values):
        assert _same(float(s[i]), float(np.sign(v if exact[i] is None else float(exact[i])))), rows[i]
