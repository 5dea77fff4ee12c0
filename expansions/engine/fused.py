"""The fused CPU engine: each public operation is one compiled loop over blocks of expansions, the
GPU's layout transposed (design decision 14), bit-identical to the NumPy twins.

A block is ``L = simd.LANES`` expansions (8 for float64, 16 for float32: one 64-byte vector).  Its
terms are transposed into a per-thread workspace of rows of L values: row t of an operand holds term t
of the L expansions, so one lane of the warp algorithm (one term of every expansion of the block) is
one vector, and each lane step of the kernel is one vector instruction over the L expansions
(:mod:`expansions.engine.simd`).  The operation, its renormalization and the non-finite rule run on
the rows in turn, and the R result rows are transposed back into the output: one pass over memory.

Why these are the twins' bits:

* every floating-point operation is the twin's, on the same operands in the same order, one IEEE
  rounding each (no fast-math, no contraction: the only FMA is the explicit one of the two-product,
  below); the lane steps are the twins' (:mod:`expansions.cpu.kernels`), each lane update
  ``lane[l] <- f(lane[l], lane[l-1])`` done from the highest lane down, so that every lane reads the
  value its neighbour had before the step, as the twin's columns and a warp's lanes do;
* a data-dependent loop (the fast addition's error rounds, the multiplication's ``propagate``, the
  renormalization's rounds and its sort) runs while some expansion of the block is active, at most
  the twin's bound of rounds; the finished expansions run on with the others, exactly as finished lane
  groups of a warp do on the GPU, which changes none of their bits: the arguments are in
  ``expansions/cuda/add.cuh`` (fast addition) and ``mul.cuh`` (``propagate``), and the
  renormalization computes a finished expansion's round into rows that are then not selected;
* per-expansion decisions are selects on masks: the renormalization's stable sort is an odd-even
  transposition network of compare-exchanges by the GPU's sort key (magnitude bits, NaN last), which
  swaps only strictly out-of-order neighbours and is therefore stable (ties ±a and ±0 keep their
  order, as NumPy's stable argsort does), and runs only when some expansion of the block is out of
  order; VecSumErrBranch keeps a per-expansion output index and writes by selects over the slots the
  block's indices span;
* ulps, sort keys and the non-finite tests are bit operations on the terms (as ``expansion.cuh``),
  not libm calls;
* the two-product: the twins use Dekker's product (float64) and the exact float64 product (float32);
  a hardware FMA gives the same error term wherever that error is exact, which is always for float32
  (the twin rounds the exact error once, as the FMA does) and, for float64, whenever both factors are
  normal or zero, below 2**995, and the sum of their binary exponents lies in [-966, 1000] (the error
  is then a representable multiple of 2**-1070, Dekker's partial products neither overflow nor
  underflow, and both give the exact error; a zero factor gives +0 in both).  The multiplication
  tests this per block and per step (the exponent range of x, the exponent of y_i) and takes the
  twin's Dekker product for the whole block where some expansion is outside the range.

Memory: one workspace per thread (per chunk of blocks), allocated once, 64-byte aligned; nothing is
allocated per block.  Arrays of more than :data:`SERIAL_BELOW` expansions are split into chunks of
blocks over all cores (``prange``).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import get_num_threads, njit, prange
from numba.extending import overload

from .. import bounds
from ..formats import check_terms, format_of
from .dw import _c, _double_word, _dw_div_dw2, _dw_sqrt
from .kernels import OPTIONS, PARALLEL, leading_exponent, operands, terms_array
from .simd import (
    LANES,
    aligned_pointer,
    any_lane,
    fma,
    from_bits,
    gather_column,
    mask_of,
    scatter_column,
    splat,
    to_bits,
    vload,
    vsqrt,
    vstore,
    where,
)

#: Options of the functions called only from compiled code: no Python wrappers.
INNER = {**OPTIONS, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}
#: Arrays of fewer expansions run on one thread (the cost of waking the others is not repaid).
SERIAL_BELOW = 4096
#: Chunks of blocks per thread in the parallel loop (load balance).
CHUNKS_PER_THREAD = 4

#: The operations of the engine's one loop (:func:`_blocks`): the kernels (renormalized or not), the
#: renormalization alone, the Newton operations.
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


def _layout(v):
    """(exponent field mask = bits of +inf, magnitude mask, exponent shift, biased exponent mask, p) of
    the term type of the float vector v, as unsigned integers of its width (compiled only)."""
    raise NotImplementedError


@overload(_layout, inline="always")
def _layout_impl(v):
    if v.dtype.bitwidth == 64:
        return lambda v: (np.uint64(0x7FF0000000000000), np.uint64(0x7FFFFFFFFFFFFFFF), np.uint64(52),
                          np.uint64(0x7FF), np.uint64(53))
    return lambda v: (np.uint32(0x7F800000), np.uint32(0x7FFFFFFF), np.uint32(23), np.uint32(0xFF), np.uint32(24))


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
    ex = splat(to_bits(v), _layout(v)[0])
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
    exp_mask, mag, shift, field, p = _layout(v)
    u = to_bits(v)
    one = splat(u, 1)
    biased = (u >> splat(u, shift)) & splat(u, field)
    subnormal_ulp = one << where(biased == splat(u, 0), splat(u, 0), biased - one)
    normal_ulp = (biased - splat(u, p - 1)) << splat(u, shift)
    small = biased < splat(u, p)
    return where(biased == splat(u, 0), one, where(small, subnormal_ulp, where(small, one, normal_ulp)))


@njit(**INNER)
def sort_key(v):
    """The GPU's sort key (renorm.cuh): larger first; magnitudes by their bits, then NaN."""
    exp_mask, mag, shift, field, p = _layout(v)
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
# the additions (add.cuh)


@njit(**INNER)
def _safe_step(ws, S, E, top, R, t):
    """One step of the safe addition: t enters lane 0 while lanes 1..top 2Sum the error of the lane
    below (lanes above ``top`` hold (+0, +0), which the step maps to (+0, +0)).  Lane R-1's error
    leaves the group (the twin's lane R takes it and nothing reads it), so that lane is the 2Sum's
    addition alone."""
    l = top
    if top == R - 1:
        st(ws, S + l, ld(ws, S + l) + ld(ws, E + l - 1))
        l -= 1
    for k in range(l, 0, -1):
        s, e = two_sum(ld(ws, S + k), ld(ws, E + k - 1))
        st(ws, S + k, s)
        st(ws, E + k, e)
    s, e = two_sum(ld(ws, S), t)
    st(ws, S, s)
    st(ws, E, e)


