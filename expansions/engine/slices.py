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

from .kernels import OPTIONS, PARALLEL, renormalize_row, two_sum

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


@njit(**OPTIONS)
def _carry_lanes(d, S, width, up, down):
    """Balanced digits (the specification's carries of :func:`expansions.cpu.slices._digits`)."""
    for s in range(S - 1, 0, -1):
        for lane in range(width):
            c = np.rint(d[s, lane] * down)
            d[s, lane] = d[s, lane] - c * up
            d[s - 1, lane] = d[s - 1, lane] + c


@njit(**OPTIONS)
def _residue_lanes(d, S, width, W, mod, minv, res_rows, acc):
    """res_rows[i][lane] = smod(sum_s d[s, lane] W[i, s], m_i) (:func:`expansions.cpu.slices.residues`)."""
    for i in range(W.shape[0]):
        m, mi = mod[i], minv[i]
        h = (m - 1) * 0.5
        for lane in range(width):
            acc[lane] = 0.0
        for s in range(S):
            w = W[i, s]
            for lane in range(width):
                acc[lane] += d[s, lane] * w
        row = res_rows[i]
        for lane in range(width):
            row[lane] = _smod(acc[lane], m, mi, h)


def _operand_rows_body(terms, beta, S, top, W, mod, minv, res, E, nonzero, bad_rows):
    rows, n, R = terms.shape
    half_top = 2.0 ** (top - 1)
    up = 2.0**beta
    down = 2.0**-beta
    for i in prange(rows):
        rem = np.empty(R, np.float64)
        rems = np.empty((R, LANES), np.float64)
        d = np.empty((S, LANES), np.float64)
        acc = np.empty(LANES, np.float64)
        fwd = np.empty(S, np.float64)
        back = np.empty(S, np.float64)
        big = 0.0
        bad = False
        for k in range(n):
            fine = True
            for r in range(R):
                if not abs(terms[i, k, r]) <= _FINITE_MAX:
                    fine = False
            if fine:
                for r in range(R):
                    big = max(big, abs(terms[i, k, r]))
            else:
                bad = True
        bad_rows[i] = bad
        Ei = (math.frexp(big)[1] + 1 if big != 0 else 0) + (beta - top)
        for _attempt in range(64):
            fast = not bad
            for s in range(1, S + 1):
                fwd[s - 1] = _pow2_or_zero(s * beta - Ei)
                back[s - 1] = _pow2_or_zero(Ei - s * beta)
                if fwd[s - 1] == 0 or back[s - 1] == 0:
                    fast = False
                nonzero[i, s - 1] = False
            over = False
            for k0 in range(0, n, LANES):
                width = min(LANES, n - k0)
                if fast:
                    for r in range(R):
                        for lane in range(width):
                            rems[r, lane] = terms[i, k0 + lane, r]
                    for s in range(S):
                        f, b = fwd[s], back[s]
                        for lane in range(width):
                            d[s, lane] = 0.0
                        for r in range(R):
                            for lane in range(width):
                                v = rems[r, lane]
                                h = np.rint(v * f)
                                rems[r, lane] = v - h * b
                                d[s, lane] += h
                else:
                    for lane in range(width):
                        t = terms[i, k0 + lane]
                        fine = True
                        for r in range(R):
                            if not abs(t[r]) <= _FINITE_MAX:
                                fine = False
                        if fine:
                            _raw_digits_entry(t, Ei, beta, S, fwd, back, d, rem, lane)
                        else:
                            for s in range(S):
                                d[s, lane] = 0.0
                _carry_lanes(d, S, width, up, down)
                for lane in range(width):
                    if abs(d[0, lane]) > half_top:
                        over = True
                for s in range(S):
                    for lane in range(width):
                        if d[s, lane] != 0:
                            nonzero[i, s] = True
                _residue_lanes(d, S, width, W, mod, minv, res[:, i, k0:k0 + width], acc)
            if not over:
                break
            Ei += 1
        E[i] = Ei


