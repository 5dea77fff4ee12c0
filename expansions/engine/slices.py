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

from .kernels import OPTIONS, PARALLEL, readonly, renormalize_row
from .limits import BIAS64, EMAX64, EMIN64, FIELD64, SHIFT64

#: 2**emax and 2**emin of float64 (2**1023, 2**-1022): the largest and smallest normal powers of two.
_TOP = 2.0**EMAX64
_BOTTOM = 2.0**EMIN64

#: Work (array elements) from which the kernels run their parallel compilation.
PARALLEL_FROM = 1 << 17


@njit(**OPTIONS)
def _times_pow2(x, k):
    """``ldexp(x, k)`` for a float64 x whose exact product x 2**k is what ldexp rounds (once): a
    multiplication by 2**k; for k above 1023 by 2**1023 first (exact: x 2**1023 is finite and normal
    for the operands here), for k below -1022 by 2**-1022 first (exact for |x| >= 1)."""
    if k > EMAX64:
        return (x * _TOP) * math.ldexp(1.0, k - EMAX64)
    if k < EMIN64:
        return (x * _BOTTOM) * math.ldexp(1.0, k - EMIN64)
    return x * math.ldexp(1.0, k)


@njit(**OPTIONS)
def _pow2_or_zero(k):
    """2**k when it is a normal float64 (-1022 <= k <= 1023), else 0 (the caller then scales in two)."""
    if EMIN64 <= k <= EMAX64:
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
    terms = readonly(np.ascontiguousarray(terms, dtype=np.float64))  # see kernels.readonly
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


@njit(**OPTIONS)
def _finish_entry(dig, levels, g, factor, K, k, R, shift, tiny, up, out_row, chunks, first_pass, scaled, cur, srt, e):
    """The terms of one entry from its carried digits dig[0:levels] (top first): chunks of g digits
    scaled by ``factor``, :func:`renormalize_row` into k = max(K, R) terms, the first R scaled by
    2**shift, renormalized again where that scaling rounded or overflowed (the specification's
    :func:`expansions.cpu.slices.finish` after its carries, for one entry)."""
    for c_ in range(K):
        first = c_ * g
        last = min(first + g, levels) - 1
        f = dig[first]
        for t in range(first + 1, last + 1):
            f = f * up + dig[t]
        chunks[c_] = f * factor[c_]
    renormalize_row(chunks, K, k, first_pass, cur, srt, e)
    redo = False
    for r in range(R):
        v = first_pass[r]
        w = math.ldexp(np.float64(v), shift)
        scaled[r] = w
        sw = scaled[r]
        if not np.isfinite(sw) or (v != 0 and abs(sw) < tiny):
            redo = True
    if redo:
        renormalize_row(scaled, R, R, out_row, cur, srt, e)
    else:
        for r in range(R):
            out_row[r] = scaled[r]


@njit(**OPTIONS)
def _chunk_factors(levels, g, c0, beta):
    """2**(c0 - level beta) of each chunk's lowest digit (index i holds level i - 1)."""
    K = (levels + g - 1) // g
    factor = np.empty(K, np.float64)
    for c_ in range(K):
        factor[c_] = math.ldexp(1.0, c0 - (min(c_ * g + g, levels) - 2) * beta)
    return factor


def _finish_kernel_body(acc, EA, EB, beta, R, g, c0, tiny, out):
    levels, m, q = acc.shape
    K = (levels + g - 1) // g
    k = max(K, R)
    up = 2.0**beta
    down = 2.0**-beta
    factor = _chunk_factors(levels, g, c0, beta)
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
            _finish_entry(dig, levels, g, factor, K, k, R, EA[i] + EB[j] - c0, tiny, up, out[i, j], chunks,
                          first_pass, scaled, cur, srt, e)


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


# ---------------------------------------------------------------------------------------------
# the modular scheme (Ozaki scheme II): operands' residues, and the exact product from the products of
# residue matrices

#: Elements of a row (or columns of a row of B) processed at once: scratch arrays of this length
#: stay in registers and L1, and the loops over them are the vectorized ones.
LANES = 64
_FINITE_MAX = np.finfo(np.float64).max


@njit(**OPTIONS)
def _smod(x, m, minv, h):
    """Twin of :func:`expansions.cpu.slices.smod` on one value (h = (m - 1) * 0.5)."""
    q = np.rint(x * minv)
    r = x - q * m
    if r > h:
        r = r - m
    if r < -h:
        r = r + m
    return r


