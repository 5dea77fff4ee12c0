"""Matrix products of expansions by exact slices on the platform's matrix multiply (the Ozaki scheme):
the host BLAS through NumPy on the CPU, cuBLAS through CuPy on the GPU.

:func:`matmul_terms` is the product of two matrices of expansion terms; :func:`matmul` the same on
2-D ExpansionArrays (``expansions.matmul``, ``@``, ``dot``, ``inner``, ``vdot`` and ``tensordot`` call
it for their 2-D products, see :mod:`expansions.reduce`).  The steps are those of
:mod:`expansions.cpu.slices` (the specification, NumPy or CuPy) or of their compiled twins
:mod:`expansions.engine.slices` (same bits), around ``plan.gemms`` float64 matrix products of integer
digit matrices that the BLAS computes exactly: the result is the same on every BLAS, every thread
count, the CPU and the GPU.  Proven bounds: :func:`expansions.bounds.matmul_slices` for a plan, and
the componentwise :func:`expansions.bounds.matmul` (each entry within 2**(-(p-1) R) of
sum_k |a_ik b_kj|, plus the final rounding), which the product keeps whatever the operands' scaling
by choosing the plan's extra bits from them (:func:`componentwise_extra`): badly scaled operands (rows
or columns whose entries span many binades) cost more matrix products, never accuracy.

Non-finite values (the library's rule): an operand entry with a non-finite term is the IEEE value of
its leading term, or NaN when that leading term is finite; a result entry that such values reach is
the IEEE class of the sum of products (:func:`expansions.cpu.slices.nonfinite_products`: NaN for
NaN, inf * 0 or inf - inf, else +-inf) as (w, 0, ..., 0).  Finite operands never give NaN: a result
whose exact value overflows is (+-inf, 0, ..., 0) (the element-wise path may also overflow in an
intermediate product or partial sum, this one does not).  An exactly zero result is +0.

Memory: the digits of an operand take ``plan.slices`` float64 matrices of its size (blocks of rows and
columns of at most :data:`TILE_BYTES`); the result is accumulated by blocks of rows of at most
:data:`ACC_BYTES` of accumulators.
"""

from __future__ import annotations

import importlib
import math

import numpy as np

from . import bounds
from . import formats as F
from .arraytype import ExpansionArray
from .backends import cpu as _twins
from .backends import cpu_backend, engine_backend, for_terms, xp_of
from .cpu import slices as _spec
from .operations import operands

__all__ = ["matmul", "matmul_terms", "plan", "supported", "TILE_BYTES", "ACC_BYTES"]

#: Largest digit array of one operand block, in bytes.
TILE_BYTES = 1 << 28
#: Largest accumulator array of one block of rows of the result (the products of a block of rows are
#: folded into it while it is in the caches), in bytes.
ACC_BYTES = 1 << 25


#: The two slicings: "modular" (Ozaki scheme II: residues of the operands' integers modulo primes, one
#: matrix product per modulus, the exact product by the Chinese remainder theorem) and "levels" (Ozaki
#: scheme I: pairs of digit matrices s + t <= T, summed by levels).
SCHEMES = ("modular", "levels")


def plan(n: int, R: int, dtype, scheme: str | None = None, extra: int = 0):
    """The plan of an inner dimension n for R terms of ``dtype`` and ``extra`` bits:
    :func:`expansions.bounds.modular_plan` or :func:`expansions.bounds.slice_plan` (``scheme``;
    default :func:`default_scheme`)."""
    scheme = default_scheme(n, R, dtype, extra) if scheme is None else _check_scheme(scheme)
    fmt = F.format_of(dtype)
    return bounds.modular_plan(n, R, fmt, extra) if scheme == "modular" else bounds.slice_plan(n, R, fmt, extra)


def _check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown slice scheme {scheme!r}: use one of {SCHEMES}")
    return scheme


def default_scheme(n: int, R: int, dtype, extra: int = 0) -> str:
    """:func:`expansions.bounds.default_slice_scheme` ("modular" for every float64 case)."""
    return bounds.default_slice_scheme(n, R, F.format_of(dtype), extra)


