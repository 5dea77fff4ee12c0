"""Elementary functions compiled per block of expansions on the fused engine (issue 28, item 3).

The NumPy twins (:mod:`expansions.cpu.elementary`) run each function as a sequence of whole-array
operations; here each function is one compiled loop over blocks of ``L = simd.LANES`` expansions (the
layout of :mod:`expansions.engine.fused`: term t of the L expansions of a block is one row of the
per-thread workspace, one vector), and every step of the twin's algorithm is a block operation of
the fused engine on rows of that workspace: the safe addition and the truncated product each
renormalized in the same pass (:func:`expansions.engine.fused.binary_block`, the bits of the twins'
``renormalize(add_safe(x, y, w), w)`` and ``renormalize(mul_truncated(x, y, w), w)``), the exact
scalings by powers of two (:func:`expansions.engine.fused.scale_block`, the twin ``newton.scale``),
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

import numpy as np
from numba import njit, prange

from ..cpu import constants as C
from ..cpu import elementary as T
from ..formats import check_terms, format_of
from .fused import (
    ADD_SAFE,
    INNER,
    MUL,
    RENORMALIZE,
    _chunks,
    binary_block,
    epilogue_block,
    lanes_of,
    ld,
    load_block,
    nonfinite_rows,
    scale_block,
    scratch_rows,
    st,
    store_block,
    workspace,
)
from .kernels import PARALLEL, terms_array
from .newton import leading_exponent
from .simd import any_lane, mask_of, splat, where

#: The functions of this module (one compiled loop each); the others run the twins on the engine.
COMPILED = ("exp",)

EXP = 0

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
def _exp_body(ws, X, W, LN2, ONE, TAY, ntay, s, kmin, kmax, OUT, lay, sc):
    """Rows OUT := the twin's ``body`` of ``_exp_w`` on rows X (W terms): k = rint(x0 / ln2_0),
    r = x - k ln2, m = 1 + expm1(r), m 2^k.  ``lay``: the first of 11 W + 5 rows of scratch."""
    L = lanes_of(ws)
    KC = lay  # one row: k (a one-term expansion, also the scaling of scale_block)
    P = KC + 1
    NEG = P + W
    Rr = NEG + W
    E = Rr + W
    M = E + W
    F = M + W
    inner = F + 2
    st(ws, KC, ld(ws, X) / ld(ws, LN2))
    for j in range(L):
        ws[KC * L + j] = np.rint(ws[KC * L + j])
    _mul(ws, KC, 1, LN2, W, W, P, sc)
    _neg(ws, P, W, NEG)
    _add(ws, X, W, NEG, W, W, Rr, sc)
    _expm1_small(ws, Rr, W, TAY, ntay, s, kmin, kmax, E, inner, sc)
    _add(ws, ONE, W, E, W, W, M, sc)
    scale_block(ws, M, W, KC, kmin, kmax, OUT, F)


_EXP_ROWS = 17  # rows per W of _exp_body and _expm1_small together (11 + 6), plus 9 single rows


# ---------------------------------------------------------------------------------------------
# the frame of a unary function (twin: _unary and _finish)


@njit(**INNER)
def _unary_blocks(fn, x, R, W, lohi, ln2, tay, ntay, s, kmin, kmax, out, lo, hi):
    """Blocks lo .. hi-1 of function ``fn`` (EXP) on one thread: load x (n terms), its W-term width
    (the twin's ``_width``: truncated or padded with zeros), the body in the lanes whose terms are all
    finite and which take it (the others compute on zeros and get zeros), the special rows, the
    renormalization to R terms and the non-finite rule with the leading terms' IEEE result."""
    count, n = x.shape
    L = lanes_of(x)
    XIN = 0
    X = XIN + n
    LN2 = X + W
    ONE = LN2 + W
    TAY = ONE + W
    OUTW = TAY + ntay * W
    FIN = OUTW + W
    lay = FIN + max(R, W)
    sc = lay + _EXP_ROWS * W + 9
    buf, ws = workspace(sc + scratch_rows(W, W, max(R, W)), x)
    _put(ws, LN2, ln2, 0, W)
    _zero(ws, ONE, W)
    st(ws, ONE, splat(ld(ws, ONE), 1.0))
    for k in range(ntay):
        _put(ws, TAY + k * W, tay, k, W)
    for b in range(lo, hi):
        first = b * L
        load_block(x, first, count, n, False, ws, XIN)
        x0 = ld(ws, XIN)
        zero = splat(x0, 0.0)
        xbad = nonfinite_rows(ws, XIN, n)
        if fn == EXP:
            body = ~xbad & (x0 >= splat(x0, lohi[0])) & (x0 <= splat(x0, lohi[1]))
        else:
            body = ~xbad
        for t in range(W):
            st(ws, X + t, where(body, ld(ws, XIN + t), zero) if t < n else zero)
        _zero(ws, OUTW, W)
        if any_lane(body):
            if fn == EXP:
                _exp_body(ws, X, W, LN2, ONE, TAY, ntay, s, kmin, kmax, FIN, lay, sc)
            _select(ws, body, FIN, OUTW, W, OUTW)
        if fn == EXP:
            over = ~xbad & (x0 > splat(x0, lohi[1]))
            st(ws, OUTW, where(over, splat(x0, np.inf), ld(ws, OUTW)))
        for j in range(L):
            ws[X * L + j] = np.exp(ws[XIN * L + j])  # the leading terms' IEEE result
        leading = ld(ws, X)
        binary_block(RENORMALIZE, ws, OUTW, W, OUTW, W, R, True, FIN, sc)
        epilogue_block(ws, FIN, R, xbad, x0, mask_of(x0, False), x0, leading)
        store_block(ws, FIN, R, out, first, count)
    buf[0] = 0  # the workspace stays alive until here (ws points into it)


@njit(**PARALLEL)
def _run(fn, x, R, W, lohi, ln2, tay, ntay, s, kmin, kmax, out, chunks):
    blocks = (x.shape[0] + lanes_of(x) - 1) // lanes_of(x)
    if chunks <= 1:
        _unary_blocks(fn, x, R, W, lohi, ln2, tay, ntay, s, kmin, kmax, out, 0, blocks)
        return
    for c in prange(chunks):
        _unary_blocks(fn, x, R, W, lohi, ln2, tay, ntay, s, kmin, kmax, out, c * blocks // chunks,
                      (c + 1) * blocks // chunks)


# ---------------------------------------------------------------------------------------------
# the interface: the twins' signatures


@functools.cache
def _exp_setup(R: int, dtype: str):
    """(W, thresholds (lo, hi), ln2, Taylor coefficients, n, s, kmin, kmax) of exp at R terms."""
    dt = np.dtype(dtype)
    fmt = format_of(dt)
    W = T.working_terms(R)
    s, n = T._exp_plan(W, fmt)
    th = T.thresholds(dt)
    lohi = np.array([th["exp_lo"], th["exp_hi"]], dtype=dt)
    ln2 = np.ascontiguousarray(C.constant("ln2", W, dt.name))
    tay = np.ascontiguousarray(C.taylor("expm1", n, W, dt.name))
    kmin, kmax = 2 * (fmt.emin - fmt.p + 1), 2 * fmt.emax
    return W, lohi, ln2, tay, n, s, kmin, kmax


def exp(x, R):
    """exp(x) in R terms, the bits of :func:`expansions.cpu.elementary.exp` (one compiled loop)."""
    R = check_terms(R)
    x = terms_array(x)
    out = np.empty((x.shape[0], R), x.dtype)
    if not x.shape[0]:
        return out
    W, lohi, ln2, tay, n, s, kmin, kmax = _exp_setup(R, x.dtype.name)
    _run(EXP, x, R, W, lohi, ln2, tay, n, s, kmin, kmax, out, _chunks(x.shape[0]))
    return out


def compiled_elementary(name: str):
    """The compiled function ``name`` (with the twin's signature ``f(x, R)``), or None when ``name`` is
    not in :data:`COMPILED` (it then runs as the twin on the engine's operations)."""
    return globals()[name] if name in COMPILED else None
