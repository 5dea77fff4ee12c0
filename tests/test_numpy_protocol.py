"""The NumPy array protocol of ExpansionArray: ufuncs, array functions, exact promotion of mixed
operands, DLPack and the CUDA array interface, and the refusal of implicit float conversion."""

from __future__ import annotations

import types
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import expansions as ex
from expansions import cuda, numpy_protocol

UINT = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}


def bits(x):
    t = x.terms if isinstance(x, ex.ExpansionArray) else x
    return np.ascontiguousarray(t).view(UINT[np.dtype(t.dtype)])


def same(a, b):
    """Bit-identical ExpansionArrays (shape, R, dtype, every term)."""
    return a.shape == b.shape and a.nterms == b.nterms and a.dtype == b.dtype and np.array_equal(bits(a), bits(b))


def outcome(f):
    """The result of f(), or the type of the exception it raises (for 'same as calling directly')."""
    try:
        return f()
    except Exception as exc:  # noqa: BLE001 - compared by type
        return type(exc)


def exact(v):
    return Fraction(*v.as_integer_ratio()) if hasattr(v, "as_integer_ratio") else Fraction(v)


def hex_value(s):
    """The exact value of a hexadecimal float string (independent of the library's parser)."""
    s = s.lower()
    sign = -1 if s.startswith("-") else 1
    mant, _, e = s.lstrip("+-")[2:].partition("p")
    ip, _, fp = mant.partition(".")
    return sign * Fraction(int(ip + fp or "0", 16), 16 ** len(fp)) * Fraction(2) ** int(e or 0)


def fr(x):
    q = x.to_fraction()
    return list(q.reshape(-1)) if isinstance(q, np.ndarray) else [q]


# ----------------------------------------------------------------------------------------------
# ufuncs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("R", [2, 3, 5])
def test_ufuncs_are_bit_identical_to_the_operators(R, dtype):
    x = ex.random((4, 7), terms=R, dtype=dtype, seed=1)
    y = ex.random((7,), terms=R, dtype=dtype, seed=2)
    assert same(np.add(x, y), x + y)
    assert same(np.subtract(x, y), x - y)
    assert same(np.multiply(x, y), x * y)
    assert same(np.subtract(y, x), y - x)
    assert same(np.negative(x), -x)
    assert same(np.absolute(x), abs(x)) and same(np.abs(x), abs(x))
    assert same(np.positive(x), x) and np.positive(x).terms is not x.terms
    for uf, op in ((np.equal, "__eq__"), (np.not_equal, "__ne__"), (np.less, "__lt__"),
                   (np.less_equal, "__le__"), (np.greater, "__gt__"), (np.greater_equal, "__ge__")):
        assert np.array_equal(uf(x, y), getattr(x, op)(y))
    # division and square root are expansions.div and expansions.sqrt, whatever R they support
    q = outcome(lambda: np.true_divide(x, y))
    want = outcome(lambda: ex.div(x, y))
    assert q == want if isinstance(want, type) else same(q, want)
    assert same(x / y, want) if not isinstance(want, type) else outcome(lambda: x / y) == want
    s = outcome(lambda: np.sqrt(abs(x)))
    want = outcome(lambda: ex.sqrt(abs(x)))
    assert s == want if isinstance(want, type) else same(s, want)


