"""Compiled twin of :mod:`expansions.cpu.reduce`: sums and dot products of expansions along the
canonical pairwise tree "adjacent pairs, odd last carried" (numba, nopython).

:func:`reduce_pass` is the twin's pass (the kernel ``reduce_body`` of ``expansions/cuda/reduce.cuh``):
each aligned chunk of C = 2**k elements of a row is reduced with a binary-counter stack, one chunk
per loop iteration here (a ``prange`` over blocks of chunks), its nodes
``renormalize(add_safe(a, b, R), R)`` and, for a dot product, its elements
``renormalize(mul_truncated(x, y, R), R)``, computed by the row functions of
:mod:`expansions.engine.kernels`, which give the twin's bits.  :func:`reduce` repeats passes on the
partials until one element per row is left.  Aligned power-of-two chunks make each pass return a level
of the canonical tree (the proof is at the top of ``reduce.cuh``), so the result does not depend on
the chunk sizes: :func:`engine_chunk` chooses large chunks (few passes, no wide temporaries), and the
bits are those of the twin with its own chunks.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..cpu.reduce import _chunk_of, check_addressing, check_chunk, chunk_levels
from ..formats import check_terms
from .kernels import OPTIONS, PARALLEL, add_safe_row, mul_row, readonly, renormalize_row, terms_array

#: Chunks (lane groups) per block of the parallel loop: scratch is allocated once per block.
GROUP_BLOCK = 16
#: :func:`engine_chunk` keeps at least this many chunks in a pass when the rows are long enough.
MIN_GROUPS = 64
#: Rows of at most this many elements are reduced in one chunk whatever their number.
SPLIT_ABOVE = 256


@njit(**OPTIONS)
def node_row(a, b, R, out, ws):
    """Twin of ``reduce.node``: ``renormalize(add_safe(a, b, R), R)`` into out (may be b)."""
    add_safe_row(a, R, b, R, False, R, ws[3], ws[4], ws[5])
    renormalize_row(ws[3], R, R, out, ws[0], ws[1], ws[2])


@njit(**OPTIONS)
def product_row(x, y, m, R, out, ws):
    """Twin of ``reduce.product``: ``renormalize(mul_truncated(x, y, R), R)`` into out (not x or y)."""
    mul_row(x, R, y, m, R, ws[3], ws[4], ws[5], ws[6])
    renormalize_row(ws[3], R, R, out, ws[0], ws[1], ws[2])


@njit(**PARALLEL)
def _pass_kernel(x, y, dot, batch, n, n2, xs, ys, R, C, out):
    chunks = (n + C - 1) // C
    G = batch * chunks
    L = 1
    while (1 << L) <= C:  # chunk_levels(C): C.bit_length()
        L += 1
    m_y = y.shape[1]
    width = max(R, m_y)
    blocks = (G + GROUP_BLOCK - 1) // GROUP_BLOCK
    for blk in prange(blocks):
        ws = np.empty((7, width), x.dtype)
        slot = np.empty((L, R), x.dtype)
        carry = np.empty(R, x.dtype)
        for g in range(blk * GROUP_BLOCK, min(G, (blk + 1) * GROUP_BLOCK)):
            b = g // chunks
            first = (g - b * chunks) * C
            b1 = b // n2
            b2 = b - b1 * n2
            xbase = b1 * xs[0] + b2 * xs[1]
            ybase = b1 * ys[0] + b2 * ys[1]
            m = min(n - first, C)
            for j in range(m):
                e = first + j
                if dot:
                    product_row(x[xbase + e * xs[2]], y[ybase + e * ys[2]], m_y, R, carry, ws)
                else:
                    carry[:] = x[xbase + e * xs[2]]
                level = 0
                while level < L - 1 and (j >> level) & 1:
                    node_row(slot[level], carry, R, carry, ws)
                    level += 1
                slot[level, :] = carry
            acc = out[g]
            have = False
            for level in range(L):
                if (m >> level) & 1:
                    if have:
                        node_row(slot[level], acc, R, acc, ws)
                    else:
                        acc[:] = slot[level]
                    have = True


def reduce_pass(x, batch, n, n2, xs, R, C, y=None, ys=None):
    """One pass of the reduction, with the arguments, result and bits of ``cpu.reduce.reduce_pass``:
    (batch * ceil(n / C), R), row ``b * chunks + c`` the canonical tree of chunk c of row b (of the
    products x * y with ``y``).  x: (count, R) expansions; y: (count', m) expansions."""
    R = check_terms(R)
    C = check_chunk(C)
    x = terms_array(x, "x")
    if x.shape[1] != R:
        raise ValueError(f"x: the reduced expansions must have R = {R} terms, got {x.shape[1]}")
    n, batch, n2 = int(n), int(batch), int(n2)
    check_addressing(x.shape[0], batch, n, n2, xs, "x")
    dot = y is not None
    if dot:
        y = terms_array(y, "y")
        if y.dtype != x.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
        check_addressing(y.shape[0], batch, n, n2, ys, "y")
    else:
        y, ys = x, (0, 0, 0)
    chunks = -(-n // C)
    out = np.zeros((batch * chunks, R), x.dtype)
    if batch * chunks:
        _pass_kernel(readonly(x), readonly(y), dot, batch, n, n2, np.array(xs, dtype=np.int64),
                     np.array(ys, dtype=np.int64), R, C, out)
    return out


def engine_chunk(batch: int, n: int) -> int:
    """The chunk size of a pass when none is given: the whole row rounded up to a power of two (one
    pass), except for few long rows (batch < :data:`MIN_GROUPS`, n > :data:`SPLIT_ABOVE`), cut into
    about ``MIN_GROUPS / batch`` chunks each, so that a pass has chunks for every core."""
    target = 1 if batch >= MIN_GROUPS or n <= SPLIT_ABOVE else -(-MIN_GROUPS // batch)
    C = 2
    while C * target < n:
        C *= 2
    return C


def reduce(x, batch, n, R, n2=1, xs=None, y=None, ys=None, chunk=None):
    """The canonical tree of each of ``batch`` rows of ``n`` elements: (batch, R); the arguments and bits
    of ``cpu.reduce.reduce`` (``chunk`` None: :func:`engine_chunk` for each pass, which changes no bit).
    n = 0 gives +0; n = 1 gives the element itself (the product, with ``y``)."""
    R = check_terms(R)
    batch, n = int(batch), int(n)
    if xs is None:
        xs, n2 = (n, 0, 1), 1
    if y is not None and ys is None:
        raise ValueError("ys (the strides of y) must be given with y")
    if n == 0 or batch == 0:
        return np.zeros((batch, R), dtype=terms_array(x, "x").dtype)
    C = check_chunk(engine_chunk(batch, n) if chunk is None else _chunk_of(chunk, 0))
    out = reduce_pass(x, batch, n, n2, xs, R, C, y, ys)
    n, k = -(-n // C), 1
    while n > 1:
        C = check_chunk(engine_chunk(batch, n) if chunk is None else _chunk_of(chunk, k))
        out = reduce_pass(out, batch, n, 1, (n, 0, 1), R, C)
        n, k = -(-n // C), k + 1
    return out


__all__ = ["reduce_pass", "reduce", "engine_chunk", "chunk_levels"]
