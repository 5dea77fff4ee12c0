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


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [2, 3, 4, 8])
def test_remainder_exact_then_rounded_at_every_quotient_size(R, dtype):
    """Quotients from 2^-60 to far beyond what R terms hold (and beyond the range): the floor exact
    where R terms hold it, else rounded to R terms (±inf beyond the range), ``%`` and ``fmod`` the
    exact remainders rounded to R terms."""
    fmt = F.format_of(np.dtype(dtype))
    top = 100 if dtype == "float32" else 900
    x = ex.random((120,), terms=R, dtype=dtype, seed=R, exponent_range=(-40, top))
    y = ex.random((120,), terms=R, dtype=dtype, seed=R + 7, exponent_range=(-40, 40))
    flip = np.random.default_rng(R).integers(0, 2, size=(2, 120)).astype(bool)
    x, y = ex.where(flip[0], -x, x), ex.where(flip[1], -y, y)
    tol = Fraction(2) ** (1 - R * (fmt.p - 1))
    for a, b, q, r, f in zip(fr(x), fr(y), fr(x // y), fr(x % y), fr(ex.fmod(x, y))):
        n = exact_floor(a, b)
        if abs(n) >= fmt.largest:  # beyond the range: ±inf (or the largest float, by rounding)
            assert abs(q) >= fmt.largest and (q > 0) == (n > 0)
        else:  # exact, or the exact floor rounded to R terms where they cannot hold it
            assert q == n if abs(n) < 2 ** (R * (fmt.p - 1)) else abs(q - n) <= abs(n) * tol, (a, b)
        rem, frem = a - b * n, a - b * math.trunc(a / b)
        assert abs(r - rem) <= abs(rem) * tol and abs(f - frem) <= abs(frem) * tol, (a, b)
        assert (r == 0 or (r > 0) == (b > 0)) and (f == 0 or (f > 0) == (a > 0))


@pytest.mark.parametrize("R", [2, 3, 8])
def test_remainders_of_huge_quotients(R):
    """Quotients beyond the range or beyond what R terms hold: the remainder exists and is exact
    (it was -inf, 0, or larger than the divisor)."""
    def e(v):
        return ex.array(v, terms=R)
    assert fr(e(1.7e308) % e(0.75)) == Fraction(1.7e308) % Fraction(0.75) == Fraction(1, 2)
    for a, b in [(1e200, 1e-200), (1e300, 1e-10), (1.0, 1e-200), (1e200, 3.0)]:
        A, B = Fraction(a), Fraction(b)
        assert float(fr(e(a) % e(b))) == float(A % B), (a, b)
        assert float(fr(ex.fmod(e(a), e(b)))) == float(A - B * math.trunc(A / B)), (a, b)
    n = 2**120 // 3  # 119 bits: exact from R = 3, rounded to R terms at R = 2
    assert abs(fr(e(2.0**120) // 3) - n) <= n * Fraction(2) ** (-R * 52) and fr(e(2.0**120) % 3) == 1
    assert (fr(e(2.0**120) // 3) == n) == (R >= 3)
    x = ex.array(1e30, terms=3, dtype="float32")  # 1e30 split into float32 terms
    assert fr(ex.fmod(x, 3.0)) == fr(x) % 3


SPECIAL = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("R", [2, 3])
def test_special_values_as_numpy(R):
    """±0, ±inf, NaN and zero divisors: ``//``, ``%``, ``fmod`` give NumPy's value and zero sign."""
    a, b = np.array(np.meshgrid(SPECIAL, SPECIAL)).reshape(2, -1)
    x, y = ex.array(a, terms=R), ex.array(b, terms=R)
    with np.errstate(all="ignore"):
        for got, want in [(x // y, np.floor_divide(a, b)), (x % y, np.remainder(a, b)),
                          (ex.fmod(x, y), np.fmod(a, b))]:
            g = got.terms[:, 0]
            assert np.array_equal(g, want, equal_nan=True), (a, b, g, want)
            assert (np.signbit(g) == np.signbit(want))[~np.isnan(want)].all(), (a, b, g, want)
            assert (got.terms[:, 1:] == 0).all()
    # a finite expansion modulo an infinity is itself, all terms (NumPy: x, or ±inf by the signs)
    z = ex.from_terms(np.array([1.0, 2.0**-60] + [0.0] * (R - 2)))
    assert fr(z % np.inf) == fr(z) and fr(ex.fmod(z, -np.inf)) == fr(z) and fr(z // np.inf) == 0
    assert float(fr(-z % np.inf)) == np.inf and fr(-z // np.inf) == -1


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


# ----------------------------------------------------------------------------------------------
# signs of zeros and non-finite lower terms in the NumPy functions


@pytest.mark.parametrize("R", [2, 3])
def test_extrema_of_equal_values_as_numpy(R):
    """maximum/minimum/fmax/fmin of equal values give the second operand, as NumPy's array loops do,
    but +0 and -0 are ordered as IEEE 754-2019 orders them (-0 < +0); NaN as NumPy."""
    vals = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]
    a, b = np.array(np.meshgrid(vals, vals)).reshape(2, -1)
    x, y = ex.array(a, terms=R), ex.array(b, terms=R)
    both_zero = (a == 0) & (b == 0)
    for f, smaller in ((np.maximum, False), (np.minimum, True), (np.fmax, False), (np.fmin, True)):
        got, want = f(x, y).terms[:, 0], f(a, b)
        # +0 and -0: ordered -0 < +0, as IEEE 754-2019 (NumPy gives one of them by position)
        neg = (np.signbit(a) | np.signbit(b)) if smaller else (np.signbit(a) & np.signbit(b))
        want = np.where(both_zero, np.where(neg, -0.0, 0.0), want)
        assert np.array_equal(got, want, equal_nan=True)
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()


def test_ldexp_keeps_signs_and_reads_non_finite_rows_by_the_rule():
    z = ex.array([-0.0, 0.0, -1.0, 1.0], terms=2)
    assert list(np.signbit(np.ldexp(z, 3).terms[:, 0])) == [True, False, True, False]
    assert list(np.signbit(np.ldexp(z, -2000).terms[:, 0])) == [True, False, True, False]  # underflow: signed zeros
    assert (np.ldexp(z, -2000).terms == 0).all()
    odd = ex.from_terms(np.array([[np.inf, -np.inf], [-np.inf, 1.0], [1.0, np.inf]]))
    assert np.array_equal(np.ldexp(odd, 2).terms, np.array([[np.inf, 0], [-np.inf, 0], [np.nan, 0]]), equal_nan=True)
    # fmax, copysign: a non-finite row comes out as the rule writes it, (value, 0)
    assert np.array_equal(np.fmax(odd, 1.0).terms[:2], np.array([[np.inf, 0], [1.0, 0]]))
    assert np.array_equal(np.copysign(odd, -1.0).terms[:2], np.array([[-np.inf, 0], [-np.inf, 0]]))


@pytest.mark.parametrize("R", [2, 3])
def test_divmod_is_floor_divide_and_remainder(R):
    """np.divmod computes both at once: the bits of x // y and x % y, on random, special and huge
    quotients and for a power-of-two divisor (floor_divide's exact scaling)."""
    x = ex.random((60,), terms=R, seed=R, exponent_range=(-30, 300))
    y = ex.random((60,), terms=R, seed=R + 1, exponent_range=(-30, 30))
    x = ex.concatenate([x, ex.array(SPECIAL * len(SPECIAL), terms=R)])
    y = ex.concatenate([y, ex.array([v for v in SPECIAL for _ in SPECIAL], terms=R)])
    with np.errstate(all="ignore"):
        for d in (y, 0.25, -8.0, 3.0):
            q, r = np.divmod(x, d)
            assert np.array_equal(q.terms, (x // d).terms, equal_nan=True)
            assert np.array_equal(r.terms, (x % d).terms, equal_nan=True)
            assert np.array_equal(np.signbit(q.terms), np.signbit((x // d).terms))
