"""Scalar exact versions of the Newton reciprocal, division and square root (twins:
:mod:`expansions.cpu.newton`; kernels: ``expansions/cuda/newton.cuh``), written with the reference
algorithms of :mod:`expansions.reference.algorithms` in exactly the kernels' order, so that the three
agree bit for bit.  Each function takes tuples of reference values and a format, like the other
reference algorithms, and returns a tuple of R values."""

from __future__ import annotations

from fractions import Fraction

from .. import bounds
from ..dw import reference as dw
from ..formats import Format
from . import fp
from .algorithms import add_safe, mul_truncated, nonfinite_epilogue, positional, renormalize
from .eft import two_sum


def leading_exponent(a0) -> int:
    """ilogb(a0) for a finite nonzero a0, else 0."""
    return fp.exponent(a0) if fp.is_finite(a0) and not fp.is_zero(a0) else 0


def scale(v, k: int, fmt: Format):
    """Each term times 2**(k >> 1), then times 2**(k - (k >> 1)), k clamped as in the kernels."""
    k = min(max(k, 2 * (fmt.emin - fmt.p + 1)), 2 * fmt.emax)
    k1 = k >> 1
    f1, f2 = Fraction(2) ** k1, Fraction(2) ** (k - k1)
    return tuple(fp.mul(fp.mul(t, f1, fmt), f2, fmt) for t in v)


def start(a, fmt, rsqrt=False):
    """The two-term start: a's first two terms made a double word (2Sum where RN(a0 + a1) != a0),
    then DWDivDW2(1, .) of it, or with ``rsqrt`` of its SQRTDWtoDW (see expansions.cpu.newton.start)."""
    h, lo = a[0], (a[1] if len(a) > 1 else 0.0)
    if not fp.add(h, lo, fmt) == h:  # a NaN sum counts as different
        h, lo = two_sum(h, lo, fmt)
    if rsqrt:
        h, lo = dw.dw_sqrt(h, lo, fmt)
    return dw.dw_div_dw2(Fraction(1), 0.0, h, lo, fmt)


def _newton_reciprocal(a, R, fmt):
    m = len(a)
    x = start(a, fmt)
    for r in bounds.newton_steps(R, fmt)[1:]:
        v = renormalize(mul_truncated(a[: min(r, m)], x, r, fmt), r, fmt)
        w = renormalize(add_safe((Fraction(2),), tuple(fp.neg(t) for t in v), r, fmt), r, fmt)
        x = renormalize(mul_truncated(x, w, r, fmt), r, fmt)
    return x


def finish(out, operands, leading, fmt):
    """The non-finite rule, then NaN and zero leading results (see expansions.cpu.newton.finish)."""
    out = list(nonfinite_epilogue(out, operands, leading, fmt))
    if fp.is_nan(leading):
        return tuple([fp.NAN] + [0.0] * (len(out) - 1))
    if fp.is_zero(leading):
        return tuple([leading] + [0.0] * (len(out) - 1))
    return tuple(out)


def reciprocal(a, R, fmt):
    a = positional(a, fmt)
    k = -leading_exponent(a[0])
    x = _newton_reciprocal(scale(a, k, fmt), R, fmt)
    return finish(scale(x, k, fmt), (a,), fp.div(Fraction(1), a[0], fmt), fmt)


def div(x, y, R, fmt):
    x, y = positional(x, fmt), positional(y, fmt)
    kx = -leading_exponent(x[0])
    ky = -leading_exponent(y[0])
    z = _newton_reciprocal(scale(y, ky, fmt), R, fmt)
    q = renormalize(mul_truncated(scale(x, kx, fmt), z, R, fmt), R, fmt)
    return finish(scale(q, ky - kx, fmt), (x, y), fp.div(x[0], y[0], fmt), fmt)


def sqrt(a, R, fmt):
    a = positional(a, fmt)
    m = len(a)
    half = leading_exponent(a[0]) >> 1
    s = scale(a, -2 * half, fmt)
    y = start(s, fmt, rsqrt=True)
    for r in bounds.newton_steps(R, fmt)[1:]:
        t = renormalize(mul_truncated(s[: min(r, m)], y, r, fmt), r, fmt)
        v = renormalize(mul_truncated(t, y, r, fmt), r, fmt)
        w = renormalize(add_safe((Fraction(3),), tuple(fp.neg(c) for c in v), r, fmt), r, fmt)
        y = tuple(fp.mul(c, Fraction(1, 2), fmt) for c in renormalize(mul_truncated(y, w, r, fmt), r, fmt))
    out = scale(renormalize(mul_truncated(s, y, R, fmt), R, fmt), half, fmt)
    return finish(out, (a,), fp.sqrt(a[0], fmt), fmt)
