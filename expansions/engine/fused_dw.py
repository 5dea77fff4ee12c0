"""The library's R = 2 operations on the CPU, one compiled loop each.

``x + y``, ``x - y``, ``x * y``, ``x / y`` and ``sqrt(x)`` at R = 2 run a double-word algorithm of
:mod:`expansions.dw` (``R2_DEFAULTS``, or any ``R2_METHODS`` name), then the library's non-finite rule,
then the two-term renormalization.  The twins run that as a composition of whole-array passes
(:func:`expansions.dispatch.run` on ``backends.cpu``: the algorithm, ``_double_word_finish`` in
``expansions/backends.py``, ``renormalize(out, 2)``); the GPU as one ``dw_operation`` launch
(``expansions/cuda/dw.cuh``).  Here it is one numba loop over the rows, the transpose of the GPU's
layout: consecutive rows on the lanes of the SIMD registers, every intermediate in registers, nothing
allocated but the output.  Same bits as the twins' composition, NaN included
(``tests/test_engine_fused_dw.py``).

How a loop gets the twins' bits and still vectorizes: a block of rows runs two passes.

1. The fast pass, branch-free: the algorithm with ``fast=True`` (its two-products and FMAs by one
   hardware FMA each, :func:`expansions.engine.dw._two_prod`), then the renormalization, which on a
   finite pair ``(h, lo)`` with ``RN(h + lo) = h`` (what every algorithm's last Fast2Sum or 2Sum
   returns, its error being exact) is ``(h + 0, lo + 0)``: there
   :func:`expansions.cpu.kernels.renormalize_pair`'s first 2Sum returns ``(RN(h + lo), lo)`` with a
   zero ``lo`` as +0, its second leaves that pair as it is but for a -0 sum, which becomes +0, and
   its epilogue does nothing; ``x + 0`` is ``x`` but for -0, which becomes +0.  It counts the rows
   where an operand is not a double word (``RN(x0 + x1) != x0``), a division's or square root's
   operand lies near the underflow threshold, an operand word, the leading-term IEEE result or an
   output word is not finite, where the result is zero (its sign is the rule's), or where
   ``RN(h + lo) != h`` (:func:`_flag`).  Where that count is not zero and some operand of the block
   is not a double word, the block runs the fast pass again with its operands made double words by
   selects (:func:`_double_word_select`), which counts the rows flagged for the other reasons (a
   block of double words whose rows are flagged for those reasons alone, a NaN or a zero result,
   goes straight to the exact pass).
2. Only when that count is not zero: those rows again, by the twins' operations (each operand made
   a double word, the FMA and two-product emulations, :func:`_exact_row`), with the non-finite rule
   and the full ``renormalize_pair``.

A row the fast pass leaves unflagged has finite operands (made double words), a finite leading
result and a finite output: there the rule and the renormalization's epilogue change nothing, and
the fast algorithm computed the twin's bits, because the hardware FMA is correctly rounded and so
equals the twins' emulations wherever those are exact; where they may not be (float64 products
outside ``[2**-900, 2**1020]``, an infinite FMA addend) the fast functions return a NaN, which flags
the row.  The twins compute the operations in the same order, so no other difference is possible.

Blocks of :data:`BLOCK` rows run in parallel (``prange``, numba's thread count; one thread after
``numba.set_num_threads(1)``); below :data:`SERIAL_BELOW` rows the blocks run one after the other on
the calling thread (no thread start-up).  Each (algorithm, renormalization) loop is compiled on first
use, per dtype, and cached on disk.
"""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np
from numba import literally, njit, prange, types
from numba.core.errors import TypingError
from numba.extending import overload

from ..dw import ALGORITHMS
from ..formats import FLOAT32, FLOAT64, dw_scale_limit
from . import dw as _dw
from .blocks import lanes_of
from .dw import _KERNEL, _OP, _SCALAR, _c, _double_word, _two_sum
from .kernels import leading_exponent

#: the double-word x double-word algorithms of the library's binary operations, and their operation
BINARY = {name: a.operation for name, a in ALGORITHMS.items() if a.operands == ("dw", "dw")}
#: the unary ones (the square root)
UNARY = {name: a.operation for name, a in ALGORITHMS.items() if a.operands == ("dw",)}
_KIND = {"add": 0, "mul": 1, "div": 2, "sqrt": 3}
_NAMES = {number: name for name, number in _OP.items()}

