"""Matrix products by exact slices (expansions.slices, the Ozaki scheme): the compiled steps against the
specification bit for bit, the proven componentwise bound against exact rational products, the same
bits for any BLAS thread count, tiling, exact integer products (the emulation of cuBLAS) and the GPU,
the non-finite rule, and the public API (method=, dot, inner, vdot, tensordot)."""

from __future__ import annotations

import ast
import inspect
import math
import os
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from helpers import bits

import expansions as ex
from expansions import backends, bounds, engine, slices
from expansions import reduce as red
from expansions.cpu import slices as spec
from expansions.formats import FLOAT32, FLOAT64, format_of
from expansions.generate import random_terms

ROOT = Path(__file__).resolve().parents[1]
needs_engine = pytest.mark.skipif(not engine.available(), reason=str(engine.unavailable_reason()))


def _fr(x):
    return np.asarray(x.to_fraction(), dtype=object) if isinstance(x, ex.ExpansionArray) else \
        np.asarray(ex.from_terms(x).to_fraction(), dtype=object)


def _scales(terms) -> list:
    """E of every row of a (rows, n, R) terms array, from the definition in bounds.matmul_slices:
    1 + the largest exponent e (2**(e-1) <= |t| < 2**e) of the row's finite nonzero terms, 0 if none."""
    out = []
    for row in np.asarray(terms, dtype=np.float64):
        es = [math.frexp(float(v))[1] for v in row.reshape(-1) if v != 0 and math.isfinite(v)]
        out.append(max(es) + 1 if es else 0)
    return out


def worst_ratio(A: ex.ExpansionArray, B: ex.ExpansionArray, C: ex.ExpansionArray, raise_rows: int = 0,
                scheme: str | None = None) -> Fraction:
    """max over the entries of |C - exact| / bound (bounds.matmul_slices), exactly; an exact value
    beyond the format's largest number (by more than a relative 2**-20) must be +-inf there, one below
    it (by as much) finite.  ``raise_rows`` adds to every scale (for operands that are not
    ulp-nonoverlapping, whose scales the slicing may raise); ``scheme``: the slicing that computed C
    (default: the default one)."""
    n = A.shape[1]
    R, fmt = C.nterms, format_of(C.dtype)
    bd = bounds.matmul_slices(n, R, fmt, scheme)
    exact = _fr(A).dot(_fr(B))
    lead = C.terms[..., 0]
    EA = _scales(A.terms)
    EB = _scales(np.swapaxes(B.terms, 0, 1))
    worst = Fraction(0)
    big = fmt.largest
    for i in range(exact.shape[0]):
        for j in range(exact.shape[1]):
            q = exact[i, j]
            if abs(q) > big * (1 + Fraction(1, 2**20)):
                assert np.isinf(lead[i, j]) and (lead[i, j] > 0) == (q > 0) and (C.terms[i, j, 1:] == 0).all()
                continue
            if np.isinf(lead[i, j]) and abs(q) >= big * (1 - Fraction(1, 2**20)):
                continue
            assert np.isfinite(C.terms[i, j]).all(), (i, j)
            lim = bd.scaled * n * Fraction(2) ** (EA[i] + EB[j] + 2 * raise_rows) + bd.relative * abs(q) + bd.absolute
            worst = max(worst, abs(Fraction(sum(Fraction(float(v)) for v in C.terms[i, j])) - q) / lim)
    return worst


def _pair(m, n, p, R, dt, seed, **kw):
    A = ex.from_terms(random_terms((m, n), R, dt, seed=seed, **kw))
    B = ex.from_terms(random_terms((n, p), R, dt, seed=seed + 1, **kw))
    return A, B


def _twin_steps():
    return slices._Steps(spec.split, spec.fold, spec.finish, backends.cpu.renormalize)


def _terms_product(A, B, **kw):
    with np.errstate(all="ignore"):
        return slices.matmul_terms(A.terms, B.terms, A.nterms, A.dtype, **kw)


def _extra(A, B, scheme=None) -> int:
    """The extra bits of the componentwise plan of A @ B, or 0 (the normwise plan) where no plan holds
    the operands' spread in the format (float32 at large R): the tests of the mechanism run both."""
    try:
        return slices.componentwise_extra(A.terms, B.terms, max(A.nterms, B.nterms), A.dtype, scheme)
    except ValueError:
        return 0


def _exact_integer_gemm(a, b):
    """The product of two float64 matrices of integers in exact integer arithmetic (NumPy's int64
    matmul, not the BLAS): what any exact GEMM returns, the emulation of cuBLAS on integer slices."""
    ia, ib = a.astype(np.int64), b.astype(np.int64)
    assert np.array_equal(ia, a) and np.array_equal(ib, b)
    return (ia @ ib).astype(np.float64)


# ----------------------------------------------------------------------------------------------
# the plan


@pytest.mark.parametrize("n", [1, 7, 100, 1000, 2000, 4096, 10**6])
def test_slice_bits_is_the_widest_exact_one(n):
    beta = bounds.slice_bits(n)
    assert n * (2 ** (beta - 1)) ** 2 <= 2**53  # every partial sum of n digit products is exact
    assert beta == bounds.SLICE_BITS_MAX or n * (2**beta) ** 2 > 2**53


@pytest.mark.parametrize("R", [2, 3, 4, 8, 16])
@pytest.mark.parametrize("fmt", [FLOAT64, FLOAT32])
def test_plan_is_the_smallest_meeting_the_target(R, fmt):
    for n in (10, 1000):
        plan = bounds.slice_plan(n, R, fmt)
        target = Fraction(1, 2 ** ((fmt.p - 1) * R + 4))
        assert plan.truncation <= target
        T = plan.levels
        assert bounds.slice_truncation(plan.beta, T - 2, T - 1, R) > target  # one level fewer is not enough
        assert plan.gemms == T * (T - 1) // 2 and plan.pairs[0] == (1, 1)
        assert all(s + t <= T for s, t in plan.pairs) and len(set(plan.pairs)) == plan.gemms


