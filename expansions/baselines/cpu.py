"""NumPy twins of the sequential baselines (:mod:`expansions.baselines.reference`): the same operations
in the same order, vectorized over expansions.  Array-module generic: they run on CuPy arrays too.

Each function takes 2-D arrays of terms, shape (count, R), one expansion per row (the library's
layout), and returns a new (count, R) array; the ``*_soa`` variants take and return the transposed
layout, shape (R, count), term k of every expansion contiguous (the layout of the ``*_soa`` kernels).
Each mirrors the one-thread kernel of the same name in ``expansions/cuda/baselines.cuh``; the two
agree bit for bit (design decision 4) and both agree with the exact reference.

Data-dependent branches of the scalar algorithms (Renormalize, Double-Accumulate, VecSumErrBranch)
become selects, row by row.  Sorting by decreasing magnitude is NumPy's stable argsort of ``-|t|``
(the kernels' sorting and merging networks break ties by position, so they give the same order).
"""

from __future__ import annotations

import inspect

from ..cpu.eft import fast_two_sum, two_prod, two_sum
from ..cpu.kernels import _vec_sum, _vec_sum_err_branch, nonfinite_epilogue
from ..cpu.lanes import array_module
from ..dw import cpu as dw

# ---------------------------------------------------------------------------------------------
# double-double (R = 2)


def dd_add_sloppy(x, y):
    """Twin of kernel ``dd_add_sloppy<T>`` (QD sloppy add, :func:`expansions.dw.cpu.qd_add_sloppy`)."""
    _check(x, y, 2)
    r = dw.qd_add_sloppy(x[:, 0], x[:, 1], y[:, 0], y[:, 1])
    return nonfinite_epilogue(_stack(r), (x, y), x[:, 0] + y[:, 0])


def dd_add_ieee(x, y):
    """Twin of kernel ``dd_add_ieee<T>`` (QD IEEE add, :func:`expansions.dw.cpu.qd_add_ieee`)."""
    _check(x, y, 2)
    r = dw.qd_add_ieee(x[:, 0], x[:, 1], y[:, 0], y[:, 1])
    return nonfinite_epilogue(_stack(r), (x, y), x[:, 0] + y[:, 0])


def dd_mul(x, y):
    """Twin of kernel ``dd_mul<T>`` (:func:`expansions.dw.cpu.dw_times_dw1`)."""
    _check(x, y, 2)
    r = dw.dw_times_dw1(x[:, 0], x[:, 1], y[:, 0], y[:, 1])
    return nonfinite_epilogue(_stack(r), (x, y), x[:, 0] * y[:, 0])


# ---------------------------------------------------------------------------------------------
# quad-double (R = 4)


def three_sum(a, b, c):
    u, v = two_sum(a, b)
    r0, w = two_sum(u, c)
    r1, r2 = two_sum(v, w)
    return r0, r1, r2


def three_sum2(a, b, c):
    u, v = two_sum(a, b)
    r0, w = two_sum(u, c)
    return r0, v + w


def qd_renormalize(a):
    """Twin of ``qd_renormalize`` (columns in, (count, 4) out): the emitting branch as selects."""
    xp = array_module(a[0])
    n = len(a)
    t = [None] * n
    s, t[n - 1] = fast_two_sum(a[n - 2], a[n - 1])
    for i in range(n - 3, -1, -1):
        s, t[i + 1] = fast_two_sum(a[i], s)
    t[0] = s
    b = xp.zeros((s.shape[0], 4), dtype=s.dtype)
    k = xp.zeros(s.shape[0], dtype=xp.int64)
    s = t[0]
    for i in range(1, n):
        s, e = fast_two_sum(s, t[i])
        emit = e != 0
        for m in range(4):
            b[:, m] = xp.where(emit & (k == m), s, b[:, m])
        s = xp.where(emit, e, s)
        k = k + emit
    for m in range(4):
        b[:, m] = xp.where(k == m, s, b[:, m])
    return b


