"""NumPy's array methods and functions on ExpansionArrays (issue 21): shapes, axes and broadcasting
against NumPy on float arrays, values against exact Fractions (and mpmath), NaN/Inf as NumPy, and
the issue's table of what a user tried."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import expansions as ex
from expansions import cuda
from expansions.convert import expansion_of_exact
from expansions.elementwise import power_bound

UINT = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}


def bits(x):
    return np.ascontiguousarray(x.terms).view(UINT[x.dtype])


def same(a, b):
    return a.shape == b.shape and a.nterms == b.nterms and a.dtype == b.dtype and np.array_equal(bits(a), bits(b))


def fr(x):
    q = x.to_fraction()
    return np.array(q, dtype=object) if isinstance(q, np.ndarray) else q


def floats(shape, seed):
    """Float64 values with integers, halves and ties among them (a float array and its expansion)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-6, 7, size=shape) / rng.choice([1.0, 2.0, 4.0], size=shape)
    return a, ex.array(a, terms=3)


# ----------------------------------------------------------------------------------------------
# manipulation: shapes as NumPy's, values moved exactly


def test_shapes_follow_numpy():
    a, x = floats((2, 3, 4), 1)
    cases = [
        (lambda v: v.T, None), (lambda v: v.transpose(1, 0, 2), None), (lambda v: np.transpose(v, (2, 0, 1)), None),
        (lambda v: np.swapaxes(v, 0, -1), None), (lambda v: v.swapaxes(1, 2), None),
        (lambda v: np.moveaxis(v, 0, -1), None), (lambda v: np.expand_dims(v, (0, 2)), None),
        (lambda v: np.squeeze(np.expand_dims(v, 1)), None), (lambda v: np.squeeze(v[:, :1], axis=1), None),
        (lambda v: v.ravel(), None), (lambda v: v.flatten(), None), (lambda v: np.ravel(v), None),
        (lambda v: np.broadcast_to(v[:, :1], (5, 2, 3, 4)), None), (lambda v: np.take(v, [3, 0, 0], axis=2), None),
        (lambda v: np.take(v, [5, -1]), None), (lambda v: v.take([[1, 0]], axis=0), None),
        (lambda v: np.concatenate([v, v[:1]]), None), (lambda v: np.concatenate([v, v], axis=-1), None),
        (lambda v: np.concatenate([v, v], axis=None), None), (lambda v: np.stack([v, v], axis=2), None),
        (lambda v: np.stack([v, v], axis=-1), None), (lambda v: np.reshape(v, (4, 6)), None),
        (lambda v: np.where(v > 0, v, -v), "where"), (lambda v: np.where(a[0] > 1, v, 0.5), "where"),
    ]
    for f, kind in cases:
        r, expect = f(x), f(a) if kind is None else None
        if kind == "where":
            expect = np.where(a > 0, a, -a) if r.shape == a.shape and f is cases[-2][0] else np.where(a[0] > 1, a, 0.5)
        assert r.shape == expect.shape
        assert (fr(r) == np.vectorize(Fraction, otypes=[object])(expect)).all()


def test_views_and_errors():
    a, x = floats((3, 4), 2)
    t = x.T
    assert np.shares_memory(t.terms, x.terms) and t.shape == (4, 3)
    with pytest.raises(np.exceptions.AxisError):
        np.swapaxes(x, 0, 2)
    with pytest.raises(ValueError, match="squeeze"):
        np.squeeze(x, axis=0)
    with pytest.raises(IndexError):
        np.take(x, [4], axis=1)
    with pytest.raises(ValueError):
        np.concatenate([x, x[:, :1]])
    with pytest.raises(TypeError, match="dtype"):
        np.concatenate([x, x], dtype=np.float32)
    with pytest.raises(ValueError, match="zero-dimensional"):
        np.concatenate([x[0, 0], x[0, 0]])


def test_joining_promotes_exactly():
    x2 = ex.array("0.1", terms=2)
    x8 = ex.array("0.1", terms=8)
    x32 = ex.array("0.1", terms=3, dtype="float32")
    c = np.concatenate([x2.reshape(1), x8.reshape(1), x32.reshape(1), [0.25]])
    assert c.nterms == 8 and c.dtype == np.float64
    assert list(fr(c)) == [fr(x2), fr(x8), fr(x32), Fraction(1, 4)]
    s = np.stack([x32, x32])
    assert s.dtype == np.float32 and s.nterms == 3
    w = np.where(np.array([True, False]), x8, x32)
    assert w.nterms == 8 and list(fr(w)) == [fr(x8), fr(x32)]