def test_truncation_formula_against_direct_sums():
    """slice_truncation for small cases, against its terms summed independently."""
    beta, S, T, R = 3, 2, 3, 2
    w = Fraction(1, 8)
    bar = 4 * (w + w**2)
    v = Fraction(R, 2) * w**2
    dropped = 16 * (w**4)  # (2, 2) is the only pair with s + t > 3
    assert bounds.slice_truncation(beta, S, T, R) == v * (bar + v) + bar * v + dropped


@pytest.mark.parametrize("R", [2, 3, 4, 8, 16])
@pytest.mark.parametrize("fmt", [FLOAT64, FLOAT32])
def test_modular_plan_is_the_smallest_meeting_the_target(R, fmt):
    """The modular plan: within the target; one bit fewer per entry cannot be (its remainders alone
    exceed 15/16 of the target, whatever the digits); enough primes and not one more; every sum the
    scheme forms is an integer below 2**52 (the products of residue matrices, the residue sums, the
    Garner sums, the level sums); the levels hold (M - 1)/2 with a balanced top digit; one more
    dropped level would exceed the target."""
    for n in (10, 1000):
        pl = bounds.modular_plan(n, R, fmt)
        target = Fraction(1, 2 ** ((fmt.p - 1) * R + 4))
        assert pl.truncation <= target
        assert Fraction(R, 2) * Fraction(1, 2 ** (pl.bits - 1)) > target * Fraction(15, 16)
        assert pl.bits == pl.top + (pl.slices - 1) * pl.beta and 1 <= pl.top <= pl.beta <= 26
        assert all(m % 2 and all(m % d for d in range(3, math.isqrt(m) + 1, 2)) for m in pl.moduli)
        assert len(set(pl.moduli)) == pl.gemms
        amax = pl.entry_max
        assert amax == max(abs(sum(d * 2 ** ((pl.slices - 1 - s) * pl.beta) for s, d in enumerate(ds)))
                           for ds in ([2 ** (pl.top - 1)] + [2 ** (pl.beta - 1)] * (pl.slices - 1),))
        assert math.prod(pl.moduli) >= 2 * n * amax**2 + 1 > math.prod(pl.moduli[:-1])
        h = (max(pl.moduli) - 1) // 2
        assert n * h * h <= 2**52 and pl.slices * 2 ** (pl.beta - 1) * h <= 2**52
        assert (pl.gemms - 1) * h * h + h <= 2**52
        radix = pl.setup().radix
        assert pl.gemms * h * max(abs(d) for r in radix for d in r) <= 2**52
        M = math.prod(pl.moduli)
        assert (M - 1) // 2 <= (2 ** (pl.level_bits - 1) - 1) * 2 ** ((pl.levels - 1) * pl.level_bits)
        more = bounds.modular_truncation(n, pl.bits, pl.beta, pl.slices, pl.top, R, pl.level_bits, pl.cut + 1)
        assert more > target or pl.cut + 2 >= pl.levels


def test_modular_truncation_formula_against_direct_sums():
    """modular_truncation for a small case, from its terms computed independently."""
    n, bits, beta, S, top, R, lb, cut = 5, 7, 3, 3, 1, 2, 4, 1
    amax = 1 * 2**6 + 4 * 2**3 + 4  # digits 2**(top-1), 2**(beta-1), 2**(beta-1)
    v = Fraction(R, 2) / 2**bits
    a = Fraction(amax, 2**bits)
    dropped = Fraction(8, n) / 2 ** (2 * bits)  # one balanced digit of 4 bits: at most 8
    assert bounds.modular_truncation(n, bits, beta, S, top, R, lb, cut) == v * (2 * a + v) + dropped


