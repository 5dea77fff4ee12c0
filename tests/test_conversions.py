"""Property tests of every conversion into and out of expansions (hypothesis).

Inputs: Python ints, floats and bools; NumPy scalars and arrays of every float dtype (float16, float32,
float64, longdouble), every integer dtype and bool; Fractions; Decimals; decimal and hexadecimal
strings; mpmath mpf values and constants; nested lists; ``full``, ``from_terms``, ``from_dlpack``; the
exact promotion of operands (``x[i] = v``, ``x + v``, comparisons); CuPy arrays (GPU only).  Both
signs, signed zeros, subnormals, values that overflow and underflow, NaN and Inf spellings, every R in
2..32 and both term dtypes.

Outputs: ``float``, ``to_float``, ``to_fraction``, ``to_mpmath``, ``to_decimal``, ``str``, ``repr`` and
``format`` of arbitrary terms (overlapping, ties, non-finite) as well as of correctly rounded ones.

The oracles are independent of the code under test: each input's exact value is computed here
(``as_integer_ratio``, ``Fraction``, the digits a string was built from), and rounded to R terms by
the exact reference :func:`expansions.reference.exact.round_to_expansion` (each term RN of what
remains, computed on rationals); decimal output is checked against the exact rational value and
against :mod:`decimal`'s own formatting of the exact value.

Rules checked (and stated in the README):

* the terms are those of the reference, bit for bit: the leading term of a zero value carries the
  input's sign (``-0.0``, ``"-0"``, a negative value that underflows), every zero term after the
  leading one is ``+0.0``; a value beyond the format's range is ``(±inf, 0, ..., 0)``; any NaN (any
  sign, payload, ``"nan"``, ``Decimal("-sNaN")``) becomes the canonical quiet NaN;
* exact inputs stay exact when R terms can hold them (every float16/float32 value in any format,
  float64 values in float64 terms, 64-bit integers in 2 float64 or 3 float32 terms);
* operands of operators are promoted exactly or rejected (ValueError); decimal strings and mpmath
  constants are rounded;
* ``str`` reads back (``expansions.array(str(x), terms=R, dtype=...)``) to exactly x's value, and to
  x's very terms when x is correctly rounded (greedy), with the fewest digits >= ``x.digits()``.
"""

from __future__ import annotations

import math
import os
import re
from decimal import Context, Decimal, Inexact
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import expansions as ex
from expansions import cuda
from expansions.formats import FLOAT32, FLOAT64
from expansions.reference.exact import fraction_from_mpf, round_to_expansion
from expansions.reference.fp import round_fraction, to_float
from expansions.testing import arbitrary_expansions as expansions_any

