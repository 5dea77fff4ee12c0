"""Elementary functions compiled per block of expansions on the fused engine.

The NumPy twins (:mod:`expansions.cpu.elementary`) run each function as a sequence of whole-array
operations; here each function is one compiled loop over blocks of ``L = simd.LANES`` expansions (the
layout of :mod:`expansions.engine.fused`: term t of the L expansions of a block is one row of the
per-thread workspace, one vector), and every step of the twin's algorithm is a block operation of
the fused engine on rows of that workspace: the safe addition and the truncated product each
renormalized in the same pass (:func:`expansions.engine.arithmetic.binary_block`, the bits of the twins'
``renormalize(add_safe(x, y, w), w)`` and ``renormalize(mul_truncated(x, y, w), w)``), the exact
scalings by powers of two (:func:`expansions.engine.newton.scale_block`, the twin ``newton.scale``),
the renormalization to R terms and the non-finite rule (``epilogue_block``).  One call per public
function and array; no Python per step, no allocation per block (one workspace per thread).

Why these are the twins' bits.  Every row of the twin is computed independently of the others, with
the same operations on the same operands in the same order (the same term counts too: an operand of
one term, such as the twin's ``_float_col(k, 1)``, is one row here).  Where the twin selects rows
(``_rows(mask, f, x)``: f on the rows of ``mask``, zeros elsewhere), a block runs f on all its lanes,
the lanes outside ``mask`` computing on +0 operands (so that no lane converts an infinite or huge
value to an integer), and a select keeps the result in the lanes of ``mask`` and +0 in the others;
the branch is skipped when no lane of the block takes it (the warp-uniform ``if (warp_any(taken))``
of ``expansions/cuda/elementary.cuh``).  A per-row loop count (the doublings after the halvings of
``_halvings``) runs while some lane of the block still has a step to do, each step selected in the
lanes that do it, which is the twin's ``np.where((i < rows_s)[:, None], step, e)``.

Constants are never typed in: the twins' constants (:mod:`expansions.cpu.constants`), their plans
(:func:`expansions.cpu.elementary._exp_plan`) and thresholds (:func:`expansions.cpu.elementary.thresholds`)
are computed in Python, once per (function, R, dtype), and passed to the compiled loop as arrays.

Functions compiled here: :data:`COMPILED`.  The others keep the twins' algorithms on the engine's
whole-array operations (:func:`expansions.backends.engine_backend`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import get_num_threads, njit, prange

from .. import bounds
from ..cpu import constants as C
from ..cpu import elementary as T
from ..formats import MAX_TERMS, check_terms, format_of
from .arithmetic import binary_block, scratch_rows
from .blocks import (
    ADD_SAFE,
    INNER,
    MUL,
    RENORMALIZE,
    epilogue_block,
    lanes_of,
    ld,
    load_block,
    nonfinite_rows,
    st,
    store_block,
    workspace,
)
from .fused import CHUNKS_PER_THREAD
from .kernels import PARALLEL, leading_exponent, readonly, terms_array
from .newton import finish_block, newton_start, scale_block
from .simd import LANES, any_lane, mask_of, splat, where

#: Arrays of fewer rows run on the calling thread.  An elementary function costs at least a
#: microsecond per row (about 50 fused operations at R = 2), so from 64 rows the work outweighs the
#: parallel loop's start by far (the arithmetic operations, 100 times cheaper per row, split from
#: :data:`expansions.engine.fused.SERIAL_BELOW` rows).  The blocks are independent: the bits do not
#: depend on the split.
SERIAL_BELOW = 64


def _chunks(count: int, lanes: int) -> int:
    """Chunks of blocks for the parallel loop: 1 (this thread) below :data:`SERIAL_BELOW` rows, else
    up to ``CHUNKS_PER_THREAD`` per thread, no more than there are blocks."""
    if count < SERIAL_BELOW:
        return 1
    return max(1, min(CHUNKS_PER_THREAD * get_num_threads(), (count + lanes - 1) // lanes))


#: The functions of this module (one compiled loop each); the others run the twins on the engine.
COMPILED = ("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "sinh", "cosh", "tanh")

EXP, SIN, COS, LOG, TAN, EXPM1, LOG2, LOG10, SINH, COSH, TANH, LOG1P = range(12)

# ---------------------------------------------------------------------------------------------
# the twins' operations on rows of the workspace (w terms; operands of n and m terms)


@njit(**INNER)
def _add(ws, X, n, Y, m, w, dst, sc):
    """Rows dst := the twin's ``_add``: renormalize(add_safe(x, y, w), w)."""
    binary_block(ADD_SAFE, ws, X, n, Y, m, w, True, dst, sc)


@njit(**INNER)
def _mul(ws, X, n, Y, m, w, dst, sc):
    """Rows dst := the twin's ``_mul``: renormalize(mul_truncated(x, y, w), w)."""
    binary_block(MUL, ws, X, n, Y, m, w, True, dst, sc)


@njit(**INNER)
def _neg(ws, src, n, dst):
    """Rows dst := -src (NumPy's negative: every term's sign flipped)."""
    for t in range(n):
        st(ws, dst + t, -ld(ws, src + t))


@njit(**INNER)
def _times(ws, src, n, c, dst):
    """Rows dst := src * c, term by term (the twin's ``x * dt.type(c)``)."""
    v = splat(ld(ws, src), c)
    for t in range(n):
        st(ws, dst + t, ld(ws, src + t) * v)


@njit(**INNER)
def _select(ws, mask, A, B, n, dst):
    """Rows dst := A in the lanes of ``mask``, B elsewhere."""
    for t in range(n):
        st(ws, dst + t, where(mask, ld(ws, A + t), ld(ws, B + t)))


@njit(**INNER)
def _zero(ws, dst, n):
    z = splat(ld(ws, dst), 0.0)
    for t in range(n):
        st(ws, dst + t, z)


@njit(**INNER)
def _put(ws, dst, c, i, w):
    """Rows dst .. dst+w-1 := the w terms of row i of the constant array c, in every lane."""
    for t in range(w):
        st(ws, dst + t, splat(ld(ws, dst + t), c[i, t]))


# ---------------------------------------------------------------------------------------------
# exp (twins: _expm1_small, _exp_parts, _exp_w)