def test_r2_division_and_sqrt_through_ufuncs():
    x = ex.random((50,), terms=2, seed=3)
    y = ex.random((50,), terms=2, seed=4)
    assert same(np.true_divide(x, y), ex.div(x, y)) and same(np.divide(x, y), ex.div(x, y))
    assert same(x / y, ex.div(x, y)) and same(2 / y, ex.div(ex.array(2, terms=2), y))
    assert same(np.sqrt(abs(x)), ex.sqrt(abs(x)))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_mixed_operands_reach_the_expansion_in_both_orders(dtype):
    R = 3
    x = ex.random((5,), terms=R, dtype=dtype, seed=5)
    a = np.array([1.5, -2.0, 0.25, 3.0, 1e-3]).astype(dtype)
    A = ex.array(a, terms=R, dtype=dtype)  # exact
    for got, want in (
        (a + x, A + x), (x + a, x + A), (np.add(a, x), A + x), (np.add(x, a), x + A),
        (a - x, A - x), (np.subtract(a, x), A - x), (a * x, A * x), (np.multiply(a, x), A * x),
        (np.float64(0.5) + x, ex.array(0.5, terms=R, dtype=dtype) + x),
        (np.array(0.5) * x, ex.array(0.5, terms=R, dtype=dtype) * x),
        (7 + x, ex.array(7, terms=R, dtype=dtype) + x),
        (x - 0.25, x - ex.array(0.25, terms=R, dtype=dtype)),
    ):
        assert isinstance(got, ex.ExpansionArray) and same(got, want)
    # comparisons with the NumPy array first land in __array_ufunc__ as well, and are exact
    fx, fa = fr(x), [Fraction(float(v)) for v in a]
    for got, want in ((a < x, [p < q for p, q in zip(fa, fx)]), (a >= x, [p >= q for p, q in zip(fa, fx)]),
                      (a == x, [p == q for p, q in zip(fa, fx)]), (np.less(a, x), [p < q for p, q in zip(fa, fx)]),
                      (x > a, [q > p for p, q in zip(fa, fx)])):
        assert isinstance(got, np.ndarray) and got.dtype == np.bool_ and list(got) == want


def test_comparisons_are_exact():
    one = ex.array(1, terms=3)
    x = ex.from_terms(np.array([1.0, 2.0**-100, 0.0]))
    assert x > one and x > 1 and x != 1 and not (x == 1) and 1 < x and np.greater(x, 1)
    assert x > np.float64(1) and np.less(np.float64(1), x) and (np.array([1.0]) < x).all()
    assert x < 1 + 2.0**-52 and (x - 1).to_fraction() == Fraction(1, 2**100)
    assert ex.from_terms(np.array([1.0, -(2.0**-100), 0.0])) < 1
    a = ex.random((300,), terms=4, seed=6)
    b = ex.random((300,), terms=4, seed=7)
    fa, fb = a.to_fraction(), b.to_fraction()
    assert (np.less_equal(a, b) == (fa <= fb)).all() and (np.not_equal(a, a.copy()) == False).all()  # noqa: E712


def test_other_ufuncs_and_methods_are_not_implemented():
    x = ex.random((3,), terms=2, seed=8)
    for f in (np.spacing, np.bitwise_not, np.isnat):
        with pytest.raises(TypeError):
            f(x)
    for f in (lambda: np.gcd(x, x), lambda: np.left_shift(x, 2), lambda: np.add.accumulate(x),
              lambda: np.multiply.reduce(x), lambda: np.add.outer(x, x), lambda: np.nextafter(x, 1)):
        with pytest.raises(TypeError):
            f()
    with pytest.raises(TypeError, match="unsupported operand"):
        x + object()
    with pytest.raises(TypeError):
        x * 1j
    assert (x == object()) is False and (x != object()) is True


def test_ufunc_keywords_and_out():
    x = ex.random((4,), terms=3, seed=9)
    y = ex.random((4,), terms=3, seed=10)
    z = ex.zeros(4, terms=3)
    r = np.add(x, y, out=z)
    assert r is z and same(z, x + y)
    r = np.multiply(x, 2.0, out=(z,))
    assert r is z and same(z, x * 2)
    r = np.negative(x, out=z)
    assert r is z and same(z, -x)
    r = np.add(np.array([1.0, 2.0, 3.0, 4.0]), 0.5, out=z)  # only out is an expansion
    assert r is z and fr(z) == [Fraction(3, 2), Fraction(5, 2), Fraction(7, 2), Fraction(9, 2)]
    b = np.zeros(4, dtype=bool)
    assert np.less(x, y, out=b) is b and list(b) == list(x < y)
    assert same(np.add(x, y, where=True), x + y)  # the default value changes nothing
    with pytest.raises(ValueError, match="out has shape"):
        np.add(x, y, out=ex.zeros(3, terms=3))
    with pytest.raises(ValueError, match="out has shape"):
        np.add(x, y, out=ex.zeros(4, terms=2))
    with pytest.raises(TypeError, match="out must be an ExpansionArray"):
        np.add(x, y, out=np.zeros(4))
    with pytest.raises(TypeError, match="boolean array"):
        np.less(x, y, out=np.zeros(4))
    with pytest.raises(TypeError, match="where"):
        np.add(x, y, where=np.array([True, False, True, True]))
    with pytest.raises(TypeError, match="dtype"):
        np.add(x, y, dtype=np.float64)
    with pytest.raises(TypeError, match="casting"):
        np.add(x, y, casting="unsafe")


