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
* the two-product takes the hardware FMA where its error is the twin's (the argument and the limits:
  :mod:`expansions.engine.arithmetic`, :mod:`expansions.engine.limits`).

The modules: :mod:`expansions.engine.blocks` (the workspace's rows, the bit predicates, the
non-finite rule), :mod:`expansions.engine.renorm` (the renormalization), :mod:`expansions.engine.arithmetic`
(the additions, the multiplication, :func:`~expansions.engine.arithmetic.binary_block`),
:mod:`expansions.engine.newton` (reciprocal, division, square root), and this one: one operation on a
block (:func:`operation_block`), the loop over blocks and the public functions.

Memory: one workspace per thread (per chunk of blocks), allocated once, 64-byte aligned; nothing is
allocated per block.  Arrays of more than :data:`SERIAL_BELOW` expansions are split into chunks of
blocks over all cores (``prange``).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import get_num_threads, njit, prange

from .. import bounds
from ..formats import check_terms, format_of
from .arithmetic import binary_block, scratch_rows
from .blocks import (
    ADD_FAST,
    ADD_SAFE,
    DIV,
    INNER,
    MUL,
    RECIPROCAL,
    RENORMALIZE,
    SQRT,
    copy_rows,
    lanes_of,
    ld,
    load_block,
    negate_rows,
    nonfinite_rows,
    st,
    store_block,
    workspace,
)
from .kernels import PARALLEL, leading_exponent, operands, terms_array
from .newton import finish_block, newton_start, scale_block
from .renorm import positional_block
from .simd import mask_of, splat, vsqrt, where

#: Arrays of fewer expansions run on one thread (the cost of waking the others is not repaid).
SERIAL_BELOW = 4096
#: Chunks of blocks per thread in the parallel loop (load balance).
CHUNKS_PER_THREAD = 4


# ---------------------------------------------------------------------------------------------
# one operation on a block's rows, and the engine's loop


@njit(**INNER)
def operation_rows(n, m, R):
    """Rows of scratch that :func:`operation_block` needs for operands of n and m terms into R."""
    k = max(n, m, R)
    return 6 * R + 5 + 7 * k + scratch_rows(n, m, R)


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
    code is compiled once): the Newton operations are a small interpreter over their sub-operations
    and rows, not functions composed of block operations as :mod:`expansions.engine.elementary`'s
    ``_div`` is, because written that way (commit 4b1c4d0: ``binary_block`` called from five places)
    the engine's loop took 52.6 s of CPU to compile against 29.9 s for this form (28.4 s before the
    split into modules), float64, an empty numba cache: ``python -m bench.engine_compile d50f14c
    4b1c4d0 8fcd6d3 --rounds 1 --name newton_forms``
    (``bench/results/engine_compile_newton_forms_cpu-x86_64.md``)."""
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
