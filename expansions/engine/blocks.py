"""The block engine's primitives: a block is ``L = simd.LANES`` expansions (8 for float64, 16 for
float32: one 64-byte vector) whose terms are transposed into a per-thread workspace of rows of L
values (row t of an operand holds term t of the L expansions), so that each lane step of the GPU's
algorithm is one vector instruction over the L expansions (:mod:`expansions.engine.simd`).

Here: the operations' numbers, the term type's constants, the workspace and its rows (loads,
stores, copies), the bit predicates of ``expansion.cuh`` (finite, ulp, the sort key: bit operations
on the terms, not libm calls) and the non-finite rule.  The operations on blocks build on these:
:mod:`expansions.engine.renorm` (the renormalization), :mod:`expansions.engine.arithmetic` (the
additions and the multiplication), :mod:`expansions.engine.newton` (reciprocal, division, square
root), and :mod:`expansions.engine.fused` runs them as one loop over blocks.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import overload

from .kernels import OPTIONS
from .limits import LAYOUT32, LAYOUT64
from .simd import (
    LANES,
    aligned_pointer,
    any_lane,
    from_bits,
    gather_column,
    scatter_column,
    splat,
    to_bits,
    vload,
    vstore,
    where,
)

#: Options of the functions called only from compiled code: no Python wrappers.
INNER = {**OPTIONS, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}

#: The operations of the engine's one loop (:func:`expansions.engine.fused.operation_block`): the
#: kernels (renormalized or not), the renormalization alone, the Newton operations.
ADD_SAFE, ADD_FAST, MUL, RENORMALIZE, RECIPROCAL, DIV, SQRT = range(7)


# ---------------------------------------------------------------------------------------------
# compile-time constants of the term type


def lanes_of(a):
    """Expansions per block (the vector width) for the float array or vector ``a`` (compiled only)."""
    raise NotImplementedError


@overload(lanes_of, inline="always")
def _lanes_of_impl(a):
    n = LANES[a.dtype.bitwidth]  # a float array, a pointer to floats or a vector
    return lambda a: n


def term_layout(v):
    """(exponent field mask = bits of +inf, magnitude mask, exponent shift, biased exponent mask, p) of
    the term type of the float vector v, as unsigned integers of its width (compiled only)."""
    raise NotImplementedError


@overload(term_layout, inline="always")
def _term_layout_impl(v):
    if v.dtype.bitwidth == 64:
        e, m, s, f, p = LAYOUT64
        return lambda v: (np.uint64(e), np.uint64(m), np.uint64(s), np.uint64(f), np.uint64(p))
    e, m, s, f, p = LAYOUT32
    return lambda v: (np.uint32(e), np.uint32(m), np.uint32(s), np.uint32(f), np.uint32(p))


@njit(**INNER)
def workspace(rows, like):
    """A per-thread scratch of ``rows`` rows of L terms of the type of the array ``like``: (the array, which
    the caller keeps alive, and a pointer to its first row, aligned to 64 bytes: one vector per row,
    no load across two cache lines).  The block functions take the pointer: a pointer, unlike an
    array, carries no reference count to update at every call."""
    L = lanes_of(like)
    buf = np.empty((rows + 1) * L, like.dtype)
    return buf, aligned_pointer(buf)


@njit(**INNER)
def two_sum(a, b):
    """Knuth's 2Sum on vectors, lane by lane (twin: ``eft.two_sum``; the same six operations)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


# ---------------------------------------------------------------------------------------------
# rows of the workspace


@njit(**INNER)
def ld(ws, r):
    """Row r: term r (of some operand) of the L expansions of the block."""
    return vload(ws, r * lanes_of(ws))


@njit(**INNER)
def st(ws, r, v):
    vstore(ws, r * lanes_of(ws), v)


@njit(**INNER)
def load_block(a, first, count, n, negate, ws, row):
    """Rows row .. row+n-1 := the n terms of expansions first .. first+L-1 of a (count, n), negated
    with ``negate`` (NumPy's negative: the sign flipped); +0 past ``count`` (those expansions compute
    on zeros, as the GPU's groups past the end, and are not stored).  One gather per term."""
    for t in range(n):
        st(ws, row + t, gather_column(a, first, t, count, negate))


@njit(**INNER)
def splat_block(a, n, ws, row):
    """Rows row .. row+n-1 := the n terms of a[0] in every lane: an operand of one element (a scalar,
    a 0-d expansion) broadcast to the block, loaded once and read by every block."""
    for t in range(n):
        st(ws, row + t, splat(ld(ws, row + t), a[0, t]))