def _column_scales_body(terms, beta, top, E, bad_cols):
    n, p, R = terms.shape
    blocks = (p + LANES - 1) // LANES
    for jb in prange(blocks):
        j0 = jb * LANES
        width = min(LANES, p - j0)
        big = np.zeros(LANES, np.float64)
        bad = np.zeros(LANES, np.bool_)
        for k in range(n):
            for lane in range(width):
                fine = True
                for r in range(R):
                    if not abs(terms[k, j0 + lane, r]) <= _FINITE_MAX:
                        fine = False
                if fine:
                    for r in range(R):
                        big[lane] = max(big[lane], abs(terms[k, j0 + lane, r]))
                else:
                    bad[lane] = True
        for lane in range(width):
            E[j0 + lane] = (math.frexp(big[lane])[1] + 1 if big[lane] != 0 else 0) + (beta - top)
            bad_cols[j0 + lane] = bad[lane]


def _operand_columns_body(terms, beta, S, top, W, mod, minv, E, fwd, back, fast_cols, res, over, nonzero):
    n, p, R = terms.shape
    half_top = 2.0 ** (top - 1)
    up = 2.0**beta
    down = 2.0**-beta
    chunks = over.shape[0]
    per = (n + chunks - 1) // chunks
    for c in prange(chunks):
        rem = np.empty(R, np.float64)
        rems = np.empty((R, LANES), np.float64)
        d = np.empty((S, LANES), np.float64)
        acc = np.empty(LANES, np.float64)
        fw = np.empty(S, np.float64)
        bk = np.empty(S, np.float64)
        for j in range(p):
            over[c, j] = False
        for s in range(S):
            nonzero[c, s] = False
        for k in range(c * per, min(n, (c + 1) * per)):
            for j0 in range(0, p, LANES):
                width = min(LANES, p - j0)
                fast = True
                for lane in range(width):
                    if not fast_cols[j0 + lane]:
                        fast = False
                if fast:
                    for r in range(R):
                        for lane in range(width):
                            rems[r, lane] = terms[k, j0 + lane, r]
                    for s in range(S):
                        for lane in range(width):
                            d[s, lane] = 0.0
                        for r in range(R):
                            for lane in range(width):
                                v = rems[r, lane]
                                h = np.rint(v * fwd[s, j0 + lane])
                                rems[r, lane] = v - h * back[s, j0 + lane]
                                d[s, lane] += h
                else:
                    for lane in range(width):
                        t = terms[k, j0 + lane]
                        fine = True
                        for r in range(R):
                            if not abs(t[r]) <= _FINITE_MAX:
                                fine = False
                        if fine:
                            for s in range(S):
                                fw[s] = fwd[s, j0 + lane]
                                bk[s] = back[s, j0 + lane]
                            _raw_digits_entry(t, E[j0 + lane], beta, S, fw, bk, d, rem, lane)
                        else:
                            for s in range(S):
                                d[s, lane] = 0.0
                _carry_lanes(d, S, width, up, down)
                for lane in range(width):
                    if abs(d[0, lane]) > half_top:
                        over[c, j0 + lane] = True
                for s in range(S):
                    for lane in range(width):
                        if d[s, lane] != 0:
                            nonzero[c, s] = True
                _residue_lanes(d, S, width, W, mod, minv, res[:, k, j0:j0 + width], acc)


_operand_rows_kernel = (njit(**OPTIONS)(_operand_rows_body), njit(**PARALLEL)(_operand_rows_body))
_column_scales_kernel = (njit(**OPTIONS)(_column_scales_body), njit(**PARALLEL)(_column_scales_body))
_operand_columns_kernel = (njit(**OPTIONS)(_operand_columns_body), njit(**PARALLEL)(_operand_columns_body))


