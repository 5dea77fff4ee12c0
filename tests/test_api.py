"""The ExpansionArray API: construction (exact), conversions, operators, shapes, errors, specials."""

import math
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import expansions as ex
from expansions import bounds
from expansions.reference.exact import exact_rows

PI50 = "3.14159265358979323846264338327950288419716939937510"


def test_decimal_string_is_correctly_rounded_to_R_terms():
    q = Fraction(PI50)
    for R in (2, 4, 8):
        x = ex.array(PI50, terms=R)
        assert x.shape == () and x.nterms == R and x.dtype == np.float64
        t = x.terms
        assert float(t[0]) == float(q)  # leading term correctly rounded
        rest = q
        for k in range(R):  # each term is the nearest float to what remains
            assert float(t[k]) == float(rest)
            rest -= Fraction(float(t[k]))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_constructors_agree_and_round_trip(dtype):
    R = 5
    with mpmath.workprec(400):
        ref = mpmath.mpf(1) / 3
        a = ex.array(ref, terms=R, dtype=dtype)
    b = ex.array(Fraction(1, 3), terms=R, dtype=dtype)
    c = ex.array("0." + "3" * 120, terms=R, dtype=dtype)
    assert np.array_equal(a.terms, b.terms)
    assert np.array_equal(b.terms, c.terms)
    assert ex.array(b.to_fraction(), terms=R, dtype=dtype) == b
    assert float(b) == 1 / 3
    assert abs(b.to_fraction() - Fraction(1, 3)) < Fraction(1, 3) * Fraction(2) ** -(R * 20)


def test_float_arrays_are_exact_and_float32_splits():
    a = np.array([0.1, -2.5, 1e-300, -0.0, 3.0e38])
    x = ex.array(a, terms=2)
    assert np.array_equal(x.terms[:, 0], a) and (x.terms[:, 1] == 0).all()
    y = ex.array(np.array([0.1, -2.5, 1.0 / 3]), terms=3, dtype="float32")
    assert [Fraction(q) for q in y.to_fraction()] == [Fraction(0.1), Fraction(-2.5), Fraction(1.0 / 3)]
    z = ex.array(np.array([1e300]), terms=3, dtype="float32")
    assert z.terms[0, 0] == np.inf and (z.terms[0, 1:] == 0).all()


def test_from_terms_wraps_without_copy_and_checks():
    t = np.zeros((4, 3))
    x = ex.from_terms(t)
    assert x.terms is t and x.shape == (4,) and x.nterms == 3
    with pytest.raises(ValueError):
        ex.from_terms(np.zeros((4, 1)))
    with pytest.raises(ValueError):
        ex.from_terms(np.zeros((4, 33)))
    with pytest.raises(TypeError):
        ex.from_terms(np.zeros((4, 3), dtype=np.int64))
    with pytest.raises(ValueError):
        ex.from_terms(np.float64(1.0))


def test_bad_input_errors():
    with pytest.raises(ValueError):
        ex.array(1, terms=1)
    with pytest.raises(ValueError):
        ex.zeros(3, terms=33)
    with pytest.raises(TypeError):
        ex.array(1, terms=2.5)
    with pytest.raises(TypeError):
        ex.array(1, dtype="float16")
    with pytest.raises(ValueError):
        ex.array("pi", terms=2)
    with pytest.raises(TypeError):
        ex.array(object(), terms=2)
    with pytest.raises(ValueError, match="broadcast"):
        ex.zeros(2) + ex.zeros(3)
    with pytest.raises(ValueError, match="unknown addition method"):
        ex.add(ex.zeros(2), ex.zeros(2), method="exact")
    with pytest.raises(ValueError, match="unknown multiplication method"):
        ex.mul(ex.zeros(2), ex.zeros(2), method="fast")
    with pytest.raises(ValueError, match="unknown device"):
        ex.zeros(2, device="tpu")


def test_mixed_formats_promote_exactly_to_the_wider_one():
    """R and S terms give max(R, S) terms; float32 and float64 terms give float64 terms; the narrower
    operand is converted exactly, so the result is the wider format's operation on the same values."""
    x = ex.random((40,), terms=2, seed=3)
    y = ex.random((40,), terms=5, seed=4)
    x5 = ex.array(x, terms=5)
    assert x5.to_fraction().tolist() == x.to_fraction().tolist()
    for op in (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a < b):
        got, want = op(x, y), op(x5, y)
        if isinstance(got, ex.ExpansionArray):
            assert (got.nterms, got.dtype) == (5, np.float64)
            assert np.array_equal(got.terms.view(np.uint64), want.terms.view(np.uint64))
        else:
            assert np.array_equal(got, want)
    f = ex.random((40,), terms=3, dtype="float32", seed=5)
    d = ex.random((40,), terms=2, seed=6)
    s = f + d
    assert (s.nterms, s.dtype) == (3, np.float64)
    exact = [a + b for a, b in zip(f.to_fraction(), d.to_fraction())]
    bound = ex.bounds.add_safe(3, 53).value
    assert all(abs(g - e) <= bound * abs(e) for g, e in zip(s.to_fraction(), exact))
    # the float32 operand's value is kept exactly, its terms renormalized in float64
    f64 = ex.add(f, 0.0, dtype="float64")
    assert f64.dtype == np.float64 and f64.to_fraction().tolist() == f.to_fraction().tolist()
    # an explicit format overrides the promotion
    assert ex.mul(x, y, terms=8).nterms == 8