@njit(**INNER)
def store_block(ws, row, R, out, first, count):
    """out[first + j, t] := row row+t, lane j, for the expansions of the block below ``count``."""
    for t in range(R):
        scatter_column(out, first, t, count, ld(ws, row + t))


@njit(**INNER)
def copy_rows(ws, src, n, dst):
    for t in range(n):
        st(ws, dst + t, ld(ws, src + t))


# ---------------------------------------------------------------------------------------------
# bit predicates (expansion.cuh)


@njit(**INNER)
def is_finite(v):
    """Lanes that are finite (exponent field not all ones)."""
    ex = splat(to_bits(v), term_layout(v)[0])
    return (to_bits(v) & ex) != ex


@njit(**INNER)
def nonfinite_rows(ws, row, n):
    """Lanes with an infinite or NaN term among rows row .. row+n-1."""
    bad = ~is_finite(ld(ws, row))
    for t in range(1, n):
        bad = bad | ~is_finite(ld(ws, row + t))
    return bad


@njit(**INNER)
def ulp_bits(v):
    """The bits of Goldberg's ulp of each (finite) lane: 2**(e-p+1) for 2**e <= |v| < 2**(e+1), the
    smallest subnormal for zeros and subnormals (``ulp`` of expansion.cuh; twin: kernels.ulp)."""
    exp_mask, mag, shift, field, p = term_layout(v)
    u = to_bits(v)
    one = splat(u, 1)
    biased = (u >> splat(u, shift)) & splat(u, field)
    subnormal_ulp = one << where(biased == splat(u, 0), splat(u, 0), biased - one)  # 1 for biased 0
    normal_ulp = (biased - splat(u, p - 1)) << splat(u, shift)
    return where(biased < splat(u, p), subnormal_ulp, normal_ulp)


@njit(**INNER)
def sort_key(v):
    """The GPU's sort key (renorm.cuh): larger first; magnitudes by their bits, then NaN."""
    exp_mask, mag, shift, field, p = term_layout(v)
    m = to_bits(v) & splat(to_bits(v), mag)
    return where(m > splat(m, exp_mask), splat(m, 1), m + splat(m, 2))


# ---------------------------------------------------------------------------------------------
# the non-finite rule


@njit(**OPTIONS)
def epilogue_block(ws, out, R, xbad, x0, ybad, y0, leading):
    """Twin of ``kernels.nonfinite_epilogue`` on the block's R rows at ``out`` (one operand: pass
    ``ybad`` all false): lanes with a non-finite operand term get (w, 0, ..., 0), w = leading or NaN
    where that operand's leading term is finite; else lanes with a non-finite result term get
    (±inf, 0, ..., 0) with the sign of ``leading < 0``.  NaN is the canonical quiet NaN.  Returns the
    lanes so replaced (their term 0 is not finite)."""
    anybad = xbad | ybad
    fix = anybad | nonfinite_rows(ws, out, R)
    if not any_lane(fix):
        return fix
    nan = splat(x0, np.nan)
    inf = splat(x0, np.inf)
    w = where(xbad & is_finite(x0), nan, leading)
    w = where(ybad & is_finite(y0), nan, w)
    w = where(anybad, w, where(leading < splat(x0, 0.0), -inf, inf))
    w = where(w != w, nan, w)
    st(ws, out, where(fix, w, ld(ws, out)))
    zero = splat(x0, 0.0)
    for t in range(1, R):
        st(ws, out + t, where(fix, zero, ld(ws, out + t)))
    return fix



# ---------------------------------------------------------------------------------------------
# lane-wise helpers


@njit(**INNER)
def magnitude(v):
    """|v| lane by lane (the sign bit cleared)."""
    u = to_bits(v)
    return from_bits(u & splat(u, term_layout(v)[1]))


def top_power(v):
    """2**(p-1) as a vector like the float vector v (compiled only)."""
    raise NotImplementedError


@overload(top_power, inline="always")
def _top_power_impl(v):
    top = 2.0 ** ((LAYOUT64 if v.dtype.bitwidth == 64 else LAYOUT32)[4] - 1)
    return lambda v: splat(v, top)



@njit(**INNER)
def negate_rows(ws, X, n, out):
    """Rows out .. out+n-1 := rows X .. X+n-1 with the sign flipped (NumPy's negative, exact)."""
    for t in range(n):
        st(ws, out + t, -ld(ws, X + t))

