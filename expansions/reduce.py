"""Reductions of expansion arrays: :func:`sum`, :func:`dot`, :func:`matmul`, :func:`inner`, :func:`vdot`,
:func:`tensordot`.

Products of matrices are computed one of two ways (``method=``): by exact slices on the platform's
matrix multiply (:mod:`expansions.slices`, the Ozaki scheme; bound
:func:`expansions.bounds.matmul_slices`), the default where it is faster (:func:`choose_method`), or
element by element ("elementwise", below).

Every reduction of n expansions x_0 .. x_{n-1} is the canonical pairwise tree "adjacent pairs, odd
last carried": level by level, element j of the next level is ``node(x[2j], x[2j+1])`` and an odd last
element is carried unchanged, with ``node(a, b) = renormalize(add_safe(a, b, R), R)`` (the safe
parallel addition, Algorithm 1 of Collange et al. 2016, then the error-free renormalization).  n = 0
gives +0 and n = 1 the element itself.  Dot products and matrix products reduce the elements
``renormalize(mul_truncated(x_i, y_i, R), R)`` (Algorithm 2).  The elements of a multi-axis sum are
taken in C order.  The result is the same bits on the CPU (the NumPy twin,
:mod:`expansions.cpu.reduce`) and the GPU (the kernels of ``expansions/cuda/reduce.cuh``), whatever the
chunking of the passes.

Proven bounds (:mod:`expansions.bounds`): :func:`expansions.bounds.sum_tree` (relative to sum |x_i|)
and :func:`expansions.bounds.dot` (relative to sum |x_i y_i|, plus
:func:`expansions.bounds.dot_underflow_term` near the underflow threshold), for ulp-nonoverlapping
inputs.  Non-finite values follow the library's rule at every node: NaN and infinities propagate
(inf + -inf is NaN), an overflowing sum is ±inf.
"""

from __future__ import annotations

import math

import numpy as np

from . import slices as _slices
from .arraytype import ExpansionArray
from .backends import for_terms, xp_of
from .operations import operands


def _result(terms, shape, R) -> ExpansionArray:
    return ExpansionArray(terms.reshape(tuple(shape) + (R,)))


