"""The operators' common case (two NumPy expansions of one shape and format, or an expansion and a
Python float or int of at most 53 bits, the default method: ``operations.binary``'s first branch)
gives the bits of the general path (promotion, broadcasting, the same algorithm named explicitly),
on 0-d, empty, strided and non-finite operands, at R = 2 (the double-word loops) and above."""

from __future__ import annotations

import numpy as np
import pytest

import expansions as ex
from expansions import dispatch

OPS = {"add": (lambda a, b: a + b, ex.add), "sub": (lambda a, b: a - b, ex.sub),
       "mul": (lambda a, b: a * b, ex.mul), "div": (lambda a, b: a / b, ex.div)}


def _bits(v):
    return v.terms.view(np.uint64 if v.dtype == np.float64 else np.uint32)


def _same(got, want):
    assert got.shape == want.shape and got.nterms == want.nterms and got.dtype == want.dtype
    assert np.array_equal(_bits(got), _bits(want))


def _operands(R, dtype, seed):
    x = ex.random((37,), terms=R, dtype=dtype, seed=seed)
    t = x.terms.copy()
    with np.errstate(all="ignore"):
        t[:6, 0] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(dtype).max], dtype=dtype)
        t[:6, 1:] = 0
        t[6, 0] = np.finfo(dtype).tiny
    return ex.from_terms(t)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("R", [2, 3, 4])
def test_common_case_equals_the_general_path(R, dtype):
    x, y = _operands(R, dtype, 1), _operands(R, dtype, 2)
    frozen = x.terms.copy()
    frozen.flags.writeable = False  # a read-only operand (the R = 2 direct entry needs writable ones)
    cases = [(x, y), (x[3], y[5]), (x[:0], y[:0]), (x[:36:2], y[1::2]), (x[4:20].reshape(4, 4), y[:16].reshape(4, 4)),
             (ex.ExpansionArray(frozen), y)]
    scalars = [1.5, -0.0, 0.0, float("nan"), float("inf"), 3, -(2**53), 2**53 + 1, 1e300, 5e-324]
    for name, (operator, function) in OPS.items():
        alg = dispatch.method(name, "auto", R)
        with np.errstate(all="ignore"):
            for a, b in cases:
                _same(operator(a, b), function(a, b, method=alg))
            for v in scalars:
                for a in (x, x[7]):
                    for left, right in ((a, v), (v, a)):
                        try:
                            want = function(left, right, method=alg)
                        except ValueError:  # a value float32 terms cannot hold: refused on both paths
                            with pytest.raises(ValueError, match="cannot be represented exactly"):
                                operator(left, right)
                            continue
                        _same(operator(left, right), want)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cumulative_sum_and_product_at_r2_equal_the_step_by_step_loop(dtype):
    """np.cumsum and np.cumprod at R = 2 on long rows run one compiled loop per row on the engine: the
    bits of the step-by-step ``acc op x_i`` (the twins' backend runs that loop), on operands that are
    not double words, zeros, cancellations, infinities and NaN."""
    from expansions import backends

    rng = np.random.default_rng(3)
    t = ex.random((3, 700), terms=2, dtype=dtype, seed=4).terms.copy()
    with np.errstate(all="ignore"):
        t[0, 100:110] = -t[0, 90:100]  # exact cancellations
        t[1, 50] = [np.inf, 0]
        t[1, 400] = [np.nan, 0]
        t[2, ::37] = 0
        t[2, 5::41, 1] = t[2, 5::41, 0] * np.asarray(0.75, dtype)  # not double words
        t[:, 600:] *= np.asarray(rng.choice([1e-30, 1e30], (3, 100, 1)), dtype)
    x = ex.from_terms(t)
    for f in (np.cumsum, np.cumprod):
        for axis in (1, None):
            with np.errstate(all="ignore"):
                got = f(x, axis=axis)
                backends.set_cpu_backend("twins")
                try:
                    want = f(x, axis=axis)
                finally:
                    backends.set_cpu_backend(None)
            _same(got, want)