def test_likes():
    x = ex.array([[1, 2, 3]], terms=4, dtype="float32")
    for f, v in [(np.zeros_like, 0), (np.empty_like, 0), (np.ones_like, 1)]:
        r = f(x)
        assert (r.shape, r.nterms, r.dtype) == (x.shape, 4, np.float32) and (fr(r) == v).all()
    r = ex.full_like(x, 0.1, terms=2, dtype="float64")
    assert r.nterms == 2 and r.dtype == np.float64 and (fr(r) == Fraction(0.1)).all()
    assert np.zeros_like(x, shape=(5,)).shape == (5,)


def test_tolist_exact():
    x = ex.from_terms(np.array([[1.0, 2.0**-80], [-0.0, 0.0], [np.inf, 0.0], [np.nan, 0.0], [0.0, 0.0]]))
    lst = x.tolist()
    assert lst[0] == Fraction(1) + Fraction(1, 2**80) and type(lst[0]) is Fraction
    assert lst[1] == 0 and math.copysign(1, lst[1]) == -1 and type(lst[1]) is float
    assert lst[2] == math.inf and math.isnan(lst[3]) and lst[4] == 0 and type(lst[4]) is Fraction
    assert x[0].tolist() == lst[0]
    m = x.tolist(kind="mpf")
    with mpmath.workprec(200):
        assert m[0] == mpmath.mpf(1) + mpmath.mpf(2) ** -80
    assert ex.array([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


@pytest.mark.parametrize("R,dt,R2,dt2", [(2, "float64", 5, "float64"), (3, "float32", 3, "float64"),
                                         (6, "float64", 3, "float64"), (4, "float64", 5, "float32"),
                                         (4, "float64", 2, "float32")])
def test_astype(R, dt, R2, dt2):
    x = ex.random((40,), terms=R, dtype=dt, seed=3)
    y = x.astype(dt2, terms=R2)
    assert (y.nterms, y.dtype) == (R2, np.dtype(dt2))
    fmt = ex.formats.format_of(np.dtype(dt2))
    wider = R2 >= R and (dt2 == dt or dt2 == "float64")
    for q, t in zip(fr(x), y.terms):
        if wider:
            assert sum(Fraction(float(v)) for v in t) == q  # exact
        else:
            assert list(t) == [float(v) for v in expansion_of_exact(q, R2, fmt)]  # correctly rounded


# ----------------------------------------------------------------------------------------------
# element-wise


ADVERSARIAL = [(2.0**60, -0.5), (1.0, -(2.0**-80)), (-1.0, 2.0**-80), (0.5, 0.0), (1.5, 0.0), (2.5, 0.0),
               (-0.5, 0.0), (-2.5, 0.0), (0.5, 2.0**-70), (0.5, -(2.0**-70)), (-0.5, 2.0**-70), (2.0**53, 1.0),
               (2.0**53, -1.0), (2.0**53, 0.5), (2.0**53, -0.5), (2.0**52 + 1, 0.5), (2.0**52, 0.5),
               (2.0**52 + 1, -0.5), (-(2.0**52) - 1, 0.5), (2.0**100, 2.0**40), (2.0**100, -(2.0**-10)),
               (3.0, -(2.0**-60)), (-3.0, 2.0**-60), (0.0, 0.0), (-0.0, 0.0), (1e-300, 0.0), (-1e-300, 0.0),
               (2.0**-1074, 0.0), (7.0, 0.5), (-7.0, -0.5), (2.0**60, 0.5)]


def _half_even(q):
    return round(q)


@pytest.mark.parametrize("name,ref,np_ref", [
    ("floor", math.floor, np.floor), ("ceil", math.ceil, np.ceil), ("trunc", math.trunc, np.trunc),
    ("rint", _half_even, np.rint)])
def test_integer_parts_exact(name, ref, np_ref):
    x = ex.from_terms(np.array(ADVERSARIAL + [(7.25, 2.0**-60, -(2.0**-120))[:2]]))
    r = getattr(np, name)(x)
    assert same(r, getattr(ex, name)(x))
    for i, ((t0, t1), q, rq) in enumerate(zip(ADVERSARIAL, fr(x), fr(r))):
        assert rq == ref(q), (t0, t1)
        if rq == 0:  # the sign of a zero result: NumPy's on the leading term
            assert math.copysign(1, float(r.terms[i, 0])) == math.copysign(1, float(np_ref(np.float64(t0))))
    y = ex.random((200,), terms=4, seed=4, exponent_range=(-3, 60))
    assert all(a == ref(b) for a, b in zip(fr(getattr(np, name)(y)), fr(y)))
    z = ex.random((50,), terms=3, dtype="float32", seed=5, exponent_range=(-3, 30))
    assert all(a == ref(b) for a, b in zip(fr(getattr(np, name)(z)), fr(z)))
    s = getattr(np, name)(ex.from_terms(np.array([[np.inf, 0.0], [-np.inf, 0.0], [np.nan, 0.0]])))
    assert s.terms[0, 0] == np.inf and s.terms[1, 0] == -np.inf and np.isnan(s.terms[2, 0])


def test_integer_parts_random_formats():
    """floor/ceil/trunc/rint against Fractions on random expansions of five formats, half of the terms
    one ulp of the previous (the carries the integer part must get right)."""
    for seed in range(10):
        for R, dt in [(2, "float64"), (3, "float64"), (5, "float64"), (4, "float32"), (8, "float32")]:
            x = ex.random((300,), terms=R, dtype=dt, seed=seed, exponent_range=(-4, 70 if dt == "float64" else 40),
                          p_ulp=0.3)
            q = fr(x)
            for name, ref in [("floor", math.floor), ("ceil", math.ceil), ("trunc", math.trunc), ("rint", round)]:
                assert all(a == ref(b) for a, b in zip(fr(getattr(np, name)(x)), q)), (seed, R, dt, name)


def test_python_integer_conversions():
    x = ex.from_terms(np.array([2.0**60, -0.5]))
    assert int(x) == 2**60 - 1 and math.floor(x) == 2**60 - 1 and math.ceil(x) == 2**60
    assert round(x) == 2**60 and math.trunc(-x) == -(2**60) + 1
    assert round(ex.from_terms(np.array([2.5, 0.0]))) == 2 and round(ex.from_terms(np.array([2.5, 2.0**-60]))) == 3
    y = ex.array("0.125", terms=3)
    assert round(y, 2).to_fraction() == ex.array("0.12", terms=3).to_fraction()
    with pytest.raises(TypeError):
        int(ex.array([1, 2]))
    with pytest.raises(ValueError):
        int(ex.from_terms(np.array([np.nan, 0.0])))
    with pytest.raises(OverflowError):
        int(ex.from_terms(np.array([np.inf, 0.0])))


def test_comparison_functions_exact():
    a = ex.from_terms(np.array([[1.0, 2.0**-80], [1.0, 0.0], [np.nan, 0.0], [-0.0, 0.0], [2.0, 0.0]]))
    b = ex.from_terms(np.array([[1.0, 0.0], [1.0, 2.0**-80], [1.0, 0.0], [0.0, 0.0], [np.nan, 0.0]]))
    mx, mn = np.maximum(a, b), np.minimum(a, b)
    assert fr(mx)[0] == 1 + Fraction(1, 2**80) and fr(mx)[1] == 1 + Fraction(1, 2**80)
    assert fr(mn)[0] == 1 and fr(mn)[1] == 1
    assert np.isnan(mx.terms[2, 0]) and np.isnan(mx.terms[4, 0]) and np.isnan(mn.terms[2, 0])
    c = np.clip(ex.array([-3, 0.5, 7], terms=2), 0, ex.array(1, terms=3))
    assert c.nterms == 3 and list(fr(c)) == [0, Fraction(1, 2), 1]
    assert list(fr(np.maximum(ex.array([1, 2, 3]), 2))) == [2, 2, 3]  # broadcasting a scalar
    assert np.maximum(ex.zeros((2, 1)), ex.zeros(3)).shape == (2, 3)
    s = ex.from_terms(np.array([[1.0, -(2.0**-80)], [2.0**-80, -(2.0**-140)], [-0.0, 0.0], [0.0, 0.0],
                                [np.nan, 0.0], [-np.inf, 0.0], [1.0, np.nan]]))
    assert [float(v) for v in np.sign(s).terms[:4, 0]] == [1, 1, 0, 0] and np.isnan(np.sign(s).terms[4, 0])
    assert list(np.signbit(s)[:6]) == [False, False, True, False, False, True]
    assert list(np.isfinite(s)) == [True, True, True, True, False, False, False]
    assert list(np.isnan(s)) == [False] * 4 + [True, False, True]
    assert list(np.isinf(s)) == [False] * 5 + [True, False]
    assert np.isfinite(s[0]) is True


def test_floor_divide_and_remainder():
    a = np.arange(-20, 21, dtype=np.float64)
    x = ex.array(a, terms=3)
    for d in (2, 3, -3, 0.5, 7.0):
        assert list(fr(x // d)) == [Fraction(v) for v in a // d]
        assert list(fr(x % d)) == [Fraction(v) for v in np.remainder(a, d)]
        assert list(fr(np.fmod(x, d))) == [Fraction(v) for v in np.fmod(a, d)]
    big = ex.from_terms(np.array([2.0**60, 1.0, 0.0]))
    assert fr(big // 3) == (2**60 + 1) // 3 and fr(big % 3) == (2**60 + 1) % 3
    assert fr(big // 2) == (2**60 + 1) // 2 and fr(big % 2) == 1
    y = ex.array("1e30", terms=4) + 7
    assert fr(y // ex.array(10**15, terms=4)) == (10**30 + 7) // 10**15
    assert fr(y % 10**15) == 7


def test_integer_power_bound():
    for R, dt in [(2, "float64"), (4, "float64"), (3, "float32")]:
        x = ex.random((50,), terms=R, dtype=dt, seed=6, exponent_range=(-2, 2))
        fmt = ex.formats.format_of(np.dtype(dt))
        for n in (1, 2, 3, 5, 8, 13, -1, -3):
            r = x ** n
            b = power_bound(n, R, fmt)
            for q, rq in zip(fr(x), fr(r)):
                exact = q ** n
                assert abs(rq - exact) <= b * abs(exact), (R, dt, n)
    x = ex.array([2, -3, 0.5], terms=3)
    assert list(fr(x ** 5)) == [32, -243, Fraction(1, 32)] and list(fr(np.power(x, 2))) == [4, 9, Fraction(1, 4)]
    assert list(fr(x ** 0)) == [1, 1, 1] and fr(ex.from_terms(np.array([np.nan, 0.0])) ** 0) == 1
    with pytest.raises(TypeError, match="pow"):
        x ** 0.5
    assert same(x ** x, ex.pow(x, x)) and same(np.power(x, x), ex.pow(x, x))  # an expansion exponent: pow


# ----------------------------------------------------------------------------------------------
# reductions and orderings


def test_mean_prod_cumulative():
    a, x = floats((3, 5), 7)
    # the sums of these small dyadic values are exact, so the error is the division's: bounds.div(m=1)
    b = ex.bounds.div(3, ex.FLOAT64, m=1).value
    mean = Fraction(sum(Fraction(v) for v in a.ravel()), 15)
    assert same(np.mean(x), x.mean()) and abs(fr(np.mean(x)) - mean) <= b * abs(mean)
    m = np.mean(x, axis=0, keepdims=True)
    assert m.shape == (1, 5)
    for got, c in zip(fr(m).ravel(), a.T):
        assert abs(got - Fraction(sum(Fraction(v) for v in c), 3)) <= b * abs(Fraction(sum(Fraction(v) for v in c), 3))
    assert list(fr(np.mean(ex.array([[1, 2], [3, 6]], terms=2), axis=1))) == [Fraction(3, 2), Fraction(9, 2)]
    p = np.prod(x, axis=1)
    assert p.shape == (3,) and list(fr(p)) == [math.prod(Fraction(v) for v in r) for r in a]
    assert fr(np.prod(x)) == math.prod(Fraction(v) for v in a.ravel())
    assert np.prod(x, axis=0, keepdims=True).shape == (1, 5) and same(np.prod(x, axis=(0, 1)), np.prod(x))
    for f in (np.cumsum, np.cumprod):
        for axis in (None, 0, 1, -1):
            r, e = f(x, axis=axis), f(a, axis=axis)
            assert r.shape == e.shape and (fr(r) == np.vectorize(Fraction, otypes=[object])(e)).all()
    tenth = ex.array("0.1", terms=4)
    c = np.cumsum(np.stack([tenth] * 10))
    assert abs(fr(c)[-1] - 10 * fr(tenth)) <= 9 * ex.bounds.add_safe(4, 53).value * 10 * fr(tenth)
    assert np.isnan(float(np.mean(ex.zeros(0))))
    assert fr(np.prod(ex.zeros((0,)))) == 1


def test_extrema_exact_and_nan():
    base = [(1.0, 2.0**-80), (1.0, 2.0**-79), (1.0, -(2.0**-80)), (1.0, 2.0**-79), (1.0, -(2.0**-79))]
    x = ex.from_terms(np.array(base))
    assert np.argmax(x) == 1 and np.argmin(x) == 4 and fr(np.max(x)) == 1 + Fraction(2, 2**80)
    assert fr(x.min()) == 1 - Fraction(2, 2**80)
    y = ex.from_terms(np.array(base[:2] + [(np.nan, 0.0)] + base[2:] + [(np.nan, 0.0)]))
    assert np.argmax(y) == 2 and np.argmin(y) == 2 and np.isnan(float(np.max(y))) and np.isnan(float(np.min(y)))
    a, z = floats((4, 6), 8)
    for axis in (None, 0, 1, -1):
        for f in (np.argmax, np.argmin):
            assert np.array_equal(np.asarray(f(z, axis=axis)), f(a, axis=axis))
        for f in (np.max, np.min):
            assert (fr(f(z, axis=axis)) == np.vectorize(Fraction, otypes=[object])(f(a, axis=axis))).all()
            assert f(z, axis=axis, keepdims=True).shape == f(a, axis=axis, keepdims=True).shape
    with pytest.raises(ValueError):
        np.max(ex.zeros(0))


def test_sort_argsort_exact():
    base = [(1.0, 2.0**-80), (1.0, 2.0**-79), (1.0, -(2.0**-80)), (np.nan, 0.0), (1.0, 0.0), (-np.inf, 0.0),
            (1.0, -(2.0**-79)), (np.inf, 0.0), (-0.0, 0.0)]
    x = ex.from_terms(np.array(base))
    s = np.sort(x)
    q = fr(s)
    assert all(q[i] <= q[i + 1] for i in range(len(q) - 2)) and np.isnan(s.terms[-1, 0])
    idx = np.argsort(x)
    assert same(s, x[idx]) and sorted(idx) == list(range(len(base)))
    # equal leading terms throughout: the order is decided by the lower terms only
    rng = np.random.default_rng(9)
    t = np.stack([np.ones(300), rng.integers(-50, 50, 300) * 2.0**-70, rng.integers(-50, 50, 300) * 2.0**-130], -1)
    y = ex.from_terms(t)
    assert list(fr(np.sort(y))) == sorted(fr(y))
    a, z = floats((3, 7), 10)
    for axis in (None, 0, 1, -1):
        assert (fr(np.sort(z, axis=axis)) == np.vectorize(Fraction, otypes=[object])(np.sort(a, axis=axis))).all()
        idx = np.argsort(z, axis=axis)
        assert idx.shape == np.argsort(a, axis=axis).shape
        picked = z.ravel()[idx] if axis is None else \
            ex.from_terms(np.take_along_axis(z.terms, idx[..., None], axis % 2))
        assert (fr(picked) == np.vectorize(Fraction, otypes=[object])(np.sort(a, axis=axis))).all()
    w = z.copy()
    assert w.sort(axis=0) is None and same(w, np.sort(z, axis=0))
    r = ex.random((500,), terms=3, seed=11)
    assert list(fr(np.sort(r))) == sorted(fr(r))


# ----------------------------------------------------------------------------------------------
# out=, unsupported functions, the issue's table


def test_out_arguments():
    a, x = floats((3, 4), 12)
    o = ex.zeros(4, terms=3)
    assert np.mean(x, axis=0, out=o) is o and same(o, np.mean(x, axis=0))
    assert np.max(x, axis=0, out=o) is o and same(o, np.max(x, axis=0))
    o2 = ex.zeros((3, 4), terms=3)
    assert np.floor(x, out=o2) is o2 and same(o2, np.floor(x))
    assert np.maximum(x, 0, out=o2) is o2 and same(o2, np.maximum(x, 0))
    assert np.cumsum(x, axis=1, out=o2) is o2 and same(o2, np.cumsum(x, axis=1))
    b = np.zeros((3, 4), dtype=bool)
    assert np.isfinite(x, out=b) is b and b.all()
    with pytest.raises(ValueError, match="out has shape"):
        np.prod(x, axis=0, out=o2)


def test_unsupported_functions_say_what_to_use():
    x = ex.array([1, 2, 3], terms=2)
    with pytest.raises(TypeError, match=r"np\.spacing on expansions: .*effective_bits"):
        np.spacing(x)
    with pytest.raises(TypeError, match=r"numpy\.linalg\.eig.*expansions\.linalg has no equivalent"):
        np.linalg.eig(ex.array([[1, 0], [0, 1]]))
    with pytest.raises(TypeError, match=r"numpy\.histogram is not supported.*expansions\.\*"):
        np.histogram(x)


def test_issue_table():
    """What the issue's user tried; every entry works."""
    x = ex.array([[1.5, -2], ["0.1", 3]], terms=4)
    v = ex.array(["0.1", 2, -7], terms=4)
    assert x.T.shape == (2, 2) and fr(x.T)[0, 1] == fr(x)[1, 0]
    assert list(fr(np.linalg.solve(ex.array([[2, 0], [0, 4]], terms=4), ex.array([1, 1], terms=4)))) == \
        [Fraction(1, 2), Fraction(1, 4)]
    assert x.astype("float32", terms=6).dtype == np.float32
    assert x.tolist()[0] == [Fraction(3, 2), -2]
    assert list(fr(np.where(v > 0, v, 0))) == [fr(v)[0], 2, 0]
    assert np.concatenate([v, v]).shape == (6,) and np.stack([v, v]).shape == (2, 3)
    assert abs(fr(np.mean(v)) - (fr(v)[0] - 5) / 3) <= Fraction(1, 2**200)
    assert fr(np.prod(ex.array([2, 3, 4]))) == 24 and list(fr(np.cumsum(ex.array([1, 2, 3])))) == [1, 3, 6]
    assert fr(np.min(v)) == -7 and list(fr(np.sort(v))) == [-7, fr(v)[0], 2] and np.argmax(v) == 1
    assert list(fr(np.maximum(v, 1))) == [1, 2, 1] and list(np.isfinite(v)) == [True] * 3
    assert list(fr(v ** 2))[1:] == [4, 49]
    assert abs(fr(v ** 2)[0] - fr(v)[0] ** 2) <= power_bound(2, 4, ex.FLOAT64) * fr(v)[0] ** 2
    assert list(fr(v // 2)) == [0, 1, -4] and int(v[2]) == -7 and round(v[0]) == 0
    y8 = ex.array(["0.3"] * 3, terms=8)
    y32 = ex.array(["0.3"] * 3, terms=2, dtype="float32")
    for y, R in [(y8, 8), (y32, 4)]:  # 4 float64 terms + 2 float32 terms: float64, 4 terms
        s = v + y
        assert s.nterms == R and s.dtype == np.float64
        bound = ex.bounds.add_safe(R, 53).value
        assert all(abs(g - (a + b)) <= bound * abs(a + b) for g, a, b in zip(fr(s), fr(v), fr(y)))


# ----------------------------------------------------------------------------------------------
# the GPU: the same functions on cuda arrays give the CPU's bits


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)")
def test_cuda_matches_cpu():
    import cupy

    x = ex.random((6, 9), terms=4, seed=13, exponent_range=(-3, 60))
    g = x.to_device("cuda")
    y = ex.random((9,), terms=4, seed=14)
    gy = y.to_device("cuda")
    ops = [lambda v, w: v.T, lambda v, w: np.swapaxes(v, 0, 1), lambda v, w: np.concatenate([v, v]),
           lambda v, w: np.stack([v, v], -1), lambda v, w: np.where(v > 0, v, w), lambda v, w: np.take(v, [1, 0], 1),
           lambda v, w: np.broadcast_to(w, (2, 9)), lambda v, w: np.zeros_like(v), lambda v, w: np.ones_like(v),
           lambda v, w: np.maximum(v, w), lambda v, w: np.minimum(v, w), lambda v, w: np.clip(v, -1, 1),
           lambda v, w: np.sign(v), lambda v, w: np.floor(v), lambda v, w: np.ceil(v), lambda v, w: np.trunc(v),
           lambda v, w: np.rint(v), lambda v, w: v // 3, lambda v, w: v % 3, lambda v, w: np.fmod(v, 3),
           lambda v, w: v ** 3, lambda v, w: v ** -2, lambda v, w: np.mean(v, axis=0), lambda v, w: np.prod(v, 1),
           lambda v, w: np.cumsum(v, 1), lambda v, w: np.cumprod(v, 0), lambda v, w: np.min(v, 0),
           lambda v, w: np.max(v), lambda v, w: np.sort(v, axis=1), lambda v, w: v.astype("float64", terms=6)]
    for i, f in enumerate(ops):
        c, d = f(x, y), f(g, gy)
        assert d.device == "cuda" and same(c, d.to_device("cpu")), i
    for f in (np.argmax, np.argmin, np.argsort, np.isfinite, np.signbit):
        assert np.array_equal(np.asarray(f(x)), cupy.asnumpy(f(g)))
    assert g.tolist() == x.tolist() and int(g[0, 0]) == int(x[0, 0])
