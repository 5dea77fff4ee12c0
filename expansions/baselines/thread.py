"""NumPy twins of the per-thread division, reciprocal, square root and comparison of the C++ API for
users' kernels (``expansions/cuda/user.cuh``): the same operations in the same order, vectorized over
expansions, on (count, R) arrays of terms.  Addition and multiplication are the certified ones of
:mod:`expansions.baselines.cpu`.  The kernel's special cases (an operand not finite, a zero divisor
or radicand, a negative radicand) are branches there and selects here: the Newton iterations run on
every row and the special rows are replaced afterwards.  Array-module generic.
"""

from __future__ import annotations

import contextlib

from ..cpu.lanes import array_module
from .cpu import certified_add, certified_mul


def _quiet(xp):
    """NumPy's errstate(all='ignore'); CuPy does not warn."""
    return xp.errstate(all="ignore") if hasattr(xp, "errstate") else contextlib.nullcontext()


def newton_steps(R: int) -> int:
    """Twin of ``NewtonSteps<R>``: ceil(log2 R) + 1 steps (p correct bits doubled per step, one spare)."""
    return (R - 1).bit_length() + 1


def _all_finite(xp, x):
    return xp.isfinite(x).all(axis=1)


def _lower_nonfinite(xp, x):
    return xp.isfinite(x[:, 0]) & ~_all_finite(xp, x)


def _special(xp, r, mask, w, lower):
    """Twin of ``special_result``: rows of ``mask`` become (w, 0, ..., 0), canonical NaN where ``lower``
    or where w is NaN."""
    w = xp.where(lower | xp.isnan(w), xp.asarray(float("nan"), dtype=r.dtype), w).astype(r.dtype)
    out = r.copy()
    out[mask] = 0
    out[mask, 0] = w[mask]
    return out


def _scale(xp, x, k):
    """Twin of ``scale_terms``: every term times 2^(k >> 1), then times 2^(k - (k >> 1)); k per row."""
    h1 = k >> 1
    one = xp.ones((), dtype=x.dtype)
    s1 = xp.ldexp(one, h1).astype(x.dtype)[:, None]
    s2 = xp.ldexp(one, k - h1).astype(x.dtype)[:, None]
    return (x * s1) * s2


def _start(xp, a):
    """(a, exponent per row): a's finite nonzero rows as they are, the others replaced by 1 (so that
    the iterations of rows the kernel does not iterate stay finite; their results are replaced)."""
    with_values = _all_finite(xp, a) & (a[:, 0] != 0)
    safe = xp.where(with_values[:, None], a, xp.asarray(0, dtype=a.dtype))
    safe[:, 0] = xp.where(with_values, a[:, 0], xp.asarray(1, dtype=a.dtype))
    _, e = xp.frexp(safe[:, 0])
    return safe, e.astype(xp.int64)


def reciprocal(a, R):
    """Twin of ``reciprocal_thread<T, R>``."""
    xp = array_module(a)
    dt = a.dtype
    with _quiet(xp):
        special = ~_all_finite(xp, a) | (a[:, 0] == 0)
        safe, e = _start(xp, a)
        a_s = _scale(xp, safe, -e)
        x = xp.zeros_like(a_s)
        x[:, 0] = xp.asarray(1, dtype=dt) / a_s[:, 0]
        one = xp.zeros_like(a_s)
        one[:, 0] = 1
        for _ in range(newton_steps(R)):
            d = certified_add(one, -certified_mul(a_s, x, R), R)  # 1 - a x
            x = certified_add(x, certified_mul(x, d, R), R)
        x = _scale(xp, x, -e)
        r = _special(xp, x, ~xp.isfinite(x[:, 0]), x[:, 0], xp.zeros(len(x), dtype=bool))
        return _special(xp, r, special, xp.asarray(1, dtype=dt) / a[:, 0], _lower_nonfinite(xp, a))


def div(x, y, R):
    """Twin of ``div_thread<T, R>``: x (1/y)."""
    xp = array_module(x)
    with _quiet(xp):
        special = ~_all_finite(xp, x) | ~_all_finite(xp, y) | (y[:, 0] == 0)
        r = certified_mul(x, reciprocal(y, R), R)
        return _special(xp, r, special, x[:, 0] / y[:, 0], _lower_nonfinite(xp, x) | _lower_nonfinite(xp, y))


def sqrt(a, R):
    """Twin of ``sqrt_thread<T, R>``."""
    xp = array_module(a)
    dt = a.dtype
    with _quiet(xp):
        special = ~_all_finite(xp, a) | (a[:, 0] == 0) | (a[:, 0] < 0)
        safe, e = _start(xp, a)
        even = e - (e & 1)
        a_s = _scale(xp, safe, -even)
        y = xp.zeros_like(a_s)
        y[:, 0] = xp.asarray(1, dtype=dt) / xp.sqrt(a_s[:, 0])
        one = xp.zeros_like(a_s)
        one[:, 0] = 1
        half = xp.asarray(0.5, dtype=dt)
        for _ in range(newton_steps(R)):
            d = certified_add(one, -certified_mul(a_s, certified_mul(y, y, R), R), R)  # 1 - a y^2
            y = certified_add(y, certified_mul(y, d * half, R), R)
        r = _scale(xp, certified_mul(a_s, y, R), even // 2)
        return _special(xp, r, special, xp.sqrt(a[:, 0]), _lower_nonfinite(xp, a))


def compare(x, y, R):
    """Twin of ``compare_thread<T, R>``: -1, 0, 1, or 2 where unordered (int8 per row)."""
    xp = array_module(x)
    with _quiet(xp):
        finite = _all_finite(xp, x) & _all_finite(xp, y)
        d = certified_add(x, -y, R)[:, 0]
        by_diff = xp.where(d < 0, -1, xp.where(d > 0, 1, 0))
        x0, y0 = x[:, 0], y[:, 0]
        unordered = _lower_nonfinite(xp, x) | _lower_nonfinite(xp, y) | xp.isnan(x0) | xp.isnan(y0)
        by_lead = xp.where(unordered, 2, xp.where(x0 < y0, -1, xp.where(x0 > y0, 1, 0)))
        return xp.where(finite, by_diff, by_lead).astype(xp.int8)