@njit(**OPTIONS)
def _raw_digits_entry(t, E, beta, S, fwd, back, d, rem, lane):
    """The raw (not carried) digits of one entry t (R terms) at scale E into d[:, lane] (the
    specification's :func:`expansions.cpu.slices._digits`, the scalings of :func:`_times_pow2`
    where 2**(s beta - E) or 2**(E - s beta) is not a normal float)."""
    R = t.shape[0]
    for r in range(R):
        rem[r] = t[r]
    for s in range(1, S + 1):
        total = 0.0
        f, b = fwd[s - 1], back[s - 1]
        for r in range(R):
            v = rem[r]
            if v != 0:
                x = v * f if f != 0 else _times_pow2(v, s * beta - E)
                h = np.rint(x)
                if h != 0:
                    rem[r] = v - (h * b if b != 0 else _times_pow2(h, E - s * beta))
                    total += h
        d[s - 1, lane] = total


def _largest_body(terms, columns, big, bad):
    """big[x]: the largest |term| of the entries of row x (columns false) or column x whose terms are
    all finite; bad[x]: whether an entry there has a non-finite term."""
    outer, inner, R = terms.shape
    X = inner if columns else outer
    blocks = (X + LANES - 1) // LANES
    for xb in prange(blocks):
        x0 = xb * LANES
        width = min(LANES, X - x0)
        for lane in range(width):
            big[x0 + lane] = 0.0
            bad[x0 + lane] = False
        for o in range(outer if columns else width):
            for lane in range(width if columns else inner):
                row, col, x = (o, x0 + lane, lane) if columns else (x0 + o, lane, o)
                fine = True
                for r in range(R):
                    if not abs(terms[row, col, r]) <= _FINITE_MAX:
                        fine = False
                if fine:
                    for r in range(R):
                        big[x0 + x] = max(big[x0 + x], abs(terms[row, col, r]))
                else:
                    bad[x0 + x] = True


def _digits_body(terms, o0, o1, columns, beta, S, top, E, fwd, back, fast, D, over, nonzero):
    """The carried digits D[:, :o1 - o0] (D: (S, rows, inner)) of the rows o0..o1-1 of ``terms``
    (outer, inner, R), scales E per row (or per column where ``columns``): the specification's
    :func:`expansions.cpu.slices.split` (one pass at the given scales).  ``fwd[s, x]``,
    ``back[s, x]``: 2**((s+1) beta - E_x) and its inverse (0 where not a normal float); ``fast[x]``:
    all of them normal and every term of row/column x finite: then the digits are computed
    ``LANES`` entries at a time without branches (the same operations on the same values as
    :func:`_raw_digits_entry`'s, whose tests only skip operations that change nothing but signs of
    zero, and the digits are sums with +0 first; a term whose remainders are zero in every lane
    is skipped, as its digits would all be zeros); else entry by entry, entries with a non-finite
    term counting as zero.  over[x] |= a top digit above 2**(top-1) (the caller raises E_x and
    computes again); nonzero[r, s] |= digit level s of row r has a nonzero digit."""
    outer, inner, R = terms.shape
    half_top = 2.0 ** (top - 1)
    up = 2.0**beta
    down = 2.0**-beta
    for ob in prange(o1 - o0):
        o = o0 + ob
        rem = np.empty(R, np.float64)
        rems = np.empty((R, LANES), np.float64)
        alive = np.empty(R, np.uint8)
        d = np.empty((S, LANES), np.float64)
        fw = np.empty(S, np.float64)
        bk = np.empty(S, np.float64)
        row_over = 0
        for l0 in range(0, inner, LANES):
            width = min(LANES, inner - l0)
            vector = True
            if columns:
                for lane in range(width):
                    if not fast[l0 + lane]:
                        vector = False
            else:
                vector = fast[o]
            if vector:
                for r in range(R):
                    flag = 0
                    for lane in range(width):
                        rems[r, lane] = terms[o, l0 + lane, r]
                        flag |= np.uint8(rems[r, lane] != 0)
                    alive[r] = flag
                for s in range(S):
                    for lane in range(width):
                        d[s, lane] = 0.0
                    for r in range(R):
                        if not alive[r]:  # a term that is zero in every lane adds zeros: skipped
                            continue
                        flag = 0
                        if columns:
                            for lane in range(width):
                                v = rems[r, lane]
                                h = np.rint(v * fwd[s, l0 + lane])
                                rems[r, lane] = v - h * back[s, l0 + lane]
                                d[s, lane] += h
                                flag |= np.uint8(rems[r, lane] != 0)
                        else:
                            f, b = fwd[s, o], back[s, o]
                            for lane in range(width):
                                v = rems[r, lane]
                                h = np.rint(v * f)
                                rems[r, lane] = v - h * b
                                d[s, lane] += h
                                flag |= np.uint8(rems[r, lane] != 0)
                        alive[r] = flag
            else:
                for lane in range(width):
                    x = l0 + lane if columns else o
                    fine = True
                    for r in range(R):
                        if not abs(terms[o, l0 + lane, r]) <= _FINITE_MAX:
                            fine = False
                    if fine:
                        for s in range(S):
                            fw[s] = fwd[s, x]
                            bk[s] = back[s, x]
                        _raw_digits_entry(terms[o, l0 + lane], E[x], beta, S, fw, bk, d, rem, lane)
                    else:
                        for s in range(S):
                            d[s, lane] = 0.0
            for s in range(S - 1, 0, -1):
                for lane in range(width):
                    cy = np.rint(d[s, lane] * down)
                    d[s, lane] = d[s, lane] - cy * up
                    d[s - 1, lane] = d[s - 1, lane] + cy
            if columns:
                for lane in range(width):
                    over[l0 + lane] |= np.uint8(abs(d[0, lane]) > half_top)
            else:
                for lane in range(width):
                    row_over |= np.uint8(abs(d[0, lane]) > half_top)
            for s in range(S):
                flag = 0
                for lane in range(width):
                    flag |= np.uint8(d[s, lane] != 0)
                    D[s, ob, l0 + lane] = d[s, lane]
                nonzero[ob, s] |= flag
        if not columns:
            over[o] |= row_over


