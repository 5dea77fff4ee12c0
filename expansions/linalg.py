"""Linear algebra on expansions: ``solve``, ``lu``, ``lu_factor``, ``det``, ``inv``, ``cholesky``, ``qr``,
``norm``, ``lstsq``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``, ``pinv``, ``matrix_rank``, ``cond`` (and
the ``np.linalg`` functions of those names on ExpansionArrays through NumPy's protocol).

Every routine is a composition of the library's operations (``+ - * /``, :func:`expansions.sqrt`, the
exact comparisons, :func:`expansions.sum`, :func:`expansions.matmul`), written as loops whose steps
are vectorized over the stacked matrices (the leading axes, as NumPy batches them) and the rows, so
the same code runs on cpu and cuda arrays and gives the same bits on both.  Results have the format
of the expansion operand (a NumPy or CuPy operand is converted to it exactly).

Algorithms (Golub and Van Loan, *Matrix Computations*, 4th ed., ch. 3-5), recursive or blocked so
that most of the work is matrix products, which :func:`expansions.matmul` computes by exact slices on
the BLAS (:mod:`expansions.slices`) where that is faster:

* LU with partial pivoting by Toledo's recursion (SIAM J. Matrix Anal. Appl. 18, 1997): the left half
  of the columns, the block row ``U12 = L11^-1 A12``, the update ``A22 - L21 U12`` (one product), the
  right half; up to :data:`LEAF` columns, column by column (GVL Algorithm 3.4.1), the pivot the entry
  of largest magnitude (exact comparisons, ties to the first); row exchanges on whole rows;
* triangular solves recursively (the solved half's contribution to the other half is one product);
* ``det`` the product of U's diagonal with the permutation's sign; ``inv`` the solve with the identity;
* Cholesky (A = L L^T, L lower) recursively: the leading half, ``L21 = A21 L11^-T``, the trailing half
  of ``A22 - L21 L21^T`` (one product);
* ``qr`` by blocked Householder QR (GVL 5.2.2-5.2.3): panels of LEAF columns factored by Householder
  reflections column by column, the trailing columns updated in the compact WY form
  ``I - V T V^T`` (Schreiber and Van Loan 1989: three products per panel), Q accumulated from the
  reflections the same way (modes 'reduced', 'complete', 'r' as NumPy); ``lstsq`` by that QR with
  the reflections applied to b (full column rank).

Matrices of at most LEAF columns run the unblocked algorithms; every step runs on all the stacked
matrices at once, each product per matrix.

``solve(a, b, refine=True)``: mixed-precision iterative refinement (Wilkinson; Moler 1967; Higham,
*Accuracy and Stability of Numerical Algorithms*, ch. 12): x0 from float64 LAPACK (NumPy or CuPy) on
the leading terms, then ``r = b - a x`` in expansions (a matrix product by slices and a
subtraction), ``d`` = the float64 solve of r's leading terms, ``x = x + d``.  It stops when the
componentwise backward error of x computed from that residual, ``max_i |r_i| / (|a| |x| + |b|)_i``
(from the leading terms, summed in a fixed order), is at most ``REFINE_TOLERANCE * n * u``
(:data:`REFINE_TOLERANCE` = 2): x then solves ``(a + E) x = b + f`` with ``|E| <= t |a|``,
``|f| <= t |b|``, t that tolerance plus the residual's own rounding.  (A test on the size of the
corrections cannot serve: the residual's rounding, about u |a| |x|, leaves corrections of about
cond(a) u ||x|| however many steps run.)  It falls back to the LU in expansions, with a
RuntimeWarning, where float64 cannot refine the system: when the float64 matrix is singular or a
correction is not finite, when a correction does not shrink by half (the condition number is too
large for float64 factors, above about 1e15; each step gains about 53 - log2(cond) bits), or after
:data:`REFINE_MAX_STEPS` steps.  The rule is fixed, so the stopping step depends only on the
corrections, which come from LAPACK.

``eigh`` (symmetric eigenvalue decomposition): the float64 eigendecomposition of the leading terms
(LAPACK through NumPy or CuPy) refined by Ogita and Aishima's iteration (Japan J. Indust. Appl. Math.
35, 2018, and part II on clustered eigenvalues, 2019), whose steps are matrix products by exact
slices: with ``R = I - X^T X`` and ``S = X^T A X`` (both made exactly symmetric), the eigenvalues
are ``lambda_i = s_ii / (1 - r_ii)`` and ``X <- X + X E`` with ``e_ij = (s_ij + lambda_j r_ij) /
(lambda_j - lambda_i)``; pairs whose eigenvalues differ by at most the tolerance below times ||A||_2,
or whose correction would exceed :data:`CLUSTER_CORRECTION`, get ``e_ij = r_ij / 2`` and form clusters, and a
cluster whose shifted block ``X_J^T (A - mu I) X_J`` still has off-diagonal entries above the
tolerance is rotated by that block's float64 eigenvectors (made orthonormal to the working precision
by Newton-Schulz steps); a pair coupled only at the rounding level gets ``r_ij / 2`` alone.  It
stops when ``||R||_F`` and ``||S - diag(S)||_F / ||A||_2`` (from the leading terms) are at most
``t = SPECTRAL_TOLERANCE * n * u`` (:data:`SPECTRAL_TOLERANCE` = 8), then ``||A X - X D||_F <= 2 t
||A||_2 / sqrt(1 - t)`` plus the rounding of the computed R and S (a few n u ||A||_2), from
``A X - X D = X^-T (S - D + R D)``, whose diagonal vanishes; it warns (RuntimeWarning) where that is
not reached within :data:`SPECTRAL_MAX_STEPS` steps or the defects exceed :data:`DIVERGED`.  The
steps are deterministic given the float64 start (the products are exact-slice products; the float64
quantities that steer them are summed in a fixed order), so the result depends on the BLAS and
thread count only through LAPACK's start.

``svd`` refines the float64 SVD the same way (A m x n with m >= n, else its transpose): ``R = I -
U^T U``, ``S = I - V^T V``, ``T = U^T A V``, the singular values ``t_ii / (1 - (r_ii + s_ii) / 2)``
and corrections ``U <- U + U F``, ``V <- V + V G`` from the first-order equations of those three
products (writing U = U*(I - F), V = V*(I - G) for exact singular vectors: ``r_ij = f_ij + f_ji``,
``s_ij = g_ij + g_ji``, ``t_ij = -(sigma_j f_ji + sigma_i g_ij)`` off the diagonal); clusters of
close singular values, and the singular values close to zero together with the columns of U beyond
n, are rotated by the float64 eigen- or singular vectors of their blocks.  Same stopping rule (on
``R``, ``S`` and the off-diagonal of ``T``, with ``max(m, n)``).  ``svdvals``, ``pinv``,
``matrix_rank`` and ``cond`` (2-norm) are built on it, their default cutoffs ``max(m, n) * u`` where
NumPy uses float64's eps.

Errors, as NumPy: a non-square matrix, an exactly zero pivot (``solve``, ``inv``: "Singular matrix";
``det`` returns 0 instead) and a matrix that is not positive definite (``cholesky``) raise
``numpy.linalg.LinAlgError``; NaN in the input gives NaN in the result (no exception, no hang).

Error behaviour: these are the textbook algorithms run at the expansion's precision u = 2^-(R(p-1))
(every operation has a relative error of a few u, see :mod:`expansions.bounds`), so the classical
backward-error results hold with that u: LU with partial pivoting solves (A + E) x = b with
||E|| <= c n u ||A|| times the growth factor, Cholesky likewise without growth; Householder QR gives a
Q orthonormal to c n u whatever the condition number and ``A + E = Q R`` with ``||e_j|| <= c n u
||a_j||`` column by column, and ``lstsq`` solves a least-squares problem within c n u of (A, b)
(Higham, ch. 19-20).  The backward error
||A x - b|| / (||A|| ||x|| + ||b||) measured exactly (rationals) by ``python examples/linear_solve.py
--measure`` is recorded in ``examples/results/linear_solve_measure_cpu.txt``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .arraytype import ExpansionArray, implements
from .backends import xp_of
from .creation import array as _array
from .operations import absolute, compare, sign, unary
from .reduce import matmul as _matmul
from .reduce import sum as _sum
from .statistics import argmax
from .statistics import max as _max
from .statistics import min as _min

__all__ = ["solve", "lu", "lu_factor", "det", "inv", "cholesky", "qr", "norm", "lstsq", "eigh", "eigvalsh", "svd",
           "svdvals", "pinv", "matrix_rank", "cond",
           "LinAlgError", "LEAF", "REFINE_MAX_STEPS", "REFINE_TOLERANCE", "SPECTRAL_MAX_STEPS", "SPECTRAL_TOLERANCE",
           "CLUSTER_CORRECTION", "DIVERGED"]

LinAlgError = np.linalg.LinAlgError

#: Sizes up to which the recursive LU, Cholesky and triangular solves work column by column.
LEAF = 16
#: Most refinement steps of ``solve(..., refine=True)`` before it falls back to the LU in expansions.
REFINE_MAX_STEPS = 40
#: ``solve(..., refine=True)`` stops when the componentwise backward error of x, computed from the
#: residual, is at most ``REFINE_TOLERANCE * n * u`` (u = 2**-((p-1) R)).
REFINE_TOLERANCE = 2


def _expansion(a, like: ExpansionArray | None, what: str) -> ExpansionArray:
    """``a`` as an ExpansionArray: itself, or converted exactly to ``like``'s format and device."""
    if isinstance(a, ExpansionArray):
        return a
    if like is None:
        raise TypeError(f"{what}: needs an ExpansionArray operand (build one with expansions.array(a, terms=R)), "
                        f"got {type(a).__name__}")
    return _array(a, terms=like.nterms, dtype=like.dtype.name, device=like.device)


