"""CPU twins of the GPU kernels: the same operations in the same order, lanes on the last axis.

Every function takes 2-D arrays of terms, shape (N, n), one expansion per row, and returns (N, R).
Inside, an expansion occupies a lane group of width W = next power of two >= max(n, m, R), exactly
as on the GPU: lane l holds term l, padding lanes hold zero, and the padding lanes compute what they
compute on the GPU (their values never reach the R output lanes).  Each function names the kernel it
mirrors; the twin and the kernel agree bit for bit (design decision 4), and both agree with the
scalar reference of :mod:`expansions.reference.algorithms`.
"""

from __future__ import annotations

import numpy as np

from ..formats import format_of, group_width
from ..reference.algorithms import insertion_order
from .eft import two_prod, two_sum
from .lanes import (
    array_module,
    branch,
    entry,
    group_any,
    lane_ids,
    load_lanes,
    record_vote,
    round_any,
    rounds,
    shfl,
    shfl_down,
    shfl_up,
    warp_any,
)


def nonfinite_epilogue(s, operands, leading, vote: str | None = None):
    """Twin of ``nonfinite_epilogue<T, R, W>`` in ``expansions/cuda/expansion.cuh``.

    If an operand has a non-finite term: ``(w, 0, ..., 0)``, ``w`` = the leading-term IEEE result
    ``leading``, or NaN where that operand's leading term is finite.  Else, where any computed
    term is not finite (overflow): ``(±inf, 0, ..., 0)`` with the sign of ``leading``.
    A NaN result is the canonical quiet NaN with the sign bit clear (bits 0x7ff8... / 0x7fc00000),
    whatever NaN the hardware produced.  ``vote``: the kernel's site name of the warp vote before it
    (``warp_has_nonfinite``, at the end of the group functions; :func:`expansions.cpu.lanes.warp_any`).
    """
    xp = array_module(s)
    bad = [~xp.isfinite(op).all(axis=-1) for op in operands]
    anybad = bad[0]
    for b in bad[1:]:
        anybad = anybad | b
    overflow = ~anybad & ~xp.isfinite(s).all(axis=-1)
    fix = anybad | overflow
    if not warp_any(fix, vote):
        return s
    w = leading.copy()
    for op, b in zip(operands, bad):
        w[b & xp.isfinite(op[:, 0])] = xp.nan
    inf = xp.asarray(xp.inf, dtype=s.dtype)
    w = xp.where(anybad, w, xp.where(leading < 0, -inf, inf))
    w = xp.where(xp.isnan(w), xp.asarray(xp.nan, dtype=s.dtype), w)  # one NaN: positive, quiet
    s = s.copy()
    s[fix] = 0
    s[fix, 0] = w[fix]
    return s


def _group_operands(x, y, R):
    """The entry of the binary group kernels (``binary_kernel_body`` in ``kernels.cu``): the array
    module, the input sizes n and m, both operands in lanes of width W = group_width(max(n, m, R)),
    the lane ids and a zero of the term type."""
    xp = array_module(x)
    n, m = x.shape[1], y.shape[1]
    W = group_width(max(n, m, R))
    X, Y = load_lanes(x, W), load_lanes(y, W)
    return xp, n, m, X, Y, lane_ids(W, xp), X.dtype.type(0)


def add_safe(x, y, R):
    """Twin of ``add_safe_group<T, N, M, R, W>`` (``expansions/cuda/add.cuh``; entry point ``add_safe`` in
    ``kernels.cu``); Algorithm 1."""
    xp, n, m, X, Y, lane, zero = _group_operands(x, y, R)
    entry("add_safe", n=n, m=m, R=R)
    s, e = two_sum(xp.where(lane == 0, X, zero), xp.where(lane == 0, Y, zero))
    leading = s[:, 0].copy()
    for which, i in insertion_order(n, m):
        t = shfl(X if which == "x" else Y, i)
        s, e = two_sum(s, xp.where(lane == 0, t, shfl_up(e, 1)))
    for _ in range(R - 2):
        s, e = two_sum(s, xp.where(lane == 0, zero, shfl_up(e, 1)))
    s = s + xp.where(lane == 0, zero, shfl_up(e, 1))
    return nonfinite_epilogue(s[:, :R], (x, y), leading, vote="nonfinite")