FMT = {"float64": FLOAT64, "float32": FLOAT32}
UINT = {"float64": np.uint64, "float32": np.uint32}
CANONICAL_NAN = {"float64": 0x7FF8000000000000, "float32": 0x7FC00000}
#: examples per test: 80 in CI; EXPANSIONS_CONVERSION_EXAMPLES=2000 for a deeper local run
SETTINGS = settings(max_examples=int(os.environ.get("EXPANSIONS_CONVERSION_EXAMPLES", examples(80))), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

Rs = st.integers(2, 32)
DTYPES = st.sampled_from(["float64", "float32"])


# ----------------------------------------------------------------------------------------------
# oracles


def expected_terms(v, R: int, dtype: str) -> np.ndarray:
    """The reference's R terms of an exact value v: a Fraction, or a float for ±0, ±inf, nan."""
    if isinstance(v, float):
        return np.array([math.nan if math.isnan(v) else v] + [0.0] * (R - 1), dtype=dtype)
    if v == 0:
        return np.zeros(R, dtype=dtype)
    return np.array([to_float(t) for t in round_to_expansion(v, R, FMT[dtype])], dtype=dtype)


def bits(a, dtype: str) -> list:
    return np.ascontiguousarray(np.asarray(a, dtype=dtype)).view(UINT[dtype]).reshape(-1).tolist()


def assert_terms(x: ex.ExpansionArray, want: np.ndarray, what=""):
    dtype = x.dtype.name
    got = bits(x.terms, dtype)
    exp = bits(want, dtype)
    assert got == exp, (f"{what}\n  got  {[float(t).hex() for t in np.asarray(x.terms).reshape(-1)]}"
                        f"\n  want {[float(t).hex() for t in want.reshape(-1)]}")


def exact_sum(terms) -> Fraction:
    return sum((Fraction(float(t)) for t in np.asarray(terms).reshape(-1)), Fraction(0))


def is_exact(v, R: int, dtype: str) -> bool:
    """Whether R terms of dtype hold the exact value v (by the reference rounding)."""
    if isinstance(v, float):
        return True
    t = expected_terms(v, R, dtype)
    return bool(np.isfinite(t).all()) and exact_sum(t) == v


def value_of_float(f):
    """The exact value of a Python or NumPy float (any width), zeros and specials as Python floats."""
    if np.isnan(f):
        return math.nan
    if np.isinf(f) or f == 0:
        return math.copysign(math.inf if np.isinf(f) else 0.0, -1.0 if np.signbit(f) else 1.0)
    return Fraction(*f.as_integer_ratio())


def check_value_round_trips(x: ex.ExpansionArray, v):
    """to_fraction / to_mpmath / to_decimal give back the exact value of x's terms (v for specials)."""
    q = x.to_fraction()
    lead = float(x.terms[..., 0])
    if not math.isfinite(lead):  # NaN, or ±inf (also for a finite value that overflows)
        assert (math.isnan(q) and math.isnan(lead)) or q == lead
        return
    assert q == exact_sum(x.terms)
    with mpmath.workprec(8):  # exact whatever mpmath's working precision
        m = x.to_mpmath()
    assert fraction_from_mpf(m) == q
    d = x.to_decimal()
    assert Fraction(d) == q and d.is_signed() == bool(np.signbit(x.terms[..., 0]))


# ----------------------------------------------------------------------------------------------
# input: every kind, against the reference rounding of its exact value

#: NaNs that are not the canonical one: negative, signaling, with a payload (bit patterns)
ODD_NANS = {16: [0xFE00, 0x7C01, 0xFD55], 32: [0xFFC00000, 0x7F800001, 0x7FC0BEEF, 0xFF800777],
            64: [0xFFF8000000000000, 0x7FF0000000000001, 0x7FF8DEAD00000000, 0xFFF0000000000BAD]}
FBITS = {16: np.uint16, 32: np.uint32, 64: np.uint64}
FTYPE = {16: np.float16, 32: np.float32, 64: np.float64}


def any_float(width: int = 64):
    """Floats of a width: hypothesis' own (signed zeros, subnormals, inf, extremes), values near the
    float32 and float64 underflow floors and overflow thresholds (where a remainder is lost or the
    value overflows), and odd NaNs."""
    near = [2.0**-149, 2.0**-126, 2.0**-1074, 2.0**-1022, 2.0**127, 2.0**1023]
    info = np.finfo(FTYPE[width])
    bands = [st.floats(a / 2**30, a * 2**30, width=width) for a in near
             if a * 2**30 <= float(info.max) and a / 2**30 >= float(info.smallest_subnormal)]
    odd = st.sampled_from(ODD_NANS[width]).map(lambda b: float(np.array(b, FBITS[width]).view(FTYPE[width])))
    signed = st.one_of(*bands).flatmap(lambda f: st.sampled_from([f, -f])) if bands else st.nothing()
    return st.one_of(st.floats(width=width), signed, odd)


def check_input(obj, v, R, dtype, exact_expected=None):
    x = ex.array(obj, terms=R, dtype=dtype)
    assert x.shape == () and x.nterms == R and x.dtype == np.dtype(dtype)
    assert_terms(x, expected_terms(v, R, dtype), f"ex.array({obj!r}, terms={R}, dtype={dtype})")
    if exact_expected:
        assert x.to_fraction() == v
    check_value_round_trips(x, v)
    return x


@SETTINGS
@given(f=any_float(), R=Rs, dtype=DTYPES)
def test_python_floats(f, R, dtype):
    v = value_of_float(f)
    check_input(f, v, R, dtype, exact_expected=dtype == "float64" and math.isfinite(f))
    if dtype == "float32" and R >= 3 and math.isfinite(f) and abs(f) <= float(np.finfo(np.float32).max) \
            and (f == 0 or abs(f) >= 2.0**-96):  # its lowest bit at or above float32's smallest subnormal
        assert ex.array(f, terms=R, dtype=dtype).to_fraction() == v  # 3 float32 terms hold a float64


@SETTINGS
@given(data=st.data(), R=Rs, dtype=DTYPES, ftype=st.sampled_from([np.float16, np.float32, np.float64]))
def test_numpy_float_scalars_and_arrays(data, R, dtype, ftype):
    width = np.dtype(ftype).itemsize * 8
    a = data.draw(hnp.arrays(ftype, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                             elements=any_float(width)))
    x = ex.array(a, terms=R, dtype=dtype)
    assert x.shape == a.shape
    for i in np.ndindex(a.shape):
        v = value_of_float(a[i])
        assert_terms(x[i], expected_terms(v, R, dtype), f"{ftype.__name__} {a[i]!r}")
        check_input(a[i], v, R, dtype)  # the NumPy scalar
        if ftype is not np.float64 and not isinstance(v, float):
            assert x[i].to_fraction() == v  # float16 and float32 values are exact in any format


@SETTINGS
@given(data=st.data(), R=Rs, dtype=DTYPES)
def test_numpy_longdouble(data, R, dtype):
    """longdouble (x87 80-bit on x86-64 Linux) is accepted: each value is its exact rational, rounded
    to R terms; values beyond float64's range overflow or underflow with their sign."""
    info = np.finfo(np.longdouble)
    m = data.draw(st.integers(-(1 << info.nmant + 1) + 1, (1 << info.nmant + 1) - 1))
    e = data.draw(st.integers(info.minexp - info.nmant - 2, info.maxexp - info.nmant - 1))
    f = np.ldexp(np.longdouble(m), e)
    v = value_of_float(f)
    check_input(f, v, R, dtype)
    x = ex.array(np.array([f, -f]), terms=R, dtype=dtype)
    assert_terms(x[0], expected_terms(v, R, dtype))
    assert_terms(x[1], expected_terms(value_of_float(-f), R, dtype))
    if isinstance(v, Fraction) and is_exact(v, R, dtype):
        y = ex.zeros((), terms=R, dtype=dtype)
        y[()] = f
        assert y.to_fraction() == v
    elif isinstance(v, Fraction):
        with pytest.raises(ValueError, match="cannot be represented exactly"):
            ex.zeros((), terms=R, dtype=dtype) + f


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]


