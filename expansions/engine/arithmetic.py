"""The additions (``add.cuh``: Algorithm 1 and Fig. 5 of Collange et al. 2016) and the truncated
multiplication (``mul.cuh``: Algorithm 2) on a block of expansions, and :func:`binary_block`, one of
them renormalized in the same pass.

A data-dependent loop (the fast addition's error rounds, the multiplication's ``propagate``) runs
while some expansion of the block is active, at most the twin's bound of rounds; the finished
expansions run on with the others, exactly as finished lane groups of a warp do on the GPU, which
changes none of their bits (the arguments are in ``expansions/cuda/add.cuh`` and ``mul.cuh``).

The two-product: the twins use Dekker's product (float64) and the exact float64 product (float32);
a hardware FMA gives the same error term wherever that error is exact, which is always for float32
(the twin rounds the exact error once, as the FMA does) and, for float64, whenever both factors are
normal or zero, below 2**995, and the sum of their binary exponents lies in [-966, 1000] (the error
is then a representable multiple of 2**-1070, Dekker's partial products neither overflow nor
underflow, and both give the exact error; a zero factor gives +0 in both: the limits are named in
:mod:`expansions.engine.limits`).  The multiplication tests this per block and per step (the
exponent range of x, the exponent of y_i) and takes the twin's Dekker product for the whole block
where some expansion is outside the range.
"""

from __future__ import annotations

from numba import njit
from numba.extending import overload

from .blocks import (
    ADD_FAST,
    ADD_SAFE,
    INNER,
    MUL,
    RENORMALIZE,
    epilogue_block,
    ld,
    nonfinite_rows,
    st,
    two_sum,
)
from .kernels import OPTIONS
from .limits import (
    BIASED_BELOW_BIG,
    FIELD64,
    FMA_BIASED_SUM_MAX,
    FMA_BIASED_SUM_MIN,
    MAGNITUDE64,
    NO_EXPONENT_LO,
    SHIFT64,
    SPLITTER64,
    TWO_PROD_BIG,
    TWO_PROD_DOWN,
    TWO_PROD_UP,
)
from .renorm import positional_block, renormalize_block
from .simd import any_lane, fma, from_bits, mask_of, splat, to_bits, where

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
    x_0 .. x_t (rows X, n terms; t < R), as the bits of floats (float64 only; the neutral
    :data:`~expansions.engine.limits.NO_EXPONENT_LO` and 0 where those terms are all zero), for the
    FMA test of the multiplication (compiled only)."""
    raise NotImplementedError


@overload(_exponent_prefixes)
def _exponent_prefixes_impl(ws, X, n, R, LO, HI):
    if ws.dtype.bitwidth == 32:
        return lambda ws, X, n, R, LO, HI: None  # float32: the FMA is always the twin's product

    def impl(ws, X, n, R, LO, HI):
        u = to_bits(ld(ws, X))
        lo = splat(u, NO_EXPONENT_LO)
        hi = splat(u, 0)
        for t in range(R):
            if t < n:
                u = to_bits(ld(ws, X + t))
                ex = (u >> splat(u, SHIFT64)) & splat(u, FIELD64)
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
        ey = (u >> splat(u, SHIFT64)) & splat(u, FIELD64)
        zero_y = (u << splat(u, 1)) == splat(u, 0)
        below = splat(u, BIASED_BELOW_BIG)  # a factor below 2**995 (biased 2017)
        normal = (ey >= splat(u, 1)) & (ey <= below) & (lo >= splat(u, 1)) & (hi <= below)
        ranged = (lo + ey >= splat(u, FMA_BIASED_SUM_MIN)) & (hi + ey <= splat(u, FMA_BIASED_SUM_MAX))
        if not any_lane(~(zero_y | (normal & ranged))):
            return FMA
        if not any_lane((hi > below) | (ey > below)):  # every factor below 2**995
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
        mag = splat(to_bits(a), MAGNITUDE64)
        big = splat(a, TWO_PROD_BIG)
        big_a = from_bits(to_bits(a) & mag) > big
        big_b = from_bits(to_bits(b) & mag) > big
        down = splat(a, TWO_PROD_DOWN)
        up = splat(a, TWO_PROD_UP)
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
    c = splat(a, SPLITTER64)  # 2**27 + 1
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
# an operation on a block, renormalized or not


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