#: Rows per block: the fast pass, and the exact pass on its flagged rows, run on one block at a
#: time (48 KiB of operands and result at float64: the second pass finds them in the cache).
BLOCK = 1024
#: Below this many rows the loop runs serially on the calling thread: waking numba's threads costs
#: a few microseconds on an idle core (and a scheduler slice, milliseconds, on a busy one), a serial
#: call on 8192 rows (float64) about 40; ``python -m bench.r2_fused --rounds 0 --threshold`` measures
#: both (bench/results/r2_fused_*).
SERIAL_BELOW = 8192
#: At most this many chunks in the parallel loop, each a run of at least 16 consecutive blocks on one
#: thread (the blocks of a chunk carry whether the one before needed its operands made double words,
#: :func:`_block`); rows are independent, so the bits do not depend on the chunks.
CHUNKS = 64


# ---------------------------------------------------------------------------------------------
# one row by the twins' operations: the algorithm, the non-finite rule, the renormalization


def _algorithm(op, a, b, c, d, fast):
    """The scalar function of algorithm number ``op`` (of ``dw._OP``, a compile-time constant) on the
    words ``(a, b)`` and ``(c, d)`` (``(a, b)`` alone for the square root), with ``fast`` where it
    takes it (compiled only).  Unlike ``dw._apply``, only that algorithm is compiled."""
    raise NotImplementedError


@overload(_algorithm, prefer_literal=True)
def _algorithm_impl(op, a, b, c, d, fast):
    if not isinstance(op, types.IntegerLiteral):
        raise TypingError("_algorithm: the algorithm number must be a compile-time constant")
    name = _NAMES[op.literal_value]
    fn = getattr(_dw, "_" + name)
    with_fast = "fast" in inspect.signature(fn.py_func).parameters
    if name in UNARY:
        return lambda op, a, b, c, d, fast: fn(a, b, fast)
    if with_fast:
        return lambda op, a, b, c, d, fast: fn(a, b, c, d, fast)
    return lambda op, a, b, c, d, fast: fn(a, b, c, d)


@njit(**_SCALAR)
def _leading(kind, x0, y0):
    """The leading-term IEEE result of operation ``kind``: 0 add, 1 mul, 2 div, 3 sqrt (of x0)."""
    if kind == 0:
        return x0 + y0
    if kind == 1:
        return x0 * y0
    if kind == 2:
        return x0 / y0
    return np.sqrt(x0)


@njit(**_SCALAR)
def _double_word_rule(h, lo, x0, x1, y0, y1, leading, binary):
    """The library's non-finite rule on one result ``(h, lo)`` of operands ``(x0, x1)`` and ``(y0,
    y1)`` (``(x0, x1)`` alone when ``binary`` is False), twin: ``_double_word_finish`` in
    ``expansions/backends.py``: an operand with a non-finite word gives ``(w, 0)``, ``w`` the leading
    result or NaN where that operand's leading word is finite; else a non-finite result word gives
    ``(±inf, 0)`` with the sign of ``leading < 0``; a NaN leading result gives (NaN, 0); a zero result
    whose leading result is a zero takes that zero.  NaN is the canonical quiet NaN."""
    zero = _c(leading, 0.0)
    bad_x = not (np.isfinite(x0) and np.isfinite(x1))
    bad_y = binary and not (np.isfinite(y0) and np.isfinite(y1))
    anybad = bad_x or bad_y
    if anybad or not (np.isfinite(h) and np.isfinite(lo)):
        w = leading
        if bad_x and np.isfinite(x0):
            w = _c(leading, np.nan)
        if bad_y and np.isfinite(y0):
            w = _c(leading, np.nan)
        if not anybad:
            w = _c(leading, -np.inf) if leading < 0 else _c(leading, np.inf)
        if np.isnan(w):
            w = _c(leading, np.nan)
        h, lo = w, zero
    if np.isnan(leading):
        h, lo = _c(leading, np.nan), zero
    if h == 0 and lo == 0 and leading == 0:  # a zero result takes the leading result's zero (its sign)
        h = leading
    return h, lo


