"""Matrix products of expansions by exact slices (the Ozaki scheme): the specification, array-module
generic (NumPy on the CPU, CuPy on the GPU: only ``xp`` functions of the operands' module).

Ozaki, Ogita, Oishi and Rump (Numer. Algorithms 59, 2012, "Error-free transformations of matrix
multiplication by using fast routines of matrix multiplication and its applications") cut each row
of A and each column of B into slices whose products, summed over the inner dimension, are exact in
float64, so that the platform's matrix multiply (the host BLAS, cuBLAS) computes them exactly.  Here
the operands are expansions, and the slices are fixed-point digits of every term:

* :func:`split`: row i of A (all its terms) is written with the scale 2**E_i (every term below
  2**(E_i - 1)) as ``sum_s d_s 2**(E_i - s beta)`` plus a remainder below ``R 2**(E_i - S beta) / 2``,
  with integer digits |d_s| <= 2**(beta-1) (balanced: rounded to nearest, then carried);
* each pair of digit matrices D_s @ E_t is an exact float64 matrix of integers (beta:
  :func:`expansions.bounds.slice_bits`), whatever order or blocking the BLAS uses;
* :func:`fold` adds the exact products of a level L = s + t into integer accumulators, exactly (each
  product split into a high and a low part of the level's digit width);
* :func:`finish` carries the accumulators into balanced digits, cuts them into terms of the output
  format (exact and normal), renormalizes them error-free, keeps R terms, scales them back by
  2**(E_i + F_j) and renormalizes again.

Every value up to the final rounding is an exact integer, so the result does not depend on the BLAS,
its thread count or the device: the same bits everywhere.  :func:`expansions.bounds.matmul_slices`
is the proven bound.  Non-finite entries are handled by the caller (:mod:`expansions.slices`);
:func:`nonfinite_products` gives the IEEE classes of the products' sums.  The compiled twins are in
:mod:`expansions.engine.slices` (same names and bits).
"""

from __future__ import annotations

from .lanes import array_module

#: Exponent given to zero terms before the maximum is taken (below every float's exponent).
_NO_EXPONENT = -(1 << 20)


def _digits(terms, E, beta: int, S: int):
    """The digits of :func:`split` for the row scales E: raw per-term rounding, then carries."""
    xp = array_module(terms)
    rows, n, R = terms.shape
    D = xp.zeros((S, rows, n), dtype=xp.float64)
    rem = terms.copy()
    Eb = E[:, None, None]
    for s in range(1, S + 1):
        h = xp.rint(xp.ldexp(rem, s * beta - Eb))  # each term's digit of level s, rounded to nearest
        rem = rem - xp.ldexp(h, Eb - s * beta)  # exact: the residue of the term modulo 2**(E - s beta)
        D[s - 1] = h.sum(axis=-1) + 0.0  # at most R * 2**(beta-1) in magnitude: exact; zeros are +0
    up, down = 2.0**beta, 2.0**-beta
    for s in range(S - 1, 0, -1):  # carries from the lowest level: balanced digits |d| <= 2**(beta-1)
        c = xp.rint(D[s] * down)
        D[s] = D[s] - c * up
        D[s - 1] = D[s - 1] + c
    return D


def split(terms, beta: int, S: int):
    """Slices of the rows of ``terms`` (rows, n, R) float64, finite: ``(D, E, nonzero)`` with D
    (S, rows, n) float64 integer digits, |D| <= 2**(beta-1), E (rows,) int64, and ``nonzero`` a list
    of S bools, whether each digit matrix has a nonzero entry, such that for every element

        value - sum_s D[s-1] 2**(E - s beta) = sum_r residue_r,   |residue_r| <= 2**(E - S beta) / 2,

    residue_r the remainder of term r modulo 2**(E - S beta), rounded to nearest (ties to even).

    E is 1 + the largest exponent e (2**(e-1) <= |t| < 2**e) of the row's terms (0 for a zero row),
    so each term is below 2**(E - 1); a row whose top digit still exceeds 2**(beta-1) after the
    carries (only possible when its terms are not ulp-nonoverlapping and add up beyond 2**(E-1)) gets
    E + 1 and is cut again, at most log2(R) + 1 times."""
    xp = array_module(terms)
    _, ex = xp.frexp(terms)
    ex = xp.where(terms != 0, ex, _NO_EXPONENT)
    top = ex.reshape(ex.shape[0], -1).max(axis=1) if ex.size else xp.zeros(ex.shape[0], dtype=ex.dtype)
    E = xp.where(top > _NO_EXPONENT, top + 1, 0).astype(xp.int64)
    half = 2.0 ** (beta - 1)
    while True:
        D = _digits(terms, E, beta, S)
        over = (xp.abs(D[0]) > half).any(axis=1) if D.shape[2] else xp.zeros(E.shape, dtype=bool)
        if not bool(over.any()):
            return D, E, [bool((D[s] != 0).any()) for s in range(S)]
        E = E + over.astype(xp.int64)