def test_arithmetic_matches_mpmath_within_bounds():
    R = 4
    x = ex.random((50,), terms=R, seed=1)
    y = ex.random((50,), terms=R, seed=2)
    fx, fy = x.to_fraction(), y.to_fraction()
    for got, want, scale in (
        (x + y, fx + fy, np.abs(fx + fy)),
        (x - y, fx - fy, np.abs(fx - fy)),
        (x * y, fx * fy, np.abs(fx * fy)),
    ):
        err = np.abs(got.to_fraction() - want)
        assert all(e <= Fraction(2) ** (-R * 53 + 3 * R + 8) * s for e, s in zip(err, scale))
    with mpmath.workprec(300):
        m = (x * y).to_mpmath()
        assert abs(m[0] - x.to_mpmath()[0] * y.to_mpmath()[0]) <= abs(m[0]) * mpmath.mpf(2) ** -200


def test_operators_with_python_and_numpy_operands_are_exact():
    x = ex.array("1.25", terms=3)
    assert (x + 1).to_fraction() == Fraction(9, 4)
    assert (1 - x).to_fraction() == Fraction(-1, 4)
    assert (x * 0.5).to_fraction() == Fraction(5, 8)
    assert ((x + np.array([1.0, 2.0])).to_fraction() == [Fraction(9, 4), Fraction(13, 4)]).all()
    big = 2**80 + 1  # an int needs two float64 terms: converted exactly
    assert (ex.zeros((), terms=2) + big).to_fraction() == big


def test_results_are_renormalized_and_raw_results_available():
    from expansions.bounds import ulp_nonoverlapping
    from expansions.formats import FLOAT64

    x = ex.random((100,), terms=4, seed=3)
    y = -x + ex.random((100,), terms=4, seed=4, exponent_range=(-80, -60))
    for r in (x + y, x * y, ex.add(x, y, method="fast")):
        for row in r.terms:
            assert ulp_nonoverlapping([Fraction(float(v)) if v else 0.0 for v in row], FLOAT64)
    raw = ex.mul(x, y, renormalize=False)
    assert exact_rows(raw.terms) == exact_rows(ex.mul(x, y).terms)


def test_comparisons_and_abs_are_exact():
    x = ex.array("1", terms=2)
    tiny = ex.from_terms(np.array([1.0, 2.0**-80]))
    assert tiny > x and x < tiny and tiny != x and not (tiny == x) and tiny >= x and x <= x
    assert (-tiny < -x) and abs(-tiny) == tiny
    a = ex.random((200,), terms=3, seed=5)
    b = ex.random((200,), terms=3, seed=6)
    fa, fb = a.to_fraction(), b.to_fraction()
    assert ((a < b) == (fa < fb)).all() and ((a == a.copy()) == True).all()  # noqa: E712
    assert (abs(a).to_fraction() == np.abs(fa)).all()


def test_nonfinite_values_follow_the_rule():
    nan, inf = math.nan, math.inf
    x = ex.array([inf, -inf, nan, 1.0], terms=3)
    y = ex.array([1.0, inf, 1.0, 0.0], terms=3)
    s = (x + y).terms
    assert s[0, 0] == inf and math.isnan(s[1, 0]) and math.isnan(s[2, 0]) and s[3, 0] == 1.0
    assert (s[:, 1:] == 0).all()
    p = (x * y).terms
    assert p[0, 0] == inf and p[1, 0] == -inf and math.isnan(p[2, 0]) and p[3, 0] == 0
    big = ex.array(np.finfo(np.float64).max, terms=2)
    assert (big + big).terms[0] == inf and (big * -2).terms[0] == -inf
    assert not (x == x)[2] and (x != x)[2] and (x == x)[0]
    assert str(ex.array(nan, terms=2)) == "nan"