@njit(**INNER)
def _zero_step(ws, S, E, top, R, z):
    """Step z (0 .. R-3) of the safe addition's zero insertions: lanes 0..z skipped, lanes z+1..top
    2Sum the error of the lane below, then E[z] := +0.  Zero enters lane 0 at step 0, and the lanes'
    errors then become zero from the bottom, one lane per step: in step z lanes 0..z take a zero
    (2Sum(s, +0) = (s, +0), except -0 + +0 = +0, a sign that the final s + (+0) drops; a non-finite
    s stays in the result, where the non-finite rule replaces everything), so skipping them gives
    the twin's bits."""
    zero = splat(ld(ws, S), 0.0)
    l = top
    if top == R - 1 and l > z:
        st(ws, S + l, ld(ws, S + l) + ld(ws, E + l - 1))
        l -= 1
    for k in range(l, z, -1):
        s, e = two_sum(ld(ws, S + k), ld(ws, E + k - 1))
        st(ws, S + k, s)
        st(ws, E + k, e)
    st(ws, E + z, zero)


@njit(**OPTIONS)
def add_safe_block(ws, X, n, Y, m, R, S, E, out):
    """Twin of ``kernels.add_safe`` on a block (Algorithm 1, the twin's lanes as vectors): rows X (n
    terms) + rows Y (m terms) into R rows at ``out``; S, E: R rows of scratch.
    Returns the lanes that the non-finite rule replaced."""
    x0 = ld(ws, X)
    y0 = ld(ws, Y)
    zero = splat(x0, 0.0)
    s, e = two_sum(x0, y0)
    st(ws, S, s)
    st(ws, E, e)
    leading = s
    for l in range(1, R):
        st(ws, S + l, zero)
        st(ws, E + l, zero)
    steps = 0
    for i in range(1, max(n, m)):
        if i < n:
            steps += 1
            _safe_step(ws, S, E, min(steps, R - 1), R, ld(ws, X + i))
        if i < m:
            steps += 1
            _safe_step(ws, S, E, min(steps, R - 1), R, ld(ws, Y + i))
    for z in range(R - 2):
        steps += 1
        _zero_step(ws, S, E, min(steps, R - 1), R, z)
    for l in range(R - 1, 0, -1):
        st(ws, out + l, ld(ws, S + l) + ld(ws, E + l - 1))
    st(ws, out, ld(ws, S) + zero)
    return epilogue_block(ws, out, R, nonfinite_rows(ws, X, n), x0, nonfinite_rows(ws, Y, m), y0, leading)


@njit(**OPTIONS)
def add_fast_block(ws, X, n, Y, m, R, S, E, out):
    """Twin of ``kernels.add_fast`` on a block (Fig. 5): the lane-wise 2Sum, then at most
    R-2 rounds while some expansion of the block has a nonzero shifted error (the others run on: the
    argument of add.cuh), then the errors are added.  Returns the lanes that the non-finite rule
    replaced."""
    x0 = ld(ws, X)
    zero = splat(x0, 0.0)
    for l in range(R):
        a = ld(ws, X + l) if l < n else zero
        b = ld(ws, Y + l) if l < m else zero
        s, e = two_sum(a, b)
        st(ws, S + l, s)
        st(ws, E + l, e)
    leading = ld(ws, S)
    act = ld(ws, E) != zero
    for l in range(1, R - 1):
        act = act | (ld(ws, E + l) != zero)
    for _ in range(R - 2):
        if not any_lane(act):
            break
        act = mask_of(x0, False)
        st(ws, S + R - 1, ld(ws, S + R - 1) + ld(ws, E + R - 2))  # its error leaves the group
        for l in range(R - 2, 0, -1):
            s, e = two_sum(ld(ws, S + l), ld(ws, E + l - 1))
            st(ws, S + l, s)
            st(ws, E + l, e)
            act = act | (e != zero)
        s, e = two_sum(ld(ws, S), zero)
        st(ws, S, s)
        st(ws, E, e)
        act = act | (e != zero)
    for l in range(R - 1, 0, -1):
        st(ws, out + l, ld(ws, S + l) + ld(ws, E + l - 1))
    st(ws, out, ld(ws, S) + zero)
    return epilogue_block(ws, out, R, nonfinite_rows(ws, X, n), x0, nonfinite_rows(ws, Y, m), ld(ws, Y), leading)


# ---------------------------------------------------------------------------------------------
# the multiplication (mul.cuh)


@njit(**OPTIONS)
def propagate_block(ws, S, E, EP, K, QE, QP):
    """The two propagations of a multiplication step, lanes 0..K-1: ``propagate`` of mul.cuh (twin:
    ``kernels._propagate``) of the product errors E, then of the sum errors EP.  A propagation runs
    rounds while some error is nonzero (at most K): 2Sum each lane with its error, the new errors
    shifted up one lane (lane K-1's leave the lanes that reach the result), zero into lane 0.

    Computed lane by lane instead of round by round, with the same 2Sums on the same operands:
    round r has zero errors on lanes 0..r-1 (lane 0 takes a zero each round, and 2Sum(s, +0) = (s,
    +0) with s never -0 here), so lane l takes, in rounds 0..l, its own error and then the errors
    that lane l-1 emitted in rounds 0..l-1, and emits one per round.  Lane l's term after the first
    propagation depends on lanes <= l only, so lane l runs the second one right after, its term in
    a register; rows QE, QP (K each) carry the emitted errors from one lane to the next.  Every
    round is run (no vote), which gives the twin's bits: a round in which an expansion's errors are
    all zero changes none of its terms (the twin's finished groups stand still, the GPU's run on: the
    argument of mul.cuh); a lane whose incoming errors are all +0 in the whole block is skipped.  A
    non-finite term would turn a zero error into a NaN reaching only higher lanes, which reach the
    output after it or never (s moves down one lane per step): the result has a non-finite term
    either way, and the non-finite rule gives the same bits."""
    zero = splat(ld(ws, S), 0.0)
    nothing = to_bits(zero)
    from_e = nothing  # the OR of the bits of the errors lane l-1 emitted (2Sum errors are never -0)
    from_p = nothing
    for l in range(K):
        s = ld(ws, S + l)
        for which in range(2):
            first = ld(ws, (E if which == 0 else EP) + l)
            Q = QE if which == 0 else QP
            incoming = to_bits(first) | (from_e if which == 0 else from_p)
            emitted = nothing
            if l == K - 1:  # the top lane: its errors leave, 2Sum's additions alone
                if any_lane(incoming != nothing):
                    s = s + first
                    for r in range(1, l + 1):
                        s = s + ld(ws, Q + r - 1)
            elif any_lane(incoming != nothing):
                s, t = two_sum(s, first)
                emitted = to_bits(t)
                for r in range(1, l + 1):
                    x = ld(ws, Q + r - 1)  # lane l-1's error of round r-1, replaced by this lane's
                    st(ws, Q + r - 1, t)
                    s, t = two_sum(s, x)
                    emitted = emitted | to_bits(t)
                st(ws, Q + l, t)
            else:  # all zero: s stays, the errors emitted are zero (rows Q + 0 .. l-1 already are)
                st(ws, Q + l, zero)
            if which == 0:
                from_e = emitted
            else:
                from_p = emitted
        st(ws, S + l, s)