def supported(n: int, R: int, dtype, scheme: str | None = None, extra: int = 0) -> bool:
    """Whether the slice product handles inner dimension n, R terms of ``dtype`` and ``extra`` bits
    (with ``scheme``, default either): the exact sum must fit the format's exponent range as normal
    numbers (:func:`expansions.bounds.slice_scheme_fits`): for float64 up to about 1880 extra bits at
    R = 2 (1560 at R = 8); float32 up to about R = 8 without extra bits, 100 to 150 extra bits at R <= 4."""
    fmt = F.format_of(dtype)
    schemes = SCHEMES if scheme is None else (_check_scheme(scheme),)
    return any(bounds.slice_scheme_fits(sc, n, R, fmt, extra) for sc in schemes)


#: Entries of a badly scaled product whose spread :func:`componentwise_deficit` finds exactly (a
#: minimum over the inner dimension per entry) before it falls back to the rows' and columns' spans.
EXACT_SPREAD_WORK = 1 << 28


def componentwise_deficit(a, b):
    """k such that 2**-k is a lower bound of 2**-(E_i + F_j) sum_k |a_ik| |b_kj| over every entry
    (i, j) of the product of the matrices of expansions with terms a (m, n, Ra) and b (n, p, Rb)
    that has a nonzero product a_ik b_kj (None when none has), with E_i, F_j the scales of the slice
    product (1 + the largest exponent of row i's, column j's finite terms,
    :func:`expansions.cpu.slices.split`) and |a_ik| taken as its leading term (the largest of an
    ulp-nonoverlapping expansion); entries with a non-finite leading term count as zero (an entry with
    a non-finite term makes every entry of the product that it reaches non-finite).  What
    :func:`expansions.bounds.componentwise_extra` needs to choose the plan of a componentwise bound.

    Computed exactly, so that the plan, hence the bits of the product, are the same on every BLAS
    and device: with d_ik = E_i - e_ik + 1 (e_ik the exponent of |a_ik|: |a_ik| >= 2**(e_ik - 1)),
    |a_ik| 2**-E_i >= 2**-d_ik, and the same for b; the sum of 2**-(d_ik + d'_kj) over the pairs
    with d, d' <= W is one float64 product of matrices whose every partial sum is a multiple of
    2**-2W below 2**53 units (W from n): exact.  Entries where that sum is 0 get the exact
    min_k (d_ik + d'_kj) when they are few (:data:`EXACT_SPREAD_WORK`), else the larger bound
    max_k d_ik + max_k d'_kj (the row's and the column's spans)."""
    if a.shape[0] == 0 or a.shape[1] == 0 or b.shape[1] == 0:
        return None
    return _deficit(*_deficits(a, axis=1), *_deficits(b, axis=0))