@SETTINGS
@given(data=st.data(), R=Rs, dtype=DTYPES, itype=st.sampled_from(INT_DTYPES))
def test_numpy_integer_and_bool_scalars_and_arrays(data, R, dtype, itype):
    a = data.draw(hnp.arrays(itype, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)))
    x = ex.array(a, terms=R, dtype=dtype)
    for i in np.ndindex(a.shape):
        v = Fraction(int(a[i]))
        assert_terms(x[i], expected_terms(v, R, dtype), f"{a.dtype} {a[i]!r}")
        if dtype == "float64" or R >= 3:
            assert x[i].to_fraction() == v  # 64-bit integers fit 2 float64 or 3 float32 terms
    if a.ndim == 0:
        check_input(a[()], Fraction(int(a[()])), R, dtype)


@SETTINGS
@given(n=st.one_of(st.integers(), st.integers(-(2**1100), 2**1100), st.booleans()), R=Rs, dtype=DTYPES)
def test_python_ints_and_bools(n, R, dtype):
    """Huge integers overflow to ±inf, with their sign."""
    check_input(n, Fraction(int(n)), R, dtype)


dyadic = st.builds(lambda m, e: Fraction(m) * Fraction(2) ** e, st.integers(-(2**300), 2**300),
                   st.integers(-1500, 1200))
fractions = st.one_of(dyadic, st.fractions(), st.builds(Fraction, st.integers(), st.integers(1, 10**40)))


@SETTINGS
@given(q=fractions, R=Rs, dtype=DTYPES)
def test_fractions(q, R, dtype):
    x = check_input(q, q, R, dtype, exact_expected=is_exact(q, R, dtype))
    if q.denominator & (q.denominator - 1):  # not dyadic: never exact
        assert x.to_fraction() != q


def decimal_parts():
    """(sign, digit string, position of the point, decimal exponent): the exact value is computed here."""
    return st.tuples(st.booleans(), st.text("0123456789", min_size=1, max_size=60), st.integers(0, 60),
                     st.one_of(st.integers(-400, 400), st.integers(-30, 30), st.integers(-400000, 400000)))


def decimal_string(parts):
    neg, digits, point, exp = parts
    point = min(point, len(digits))
    body = digits[:point] + "." + digits[point:] if point < len(digits) else digits
    v = Fraction(int(digits)) * Fraction(10) ** (exp - (len(digits) - point if point < len(digits) else 0))
    if abs(exp) > 20000:
        v = None  # far beyond every format: the value is ±inf or ±0 (checked below)
    return ("-" if neg else "") + body + f"e{exp}", v, neg


@SETTINGS
@given(parts=decimal_parts(), R=Rs, dtype=DTYPES, case=st.sampled_from([str, str.upper, lambda s: "  " + s + " "]),
       plus=st.booleans())
def test_decimal_strings(parts, R, dtype, case, plus):
    s, v, neg = decimal_string(parts)
    s = case(("+" if plus and not neg else "") + s)
    if v is None:
        x = ex.array(s, terms=R, dtype=dtype)
        big = parts[3] > 0 and int(parts[1]) != 0
        want = (-math.inf if neg else math.inf) if big else (-0.0 if neg else 0.0)
        assert_terms(x, expected_terms(want, R, dtype), s)
        return
    if v == 0:
        v = -0.0 if neg else 0.0
    elif neg:
        v = -v
    check_input(s, v, R, dtype)
    # a decimal string is rounded correctly, also as an operand (not a binary number)
    y = ex.zeros((), terms=R, dtype=dtype)
    y[()] = s
    assert_terms(y, expected_terms(v, R, dtype), s)


@SETTINGS
@given(parts=decimal_parts(), R=Rs, dtype=DTYPES, special=st.sampled_from(
    [None, "NaN", "-NaN", "sNaN", "-sNaN", "Infinity", "-Infinity", "-0", "0E+7", "-0E-900"]))