def double_accumulate(u, v, x):
    """Twin of ``double_accumulate``: returns ``(s, u, v)``."""
    xp = array_module(u)
    zero = u.dtype.type(0)
    s, v = two_sum(v, x)
    s, u = two_sum(u, s)
    uz = u == 0
    u = xp.where(uz, s, u)
    s = xp.where(uz, zero, s)
    vz = v == 0
    v = xp.where(vz, u, v)
    u = xp.where(vz, s, u)
    s = xp.where(vz, zero, s)
    return s, u, v


def qd_add_sloppy(x, y):
    """Twin of kernel ``qd_add_sloppy<T>``."""
    _check(x, y, 4)
    x0, e0 = two_sum(x[:, 0], y[:, 0])
    t1, e1 = two_sum(x[:, 1], y[:, 1])
    t2, e2 = two_sum(x[:, 2], y[:, 2])
    t3, e3 = two_sum(x[:, 3], y[:, 3])
    x1, u = two_sum(t1, e0)
    x2, w, v = three_sum(t2, u, e1)
    x3, z = three_sum2(t3, w, e2)
    x4 = (z + v) + e3
    return nonfinite_epilogue(qd_renormalize([x0, x1, x2, x3, x4]), (x, y), x0)


def qd_add_ieee(x, y):
    """Twin of kernel ``qd_add_ieee<T>`` (QD-Add-Accurate)."""
    _check(x, y, 4)
    xp = array_module(x)
    srt = _sorted_by_magnitude(xp.concatenate([x, y], axis=1))
    N = x.shape[0]
    c = xp.zeros((N, 4), dtype=x.dtype)
    u = xp.zeros(N, dtype=x.dtype)
    v = xp.zeros(N, dtype=x.dtype)
    k = xp.zeros(N, dtype=xp.int64)
    for i in range(8):
        live = k < 4
        s, u2, v2 = double_accumulate(u, v, srt[:, i])
        u = xp.where(live, u2, u)
        v = xp.where(live, v2, v)
        emit = live & (s != 0)
        for m in range(4):
            c[:, m] = xp.where(emit & (k == m), s, c[:, m])
        k = k + emit
    uv = u + v
    for m in range(4):
        c[:, m] = xp.where((k == m) & (k <= 2), u, c[:, m])
        if m >= 1:
            c[:, m] = xp.where((k == m - 1) & (k <= 2), v, c[:, m])
    c[:, 3] = xp.where(k == 3, uv, c[:, 3])
    r = qd_renormalize([c[:, m] for m in range(4)])
    return nonfinite_epilogue(r, (x, y), x[:, 0] + y[:, 0])


def qd_mul(x, y):
    """Twin of kernel ``qd_mul<T>`` (QD's accurate multiplication)."""
    _check(x, y, 4)
    p, q = {}, {}
    for k in range(4):
        for i in range(k + 1):
            p[i, k - i], q[i, k - i] = two_prod(x[:, i], y[:, k - i])
    p4 = [x[:, i] * y[:, 4 - i] for i in (1, 2, 3)]
    x0 = p[0, 0]
    x1, c1, c2 = three_sum(p[0, 1], p[1, 0], q[0, 0])
    x2, d1, d2 = six_three_sum(p[0, 2], p[1, 1], p[2, 0], q[0, 1], q[1, 0], c1)
    x3, f1 = nine_two_sum(p[0, 3], p[1, 2], p[2, 1], p[3, 0], q[0, 2], q[1, 1], q[2, 0], c2, d1)
    x4 = nine_one_sum(*p4, q[0, 3], q[1, 2], q[2, 1], q[3, 0], d2, f1)
    return nonfinite_epilogue(qd_renormalize([x0, x1, x2, x3, x4]), (x, y), x0)


def six_three_sum(a, b, c, d, e, f):
    s0, s1, s2 = three_sum(a, b, c)
    t0, t1, t2 = three_sum(d, e, f)
    r0, g0 = two_sum(s0, t0)
    h1, g1 = two_sum(s1, t1)
    r1, k1 = two_sum(h1, g0)
    r2 = ((s2 + t2) + g1) + k1
    return r0, r1, r2