def _column_factors(E, beta, S):
    """fwd[s, j] = 2**((s+1) beta - E_j), back[s, j] = 2**(E_j - (s+1) beta) where those are normal
    floats (else 0), and whether every one of column j's is."""
    s = np.arange(1, S + 1, dtype=np.int64)[:, None] * beta
    k_fwd, k_back = s - E[None, :], E[None, :] - s
    normal = lambda k: (k >= -1022) & (k <= 1023)  # noqa: E731
    fwd = np.where(normal(k_fwd), np.ldexp(1.0, np.clip(k_fwd, -1022, 1023)), 0.0)
    back = np.where(normal(k_back), np.ldexp(1.0, np.clip(k_back, -1022, 1023)), 0.0)
    return fwd, back, normal(k_fwd).all(axis=0) & normal(k_back).all(axis=0)


def modular_operand(terms, beta: int, S: int, top: int, weights, moduli, columns: bool):
    """Compiled :func:`expansions.cpu.slices.modular_operand` (same arguments, results and bits): the
    residues of B are computed in B's own layout (no transposed copy), its scales per column."""
    terms = np.ascontiguousarray(terms, dtype=np.float64)
    rows, cols, R = terms.shape
    W = np.asarray(weights, dtype=np.float64).reshape(len(moduli), S)
    mod = np.asarray(moduli, dtype=np.float64)
    minv = 1.0 / mod
    res = np.empty((len(moduli), rows, cols), dtype=np.float64)
    work = terms.size * (S + len(moduli))
    if not columns:
        E = np.empty(rows, dtype=np.int64)
        nonzero = np.empty((rows, S), dtype=np.bool_)
        bad = np.empty(rows, dtype=np.bool_)
        _variant(_operand_rows_kernel, work)(terms, beta, S, top, W, mod, minv, res, E, nonzero, bad)
        used_levels = nonzero.any(axis=0) if rows else np.zeros(S, dtype=np.bool_)
        anybad = bool(bad.any())
    else:
        E = np.empty(cols, dtype=np.int64)
        bad = np.empty(cols, dtype=np.bool_)
        _variant(_column_scales_kernel, terms.size)(terms, beta, top, E, bad)
        chunks = max(1, min(rows, 64))
        over = np.empty((chunks, cols), dtype=np.bool_)
        nonzero = np.empty((chunks, S), dtype=np.bool_)
        for _ in range(64):
            fwd, back, fast = _column_factors(E, beta, S)
            _variant(_operand_columns_kernel, work)(terms, beta, S, top, W, mod, minv, E, fwd, back, fast & ~bad, res,
                                                    over, nonzero)
            raise_ = over.any(axis=0)
            if not raise_.any():
                break
            E = E + raise_.astype(np.int64)
        used_levels = nonzero.any(axis=0)
        anybad = bool(bad.any())
    used = int(np.nonzero(used_levels)[0][-1]) + 1 if used_levels.any() else 0
    return res, E, used, anybad