def test_decimals(parts, R, dtype, special):
    if special is not None:
        d = Decimal(special)
        v = math.nan if d.is_nan() else math.copysign(math.inf if d.is_infinite() else 0.0, -1 if d.is_signed() else 1)
    else:
        s, v, neg = decimal_string(parts)
        d = Decimal(s)
        if v is None:
            v = math.copysign(math.inf if parts[3] > 0 and int(parts[1]) else 0.0, -1 if neg else 1)
        elif v == 0:
            v = -0.0 if neg else 0.0
        elif neg:
            v = -v
    x = ex.array(d, terms=R, dtype=dtype)
    assert_terms(x, expected_terms(v, R, dtype), repr(d))
    if isinstance(v, Fraction) and is_exact(v, R, dtype):
        assert (ex.zeros((), terms=R, dtype=dtype) + d).to_fraction() == v
    elif isinstance(v, Fraction) or (special is None and v == 0 and parts[3] < -20000 and int(parts[1])):
        with pytest.raises(ValueError, match="cannot be represented exactly"):
            ex.zeros((), terms=R, dtype=dtype) + d


@SETTINGS
@given(neg=st.booleans(), mant=st.integers(0, 2**200), frac=st.integers(0, 50), e=st.integers(-1300, 1200),
       R=Rs, dtype=DTYPES, upper=st.booleans())
def test_hex_strings(neg, mant, frac, e, R, dtype, upper):
    h = f"{mant:x}".rjust(frac + 1, "0")
    s = ("-" if neg else "") + "0x" + h[:len(h) - frac] + "." + h[len(h) - frac:] + f"p{e:+d}"
    s = s.upper().replace("0X", "0x") if upper else s
    v = Fraction(mant) * Fraction(2) ** (e - 4 * frac)
    v = (-0.0 if neg else 0.0) if v == 0 else (-v if neg else v)
    check_input(s, v, R, dtype)
    y = ex.zeros((), terms=R, dtype=dtype)
    if is_exact(v, R, dtype):
        y[()] = s  # a hexadecimal string is a binary number: promoted exactly
        assert_terms(y, expected_terms(v, R, dtype), s)
    else:
        with pytest.raises(ValueError, match="cannot be represented exactly"):
            y[()] = s