def _smod_body(x, r0, r1, mod, minv):
    """x[i, r0:r1] = smod(x[i, r0:r1], m_i) in place, x (N, rows, cols): :func:`expansions.cpu.slices.smod`."""
    N, rows, cols = x.shape
    span = r1 - r0
    for t in prange(N * span):
        i, r = t // span, r0 + t % span
        m, mi = mod[i], minv[i]
        h = (m - 1) * 0.5
        for j in range(cols):
            x[i, r, j] = _smod(x[i, r, j], m, mi, h)


_largest_kernel = (njit(**OPTIONS)(_largest_body), njit(**PARALLEL)(_largest_body))
_digits_kernel = (njit(**OPTIONS)(_digits_body), njit(**PARALLEL)(_digits_body))
_smod_kernel = (njit(**OPTIONS)(_smod_body), njit(**PARALLEL)(_smod_body))

#: Elements (entries times digits and moduli) of one block of an operand's rows: its digits and
#: residues stay in the caches between the digits kernel, the BLAS product with the weights and the
#: reduction.
OPERAND_BLOCK = 1 << 18


def _factors(E, beta, S):
    """fwd[s, x] = 2**((s+1) beta - E_x), back[s, x] = 2**(E_x - (s+1) beta) where those are normal
    floats (else 0), and whether every one of x's is (the scalings of :func:`_pow2_or_zero`)."""
    s = np.arange(1, S + 1, dtype=np.int64)[:, None] * beta
    k_fwd, k_back = s - E[None, :], E[None, :] - s
    normal_fwd = (k_fwd >= EMIN64) & (k_fwd <= EMAX64)
    normal_back = (k_back >= EMIN64) & (k_back <= EMAX64)
    fwd = np.where(normal_fwd, np.ldexp(1.0, np.clip(k_fwd, EMIN64, EMAX64)), 0.0)
    back = np.where(normal_back, np.ldexp(1.0, np.clip(k_back, EMIN64, EMAX64)), 0.0)
    return fwd, back, normal_fwd.all(axis=0) & normal_back.all(axis=0)