@njit(**INNER)
def _expm1_small(ws, Rr, W, TAY, ntay, s, kmin, kmax, E, lay, sc):
    """Rows E := the twin's ``_expm1_small(r)`` of rows Rr (W terms; |r| <= 1/2): t = r 2^-s_row
    (``_halvings``), e = t * Horner(t), then the doublings e := 2e + e*e in the lanes whose s_row
    exceeds the step; TAY: the n Taylor coefficients (W rows each).  ``lay``: the first of 6 W + 4
    rows of scratch."""
    L = lanes_of(ws)
    Tt = lay
    ACC = Tt + W
    TMP = ACC + W
    TWO = TMP + W
    DBL = TWO + W
    NXT = DBL + W
    HS = NXT + W  # one row: s_row per lane; one row: -s_row; two rows: the factors of scale_block
    NK = HS + 1
    F = NK + 1
    for j in range(L):
        e = leading_exponent(ws[Rr * L + j])
        rs = min(max(e + s + 2, 0), s)
        ws[HS * L + j] = rs
        ws[NK * L + j] = -rs
    scale_block(ws, Rr, W, NK, kmin, kmax, Tt, F)
    # Horner: acc = c[n-1]; acc = acc * t + c[k]
    for t in range(W):
        st(ws, ACC + t, ld(ws, TAY + (ntay - 1) * W + t))
    for k in range(ntay - 2, -1, -1):
        _mul(ws, ACC, W, Tt, W, W, TMP, sc)
        _add(ws, TMP, W, TAY + k * W, W, W, ACC, sc)
    _mul(ws, Tt, W, ACC, W, W, E, sc)
    hs = ld(ws, HS)
    for i in range(s):
        more = hs > splat(hs, i)
        if not any_lane(more):
            break  # s_row <= i in every lane: no later step is taken either
        _times(ws, E, W, 2.0, DBL)
        _mul(ws, E, W, E, W, W, TMP, sc)
        _add(ws, DBL, W, TMP, W, W, NXT, sc)
        _select(ws, more, NXT, E, W, E)


@njit(**INNER)
def _exp_parts(ws, X, W, LN2, ONE, TAY, ntay, s, kmin, kmax, lay, sc):
    """Row lay (k) and rows lay + 4 W + 1 (m, W rows) := the twin's ``_exp_parts`` of rows X (W terms):
    k = rint(x0 / ln2_0), r = x - k ln2, m = 1 + expm1(r).  ``lay``: the first of 11 W + 5 rows of
    scratch (these included)."""
    L = lanes_of(ws)
    KC = lay  # one row: k (a one-term expansion, also the scaling of scale_block)
    P = KC + 1
    NEG = P + W
    Rr = NEG + W
    E = Rr + W
    M = E + W
    inner = M + W + 2
    st(ws, KC, ld(ws, X) / ld(ws, LN2))
    for j in range(L):
        ws[KC * L + j] = np.rint(ws[KC * L + j])
    _mul(ws, KC, 1, LN2, W, W, P, sc)
    _neg(ws, P, W, NEG)
    _add(ws, X, W, NEG, W, W, Rr, sc)
    _expm1_small(ws, Rr, W, TAY, ntay, s, kmin, kmax, E, inner, sc)
    _add(ws, ONE, W, E, W, W, M, sc)


@njit(**INNER)
def _exp_body(ws, X, W, LN2, ONE, TAY, ntay, s, kmin, kmax, OUT, lay, sc):
    """Rows OUT := the twin's ``body`` of ``_exp_w`` on rows X (W terms): m 2^k from
    :func:`_exp_parts`.  ``lay``: the first of 11 W + 5 rows of scratch."""
    _exp_parts(ws, X, W, LN2, ONE, TAY, ntay, s, kmin, kmax, lay, sc)
    scale_block(ws, lay + 4 * W + 1, W, lay, kmin, kmax, OUT, lay + 5 * W + 1)


@njit(**INNER)
def _abs_rows(ws, X, W, dst):
    """Rows dst := the twin's ``np.where(x[:, :1] < 0, -x, x)``."""
    x0 = ld(ws, X)
    neg = x0 < splat(x0, 0.0)
    for t in range(W):
        v = ld(ws, X + t)
        st(ws, dst + t, where(neg, -v, v))


@njit(**INNER)
def _sinh_cosh_big(ws, X, W, LN2, ONE, TAY, ntay, s, kmin, kmax, sign, steps, OUT, AUX, lay, sc):
    """Rows OUT := the twin's ``_sinh_cosh_big(x, sign)``: m 2^k = e^|x| (:func:`_exp_parts`),
    m 2^(k-1) + sign (1/m) 2^(-k-1).  ``steps``: the plan row of the Newton division at W terms.
    AUX: 5 W + 5 rows of scratch."""
    L = lanes_of(ws)
    AX = AUX
    MM = AX + W
    INV = MM + W
    S1 = INV + W
    S2 = S1 + W
    K1r = S2 + W  # one row each: k - 1, -k - 1; two rows: the factors of scale_block
    K2r = K1r + 1
    F = K2r + 1
    _abs_rows(ws, X, W, AX)
    _exp_parts(ws, AX, W, LN2, ONE, TAY, ntay, s, kmin, kmax, lay, sc)
    for t in range(W):
        st(ws, MM + t, ld(ws, lay + 4 * W + 1 + t))
    for j in range(L):
        k = ws[lay * L + j]
        ws[K1r * L + j] = k - 1
        ws[K2r * L + j] = -k - 1
    _div(ws, ONE, W, MM, W, W, INV, steps, 6, steps[4], kmin, kmax, lay, sc)
    scale_block(ws, MM, W, K1r, kmin, kmax, S1, F)
    scale_block(ws, INV, W, K2r, kmin, kmax, S2, F)
    _times(ws, S2, W, sign, S2)
    _add(ws, S1, W, S2, W, W, OUT, sc)


@njit(**INNER)
def _times_sign(ws, src, W, x0, dst):
    """Rows dst := src times the twin's ``np.sign(x0)`` (x0 nonzero, finite: ±1) term by term."""
    sg = where(x0 < splat(x0, 0.0), splat(x0, -1.0), splat(x0, 1.0))
    for t in range(W):
        st(ws, dst + t, ld(ws, src + t) * sg)


