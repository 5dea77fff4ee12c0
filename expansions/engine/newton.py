"""The Newton operations on a block of expansions (``newton.cuh``; twins: ``newton.reciprocal``,
``div`` and ``sqrt``), each composed of the block operations of :mod:`expansions.engine.arithmetic`,
every product and sum renormalized (:func:`~expansions.engine.arithmetic.binary_block`).

The operands are made positional (into scratch rows, where a lane needs it); the operand a (the
divisor y for a division) is scaled to order 1 (:func:`scale_block`); the iteration starts from the
double word z = DWDivDW2(1, a) (DWDivDW2(1, SQRTDWtoDW(a)) for the square root; :func:`newton_start`)
and for each r of ``steps`` (``bounds.newton_steps``) after the first (2, the start) runs, in r
terms: v = a z, w = 2 - v, z = z w (the reciprocal), or t = a z, v = t z, w = 3 - v, z = (z w) / 2
(the inverse square root); then q = x z (division, x scaled) or q = a z (square root) in R terms;
q is scaled back and the non-finite rule and the special cases of ``newton.finish`` applied
(:func:`finish_block`); with ``renormalize`` the Newton renormalizer of the dispatch follows
(``dispatch._renormalize_keeping_zeros``: renormalize, keep the kernel's zero results).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .arithmetic import binary_block, scratch_rows
from .blocks import (
    ADD_SAFE,
    INNER,
    MUL,
    RENORMALIZE,
    copy_rows,
    epilogue_block,
    lanes_of,
    ld,
    negate_rows,
    nonfinite_rows,
    st,
)
from .dw import _c, _double_word, _dw_div_dw2, _dw_sqrt
from .kernels import leading_exponent
from .renorm import positional_block
from .simd import any_lane, mask_of, splat, vsqrt, where


@njit(**INNER)
def scale_block(ws, src, n, K, kmin, kmax, dst, F):
    """Twin of ``newton.scale``: rows dst := rows src (n) times 2**k, k = row K (per lane, held as a
    float: exact) clamped to [kmin, kmax], as two products by powers of two (2**(k >> 1), then
    2**(k - (k >> 1))); F: 2 rows of scratch.  dst may be src."""
    L = lanes_of(ws)
    for j in range(L):
        k = min(max(int(ws[K * L + j]), kmin), kmax)
        k1 = k >> 1
        ws[F * L + j] = np.ldexp(1.0, k1)  # a power of two the terms' type holds: exact
        ws[(F + 1) * L + j] = np.ldexp(1.0, k - k1)
    f1 = ld(ws, F)
    f2 = ld(ws, F + 1)
    for t in range(n):
        st(ws, dst + t, (ld(ws, src + t) * f1) * f2)


@njit(**INNER)
def newton_start(ws, A, m, rsqrt, dst):
    """Twin of ``newton.start``: rows dst, dst+1 := the double word DWDivDW2(1, a) of the first two of
    the m rows A (the second 0 for m = 1) made a double word, or with ``rsqrt`` DWDivDW2(1,
    SQRTDWtoDW(a)); lane by lane with the twins' operations (:mod:`expansions.engine.dw`, the
    emulated FMA and two-product)."""
    L = lanes_of(ws)
    for j in range(L):
        a0 = ws[A * L + j]
        h, lo = _double_word(a0, ws[(A + 1) * L + j] if m > 1 else _c(a0, 0.0))
        if rsqrt:
            h, lo = _dw_sqrt(h, lo)
        zh, zl = _dw_div_dw2(_c(h, 1.0), _c(h, 0.0), h, lo)
        ws[dst * L + j] = zh
        ws[(dst + 1) * L + j] = zl


@njit(**INNER)
def finish_block(ws, out, R, xbad, x0, ybad, y0, leading):
    """Twin of ``newton.finish``: the non-finite rule, then a NaN leading result gives (NaN, 0, ...)
    and a zero leading result (leading, 0, ...) with its sign."""
    epilogue_block(ws, out, R, xbad, x0, ybad, y0, leading)
    special = (leading != leading) | (leading == splat(leading, 0.0))
    if not any_lane(special):
        return
    lead = where(leading != leading, splat(leading, np.nan), leading)
    st(ws, out, where(special, lead, ld(ws, out)))
    zero = splat(leading, 0.0)
    for t in range(1, R):
        st(ws, out + t, where(special, zero, ld(ws, out + t)))

# ---------------------------------------------------------------------------------------------
# the operations, composed


@njit(**INNER)
def newton_rows(n, m, R):
    """Rows of scratch that the Newton operations need for operands of n and m terms into R."""
    k = max(n, m, R)
    return 6 * R + 5 + 7 * k + scratch_rows(n, m, R)


@njit(**INNER)
def _rows(base, k, R):
    """The Newton operations' rows from ``base`` (:func:`newton_rows`; k = max(n, m, R)): A (k rows:
    the scaled operand of the iteration), A2 (k: the scaled dividend), Z, U, V, W, Q, NEG (R each:
    z, t, v, w, the result, -v), C, K1, K2 (one each: the Newton constant, two exponents), F (2: the
    factors of :func:`scale_block`), FX, FY (k each: the operands made positional), FS (3k: their
    scratch), then the scratch of :func:`~expansions.engine.arithmetic.binary_block`."""
    A = base
    A2 = A + k
    Z = A2 + k
    U = Z + R
    V = U + R
    W = V + R
    Q = W + R
    NEG = Q + R
    C = NEG + R
    K1 = C + 1
    K2 = K1 + 1
    F = K2 + 1
    FX = F + 2
    FY = FX + k
    FS = FY + k
    return A, A2, Z, U, V, W, Q, NEG, C, K1, K2, F, FX, FY, FS, FS + 3 * k


@njit(**INNER)
def _mul(ws, X, n, Y, m, r, dst, sc):
    """Rows dst := renormalize(mul_truncated(x, y, r), r)."""
    binary_block(MUL, ws, X, n, Y, m, r, True, dst, sc)


@njit(**INNER)
def _iterate(ws, A, na, steps, rsqrt, Z, U, V, W, NEG, C, sc):
    """The Newton steps after the start on z (rows Z, its 2 terms), a in rows A (na terms), the
    constant c (2, or 3 with ``rsqrt``) in row C: for each r of ``steps`` after the first, v = a z
    (with ``rsqrt`` t = a z, v = t z), w = c - v, z = z w (with ``rsqrt`` halved, exact), in r terms.
    Returns the terms of z."""
    zn = 2
    for s in range(1, len(steps)):
        r = steps[s]
        if rsqrt:
            _mul(ws, A, min(r, na), Z, zn, r, U, sc)
            _mul(ws, U, r, Z, zn, r, V, sc)
        else:
            _mul(ws, A, min(r, na), Z, zn, r, V, sc)
        negate_rows(ws, V, r, NEG)  # the sign flipped, as the twin's -v
        binary_block(ADD_SAFE, ws, C, 1, NEG, r, r, True, W, sc)
        _mul(ws, Z, zn, W, r, r, Z, sc)
        if rsqrt:
            half = splat(ld(ws, Z), 0.5)
            for t in range(r):
                st(ws, Z + t, ld(ws, Z + t) * half)  # exact
        zn = r
    return zn


@njit(**INNER)
def _result(ws, Q, V, R, renormalize, out, sc):
    """Rows out := the result q (rows Q), with ``renormalize`` by the Newton renormalizer of the
    dispatch: renormalized (into rows V), except where q's leading term is zero and stays so."""
    if renormalize:
        binary_block(RENORMALIZE, ws, Q, R, Q, R, R, True, V, sc)
        zero = splat(ld(ws, Q), 0.0)
        keep = (ld(ws, Q) == zero) & (ld(ws, V) == zero)
        for t in range(R):
            st(ws, out + t, where(keep, ld(ws, Q + t), ld(ws, V + t)))
    else:
        copy_rows(ws, Q, R, out)