def add_fast(x, y, R):
    """Twin of ``add_fast_group<T, N, M, R, W>`` (``expansions/cuda/add.cuh``; entry point ``add_fast`` in
    ``kernels.cu``); Fig. 5."""
    xp, n, m, X, Y, lane, zero = _group_operands(x, y, R)
    entry("add_fast", n=n, m=m, R=R)
    if n > R:
        X = xp.where(lane < R, X, zero)
    if m > R:
        Y = xp.where(lane < R, Y, zero)
    s, e = two_sum(X, Y)
    leading = s[:, 0].copy()
    for _ in rounds(R - 2, "add_fast"):
        es = xp.where(lane == 0, zero, shfl_up(e, 1))
        act = group_any(es != 0, R)
        if not round_any(act, "add_fast"):
            break
        ns, ne = two_sum(s, es)
        s = xp.where(act[:, None], ns, s)
        e = xp.where(act[:, None], ne, e)
    s = s + xp.where(lane == 0, zero, shfl_up(e, 1))
    return nonfinite_epilogue(s[:, :R], (x, y), leading, vote="nonfinite")


def _propagate(s, e, R, lane):
    """Twin of ``propagate<T, R, W>`` in ``expansions/cuda/mul.cuh``: ``while any(e != 0)``, at most R rounds,
    2Sum e into s then shift e up one lane with zero in; groups whose e is zero stand still (the kernel
    runs them on with the others, which gives these bits: see the kernel's comment)."""
    xp = array_module(s)
    zero = s.dtype.type(0)
    for _ in rounds(R, "propagate"):
        act = group_any(e != 0, R)
        if not round_any(act, "propagate"):
            break
        ns, ne = two_sum(s, e)
        ne = xp.where(lane == 0, zero, shfl_up(ne, 1))
        s = xp.where(act[:, None], ns, s)
        e = xp.where(act[:, None], ne, e)
    return s, e


def positional(x):
    """Twin of ``positional_group<T, N, W>`` (``expansions/cuda/mul.cuh``) and of
    :func:`expansions.reference.algorithms.positional`: the (count, n) operand with each row whose terms
    are all finite but break ``RN(2**(p-1) |x_i|) <= |x_{i-1}|`` (the positional condition the proofs
    of the multiplication, the dot product and the Newton operations use) renormalized to n terms."""
    xp = array_module(x)
    n = x.shape[1]
    if n < 2:
        return x
    top = x.dtype.type(2.0 ** (np.finfo(x.dtype).nmant))  # 2**(p-1)
    with np.errstate(all="ignore"):
        a = xp.abs(x)
        chain = (top * a[:, 1:] <= a[:, :-1]).all(axis=1)
    fix = ~chain & xp.isfinite(x).all(axis=1)
    if not warp_any(fix, "positional"):
        return x
    with branch(fix) as rows:
        r = renormalize(x[rows], n)
    out = x.copy()
    out[fix] = r[fix[rows]]
    return out


def mul_truncated(x, y, R):
    """Twin of ``mul_truncated_group<T, N, M, R, W>`` (``expansions/cuda/mul.cuh``; entry point
    ``mul_truncated`` in ``kernels.cu``); Algorithm 2, on the operands made :func:`positional`."""
    x, y = positional(x), positional(y)
    xp, n, m, X, Y, lane, zero = _group_operands(x, y, R)
    entry("mul_truncated", n=n, m=m, R=R)
    s = xp.zeros_like(X)
    pi = xp.zeros_like(X)
    leading = X[:, 0] * Y[:, 0]
    for i in range(R - 1):
        yi = shfl(Y, i) if i < m else xp.zeros_like(X)
        p, e = two_prod(X, yi)
        s, ep = two_sum(s, p)
        pi = xp.where(lane == i, shfl(s, 0), pi)
        s = xp.where(lane >= R - 1, zero, shfl_down(s, 1))
        s, e = _propagate(s, e, R, lane)
        s, ep = _propagate(s, ep, R, lane)
    yi = shfl(Y, R - 1) if R - 1 < m else xp.zeros_like(X)
    s = s + X * yi
    pi = xp.where(lane == R - 1, shfl(s, 0), pi)
    return nonfinite_epilogue(pi[:, :R], (x, y), leading, vote="nonfinite")


