"""The default matrix product keeps its componentwise bound on badly scaled operands: every entry of
``a @ b`` (and of ``dot``, matrix-vector products, the twins' and the engine's slice steps, Dask's
products and the solves built on them) is within the R-term level of sum_k |a_ik b_kj|, whatever the
exponents of the entries of a row or a column, measured against exact rational products.

The first table of the user report that found the loss (48 x 48 operands whose entries have
exponents uniform in [-k, k]: the slice product returned entries at float64 accuracy from k = 80 and
zeros for entries of 1.7e50 at k = 150) is :func:`test_exponent_span_table`."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import expansions as ex
from expansions import bounds, engine, slices
from expansions import reduce as red
from expansions.cpu import slices as spec
from expansions.formats import FLOAT32, FLOAT64, format_of

needs_engine = pytest.mark.skipif(not engine.available(), reason=str(engine.unavailable_reason()))


def spread_terms(rng, shape, R, dtype, row_exp, col_exp, jitter: int = 0):
    """Full-precision R-term expansions of ``dtype`` whose entry (i, j) has the leading exponent
    row_exp[i] + col_exp[j] + a uniform jitter in [-jitter, jitter], random signs and mantissas,
    every term below the one before by p bits or more (ulp-nonoverlapping, renormalized)."""
    fmt = format_of(dtype)
    e = np.add.outer(np.asarray(row_exp), np.asarray(col_exp))
    if jitter:
        e = e + rng.integers(-jitter, jitter + 1, size=shape)
    t = np.zeros(shape + (R,), dtype=np.float64)
    t[..., 0] = rng.uniform(1, 2, size=shape) * np.ldexp(1.0, e) * rng.choice([-1.0, 1.0], size=shape)
    for r in range(1, R):
        t[..., r] = rng.uniform(-0.5, 0.5, size=shape) * np.ldexp(np.abs(t[..., r - 1]), -fmt.p)
    t = t.astype(dtype)
    return ex.renormalize(ex.from_terms(t))


def worst_componentwise(A: ex.ExpansionArray, B: ex.ExpansionArray, C: ex.ExpansionArray,
                        entries=None, absolute: Fraction = Fraction(0)) -> Fraction:
    """max over the entries (all, or the (i, j) pairs given) of (|C_ij - exact_ij| - absolute) /
    sum_k |a_ik b_kj|, exactly (0 where that sum is 0 and C_ij is exact): the relative error beyond an
    absolute allowance (the bounds' underflow terms)."""
    a = np.asarray(A.to_fraction(), dtype=object).reshape(A.shape)
    b = np.asarray(B.to_fraction(), dtype=object).reshape(B.shape)
    c = np.asarray(C.to_fraction(), dtype=object).reshape(C.shape)
    if a.ndim == 1:
        a = a[None, :]
    if b.ndim == 1:
        b, c = b[:, None], c.reshape(-1, 1) if c.ndim == 1 else c
    if c.ndim == 1:
        c = c[None, :]
    if entries is None:
        entries = [(i, j) for i in range(c.shape[0]) for j in range(c.shape[1])]
    worst = Fraction(0)
    for i, j in entries:
        exact = sum((a[i, k] * b[k, j] for k in range(a.shape[1])), Fraction(0))
        total = sum((abs(a[i, k] * b[k, j]) for k in range(a.shape[1])), Fraction(0))
        err = max(abs(c[i, j] - exact) - absolute, Fraction(0))
        if total == 0:
            assert err == 0
            continue
        worst = max(worst, err / total)
    return worst


def path(A: ex.ExpansionArray, B: ex.ExpansionArray) -> str:
    """The method "auto" takes for A @ B (2-D), as :func:`expansions.reduce._product` decides it."""
    (m, k), n = A.shape, B.shape[1]
    try:
        extra = slices.componentwise_extra(A.terms, B.terms, A.nterms, A.dtype)
    except ValueError:
        extra = None
    return red.choose_method(m, k, n, A.nterms, A.dtype, "auto", extra)


def bound_of(A: ex.ExpansionArray, B: ex.ExpansionArray) -> Fraction:
    """The componentwise bound of the path A @ B takes: the R-term level on the slice path,
    bounds.dot on the element-wise path (whose Prop. IV.2 constant is larger at small R)."""
    fmt = format_of(A.dtype)
    if path(A, B) == "slices":
        return level(A.nterms, fmt)
    return bounds.dot(A.shape[1], A.nterms, fmt.p).value


def level(R: int, fmt) -> Fraction:
    """The slice path's componentwise level with its final rounding (bounds.matmul's second member)."""
    L = bounds.componentwise_level(R, fmt)
    t = Fraction(2) ** (1 - fmt.p)
    rho = t**R / (1 - t) / (1 - bounds.tail_ratio(fmt.p))
    return L + rho * (1 + L)


# ----------------------------------------------------------------------------------------------
# the first table of the report: exponents uniform in [-k, k], the R-term level at every span


@pytest.mark.parametrize("R", [2, 4])
@pytest.mark.parametrize("span", [5, 20, 40, 80, 150, 300, 500])
def test_exponent_span_table(R, span):
    rng = np.random.default_rng(1000 * R + span)
    n = 48
    A = spread_terms(rng, (n, n), R, np.float64, np.zeros(n, int), np.zeros(n, int), jitter=span)
    B = spread_terms(rng, (n, n), R, np.float64, np.zeros(n, int), np.zeros(n, int), jitter=span)
    C = A @ B
    entries = [tuple(rng.integers(n, size=2)) for _ in range(48)]
    worst = worst_componentwise(A, B, C, entries)
    assert worst <= level(R, FLOAT64), (span, math.log2(worst))
    assert np.isfinite(C.terms).all()


def test_entry_returned_as_zero_is_back():
    """At k = 150 the slice product returned 0 for entries of magnitude 1e50 (their products lay below
    the rows' and columns' last digits): every entry is now within the R-term level, so none of them
    is 0 unless its exact value is."""
    rng = np.random.default_rng(150)
    n = 64
    A = spread_terms(rng, (n, n), 2, np.float64, np.zeros(n, int), np.zeros(n, int), jitter=150)
    B = spread_terms(rng, (n, n), 2, np.float64, np.zeros(n, int), np.zeros(n, int), jitter=150)
    C = A @ B
    assert (C.terms[..., 0] != 0).all()
    entries = [(i, j) for i in range(0, n, 7) for j in range(0, n, 5)]
    assert worst_componentwise(A, B, C, entries) <= level(2, FLOAT64)


# ----------------------------------------------------------------------------------------------
# structured scalings: graded, row and column scaled, Vandermonde; both term types


def _structured(kind, rng, n, R, dtype, span):
    z = np.zeros(n, int)
    if kind == "graded":
        g = np.round(np.linspace(-span, span, n)).astype(int)
        return spread_terms(rng, (n, n), R, dtype, g, z), spread_terms(rng, (n, n), R, dtype, z, g[::-1])
    if kind == "rows and columns":
        r, c = rng.integers(-span, span + 1, n), rng.integers(-span, span + 1, n)
        return spread_terms(rng, (n, n), R, dtype, r, c), spread_terms(rng, (n, n), R, dtype, -c, r)
    if kind == "inner dimension":  # A's columns and B's rows scaled oppositely: products balanced
        c = rng.integers(-span, span + 1, n)
        return spread_terms(rng, (n, n), R, dtype, z, c), spread_terms(rng, (n, n), R, dtype, -c, z)
    if kind == "vandermonde":  # x_i^j for x_i spread over binades, rounded to R terms from exact powers
        x = np.ldexp(rng.uniform(1, 2, n), rng.integers(-span // n - 1, span // n + 2, n))
        V = ex.array([[Fraction(float(v)) ** j for j in range(n)] for v in x], terms=R, dtype=dtype)
        return V, spread_terms(rng, (n, n), R, dtype, z, z, jitter=span // 4)
    raise ValueError(kind)


KINDS = ["graded", "rows and columns", "inner dimension", "vandermonde"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("R, dtype, span", [(2, np.float64, 120), (3, np.float64, 300), (4, np.float64, 60),
                                            (2, np.float32, 40), (3, np.float32, 30)])
def test_structured_scalings(kind, R, dtype, span):
    rng = np.random.default_rng(7)
    n = 24
    A, B = _structured(kind, rng, n, R, dtype, span)
    C = A @ B
    assert worst_componentwise(A, B, C) <= level(R, format_of(dtype))
    v = B[:, 3]
    assert worst_componentwise(A, v, A @ v) <= level(R, format_of(dtype))  # matrix times vector
    assert worst_componentwise(A, B, ex.dot(A, B)) <= level(R, format_of(dtype))


@settings(deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(KINDS), st.sampled_from([2, 3, 4]),
       st.sampled_from([np.float64, np.float32]), st.integers(2, 16), st.integers(0, 300))
def test_structured_scalings_property(seed, kind, R, dtype, n, span):
    """The structured scalings (graded, rows and columns, inner dimension, Vandermonde) at any size,
    term count and span the format holds: every entry of ``a @ b`` and of a matrix-vector product
    within the bound of its path, exactly."""
    fmt = format_of(dtype)
    span = min(span, 30 if dtype == np.float32 else 300)  # products within the range (no overflow)
    rng = np.random.default_rng(seed)
    A, B = _structured(kind, rng, n, R, dtype, span)
    absolute = max(bounds.dot_underflow_term(n, R, fmt), R * fmt.eta / 2)  # terms below the normal range
    assert worst_componentwise(A, B, A @ B, absolute=absolute) <= bound_of(A, B)
    v = B[:, n // 2]
    assert worst_componentwise(A, v, A @ v, absolute=absolute) <= bound_of(A, B[:, n // 2:n // 2 + 1])


@settings(deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([2, 3, 4]), st.sampled_from([np.float64, np.float32]),
       st.integers(2, 20), st.integers(1, 12), st.integers(0, 400))
@example(4292, 3, np.float64, 2, 12, 361)  # found in a fresh clone: with a span cap of 450 a product overflowed
def test_random_spans_property(seed, R, dtype, m, n, span):
    """Any shape, term count and span up to the format's range (float32: its smaller range)."""
    fmt = format_of(dtype)
    # products within the range (no overflow): an entry of A or B reaches 2^(1.5 span) (its row or column
    # scale and the jitter), a product 2^(3 span), a sum of 12 of them 4 bits more
    span = min(span, 36 if dtype == np.float32 else 320)
    rng = np.random.default_rng(seed)
    A = spread_terms(rng, (m, n), R, dtype, rng.integers(-span, span + 1, m), np.zeros(n, int), jitter=span // 2)
    B = spread_terms(rng, (n, 3), R, dtype, np.zeros(n, int), rng.integers(-span, span + 1, 3), jitter=span // 2)
    absolute = max(bounds.dot_underflow_term(n, R, fmt), R * fmt.eta / 2)  # terms below the normal range
    assert worst_componentwise(A, B, A @ B, absolute=absolute) <= bound_of(A, B)


# ----------------------------------------------------------------------------------------------
# the plan: extra bits, same bits on every path


def test_deficit_is_exact_and_the_plan_deterministic():
    """componentwise_deficit is a function of the exponents only (exact: powers of two summed
    without rounding), so a BLAS that sums in another order (the exact integer product here) gives the
    same deficit, the same plan and the same bits."""
    rng = np.random.default_rng(3)
    A = spread_terms(rng, (30, 40), 2, np.float64, np.zeros(30, int), np.zeros(40, int), jitter=90)
    B = spread_terms(rng, (40, 20), 2, np.float64, np.zeros(40, int), np.zeros(20, int), jitter=90)
    k = slices.componentwise_deficit(A.terms, B.terms)
    # the deficit from its definition, in exact rationals
    ea = [[math.frexp(float(t))[1] if t else None for t in row] for row in A.terms[..., 0]]
    eb = [[math.frexp(float(t))[1] if t else None for t in row] for row in B.terms[..., 0].T]
    Ea = [max(e for e in row if e is not None) + 1 for row in ea]
    Eb = [max(e for e in row if e is not None) + 1 for row in eb]
    W = (56 - 40 .bit_length()) // 2
    want = None
    for i in range(30):
        for j in range(20):
            ds = [(Ea[i] - ea[i][q] + 1, Eb[j] - eb[j][q] + 1) for q in range(40)]
            s = sum(Fraction(1, 2 ** (d1 + d2)) for d1, d2 in ds if d1 <= W and d2 <= W)
            need = (1 - math.frexp(float(s))[1]) if s else min(d1 + d2 for d1, d2 in ds)
            want = need if want is None else max(want, need)
    assert k == want


def test_extra_bits_grow_with_the_spread_and_fall_back_beyond_the_range():
    assert bounds.componentwise_extra(48, 2, FLOAT64, 0) <= bounds.componentwise_extra(48, 2, FLOAT64, 100)
    assert slices.plan(48, 2, np.float64, extra=bounds.componentwise_extra(48, 2, FLOAT64, 300)).gemms > \
        slices.plan(48, 2, np.float64).gemms
    with pytest.raises(ValueError):
        bounds.componentwise_extra(48, 2, FLOAT64, 3000)
    with pytest.raises(ValueError):
        bounds.componentwise_extra(48, 4, FLOAT32, 400)
    # the plan meets the inequality it was chosen for
    for R, fmt, k in [(2, FLOAT64, 0), (2, FLOAT64, 57), (4, FLOAT64, 200), (3, FLOAT32, 10)]:
        e = bounds.componentwise_extra(100, R, fmt, k)
        sc = bounds.default_slice_scheme(100, R, fmt, e)
        pl = bounds.modular_plan(100, R, fmt, e) if sc == "modular" else bounds.slice_plan(100, R, fmt, e)
        c = 1 - Fraction(2) ** (1 - fmt.p) / (1 - Fraction(2) ** (1 - fmt.p))
        assert 100 * pl.truncation <= bounds.componentwise_level(R, fmt) * c * c * Fraction(1, 2**k)


def test_explicit_slices_refuses_a_spread_it_cannot_hold():
    rng = np.random.default_rng(4)
    c = np.array([-1000, 1000] * 4)  # A's columns and B's rows scaled oppositely: products near 1
    A = spread_terms(rng, (8, 8), 2, np.float64, np.zeros(8, int), c)
    B = spread_terms(rng, (8, 8), 2, np.float64, -c, np.zeros(8, int))
    with pytest.raises(ValueError, match="span too many binades"):
        ex.matmul(A, B, method="slices")
    C = ex.matmul(A, B)  # auto: the element-wise path
    assert path(A, B) == "elementwise"
    assert np.array_equal(C.terms, ex.matmul(A, B, method="elementwise").terms)
    assert worst_componentwise(A, B, C) <= bounds.dot(8, 2, 53).value


@needs_engine
@pytest.mark.parametrize("R, dtype", [(2, np.float64), (4, np.float64), (2, np.float32)])
def test_engine_and_specification_steps_agree_on_badly_scaled_operands(R, dtype):
    rng = np.random.default_rng(11)
    span = 40 if dtype == np.float32 else 200
    A = spread_terms(rng, (20, 33), R, dtype, np.zeros(20, int), np.zeros(33, int), jitter=span)
    B = spread_terms(rng, (33, 9), R, dtype, np.zeros(33, int), np.zeros(9, int), jitter=span)
    twin = slices._Steps(spec.split, spec.fold, spec.finish, ex.backends.cpu.renormalize)
    with np.errstate(all="ignore"):
        a = slices.matmul_terms(A.terms, B.terms, R, dtype)
        b = slices.matmul_terms(A.terms, B.terms, R, dtype, steps=twin)
    assert slices.componentwise_extra(A.terms, B.terms, R, dtype) > 0
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_auto_weighs_the_extra_products():
    """A badly scaled product needs more slice products; "auto" still takes slices where they win."""
    rng = np.random.default_rng(2)
    n = 64
    A = spread_terms(rng, (n, n), 2, np.float64, np.zeros(n, int), np.zeros(n, int), jitter=100)
    extra = slices.componentwise_extra(A.terms, A.terms, 2, np.float64)
    assert extra > 100
    assert red.choose_method(n, n, n, 2, np.float64, "auto", extra) == "slices"
    assert red.choose_method(n, n, n, 2, np.float64, "auto", None) == "elementwise"


# ----------------------------------------------------------------------------------------------
# what is built on the products


def test_dask_products_keep_the_componentwise_bound():
    exd = pytest.importorskip("expansions.dask")
    rng = np.random.default_rng(9)
    n = 16
    A, B = _structured("rows and columns", rng, n, 2, np.float64, 150)
    C = exd.from_array(A, chunks=(8, 8)) @ exd.from_array(B, chunks=(8, 8))
    assert worst_componentwise(A, B, C.compute()) <= bounds.dot(n, 2, 53).value


@pytest.mark.parametrize("refine", [False, True])
def test_badly_scaled_solve_is_componentwise_backward_stable(refine):
    """A = D1 A0 D2 with D1, D2 powers of two over +-80 binades: the componentwise backward error
    max_i |b - A x|_i / (|A| |x| + |b|)_i at the R-term level (it was 0.51), far below float64's."""
    rng = np.random.default_rng(5)
    n = 40
    d1 = np.ldexp(1.0, rng.integers(-80, 81, n))
    d2 = np.ldexp(1.0, rng.integers(-80, 81, n))
    A = d1[:, None] * rng.standard_normal((n, n)) * d2[None, :]
    a = ex.array(A, terms=2)
    b = ex.array(rng.standard_normal(n) * d1, terms=2)
    x = ex.linalg.solve(a, b, refine=refine)
    Af = [[Fraction(float(v)) for v in row] for row in A]
    X = list(x.to_fraction())
    Bf = list(b.to_fraction())
    worst = max(abs(Bf[i] - sum(Af[i][k] * X[k] for k in range(n)))
                / (sum(abs(Af[i][k] * X[k]) for k in range(n)) + abs(Bf[i])) for i in range(n))
    assert worst < 2.0**-96, float(worst)


def test_badly_scaled_lu_is_componentwise_accurate():
    """lu of D1 A0 D2 (powers of two over +-80 binades), R = 2 and 3: |P L U - A| relative to
    |L| |U| entry by entry, exactly, at the R-term level (the factorization's updates are slice
    products of badly scaled blocks)."""
    rng = np.random.default_rng(21)
    n = 40
    for R in (2, 3):
        d1, d2 = np.ldexp(1.0, rng.integers(-80, 81, (2, n)))
        A = ex.array(d1[:, None] * rng.standard_normal((n, n)) * d2[None, :], terms=R)
        P, L, U = ex.linalg.lu(A)
        a, lo, up = _exact(A), _exact(L), _exact(U)
        pa = [[a[int(np.flatnonzero(P[:, i])[0]), j] for j in range(n)] for i in range(n)]  # P^T A
        worst = max(abs(sum(lo[i, k] * up[k, j] for k in range(n)) - pa[i][j])
                    / sum(abs(lo[i, k] * up[k, j]) for k in range(n)) for i in range(n) for j in range(n))
        assert worst < 2.0 ** -(52 * R - 8), (R, float(worst))


def _exact(x: ex.ExpansionArray):
    return np.asarray(x.to_fraction(), dtype=object).reshape(x.shape)


def test_badly_scaled_inverse_and_cholesky_are_componentwise_accurate():
    """inv of D1 A0 D2 and cholesky of D S D (S symmetric positive definite, D powers of two over
    +-60 binades), R = 2: residuals |A X - I| and |A - L L^T| relative to |A| |X| and |L| |L^T|
    entry by entry, exactly, at the R-term level (NumPy's float64 on the same matrices: about 1e-16)."""
    rng = np.random.default_rng(12)
    n = 40  # the factorizations' updates are slice products
    d1, d2 = np.ldexp(1.0, rng.integers(-60, 61, (2, n)))
    A = ex.array(d1[:, None] * (rng.standard_normal((n, n)) + 4 * np.eye(n)) * d2[None, :], terms=2)
    X = ex.linalg.inv(A)
    a, x = _exact(A), _exact(X)
    worst = max(abs(sum(a[i, k] * x[k, j] for k in range(n)) - (i == j))
                / sum(abs(a[i, k] * x[k, j]) for k in range(n)) for i in range(n) for j in range(n))
    assert worst < 2.0**-96, float(worst)
    G = rng.standard_normal((n, n))
    D = np.ldexp(1.0, rng.integers(-60, 61, n))
    S = ex.array(D[:, None] * (G @ G.T + n * np.eye(n)) * D[None, :], terms=2)
    L = ex.linalg.cholesky(S)
    s, lo = _exact(S), _exact(L)
    worst = max(abs(sum(lo[i, k] * lo[j, k] for k in range(n)) - s[i, j])
                / sum(abs(lo[i, k] * lo[j, k]) for k in range(n)) for i in range(n) for j in range(n))
    assert worst < 2.0**-96, float(worst)


def test_the_well_scaled_shortcut_chooses_the_exact_plan():
    """componentwise_extra skips the exact deficit (a float64 matrix product) where the bound from the
    rows' and columns' spans already needs no extra bits: the same extra bits as the exact deficit on
    every shape, term count and small span (where the shortcut applies) and larger ones (where not)."""
    rng = np.random.default_rng(4)
    for n in (1, 2, 7, 40, 130):
        for R, dtype in ((2, np.float64), (3, np.float64), (4, np.float64), (2, np.float32)):
            for span in (0, 1, 3, 8, 30):
                z = np.zeros(n, int)
                A = spread_terms(rng, (9, n), R, dtype, np.zeros(9, int), z, jitter=span)
                B = spread_terms(rng, (n, 5), R, dtype, z, np.zeros(5, int), jitter=span)
                k = slices.componentwise_deficit(A.terms, B.terms)
                want = bounds.componentwise_extra(n, R, format_of(dtype), k)
                assert slices.componentwise_extra(A.terms, B.terms, R, dtype) == want, (n, R, dtype, span)
