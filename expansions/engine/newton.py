"""The twins of :mod:`expansions.cpu.newton` on one expansion: reciprocal, division and square root of
expansions by Newton's iteration (numba, nopython), the row functions that the programs' loops
(:mod:`expansions.programs.loop`) call per expansion; the operations on arrays are
:mod:`expansions.engine.fused` (the same steps on blocks of expansions, vectorized).

The algorithms are the twin's (see its module docstring and :mod:`expansions.bounds`): the operands
are scaled by powers of two so that the leading term lies in [1, 2) ([1, 4) for the square root),
Newton's iteration runs with the number of terms of ``bounds.newton_steps`` (computed in Python and
passed in), every product the truncated multiplication and every sum the safe addition, each followed
by the renormalization, and :func:`finish` applies the library's non-finite rule.  Each step calls
the row functions of :mod:`expansions.engine.kernels` (the twins of ``mul_truncated``, ``add_safe``,
``renormalize``, non-finite rule included) on the same operands, so every intermediate has the twin's
bits.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels import (
    OPTIONS,
    _const,
    add_safe_row,
    all_finite,
    breaks_positional,
    epilogue,
    mul_row,
    positional_copy,
    renormalize_row,
)


@njit(**OPTIONS)
def leading_exponent(a0):
    """Twin of ``newton.leading_exponent``: ilogb(a0) for finite nonzero a0, else 0."""
    if np.isfinite(a0) and a0 != 0:
        return math.frexp(np.float64(a0))[1] - 1
    return 0


@njit(**OPTIONS)
def scale(v, n, k, kmin, kmax, out):
    """Twin of ``newton.scale``: the n terms of v times 2**k into out, as two products by powers of two
    (2**(k >> 1), then 2**(k - (k >> 1))), k clamped to [kmin, kmax] = [2 (emin - p + 1), 2 emax]."""
    k = min(max(k, kmin), kmax)
    k1 = k >> 1
    f1 = _const(v[0], math.ldexp(1.0, k1))  # a power of two the terms' type holds: exact
    f2 = _const(v[0], math.ldexp(1.0, k - k1))
    for t in range(n):
        out[t] = (v[t] * f1) * f2


@njit(**OPTIONS)
def finish(out, R, xbad, x0, ybad, y0, leading):
    """Twin of ``newton.finish``: the non-finite rule, then a NaN leading result gives (NaN, 0, ...)
    and a zero leading result gives (leading, 0, ...) with its sign."""
    epilogue(out, R, xbad, x0, ybad, y0, leading)
    if np.isnan(leading) or leading == 0:
        out[0] = np.nan if np.isnan(leading) else leading
        for t in range(1, R):
            out[t] = 0


@njit(**OPTIONS)
def reciprocal_row(a, m, R, steps, x, ws):
    """Twin of ``newton._newton_reciprocal``: R terms of 1/a into x for a scaled operand a (m terms):
    x = RN(1/a_0), then for each r of ``steps``: v = a x, w = 2 - v, x = x w, each in r terms and
    renormalized.  ws: scratch rows (see :func:`_workspace`)."""
    T, V, W, c = ws[7], ws[8], ws[9], ws[10]
    x[0] = _const(a[0], 1.0) / a[0]
    xn = 1
    c[0] = 2
    for r in steps:
        mul_row(a, min(r, m), x, xn, r, T, ws[4], ws[5], ws[6])
        renormalize_row(T, r, r, V, ws[0], ws[1], ws[2])
        add_safe_row(c, 1, V, r, True, r, T, ws[4], ws[5])
        renormalize_row(T, r, r, W, ws[0], ws[1], ws[2])
        mul_row(x, xn, W, r, r, T, ws[4], ws[5], ws[6])
        renormalize_row(T, r, r, x, ws[0], ws[1], ws[2])
        xn = r


@njit(**OPTIONS)
def _reciprocal(a, n, R, steps, kmin, kmax, out, ws):
    """Twin of ``newton.reciprocal`` on one row (the operand made positional: ``positional_copy``)."""
    if breaks_positional(a, n):
        _reciprocal_positional(positional_copy(a, n), n, R, steps, kmin, kmax, out, ws)
    else:
        _reciprocal_positional(a, n, R, steps, kmin, kmax, out, ws)


@njit(**OPTIONS)
def _reciprocal_positional(a, n, R, steps, kmin, kmax, out, ws):
    a0 = a[0]
    k = -leading_exponent(a0)
    A, X = ws[11], ws[12]
    scale(a, n, k, kmin, kmax, A)
    reciprocal_row(A, n, R, steps, X, ws)
    scale(X, R, k, kmin, kmax, out)
    finish(out, R, not all_finite(a, n), a0, False, a0, _const(a0, 1.0) / a0)


@njit(**OPTIONS)
def _div(x, n, y, m, R, steps, kmin, kmax, out, ws):
    """Twin of ``newton.div`` on one row: x * (1/y), both scaled, the quotient scaled back (the operands
    made positional: ``positional_copy``)."""
    if breaks_positional(x, n) or breaks_positional(y, m):
        _div_positional(positional_copy(x, n), n, positional_copy(y, m), m, R, steps, kmin, kmax, out, ws)
    else:
        _div_positional(x, n, y, m, R, steps, kmin, kmax, out, ws)


@njit(**OPTIONS)
def _div_positional(x, n, y, m, R, steps, kmin, kmax, out, ws):
    x0, y0 = x[0], y[0]
    kx = -leading_exponent(x0)
    ky = -leading_exponent(y0)
    A, Z, T, Q = ws[11], ws[12], ws[7], ws[13]
    scale(y, m, ky, kmin, kmax, A)
    reciprocal_row(A, m, R, steps, Z, ws)
    scale(x, n, kx, kmin, kmax, A)
    mul_row(A, n, Z, R, R, T, ws[4], ws[5], ws[6])
    renormalize_row(T, R, R, Q, ws[0], ws[1], ws[2])
    scale(Q, R, ky - kx, kmin, kmax, out)
    finish(out, R, not all_finite(x, n), x0, not all_finite(y, m), y0, x0 / y0)


@njit(**OPTIONS)
def _sqrt(a, n, R, steps, kmin, kmax, out, ws):
    """Twin of ``newton.sqrt`` on one row: a * (1/sqrt(a)), the inverse square root by
    y <- y (3 - a y^2) / 2 from y = RN(1/RN(sqrt(a_0))), on a scaled by an even power of two (the
    operand made positional: ``positional_copy``)."""
    if breaks_positional(a, n):
        _sqrt_positional(positional_copy(a, n), n, R, steps, kmin, kmax, out, ws)
    else:
        _sqrt_positional(a, n, R, steps, kmin, kmax, out, ws)


@njit(**OPTIONS)
def _sqrt_positional(a, n, R, steps, kmin, kmax, out, ws):
    a0 = a[0]
    half = leading_exponent(a0) >> 1
    S, Y, T, U, V, W, c = ws[11], ws[12], ws[7], ws[13], ws[8], ws[9], ws[10]
    scale(a, n, -2 * half, kmin, kmax, S)
    Y[0] = _const(a0, 1.0) / np.sqrt(S[0])
    yn = 1
    c[0] = 3
    h = _const(a0, 0.5)
    for r in steps:
        mul_row(S, min(r, n), Y, yn, r, T, ws[4], ws[5], ws[6])
        renormalize_row(T, r, r, U, ws[0], ws[1], ws[2])
        mul_row(U, r, Y, yn, r, T, ws[4], ws[5], ws[6])
        renormalize_row(T, r, r, V, ws[0], ws[1], ws[2])
        add_safe_row(c, 1, V, r, True, r, T, ws[4], ws[5])
        renormalize_row(T, r, r, W, ws[0], ws[1], ws[2])
        mul_row(Y, yn, W, r, r, T, ws[4], ws[5], ws[6])
        renormalize_row(T, r, r, Y, ws[0], ws[1], ws[2])
        for t in range(r):
            Y[t] = Y[t] * h
        yn = r
    mul_row(S, n, Y, R, R, T, ws[4], ws[5], ws[6])
    renormalize_row(T, R, R, U, ws[0], ws[1], ws[2])
    scale(U, R, half, kmin, kmax, out)
    finish(out, R, not all_finite(a, n), a0, False, a0, np.sqrt(a0))
