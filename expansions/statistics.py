"""Reductions and orderings beyond the sum: mean, prod, cumsum, cumprod, min, max, argmin, argmax,
sort, argsort (NumPy's names and ``axis=``, ``keepdims=``, ``out=`` where NumPy has them).

Orders and bounds:

- :func:`mean`: :func:`expansions.reduce.sum` (canonical pairwise tree, bound
  :func:`expansions.bounds.sum_tree`), then the Newton division by the count as one float term
  (bound ``bounds.div(R, fmt, m=1)``, relative to |sum|, plus its underflow term).  An empty mean is NaN.
- :func:`prod`: the pairwise tree "adjacent pairs, odd last carried" (as the sum) of truncated
  products; the relative bound of :func:`expansions.elementwise.power_bound` with n elements applies
  (n - 1 products, each within ``bounds.mul_relative_to_product``).  An empty product is 1.
- :func:`cumsum` / :func:`cumprod`: left to right, element i of the result is (result i-1) op x_i,
  the library's ``+`` or ``*`` (safe additions, each within ``bounds.add_safe`` of its exact sum;
  truncated products; at R = 2 the double-word algorithms, on the engine one compiled loop per row
  where the rows are longer than they are many, :func:`expansions.engine.fused_dw.scan`).
- :func:`min`, :func:`max`, :func:`argmin`, :func:`argmax`: a pairwise tree of exact comparisons
  (:func:`expansions.operations.compare`), ties to the first index; NaN propagates (the first NaN is
  the argmax/argmin, as NumPy); exact.  On long rows the tree runs on the candidates only (the
  elements whose renormalized leading term is within 4 ulp of the extreme one: :func:`_candidates`).
- :func:`sort`, :func:`argsort`: a presort on the renormalized terms (stable sorts by each term, NaN
  last), then odd-even transposition passes with exact comparisons until no adjacent pair is out of
  order (at most n passes), so the result is sorted by exact value whatever the presort did; NaN last
  as in NumPy.  Exact.
"""

from __future__ import annotations

import math

import numpy as np

from . import dispatch
from . import engine as _engine
from .arraytype import ExpansionArray, implements
from .backends import cpu_backend, xp_of
from .elementwise import _one_term, _renorm, isnan
from .numpy_protocol import write_out
from .operations import binary, compare
from .reduce import normalize_axes as _normalize_axes
from .reduce import sum as _sum

__all__ = ["mean", "prod", "cumsum", "cumprod", "min", "max", "argmin", "argmax", "sort", "argsort"]


def _check(x, what):
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"{what} expects an ExpansionArray, got {type(x).__name__}")
    return x


def _rows(x: ExpansionArray, axis):
    """x's terms with ``axis`` (one axis, or None: all, in C order) moved last, as (M, n, R), and the
    shape of the other axes."""
    R = x.nterms
    xp = xp_of(x.terms)
    if axis is None:
        return x.terms.reshape(1, -1, R), (), None
    (a,) = _normalize_axes(axis, x.ndim)
    t = xp.moveaxis(x.terms, a, -2)
    rest = tuple(t.shape[:-2])
    return xp.ascontiguousarray(t).reshape(math.prod(rest), x.shape[a], R), rest, a


def _keep(r: ExpansionArray, x: ExpansionArray, a, keepdims):
    if not keepdims:
        return r
    shape = tuple(1 for _ in x.shape) if a is None else x.shape[:a] + (1,) + x.shape[a + 1:]
    return r.reshape(shape)


def _out(r, out, what):
    return r if out is None else write_out(out, r, what)


def _reject(what, dtype=None, **kw):
    if dtype is not None:
        raise TypeError(f"{what}: dtype= is not supported (the result has the operand's format; use astype)")
    for k, v in kw.items():
        if v is not None and v is not np._NoValue and v is not True:
            raise TypeError(f"{what}: {k}= is not supported for ExpansionArray operands")