def _square_stack(a: ExpansionArray, what: str):
    if a.ndim < 2:
        raise LinAlgError(f"{what}: {a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError(f"{what}: Last 2 dimensions of the array must be square")
    n = a.shape[-1]
    return a.reshape((math.prod(a.shape[:-2]), n, n)).copy(), a.shape[:-2], n


def _any(mask) -> bool:
    """Whether any entry of a boolean result of the comparisons (a bool, NumPy or CuPy array) is set."""
    return bool(mask.any()) if hasattr(mask, "any") else bool(mask)


def _swap_rows(t, k: int, p):
    """Swap, in each stacked matrix b of the terms array t (B, n, m, R), rows k and p[b]."""
    xp = xp_of(t)
    b = xp.arange(t.shape[0])
    row_p = t[b, p].copy()
    t[b, p] = t[:, k]
    t[:, k] = row_p


def lu_factor(a):
    """LU with partial pivoting of the stacked square matrices a (..., n, n): ``(lu, perm, swaps)`` with
    L (unit lower, below the diagonal) and U (on and above) in ``lu``, ``perm`` (..., n) the row
    order (``a[..., perm, :] = L U``) and ``swaps`` (...) the number of row exchanges.  Recursive
    (see the module docstring): its updates are matrix products.  A zero pivot (a singular matrix)
    leaves the rest of its column zero; callers that divide check for it."""
    a = _expansion(a, None, "lu_factor")
    lu, batch, n = _square_stack(a, "lu_factor")
    xp = xp_of(lu.terms)
    B = lu.shape[0]
    perm = xp.tile(xp.arange(n), (B, 1))
    swaps = xp.zeros(B, dtype=np.int64)
    _lu_columns(lu, perm, swaps, 0, n)
    return lu.reshape(batch + (n, n)), perm.reshape(batch + (n,)), swaps.reshape(batch)


def _lu_columns(lu: ExpansionArray, perm, swaps, k0: int, k1: int):
    """In place: LU with partial pivoting of columns k0..k1 of the stacked lu (B, n, n), rows k0..n,
    the columns before k0 factored and those from k0 updated by them; row exchanges on whole rows.
    Toledo's recursion (1997): the left half, the block row ``U12 = L11^-1 A12``, the update
    ``A22 - L21 U12`` (one matrix product), the right half; up to :data:`LEAF` columns, column by
    column (GVL Algorithm 3.4.1 restricted to the columns k0..k1)."""
    xp = xp_of(lu.terms)
    B, n = lu.shape[0], lu.shape[-1]
    if k1 - k0 > LEAF:
        h = (k0 + k1) // 2
        _lu_columns(lu, perm, swaps, k0, h)
        lu[:, k0:h, h:k1] = _solve_lower(lu[:, k0:h, k0:h], lu[:, k0:h, h:k1], unit=True)
        lu[:, h:, h:k1] = lu[:, h:, h:k1] - _matmul(lu[:, h:, k0:h], lu[:, k0:h, h:k1])
        _lu_columns(lu, perm, swaps, h, k1)
        return
    for k in range(k0, k1):
        p = _pivot(lu[:, k:, k]) + k
        moved = p != k
        _swap_rows(lu.terms, k, p)
        pk = perm[:, k].copy()
        perm[:, k] = perm[xp.arange(B), p]
        perm[xp.arange(B), p] = pk
        swaps += moved
        if k + 1 < n:
            pivot = lu[:, k, k]
            nonzero = xp.asarray(compare("ne", pivot, 0)).reshape(B)
            col = lu[:, k + 1:, k] / pivot[:, None]  # a zero pivot: the column below is zero, keep it
            col = ExpansionArray(xp.where(nonzero[:, None, None], col.terms, xp.zeros_like(col.terms)))
            if k + 1 < k1:
                lu[:, k + 1:, k + 1:k1] = lu[:, k + 1:, k + 1:k1] - col[:, :, None] * lu[:, None, k, k + 1:k1]
            lu[:, k + 1:, k] = col


def _solve_lower(L: ExpansionArray, b: ExpansionArray, unit: bool = False) -> ExpansionArray:
    """X with L X = b for the stacked lower triangles of L (B, r, r) (unit diagonal if ``unit``) and
    b (B, r, c), recursively: X1 from the upper half, then ``b2 - L21 X1`` (one matrix product), X2;
    up to :data:`LEAF` rows, forward substitution by columns."""
    r = L.shape[1]
    if r > LEAF:
        h = r // 2
        x1 = _solve_lower(L[:, :h, :h], b[:, :h], unit)
        x2 = _solve_lower(L[:, h:, h:], b[:, h:] - _matmul(L[:, h:, :h], x1), unit)
        return _stack_rows(x1, x2)
    x = b.copy()
    for k in range(r):
        if not unit:
            x[:, k] = x[:, k] / L[:, k, k, None]
        if k + 1 < r:
            x[:, k + 1:] = x[:, k + 1:] - L[:, k + 1:, k, None] * x[:, k, None]
    return x


def _solve_upper(U: ExpansionArray, b: ExpansionArray) -> ExpansionArray:
    """X with U X = b for the stacked upper triangles of U (B, r, r) and b (B, r, c), recursively
    (the lower half first); up to :data:`LEAF` rows, back substitution by columns."""
    r = U.shape[1]
    if r > LEAF:
        h = r // 2
        x2 = _solve_upper(U[:, h:, h:], b[:, h:])
        x1 = _solve_upper(U[:, :h, :h], b[:, :h] - _matmul(U[:, :h, h:], x2))
        return _stack_rows(x1, x2)
    x = b.copy()
    for k in range(r - 1, -1, -1):
        x[:, k] = x[:, k] / U[:, k, k, None]
        if k:
            x[:, :k] = x[:, :k] - U[:, :k, k, None] * x[:, k, None]
    return x


def _stack_rows(x1: ExpansionArray, x2: ExpansionArray) -> ExpansionArray:
    xp = xp_of(x1.terms)
    return ExpansionArray(xp.concatenate([x1.terms, x2.terms], axis=1))


def _pivot(col: ExpansionArray):
    """argmax(absolute(col), axis=-1) for the columns col (B, m) (exact comparisons, ties to the
    first), from the leading terms where they decide: an entry whose leading term is below
    ``(1 - 2**(3-p))`` times the largest leading magnitude is smaller than the largest entry (the
    terms after the leading one add at most about ulp(x0)), so only the entries above that threshold
    are compared exactly, and only when there are several.  Columns with a non-finite term: all
    compared exactly."""
    xp = xp_of(col.terms)
    lead = xp.abs(col.terms[..., 0])
    if not bool(xp.isfinite(col.terms).all()):
        return argmax(absolute(col), axis=-1)
    top = lead.max(axis=-1, keepdims=True)
    margin = 2.0 ** (3 - (np.finfo(col.dtype).nmant + 1))
    candidates = lead >= top * (1 - margin)
    if not bool((candidates.sum(axis=-1) > 1).any()):
        return xp.argmax(lead, axis=-1)
    masked = ExpansionArray(xp.where(candidates[..., None], col.terms, xp.zeros_like(col.terms)))
    return argmax(absolute(masked), axis=-1)


def lu(a):
    """``(P, L, U)`` with ``a = P @ L @ U`` (SciPy's ``scipy.linalg.lu`` convention): P a permutation
    matrix (a NumPy/CuPy float array), L unit lower triangular, U upper triangular (ExpansionArrays)."""
    f, perm, _ = lu_factor(a)
    xp = xp_of(f.terms)
    n = f.shape[-1]
    tril = xp.tril(xp.ones((n, n), dtype=bool), -1)
    zero = xp.zeros_like(f.terms)
    L = ExpansionArray(xp.where(tril[..., None], f.terms, zero))
    eye = xp.eye(n, dtype=bool)[..., None] & (xp.arange(f.nterms) == 0)
    L = ExpansionArray(xp.where(eye, xp.asarray(1, dtype=f.dtype), L.terms))
    U = ExpansionArray(xp.where(xp.triu(xp.ones((n, n), dtype=bool))[..., None], f.terms, zero))
    P = xp.zeros(perm.shape + (n,), dtype=np.float64)
    xp.put_along_axis(P, perm[..., None], 1.0, axis=-1)  # P^T[i, perm[i]] = 1: a[perm] = L U
    return xp.swapaxes(P, -1, -2), L, U


def _check_singular(f: ExpansionArray, what: str):
    n = f.shape[-1]
    if n and _any(compare("eq", f.reshape((math.prod(f.shape[:-2]), n, n))[:, np.arange(n), np.arange(n)], 0)):
        raise LinAlgError(f"{what}: Singular matrix")


def _lu_solve(f: ExpansionArray, perm, b: ExpansionArray) -> ExpansionArray:
    """Solve with the factors of :func:`lu_factor` (stacked (B, n, n), perm (B, n)) for b (B, n, m):
    L y = P b (unit lower), then U x = y, both recursive (:func:`_solve_lower`, :func:`_solve_upper`)."""
    xp = xp_of(f.terms)
    y = ExpansionArray(xp.ascontiguousarray(xp.take_along_axis(b.terms, perm[:, :, None, None], axis=1)))
    return _solve_upper(f, _solve_lower(f, y, unit=True))


def _rhs(a: ExpansionArray, b, what: str):
    """b as stacked columns (B, n, m) matching a's stack, and the shape to give the solution."""
    b = _expansion(b, a, what)
    n = a.shape[-1]
    vector = b.ndim == 1
    bb = b.reshape(b.shape + (1,)) if vector else b
    if bb.shape[-2] != n:
        raise ValueError(f"{what}: b has {bb.shape[-2]} rows, the matrix {n}")
    batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
    m = bb.shape[-1]
    xp = xp_of(bb.terms)
    bt = xp.ascontiguousarray(xp.broadcast_to(bb.terms, batch + (n, m, bb.nterms)))
    out_shape = batch + ((n,) if vector else (n, m))
    return ExpansionArray(bt.reshape((math.prod(batch), n, m, bb.nterms))), batch, out_shape


@implements(np.linalg.solve)
def solve(a, b, refine: bool = False):
    """x with a x = b; a (..., n, n), b (n,) or (..., n, m) as in NumPy (stacks broadcast).

    By the blocked LU with partial pivoting of :func:`lu_factor` and blocked triangular solves; an
    exactly zero pivot raises LinAlgError("Singular matrix").  ``refine=True``: mixed-precision
    iterative refinement from float64 LAPACK factors (see the module docstring), the fast path for
    systems whose condition number is below about 1e15, run until the componentwise backward error
    is at most ``REFINE_TOLERANCE * n * u``; where float64 cannot refine the system it warns
    (RuntimeWarning) and returns the LU solution instead."""
    a = _expansion(a, b if isinstance(b, ExpansionArray) else None, "solve")
    if refine:
        x = _solve_refined(a, b)
        if x is not None:
            return x
        warnings.warn("solve(refine=True): iterative refinement from float64 factors did not converge (the "
                      "corrections do not shrink: condition number too large for float64, or a singular or "
                      "non-finite float64 matrix); solved by the LU in expansions instead", RuntimeWarning,
                      stacklevel=2)
    f, perm, _ = lu_factor(a)
    n = a.shape[-1]
    _check_singular(f, "solve")
    bb, batch, out_shape = _rhs(a, b, "solve")
    xp = xp_of(f.terms)
    B = math.prod(batch)
    fb = ExpansionArray(xp.ascontiguousarray(xp.broadcast_to(f.terms, batch + (n, n, f.nterms))).reshape(
        (B, n, n, f.nterms)))
    pb = xp.ascontiguousarray(xp.broadcast_to(perm, batch + (n,))).reshape(B, n)
    return _lu_solve(fb, pb, bb).reshape(out_shape)


def _solve_refined(a: ExpansionArray, b):
    """Iterative refinement for :func:`solve`: the solution, or None where it does not converge."""
    _square_stack(a, "solve")
    bb, batch, out_shape = _rhs(a, b, "solve")
    n, R = a.shape[-1], a.nterms
    xp = xp_of(a.terms)
    B = math.prod(batch)
    A = ExpansionArray(xp.ascontiguousarray(xp.broadcast_to(a.terms, batch + (n, n, R))).reshape((B, n, n, R)))
    A0 = A.terms[..., 0].astype(np.float64)
    if bb.size == 0:  # no equations, no matrices or no right-hand sides
        return bb.reshape(out_shape)
    if not bool(xp.isfinite(A0).all()) or not bool(xp.isfinite(bb.terms).all()):
        return None
    tolerance = REFINE_TOLERANCE * n * 2.0 ** (-(np.finfo(a.dtype).nmant) * R)  # REFINE_TOLERANCE n u
    absA0, absb0 = xp.abs(A0), xp.abs(bb.terms[..., 0].astype(np.float64))

    def float64_solve(rhs):
        try:
            with np.errstate(all="ignore"):
                d = xp.linalg.solve(A0, rhs.terms[..., 0].astype(np.float64))
        except np.linalg.LinAlgError:
            return None
        return d if bool(xp.isfinite(d).all()) else None

    def backward_error(r, x):
        """max_i |r_i| / (|A| |x| + |b|)_i from the leading terms (einsum: a fixed summation order)."""
        scale = xp.einsum("bij,bjk->bik", absA0, xp.abs(x.terms[..., 0].astype(np.float64))) + absb0
        r0 = xp.abs(r.terms[..., 0].astype(np.float64))
        with np.errstate(all="ignore"):
            return float(xp.where(r0 == 0, 0.0, r0 / scale).max())

    d = float64_solve(bb)
    if d is None:
        return None
    x = _array(d, terms=R, dtype=a.dtype.name, device=a.device)
    previous = math.inf
    for _ in range(REFINE_MAX_STEPS):
        r = bb - _matmul(A, x)
        if backward_error(r, x) <= tolerance:
            return x.reshape(out_shape)
        d = float64_solve(r)
        if d is None:
            return None
        size = float(xp.abs(d).max())
        if size > previous / 2:
            return None
        previous = size
        x = x + _array(d, terms=R, dtype=a.dtype.name, device=a.device)
    return None


@implements(np.linalg.inv)
def inv(a):
    """The inverse of the stacked square matrices a: the solve with the identity."""
    a = _expansion(a, None, "inv")
    n = a.shape[-1] if a.ndim >= 2 else 0
    eye = _array(np.eye(n), terms=a.nterms, dtype=a.dtype.name, device=a.device)
    return solve(a, ExpansionArray(xp_of(a.terms).broadcast_to(eye.terms, a.shape + (a.nterms,))))


@implements(np.linalg.det)
def det(a):
    """The determinant: the product of U's diagonal (in order), negated for an odd number of row
    exchanges; 0 for a matrix with an exactly zero pivot."""
    f, _, swaps = lu_factor(a)
    n = f.shape[-1]
    if n == 0:
        return _array(np.ones(f.shape[:-2]), terms=f.nterms, dtype=f.dtype.name, device=f.device)
    d = f[..., 0, 0]
    for k in range(1, n):
        d = d * f[..., k, k]
    xp = xp_of(f.terms)
    odd = (xp.asarray(swaps) % 2 == 1)[..., None]
    return ExpansionArray(xp.where(odd, -d.terms, d.terms))


@implements(np.linalg.cholesky)
def cholesky(a, upper: bool = False):
    """L lower triangular with a = L L^T, recursively (the leading half, ``L21 = A21 L11^-T`` by a
    triangular solve, the trailing half of ``A22 - L21 L21^T``, one matrix product); up to
    :data:`LEAF` columns right-looking column by column.  ``upper=True`` gives L^T.  Raises
    LinAlgError("Matrix is not positive definite") when a pivot is not positive."""
    a = _expansion(a, None, "cholesky")
    w, batch, n = _square_stack(a, "cholesky")
    xp = xp_of(w.terms)
    _cholesky_in_place(w, 0, n)
    L = ExpansionArray(xp.where(xp.tril(xp.ones((n, n), dtype=bool))[..., None], w.terms, xp.zeros_like(w.terms)))
    L = L.reshape(batch + (n, n))
    return ExpansionArray(xp.ascontiguousarray(xp.swapaxes(L.terms, -2, -3))) if upper else L


def _transpose(x: ExpansionArray) -> ExpansionArray:
    xp = xp_of(x.terms)
    return ExpansionArray(xp.ascontiguousarray(xp.swapaxes(x.terms, -2, -3)))


def _cholesky_in_place(w: ExpansionArray, k0: int, k1: int):
    """The Cholesky factor of the stacked block w[:, k0:k1, k0:k1] in its lower triangle, in place."""
    if k1 - k0 > LEAF:
        h = (k0 + k1) // 2
        _cholesky_in_place(w, k0, h)
        L21 = _transpose(_solve_lower(w[:, k0:h, k0:h], _transpose(w[:, h:k1, k0:h])))
        w[:, h:k1, k0:h] = L21
        w[:, h:k1, h:k1] = w[:, h:k1, h:k1] - _matmul(L21, _transpose(L21))
        _cholesky_in_place(w, h, k1)
        return
    for j in range(k0, k1):
        d = w[:, j, j]
        if _any(compare("le", d, 0)):
            raise LinAlgError("Matrix is not positive definite")
        d = unary("sqrt", d)
        col = w[:, j + 1:k1, j] / d[:, None]
        w[:, j, j] = d
        w[:, j + 1:k1, j] = col
        if j + 1 < k1:
            w[:, j + 1:k1, j + 1:k1] = w[:, j + 1:k1, j + 1:k1] - col[:, :, None] * col[:, None, :]


def _unit_terms(xp, shape, R: int, dtype):
    """The terms of an expansion array of ones of the given shape."""
    t = xp.zeros(tuple(shape) + (R,), dtype=dtype)
    t[..., 0] = 1
    return t


def _reflector(x: ExpansionArray):
    """The Householder reflection of the stacked columns x (B, l), l >= 1, as LAPACK's dlarfg:
    ``(beta, tau, tail)`` with ``H = I - tau v v^T``, ``v = (1, tail)``, ``H x = (beta, 0, ..., 0)``,
    ``beta = -sign(x_0) ||x||``, ``tau = (beta - x_0) / beta``, ``tail = x[1:] / (x_0 - beta)`` (the
    sums and differences of like signs: no cancellation); ``tau = 0`` (H = I) and ``beta = x_0``
    where x[1:] is zero.  The norm is taken of x scaled by a power of two (exactly) that brings its
    largest leading term into [1/2, 1): no overflow or underflow of the squares."""
    xp = xp_of(x.terms)
    alpha, tail = x[:, 0], x[:, 1:]
    lead = xp.abs(x.terms[..., 0]).max(axis=1)
    emax = np.finfo(x.dtype).maxexp - 2
    e = xp.clip(xp.frexp(lead)[1], -emax, emax)
    scale = xp.ldexp(xp.ones_like(lead), -e)
    xs = ExpansionArray(x.terms * scale[:, None, None])
    norm = unary("sqrt", _sum(xs * xs, axis=1))
    norm = ExpansionArray(norm.terms / scale[:, None])
    positive = (sign(alpha) >= 0)[:, None]
    trivial = xp.all(tail.terms == 0, axis=(1, 2))[:, None]
    beta = ExpansionArray(xp.where(trivial, alpha.terms, xp.where(positive, -norm.terms, norm.terms)))
    with np.errstate(all="ignore"):
        tau = (beta - alpha) / beta
        tail = tail / (alpha - beta)[:, None]
    zero = xp.zeros_like(tau.terms)
    return beta, ExpansionArray(xp.where(trivial, zero, tau.terms)), ExpansionArray(
        xp.where(trivial[:, None], xp.zeros_like(tail.terms), tail.terms))


def _block_reflector(V: ExpansionArray, tau: ExpansionArray) -> ExpansionArray:
    """T (B, w, w) upper triangular with ``H_1 ... H_w = I - V T V^T`` for the reflections of unit
    lower trapezoidal V (B, l, w) and tau (B, w) (the compact WY form, Schreiber and Van Loan 1989;
    LAPACK's dlarft): ``T[i, i] = tau_i``, ``T[:i, i] = -tau_i T[:i, :i] (V[:, :i]^T v_i)``."""
    xp = xp_of(V.terms)
    B, w = tau.shape
    S = _matmul(_transpose(V), V)  # (B, w, w): the products v_i^T v_j
    T = ExpansionArray(xp.zeros((B, w, w, V.nterms), dtype=V.dtype))
    for i in range(w):
        T[:, i, i] = tau[:, i]
        if i:
            y = _sum(T[:, :i, :i] * S[:, :i, i][:, None, :], axis=2)
            T[:, :i, i] = -(tau[:, i, None] * y)
    return T


def _apply_block(V: ExpansionArray, T: ExpansionArray, C: ExpansionArray, transpose: bool) -> ExpansionArray:
    """``(I - V T V^T) C``, or with T^T where ``transpose``: three matrix products."""
    W = _matmul(_transpose(V), C)
    W = _matmul(_transpose(T) if transpose else T, W)
    return C - _matmul(V, W)


def _householder(F: ExpansionArray):
    """Householder QR of the stacked F (B, m, n) in place, blocked: panels of :data:`LEAF` columns,
    each factored column by column (:func:`_reflector`, the reflection applied to the rest of the
    panel as a rank-one update), then applied to the trailing columns in the compact WY form
    ``I - V T^T V^T`` (:func:`_apply_block`, three matrix products).  Leaves R on and above the
    diagonal of F and returns the panels ``[(j0, V, T)]``: ``Q = H_1 ... H_k``, panel by panel
    ``I - V T V^T`` acting on rows j0 onwards."""
    xp = xp_of(F.terms)
    B, m, n = F.shape
    k = min(m, n)
    panels = []
    for j0 in range(0, k, LEAF):
        j1 = min(j0 + LEAF, k)
        w = j1 - j0
        tau = ExpansionArray(xp.zeros((B, w, F.nterms), dtype=F.dtype))
        for j in range(j0, j1):
            beta, t, tail = _reflector(F[:, j:, j])
            F[:, j, j] = beta
            F[:, j + 1:, j] = tail
            tau[:, j - j0] = t
            if j + 1 < j1:
                v = ExpansionArray(xp.concatenate([_unit_terms(xp, (B, 1), F.nterms, F.dtype), tail.terms], axis=1))
                P = F[:, j:, j + 1:j1]
                y = t[:, None] * _sum(v[:, :, None] * P, axis=1)
                F[:, j:, j + 1:j1] = P - v[:, :, None] * y[:, None, :]
        below = xp.tril(xp.ones((m - j0, w), dtype=bool), -1)[..., None]
        diagonal = xp.eye(m - j0, w, dtype=bool)[..., None]
        V = xp.where(below, F.terms[:, j0:, j0:j1], xp.zeros_like(F.terms[:, j0:, j0:j1]))
        V = ExpansionArray(xp.where(diagonal, _unit_terms(xp, (), F.nterms, F.dtype), V))
        T = _block_reflector(V, tau)
        if j1 < n:
            F[:, j0:, j1:] = _apply_block(V, T, F[:, j0:, j1:], transpose=True)
        panels.append((j0, V, T))
    return panels


@implements(np.linalg.qr)
def qr(a, mode: str = "reduced"):
    """``(Q, R)`` with a = Q R, as NumPy: mode 'reduced' (Q (..., m, k) with orthonormal columns,
    R (..., k, n) upper triangular, k = min(m, n)), 'complete' (Q (..., m, m) orthogonal, R
    (..., m, n)) or 'r' (R (..., k, n) alone).  Blocked Householder QR (Golub and Van Loan, 4th ed.,
    5.2.2-5.2.3): panels of :data:`LEAF` columns factored by Householder reflections column by
    column, the trailing columns updated in the compact WY form ``Q = I - V T V^T`` by three matrix
    products, and Q accumulated from the reflections the same way.  R's diagonal has LAPACK's signs
    (``-sign(a_kk) ||column||``).  Q is orthonormal to a few n u (u = 2^-((p-1) R)) and
    ``||a - Q R|| <= c n u ||a||`` column by column, whatever the condition number; a rank-deficient
    a gives zero (or tiny) diagonal entries of R and an orthonormal Q."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode {mode!r} is not supported (use 'reduced', 'complete' or 'r')")
    a = _expansion(a, None, "qr")
    if a.ndim < 2:
        raise LinAlgError(f"qr: {a.ndim}-dimensional array given. Array must be at least two-dimensional")
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    xp = xp_of(a.terms)
    B = math.prod(batch)
    F = ExpansionArray(a.terms.reshape((B, m, n, a.nterms)).copy())
    panels = _householder(F)
    rows = m if mode == "complete" else k
    upper = xp.triu(xp.ones((rows, n), dtype=bool))[..., None]
    R = ExpansionArray(xp.where(upper, F.terms[:, :rows], xp.zeros_like(F.terms[:, :rows]))).reshape(batch + (rows, n))
    if mode == "r":
        return R
    Q = ExpansionArray(xp.zeros((B, m, rows, a.nterms), dtype=a.dtype))
    Q.terms[:, xp.arange(rows), xp.arange(rows), 0] = 1
    for j0, V, T in reversed(panels):  # Q = H_1 ... H_k I: the last panel first
        Q[:, j0:, j0:] = _apply_block(V, T, Q[:, j0:, j0:], transpose=False)
    return Q.reshape(batch + (m, rows)), R


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector norms (ord None/2, 1, inf, -inf) over one axis, matrix norms ('fro'/None, 1, inf, -1,
    -inf) over two, as NumPy; axis None: the vector 2-norm of a 1-D x, the Frobenius norm of a 2-D x.
    The 2-norm is ``sqrt(sum(x * x))`` (the library's tree sum and square root)."""
    x = _expansion(x, None, "norm")
    if axis is None:
        if x.ndim not in (1, 2):
            return norm(x.reshape(-1), None if ord in (None, 2, "fro") else ord, 0, keepdims)
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(int(a) % x.ndim for a in axes)
    if ord not in (None, 2, "fro"):  # |x|, for the orders that sum or compare magnitudes only
        ax = absolute(x)
    if len(axes) == 1:
        (a,) = axes
        if ord in (None, 2):
            r = unary("sqrt", _sum(x * x, axis=a, keepdims=keepdims))
        elif ord == 1:
            r = _sum(ax, axis=a, keepdims=keepdims)
        elif ord in (np.inf, -np.inf):
            r = (_max if ord == np.inf else _min)(ax, axis=a, keepdims=keepdims)
        else:
            raise ValueError(f"norm: vector ord {ord!r} is not supported (None, 1, 2, inf, -inf)")
        return r
    if len(axes) != 2:
        raise ValueError("norm: axis must name one or two axes")
    r0, c0 = axes
    if ord in (None, "fro"):
        return unary("sqrt", _sum(x * x, axis=axes, keepdims=keepdims))
    if ord in (1, -1):
        s = _sum(ax, axis=r0, keepdims=True)
        r = (_max if ord == 1 else _min)(s, axis=c0, keepdims=True)
    elif ord in (np.inf, -np.inf):
        s = _sum(ax, axis=c0, keepdims=True)
        r = (_max if ord == np.inf else _min)(s, axis=r0, keepdims=True)
    else:
        raise ValueError(f"norm: matrix ord {ord!r} is not supported ('fro', 1, -1, inf, -inf; no singular values)")
    return r if keepdims else r.reshape(tuple(d for i, d in enumerate(r.shape) if i not in axes))


@implements(np.linalg.lstsq)
def lstsq(a, b, rcond=None):
    """The least-squares solution of a x = b for a 2-D a (m x n, m >= n, full column rank) by the
    Householder QR of :func:`qr`: the reflections applied to b (Q^T b is never formed from Q), then
    R x = (Q^T b)[:n] by back substitution; backward stable (x solves a least-squares problem within
    a few n u of a and b, column by column).  ``(x, residuals, rank, s)`` as NumPy, with
    ``residuals`` the squared 2-norms of the columns of b - a x when m > n (else empty), ``rank`` n,
    and ``s`` None (no singular values).  ``rcond`` is accepted and ignored.  A zero diagonal entry
    of R (an exactly rank-deficient a) raises LinAlgError."""
    a = _expansion(a, b if isinstance(b, ExpansionArray) else None, "lstsq")
    if a.ndim != 2:
        raise LinAlgError(f"lstsq: {a.ndim}-dimensional array given. Array must be two-dimensional")
    m, n = a.shape
    if m < n:
        raise LinAlgError("lstsq: underdetermined systems (m < n) are not supported")
    b = _expansion(b, a, "lstsq")
    xp = xp_of(a.terms)
    vector = b.ndim == 1
    bb = b.reshape((m, 1)) if vector else b
    F = ExpansionArray(a.terms[None].copy())
    panels = _householder(F)
    if _any(compare("eq", F[0, np.arange(n), np.arange(n)], 0)):
        raise LinAlgError("lstsq: rank-deficient matrix")
    c = ExpansionArray(bb.terms[None].copy())
    for j0, V, T in panels:
        c[:, j0:] = _apply_block(V, T, c[:, j0:], transpose=True)
    x = _solve_upper(F[:, :n, :n], c[:, :n])[0]
    res = bb - a @ x
    residuals = _sum(res * res, axis=0) if m > n else ExpansionArray(xp.zeros((0, a.nterms), a.dtype))
    return (x.reshape((n,)) if vector else x), (residuals.reshape(()) if vector and m > n else residuals), n, None


#: Most refinement steps of :func:`eigh` and :func:`svd` after the float64 start; where the
#: stopping rule is not met by then they warn (RuntimeWarning).
SPECTRAL_MAX_STEPS = 16
#: :func:`eigh` and :func:`svd` stop when the computed orthogonality defects and off-diagonal
#: residuals are at most ``SPECTRAL_TOLERANCE * n * u`` (relative to the largest eigen- or singular
#: value; u = 2**-((p-1) R)).
SPECTRAL_TOLERANCE = 8
#: Pairs of eigen- or singular values whose first-order correction ``e_ij`` would exceed this are
#: refined together as a cluster (the float64 start cannot separate their vectors well enough).
CLUSTER_CORRECTION = 2.0 ** -26
#: The refinement gives up (and warns) when its defect exceeds this: the iterate is no longer close
#: to an orthonormal basis of eigen- or singular vectors.
DIVERGED = 2.0 ** -10


def _lead(x: ExpansionArray):
    """The leading terms of x as float64 (NumPy or CuPy)."""
    return x.terms[..., 0].astype(np.float64)


def _select(mask, x: ExpansionArray, y: ExpansionArray) -> ExpansionArray:
    """The expansion array with x where mask is set, y elsewhere (broadcast)."""
    xp = xp_of(x.terms)
    return ExpansionArray(xp.ascontiguousarray(xp.where(mask[..., None], x.terms, y.terms)))


def _frobenius(x) -> float:
    """The Frobenius norm of a float64 array, summed in NumPy's (or CuPy's) fixed pairwise order."""
    xp = xp_of(x)
    return float(xp.sqrt(xp.sum(x * x)))


def _clusters(values, close):
    """The groups (index arrays, more than one member) that the pairs marked in ``close`` (n x n,
    NumPy bool) join, each widened to the run of the values between them in ascending order."""
    order = np.argsort(values, kind="stable")
    linked = np.triu(close[np.ix_(order, order)], 1)
    reach = np.where(linked.any(axis=1), len(order) - 1 - np.argmax(linked[:, ::-1], axis=1), np.arange(len(order)))
    groups, start, end = [], 0, 0
    for p in range(len(order)):
        if p > end:
            if end > start:
                groups.append(order[start:end + 1])
            start = end = p
        end = max(end, int(reach[p]))
    if end > start:
        groups.append(order[start:end + 1])
    return groups


def _host(x):
    """A NumPy copy of a NumPy or CuPy array."""
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _like(x, a: ExpansionArray) -> ExpansionArray:
    """A float64 array (NumPy or CuPy) rounded to a's terms, dtype and device."""
    return _array(x, terms=a.nterms, dtype=a.dtype.name, device=a.device)


def _unit(a: ExpansionArray) -> float:
    """u = 2^-((p-1) R) of a's format."""
    return 2.0 ** (-np.finfo(a.dtype).nmant * a.nterms)


def _symmetric_part(x: ExpansionArray) -> ExpansionArray:
    """(x + x^T) / 2: the computed Gram matrices and Rayleigh quotients made exactly symmetric, so
    that the corrections of a pair satisfy ``e_ij + e_ji = r_ij`` however close its values are (the
    products round the (i, j) and (j, i) entries differently)."""
    return (x + _transpose(x)) * 0.5


def _orthonormal(W: ExpansionArray) -> ExpansionArray:
    """The float64 orthogonal matrix W (k x k, as expansions) made orthonormal to the expansions'
    precision by the Newton-Schulz steps ``W <- W + W (I - W^T W) / 2`` (each squares the defect),
    so that rotating a basis by it keeps the basis orthonormal."""
    k = W.shape[-1]
    xp = xp_of(W.terms)
    eye = _like(xp.eye(k), W)
    for _ in range(SPECTRAL_MAX_STEPS):
        G = eye - _matmul(_transpose(W), W)
        if float(xp.abs(_lead(G)).max()) <= k * _unit(W):
            break
        W = W + _matmul(W, G) * 0.5
    return W


def _symmetric_refinement(A: ExpansionArray, X: ExpansionArray, scale: float):
    """Ogita and Aishima's refinement of approximate eigenvectors X (n x n) of the symmetric A
    (Japan J. Indust. Appl. Math. 35, 2018, Algorithm 1, with the treatment of clustered eigenvalues
    of part II, 2019).  ``scale`` is ||A||_2 in float64 (the largest |eigenvalue| of the start).
    Returns (eigenvalues, X, converged): each step computes R = I - X^T X and S = X^T A X (exact-slice
    products), the Rayleigh quotients ``lambda_i = s_ii / (1 - r_ii)`` and, while the defects are above
    the tolerance, ``X <- X + X E`` with ``e_ij = (s_ij + lambda_j r_ij) / (lambda_j - lambda_i)``, and
    ``r_ij / 2`` within clusters: pairs whose eigenvalues differ by at most the tolerance times ||A||
    (the rounding level) or whose e_ij would exceed :data:`CLUSTER_CORRECTION` (the paper's
    normwise separation ``2 (||S - D|| + ||A|| ||R||)`` instead would put all the small eigenvalues of
    a graded matrix in one cluster, whose float64 rotation resolves them only normwise); a cluster
    whose shifted block ``X_J^T (A - mu I) X_J`` still has off-diagonal entries above the tolerance is
    rotated by that block's float64 eigenvectors."""
    n = A.shape[-1]
    xp = xp_of(A.terms)
    tol = SPECTRAL_TOLERANCE * n * _unit(A)
    eye = _like(xp.eye(n), A)
    diag = (xp.arange(n), xp.arange(n))
    offdiag = ~xp.eye(n, dtype=bool)
    for step in range(SPECTRAL_MAX_STEPS + 1):
        XT = _transpose(X)
        Rm = _symmetric_part(eye - _matmul(XT, X))
        S = _symmetric_part(_matmul(XT, _matmul(A, X)))
        lam = S[diag] / (1 - Rm[diag])
        r0, s0, l0 = _lead(Rm), xp.where(offdiag, _lead(S), 0.0), _lead(lam)
        defect = max(_frobenius(r0), _frobenius(s0) / scale)
        if defect <= tol:
            return lam, X, True
        if step == SPECTRAL_MAX_STEPS or not defect <= DIVERGED:
            return lam, X, False
        lam_j = lam[None, :]
        differences = lam_j - lam[:, None]
        gap = xp.abs(_lead(differences))
        numerators = S + lam_j * Rm
        coupling = xp.abs(_lead(numerators))
        coupling = xp.maximum(coupling, coupling.T)  # the same decision for (i, j) and (j, i)
        close = (gap <= tol * scale) | (coupling > CLUSTER_CORRECTION * gap)
        rotate = ~close & (coupling > tol * scale / n)  # below: the pair is coupled at the rounding level
        E = _select(rotate, numerators / _select(rotate, differences, eye + 1), Rm * 0.5)
        X = X + _matmul(X, E)
        for J in _clusters(_host(l0), _host(close)):
            J = xp.asarray(J)
            block = (J[:, None], J[None, :])
            T0 = _lead(S[block] - _like(xp.mean(l0[J]), A) * (eye[block] - Rm[block]))
            if float(xp.abs(xp.where(offdiag[block], T0, 0.0)).max()) > tol * scale / 2:
                X[:, J] = _matmul(X[:, J], _orthonormal(_like(xp.linalg.eigh((T0 + T0.T) / 2)[1], A)))
    raise AssertionError("unreachable")


def _symmetrized(a: ExpansionArray, UPLO: str, what: str):
    """The stacked symmetric matrices (B, n, n) that a's lower (UPLO 'L') or upper ('U') triangle
    defines, as NumPy's eigh reads them; the batch shape and n."""
    if UPLO not in ("L", "U"):
        raise ValueError(f"{what}: UPLO argument must be 'L' or 'U'")
    w, batch, n = _square_stack(a, what)
    xp = xp_of(w.terms)
    keep = xp.tril(xp.ones((n, n), dtype=bool)) if UPLO == "L" else xp.triu(xp.ones((n, n), dtype=bool))
    return ExpansionArray(xp.where(keep[..., None], w.terms, xp.swapaxes(w.terms, -2, -3))), batch, n


def _ascending(lam: ExpansionArray):
    """The permutation that sorts the (renormalized) expansions lam (n,) ascending (NumPy)."""
    t = _host(lam.terms).astype(np.float64)
    return np.lexsort(tuple(t[:, k] for k in range(t.shape[1] - 1, -1, -1)))


def _eigh_one(A: ExpansionArray, what: str):
    """Eigenvalues (ascending) and eigenvectors of one symmetric matrix (n, n)."""
    n = A.shape[-1]
    xp = xp_of(A.terms)
    A0 = _lead(A)
    if not bool(xp.isfinite(A0).all()):
        nan = _like(xp.full((n, n + 1), xp.nan), A)
        return nan[:, 0], nan[:, 1:]
    l0, X0 = xp.linalg.eigh(A0)
    scale = float(xp.abs(l0).max()) if n else 0.0
    if scale == 0:  # the zero matrix
        return _like(xp.zeros(n), A), _like(xp.eye(n), A)
    lam, X, converged = _symmetric_refinement(A, _like(X0, A), scale)
    if not converged:
        warnings.warn(f"{what}: the refinement of the float64 eigenvectors did not reach the precision of "
                      f"{A.nterms} terms in {SPECTRAL_MAX_STEPS} steps (eigenvalues too close to resolve, or "
                      "a too inaccurate float64 start); the result is less accurate", RuntimeWarning,
                      stacklevel=3)
    order = xp.asarray(_ascending(lam))
    return lam[order], X[:, order]


try:
    from numpy.linalg._linalg import EighResult
except ImportError:  # NumPy < 2
    from collections import namedtuple

    EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])