def _deficit(da, ra, db, rb):
    """:func:`componentwise_deficit` from the deficits of the rows of A and the columns of B."""
    xp = xp_of(da)
    n = da.shape[1]
    W = (56 - n.bit_length()) // 2
    qa = xp.where(da <= W, xp.ldexp(1.0, -xp.minimum(da, W)), 0.0)
    qb = xp.where(db <= W, xp.ldexp(1.0, -xp.minimum(db, W)), 0.0)
    S = xp.matmul(qa, qb)  # (m, p), exact
    low = float(xp.where(S > 0, S, xp.inf).min())
    worst = 1 - math.frexp(low)[1] if low < math.inf else None  # 2**(e-1) <= low
    if bool((S == 0).any()):
        nz = xp.matmul((da < _NO_DEFICIT).astype(xp.float64), (db < _NO_DEFICIT).astype(xp.float64))
        ii, jj = xp.nonzero((S == 0) & (nz > 0))
        if ii.size:
            if ii.size * n <= EXACT_SPREAD_WORK:  # min_k (d_ik + d'_kj), in chunks of about 2**22 sums
                step = max(1, (1 << 22) // n)
                w = max(int((da[ii[c:c + step]] + db[:, jj[c:c + step]].T).min(axis=1).max())
                        for c in range(0, int(ii.size), step))
            else:
                w = int((ra[ii] + rb[jj]).max())
            worst = w if worst is None else max(worst, w)
    return worst


#: The deficit given to a zero (or non-finite) entry: above every real one.
_NO_DEFICIT = 1 << 20


def _deficits(t, axis: int):
    """d of :func:`componentwise_deficit` for the entries of t (rows, cols, R), int32, the scales
    taken along ``axis`` (1: per row, as for A; 0: per column, as for B), _NO_DEFICIT for a zero or
    non-finite entry; and the largest real d of each row (column), 0 where there is none."""
    xp = xp_of(t)
    mag = xp.abs(t[..., 0])  # the leading term (an entry with a non-finite term makes its row non-finite)
    mag = xp.where(xp.isfinite(mag), mag, 0.0)
    _, e = xp.frexp(mag)
    _, top = xp.frexp(mag.max(axis=axis, keepdims=True))
    d = xp.where(mag > 0, top + 2 - e, _NO_DEFICIT).astype(xp.int32)  # E + 1 - e, E = top + 1
    span = xp.where(mag > 0, d, 0).max(axis=axis)
    return d, span


def componentwise_extra(a, b, R: int, dtype, scheme: str | None = None) -> int:
    """The extra bits the slice product of a (m, n, Ra) and b (n, p, Rb) needs for the componentwise
    bound :func:`expansions.bounds.matmul` (:func:`componentwise_deficit`,
    :func:`expansions.bounds.componentwise_extra`); 0 for a product without a nonzero entry.
    ValueError when no plan holds the operands' spread in the format's range."""
    if a.shape[0] == 0 or a.shape[1] == 0 or b.shape[1] == 0:
        return 0
    n, fmt = a.shape[1], F.format_of(dtype)
    da, ra = _deficits(a, axis=1)
    db, rb = _deficits(b, axis=0)
    # Without zero entries, and every d within the window W of _deficit, each sum there has n terms of
    # at least 2**-(ra_i + rb_j), so the deficit it computes is at most max ra + max rb - floor(log2 n);
    # where that bound needs no extra bits, the exact deficit (a float64 matrix product) does not
    # either: the same plan, without the product (well-scaled operands).
    W = (56 - n.bit_length()) // 2
    if bool((da < _NO_DEFICIT).all()) and bool((db < _NO_DEFICIT).all()) and \
            int(ra.max()) <= W and int(rb.max()) <= W:
        upper = int(ra.max()) + int(rb.max()) - (n.bit_length() - 1)
        if bounds.componentwise_extra(n, R, fmt, upper, scheme) == 0:
            return 0
    k = _deficit(da, ra, db, rb)
    if k is None:
        return 0
    return bounds.componentwise_extra(n, R, fmt, k, scheme)


class _Steps:
    """The steps of one device: the specification's (NumPy/CuPy) or the compiled engine's."""

    def __init__(self, split, fold, finish, renormalize, operand=_spec.modular_operand,
                 modular_finish=_spec.modular_finish):
        self.split, self.fold, self.finish, self.renormalize = split, fold, finish, renormalize
        self.operand, self.modular_finish = operand, modular_finish


def _steps(xp) -> _Steps:
    """The steps for arrays of module xp: the engine's on NumPy when the CPU backend is the engine
    (loaded like the engine, on first use: it needs numba), else the specification's, with the
    device backend's renormalization."""
    if xp is np and cpu_backend().name == "engine":
        compiled = importlib.import_module(".engine.slices", __package__)
        return _Steps(compiled.split, compiled.fold, compiled.finish, engine_backend().renormalize,
                      compiled.modular_operand, compiled.modular_finish)
    be = _twins if xp is np else for_terms(xp.zeros(1))
    return _Steps(_spec.split, _spec.fold, _spec.finish, be.renormalize)


def _renormalizer(steps: _Steps):
    """``renormalize(x, K)`` of the device; beyond 32 terms (the kernels' and the engine's limit)
    the twin, which takes any number of terms on NumPy and CuPy arrays."""

    def run(x, K):
        if max(K, x.shape[1]) <= F.MAX_TERMS:
            return steps.renormalize(x, K)
        return _twins.renormalize(x, K)

    return run


def _special_values(t):
    """The value of each expansion of terms t (..., R) under the library's non-finite rule where it
    is not finite (its leading term if that is not finite, else NaN), and a mask of those."""
    xp = xp_of(t)
    bad = ~xp.isfinite(t).all(axis=-1)
    lead = t[..., 0]
    w = xp.where(xp.isfinite(lead), xp.nan, lead)
    return bad, w


def _class_values(t, bad, w):
    """Sign classes of the leading terms (+-1, 0) with the special values where ``bad``."""
    xp = xp_of(t)
    return xp.where(bad, w, xp.sign(t[..., 0]))


def _blocks(total: int, size: int):
    size = max(1, min(total, size))
    return [(i, min(i + size, total)) for i in range(0, total, size)] if total else []


def matmul_terms(a, b, R: int, dtype, gemm=None, steps: _Steps | None = None, scheme: str | None = None,
                 extra: int | None = None):
    """The R-term product of the matrices of expansions whose terms are a (m, n, Ra) and b (n, p, Rb)
    (float64 or float32, any numbers of terms; NumPy or CuPy), as (m, p, R) terms of ``dtype``.

    ``gemm(A, B)`` multiplies two float64 matrices (default: the array module's ``matmul``, i.e. the
    BLAS); the products it is given have integer entries and exact integer results, so any exact
    multiplication gives the same bits (the tests pass an integer one).  ``scheme``: "modular" or
    "levels" (default :func:`default_scheme`).  ``extra``: the plan's extra bits (default
    :func:`componentwise_extra`, which gives every entry the componentwise bound
    :func:`expansions.bounds.matmul` whatever the operands' scaling; 0 gives the plan of the
    normwise bound :func:`expansions.bounds.matmul_slices` alone).  Raises ValueError where
    :func:`supported` is false (for the extra bits the operands need)."""
    xp = xp_of(a)
    dtype = F.canonical_dtype(dtype)
    fmt = F.format_of(dtype)
    m, n = a.shape[0], a.shape[1]
    p = b.shape[1]
    if b.shape[0] != n:
        raise ValueError(f"slice product: inner dimensions differ ({n} and {b.shape[0]})")
    if n and not supported(n, R, dtype, scheme):
        raise ValueError(f"slice product: {R} {dtype} terms with inner dimension {n} exceed the format's "
                         f"exponent range (use method='elementwise')")
    out = xp.zeros((m, p, R), dtype=dtype)
    if m == 0 or p == 0 or n == 0:
        return out
    a = a.astype(xp.float64, copy=False)
    b = b.astype(xp.float64, copy=False)
    if extra is None:
        try:
            extra = componentwise_extra(a, b, R, dtype, scheme)
        except ValueError:
            raise ValueError(f"slice product: the operands' entries span too many binades for a componentwise "
                             f"bound in {R} {dtype} terms (use method='elementwise')") from None
    scheme = default_scheme(n, R, dtype, extra) if scheme is None else scheme
    pl = plan(n, R, dtype, scheme, extra)
    gemm = xp.matmul if gemm is None else gemm
    steps = _steps(xp) if steps is None else steps
    renorm = _renormalizer(steps)
    if scheme == "modular":
        any_a, any_b = _modular(a, b, R, dtype, fmt, pl, gemm, steps, renorm, out)
    else:
        any_a, any_b = _levels(a, b, R, dtype, fmt, pl, gemm, steps, renorm, out)
    if any_a or any_b:
        bad_a, wa = _special_values(a)
        bad_b, wb = _special_values(b)
        _apply_nonfinite(out, a, b, bad_a, wa, bad_b, wb, bool(bad_a.any()), bool(bad_b.any()))
    return out


def _levels(a, b, R, dtype, fmt, pl, gemm, steps, renorm, out):
    """Ozaki scheme I (:func:`expansions.bounds.slice_plan`): the pairs of digit matrices s + t <= T,
    folded into levels, finished per block of rows.  Returns whether a and b have non-finite entries."""
    xp = xp_of(a)
    m, n, p = a.shape[0], a.shape[1], b.shape[1]
    bad_a, _ = _special_values(a)
    bad_b, _ = _special_values(b)
    any_a, any_b = bool(bad_a.any()), bool(bad_b.any())
    if any_a:
        a = xp.where(bad_a[..., None], 0.0, a)
    if any_b:
        b = xp.where(bad_b[..., None], 0.0, b)
    bt = xp.ascontiguousarray(xp.swapaxes(b, 0, 1))  # (p, n, Rb): columns of b as rows
    S, T, beta = pl.slices, pl.levels, pl.beta
    pb = max(1, min(p, TILE_BYTES // (S * n * 8)))  # columns of B sliced at once
    mb = max(1, min(m, TILE_BYTES // (S * n * 8)))  # rows of A sliced at once
    for c0, c1 in _blocks(p, pb):
        DB, EB, nz_b = steps.split(bt[c0:c1], beta, S)  # (S, q, n): D_t^T
        q = c1 - c0
        rows = max(1, min(m, ACC_BYTES // ((T + 2) * 8 * q)))  # rows of C accumulated at once
        for a0, a1 in _blocks(m, mb):  # A's digits are cut again for each block of columns (when p > pb)
            DA, EA, nz_a = steps.split(xp.ascontiguousarray(a[a0:a1]), beta, S)
            for r0, r1 in _blocks(a1 - a0, rows):
                acc = xp.zeros((T + 2, r1 - r0, q), dtype=xp.float64)
                for s, t in pl.pairs:
                    if nz_a[s - 1] and nz_b[t - 1]:
                        steps.fold(acc, gemm(DA[s - 1, r0:r1], DB[t - 1].T), s + t, beta)
                out[a0 + r0:a0 + r1, c0:c1] = steps.finish(acc, EA[r0:r1], EB, beta, R, dtype, fmt.p, fmt.emin, renorm)
    return any_a, any_b


def _modular(a, b, R, dtype, fmt, pl, gemm, steps, renorm, out):
    """Ozaki scheme II (:func:`expansions.bounds.modular_plan`): residues of both operands for every
    modulus (blocks of rows of A, of columns of B, of at most :data:`TILE_BYTES`), one product per
    modulus of the setup that the digits in use need, finished per block of rows of at most
    :data:`ACC_BYTES` of products.  The digits in use (:meth:`expansions.bounds.ModularPlan.setup`)
    are those of the whole operands, found by a first pass over the blocks where an operand has more
    than one, so the result does not depend on the blocks.  Returns whether a and b have non-finite
    entries."""
    xp = xp_of(a)
    m, n, p = a.shape[0], a.shape[1], b.shape[1]
    full = pl.setup()
    args = (pl.beta, pl.slices, pl.top, full.weights, full.moduli)
    N = full.gemms
    pb = max(1, min(p, TILE_BYTES // (N * n * 8)))  # columns of B cut at once
    mb = max(1, min(m, TILE_BYTES // (N * n * 8)))  # rows of A cut at once
    a_blocks, b_blocks = _blocks(m, mb), _blocks(p, pb)
    first_a = steps.operand(a, *args, False) if len(a_blocks) == 1 else None
    first_b = steps.operand(b, *args, True) if len(b_blocks) == 1 else None
    used_a = first_a[2] if first_a else max(steps.operand(a[a0:a1], *args, False)[2] for a0, a1 in a_blocks)
    used_b = first_b[2] if first_b else max(steps.operand(b[:, c0:c1], *args, True)[2] for c0, c1 in b_blocks)
    any_a = first_a[3] if first_a else bool(_special_values(a)[0].any())
    any_b = first_b[3] if first_b else bool(_special_values(b)[0].any())
    if used_a == 0 or used_b == 0:
        return any_a, any_b  # a zero product: +0 everywhere (the non-finite rule aside)
    setup = pl.setup(used_a, used_b)
    G_count = setup.gemms
    for c0, c1 in b_blocks:
        resb, EB, _, _ = first_b if first_b else steps.operand(b[:, c0:c1], *args, True)
        q = c1 - c0
        rows = max(1, min(m, ACC_BYTES // (G_count * 8 * q)))  # rows of C finished at once
        for a0, a1 in a_blocks:  # A's residues are computed again for each block of columns (when p > pb)
            resa, EA, _, _ = first_a if first_a else steps.operand(a[a0:a1], *args, False)
            for r0, r1 in _blocks(a1 - a0, rows):
                G = xp.empty((G_count, r1 - r0, q), dtype=xp.float64)
                for i in range(G_count):
                    if gemm is xp.matmul:
                        xp.matmul(resa[i, r0:r1], resb[i], out=G[i])
                    else:
                        G[i] = gemm(resa[i, r0:r1], resb[i])
                out[a0 + r0:a0 + r1, c0:c1] = steps.modular_finish(G, setup, EA[r0:r1], EB, R, dtype, fmt.p,
                                                                    fmt.emin, renorm)
    return any_a, any_b


def _apply_nonfinite(out, a, b, bad_a, wa, bad_b, wb, any_a, any_b):
    """Overwrite the entries that non-finite operand entries reach with (w, 0, ..., 0)."""
    xp = xp_of(out)
    ca = _class_values(a, bad_a, wa)
    cb = _class_values(b, bad_b, wb)
    if any_a:
        rows = xp.nonzero(bad_a.any(axis=1))[0]
        w = _spec.nonfinite_products(ca[rows], cb)
        hit = w != 0
        _store(out, rows[:, None], xp.arange(out.shape[1])[None, :], w, hit)
    if any_b:
        cols = xp.nonzero(bad_b.any(axis=0))[0]
        w = _spec.nonfinite_products(ca, cb[:, cols])
        hit = w != 0
        _store(out, xp.arange(out.shape[0])[:, None], cols[None, :], w, hit)


def _store(out, ii, jj, w, hit):
    xp = xp_of(out)
    ii, jj = xp.broadcast_arrays(ii, jj)
    sel = (ii[hit], jj[hit])
    vals = w[hit].astype(out.dtype)
    out[sel] = 0
    out[sel + (0,)] = xp.where(xp.isnan(vals), xp.asarray(xp.nan, dtype=out.dtype), vals)


def matmul(x: ExpansionArray, y: ExpansionArray, gemm=None, extra: int | None = None) -> ExpansionArray:
    """``x @ y`` for 2-D ExpansionArrays (or values :func:`expansions.operations.operands` promotes)
    by exact slices: R terms of the operands' common format (the larger R, float64 if either is).
    Componentwise bound :func:`expansions.bounds.matmul` (``extra`` as in :func:`matmul_terms`)."""
    x, y = operands(x, y)
    if x.ndim != 2 or y.ndim != 2:
        raise ValueError(f"slice product: 2-D operands expected, got shapes {x.shape} and {y.shape}")
    if x.shape[1] != y.shape[0]:
        raise ValueError(f"matmul: mismatch in the core dimension: {x.shape} @ {y.shape} "
                         f"({x.shape[1]} != {y.shape[0]})")
    with np.errstate(all="ignore"):
        t = matmul_terms(x.terms, y.terms, x.nterms, x.dtype, gemm=gemm, extra=extra)
    return ExpansionArray(t)


def flops(m: int, n: int, p: int, R: int, dtype="float64", extra: int = 0) -> int:
    """Floating-point operations of the float64 matrix products of an (m, n) @ (n, p) slice product
    with ``extra`` bits (2 m n p per product)."""
    return 2 * m * n * p * plan(n, R, dtype, extra=extra).gemms

