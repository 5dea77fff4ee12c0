"""The remaining real-valued NumPy ufuncs on ExpansionArrays (expansions.numpy_ufuncs): every result
against mpmath at high precision within the function's stated bound (random, adversarial and
special operands: near 0, near 1, huge, tiny, exact cubes, +-0, +-inf, NaN, empty and 0-d arrays),
float64 and float32 terms at R = 2 and R = 3 or 4; the logical functions exact against NumPy's truth
values; the vector products bit-identical to expansions.dot / expansions.matmul and within their
bound."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from helpers import bits

import expansions as ex
from expansions import bounds
from expansions.formats import format_of
from expansions.numpy_ufuncs import (
    acosh_bound,
    asinh_bound,
    atanh_bound,
    cbrt_bound,
    exp2_bound,
    hypot_bound,
    logaddexp_bound,
)

FORMATS = [(2, "float64"), (4, "float64"), (2, "float32"), (3, "float32"), (8, "float64"), (8, "float32")]
PREC = 1200  # bits of the mpmath reference: far beyond R = 4 float64 (about 212 bits)
def mpf(q: Fraction):
    return mpmath.mpf(q.numerator) / q.denominator


def values(x):
    """The exact values of x, flattened (Fractions, or floats for NaN and the infinities)."""
    out = x.reshape(-1).to_fraction() if x.size else []
    return list(out)


def rand(n, R, dtype, seed, lo=-4, hi=4, **kw):
    return ex.random(n, terms=R, dtype=dtype, seed=seed, exponent_range=(lo, hi),
                     min_exponent=-400 if dtype == "float64" else -60, **kw)


def special_like(npfn, xs, dtype):
    """NumPy's own result on the values as floats of the terms' dtype (used where an operand or the exact
    result is not finite, or the result overflows)."""
    with np.errstate(all="ignore"):
        return float(npfn(*[np.dtype(dtype).type(float(v)) for v in xs]))


def check(name, got, args, mpfn, npfn, rel, absolute):
    """Each element of got within ``rel |f| + absolute`` of the exact f (mpmath), or, where an operand or f
    is not finite, NumPy's special value (NaN, or the same infinity or zero)."""
    n = got.size
    gv = values(got)
    av = [values(a) if a.size == n else values(a) * n for a in args]
    bad = []
    top = float(np.finfo(got.dtype).max)
    with mpmath.workprec(PREC):
        for i in range(n):
            xs = [a[i] for a in av]
            finite = all(isinstance(v, Fraction) for v in xs)
            want = mpfn(*[mpf(v) for v in xs]) if finite else None
            if want is None or not mpmath.isfinite(want) or abs(want) > top:
                s = special_like(npfn, xs, got.dtype)
                g = gv[i]
                ok = (math.isnan(s) and isinstance(g, float) and math.isnan(g)) or (
                    not math.isnan(s) and not (isinstance(g, float) and math.isnan(g)) and float(g) == s
                    and (s != 0 or math.copysign(1, s) == math.copysign(1, float(g))))
                if not ok:
                    bad.append((xs, g, s))
                continue
            g = gv[i]
            tol = mpf(Fraction(rel)) * abs(want) + mpf(Fraction(absolute))
            if not isinstance(g, Fraction) or abs(mpf(g) - want) > tol:
                bad.append((xs, g, want))
    rows = [f"  {[float(v) for v in xs]}: got {float(g)!r}, want {mpmath.nstr(w, 20)}" for xs, g, w in bad[:5]]
    assert not bad, f"{name}: {len(bad)} of {n} outside the bound\n" + "\n".join(rows)


def arr(vals, R, dtype):
    return ex.array(vals, terms=R, dtype=dtype)


def near_one(R, dtype, sign=1):
    """1 + sign 2^-k for k from 1 to the expansion's precision (exact in R terms)."""
    p = format_of(dtype).p
    return arr([1 + sign * Fraction(1, 2**k) for k in range(1, R * (p - 1) - 2, 3)], R, dtype)


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan]


# ----------------------------------------------------------------------------------------------
# exp2