@implements(np.linalg.eigh)
def eigh(a, UPLO: str = "L"):
    """Eigenvalues and eigenvectors of the stacked symmetric matrices a (..., n, n), as NumPy: an
    ``EighResult(eigenvalues, eigenvectors)`` with the eigenvalues (..., n) ascending and the
    eigenvectors the columns of (..., n, n); only the lower (``UPLO='L'``) or upper (``'U'``) triangle
    is read.

    The float64 eigendecomposition of the leading terms (LAPACK through NumPy or CuPy) refined by
    Ogita and Aishima's iteration (see the module docstring): every step is four matrix products by
    exact slices and elementwise operations, until the computed ``||I - V^T V||_F`` and the
    off-diagonal of ``V^T A V`` relative to ||A||_2 (Frobenius) are at most
    ``t = SPECTRAL_TOLERANCE * n * u``.  Then ``||A V - V diag(w)||_F <= 2 t ||A||_2 / sqrt(1 - t)``
    (plus the few n u of rounding in the computed defects), and each eigenvalue of a is within that
    of a returned one.  Where the
    rule is not met in :data:`SPECTRAL_MAX_STEPS` steps it warns (RuntimeWarning) and returns the last
    iterate."""
    a = _expansion(a, None, "eigh")
    A, batch, n = _symmetrized(a, UPLO, "eigh")
    pairs = [_eigh_one(A[b], "eigh") for b in range(A.shape[0])]
    xp = xp_of(A.terms)
    w = ExpansionArray(xp.stack([p[0].terms for p in pairs]) if pairs else xp.zeros((0, n, A.nterms), A.dtype))
    v = ExpansionArray(xp.stack([p[1].terms for p in pairs]) if pairs else xp.zeros((0, n, n, A.nterms), A.dtype))
    return EighResult(w.reshape(batch + (n,)), v.reshape(batch + (n, n)))