def _exponent_prefixes(ws, X, n, R, LO, HI):
    """Rows LO + t, HI + t := the smallest and largest biased exponent of the nonzero terms among
    x_0 .. x_t (rows X, n terms; t < R), as the bits of floats (float64 only; the neutral 3000 and 0
    where those terms are all zero), for the FMA test of the multiplication (compiled only)."""
    raise NotImplementedError


@overload(_exponent_prefixes)
def _exponent_prefixes_impl(ws, X, n, R, LO, HI):
    if ws.dtype.bitwidth == 32:
        return lambda ws, X, n, R, LO, HI: None  # float32: the FMA is always the twin's product

    def impl(ws, X, n, R, LO, HI):
        u = to_bits(ld(ws, X))
        lo = splat(u, 3000)
        hi = splat(u, 0)
        for t in range(R):
            if t < n:
                u = to_bits(ld(ws, X + t))
                ex = (u >> splat(u, 52)) & splat(u, 0x7FF)
                nonzero = (u << splat(u, 1)) != splat(u, 0)
                lo = where(nonzero & (ex < lo), ex, lo)
                hi = where(nonzero & (ex > hi), ex, hi)
            st(ws, LO + t, from_bits(lo))
            st(ws, HI + t, from_bits(hi))

    return impl


#: How a step of the multiplication forms its products x_l * y_i (:func:`_product_mode`).
FMA, DEKKER, DEKKER_SCALED = 0, 1, 2


def _product_mode(yi, ws, LO, HI):
    """How step i forms the products x_l * y_i of the block, the biased exponents of the nonzero x_l
    it multiplies in [lo, hi] (rows LO, HI of :func:`_exponent_prefixes`) (compiled only): FMA where
    the FMA's error is the twin's for every product (always for float32; for float64 both factors
    normal or zero, below 2**995, the sum of their exponents in [-966, 1000]: see the module
    docstring); else DEKKER, the twin's Dekker product as it stands, where no factor exceeds 2**995
    (the twin then scales nothing); else DEKKER_SCALED, the twin's whole formula."""
    raise NotImplementedError


@overload(_product_mode)
def _product_mode_impl(yi, ws, LO, HI):
    if yi.dtype.bitwidth == 32:
        return lambda yi, ws, LO, HI: FMA

    def impl(yi, ws, LO, HI):
        lo = to_bits(ld(ws, LO))
        hi = to_bits(ld(ws, HI))
        u = to_bits(yi)
        ey = (u >> splat(u, 52)) & splat(u, 0x7FF)
        zero_y = (u << splat(u, 1)) == splat(u, 0)
        normal = (ey >= splat(u, 1)) & (ey <= splat(u, 2017)) & (lo >= splat(u, 1)) & (hi <= splat(u, 2017))
        ranged = (lo + ey >= splat(u, 1080)) & (hi + ey <= splat(u, 3046))
        if not any_lane(~(zero_y | (normal & ranged))):
            return FMA
        if not any_lane((hi > splat(u, 2017)) | (ey > splat(u, 2017))):  # every factor below 2**995
            return DEKKER
        return DEKKER_SCALED

    return impl


def _two_prod_twin(a, b):
    """The twin's two-product of vectors where an FMA may differ (``eft.two_prod``: Dekker's product
    with Veltkamp's splitting, an operand above 2**995 scaled down by 2**-28 and the other up by 2**28;
    float32 never needs it) (compiled only)."""
    raise NotImplementedError


@overload(_two_prod_twin)
def _two_prod_twin_impl(a, b):
    if a.dtype.bitwidth == 32:
        def fused(a, b):
            p = a * b
            return p, fma(a, b, -p)

        return fused

    def dekker(a, b):
        p = a * b
        mag = splat(to_bits(a), 0x7FFFFFFFFFFFFFFF)
        big = splat(a, 2.0**995)
        big_a = from_bits(to_bits(a) & mag) > big
        big_b = from_bits(to_bits(b) & mag) > big
        down = splat(a, 2.0**-28)
        up = splat(a, 2.0**28)
        a2 = where(big_a, a * down, where(big_b, a * up, a))
        b2 = where(big_b, b * down, where(big_a, b * up, b))
        ah, al = split(a2)
        bh, bl = split(b2)
        e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl
        return p, e

    return dekker


@njit(**INNER)
def split(a):
    """Veltkamp's splitting of float64 lanes (twin of ``eft._split64``): a = hi + lo, 26 bits each."""
    c = splat(a, 134217729.0)  # 2**27 + 1
    t = a * c
    hi = t - (t - a)
    return hi, a - hi


@njit(**OPTIONS)
def _product_step(ws, X, n, yi, R, S, E, EP, mode, XH, XL):
    """Step i of the multiplication's lanes: 2Prod x_l * y_i, 2Sum it into s_l; E, EP := the product
    and sum errors.  The product by ``mode`` (:func:`_product_mode`); for DEKKER the splittings of
    the x_l are rows XH, XL (made once per multiplication) and y_i's is made once per step."""
    zero = splat(yi, 0.0)
    if mode == DEKKER:
        bh, bl = split(yi)
    else:
        bh, bl = zero, zero
    for l in range(R):
        xl = ld(ws, X + l) if l < n else zero
        p = xl * yi
        if mode == FMA:
            e = fma(xl, yi, -p)
        elif mode == DEKKER:
            ah = ld(ws, XH + l)
            al = ld(ws, XL + l)
            e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl
        else:
            p, e = _two_prod_twin(xl, yi)
        s, ep = two_sum(ld(ws, S + l), p)
        st(ws, S + l, s)
        st(ws, E + l, e)
        st(ws, EP + l, ep)