@njit(**_SCALAR)
def _renormalize_pair(hi, lo):
    """Twin: :func:`expansions.cpu.kernels.renormalize_pair` (``renormalize(x, 2)``, bit for bit): two
    2Sums, +0 for a zero tail, and the non-finite epilogue with the first 2Sum's sum as the leading
    result; a zero pair is kept as it is."""
    if hi == 0 and lo == 0:  # a zero pair is kept (its signed zero)
        return hi, lo
    e_hi, e_lo = _two_sum(hi, lo)
    t_hi, t_lo = _two_sum(e_hi, e_lo)
    zero = _c(hi, 0.0)
    out_lo = t_lo if t_lo != 0 else zero
    bad = not (np.isfinite(hi) and np.isfinite(lo))
    if not bad and np.isfinite(t_hi) and np.isfinite(out_lo):
        return t_hi, out_lo
    w = e_hi
    if bad and np.isfinite(hi):
        w = _c(hi, np.nan)
    if not bad:
        w = _c(hi, -np.inf) if e_hi < 0 else _c(hi, np.inf)
    if np.isnan(w):
        w = _c(hi, np.nan)
    return w, zero


@njit(**_SCALAR)
def _flag(kind, renormalize, check, x0, x1, y0, y1, h, lo):
    """Whether the row needs another pass: with ``check``, an operand is not a double word
    (``RN(x0 + x1) != x0``: the pass with ``fix`` makes it one); a division or square root has the
    leading word of its operand made a double word, ``RN(x0 + x1)``, near the underflow threshold
    (the exact pass scales it: :func:`_underflow_exponents`); some operand word, the leading-term
    IEEE result or an output word ``(h, lo)`` is not finite (then their sum is inf or NaN, and
    ``s - s`` is NaN); or, with ``renormalize``, ``RN(h + lo) != h`` (the fast pass's renormalization
    does not apply).  A finite sum that overflows flags a row too, which the exact pass then computes
    again: the same bits.  A zero result is flagged too (its sign is the rule's); for the square root
    that follows from the underflow test (its h is zero only where RN(x0 + x1) is, which that test
    flags), which spares the loop a comparison per row."""
    sx = x0 + x1
    s = sx + _leading(kind, x0, y0) + h + lo
    bad = (sx != x0) if check else False
    if kind != 3:
        sy = y0 + y1
        s += sy
        if check:
            bad |= sy != y0
    bad |= (s - s) != 0
    if kind != 3:  # a zero result: its sign is the rule's (the exact pass); a square root's is zero only
        bad |= h == 0  # where RN(x0 + x1) is, which the underflow test below flags
    if renormalize:
        bad |= (h + lo) != h
    if kind >= 2:  # a zero sx flags too: the square root's zero results rely on it
        bad |= abs(sx) < _scaling(sx)[0]
    return bad


@njit(**_SCALAR)
def _double_word_select(hi, lo):
    """:func:`_double_word` without a branch (the fast pass of a block with such operands)."""
    s, e = _two_sum(hi, lo)
    keep = (hi + lo) == hi
    return (hi if keep else s), (lo if keep else e)


def _scaling(like):
    """(dw_scale_limit, smallest and largest exponent of ``newton.scale``) of the type of ``like``
    (compiled code only)."""
    raise NotImplementedError


@overload(_scaling)
def _scaling_impl(like):
    fmt = FLOAT32 if like.bitwidth == 32 else FLOAT64
    limit, kmin, kmax = dw_scale_limit(fmt), 2 * (fmt.emin - fmt.p + 1), 2 * fmt.emax
    return lambda like: (_c(like, limit), kmin, kmax)


@njit(**_SCALAR)
def _scale(v, k):
    """Twin: ``expansions.cpu.newton.scale`` on one term: v times 2**(k >> 1), then 2**(k - (k >> 1)),
    k clamped to the range beyond which the result is 0 or overflows anyway."""
    _, kmin, kmax = _scaling(v)
    k = min(max(k, kmin), kmax)
    k1 = k >> 1
    return (v * _c(v, math.ldexp(1.0, k1))) * _c(v, math.ldexp(1.0, k - k1))