@implements(np.linalg.eigvalsh)
def eigvalsh(a, UPLO: str = "L"):
    """The eigenvalues (..., n), ascending, of the stacked symmetric matrices a, as :func:`eigh`."""
    return eigh(a, UPLO).eigenvalues


def _svd_refinement(A: ExpansionArray, U: ExpansionArray, V: ExpansionArray, scale: float):
    """Refinement of approximate singular vectors U (m x m), V (n x n) of A (m x n, m >= n), on
    Ogita and Aishima's pattern for the SVD: each step computes ``R = I - U^T U``, ``S = I - V^T V``
    (both made exactly symmetric) and ``T = U^T A V`` by exact-slice products, the singular values
    ``sigma_i = t_ii / (1 - (r_ii + s_ii) / 2)`` and, while the defects are above the tolerance,
    ``U <- U + U F``, ``V <- V + V G``: writing U = U*(I + P), V = V*(I + Q) for the exact vectors,
    the first-order equations ``r_ij = -(p_ij + p_ji)``, ``s_ij = -(q_ij + q_ji)``,
    ``t_ij = sigma_j p_ji + sigma_i q_ij`` give, for a pair i, j <= n,
    ``p + q = (a + b) / (sigma_i - sigma_j)`` and ``p - q = (b - a) / (sigma_i + sigma_j)`` with
    ``a = t_ij + sigma_j r_ij``, ``b = t_ji + sigma_j s_ij`` (p = p_ij, q = q_ij), and for i > n,
    j <= n ``p_ji = t_ij / sigma_j``; F = -P, G = -Q.  A pair of close singular values (within
    ``delta = 2 (||T - Sigma||_F + ||A||_2 (||R||_F + ||S||_F))``, or whose ``p + q`` would exceed
    :data:`CLUSTER_CORRECTION`: a cluster) gets ``p + q = -(r_ij + s_ij) / 2`` (no common rotation);
    a pair whose sum is at the rounding level (the tolerance times ||A||_2) or whose ``p - q`` would
    exceed CLUSTER_CORRECTION gets ``p - q = (s_ij - r_ij) / 2``, and its singular values count as
    close to zero, like those at the rounding level and those whose ``p_ji`` against a column of U
    beyond n would exceed CLUSTER_CORRECTION; these get ``p_ji = r_ij / 2`` against those columns.
    A pair coupled only at the rounding level gets the orthogonality corrections alone.  The singular
    values close to zero, with the columns of U beyond n, are rotated by the float64 SVD of their
    block of T while it has off-diagonal entries above the tolerance; any other cluster whose
    symmetric block still has off-diagonal entries above the tolerance is rotated (U_J and V_J alike)
    by its float64 eigenvectors (the rotations made orthonormal as in :func:`eigh`).  Returns
    (singular values, U, V, converged)."""
    m, n = A.shape
    xp = xp_of(A.terms)
    tol = SPECTRAL_TOLERANCE * m * _unit(A)
    eye_m, eye_n = _like(xp.eye(m), A), _like(xp.eye(n), A)
    diag = (xp.arange(n), xp.arange(n))
    offdiag = ~xp.eye(m, n, dtype=bool)
    for step in range(SPECTRAL_MAX_STEPS + 1):
        Rm = _symmetric_part(eye_m - _matmul(_transpose(U), U))
        Sm = _symmetric_part(eye_n - _matmul(_transpose(V), V))
        T = _matmul(_transpose(U), _matmul(A, V))
        sig = T[diag] / (1 - (Rm[diag] + Sm[diag]) * 0.5)
        r0, s0, t0, g0 = _lead(Rm), _lead(Sm), xp.where(offdiag, _lead(T), 0.0), _lead(sig)
        defect = max(_frobenius(r0), _frobenius(s0), _frobenius(t0) / scale)
        if defect <= tol:
            return sig, U, V, True
        if step == SPECTRAL_MAX_STEPS or not defect <= DIVERGED:
            return sig, U, V, False
        delta = 2 * (_frobenius(t0) + scale * (_frobenius(r0) + _frobenius(s0)))
        sig_i, sig_j = sig[:, None], sig[None, :]
        T1, R11 = T[:n], Rm[:n, :n]
        a = T1 + sig_j * R11
        b = _transpose(T1) + sig_j * Sm
        differences, sums = sig_i - sig_j, sig_i + sig_j
        gap, total = xp.abs(_lead(differences)), xp.abs(_lead(sums))
        plus_coupling, minus_coupling = xp.abs(_lead(a + b)), xp.abs(_lead(b - a))
        plus_coupling = xp.maximum(plus_coupling, plus_coupling.T)  # the same decision for (i, j) and (j, i)
        minus_coupling = xp.maximum(minus_coupling, minus_coupling.T)
        close = (gap <= delta) | (plus_coupling > CLUSTER_CORRECTION * gap)
        small = (total <= tol * scale) | (minus_coupling > CLUSTER_CORRECTION * total)
        quiet = tol * scale / m  # couplings at the rounding level: orthogonality corrections only
        solve_plus, solve_minus = ~close & (plus_coupling > quiet), ~small & (minus_coupling > quiet)
        plus = _select(solve_plus, (a + b) / _select(solve_plus, differences, eye_n + 1), (R11 + Sm) * -0.5)
        minus = _select(solve_minus, (b - a) / _select(solve_minus, sums, eye_n + 1), (Sm - R11) * 0.5)
        zero = xp.abs(g0) <= tol * scale
        if m > n:
            zero |= (xp.abs(t0[n:]) > CLUSTER_CORRECTION * xp.abs(g0)[None, :]).any(axis=0)
        zero |= (small & ~xp.eye(n, dtype=bool)).any(axis=0)
        F = Rm * 0.5
        F[:n, :n] = (plus + minus) * -0.5
        G = (plus - minus) * -0.5
        if m > n:  # the columns of U beyond n: p_ji = t_ij / sigma_j unless sigma_j is close to zero
            beyond = xp.broadcast_to(zero[None, :], (m - n, n))
            P = T[n:] / _select(beyond, _like(xp.ones((m - n, n)), A), ExpansionArray(xp.broadcast_to(
                sig.terms[None], (m - n, n, A.nterms)).copy()))
            F[n:, :n] = _select(beyond, Rm[n:, :n] * 0.5, Rm[n:, :n] + P)
            F[:n, n:] = _select(beyond.T, Rm[:n, n:] * 0.5, _transpose(P) * -1)
        U = U + _matmul(U, F)
        V = V + _matmul(V, G)
        Z = xp.flatnonzero(zero)
        if len(Z):  # the singular values close to zero: rotated by the float64 SVD of their block of T
            rows = xp.concatenate([Z, xp.arange(n, m)])
            M0 = _lead(T[rows[:, None], Z[None, :]])
            if float(xp.abs(xp.where(offdiag[:len(rows), :len(Z)], M0, 0.0)).max()) > tol * scale / 2:
                Wu, _, Wvt = xp.linalg.svd(M0, full_matrices=True)
                U[:, rows] = _matmul(U[:, rows], _orthonormal(_like(Wu, A)))
                V[:, Z] = _matmul(V[:, Z], _orthonormal(_like(Wvt.T.copy(), A)))
        for J in _clusters(_host(g0), _host(close & ~small & ~zero[:, None] & ~zero[None, :])):
            J = xp.asarray(J)
            block = (J[:, None], J[None, :])
            TJ = T1[block]
            gram = eye_n[block] - (R11[block] + Sm[block]) * 0.5
            M0 = _lead((TJ + _transpose(TJ)) * 0.5 - _like(xp.mean(g0[J]), A) * gram)
            if float(xp.abs(xp.where(offdiag[:n, :n][block], M0, 0.0)).max()) > tol * scale / 2:
                W = _orthonormal(_like(xp.linalg.eigh((M0 + M0.T) / 2)[1], A))
                U[:, J] = _matmul(U[:, J], W)
                V[:, J] = _matmul(V[:, J], W)
    raise AssertionError("unreachable")


