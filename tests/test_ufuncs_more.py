"""More of NumPy's ufuncs on expansions (expansions.ufuncs): exact results against Fractions on values
with tails, the IEEE special values as NumPy gives them for float64, empty and 0-d operands, and the
clear errors of the ufuncs that have no meaning for expansions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import expansions as ex
from expansions.ufuncs import MEANINGLESS

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.5, -2.5, 3.0, -0.5, 1e-300, -7.0]


def tailed(R, dtype=np.float64):
    """Finite values with tails (fractional parts below the leading term, negative tails, subnormal
    tails, integers beyond 2**53), as ulp-nonoverlapping expansions."""
    p = 53 if dtype == np.float64 else 24
    rows = [[2.5, 2.0**-60], [-2.5, -(2.0**-70)], [2.0**60, 0.75], [-(2.0**70), 0.5], [0.5, -(2.0**-60)],
            [3.0, -(2.0**-55)], [1e-300, 1e-317], [-7.0, 0.0], [2.0**(p + 3), -0.25], [0.75, 2.0**-80]]
    t = np.zeros((len(rows), R), dtype=dtype)
    for i, r in enumerate(rows):
        for j, v in enumerate(r[:R]):
            t[i, j] = v
    return ex.renormalize(ex.from_terms(t))


def frac(x):
    return [Fraction(v) if v is not None else None for v in x.to_fraction()]


@pytest.mark.parametrize("R", [2, 3, 4])
def test_modf_frexp_ldexp_exact(R):
    x = tailed(R)
    X = list(x.to_fraction())
    f, i = np.modf(x)
    for xv, fv, iv in zip(X, f.to_fraction(), i.to_fraction()):
        assert iv == math.trunc(xv) and fv == xv - math.trunc(xv)
    m, e = np.frexp(x)
    for xv, mv, ev in zip(X, m.to_fraction(), e):
        assert mv * Fraction(2) ** int(ev) == xv
        assert xv == 0 or Fraction(1, 2) <= abs(mv) < 1
    for n in (3, -5, 100):  # exact while every term stays normal (a subnormal tail scaled down loses bits)
        y = np.ldexp(x, n)
        tiny = np.finfo(np.float64).tiny
        for row, v, got in zip(x.terms, X, y.to_fraction()):
            if (np.abs(row[row != 0]) * 2.0**n >= tiny).all():
                assert got == v * Fraction(2) ** n
            else:
                assert abs(got - v * Fraction(2) ** n) <= x.nterms * Fraction(2) ** -1075 * 2
    assert list(np.ldexp(x, np.arange(len(X))).to_fraction()) == [v * 2**k for k, v in enumerate(X)]  # up: exact


def test_ldexp_leaving_the_range():
    x = ex.array(1.5, terms=2) + ex.array(2.0**-60, terms=2)
    assert np.isinf(float(np.ldexp(x, 2000)))
    assert float(np.ldexp(x, -2000)) == 0.0
    with pytest.raises(TypeError):
        np.ldexp(x, 1.5)


def test_special_values_as_numpy():
    v = np.array(SPECIAL)
    x = ex.array(v, terms=2)
    with np.errstate(all="ignore"):
        f, i = np.modf(x)
        nf, ni = np.modf(v)
        _same(f.terms[:, 0], nf)
        _same(i.terms[:, 0], ni)
        m, e = np.frexp(x)
        nm, ne = np.frexp(v)
        _same(m.terms[:, 0], nm)
        assert np.array_equal(np.asarray(e), ne)
        _same(np.fabs(x).terms[:, 0], np.fabs(v))
        for s in (1.0, -1.0, -0.0, np.nan):
            _same(np.copysign(x, s).terms[:, 0], np.copysign(v, s))
        _same(np.heaviside(x, 0.5).terms[:, 0], np.heaviside(v, 0.5))
        for other in (1.0, np.nan, -np.inf):
            _same(np.fmax(x, other).terms[:, 0], np.fmax(v, other))
            _same(np.fmin(x, other).terms[:, 0], np.fmin(v, other))
        _same(np.square(x).terms[:, 0], np.square(v))


def _same(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    both_nan = np.isnan(a) & np.isnan(b)
    assert (both_nan | ((a == b) & (np.signbit(a) == np.signbit(b)))).all(), (a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_copysign_fmax_fmin_heaviside_exact(dtype):
    x = tailed(3, np.float64).astype(terms=3, dtype=dtype) if dtype == np.float32 else tailed(3)
    X = list(x.to_fraction())
    y = -x
    assert list(np.copysign(x, -1.0).to_fraction()) == [-abs(v) for v in X]
    assert list(np.copysign(y, x).to_fraction()) == [abs(v) if v > 0 else -abs(v) for v in X]
    assert list(np.fmax(x, y).to_fraction()) == [max(a, -a) for a in X]
    assert list(np.fmin(x, y).to_fraction()) == [min(a, -a) for a in X]
    h = list(np.heaviside(x, 0.25).to_fraction())
    assert h == [Fraction(1) if v > 0 else (Fraction(1, 4) if v == 0 else Fraction(0)) for v in X]


def test_square_reciprocal_divmod_float_power():
    x = tailed(4)
    X = list(x.to_fraction())
    sq = list(np.square(x).to_fraction())
    bound = ex.bounds.mul_truncated(4, 53).value
    tiny = ex.bounds.mul_underflow_term(4, ex.FLOAT64) + Fraction(2) ** -1022  # 1e-300 squared underflows
    assert all(abs(s - v * v) <= 4 * bound * v * v + tiny for s, v in zip(sq, X))
    r = np.reciprocal(ex.array(3.0, terms=4))
    assert abs(Fraction(*r.to_fraction().as_integer_ratio()) - Fraction(1, 3)) < Fraction(1, 2**200)
    q, m = np.divmod(ex.array(7.0, terms=2), 2.0)
    assert float(q) == 3.0 and float(m) == 1.0
    assert np.float_power(ex.array(3.0, terms=2), 2).to_fraction() == 9


def test_empty_and_zero_d():
    z = ex.zeros((0, 3), terms=2)
    for f in (np.fabs, np.square, lambda a: np.ldexp(a, 2), lambda a: np.copysign(a, 1.0),
              lambda a: np.fmax(a, 1.0), lambda a: np.heaviside(a, 0.5)):
        assert f(z).shape == (0, 3)
    f, i = np.modf(z)
    m, e = np.frexp(z)
    assert f.shape == i.shape == m.shape == np.shape(e) == (0, 3)
    s = ex.array(-2.75, terms=3)
    f, i = np.modf(s)
    assert f.ndim == 0 and float(f) == -0.75 and float(i) == -2.0
    m, e = np.frexp(s)
    assert float(m) == -0.6875 and int(e) == 2


@pytest.mark.parametrize("name", sorted(MEANINGLESS))
def test_meaningless_ufuncs_say_why(name):
    if not isinstance(getattr(np, name, None), np.ufunc):
        pytest.skip(f"this NumPy has no np.{name}")
    x = ex.array([1.0, 2.0], terms=2)
    args = (x,) if getattr(np, name).nin == 1 else (x, x)
    with pytest.raises(TypeError, match="on expansions"):
        getattr(np, name)(*args)