@njit(**INNER)
def _hyperbolic_body(fn, ws, X, W, LN2, ONE, TAY, ntay, s, kmin, kmax, lo, hi, limit, steps, OUT, AUX, lay, sc):
    """Rows OUT := the twin's ``_sinh_w``, ``_cosh_w`` or ``_tanh_w`` of rows X (finite; x0 != 0 for
    sinh and tanh), each branch run when some lane of the block takes it.  AUX: 12 W + 8 rows."""
    x0 = ld(ws, X)
    zero = splat(x0, 0.0)
    ax0 = where(x0 < zero, -x0, x0)
    XS = AUX
    E = XS + W
    TWO = E + W
    T1 = TWO + W
    T2 = T1 + W
    A = T2 + W
    inner = A + W  # 5 W + 5 rows (_sinh_cosh_big) or 4 W (_expm1_body)
    _zero(ws, TWO, W)
    st(ws, TWO, splat(x0, 2.0))
    if fn == TANH:  # -e / (2 + e), e = expm1(-2|x|), times the sign of x
        _abs_rows(ws, X, W, XS)
        _times(ws, XS, W, -2.0, XS)
        _expm1_body(ws, XS, W, LN2, ONE, TAY, ntay, s, kmin, kmax, lo, hi, E, inner, lay, sc)
        _add(ws, TWO, W, E, W, W, T1, sc)
        _div(ws, E, W, T1, W, W, T2, steps, 6, steps[4], kmin, kmax, lay, sc)
        _neg(ws, T2, W, T2)
        _times_sign(ws, T2, W, x0, OUT)
        return
    mid = ax0 <= splat(x0, limit)
    small = ax0 <= splat(x0, 0.5)
    if fn == SINH:
        mid = mid & ~small
    _zero(ws, OUT, W)
    if fn == SINH and any_lane(small):  # e (e + 2) / (2 (e + 1)), e = expm1(x)
        for t in range(W):
            st(ws, XS + t, where(small, ld(ws, X + t), zero))
        _expm1_small(ws, XS, W, TAY, ntay, s, kmin, kmax, E, lay, sc)
        _add(ws, E, W, TWO, W, W, T1, sc)
        _mul(ws, E, W, T1, W, W, T2, sc)
        _add(ws, E, W, ONE, W, W, T1, sc)
        _div(ws, T2, W, T1, W, W, A, steps, 6, steps[4], kmin, kmax, lay, sc)
        _times(ws, A, W, 0.5, A)
        _select(ws, small, A, OUT, W, OUT)
    if any_lane(mid):
        for t in range(W):
            st(ws, XS + t, where(mid, ld(ws, X + t), zero))
        _sinh_cosh_big(ws, XS, W, LN2, ONE, TAY, ntay, s, kmin, kmax, -1.0 if fn == SINH else 1.0, steps, A,
                       inner, lay, sc)
        if fn == SINH:
            _times_sign(ws, A, W, x0, A)
        _select(ws, mid, A, OUT, W, OUT)
    big = ax0 > splat(x0, limit)
    inf = splat(x0, np.inf)
    st(ws, OUT, where(big, where(x0 < zero, -inf, inf) if fn == SINH else inf, ld(ws, OUT)))


# ---------------------------------------------------------------------------------------------
# sin, cos (twins: _reduce_half_pi, _sincos_small, _sincos_w)


@njit(**INNER)
def _rint_row(ws, src, c, dst, negate):
    """Row dst := RN-to-integer(src / c) * (-c if ``negate`` else 1), the quotient in the terms' type
    (a vector division, as the twin's array division), the rest exact."""
    L = lanes_of(ws)
    v = splat(ld(ws, src), c)
    st(ws, dst, ld(ws, src) / v)
    for j in range(L):
        ws[dst * L + j] = np.rint(ws[dst * L + j])
    if negate:
        st(ws, dst, -ld(ws, dst) * v)


@njit(**INNER)
def _reduce_half_pi(ws, X, W, M, TWO_OVER_PI, HALF_PI, table, p, S, kmin, kmax, OUT, Q, lay, sc):
    """Rows OUT (W terms) and row Q (q in 0..3, as floats) := the twin's ``_reduce_half_pi`` of rows X:
    Payne–Hanek on each term with the table row of its exponent (per lane), the products reduced mod 4
    and summed on M terms, the nearest integer taken off twice, the rest scaled back and times pi/2.
    TWO_OVER_PI, HALF_PI: M rows of constants.  ``lay``: the first of 5 M + 4 rows of scratch."""
    L = lanes_of(ws)
    ACC = lay
    CC = ACC + M
    F = CC + M
    MC = F + M  # one row each: m (a one-term expansion), the integer taken off, -S, two factors
    KR = MC + 1
    NS = KR + 1
    FF = NS + 1
    rows = table.shape[0]
    four = 2.0 ** (S + 2)
    _zero(ws, ACC, M)
    for j in range(W):
        for jj in range(L):
            xj = ws[(X + j) * L + jj]
            E = leading_exponent(xj) - (p - 1)
            big = E > 2 and xj != 0
            ws[MC * L + jj] = math.ldexp(np.float64(xj), -E) if big else xj  # exact: an integer below 2^p
            idx = min(max(E - 3, 0), rows - 1)
            for t in range(M):
                ws[(F + t) * L + jj] = table[idx, t] if big else ws[(TWO_OVER_PI + t) * L + jj]
        _mul(ws, MC, 1, F, M, M, CC, sc)
        _rint_row(ws, CC, four, KR, True)
        _add(ws, CC, M, KR, 1, M, CC, sc)
        _add(ws, ACC, M, CC, M, M, ACC, sc)
    one = 2.0**S
    _rint_row(ws, ACC, one, Q, False)
    st(ws, KR, -ld(ws, Q) * splat(ld(ws, Q), one))
    _add(ws, ACC, M, KR, 1, M, ACC, sc)
    _rint_row(ws, ACC, one, KR, False)  # k2: a tie broken the other way by the tail
    for jj in range(L):
        k = ws[Q * L + jj] + ws[KR * L + jj]  # in the terms' type, as the twin's k + k2 (small integers)
        ws[Q * L + jj] = np.int64(k) % 4
        ws[NS * L + jj] = -S
    st(ws, KR, -ld(ws, KR) * splat(ld(ws, KR), one))
    _add(ws, ACC, M, KR, 1, M, ACC, sc)
    scale_block(ws, ACC, M, NS, kmin, kmax, ACC, FF)
    _mul(ws, ACC, M, HALF_PI, M, M, CC, sc)
    binary_block(RENORMALIZE, ws, CC, W, CC, W, W, True, OUT, sc)  # the first W terms, renormalized


@njit(**INNER)
def _halvings(ws, Rr, W, s, kmin, kmax, Tt, HS, F):
    """Rows Tt := r 2^-s_row and row HS := s_row, the twin's ``_halvings``: min(max(e + s + 2, 0), s)
    with e the leading exponent of r's leading term (row HS + 1: scratch; F: 2 rows of scratch)."""
    L = lanes_of(ws)
    for j in range(L):
        rs = min(max(leading_exponent(ws[Rr * L + j]) + s + 2, 0), s)
        ws[HS * L + j] = rs
        ws[(HS + 1) * L + j] = -rs
    scale_block(ws, Rr, W, HS + 1, kmin, kmax, Tt, F)


@njit(**INNER)
def _horner(ws, TAY, ntay, W, Tt, ACC, TMP, sc):
    """Rows ACC := the twin's ``_horner``: acc = c[n-1]; acc = acc * t + c[k] (TAY: n constants of W rows)."""
    for t in range(W):
        st(ws, ACC + t, ld(ws, TAY + (ntay - 1) * W + t))
    for k in range(ntay - 2, -1, -1):
        _mul(ws, ACC, W, Tt, W, W, TMP, sc)
        _add(ws, TMP, W, TAY + k * W, W, W, ACC, sc)