def _svd_one(A: ExpansionArray, what: str):
    """``(U (m x m), s (k,), V (n x n))`` of one matrix, s descending, k = min(m, n)."""
    m, n = A.shape
    if m < n:
        V, s, U = _svd_one(_transpose(A), what)
        return U, s, V
    xp = xp_of(A.terms)
    A0 = _lead(A)
    if not bool(xp.isfinite(A0).all()):
        nan = _like(xp.full((m + n, m + 1), xp.nan), A)
        return nan[:m, :m], nan[0, :n], nan[m:, :n]
    if n == 0:
        return _like(xp.eye(m), A), _like(xp.zeros(0), A), _like(xp.eye(0), A)
    U0, s0, V0t = xp.linalg.svd(A0, full_matrices=True)
    scale = float(s0[0])
    if scale == 0:  # the zero matrix
        return _like(xp.eye(m), A), _like(xp.zeros(n), A), _like(xp.eye(n), A)
    s, U, V, converged = _svd_refinement(A, _like(U0, A), _like(V0t.T.copy(), A), scale)
    if not converged:
        warnings.warn(f"{what}: the refinement of the float64 singular vectors did not reach the precision of "
                      f"{A.nterms} terms in {SPECTRAL_MAX_STEPS} steps (singular values too close to resolve, "
                      "or a too inaccurate float64 start); the result is less accurate", RuntimeWarning, stacklevel=3)
    negative = _lead(s) < 0  # a zero singular value may come out as -(a few u ||A||): flip its v
    s = _select(negative, -s, s)
    V = _select(negative[None, :], -V, V)
    order = xp.asarray(_ascending(s)[::-1].copy())
    U = ExpansionArray(xp.concatenate([U[:, order].terms, U[:, n:].terms], axis=1))
    return U, s[order], V[:, order]