def fold(acc, G, L: int, beta: int):
    """Add the exact product G (integers of magnitude <= 2**53) of level L = s + t into the
    accumulators acc (levels -1..T at indices 0..T+1): ``G = hi 2**beta + lo`` with |lo| <= 2**(beta-1)
    and |hi| <= 2**(53-beta), lo into level L and hi into level L - 1.  Exact: a level receives at most
    T lows and T highs, far below 2**53."""
    xp = array_module(G)
    hi = xp.rint(G * 2.0**-beta)
    lo = G - hi * 2.0**beta
    acc[L + 1] += lo
    acc[L] += hi


def carry(acc, beta: int):
    """Balanced digits: from the lowest level up, ``c = rint(acc[l] / 2**beta)`` moves to the level
    above, so every level but the top one (-1) ends with |digit| <= 2**(beta-1); exact."""
    xp = array_module(acc)
    up, down = 2.0**beta, 2.0**-beta
    for i in range(acc.shape[0] - 1, 0, -1):
        c = xp.rint(acc[i] * down)
        acc[i] = acc[i] - c * up
        acc[i - 1] = acc[i - 1] + c
    return acc


def chunk_terms(acc, beta: int, g: int, c0: int, dtype):
    """The carried digits (levels -1..T at indices 0..T+1) as terms of ``dtype``, g digits per term,
    the lowest level's unit scaled to 2**(c0 - T beta): (K, ...) with K = ceil((T + 2)/g); each term is
    the exact integer of its g digits times a power of two (exact in dtype, see
    :meth:`expansions.bounds.SlicePlan.chunk_digits`)."""
    xp = array_module(acc)
    levels = acc.shape[0]
    out = []
    for first in range(0, levels, g):
        last = min(first + g, levels) - 1
        f = acc[first]
        for i in range(first + 1, last + 1):
            f = f * 2.0**beta + acc[i]
        out.append(xp.ldexp(f, c0 - (last - 1) * beta).astype(dtype))  # index i holds level i - 1
    return xp.stack(out)


def finish(acc, EA, EB, beta: int, R: int, dtype, p: int, emin: int, renormalize):
    """The R-term result (m, q, R) of ``dtype`` from the exact accumulators acc (T+2, m, q) of a
    slice product with row scales EA (m,) and column scales EB (q,): :func:`carry`, the terms of
    :func:`chunk_terms` (scale c0 = emin + T beta: the lowest level's unit is the smallest normal
    number), ``renormalize`` (the library's, error-free into K terms), the first R of them scaled by
    2**(E_i + F_j - c0); where that scaling rounded (a term below the normal range) or overflowed, the
    R terms are renormalized again (error-free), elsewhere they are ulp-nonoverlapping already.
    ``renormalize(x, R)`` takes (N, k) terms (the caller's device backend's)."""
    xp = array_module(acc)
    T = acc.shape[0] - 2
    m, q = acc.shape[1], acc.shape[2]
    carry(acc, beta)
    g = max(1, p // beta)
    c0 = emin + T * beta
    chunks = chunk_terms(acc, beta, g, c0, dtype)  # (K, m, q)
    K = chunks.shape[0]
    flat = xp.ascontiguousarray(xp.moveaxis(chunks, 0, -1)).reshape(m * q, K)
    terms = xp.ascontiguousarray(renormalize(flat, max(K, R))[:, :R])
    shift = (EA[:, None] + EB[None, :] - c0).reshape(m * q, 1)
    scaled = xp.ldexp(terms, shift.astype(xp.int32))
    tiny = xp.asarray(2.0**emin, dtype=dtype)
    redo = ((xp.abs(scaled) < tiny) & (terms != 0)) | ~xp.isfinite(scaled)
    redo = redo.any(axis=1)
    if bool(redo.any()):
        scaled[redo] = renormalize(xp.ascontiguousarray(scaled[redo]), R)
    return scaled.reshape(m, q, R)


def nonfinite_products(wa, wb):
    """The IEEE class of ``sum_k wa[i, k] * wb[k, j]`` for values wa (m, n), wb (n, p) that are
    finite, +-inf or NaN: a float array (m, p) that is NaN where the sum is NaN (a NaN factor,
    inf * 0, or +inf and -inf products both present), +-inf where it is infinite, 0 elsewhere.
    Computed from exact counts (matrix products of 0/1 matrices, exact in any BLAS and any order), so
    it does not depend on how the BLAS treats NaN or zero."""
    xp = array_module(wa)
    f = xp.float64

    def ind(mask):
        return mask.astype(f)

    pa, na = ind(wa > 0), ind(wa < 0)
    pia, nia = ind(wa == xp.inf), ind(wa == -xp.inf)
    pb, nb = ind(wb > 0), ind(wb < 0)
    pib, nib = ind(wb == xp.inf), ind(wb == -xp.inf)
    nan = ind(xp.isnan(wa)).sum(axis=1)[:, None] + ind(xp.isnan(wb)).sum(axis=0)[None, :]
    nan = nan + (pia + nia) @ ind(wb == 0) + ind(wa == 0) @ (pib + nib)
    pos = pia @ pb + nia @ nb + pa @ pib + na @ nib
    neg = pia @ nb + nia @ pb + pa @ nib + na @ pib
    out = xp.where(pos > 0, xp.inf, xp.where(neg > 0, -xp.inf, 0.0))
    return xp.where((nan > 0) | ((pos > 0) & (neg > 0)), xp.nan, out)