@njit(**INNER)
def _sincos_small(ws, Rr, W, ONE, TAYS, TAYV, ntay, s, kmin, kmax, SN, VC, lay, sc):
    """Rows SN, VC := the twin's ``_sincos_small(r)``: sin r and 1 - cos r by the Taylor series of
    t = r 2^-s_row, then the doublings sin 2a = 2 sin a (1 - versin a), versin 2a = 2 sin^2 a in the
    lanes whose s_row exceeds the step.  ``lay``: the first of 8 W + 4 rows of scratch."""
    Tt = lay
    T2 = Tt + W
    ACC = T2 + W
    TMP = ACC + W
    NV = TMP + W
    SN2 = NV + W
    VC2 = SN2 + W
    HS = VC2 + W  # two rows; F: two rows
    F = HS + 2
    _halvings(ws, Rr, W, s, kmin, kmax, Tt, HS, F)
    _mul(ws, Tt, W, Tt, W, W, T2, sc)
    _horner(ws, TAYS, ntay, W, T2, ACC, TMP, sc)
    _mul(ws, Tt, W, ACC, W, W, SN, sc)
    _horner(ws, TAYV, ntay, W, T2, ACC, TMP, sc)
    _mul(ws, T2, W, ACC, W, W, VC, sc)
    hs = ld(ws, HS)
    for i in range(s):
        more = hs > splat(hs, i)
        if not any_lane(more):
            break  # s_row <= i in every lane: no later step is taken either
        _neg(ws, VC, W, NV)
        _add(ws, ONE, W, NV, W, W, TMP, sc)
        _mul(ws, SN, W, TMP, W, W, SN2, sc)
        _times(ws, SN2, W, 2.0, SN2)
        _mul(ws, SN, W, SN, W, W, VC2, sc)
        _times(ws, VC2, W, 2.0, VC2)
        _select(ws, more, SN2, SN, W, SN)
        _select(ws, more, VC2, VC, W, VC)


@njit(**INNER)
def _sincos_body(ws, X, W, M, ONE, TAYS, TAYV, ntay, s, TWO_OVER_PI, HALF_PI, table, p, S, kmin, kmax,
                 quarter_pi, SINO, COSO, lay, sc):
    """Rows SINO, COSO := the twin's ``_sincos_w`` of rows X: no reduction where |x0| <= pi/4, else
    Payne–Hanek (in the lanes that need it, when some lane of the block does), the series and
    doublings, then the quadrant's sign and function by selects.  ``lay``: the first of 16 W + 5 M +
    10 rows of scratch."""
    Rr = lay
    Q = Rr + W
    SN = Q + 1
    VC = SN + W
    CS = VC + W
    NEG = CS + W
    RED = NEG + W
    inner = RED + W
    x0 = ld(ws, X)
    zero = splat(x0, 0.0)
    near = where(x0 < zero, -x0, x0) <= splat(x0, quarter_pi)
    for t in range(W):
        st(ws, Rr + t, ld(ws, X + t))
    st(ws, Q, zero)
    if any_lane(~near):
        for t in range(W):
            st(ws, NEG + t, where(near, zero, ld(ws, X + t)))  # the reduction's lanes; +0 in the others
        _reduce_half_pi(ws, NEG, W, M, TWO_OVER_PI, HALF_PI, table, p, S, kmin, kmax, RED, SN, inner, sc)
        _select(ws, near, Rr, RED, W, Rr)
        st(ws, Q, where(near, zero, ld(ws, SN)))
    _sincos_small(ws, Rr, W, ONE, TAYS, TAYV, ntay, s, kmin, kmax, SN, VC, inner, sc)
    _neg(ws, VC, W, NEG)
    _add(ws, ONE, W, NEG, W, W, CS, sc)
    q = ld(ws, Q)
    q0 = q == zero
    q1 = q == splat(q, 1.0)
    q2 = q == splat(q, 2.0)
    for t in range(W):
        sn = ld(ws, SN + t)
        cs = ld(ws, CS + t)
        st(ws, SINO + t, where(q0, sn, where(q1, cs, where(q2, -sn, -cs))))
        st(ws, COSO + t, where(q0, cs, where(q1, -sn, where(q2, -cs, sn))))


# ---------------------------------------------------------------------------------------------
# log (twins: newton.div, _div, _log_series, _log_centred, _log1p_centred, _log_parts, _log_w)


@njit(**INNER)
def _div(ws, X, n, Y, m, w, dst, steps, first_step, nsteps, kmin, kmax, lay, sc):
    """Rows dst := the twin's ``_div``: renormalize(newton.div(x, y, w), w).  The reciprocal of y scaled
    by 2^ky from the double-word start (``engine.newton.newton_start``) by the Newton steps after the first
    entry of ``steps[first_step : first_step + nsteps]``
    (``bounds.newton_steps(w)``), each product and sum renormalized; then x 2^kx times it, scaled back
    by 2^(ky - kx), the special cases of ``newton.finish`` (``finish_block``), the renormalization.
    ``lay``: the first of n + m + 5 w + 6 rows of scratch."""
    L = lanes_of(ws)
    KX = lay  # one row each: kx, ky, ky - kx, the constant 2; two rows: the factors of scale_block
    KY = KX + 1
    KD = KY + 1
    TWO = KD + 1
    F = TWO + 1
    A = F + 2
    XS = A + m
    Z = XS + n
    V = Z + w
    NV = V + w
    WW = NV + w
    Q = WW + w
    for j in range(L):
        kx = -leading_exponent(ws[X * L + j])
        ky = -leading_exponent(ws[Y * L + j])
        ws[KX * L + j] = kx
        ws[KY * L + j] = ky
        ws[KD * L + j] = ky - kx
    scale_block(ws, Y, m, KY, kmin, kmax, A, F)
    newton_start(ws, A, m, False, Z)
    st(ws, TWO, splat(ld(ws, A), 2.0))
    zn = 2
    for i in range(1, nsteps):  # the steps after the start (the first entry, 2)
        r = steps[first_step + i]
        _mul(ws, A, min(r, m), Z, zn, r, V, sc)
        _neg(ws, V, r, NV)
        _add(ws, TWO, 1, NV, r, r, WW, sc)
        _mul(ws, Z, zn, WW, r, r, Z, sc)
        zn = r
    scale_block(ws, X, n, KX, kmin, kmax, XS, F)
    _mul(ws, XS, n, Z, zn, w, Q, sc)
    scale_block(ws, Q, w, KD, kmin, kmax, Q, F)
    x0 = ld(ws, X)
    y0 = ld(ws, Y)
    finish_block(ws, Q, w, nonfinite_rows(ws, X, n), x0, nonfinite_rows(ws, Y, m), y0, x0 / y0)
    binary_block(RENORMALIZE, ws, Q, w, Q, w, w, True, dst, sc)