def mp_exp2(x):
    return mpmath.power(2, x)


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_exp2_within_its_bound(R, dtype):
    fmt = format_of(dtype)
    rel, absolute = exp2_bound(R, dtype)
    big = fmt.emax + 1
    tiny = -(fmt.p - 1 - fmt.emin)  # the smallest subnormal's exponent
    xs = [rand(64, R, dtype, 1, -6, 6), rand(32, R, dtype, 2, -40, -1),
          arr([big - 0.1, big - 1.5, tiny + 0.3, tiny - 0.4, tiny + 3.7, fmt.emin - 0.5, 0.5, -0.5, 1e-30,
               -1e-30, 1e30, -1e30] + SPECIAL, R, dtype)]
    for x in xs:
        check("exp2", np.exp2(x), [x], mp_exp2, np.exp2, rel, absolute)


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_exp2_of_integers_is_exact_and_keeps_the_shape(R, dtype):
    fmt = format_of(dtype)
    n = np.arange(-(fmt.p - 1 - fmt.emin), fmt.emax + 1, 7, dtype=np.float64)
    r = np.exp2(arr(n, R, dtype))
    assert [v for v in values(r)] == [Fraction(2) ** int(k) for k in n]
    assert np.exp2(arr(np.zeros((0, 3)), R, dtype)).shape == (0, 3)
    z = np.exp2(arr(3.0, R, dtype))
    assert z.shape == () and z.to_fraction() == 8


# ----------------------------------------------------------------------------------------------
# hypot


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_hypot_within_its_bound_without_overflow_or_underflow(R, dtype):
    fmt = format_of(dtype)
    rel, absolute = hypot_bound(R, dtype)
    top = float(2.0 ** (fmt.emax - 2))
    low = float(2.0 ** (fmt.emin - 3))
    x = rand(64, R, dtype, 3)
    y = rand(64, R, dtype, 4, -30, 4)
    check("hypot", np.hypot(x, y), [x, y], mpmath.hypot, np.hypot, rel, absolute)
    a = arr([top, top, low, low, 3.0, 0.0, -0.0, np.inf, np.nan, -np.inf, np.nan, 1.0, top, low], R, dtype)
    b = arr([top, -top / 3, low, 3 * low, -4.0, -0.0, 0.0, np.nan, np.inf, 2.0, 1.0, 0.0, low, top], R, dtype)
    check("hypot", np.hypot(a, b), [a, b], mpmath.hypot, np.hypot, rel, absolute)
    assert float(np.hypot(arr(np.inf, R, dtype), np.nan).to_float()) == np.inf


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (3, "float32")])
def test_hypot_broadcasts_mixed_operands(R, dtype):
    rel, absolute = hypot_bound(R, dtype)
    x = rand((4, 1), R, dtype, 5)
    y = np.array([0.5, -3.0, 7.25])
    r = np.hypot(x, y)
    assert r.shape == (4, 3) and r.nterms == R
    Y = arr(np.broadcast_to(y, (4, 3)), R, dtype)
    X = ex.ExpansionArray(np.ascontiguousarray(np.broadcast_to(x.terms, (4, 3, R))))
    check("hypot", r, [X, Y], mpmath.hypot, np.hypot, rel, absolute)
    assert np.array_equal(bits(np.hypot(2.0, x)), bits(np.hypot(x, 2.0)))
    out = ex.zeros((4, 3), terms=R, dtype=dtype)
    assert np.hypot(x, y, out=out) is out and np.array_equal(bits(out), bits(r))


# ----------------------------------------------------------------------------------------------
# cbrt