@njit(**OPTIONS)
def mul_block(ws, X, n, Y, m, R, S, E, EP, out, XH, XL, LO, HI, QE, QP):
    """Twin of ``kernels.mul_truncated`` on a block (Algorithm 2): for i < R-1, the lanes
    2Prod x_l * y_i and 2Sum into the accumulator S, whose lane 0 is output term i; S shifts down a
    lane, and the product and sum errors are propagated; the last term is s_0 + x_0 y_{R-1}.
    S, E, EP, XH, XL, LO, HI, QE, QP: R rows of scratch each; ``out`` must not be X or Y.  Returns the
    lanes that the non-finite rule replaced.

    Only the lanes that reach the result are computed.  Call i + l the position of lane l at step i
    (before the shift): s_0 at step j is output term j (position j), the shift keeps positions, and
    every other transfer goes up (a product error of position q enters position q + 1, a propagated
    error moves up one lane per round): so nothing at a position >= R ever reaches the result, and
    step i computes lanes 0 .. R-1-i only (the twin computes the others and drops them; its extra
    rounds, voted by errors there, leave these lanes as they are, the argument of
    :func:`propagate_block`; a non-finite term at a position < R reaches the output in both, where
    the non-finite rule replaces everything)."""
    x0 = ld(ws, X)
    y0 = ld(ws, Y)
    zero = splat(x0, 0.0)
    leading = x0 * y0
    for l in range(R):
        st(ws, S + l, zero)
    _exponent_prefixes(ws, X, n, R, LO, HI)
    split_rows = False
    for i in range(R - 1):
        top = R - 1 - i  # lanes 0 .. top hold positions i .. R-1
        yi = ld(ws, Y + i) if i < m else zero
        mode = _product_mode(yi, ws, LO + top, HI + top)
        if mode == DEKKER and not split_rows:
            for l in range(R):
                ah, al = split(ld(ws, X + l) if l < n else zero)
                st(ws, XH + l, ah)
                st(ws, XL + l, al)
            split_rows = True
        _product_step(ws, X, n, yi, top + 1, S, E, EP, mode, XH, XL)
        st(ws, out + i, ld(ws, S))
        for l in range(top):
            st(ws, S + l, ld(ws, S + l + 1))
        propagate_block(ws, S, E, EP, top, QE, QP)  # lanes 0 .. top-1 now hold positions i+1 .. R-1
    yi = ld(ws, Y + R - 1) if R - 1 < m else zero
    st(ws, out + R - 1, ld(ws, S) + x0 * yi)
    return epilogue_block(ws, out, R, nonfinite_rows(ws, X, n), x0, nonfinite_rows(ws, Y, m), y0, leading)


# ---------------------------------------------------------------------------------------------
# the renormalization (renorm.cuh)


@njit(**OPTIONS)
def sort_block(ws, A, k):
    """Rows A .. A+k-1 sorted, each expansion of the block on its own, stably by decreasing sort key
    (NumPy's ``argsort(-abs(v), kind="stable")``, NaN last): odd-even transposition, which swaps only
    neighbours whose keys are strictly out of order (so equal keys keep their order), at most k
    phases, stopping once two phases in a row swap nothing in the block; nothing runs when no
    expansion of the block has a key below the next one (``warp_needs_sort`` of renorm.cuh)."""
    prev = sort_key(ld(ws, A))
    need = prev != prev
    for i in range(1, k):
        key = sort_key(ld(ws, A + i))
        need = need | (key > prev)
        prev = key
    if not any_lane(need):
        return
    quiet = 0
    for phase in range(k):
        swapped = need & ~need
        for i in range(phase & 1, k - 1, 2):
            a = ld(ws, A + i)
            b = ld(ws, A + i + 1)
            swap = sort_key(b) > sort_key(a)
            st(ws, A + i, where(swap, b, a))
            st(ws, A + i + 1, where(swap, a, b))
            swapped = swapped | swap
        if any_lane(swapped):
            quiet = 0
        else:
            quiet += 1
            if quiet == 2:
                return


@njit(**INNER)
def _select_slot(ws, dst, lo, hi, j, write, v):
    """Row dst + j := v in the lanes of ``write``, j a per-lane slot in [lo, hi]."""
    for t in range(lo, hi + 1):
        sel = write & (j == splat(j, t))
        st(ws, dst + t, where(sel, v, ld(ws, dst + t)))


@njit(**OPTIONS)
def vec_sum_err_branch_block(ws, e, k, R, dst):
    """Twin of ``kernels._vec_sum_err_branch`` on a block: the k rows at e into R rows at dst, each
    expansion with its own output index j and its own end (``done``).

    While every expansion of the block has advanced at every step (the usual case: each error
    nonzero), all indices are i - 1 at step i and none is done: rj goes to slot i - 1 in every lane,
    no select.  From the first step where some expansion does not advance, each keeps its own index:
    the writes are selects over the slots [lo, hi] that the live indices can hold (hi grows by one
    when some index does, lo when no live index is left at lo)."""
    eps = ld(ws, e)
    zero = splat(eps, 0.0)
    for t in range(R):
        st(ws, dst + t, zero)
    bits = to_bits(eps)
    i = 1
    uniform = True
    while uniform and i < k and i < R:  # every index is i - 1 < R - 1, none done
        rj, eps_new = two_sum(eps, ld(ws, e + i))
        st(ws, dst + i - 1, rj)
        nz = eps_new != zero
        if any_lane(~nz):  # from here on, each expansion has its own index
            eps = where(nz, eps_new, rj)
            bits = splat(bits, i - 1) + where(nz, splat(bits, 1), splat(bits, 0))
            uniform = False
        else:
            eps = eps_new
        i += 1
    if uniform:
        j = splat(bits, i - 1)
        lo = i - 1
    else:
        j = bits
        lo = i - 2
    hi = min(i - 1, R - 1)
    one = splat(j, 1)
    last = splat(j, R - 1)
    done = mask_of(eps, False)
    while i < k:
        rj, eps_new = two_sum(eps, ld(ws, e + i))
        live = ~done
        _select_slot(ws, dst, lo, hi, j, live, rj)
        nz = eps_new != zero
        done = done | (live & nz & (j >= last))
        step = live & ~done & nz
        j = j + where(step, one, j - j)
        eps = where(step, eps_new, where(live & ~nz, rj, eps))
        if any_lane(step) and hi < R - 1:
            hi += 1
        if lo < hi and not any_lane(~done & (j == splat(j, lo))):
            lo += 1
        i += 1
    _select_slot(ws, dst, lo, hi, j, ~done, eps)


