"""``np.einsum`` on ExpansionArrays (expansions.numpy_einsum): the bits of the equivalent library call
(``ex.matmul``, ``ex.dot``, ``ex.tensordot``, ``ex.sum``, ``*``) for every supported pattern, NumPy's
shapes (``np.einsum`` on the float parts), empty and 0-size dimensions, the stated bounds against
exact Fractions on badly scaled operands, and the refused arguments."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers import exact_array as fr
from helpers import same

import expansions as ex
from expansions import bounds
from expansions.formats import format_of

FORMATS = [(2, "float64"), (4, "float64"), (2, "float32"), (3, "float32")]
def rand(shape, R, dtype, seed):
    return ex.random(shape, terms=R, dtype=dtype, seed=seed, exponent_range=(-4, 4),
                     min_exponent=-400 if dtype == "float64" else -50)


def diag(x):
    """The diagonal of a square matrix of expansions, taken on the terms."""
    n = x.shape[0]
    return ex.from_terms(np.ascontiguousarray(x.terms[np.arange(n), np.arange(n)]))


def col(v):
    return v.reshape(v.shape + (1,))


# (subscripts, operand shapes, the equivalent library call)
PATTERNS = [
    ("ij,jk->ik", [(3, 4), (4, 5)], lambda a, b: ex.matmul(a, b)),
    ("ij,jk", [(3, 4), (4, 5)], lambda a, b: ex.matmul(a, b)),
    ("ij,jk->ik", [(24, 24), (24, 24)], lambda a, b: ex.matmul(a, b)),
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)], lambda a, b: ex.matmul(a, b)),
    ("bij,bjk", [(2, 3, 4), (2, 4, 3)], lambda a, b: ex.tensordot(a, b, axes=([0, 2], [0, 1]))),
    ("bij,jk->bik", [(2, 3, 4), (4, 5)], lambda a, b: ex.matmul(a, b)),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)], lambda a, b: ex.matmul(a, b)),
    ("ij,j->i", [(3, 4), (4,)], lambda a, v: ex.matmul(a, v)),
    ("ij,j", [(5, 6), (6,)], lambda a, v: ex.dot(a, v)),
    ("i,ij->j", [(4,), (4, 3)], lambda v, a: ex.matmul(v, a)),
    ("bij,bj->bi", [(3, 4, 5), (3, 5)], lambda a, v: ex.matmul(a, col(v)).reshape((3, 4))),
    ("i,i->", [(7,), (7,)], lambda v, w: ex.dot(v, w)),
    ("i,i", [(7,), (7,)], lambda v, w: ex.dot(v, w)),
    ("ji,jk->ik", [(4, 3), (4, 5)], lambda a, b: ex.matmul(a.T, b)),
    ("ij,kj->ik", [(3, 4), (5, 4)], lambda a, b: ex.matmul(a, b.T)),
    ("ij,jk->ki", [(3, 4), (4, 5)], lambda a, b: ex.matmul(a, b).T),
    ("ijk,jk->i", [(3, 4, 2), (4, 2)], lambda x, y: ex.tensordot(x, y, axes=([1, 2], [0, 1]))),
    ("ij,jk->i", [(3, 4), (4, 5)], lambda a, b: ex.matmul(a, ex.sum(b, axis=1))),
    ("i,i->i", [(6,), (6,)], lambda v, w: v * w),
    ("ij,ij->ij", [(2, 3), (2, 3)], lambda a, b: a * b),
    ("i,j->ij", [(3,), (4,)], lambda v, w: v.reshape((3, 1)) * w.reshape((1, 4))),
    ("i,j", [(3,), (4,)], lambda v, w: v.reshape((3, 1)) * w.reshape((1, 4))),
    ("ij,j->ij", [(2, 3), (3,)], lambda a, v: a * v),
    (",i->i", [(), (3,)], lambda s, v: s * v),
    ("ii->", [(5, 5)], lambda x: ex.sum(diag(x))),
    ("ii", [(5, 5)], lambda x: ex.sum(diag(x))),
    ("ii->i", [(5, 5)], lambda x: diag(x)),
    ("ij->ji", [(3, 4)], lambda x: ex.transpose(x)),
    ("ji", [(3, 4)], lambda x: ex.transpose(x)),
    ("ij", [(3, 4)], lambda x: x),
    ("ij->i", [(3, 4)], lambda x: ex.sum(x, axis=1)),
    ("ij->j", [(3, 4)], lambda x: ex.sum(x, axis=0)),
    ("ij->", [(3, 4)], lambda x: ex.sum(x)),
    ("ijk->ki", [(3, 4, 2)], lambda x: ex.transpose(ex.sum(x, axis=1))),
    ("...i->...", [(2, 3, 4)], lambda x: ex.sum(x, axis=-1)),
    ("i->", [(0,)], lambda x: ex.sum(x)),
    ("ij,jk->ik", [(2, 0), (0, 3)], lambda a, b: ex.matmul(a, b)),
    ("ij,jk->ik", [(0, 3), (3, 2)], lambda a, b: ex.matmul(a, b)),
    ("bij,bjk->bik", [(0, 2, 3), (0, 3, 2)], lambda a, b: ex.matmul(a, b)),
    ("ii->i", [(0, 0)], lambda x: diag(x)),
    ("ij->i", [(3, 0)], lambda x: ex.sum(x, axis=1)),
    ("i,j->ij", [(0,), (3,)], lambda v, w: v.reshape((0, 1)) * w.reshape((1, 3))),
]


@pytest.mark.parametrize("R,dtype", FORMATS)
@pytest.mark.parametrize("spec,shapes,call", PATTERNS, ids=[f"{p[0]}{p[1]}" for p in PATTERNS])
def test_einsum_has_the_bits_of_the_library_call(spec, shapes, call, R, dtype):
    ops = [rand(s, R, dtype, 10 + i) for i, s in enumerate(shapes)]
    got = np.einsum(spec, *ops)
    want = call(*ops)
    assert isinstance(got, ex.ExpansionArray)
    assert got.shape == np.einsum(spec, *[x.to_float() for x in ops]).shape
    assert same(got, want), spec


@pytest.mark.parametrize("R,dtype", [(2, "float64"), (3, "float32")])
def test_einsum_values_are_numpys_on_exact_small_integers(R, dtype):
    """Small integers: every sum and product exact, so the values are NumPy's einsum of the floats."""
    rng = np.random.default_rng(3)
    for spec, shapes in [(p[0], p[1]) for p in PATTERNS] + [("ij,jk->i", [(2, 3), (3, 4)]), ("iij->j", [(3, 3, 2)])]:
        fs = [rng.integers(-8, 9, s).astype(dtype) for s in shapes]
        got = np.einsum(spec, *[ex.array(f, terms=R, dtype=dtype) for f in fs])
        want = np.einsum(spec, *[f.astype(np.float64) for f in fs])
        assert got.shape == want.shape, spec
        assert (fr(got) == np.asarray(want).astype(object)).all(), spec


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_mixed_operands_promote_as_matmul(R, dtype):
    a = rand((3, 4), R, dtype, 1)
    f = np.random.default_rng(2).standard_normal((4, 2)).astype(dtype)
    assert same(np.einsum("ij,jk->ik", a, f), ex.matmul(a, f))
    assert same(np.einsum("ki,ij->kj", f.T, a.T), ex.matmul(f.T, a.T))
    assert same(np.einsum("ij,j->ij", a, f[:, 0]), a * f[:, 0])
    w = rand((4,), 2, "float32", 3)  # another format: promoted to the wider
    assert same(np.einsum("ij,j->i", a, w), ex.matmul(a, w))


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_out_optimize_and_the_interleaved_form(R, dtype):
    a, b = rand((3, 4), R, dtype, 4), rand((4, 2), R, dtype, 5)
    want = ex.matmul(a, b)
    out = ex.zeros((3, 2), terms=R, dtype=dtype)
    r = np.einsum("ij,jk->ik", a, b, out=out)
    assert r is out and same(out, want)
    assert same(np.einsum("ij,jk->ik", a, b, optimize=True), want)
    assert same(np.einsum("ij,jk->ik", a, b, optimize="greedy"), want)
    assert same(np.einsum(a, [0, 1], b, [1, 2], [0, 2]), want)
    assert same(np.einsum(a, [0, 1], b, [1, 2]), want)
    assert same(np.einsum(a, [Ellipsis, 1], [Ellipsis]), ex.sum(a, axis=1))
    with pytest.raises(ValueError):
        np.einsum("ij,jk->ik", a, b, out=ex.zeros((2, 3), terms=R, dtype=dtype))