@njit(**INNER)
def _log_series(ws, NUM, DEN, LOGC, W, COEF, nseries, widths, div_plan, kmin, kmax, OUT, lay, sc):
    """Rows OUT := the twin's ``_log_series(num, den, logc)`` of rows NUM, DEN, LOGC (W terms each):
    u = (2 num) / den (NUM doubled in place), t2 = u u / 4, the tapered Horner rule acc = acc t2 +
    1/(2k+1) at ``widths[k]`` terms (the accumulator padded with zeros to the step's width, t2 and the
    coefficient row truncated to it: their first rows; at one term plain floats), then log c + u acc.
    COEF: the ``nseries`` coefficients, W rows each; ``div_plan``: the Newton division's plan row (its
    steps from entry 6, their number at entry 4).
    ``lay``: the first of 11 W + 6 rows of scratch."""
    Tt = lay
    T2 = Tt + W
    ACC = T2 + W
    TMP = ACC + W
    inner = TMP + W
    _times(ws, NUM, W, 2.0, NUM)
    _div(ws, NUM, W, DEN, W, W, Tt, div_plan, 6, div_plan[4], kmin, kmax, inner, sc)  # u = 2t
    _mul(ws, Tt, W, Tt, W, W, T2, sc)
    _times(ws, T2, W, 0.25, T2)
    width = widths[nseries - 1]
    for t in range(width):
        st(ws, ACC + t, ld(ws, COEF + (nseries - 1) * W + t))
    for k in range(nseries - 2, -1, -1):
        step = widths[k]
        if step == 1:  # plain floats: the product and the sum each rounded once (no contraction)
            st(ws, ACC, ld(ws, ACC) * ld(ws, T2) + ld(ws, COEF + k * W))
            continue
        if step > width:
            _zero(ws, ACC + width, step - width)
        _mul(ws, ACC, step, T2, step, step, TMP, sc)
        _add(ws, TMP, step, COEF + k * W, step, step, ACC, sc)
        width = step
    _mul(ws, Tt, W, ACC, W, W, TMP, sc)
    _add(ws, LOGC, W, TMP, W, W, OUT, sc)


@njit(**INNER)
def _centre_rows(ws, IDX, centres, first_centre, LOGC, W):
    """Rows LOGC := per lane, the twin's ``_centre_logs``: row i - first_centre of the table ``centres``
    (i: the centre's index in row IDX), clamped to the table in floating point (NaN to row 0) before
    the conversion to an integer (the log of the lane's centre, W terms)."""
    L = lanes_of(ws)
    last = centres.shape[0] - 1
    for j in range(L):
        r = ws[IDX * L + j] - first_centre
        r = r if r > 0 else 0.0
        r = r if r < last else last
        row = np.int64(r)
        for t in range(W):
            ws[(LOGC + t) * L + j] = centres[row, t]


@njit(**INNER)
def _log_centred(ws, M, W, log_b, first_centre, centres, COEF, nseries, widths, div_plan, kmin, kmax, OUT,
                 lay, sc):
    """Rows OUT := the twin's ``_log_centred(m)`` of rows M (W terms, m0 in (RN(sqrt 2)/2, RN(sqrt 2)]):
    i = rint(m0 2^b), c = i 2^-b (exact), log c from the table row i - first_centre, then
    :func:`_log_series` of m - c, m + c (m plus the float -c, c).  ``lay``: the first of 14 W + 9
    rows of scratch."""
    L = lanes_of(ws)
    NC = lay  # one row each: -c, c, i
    PC = NC + 1
    IDX = PC + 1
    NUM = IDX + 1
    DEN = NUM + W
    LOGC = DEN + W
    inner = LOGC + W
    up = 2.0**log_b
    down = 2.0**-log_b
    for j in range(L):
        i = np.rint(ws[M * L + j] * up)
        ws[PC * L + j] = i * down
        ws[NC * L + j] = -(i * down)
        ws[IDX * L + j] = i
    _centre_rows(ws, IDX, centres, first_centre, LOGC, W)
    _add(ws, M, W, NC, 1, W, NUM, sc)
    _add(ws, M, W, PC, 1, W, DEN, sc)
    _log_series(ws, NUM, DEN, LOGC, W, COEF, nseries, widths, div_plan, kmin, kmax, OUT, inner, sc)


@njit(**INNER)
def _log1p_centred(ws, X, W, log_b, first_centre, centres, COEF, nseries, widths, div_plan, kmin, kmax, OUT,
                   lay, sc):
    """Rows OUT := the twin's ``_log1p_centred(x)`` of rows X (W terms, |x0| <= 1/4): j = rint(x0 2^b),
    d = j 2^-b, log(1 + d) from the table row j + 2^b - first_centre, then :func:`_log_series` of
    x - d, x + (2 + d) (x plus the floats -d and 2 + d, exact).  ``lay``: the first of 14 W + 9 rows
    of scratch."""
    L = lanes_of(ws)
    ND = lay  # one row each: -d, 2 + d, j + 2^b
    TD = ND + 1
    IDX = TD + 1
    NUM = IDX + 1
    DEN = NUM + W
    LOGC = DEN + W
    inner = LOGC + W
    up = 2.0**log_b
    down = 2.0**-log_b
    for j in range(L):
        i = np.rint(ws[X * L + j] * up)
        d = i * down
        ws[ND * L + j] = -d
        ws[TD * L + j] = 2.0 + d
        ws[IDX * L + j] = i + up
    _centre_rows(ws, IDX, centres, first_centre, LOGC, W)
    _add(ws, X, W, ND, 1, W, NUM, sc)
    _add(ws, X, W, TD, 1, W, DEN, sc)
    _log_series(ws, NUM, DEN, LOGC, W, COEF, nseries, widths, div_plan, kmin, kmax, OUT, inner, sc)


