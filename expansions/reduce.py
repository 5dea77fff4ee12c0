"""Reductions of expansion arrays: :func:`sum`, :func:`dot`, :func:`matmul`.

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


def dot(x, y) -> ExpansionArray:
    """The dot product, as ``numpy.dot``: 1-D with 1-D is the inner product (a 0-d result); 2-D with
    2-D the matrix product; N-D with 1-D sums over the last axes; N-D with M-D (M >= 2) sums over the
    last axis of x and the second-to-last of y; with a 0-d operand, the element-wise product.  Each
    product is ``renormalize(mul_truncated(x_i, y_i))`` and the sums use the canonical pairwise tree.
    Operands that are not ExpansionArrays are converted to the other's terms, dtype and device.
    Bound: :func:`expansions.bounds.dot`."""
    x, y = operands(x, y)
    xp = xp_of(x.terms)
    if x.ndim == 0 or y.ndim == 0:  # element-wise product: rows of one element, the scalar has stride 0
        shape = y.shape if x.ndim == 0 else x.shape
        N = math.prod(shape)
        return _dot_rows(x, y, shape, N, 1, 1, (0 if x.ndim == 0 else 1, 0, 0), (0 if y.ndim == 0 else 1, 0, 0))
    K = x.shape[-1]
    P = math.prod(x.shape[:-1])
    if y.ndim == 1:
        if y.shape[0] != K:
            raise _not_aligned(x, y, x.ndim - 1, 0)
        # row b = b1 (x's leading index): x at b*K + j, y at j
        return _dot_rows(x, y, x.shape[:-1], P, K, 1, (K, 0, 1), (0, 0, 1))
    if y.shape[-2] != K:
        raise _not_aligned(x, y, x.ndim - 1, y.ndim - 2)
    M = y.shape[-1]
    Q = math.prod(y.shape[:-2])
    out_shape = x.shape[:-1] + y.shape[:-2] + (M,)
    if Q == 1:  # row b = (p, l): x at p*K + j, y at j*M + l
        return _dot_rows(x, y, out_shape, P * M, K, M, (K, 0, 1), (0, 1, M))
    # stacked y: its last two axes swapped (one copy), so that y[q, :, l] is contiguous at (q*M + l)*K
    yt = xp.ascontiguousarray(xp.swapaxes(y.terms, -2, -3)).reshape(-1, y.nterms)
    return _dot_rows(x, yt, out_shape, P * Q * M, K, Q * M, (K, 0, 1), (0, K, 1))


def matmul(x, y) -> ExpansionArray:
    """The matrix product, as ``numpy.matmul`` (the ``@`` operator): (..., m, k) @ (..., k, n), the
    batch dimensions broadcast; a 1-D x is a row (k,) -> (1, k) and a 1-D y a column (k,) -> (k, 1),
    the added axis removed from the result; 0-d operands are an error.  Products and sums as in
    :func:`dot`.  Bound: :func:`expansions.bounds.dot` with n = k."""
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
        return _dot_rows(x2, y2, final, rows * N, K, N, (K, 0, 1), (0, 1, N))
    # batched y: one (m, K) @ (K, N) per batch index
    xb = xp.broadcast_to(x2.terms, batch + (m, K, R))
    yb = xp.broadcast_to(y2.terms, batch + (K, N, R))
    outs = []
    for idx in np.ndindex(*batch):
        xi = ExpansionArray(xp.ascontiguousarray(xb[idx]))
        yi = ExpansionArray(xp.ascontiguousarray(yb[idx]))
        outs.append(_dot_rows(xi, yi, (m, N), m * N, K, N, (K, 0, 1), (0, 1, N)).terms)
    out = xp.stack(outs) if outs else xp.zeros((0, m, N, R), dtype=x.dtype)
    return _result(out, final, R)


__all__ = ["sum", "dot", "matmul"]
