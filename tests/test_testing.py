"""expansions.testing: the adversarial families hold what their documentation states.

The valid families' rows are valid expansions (finite, ulp-nonoverlapping: bounds.ulp_nonoverlapping);
cancellation cancels to the stated degree; Sterbenz pairs subtract exactly where within a factor 2;
near-overflow rows lie within the stated factor of the largest float and their sums stay finite;
subnormal rows are subnormal below their leading term; every family is deterministic under its seed;
the kernel-input families reach the edges they are named for; the strategies draw what they state.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers import bits, examples
from hypothesis import given, settings

from expansions import bounds as B
from expansions import testing as T
from expansions.arraytype import ExpansionArray
from expansions.formats import format_of
from expansions.reference.exact import exact_rows

DTYPES = ("float64", "float32")
COUNT = 64


def _valid_rows(a, fmt) -> bool:
    return bool(np.isfinite(a).all()) and all(
        B.ulp_nonoverlapping([Fraction(float(t)) for t in row], fmt) for row in a)


def _exponent(v) -> np.ndarray:
    """floor(log2 |v|) of nonzero floats."""
    return np.frexp(np.asarray(v, dtype=np.float64))[1] - 1


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 5, 8, 16))
@pytest.mark.parametrize("name", list(T.VALID_FAMILIES))
def test_valid_families_give_valid_expansions_deterministically(name, R, dtype):
    f = T.VALID_FAMILIES[name]
    x, y = f(COUNT, R, dtype, seed=R)
    assert x.shape == y.shape == (COUNT, R) and x.dtype == y.dtype == np.dtype(dtype)
    fmt = format_of(dtype)
    assert _valid_rows(x, fmt) and _valid_rows(y, fmt), name
    assert (x[:, 0] != 0).all(), "every row has a nonzero leading term"
    x2, y2 = f(COUNT, R, dtype, seed=R)
    assert np.array_equal(bits(x), bits(x2)) and np.array_equal(bits(y), bits(y2))
    x3, _ = f(COUNT, R, dtype, seed=R + 1)
    assert not np.array_equal(bits(x), bits(x3)), "another seed, other rows"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 4, 8))
def test_mixed_and_edge_pairs_are_valid_and_reproducible(R, dtype):
    fmt = format_of(dtype)
    for product in (False, True):
        x, y = T.edge_pairs(40, R, dtype, seed=3, centers=(5, -5), product=product)
        assert x.shape == y.shape == (40, R) and _valid_rows(x, fmt) and _valid_rows(y, fmt)
    x, y = T.mixed_pairs(80, R, dtype, seed=3, center=4)
    assert x.shape == (80, R) and _valid_rows(x, fmt) and _valid_rows(y, fmt)
    # a Generator as the seed is advanced: two draws from it differ, two from equal generators agree
    rng = np.random.default_rng(9)
    a, b = T.mixed_pairs(80, R, dtype, rng)[0], T.mixed_pairs(80, R, dtype, rng)[0]
    assert not np.array_equal(bits(a), bits(b))
    assert np.array_equal(bits(a), bits(T.mixed_pairs(80, R, dtype, np.random.default_rng(9))[0]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 4, 8))
def test_cancellation_cancels_to_the_stated_degree(R, dtype):
    fmt = format_of(dtype)
    x, y = T.cancellation(200, R, dtype, seed=R)
    assert (x[:, 0] == -y[:, 0]).all()
    bound = Fraction(2) ** (3 - fmt.p)
    sums = [a + b for a, b in zip(exact_rows(x), exact_rows(y))]
    lead = [abs(Fraction(float(v))) for v in x[:, 0]]
    assert all(abs(s) <= bound * v for s, v in zip(sums, lead))
    assert sum(s != 0 for s in sums) > len(sums) // 2, "the tail leaves something (where the format holds it)"


@pytest.mark.parametrize("dtype", DTYPES)
def test_sterbenz_pairs_subtract_exactly(dtype):
    x, y = T.sterbenz(400, 4, dtype, seed=1)
    x0, y0 = x[:, 0].astype(np.float64), y[:, 0].astype(np.float64)
    assert (np.sign(x0) == -np.sign(y0)).all()
    ratio = np.abs(y0 / x0)
    assert (ratio >= 0.25).all() and (ratio <= 2).all()
    within = (ratio >= 0.5) & (ratio <= 2)
    assert within.mean() > 0.3
    diff = (x[within, 0] + y[within, 0]).astype(dtype)  # rounded in the format: Sterbenz's lemma says exact
    assert all(Fraction(float(d)) == Fraction(float(a)) + Fraction(float(b))
               for d, a, b in zip(diff, x[within, 0], y[within, 0]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 4, 8))
def test_near_overflow_rows_are_near_the_largest_float_and_their_sums_finite(R, dtype):
    fmt = format_of(dtype)
    largest = float(np.finfo(dtype).max)
    x, y = T.near_overflow(100, R, dtype, seed=R)
    lead = np.abs(np.concatenate([x[:, 0], y[:, 0]]).astype(np.float64))
    assert (lead >= largest * 2.0 ** -(T.SPREAD + 3)).all() and (lead < 2.0 ** (fmt.emax - 1)).all()
    with np.errstate(over="raise"):
        assert np.isfinite((x.astype(np.float64) + y.astype(np.float64)).astype(dtype)).all()
    # the product partners: x_0 y_0 within 2^-SPREAD .. 2^(SPREAD + 2)
    x, y = T.near_overflow(100, R, dtype, seed=R, product=True)
    prod = np.abs(x[:, 0].astype(np.float64) * y[:, 0].astype(np.float64))
    assert ((prod >= 2.0 ** -T.SPREAD) & (prod < 2.0 ** (T.SPREAD + 2))).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 8))
def test_subnormal_rows_are_subnormal_below_the_leading_term(R, dtype):
    fmt = format_of(dtype)
    tiny, smallest = 2.0 ** fmt.emin, float(fmt.eta)
    x, y = T.subnormal(100, R, dtype, seed=R)
    for a in (x, y):
        lead = np.abs(a[:, 0].astype(np.float64))
        assert ((lead >= tiny) & (lead < tiny * 2.0 ** (fmt.p // 2 + 1))).all()
        assert (np.abs(a[:, 1:]) < tiny).all()
        assert (a[:, 1:] != 0).any()
    if R >= 3:
        assert ((np.abs(x) == smallest).sum(axis=1) >= 2).any(), "the smallest subnormal repeated"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("R", (2, 3, 8, 16))
def test_near_underflow_and_lowest_binades(R, dtype):
    fmt = format_of(dtype)
    x, _ = T.near_underflow(100, R, dtype, seed=R)
    assert (np.abs(x[:, -1]) < 2.0 ** fmt.emin).all(), "the last terms are subnormal or zero"
    c = T.near_underflow_exponent(R, dtype)
    assert ((_exponent(x[:, 0]) >= c - 4) & (_exponent(x[:, 0]) <= c + 4)).all()
    x, _ = T.lowest_binades(100, R, dtype, seed=R)
    e = _exponent(x[:, 0])
    assert ((e >= fmt.emin) & (e <= fmt.emin + T.SPREAD)).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_sparse_gaps_zeros_and_same_sign_have_their_shapes(dtype):
    fmt = format_of(dtype)
    x, _ = T.sparse(100, 8, dtype, seed=1)
    nz = x != 0
    assert (~nz[:, 1:-1] & nz[:, -1:]).any(), "interior zeros followed by a nonzero term"
    x, _ = T.exponent_gaps(200, 4, dtype, seed=1)
    gaps = _exponent(x[:, :-1]) - _exponent(x[:, 1:])
    assert gaps.max() > fmt.p + 4 and gaps.min() >= fmt.p - 1
    x, _ = T.zeros_and_overlaps(200, 4, dtype, seed=1)
    prev, cur = x[:, :-1].astype(np.float64), x[:, 1:].astype(np.float64)
    ulp = np.ldexp(1.0, _exponent(np.where(prev == 0, 1.0, prev)) - fmt.p + 1)
    assert ((cur == 0) & (prev != 0)).any() and ((np.abs(cur) == ulp) & (prev != 0)).any()
    x, _ = T.same_sign(100, 4, dtype, seed=1, center=3)
    assert ((np.sign(x) == np.sign(x[:, :1])) | (x == 0)).all()
    assert np.isin(_exponent(x[:, 0]), (3, 4)).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_product_safe_inputs_stay_above_their_floor(dtype):
    x, y = T.product_safe_pairs(200, 8, dtype, seed=2)
    r = T.product_safe_random(200, 8, dtype, seed=2)
    if dtype == "float64":
        for a, floor in ((x, 2.0**-480), (y, 2.0**-480), (r, 2.0**-400)):
            assert ((a == 0) | (np.abs(a) >= floor)).all()
    assert np.array_equal(bits(T.flush_below(np.array([[1.0, 2.0**-60]]), -59)), bits(np.array([[1.0, 0.0]])))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ("add_safe", "sub_fast", "mul_truncated", "dd_mul"))
def test_kernel_families_reach_their_edges(op, dtype):
    n, m, R, count = 4, 4, 4, 200
    for name in T.FAMILIES + T.MORE_FAMILIES:
        x, y = T.family(name, op, dtype, n, m, R, count, seed=5)
        assert x.shape == (count, n) and y.shape == (count, m) and x.dtype == y.dtype == np.dtype(dtype), name
        x2, y2 = T.family(name, op, dtype, n, m, R, count, seed=5)
        assert np.array_equal(bits(x), bits(x2)) and np.array_equal(bits(y), bits(y2)), name
    x, y = T.family("nonfinite", op, dtype, n, m, R, count, 5)
    assert np.isnan(x).any() and np.isposinf(x).any() and np.isneginf(y).any()
    x, _ = T.family("signed_zeros", op, dtype, n, m, R, count, 5)
    assert (x == 0).all() and np.signbit(x).any() and (~np.signbit(x)).any()
    x, y = T.family("exact_cancellation", op, dtype, n, m, R, count, 5)
    sign = -1 if op.startswith("sub") else 1  # the subtractions' y is negated: x - y cancels
    sums = [a + sign * b for a, b in zip(exact_rows(x), exact_rows(y))]
    assert sum(s == 0 for s in sums) > count // 2, "most rows cancel to exactly zero"
    x, _ = T.family("shuffled", op, dtype, n, m, R, count, 5)
    assert (np.abs(x[:, 1:]) > np.abs(x[:, :1])).any(), "terms out of order"
    x, y = T.family("overflow_threshold", op, dtype, n, m, R, count, 5)
    with np.errstate(over="ignore"):
        lead = (x[:, 0] * y[:, 0]) if "mul" in op else (np.abs(x[:, 0]) + np.abs(y[:, 0]))
    assert np.isinf(lead).any() and np.isfinite(lead).any(), "both sides of the threshold"
    if "mul" in op and dtype == "float64":  # products' errors representable: no term below 2^-450
        x, _ = T.family("random", op, dtype, n, m, R, count, 5)
        assert ((x == 0) | (np.abs(x) >= 2.0**-450)).all()
    assert T.skip_family("underflow", op, dtype) == ("mul" in op and dtype == "float64")
    with pytest.raises(ValueError, match="unknown family"):
        T.family("no_such_family", op, dtype, n, m, R, count, 5)


def test_elementary_specials_hold_the_special_values():
    x, y = T.elementary_specials("exp", 3, "float64")
    assert y is None and np.isnan(x[:, 0]).any() and np.isinf(x[:, 0]).any()
    assert (np.signbit(x[:, 0]) & (x[:, 0] == 0)).any() and np.isnan(x[:, 1]).any()
    x, y = T.elementary_specials("pow", 2, "float32")
    assert x.shape == y.shape and x.dtype == np.float32
    x, _ = T.elementary_domain("log", 50, 3, "float64", np.random.default_rng(1))
    assert (x[:, 0] > 0).all() and (x[:, 2] != 0).any()


@settings(max_examples=examples(40), deadline=None)
@given(T.valid_expansions(count=3))
def test_the_valid_strategy_draws_valid_expansions(a):
    assert isinstance(a, ExpansionArray) and a.shape == (3,)
    assert _valid_rows(np.asarray(a.terms), format_of(a.dtype))


@settings(max_examples=examples(40), deadline=None)
@given(T.arbitrary_expansions(finite=True))
def test_the_arbitrary_strategy_draws_finite_scalars(a):
    assert isinstance(a, ExpansionArray) and a.shape == () and np.isfinite(np.asarray(a.terms)).all()
