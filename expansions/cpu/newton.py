"""CPU twins of the Newton kernels of ``expansions/cuda/newton.cuh``: reciprocal, division and square
root of expansions for any R, built from the twins of the parallel multiplication, the safe
addition and the renormalization (:mod:`expansions.cpu.kernels`).

Each function mirrors its kernel line for line (the kernel runs the group functions of
``mul.cuh``/``add.cuh``/``renorm.cuh`` in the same order, on a lane group of the whole operation's
width; those functions give the same bits whatever the group width, which is what lets the twin
call the per-size twins here).  The algorithms, and the error recurrences behind their bounds, are
in :mod:`expansions.bounds` (``reciprocal``, ``div``, ``sqrt``, ``newton_steps``):

1. the operands are scaled by powers of two (two roundings at most per term, exact when scaling
   up) so that the leading term lies in [1, 2) — [1, 4) for the square root, an even power;
2. the iteration starts from a double word (:func:`start`: the operand's first two terms made a
   double word, then the double-word reciprocal, JMP Algorithm 17, of it or of its double-word
   square root), which stands for the first two Newton steps at the price of one double-word
   division;
3. Newton's iteration runs on these numbers of order 1, the number of terms growing at each step
   (``bounds.newton_steps``, after its first entry, 2: the start): for the reciprocal
   ``x <- x (2 - a x)``, for the inverse square root ``y <- y (3 - a y^2) / 2``, every product the
   truncated parallel multiplication and every sum the safe addition, each followed by the
   renormalization (their proofs assume ulp-nonoverlapping inputs); ``x/y = x * (1/y)`` and
   ``sqrt(a) = a * (1/sqrt(a))``;
4. the result is scaled back, and :func:`finish` applies the library's non-finite rule.

The operands are first made positional (:func:`expansions.cpu.kernels.positional`: renormalized
where a finite operand breaks ``|x_i| <= 2**-(p-1) |x_{i-1}|``, which the bounds assume and which an
ulp-nonoverlapping expansion with a zero or repeated subnormal terms may break); the leading term
decides the special cases.
"""

from __future__ import annotations

import numpy as np

from .. import bounds
from ..dw import cpu as dw
from ..formats import format_of
from .kernels import add_safe, leading_exponent, mul_truncated, nonfinite_epilogue, positional, renormalize, scale
from .lanes import array_module

__all__ = ["leading_exponent", "scale", "reciprocal", "div", "sqrt", "finish"]  # the first two: kernels'


def _constant(count, value, dtype, xp):
    return xp.full((count, 1), value, dtype=dtype)


def start(a, rsqrt=False):
    """Twin of ``newton_start`` in newton.cuh: the Newton iteration's two-term start for a scaled
    (count, m) operand a: its first two terms (the second 0 for m = 1) made a double word
    (``dw.double_word``, exact), then ``DWDivDW2(1, a)`` (JMP Algorithm 17), or with ``rsqrt``
    ``DWDivDW2(1, SQRTDWtoDW(a))``; (count, 2).  Its error bound: ``bounds.newton_start``.  On
    operands the library's rule decides (zero, not finite) its words are whatever the operations give."""
    xp = array_module(a)
    zero = xp.zeros(a.shape[0], dtype=a.dtype)
    with np.errstate(all="ignore"):
        h, lo = dw.double_word(a[:, 0], a[:, 1] if a.shape[1] > 1 else zero)
        if rsqrt:
            h, lo = dw.dw_sqrt(h, lo)
        zh, zl = dw.dw_div_dw2(zero + a.dtype.type(1), zero, h, lo)
    return xp.stack([zh, zl], axis=1)


def _newton_reciprocal(a, R):
    """Twin of ``newton_reciprocal`` in newton.cuh: R terms of 1/a for a scaled (count, m) operand."""
    xp = array_module(a)
    m = a.shape[1]
    x = start(a)
    two = _constant(a.shape[0], 2, a.dtype, xp)
    for r in bounds.newton_steps(R, format_of(a.dtype))[1:]:
        v = renormalize(mul_truncated(a[:, : min(r, m)], x, r), r)
        w = renormalize(add_safe(two, -v, r), r)
        x = renormalize(mul_truncated(x, w, r), r)
    return x


def finish(out, operands, leading):
    """Twin of ``newton_finish`` in newton.cuh: the non-finite rule (:func:`nonfinite_epilogue`), then
    a NaN leading result (0/0, inf/inf, the square root of a negative number) gives
    ``(NaN, 0, ..., 0)``, and a zero leading result of a zero operand (0/y, sqrt(+-0)) gives
    ``(leading, 0, ..., 0)`` with the IEEE sign."""
    xp = array_module(out)
    out = nonfinite_epilogue(out, operands, leading)
    special = xp.isnan(leading) | (leading == 0)
    if not special.any():
        return out
    nan = xp.asarray(xp.nan, dtype=out.dtype)
    lead = xp.where(xp.isnan(leading), nan, leading)
    out = out.copy()
    out[special] = 0
    out[special, 0] = lead[special]
    return out


def reciprocal(a, R):
    """Twin of ``reciprocal<T, M, R, STEPS...>`` (newton.cuh): 1/a in R terms."""
    xp = array_module(a)
    a = positional(a)
    k = -leading_exponent(a[:, 0])
    x = _newton_reciprocal(scale(a, k), R)
    out = scale(x, k)
    return finish(out, (a,), xp.asarray(1, dtype=a.dtype) / a[:, 0])


def div(x, y, R):
    """Twin of ``div<T, N, M, R, STEPS...>`` (newton.cuh): x/y in R terms, as x * (1/y)."""
    x, y = positional(x), positional(y)
    kx = -leading_exponent(x[:, 0])
    ky = -leading_exponent(y[:, 0])
    z = _newton_reciprocal(scale(y, ky), R)
    q = renormalize(mul_truncated(scale(x, kx), z, R), R)
    out = scale(q, ky - kx)
    return finish(out, (x, y), x[:, 0] / y[:, 0])


def sqrt(a, R):
    """Twin of ``sqrt<T, M, R, STEPS...>`` (newton.cuh): sqrt(a) in R terms, as a * (1/sqrt(a))."""
    xp = array_module(a)
    a = positional(a)
    m = a.shape[1]
    half = leading_exponent(a[:, 0]) >> 1
    s = scale(a, -2 * half)
    y = start(s, rsqrt=True)
    three = _constant(a.shape[0], 3, a.dtype, xp)
    for r in bounds.newton_steps(R, format_of(a.dtype))[1:]:
        t = renormalize(mul_truncated(s[:, : min(r, m)], y, r), r)
        v = renormalize(mul_truncated(t, y, r), r)
        w = renormalize(add_safe(three, -v, r), r)
        y = renormalize(mul_truncated(y, w, r), r) * a.dtype.type(0.5)
    out = scale(renormalize(mul_truncated(s, y, R), R), half)
    return finish(out, (a,), xp.sqrt(a[:, 0]))