def modular_operand(terms, beta: int, S: int, top: int, weights, moduli, columns: bool):
    """Compiled :func:`expansions.cpu.slices.modular_operand` (same arguments, results and bits), by
    blocks of rows of the operand (of rows of B: its scales per column, its residues in its own
    layout, no transposed copy): the digits (a compiled kernel), their weighted sums by the BLAS
    (``weights @ digits``: integers whose every partial sum is below 2**52, exact in any order, as
    the specification's ``tensordot``), the symmetric residues (a compiled kernel).  Rows (columns)
    whose top digit is too large get E + 1 and the operand is computed again, as in the
    specification."""
    terms = readonly(np.ascontiguousarray(terms, dtype=np.float64))  # see kernels.readonly
    outer, inner, R = terms.shape
    N = len(moduli)
    X = inner if columns else outer
    W = np.asarray(weights, dtype=np.float64).reshape(N, S)
    mod = np.asarray(moduli, dtype=np.float64)
    minv = 1.0 / mod
    res = np.empty((N, outer, inner), dtype=np.float64)
    big = np.empty(X, dtype=np.float64)
    bad = np.empty(X, dtype=np.bool_)
    _variant(_largest_kernel, terms.size)(terms, columns, big, bad)
    _, ex = np.frexp(big)
    E = np.where(big != 0, ex.astype(np.int64) + 1, 0) + (beta - top)
    rows = max(1, min(outer, OPERAND_BLOCK // max(1, (S + N) * inner)))
    D = np.empty((S, rows, inner), dtype=np.float64)
    over = np.zeros(X, dtype=np.uint8)
    nonzero = np.zeros((rows, S), dtype=np.uint8)
    digits, reduce = _variant(_digits_kernel, terms.size * S), _variant(_smod_kernel, res.size)
    for _ in range(64):
        fwd, back, fast = _factors(E, beta, S)
        fast = fast & ~bad
        over[:] = 0
        nonzero[:] = 0
        for o0 in range(0, outer, rows):
            o1 = min(outer, o0 + rows)
            digits(terms, o0, o1, columns, beta, S, top, E, fwd, back, fast, D, over, nonzero)
            np.matmul(W, D[:, :o1 - o0].reshape(S, -1), out=res[:, o0:o1].reshape(N, -1))
            reduce(res, o0, o1, mod, minv)
        if not over.any():
            break
        E = E + over.astype(np.int64)
    used_levels = nonzero.any(axis=0)
    used = int(np.nonzero(used_levels)[0][-1]) + 1 if used_levels.any() else 0
    return res, E, used, bool(bad.any())


def _modular_finish_body(G, mod, minv, unshift, garner, inverses, radix, start, cut, EA, EB, lb, R, g, c0, tiny, fast,
                         out):
    N, m, q = G.shape
    levels = radix.shape[1]
    kept = levels - cut
    K = (kept + g - 1) // g
    k = max(K, R)
    up = 2.0**lb
    down = 2.0**-lb
    factor = _chunk_factors(kept, g, c0, lb)
    shifted = False
    for i in range(N):
        if unshift[i] != 1:
            shifted = True
    for i in prange(m):
        v = np.empty((N, LANES), np.float64)
        x = np.empty(LANES, np.float64)
        acc = np.empty((levels, LANES), np.float64)
        dig = np.empty(levels, np.float64)
        chunks = np.empty(K, out.dtype)
        first_pass = np.empty(k, out.dtype)
        scaled = np.empty(R, out.dtype)
        cur = np.empty(k, out.dtype)
        srt = np.empty(k, out.dtype)
        e = np.empty(k, out.dtype)
        ok = np.empty(LANES, np.bool_)
        stop = np.empty(LANES, np.bool_)
        shift = np.empty(LANES, np.int64)
        jo = np.empty(LANES, np.int64)
        ch = np.empty((K, LANES), np.float64)
        ev = np.empty((K, LANES), np.float64)
        fp = np.empty((k, LANES), np.float64)
        sv = np.empty(LANES, np.float64)
        eps = np.empty(LANES, np.float64)
        ib = np.empty(LANES, np.int64)
        fb = ib.view(np.float64)
        for j0 in range(0, q, LANES):
            width = min(LANES, q - j0)
            for t in range(N):
                mm, mi = mod[t], minv[t]
                h = (mm - 1) * 0.5
                for lane in range(width):
                    v[t, lane] = _smod(G[t, i, j0 + lane], mm, mi, h)
                if shifted:
                    u = unshift[t]
                    for lane in range(width):
                        v[t, lane] = _smod(v[t, lane] * u, mm, mi, h)
            # Garner's digits and the level sums: sums of exact integers whose every partial sum is
            # below 2**52 (the plan's bounds are on sums of magnitudes), so they are added four
            # products at a time (fewer passes over the lanes): the same values, and a zero sum is +0.
            for t in range(1, N):
                mm, mi = mod[t], minv[t]
                h = (mm - 1) * 0.5
                for lane in range(width):
                    x[lane] = 0.0
                jj = 0
                while jj + 4 <= t:
                    w0, w1, w2, w3 = garner[t, jj], garner[t, jj + 1], garner[t, jj + 2], garner[t, jj + 3]
                    for lane in range(width):
                        x[lane] += (v[jj, lane] * w0 + v[jj + 1, lane] * w1) + (v[jj + 2, lane] * w2
                                                                               + v[jj + 3, lane] * w3)
                    jj += 4
                while jj < t:
                    w = garner[t, jj]
                    for lane in range(width):
                        x[lane] += v[jj, lane] * w
                    jj += 1
                inv = inverses[t]
                for lane in range(width):
                    r = _smod(v[t, lane] - x[lane], mm, mi, h)
                    v[t, lane] = _smod(r * inv, mm, mi, h)
            for top in range(levels):
                lv = levels - 1 - top
                for lane in range(width):
                    acc[top, lane] = 0.0
                t = start[lv]
                while t + 4 <= N:
                    p0, p1, p2, p3 = radix[t, lv], radix[t + 1, lv], radix[t + 2, lv], radix[t + 3, lv]
                    for lane in range(width):
                        acc[top, lane] += (v[t, lane] * p0 + v[t + 1, lane] * p1) + (v[t + 2, lane] * p2
                                                                                    + v[t + 3, lane] * p3)
                    t += 4
                while t < N:
                    pd = radix[t, lv]
                    for lane in range(width):
                        acc[top, lane] += v[t, lane] * pd
                    t += 1
            for lv in range(levels - 1, 0, -1):
                for lane in range(width):
                    c = np.rint(acc[lv, lane] * down)
                    acc[lv, lane] = acc[lv, lane] - c * up
                    acc[lv - 1, lane] = acc[lv - 1, lane] + c
            # The fast path (float64 terms), LANES entries at a time without branches: the first
            # round of renormalize_row where it is its result (the chunks' magnitudes do not
            # increase, so its stable sort changes nothing; VecSum; VecSumErrBranch with each
            # entry's output index and stop flag as lanes; its terms finite and ulp-nonoverlapping
            # by its own test, the ulp from the exponent bits), then the scaling by a product with
            # 2**shift where that is a normal float and the product neither overflows nor falls
            # below the normal range (ldexp's one rounding, no second renormalization): the general
            # path's operations on each entry, the same bits.  Other entries take the general path.
            for lane in range(width):
                ok[lane] = fast
                sh = EA[i] + EB[j0 + lane] - c0
                shift[lane] = sh
                ok[lane] &= (sh >= EMIN64) & (sh <= EMAX64)
            if fast:
                for c_ in range(K):
                    first = c_ * g
                    last = min(first + g, kept) - 1
                    for lane in range(width):
                        ch[c_, lane] = acc[first, lane]
                    for t in range(first + 1, last + 1):
                        for lane in range(width):
                            ch[c_, lane] = ch[c_, lane] * up + acc[t, lane]
                    fc = factor[c_]
                    for lane in range(width):
                        ch[c_, lane] = ch[c_, lane] * fc
                for c_ in range(K - 1):
                    for lane in range(width):
                        ok[lane] &= abs(ch[c_, lane]) >= abs(ch[c_ + 1, lane])
                for c_ in range(K):
                    for lane in range(width):
                        ok[lane] &= abs(ch[c_, lane]) <= _FINITE_MAX
                for lane in range(width):
                    sv[lane] = ch[K - 1, lane]
                for c_ in range(K - 2, -1, -1):
                    for lane in range(width):
                        a_, b_ = ch[c_, lane], sv[lane]
                        s_ = a_ + b_
                        bb = s_ - a_
                        ev[c_ + 1, lane] = (a_ - (s_ - bb)) + (b_ - bb)
                        sv[lane] = s_
                for lane in range(width):
                    ev[0, lane] = sv[lane]
                    eps[lane] = sv[lane]
                    jo[lane] = 0
                    stop[lane] = False
                for t in range(k):
                    for lane in range(width):
                        fp[t, lane] = 0.0
                for c_ in range(1, K):
                    for lane in range(width):
                        a_, b_ = eps[lane], ev[c_, lane]
                        s_ = a_ + b_
                        bb = s_ - a_
                        en = (a_ - (s_ - bb)) + (b_ - bb)
                        live = not stop[lane]
                        for t in range(k):
                            if live and jo[lane] == t:
                                fp[t, lane] = s_
                        brk = live and en != 0 and jo[lane] >= k - 1
                        step = live and en != 0 and not brk
                        if live:
                            eps[lane] = en if en != 0 else s_
                        jo[lane] += np.int64(step)
                        stop[lane] = stop[lane] or brk
                for lane in range(width):
                    for t in range(k):
                        if not stop[lane] and jo[lane] == t:
                            fp[t, lane] = eps[lane]
                for t in range(k):
                    for lane in range(width):
                        ok[lane] &= abs(fp[t, lane]) <= _FINITE_MAX
                for t in range(1, k):
                    for lane in range(width):
                        fb[lane] = fp[t - 1, lane]
                    for lane in range(width):
                        ex = (ib[lane] >> SHIFT64) & FIELD64  # the ulp's bits (p - 1 = SHIFT64)
                        ib[lane] = np.int64(1) if ex == 0 else (
                            (ex - SHIFT64) << SHIFT64 if ex > SHIFT64 else np.int64(1) << (ex - 1))
                    for lane in range(width):
                        ok[lane] &= (fp[t, lane] == 0) | (abs(fp[t, lane]) <= fb[lane])
                for lane in range(width):
                    ib[lane] = (shift[lane] + BIAS64) << SHIFT64
                for r in range(R):
                    for lane in range(width):
                        w = fp[r, lane] * fb[lane]
                        ok[lane] &= (abs(w) <= _FINITE_MAX) & ((fp[r, lane] == 0) | (abs(w) >= tiny))
                        out[i, j0 + lane, r] = w
            for lane in range(width):
                if not ok[lane]:
                    for lv in range(kept):
                        dig[lv] = acc[lv, lane]
                    _finish_entry(dig, kept, g, factor, K, k, R, shift[lane], tiny, up, out[i, j0 + lane], chunks,
                                  first_pass, scaled, cur, srt, e)


_modular_finish_kernel = (njit(**OPTIONS)(_modular_finish_body), njit(**PARALLEL)(_modular_finish_body))


def modular_finish(G, setup, EA, EB, R: int, dtype, p: int, emin: int, renormalize=None):
    """Compiled :func:`expansions.cpu.slices.modular_finish` (same arguments, results and bits; the
    renormalization is the engine's own, ``renormalize`` is accepted and unused): per row of the
    result, blocks of :data:`LANES` entries go through the residues, Garner's digits, the level sums
    and the carries together (vectorized over the entries), then one entry at a time through the
    chunks, the renormalization and the scaling of :func:`finish`."""
    N, m, q = G.shape
    lb = setup.level_bits
    T = setup.levels - setup.cut - 2
    out = np.empty((m, q, R), dtype=dtype)
    mod = np.asarray(setup.moduli, dtype=np.float64)
    kernel = _variant(_modular_finish_kernel, G.size * (N + setup.levels))
    radix = np.asarray(setup.radix, dtype=np.float64).reshape(N, setup.levels)
    # start[l]: the first modulus whose P_i has a digit at level l (P_i grows with i)
    lengths = [max((lv + 1 for lv in range(setup.levels) if d[lv] != 0), default=0) for d in setup.radix]
    start = np.array([min([t for t in range(N) if lengths[t] > lv], default=N) for lv in range(setup.levels)],
                     dtype=np.int64)
    kernel(G, mod, 1.0 / mod, np.asarray(setup.unshift, dtype=np.float64),
           np.asarray(setup.garner, dtype=np.float64).reshape(N, N), np.asarray(setup.inverses, dtype=np.float64),
           radix, start, setup.cut, (EA + (setup.low_exponent + T * lb)).astype(np.int64), EB.astype(np.int64), lb, R,
           max(1, p // lb), emin + T * lb, 2.0**emin, out.dtype == np.float64, out)
    return out