def _modular_finish_body(G, mod, minv, unshift, garner, inverses, radix, lengths, cut, EA, EB, lb, R, g, c0, tiny, fast,
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
        ibits = np.empty(1, np.int64)
        fbits = ibits.view(np.float64)
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
            for t in range(1, N):
                mm, mi = mod[t], minv[t]
                h = (mm - 1) * 0.5
                for lane in range(width):
                    x[lane] = 0.0
                for jj in range(t):
                    w = garner[t, jj]
                    for lane in range(width):
                        x[lane] += v[jj, lane] * w
                inv = inverses[t]
                for lane in range(width):
                    r = _smod(v[t, lane] - x[lane], mm, mi, h)
                    v[t, lane] = _smod(r * inv, mm, mi, h)
            for lv in range(levels):
                for lane in range(width):
                    acc[lv, lane] = 0.0
            for t in range(N):
                for lv in range(lengths[t]):
                    pd = radix[t, lv]
                    top = levels - 1 - lv
                    for lane in range(width):
                        acc[top, lane] += v[t, lane] * pd
            for lv in range(levels - 1, 0, -1):
                for lane in range(width):
                    c = np.rint(acc[lv, lane] * down)
                    acc[lv, lane] = acc[lv, lane] - c * up
                    acc[lv - 1, lane] = acc[lv - 1, lane] + c
            for lane in range(width):
                j = j0 + lane
                shift = EA[i] + EB[j] - c0
                # the fast path (float64 terms, written out here: a call with arrays costs more than
                # the work): the first round of renormalize_row where it is its result (the nonzero
                # chunks' magnitudes do not increase, so its stable sort only moves zeros last; the
                # round's terms are finite and ulp-nonoverlapping by its test, the ulp from the
                # exponent bits), and the scaling by a product with 2**shift where that is a normal
                # float (ldexp's one rounding): the general path's operations, the same bits.
                done = fast and -1022 <= shift <= 1023
                if done:
                    nz = 0
                    for c_ in range(K):
                        first = c_ * g
                        last = min(first + g, kept) - 1
                        f = acc[first, lane]
                        for t in range(first + 1, last + 1):
                            f = f * up + acc[t, lane]
                        f = f * factor[c_]
                        if f != 0:
                            if nz > 0 and abs(f) > abs(srt[nz - 1]):
                                done = False
                            srt[nz] = f
                            nz += 1
                    for c_ in range(nz, K):
                        srt[c_] = 0.0
                if done:
                    sv = srt[K - 1]
                    for c_ in range(K - 2, -1, -1):
                        sv, e[c_ + 1] = two_sum(srt[c_], sv)
                    e[0] = sv
                    for t in range(k):
                        first_pass[t] = 0.0
                    jo = 0
                    eps = e[0]
                    full = False
                    for c_ in range(1, K):
                        rj, eps_new = two_sum(eps, e[c_])
                        first_pass[jo] = rj
                        if eps_new != 0:
                            if jo >= k - 1:
                                full = True
                                break
                            jo += 1
                            eps = eps_new
                        else:
                            eps = rj
                    if not full:
                        first_pass[jo] = eps
                    for t in range(k):
                        if not np.isfinite(first_pass[t]):
                            done = False
                    for t in range(1, k):
                        if first_pass[t] != 0:
                            fbits[0] = first_pass[t - 1]
                            ex = (ibits[0] >> 52) & 0x7FF
                            if ex == 0:
                                ibits[0] = 1
                            elif ex > 52:
                                ibits[0] = (ex - 52) << 52
                            else:
                                ibits[0] = np.int64(1) << (ex - 1)
                            if not abs(first_pass[t]) <= fbits[0]:
                                done = False
                if done:
                    ibits[0] = (shift + 1023) << 52
                    p2 = fbits[0]
                    for r in range(R):
                        w = first_pass[r] * p2
                        scaled[r] = w
                        if not np.isfinite(w) or (first_pass[r] != 0 and abs(w) < tiny):
                            done = False
                if done:
                    for r in range(R):
                        out[i, j, r] = scaled[r]
                else:
                    for lv in range(kept):
                        dig[lv] = acc[lv, lane]
                    _finish_entry(dig, kept, g, factor, K, k, R, shift, tiny, up, out[i, j], chunks, first_pass,
                                  scaled, cur, srt, e)


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
    lengths = np.array([max((lv + 1 for lv in range(setup.levels) if d[lv] != 0), default=0) for d in setup.radix],
                       dtype=np.int64)
    kernel(G, mod, 1.0 / mod, np.asarray(setup.unshift, dtype=np.float64),
           np.asarray(setup.garner, dtype=np.float64).reshape(N, N), np.asarray(setup.inverses, dtype=np.float64),
           radix, lengths, setup.cut, (EA + (setup.low_exponent + T * lb)).astype(np.int64), EB.astype(np.int64), lb, R,
           max(1, p // lb), emin + T * lb, 2.0**emin, out.dtype == np.float64, out)
    return out