@pytest.mark.parametrize("R, dtype", [(2, "float64"), (3, "float32"), (4, "float64")])
def test_extrema_of_long_rows_equal_the_full_tree(R, dtype):
    """np.max, np.min, np.argmax, np.argmin on long rows take the exact tree on the candidates only
    (renormalized leading terms within a few ulp of the extreme one): the full tree's answer on ties
    (first index), values equal in their leading terms and differing in their tails, terms not
    renormalized, signed zeros, infinities and NaN."""
    from expansions import statistics

    rng = np.random.default_rng(R)
    base = ex.random((5, 300), terms=R, dtype=dtype, seed=R).terms.copy()
    rows = [base[0]]
    tied = base[1].copy()
    tied[[40, 90, 200]] = tied[10]  # exact ties with the row's ...
    tied[10] = tied[[np.argmax(tied[:, 0])]]  # ... largest leading term
    rows.append(tied)
    tails = base[2].copy()
    tails[:, 0] = tails[0, 0]  # one leading term, the tails decide
    rows.append(tails)
    raw = base[3].copy()
    raw[::7, 1] = raw[::7, 0] * np.asarray(0.75, dtype)  # not renormalized: the leading term misleads
    rows.append(raw)
    special = np.zeros_like(base[4])
    special[::3, 0] = -0.0
    special[5, 0], special[77, 0] = np.inf, np.inf
    rows.append(special)
    withnan = base[4].copy()
    withnan[[30, 120], 0] = np.nan
    rows.append(withnan)
    neg = -np.abs(base[0])
    neg[:, 0] = -(2.0 ** rng.integers(-3, 3, neg.shape[0])).astype(dtype)  # powers of two: binade edges
    rows.append(neg)
    t = np.stack(rows)
    x = ex.from_terms(t)
    for op, fv, fi in (("gt", np.max, np.argmax), ("lt", np.min, np.argmin)):
        with np.errstate(all="ignore"):
            want_v, want_i = statistics._arg_tree(t, op)
            got_v, got_i = fv(x, axis=1), fi(x, axis=1)
        assert np.array_equal(np.asarray(got_i), np.asarray(want_i))
        _same(got_v, ex.from_terms(want_v))
        for k in range(t.shape[0]):  # one row at a time (axis=None)
            assert fi(x[k]) == int(want_i[k])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_to_float_at_r2_is_the_correctly_rounded_value(dtype):
    """to_float at R = 2 (one float64 addition of the two terms) equals the exact value rounded to
    nearest even through its rational: ties both ways, overflow to inf, subnormals, signed zeros,
    terms that overlap, non-finite terms by the library's rule."""
    from fractions import Fraction

    from expansions.convert import fraction_to_float

    rng = np.random.default_rng(9)
    info = np.finfo(dtype)
    n = 3000
    x0 = (rng.uniform(1, 2, n) * np.exp2(rng.integers(info.minexp, info.maxexp, n))).astype(dtype)
    ulp = np.spacing(x0.astype(np.float64))
    x1 = (rng.choice([-1, 1, 0.5, -0.5, 0.25, 3], n) * ulp * rng.choice([1, 0.5, 2.0**-30], n)).astype(dtype)
    t = np.stack([x0, x1], axis=1)
    with np.errstate(all="ignore"):
        t[:10] = np.array([[info.max, info.max], [-0.0, -0.0], [0.0, -0.0], [info.tiny, -info.tiny],
                           [np.inf, -np.inf], [1.0, np.inf], [np.nan, 0.0], [info.max, np.spacing(info.max) / 2],
                           [1.0, 2.0**-53], [1.0 + 2.0**-52, 2.0**-53]], dtype=dtype)
    x = ex.from_terms(t)
    got = x.to_float()
    for k in range(n):
        row = t[k]
        if np.isfinite(row).all():
            want = fraction_to_float(Fraction(float(row[0])) + Fraction(float(row[1])))
            want = np.copysign(want, row[0]) if want == 0 else want
        else:
            want = x[k]._rounded_values()
        assert np.float64(got[k]).tobytes() == np.float64(want).tobytes() or (np.isnan(got[k]) and np.isnan(want)), k
