"""Operands the library calls valid but that the algorithms' proofs do not take as they are.

* R = 2: the double-word algorithms (JMP 2017, Lefèvre et al. 2023) assume ``hi = RN(hi + lo)``; an
  ulp-nonoverlapping pair with ``ulp(hi)/2 < |lo| < ulp(hi)`` (about a fifth of ``ex.random(...,
  terms=2)``) is not one.  The operations make each such operand a double word first (2Sum, exact),
  per element, on every backend with the same bits.

* Any R: the proofs of the truncated multiplication, the dot product and the Newton reciprocal,
  division and square root use ``|x_i| <= 2**(-(p-1) i) |x_0|``, which an ulp-nonoverlapping
  expansion breaks with a zero followed by a nonzero term or with repeated subnormal terms.  These
  operations first renormalize, per element, an operand whose finite terms break
  ``|x_i| <= 2**-(p-1) |x_{i-1}|`` (``positional``), on every backend with the same bits.

* R = 2 division and square root of operands near the underflow threshold run scaled by powers of
  two (their intermediates would underflow), with the same bits on every backend.

Checked: the reported operands, exact errors (Fractions) against the stated bounds; random operands of
those kinds (hypothesis); the twins and the engine give the same bits on them (the kernels in the warp
emulator: tests/test_dw_operation.py and tests/test_cuda_emulated.py).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers import bits, examples
from hypothesis import given, settings
from hypothesis import strategies as st

import expansions as ex
from expansions import backends, bounds, dispatch
from expansions.dw import R2_METHODS
from expansions.dw import bounds as dw_bounds
from expansions.dw.cpu import double_word
from expansions.formats import FLOAT32, FLOAT64, format_of
from expansions.generate import random_terms

h = float.fromhex
DTYPES = ("float64", "float32")


def exact_rows(terms) -> list:
    """The exact value of each expansion of a (count, R) array."""
    return [sum((Fraction(float(v)) for v in row), Fraction(0)) for row in np.asarray(terms)]


def relative_errors(got, want) -> list:
    return [abs(g - w) / abs(w) for g, w in zip(exact_rows(got), want)]


def non_double_words(n: int, dtype: str, seed: int) -> np.ndarray:
    """(n, 2) ulp-nonoverlapping pairs that are not double words: ``ulp(hi)/2 < |lo| < ulp(hi)``
    (``|lo| = ulp(hi)/2`` with an odd ``hi``, which rounds away, among them), leading exponents in
    [-8, 8]."""
    rng = np.random.default_rng(seed)
    p = format_of(dtype).p
    e = rng.integers(-8, 9, n)
    mant = rng.integers(1 << (p - 1), 1 << p, n)
    hi = np.ldexp(mant.astype(np.float64), e - (p - 1)) * rng.choice([-1.0, 1.0], n)
    lo_mant = rng.integers((1 << (p - 1)) + 1, 1 << p, n)  # ulp(hi)/2 < |lo| < ulp(hi)
    lo = np.ldexp(lo_mant.astype(np.float64), e - 2 * (p - 1) - 1) * rng.choice([-1.0, 1.0], n)
    half = rng.random(n) < 0.1  # |lo| = ulp(hi)/2 on an odd hi: RN(hi + lo) != hi
    hi = np.where(half, np.ldexp(np.float64(1 << (p - 1)) + 1, e - (p - 1)), hi)
    lo = np.where(half, np.ldexp(1.0, e - p) * np.sign(hi), lo)
    out = np.stack([hi, lo], axis=1).astype(dtype)
    assert ((out[:, 0] + out[:, 1]) != out[:, 0]).all()
    return out


# ---------------------------------------------------------------------------------------------
# R = 2: operands that are not double words


def test_reported_r2_product_within_the_double_word_bound():
    x = np.array([[h("0x1.000000000003dp-1"), h("0x1.fffffffffff5dp-54")]])
    y = np.array([[h("-0x1.000000000000fp+0"), h("-0x1.fffffffffffd9p-53")]])
    want = [a * b for a, b in zip(exact_rows(x), exact_rows(y))]
    for method, name in (("auto", "dw_times_dw1"), ("dw_times_dw2", "dw_times_dw2")):
        z = ex.mul(ex.from_terms(x), ex.from_terms(y), method=method).terms
        (err,) = relative_errors(z, want)
        assert err <= dw_bounds.bound(name, 53).value, (method, dw_bounds.in_u2(err, 53))


def test_reported_r2_quotient_within_the_double_word_bound():
    x = np.array([[h("-0x1.16p+2"), h("0x1.ffffffff64c00p-51")]])
    y = np.array([[h("-0x1.0000000000034p-3"), h("-0x1.ffffffffffca7p-56")]])
    want = [a / b for a, b in zip(exact_rows(x), exact_rows(y))]
    (err,) = relative_errors((ex.from_terms(x) / ex.from_terms(y)).terms, want)
    assert err <= dw_bounds.bound("dw_div_dw2", 53).value, dw_bounds.in_u2(err, 53)


OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
       "div": lambda a, b: a / b}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "sqrt"])
def test_r2_operations_on_non_double_words_within_bounds(op, dtype):
    """Every algorithm with a proven bound, on operands none of which is a double word."""
    p = format_of(dtype).p
    x = non_double_words(400, dtype, 1)
    y = non_double_words(400, dtype, 2)
    if op == "sqrt":
        x = np.abs(x)
    xs, ys = exact_rows(x), exact_rows(y)
    for name in R2_METHODS["add" if op == "sub" else op]:
        b = dw_bounds.bound(name, p)
        if b is None:
            continue
        if op == "sqrt":
            z = ex.sqrt(ex.from_terms(x), method=name).terms
            errs = [abs(v * v - a) / a for v, a in zip(exact_rows(z), xs)]  # |z^2 - x| / x ~ 2 |z - √x| / √x
            assert max(errs) <= 2 * b.value + b.value**2, (name, dtype)
            continue
        fn = {"add": ex.add, "sub": ex.sub, "mul": ex.mul, "div": ex.div}[op]
        z = fn(ex.from_terms(x), ex.from_terms(y), method=name).terms
        want = [OPS[op](a, c) for a, c in zip(xs, ys)]
        errs = [e for e, w in zip(relative_errors(z, want), want) if w != 0]
        assert max(errs) <= b.value, (name, dtype, dw_bounds.in_u2(max(errs), p))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "sqrt"])
def test_r2_non_double_words_same_bits_twins_and_engine(op, dtype):
    pytest.importorskip("numba")
    engine = backends.engine_backend()
    x = non_double_words(3000, dtype, 3)
    y = non_double_words(3000, dtype, 4)
    x[::3] = ex.random(1000, terms=2, dtype=dtype, seed=5).terms  # mixed with other operands
    if op == "sqrt":
        x = np.abs(x)
    for name in R2_METHODS["add" if op == "sub" else op]:
        for renormalize in (True, False):
            args = (x, 2) if op == "sqrt" else (x, y, 2)
            with np.errstate(all="ignore"):
                want = dispatch.run(op, name, backends.cpu, renormalize, *args)
                got = dispatch.run(op, name, engine, renormalize, *args)
            assert (bits(got) == bits(want)).all(), (name, renormalize)


# ---------------------------------------------------------------------------------------------
# any R: operands that break |x_i| <= 2**-(p-1) |x_{i-1}| (a zero followed by a nonzero term,
# repeated subnormal terms), which ulp_nonoverlapping accepts


def test_reported_r8_product_within_bound():
    x = np.array([[1.0, 0, 0, 0, 0, 0, 0, 2.0**-53]])
    y = np.array([[1.0, 2.0**-53, 0, 0, 0, 0, 0, 0]])
    assert bounds.ulp_nonoverlapping(list(x[0]), FLOAT64) and bounds.ulp_nonoverlapping(list(y[0]), FLOAT64)
    z = (ex.from_terms(x) * ex.from_terms(y)).terms
    (err,) = relative_errors(z, [exact_rows(x)[0] * exact_rows(y)[0]])  # |x0 y0| = 1
    assert err <= bounds.mul_truncated(8, 53).value + bounds.mul_underflow_term(8, FLOAT64)


def test_reported_r3_quotient_within_bound():
    x = np.array([[2.0**-100, 0.0, 0.0]])
    y = np.array([[2.0**-1070, 2.0**-1074, 0.0]])
    want = exact_rows(x)[0] / exact_rows(y)[0]
    z = exact_rows((ex.from_terms(x) / ex.from_terms(y)).terms)[0]
    assert abs(z - want) <= bounds.div(3, FLOAT64).value * abs(want) + bounds.newton_underflow_term(3, FLOAT64)


def test_reported_float32_subnormal_terms_within_bounds():
    x = np.array([[2.0**-126, 2.0**-149, 2.0**-149, 2.0**-149]], dtype=np.float32)
    assert bounds.ulp_nonoverlapping(list(x[0]), FLOAT32)
    big = ex.random(1, terms=4, dtype="float32", seed=3, exponent_range=(100, 100)).terms
    small = ex.random(1, terms=4, dtype="float32", seed=4, exponent_range=(-100, -100)).terms
    for name, z, want, b in _newton_and_product_cases(x, big, small, 4, FLOAT32):
        assert abs(z - want) <= b, name


def _newton_and_product_cases(x, big, small, R, fmt):
    """(name, exact result, exact value, allowed absolute error) of x * big, x / small, 1/x."""
    X, B, S = ex.from_terms(x), ex.from_terms(big), ex.from_terms(small)
    xv, bv, sv = exact_rows(x)[0], exact_rows(big)[0], exact_rows(small)[0]
    lead = Fraction(float(ex.renormalize(X).terms[0, 0])) * Fraction(float(big[0, 0]))
    u_mul, u_newton = bounds.mul_underflow_term(R, fmt), bounds.newton_underflow_term(R, fmt)
    return [
        ("mul", exact_rows((X * B).terms)[0], xv * bv, bounds.mul_truncated(R, fmt.p).value * abs(lead) + u_mul),
        ("div", exact_rows((X / S).terms)[0], xv / sv, bounds.div(R, fmt).value * abs(xv / sv) + u_newton),
        ("reciprocal", exact_rows(ex.reciprocal(X).terms)[0], 1 / xv,
         bounds.reciprocal(R, fmt).value * abs(1 / xv) + u_newton),
    ]


def sqrt_within(z: Fraction, a: Fraction, rel: Fraction, absolute: Fraction) -> bool:
    """Whether |z - sqrt(a)| <= rel sqrt(a) + absolute, exactly (by squares)."""
    return z >= 0 and max(z - absolute, Fraction(0)) ** 2 <= a * (1 + rel) ** 2 and (z + absolute) ** 2 >= a * (
        1 - rel) ** 2


def broken_operands(count: int, R: int, dtype: str, seed: int, kind: str) -> np.ndarray:
    """(count, R) ulp-nonoverlapping expansions (``bounds.ulp_nonoverlapping``) that break the positional
    condition (at R = 2: are not double words): ``zeros``: random expansions with a zero moved in
    before a nonzero term; ``subnormal``: a leading term within a few binades above the underflow
    threshold followed by the smallest subnormal repeated (2 to R - 1 times; once at R = 2) and zeros."""
    rng = np.random.default_rng(seed)
    fmt = format_of(dtype)
    if kind == "zeros":
        t = random_terms((count,), R, dtype, seed=seed)
        for row in t:
            nonzero = int(np.count_nonzero(row))
            j = int(rng.integers(0, min(nonzero, R - 1)))  # a zero moved in before the nonzero term j
            row[j + 1:] = row[j:-1].copy()
            row[j] = 0
        return t
    t = np.zeros((count, R), dtype=dtype)
    eta = np.ldexp(1.0, fmt.emin - fmt.p + 1)
    for row in t:  # at R = 2 [x0, eta] with ulp(x0) = eta (not a double word); else eta repeated
        e = int(rng.integers(0, 4)) if R > 2 else 0
        row[0] = np.ldexp(float(rng.integers(1 << (fmt.p - 1), 1 << fmt.p)), fmt.emin + e - fmt.p + 1)
        if rng.random() < 0.5:
            row[0] = -row[0]
        k = int(rng.integers(2, R)) if R > 2 else 1
        row[1:1 + k] = eta * (1 if rng.random() < 0.5 else -1)
    return t


def _partner(x: np.ndarray, R: int, dtype: str, seed: int, sign: int) -> np.ndarray:
    """Random positional expansions whose leading exponent is ``sign`` times that of each row of x (the
    largest term's): products (sign -1) and quotients (sign +1) near 1, far from the format's limits."""
    e = np.frexp(np.abs(x).max(axis=1).astype(np.float64))[1] - 1
    return np.concatenate([random_terms((1,), R, dtype, seed=seed + i, exponent_range=(sign * int(k), sign * int(k)))
                           for i, k in enumerate(e)])


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([2, 3, 4, 5, 8]), st.sampled_from(DTYPES),
       st.sampled_from(["zeros", "subnormal"]))
def test_broken_operands_within_bounds(seed, R, dtype, kind):
    """mul, div, reciprocal, sqrt and dot on operands that ulp_nonoverlapping accepts but that break the
    positional condition (at R = 2: are not double words): exact errors within the stated bounds (the
    R = 2 operators: the double-word bounds)."""
    fmt = format_of(dtype)
    count = 5
    x = broken_operands(count, R, dtype, seed, kind)
    assert all(bounds.ulp_nonoverlapping(list(r), fmt) for r in x)
    assert any(not _positional(r, fmt) or (R == 2 and r[0] + r[1] != r[0]) for r in x)
    y = _partner(x, R, dtype, seed, -1)
    d = _partner(x, R, dtype, seed + 100, 1)
    X, Y, D = ex.from_terms(x), ex.from_terms(y), ex.from_terms(d)
    xs, ys, ds = exact_rows(x), exact_rows(y), exact_rows(d)
    u_newton = bounds.newton_underflow_term(R, fmt)
    # products
    z = exact_rows((X * Y).terms)
    if R == 2:
        limits = [dw_bounds.bound("dw_times_dw1", fmt.p).value * abs(a * b) for a, b in zip(xs, ys)]
    else:
        lead = [Fraction(float(v)) for v in ex.renormalize(X).terms[:, 0]]
        limits = [bounds.mul_truncated(R, fmt.p).value * abs(a0 * Fraction(float(b0)))
                  + bounds.mul_underflow_term(R, fmt) for a0, b0 in zip(lead, y[:, 0])]
    for v, a, b, lim in zip(z, xs, ys, limits):
        assert abs(v - a * b) <= lim, ("mul", R, dtype, kind)
    # quotients, both ways
    for num, den, ns, dns in ((X, D, xs, ds), (D, X, ds, xs)):
        rel = dw_bounds.bound("dw_div_dw2", fmt.p).value if R == 2 else bounds.div(R, fmt).value
        extra = 0 if R == 2 else u_newton
        for v, a, b in zip(exact_rows((num / den).terms), ns, dns):
            if a != 0:
                assert abs(v - a / b) <= rel * abs(a / b) + extra, ("div", R, dtype, kind)
    # reciprocal (Newton at every R)
    for v, a in zip(exact_rows(ex.reciprocal(X).terms), xs):
        assert abs(v - 1 / a) <= bounds.reciprocal(R, fmt).value * abs(1 / a) + u_newton, ("reciprocal", R, dtype)
    # square root
    A = ex.from_terms(np.abs(x) if kind == "subnormal" else x * np.sign(x.sum(axis=1, keepdims=True)))
    rel = dw_bounds.bound("dw_sqrt", fmt.p).value if R == 2 else bounds.sqrt(R, fmt).value
    for v, a in zip(exact_rows(ex.sqrt(A).terms), exact_rows(A.terms)):
        assert sqrt_within(v, a, rel, 0 if R == 2 else u_newton), ("sqrt", R, dtype, kind)
    # dot (the element-wise tree)
    got = exact_rows(ex.dot(X, Y, method="elementwise").terms.reshape(1, R))[0]
    scale_ = sum(abs(a * b) for a, b in zip(xs, ys))
    limit = bounds.dot(count, R, fmt.p).value * scale_ + bounds.dot_underflow_term(count, R, fmt)
    assert abs(got - sum(a * b for a, b in zip(xs, ys))) <= limit, ("dot", R, dtype, kind)


def _positional(row, fmt) -> bool:
    top = Fraction(2) ** (fmt.p - 1)
    return all(top * abs(Fraction(float(row[i]))) <= abs(Fraction(float(row[i - 1]))) for i in range(1, len(row)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [2, 3, 4, 8])
def test_broken_operands_same_bits_twins_and_engine(R, dtype):
    pytest.importorskip("numba")
    engine = backends.engine_backend()
    x = np.concatenate([broken_operands(40, R, dtype, 7, "zeros"), broken_operands(40, R, dtype, 8, "subnormal"),
                        random_terms((40,), R, dtype, seed=9)])
    x[::7, -1] = np.nan  # non-finite rows are left as they are
    y = np.concatenate([_partner(x[:80], R, dtype, 10, -1), random_terms((40,), R, dtype, seed=11)])
    d = np.concatenate([_partner(x[:80], R, dtype, 12, 1), random_terms((40,), R, dtype, seed=13)])
    a = np.abs(x)
    runs = [("mul", "auto", (x, y)), ("div", "auto", (x, d)), ("div", "auto", (d, x)), ("reciprocal", "newton", (x,)),
            ("sqrt", "auto", (a,))]
    if R == 2:
        runs += [("mul", "truncated", (x, y)), ("div", "newton", (x, d)), ("sqrt", "newton", (a,))]
    for op, method, args in runs:
        alg = "newton" if op == "reciprocal" else dispatch.method(op, method, R)
        for renormalize in (True, False):
            with np.errstate(all="ignore"):
                want = dispatch.run(op, alg, backends.cpu, renormalize, *args, R)
                got = dispatch.run(op, alg, engine, renormalize, *args, R)
            assert (bits(got) == bits(want)).all(), (op, alg, renormalize)
    # the dot product's row function (engine.reduction) against the twins' tree
    X, Y = ex.from_terms(x[:80]), ex.from_terms(y[:80])
    ex.set_cpu_backend("twins")
    try:
        want = ex.dot(X, Y, method="elementwise")
    finally:
        ex.set_cpu_backend(None)
    got = ex.dot(X, Y, method="elementwise")
    assert (bits(got.terms) == bits(want.terms)).all()


# ---------------------------------------------------------------------------------------------
# R = 2 division and square root near the underflow threshold (scaled by powers of two)


def full_double_words(n: int, dtype: str, exponents, seed: int) -> np.ndarray:
    """(n, 2) double words with full p-bit leading words whose exponents are uniform in ``exponents``
    and a low word of p bits (fewer where it is subnormal)."""
    rng = np.random.default_rng(seed)
    p = format_of(dtype).p
    e = rng.integers(exponents[0], exponents[1] + 1, n)
    hi = np.ldexp(rng.integers(1 << (p - 1), 1 << p, n).astype(np.float64), e - (p - 1)) * rng.choice([-1.0, 1.0], n)
    lo = np.ldexp(rng.integers(-(1 << (p - 1)), 1 << (p - 1), n).astype(np.float64), e - 2 * p)
    h, lo_ = double_word(hi.astype(dtype), lo.astype(dtype))
    return np.stack([h, lo_], axis=1)


NEAR_UNDERFLOW = {"float64": (-1022, -962), "float32": (-126, -66)}


@pytest.mark.parametrize("dtype", DTYPES)
def test_r2_division_and_square_root_near_underflow_within_bounds(dtype):
    """Full-precision operands with leading exponents in [emin, emin + 60]: quotients near 1 and square
    roots within the double-word bounds (not float64 or float32 accuracy)."""
    p = format_of(dtype).p
    x = full_double_words(300, dtype, NEAR_UNDERFLOW[dtype], 1)
    ratio = np.random.default_rng(2).uniform(0.6, 1.6, 300)
    y = np.stack(double_word(*(x * ratio[:, None]).astype(dtype).T), axis=1)  # quotients near 1
    for name in R2_METHODS["div"]:
        b = dw_bounds.bound(name, p)
        if b is None:
            continue
        q = ex.div(ex.from_terms(x), ex.from_terms(y), method=name).terms
        want = [a / c for a, c in zip(exact_rows(x), exact_rows(y))]
        assert max(relative_errors(q, want)) <= b.value, name
    a = np.abs(x)
    s = ex.sqrt(ex.from_terms(a)).terms
    assert all(sqrt_within(v, w, dw_bounds.bound("dw_sqrt", p).value, 0) for v, w in zip(exact_rows(s), exact_rows(a)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_r2_near_underflow_same_bits_twins_and_engine(dtype):
    pytest.importorskip("numba")
    engine = backends.engine_backend()
    lo, hi = NEAR_UNDERFLOW[dtype]
    x = np.concatenate([full_double_words(500, dtype, (lo - 30, hi + 60), 5), non_double_words(100, dtype, 6)])
    y = np.concatenate([full_double_words(500, dtype, (lo - 30, hi + 60), 7), non_double_words(100, dtype, 8)])
    y[::5] = full_double_words(120, dtype, (-20, 20), 9)  # large quotients, underflowing ones
    for op, args in (("div", (x, y)), ("div", (y, x)), ("sqrt", (np.abs(x),))):
        for name in R2_METHODS[op]:
            for renormalize in (True, False):
                with np.errstate(all="ignore"):
                    want = dispatch.run(op, name, backends.cpu, renormalize, *args, 2)
                    got = dispatch.run(op, name, engine, renormalize, *args, 2)
                assert (bits(got) == bits(want)).all(), (op, name, renormalize)


def test_kernel_scaling_constant_is_the_library_s():
    from expansions.cuda import dw_kernels
    from expansions.formats import DW_SCALE_PRECISIONS

    assert f"constexpr int DW_SCALE_PRECISIONS = {DW_SCALE_PRECISIONS};" in dw_kernels.source()
