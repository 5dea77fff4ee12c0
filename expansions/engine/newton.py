"""The Newton operations' own steps on a block of expansions (``newton.cuh``; twins in
:mod:`expansions.cpu.newton`): the scaling by powers of two (:func:`scale_block`), the double-word
start (:func:`newton_start`) and the special cases of the result (:func:`finish_block`).  The
iterations themselves (reciprocal, division, square root) are run by
:func:`expansions.engine.fused.operation_block` on the block operations of
:mod:`expansions.engine.arithmetic`; the compiled elementary functions use these steps too.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .blocks import (
    INNER,
    epilogue_block,
    lanes_of,
    ld,
    st,
)
from .dw import _c, _double_word, _dw_div_dw2, _dw_sqrt
from .simd import any_lane, splat, where


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
