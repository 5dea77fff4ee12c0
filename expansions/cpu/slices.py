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


def split(terms, beta: int, S: int, top: int | None = None):
    """Slices of the rows of ``terms`` (rows, n, R) float64, finite: ``(D, E, nonzero)`` with D
    (S, rows, n) float64 integer digits, |D| <= 2**(beta-1), E (rows,) int64, and ``nonzero`` a list
    of S bools, whether each digit matrix has a nonzero entry, such that for every element

        value - sum_s D[s-1] 2**(E - s beta) = sum_r residue_r,   |residue_r| <= 2**(E - S beta) / 2,

    residue_r the remainder of term r modulo 2**(E - S beta), rounded to nearest (ties to even).

    E is 1 + the largest exponent e (2**(e-1) <= |t| < 2**e) of the row's terms (0 for a zero row),
    so each term is below 2**(E - 1); a row whose top digit still exceeds 2**(beta-1) after the
    carries (only possible when its terms are not ulp-nonoverlapping and add up beyond 2**(E-1)) gets
    E + 1 and is cut again, at most log2(R) + 1 times.

    ``top`` (the modular scheme's first digit, default beta): the scale is E + beta - top instead
    and the first digit is held to |D[0]| <= 2**(top-1) (so the first digit has ``top`` bits and
    the last digit's unit is 2**(E - (top + (S-1) beta)), E before the shift)."""
    xp = array_module(terms)
    top = beta if top is None else top
    _, ex = xp.frexp(terms)
    ex = xp.where(terms != 0, ex, _NO_EXPONENT)
    high = ex.reshape(ex.shape[0], -1).max(axis=1) if ex.size else xp.zeros(ex.shape[0], dtype=ex.dtype)
    E = xp.where(high > _NO_EXPONENT, high + 1, 0).astype(xp.int64) + (beta - top)
    half = 2.0 ** (top - 1)
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


def finish(acc, EA, EB, beta: int, R: int, dtype, p: int, emin: int, renormalize, cut: int = 0):
    """The R-term result (m, q, R) of ``dtype`` from the exact accumulators acc (L, m, q) of a
    slice product with row scales EA (m,) and column scales EB (q,): :func:`carry`, the ``cut``
    lowest levels dropped, the terms of :func:`chunk_terms` of the kept ones (T + 2 = L - cut levels,
    scale c0 = emin + T beta: the lowest kept level's unit is the smallest normal number),
    ``renormalize`` (the library's, error-free into K terms), the first R of them scaled by
    2**(E_i + F_j - c0) (the lowest kept level's unit is 2**(E_i + F_j - T beta)); where that scaling
    rounded (a term below the normal range) or overflowed, the R terms are renormalized again
    (error-free), elsewhere they are ulp-nonoverlapping already.  ``renormalize(x, R)`` takes (N, k)
    terms (the caller's device backend's)."""
    xp = array_module(acc)
    carry(acc, beta)
    acc = acc[:acc.shape[0] - cut]
    T = acc.shape[0] - 2
    m, q = acc.shape[1], acc.shape[2]
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


def smod(x, m, minv):
    """The symmetric residues of the integers x (float64, |x| <= 2**52) modulo the odd moduli m
    (broadcast against x; ``minv`` = 1.0 / m, rounded): in [-(m-1)/2, (m-1)/2], +0 for 0.  Exact: the
    quotient q = rint(x minv) is within one of x/m, so q m (below 2**53) and x - q m are exact, and
    one correction brings the remainder into the range; the result is the unique symmetric residue,
    whatever rounded the quotient."""
    xp = array_module(x)
    h = (m - 1) * 0.5
    q = xp.rint(x * minv)
    r = x - q * m
    r = xp.where(r > h, r - m, r)
    return xp.where(r < -h, r + m, r)


def residues(D, weights, moduli):
    """The symmetric residues (N, rows, n) of the integers A' = sum_s D[s] 2**((S-1-s) beta) of the
    digits D (S, rows, n) of :func:`split`, modulo each of the N ``moduli``: ``smod(sum_s D[s] w[i][s])``
    with ``weights`` w[i][s] = 2**((S-1-s) beta) mod m_i (symmetric); every partial sum is an integer
    below 2**52 (:func:`expansions.bounds.modular_plan` checks it), so the sum is exact in any order."""
    xp = array_module(D)
    S = D.shape[0]
    w = xp.asarray(weights, dtype=xp.float64).reshape(len(moduli), S)
    m = xp.asarray(moduli, dtype=xp.float64).reshape(-1, 1, 1)
    acc = xp.tensordot(w, D, axes=(1, 0)) if S else xp.zeros((len(moduli),) + D.shape[1:], dtype=xp.float64)
    return smod(acc, m, 1.0 / m)


