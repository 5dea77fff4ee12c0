"""pow near x = 1 with a large exponent: the stated bound holds up to ``bounds.pow_exponent_limit`` (measured
here against mpmath at R = 2..32, both dtypes), and the library says it does not hold beyond (the
reproducers: float32 R = 4 and 6 at x = 1 - 2^-76, float64 R = 16 at x = 1 - 2^-540)."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

import expansions as ex
from expansions import bounds as B
from expansions.formats import format_of
from expansions.verify_elementary import errors


def _value(row):
    return mpmath.fsum(mpmath.mpf(float(t)) for t in row)


def _relative_error(x, y):
    first = [np.asarray(v.terms).reshape(-1, v.nterms)[0] for v in (x, y, ex.pow(x, y))]
    with mpmath.workprec(3000):
        xe, ye, got = (_value(row) for row in first)
        exact = mpmath.power(xe, ye)
        return abs(got - exact) / exact, ye


@pytest.mark.parametrize("R, dtype, k", [(4, "float32", 76), (6, "float32", 76), (16, "float64", 540)])
def test_the_reproducers_lie_beyond_the_exponent_limit(R, dtype, k):
    fmt = format_of(dtype)
    x = ex.from_terms(np.array([[1.0, -(2.0 ** -k)] + [0.0] * (R - 2)], dtype=dtype))
    y = ex.array(30 * 2**k, terms=R, dtype=dtype)
    rel, ye = _relative_error(x, y)
    bound = B.pow_bound(R, fmt, Fraction(int(ye)))
    assert not bound.hypotheses_hold and "not stated" in bound.note
    assert abs(ye) > B.pow_exponent_limit(R, fmt)
    eta = mpmath.mpf(fmt.eta.numerator) / fmt.eta.denominator
    assert rel <= 2 * abs(ye) * eta  # about |y| eta, as documented (2^-72.1, 2^-72.1, 2^-536)
    assert "pow_exponent_limit" in B.elementary("pow", R, fmt).note


@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize("R", (2, 3, 4, 5, 6, 8, 12, 16, 20, 21, 24, 32))
def test_the_stated_bound_holds_up_to_the_exponent_limit(R, dtype):
    """x = 1 +- 2^-k, y = z / log x with |y| between 2^-8 and 1 times the limit (or the largest |y| whose
    x is an R-term expansion distinct from 1), |z| <= 40: errors within the stated bound."""
    fmt = format_of(dtype)
    rng = np.random.default_rng([R, len(dtype)])
    limit = B.pow_exponent_limit(R, fmt)
    lim_log2 = min(float(np.log2(float(limit))) if limit < 2**1000 else 1000.0, -fmt.emin - 8)
    xs, ys = [], []
    with mpmath.workprec(4000):
        while len(xs) < 40:
            z = mpmath.mpf(rng.uniform(-40, 40))
            target = mpmath.mpf(2) ** (lim_log2 - rng.uniform(0, 8))  # |y| wanted
            d = abs(z) / target  # |log x| ~ |x - 1|
            if d >= 0.5 or d == 0:
                continue
            xv = 1 + rng.choice([-1, 1]) * d
            xs.append(xv)
            ys.append(z / mpmath.log(xv))
        x = ex.array(xs, terms=R, dtype=dtype)
        y = ex.array(ys, terms=R, dtype=dtype)
    args = (np.asarray(x.terms), np.asarray(y.terms))
    keep = np.array([abs(Fraction(sum(Fraction(float(t)) for t in row))) <= limit for row in args[1]])
    args = tuple(np.ascontiguousarray(a[keep]) for a in args)
    out = np.asarray(ex.pow(ex.from_terms(args[0]), ex.from_terms(args[1])).terms)
    errs = errors("pow", args, out, R, dtype)
    units = float(B.elementary("pow", R, fmt).value / B.elementary_unit(R, fmt))
    assert np.sum(~np.isnan(errs)) >= 25
    assert np.nanmax(errs) <= units, (np.nanmax(errs), units)