@njit(**_SCALAR)
def _underflow_exponents(kind, xh, yh):
    """Twin: :func:`expansions.dw.cpu.underflow_exponents` on one row (``kind`` 2 division, 3 square
    root): ``(kx, ky, back)``."""
    limit = _scaling(xh)[0]
    if not (abs(xh) < limit and xh != 0):
        return 0, 0, 0
    if kind == 3:
        kx = -2 * (leading_exponent(xh) >> 1)
        return kx, 0, -(kx // 2)
    kx = -leading_exponent(xh)
    ky = -leading_exponent(yh)
    return kx, ky, ky - kx


@njit(**_SCALAR)
def _exact_row(op, kind, renormalize, x0, x1, y0, y1):
    """One row as the twins compute it: the operands made double words (:func:`_double_word`), for a
    division or square root scaled (:func:`_underflow_exponents`, the result scaled back), algorithm
    ``op`` (of ``dw._OP``) on them by the FMA and two-product emulations, the non-finite rule
    of operation ``kind`` on the operands as given, then (``renormalize``) the renormalization."""
    a, b = _double_word(x0, x1)
    c, d = _double_word(y0, y1)
    if kind >= 2:  # division, square root: scaled near the underflow threshold
        kx, ky, back = _underflow_exponents(kind, a, c)
        a, b, c, d = _scale(a, kx), _scale(b, kx), _scale(c, ky), _scale(d, ky)
        h, lo = _algorithm(op, a, b, c, d, False)
        h, lo = _scale(h, back), _scale(lo, back)
    else:
        h, lo = _algorithm(op, a, b, c, d, False)
    leading = _leading(kind, x0, y0)
    h, lo = _double_word_rule(h, lo, x0, x1, y0, y1, leading, kind != 3)
    if renormalize:
        h, lo = _renormalize_pair(h, lo)
    return h, lo


@njit(**_SCALAR)
def _fixed_row(op, kind, renormalize, x0, x1, y0, y1):
    """The fast pass's row with its operands made double words by selects (``fix``):
    ``(h, lo, flagged)``, ``flagged`` where :func:`_flag` asks for :func:`_exact_row` (then ``(h,
    lo)`` is not the result).  ``op``, ``kind`` and ``renormalize`` as in :func:`_fast_pass`."""
    a, b = _double_word_select(x0, x1)
    c, d = _double_word_select(y0, y1)
    h, lo = _algorithm(op, a, b, c, d, True)
    if renormalize:  # renormalize_pair of a pair with RN(h + lo) = h (others are flagged)
        zero = _c(h, 0.0)
        h, lo = h + zero, lo + zero
    return h, lo, _flag(kind, renormalize, False, x0, x1, y0, y1, h, lo)


@njit(**_SCALAR)
def rows_block(op, kind, renormalize, ws, X, Y, negate, out):
    """The R = 2 operation of algorithm number ``op`` (of ``dw._OP``) and ``kind`` (0 add, 1 mul, 2
    div, 3 sqrt) on a block of the block engine's workspace (:mod:`expansions.engine.blocks`: row r
    holds term r of the L expansions of a block, ``ws`` points to row 0): rows out, out+1 := rows X,
    X+1 op rows Y, Y+1 (negated with ``negate``; for the square root pass Y = X), the non-finite rule,
    with ``renormalize`` the renormalization.  The programs' loops (:mod:`expansions.programs.loop`)
    run the library's R = 2 operations through it.  The bits of :func:`operation`: each lane by
    :func:`_fixed_row`, then, only when some lane is flagged, those lanes by :func:`_exact_row` (as
    :func:`_block` with ``fix``).  ``out`` must not overlap rows X or Y."""
    literally(op)
    literally(kind)
    literally(renormalize)
    L = lanes_of(ws)
    flagged = 0
    for j in range(L):
        x0, x1, y0, y1 = ws[X * L + j], ws[(X + 1) * L + j], ws[Y * L + j], ws[(Y + 1) * L + j]
        if negate:
            y0, y1 = -y0, -y1
        h, lo, bad = _fixed_row(op, kind, renormalize, x0, x1, y0, y1)
        ws[out * L + j] = h
        ws[(out + 1) * L + j] = lo
        flagged += bad
    if flagged:  # the lanes flagged, exactly
        for j in range(L):
            x0, x1, y0, y1 = ws[X * L + j], ws[(X + 1) * L + j], ws[Y * L + j], ws[(Y + 1) * L + j]
            if negate:
                y0, y1 = -y0, -y1
            if _flag(kind, renormalize, False, x0, x1, y0, y1, ws[out * L + j], ws[(out + 1) * L + j]):
                ws[out * L + j], ws[(out + 1) * L + j] = _exact_row(op, kind, renormalize, x0, x1, y0, y1)


# ---------------------------------------------------------------------------------------------
# the loops


@njit(**_SCALAR)
def _fast_pass(op, kind, renormalize, fix, x, y, out, negate):
    """The fast pass (module docstring) on one block; with ``fix`` each operand made a double word by
    selects (:func:`_double_word_select`).  Returns the number of rows it flagged.  All of ``op``,
    ``kind``, ``renormalize`` and ``fix`` are compile-time constants: no branch is left."""
    literally(op)
    literally(kind)
    literally(renormalize)
    literally(fix)
    m = x.shape[0] // 2
    flagged = 0
    for i in range(m):
        x0, x1, y0, y1 = x[2 * i], x[2 * i + 1], y[2 * i], y[2 * i + 1]
        if negate:
            y0, y1 = -y0, -y1
        a, b, c, d = x0, x1, y0, y1
        if fix:
            a, b = _double_word_select(x0, x1)
            if kind != 3:
                c, d = _double_word_select(y0, y1)
        h, lo = _algorithm(op, a, b, c, d, True)
        if renormalize:  # renormalize_pair of a pair with RN(h + lo) = h (others are flagged)
            zero = _c(h, 0.0)
            h, lo = h + zero, lo + zero
        out[2 * i] = h
        out[2 * i + 1] = lo
        flagged += _flag(kind, renormalize, not fix, x0, x1, y0, y1, h, lo)
    return flagged


@njit(**_SCALAR)
def _not_double_words(kind, x, y, m):
    """The number of rows of the block with an operand that is not a double word (``RN(x0 + x1) !=
    x0``; NaN counts), y read only for a binary ``kind`` (a vectorized reduction)."""
    bad = 0
    for i in range(m):
        x0, x1 = x[2 * i], x[2 * i + 1]
        b = (x0 + x1) != x0
        if kind != 3:
            y0, y1 = y[2 * i], y[2 * i + 1]
            b |= (y0 + y1) != y0
        bad += b
    return bad


@njit(**_SCALAR)
def _block(op, kind, renormalize, x, y, out, negate, dirty):
    """The two passes (module docstring) on one block, flat (2m,) arrays (high, low, high, ...): the
    result into ``out``; returns the number of rows the fast pass flagged.  ``y`` is negated as it is
    read when ``negate`` (a subtraction), unused for the square root (pass ``x``).  ``op``, ``kind``
    and ``renormalize`` are compile-time constants (``literally``): the fast pass has no branch left,
    and LLVM vectorizes it (``tests/test_engine_fused_dw.py`` checks the machine code).  The fast pass
    reads the operands as they are and also flags the rows where one is not a double word; a block
    with flagged rows and an operand that is not a double word (:func:`_not_double_words`) runs the
    fast pass again with the operands made double words by selects (``fix``), and only the rows that
    one still flags run the exact pass.  ``dirty``: the block
    before needed ``fix``; then this one is checked first (:func:`_not_double_words`, a vectorized
    pass) and runs one fast pass, with ``fix`` or not (double words alone never pay the check; the
    speed on draws of ``expansions.random``, a fifth of which are not double words:
    bench/results/r2_operands_random_*).  Returns (the number of rows flagged,
    whether this block needed ``fix``)."""
    literally(op)
    literally(kind)
    literally(renormalize)
    m = x.shape[0] // 2
    if dirty:  # the block before had operands that are not double words: check this one first
        dirty = _not_double_words(kind, x, y, m) > 0
        if dirty:  # (``fix`` is a compile-time constant of the pass)
            flagged = _fast_pass(op, kind, renormalize, True, x, y, out, negate)
        else:
            flagged = _fast_pass(op, kind, renormalize, False, x, y, out, negate)
    else:
        flagged = _fast_pass(op, kind, renormalize, False, x, y, out, negate)
        if flagged and _not_double_words(kind, x, y, m) > 0:  # again with the operands made double words
            dirty = True
            flagged = _fast_pass(op, kind, renormalize, True, x, y, out, negate)
    if flagged:  # the rows still flagged, exactly
        for i in range(m):
            x0, x1, y0, y1 = x[2 * i], x[2 * i + 1], y[2 * i], y[2 * i + 1]
            if negate:
                y0, y1 = -y0, -y1
            if _flag(kind, renormalize, False, x0, x1, y0, y1, out[2 * i], out[2 * i + 1]):
                out[2 * i], out[2 * i + 1] = _exact_row(op, kind, renormalize, x0, x1, y0, y1)
    return flagged, dirty


@functools.cache
def _loops(op: int, kind: int, renormalize: bool):
    """``(serial, parallel)``: the loops of algorithm number ``op`` (of ``dw._OP``) of operation
    ``kind``, each called as ``f(x, y, out, negate)`` on (count, 2) C-contiguous arrays, running
    :func:`_block` on each block of :data:`BLOCK` rows, the blocks one after the other (``serial``) or
    in a ``prange`` (``parallel``); both return the number of rows the fast pass flagged.  ``op``,
    ``kind`` and ``renormalize`` are constants of the loops (closure variables, by which numba's
    cache keys them).  Two functions, not one compiled twice: the cache keys a function by its code
    and closure, not by its options."""

    @njit(**_SCALAR)
    def serial(x, y, out, negate):
        n = x.shape[0]
        x, y, out = x.reshape(2 * n), y.reshape(2 * n), out.reshape(2 * n)
        flagged, dirty = 0, False
        for k in range((n + BLOCK - 1) // BLOCK):
            lo, hi = 2 * k * BLOCK, 2 * min(n, (k + 1) * BLOCK)
            f, dirty = _block(op, kind, renormalize, x[lo:hi], y[lo:hi], out[lo:hi], negate, dirty)
            flagged += f
        return flagged

    @njit(**_KERNEL)
    def parallel(x, y, out, negate):
        n = x.shape[0]
        x, y, out = x.reshape(2 * n), y.reshape(2 * n), out.reshape(2 * n)
        blocks = (n + BLOCK - 1) // BLOCK
        chunks = max(1, min(CHUNKS, blocks // 16))  # each chunk's blocks in order, carrying ``dirty``
        flagged = 0
        for c in prange(chunks):
            dirty = False
            for k in range(c * blocks // chunks, (c + 1) * blocks // chunks):
                lo, hi = 2 * k * BLOCK, 2 * min(n, (k + 1) * BLOCK)
                f, dirty = _block(op, kind, renormalize, x[lo:hi], y[lo:hi], out[lo:hi], negate, dirty)
                flagged += f
        return flagged

    return serial, parallel


@njit(**_SCALAR)
def _scan(op, kind, x, out):
    """``out[i] = out[i-1] op x[i]``, ``out[0] = x[0]``, on flat (2n,) arrays: each step
    :func:`_fixed_row` renormalized, or, where it flags the row, :func:`_exact_row`: the bits of the
    library's ``acc op x[i]`` at R = 2, one row at a time (a cumulative sum or product, whose steps
    depend on each other)."""
    literally(op)
    literally(kind)
    n = x.shape[0] // 2
    if n == 0:
        return
    h, lo = x[0], x[1]
    out[0], out[1] = h, lo
    for i in range(1, n):
        x0, x1 = x[2 * i], x[2 * i + 1]
        hh, ll, flagged = _fixed_row(op, kind, True, h, lo, x0, x1)
        if flagged:
            hh, ll = _exact_row(op, kind, True, h, lo, x0, x1)
        h, lo = hh, ll
        out[2 * i], out[2 * i + 1] = h, lo


@functools.cache
def _scan_loop(op: int, kind: int):
    @njit(**_SCALAR)
    def loop(x, out):
        _scan(op, kind, x, out)

    return loop


def scan(name: str, x) -> np.ndarray:
    """The running results ``r[0] = x[0]``, ``r[i] = r[i-1] op x[i]`` of the double-word algorithm
    ``name`` (a key of :data:`BINARY`), renormalized, on (n, 2) terms: the bits of the library's
    ``acc = acc op x[i]`` step by step (``np.cumsum``, ``np.cumprod`` at R = 2), in one compiled loop."""
    if name not in BINARY:
        raise ValueError(f"unknown binary double-word algorithm {name!r}; expected one of {sorted(BINARY)}")
    x = np.ascontiguousarray(x)
    if x.ndim != 2 or x.shape[1] != 2 or x.dtype.char not in "df":
        raise ValueError(f"{name}: expected (n, 2) float64 or float32 terms, got {x.shape} {x.dtype}")
    out = np.empty_like(x)
    _scan_loop(_OP[name], _KIND[BINARY[name]])((x if x.flags.writeable else x.copy()).reshape(-1), out.reshape(-1))
    return out


_ENTRIES: dict = {}  # (name, binary, renormalize) -> (serial, parallel), for operation()


def _entry(name: str, binary: bool, renormalize: bool):
    """The loops of :func:`operation` for algorithm ``name`` (ValueError for an unknown one)."""
    table = BINARY if binary else UNARY
    if name not in table:
        raise ValueError(f"unknown {'binary' if binary else 'unary'} double-word algorithm {name!r}; "
                         f"expected one of {sorted(table)}")
    loops = _ENTRIES[name, binary, renormalize] = _loops(_OP[name], _KIND[table[name]], renormalize)
    return loops


def operation(name: str, x, y=None, negate_y: bool = False, renormalize: bool = False) -> np.ndarray:
    """The library's R = 2 operation by double-word algorithm ``name`` on (count, 2) NumPy terms, one
    loop: ``x op y`` (``x - y`` with ``negate_y``; ``name`` a key of :data:`BINARY`), or ``sqrt(x)``
    (``y`` None, ``name`` 'dw_sqrt'), with the library's non-finite rule, renormalized with
    ``renormalize``.  Returns a new (count, 2) array: the bits of the twins' composition
    (:func:`expansions.dispatch.run` on ``backends.cpu``), and of the GPU's ``dw_operation``."""
    binary, renormalize = y is not None, bool(renormalize)
    serial, parallel = _ENTRIES.get((name, binary, renormalize)) or _entry(name, binary, renormalize)
    x = np.ascontiguousarray(x)
    y = np.ascontiguousarray(y) if binary else x
    shape, dt = x.shape, x.dtype
    if len(shape) != 2 or shape[1] != 2 or y.shape != shape or y.dtype != dt:
        raise ValueError(f"{name}: expected (count, 2) operands of one dtype, got {x.shape} {x.dtype} and "
                         f"{y.shape} {y.dtype}")
    if dt.char not in "df":
        raise TypeError(f"{name}: expected float64 or float32 terms, got {x.dtype}")
    out = np.empty_like(x)
    # writable operands, one numba specialization per dtype: a read-only one (a broadcast view, a
    # read-only buffer) is copied (rare; a read-only view of every operand instead, kernels.readonly,
    # would cost a view per operand on every call, a large part of a 0-d operation's time)
    x = x if x.flags.writeable else x.copy()
    y = x if not binary else (y if y.flags.writeable else y.copy())
    (serial if shape[0] < SERIAL_BELOW else parallel)(x, y, out, bool(negate_y))
    return out


def direct(name: str, negate_y: bool = False):
    """:func:`operation` for the operators' common case, renormalized: ``f(x, y)`` on (count, 2)
    C-contiguous writable arrays of one float dtype that the caller has checked (no checks, no
    copies: a 0-d operation's time is mostly what :func:`operation` checks)."""
    serial, parallel = _ENTRIES.get((name, True, True)) or _entry(name, True, True)
    negate_y = bool(negate_y)

    def run(x, y):
        out = np.empty_like(x)
        (serial if x.shape[0] < SERIAL_BELOW else parallel)(x, y, out, negate_y)
        return out

    return run


def dw_binary(name: str, x, y) -> np.ndarray:
    """The double-word algorithm ``name`` (a key of :data:`BINARY`) on (count, 2) arrays ``x`` and
    ``y``, then the non-finite rule (no renormalization): equal bit for bit to the twins backend's
    ``dw_binary(name, kind, x, y)`` (``kind`` the algorithm's operation)."""
    return operation(name, x, y)


def dw_unary(name: str, x) -> np.ndarray:
    """The double-word square root (``name`` = 'dw_sqrt') of the (count, 2) array ``x``, then the
    non-finite rule: equal bit for bit to the twins backend's ``dw_unary('dw_sqrt', x)``."""
    return operation(name, x)


dw_operation = operation  # its name in expansions.engine
dw_scan = scan
dw_direct = direct
