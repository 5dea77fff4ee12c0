"""Compiled twins of :mod:`expansions.cpu.slices` (numba, nopython): :func:`split`, :func:`fold` and
:func:`finish` of the matrix products by exact slices, with the names, signatures and bits of the
specification (``tests/test_slices.py``), one matrix row per iteration of a ``prange`` loop.

Every operation of :func:`split`, :func:`fold` and the carries is exact (integers far below 2**53, and
scalings by powers of two whose results are exact), so the order of the additions cannot change a
bit; the scalings ``ldexp(v, k)`` are multiplications by 2**k, split in two factors where 2**k is
not a float, the exact one first, so that the one rounding (a result below the underflow threshold)
is the rounding of ``ldexp``.  :func:`finish` runs :func:`expansions.engine.kernels.renormalize_row`,
the compiled twin of the library's renormalization.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .kernels import OPTIONS, PARALLEL, renormalize_row

#: Work (array elements) from which the kernels run their parallel compilation.
PARALLEL_FROM = 1 << 17


@njit(**OPTIONS)
def _times_pow2(x, k):
    """``ldexp(x, k)`` for a float64 x whose exact product x 2**k is what ldexp rounds (once): a
    multiplication by 2**k; for k above 1023 by 2**1023 first (exact: x 2**1023 is finite and normal
    for the operands here), for k below -1022 by 2**-1022 first (exact for |x| >= 1)."""
    if k > 1023:
        return (x * 2.0**1023) * math.ldexp(1.0, k - 1023)
    if k < -1022:
        return (x * 2.0**-1022) * math.ldexp(1.0, k + 1022)
    return x * math.ldexp(1.0, k)


@njit(**OPTIONS)
def _pow2_or_zero(k):
    """2**k when it is a normal float64 (-1022 <= k <= 1023), else 0 (the caller then scales in two)."""
    if -1022 <= k <= 1023:
        return math.ldexp(1.0, k)
    return 0.0


def _scales_kernel_body(terms, E):
    """E of :func:`expansions.cpu.slices.split`: 1 + the largest exponent of a row's nonzero terms."""
    rows, n, R = terms.shape
    for i in prange(rows):
        top = -(1 << 20)
        for k in range(n):
            for r in range(R):
                v = terms[i, k, r]
                if v != 0:
                    e = math.frexp(v)[1]
                    if e > top:
                        top = e
        E[i] = top + 1 if top > -(1 << 20) else 0


def _split_kernel_body(terms, E, beta, S, D, over, nonzero):
    rows, n, R = terms.shape
    half = 2.0 ** (beta - 1)
    up = 2.0**beta
    down = 2.0**-beta
    for i in prange(rows):
        Ei = E[i]
        rem = np.empty(R, np.float64)
        d = np.empty(S, np.float64)
        fwd = np.empty(S, np.float64)  # 2**(s beta - E) and 2**(E - s beta), or 0 where not a float
        back = np.empty(S, np.float64)
        for s in range(1, S + 1):
            fwd[s - 1] = _pow2_or_zero(s * beta - Ei)
            back[s - 1] = _pow2_or_zero(Ei - s * beta)
            nonzero[i, s - 1] = False
        bad = False
        for k in range(n):
            for r in range(R):
                rem[r] = terms[i, k, r]
            for s in range(1, S + 1):
                total = 0.0
                f, b = fwd[s - 1], back[s - 1]
                for r in range(R):
                    v = rem[r]
                    if v != 0:
                        x = v * f if f != 0 else _times_pow2(v, s * beta - Ei)
                        h = np.rint(x)
                        if h != 0:
                            rem[r] = v - (h * b if b != 0 else _times_pow2(h, Ei - s * beta))
                            total += h
                d[s - 1] = total
            for s in range(S - 1, 0, -1):
                c = np.rint(d[s] * down)
                d[s] = d[s] - c * up
                d[s - 1] = d[s - 1] + c
            for s in range(S):
                D[s, i, k] = d[s]
                if d[s] != 0:
                    nonzero[i, s] = True
            if abs(d[0]) > half:
                bad = True
        over[i] = bad


_scales_kernel = (njit(**OPTIONS)(_scales_kernel_body), njit(**PARALLEL)(_scales_kernel_body))
_split_kernel = (njit(**OPTIONS)(_split_kernel_body), njit(**PARALLEL)(_split_kernel_body))