def modular_levels(G, moduli, unshift, garner, inverses, radix):
    """The exact integers C'' (levels, rows, q) as balanced-digit accumulators (lowest level last,
    not carried) from G (N, rows, q), exact float64 products of residue matrices, one per modulus:

    * c_i = smod(G_i) times ``unshift[i]`` (2**-shift mod m_i, where the product computed is
      2**shift C'') reduced again;
    * Garner's mixed-radix digits (symmetric): v_0 = c_0, v_i = smod(smod(c_i - sum_{j<i} v_j
      garner[i][j]) inverses[i]), so that C'' = sum_i v_i P_i (P_i = m_0 ... m_{i-1}) is the unique
      integer of magnitude <= (M - 1)/2 with these residues;
    * level l (base 2**level_bits) = sum_i v_i radix[i][l] (+0 for zero sums), radix[i] the balanced
      digits of P_i, lowest first.

    Every sum is an integer below 2**52 (:func:`expansions.bounds.modular_plan`): exact in any order."""
    xp = array_module(G)
    N = G.shape[0]
    m = xp.asarray(moduli[:N], dtype=xp.float64).reshape(-1, 1, 1)
    minv = 1.0 / m
    c = smod(G, m, minv)
    c = smod(c * xp.asarray(unshift[:N], dtype=xp.float64).reshape(-1, 1, 1), m, minv)
    v = xp.empty_like(c)
    v[0] = c[0]
    for i in range(1, N):
        x = xp.zeros_like(c[i])
        for j in range(i):
            x = x + v[j] * float(garner[i][j])
        t = smod(c[i] - x, m[i], minv[i])
        v[i] = smod(t * float(inverses[i]), m[i], minv[i])
    digits = xp.asarray([row[::-1] for row in radix[:N]], dtype=xp.float64)  # (N, levels), top first
    return xp.tensordot(digits.T, v, axes=(1, 0)) + 0.0


def modular_operand(terms, beta: int, S: int, top: int, weights, moduli, columns: bool):
    """One operand of the modular slice product: ``(res, E, used, anybad)``.  The entries of
    ``terms`` (rows, cols, R) with a non-finite term count as zero (``anybad``: whether there is
    one; the caller applies the non-finite rule); the scales are per row (``columns`` false: A) or
    per column (B); :func:`split` with the first digit of ``top`` bits, :func:`residues` of the
    integers A' modulo every modulus: res (N, rows, cols); ``used``: 1 + the last digit level with a
    nonzero digit (0 for a zero operand)."""
    xp = array_module(terms)
    t = xp.swapaxes(terms, 0, 1) if columns else terms
    bad = ~xp.isfinite(t).all(axis=-1)
    anybad = bool(bad.any())
    if anybad:
        t = xp.where(bad[..., None], 0.0, t)
    D, E, nonzero = split(t, beta, S, top)
    res = residues(D, weights, moduli)
    used = max((s + 1 for s in range(S) if nonzero[s]), default=0)
    return (xp.swapaxes(res, 1, 2) if columns else res), E, used, anybad


def modular_finish(G, setup, EA, EB, R: int, dtype, p: int, emin: int, renormalize):
    """The R-term result (m, q, R) from G (N, m, q), the exact products of residue matrices of a
    modular slice product (:class:`expansions.bounds.ModularSetup` ``setup``, scales EA (m,), EB (q,)
    from :func:`modular_operand`): :func:`modular_levels`, then :func:`finish` with the setup's cut
    (the lowest kept level's unit is 2**(EA + EB + setup.low_exponent))."""
    acc = modular_levels(G, setup.moduli, setup.unshift, setup.garner, setup.inverses, setup.radix)
    T = setup.levels - setup.cut - 2
    return finish(acc, EA + (setup.low_exponent + T * setup.level_bits), EB, setup.level_bits, R, dtype, p, emin,
                  renormalize, setup.cut)


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