@njit(**INNER)
def _log_body(fn, ws, X, W, LN2, CK, sqrt2, log_b, first_centre, centres, COEF, nseries, widths, div_plan, kmin,
              kmax, OUT, lay, sc):
    """Rows OUT := the twin's ``_log_w`` of rows X (x > 0 finite, W terms): x = m 2^e with m in
    [sqrt(1/2), sqrt(2)), y = log m (:func:`_log_centred`), then y + e ln2 (fn LOG), e + y / ln2
    (LOG2: CK = 1/ln2) or (y + e ln2) / ln10 (LOG10: CK = 1/ln10).  ``lay``: the first of 17 W + 13
    rows of scratch."""
    L = lanes_of(ws)
    E1 = lay  # one row each: e, -e; two rows: the factors of scale_block
    NE = E1 + 1
    F2 = NE + 1
    Mr = F2 + 2
    Y = Mr + W
    P = Y + W
    inner = P + W
    for j in range(L):
        e = leading_exponent(ws[X * L + j])
        ws[E1 * L + j] = e
        ws[NE * L + j] = -e
    scale_block(ws, X, W, NE, kmin, kmax, Mr, F2)
    m0 = ld(ws, Mr)
    up = m0 > splat(m0, sqrt2)
    st(ws, E1, ld(ws, E1) + where(up, splat(m0, 1.0), splat(m0, 0.0)))
    _times(ws, Mr, W, 0.5, P)
    _select(ws, up, P, Mr, W, Mr)
    _log_centred(ws, Mr, W, log_b, first_centre, centres, COEF, nseries, widths, div_plan, kmin, kmax, Y, inner,
                 sc)
    if fn == LOG2:
        _mul(ws, Y, W, CK, W, W, P, sc)
        _add(ws, E1, 1, P, W, W, OUT, sc)
        return
    _mul(ws, E1, 1, LN2, W, W, P, sc)
    _add(ws, Y, W, P, W, W, OUT, sc)
    if fn == LOG10:
        _mul(ws, OUT, W, CK, W, W, OUT, sc)


@njit(**INNER)
def _body_rows(W, M):
    """Rows of scratch of the bodies beyond their operands, for W terms and the reduction's M terms."""
    return 26 * W + 5 * M + 16


@njit(**INNER)
def _log1p_body(ws, X, W, ONE, LN2, sqrt2, log_b, first_centre, centres, COEF, nseries, widths, div_plan, kmin,
                kmax, OUT, AUX, lay, sc):
    """Rows OUT := the twin's ``_log1p_w`` of rows X (finite, x > -1): the centred series on x itself
    where |x0| <= 1/4 (:func:`_log1p_centred`), log(x + 1) elsewhere, each branch run when some lane of
    the block takes it.  AUX: 4 W rows of scratch."""
    XS = AUX
    A = XS + W
    B = A + W
    C2 = B + W
    x0 = ld(ws, X)
    zero = splat(x0, 0.0)
    small = where(x0 < zero, -x0, x0) <= splat(x0, 0.25)
    if any_lane(small):
        for t in range(W):
            st(ws, XS + t, where(small, ld(ws, X + t), zero))
        _log1p_centred(ws, XS, W, log_b, first_centre, centres, COEF, nseries, widths, div_plan, kmin, kmax, A,
                       lay, sc)
    if any_lane(~small):
        for t in range(W):
            st(ws, XS + t, where(small, zero, ld(ws, X + t)))
        _add(ws, XS, W, ONE, W, W, B, sc)
        _log_body(LOG, ws, B, W, LN2, LN2, sqrt2, log_b, first_centre, centres, COEF, nseries, widths, div_plan,
                  kmin, kmax, C2, lay, sc)
    _select(ws, small, A, C2, W, OUT)


# ---------------------------------------------------------------------------------------------
# the frame of a unary function (twin: _unary and _finish)


@njit(**INNER)
def _leading(fn, v):
    """The leading term's IEEE result of ``fn`` (the value of the non-finite rule)."""
    if fn == EXP:
        return np.exp(v)
    if fn == SIN:
        return np.sin(v)
    if fn == COS:
        return np.cos(v)
    if fn == TAN:
        return np.tan(v)
    if fn == EXPM1:
        return np.expm1(v)
    if fn == LOG2:
        return np.log2(v)
    if fn == LOG10:
        return np.log10(v)
    if fn == SINH:
        return np.sinh(v)
    if fn == COSH:
        return np.cosh(v)
    if fn == TANH:
        return np.tanh(v)
    if fn == LOG1P:
        return np.log1p(v)
    return np.log(v)


@njit(**INNER)
def _expm1_body(ws, X, W, LN2, ONE, TAY, ntay, s, kmin, kmax, lo, hi, OUT, AUX, lay, sc):
    """Rows OUT := the twin's ``_expm1_w`` of rows X: ``_expm1_small`` where |x0| <= 1/2, else
    exp(x) - 1 with exp as the twin's ``_exp_w`` (its body where lo <= x0 <= hi, 0 below, inf above),
    each branch run when some lane of the block takes it.  AUX: 4 W rows of scratch."""
    XS = AUX
    SM = XS + W
    BIG = SM + W
    NONE = BIG + W
    x0 = ld(ws, X)
    zero = splat(x0, 0.0)
    small = where(x0 < zero, -x0, x0) <= splat(x0, 0.5)
    if any_lane(small):
        for t in range(W):
            st(ws, XS + t, where(small, ld(ws, X + t), zero))
        _expm1_small(ws, XS, W, TAY, ntay, s, kmin, kmax, SM, lay, sc)
    if any_lane(~small):
        mid = ~small & (x0 >= splat(x0, lo)) & (x0 <= splat(x0, hi))
        _zero(ws, BIG, W)
        if any_lane(mid):
            for t in range(W):
                st(ws, XS + t, where(mid, ld(ws, X + t), zero))
            _exp_body(ws, XS, W, LN2, ONE, TAY, ntay, s, kmin, kmax, NONE, lay, sc)
            _select(ws, mid, NONE, BIG, W, BIG)
        st(ws, BIG, where(~small & (x0 > splat(x0, hi)), splat(x0, np.inf), ld(ws, BIG)))
        _neg(ws, ONE, W, NONE)
        _add(ws, BIG, W, NONE, W, W, BIG, sc)
    _select(ws, small, SM, BIG, W, OUT)


