"""Compiled twin of :mod:`expansions.cpu.reduce`: sums and dot products of expansions along the
canonical pairwise tree "adjacent pairs, odd last carried", on the block engine of
:mod:`expansions.engine.fused` (numba, nopython).

The tree is computed level by level, each level one pass of the block engine: element j of the next
level of a row is ``node(a[2j], a[2j+1]) = renormalize(add_safe(a, b, R), R)``, an odd last element
carried unchanged (:func:`_level`: the pairs of a row are its first 2h elements seen as h rows of 2R
terms, so each block of L pairs is loaded as one block of x and y and added by the fused safe
addition with its renormalization in the same pass).  A dot product's elements are first the
products ``renormalize(mul_truncated(x, y, R), R)``, one pass of the fused multiplication.  These are
the definitions of the twin's node and product, and the fused operations give the twins' bits
(``tests/test_engine.py``), so every level is the twin's level; the twin's passes (aligned power-of-two
chunks, a binary-counter stack per chunk: the kernel ``reduce_body`` of
``expansions/cuda/reduce.cuh``) return levels of the same tree, so :func:`reduce_pass` with chunk C is
log2(C) levels here, and :func:`reduce` all of them: the bits of the twin and of the GPU.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

from ..cpu.reduce import check_addressing, check_chunk, chunk_levels
from ..formats import check_terms
from .fused import (
    ADD_SAFE,
    INNER,
    SERIAL_BELOW,
    binary_block,
    lanes_of,
    load_block,
    scratch_rows,
    store_block,
    workspace,
)
from .fused import mul_truncated as _mul_truncated
from .kernels import PARALLEL, readonly, terms_array
from .simd import LANES

#: Blocks of pairs per work item of a level's parallel loop.
ITEM_BLOCKS = 64


@njit(**INNER)
def _level_items(x, batch, n, R, out, items, lo, hi):
    """Work items lo .. hi-1 of a level (see :func:`_level`) on this thread, with one workspace."""
    h = n // 2
    nn = n - h
    L = lanes_of(x)
    flat = x.reshape(-1)
    dst = out.reshape(-1)
    buf, ws = workspace(3 * R + scratch_rows(R, R, R), x)
    for i in range(lo, hi):
        b = i // items
        pairs = flat[b * n * R:(b * n + 2 * h) * R].reshape((h, 2 * R))
        res = dst[b * nn * R:(b * nn + h) * R].reshape((h, R))
        first_block = (i - b * items) * ITEM_BLOCKS
        for blk in range(first_block, min(first_block + ITEM_BLOCKS, (h + L - 1) // L)):
            first = blk * L
            load_block(pairs, first, h, 2 * R, False, ws, 0)  # rows 0 .. R-1: a[2j], R .. 2R-1: a[2j+1]
            binary_block(ADD_SAFE, ws, 0, R, R, R, R, True, 2 * R, 3 * R)
            store_block(ws, 2 * R, R, res, first, h)
        if nn > h and i == b * items:  # the odd last element, carried
            for t in range(R):
                out[b * nn + h, t] = x[b * n + n - 1, t]
    buf[0] = 0  # the workspace stays alive until here (ws points into it)


@njit(**PARALLEL)
def _level(x, batch, n, R, out, items, chunks):
    """One level of the canonical tree of ``batch`` rows of ``n`` elements: x (batch * n, R) into out
    (batch * ceil(n/2), R).  The h = n // 2 pairs of row b, its first 2h elements, are h rows of 2R
    terms (a view of x's memory), added by blocks of L pairs; work item i is ITEM_BLOCKS blocks of one
    row, ``items`` per row, run in ``chunks`` chunks over the cores (1: on this thread)."""
    total = batch * items
    if chunks <= 1:
        _level_items(x, batch, n, R, out, items, 0 * total, total)
        return
    for c in prange(chunks):
        _level_items(x, batch, n, R, out, items, c * total // chunks, (c + 1) * total // chunks)


def _levels(x, batch: int, n: int, R: int, count: int):
    """``count`` levels of the canonical tree of rows of n elements of x (batch * n, R) C-contiguous:
    (the level's array (batch * n', R), n')."""
    for _ in range(count):
        if n <= 1:
            break
        h = n // 2
        nn = n - h
        out = np.empty((batch * nn, R), x.dtype)
        blocks = -(-h // LANES[x.dtype.itemsize * 8])
        items = -(-blocks // ITEM_BLOCKS)
        chunks = 1 if batch * h < SERIAL_BELOW else min(batch * items, 4 * get_num_threads())
        _level(readonly(x), batch, n, R, out, items, chunks)
        x, n = out, nn
    return x, n


def _elements(x, batch, n, n2, xs, R, y, ys):
    """The row elements (batch * n, R), C-contiguous: x's expansions as addressed (a copy unless they
    are already the rows in order), or the products of x's and y's (one fused pass)."""
    def gather(a, strides):
        s1, s2, sj = (int(s) for s in strides)
        b = np.arange(batch)
        base = (b // n2) * s1 + (b % n2) * s2
        if (sj == 1 or n == 1) and (batch == 1 or bool((np.diff(base) == n).all())):
            return a[base[0]:base[0] + batch * n]  # the rows in order: a view, no copy
        return np.ascontiguousarray(a[(base[:, None] + np.arange(n)[None, :] * sj).reshape(-1)])

    xe = gather(x, xs)
    if y is None:
        return xe
    return _mul_truncated(xe, gather(y, ys), R, renormalize=True)


def _check(x, batch, n, n2, xs, R, y, ys):
    R = check_terms(R)
    x = terms_array(x, "x")
    if x.shape[1] != R:
        raise ValueError(f"x: the reduced expansions must have R = {R} terms, got {x.shape[1]}")
    n, batch, n2 = int(n), int(batch), int(n2)
    check_addressing(x.shape[0], batch, n, n2, xs, "x")
    if y is not None:
        y = terms_array(y, "y")
        if y.dtype != x.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
        check_addressing(y.shape[0], batch, n, n2, ys, "y")
    return x, batch, n, n2, R, y


def reduce_pass(x, batch, n, n2, xs, R, C, y=None, ys=None):
    """One pass of the reduction, with the arguments, result and bits of ``cpu.reduce.reduce_pass``:
    (batch * ceil(n / C), R), row ``b * chunks + c`` the canonical tree of chunk c of row b (of the
    products x * y with ``y``): log2(C) levels.  x: (count, R) expansions; y: (count', m) expansions."""
    x, batch, n, n2, R, y = _check(x, batch, n, n2, xs, R, y, ys)
    C = check_chunk(C)
    if batch * n == 0:
        return np.zeros((batch * -(-n // C), R), x.dtype)
    out, _ = _levels(_elements(x, batch, n, n2, xs, R, y, ys), batch, n, R, chunk_levels(C) - 1)
    return out


def reduce(x, batch, n, R, n2=1, xs=None, y=None, ys=None, chunk=None):
    """The canonical tree of each of ``batch`` rows of ``n`` elements: (batch, R); the arguments and bits
    of ``cpu.reduce.reduce`` (``chunk`` is accepted for the twin's signature and changes no bit: the
    levels run one by one).  n = 0 gives +0; n = 1 gives the element itself (the product, with ``y``)."""
    if xs is None:
        xs, n2 = (int(n), 0, 1), 1
    if y is not None and ys is None:
        raise ValueError("ys (the strides of y) must be given with y")
    if int(n) == 0 or int(batch) == 0:  # nothing is addressed (as the twin: no addressing check)
        return np.zeros((int(batch), check_terms(R)), dtype=terms_array(x, "x").dtype)
    x, batch, n, n2, R, y = _check(x, batch, n, n2, xs, R, y, ys)
    out, _ = _levels(_elements(x, batch, n, n2, xs, R, y, ys), batch, n, R, n.bit_length())
    return out


__all__ = ["reduce_pass", "reduce", "chunk_levels"]