def test_refused_arguments_name_themselves():
    a, b = rand((2, 2), 2, "float64", 6), rand((2, 2), 2, "float64", 7)
    for kw in ({"dtype": np.float64}, {"order": "C"}, {"casting": "unsafe"}):
        (name,) = kw
        with pytest.raises(TypeError, match=name):
            np.einsum("ij,jk->ik", a, b, **kw)
    assert same(np.einsum("ij,jk->ik", a, b, dtype=None, order="K", casting="safe"), ex.matmul(a, b))
    with pytest.raises(TypeError, match="two"):
        np.einsum("ij,jk,kl->il", a, b, a)


def test_invalid_subscripts_raise_like_numpy():
    a, b = rand((2, 3), 2, "float64", 8), rand((4, 2), 2, "float64", 9)
    for spec, ops in [("ij,jk->ik", (a, b)), ("ii->i", (a,)), ("ijk->i", (a,)), ("ij->k", (a,)),
                      ("ij->ii", (a,)), ("i1->i", (a,)), ("ij,jk", (a,)), ("...i->", (a,))]:
        with pytest.raises(ValueError):
            np.einsum(spec, *[x.to_float() for x in ops])
        with pytest.raises(ValueError):
            np.einsum(spec, *ops)
    # a label of size 1 broadcasts, as in NumPy
    c = rand((2, 1), 2, "float64", 10)
    got = np.einsum("ij,jk->ik", c, rand((3, 2), 2, "float64", 11))
    assert got.shape == np.einsum("ij,jk->ik", c.to_float(), np.ones((3, 2))).shape
    assert np.einsum("ij,ij->ij", rand((1, 3), 2, "float64", 12), a).shape == a.shape