def nine_two_sum(*a):
    ab = dw.qd_add_sloppy(a[0], a[1], a[2], a[3])
    cd = dw.qd_add_sloppy(a[4], a[5], a[6], a[7])
    s = dw.qd_add_sloppy(*ab, *cd)
    return dw.qd_add_sloppy(*s, a[8], array_module(a[8]).zeros_like(a[8]))


def nine_one_sum(*a):
    s = a[0]
    for t in a[1:]:
        s = s + t
    return s


# ---------------------------------------------------------------------------------------------
# certified operations, any R


def certified_add(x, y, R):
    """Twin of kernel ``certified_add<T, R>``: stable merge (sort) by decreasing magnitude, VecSum,
    VecSumErrBranch to R terms."""
    _check(x, y, R)
    xp = array_module(x)
    r = _vec_sum_err_branch(_vec_sum(_sorted_by_magnitude(xp.concatenate([x, y], axis=1))), R)
    return nonfinite_epilogue(r, (x, y), x[:, 0] + y[:, 0])


def certified_mul_terms(x, y, R):
    """Twin of ``certified_mul_terms``: (count, R^2 + 2R - 1) in the collection order."""
    xp = array_module(x)
    cols = []
    for k in range(R):
        for i in range(k + 1):
            cols += two_prod(x[:, i], y[:, k - i])
    cols += [x[:, i] * y[:, R - i] for i in range(1, R)]
    return xp.stack(cols, axis=1)


def certified_mul(x, y, R):
    """Twin of kernel ``certified_mul<T, R>``: the R^2 + 2R - 1 terms sorted by decreasing magnitude
    (stable), VecSum, VecSumErrBranch to R terms."""
    _check(x, y, R)
    r = _vec_sum_err_branch(_vec_sum(_sorted_by_magnitude(certified_mul_terms(x, y, R))), R)
    return nonfinite_epilogue(r, (x, y), x[:, 0] * y[:, 0])


# ---------------------------------------------------------------------------------------------
# structure-of-arrays variants: (R, count) in and out


def _soa(f, name):
    def g(x, y, *args):
        xp = array_module(x)
        return xp.ascontiguousarray(f(xp.ascontiguousarray(x.T), xp.ascontiguousarray(y.T), *args).T)

    g.__name__ = g.__qualname__ = name
    g.__signature__ = inspect.signature(f)
    g.__doc__ = f"Twin of kernel ``{name}``: :func:`{f.__name__}` on the transposed layout (R, count)."
    return g


dd_add_sloppy_soa = _soa(dd_add_sloppy, "dd_add_sloppy_soa")
dd_add_ieee_soa = _soa(dd_add_ieee, "dd_add_ieee_soa")
dd_mul_soa = _soa(dd_mul, "dd_mul_soa")
qd_add_sloppy_soa = _soa(qd_add_sloppy, "qd_add_sloppy_soa")
qd_add_ieee_soa = _soa(qd_add_ieee, "qd_add_ieee_soa")
qd_mul_soa = _soa(qd_mul, "qd_mul_soa")
certified_add_soa = _soa(certified_add, "certified_add_soa")
certified_mul_soa = _soa(certified_mul, "certified_mul_soa")


# ---------------------------------------------------------------------------------------------
# helpers


def _sorted_by_magnitude(t):
    """Rows of t sorted by decreasing magnitude, ties in column order (stable)."""
    xp = array_module(t)
    return xp.take_along_axis(t, xp.argsort(-xp.abs(t), axis=1, kind="stable"), axis=1)


def _stack(cols):
    return array_module(cols[0]).stack(cols, axis=1)


def _check(x, y, R):
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != R or y.shape[1] != R or x.shape[0] != y.shape[0]:
        raise ValueError(f"expected two (count, {R}) arrays, got shapes {x.shape} and {y.shape}")
    if x.dtype != y.dtype:
        raise TypeError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