def test_no_implicit_conversion_to_floats():
    x = ex.random((3,), terms=2, seed=11)
    for f in (np.asarray, np.array, lambda v: np.asarray(v, dtype=np.float64)):
        with pytest.raises(TypeError, match=r"\.terms.*to_float"):
            f(x)
    assert np.shape(x) == (3,) and np.ndim(x) == 1 and np.size(x) == 3
    with pytest.raises(TypeError, match=r"numpy\.gradient is not supported.*x\.to_float\(\)"):
        np.gradient(x)


# ----------------------------------------------------------------------------------------------
# exact promotion


@pytest.mark.parametrize("value,R,dtype,ok", [
    (0.1, 2, "float64", True),
    (0.1, 2, "float32", False),  # 53 bits do not fit 2 x 24
    (0.1, 3, "float32", True),
    (np.float32(0.1), 2, "float32", True),
    (2**80 + 1, 2, "float64", True),
    (2**200 + 2**100 + 1, 2, "float64", False),  # three bits too far apart for two terms
    (2**200 + 2**100 + 1, 3, "float64", True),
    (2**200 + 1, 2, "float64", True),  # gaps are fine
    (-(2**1100), 8, "float64", False),  # beyond the format's range
    (Fraction(1, 3), 8, "float64", False),
    (Fraction(3, 8), 2, "float32", True),
    (Fraction(2**70 + 1, 2**100), 2, "float64", True),
    (Decimal("0.1"), 32, "float64", False),  # a Decimal is an exact decimal number, not a string
    (Decimal("-0.375"), 2, "float64", True),
    (True, 2, "float32", True),
    (np.int64(2**62 + 1), 2, "float64", True),
    (np.uint64(2**64 - 1), 2, "float32", True),  # 2**64 - 1
    (np.uint64(2**63 + 2**32 + 1), 2, "float32", False),
    (np.uint64(2**63 + 2**32 + 1), 3, "float32", True),
    (np.longdouble(1) + np.longdouble(2.0) ** -60, 2, "float64", True),
    ("0x1.8p-3", 2, "float32", True),
    ("0x1." + "0" * 14 + "1" + "0" * 14 + "1p0", 2, "float64", False),  # hex strings: exact or nothing
    ("0x1." + "0" * 14 + "1" + "0" * 14 + "1p0", 3, "float64", True),
    ("-0x1.000000000000000000001P+3", 2, "float64", True),
    (1e-300, 3, "float32", False),  # below the float32 subnormal floor
])
def test_scalar_promotion_is_exact_or_an_error(value, R, dtype, ok):
    x = ex.zeros((), terms=R, dtype=dtype)
    q = Fraction(value) if not isinstance(value, (str, np.generic)) else None
    if isinstance(value, str):
        q = hex_value(value)
    elif isinstance(value, np.generic):
        q = Fraction(*value.as_integer_ratio()) if isinstance(value, np.floating) else Fraction(int(value))
    if ok:
        assert (x + value).to_fraction() == q
        assert (value - x).to_fraction() == q
        assert (x + value) == value and np.equal(value, x + value) and not (x + value) < value
    else:
        for f in (lambda: x + value, lambda: value * x, lambda: x < value, lambda: np.add(x, value)):
            with pytest.raises(ValueError, match=rf"cannot be represented exactly by {R} {dtype} terms.*"
                                                 rf"expansions\.array\(value, terms={R}, dtype='{dtype}'\)"):
                f()