@njit(**OPTIONS)
def nonoverlapping_block(ws, r, R):
    """Twin of ``kernels._adjacent_nonoverlapping``: lanes whose R terms are finite and each zero or at
    most ulp of the one before, by the bits (both are nonnegative floats).  Where the term before is
    at least 2**(p-1) times the smallest subnormal (biased exponent >= p), its ulp's bits are its
    exponent field minus (p-1) exponent steps, so |v| <= ulp(prev) reads bits(|v|) + (p-1 steps) <=
    the exponent field of prev; rows with smaller terms before take :func:`ulp_bits`."""
    prev = ld(ws, r)
    exp_mask, mag, shift, field, p = _layout(prev)
    u = to_bits(prev)
    exponent = splat(u, exp_mask)
    magnitude = splat(u, mag)
    steps = splat(u, (p - 1) << shift)
    smallest = splat(u, p << shift)
    nothing = splat(u, 0)
    ok = (u & exponent) != exponent
    for t in range(1, R):
        v = ld(ws, r + t)
        uv = to_bits(v)
        mv = uv & magnitude
        ep = u & exponent
        if any_lane(ep < smallest):
            below = mv <= ulp_bits(prev)
        else:
            below = mv + steps <= ep
        ok = ok & ((uv & exponent) != exponent) & ((mv == nothing) | below)
        prev = v
        u = uv
    return ok


@njit(**OPTIONS)
def renormalize_block(ws, X, k, R, out, SRT, ERR, NEW, xbad):
    """Twin of ``kernels.renormalize`` on a block: at most R rounds of stable sort
    by decreasing magnitude, VecSum from the bottom, VecSumErrBranch from the top, until every
    expansion of the block has ulp-nonoverlapping terms (the finished ones keep their terms: their
    round is computed into NEW and not selected); then the non-finite rule.  X: k input rows (not
    changed; may be ``out``); out: R rows; SRT, ERR: max(k, R) rows of scratch, NEW: R rows; xbad:
    the lanes with a non-finite input term.  The non-finite rule changes nothing where no input term
    is non-finite and every expansion ended nonoverlapping (hence finite): it is skipped then."""
    x0 = ld(ws, X)
    leading = x0
    active = xbad | ~xbad
    src = X
    kk = k
    for rnd in range(R):
        copy_rows(ws, src, kk, SRT)
        sort_block(ws, SRT, kk)
        sv = ld(ws, SRT + kk - 1)
        for i in range(kk - 2, -1, -1):
            sv, e = two_sum(ld(ws, SRT + i), sv)
            st(ws, ERR + i + 1, e)
        st(ws, ERR, sv)
        if rnd == 0:
            leading = sv
            vec_sum_err_branch_block(ws, ERR, kk, R, out)
        else:
            vec_sum_err_branch_block(ws, ERR, kk, R, NEW)
            for t in range(R):
                st(ws, out + t, where(active, ld(ws, NEW + t), ld(ws, out + t)))
        active = active & ~nonoverlapping_block(ws, out, R)
        if not any_lane(active):
            if not any_lane(xbad):
                return
            break
        src = out
        kk = R
    epilogue_block(ws, out, R, xbad, x0, xbad & ~xbad, x0, leading)


# ---------------------------------------------------------------------------------------------
# an operation on a block, renormalized or not


@njit(**INNER)
def _magnitude(v):
    """|v| lane by lane (the sign bit cleared)."""
    u = to_bits(v)
    return from_bits(u & splat(u, _layout(v)[1]))


def _top(v):
    """2**(p-1) as a vector like the float vector v (compiled only)."""
    raise NotImplementedError


@overload(_top, inline="always")
def _top_impl(v):
    top = 2.0 ** (52 if v.dtype.bitwidth == 64 else 23)
    return lambda v: splat(v, top)


@njit(**INNER)
def positional_block(ws, X, n, dst, SRT, ERR, NEW):
    """Twin of ``kernels.positional`` on a block: the first row of the operand to compute with, X
    itself when no lane has finite terms that break ``RN(2**(p-1) |x_t|) <= |x_{t-1}|``, else
    ``dst`` (n rows), holding X with those lanes renormalized to n terms (``renormalize_block``;
    SRT, ERR, NEW: n rows of scratch each).  A few comparisons per term; the renormalization runs
    only for a block that has such a lane."""
    if n < 2:
        return X
    x = ld(ws, X)
    top = _top(x)
    prev = _magnitude(x)
    chain = mask_of(x, True)
    for t in range(1, n):
        a = _magnitude(ld(ws, X + t))
        chain = chain & (top * a <= prev)
        prev = a
    if not any_lane(~chain):  # the common case: no lane to test further
        return X
    fix = ~chain & ~nonfinite_rows(ws, X, n)
    if not any_lane(fix):
        return X
    renormalize_block(ws, X, n, n, dst, SRT, ERR, NEW, fix & ~fix)
    for t in range(n):
        st(ws, dst + t, where(fix, ld(ws, dst + t), ld(ws, X + t)))
    return dst


@njit(**INNER)
def scratch_rows(n, m, R):
    """Rows of scratch that :func:`binary_block` needs for operands of n and m terms into R."""
    return 11 * R + 5 * max(n, m, R)