def _variant(kernels, work: int):
    """The serial compilation of a kernel for small work (a parallel region costs more than it saves
    there, and much more on a machine with more busy threads than cores), else the parallel one;
    both give the same bits (the iterations are independent)."""
    return kernels[1] if work >= PARALLEL_FROM else kernels[0]


def split(terms, beta: int, S: int):
    """Compiled :func:`expansions.cpu.slices.split` (same arguments, results and bits)."""
    terms = np.ascontiguousarray(terms, dtype=np.float64)
    rows, n, R = terms.shape
    E = np.empty(rows, dtype=np.int64)
    _variant(_scales_kernel, terms.size)(terms, E)
    D = np.empty((S, rows, n), dtype=np.float64)
    over = np.empty(rows, dtype=np.bool_)
    nonzero = np.empty((rows, S), dtype=np.bool_)
    while True:
        _variant(_split_kernel, terms.size * S)(terms, E, beta, S, D, over, nonzero)
        if not over.any():
            return D, E, [bool(v) for v in nonzero.any(axis=0)] if rows else [False] * S
        E = E + over.astype(np.int64)


def _fold_kernel_body(acc, G, L, beta):
    m, q = G.shape
    up = 2.0**beta
    down = 2.0**-beta
    for i in prange(m):
        low, high, g_row = acc[L + 1, i], acc[L, i], G[i]
        for j in range(q):
            g = g_row[j]
            hi = np.rint(g * down)
            low[j] += g - hi * up
            high[j] += hi


_fold_kernel = (njit(**OPTIONS)(_fold_kernel_body), njit(**PARALLEL)(_fold_kernel_body))


def fold(acc, G, L: int, beta: int):
    """Compiled :func:`expansions.cpu.slices.fold`."""
    _variant(_fold_kernel, G.size)(acc, G, L, beta)


def _finish_kernel_body(acc, EA, EB, beta, R, g, c0, tiny, out):
    levels, m, q = acc.shape
    K = (levels + g - 1) // g
    k = max(K, R)
    up = 2.0**beta
    down = 2.0**-beta
    factor = np.empty(K, np.float64)  # 2**(c0 - level * beta) of each term's lowest digit
    for c_ in range(K):
        factor[c_] = math.ldexp(1.0, c0 - (min(c_ * g + g, levels) - 2) * beta)
    for i in prange(m):
        dig = np.empty(levels, np.float64)
        chunks = np.empty(K, out.dtype)
        first_pass = np.empty(k, out.dtype)
        scaled = np.empty(R, out.dtype)
        cur = np.empty(k, out.dtype)
        srt = np.empty(k, out.dtype)
        e = np.empty(k, out.dtype)
        for j in range(q):
            for t in range(levels):
                dig[t] = acc[t, i, j]
            for t in range(levels - 1, 0, -1):
                c = np.rint(dig[t] * down)
                dig[t] = dig[t] - c * up
                dig[t - 1] = dig[t - 1] + c
            for c_ in range(K):
                first = c_ * g
                last = min(first + g, levels) - 1
                f = dig[first]
                for t in range(first + 1, last + 1):
                    f = f * up + dig[t]
                chunks[c_] = f * factor[c_]
            renormalize_row(chunks, K, k, first_pass, cur, srt, e)
            shift = EA[i] + EB[j] - c0
            redo = False
            for r in range(R):
                v = first_pass[r]
                w = math.ldexp(np.float64(v), shift)
                scaled[r] = w
                sw = scaled[r]
                if not np.isfinite(sw) or (v != 0 and abs(sw) < tiny):
                    redo = True
            if redo:
                renormalize_row(scaled, R, R, out[i, j], cur, srt, e)
            else:
                for r in range(R):
                    out[i, j, r] = scaled[r]


_finish_kernel = (njit(**OPTIONS)(_finish_kernel_body), njit(**PARALLEL)(_finish_kernel_body))


def finish(acc, EA, EB, beta: int, R: int, dtype, p: int, emin: int, renormalize=None):
    """Compiled :func:`expansions.cpu.slices.finish` (the renormalization is the engine's own,
    :func:`expansions.engine.kernels.renormalize_row`; ``renormalize`` is accepted and unused)."""
    levels, m, q = acc.shape
    T = levels - 2
    out = np.empty((m, q, R), dtype=dtype)
    kernel = _variant(_finish_kernel, acc.size * 4)
    kernel(acc, EA.astype(np.int64), EB.astype(np.int64), beta, R, max(1, p // beta), emin + T * beta, 2.0**emin, out)
    return out