def test_rounded_promotions_are_the_documented_ones():
    """Decimal strings and mpmath constants are not binary numbers: rounded correctly to R terms,
    as expansions.array does."""
    for R, dtype in ((2, "float64"), (3, "float32"), (5, "float64")):
        z = ex.zeros((), terms=R, dtype=dtype)
        assert same(z + "0.1", ex.array("0.1", terms=R, dtype=dtype))
        assert same(z + mpmath.pi, ex.array(mpmath.pi, terms=R, dtype=dtype))
        assert same(z + "-1.5e-20", ex.array("-1.5e-20", terms=R, dtype=dtype))
    with pytest.raises(ValueError, match="cannot parse"):
        ex.zeros(2) + "pi"


def test_mpf_is_exact():
    with mpmath.workprec(53):
        third53 = mpmath.mpf(1) / 3  # a double: exact in any format with enough terms
    assert (ex.zeros((), terms=2) + third53).to_fraction() == Fraction(1.0 / 3)
    with mpmath.workprec(300):
        third300 = mpmath.mpf(1) / 3
    with pytest.raises(ValueError, match="represented exactly"):
        ex.zeros((), terms=2) + third300
    assert (ex.zeros((), terms=6) + third300).to_fraction() == ex.array(third300, terms=6).to_fraction()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_array_promotion_is_exact_and_vectorized(dtype):
    rng = np.random.default_rng(12)
    R = 3
    z = ex.zeros((), terms=R, dtype=dtype)
    f64 = rng.standard_normal(200) * 2.0 ** rng.integers(-60, 60, 200)
    ints = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 100, dtype=np.int64),
                           np.array([2**63 - 1, -(2**63), 0, 1, -1, 2**53 + 1], dtype=np.int64)])
    cases = [f64, f64.astype(np.float32), rng.standard_normal(50).astype(np.float16), ints, ints.astype(np.int32),
             ints.view(np.uint64), ints.astype(np.int8), rng.integers(0, 2, 20).astype(bool),
             np.array([Fraction(3, 4), Fraction(-5, 8), 2**70], dtype=object), [[0.5, 2], [3, -0.25]]]
    for a in cases:
        want = np.asarray(a, dtype=object) if isinstance(a, list) else a.astype(object)
        if isinstance(a, np.ndarray) and a.dtype.kind in "iub":
            want = np.array([Fraction(int(v)) for v in want.reshape(-1)], dtype=object).reshape(want.shape)
        else:
            want = np.array([exact(v) for v in want.reshape(-1)], dtype=object).reshape(want.shape)
        if dtype == "float32" and isinstance(a, np.ndarray) and a.dtype.itemsize == 8 and a.dtype.kind in "iuf":
            # 64-bit values need up to 3 float32 terms: exact here (R = 3), except the few that need more
            ok = [ex.array(v, terms=R + 3, dtype=dtype).to_fraction() == ex.array(v, terms=R, dtype=dtype)
                  .to_fraction() for v in a.astype(object)]
            a, want = a[np.array(ok)], want[np.array(ok)]
        got = z + a
        assert got.shape == np.shape(a)
        assert list(np.asarray(got.to_fraction()).reshape(-1)) == list(want.reshape(-1)), a
        # and the terms are those expansions.array gives (greedy, correctly rounded)
        assert np.array_equal(bits(got), bits(ex.array(a, terms=R, dtype=dtype)))


def test_array_promotion_errors_name_the_element():
    z = ex.zeros((), terms=2, dtype="float32")
    with pytest.raises(ValueError, match=r"0\.1 .*and 1 more element"):
        z + np.array([0.5, 0.1, 0.2])
    with pytest.raises(ValueError, match="represented exactly by 2 float32"):
        z + np.array([2**60 + 2**30 + 1], dtype=np.int64)
    assert (ex.zeros((), terms=3, dtype="float32") + np.array([2**60 + 2**30 + 1])).to_fraction()[0] == \
        2**60 + 2**30 + 1
    with pytest.raises(ValueError, match="float64"):
        ex.zeros((), terms=2) + np.array([2**200 + 2**100 + 1], dtype=object)
    with pytest.raises(TypeError):
        z + np.array([1 + 2j])
    with pytest.raises(TypeError):
        z + np.array(["2020-01-01"], dtype="datetime64[D]")
    x = ex.ones(3, terms=2)
    x[1] = 2**60 + 1  # setitem promotes exactly too
    assert x[1].to_fraction() == 2**60 + 1
    with pytest.raises(ValueError, match="represented exactly"):
        x[0] = Fraction(1, 3)