@njit(**INNER)
def inverse_block(ws, X, n, R, rsqrt, renormalize, steps, kmin, kmax, out, base):
    """Twin of ``newton.reciprocal`` (``rsqrt`` false) or ``newton.sqrt`` (``rsqrt`` true) on the block's
    rows X (n terms) into R rows at ``out`` (renormalized with ``renormalize``); ``base``: the first
    of :func:`newton_rows` rows of scratch; ``steps``, ``kmin``, ``kmax``: the twin's
    ``bounds.newton_steps`` and the clamp of ``newton.scale``.  The reciprocal: a = x scaled by 2**kx,
    kx = -e(x), its reciprocal scaled back by 2**kx.  The square root: a = x scaled by 2**(-2 half),
    half = e(x) >> 1, times its inverse square root, scaled back by 2**half."""
    L = lanes_of(ws)
    k = max(n, R)
    A, A2, Z, U, V, W, Q, NEG, C, K1, K2, F, FX, FY, FS, sc = _rows(base, k, R)
    XI = positional_block(ws, X, n, FX, FS, FS + k, FS + 2 * k)
    x0 = ld(ws, XI)
    for j in range(L):
        e = leading_exponent(ws[XI * L + j])
        if rsqrt:
            ws[K1 * L + j] = e >> 1  # half
            ws[K2 * L + j] = -2 * (e >> 1)
        else:
            ws[K1 * L + j] = -e
    scale_block(ws, XI, n, K2 if rsqrt else K1, kmin, kmax, A, F)
    newton_start(ws, A, n, rsqrt, Z)
    st(ws, C, splat(x0, 3.0 if rsqrt else 2.0))
    _iterate(ws, A, n, steps, rsqrt, Z, U, V, W, NEG, C, sc)
    if rsqrt:
        _mul(ws, A, n, Z, R, R, Q, sc)  # sqrt(a) = a / sqrt(a)
        scale_block(ws, Q, R, K1, kmin, kmax, Q, F)
        leading = vsqrt(x0)
    else:
        scale_block(ws, Z, R, K1, kmin, kmax, Q, F)
        leading = splat(x0, 1.0) / x0
    finish_block(ws, Q, R, nonfinite_rows(ws, XI, n), x0, mask_of(x0, False), x0, leading)
    _result(ws, Q, V, R, renormalize, out, sc)