def _vec_sum(t):
    """VecSum on the columns of t (N, n) (``vec_sum`` in renorm.cuh): the 2Sum chain from the last column
    up; column 0 gets the sum, column i + 1 the error of the 2Sum with term i."""
    xp = array_module(t)
    n = t.shape[1]
    e = xp.empty_like(t)
    s = t[:, n - 1].copy()
    for i in range(n - 2, -1, -1):
        s, e[:, i + 1] = two_sum(t[:, i], s)
    e[:, 0] = s
    return e


def _vec_sum_err_branch(e, R):
    """VecSumErrBranch on the columns of e (N, n), every row its own branch path."""
    xp = array_module(e)
    N, n = e.shape
    rows = xp.arange(N)
    r = xp.zeros((N, R), dtype=e.dtype)
    j = xp.zeros(N, dtype=xp.int64)
    done = xp.zeros(N, dtype=bool)
    eps = e[:, 0].copy()
    for i in range(1, n):
        rj, eps_new = two_sum(eps, e[:, i])
        live = ~done
        r[rows[live], j[live]] = rj[live]
        nz = eps_new != 0
        done = done | (live & nz & (j >= R - 1))
        step = live & ~done & nz
        j = j + step
        eps = xp.where(step, eps_new, xp.where(live & ~nz, rj, eps))
    live = ~done
    r[rows[live], j[live]] = eps[live]
    return r


def _adjacent_nonoverlapping(r):
    """Each term is zero or at most ulp(previous term) ."""
    xp = array_module(r)
    prev = ulp(r[:, :-1])
    return ((r[:, 1:] == 0) | (xp.abs(r[:, 1:]) <= prev)).all(axis=1) & xp.isfinite(r).all(axis=1)


def ulp(a):
    """Goldberg's ulp of each element, ``2**(e - p + 1)`` with ``2**e <= |a| < 2**(e+1)``, and the
    smallest subnormal for zeros and subnormals (NumPy's ``spacing(|a|)``)."""
    xp = array_module(a)
    p = 53 if a.dtype == xp.float64 else 24
    tiny = xp.asarray(xp.finfo(a.dtype).smallest_subnormal, dtype=a.dtype)
    _, ex = xp.frexp(a)
    u = xp.maximum(xp.ldexp(xp.ones_like(a), ex - p), tiny)
    return xp.where(a == 0, tiny, u)


def needs_sort(terms):
    """Per group (row of (N, n) ``terms``), whether the sorting network of ``renormalize_round`` would move
    a term: the predicate of ``warp_needs_sort`` in ``expansions/cuda/renorm.cuh``, some term's key
    (``sort_key``: the magnitude's bits + 2, NaN 1) below the next one's.  The twin sorts either way
    (a stable sort of terms in order keeps them), so it computes this only for a recorder."""
    xp = array_module(terms)
    u = xp.uint64 if terms.dtype == xp.float64 else xp.uint32
    mag = xp.abs(terms).view(u)
    key = xp.where(xp.isnan(terms), u(1), mag + u(2))
    return (key[:, :-1] < key[:, 1:]).any(axis=1)


def _renormalize_round(cur, R, n):
    """Twin of ``renormalize_round<T, K, R, W>`` (``expansions/cuda/renorm.cuh``) on the (N, K) terms
    ``cur`` of a renormalization of n terms to R: stable sort by decreasing magnitude (the kernel's
    bitonic sort breaks ties by lane index), VecSum from the bottom, VecSumErrBranch from the top;
    returns (the R terms, the VecSum top e_0)."""
    xp = array_module(cur)
    record_vote("renormalize.sort", lambda: needs_sort(cur), terms=cur.shape[1], n=n, R=R)
    order = xp.argsort(-xp.abs(cur), axis=1, kind="stable")
    e = _vec_sum(xp.take_along_axis(cur, order, axis=1))
    return _vec_sum_err_branch(e, R), e[:, 0].copy()