@implements(np.mean)
def mean(x, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """``np.mean``: the sum (pairwise tree) divided by the count (see the module docstring)."""
    _reject("np.mean", dtype, where=where)
    s = _sum(_check(x, "mean"), axis=axis, keepdims=keepdims is True)
    n = math.prod(x.shape[a] for a in _normalize_axes(axis, x.ndim))
    r = binary("div", s, float(n))  # n = 0: 0/0, NaN
    return _out(r, out, "np.mean")


def _tree(t, combine):
    """Pairwise tree along axis 1 of (M, n, R) terms: adjacent pairs, odd last carried."""
    xp = xp_of(t)
    while t.shape[1] > 1:
        m = t.shape[1] // 2
        M, _, R = t.shape
        a = ExpansionArray(xp.ascontiguousarray(t[:, 0:2 * m:2]))
        b = ExpansionArray(xp.ascontiguousarray(t[:, 1:2 * m:2]))
        c = combine(a, b).terms
        t = xp.concatenate([c, t[:, 2 * m:]], axis=1) if t.shape[1] % 2 else c
    return t


@implements(np.prod)
def prod(x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``np.prod`` (one axis or all): pairwise tree of truncated products; empty gives 1."""
    _reject("np.prod", dtype, initial=initial, where=where)
    t, rest, a = _rows(_check(x, "prod"), _single_axis(axis, x, "np.prod"))
    xp = xp_of(t)
    if t.shape[1] == 0:
        r = _one_term(xp.ones(rest, dtype=x.dtype), x)
    else:
        r = ExpansionArray(_tree(t, lambda u, v: binary("mul", u, v)).reshape(rest + (x.nterms,)))
    return _out(_keep(r, x, a, keepdims is True), out, "np.prod")


def _compiled_scan(op, t):
    """The engine's running double-word loop (:func:`expansions.engine.fused_dw.scan`) for operation
    ``op`` on (M, n, 2) NumPy terms with n > M (the steps of a row depend on each other, so the loop
    below runs one vectorized operation per step over the M rows), else None: the same bits as that
    loop's ``binary(op, acc, x_i)`` steps."""
    M, n, R = t.shape
    if R != 2 or n <= M or n < 2 or xp_of(t) is not np:  # (max and min are NumPy's names here)
        return None
    be = cpu_backend()
    alg = dispatch.method(op, "auto", 2)
    if be.name != "engine" or alg not in dispatch.R2_METHODS[op]:
        return None
    return lambda row: _engine.dw_scan(alg, row)  # the engine loads its numba modules on first use


def _cumulative(op, x, axis, out, what):
    _check(x, what)
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    t, rest, a = _rows(x, axis)
    xp = xp_of(t)
    res = xp.empty_like(t)
    scan = _compiled_scan(op, t)
    if scan is not None:  # rows longer than they are many: each row's steps in one compiled loop
        for m in range(t.shape[0]):
            res[m] = scan(t[m])
    elif t.shape[1]:
        acc = ExpansionArray(t[:, 0])
        res[:, 0] = acc.terms
        for i in range(1, t.shape[1]):
            acc = binary(op, acc, ExpansionArray(xp.ascontiguousarray(t[:, i])))
            res[:, i] = acc.terms
    r = xp.moveaxis(res.reshape(rest + (t.shape[1], x.nterms)), -2, a)
    return _out(ExpansionArray(xp.ascontiguousarray(r)), out, what)


@implements(np.cumsum)
def cumsum(x, axis=None, dtype=None, out=None):
    """``np.cumsum``: left-to-right safe additions (``axis=None``: of the flattened array)."""
    _reject("np.cumsum", dtype)
    return _cumulative("add", x, axis, out, "np.cumsum")


@implements(np.cumprod)
def cumprod(x, axis=None, dtype=None, out=None):
    """``np.cumprod``: left-to-right truncated products."""
    _reject("np.cumprod", dtype)
    return _cumulative("mul", x, axis, out, "np.cumprod")


def _arg_tree(t, op):
    """Index along axis 1 of (M, n, R) terms of the first extremum ('gt': max, 'lt': min), the first
    NaN where there is one; ties keep the lower index (the left of each pair)."""
    xp = xp_of(t)
    idx = xp.broadcast_to(xp.arange(t.shape[1]), t.shape[:2])
    while t.shape[1] > 1:
        m = t.shape[1] // 2
        a, b = ExpansionArray(t[:, 0:2 * m:2]), ExpansionArray(t[:, 1:2 * m:2])
        na, nb = xp.asarray(isnan(a)), xp.asarray(isnan(b))
        right = (nb & ~na) | (~na & xp.asarray(compare(op, b, a)).reshape(na.shape))
        c = xp.where(right[..., None], b.terms, a.terms)
        ci = xp.where(right, idx[:, 1:2 * m:2], idx[:, 0:2 * m:2])
        if t.shape[1] % 2:
            c = xp.concatenate([c, t[:, 2 * m:]], axis=1)
            ci = xp.concatenate([ci, idx[:, 2 * m:]], axis=1)
        t, idx = c, ci
    return t[:, 0], idx[:, 0]


def _candidates(t, op):
    """The indices along the row (sorted) of the elements of each of the (M, n, R) rows that may be its
    extremum: where the row has a NaN, its NaNs (the first is the answer); else those whose renormalized
    leading term r0 is within 4 ulp of the row's largest ('gt') or smallest ('lt') r0, m.  A
    renormalized expansion's value lies within ulp(r0) <= ulp(m) of r0 (for |r0| <= |m|), so every
    element whose value can reach the extremum's (>= m - ulp(m) for 'gt') is kept; the exact tree then
    decides among them, in index order, so ties still go to the first index."""
    xp = xp_of(t)
    M, n, R = t.shape
    nan = xp.asarray(isnan(ExpansionArray(t)))
    with np.errstate(all="ignore"):
        r0 = _renorm(t, R)[..., 0]
        s = r0 if op == "gt" else -r0
        m = s.max(axis=1, keepdims=True)
        keep = s >= m - 4 * xp.spacing(xp.abs(m))
        keep |= xp.isinf(m) & (s == m)
    out = []
    for k in range(M):
        c = xp.flatnonzero(nan[k]) if bool(nan[k].any()) else xp.flatnonzero(keep[k])
        out.append(c if c.size else xp.arange(n))  # (none kept: a NaN leading term; all, to be safe)
    return out


def _extreme(x, axis, out, keepdims, op, what, want_index):
    t, rest, a = _rows(_check(x, what), axis)
    if t.shape[1] == 0:
        raise ValueError(f"{what}: attempt to get the extremum of an empty sequence")
    if t.shape[1] >= 64 and t.shape[0] <= 16:  # long rows: the exact tree on the candidates alone
        xp = xp_of(t)
        vs, ids = [], []
        for k, c in enumerate(_candidates(t, op)):
            v, i = _arg_tree(t[k:k + 1, c], op)
            vs.append(v[0])
            ids.append(c[i[0]])
        v, i = xp.stack(vs), xp.asarray(ids)
    else:
        v, i = _arg_tree(t, op)
    xp = xp_of(t)
    if want_index:
        r = i.reshape(rest).astype(xp.intp)
        if keepdims is True:
            r = r.reshape(tuple(1 for _ in x.shape) if a is None else x.shape[:a] + (1,) + x.shape[a + 1:])
        if out is not None:
            out[...] = r
            return out
        return r if r.ndim else int(r)
    r = _keep(ExpansionArray(v.reshape(rest + (x.nterms,))), x, a, keepdims is True)
    return _out(r, out, what)


def _single_axis(axis, x, what):
    if axis is None or isinstance(axis, (int, np.integer)):
        return axis
    axes = _normalize_axes(axis, x.ndim)
    if len(axes) == x.ndim:
        return None
    raise TypeError(f"{what}: a tuple of axes is supported only when it is every axis")


@implements(np.max)
def max(x, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001 - NumPy's name
    """``np.max``: exact comparisons, NaN propagates; one axis or all."""
    _reject("np.max", initial=initial, where=where)
    return _extreme(x, _single_axis(axis, x, "np.max"), out, keepdims, "gt", "np.max", False)


@implements(np.min)
def min(x, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001 - NumPy's name
    """``np.min``: exact comparisons, NaN propagates; one axis or all."""
    _reject("np.min", initial=initial, where=where)
    return _extreme(x, _single_axis(axis, x, "np.min"), out, keepdims, "lt", "np.min", False)


@implements(np.argmax)
def argmax(x, axis=None, out=None, *, keepdims=False):
    """``np.argmax``: index of the first maximum (of the first NaN if any), over the flattened array
    when ``axis`` is None."""
    return _extreme(x, axis, out, keepdims, "gt", "np.argmax", True)


@implements(np.argmin)
def argmin(x, axis=None, out=None, *, keepdims=False):
    """``np.argmin``: index of the first minimum (of the first NaN if any)."""
    return _extreme(x, axis, out, keepdims, "lt", "np.argmin", True)


def _sorted_rows(t):
    """(sorted terms, permutation) of each row of (M, n, R) terms, by exact value, NaN last."""
    xp = xp_of(t)
    M, n, R = t.shape
    r = _renorm(t, R) if n else t
    order = xp.broadcast_to(xp.arange(n), (M, n)).copy()
    nan = xp.asarray(isnan(ExpansionArray(r)))
    with np.errstate(all="ignore"):
        keys = [xp.where(nan, 0, r[..., j]) for j in range(R - 1, -1, -1)] + [nan.astype(t.dtype)]
    stable = {"kind": "stable"} if xp is np else {}  # CuPy's sort is always stable
    for key in keys:  # least significant key first, stable sorts
        k = xp.take_along_axis(key, order, axis=1)
        order = xp.take_along_axis(order, xp.argsort(k, axis=1, **stable), axis=1)
    v = xp.take_along_axis(t, order[..., None], axis=1)
    for _ in range(n + 1):  # odd-even transposition with exact comparisons; at most n rounds
        swapped = False
        for parity in (0, 1):
            m = (n - parity) // 2
            if m == 0:
                continue
            ia, ib = slice(parity, parity + 2 * m, 2), slice(parity + 1, parity + 2 * m, 2)
            a, b = ExpansionArray(v[:, ia]), ExpansionArray(v[:, ib])
            na, nb = xp.asarray(isnan(a)), xp.asarray(isnan(b))
            swap = (na & ~nb) | xp.asarray(compare("gt", a, b)).reshape(na.shape)
            if bool(swap.any()):
                swapped = True
                va, vb = v[:, ia].copy(), v[:, ib].copy()
                v[:, ia] = xp.where(swap[..., None], vb, va)
                v[:, ib] = xp.where(swap[..., None], va, vb)
                oa, ob = order[:, ia].copy(), order[:, ib].copy()
                order[:, ia] = xp.where(swap, ob, oa)
                order[:, ib] = xp.where(swap, oa, ob)
        if not swapped:
            break
    return v, order


def _sort_axis(x, axis, kind, order, what):
    if order is not None:
        raise TypeError(f"{what}: order= is not supported for ExpansionArrays")
    _check(x, what)
    if axis is None:
        x, axis = x.reshape(-1), 0
    t, rest, a = _rows(x, axis)
    v, perm = _sorted_rows(t)
    xp = xp_of(t)
    n = t.shape[1]
    vals = xp.ascontiguousarray(xp.moveaxis(v.reshape(rest + (n, x.nterms)), -2, a))
    idx = xp.ascontiguousarray(xp.moveaxis(perm.reshape(rest + (n,)), -1, a))
    return ExpansionArray(vals), idx


@implements(np.sort)
def sort(x, axis=-1, kind=None, order=None, *, stable=None):
    """``np.sort``: a sorted copy by exact value, NaN last (``axis=None``: the flattened array)."""
    return _sort_axis(x, axis, kind, order, "np.sort")[0]


@implements(np.argsort)
def argsort(x, axis=-1, kind=None, order=None, *, stable=None):
    """``np.argsort``: the permutation that sorts by exact value, NaN last (a 0-d x: ``[0]``, as NumPy)."""
    if _check(x, "np.argsort").ndim == 0 and order is None:
        return xp_of(x.terms).zeros(1, dtype=np.intp)
    return _sort_axis(x, axis, kind, order, "np.argsort")[1]


@implements("sort_in_place")
def sort_in_place(x, axis=-1, kind=None, order=None):
    """``x.sort()``: x's terms replaced by the sorted ones (returns None, as NumPy)."""
    x.terms[...] = sort(x, axis, kind, order).terms


np_amax, np_amin = getattr(np, "amax", None), getattr(np, "amin", None)
for _f, _impl in [(np_amax, max), (np_amin, min)]:
    if _f is not None and _f not in (np.max, np.min):
        implements(_f)(_impl)