@njit(**INNER)
def div_block(ws, X, n, Y, m, R, renormalize, steps, kmin, kmax, out, base):
    """Twin of ``newton.div``: rows X (n terms) / rows Y (m terms) into R rows at ``out`` (as
    :func:`inverse_block`): the reciprocal of y scaled by 2**ky, times x scaled by 2**kx, scaled
    back by 2**(ky - kx)."""
    L = lanes_of(ws)
    k = max(n, m, R)
    A, A2, Z, U, V, W, Q, NEG, C, K1, K2, F, FX, FY, FS, sc = _rows(base, k, R)
    XI = positional_block(ws, X, n, FX, FS, FS + k, FS + 2 * k)
    YI = positional_block(ws, Y, m, FY, FS, FS + k, FS + 2 * k)
    x0 = ld(ws, XI)
    y0 = ld(ws, YI)
    for j in range(L):
        ws[K1 * L + j] = -leading_exponent(ws[XI * L + j])  # kx
        ws[K2 * L + j] = -leading_exponent(ws[YI * L + j])  # ky
    scale_block(ws, YI, m, K2, kmin, kmax, A, F)
    scale_block(ws, XI, n, K1, kmin, kmax, A2, F)
    newton_start(ws, A, m, False, Z)
    st(ws, C, splat(x0, 2.0))
    _iterate(ws, A, m, steps, False, Z, U, V, W, NEG, C, sc)
    _mul(ws, A2, n, Z, R, R, Q, sc)
    for j in range(L):
        ws[K2 * L + j] = ws[K2 * L + j] - ws[K1 * L + j]  # ky - kx
    scale_block(ws, Q, R, K2, kmin, kmax, Q, F)
    finish_block(ws, Q, R, nonfinite_rows(ws, XI, n), x0, nonfinite_rows(ws, YI, m), y0, x0 / y0)
    _result(ws, Q, V, R, renormalize, out, sc)