def _python_garner(st, residues):
    """C'' from the residues of C' = 2**shift C'' by the setup's tables, in Python integers."""
    v = []
    for i, m in enumerate(st.moduli):
        c = (residues[i] * st.unshift[i]) % m
        x = sum(v[j] * st.garner[i][j] for j in range(i))
        t = ((c - x) * st.inverses[i]) % m
        v.append(t - m if t > (m - 1) // 2 else t)
    return sum(vi * sum(d << (lv * st.level_bits) for lv, d in enumerate(st.radix[i])) for i, vi in enumerate(v))


@pytest.mark.parametrize("R", [2, 4])
def test_modular_setups_reconstruct_every_product(R):
    """Every setup's tables (the residues' unshift, Garner's constants, the radix digits) give back
    any integer C'' with |C''| <= (M - 1)/2 from the residues of 2**shift C'', in exact integers; the
    setup for fewer digits in use needs fewer moduli and keeps the plan's dropped bits or fewer."""
    pl = bounds.modular_plan(300, R, FLOAT64)
    rng = np.random.default_rng(R)
    for sa, sb in ((pl.slices, pl.slices), (2, pl.slices), (pl.slices - 1, 1), (1, 1)):
        st = pl.setup(sa, sb)
        M = math.prod(st.moduli)
        assert st.moduli == pl.moduli[:st.gemms] and M >= 2 * 300 * bounds.entry_max(pl.beta, sa, pl.top) * \
            bounds.entry_max(pl.beta, sb, pl.top) + 1
        assert st.shift == (2 * pl.slices - sa - sb) * pl.beta
        assert st.cut == 0 or st.cut * st.level_bits + st.shift <= pl.cut * pl.level_bits  # drops no more
        assert st.levels - st.cut >= 2
        half = (M - 1) // 2
        for C in [0, 1, -1, half, -half, *(int(rng.integers(-2**62, 2**62)) * half // 2**62 for _ in range(20))]:
            assert _python_garner(st, [(C << st.shift) % m for m in st.moduli]) == C


def test_smod_is_the_symmetric_residue():
    """smod (specification and engine) against Python's integers: every integer of magnitude up to
    2**52, near multiples of m and half-multiples, zeros of both signs (+0 out)."""
    from expansions.engine import slices as compiled

    rng = np.random.default_rng(4)
    for m in (3, 5, 4194301, max(bounds.modular_plan(1000, 2, FLOAT64).moduli), 8388593):
        h = (m - 1) // 2
        ints = [0, 1, -1, h, -h, h + 1, -h - 1, 2**52, -(2**52), 2**52 - 1]
        ints += [k * m + d for k in rng.integers(-(2**52) // m, 2**52 // m, 40).tolist()
                 for d in (-h - 1, -h, 0, h, h + 1)]
        ints += rng.integers(-(2**52), 2**52, 200).tolist()
        ints = [i for i in ints if abs(i) <= 2**52]
        x = np.array(ints + [-0.0], dtype=np.float64)
        want = np.array([((i + h) % m) - h for i in ints] + [0], dtype=np.float64)
        got = spec.smod(x, float(m), 1.0 / m)
        assert np.array_equal(bits(got), bits(want)), m
        if engine.available():
            y = x.reshape(1, 1, -1).copy()
            compiled._smod_kernel[0](y, 0, 1, np.array([float(m)]), np.array([1.0 / m]))
            assert np.array_equal(bits(y.reshape(-1)), bits(want)), m


def test_modular_levels_are_the_exact_product():
    """The specification's residues, products of residue matrices and Garner levels against the
    exact integer product A' B' (Python integers)."""
    pl = bounds.modular_plan(9, 3, FLOAT64)
    st = pl.setup()
    rng = np.random.default_rng(2)
    S, beta = pl.slices, pl.beta
    D = rng.integers(-(2 ** (beta - 1)), 2 ** (beta - 1) + 1, size=(S, 4, 9)).astype(np.float64)
    D[0] = rng.integers(-(2 ** (pl.top - 1)), 2 ** (pl.top - 1) + 1, size=(4, 9))
    D[:, 1, :] = np.where(np.arange(S)[:, None] == 0, 2.0 ** (pl.top - 1), 2.0 ** (beta - 1))  # a full row
    E = rng.integers(-(2 ** (beta - 1)), 2 ** (beta - 1) + 1, size=(S, 9, 3)).astype(np.float64)
    E[0] = rng.integers(-(2 ** (pl.top - 1)), 2 ** (pl.top - 1) + 1, size=(9, 3))
    E[:, :, 2] = np.where(np.arange(S)[:, None] == 0, 2.0 ** (pl.top - 1), 2.0 ** (beta - 1))
    ra = spec.residues(D, st.weights, st.moduli)
    rb = spec.residues(E, st.weights, st.moduli)
    G = np.stack([ra[i] @ rb[i] for i in range(st.gemms)])
    acc = spec.modular_levels(G, st.moduli, st.unshift, st.garner, st.inverses, st.radix)
    value = lambda a: sum(int(a[lv]) << ((acc.shape[0] - 1 - lv) * st.level_bits) for lv in range(acc.shape[0]))  # noqa: E731
    ints = lambda X: np.array([[sum(int(X[s, i, j]) << ((S - 1 - s) * beta) for s in range(S))  # noqa: E731
                                for j in range(X.shape[2])] for i in range(X.shape[1])], dtype=object)
    exact = ints(D).dot(ints(E))
    for i in range(4):
        for j in range(3):
            assert value(acc[:, i, j]) == exact[i, j]


@pytest.mark.parametrize("R", [2, 3, 4, 8])
def test_default_scheme(R):
    """The default slicing: the modular one for every float64 case (fewer products), the one with
    fewer products where both fit (ties: levels), the one that fits where one does not."""
    for n in (16, 1000):
        assert bounds.default_slice_scheme(n, R, FLOAT64) == "modular"
        assert bounds.modular_plan(n, R, FLOAT64).gemms < bounds.slice_plan(n, R, FLOAT64).gemms
    for n in (16, 1000, 10**5):
        fits = {sc: slices.supported(n, R, "float32", sc) for sc in slices.SCHEMES}
        if not any(fits.values()):
            continue
        got = bounds.default_slice_scheme(n, R, FLOAT32)
        if all(fits.values()):
            g = bounds.modular_plan(n, R, FLOAT32).gemms, bounds.slice_plan(n, R, FLOAT32).gemms
            assert got == ("modular" if g[0] < g[1] else "levels")
        else:
            assert fits[got]


def test_digits_in_use_need_fewer_products():
    """float64 data promoted to R = 2 uses 3 of the 5 digits of the plan: fewer moduli (products of
    residue matrices counted), the same bits from the specification and within the bound."""
    rng = np.random.default_rng(8)
    A = ex.array(rng.standard_normal((20, 40)), terms=2)
    B = ex.from_terms(random_terms((40, 10), 2, seed=3))
    pl = bounds.modular_plan(40, 2, FLOAT64)
    for x, y, want in ((A, B, pl.setup(3, pl.slices).gemms), (A, ex.array(A.T, terms=2), pl.setup(3, 3).gemms),
                       (B.T, B, pl.gemms)):
        calls = []

        def counting(a, b, calls=calls):
            calls.append(1)
            return a @ b

        got = _terms_product(x, y, gemm=counting, scheme="modular", extra=0)  # the plan of no extra bits
        assert len(calls) == want <= pl.gemms
        assert np.array_equal(bits(got), bits(_terms_product(x, y, steps=_twin_steps(), scheme="modular", extra=0)))
        assert worst_ratio(x, y, ex.from_terms(got), scheme="modular") <= 1
    assert pl.setup(3, 3).gemms < pl.setup(3, pl.slices).gemms < pl.gemms


# ----------------------------------------------------------------------------------------------
# engine against the specification, bit for bit


def _adversarial(R, dt, seed):
    """Operands mixing the hard cases: wide exponent ranges (subnormal results), zero terms, one-bit
    overlaps, same signs, zero rows and columns, massive cancellation (C = A1 B1 - A1 B1 + small)."""
    rng = np.random.default_rng(seed)
    wide = (-1000, 1000) if dt == "float64" else (-120, 120)
    A = random_terms((9, 12), R, dt, seed=seed, exponent_range=wide, p_zero=0.3, p_ulp=0.2)
    B = random_terms((12, 7), R, dt, seed=seed + 1, exponent_range=(-30, 30), p_ulp=0.3, same_sign=True)
    A[2] = 0
    B[:, 3] = 0
    half = random_terms((4, 6), R, dt, seed=seed + 2)
    A[5:, :6], A[5:, 6:] = half, -half  # rows 5..8: (x, -x) against B's (y; y): exact cancellation ...
    B[6:, :] = B[:6, :]
    A[5:, 0, R - 1] = np.ldexp(rng.choice([-1.0, 1.0], 4), -60).astype(dt)  # ... up to a tiny last term
    return ex.from_terms(A), ex.from_terms(B)


def _short(R, dt, seed):
    """Operands of few significant bits: float64 (float32) data promoted to R terms, small integers,
    exact zeros, one-bit entries: exact products with zero low digits and chunks, zero rounding
    errors in the renormalization, few digits in use."""
    rng = np.random.default_rng(seed)
    A = ex.array(rng.standard_normal((7, 13)).astype(dt), terms=R, dtype=dt)
    ints = rng.integers(-40, 41, size=(13, 6)).astype(dt)
    ints[2] = 0
    ints[:, 4] = np.ldexp(1.0, rng.integers(-30, 30, 13)).astype(dt)
    return A, ex.array(ints, terms=R, dtype=dt)


@needs_engine
@pytest.mark.parametrize("R", [2, 3, 4, 8])
@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("scheme", ["modular", "levels"])
def test_engine_steps_are_the_specification(R, dt, parallel, scheme, monkeypatch):
    """Both compilations of every compiled step (serial below PARALLEL_FROM, parallel above), both
    slicings, on random, adversarial and short operands."""
    from expansions.engine import slices as compiled

    if not slices.supported(12, R, dt, scheme):
        pytest.skip("float32 with this R exceeds the format's range")
    monkeypatch.setattr(compiled, "PARALLEL_FROM", 0 if parallel else 1 << 60)
    engine_steps = slices._steps(np) if backends.cpu_backend().name == "engine" else None
    if engine_steps is None:
        pytest.skip("the CPU backend is the twins")
    for seed in (1, 2):
        for A, B in (_adversarial(R, dt, 10 * seed), _pair(11, 17, 5, R, dt, seed, exponent_range=(-40, 40)),
                     _short(R, dt, seed)):
            extra = _extra(A, B, scheme)
            got = _terms_product(A, B, steps=engine_steps, scheme=scheme, extra=extra)
            want = _terms_product(A, B, steps=_twin_steps(), scheme=scheme, extra=extra)
            assert np.array_equal(bits(got), bits(want)), (R, dt, seed)


@needs_engine
@pytest.mark.parametrize("R", [2, 3])
@pytest.mark.parametrize("scheme", ["modular", "levels"])
def test_extreme_scales(R, scheme):
    """Rows of A near the underflow threshold (subnormal terms, scales 2**(E - s beta) below 2**-1022)
    against columns of B near the overflow threshold: normal products, every scaling path of the
    slicing taken; the compiled steps give the specification's bits and the bound holds."""
    A = ex.from_terms(random_terms((5, 9), R, seed=70 + R, exponent_range=(-1060, -1030)))
    B = ex.from_terms(random_terms((9, 4), R, seed=80 + R, exponent_range=(1000, 1015)))
    for x, y in ((A, B), (ex.from_terms(np.ascontiguousarray(np.swapaxes(B.terms, 0, 1))),
                          ex.from_terms(np.ascontiguousarray(np.swapaxes(A.terms, 0, 1))))):
        got = _terms_product(x, y, scheme=scheme)
        assert np.array_equal(bits(got), bits(_terms_product(x, y, steps=_twin_steps(), scheme=scheme)))
        assert worst_ratio(x, y, ex.from_terms(got), scheme=scheme) <= 1
        assert np.isfinite(got).all() and (got[..., 0] != 0).all()


@needs_engine
def test_engine_split_raises_the_scale_as_the_specification():
    """Terms that are not ulp-nonoverlapping (here adding up beyond 2**(E-1)) make the top digit too
    large for the first scale; both raise it the same way."""
    from expansions.engine import slices as compiled

    t = np.zeros((3, 4, 4))
    t[0, :, :] = 2.0**10 - 1  # four equal terms: the value is 4 times the largest term
    t[1, 0, :] = [1.0, 1.0, 0.75, -2.0**-60]
    t[2, 1, :] = [-3.0, -3.0, -3.0, -3.0]
    for S in (2, 5):
        D1, E1, nz1 = spec.split(t, 20, S)
        D2, E2, nz2 = compiled.split(t, 20, S)
        assert np.array_equal(E1, E2) and np.array_equal(bits(D1), bits(D2)) and nz1 == nz2
        assert (np.abs(D1) <= 2.0**19).all()
        assert list(E1) == [10 + 1 + 2, 1 + 1 + 1, 2 + 1 + 2]  # raised by 2, 1, 2
        value = [sum(Fraction(v) for v in t[i].reshape(-1)) for i in range(3)]
        for i in range(3):
            got = sum(Fraction(float(D1[s, i, k])) * Fraction(2) ** (int(E1[i]) - (s + 1) * 20)
                      for s in range(S) for k in range(4))
            assert abs(got - value[i]) <= 4 * Fraction(2) ** (int(E1[i]) - S * 20) * 4 / 2


# ----------------------------------------------------------------------------------------------
# the proven bound against exact rational products


@pytest.mark.parametrize("R", [2, 3, 4])
@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("scheme", ["modular", "levels"])
def test_within_bound_random_and_wide(R, dt, scheme):
    for seed, kw in ((1, {}), (2, {"exponent_range": (-60, 60)}), (3, {"p_zero": 0.4, "p_ulp": 0.3})):
        A, B = _pair(6, 19, 5, R, dt, seed, **kw)
        C = ex.from_terms(_terms_product(A, B, scheme=scheme))
        assert C.nterms == R and C.dtype == np.dtype(dt)
        assert worst_ratio(A, B, C, scheme=scheme) <= 1


@pytest.mark.parametrize("R", [2, 4, 8])
@pytest.mark.parametrize("scheme", ["modular", "levels"])
def test_within_bound_adversarial(R, scheme):
    for dt in ("float64", "float32"):
        if not slices.supported(12, R, dt, scheme):
            continue
        for A, B in (_adversarial(R, dt, R), _short(R, dt, R)):
            C = ex.from_terms(_terms_product(A, B, scheme=scheme, extra=_extra(A, B, scheme)))
            assert worst_ratio(A, B, C, scheme=scheme) <= 1


@pytest.mark.parametrize("scheme", ["modular", "levels"])
def test_the_bound_is_tight_for_full_digits(scheme):
    """Entries whose slices are all full (digits 2**(beta-1) - 1, as far as R terms hold them): the
    dropped pairs (levels) or digits (modular) are as large as the operands allow, the exact product
    is as large as the moduli must hold (every product positive), and the observed error is within
    2**15 of the proven bound (the slack: the scale 2**(E+F) is up to 16 times the rows' and columns'
    largest entries, and R-term operands hold only the first ~(p-1)R/beta of the digits the plan
    cuts)."""
    n, R = 64, 2
    beta = bounds.slice_plan(n, R, FLOAT64).beta
    full = sum(Fraction(2 ** (beta - 1) - 1, 2 ** (s * beta)) for s in range(1, 20))
    A = ex.array(np.full((2, n), full, dtype=object), terms=R)
    B = ex.from_terms(np.ascontiguousarray(np.swapaxes(A.terms, 0, 1)))
    ratio = worst_ratio(A, B, ex.from_terms(_terms_product(A, B, scheme=scheme)), scheme=scheme)
    assert Fraction(1, 2**16) <= ratio <= 1, float(ratio)


def test_within_bound_ill_conditioned_products():
    """A residual A x - y with y ~ A x (Hilbert-like A): |C| is 2**-100 of |A| |x|; the product of
    [A, y] and [x; -1] cancels massively."""
    R, n = 3, 24
    H = np.array([[Fraction(1, i + j + 1) for j in range(n)] for i in range(n)], dtype=object)
    A = ex.array(H, terms=R)
    x = ex.array(np.random.default_rng(5).standard_normal((n, 1)), terms=R)
    y = ex.matmul(A, x, method="elementwise")
    big = ex.concatenate([A, y], axis=1)
    col = ex.concatenate([x, ex.array([[-1.0]], terms=R)], axis=0)
    C = slices.matmul(big, col)
    exact = _fr(big).dot(_fr(col))
    scale = np.abs(_fr(big)).dot(np.abs(_fr(col)))
    assert max(abs(e) / s for e, s in zip(exact.reshape(-1), scale.reshape(-1))) < Fraction(1, 2**100)
    assert worst_ratio(big, col, C) <= 1


def test_within_bound_near_underflow_and_overflow():
    R = 2
    A, B = _pair(5, 8, 4, R, "float64", 7, exponent_range=(-560, -500))  # products below 2**-1000
    C = slices.matmul(A, B)
    assert worst_ratio(A, B, C) <= 1
    A, B = _pair(5, 8, 4, R, "float64", 8, exponent_range=(495, 515))  # products near 2**1024
    C = slices.matmul(A, B)
    exact = _fr(A).dot(_fr(B))
    finite = np.vectorize(lambda q: abs(q) < FLOAT64.largest)(exact)
    assert finite.any() and (~finite).any()
    t = C.terms
    assert (np.isinf(t[..., 0]) == ~finite).all() and (t[~finite][:, 1:] == 0).all()
    assert (np.sign(t[~finite][:, 0]) == np.vectorize(lambda q: 1 if q > 0 else -1)(exact[~finite])).all()
    fin = ex.from_terms(np.where(finite[..., None], t, 0))
    want = np.where(finite, exact, 0)
    got = _fr(fin)
    bd = bounds.matmul_slices(8, R, FLOAT64)
    EA, EB = _scales(A.terms), _scales(np.swapaxes(B.terms, 0, 1))
    for i, j in zip(*np.nonzero(finite)):
        lim = bd.scaled * 8 * Fraction(2) ** (EA[i] + EB[j]) + bd.relative * abs(want[i, j]) + bd.absolute
        assert abs(got[i, j] - want[i, j]) <= lim


def test_mixed_terms_and_dtypes_promote_as_the_elementwise_path():
    A = ex.from_terms(random_terms((4, 9), 2, "float32", seed=3))
    B = ex.from_terms(random_terms((9, 3), 3, "float64", seed=4))
    C = slices.matmul(A, B)
    assert (C.nterms, C.dtype) == (3, np.dtype(np.float64))
    assert (C.nterms, C.dtype) == (ex.matmul(A, B, method="elementwise").nterms, np.dtype(np.float64))
    A3 = ex.array(A, terms=3, dtype="float64")
    assert worst_ratio(A3, B, C) <= 1
    assert np.array_equal(bits(C.terms), bits(slices.matmul(A3, B).terms))  # the promotion is exact
    D = slices.matmul(A, np.arange(27.0).reshape(9, 3))  # a NumPy operand: promoted exactly
    assert D.nterms == 2 and D.dtype == np.float32


def test_operands_that_are_not_ulp_nonoverlapping():
    """Raw terms (from_terms, not renormalized): the slicing raises the scales where needed, the
    result is within the bound with scales larger by log2(R) + 1 at most, and the same bits as the
    renormalized operands'... within the bound too."""
    rng = np.random.default_rng(9)
    R = 4
    t = rng.integers(-8, 9, size=(5, 7, R)).astype(np.float64)
    u = rng.integers(-8, 9, size=(7, 3, R)).astype(np.float64) * 0.5
    A, B = ex.from_terms(t), ex.from_terms(u)
    C = slices.matmul(A, B)
    assert worst_ratio(A, B, C, raise_rows=3) <= 1
    assert _fr(C).tolist() == _fr(A).dot(_fr(B)).tolist()  # small integers: the product is exact


# ----------------------------------------------------------------------------------------------
# the same bits whatever computes the slice products


@pytest.mark.parametrize("R", [2, 3])
@pytest.mark.parametrize("scheme", ["modular", "levels"])
def test_exact_integer_products_give_the_same_bits(R, scheme):
    """The BLAS against exact integer products (NumPy's int64 matmul, the emulation of cuBLAS on
    integer slices), and the specification's steps against the default ones."""
    A, B = _pair(13, 40, 9, R, "float64", 20 + R, exponent_range=(-30, 30))
    want = _terms_product(A, B, scheme=scheme)
    assert np.array_equal(bits(_terms_product(A, B, gemm=_exact_integer_gemm, scheme=scheme)), bits(want))
    assert np.array_equal(bits(_terms_product(A, B, gemm=_exact_integer_gemm, steps=_twin_steps(), scheme=scheme)),
                          bits(want))


@pytest.mark.parametrize("scheme", ["modular", "levels"])
def test_tiles_do_not_change_the_bits(scheme, monkeypatch):
    """Blocks of operand rows and columns, and of result rows, on random and on short operands
    (whose digits in use, and so the moduli of the modular product, are those of the whole
    operands, not of a block)."""
    A, B = _pair(21, 30, 17, 2, "float64", 31, exponent_range=(-20, 20))
    S, T = _short(2, "float64", 5)
    want = _terms_product(A, B, scheme=scheme), _terms_product(S, T, scheme=scheme)
    per = bounds.modular_plan(30, 2, FLOAT64).gemms if scheme == "modular" else bounds.slice_plan(30, 2, FLOAT64).slices
    monkeypatch.setattr(slices, "TILE_BYTES", 8 * 30 * per * 4)  # blocks of 4 rows, 4 columns
    assert np.array_equal(bits(_terms_product(A, B, scheme=scheme)), bits(want[0]))
    monkeypatch.setattr(slices, "TILE_BYTES", 8 * 13 * per * 2)  # blocks of 2 rows, 2 columns
    assert np.array_equal(bits(_terms_product(S, T, scheme=scheme)), bits(want[1]))
    monkeypatch.setattr(slices, "ACC_BYTES", 8 * 8 * 3)  # one row of the result at a time
    assert np.array_equal(bits(_terms_product(A, B, scheme=scheme)), bits(want[0]))


def test_transposition_and_row_order():
    """(A B)^T = B^T A^T and a permutation of A's rows permutes C's rows, bit for bit: the digits
    of a row depend on that row only, every sum is exact."""
    A, B = _pair(8, 25, 6, 3, "float64", 41, exponent_range=(-50, 50))
    C = slices.matmul(A, B).terms
    CT = slices.matmul(ex.from_terms(np.ascontiguousarray(np.swapaxes(B.terms, 0, 1))),
                       ex.from_terms(np.ascontiguousarray(np.swapaxes(A.terms, 0, 1)))).terms
    assert np.array_equal(bits(np.swapaxes(C, 0, 1)), bits(CT))
    perm = np.random.default_rng(1).permutation(8)
    assert np.array_equal(bits(slices.matmul(ex.from_terms(A.terms[perm]), B).terms), bits(C[perm]))


_THREADS_SCRIPT = textwrap.dedent("""
    import hashlib, sys
    import numpy as np
    import expansions as ex
    from expansions import slices
    from expansions.generate import random_terms
    A = ex.from_terms(random_terms((150, 300), 2, seed=1, exponent_range=(-40, 40)))
    B = ex.from_terms(random_terms((300, 120), 2, seed=2, exponent_range=(-40, 40)))
    t = slices.matmul(A, B).terms
    print(hashlib.sha256(np.ascontiguousarray(t).tobytes()).hexdigest())
""")


def test_same_bits_for_one_and_several_blas_threads():
    """The host BLAS with one thread (a separate process: OpenBLAS reads the count at start), with
    this process's threads (all cores), and exact integer products: one result."""
    import hashlib

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], env=env, capture_output=True, text=True,
                         check=True, cwd=ROOT)
    digests = [out.stdout.strip()]
    A = ex.from_terms(random_terms((150, 300), 2, seed=1, exponent_range=(-40, 40)))
    B = ex.from_terms(random_terms((300, 120), 2, seed=2, exponent_range=(-40, 40)))
    for gemm in (None, _exact_integer_gemm):
        t = _terms_product(A, B, gemm=gemm)
        digests.append(hashlib.sha256(np.ascontiguousarray(t).tobytes()).hexdigest())
    assert len(set(digests)) == 1, digests


def test_the_specification_is_array_module_generic():
    """expansions.cpu.slices calls array functions only through the operands' module (xp), never
    NumPy by name, so the same code runs on CuPy arrays (tests/test_gpu.py runs it there)."""
    tree = ast.parse(inspect.getsource(spec))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "np" not in names and "numpy" not in names
    assert all(not (isinstance(n, ast.Import) or isinstance(n, ast.ImportFrom) and n.module == "numpy")
               for n in ast.walk(tree))


# ----------------------------------------------------------------------------------------------
# non-finite values


def _nonfinite_case(R, rng):
    A = random_terms((6, 5), R, seed=int(rng.integers(1 << 30)))
    B = random_terms((5, 4), R, seed=int(rng.integers(1 << 30)))
    A[0, 1] = [np.inf] + [0.0] * (R - 1)  # +inf times a row of B: +-inf, NaN where B is 0
    B[1, 2] = 0
    A[1, 0] = [np.nan] + [0.0] * (R - 1)  # NaN row
    A[2, 3] = [1.0, np.inf] + [0.0] * (R - 2)  # a finite leading term with an infinite tail: NaN
    A[3, 0], A[3, 4] = [np.inf] + [0.0] * (R - 1), [-np.inf] + [0.0] * (R - 1)  # inf - inf where b > 0
    B[0, :], B[4, :] = np.abs(B[0, :]), np.abs(B[4, :])
    B[2, 3] = [-np.inf] + [0.0] * (R - 1)  # a column of B with -inf
    return ex.from_terms(A), ex.from_terms(B)


@pytest.mark.parametrize("R", [2, 3])
def test_nonfinite_rule(R):
    rng = np.random.default_rng(R)
    A, B = _nonfinite_case(R, rng)
    C = slices.matmul(A, B).terms
    E = ex.matmul(A, B, method="elementwise").terms
    lead = lambda t: np.where(np.isfinite(t).all(-1), t[..., 0], np.where(np.isfinite(t[..., 0]), np.nan, t[..., 0]))  # noqa: E731
    with np.errstate(all="ignore"):
        ieee = lead(A.terms) @ lead(B.terms)  # the IEEE classes (no overflow: the finite values are small)
    special = ~np.isfinite(ieee)
    assert special.any() and (~special).any()
    assert np.array_equal(np.isnan(C[..., 0]), np.isnan(ieee)) and np.array_equal(np.isnan(E[..., 0]), np.isnan(ieee))
    assert np.array_equal(C[..., 0][np.isinf(ieee)], ieee[np.isinf(ieee)])
    assert np.array_equal(C[..., 0][special & ~np.isnan(ieee)], E[..., 0][special & ~np.isnan(ieee)])
    assert (C[special][:, 1:] == 0).all()
    assert (bits(C[np.isnan(ieee)][:, 0]) == bits(np.array([np.nan]))[0]).all()  # the canonical NaN
    finite = ex.from_terms(np.where(special[..., None], 0, C))
    keep_a = np.isfinite(A.terms).all(-1)
    keep_b = np.isfinite(B.terms).all(-1)
    A0 = ex.from_terms(np.where(keep_a[..., None], A.terms, 0))
    B0 = ex.from_terms(np.where(keep_b[..., None], B.terms, 0))
    rows, cols = keep_a.all(1), keep_b.all(0)
    sub = ex.from_terms(finite.terms[rows][:, cols])
    assert worst_ratio(ex.from_terms(A0.terms[rows]), ex.from_terms(B0.terms[:, cols]), sub) <= 1


def test_nonfinite_classes_do_not_depend_on_the_blas():
    """The IEEE classes come from exact counts: the same with exact integer products."""
    rng = np.random.default_rng(3)
    A, B = _nonfinite_case(2, rng)
    want = _terms_product(A, B)
    got = _terms_product(A, B, gemm=_exact_integer_gemm)
    assert np.array_equal(bits(got), bits(want))
    wa = np.array([[np.inf, 0.0, -1.0], [np.nan, 1.0, 1.0], [2.0, -3.0, 0.0]])
    wb = np.array([[1.0, 0.0], [-np.inf, 5.0], [1.0, -1.0]])
    got = spec.nonfinite_products(wa, wb)
    with np.errstate(all="ignore"):
        ieee = wa @ wb
    assert np.array_equal(np.isnan(got), np.isnan(ieee)) and np.array_equal(got[np.isinf(got)], ieee[np.isinf(got)])
    assert (got[np.isfinite(ieee)] == 0).all()


# ----------------------------------------------------------------------------------------------
# the public API


def test_methods_and_choice():
    A, B = _pair(40, 40, 40, 2, "float64", 51)
    assert red.choose_method(40, 40, 40, 2, "float64") == "slices"
    assert red.choose_method(2, 3, 2, 2, "float64") == "elementwise"
    assert red.choose_method(40, 40, 40, 16, "float32") == "elementwise"  # beyond float32's range
    with pytest.raises(ValueError, match="exponent range"):
        red.choose_method(40, 40, 40, 16, "float32", "slices")
    with pytest.raises(ValueError, match="unknown product method"):
        ex.matmul(A, B, method="fast")
    auto, sl = ex.matmul(A, B), ex.matmul(A, B, method="slices")
    assert np.array_equal(bits(auto.terms), bits(sl.terms)) and np.array_equal(bits((A @ B).terms), bits(sl.terms))
    assert np.array_equal(bits(np.matmul(A, B).terms), bits(sl.terms))
    assert worst_ratio(A, B, sl) <= 1
    el = ex.matmul(A, B, method="elementwise")  # the canonical tree of products, as before
    row = red._dot_rows(A[3:4], B[:, 7:8], (1, 1), 1, 40, 1, (40, 0, 1), (0, 1, 1))
    assert np.array_equal(bits(el.terms[3, 7]), bits(row.terms[0, 0]))


def _contract(f):
    """The exact counterpart of an expansions product, on object arrays of Fractions."""
    return {ex.dot: np.dot, ex.matmul: np.matmul, ex.inner: np.inner, ex.vdot: np.vdot}.get(f, f)


@pytest.mark.parametrize("method", ["slices", "elementwise"])
def test_products_follow_numpy_shapes(method):
    rng = np.random.default_rng(12)

    def rnd(*shape):
        return ex.from_terms(random_terms(shape, 2, seed=int(rng.integers(1 << 30))))

    def td(axes):
        return (lambda x, y, method=None: ex.tensordot(x, y, axes, method=method)), \
            (lambda a, b: np.tensordot(a, b, axes))

    cases = [(ex.dot, (4,), (4,)), (ex.dot, (3, 4), (4,)), (ex.dot, (4,), (4, 5)), (ex.dot, (3, 4), (4, 5)),
             (ex.dot, (2, 3, 4), (4,)), (ex.dot, (2, 3, 4), (6, 4, 5)), (ex.matmul, (2, 3, 4), (4, 5)),
             (ex.matmul, (2, 3, 4), (2, 4, 5)), (ex.matmul, (4,), (2, 4, 5)), (ex.inner, (3, 4), (5, 4)),
             (ex.inner, (2, 3, 4), (4,)), (ex.inner, (4,), (4,)), (ex.vdot, (3, 4), (2, 6)),
             (td(2), (2, 3, 4), (3, 4, 5)), (td(([0, 2], [2, 0])), (3, 2, 4), (4, 5, 3)), (td(0), (2, 3), (4,))]
    for k, (f, sx, sy) in enumerate(cases):
        f, exact = f if isinstance(f, tuple) else (f, _contract(f))
        x, y = rnd(*sx), rnd(*sy)
        got = f(x, y, method=method)
        want = exact(_fr(x), _fr(y))
        assert got.shape == np.shape(want), (k, sx, sy)
        err = np.abs(np.asarray(_fr(got), dtype=object) - want)
        scale = exact(np.abs(_fr(x)), np.abs(_fr(y)))
        assert np.all(err <= Fraction(1, 2**95) * scale * max(sx[-1] if sx else 1, 1)), (k, sx, sy)


def test_numpy_functions_reach_the_products():
    x = ex.random((5, 6), terms=3, seed=1)
    y = ex.random((6, 4), terms=3, seed=2)
    v = ex.random((6,), terms=3, seed=3)
    same = lambda a, b: np.array_equal(bits(a.terms), bits(b.terms))  # noqa: E731
    assert same(np.inner(x, y.T), ex.inner(x, y.T)) and same(np.vdot(v, v), ex.vdot(v, v))
    assert same(np.tensordot(x, y, 1), ex.tensordot(x, y, 1)) and same(np.tensordot(x, y, axes=1), ex.matmul(x, y))
    with pytest.raises(ValueError, match="shape-mismatch"):
        ex.tensordot(x, y, 2)
    with pytest.raises(ValueError, match="different sizes"):
        ex.vdot(x, v)
    with pytest.raises(ValueError, match="not aligned"):
        ex.inner(x, y)
    assert ex.matmul(np.eye(6), y).to_fraction().tolist() == y.to_fraction().tolist()  # exact: products by 1 and 0


def test_empty_and_degenerate_shapes():
    z = slices.matmul(ex.zeros((3, 0), terms=2), ex.zeros((0, 4), terms=2))
    assert z.shape == (3, 4) and (z.terms == 0).all()
    assert slices.matmul(ex.zeros((0, 5), terms=2), ex.zeros((5, 2), terms=2)).shape == (0, 2)
    one = slices.matmul(ex.array([[3.0]], terms=2), ex.array([[-0.5]], terms=2))
    assert one.to_fraction().tolist() == [[Fraction(-3, 2)]]
    zero = slices.matmul(ex.array([[-0.0, 1.0]], terms=2), ex.array([[1.0], [0.0]], terms=2))
    assert bits(zero.terms).tolist() == [[[0, 0]]]  # an exactly zero result is +0


# ----------------------------------------------------------------------------------------------
# the GPU (cuBLAS and CuPy's element-wise kernels against NumPy and the engine, bit for bit)


_NO_GPU = "no CUDA GPU visible to CuPy (expansions.cuda.available() is False)"
needs_gpu = [pytest.mark.gpu, pytest.mark.skipif(not ex.cuda.available(), reason=_NO_GPU)]


@needs_gpu[0]
@needs_gpu[1]
@pytest.mark.parametrize("R", [2, 4, 8])
def test_gpu_bits_equal_cpu(R):
    """The slice product on CuPy arrays (cuBLAS products, the specification's steps, the CUDA
    renormalization) gives the CPU's bits; float32 inputs kept away from subnormal results (CuPy's
    element-wise kernels flush float32 subnormals)."""
    cases = [_pair(70, 130, 50, R, "float64", 100 + R, exponent_range=(-300, 300)), _adversarial(R, "float64", R),
             _nonfinite_case(R, np.random.default_rng(R))]
    if slices.supported(130, R, "float32"):
        cases.append(_pair(40, 130, 30, R, "float32", 200 + R, exponent_range=(-20, 20), min_exponent=-60))
    for A, B in cases:
        want = slices.matmul(A, B).terms
        got = slices.matmul(A.to_device("cuda"), B.to_device("cuda")).terms.get()
        assert np.array_equal(bits(got), bits(want)), R
    big = _pair(1000, 1000, 1000, 2, "float64", 7)
    want = slices.matmul(*big).terms
    got = slices.matmul(big[0].to_device("cuda"), big[1].to_device("cuda")).terms.get()
    assert np.array_equal(bits(got), bits(want))


@needs_gpu[0]
@needs_gpu[1]
def test_gpu_linalg_bits_equal_cpu():
    """Solve, inverse and Cholesky of 48 x 48 matrices (recursions with slice products) on the GPU:
    the CPU's bits."""
    from expansions import linalg as la

    rng = np.random.default_rng(3)
    A = ex.array(rng.standard_normal((48, 48)), terms=3)
    b = ex.array(rng.standard_normal((48, 2)), terms=3)
    S = ex.matmul(A, A.T) + ex.array(48 * np.eye(48), terms=3)
    gA, gb, gS = A.to_device("cuda"), b.to_device("cuda"), S.to_device("cuda")
    for cpu, gpu in ((la.solve(A, b), la.solve(gA, gb)), (la.inv(A), la.inv(gA)), (la.cholesky(S), la.cholesky(gS))):
        assert np.array_equal(bits(cpu.terms), bits(gpu.to_device("cpu").terms))


def test_the_linear_algebra_page_runs():
    """docs/linear_algebra.md's Python example runs as written."""
    import re

    text = (ROOT / "docs" / "linear_algebra.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "docs/linear_algebra.md", "exec"), {})


@pytest.mark.parametrize("R", [13, 32])
def test_many_terms(R):
    """R = 13 and 32: more exact-sum terms than the kernels' 32 at R = 32 (the specification then
    uses the twin renormalization, the engine its own: the same bits); the bound holds."""
    A, B = _pair(4, 7, 3, R, "float64", R, exponent_range=(-30, 30))
    got = _terms_product(A, B)
    assert np.array_equal(bits(got), bits(_terms_product(A, B, steps=_twin_steps())))
    assert worst_ratio(A, B, ex.from_terms(got)) <= 1
