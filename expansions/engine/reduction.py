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
from .arithmetic import binary_block, scratch_rows
from .blocks import ADD_SAFE, INNER, lanes_of, load_block, store_block, workspace
from .dw import _two_sum
from .fused import SERIAL_BELOW
from .fused import mul_truncated as _mul_truncated
from .kernels import OPTIONS, PARALLEL, readonly, terms_array
from .simd import LANES, fma

#: Blocks of pairs per work item of a level's parallel loop.
ITEM_BLOCKS = 64


@njit(**INNER)
def _pairs_r2(src, dst):
    """The tree's node at R = 2 on the pairs of ``src``, flat (a0, a1, b0, b1, ...), into ``dst``, flat
    (hi, lo, ...) (flat arrays from index 0 with constant strides: LLVM vectorizes the loop), straight-line: the
    safe addition of :func:`expansions.engine.arithmetic.add_safe_block` at R = 2, n = m = 2 (2Sum of the
    leading terms, then a1 and b1 entering lane 0 while lane 1 adds the errors; the last errors
    added), then the renormalization to two terms (two 2Sums, a zero tail made +0:
    ``cpu.kernels.renormalize_pair``, the same bits as ``renormalize`` for a nonzero pair).  These are
    the block engine's operations in its order, so its bits, wherever every operand term is finite
    and the result is finite and nonzero; the number of other pairs (where the non-finite rule or a
    zero's sign would act) is returned, and their blocks run again on the block engine."""
    flagged = 0
    zero = dst.dtype.type(0)  # a +0 of the term type (a Python 0.0 would make float32 terms float64)
    for j in range(src.shape[0] // 4):
        a0, a1, b0, b1 = src[4 * j], src[4 * j + 1], src[4 * j + 2], src[4 * j + 3]
        s, e = _two_sum(a0, b0)
        s1 = zero + e
        s, e = _two_sum(s, a1)
        s1 = s1 + e
        s, e = _two_sum(s, b1)
        s1 = s1 + e
        s = s + zero
        h, lo_ = _two_sum(s, s1)
        t_hi, t_lo = _two_sum(h, lo_)
        dst[2 * j] = t_hi
        dst[2 * j + 1] = t_lo + zero  # -0 + +0 = +0: the renormalization's +0 tail
        check = a0 + a1 + b0 + b1 + t_hi + t_lo
        flagged += ((check - check) != 0) | (t_hi == 0)
    return flagged


def _product_limits(dtype) -> np.ndarray:
    """(2^(p-1), the smallest normal, 2^(emin + 2p + 8), 2^(emax - 39)) of ``dtype``: float64 2^52,
    2^-1022, 2^-908, 2^984 (the engine's FMA test: factors below 2^995, products in [2^-966, 2^1000])."""
    info = np.finfo(dtype)
    return np.array([2.0 ** info.nmant, info.smallest_normal, 2.0 ** (info.minexp + 2 * info.nmant + 10),
                     2.0 ** (info.maxexp - 40)], dtype=dtype)


@njit(**OPTIONS)
def _products_r2(x, y, out, flags, limits):
    """The dot product's elements at R = 2, ``renormalize(mul_truncated(x, y, 2), 2)``, straight-line
    on flat (x0, x1, ...) arrays: Algorithm 2 at R = 2 keeps pi_0 = RN(x0 y0) and pi_1 = RN(RN(RN(x1 y0)
    + e) + RN(x0 y1)), e the exact error of x0 y0 (the product error propagated into position 1; the
    other errors reach position 2 only), then the two 2Sums of the renormalization.  Those are the
    block engine's bits wherever its operations are these: both operands positional
    (``RN(2^(p-1) |x1|) <= |x0|``), e exact as an FMA gives it (both leading terms normal, below
    ``2^(emax - 39)``, their product too and above ``2^(emin + 2p + 8)``: the engine's FMA test, taken
    here on the values with a margin), every term finite, the result nonzero.  Rows where any of
    these fails get flag 1 (the caller runs them on the block engine); returns their count.
    ``limits``: :func:`_product_limits` of the term type."""
    flagged = 0
    zero = out.dtype.type(0)
    top, normal, small, big = limits[0], limits[1], limits[2], limits[3]
    for j in range(x.shape[0] // 2):
        x0, x1, y0, y1 = x[2 * j], x[2 * j + 1], y[2 * j], y[2 * j + 1]
        p0 = x0 * y0
        e = fma(x0, y0, -p0)
        p1 = x1 * y0
        q = x0 * y1
        s = (p1 + e) + q
        h, lo_ = _two_sum(p0, s)
        t_hi, t_lo = _two_sum(h, lo_)
        out[2 * j] = t_hi
        out[2 * j + 1] = t_lo + zero  # the renormalization's +0 tail
        ax0, ay0 = abs(x0), abs(y0)
        ok = (top * abs(x1) <= ax0) & (top * abs(y1) <= ay0)
        ap = abs(p0)
        ok &= (ax0 >= normal) & (ax0 <= big) & (ay0 >= normal) & (ay0 <= big) & (ap >= small) & (ap <= big)
        check = x1 + y1 + t_hi + t_lo
        ok &= ((check - check) == 0) & (t_hi != 0)
        flags[j] = not ok
        flagged += not ok
    return flagged


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
        end_block = min(first_block + ITEM_BLOCKS, (h + L - 1) // L)
        p0, p1 = first_block * L, min(end_block * L, h)  # the item's pairs of row b
        if R == 2 and _pairs_r2(flat[2 * (b * n + 2 * p0):2 * (b * n + 2 * p1)],
                                dst[2 * (b * nn + p0):2 * (b * nn + p1)]) == 0:
            end_block = first_block  # every node of the item done by the straight-line path
        for blk in range(first_block, end_block):
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
    ye = gather(y, ys)
    if R != 2 or xe.shape[1] != 2 or ye.shape[1] != 2:
        return _mul_truncated(xe, ye, R, renormalize=True)
    out = np.empty((xe.shape[0], 2), xe.dtype)
    flags = np.empty(xe.shape[0], np.bool_)
    if _products_r2(readonly(xe).reshape(-1), readonly(ye).reshape(-1), out.reshape(-1), flags,
                    _product_limits(xe.dtype)):
        rows = np.flatnonzero(flags)  # the rows the straight-line path leaves to the block engine
        out[rows] = _mul_truncated(xe[rows], ye[rows], R, renormalize=True)
    return out


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