@njit(**INNER)
def binary_block(op, ws, X, n, Y, m, R, renormalize, out, scratch):
    """Operation ``op`` (ADD_SAFE, ADD_FAST, MUL; RENORMALIZE: X alone) on the block's rows X (n) and
    Y (m) into R rows at ``out``, renormalized in the same pass with ``renormalize`` (then ``out``
    may be X or Y); ``scratch``: the first of :func:`scratch_rows` rows."""
    k = max(n, m, R)
    S, E, EP, T, NEW = scratch, scratch + R, scratch + 2 * R, scratch + 3 * R, scratch + 4 * R
    XH, XL, LO, HI = scratch + 5 * R, scratch + 6 * R, scratch + 7 * R, scratch + 8 * R
    QE, QP = scratch + 9 * R, scratch + 10 * R
    SRT = scratch + 11 * R
    ERR = SRT + k
    FX = ERR + k  # k rows each: the operands of the multiplication made positional, and scratch
    FY = FX + k
    FN = FY + k
    raw = T if renormalize else out
    if op == MUL:
        X = positional_block(ws, X, n, FX, SRT, ERR, FN)
        Y = positional_block(ws, Y, m, FY, SRT, ERR, FN)
        bad = mul_block(ws, X, n, Y, m, R, S, E, EP, raw, XH, XL, LO, HI, QE, QP)
    elif op == ADD_SAFE:
        bad = add_safe_block(ws, X, n, Y, m, R, S, E, raw)
    elif op == ADD_FAST:
        bad = add_fast_block(ws, X, n, Y, m, R, S, E, raw)
    else:
        raw = X
        bad = nonfinite_rows(ws, X, n)
    if renormalize:  # the kernel's output has a non-finite term exactly where its non-finite rule acted
        renormalize_block(ws, raw, R if op != RENORMALIZE else n, R, out, SRT, ERR, NEW, bad)


# ---------------------------------------------------------------------------------------------
# Newton: reciprocal, division, square root (newton.cuh)


@njit(**INNER)
def scale_block(ws, src, n, K, kmin, kmax, dst, F):
    """Twin of ``newton.scale``: rows dst := rows src (n) times 2**k, k = row K (per lane, held as a
    float: exact) clamped to [kmin, kmax], as two products by powers of two (2**(k >> 1), then
    2**(k - (k >> 1))); F: 2 rows of scratch.  dst may be src."""
    L = lanes_of(ws)
    for j in range(L):
        k = min(max(int(ws[K * L + j]), kmin), kmax)
        k1 = k >> 1
        ws[F * L + j] = np.ldexp(1.0, k1)  # a power of two the terms' type holds: exact
        ws[(F + 1) * L + j] = np.ldexp(1.0, k - k1)
    f1 = ld(ws, F)
    f2 = ld(ws, F + 1)
    for t in range(n):
        st(ws, dst + t, (ld(ws, src + t) * f1) * f2)


@njit(**INNER)
def newton_start(ws, A, m, rsqrt, dst):
    """Twin of ``newton.start``: rows dst, dst+1 := the double word DWDivDW2(1, a) of the first two of
    the m rows A (the second 0 for m = 1) made a double word, or with ``rsqrt`` DWDivDW2(1,
    SQRTDWtoDW(a)); lane by lane with the twins' operations (:mod:`expansions.engine.dw`, the
    emulated FMA and two-product)."""
    L = lanes_of(ws)
    for j in range(L):
        a0 = ws[A * L + j]
        h, lo = _double_word(a0, ws[(A + 1) * L + j] if m > 1 else _c(a0, 0.0))
        if rsqrt:
            h, lo = _dw_sqrt(h, lo)
        zh, zl = _dw_div_dw2(_c(h, 1.0), _c(h, 0.0), h, lo)
        ws[dst * L + j] = zh
        ws[(dst + 1) * L + j] = zl


@njit(**INNER)
def finish_block(ws, out, R, xbad, x0, ybad, y0, leading):
    """Twin of ``newton.finish``: the non-finite rule, then a NaN leading result gives (NaN, 0, ...)
    and a zero leading result (leading, 0, ...) with its sign."""
    epilogue_block(ws, out, R, xbad, x0, ybad, y0, leading)
    special = (leading != leading) | (leading == splat(leading, 0.0))
    if not any_lane(special):
        return
    lead = where(leading != leading, splat(leading, np.nan), leading)
    st(ws, out, where(special, lead, ld(ws, out)))
    zero = splat(leading, 0.0)
    for t in range(1, R):
        st(ws, out + t, where(special, zero, ld(ws, out + t)))


# ---------------------------------------------------------------------------------------------
# one operation on a block's rows, and the engine's loop


@njit(**INNER)
def operation_rows(n, m, R):
    """Rows of scratch that :func:`operation_block` needs for operands of n and m terms into R."""
    k = max(n, m, R)
    return 6 * R + 5 + 7 * k + scratch_rows(n, m, R)


@njit(**INNER)
def negate_rows(ws, X, n, out):
    """Rows out .. out+n-1 := rows X .. X+n-1 with the sign flipped (NumPy's negative, exact)."""
    for t in range(n):
        st(ws, out + t, -ld(ws, X + t))