def test_nonfinite_operands():
    x = ex.ones(3, terms=3, dtype="float32")
    r = x + np.array([np.inf, -np.inf, np.nan])
    assert r.terms[0, 0] == np.inf and r.terms[1, 0] == -np.inf and np.isnan(r.terms[2, 0])
    assert (r.terms[:, 1:] == 0).all()
    assert np.isnan((x + float("nan")).terms[:, 0]).all() and ((x + "inf").terms[:, 0] == np.inf).all()


# ----------------------------------------------------------------------------------------------
# DLPack and the CUDA array interface


def test_dlpack_round_trip_shares_memory():
    x = ex.random((3, 4), terms=5, seed=13)
    t = np.from_dlpack(x)
    assert t.shape == (3, 4, 5) and t.dtype == np.float64
    assert np.shares_memory(t, x.terms) and np.array_equal(t, x.terms)
    assert x.__dlpack_device__() == x.terms.__dlpack_device__()
    y = ex.from_dlpack(x.terms)
    assert isinstance(y, ex.ExpansionArray) and np.shares_memory(y.terms, x.terms) and same(y, x)
    w = ex.from_dlpack(x)
    assert np.shares_memory(w.terms, x.terms)
    w.terms[0, 0, 0] = 42.0
    assert x.terms[0, 0, 0] == 42.0
    assert not hasattr(x, "__cuda_array_interface__")
    f32 = ex.from_dlpack(np.zeros((2, 3), dtype=np.float32))
    assert f32.nterms == 3 and f32.dtype == np.float32 and f32.shape == (2,)
    with pytest.raises(ValueError):
        ex.from_dlpack(np.zeros((2, 1)))
    with pytest.raises(TypeError):
        ex.from_dlpack(np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(TypeError, match="DLPack"):
        ex.from_dlpack([[1.0, 0.0]])


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)")
def test_cuda_dlpack_interface_and_devices():
    import cupy

    x = ex.random((100,), terms=4, seed=14, device="cuda")
    t = cupy.from_dlpack(x)
    assert t.shape == (100, 4) and t.data.ptr == x.terms.data.ptr
    cai = x.__cuda_array_interface__
    assert cai["data"][0] == x.terms.data.ptr and tuple(cai["shape"]) == (100, 4)
    y = ex.from_dlpack(x.terms)
    assert y.device == "cuda" and y.terms.data.ptr == x.terms.data.ptr
    # a CuPy operand joins a cuda expansion exactly; host arrays and cross-device operands do not
    c = cupy.asarray(np.linspace(-3, 3, 100))
    assert (x + c).to_fraction().tolist() == (x.to_device("cpu") + c.get()).to_fraction().tolist()
    assert same((c + x).to_device("cpu"), (c.get() + x.to_device("cpu")))
    assert ((c < x).get() == (c.get() < x.to_device("cpu"))).all()
    with pytest.raises(ValueError, match="no silent device transfers"):
        x + np.ones(100)
    with pytest.raises(ValueError, match="no silent device transfers"):
        x.to_device("cpu") + c
    assert same((x + 1.5).to_device("cpu"), x.to_device("cpu") + 1.5)
    x32 = ex.ones(3, terms=2, dtype="float32", device="cuda")
    with pytest.raises(ValueError, match="represented exactly"):
        x32 + cupy.asarray([0.5, 0.1, 0.25])
    big = cupy.asarray([2**62 + 1, -(2**63)], dtype=cupy.int64)
    assert (ex.zeros((), terms=2, device="cuda") + big).to_fraction().tolist() == [2**62 + 1, -(2**63)]


# ----------------------------------------------------------------------------------------------
# sum, dot and matmul: wiring to expansions.reduce (a recording stand-in here), then the real module


@pytest.fixture
def stub_reduce(monkeypatch):
    calls = []
    mod = types.ModuleType("expansions.reduce")

    def _sum(x, axis=None, keepdims=False):
        calls.append(("sum", x, axis, keepdims))
        return ex.zeros((), terms=x.nterms, dtype=x.dtype) if axis is None and not keepdims else x

    mod.sum = _sum
    mod.dot = lambda x, y: calls.append(("dot", x, y)) or x
    mod.matmul = lambda x, y: calls.append(("matmul", x, y)) or y
    monkeypatch.setattr(numpy_protocol, "reduce", mod)  # what the protocol's entries call
    return calls