try:
    from numpy.linalg._linalg import SVDResult
except ImportError:  # NumPy < 2
    from collections import namedtuple

    SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


@implements(np.linalg.svd)
def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """The singular value decomposition of the stacked matrices a (..., m, n), as NumPy: an
    ``SVDResult(U, S, Vh)`` with ``a = U diag(S) Vh``, S (..., k) descending (k = min(m, n)), U
    (..., m, m) and Vh (..., n, n) orthogonal (``full_matrices=False``: (..., m, k) and (..., k, n));
    ``compute_uv=False`` returns S alone.  ``hermitian`` is accepted and changes nothing.

    The float64 SVD of the leading terms (LAPACK through NumPy or CuPy) refined by exact-slice
    products (see the module docstring) until ``||I - U^T U||_F``, ``||I - V^T V||_F`` and the
    off-diagonal of ``U^T a V`` relative to the largest singular value (Frobenius) are at most
    ``t = SPECTRAL_TOLERANCE * max(m, n) * u``; the full U is refined also for reduced output (work
    about ``m^3``).  Then ``||a V - U diag(S)||_F <= 3 t ||a||_2 / sqrt(1 - t)`` (from
    ``U^T (a V - U Sigma) = T - Sigma + R Sigma``; plus the rounding of the computed defects).
    Where the rule is not met in :data:`SPECTRAL_MAX_STEPS` steps it warns (RuntimeWarning)."""
    del hermitian
    a = _expansion(a, None, "svd")
    if a.ndim < 2:
        raise LinAlgError(f"svd: {a.ndim}-dimensional array given. Array must be at least two-dimensional")
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    xp = xp_of(a.terms)
    stack = a.reshape((math.prod(batch), m, n))
    parts = [_svd_one(stack[b], "svd") for b in range(stack.shape[0])]

    def stacked(i, rows, cols):
        terms = [p[i].terms[:rows, :cols] if cols is not None else p[i].terms[:rows] for p in parts]
        shape = (len(parts), rows) + (() if cols is None else (cols,)) + (a.nterms,)
        t = xp.stack(terms) if terms else xp.zeros(shape, a.dtype)
        return ExpansionArray(xp.ascontiguousarray(t)).reshape(batch + shape[1:-1])

    s = stacked(1, k, None)
    if not compute_uv:
        return s
    U = stacked(0, m, m if full_matrices else k)
    Vh = _transpose(stacked(2, n, n if full_matrices else k))
    return SVDResult(U, s, Vh)