def normalize_axes(axis, ndim: int, keep_order: bool = False) -> tuple:
    """``axis`` (an int, a sequence of ints, or None for all) as distinct non-negative axes, sorted
    unless ``keep_order``; NumPy's AxisError for an axis out of range."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"axis must be an int, a tuple of ints or None, got {axis!r}")
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(int(a), ndim)
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in axis {axis!r}")
    return tuple(out) if keep_order else tuple(sorted(out))


def sum(x, axis=None, keepdims: bool = False) -> ExpansionArray:  # noqa: A001 - NumPy's name
    """Sum of the elements of ``x`` along ``axis`` (an int, a tuple of ints, or None for all), with the
    canonical pairwise tree; ``keepdims`` keeps the reduced axes with length one.  A sum over no
    element is +0.  The result has x's number of terms, dtype and device (a 0-d ExpansionArray
    when every axis is reduced).  Bound: :func:`expansions.bounds.sum_tree`."""
    if not isinstance(x, ExpansionArray):
        raise TypeError(f"sum expects an ExpansionArray, got {type(x).__name__}")
    R = x.nterms
    axes = normalize_axes(axis, x.ndim)
    shape = x.shape
    kept = [a for a in range(x.ndim) if a not in axes]
    out_shape = tuple(1 if a in axes else shape[a] for a in range(x.ndim)) if keepdims else \
        tuple(shape[a] for a in kept)
    xp = xp_of(x.terms)
    terms = xp.ascontiguousarray(x.terms)
    if axes and axes != tuple(range(axes[0], axes[-1] + 1)):
        # reduced axes not adjacent: move them to the end (C order kept among them), one copy
        terms = xp.ascontiguousarray(terms.transpose(kept + list(axes) + [x.ndim]))
        shape = tuple(shape[a] for a in kept) + tuple(shape[a] for a in axes)
        axes = tuple(range(len(kept), x.ndim))
    lo, hi = (axes[0], axes[-1] + 1) if axes else (x.ndim, x.ndim)
    pre, n, post = math.prod(shape[:lo]), math.prod(shape[lo:hi]), math.prod(shape[hi:])
    # row b = (i, k) of pre x post; element j of row b is expansion i*n*post + j*post + k
    flat = terms.reshape(-1, R)
    with np.errstate(all="ignore"):
        out = for_terms(flat).reduce(flat, pre * post, n, R, n2=post, xs=(n * post, 1, post))
    return _result(out, out_shape, R)


def _dot_rows(x, y, out_shape, batch, n, n2, xs, ys):
    R = x.nterms
    xp = xp_of(x.terms)
    xt = xp.ascontiguousarray(x.terms).reshape(-1, R)
    yt = y if not isinstance(y, ExpansionArray) else xp.ascontiguousarray(y.terms).reshape(-1, R)
    with np.errstate(all="ignore"):
        out = for_terms(xt).reduce(xt, batch, n, R, n2=n2, xs=xs, y=yt, ys=ys)
    return _result(out, out_shape, R)


def _not_aligned(x, y, dx, dy):
    return ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[dx]} (dim {dx}) != "
                      f"{y.shape[dy]} (dim {dy})")


#: The products' methods: "auto" picks one of the others per 2-D product (:func:`choose_method`).
METHODS = ("auto", "slices", "elementwise")

# Cost model of :func:`choose_method`, seconds, fitted on one core of an x86-64 CPU (AVX-512 BLAS at
# about 80 GFLOP/s; expansions' engine): the element-wise product per multiply-add and R, and for the
# slice product a fixed cost per slice product, per term and slice of an operand entry, per output
# entry and per floating-point operation of the BLAS.
_ELEMENTWISE_PER_MULADD_TERM = 0.22e-6
# At R = 2 the element-wise products and tree run straight-line (expansions.engine.reduction): 15 to
# 75 ns per multiply-add and term on one core of the 2-core AVX2 development machine, 30 ns taken
# (python -m bench.product_methods, bench/results/product_methods_cpu-x86_64.md: with 0.22 us "auto"
# took the slices for a matrix times a vector and 16 x 16 x 16, 1.6 to 3x slower).
_ELEMENTWISE_PER_MULADD_TERM_R2 = 30e-9
_SLICES_PER_PRODUCT = 30e-6
_SLICES_PER_DIGIT = 6e-9
_SLICES_PER_OUTPUT = 0.2e-6
_SLICES_PER_OUTPUT_PRODUCT = 3e-9
_SLICES_PER_FLOP = 1 / 40e9


def choose_method(m: int, k: int, n: int, R: int, dtype, method: str = "auto", extra: int | None = 0) -> str:
    """The method of an (m, k) @ (k, n) product of R-term expansions of ``dtype`` whose slice plan
    needs ``extra`` bits (:func:`expansions.slices.componentwise_extra`; None: no plan holds the
    operands' spread): ``method`` itself unless it is "auto"; "auto" is "slices" for products of
    matrices (m n > 1) where :func:`expansions.slices.supported` and the cost model (the constants
    above) predicts it faster than "elementwise", else "elementwise" (so a dot product of two vectors,
    ``vdot`` and 1-D ``dot`` and ``inner``, keeps the tree and its bound relative to sum |x_i y_i|).
    On one core, with well-scaled operands, R = 2 switches to slices from about 20 x 20 x 20 and keeps
    the tree for a matrix times a vector (its straight-line products), R = 8 switches from about
    16 x 16 x 16 (a matrix times a vector from about 64 x 64 for R = 3, 4); badly scaled operands need
    more slice products and switch later."""
    if method not in METHODS:
        raise ValueError(f"unknown product method {method!r}: use one of {METHODS}")
    if method == "slices" and not _slices.supported(k, R, dtype):
        raise ValueError(f"method='slices': {R} {np.dtype(dtype).name} terms with inner dimension {k} exceed the "
                         f"format's exponent range (use method='elementwise')")
    if method != "auto":
        return method
    if m * n <= 1 or k == 0 or extra is None or not _slices.supported(k, R, dtype, extra=extra):
        return "elementwise"  # one dot product (vectors): the tree
    plan = _slices.plan(k, R, dtype, extra=extra)
    g = plan.gemms
    elementwise = (_ELEMENTWISE_PER_MULADD_TERM_R2 if R == 2 else _ELEMENTWISE_PER_MULADD_TERM) * R * m * k * n
    slices = (_SLICES_PER_PRODUCT * g + _SLICES_PER_DIGIT * plan.slices * R * (m * k + k * n)
              + (_SLICES_PER_OUTPUT + _SLICES_PER_OUTPUT_PRODUCT * g) * m * n + _SLICES_PER_FLOP * 2 * g * m * k * n)
    return "slices" if slices < elementwise else "elementwise"


def _product(x2: ExpansionArray, y2: ExpansionArray, method: str) -> ExpansionArray:
    """(m, k) @ (k, n) for 2-D operands of one format: by slices or by the element-wise tree.  "auto"
    weighs the slice plan that the operands' scaling needs (:func:`expansions.slices.componentwise_extra`)
    against the tree, so both paths keep the componentwise bound :func:`expansions.bounds.matmul`."""
    (m, k), n = x2.shape, y2.shape[1]
    R, dtype = x2.nterms, x2.dtype
    extra = 0
    if method == "auto" and m * n > 1 and k > 0 and _slices.supported(k, R, dtype):
        try:
            extra = _slices.componentwise_extra(x2.terms, y2.terms, R, dtype)
        except ValueError:
            extra = None
    if choose_method(m, k, n, R, dtype, method, extra) == "slices":
        return _slices.matmul(x2, y2, extra=extra if method == "auto" else None)
    return _dot_rows(x2, y2, (m, n), m * n, k, n, (k, 0, 1), (0, 1, n))


def _as_matrix(x: ExpansionArray, rows: int, cols: int) -> ExpansionArray:
    xp = xp_of(x.terms)
    return ExpansionArray(xp.ascontiguousarray(x.terms).reshape(rows, cols, x.nterms))


def dot(x, y, method: str = "auto") -> ExpansionArray:
    """The dot product, as ``numpy.dot``: 1-D with 1-D is the inner product (a 0-d result); 2-D with
    2-D the matrix product; N-D with 1-D sums over the last axes; N-D with M-D (M >= 2) sums over the
    last axis of x and the second-to-last of y; with a 0-d operand, the element-wise product.
    Operands that are not ExpansionArrays are converted to the other's terms, dtype and device.

    ``method``: "elementwise" multiplies ``renormalize(mul_truncated(x_i, y_i))`` and sums with the
    canonical pairwise tree (bound :func:`expansions.bounds.dot`); "slices" computes the product as
    one 2-D matrix product by exact slices (:mod:`expansions.slices`, bound
    :func:`expansions.bounds.matmul_slices`); "auto" (the default) picks the faster
    (:func:`choose_method`)."""
    x, y = operands(x, y)
    xp = xp_of(x.terms)
    if x.ndim == 0 or y.ndim == 0:  # element-wise product: rows of one element, the scalar has stride 0
        choose_method(1, 1, 1, x.nterms, x.dtype, method)
        shape = y.shape if x.ndim == 0 else x.shape
        N = math.prod(shape)
        return _dot_rows(x, y, shape, N, 1, 1, (0 if x.ndim == 0 else 1, 0, 0), (0 if y.ndim == 0 else 1, 0, 0))
    K = x.shape[-1]
    P = math.prod(x.shape[:-1])
    if y.ndim == 1:
        if y.shape[0] != K:
            raise _not_aligned(x, y, x.ndim - 1, 0)
        return _product(_as_matrix(x, P, K), _as_matrix(y, K, 1), method).reshape(x.shape[:-1])
    if y.shape[-2] != K:
        raise _not_aligned(x, y, x.ndim - 1, y.ndim - 2)
    M = y.shape[-1]
    Q = math.prod(y.shape[:-2])
    out_shape = x.shape[:-1] + y.shape[:-2] + (M,)
    # y's stacked matrices side by side: (K, Q*M), column q*M + l is y[q, :, l]
    yt = ExpansionArray(xp.ascontiguousarray(xp.moveaxis(y.terms.reshape(Q, K, M, y.nterms), 1, 0)))
    return _product(_as_matrix(x, P, K), yt.reshape((K, Q * M)), method).reshape(out_shape)


def matmul(x, y, method: str = "auto") -> ExpansionArray:
    """The matrix product, as ``numpy.matmul`` (the ``@`` operator): (..., m, k) @ (..., k, n), the
    batch dimensions broadcast; a 1-D x is a row (k,) -> (1, k) and a 1-D y a column (k,) -> (k, 1),
    the added axis removed from the result; 0-d operands are an error.  ``method`` as in :func:`dot`
    (each matrix of a batch is one 2-D product)."""
    x, y = operands(x, y)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("matmul: an operand is 0-d (use dot or * for scalars)")
    xp = xp_of(x.terms)
    R = x.nterms
    x2 = x.reshape((1,) + x.shape) if x.ndim == 1 else x
    y2 = y.reshape(y.shape + (1,)) if y.ndim == 1 else y
    K = x2.shape[-1]
    if y2.shape[-2] != K:
        raise ValueError(f"matmul: mismatch in the core dimension: {x.shape} @ {y.shape} "
                         f"({K} != {y2.shape[-2]})")
    m, N = x2.shape[-2], y2.shape[-1]
    try:
        batch = tuple(np.broadcast_shapes(x2.shape[:-2], y2.shape[:-2]))
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of {x.shape} and {y.shape} do not broadcast") from None
    drop = ((-2,) if x.ndim == 1 else ()) + ((-1,) if y.ndim == 1 else ())
    final = batch + tuple(d for i, d in zip((-2, -1), (m, N)) if i not in drop)
    if y2.ndim == 2:  # no batch in y: x's batch and rows form one (B*m, K) matrix
        rows = math.prod(batch) * m
        xb = ExpansionArray(xp.broadcast_to(x2.terms, batch + (m, K, R))) if x2.shape[:-2] != batch else x2
        return _product(_as_matrix(xb, rows, K), y2, method).reshape(final)
    # batched y: one (m, K) @ (K, N) per batch index
    xb = xp.broadcast_to(x2.terms, batch + (m, K, R))
    yb = xp.broadcast_to(y2.terms, batch + (K, N, R))
    outs = []
    for idx in np.ndindex(*batch):
        xi = ExpansionArray(xp.ascontiguousarray(xb[idx]))
        yi = ExpansionArray(xp.ascontiguousarray(yb[idx]))
        outs.append(_product(xi, yi, method).terms)
    out = xp.stack(outs) if outs else xp.zeros((0, m, N, R), dtype=x.dtype)
    return _result(out, final, R)


def inner(x, y, method: str = "auto") -> ExpansionArray:
    """The inner product, as ``numpy.inner``: the sum over the last axes of x and y (shape
    x.shape[:-1] + y.shape[:-1]); with a 0-d operand, the element-wise product.  ``method`` as in
    :func:`dot`."""
    x, y = operands(x, y)
    if x.ndim == 0 or y.ndim == 0:
        return dot(x, y, method)
    K = x.shape[-1]
    if y.shape[-1] != K:
        raise _not_aligned(x, y, x.ndim - 1, y.ndim - 1)
    xp = xp_of(y.terms)
    Q = math.prod(y.shape[:-1])
    yt = ExpansionArray(xp.ascontiguousarray(xp.swapaxes(y.terms.reshape(Q, K, y.nterms), 0, 1)))
    return _product(_as_matrix(x, math.prod(x.shape[:-1]), K), yt, method).reshape(x.shape[:-1] + y.shape[:-1])


def vdot(x, y, method: str = "auto") -> ExpansionArray:
    """``numpy.vdot`` for real expansions: the dot product of x and y flattened (the same number of
    elements), a 0-d result.  ``method`` as in :func:`dot`."""
    x, y = operands(x, y)
    if x.size != y.size:
        raise ValueError(f"vdot: vectors have different sizes ({x.size} and {y.size})")
    return dot(x.reshape((x.size,)), y.reshape((y.size,)), method)


def tensordot(x, y, axes=2, method: str = "auto") -> ExpansionArray:
    """``numpy.tensordot``: the sum over ``axes`` (an int N: the last N axes of x with the first N of
    y; or a pair of sequences of axes), as one 2-D matrix product.  ``method`` as in :func:`dot`."""
    x, y = operands(x, y)
    if isinstance(axes, (int, np.integer)):
        N = int(axes)
        if N < 0:
            raise ValueError("tensordot: axes must be non-negative")
        ax, ay = list(range(x.ndim - N, x.ndim)), list(range(N))
    else:
        try:
            ax, ay = axes
        except (TypeError, ValueError):
            raise ValueError("tensordot: axes must be an int or a pair of sequences of axes") from None
        ax = [ax] if isinstance(ax, (int, np.integer)) else list(ax)
        ay = [ay] if isinstance(ay, (int, np.integer)) else list(ay)
    if len(ax) != len(ay):
        raise ValueError("tensordot: shape-mismatch for sum (the axes lists differ in length)")
    ax = list(normalize_axes(ax, x.ndim, keep_order=True)) if ax else []
    ay = list(normalize_axes(ay, y.ndim, keep_order=True)) if ay else []
    for a, b in zip(ax, ay):
        if x.shape[a] != y.shape[b]:
            raise ValueError(f"tensordot: shape-mismatch for sum ({x.shape[a]} at axis {a} of x, {y.shape[b]} at "
                             f"axis {b} of y)")
    fx = [a for a in range(x.ndim) if a not in ax]
    fy = [b for b in range(y.ndim) if b not in ay]
    xp = xp_of(x.terms)
    K = math.prod(x.shape[a] for a in ax)
    xt = xp.ascontiguousarray(xp.transpose(x.terms, fx + ax + [x.ndim]))
    yt = xp.ascontiguousarray(xp.transpose(y.terms, ay + fy + [y.ndim]))
    P, Q = math.prod(x.shape[a] for a in fx), math.prod(y.shape[b] for b in fy)
    out = _product(ExpansionArray(xt.reshape(P, K, x.nterms)), ExpansionArray(yt.reshape(K, Q, y.nterms)), method)
    return out.reshape(tuple(x.shape[a] for a in fx) + tuple(y.shape[b] for b in fy))


__all__ = ["sum", "dot", "matmul", "inner", "vdot", "tensordot", "choose_method", "METHODS"]