@njit(**INNER)
def _unary_blocks(fn, x, R, W, M, th, c1, c2, c3, table, ints, plan, out, lo, hi):
    """Blocks lo .. hi-1 of function ``fn`` (one of :data:`COMPILED`) on one thread: load x (n terms),
    its W-term width (the twin's ``_width``: truncated or padded with zeros), the body in the lanes
    whose terms are all finite and which take it (the others compute on zeros, 1 for the logarithms,
    and get zeros), the renormalization to R terms, the non-finite rule with the leading terms' IEEE
    result, then the special rows (finite, not in the body: f(±0) = ±0 for sin, tan, expm1;
    log(±0) = -inf, log(x < 0) = NaN).  Constants (see :func:`_setup`): th the thresholds; c1
    one-row constants (ln2; 2/pi 2^S and pi/2 on M terms; ln2 and 1/ln2 or 1/ln10); c2, c3 Taylor
    coefficients (the logarithms: c2 the atanh coefficients, c3 the centres' logs); table the
    Payne–Hanek table; ints (s, n, kmin, kmax, p, S, rows of c2 in the workspace, and for the
    logarithms s = b, n = the series' terms, the first centre's index last); plan the Newton division
    of tan, sinh, cosh, tanh and the logarithms (row 0) and the logarithms' Horner widths (row 1)."""
    count, n = x.shape
    L = lanes_of(x)
    s, ntay, kmin, kmax, p, S, tarows, nstart = ints[0], ints[1], ints[2], ints[3], ints[4], ints[5], ints[6], ints[7]
    # the logarithms' names for them (see _setup): the centres' spacing 2^-b, the first centre's index,
    # the Newton division's plan row and the Horner steps' widths (c3: the centres' logs, TA: the
    # atanh coefficients, ntay of them)
    log_b, first_centre, div_plan, widths = s, nstart, plan[0], plan[plan.shape[0] - 1]
    trig = fn == SIN or fn == COS or fn == TAN
    logs = fn == LOG or fn == LOG2 or fn == LOG10
    logs_1p = logs or fn == LOG1P  # the logarithms' constants
    hyperbolic = fn == SINH or fn == COSH or fn == TANH
    XIN = 0
    X = XIN + n
    ONE = X + W
    K1 = ONE + W  # c1's rows: W (exp, expm1), 2 W (the logarithms) or 2 M (sin, cos, tan)
    TA = K1 + 2 * M
    TB = TA + tarows
    OUTW = TB + ntay * W
    FIN = OUTW + W
    AUX = FIN + max(R, W)  # 12 W + 8 rows
    lay = AUX + 12 * W + 8
    sc = lay + _body_rows(W, M)
    buf, ws = workspace(sc + scratch_rows(M, M, max(R, M)), x)
    _zero(ws, ONE, W)
    st(ws, ONE, splat(ld(ws, ONE), 1.0))
    if trig:
        _put(ws, K1, c1, 0, M)
        _put(ws, K1 + M, c1, 1, M)
        for k in range(ntay):
            _put(ws, TA + k * W, c2, k, W)
            _put(ws, TB + k * W, c3, k, W)
    else:
        _put(ws, K1, c1, 0, W)
    if fn == EXP or fn == EXPM1 or hyperbolic:
        for k in range(ntay):
            _put(ws, TA + k * W, c2, k, W)
    if logs_1p:  # c1: ln2 and 1/ln2 or 1/ln10; c2: the atanh coefficients; c3: the centres' logs
        _put(ws, K1 + W, c1, 1, W)
        for k in range(ntay):
            _put(ws, TA + k * W, c2, k, W)
    for b in range(lo, hi):
        first = b * L
        load_block(x, first, count, n, False, ws, XIN)
        x0 = ld(ws, XIN)
        zero = splat(x0, 0.0)
        xbad = nonfinite_rows(ws, XIN, n)
        if fn == LOG1P:  # the twin's special rows: x = -1 exactly (-inf), x < -1 (NaN), ±0
            tail = ld(ws, XIN + 1) if n > 1 else zero
            below = (x0 < splat(x0, -1.0)) | ((x0 == splat(x0, -1.0)) & (tail < zero))
            exact = x0 == x0
            for t in range(1, n):
                exact = exact & (ld(ws, XIN + t) == zero)
            at = (x0 == splat(x0, -1.0)) & ~below & exact
            special = ~xbad & (at | below | (x0 == zero))
            value = where(at, splat(x0, -np.inf), where(below, splat(x0, np.nan), x0))
        if fn == EXP:
            body = ~xbad & (x0 >= splat(x0, th[0])) & (x0 <= splat(x0, th[1]))
        elif fn == SIN or fn == TAN or fn == EXPM1 or fn == SINH or fn == TANH:
            body = ~xbad & (x0 != zero)
        elif logs:
            body = ~xbad & (x0 > zero)
        elif fn == LOG1P:
            body = ~xbad & ~special
        else:
            body = ~xbad
        for t in range(W):
            st(ws, X + t, where(body, ld(ws, XIN + t), zero) if t < n else zero)
        if logs:  # the lanes outside the body compute on 1, not 0 (log's reduction of 0)
            st(ws, X, where(body, ld(ws, X), splat(x0, 1.0)))
        _zero(ws, OUTW, W)
        if any_lane(body):
            if fn == EXP:
                _exp_body(ws, X, W, K1, ONE, TA, ntay, s, kmin, kmax, FIN, lay, sc)
            elif hyperbolic:
                _hyperbolic_body(fn, ws, X, W, K1, ONE, TA, ntay, s, kmin, kmax, th[0], th[1], th[4], plan[0], FIN,
                                 AUX, lay, sc)
            elif fn == LOG1P:
                _log1p_body(ws, X, W, ONE, K1, th[3], log_b, first_centre, c3, TA, ntay, widths, div_plan, kmin,
                            kmax, FIN, AUX, lay, sc)
            elif fn == EXPM1:
                _expm1_body(ws, X, W, K1, ONE, TA, ntay, s, kmin, kmax, th[0], th[1], FIN, AUX, lay, sc)
            elif logs:
                _log_body(fn, ws, X, W, K1, K1 + W, th[3], log_b, first_centre, c3, TA, ntay, widths, div_plan,
                          kmin, kmax, FIN, lay, sc)
            else:
                _sincos_body(ws, X, W, M, ONE, TA, TB, ntay, s, K1, K1 + M, table, p, S, kmin, kmax, th[2],
                             AUX, AUX + W, lay, sc)
                if fn == TAN:
                    _div(ws, AUX, W, AUX + W, W, W, FIN, plan[0], 6, plan[0, 4], kmin, kmax, lay, sc)
                else:
                    _select(ws, body, AUX if fn == SIN else AUX + W, FIN, W, FIN)
            _select(ws, body, FIN, OUTW, W, OUTW)
        if fn == EXP:
            over = ~xbad & (x0 > splat(x0, th[1]))
            st(ws, OUTW, where(over, splat(x0, np.inf), ld(ws, OUTW)))
        for j in range(L):
            ws[X * L + j] = _leading(fn, ws[XIN * L + j])
        leading = ld(ws, X)
        binary_block(RENORMALIZE, ws, OUTW, W, OUTW, W, R, True, FIN, sc)
        epilogue_block(ws, FIN, R, xbad, x0, mask_of(x0, False), x0, leading)
        if fn != EXP and fn != COS and fn != COSH:
            if logs:
                special = ~xbad & (x0 <= zero)
                value = where(x0 == zero, splat(x0, -np.inf), splat(x0, np.nan))
            elif fn == LOG1P:
                pass  # special and value: above
            else:
                special = ~xbad & (x0 == zero)
                value = leading
            st(ws, FIN, where(special, value, ld(ws, FIN)))
            for t in range(1, R):
                st(ws, FIN + t, where(special, zero, ld(ws, FIN + t)))
        store_block(ws, FIN, R, out, first, count)
    buf[0] = 0  # the workspace stays alive until here (ws points into it)