if hasattr(np.linalg, "svdvals"):
    @implements(np.linalg.svdvals)
    def svdvals(x):
        """The singular values (..., k), descending, as :func:`svd` with ``compute_uv=False``."""
        return svd(x, compute_uv=False)
else:  # NumPy < 2
    def svdvals(x):
        """The singular values (..., k), descending, as :func:`svd` with ``compute_uv=False``."""
        return svd(x, compute_uv=False)


def _relative_cutoff(a: ExpansionArray, rtol):
    """NumPy's ``rtol`` for pinv and matrix_rank: given, or ``max(m, n) * u`` (the expansions'
    precision in place of float64's eps)."""
    return max(a.shape[-2:]) * _unit(a) if rtol is None else rtol


@implements(np.linalg.pinv)
def pinv(a, rcond=None, hermitian: bool = False, *, rtol=None):
    """The Moore-Penrose pseudo-inverse of the stacked matrices a (..., m, n), as NumPy: ``V
    diag(1/s) U^T`` from :func:`svd`, the singular values at most ``rcond * max(s)`` counted as zero.
    ``rcond`` and ``rtol`` are the same cutoff (NumPy's two names; not both); by default
    ``max(m, n) * u`` with u the expansions' precision (NumPy uses float64's eps).  ``hermitian`` is
    accepted and changes nothing."""
    del hermitian
    if rcond is not None and rtol is not None:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    a = _expansion(a, None, "pinv")
    if a.ndim < 2:
        raise LinAlgError(f"pinv: {a.ndim}-dimensional array given. Array must be at least two-dimensional")
    cutoff = _relative_cutoff(a, rtol if rcond is None else rcond)
    U, s, Vh = svd(a, full_matrices=False)
    xp = xp_of(s.terms)
    if s.shape[-1] == 0:
        return ExpansionArray(xp.zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2], a.nterms), a.dtype))
    large = compare("gt", s, s[..., :1] * xp.asarray(cutoff)[..., None])
    inverse = _select(xp.asarray(large), 1 / _select(xp.asarray(large), s, s * 0 + 1), s * 0)
    return _matmul(_transpose(Vh) * inverse[..., None, :], _transpose(U))


