"""The renormalization on a block of expansions (``renorm.cuh``; twin: ``kernels.renormalize``): at
most R rounds of a stable sort by decreasing magnitude, VecSum from the bottom and VecSumErrBranch
from the top, until every expansion of the block has ulp-nonoverlapping terms; and
:func:`positional_block`, the operands of the multiplication and the Newton operations made
positional (``kernels.positional``).

Per-expansion decisions are selects on masks: the stable sort is an odd-even transposition network
of compare-exchanges by the GPU's sort key (magnitude bits, NaN last), which swaps only strictly
out-of-order neighbours and is therefore stable (ties ±a and ±0 keep their order, as NumPy's stable
argsort does), and runs only when some expansion of the block is out of order; VecSumErrBranch keeps
a per-expansion output index and writes by selects over the slots the block's indices span.  The
rounds run while some expansion of the block is active; a finished expansion's round is computed
into rows that are then not selected, which changes none of its bits.
"""

from __future__ import annotations

from numba import njit

from .blocks import (
    INNER,
    copy_rows,
    epilogue_block,
    ld,
    magnitude,
    nonfinite_rows,
    sort_key,
    st,
    term_layout,
    top_power,
    two_sum,
    ulp_bits,
)
from .kernels import OPTIONS
from .simd import any_lane, mask_of, splat, to_bits, where


@njit(**OPTIONS)
def sort_block(ws, A, k):
    """Rows A .. A+k-1 sorted, each expansion of the block on its own, stably by decreasing sort key
    (NumPy's ``argsort(-abs(v), kind="stable")``, NaN last): odd-even transposition, which swaps only
    neighbours whose keys are strictly out of order (so equal keys keep their order), at most k
    phases, stopping once two phases in a row swap nothing in the block; nothing runs when no
    expansion of the block has a key below the next one (``warp_needs_sort`` of renorm.cuh)."""
    prev = sort_key(ld(ws, A))
    need = mask_of(prev, False)
    for i in range(1, k):
        key = sort_key(ld(ws, A + i))
        need = need | (key > prev)
        prev = key
    if not any_lane(need):
        return
    quiet = 0
    for phase in range(k):
        swapped = mask_of(prev, False)
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
    exp_mask, mag, shift, field, p = term_layout(prev)
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
    active = mask_of(x0, True)
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
    epilogue_block(ws, out, R, xbad, x0, mask_of(x0, False), x0, leading)


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
    top = top_power(x)
    prev = magnitude(x)
    chain = mask_of(x, True)
    for t in range(1, n):
        a = magnitude(ld(ws, X + t))
        chain = chain & (top * a <= prev)
        prev = a
    if not any_lane(~chain):  # the common case: no lane to test further
        return X
    fix = ~chain & ~nonfinite_rows(ws, X, n)
    if not any_lane(fix):
        return X
    renormalize_block(ws, X, n, n, dst, SRT, ERR, NEW, mask_of(x, False))
    for t in range(n):
        st(ws, dst + t, where(fix, ld(ws, dst + t), ld(ws, X + t)))
    return dst