def test_shapes_indexing_broadcasting():
    x = ex.random((3, 4), terms=3, seed=1)
    assert x.shape == (3, 4) and x.ndim == 2 and x.size == 12 and len(x) == 3
    assert x[0].shape == (4,) and x[..., 1].shape == (3,) and x[1, 2].shape == ()
    assert x[:, None].shape == (3, 1, 4) and x[x.to_float() > 0].ndim == 1
    r = ex.random((4,), terms=3, seed=2)
    s = x + r
    assert s.shape == (3, 4)
    assert s[2, 1] == x[2, 1] + r[1]
    x[0, 0] = 7
    assert x[0, 0].to_fraction() == 7
    assert ex.zeros((2, 3), terms=2).terms.shape == (2, 3, 2)
    assert (ex.ones(4, terms=2).to_float() == 1).all()
    assert ex.full((2,), "0.1", terms=4)[1] == ex.array("0.1", terms=4)
    assert ex.empty(0, terms=2).size == 0 and (ex.empty(0, terms=2) + 1).shape == (0,)


def test_repr_shows_the_digits_carried_and_effective_bits():
    x = ex.array(PI50, terms=2)
    # 105 bits carry 31 decimal digits: 3.1415926535897932384626433832|795... rounded to 31 digits, but
    # those read back to other terms; pi rounded to 32 digits reads back to x, and repr shows it
    assert ex.array("3.141592653589793238462643383280", terms=2).to_fraction() != x.to_fraction()
    assert ex.array("3.1415926535897932384626433832795", terms=2).to_fraction() == x.to_fraction()
    assert repr(x) == "expansions.array('3.1415926535897932384626433832795', terms=2, dtype='float64')"
    assert x.effective_bits() == 105
    assert ex.array(1, terms=32).effective_bits() == 1075  # float64 floor at 2^-1074
    assert ex.array(1, terms=8, dtype="float32").effective_bits() == 150
    assert str(ex.array(-0.0, terms=2)) == "-0.0"


def test_other_scalar_types():
    assert ex.array(Decimal("0.1"), terms=4) == ex.array("0.1", terms=4)
    assert ex.array(np.float32(0.5), terms=2) == ex.array(0.5, terms=2)
    assert ex.array(np.int64(2**62 + 1), terms=2).to_fraction() == 2**62 + 1
    assert ex.array(True, terms=2).to_fraction() == 1


def test_renormalize_public():
    t = np.array([[1.0, 1.0, 1.0, 2.0**-60]])
    x = ex.renormalize(ex.from_terms(t))
    assert exact_rows(x.terms) == exact_rows(t)
    assert x.terms[0, 0] == 3.0
    y = ex.renormalize(ex.from_terms(t), terms=2)
    assert y.nterms == 2


def test_random_is_reproducible_and_valid():
    a = ex.random((10,), terms=5, seed=42)
    b = ex.random((10,), terms=5, seed=42)
    assert np.array_equal(a.terms, b.terms)
    assert ex.random((), terms=2, seed=1).shape == ()


def test_r2_defaults_and_double_word_methods():
    """At R = 2 the operators use the fastest algorithms with a proven bound (expansions.dispatch.R2_DEFAULTS);
    every double-word algorithm is selectable by name; division and square root exist for R = 2."""
    from expansions import dispatch
    from expansions.dw.bounds import bound

    x = ex.random((300,), terms=2, seed=7)
    y = ex.random((300,), terms=2, seed=8)
    fx, fy = x.to_fraction(), y.to_fraction()
    for kind, got, exact in (("add", x + y, fx + fy), ("mul", x * y, fx * fy), ("div", x / y, fx / fy)):
        b = bound(dispatch.R2_DEFAULTS[kind], 53).value
        assert all(abs(g - e) <= b * abs(e) for g, e in zip(got.to_fraction(), exact)), kind
        alt = {"add": ex.add, "mul": ex.mul, "div": ex.div}[kind]
        for name in dispatch.R2_METHODS[kind]:
            alt(x, y, method=name)
    assert np.array_equal((x + y).terms, ex.add(x, y, method=dispatch.R2_DEFAULTS["add"]).terms)
    s = ex.sqrt(x * x)
    assert all(abs(a - abs(b)) <= Fraction(4, 2**104) * abs(b) for a, b in zip(s.to_fraction(), fx))
    assert float(ex.sqrt(ex.array(-1, terms=2))) != float(ex.sqrt(ex.array(-1, terms=2)))  # NaN
    assert float(ex.array(1, terms=2) / 0) == math.inf and float(ex.array(-1, terms=2) / 0) == -math.inf
    assert (ex.array(1, terms=3) / 2).to_fraction() == Fraction(1, 2)  # Newton division for R != 2
    q = ex.div(x, y, method="newton")  # also selectable at R = 2
    assert all(abs(g - e) <= bounds.div(2, 53).value * abs(e) for g, e in zip(q.to_fraction(), fx / fy))
    with pytest.raises(ValueError, match="needs R = 2"):
        ex.mul(ex.array(1, terms=4), 2, method="dw_times_dw1")