@njit(**INNER)
def operation_block(op, ws, X, n, Y, m, R, renormalize, steps, kmin, kmax, out, base):
    """Operation ``op`` on the block's rows X (n terms) and Y (m terms; pass X for the operations of
    one operand) into R rows at ``out``; rows X and Y are not changed, ``out`` overlaps neither;
    ``base``: the first of :func:`operation_rows` rows of scratch.  The engine's loop
    (:func:`_blocks`) and the programs' loops (:mod:`expansions.programs.loop`) run every operation
    through it.

    ADD_SAFE, ADD_FAST, MUL: the kernel on X and Y, renormalized with ``renormalize`` (MUL on its
    operands made positional: :func:`positional_block` in :func:`binary_block`).  RENORMALIZE: X in R
    terms.  RECIPROCAL, DIV, SQRT: the twins ``newton.reciprocal``, ``div`` and ``sqrt``, then with
    ``renormalize`` the Newton renormalizer of the dispatch (``dispatch._renormalize_keeping_zeros``:
    renormalize, keep the kernel's zero results); ``steps``, ``kmin``, ``kmax``: the twin's
    ``bounds.newton_steps`` and the clamp of ``newton.scale``.

    Newton: the operands are made positional (into scratch rows, where a lane needs it); the operand
    a (the divisor y for DIV) is scaled to A; the iteration starts from the double word
    z = DWDivDW2(1, a) (DWDivDW2(1, SQRTDWtoDW(a)) for SQRT; :func:`newton_start`) and for each r of
    ``steps`` after the first (2, the start) runs, in r terms, each product and sum renormalized:
    v = a z, w = 2 - v, z = z w (the reciprocal), or t = a z, v = t z, w = 3 - v, z = (z w) / 2 (the
    inverse square root); then q = x z (DIV, x scaled) or q = a z (SQRT) in R terms;
    q is scaled back and the non-finite rule and the special cases of ``newton.finish`` applied.
    Every kernel and renormalization runs through the one call of :func:`binary_block` below (its
    code is compiled once)."""
    L = lanes_of(ws)
    k = max(n, m, R)
    A = base  # k rows: the scaled operand of the Newton iteration (divisor, or a)
    A2 = A + k  # k rows: the scaled dividend
    Z = A2 + k  # R rows each: z, scratch, the result, -v
    U = Z + R
    V = U + R
    W = V + R
    Q = W + R
    NEG = Q + R
    C = NEG + R  # one row each: the Newton constant, two exponents, two factors
    K1 = C + 1
    K2 = K1 + 1
    F = K2 + 1
    FX = F + 2  # k rows each: the operands of a Newton operation made positional; FS: 3k rows of scratch
    FY = FX + k
    FS = FY + k
    sc = FS + 3 * k
    newton = op >= RECIPROCAL
    XI, YI = X, Y
    if newton:  # the operands made positional (kernels.positional), into scratch rows where needed
        XI = positional_block(ws, X, n, FX, FS, FS + k, FS + 2 * k)
        if op == DIV:
            YI = positional_block(ws, Y, m, FY, FS, FS + k, FS + 2 * k)
    x0 = ld(ws, XI)
    y0 = ld(ws, YI)
    no = mask_of(x0, False)
    na = m if op == DIV else n  # terms of the operand of the Newton iteration
    per_step = 4 if op == SQRT else 3
    nsteps = len(steps) - 1  # Newton steps after the start
    # sub-operations of a block: the kernel; or the renormalization; or the Newton steps, the final
    # product (DIV, SQRT), then (with ``renormalize``) the renormalization of the scaled-back result
    iteration = nsteps * per_step + (0 if op == RECIPROCAL else 1) if newton else 1
    total = iteration + (1 if newton and renormalize else 0)
    zn = 2  # terms of z
    if newton:
        for j in range(L):
            if op == DIV:
                ws[K1 * L + j] = -leading_exponent(ws[XI * L + j])  # kx
                ws[K2 * L + j] = -leading_exponent(ws[YI * L + j])  # ky
            elif op == SQRT:
                half = leading_exponent(ws[XI * L + j]) >> 1
                ws[K1 * L + j] = half
                ws[K2 * L + j] = -2 * half
            else:
                ws[K1 * L + j] = -leading_exponent(ws[XI * L + j])
        if op == DIV:
            scale_block(ws, YI, m, K2, kmin, kmax, A, F)
            scale_block(ws, XI, n, K1, kmin, kmax, A2, F)
        else:
            scale_block(ws, XI, n, K2 if op == SQRT else K1, kmin, kmax, A, F)
        newton_start(ws, A, na, op == SQRT, Z)
        st(ws, C, splat(ld(ws, A), 3.0 if op == SQRT else 2.0))
    # (q = -1: no sub-operation, only the scale-back below, for a reciprocal whose start is the
    # whole iteration: R = 2)
    for q in range(-1 if newton and iteration == 0 else 0, total):
        if q >= 0:
            # sub-operation q: dst := op(P (np_ rows), Qr (nq rows)) in r terms, renormalized with ren
            kind, P, np_, Qr, nq, r, dst, ren = op, XI, n, YI, m, R, out, renormalize
            s = q // per_step
            sub = q % per_step
            if newton:
                ren = True
                r = steps[s + 1] if s < nsteps else R
                kind, P, np_, Qr, nq, dst = MUL, Z, zn, W, r, Z  # the last of a step: z w
                if q == iteration:  # the Newton renormalizer of the scaled-back result
                    kind, P, np_, dst = RENORMALIZE, Q, R, V
                elif s == nsteps:  # the final product: x z (DIV) or a z (SQRT)
                    P, np_, Qr, nq, dst = (A2 if op == DIV else A), n, Z, R, Q
                elif sub == 0:
                    P, np_, Qr, nq, dst = A, min(r, na), Z, zn, (U if op == SQRT else V)
                elif op == SQRT and sub == 1:
                    P, np_, Qr, nq, dst = U, r, Z, zn, V
                elif sub == per_step - 2:  # the constant minus v: add_safe(c, -v)
                    negate_rows(ws, V, r, NEG)  # the sign flipped, as the twin's -v
                    kind, P, np_, Qr, nq, dst = ADD_SAFE, C, 1, NEG, r, W
            binary_block(kind, ws, P, np_, Qr, nq, r, ren, dst, sc)
            if newton and s < nsteps and sub == per_step - 1:
                if op == SQRT:
                    half = splat(x0, 0.5)
                    for t in range(r):
                        st(ws, Z + t, ld(ws, Z + t) * half)  # exact
                zn = r
        if newton and q == iteration - 1:  # scale back, the non-finite rule, the special cases
            if op == DIV:
                for j in range(L):
                    ws[K2 * L + j] = ws[K2 * L + j] - ws[K1 * L + j]  # ky - kx
                scale_block(ws, Q, R, K2, kmin, kmax, Q, F)
                finish_block(ws, Q, R, nonfinite_rows(ws, XI, n), x0, nonfinite_rows(ws, YI, m), y0, x0 / y0)
            else:
                scale_block(ws, Q if op == SQRT else Z, R, K1, kmin, kmax, Q, F)
                leading = vsqrt(x0) if op == SQRT else splat(x0, 1.0) / x0
                finish_block(ws, Q, R, nonfinite_rows(ws, XI, n), x0, no, x0, leading)
    if newton:
        if renormalize:
            zero = splat(x0, 0.0)
            keep = (ld(ws, Q) == zero) & (ld(ws, V) == zero)
            for t in range(R):
                st(ws, out + t, where(keep, ld(ws, Q + t), ld(ws, V + t)))
        else:
            copy_rows(ws, Q, R, out)