def mp_cbrt(x):
    return mpmath.cbrt(x) if x >= 0 else -mpmath.cbrt(-x)


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_cbrt_within_its_bound(R, dtype):
    fmt = format_of(dtype)
    rel, absolute = cbrt_bound(R, dtype)
    x = rand(64, R, dtype, 6, -20, 20)
    check("cbrt", np.cbrt(x), [x], mp_cbrt, np.cbrt, rel, absolute)
    check("cbrt", np.cbrt(-x), [-x], mp_cbrt, np.cbrt, rel, absolute)
    edges = arr([float(np.finfo(dtype).max), -float(np.finfo(dtype).max), float(2.0 ** (fmt.emin - fmt.p + 1)),
                 float(2.0 ** (fmt.emin - 5)), 2.0, 3.0, 1.0 + 2.0 ** -20] + SPECIAL, R, dtype)
    check("cbrt", np.cbrt(edges), [edges], mp_cbrt, np.cbrt, rel, absolute)
    near = near_one(R, dtype, -1)
    check("cbrt", np.cbrt(near), [near], mp_cbrt, np.cbrt, rel, absolute)


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_cbrt_is_odd_and_exact_for_exact_cubes(R, dtype):
    x = rand(32, R, dtype, 7, -10, 10)
    assert np.array_equal(bits(np.cbrt(-x)), bits(-np.cbrt(x)))
    fmt = format_of(dtype)
    roots = [2, 3, -4, 5, 0.5, -0.125, 12345 if fmt.p > 24 else 123, 2.0 ** (fmt.emin // 3 + 2), 2.0 ** (fmt.emax // 3),
             -7.0 * 2.0 ** -30]
    cubes = arr([Fraction(c) ** 3 for c in roots], R, dtype)
    assert values(np.cbrt(cubes)) == [Fraction(c) for c in roots]


# ----------------------------------------------------------------------------------------------
# inverse hyperbolic functions


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_asinh_within_its_bound(R, dtype):
    rel, absolute = asinh_bound(R, dtype)
    fmt = format_of(dtype)
    xs = [rand(64, R, dtype, 8, -6, 6), rand(32, R, dtype, 9, -60, -10), near_one(R, dtype, -1),
          near_one(R, dtype, 1),
          arr([float(np.finfo(dtype).max), float(2.0 ** (fmt.emax // 2 + 3)), float(2.0 ** (fmt.emin - 2)),
               1.0, -1.0] + SPECIAL, R, dtype)]
    for x in xs:
        check("arcsinh", np.arcsinh(x), [x], mpmath.asinh, np.arcsinh, rel, absolute)
        check("arcsinh", np.arcsinh(-x), [-x], mpmath.asinh, np.arcsinh, rel, absolute)


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_acosh_within_its_bound_near_one_and_large(R, dtype):
    rel, absolute, near = acosh_bound(R, dtype)
    x = ex.absolute(rand(64, R, dtype, 10, 0, 8)) + 1
    xs = [x, near_one(R, dtype, 1),
          arr([1.0, 2.0, 1.5, float(np.finfo(dtype).max), float(2.0 ** (format_of(dtype).emax // 2 + 3)),
               0.5, -1.0, 1 - 2.0 ** -20] + SPECIAL, R, dtype)]
    for x in xs:
        # the relative bound plus near_one / (x - 1) below 2, per element (the relative part of check)
        v = values(x)
        for i, xi in enumerate(v):
            extra = near / (xi - 1) if isinstance(xi, Fraction) and 1 < xi < 2 else 0
            check("arccosh", np.arccosh(x[i:i + 1]), [x[i:i + 1]], mp_acosh, np.arccosh, rel + extra, absolute)


def mp_acosh(x):
    return mpmath.acosh(x) if x >= 1 else mpmath.nan


def mp_atanh(x):
    return mpmath.atanh(x) if abs(x) < 1 else mpmath.inf if x == 1 else -mpmath.inf if x == -1 else mpmath.nan


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_atanh_within_its_bound_near_zero_and_one(R, dtype):
    rel, absolute = atanh_bound(R, dtype)
    u = rand(64, R, dtype, 11, -30, 0)
    x = ex.where(abs(u) < 1, u, 0.5)
    fmt = format_of(dtype)
    edge = 1 - Fraction(1, 2 ** (fmt.p - fmt.emin - 4))  # 2|x| / (1 - |x|) would overflow
    xs = [x, near_one(R, dtype, -1), -near_one(R, dtype, -1), arr([edge, -edge, Fraction(1, 2), -0.75], R, dtype),
          arr([1.0, -1.0, 1.5, -2.0, 2.0 ** -100, float(2.0 ** (fmt.emin - 3))] + SPECIAL, R, dtype)]
    for x in xs:
        check("arctanh", np.arctanh(x), [x], mp_atanh, np.arctanh, rel, absolute)


def test_inverse_hyperbolic_aliases_empty_and_zero_d():
    x = ex.array(0.5, terms=3)
    for f in (np.asinh, np.acosh, np.atanh, np.cbrt, np.exp2):
        assert f(x).shape == () and f(ex.zeros((2, 0), terms=3)).shape == (2, 0)
    assert np.array_equal(bits(np.asinh(x)), bits(np.arcsinh(x)))
    assert str(np.arcsinh(ex.array(-0.0, terms=2)).to_float()) == "-0.0"


# ----------------------------------------------------------------------------------------------
# logaddexp, logaddexp2


def mp_logaddexp(x, y):
    return mpmath.log(mpmath.exp(x) + mpmath.exp(y))


def mp_logaddexp2(x, y):
    return mpmath.log(mpmath.power(2, x) + mpmath.power(2, y), 2)


@pytest.mark.parametrize("base2", [False, True])
@pytest.mark.parametrize("R,dtype", FORMATS)
def test_logaddexp_within_its_bound(R, dtype, base2):
    f, mpfn = (np.logaddexp2, mp_logaddexp2) if base2 else (np.logaddexp, mp_logaddexp)
    fmt = format_of(dtype)
    ln2 = mpmath.log(2)
    x = rand(48, R, dtype, 12, -3, 9)
    y = rand(48, R, dtype, 13, -3, 9)
    big = float(np.finfo(dtype).max) / 4
    a = arr([big, big, -big, 1.0, -0.6931471805599453, -1.0, 0.0, -1000.0, 3.0, np.inf, np.inf, -np.inf, np.nan,
             1.0, -np.inf, float(2.0 ** (fmt.emin - 2))], R, dtype)
    b = arr([big, -big, -big, 1.0, -0.6931471805599453, -1.0 + 2.0 ** -20, -0.0, -1000.5, 80.0, np.inf, -np.inf,
             -np.inf, 1.0, np.nan, 2.0, -float(2.0 ** (fmt.emin - 2))], R, dtype)
    for X, Y in ((x, y), (a, b), (b, a)):
        got = f(X, Y)
        gv, xv, yv = values(got), values(X), values(Y)
        bad = []
        with mpmath.workprec(PREC):
            for g, u, v in zip(gv, xv, yv):
                if not (isinstance(u, Fraction) and isinstance(v, Fraction)):
                    with np.errstate(all="ignore"):
                        s = f(np.float64(float(u)), np.float64(float(v)))
                    if not (np.isnan(s) and np.isnan(float(g)) or float(g) == s):
                        bad.append((u, v, g, s))
                    continue
                d = abs(u - v)
                e_f, e_L, absolute = logaddexp_bound(R, dtype, d, base2)
                want = mpfn(mpf(u), mpf(v))
                L = mpmath.log1p(mpmath.power(2 if base2 else mpmath.e, -mpf(d))) / (ln2 if base2 else 1)
                tol = mpf(e_f) * abs(want) + mpf(e_L) * L + mpf(absolute)
                if not isinstance(g, Fraction) or abs(mpf(g) - want) > tol:
                    bad.append((u, v, g, want))
        assert not bad, f"{f.__name__}: {len(bad)} outside the bound: {[[float(t) for t in r] for r in bad[:4]]}"


def test_logaddexp_mixed_operands_and_shapes():
    x = ex.random((3, 1), terms=3, seed=14)
    r = np.logaddexp(x, np.array([0.0, 1.0]))
    assert r.shape == (3, 2) and r.nterms == 3
    assert np.array_equal(bits(np.logaddexp(2.0, x)), bits(np.logaddexp(x, 2.0)))
    assert np.logaddexp2(ex.zeros(0, terms=2), 1.0).shape == (0,)


# ----------------------------------------------------------------------------------------------
# logical functions


def truth(v):
    return bool(v != 0) if isinstance(v, Fraction) else bool(v != 0 or math.isnan(v))


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (3, "float32")])
def test_logical_functions_are_numpys_truth_values_exactly(R, dtype):
    vals = [0.0, -0.0, 1.0, -2.5, np.nan, np.inf, -np.inf, float(np.finfo(dtype).smallest_subnormal), 1e-30]
    x = arr(np.repeat(vals, len(vals)), R, dtype)
    y = arr(np.tile(vals, len(vals)), R, dtype)
    tx = np.array([truth(v) for v in values(x)])
    ty = np.array([truth(v) for v in values(y)])
    for f in (np.logical_and, np.logical_or, np.logical_xor):
        r = f(x, y)
        assert isinstance(r, np.ndarray) and r.dtype == np.bool_
        assert np.array_equal(r, f(tx, ty))
        assert np.array_equal(f(x, np.array(vals * len(vals))), f(tx, ty))  # a float array operand
        assert np.array_equal(f(0.0, x), f(False, tx))
    r = np.logical_not(x)
    assert r.dtype == np.bool_ and np.array_equal(r, ~tx)
    out = np.zeros(x.shape, dtype=bool)
    assert np.logical_and(x, y, out=out) is out and np.array_equal(out, tx & ty)
    assert np.logical_not(ex.array(-0.0, terms=R, dtype=dtype)) is not False  # 0-d: a NumPy boolean
    assert bool(np.logical_not(ex.array(-0.0, terms=R, dtype=dtype)))
    assert np.logical_or(ex.zeros((2, 0), terms=R, dtype=dtype), 1.0).shape == (2, 0)


def test_logical_of_an_expansion_with_a_tiny_tail():
    """The truth value is the value's, exactly: a tail below the leading term's cancellation is seen."""
    x = ex.array(Fraction(1) + Fraction(1, 2**80), terms=2) - 1  # 2^-80, exact
    assert bool(np.logical_and(x, x)) and not bool(np.logical_not(x))


# ----------------------------------------------------------------------------------------------
# vector products


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (3, "float64"), (3, "float32")])
def test_vecdot_matvec_vecmat_are_the_librarys_products(R, dtype):
    a = ex.random((4, 5), terms=R, dtype=dtype, seed=15)
    b = ex.random((4, 5), terms=R, dtype=dtype, seed=16)
    v = ex.random(5, terms=R, dtype=dtype, seed=17)
    r = np.vecdot(a, b)
    assert r.shape == (4,)
    for i in range(4):
        assert np.array_equal(bits(r[i]), bits(ex.dot(a[i], b[i])))
    assert np.array_equal(bits(np.vecdot(v, v)), bits(ex.dot(v, v)))
    assert np.array_equal(bits(np.matvec(a, v)), bits(ex.matmul(a, v)))
    assert np.array_equal(bits(np.vecmat(v, a.T)), bits(ex.matmul(v, a.T)))
    # batch axes broadcast as NumPy's on float arrays
    fa64, fb64 = np.zeros((4, 5)), np.zeros((4, 5))
    for f, x1, x2, n1, n2 in [(np.vecdot, a.reshape(4, 1, 5), b.reshape(1, 4, 5), fa64.reshape(4, 1, 5),
                               fb64.reshape(1, 4, 5)),
                              (np.matvec, a.reshape(1, 4, 5), b, fa64.reshape(1, 4, 5), fb64),
                              (np.vecmat, b, a.T.reshape(1, 5, 4), fb64, fa64.T.reshape(1, 5, 4))]:
        assert f(x1, x2).shape == f(n1, n2).shape
    # within the componentwise bound of the matrix product
    p = format_of(dtype)
    bound = bounds.matmul(5, R, p).value
    fa, fb = a.to_fraction(), b.to_fraction()
    for i in range(4):
        exact = sum(fa[i][k] * fb[i][k] for k in range(5))
        mag = sum(abs(fa[i][k] * fb[i][k]) for k in range(5))
        assert abs(r[i].to_fraction() - exact) <= bound * mag
    # a NumPy float array operand, promoted exactly
    w = np.linspace(-1, 1, 5)
    assert np.array_equal(bits(np.vecdot(a, w)), bits(np.vecdot(a, ex.array(w, terms=R, dtype=dtype))))
    # empty core dimension: zeros; mismatched: NumPy's ValueError
    z = np.vecdot(ex.zeros((3, 0), terms=R, dtype=dtype), ex.zeros((3, 0), terms=R, dtype=dtype))
    assert z.shape == (3,) and values(z) == [0, 0, 0]
    with pytest.raises(ValueError):
        np.vecdot(a, v[:4])


# ----------------------------------------------------------------------------------------------
# measured accuracy


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_measured_accuracy_is_at_the_expansions_precision(R, dtype):
    """The stated bounds compose the library's proven product bound (Prop. IV.2, about 2^p times the
    measured error at R = 2), so they are loose; the measured errors on random operands stay within
    2^8 u_R (``bounds.elementary_unit``: u_R = 2^-((p-1)R), or the format's floor) of the exact result,
    plus 2^8 eta (results whose terms reach the underflow threshold): no step loses precision (a cancellation, a missing
    Newton step or a float64 intermediate would show here)."""
    tol = 2**8 * bounds.elementary_unit(R, format_of(dtype))  # u_R, or the underflow floor
    x = rand(48, R, dtype, 20, -3, 5)
    ax = abs(x)
    y = rand(48, R, dtype, 21, -3, 5)
    cases = [(np.exp2, mp_exp2, [x]), (np.cbrt, mp_cbrt, [x]), (np.arcsinh, mpmath.asinh, [x]),
             (np.arccosh, mpmath.acosh, [ax + 1]), (np.arctanh, mpmath.atanh, [ex.where(ax < 1, x, -0.75)]),
             (np.hypot, mpmath.hypot, [x, y]), (np.logaddexp, mp_logaddexp, [x, y]),
             (np.logaddexp2, mp_logaddexp2, [x, y])]
    for f, mpfn, args in cases:
        check(f.__name__, f(*args), args, mpfn, f, tol, 2**8 * format_of(dtype).eta)