def renormalize(x, R):
    """Twin of ``renormalize_group<T, N, R, W>`` (``expansions/cuda/renorm.cuh``; entry point ``renormalize``
    in ``kernels.cu``).

    At most R rounds of: stable sort by decreasing magnitude (the kernel's bitonic sort breaks ties
    by lane index), VecSum from the bottom, VecSumErrBranch from the top (Joldes, Marty, Muller,
    Popescu, IEEE TC 2016); a row stops once its terms are ulp-nonoverlapping (the first round on the
    n input terms, the next ones while some row is active).  On the GPU every lane runs the
    sequential part on the gathered terms and keeps its own output term."""
    xp = array_module(x)
    n = x.shape[1]
    out, leading = _renormalize_round(x, R, n)
    active = ~_adjacent_nonoverlapping(out)
    for _ in rounds(R - 1, "renormalize"):
        if not round_any(active, "renormalize"):
            break
        r, _ = _renormalize_round(out, R, n)
        out = xp.where(active[:, None], r, out)
        active = active & ~_adjacent_nonoverlapping(out)
    return nonfinite_epilogue(out, (x,), leading, vote="nonfinite")


def renormalize_pair(hi, lo):
    """Twin of ``renormalize_pair<T>`` (``expansions/cuda/dw.cuh``: the renormalization of the
    library's R = 2 double-word kernels, one thread per number): :func:`renormalize` of (hi, lo) to
    two terms, bit for bit (tests/test_dw_operation.py), but for a zero pair, which it keeps as it is
    (its signed zero; the double-word renormalizer of ``expansions.dispatch``), reduced as the kernel's
    comment explains: two 2Sums (no sort, one round), then the non-finite epilogue with the VecSum top
    as the leading result."""
    xp = array_module(hi)
    e_hi, e_lo = two_sum(hi, lo)
    t_hi, t_lo = two_sum(e_hi, e_lo)
    zero = (hi == 0) & (lo == 0)
    out_hi, out_lo = xp.where(zero, hi, t_hi), xp.where(zero, lo, xp.where(t_lo != 0, t_lo, xp.zeros_like(t_lo)))
    bad = ~xp.isfinite(hi) | ~xp.isfinite(lo)
    overflow = ~bad & (~xp.isfinite(out_hi) | ~xp.isfinite(out_lo))
    nan = xp.asarray(xp.nan, dtype=e_hi.dtype)
    inf = xp.asarray(xp.inf, dtype=e_hi.dtype)
    w = xp.where(bad & xp.isfinite(hi), nan, e_hi)
    w = xp.where(bad, w, xp.where(e_hi < 0, -inf, inf))
    w = xp.where(xp.isnan(w), nan, w)
    fix = bad | overflow
    return xp.where(fix, w, out_hi), xp.where(fix, xp.zeros_like(out_lo), out_lo)


def negate(x):
    """Twin of kernel ``negate<T, R>`` (``kernels.cu``): every term negated (exact)."""
    return -x


def sub_safe(x, y, R):
    """x - y as ``add_safe(x, -y)`` (the kernel negates y as it loads it)."""
    return add_safe(x, -y, R)


def sub_fast(x, y, R):
    """x - y as ``add_fast(x, -y)`` (the kernel negates y as it loads it)."""
    return add_fast(x, -y, R)


# ---------------------------------------------------------------------------------------------
# exponents and scaling by powers of two (expansion.cuh): the Newton operations and the double-word
# division and square root near the underflow threshold


def leading_exponent(a0):
    """Twin of ``leading_exponent`` in expansion.cuh: ilogb(a0) for finite nonzero a0, else 0."""
    xp = array_module(a0)
    ok = xp.isfinite(a0) & (a0 != 0)
    e = xp.frexp(xp.where(ok, a0, a0.dtype.type(1)))[1].astype(xp.int32) - 1
    return xp.where(ok, e, 0).astype(xp.int32)


def scale(v, k):
    """Twin of ``scale`` in expansion.cuh: every term times 2**k, as two products by powers of two
    (2**(k >> 1), then 2**(k - (k >> 1))), k clamped to [2 (emin - p + 1), 2 emax] beyond which the
    result is 0 or overflows anyway.  Exact when scaling up (or overflow); scaling down rounds a term
    only below the underflow threshold, at most eta in all."""
    xp = array_module(v)
    fmt = format_of(v.dtype)
    k = xp.clip(k, 2 * (fmt.emin - fmt.p + 1), 2 * fmt.emax).astype(xp.int32)
    k1 = k >> 1
    one = xp.ones(k.shape, dtype=v.dtype)
    f1 = xp.ldexp(one, k1)
    f2 = xp.ldexp(one, k - k1)
    return (v * f1[:, None]) * f2[:, None]
