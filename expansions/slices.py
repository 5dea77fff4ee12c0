"""Matrix products of expansions by exact slices on the platform's matrix multiply (the Ozaki scheme):
the host BLAS through NumPy on the CPU, cuBLAS through CuPy on the GPU.

:func:`matmul_terms` is the product of two matrices of expansion terms; :func:`matmul` the same on
2-D ExpansionArrays (``expansions.matmul``, ``@``, ``dot``, ``inner``, ``vdot`` and ``tensordot`` call
it for their 2-D products, see :mod:`expansions.reduce`).  The steps are those of
:mod:`expansions.cpu.slices` (the specification, NumPy or CuPy) or of their compiled twins
:mod:`expansions.engine.slices` (same bits), around ``plan.gemms`` float64 matrix products of integer
digit matrices that the BLAS computes exactly: the result is the same on every BLAS, every thread
count, the CPU and the GPU.  Proven bound: :func:`expansions.bounds.matmul_slices`.

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


def plan(n: int, R: int, dtype, scheme: str | None = None):
    """The plan of an inner dimension n for R terms of ``dtype``: :func:`expansions.bounds.modular_plan`
    or :func:`expansions.bounds.slice_plan` (``scheme``; default :func:`default_scheme`)."""
    scheme = default_scheme(n, R, dtype) if scheme is None else _check_scheme(scheme)
    fmt = F.format_of(dtype)
    return bounds.modular_plan(n, R, fmt) if scheme == "modular" else bounds.slice_plan(n, R, fmt)


def _check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown slice scheme {scheme!r}: use one of {SCHEMES}")
    return scheme


def _fits(n: int, R: int, dtype, scheme: str) -> bool:
    fmt = F.format_of(dtype)
    try:
        if scheme == "modular":
            return bounds.modular_scale_fits(bounds.modular_plan(n, R, fmt), fmt)
        return bounds.slice_scale_fits(bounds.slice_plan(n, R, fmt), fmt)
    except ValueError:
        return False


def default_scheme(n: int, R: int, dtype) -> str:
    """:func:`expansions.bounds.default_slice_scheme` ("modular" for every float64 case)."""
    return bounds.default_slice_scheme(n, R, F.format_of(dtype))


def supported(n: int, R: int, dtype, scheme: str | None = None) -> bool:
    """Whether the slice product handles inner dimension n, R terms of ``dtype`` (with ``scheme``,
    default either): the exact sum must fit the format's exponent range as normal numbers
    (:func:`expansions.bounds.modular_scale_fits`, :func:`expansions.bounds.slice_scale_fits`):
    always for float64; float32 up to about R = 8."""
    if scheme is None:
        return any(_fits(n, R, dtype, sc) for sc in SCHEMES)
    return _fits(n, R, dtype, _check_scheme(scheme))


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


def matmul_terms(a, b, R: int, dtype, gemm=None, steps: _Steps | None = None, scheme: str | None = None):
    """The R-term product of the matrices of expansions whose terms are a (m, n, Ra) and b (n, p, Rb)
    (float64 or float32, any numbers of terms; NumPy or CuPy), as (m, p, R) terms of ``dtype``.

    ``gemm(A, B)`` multiplies two float64 matrices (default: the array module's ``matmul``, i.e. the
    BLAS); the products it is given have integer entries and exact integer results, so any exact
    multiplication gives the same bits (the tests pass an integer one).  ``scheme``: "modular" or
    "levels" (default :func:`default_scheme`).  Raises ValueError where :func:`supported` is false."""
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
    scheme = default_scheme(n, R, dtype) if scheme is None else scheme
    pl = plan(n, R, dtype, scheme)
    gemm = xp.matmul if gemm is None else gemm
    steps = _steps(xp) if steps is None else steps
    renorm = _renormalizer(steps)
    a = a.astype(xp.float64, copy=False)
    b = b.astype(xp.float64, copy=False)
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


def matmul(x: ExpansionArray, y: ExpansionArray, gemm=None) -> ExpansionArray:
    """``x @ y`` for 2-D ExpansionArrays (or values :func:`expansions.operations.operands` promotes)
    by exact slices: R terms of the operands' common format (the larger R, float64 if either is).
    Bound: :func:`expansions.bounds.matmul_slices`."""
    x, y = operands(x, y)
    if x.ndim != 2 or y.ndim != 2:
        raise ValueError(f"slice product: 2-D operands expected, got shapes {x.shape} and {y.shape}")
    if x.shape[1] != y.shape[0]:
        raise ValueError(f"matmul: mismatch in the core dimension: {x.shape} @ {y.shape} "
                         f"({x.shape[1]} != {y.shape[0]})")
    with np.errstate(all="ignore"):
        t = matmul_terms(x.terms, y.terms, x.nterms, x.dtype, gemm=gemm)
    return ExpansionArray(t)


def flops(m: int, n: int, p: int, R: int, dtype="float64") -> int:
    """Floating-point operations of the float64 matrix products of an (m, n) @ (n, p) slice product
    (2 m n p per product)."""
    return 2 * m * n * p * plan(n, R, dtype).gemms

