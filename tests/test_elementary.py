"""The elementary functions (expansions.elementary, twins in expansions.cpu.elementary): errors against
mpmath within the stated bounds (expansions.bounds.elementary), special values of IEEE 754 and the
library's non-finite rule, exact identities, the NumPy ufuncs and bad input."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import expansions as ex
from expansions import bounds
from expansions.__main__ import main
from expansions.cpu import elementary as E
from expansions.formats import format_of
from expansions.reference.exact import exact_rows, round_to_expansion, to_floats
from expansions.reference.mpf import fraction_from_mpf, mpf_from_fraction

MP = {"exp": mpmath.exp, "expm1": mpmath.expm1, "log": mpmath.log, "log1p": mpmath.log1p,
      "log2": lambda v: mpmath.log(v, 2), "log10": mpmath.log10, "sin": mpmath.sin, "cos": mpmath.cos,
      "tan": mpmath.tan, "atan": mpmath.atan, "asin": mpmath.asin, "acos": mpmath.acos, "sinh": mpmath.sinh,
      "cosh": mpmath.cosh, "tanh": mpmath.tanh, "atan2": mpmath.atan2, "pow": mpmath.power}

# leading values of the arguments of each function (tails are random), inside the domain
ARGS = {"exp": (-30, 30), "expm1": (-2, 2), "log": (1e-5, 1e5), "log1p": (-0.9, 5), "log2": (1e-5, 1e5),
        "log10": (1e-5, 1e5), "sin": (-40, 40), "cos": (-40, 40), "tan": (-40, 40), "atan": (-8, 8),
        "asin": (-0.99, 0.99), "acos": (-0.99, 0.99), "sinh": (-10, 10), "cosh": (-10, 10), "tanh": (-4, 4)}


def expansions_of(values, R, dtype, rng=None):
    """Rows of R terms: each value rounded exactly, then (with rng) a random relative perturbation of the
    tail so that the arguments use all R terms."""
    fmt = format_of(dtype)
    rows = []
    with mpmath.workprec(4000):
        for v in values:
            v = v() if callable(v) else mpmath.mpf(v)
            if rng is not None:
                v = v * (1 + mpmath.mpf(rng.uniform(-1, 1)) * mpmath.mpf(2) ** -(fmt.p + 3))
            rows.append(to_floats(round_to_expansion(fraction_from_mpf(v), R, fmt), dtype))
    return np.array(rows)


def error_units(name, args, out, R, dtype):
    """Largest |y - f(x)| / max(unit |f(x)|, eta) over the rows (f by mpmath, exact inputs and outputs)."""
    fmt = format_of(dtype)
    unit = mpf_from_fraction(bounds.elementary_unit(R, fmt))
    eta = mpf_from_fraction(fmt.eta)
    ins = [[mpf_from_fraction(q) for q in exact_rows(a)] for a in args]
    assert np.isfinite(out).all()
    outs = [mpf_from_fraction(q) for q in exact_rows(out)]
    worst = 0.0
    for i, y in enumerate(outs):
        with mpmath.workprec(2 * (R * fmt.p + 64) + 200):
            f = MP[name](*[a[i] for a in ins])
            worst = max(worst, float(abs(y - f) / max(unit * abs(f), eta)))
    return worst


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (3, "float64"), (5, "float64"), (2, "float32"), (4, "float32")])
@pytest.mark.parametrize("name", sorted(ARGS))
def test_error_within_the_stated_bound(name, R, dtype):
    rng = np.random.default_rng([R, len(name), ord(name[0]), ord(name[-1])])
    lo, hi = ARGS[name]
    x = expansions_of(rng.uniform(lo, hi, 12), R, dtype, rng)
    out = getattr(E, name)(x, R)
    bound = bounds.elementary(name, R, format_of(dtype))
    assert error_units(name, (x,), out, R, dtype) <= bound.value / bounds.elementary_unit(R, format_of(dtype))


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (4, "float64"), (3, "float32")])
def test_atan2_and_pow_within_the_stated_bound(R, dtype):
    rng = np.random.default_rng(R)
    units = lambda n: bounds.elementary(n, R, format_of(dtype)).value / bounds.elementary_unit(R, format_of(dtype))  # noqa: E731
    y = expansions_of(rng.uniform(-5, 5, 12), R, dtype, rng)
    x = expansions_of(rng.uniform(-5, 5, 12), R, dtype, rng)
    assert error_units("atan2", (y, x), E.atan2(y, x, R), R, dtype) <= units("atan2")
    b = expansions_of(rng.uniform(0.01, 30, 12), R, dtype, rng)
    e = expansions_of(rng.uniform(-15, 15, 12), R, dtype, rng)
    assert error_units("pow", (b, e), E.pow(b, e, R), R, dtype) <= units("pow")


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (4, "float64"), (2, "float32"), (3, "float32")])
def test_huge_arguments_and_zeros_of_sin_cos_tan(R, dtype):
    """sin(1e300) (Payne–Hanek), and arguments at k pi/2 rounded to R terms, where sin or cos is tiny."""
    big = 1e300 if dtype == "float64" else 1e38
    near = [lambda k=k: k * mpmath.pi / 2 for k in (1, 2, 3, 4, 101)]
    vals = [big, -big, 1e22 if dtype == "float64" else 1e20] + near
    x = expansions_of(vals, R, dtype)
    for name in ("sin", "cos", "tan"):
        out = getattr(E, name)(x, R)
        extra = 1 if name != "tan" else 2.0**30  # tan near a pole: the floor eta |f'| of the verification
        assert error_units(name, (x,), out, R, dtype) <= 8 * extra, name


def test_exp_edges_and_subnormal_results():
    R, dtype = 3, "float64"
    x = expansions_of([-700, -720, -740, 709.7, -1e-300, 1e-300], R, dtype)
    out = E.exp(x, R)
    assert error_units("exp", (x,), out, R, dtype) <= 8
    assert 0 < out[2, 0] < 2.0**-1022  # exp(-740) is subnormal
    over = E.exp(expansions_of([709.8, 800, -746, -1e5], R, dtype), R)
    assert over[0, 0] == np.inf and over[1, 0] == np.inf and (over[:2, 1:] == 0).all()
    assert (over[2:] == 0).all()


def _row(*values, R=3, dtype="float64"):
    a = np.zeros((len(values), R), dtype=dtype)
    a[:, 0] = values
    return a


INF, NAN = math.inf, math.nan


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,x,expected", [
    ("exp", -INF, 0.0), ("exp", INF, INF), ("exp", NAN, NAN), ("exp", 0.0, 1.0), ("exp", -0.0, 1.0),
    ("expm1", -INF, -1.0), ("expm1", INF, INF), ("expm1", -0.0, -0.0),
    ("log", 0.0, -INF), ("log", -0.0, -INF), ("log", -1.0, NAN), ("log", INF, INF), ("log", -INF, NAN),
    ("log", 1.0, 0.0), ("log2", 0.0, -INF), ("log10", -2.0, NAN), ("log1p", -1.0, -INF), ("log1p", -2.0, NAN),
    ("log1p", -0.0, -0.0), ("sin", INF, NAN), ("sin", -INF, NAN), ("cos", INF, NAN), ("tan", -INF, NAN),
    ("sin", -0.0, -0.0), ("tan", -0.0, -0.0), ("cos", 0.0, 1.0), ("atan", -0.0, -0.0), ("asin", 2.0, NAN),
    ("acos", -1.5, NAN), ("acos", 1.0, 0.0), ("asin", -0.0, -0.0), ("sinh", -INF, -INF), ("sinh", -0.0, -0.0),
    ("sinh", 1e5, INF), ("cosh", -1e5, INF), ("cosh", NAN, NAN), ("tanh", INF, 1.0), ("tanh", -INF, -1.0),
    ("tanh", -0.0, -0.0), ("tanh", 1e4, 1.0)])
def test_special_values(name, x, expected, dtype):
    out = getattr(E, name)(_row(x, dtype=dtype), 3)[0]
    if math.isnan(expected):
        assert np.isnan(out[0]) and not np.signbit(out[0]) and (out[1:] == 0).all()  # the canonical NaN
    else:
        assert out[0] == expected and np.signbit(out[0]) == np.signbit(expected) and (out[1:] == 0).all()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_special_values_that_are_constants_to_R_terms(dtype):
    R = 3
    fmt = format_of(dtype)

    def const(multiple_of_pi):
        with mpmath.workprec(600):
            return to_floats(round_to_expansion(fraction_from_mpf(multiple_of_pi * mpmath.pi), R, fmt), dtype)

    pi = 1  # the expected constants below are multiples of pi, rounded by const at 600 bits
    assert np.array_equal(E.atan(_row(INF, dtype=dtype), R)[0], const(pi / 2))
    assert np.array_equal(E.atan(_row(-INF, dtype=dtype), R)[0], const(-pi / 2))
    assert np.array_equal(E.asin(_row(-1.0, dtype=dtype), R)[0], const(-pi / 2))
    assert np.array_equal(E.acos(_row(-1.0, dtype=dtype), R)[0], const(pi))
    y = _row(0.0, -0.0, 0.0, INF, -INF, 1.0, INF, dtype=dtype)
    x = _row(-0.0, -0.0, 0.0, -INF, INF, 0.0, 2.0, dtype=dtype)
    out = E.atan2(y, x, R)
    for got, want in zip(out, [pi, -pi, 0, 3 * pi / 4, -pi / 4, pi / 2, pi / 2]):
        assert np.array_equal(got, const(want)) if want else (got == 0).all()
    assert not np.signbit(out[2, 0])
    # results that underflow (x > 0, |y / x| below the range): the zero of y's sign, as IEEE's atan2
    big = 1e300 if dtype == "float64" else 1e38
    tiny = 1e-300 if dtype == "float64" else 1e-30
    out = E.atan2(_row(-tiny, tiny, dtype=dtype), _row(big, big, dtype=dtype), R)
    assert (out == 0).all() and list(np.signbit(out[:, 0])) == [True, False]
    assert list(np.signbit(ex.atan2(ex.array([-tiny, tiny], terms=R, dtype=dtype), big).terms[:, 0])) == [True, False]


@pytest.mark.parametrize("x,y,expected", [
    (2.0, 10.0, 1024.0), (-2.0, 3.0, -8.0), (-2.0, 0.5, NAN), (0.0, -1.0, INF), (-0.0, -3.0, -INF),
    (-0.0, 3.0, -0.0), (-0.0, 2.0, 0.0), (1.0, NAN, 1.0), (NAN, 0.0, 1.0), (NAN, 2.0, NAN), (-1.0, INF, 1.0),
    (0.5, INF, 0.0), (2.0, -INF, 0.0), (INF, -2.0, 0.0), (-INF, 3.0, -INF), (2.0, 2000.0, INF), (2.0, -2000.0, 0.0)])
def test_pow_special_values(x, y, expected):
    out = E.pow(_row(x), _row(y), 3)[0]
    if math.isnan(expected):
        assert np.isnan(out[0]) and (out[1:] == 0).all()
    else:
        assert out[0] == expected and np.signbit(out[0]) == np.signbit(expected) and (out[1:] == 0).all()


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (4, "float64"), (3, "float32")])
def test_exact_identities(R, dtype):
    one, zero = _row(1.0, R=R, dtype=dtype), _row(0.0, R=R, dtype=dtype)
    assert np.array_equal(E.exp(zero, R), one) and np.array_equal(E.cos(zero, R), one)
    assert np.array_equal(E.cosh(zero, R), one) and np.array_equal(E.log(one, R), zero)
    for name in ("sin", "tan", "atan", "asin", "sinh", "tanh", "expm1", "log1p"):
        assert np.array_equal(getattr(E, name)(zero, R), zero), name
    k = np.array([-100.0, -1.0, 0.0, 1.0, 7.0, 100.0])
    assert np.array_equal(E.log2(_row(*(2.0**k), R=R, dtype=dtype), R), _row(*k, R=R, dtype=dtype))


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (5, "float64"), (3, "float32")])
def test_symmetries_are_bitwise(R, dtype):
    rng = np.random.default_rng(R)
    x = expansions_of(rng.uniform(-3, 3, 16), R, dtype, rng)
    for name in ("sin", "tan", "atan", "sinh", "tanh"):
        f = getattr(E, name)
        assert np.array_equal(f(-x, R), -f(x, R)), name
    u = x / 4
    assert np.array_equal(E.asin(-u, R), -E.asin(u, R))
    assert np.array_equal(E.cos(-x, R), E.cos(x, R)) and np.array_equal(E.cosh(-x, R), E.cosh(x, R))


def test_no_exception_and_no_hang_on_any_bit_pattern():
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 2**64, size=(64, 3), dtype=np.uint64).view(np.float64)
    raw[::7, 0] = np.inf
    raw[::11, 1] = np.nan
    with np.errstate(all="raise"):  # no floating-point exception escapes either
        for name in ("exp", "log", "sin", "cos", "tan", "atan", "asin", "acos", "sinh", "cosh", "tanh", "expm1",
                     "log1p", "log2", "log10"):
            out = getattr(E, name)(raw, 3)
            assert out.shape == (64, 3)
            bad = ~np.isfinite(out).all(axis=1)
            assert (out[bad, 1:] == 0).all(), name  # a non-finite result is (w, 0, 0)
        assert E.atan2(raw, raw[::-1], 3).shape == (64, 3) and E.pow(raw, raw[::-1], 3).shape == (64, 3)


def test_public_functions_and_ufuncs():
    x = ex.array([0.25, 1.5, 3.0], terms=3)
    for np_f, f in [(np.exp, ex.exp), (np.log, ex.log), (np.sin, ex.sin), (np.cos, ex.cos), (np.tan, ex.tan),
                    (np.arctan, ex.atan), (np.sinh, ex.sinh), (np.cosh, ex.cosh), (np.tanh, ex.tanh),
                    (np.expm1, ex.expm1), (np.log1p, ex.log1p), (np.log2, ex.log2), (np.log10, ex.log10)]:
        r = np_f(x)
        assert isinstance(r, ex.ExpansionArray) and np.array_equal(r.terms, f(x).terms)
        assert np.array_equal(r.terms, getattr(E, f.__name__)(x.terms, 3))
    u = x / 4
    assert np.array_equal(np.arcsin(u).terms, ex.asin(u).terms) and np.array_equal(np.arccos(u).terms,
                                                                                    ex.acos(u).terms)
    y = ex.array([[1.0], [-2.0]], terms=3)
    r = np.arctan2(y, x)
    assert r.shape == (2, 3) and r.nterms == 3
    assert np.array_equal(r[1, 2].terms, ex.atan2(ex.array(-2.0, terms=3), ex.array(3.0, terms=3)).terms)
    assert np.array_equal(ex.pow(x, 3).terms, ex.power(x, 3).terms)  # an integer exponent: binary powering
    assert float(ex.pow(ex.array(2.0, terms=3), 0.5)) == math.sqrt(2)
    out = ex.zeros((3,), terms=3)
    assert np.exp(x, out=out) is out and np.array_equal(out.terms, ex.exp(x).terms)
    f32 = ex.array([0.5], terms=4, dtype="float32")
    assert ex.exp(f32).dtype == np.float32 and ex.exp(f32).nterms == 4


def test_bad_input():
    x = ex.array([1.0, 2.0], terms=2)
    with pytest.raises(TypeError, match="exp expects an ExpansionArray"):
        ex.exp(1.0)
    with pytest.raises(TypeError, match="sin expects an ExpansionArray"):
        ex.sin([1.0])
    with pytest.raises(TypeError):
        ex.atan2(x, {"not": "a number"})
    with pytest.raises(TypeError):
        ex.pow(2.0, 3)
    with pytest.raises(ValueError, match="broadcast"):
        ex.atan2(x, ex.array([1.0, 2.0, 3.0], terms=2))
    with pytest.raises(TypeError, match="spacing"):
        np.spacing(x)
    with pytest.raises(ValueError, match="unknown elementary function"):
        bounds.elementary("gamma", 2, "float64")


def test_verify_elementary_command(capsys):
    """A short run of `python -m expansions verify --elementary` (the full one: paper_repro/results)."""
    rc = main(["verify", "--elementary", "--terms", "2", "--dtype", "float64,float32", "--functions", "exp,sin,atan2",
               "--samples", "40", "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 0 and text.count("| exp | 2 |") == 2 and "| atan2 | 2 | float32 | 40 |" in text


@pytest.mark.parametrize("R,dtype", [(3, "float32"), *(pytest.param(*c, marks=pytest.mark.slow) for c in (
    (2, "float64"), (5, "float64"), (9, "float64"), (8, "float32")))])
def test_engine_arithmetic_gives_the_twins_bits(R, dtype):
    """On the engine backend the functions run on its compiled operations (E.Arithmetic); every
    function must return the bits of the NumPy twins, on random arguments and the hard cases."""
    from expansions import backends
    from expansions.generate import random_terms
    from expansions.verify_elementary import hard_arguments

    try:
        engine = backends.engine_backend()
    except ImportError as exc:
        pytest.skip(f"no engine: {exc}")
    rng = np.random.default_rng(R)
    for name in sorted(MP):
        x = np.concatenate([random_terms((24,), R, dtype, seed=R, exponent_range=(-6, 6)),
                            hard_arguments(name if name not in ("atan2", "pow") else "log", R, dtype)])
        args = (x, x[rng.permutation(len(x))]) if name in ("atan2", "pow") else (x,)
        with np.errstate(all="ignore"):
            want = getattr(E, name)(*args, R)
            got = engine.elementary(name)(*args, R)
        assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8)), name
