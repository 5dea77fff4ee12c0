"""The compiled engine (expansions.engine) against the NumPy twins, bit for bit.

* every operation of the twins (add_safe, add_fast, sub_safe, sub_fast, mul_truncated, renormalize,
  negate, reciprocal, div, sqrt, reduce, reduce_pass): engine == twin on the bits (signed zeros
  count), for R in 2, 3, 4, 5, 8, 13, 16, 31, 32, float64 and float32, on the verification's input
  families (``expansions.testing.mixed_pairs``), on the same inputs with NaN or an infinity in some term,
  with overflowing results, with operands of other numbers of terms (one-term divisors included);
* the fused engine (expansions.engine.fused): the kernels and the Newton operations with
  renormalize=True against the twins followed by the (Newton) renormalizer, on the same variants, at
  R in 3, 4, 5, 8, 16, 32 (every R of 3..32 with ``pytest --slow``); the stable sort's ties (±a, ±0,
  NaN, inf, subnormals); counts that are not a multiple of the block and the parallel path; products
  where the FMA and the twins' Dekker product differ (exactly checked); hypothesis bit patterns;
  vector instructions in the compiled hot loops; the engine backend fusing the public operators;
* how the engine is compiled: no multiply-add contracted into an FMA (a*b - c where the fused result
  differs), subnormals kept (no flush to zero);
* the package's interface: available(), the twins' names, errors on bad input.

Every NaN of these operations is the canonical one (the non-finite rule), so NaN bits are compared
too.  numba compiles each kernel once per dtype (R and the sizes are runtime arguments) and caches
the code on disk.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers import DTYPES, RS, bits, failure_table

pytest.importorskip("numba", reason="the compiled CPU engine needs numba")

from numba.core import config as numba_config  # noqa: E402

import expansions.engine as E  # noqa: E402
import expansions.engine.kernels as EK  # noqa: E402
import expansions.engine.limits as EL  # noqa: E402
from expansions.cpu import eft as TE  # noqa: E402
from expansions.cpu import kernels as TK  # noqa: E402
from expansions.cpu import newton as TN  # noqa: E402
from expansions.cpu import reduce as TR  # noqa: E402
from expansions.testing import mixed_pairs  # noqa: E402

N = 48  # expansions per family draw; the families hold 6 adversarial kinds of N // 8 each


def assert_same(got, want, *inputs, what=""):
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, got.dtype, want.shape, want.dtype)
    assert np.array_equal(bits(got), bits(want)), f"{what}\n" + failure_table(inputs, got, want)


def draw(R, dtype, seed, op="add_safe"):
    return mixed_pairs(N, R, dtype, np.random.default_rng([seed, R, np.dtype(dtype).itemsize]))


def with_nonfinite(x, rng):
    """x with NaN, +inf or -inf in a random term of a quarter of the rows."""
    x = x.copy()
    rows = rng.choice(x.shape[0], size=max(1, x.shape[0] // 4), replace=False)
    cols = rng.integers(0, x.shape[1], size=rows.size)
    x[rows, cols] = rng.choice(np.array([np.nan, np.inf, -np.inf], dtype=x.dtype), size=rows.size)
    return x


def near_overflow(x, rng, frac=0.25):
    """x with some rows scaled so that the leading term is about 0.9 * the largest float."""
    x = x.copy()
    rows = rng.choice(x.shape[0], size=max(1, int(x.shape[0] * frac)), replace=False)
    big = np.finfo(x.dtype).max
    with np.errstate(all="ignore"):
        x[rows] = (x[rows] / np.abs(x[rows, :1])) * x.dtype.type(0.9) * big
    x[~np.isfinite(x)] = 0
    return x


def variants(x, y, seed):
    """(label, x, y): the families, then with non-finite terms in x, in y, in both, and overflowing."""
    rng = np.random.default_rng(seed)
    yield "families", x, y
    yield "nonfinite x", with_nonfinite(x, rng), y
    yield "nonfinite y", x, with_nonfinite(y, rng)
    yield "nonfinite both", with_nonfinite(x, rng), with_nonfinite(y, rng)
    xb = near_overflow(x, rng)
    yb = near_overflow(y, rng)
    yb = np.where(np.sign(yb[:, :1]) == np.sign(xb[:, :1]), yb, -yb)  # same signs: sums overflow
    yield "overflow", xb, yb


def sizes(R):
    """(n, m) term counts of mixed-size operands: shorter, longer, one-term, beyond a lane group."""
    return [(1, R), (R, 1), (1, 1), (R + 3, max(1, R - 1)), (max(1, R // 2), R + 5), (2, 33)]


def resize(x, n, rng):
    """x with n terms: its first terms, or more terms (random values far below) appended."""
    if n <= x.shape[1]:
        return np.ascontiguousarray(x[:, :n])
    extra = (rng.standard_normal((x.shape[0], n - x.shape[1])) * 2.0**-80).astype(x.dtype)
    return np.ascontiguousarray(np.concatenate([x, extra * x[:, :1]], axis=1))


def run(f, *args):
    with np.errstate(all="ignore"):
        return f(*args)


# ---------------------------------------------------------------------------------------------
# additions and the multiplication

BINARY = ("add_safe", "add_fast", "sub_safe", "sub_fast", "mul_truncated")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
def test_binary_bits(R, dtype):
    x0, y0 = draw(R, dtype, 1)
    rng = np.random.default_rng(R)
    cases = list(variants(x0, y0, R))
    cases += [(f"sizes {n},{m}", resize(x0, n, rng), resize(y0, m, rng)) for n, m in sizes(R)]
    for label, x, y in cases:
        for name in BINARY:
            got = run(getattr(E, name), x, y, R)
            want = run(getattr(TK, name), x, y, R)
            assert_same(got, want, x, y, what=str((name, label)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
def test_renormalize_bits(R, dtype):
    x, y = draw(R, dtype, 2, "renormalize")
    rng = np.random.default_rng(R)
    raw = run(TK.add_fast, x, y, R)
    perm = rng.permuted(np.tile(np.arange(R), (raw.shape[0], 1)), axis=1)
    raw[::2] = np.take_along_axis(raw[::2], perm[::2], axis=1)  # unordered terms, as the verification
    long = rng.permuted(np.concatenate([x, y], axis=1), axis=1)  # 2R unordered terms into R
    ov = near_overflow(np.concatenate([x, x], axis=1), rng, frac=0.5)  # two copies of 0.9*max: overflow
    cases = [raw, x, long, with_nonfinite(raw, rng), with_nonfinite(long, rng), ov, np.ascontiguousarray(x[:, :1])]
    for inp in cases:
        assert_same(run(E.renormalize, inp, R), run(TK.renormalize, inp, R), inp)


@pytest.mark.parametrize("dtype", DTYPES)
def test_negate(dtype):
    x, _ = draw(4, dtype, 3)
    x = with_nonfinite(x, np.random.default_rng(0))
    assert_same(E.negate(x), TK.negate(x), x)


# ---------------------------------------------------------------------------------------------
# Newton: reciprocal, division, square root


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [R if R < 16 else pytest.param(R, marks=pytest.mark.slow) for R in RS])
def test_newton_bits(R, dtype):  # the twins' Newton steps at R >= 16 take minutes
    x0, y0 = draw(R, dtype, 4, "div")
    rng = np.random.default_rng(R)
    cases = list(variants(x0, y0, R))
    x1 = x0.copy()
    x1[::5] = 0  # 0/y, sqrt(+-0), 1/0
    x1[1::10] = -x1[1::10]
    cases.append(("zeros", x1, np.ascontiguousarray(x1[::-1])))
    cases += [(f"sizes {n},{m}", resize(x0, n, rng), resize(y0, m, rng)) for n, m in sizes(R)[:4]]
    for label, x, y in cases:
        got = run(E.newton_div, x, y, R)
        assert_same(got, run(TN.div, x, y, R), x, y, what=str(("div", label)))
        assert_same(run(E.newton_reciprocal, y, R), run(TN.reciprocal, y, R), y, what=str(("reciprocal", label)))
        if label in ("families", "zeros"):  # negative radicands: NaN
            assert_same(run(E.newton_sqrt, x, R), run(TN.sqrt, x, R), x, what=str(("sqrt of signed", label)))
        x = np.ascontiguousarray(np.where(x[:, :1] < 0, -x, x))
        assert_same(run(E.newton_sqrt, x, R), run(TN.sqrt, x, R), x, what=str(("sqrt", label)))


def test_newton_names():
    assert E.div is E.newton_div and E.reciprocal is E.newton_reciprocal and E.sqrt is E.newton_sqrt


# ---------------------------------------------------------------------------------------------
# reductions


REDUCTIONS = [  # (batch, n, n2, xs): contiguous rows, columns of a matrix (strided), one long row
    (1, N, 1, None),
    (3, N // 3, 1, None),
    (N, 1, 1, None),
    (6, 8, 6, (48, 1, 6)),
    (2, 5, 2, (20, 3, 4)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [R if R < 31 else pytest.param(R, marks=pytest.mark.slow) for R in RS])
def test_reduce_bits(R, dtype):
    x0, y0 = draw(R, dtype, 5)
    rng = np.random.default_rng(R)
    for label, x, y in variants(x0, y0, R):
        if label in ("nonfinite x", "nonfinite y"):
            continue  # "nonfinite both" has both
        for batch, n, n2, xs in REDUCTIONS:
            want = run(TR.reduce, x, batch, n, R, n2, xs)
            for chunk in (None, 2, [4, 2]) if label == "families" else (None,):
                got = run(E.reduce, x, batch, n, R, n2, xs, None, None, chunk)
                assert_same(got, want, x, what=str(("sum", label, batch, n, chunk)))
            ys = xs if xs is not None else (n, 0, 1)
            yd = y if label != "families" else resize(y, 1, rng)  # one case of one-term factors
            want = run(TR.reduce, x, batch, n, R, n2, xs or (n, 0, 1), yd, ys)
            got = run(E.reduce, x, batch, n, R, n2, xs or (n, 0, 1), yd, ys)
            assert_same(got, want, x, yd, what=str(("dot", label, batch, n)))
    x, y = x0, y0
    for C in (2, 4, 64):
        want = run(TR.reduce_pass, x, 3, 16, 1, (16, 0, 1), R, C, y, (16, 0, 1))
        assert_same(run(E.reduce_pass, x, 3, 16, 1, (16, 0, 1), R, C, y, (16, 0, 1)), want, x, y)
    assert_same(E.reduce(x, 0, 5, R), TR.reduce(x, 0, 5, R))
    assert_same(E.reduce(x, 2, 0, R), TR.reduce(x, 2, 0, R))


def _r2_edges(dtype, rng, n=4096):
    """Two-term rows for the straight-line R = 2 paths of the reductions and their fallbacks: random
    double words over a wide exponent range, factors around the products' limits (near 2^-908, 2^984
    for float64), subnormal and huge leading terms, rows that are not positional (x1 ~ x0), signed
    zeros, exact cancellations (zero sums and products), infinities and NaN."""
    info = np.finfo(dtype)
    e = rng.integers(info.minexp + 2, info.maxexp - 2, n)
    with np.errstate(all="ignore"):
        x0 = (rng.uniform(0.5, 1, n) * np.exp2(e.astype(float)) * rng.choice([-1, 1], n)).astype(dtype)
        x1 = (x0.astype(float) * rng.uniform(-1, 1, n) * 2.0 ** -(info.nmant + 2)).astype(dtype)
    kind = rng.integers(0, 10, n)
    near = rng.choice([info.minexp + info.nmant + 10, info.maxexp - 40, info.maxexp // 2 - 20,
                       (info.minexp + 2 * info.nmant + 10) // 2, info.minexp], n)
    with np.errstate(all="ignore"):
        x0 = np.where(kind == 1, (rng.uniform(0.5, 1, n) * np.exp2(near.astype(float))).astype(dtype), x0)
        x1 = np.where(kind == 1, (x0.astype(float) * 2.0 ** -(info.nmant + 3)).astype(dtype), x1)
        x1 = np.where(kind == 2, x0 * dtype(0.75), x1)  # not positional
        x0 = np.where(kind == 3, dtype(0) * rng.choice([-1, 1], n).astype(dtype), x0)
        x1 = np.where(kind == 3, dtype(0), x1)
        x0 = np.where(kind == 4, rng.choice(np.array([np.inf, -np.inf, np.nan], dtype), n), x0)
        x1 = np.where(kind == 5, rng.choice(np.array([np.inf, np.nan], dtype), n), x1)
        x1 = np.where(kind == 6, dtype(0), x1)
    x = np.stack([x0, x1], axis=1)
    neg = rng.integers(0, 2, n) == 1
    x[1::2] = np.where(neg[1::2, None] & (kind[1::2, None] == 7), -x[0::2], x[1::2])  # exact cancellations
    return x


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_r2_straight_line_paths(dtype):
    """At R = 2 the sum's pairs and the dot product's products run straight-line, flagged rows on the
    block engine: the twin's bits on every edge and every mix of flagged and unflagged rows."""
    rng = np.random.default_rng(11)
    x = _r2_edges(np.dtype(dtype).type, rng)
    y = _r2_edges(np.dtype(dtype).type, rng)
    for sl in (slice(0, 4096), slice(0, 600), slice(7, 300)):
        xs, ys = np.ascontiguousarray(x[sl]), np.ascontiguousarray(y[sl])
        for clean in (False, True):
            if clean:  # finite rows only: the whole-item straight-line path is taken
                ok = np.isfinite(xs).all(axis=1) & np.isfinite(ys).all(axis=1)
                xs, ys = xs[ok], ys[ok]
            k = xs.shape[0]
            for batch in (1, 4, k // 2, k):  # rows of 1 and 2: each product and each pair seen alone
                m = k // batch
                a, b = xs[:batch * m], ys[:batch * m]
                assert_same(run(E.reduce, a, batch, m, 2), run(TR.reduce, a, batch, m, 2), a,
                            what=str(("sum", sl, clean, batch)))
                assert_same(run(E.reduce, a, batch, m, 2, 1, (m, 0, 1), b, (m, 0, 1)),
                            run(TR.reduce, a, batch, m, 2, 1, (m, 0, 1), b, (m, 0, 1)), a, b,
                            what=str(("dot", sl, clean, batch)))


def test_reduce_long_rows_split():
    """Few long rows are cut into chunks for the cores; the tree, and the bits, are the same."""
    R = 3
    x = mixed_pairs(2000, R, "float64", np.random.default_rng(7))[0]
    for batch, n in ((1, 2000), (2, 1000), (5, 400)):
        assert_same(run(E.reduce, x, batch, n, R), run(TR.reduce, x, batch, n, R), x)


# ---------------------------------------------------------------------------------------------
# how the engine is compiled


def _compiled(f):
    from numba import njit

    from expansions.engine.kernels import OPTIONS

    return njit(**{k: v for k, v in OPTIONS.items() if k != "cache"})(f)


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_contraction(dtype):
    """a*b - c compiled as the engine compiles equals NumPy's two roundings, not the fused result:
    a = 1 + 2**-k, b = 1 - 2**-k, c = 1 with 2k > p: RN(a*b) = 1, so a*b - c = 0, while an FMA gives
    -2**-2k.  The machine code of a*b - c and of the engine's two-products and 2Sum has no FMA
    instruction (the host's instruction set is the target: x86-64 with FMA on current machines)."""
    from numba import types

    from expansions.engine import dw as K  # the twins' two-products compiled (the engine's scalar ones)

    k = 30 if dtype == "float64" else 13
    t = np.dtype(dtype).type
    a, b, c = t(1 + 2.0**-k), t(1 - 2.0**-k), t(1)
    assert Fraction(float(a)) * Fraction(float(b)) - Fraction(float(c)) == -(Fraction(2) ** (-2 * k))  # fused
    f = _compiled(lambda a, b, c: a * b - c)
    got = f(a, b, c)
    assert f.nopython_signatures[0].return_type == getattr(types, dtype)  # computed in the terms' type
    assert got == a * b - c == 0
    for py in (lambda a, b, c: a * b - c, K._two_prod64.py_func, K._two_prod32.py_func):
        g = _compiled(py)
        g(*(a, b, c)[: py.__code__.co_argcount])
        asm = g.inspect_asm(g.signatures[0]).lower()
        assert "mul" in asm  # the products are there, as separate instructions
        assert not any(op in asm for op in ("vfmadd", "vfmsub", "vfnmadd", "vfnmsub")), asm


@pytest.mark.parametrize("dtype", DTYPES)
def test_subnormals_kept(dtype):
    """Subnormal terms and results are computed, not flushed to zero."""
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([[3 * tiny, 0.0], [np.finfo(dtype).tiny, -tiny]], dtype=dtype)
    y = np.array([[tiny, 0.0], [-np.finfo(dtype).tiny / 2, 0.0]], dtype=dtype)
    s = E.add_safe(x, y, 2)
    assert s[0, 0] == 4 * tiny and s[1, 0] == np.finfo(dtype).tiny / 2 - tiny
    assert_same(s, TK.add_safe(x, y, 2), x, y)
    e = np.finfo(dtype).minexp - np.finfo(dtype).nmant  # the smallest subnormal is 2**e = 2**(e // 2) * 2**(e - e // 2)
    a = np.array([[2.0 ** (e // 2), 0.0]], dtype=dtype)
    b = np.array([[2.0 ** (e - e // 2), 0.0]], dtype=dtype)
    p = E.mul_truncated(a, b, 2)
    assert p[0, 0] == tiny
    assert_same(p, TK.mul_truncated(a, b, 2), a, b)
    f = _compiled(lambda u, v: u - v)
    t = np.dtype(dtype).type
    assert f(t(1.5) * np.finfo(dtype).tiny, np.finfo(dtype).tiny) == np.finfo(dtype).tiny / 2


# ---------------------------------------------------------------------------------------------
# the package's interface


def test_available():
    assert E.available() and E.unavailable_reason() is None
    for name in ("add_safe", "add_fast", "sub_safe", "sub_fast", "mul_truncated", "renormalize", "negate",
                 "reciprocal", "div", "sqrt", "newton_reciprocal", "newton_div", "newton_sqrt", "reduce",
                 "reduce_pass"):
        assert callable(getattr(E, name)), name
    with pytest.raises(AttributeError):
        E.no_such_function  # noqa: B018


def test_bad_input():
    x = np.zeros((3, 2))
    with pytest.raises(TypeError):
        E.add_safe(x, x.astype(np.float32), 2)
    with pytest.raises(TypeError):
        E.mul_truncated(x.astype(np.int64), x, 2)
    with pytest.raises(ValueError):
        E.add_safe(x, np.zeros((4, 2)), 2)
    with pytest.raises(ValueError):
        E.renormalize(np.zeros(3), 2)
    with pytest.raises(ValueError):
        E.add_fast(x, x, 33)
    with pytest.raises(ValueError):
        E.reduce(x, 1, 4, 2)  # addresses element 3 of 3
    with pytest.raises(ValueError):
        E.reduce_pass(x, 1, 3, 1, (3, 0, 1), 2, 3)  # chunk not a power of two


def test_non_contiguous_input():
    x, y = draw(4, "float64", 6)
    xf = np.asfortranarray(x)
    assert_same(E.add_safe(xf, y[:, ::-1], 4), TK.add_safe(x, np.ascontiguousarray(y[:, ::-1]), 4), x, y)


def test_without_numba():
    """Where numba cannot be imported, available() is False with the reason, and the functions raise
    ImportError with it (a fresh process in which ``import numba`` fails)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['numba'] = None\n"
        "import expansions.engine as E\n"
        "assert not E.available() and 'numba' in E.unavailable_reason(), E.unavailable_reason()\n"
        "try:\n    E.add_safe\nexcept ImportError as exc:\n    assert 'numba' in str(exc)\n"
        "else:\n    raise AssertionError('no ImportError')\n"
        "print('ok')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


# ---------------------------------------------------------------------------------------------
# the fused engine (expansions.engine.fused): each operation and its renormalization in one pass,
# blocks of expansions on SIMD lanes


FAST_RS = (3, 4, 5, 8, 16, 32)
RENORMALIZED = {  # engine function with renormalize=True: its specification on the twins
    "add_safe": lambda x, y, R: TK.renormalize(TK.add_safe(x, y, R), R),
    "add_fast": lambda x, y, R: TK.renormalize(TK.add_fast(x, y, R), R),
    "sub_safe": lambda x, y, R: TK.renormalize(TK.sub_safe(x, y, R), R),
    "sub_fast": lambda x, y, R: TK.renormalize(TK.sub_fast(x, y, R), R),
    "mul_truncated": lambda x, y, R: TK.renormalize(TK.mul_truncated(x, y, R), R),
}


def newton_renormalized(f, *args):
    """The dispatch's Newton renormalizer applied to the twin ``f``'s result (its specification)."""
    from expansions import backends, dispatch

    return dispatch._renormalize_keeping_zeros(backends.cpu, f(*args), args[-1])


def fused_cases(R, dtype, seed):
    x0, y0 = draw(R, dtype, seed)
    rng = np.random.default_rng([seed, R])
    cases = list(variants(x0, y0, R))
    cases += [(f"sizes {n},{m}", resize(x0, n, rng), resize(y0, m, rng)) for n, m in sizes(R)]
    return cases


def check_fused_binary(R, dtype, seed=11):
    for label, x, y in fused_cases(R, dtype, seed):
        for name, spec in RENORMALIZED.items():
            got = run(lambda *a: getattr(E, name)(*a, renormalize=True), x, y, R)  # noqa: B023
            assert_same(got, run(spec, x, y, R), x, y, what=str((name, "renormalize=True", label)))


def check_fused_newton(R, dtype, seed=12):
    x0, y0 = draw(R, dtype, seed, "div")
    x1 = x0.copy()
    x1[::5] = 0
    x1[1::10] = -x1[1::10]
    cases = list(variants(x0, y0, R)) + [("zeros", x1, np.ascontiguousarray(x1[::-1]))]
    for label, x, y in cases:
        got = run(lambda a, b: E.newton_div(a, b, R, renormalize=True), x, y)
        assert_same(got, run(newton_renormalized, TN.div, x, y, R), x, y, what=str(("div", label)))
        got = run(lambda a: E.newton_reciprocal(a, R, renormalize=True), y)
        assert_same(got, run(newton_renormalized, TN.reciprocal, y, R), y, what=str(("reciprocal", label)))
        got = run(lambda a: E.newton_sqrt(a, R, renormalize=True), x)
        assert_same(got, run(newton_renormalized, TN.sqrt, x, R), x, what=str(("sqrt", label)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", FAST_RS)
def test_fused_binary_bits(R, dtype):
    """add/sub (safe, fast) and mul with renormalize=True: the twin followed by the twin's renormalize,
    bit for bit, on the families, non-finite terms, overflow and operands of other sizes."""
    check_fused_binary(R, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (3, 4, 8))
def test_fused_newton_bits(R, dtype):
    """div, reciprocal, sqrt with renormalize=True: the twin followed by the dispatch's Newton
    renormalizer (signed zero results kept), bit for bit."""
    check_fused_newton(R, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", [R for R in range(3, 33) if R not in FAST_RS])
def test_fused_every_R(R, dtype):
    """Every R of 3..32 (the fast tests take 3, 4, 5, 8, 16, 32): the kernels raw and renormalized,
    the renormalization and the Newton operations, bit for bit."""
    x, y = draw(R, dtype, 13)
    for name in BINARY:
        assert_same(run(getattr(E, name), x, y, R), run(getattr(TK, name), x, y, R), x, y, what=name)
    assert_same(run(E.renormalize, np.concatenate([x, y], 1), R), run(TK.renormalize, np.concatenate([x, y], 1), R))
    check_fused_binary(R, dtype)
    check_fused_newton(R, dtype)


def _tie_rows(dtype, R, rng):
    """Rows of R terms built to exercise the renormalization's stable sort: equal magnitudes of both
    signs (±a, ±0) in every order, NaN and infinities among them, subnormals, zeros inside, and
    random permutations of valid expansions."""
    t = np.dtype(dtype).type
    tiny = np.finfo(dtype).smallest_subnormal
    pool = np.array([1.5, -1.5, 0.0, -0.0, 2.0**-30, -(2.0**-30), 3 * tiny, -3 * tiny, tiny, 1.0, -1.0], dtype=dtype)
    rows = [rng.choice(pool, size=R) for _ in range(40)]
    rows += [np.array([1.0, -1.0] + [0.0] * (R - 2), dtype=dtype),
             np.array([-0.0, 0.0] * (R // 2) + [0.0] * (R % 2), dtype=dtype)]
    special = rng.choice(pool, size=(12, R))
    special[np.arange(12), rng.integers(0, R, 12)] = rng.choice(np.array([np.nan, np.inf, -np.inf], dtype=dtype), 12)
    rows += list(special)
    valid = draw(R, dtype, 14)[0][:24]
    rows += list(rng.permuted(valid, axis=1))
    return np.ascontiguousarray(np.array(rows, dtype=dtype)), t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (3, 4, 8, 16))
def test_fused_sort_ties(R, dtype):
    """The renormalization's sort is NumPy's stable argsort by decreasing magnitude with NaN last: ties
    ±a and ±0 keep their order (the transposition network swaps only strictly smaller keys), on
    their own, inside sums (renormalize=True), and beyond R input terms."""
    rng = np.random.default_rng(R)
    x, _ = _tie_rows(dtype, R, rng)
    assert_same(run(E.renormalize, x, R), run(TK.renormalize, x, R), x)
    long = np.ascontiguousarray(np.concatenate([x, x[::-1]], axis=1))  # 2R terms into R
    assert_same(run(E.renormalize, long, R), run(TK.renormalize, long, R), long)
    y = np.ascontiguousarray(rng.permuted(x, axis=0))
    for name, spec in RENORMALIZED.items():
        got = run(lambda a, b: getattr(E, name)(a, b, R, renormalize=True), x, y)  # noqa: B023
        assert_same(got, run(spec, x, y, R), x, y, what=name)


@pytest.mark.parametrize("count", (1, 7, 9, 17, 4099))
def test_fused_block_sizes(count):
    """Counts that are not a multiple of the block (8 float64 / 16 float32 expansions), and one above
    the parallel threshold (chunks of blocks over the cores): the twins' bits, nothing written past
    the end of a partial block."""
    from expansions.engine import fused

    assert fused.SERIAL_BELOW < 4099
    for dtype in DTYPES:
        x, y = mixed_pairs(max(count, 8), 4, dtype, np.random.default_rng(count))
        x, y = np.ascontiguousarray(x[:count]), np.ascontiguousarray(y[:count])
        for name, spec in RENORMALIZED.items():
            assert_same(run(lambda a, b: getattr(E, name)(a, b, 4, renormalize=True), x, y),  # noqa: B023
                        run(spec, x, y, 4), x, y, what=(name, dtype))
        assert_same(run(E.mul_truncated, x, y, 4), run(TK.mul_truncated, x, y, 4), x, y)
        got = run(lambda a, b: E.newton_div(a, b, 3, renormalize=True), x, y)
        assert_same(got, run(newton_renormalized, TN.div, x, y, 3), x, y)
    assert E.add_safe(np.zeros((0, 3)), np.zeros((0, 3)), 3, renormalize=True).shape == (0, 3)


def _dekker_differs_from_fma(a, b):
    """Whether the twin's Dekker product error of float64 a*b differs from RN(a*b - RN(a*b)) (an FMA)."""
    from expansions.cpu.eft import two_prod
    from expansions.formats import format_of
    from expansions.reference import fp

    p, e = two_prod(np.array([a]), np.array([b]))
    fma = fp.fma(fp.from_float(a), fp.from_float(b), fp.neg(fp.from_float(float(p[0]))), format_of("float64"))
    return float(fp.to_float(fma)) != float(e[0]) or np.signbit(fp.to_float(fma)) != np.signbit(e[0])


def test_fused_fma_range():
    """The multiplication takes the FMA only where it gives the twin's (Dekker) product error: on
    products whose error falls below the subnormal range (where the two differ, checked exactly here)
    and near the overflow threshold (the twin's scaled splitting), the engine has the twin's bits;
    an engine taking the FMA everywhere fails this test."""
    rng = np.random.default_rng(5)
    pairs = []
    while len(pairs) < 8:  # tiny products whose FMA and Dekker errors differ
        a = float(np.ldexp(rng.uniform(1, 2), int(rng.integers(-560, -500))))
        b = float(np.ldexp(rng.uniform(1, 2), int(rng.integers(-560, -500))))
        if _dekker_differs_from_fma(a, b):
            pairs.append((a, b))
    R = 4
    x = np.zeros((len(pairs) * 2, R))
    y = np.zeros((len(pairs) * 2, R))
    for i, (a, b) in enumerate(pairs):
        x[i] = [1.0, a, 0.0, 0.0]  # the product x_1 * y_1 is a * b
        y[i] = [1.0, b, 0.0, 0.0]
        x[len(pairs) + i] = [a * 2.0**-40, 0.0, 0.0, 0.0]  # x_0 * y_0 below 2**-1040
        y[len(pairs) + i] = [b, 0.0, 0.0, 0.0]
    for R in (3, 4):
        assert_same(run(E.mul_truncated, x, y, R), run(TK.mul_truncated, x, y, R), x, y)
        assert_same(run(lambda a, b: E.mul_truncated(a, b, R, renormalize=True), x, y),  # noqa: B023
                    run(RENORMALIZED["mul_truncated"], x, y, R), x, y)
    big = np.array([[2.0**1000 * 1.3, 2.0**947, 0.0], [2.0**996, -(2.0**943), 2.0**890],
                    [2.0**-1000, 2.0**-1060, 0.0]])
    small = np.array([[2.0**20 * 1.7, 2.0**-33, 0.0], [2.0**-3 * 1.1, 2.0**-57, 0.0],
                      [2.0**-30 * 1.9, 2.0**-85, 2.0**-140]])
    for a, b in ((big, small), (small, big)):
        assert_same(run(E.mul_truncated, a, b, 3), run(TK.mul_truncated, a, b, 3), a, b)


def test_fused_hypothesis():
    """Random bit patterns (hypothesis: any finite or special float64/float32, subnormals and signed
    zeros included) through add, sub and mul with renormalize=True and the renormalization."""
    hyp = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    @hyp.settings(max_examples=40, deadline=None, derandomize=True)
    @hyp.given(st.sampled_from(DTYPES), st.integers(3, 6), st.data())
    def check(dtype, R, data):
        width = 64 if dtype == "float64" else 32
        terms = st.lists(st.floats(width=width, allow_nan=True, allow_infinity=True), min_size=R, max_size=R)
        rows = data.draw(st.lists(terms, min_size=1, max_size=11))
        rows2 = data.draw(st.lists(terms, min_size=len(rows), max_size=len(rows)))
        x = np.array(rows, dtype=dtype)
        y = np.array(rows2, dtype=dtype)
        for name in ("add_safe", "sub_fast", "mul_truncated"):
            got = run(lambda a, b: getattr(E, name)(a, b, R, renormalize=True), x, y)  # noqa: B023
            assert_same(got, run(RENORMALIZED[name], x, y, R), x, y, what=name)
        assert_same(run(E.renormalize, x, R), run(TK.renormalize, x, R), x)

    check()


_ASM_SCRIPT = r"""
import json, re
from numba import types
from expansions.engine import arithmetic, simd
ws = types.Array(types.float64, 1, "C")
i = types.int64
vec = simd.Vec(types.float64, simd.LANES[64])
sigs = {"add_safe_block": (ws,) + (i,) * 8, "_product_step": (ws, i, i, vec, i, i, i, i, i, i, i),
        "propagate_block": (ws,) + (i,) * 6}  # the workspace, rows and sizes; the multiplier y_i
out = {}
for name, sig in sigs.items():
    fn = getattr(arithmetic, name)
    fn.compile(sig)
    asm = fn.inspect_asm(fn.signatures[-1])
    out[name] = {r: {op: len(re.findall(op + r"[^\n]*%" + r, asm)) for op in ("vaddpd", "vsubpd", "vfm\\w*pd")}
                 for r in ("zmm", "ymm", "xmm")}
import llvmlite.binding as ll
out["features"] = ll.get_host_cpu_features().flatten()
print(json.dumps(out))
"""


def test_fused_vectorized(tmp_path):
    """The hot loops of the addition and the multiplication (the R = 4 public operations run them: R is
    a runtime argument) are vector code: compiled afresh (an empty numba cache: cached code cannot
    be inspected), the assembly of the safe addition's lane steps, the two-product step and the
    propagation holds packed float64 additions on 512-bit registers where the host has AVX-512 (256
    with AVX, 128 otherwise), and the two-product packed FMA instructions where the host has FMA; so
    vectorization cannot silently regress."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", _ASM_SCRIPT], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout.strip().splitlines()[-1])
    features = res.pop("features")
    reg = "zmm" if "+avx512f" in features else ("ymm" if "+avx" in features else "xmm")
    for name, counts in res.items():
        assert counts[reg]["vaddpd"] + counts[reg]["vsubpd"] > 0, (name, reg, counts)
    if "+fma" in features:
        assert res["_product_step"][reg]["vfm\\w*pd"] > 0, res["_product_step"]


def test_engine_backend_fuses():
    """The engine backend renormalizes in its kernels (one pass per public operation), and the public
    operators give the twins' bits on it."""
    import expansions as ex
    from expansions import backends

    assert backends.engine_backend().renormalizes_in_kernel
    x0, y0 = draw(4, "float64", 16)
    y0 = np.where(y0[:, :1] == 0, 1.0, y0)
    results = {}
    for cpu in ("twins", "engine"):
        backends.set_cpu_backend(cpu)
        try:
            x, y = ex.from_terms(x0), ex.from_terms(y0)
            with np.errstate(all="ignore"):
                results[cpu] = [(x + y).terms, (x - y).terms, (x * y).terms, (x / y).terms,
                                ex.sqrt(abs(x)).terms, ex.add(x, y, method="fast").terms]
        finally:
            backends.set_cpu_backend(None)
    for got, want in zip(results["engine"], results["twins"]):
        assert_same(got, want, x0, y0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_simd_fma(dtype):
    """``simd.fma`` (the engine's ``llvm.fma``, also for scalars) rounds a*b + c once: with
    a = 1 + 2**-k, b = 1 - 2**-k, c = -1 (2k > p) it returns the exact -2**-2k where a*b - c rounds
    to 0; on vectors, lane by lane."""
    from numba import njit

    from expansions.engine.simd import LANES, fma, vload, vstore

    k = 30 if dtype == "float64" else 13
    t = np.dtype(dtype).type
    a, b, c = t(1 + 2.0**-k), t(1 - 2.0**-k), t(-1)
    assert njit(lambda a, b, c: fma(a, b, c))(a, b, c) == -(2.0 ** (-2 * k))

    @njit
    def lanes(x, y, z, out):
        vstore(out, 0, fma(vload(x, 0), vload(y, 0), vload(z, 0)))

    L = LANES[np.dtype(dtype).itemsize * 8]
    out = np.zeros(L, dtype)
    lanes(np.full(L, a), np.full(L, b), np.full(L, c), out)
    assert (out == -(2.0 ** (-2 * k))).all() and out.dtype == np.dtype(dtype)


def test_limits_are_the_formats_and_the_twins():
    """The engine's named bit layouts and exponent limits (engine/limits.py, derived from
    expansions.formats) are the hardware formats' (NumPy's finfo) and the twin two-product's constants."""
    for layout, dt in ((EL.LAYOUT64, np.float64), (EL.LAYOUT32, np.float32)):
        exp_mask, magnitude, shift, field, p = layout
        fi = np.finfo(dt)
        assert (shift, p, field) == (fi.nmant, fi.nmant + 1, (1 << fi.nexp) - 1)
        assert exp_mask == int(np.array(np.inf, dt).view(f"u{fi.bits // 8}"))
        assert magnitude == (1 << (fi.bits - 1)) - 1  # every bit but the sign
    assert 2.0**EL.TINY_EXPONENT64 == np.finfo(np.float64).smallest_subnormal
    assert 2.0**EL.TINY_EXPONENT32 == np.finfo(np.float32).smallest_subnormal
    assert (EL.TWO_PROD_BIG, EL.TWO_PROD_DOWN, EL.TWO_PROD_UP, EL.SPLITTER64) == (TE._BIG, TE._DOWN, TE._UP,
                                                                                 TE._SPLITTER64)
    # the FMA test's biased limits: a factor below 2**995, exponent sums in [-966, 1000]
    biased = int(np.array(np.nextafter(2.0**995, 0)).view(np.uint64)) >> 52
    assert EL.BIASED_BELOW_BIG == biased == (int(np.array(2.0**995).view(np.uint64)) >> 52) - 1
    assert (EL.FMA_BIASED_SUM_MIN, EL.FMA_BIASED_SUM_MAX) == (-966 + 2 * 1023, 1000 + 2 * 1023)


def test_stale_cache_is_cleared_when_the_sources_change(tmp_path, monkeypatch):
    """The engine's functions inline each other across modules, which numba's per-file check misses:
    a stamp of every source sits beside the cache, and on a mismatch the engine's cache files go
    (another package's stay); with the stamp current nothing is removed."""
    monkeypatch.setattr(numba_config, "CACHE_DIR", str(tmp_path))
    EK.clear_stale_cache()
    (folder,) = {p.parent for p in tmp_path.rglob("expansions-engine.stamp")}
    assert (folder / "expansions-engine.stamp").read_text() == EK.source_stamp()
    ours, theirs = folder / "fused.operation_block-900.py311.nbi", folder / "other.f-1.py311.nbi"
    ours.write_text("x")
    theirs.write_text("x")
    assert not EK.clear_stale_cache() and ours.exists()  # the stamp is current: kept
    (folder / "expansions-engine.stamp").write_text("an older source")
    assert EK.clear_stale_cache()
    assert not ours.exists() and theirs.exists()
    assert (folder / "expansions-engine.stamp").read_text() == EK.source_stamp()