@pytest.mark.parametrize("s,want", [("nan", math.nan), ("-nan", math.nan), ("NaN", math.nan), ("inf", math.inf),
                                    ("+inf", math.inf), ("-inf", -math.inf), ("Infinity", math.inf),
                                    ("-INFINITY", -math.inf), (" -Inf ", -math.inf), ("-0", -0.0), ("-0.000e5", -0.0),
                                    ("0", 0.0), ("-0x0p0", -0.0), ("-0/7", -0.0), ("1e-99999999", 0.0),
                                    ("-1e-99999999", -0.0), ("-1e99999999", -math.inf), ("-0x1p-99999999", -0.0)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_string_specials(s, want, dtype):
    assert_terms(ex.array(s, terms=3, dtype=dtype), expected_terms(want, 3, dtype), s)


@SETTINGS
@given(man=st.integers(-(2**400), 2**400), exp=st.integers(-1400, 1200), R=Rs, dtype=DTYPES)
def test_mpmath_mpf(man, exp, R, dtype):
    """An mpf is a binary number, taken exactly (mpmath has no negative zero)."""
    m = mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(man, exp))  # exact (mpf((man, exp)) rounds to mp.prec)
    v = Fraction(man) * Fraction(2) ** exp
    check_input(m, v, R, dtype)
    y = ex.zeros((), terms=R, dtype=dtype)
    if is_exact(v, R, dtype):
        y[()] = m
        assert y.to_fraction() == v and (y == m)
    else:
        with pytest.raises(ValueError, match="cannot be represented exactly"):
            y[()] = m


CONSTANTS = ["pi", "e", "ln2", "ln10", "euler", "catalan", "phi", "degree", "apery"]


@SETTINGS
@given(name=st.sampled_from(CONSTANTS), R=Rs, dtype=DTYPES)
def test_mpmath_constants_are_correctly_rounded(name, R, dtype):
    """mpmath.pi etc. are correctly rounded to R terms (oracle: the constant at 4000 bits, far more than
    the 1075 bits any expansion can carry, rounded by the reference).  -mpmath.pi is an mpf evaluated
    at mpmath's working precision (53 bits by default), and is taken exactly as that mpf."""
    c = getattr(mpmath, name)
    with mpmath.workprec(4000):
        v = fraction_from_mpf(+c)
    x = ex.array(c, terms=R, dtype=dtype)
    assert_terms(x, expected_terms(v, R, dtype), name)
    y = ex.zeros((), terms=R, dtype=dtype)
    y[()] = c  # a constant operand is rounded too
    assert_terms(y, expected_terms(v, R, dtype), name)
    assert x == c
    neg = -c  # an mpf at the working precision
    assert_terms(ex.array(neg, terms=R, dtype=dtype), expected_terms(fraction_from_mpf(neg), R, dtype))
    want = exact_sum(expected_terms(fraction_from_mpf(neg), R, dtype))
    assert ex.array(neg, terms=R, dtype=dtype).to_fraction() == want
    assert (-ex.array(c, terms=R, dtype=dtype)).to_fraction() == -exact_sum(expected_terms(v, R, dtype))


def test_pi_is_correctly_rounded_for_every_R():
    with mpmath.workprec(4000):
        v = fraction_from_mpf(+mpmath.pi)
    for dtype in ("float64", "float32"):
        for R in range(2, 33):
            assert_terms(ex.array(mpmath.pi, terms=R, dtype=dtype), expected_terms(v, R, dtype), f"pi {R} {dtype}")


@pytest.mark.parametrize("value,want", [(mpmath.inf, math.inf), (-mpmath.inf, -math.inf), (mpmath.nan, math.nan),
                                        (mpmath.mpf(0), 0.0), (-mpmath.mpf(0), 0.0)])
def test_mpmath_specials(value, want):
    for dtype in ("float64", "float32"):
        assert_terms(ex.array(value, terms=4, dtype=dtype), expected_terms(want, 4, dtype), repr(value))


scalars = st.one_of(
    st.floats().map(lambda f: (f, value_of_float(f))),
    st.integers(-(2**80), 2**80).map(lambda n: (n, Fraction(n))),
    dyadic.map(lambda q: (q, q)),
    st.fractions().map(lambda q: (q, q)),
    decimal_parts().map(decimal_string).filter(lambda t: t[1] is not None).map(
        lambda t: (t[0], (-t[1] if t[2] else t[1]) if t[1] else (-0.0 if t[2] else 0.0))),
    st.floats(width=32).map(lambda f: (np.float32(f), value_of_float(np.float32(f)))),
    st.integers(-(2**63), 2**63 - 1).map(lambda n: (np.int64(n), Fraction(n))),
)


@SETTINGS
@given(items=st.lists(st.lists(scalars, min_size=3, max_size=3), min_size=1, max_size=3), R=Rs, dtype=DTYPES)
def test_nested_lists_and_full(items, R, dtype):
    objs = [[o for o, _ in row] for row in items]
    x = ex.array(objs, terms=R, dtype=dtype)
    assert x.shape == (len(items), 3)
    for i, row in enumerate(items):
        for j, (o, v) in enumerate(row):
            assert_terms(x[i, j], expected_terms(v, R, dtype), repr(o))
    o, v = items[0][0]
    f = ex.full((2, 3), o, terms=R, dtype=dtype)
    for i in np.ndindex(2, 3):
        assert_terms(f[i], expected_terms(v, R, dtype), repr(o))


@SETTINGS
@given(items=st.lists(scalars, min_size=1, max_size=6), R=Rs, dtype=DTYPES)
def test_operands_are_promoted_exactly_or_rejected(items, R, dtype):
    """x[i] = v, x + v, v + x and comparisons: exact, or ValueError; decimal strings rounded."""
    for o, v in items:
        rounds = isinstance(o, str)
        want = expected_terms(v, R, dtype)
        y = ex.zeros((), terms=R, dtype=dtype)
        if rounds or is_exact(v, R, dtype):
            y[()] = o
            assert_terms(y, want, repr(o))
            if isinstance(v, Fraction) and np.isfinite(want).all():
                assert y == o and not (y != o) and y <= o and y >= o
                assert (ex.zeros((), terms=R, dtype=dtype) + o).to_fraction() == exact_sum(want)
                assert (o + ex.zeros((), terms=R, dtype=dtype)).to_fraction() == exact_sum(want)
            elif isinstance(v, float) and math.isnan(v):
                assert not (y == o) and y != o
        else:
            with pytest.raises(ValueError, match="cannot be represented exactly"):
                y[()] = o
            with pytest.raises(ValueError, match="cannot be represented exactly"):
                y + o
            with pytest.raises(ValueError, match="cannot be represented exactly"):
                assert y < o


@SETTINGS
@given(data=st.data(), R=Rs, dtype=DTYPES, adt=st.sampled_from([np.float16, np.float32, np.float64] + INT_DTYPES))
def test_array_operands_are_promoted_exactly_or_rejected(data, R, dtype, adt):
    a = data.draw(hnp.arrays(adt, hnp.array_shapes(min_dims=1, max_dims=2, max_side=4)))
    vals = {i: (value_of_float(a[i]) if a.dtype.kind == "f" else Fraction(int(a[i]))) for i in np.ndindex(a.shape)}
    y = ex.zeros(a.shape, terms=R, dtype=dtype)
    if all(is_exact(v, R, dtype) for v in vals.values()):
        y[...] = a
        for i, v in vals.items():
            assert_terms(y[i], expected_terms(v, R, dtype), f"{a.dtype} {a[i]!r}")
        fin = np.array([not isinstance(v, float) or not math.isnan(v) for v in vals.values()]).reshape(a.shape)
        assert ((y == a) == fin).all()
    else:
        with pytest.raises(ValueError, match="cannot be represented exactly"):
            y[...] = a
        with pytest.raises(ValueError, match="cannot be represented exactly"):
            y + a


@pytest.mark.parametrize("bad", [1 + 2j, np.complex128(1), np.complex64(0), mpmath.mpc(1, 2), None, object(), b"1.5",
                                 np.array([1 + 0j]), np.array(["2000-01-01"], dtype="datetime64[D]"),
                                 [1.0, None], [1.0, 2j]])
def test_refused_inputs_raise_a_type_error_naming_the_type(bad):
    if isinstance(bad, list):
        name = "NoneType" if None in bad else "complex"
    else:
        name = str(bad.dtype) if isinstance(bad, np.ndarray) else type(bad).__name__
    for dtype in ("float64", "float32"):
        with pytest.raises(TypeError, match=re.escape(name)):
            ex.array(bad, terms=3, dtype=dtype)
        y = ex.zeros((1,) if isinstance(bad, (np.ndarray, list)) else (), terms=3, dtype=dtype)
        with pytest.raises(TypeError):
            y + bad
        with pytest.raises(TypeError):
            bad + y
        with pytest.raises(TypeError, match=re.escape(name) + "|complex"):
            y[...] = bad


@SETTINGS
@given(data=st.data(), R=Rs, dtype=DTYPES, src=DTYPES)
def test_array_of_an_expansion_array_rounds_its_exact_value(data, R, dtype, src):
    """ex.array(x, terms=R, dtype=...): x's terms (padded with +0.0) for the same dtype and R >= x.nterms,
    else x's exact value correctly rounded (signed zeros and specials kept)."""
    Rx = data.draw(Rs)
    t = data.draw(hnp.arrays(src, (3, Rx), elements=any_float(64 if src == "float64" else 32)))
    t[0] = -0.0 if data.draw(st.booleans()) else t[0]  # a negative zero
    x = ex.renormalize(ex.from_terms(t))
    y = ex.array(x, terms=R, dtype=dtype)
    if dtype == src and R >= Rx:
        assert bits(y.terms, dtype) == bits(np.concatenate([x.terms, np.zeros((3, R - Rx), dtype)], axis=1), dtype)
        assert not np.shares_memory(y.terms, x.terms)
        return
    for i in range(3):
        lead = x.terms[i, 0]
        q = x[i].to_fraction()
        v = q if isinstance(q, float) else (math.copysign(0.0, -1 if np.signbit(lead) else 1) if q == 0 else q)
        assert_terms(y[i], expected_terms(v, R, dtype), f"{x.terms[i].tolist()} -> {R} {dtype}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fewer_terms_near_ties_and_powers_of_two(dtype):
    """ex.array(x, terms=R) of expansions built on rounding boundaries (a second term of exactly half an
    ulp of the first, or a quarter below a power of two, with a third term of either sign or zero; at
    R = 2 and 3), against the exact rounding: the vectorized path certifies only what is
    certain and leaves the rest to the exact one."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(5)
    rows = []
    for _ in range(300):
        base = dt.type(rng.choice([1.0, 1.5, -1.0, 2.0 ** 20 * 1.25]) * (1 + rng.integers(0, 8) * np.finfo(dt).eps))
        ulp = np.spacing(np.abs(base))
        second = rng.choice([ulp / 2, -ulp / 2, -ulp / 4, ulp / 4, ulp / 2 * (1 - np.finfo(dt).eps)])
        third = rng.choice([0.0, 1.0, -1.0]) * np.abs(second) * np.finfo(dt).eps * rng.choice([1, 0.5, 0.25])
        fourth = rng.choice([0.0, 1.0, -1.0]) * np.abs(third) * np.finfo(dt).eps
        rows.append([base, second, third, fourth, 0.0])
    t = np.array(rows, dtype=dt)
    x = ex.from_terms(t)
    for R in (2, 3):
        y = ex.array(x, terms=R, dtype=dtype)
        for i in range(len(rows)):
            assert_terms(y[i], expected_terms(x[i].to_fraction(), R, dtype), f"{t[i].tolist()} -> {R}")


# ----------------------------------------------------------------------------------------------
# from_terms, from_dlpack: the terms as they are


@SETTINGS
@given(data=st.data(), dtype=DTYPES)
def test_from_terms_and_from_dlpack_keep_the_bits(data, dtype):
    R = data.draw(Rs)
    t = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3).map(lambda s: s + (R,)),
                             elements=any_float(64 if dtype == "float64" else 32)))
    for x in (ex.from_terms(t), ex.from_dlpack(t)):
        assert np.shares_memory(x.terms, t) and bits(x.terms, dtype) == bits(t, dtype)
    with pytest.raises(TypeError):
        ex.from_terms(np.zeros(t.shape, np.float16))
    with pytest.raises(TypeError):
        ex.from_terms(np.zeros(t.shape, np.int64))


# ----------------------------------------------------------------------------------------------
# output


def value_of(x):
    """The exact value of a scalar expansion by the rule of the README (oracle): the sum of finite
    terms; a non-finite leading term stands for itself, a non-finite lower term for NaN."""
    t = np.asarray(x.terms)
    if not np.isfinite(t).all():
        return float(t[0]) if not np.isfinite(t[0]) else math.nan
    return exact_sum(t)


@SETTINGS
@given(x=expansions_any())
def test_float_and_to_float(x):
    """float(x): the exact value correctly rounded to float64 (ties to even, overflow to ±inf), the sign
    of a zero value from the leading term."""
    v = value_of(x)
    if isinstance(v, float):
        want = v
    else:
        want = to_float(round_fraction(v, FLOAT64)) if v != 0 else \
            math.copysign(0.0, -1 if np.signbit(x.terms[0]) else 1)
    got = float(x)
    assert bits(got, "float64") == bits(math.nan if math.isnan(want) else want, "float64")
    assert bits(x.to_float(), "float64") == bits(got, "float64")
    arr = ex.from_terms(np.stack([x.terms, x.terms]))
    assert bits(arr.to_float(), "float64") == bits([got, got], "float64")


def test_float_overflow_and_ties():
    big = np.finfo(np.float64).max
    half_ulp = 2.0**970
    assert float(ex.from_terms(np.array([big, half_ulp]))) == math.inf  # a tie above the largest: to even, inf
    assert float(ex.from_terms(np.array([-big, -half_ulp]))) == -math.inf
    assert float(ex.from_terms(np.array([big, half_ulp * (1 - 2.0**-52)]))) == big
    assert float(ex.from_terms(np.array([1.0, 2.0**-53]))) == 1.0  # tie to even
    assert float(ex.from_terms(np.array([1.0 + 2.0**-52, 2.0**-53]))) == 1.0 + 2.0**-51
    assert float(ex.from_terms(np.array([1.0, 2.0**-53, 2.0**-300]))) == 1.0 + 2.0**-52
    assert math.copysign(1, float(ex.from_terms(np.array([-0.0, 0.0])))) == -1
    assert math.copysign(1, float(ex.from_terms(np.array([1.0, -1.0])))) == 1


def exact_decimal(q: Fraction) -> Decimal:
    """The exact decimal value of a dyadic rational (decimal's own division, checked exact)."""
    ctx = Context(prec=3000, traps=[Inexact])
    return ctx.divide(Decimal(q.numerator), Decimal(q.denominator))


def reads_back(s: str, q: Fraction, R: int, dtype: str) -> bool:
    """Whether the decimal string s, correctly rounded to R terms by the reference, gives the terms of
    q correctly rounded to R terms (so the value q: q is the value of its own rounding here)."""
    return bits(expected_terms(Fraction(Decimal(s)), R, dtype), dtype) == bits(expected_terms(q, R, dtype), dtype)


def significant_digits(s: str) -> int:
    return len(re.sub(r"\D", "", s.split("e")[0]).lstrip("0"))


@SETTINGS
@given(x=expansions_any())
def test_to_fraction_to_mpmath_to_decimal(x):
    v = value_of(x)
    q = x.to_fraction()
    if isinstance(v, float):
        assert (math.isnan(q) and math.isnan(v)) or q == v
        assert (mpmath.isnan(x.to_mpmath()) and math.isnan(v)) or x.to_mpmath() == v
        d = x.to_decimal()
        assert (d.is_nan() and math.isnan(v)) or float(d) == v
        return
    assert q == v
    with mpmath.workprec(4):
        assert fraction_from_mpf(x.to_mpmath()) == v
    d = x.to_decimal()
    assert d == exact_decimal(v) and d.is_signed() == (v < 0 or (v == 0 and bool(np.signbit(x.terms[0]))))


@SETTINGS
@given(x=expansions_any())
def test_str_reads_back_with_the_fewest_digits(x):
    s = str(x)
    v = value_of(x)
    R, dtype = x.nterms, x.dtype.name
    back = ex.array(s, terms=R, dtype=dtype)
    if isinstance(v, float) or v == 0:
        assert s in ("nan", "inf", "-inf", "0.0", "-0.0")
        assert_terms(back, expected_terms(v if isinstance(v, float) else
                                          math.copysign(0.0, -1 if np.signbit(x.terms[0]) else 1), R, dtype), s)
        return
    n0 = x.digits()
    exact = exact_decimal(v)
    greedy = is_exact(v, R, dtype)  # some correctly rounded R-term expansion has x's value
    if greedy:
        # the fewest digits m >= digits() whose correctly rounded (half to even) value reads back
        m = n0
        while not reads_back(str(Context(prec=m).plus(exact)), v, R, dtype):
            m += 1
        assert Decimal(s) == Context(prec=m).plus(exact), (s, m)
        assert significant_digits(s) in (m, m + 1)  # "1.0": one zero after the point when m digits end there
        assert back.to_fraction() == v, s
        if bits(x.terms, dtype) == bits(expected_terms(v, R, dtype), dtype):
            assert_terms(back, x.terms, s)  # greedy terms come back bit for bit
    else:
        assert Decimal(s) == exact  # no string reads back: the exact value is printed
    r = repr(x)
    assert r == f"expansions.array('{s}', terms={R}, dtype='{dtype}')"
    assert_terms(eval(r, {"expansions": ex}), back.terms, r)


@SETTINGS
@given(q=st.one_of(dyadic, st.fractions(), st.floats(allow_nan=False).map(value_of_float)), R=Rs, dtype=DTYPES)
def test_str_of_a_correctly_rounded_value_gives_back_its_terms(q, R, dtype):
    """ex.array(q) is q correctly rounded, and in general also its own value's correctly rounded
    terms: then str reads back bit for bit.  Not always at the underflow floor: when the remainder lost
    below the smallest subnormal decided a tie of the last term, the value's own rounding takes the
    even neighbour, and str reads back to the same value through those terms."""
    x = ex.array(q, terms=R, dtype=dtype)
    own = not np.isfinite(x.terms).all() or (x.to_fraction() == 0) or \
        bits(expected_terms(x.to_fraction(), R, dtype), dtype) == bits(x.terms, dtype)
    if not own:
        nonzero = x.terms[x.terms != 0]
        assert abs(nonzero[-1]) < np.finfo(dtype).tiny  # at the floor only: the last nonzero term is subnormal
    for s in (str(x), repr(x)):
        y = eval(s, {"expansions": ex}) if s.startswith("expansions.") else ex.array(s, terms=R, dtype=dtype)
        if own:
            assert_terms(y, x.terms, s)
        else:
            assert y.to_fraction() == x.to_fraction()
    a = ex.array([[q, -q], [q, 0]], terms=R, dtype=dtype)
    assert re.sub(r"\s+", " ", str(a)) == f"[[{x}, {ex.array(-q, terms=R, dtype=dtype)}], [{x}, 0.0]]"
    b = eval(repr(a), {"expansions": ex})  # quoted strings: the values read back
    assert b.shape == a.shape and b.dtype == a.dtype and b.nterms == R
    if own:
        assert_terms(b, a.terms, repr(a))


SPECS = [".0e", ".1e", ".16e", ".40e", "+.25E", " .3e", ".0f", ".5f", "+.30f", ",.12f", ">50.20f", "<45.7f", "^45.3f",
         "=+40.10f", "020.4f", ".3%", ".25%"]


def decimal_format(d: Decimal, spec: str) -> str:
    """decimal's format of the exact value, with the exponent padded to two digits as for floats."""
    s = format(d, spec)
    return re.sub(r"([eE][+-])(\d)$", r"\g<1>0\g<2>", s)


@SETTINGS
@given(x=expansions_any(), spec=st.sampled_from(SPECS))
def test_format_against_decimal(x, spec):
    v = value_of(x)
    if isinstance(v, float):
        assert format(x, spec) == format(v, spec)
        return
    if v == 0:  # float formatting of a zero is exact (decimal keeps a zero's exponent)
        assert format(x, spec) == format(-0.0 if np.signbit(x.terms[0]) else 0.0, spec)
        return
    assert format(x, spec) == decimal_format(exact_decimal(v), spec)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)")
@SETTINGS
@given(data=st.data(), R=Rs, dtype=DTYPES, adt=st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint64]))
def test_cupy_arrays(data, R, dtype, adt):
    """CuPy arrays convert as the same NumPy arrays do, bit for bit, and promote exactly on the GPU."""
    import cupy

    a = data.draw(hnp.arrays(adt, hnp.array_shapes(min_dims=1, max_dims=2, max_side=4)))
    x = ex.array(cupy.asarray(a), terms=R, dtype=dtype)
    assert x.device == "cpu"
    assert bits(x.terms, dtype) == bits(ex.array(a, terms=R, dtype=dtype).terms, dtype)
    g = ex.array(cupy.asarray(a), terms=R, dtype=dtype, device="cuda")
    assert g.device == "cuda" and bits(g.terms.get(), dtype) == bits(x.terms, dtype)
    y = ex.zeros(a.shape, terms=R, dtype=dtype, device="cuda")
    vals = [value_of_float(v) if a.dtype.kind == "f" else Fraction(int(v)) for v in a.reshape(-1)]
    if all(is_exact(v, R, dtype) for v in vals):
        y[...] = cupy.asarray(a)
        assert bits(y.terms.get(), dtype) == bits(x.terms, dtype)
    else:
        with pytest.raises(ValueError, match="cannot be represented exactly"):
            y[...] = cupy.asarray(a)
