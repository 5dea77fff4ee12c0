"""Sequential baselines (expansions.baselines): twins against the exact reference bit for bit, and the
accuracy their sources state, checked exactly.

What is checked (``u = 2**-p``; ``eps_qd = 2**-(4p-1)``, the QD paper's ``2**-211`` for p = 53):

* every twin (and its ``_soa`` variant) returns the bits of the reference, float64 and float32, on
  random and adversarial families (cancellation, Sterbenz, gaps, zeros, ulp overlaps, near underflow),
  terms tied in magnitude, unsorted terms, signed zeros, inf/NaN, overflow;
* QD quad-double, inputs QD-normalized (``a_i = RN(a_i + a_{i+1} + ...)``): the sloppy addition meets
  the paper's Cray-style ``|s - (a+b)| <= eps_qd (|a| + |b|)``, the accurate one the IEEE-style
  ``|s - (a+b)| <= 2 eps_qd |a+b|`` (the paper's "2 eps_qd or so"), the multiplication
  ``|p - ab| <= eps_qd |ab|``.  The QD text states no bound for double-double; dd_add_ieee and dd_mul
  have JMP 2017's proven bounds (3u^2 + 13u^3 and 7u^2, from expansions.dw.bounds), dd_add_sloppy none;
* certified_add: with T = x + y exactly and VecSumErrBranch replayed on the VecSum of the merged
  terms, the result equals T when VecSumErrBranch emits at most R terms, else T - result is exactly
  the part it drops;
* certified_mul: with T the exact sum of the collected terms, ``|xy - T| <= B`` with
  ``B = PropIV.1(R+1) |x0 y0| + u sum_{i+j=R} |x_i y_j|`` (the products of order > R are never formed:
  Prop. IV.1 of Collange et al. with R+1 bounds them; those of order R are rounded once), and
  ``T - result`` is exactly the part VecSumErrBranch drops.  Inputs are ulp-nonoverlapping (Prop.
  IV.1's hypothesis) and keep every 2Prod error above the underflow threshold.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers import RS, bits, failure_table

from expansions import bounds, cuda
from expansions.baselines import BASELINES
from expansions.baselines import cpu as twin
from expansions.baselines import reference as ref
from expansions.cuda import build
from expansions.dw import bounds as dw_bounds
from expansions.formats import format_of
from expansions.generate import random_terms
from expansions.reference.algorithms import sort_by_magnitude, vec_sum_err_branch
from expansions.reference.eft import vec_sum
from expansions.reference.fp import exact, from_float, round_fraction, to_float
from expansions.testing import product_safe_pairs, product_safe_random

DTYPES = ("float64", "float32")
FIXED = [name for name, b in BASELINES.items() if b.terms]
CERTIFIED = [name for name, b in BASELINES.items() if not b.terms]


def _values(row):
    return tuple(from_float(v) for v in row)


def reference(name, R, dtype, x, y):
    """The exact reference on each row pair."""
    fmt = format_of(dtype)
    f = getattr(ref, name)
    rows = [f(_values(a), _values(b), fmt) if BASELINES[name].terms else f(_values(a), _values(b), R, fmt)
            for a, b in zip(x, y)]
    return np.array([[to_float(v) for v in r] for r in rows], dtype=dtype).reshape(-1, R)


def run_twin(name, R, x, y):
    with np.errstate(all="ignore"):
        return getattr(twin, name)(x, y) if BASELINES[name].terms else getattr(twin, name)(x, y, R)


def families(R, dtype, N, seed):
    """(x, y) pairs of every family, concatenated."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    x, y = product_safe_pairs(N, R, dtype, seed)
    xs, ys = [x], [y]
    k = max(2, N // 6)
    a = product_safe_random(k, R, dtype, seed + 1)
    xs.append(a)  # ties: y = x up to signs, every x_i as large as y_i
    ys.append((a * rng.choice(np.array([-1.0, 1.0], dtype=dt), size=a.shape)).astype(dt))
    b, c = product_safe_random(k, R, dtype, seed + 2), product_safe_random(k, R, dtype, seed + 3)
    xs.append(rng.permuted(b, axis=1))  # terms not sorted by magnitude
    ys.append(c)
    xs.append(np.where(rng.random((k, R)) < 0.5, -0.0, 0.0).astype(dt))  # signed zeros
    ys.append(np.where(rng.random((k, R)) < 0.5, -0.0, 0.0).astype(dt))
    d, e = product_safe_random(k, R, dtype, seed + 4), product_safe_random(k, R, dtype, seed + 5)
    special = np.array([np.inf, -np.inf, np.nan], dtype=dt)
    for arr in (d, e):  # inf and NaN, leading or not
        mask = rng.random(arr.shape) < 0.2
        arr[mask] = special[rng.integers(0, 3, mask.sum())]
    xs.append(d)
    ys.append(e)
    big = (1000, 1023) if dtype == "float64" else (120, 127)
    xs.append(random_terms((k,), R, dtype, seed=seed + 6, exponent_range=big))  # overflow
    ys.append(random_terms((k,), R, dtype, seed=seed + 7, exponent_range=big))
    return np.concatenate(xs), np.concatenate(ys)


def _count(name, R):
    # the exact reference of the multiplication costs ~R^2; keep the file in its time budget
    return max(16, min(120, 1800 // (R * R))) if name == "certified_mul" else max(48, min(144, 2400 // R))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", FIXED)
def test_fixed_size_twin_equals_reference(name, dtype):
    R = BASELINES[name].terms
    x, y = families(R, dtype, 240, seed=len(name))
    got, want = run_twin(name, R, x, y), reference(name, R, dtype, x, y)
    assert np.array_equal(bits(got), bits(want)), failure_table((x, y), got, want)
    with np.errstate(all="ignore"):
        soa = getattr(twin, name + "_soa")(np.ascontiguousarray(x.T), np.ascontiguousarray(y.T))
    assert np.array_equal(bits(soa.T), bits(got))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", RS)
@pytest.mark.parametrize("name", CERTIFIED)
def test_certified_twin_equals_reference(name, R, dtype):
    x, y = families(R, dtype, _count(name, R), seed=R)
    got, want = run_twin(name, R, x, y), reference(name, R, dtype, x, y)
    assert np.array_equal(bits(got), bits(want)), failure_table((x, y), got, want)
    with np.errstate(all="ignore"):
        soa = getattr(twin, name + "_soa")(np.ascontiguousarray(x.T), np.ascontiguousarray(y.T), R)
    assert np.array_equal(bits(soa.T), bits(got))


def test_merge_is_the_stable_merge():
    """For inputs sorted by magnitude, the stable sort of x + y is the two-pointer merge that takes x's
    term on ties (the definition the kernels' merging network implements)."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        mags = sorted(rng.integers(0, 4, size=2 * n).tolist(), reverse=True)
        x = sorted(mags[:n], reverse=True)
        y = [-m for m in sorted(mags[n:], reverse=True)]
        xv, yv = [Fraction(v) if v else 0.0 for v in x], [Fraction(v) if v else -0.0 for v in y]
        i = j = 0
        merged = []
        while i < n or j < n:
            if j == n or (i < n and abs(exact(xv[i])) >= abs(exact(yv[j]))):
                merged.append(("x", i))
                i += 1
            else:
                merged.append(("y", j))
                j += 1
        tagged = [("x", k) for k in range(n)] + [("y", k) for k in range(n)]
        values = dict(zip(tagged, xv + yv))
        order = sort_by_magnitude(xv + yv)
        assert [repr(v) for v in order] == [repr(values[t]) for t in merged]


# ---------------------------------------------------------------------------------------------
# accuracy


def _qd_normalized(value, R, fmt):
    """The exact rational ``value`` as R terms by successive rounding, a_i = RN(rest): the QD
    normalization |a_{i+1}| <= ulp(a_i)/2 (for R = 2, a double-word)."""
    terms = []
    for _ in range(R):
        t = round_fraction(value, fmt) if value != 0 else 0.0
        terms.append(t)
        value -= exact(t)
    return tuple(terms)


def _qd_inputs(R, dtype, N, seed):
    """Normalized pairs: random; a third with y = -(x0 + .. + x_{R/2-1}) + (a number 2**-(p R/2) smaller),
    massive cancellation (the QD paper's counterexample to an IEEE-style bound for the sloppy addition)."""
    fmt = format_of(dtype)
    er = (-8, 8) if dtype == "float64" else (30, 40)  # float32: all terms stay normal
    xs = random_terms((N,), R + 2, dtype, seed=seed, exponent_range=er)
    ys = random_terms((N,), R + 2, dtype, seed=seed + 1, exponent_range=er)
    x = [_qd_normalized(_sum(map(from_float, row)), R, fmt) for row in xs]
    y = [_qd_normalized(_sum(map(from_float, row)), R, fmt) for row in ys]
    shift = Fraction(1, 2 ** (fmt.p * R // 2))
    for i in range(N // 3):
        y[i] = _qd_normalized(-_sum(x[i][: R // 2]) + shift * _sum(y[i]), R, fmt)
    return x, y


def _sum(t):
    return sum((exact(v) for v in t), Fraction(0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_qd_accuracy_as_stated(dtype):
    fmt = format_of(dtype)
    eps_qd = Fraction(1, 2 ** (4 * fmt.p - 1))
    x, y = _qd_inputs(4, dtype, 300, seed=11)
    table = []
    for a, b in zip(x, y):
        A, B = _sum(a), _sum(b)
        checks = (
            ("qd_add_sloppy", A + B, eps_qd * (abs(A) + abs(B))),
            ("qd_add_ieee", A + B, 2 * eps_qd * abs(A + B)),
            ("qd_mul", A * B, eps_qd * abs(A * B)),
        )
        for name, want, bound in checks:
            err = abs(_sum(getattr(ref, name)(a, b, fmt)) - want)
            if err > bound:
                table.append(f"{name} x={[float(v) for v in a]} y={[float(v) for v in b]} err/bound={err / bound}")
    assert not table, "\n".join(table[:10])


@pytest.mark.parametrize("dtype", DTYPES)
def test_dd_accuracy_jmp_bounds(dtype):
    fmt = format_of(dtype)
    x, y = _qd_inputs(2, dtype, 600, seed=13)
    table = []
    for a, b in zip(x, y):
        A, B = _sum(a), _sum(b)
        for name, jmp, want in (("dd_add_ieee", "qd_add_ieee", A + B), ("dd_mul", "dw_times_dw1", A * B)):
            err = abs(_sum(getattr(ref, name)(a, b, fmt)) - want)
            bound = dw_bounds.bound(jmp, fmt.p).value * abs(want)
            if err > bound:
                table.append(f"{name} x={[float(v) for v in a]} y={[float(v) for v in b]} err/bound={err / bound}")
    assert not table, "\n".join(table[:10])


def _certified_inputs(R, dtype, N, seed):
    x, y = product_safe_pairs(N, R, dtype, seed)
    if dtype == "float32":  # products and their errors stay above the underflow threshold
        keep = np.ldexp(1.0, -50)
        x = np.where(np.abs(x) < keep, 0, x).astype(dtype)
        y = np.where(np.abs(y) < keep, 0, y).astype(dtype)
    return x, y


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 4, 5, 8, 16, 32))
def test_certified_add_error_is_the_dropped_tail(R, dtype):
    fmt = format_of(dtype)
    x, y = _certified_inputs(R, dtype, max(48, 960 // R), seed=R + 100)
    table = []
    for row_x, row_y in zip(x, y):
        a, b = _values(row_x), _values(row_y)
        r = ref.certified_add(a, b, R, fmt)
        e = vec_sum(sort_by_magnitude(list(a) + list(b)), fmt)
        replay, dropped = vec_sum_err_branch(e, R, fmt, dropped=True)
        assert tuple(replay) == tuple(vec_sum_err_branch(e, R, fmt)) == r
        err = _sum(a) + _sum(b) - _sum(r)
        if err != _sum(dropped):
            table.append(f"x={row_x} y={row_y} err={err} dropped={_sum(dropped)}")
    assert not table, "\n".join(table[:10])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 4, 5, 8, 16))
def test_certified_mul_error_bound(R, dtype):
    fmt = format_of(dtype)
    u = fmt.u
    x, y = _certified_inputs(R, dtype, max(12, 480 // (R * R)), seed=R + 200)
    table = []
    for row_x, row_y in zip(x, y):
        a, b = _values(row_x), _values(row_y)
        r = ref.certified_mul(a, b, R, fmt)
        terms = ref.certified_mul_terms(a, b, R, fmt)
        T = _sum(terms)
        order_r = sum((abs(exact(a[i]) * exact(b[R - i])) for i in range(1, R)), Fraction(0))
        B = bounds.mul_truncation(R + 1, fmt.p).value * abs(exact(a[0]) * exact(b[0])) + u * order_r
        e = vec_sum(sort_by_magnitude(terms), fmt)
        replay, dropped = vec_sum_err_branch(e, R, fmt, dropped=True)
        assert tuple(replay) == r
        product_err = abs(_sum(a) * _sum(b) - T)
        if product_err > B or T - _sum(r) != _sum(dropped):
            table.append(f"x={row_x} y={row_y} |xy-T|/B={product_err / B if B else product_err} "
                         f"tail ok={T - _sum(r) == _sum(dropped)}")
    assert not table, "\n".join(table[:10])


# ---------------------------------------------------------------------------------------------
# the build table


def test_build_table_has_every_baseline_in_both_layouts():
    for name, b in BASELINES.items():
        for op, layout in ((name, "aos"), (name + "_soa", "soa")):
            info = build.OPERATIONS[op]
            assert (info.mapping, info.layout, info.terms, info.operands) == ("thread", layout, b.terms, 2)
    assert build.instance("dd_mul", "float64", 2).name_expression == "expansions::dd_mul<double>"
    assert build.instance("qd_add_ieee_soa", "float32", 4).name_expression == "expansions::qd_add_ieee_soa<float>"
    assert build.instance("certified_mul", "float64", 13).name_expression == "expansions::certified_mul<double, 13>"
    with pytest.raises(ValueError):
        build.instance("qd_mul", "float64", 2)


# ---------------------------------------------------------------------------------------------
# the kernels on a GPU (skipped without one; the warp-emulator test checks their code on the CPU)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.available(), reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)")
@pytest.mark.parametrize("layout", ("", "_soa"))
@pytest.mark.parametrize("name", list(BASELINES))
def test_gpu_kernels_equal_twins(name, layout):
    import cupy as cp

    from expansions.cuda import launch

    rs = (BASELINES[name].terms,) if BASELINES[name].terms else RS
    failures = []
    for dtype in DTYPES:
        for R in rs:
            x, y = families(R, dtype, 4096 if R <= 8 else 512, seed=R + 7)
            if "mul" in name and dtype == "float64":  # the twin's Dekker product = 2ProdFMA above 2**-450
                x, y = (np.where(np.abs(a) < 2.0**-450, 0, a) for a in (x, y))
            want = run_twin(name, R, x, y)
            args = (x, y) if not layout else (np.ascontiguousarray(x.T), np.ascontiguousarray(y.T))
            f = getattr(launch, name + layout)
            g = [cp.asarray(a) for a in args]
            got = (f(*g) if BASELINES[name].terms else f(*g, R)).get()
            got = np.ascontiguousarray(got.T) if layout else got
            if not np.array_equal(bits(got), bits(want)):
                failures.append(f"{name}{layout} {dtype} R={R}\n" + failure_table((x, y), got, want, 2))
    assert not failures, "\n".join(failures[:4])