def scaled(x, rows, cols=None):
    """x with each row (and column) multiplied by a power of two: exact, on the terms."""
    t = x.terms * np.ldexp(1.0, rows)[:, None, None].astype(x.dtype)
    if cols is not None:
        t = t * np.ldexp(1.0, cols)[None, :, None].astype(x.dtype)
    return ex.from_terms(np.ascontiguousarray(t))


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_bounds_on_badly_scaled_operands(R, dtype):
    fmt = format_of(dtype)
    p = fmt.p
    span = 60 if dtype == "float64" else 12
    rng = np.random.default_rng(13)
    n, k, m = 5, 7, 4
    a = scaled(rand((n, k), R, dtype, 14), rng.integers(-span, span, n), rng.integers(-span, span, k))
    b = scaled(rand((k, m), R, dtype, 15), rng.integers(-span, span, k), rng.integers(-span, span, m))
    qa, qb = fr(a), fr(b)
    # matrix product: matmul's componentwise bound
    c = bounds.matmul(k, R, fmt).value
    absolute = max(bounds.dot_underflow_term(k, R, fmt), Fraction(R, 2) * fmt.eta)
    got = fr(np.einsum("ij,jk->ik", a, b))
    for i in range(n):
        for j in range(m):
            exact = sum(qa[i, t] * qb[t, j] for t in range(k))
            scale = sum(abs(qa[i, t] * qb[t, j]) for t in range(k))
            assert abs(got[i, j] - exact) <= c * scale + absolute, (i, j)
    # a sum first ("ij,jk->i": b summed over k), then the product: the composed bound
    s = bounds.sum_tree(m, R, p).value
    cv = bounds.matmul(k, R, fmt).value
    got = fr(np.einsum("ij,jk->i", a, b))
    for i in range(n):
        exact = sum(qa[i, t] * qb[t, j] for t in range(k) for j in range(m))
        scale = sum(abs(qa[i, t] * qb[t, j]) for t in range(k) for j in range(m))
        assert abs(got[i] - exact) <= ((1 + cv) * (1 + s) - 1) * scale + 2 * absolute, i
    # inner product: the element-wise tree's bounds.dot
    v, w = a[0], b[:, 1]
    d = bounds.dot(k, R, p).value
    exact = sum(qa[0, t] * qb[t, 1] for t in range(k))
    scale = sum(abs(qa[0, t] * qb[t, 1]) for t in range(k))
    assert abs(fr(np.einsum("i,i", v, w)) - exact) <= d * scale + absolute
    # trace and row sums: bounds.sum_tree relative to the sum of the absolute values
    sq = scaled(rand((k, k), R, dtype, 16), rng.integers(-span, span, k), rng.integers(-span, span, k))
    q = fr(sq)
    tr = sum(q[t, t] for t in range(k))
    assert abs(fr(np.einsum("ii", sq)) - tr) <= bounds.sum_tree(k, R, p).value * sum(abs(q[t, t]) for t in range(k))
    rows = fr(np.einsum("ij->i", sq))
    for i in range(k):
        assert abs(rows[i] - sum(q[i])) <= bounds.sum_tree(k, R, p).value * sum(abs(x) for x in q[i])
    # outer product: one truncated product per entry
    mu = bounds.mul_relative_to_product(R, p)
    o = fr(np.einsum("i,j->ij", v, w))
    for i in range(k):
        for j in range(k):
            e = qa[0, i] * qb[j, 1]
            assert abs(o[i, j] - e) <= mu * abs(e) + bounds.mul_underflow_term(R, fmt), (i, j)


@pytest.mark.parametrize("R,dtype", FORMATS)
def test_matmul_bound_on_the_slice_path(R, dtype):
    """A product large enough for matmul's exact slices, rows and columns scaled apart: every entry
    within ``bounds.matmul`` of the exact value."""
    fmt = format_of(dtype)
    rng = np.random.default_rng(17)
    n = 24
    a = scaled(rand((n, n), R, dtype, 18), rng.integers(-6, 6, n), rng.integers(-6, 6, n))
    b = scaled(rand((n, n), R, dtype, 19), rng.integers(-6, 6, n), rng.integers(-6, 6, n))
    extra = ex.slices.componentwise_extra(a.terms, b.terms, R, np.dtype(dtype))
    assert ex.reduce.choose_method(n, n, n, R, np.dtype(dtype), "auto", extra) == "slices"
    got = np.einsum("ik,kj", a, b)
    assert same(got, ex.matmul(a, b))
    qa, qb = fr(a), fr(b)
    exact, scale = qa.dot(qb), abs(qa).dot(abs(qb))
    tol = bounds.matmul(n, R, fmt).value * scale + max(bounds.dot_underflow_term(n, R, fmt), Fraction(R, 2) * fmt.eta)
    assert (abs(fr(got) - exact) <= tol).all()