@implements(np.linalg.matrix_rank)
def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None):
    """The rank of the stacked matrices A (..., m, n), as NumPy: the number of singular values
    (:func:`svd`) above ``tol``, by default ``max(s) * rtol`` with ``rtol`` by default
    ``max(m, n) * u`` (u the expansions' precision; NumPy uses float64's eps).  A 1-D or 0-D A has
    rank 1 unless it is all zero.  ``hermitian`` is accepted and changes nothing."""
    del hermitian
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = _expansion(A, None, "matrix_rank")
    xp = xp_of(A.terms)
    if A.ndim < 2:
        return int(_any(compare("ne", A, 0)))
    s = svd(A, compute_uv=False)
    if s.shape[-1] == 0:
        return np.zeros(A.shape[:-2], dtype=np.intp)[()]
    if tol is None:
        threshold = s[..., :1] * xp.asarray(_relative_cutoff(A, rtol))[..., None]
    else:
        threshold = xp.asarray(tol)[..., None]
    return xp.count_nonzero(xp.asarray(compare("gt", s, threshold)), axis=-1)[()]


@implements(np.linalg.cond)
def cond(x, p=None):
    """The condition number of the stacked matrices x, as NumPy: for p None or 2 the ratio of the
    largest to the smallest singular value (:func:`svd`), for -2 its inverse, for 'fro', 1, -1, inf,
    -inf ``norm(x, p) * norm(inv(x), p)`` (inf where x is exactly singular)."""
    x = _expansion(x, None, "cond")
    if x.ndim < 2:
        raise LinAlgError(f"cond: {x.ndim}-dimensional array given. Array must be at least two-dimensional")
    if 0 in x.shape[-2:]:
        raise LinAlgError("cond is not defined on empty arrays")
    if p is None or p in (2, -2):
        s = svd(x, compute_uv=False)
        return s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    try:
        inverse = inv(x)
    except LinAlgError:
        xp = xp_of(x.terms)
        return _like(xp.full(x.shape[:-2], xp.inf), x)
    return norm(x, p, axis=(-2, -1)) * norm(inverse, p, axis=(-2, -1))
