"""Compiled twins of the sequential baselines of :mod:`expansions.baselines.cpu` (numba, nopython).

Same names and signatures: 2-D arrays of terms, shape (count, R), one expansion per row, a new
(count, R) array out; the ``*_soa`` variants take and return the transposed layout (R, count).  Each
row is computed by the scalar algorithm the NumPy twin vectorizes (QD's double-double and quad-double
operations, Hida, Li, Bailey, ARITH 2001; the certified operations: merge by decreasing magnitude,
VecSum, VecSumErrBranch), the twin's row-wise selects written back as the branches they stand for,
followed by the library's non-finite rule.  Bit-identical to the twin; compiled as in
:mod:`expansions.engine.dw` (no fastmath, the twin's emulated two-product).

Sorting by decreasing magnitude is stable, NaN last, as NumPy's stable ``argsort`` of ``-|t|``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .dw import (
    _KERNEL,
    _SCALAR,
    _c,
    _dw_times_dw1,
    _fast_two_sum,
    _qd_add_ieee,
    _qd_add_sloppy,
    _two_prod,
    _two_sum,
    nonfinite_row,
)
from .kernels import readonly

_CHUNK = 256  # rows per scratch allocation

# ---------------------------------------------------------------------------------------------
# double-double (R = 2)


@njit(**_KERNEL)
def _dd_kernel(which, x, y, out):
    for i in prange(x.shape[0]):
        if which == 0:
            h, lo = _qd_add_sloppy(x[i, 0], x[i, 1], y[i, 0], y[i, 1])
            leading = x[i, 0] + y[i, 0]
        elif which == 1:
            h, lo = _qd_add_ieee(x[i, 0], x[i, 1], y[i, 0], y[i, 1])
            leading = x[i, 0] + y[i, 0]
        else:
            h, lo = _dw_times_dw1(x[i, 0], x[i, 1], y[i, 0], y[i, 1])
            leading = x[i, 0] * y[i, 0]
        out[i, 0] = h
        out[i, 1] = lo
        nonfinite_row(out, i, x, y, leading, True)


def dd_add_sloppy(x, y):
    """Twin of :func:`expansions.baselines.cpu.dd_add_sloppy` (QD sloppy add)."""
    return _run2(_dd_kernel, 0, x, y, 2)


def dd_add_ieee(x, y):
    """Twin of :func:`expansions.baselines.cpu.dd_add_ieee` (QD IEEE add)."""
    return _run2(_dd_kernel, 1, x, y, 2)


def dd_mul(x, y):
    """Twin of :func:`expansions.baselines.cpu.dd_mul` (JMP Algorithm 10)."""
    return _run2(_dd_kernel, 2, x, y, 2)


# ---------------------------------------------------------------------------------------------
# quad-double (R = 4)


@njit(**_SCALAR)
def _three_sum(a, b, c):
    u, v = _two_sum(a, b)
    r0, w = _two_sum(u, c)
    r1, r2 = _two_sum(v, w)
    return r0, r1, r2


@njit(**_SCALAR)
def _three_sum2(a, b, c):
    u, v = _two_sum(a, b)
    r0, w = _two_sum(u, c)
    return r0, v + w


@njit(**_SCALAR)
def _qd_renormalize(t, n, out, i):
    """QD's renormalization of ``t[:n]`` into row ``i`` of ``out`` (4 terms), the emitting branch of
    the twin ``qd_renormalize``; ``t`` is overwritten."""
    s, t[n - 1] = _fast_two_sum(t[n - 2], t[n - 1])
    for k in range(n - 3, -1, -1):
        s, t[k + 1] = _fast_two_sum(t[k], s)
    t[0] = s
    for m in range(4):
        out[i, m] = _c(s, 0.0)
    k = 0
    s = t[0]
    for j in range(1, n):
        s, e = _fast_two_sum(s, t[j])
        if e != 0:
            if k < 4:
                out[i, k] = s
            s = e
            k += 1
    if k < 4:
        out[i, k] = s


@njit(**_SCALAR)
def _double_accumulate(u, v, x):
    """Twin of ``double_accumulate``: returns ``(s, u, v)``."""
    zero = _c(u, 0.0)
    s, v = _two_sum(v, x)
    s, u = _two_sum(u, s)
    if u == 0:
        u = s
        s = zero
    if v == 0:
        v = u
        u = s
        s = zero
    return s, u, v


@njit(**_SCALAR)
def _six_three_sum(a, b, c, d, e, f):
    s0, s1, s2 = _three_sum(a, b, c)
    t0, t1, t2 = _three_sum(d, e, f)
    r0, g0 = _two_sum(s0, t0)
    h1, g1 = _two_sum(s1, t1)
    r1, k1 = _two_sum(h1, g0)
    r2 = ((s2 + t2) + g1) + k1
    return r0, r1, r2


@njit(**_SCALAR)
def _nine_two_sum(a0, a1, a2, a3, a4, a5, a6, a7, a8):
    abh, abl = _qd_add_sloppy(a0, a1, a2, a3)
    cdh, cdl = _qd_add_sloppy(a4, a5, a6, a7)
    sh, sl = _qd_add_sloppy(abh, abl, cdh, cdl)
    return _qd_add_sloppy(sh, sl, a8, _c(a8, 0.0))


@njit(**_KERNEL)
def _qd_kernel(which, x, y, out):
    n = x.shape[0]
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        t = np.empty(8, dtype=x.dtype)
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            if which == 0:
                leading = _qd_add_sloppy_row(x, y, i, t)
            elif which == 1:
                leading = _qd_add_ieee_row(x, y, i, t)
            else:
                leading = _qd_mul_row(x, y, i, t)
            _qd_renormalize(t, 4 if which == 1 else 5, out, i)
            nonfinite_row(out, i, x, y, leading, True)


@njit(**_SCALAR)
def _qd_add_sloppy_row(x, y, i, t):
    """Twin of kernel ``qd_add_sloppy<T>``: the five terms to renormalize into ``t``; returns the
    leading-term result."""
    x0, e0 = _two_sum(x[i, 0], y[i, 0])
    t1, e1 = _two_sum(x[i, 1], y[i, 1])
    t2, e2 = _two_sum(x[i, 2], y[i, 2])
    t3, e3 = _two_sum(x[i, 3], y[i, 3])
    x1, u = _two_sum(t1, e0)
    x2, w, v = _three_sum(t2, u, e1)
    x3, z = _three_sum2(t3, w, e2)
    x4 = (z + v) + e3
    t[0], t[1], t[2], t[3], t[4] = x0, x1, x2, x3, x4
    return x0


@njit(**_SCALAR)
def _qd_add_ieee_row(x, y, i, t):
    """Twin of kernel ``qd_add_ieee<T>`` (QD-Add-Accurate): the four terms into ``t``."""
    for k in range(4):
        t[k] = x[i, k]
        t[4 + k] = y[i, k]
    _sort_by_magnitude(t, 8)
    zero = _c(t[0], 0.0)
    c0 = c1 = c2 = c3 = zero
    u = zero
    v = zero
    k = 0
    for j in range(8):
        live = k < 4
        s, u2, v2 = _double_accumulate(u, v, t[j])
        if live:
            u = u2
            v = v2
            if s != 0:
                if k == 0:
                    c0 = s
                elif k == 1:
                    c1 = s
                elif k == 2:
                    c2 = s
                else:
                    c3 = s
                k += 1
    uv = u + v
    if k == 0:
        c0, c1 = u, v
    elif k == 1:
        c1, c2 = u, v
    elif k == 2:
        c2, c3 = u, v
    elif k == 3:
        c3 = uv
    t[0], t[1], t[2], t[3] = c0, c1, c2, c3
    return x[i, 0] + y[i, 0]


@njit(**_SCALAR)
def _qd_mul_row(x, y, i, t):
    """Twin of kernel ``qd_mul<T>`` (QD's accurate multiplication): the five terms into ``t``."""
    p00, q00 = _two_prod(x[i, 0], y[i, 0])
    p01, q01 = _two_prod(x[i, 0], y[i, 1])
    p10, q10 = _two_prod(x[i, 1], y[i, 0])
    p02, q02 = _two_prod(x[i, 0], y[i, 2])
    p11, q11 = _two_prod(x[i, 1], y[i, 1])
    p20, q20 = _two_prod(x[i, 2], y[i, 0])
    p03, q03 = _two_prod(x[i, 0], y[i, 3])
    p12, q12 = _two_prod(x[i, 1], y[i, 2])
    p21, q21 = _two_prod(x[i, 2], y[i, 1])
    p30, q30 = _two_prod(x[i, 3], y[i, 0])
    x0 = p00
    x1, c1, c2 = _three_sum(p01, p10, q00)
    x2, d1, d2 = _six_three_sum(p02, p11, p20, q01, q10, c1)
    x3, f1 = _nine_two_sum(p03, p12, p21, p30, q02, q11, q20, c2, d1)
    x4 = x[i, 1] * y[i, 3]
    for s in (x[i, 2] * y[i, 2], x[i, 3] * y[i, 1], q03, q12, q21, q30, d2, f1):
        x4 = x4 + s
    t[0], t[1], t[2], t[3], t[4] = x0, x1, x2, x3, x4
    return x0


def qd_add_sloppy(x, y):
    """Twin of :func:`expansions.baselines.cpu.qd_add_sloppy` (kernel ``qd_add_sloppy<T>``)."""
    return _run2(_qd_kernel, 0, x, y, 4)


def qd_add_ieee(x, y):
    """Twin of :func:`expansions.baselines.cpu.qd_add_ieee` (kernel ``qd_add_ieee<T>``)."""
    return _run2(_qd_kernel, 1, x, y, 4)


def qd_mul(x, y):
    """Twin of :func:`expansions.baselines.cpu.qd_mul` (kernel ``qd_mul<T>``)."""
    return _run2(_qd_kernel, 2, x, y, 4)


# ---------------------------------------------------------------------------------------------
# certified operations, any R


@njit(**_SCALAR)
def _before(a, b):
    """Whether ``a`` sorts strictly before ``b``: ``-|a| < -|b|``, a NaN key last."""
    ka = -abs(a)
    kb = -abs(b)
    if np.isnan(ka):
        return False
    if np.isnan(kb):
        return True
    return ka < kb


@njit(**_SCALAR)
def _sort_by_magnitude(t, n):
    """Sort ``t[:n]`` in place by decreasing magnitude, stable, NaN last: insertion sort of runs of
    16, then bottom-up merges (stable both)."""
    run = 16
    for lo in range(0, n, run):
        hi = min(n, lo + run)
        for j in range(lo + 1, hi):
            v = t[j]
            k = j - 1
            while k >= lo and _before(v, t[k]):
                t[k + 1] = t[k]
                k -= 1
            t[k + 1] = v
    if n <= run:
        return
    buf = np.empty(n, dtype=t.dtype)
    width = run
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(n, lo + width)
            hi = min(n, lo + 2 * width)
            a, b, k = lo, mid, lo
            while a < mid and b < hi:
                if _before(t[b], t[a]):
                    buf[k] = t[b]
                    b += 1
                else:
                    buf[k] = t[a]
                    a += 1
                k += 1
            while a < mid:
                buf[k] = t[a]
                a += 1
                k += 1
            while b < hi:
                buf[k] = t[b]
                b += 1
                k += 1
        for k in range(n):
            t[k] = buf[k]
        width *= 2


@njit(**_SCALAR)
def _vec_sum(t, n):
    """VecSum on ``t[:n]`` in place: the 2Sum chain from the last term up."""
    s = t[n - 1]
    for k in range(n - 2, -1, -1):
        s, t[k + 1] = _two_sum(t[k], s)
    t[0] = s


@njit(**_SCALAR)
def _vec_sum_err_branch(e, n, R, out, i):
    """VecSumErrBranch of ``e[:n]`` into row ``i`` of ``out`` (R terms), the branch of
    ``expansions.cpu.kernels._vec_sum_err_branch`` for one row."""
    for k in range(R):
        out[i, k] = _c(e[0], 0.0)
    j = 0
    done = False
    eps = e[0]
    for k in range(1, n):
        rj, eps_new = _two_sum(eps, e[k])
        if done:
            continue
        out[i, j] = rj
        if eps_new != 0:
            if j >= R - 1:
                done = True
            else:
                j += 1
                eps = eps_new
        else:
            eps = rj
    if not done:
        out[i, j] = eps


@njit(**_KERNEL)
def _certified_kernel(mul, x, y, R, out):
    n_rows = x.shape[0]
    n = R * R + 2 * R - 1 if mul else 2 * R
    for c in prange((n_rows + _CHUNK - 1) // _CHUNK):
        t = np.empty(n, dtype=x.dtype)
        for i in range(c * _CHUNK, min(n_rows, (c + 1) * _CHUNK)):
            if mul:
                m = 0
                for k in range(R):
                    for j in range(k + 1):
                        t[m], t[m + 1] = _two_prod(x[i, j], y[i, k - j])
                        m += 2
                for j in range(1, R):
                    t[m] = x[i, j] * y[i, R - j]
                    m += 1
                leading = x[i, 0] * y[i, 0]
            else:
                for k in range(R):
                    t[k] = x[i, k]
                    t[R + k] = y[i, k]
                leading = x[i, 0] + y[i, 0]
            _sort_by_magnitude(t, n)
            _vec_sum(t, n)
            _vec_sum_err_branch(t, n, R, out, i)
            nonfinite_row(out, i, x, y, leading, True)


def certified_add(x, y, R):
    """Twin of :func:`expansions.baselines.cpu.certified_add` (kernel ``certified_add<T, R>``)."""
    x, y = _operands(x, y, R)
    out = np.empty_like(x)
    _certified_kernel(False, x, y, R, out)
    return out


def certified_mul(x, y, R):
    """Twin of :func:`expansions.baselines.cpu.certified_mul` (kernel ``certified_mul<T, R>``)."""
    x, y = _operands(x, y, R)
    out = np.empty_like(x)
    _certified_kernel(True, x, y, R, out)
    return out


# ---------------------------------------------------------------------------------------------
# structure-of-arrays variants: (R, count) in and out


def _soa(f, name):
    def g(x, y, *args):
        return np.ascontiguousarray(f(np.ascontiguousarray(x.T), np.ascontiguousarray(y.T), *args).T)

    g.__name__ = g.__qualname__ = name
    g.__doc__ = f"Twin of :func:`expansions.baselines.cpu.{name}`: :func:`{f.__name__}` on the layout (R, count)."
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


def _run2(kernel, which, x, y, R):
    x, y = _operands(x, y, R)
    out = np.empty_like(x)
    kernel(which, x, y, out)
    return out


def _operands(x, y, R):
    """The checks of the twin's ``_check``, then C-contiguous arrays (one compiled layout)."""
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != R or y.shape[1] != R or x.shape[0] != y.shape[0]:
        raise ValueError(f"expected two (count, {R}) arrays, got shapes {x.shape} and {y.shape}")
    if x.dtype != y.dtype:
        raise TypeError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    if x.dtype not in (np.float64, np.float32):
        raise TypeError(f"expected float64 or float32 terms, got {x.dtype}")
    return readonly(np.ascontiguousarray(x)), readonly(np.ascontiguousarray(y))  # see kernels.readonly