@njit(**PARALLEL)
def _run(fn, x, R, W, M, th, c1, c2, c3, table, ints, plan, out, chunks):
    blocks = (x.shape[0] + lanes_of(x) - 1) // lanes_of(x)
    if chunks <= 1:
        # 0 * blocks: an int64, as in the parallel loop; a literal 0 would be typed Literal[int](0) and
        # cost a second compilation of _unary_blocks (seconds)
        _unary_blocks(fn, x, R, W, M, th, c1, c2, c3, table, ints, plan, out, 0 * blocks, blocks)
        return
    for c in prange(chunks):
        _unary_blocks(fn, x, R, W, M, th, c1, c2, c3, table, ints, plan, out, c * blocks // chunks,
                      (c + 1) * blocks // chunks)


# ---------------------------------------------------------------------------------------------
# the interface: the twins' signatures


@functools.cache
def _setup(fn: int, R: int, dtype: str):
    """The arguments of :func:`_run` for function ``fn`` at R terms of ``dtype``, from the twins' plans,
    thresholds and constants: (W, M, th, c1, c2, c3, table, ints, plan)."""
    dt = np.dtype(dtype)
    fmt = format_of(dt)
    W = T.working_terms(R)
    th = T.thresholds(dt)
    thr = np.array([th["exp_lo"], th["exp_hi"], th["quarter_pi"], th["sqrt2"], th["hyp_limit"]], dtype=dt)
    kmin, kmax = 2 * (fmt.emin - fmt.p + 1), 2 * fmt.emax
    empty = np.zeros((1, 1), dtype=dt)
    plan = np.zeros((1, 1), dtype=np.int64)
    S = nstart = 0
    M = W
    if fn in (EXP, EXPM1, SINH, COSH, TANH):
        s, n = T._exp_plan(W, fmt)
        c1 = C.constant("ln2", W, dt.name)
        c2, c3, table = C.taylor("expm1", n, W, dt.name), empty, empty
        tarows = n * W
        if fn in (SINH, COSH, TANH):
            steps = list(bounds.newton_steps(W, fmt))
            plan = np.array([[W, 0, 0, 0, len(steps), 0, *steps]], dtype=np.int64)
    elif fn in (LOG, LOG2, LOG10, LOG1P):
        # ints: s = b, n = the series' terms, nstart = the first centre's index; plan: row 0 the Newton
        # division's plan row, row 1 the Horner steps' widths (the twin's log_plan)
        lp = T.log_plan(W, fmt)
        s, n, nstart = lp.b, lp.n, lp.first
        c1 = np.zeros((2, W), dtype=dt)
        c1[0] = C.constant("ln2", W, dt.name)[0]
        if fn in (LOG2, LOG10):
            c1[1] = C.constant("inv_ln2" if fn == LOG2 else "inv_ln10", W, dt.name)[0]
        c2 = C.atanh_coefficients(n, W, dt.name)
        c3 = C.log_centres(lp.b, lp.first, lp.count, W, dt.name)
        table = empty
        tarows = n * W
        steps = list(bounds.newton_steps(W, fmt))
        plan = np.zeros((2, max(6 + len(steps), n)), dtype=np.int64)
        plan[0, : 6 + len(steps)] = [W, 0, 0, 0, len(steps), 0, *steps]
        plan[1, :n] = lp.widths
    else:
        s, n = T._sin_plan(W, fmt)
        M = min(2 * W + 2, MAX_TERMS)
        S = C.shift_of(fmt)
        c1 = np.concatenate([C.constant("two_over_pi", M, dt.name, S), C.constant("half_pi", M, dt.name)])
        c2, c3 = C.taylor("sin", n, W, dt.name), C.taylor("versin", n, W, dt.name)
        table = C.two_over_pi_table(M, dt.name)
        tarows = n * W
        if fn == TAN:
            steps = list(bounds.newton_steps(W, fmt))
            plan = np.array([[W, 0, 0, 0, len(steps), 0, *steps]], dtype=np.int64)
    ints = np.array([s, n, kmin, kmax, fmt.p, S, tarows, nstart], dtype=np.int64)
    arrays = [np.array(a, dtype=dt, order="C") for a in (c1, c2, c3, table)]  # writable: one specialization
    return (W, M, thr, *arrays, ints, plan)


def _unary(fn: int, x, R):
    R = check_terms(R)
    x = readonly(terms_array(x))  # one numba specialization per dtype (see kernels.readonly)
    out = np.empty((x.shape[0], R), x.dtype)
    if not x.shape[0]:
        return out
    _run(fn, x, R, *_setup(fn, R, x.dtype.name), out, _chunks(x.shape[0], LANES[x.dtype.itemsize * 8]))
    return out


def exp(x, R):
    """exp(x) in R terms, the bits of :func:`expansions.cpu.elementary.exp` (one compiled loop)."""
    return _unary(EXP, x, R)


def sin(x, R):
    """sin(x) in R terms, the bits of :func:`expansions.cpu.elementary.sin` (one compiled loop)."""
    return _unary(SIN, x, R)


def cos(x, R):
    """cos(x) in R terms, the bits of :func:`expansions.cpu.elementary.cos` (one compiled loop)."""
    return _unary(COS, x, R)


def log(x, R):
    """log(x) in R terms, the bits of :func:`expansions.cpu.elementary.log` (one compiled loop)."""
    return _unary(LOG, x, R)


def log1p(x, R):
    """log1p(x) in R terms, the bits of :func:`expansions.cpu.elementary.log1p` (one compiled loop)."""
    return _unary(LOG1P, x, R)


def log2(x, R):
    """log2(x) in R terms, the bits of :func:`expansions.cpu.elementary.log2` (one compiled loop)."""
    return _unary(LOG2, x, R)


def log10(x, R):
    """log10(x) in R terms, the bits of :func:`expansions.cpu.elementary.log10` (one compiled loop)."""
    return _unary(LOG10, x, R)


def tan(x, R):
    """tan(x) in R terms, the bits of :func:`expansions.cpu.elementary.tan` (one compiled loop)."""
    return _unary(TAN, x, R)


def expm1(x, R):
    """expm1(x) in R terms, the bits of :func:`expansions.cpu.elementary.expm1` (one compiled loop)."""
    return _unary(EXPM1, x, R)


def sinh(x, R):
    """sinh(x) in R terms, the bits of :func:`expansions.cpu.elementary.sinh` (one compiled loop)."""
    return _unary(SINH, x, R)


def cosh(x, R):
    """cosh(x) in R terms, the bits of :func:`expansions.cpu.elementary.cosh` (one compiled loop)."""
    return _unary(COSH, x, R)


def tanh(x, R):
    """tanh(x) in R terms, the bits of :func:`expansions.cpu.elementary.tanh` (one compiled loop)."""
    return _unary(TANH, x, R)


def compiled_elementary(name: str):
    """The compiled function ``name`` (with the twin's signature ``f(x, R)``), or None when ``name`` is
    not in :data:`COMPILED` (it then runs as the twin on the engine's operations)."""
    return globals()[name] if name in COMPILED else None