def test_reductions_are_wired_to_expansions_reduce(stub_reduce):
    calls = stub_reduce
    x = ex.random((3, 4), terms=3, seed=15)
    for f, want in ((lambda: np.sum(x), ("sum", None, False)), (lambda: x.sum(), ("sum", None, False)),
                    (lambda: np.add.reduce(x), ("sum", 0, False)),
                    (lambda: np.sum(x, axis=1, keepdims=True), ("sum", 1, True)),
                    (lambda: np.add.reduce(x, axis=None), ("sum", None, False)),
                    (lambda: x.sum(axis=(0, 1)), ("sum", (0, 1), False))):
        calls.clear()
        f()
        assert len(calls) == 1 and calls[0][0] == want[0] and calls[0][1] is x and calls[0][2:] == want[1:]
    a = np.arange(12.0).reshape(4, 3)
    for f, kind in ((lambda: np.dot(x, a), "dot"), (lambda: x.dot(a), "dot"),
                    (lambda: x @ a, "matmul"), (lambda: np.matmul(x, a), "matmul"), (lambda: a @ x, "matmul"),
                    (lambda: np.matmul(a, x), "matmul")):
        calls.clear()
        f()
        (k, p, q), = calls
        assert k == kind and all(isinstance(v, ex.ExpansionArray) and v.nterms == 3 for v in (p, q))
        other = q if p is x else p
        assert list(np.asarray(other.to_fraction()).reshape(-1)) == [Fraction(v) for v in a.reshape(-1)]
    z = ex.zeros((), terms=3)
    assert np.sum(x, out=z) is z
    with pytest.raises(ValueError, match="out has shape"):
        np.sum(x, out=ex.zeros(2, terms=3))
    for f in (lambda: np.sum(x, initial=1), lambda: np.sum(x, where=np.ones((3, 4), bool)),
              lambda: np.sum(x, dtype=np.float32), lambda: np.add.reduce(x, initial=0)):
        with pytest.raises(TypeError):
            f()
    with pytest.raises(ValueError, match="represented exactly"):
        ex.zeros((2,), terms=2, dtype="float32") @ np.array([0.1, 0.2])


def _real_reduce():
    from expansions import reduce as R

    assert (ex.sum, ex.dot, ex.matmul) == (R.sum, R.dot, R.matmul)  # the public names are the module's
    return R


@pytest.mark.parametrize("R", [2, 4])
def test_reductions_with_the_real_module(R):
    red = _real_reduce()
    x = ex.random((5, 6), terms=R, seed=16)
    y = ex.random((6, 3), terms=R, seed=17)
    v = ex.random((6,), terms=R, seed=18)
    assert same(np.sum(x), red.sum(x)) and same(x.sum(axis=1), red.sum(x, axis=1))
    assert same(np.add.reduce(x), red.sum(x, axis=0)) and same(ex.sum(x, axis=0, keepdims=True),
                                                               red.sum(x, axis=0, keepdims=True))
    assert same(np.dot(x, v), red.dot(x, v)) and same(x.dot(v), red.dot(x, v))
    assert same(x @ y, red.matmul(x, y)) and same(np.matmul(x, y), red.matmul(x, y))
    # exact cases: small integers sum and multiply without rounding
    a = np.arange(-12, 12, dtype=np.float64).reshape(4, 6)
    X = ex.array(a, terms=R)
    assert X.sum().to_fraction() == int(a.sum())
    assert list(np.asarray(X.sum(axis=0).to_fraction())) == [int(s) for s in a.sum(axis=0)]
    b = np.arange(18, dtype=np.float64).reshape(6, 3) - 9
    assert np.asarray((X @ b).to_fraction()).tolist() == (a @ b).astype(int).tolist()
    assert np.asarray((a @ ex.array(b, terms=R)).to_fraction()).tolist() == (a @ b).astype(int).tolist()