@njit(**INNER)
def _blocks(op, x, y, negate_y, R, renormalize, steps, kmin, kmax, out, lo, hi):
    """Blocks lo .. hi-1 of operation ``op`` on one thread with one workspace: load the block's terms
    (transposed), compute (:func:`operation_block`), store its R result rows.  The kernels
    (ADD_SAFE, ADD_FAST, MUL) and DIV read y, negated with ``negate_y``; the others x alone."""
    count, n = x.shape
    m = y.shape[1]
    L = lanes_of(x)
    binary = op <= MUL or op == DIV
    XI = n - n  # n rows: x (row 0, as a runtime value: the programs' loop calls operation_block with the same types)
    YI = n  # m rows: y
    OUT = n + m  # R rows: the result
    base = OUT + R
    buf, ws = workspace(base + operation_rows(n, m, R), x)
    for b in range(lo, hi):
        first = b * L
        load_block(x, first, count, n, False, ws, XI)
        if binary:
            load_block(y, first, count, m, negate_y, ws, YI)
            operation_block(op, ws, XI, n, YI, m, R, renormalize, steps, kmin, kmax, OUT, base)
        else:
            operation_block(op, ws, XI, n, XI, n, R, renormalize, steps, kmin, kmax, OUT, base)
        store_block(ws, OUT, R, out, first, count)
    buf[0] = 0  # the workspace stays alive until here (ws points into it)


@njit(**PARALLEL)
def _run(op, x, y, negate_y, R, renormalize, steps, kmin, kmax, out, chunks):
    """All blocks of an operation: on this thread (chunks <= 1), else in ``chunks`` chunks of blocks
    over the cores (``prange``)."""
    blocks = (x.shape[0] + lanes_of(x) - 1) // lanes_of(x)
    if chunks <= 1:
        # 0 * blocks: an int64, as in the parallel loop (a literal 0 would cost a second compilation)
        _blocks(op, x, y, negate_y, R, renormalize, steps, kmin, kmax, out, 0 * blocks, blocks)
        return
    for c in prange(chunks):
        _blocks(op, x, y, negate_y, R, renormalize, steps, kmin, kmax, out, c * blocks // chunks,
                (c + 1) * blocks // chunks)


# ---------------------------------------------------------------------------------------------
# the engine's interface


def _chunks(count: int) -> int:
    """Chunks of blocks for the parallel loop: 1 (this thread) below :data:`SERIAL_BELOW` expansions."""
    return 1 if count < SERIAL_BELOW else CHUNKS_PER_THREAD * get_num_threads()


_NO_STEPS = np.zeros(0, dtype=np.int64)


def run(op: int, x, y, R: int, negate_y: bool = False, renormalize: bool = False):
    """Operation ``op`` on the checked (count, n) terms x and (count, m) terms y (the kernels and DIV read
    y; pass x for the others), y negated with ``negate_y`` (the kernels): the (count, R) result, raw
    or with ``renormalize`` renormalized in the same pass (see :func:`_blocks`)."""
    R = check_terms(R)
    out = np.empty((x.shape[0], R), x.dtype)
    if not x.shape[0]:
        return out
    x_in = x
    steps, kmin, kmax = _NO_STEPS, 0, 0
    if op >= RECIPROCAL:
        fmt = format_of(x.dtype)
        steps = _newton_steps(R, x.dtype)
        kmin, kmax = 2 * (fmt.emin - fmt.p + 1), 2 * fmt.emax
    # writable operands, one numba specialization per dtype: a read-only one (a broadcast view, a
    # read-only buffer) is copied (rare; a read-only view of every operand instead, kernels.readonly,
    # would cost a view per operand on every call, a large part of a small operation's time)
    x = x if x.flags.writeable else x.copy()
    y = x if y is x_in else (y if y.flags.writeable else y.copy())
    _run(op, x, y, negate_y, R, renormalize, steps, kmin, kmax, out, _chunks(x.shape[0]))
    return out


@functools.cache
def _newton_steps(R: int, dtype) -> np.ndarray:
    return np.array(bounds.newton_steps(R, format_of(dtype)), dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# the public functions: the twins' names and signatures, with ``renormalize``


def add_safe(x, y, R, renormalize=False):
    """x + y in R terms: Algorithm 1 of Collange et al. (2016); the bits of ``cpu.kernels.add_safe``, or
    with ``renormalize`` those of ``renormalize(add_safe(x, y, R), R)``, in one pass."""
    x, y = operands(x, y)
    return run(ADD_SAFE, x, y, R, False, renormalize)


def add_fast(x, y, R, renormalize=False):
    """x + y in R terms: Fig. 5 of Collange et al. (2016); the bits of ``cpu.kernels.add_fast`` (renormalized
    in the same pass with ``renormalize``)."""
    x, y = operands(x, y)
    return run(ADD_FAST, x, y, R, False, renormalize)


def sub_safe(x, y, R, renormalize=False):
    """x - y as ``add_safe(x, -y, R)`` (y negated as it is read); the bits of ``cpu.kernels.sub_safe``."""
    x, y = operands(x, y)
    return run(ADD_SAFE, x, y, R, True, renormalize)


def sub_fast(x, y, R, renormalize=False):
    """x - y as ``add_fast(x, -y, R)`` (y negated as it is read); the bits of ``cpu.kernels.sub_fast``."""
    x, y = operands(x, y)
    return run(ADD_FAST, x, y, R, True, renormalize)


def mul_truncated(x, y, R, renormalize=False):
    """x * y in R terms: Algorithm 2 of Collange et al. (2016); the bits of ``cpu.kernels.mul_truncated``
    (renormalized in the same pass with ``renormalize``)."""
    x, y = operands(x, y)
    return run(MUL, x, y, R, False, renormalize)


def renormalize(x, R):
    """x (n terms) as R ulp-nonoverlapping terms; the bits of ``cpu.kernels.renormalize``."""
    x = terms_array(x)
    return run(RENORMALIZE, x, x, R, False, True)


def newton_reciprocal(a, R, renormalize=False):
    """1/a in R terms; the bits of ``cpu.newton.reciprocal``, or with ``renormalize`` those of the
    dispatch's Newton renormalizer applied to it (``dispatch._renormalize_keeping_zeros``), in one pass."""
    a = terms_array(a, "a")
    return run(RECIPROCAL, a, a, R, False, renormalize)


def newton_div(x, y, R, renormalize=False):
    """x/y in R terms (y may have one term); the bits of ``cpu.newton.div`` (``renormalize``: as for
    :func:`newton_reciprocal`)."""
    x, y = operands(x, y)
    return run(DIV, x, y, R, False, renormalize)


def newton_sqrt(a, R, renormalize=False):
    """sqrt(a) in R terms; the bits of ``cpu.newton.sqrt`` (``renormalize``: as for
    :func:`newton_reciprocal`)."""
    a = terms_array(a, "a")
    return run(SQRT, a, a, R, False, renormalize)


reciprocal = newton_reciprocal
div = newton_div
sqrt = newton_sqrt
