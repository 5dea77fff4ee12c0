"""The twins of :mod:`expansions.cpu.kernels` on one expansion (numba, nopython): the safe and fast
additions, the truncated multiplication and the renormalization as row functions, the scalar code
that the programs' loops (:mod:`expansions.programs.loop`), the reductions
(:mod:`expansions.engine.reduction`) and the Newton rows (:mod:`expansions.engine.newton`) call per
expansion; the operations on arrays are :mod:`expansions.engine.fused` (the same steps on blocks of
expansions, vectorized); both are tested bit-identical to the twins.

Each row function takes the arguments of its twin for one expansion (a row, its number of terms,
output and scratch rows) and returns the twin's bits.  The twin runs every lane of a group as one
column of a NumPy array; here the lanes of one expansion are the entries of a small local array,
updated in sequence.  Three facts make the bits the twin's:

* only lanes 0..R-1 reach the result: the twin's data flow between lanes is ``shfl_up`` (lane l reads
  lane l-1), ``shfl_down`` masked at lane R-1, and votes over the R term lanes, so padding lanes are
  never computed here;
* a lane update ``lane[l] <- f(lane[l], lane[l-1])`` is done from the highest lane down, so every lane
  reads the value its neighbour had before the step, as all lanes of a warp do;
* every floating-point operation is the twin's, on the same operands in the same order: compiled
  without ``fastmath`` (one IEEE rounding to nearest even per ``+ - * /``, no reassociation, no
  contraction of a multiply-add into an FMA, subnormals kept), ``error_model="numpy"`` (a division by
  zero is IEEE).  The two-product is the twin's (:func:`expansions.cpu.eft.two_prod`: Dekker's
  product with Veltkamp's splitting, scaled above 2**995, for float64; the exact float64 product
  rounded to float32 for float32), not a hardware FMA.

Where the twin decides per row (a vote ``group_any`` and a global ``break`` once no row is active),
the loop here stops for its own row: a row whose vote fails is left unchanged by the twin, so it
would fail again.  Lanes above the ones a step of the safe addition can reach hold (+0, +0), which a
2Sum maps to (+0, +0); those lanes are skipped until reached.

The float32 terms are computed in float32: every constant is made of the terms' type (:func:`_const`)
so that no operation is promoted to float64, except where the twin itself works in float64 (the
float32 two-product).  ``cache=True`` keeps the machine code on disk; R and the input sizes are
runtime arguments, so each function is compiled once per dtype.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

#: Options of every compiled function: no fastmath (IEEE operations, no contraction), IEEE division.
OPTIONS = {"cache": True, "error_model": "numpy"}
#: Options of the parallel kernels (a ``prange`` over blocks of expansions).
PARALLEL = {**OPTIONS, "parallel": True}
#: Expansions per block of the parallel loops over row functions (the programs' loops): scratch
#: space is allocated once per block.
BLOCK = 64


# ---------------------------------------------------------------------------------------------
# typed constants and error-free transforms (twins of expansions/cpu/eft.py)


def _const(like, value):
    """``value`` as a float of the type of ``like`` (compiled code only)."""
    raise NotImplementedError


@overload(_const)
def _const_impl(like, value):
    if isinstance(like, types.Float) and like.bitwidth == 32:
        return lambda like, value: np.float32(value)
    return lambda like, value: np.float64(value)


@njit(**OPTIONS)
def two_sum(a, b):
    """Knuth's 2Sum: ``s = RN(a+b)``, ``e = a + b - s`` exactly (twin of ``eft.two_sum``)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


_SPLITTER64 = 134217729.0  # 2**27 + 1: Veltkamp's splitting constant for p = 53
_BIG = 2.0**995  # above this, an operand is split scaled down by 2**-28, the other scaled up by 2**28
_DOWN = 2.0**-28
_UP = 2.0**28


@njit(**OPTIONS)
def _split64(a):
    """Veltkamp's splitting of a float64 (twin of ``eft._split64``)."""
    c = a * _SPLITTER64
    hi = c - (c - a)
    lo = a - hi
    return hi, lo


@njit(**OPTIONS)
def _two_prod64(a, b):
    """Twin of ``eft.two_prod`` on float64: Dekker's product with Veltkamp's splitting, the operand
    above 2**995 scaled down by 2**-28 and the other up by 2**28 (the product unchanged)."""
    p = a * b
    big_a = abs(a) > _BIG
    big_b = abs(b) > _BIG
    if big_a:
        a2 = a * _DOWN
    elif big_b:
        a2 = a * _UP
    else:
        a2 = a
    if big_b:
        b2 = b * _DOWN
    elif big_a:
        b2 = b * _UP
    else:
        b2 = b
    ah, al = _split64(a2)
    bh, bl = _split64(b2)
    e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl
    return p, e


@njit(**OPTIONS)
def _two_prod32(a, b):
    """Twin of ``eft.two_prod`` on float32: the float64 product is exact, rounded once to float32 for
    ``p``, and its difference with ``p`` (exact in float64) rounded once for ``e``."""
    exact = np.float64(a) * np.float64(b)
    p = np.float32(exact)
    e = np.float32(exact - np.float64(p))
    return p, e


def two_prod(a, b):
    """``p = RN(a*b)`` and the twin's ``e`` (compiled code only; see :func:`_two_prod64`)."""
    raise NotImplementedError


@overload(two_prod)
def _two_prod_impl(a, b):
    if isinstance(a, types.Float) and a.bitwidth == 32:
        return lambda a, b: _two_prod32(a, b)
    return lambda a, b: _two_prod64(a, b)


# ---------------------------------------------------------------------------------------------
# the non-finite rule


@njit(**OPTIONS)
def all_finite(x, n):
    """Whether the first n terms of x are finite."""
    for t in range(n):
        if not np.isfinite(x[t]):
            return False
    return True


@njit(**OPTIONS)
def epilogue(out, R, xbad, x0, ybad, y0, leading):
    """Twin of ``kernels.nonfinite_epilogue`` on one row (one or two operands; pass ``ybad=False``
    for one): an operand with a non-finite term gives ``(w, 0, ..., 0)``, w = ``leading`` or NaN
    where that operand's leading term is finite; else a non-finite term of ``out`` gives
    ``(±inf, 0, ..., 0)`` with the sign of ``leading``.  A NaN is the canonical quiet NaN."""
    if xbad or ybad:
        w = np.float64(leading)
        if xbad and np.isfinite(x0):
            w = np.nan
        if ybad and np.isfinite(y0):
            w = np.nan
    else:
        if all_finite(out, R):
            return
        w = -np.inf if leading < 0 else np.inf
    if np.isnan(w):
        w = np.nan
    out[0] = w  # exact: w is leading itself, an infinity or NaN
    for t in range(1, R):
        out[t] = 0


# ---------------------------------------------------------------------------------------------
# one expansion (a row): the twins' algorithms


@njit(**OPTIONS)
def _safe_step(s, e, top, t):
    """One step of the safe addition: t enters lane 0 while lanes 1..top 2Sum the error of the lane
    below (lanes above ``top`` hold (+0, +0), which the step maps to (+0, +0))."""
    for l in range(top, 0, -1):
        s[l], e[l] = two_sum(s[l], e[l - 1])
    s[0], e[0] = two_sum(s[0], t)


@njit(**OPTIONS)
def add_safe_row(x, n, y, m, negy, R, out, s, e):
    """Twin of ``kernels.add_safe`` on one row: x (n terms) + y (m terms, negated if ``negy``) in R
    terms into ``out``; s, e: scratch of R lanes.  Algorithm 1 of Collange, Joldes, Muller, Popescu
    (2016): the leading terms' 2Sum, then each term of ``insertion_order(n, m)`` (x_1, y_1, x_2, y_2,
    ..., then the rest of the longer operand) enters lane 0 while every lane 2Sums the error of the
    lane below, then R-2 such steps with zero entering, then the errors are added."""
    xbad = not all_finite(x, n)
    ybad = not all_finite(y, m)
    zero = _const(x[0], 0.0)
    y0 = -y[0] if negy else y[0]
    s[0], e[0] = two_sum(x[0], y0)
    leading = s[0]
    for l in range(1, R):
        s[l] = zero
        e[l] = zero
    steps = 0
    for i in range(1, max(n, m)):
        if i < n:
            steps += 1
            _safe_step(s, e, min(steps, R - 1), x[i])
        if i < m:
            steps += 1
            _safe_step(s, e, min(steps, R - 1), -y[i] if negy else y[i])
    for _ in range(R - 2):
        steps += 1
        _safe_step(s, e, min(steps, R - 1), zero)
    for l in range(R - 1, 0, -1):
        out[l] = s[l] + e[l - 1]
    out[0] = s[0] + zero
    epilogue(out, R, xbad, x[0], ybad, y0, leading)


@njit(**OPTIONS)
def add_fast_row(x, n, y, m, negy, R, out, s, e):
    """Twin of ``kernels.add_fast`` on one row (Fig. 5 of Collange et al. 2016): the lane-wise 2Sum of
    the first R terms, then at most R-2 rounds, while an error is nonzero, of 2Sum of each lane with
    the error of the lane below, then the errors are added."""
    xbad = not all_finite(x, n)
    ybad = not all_finite(y, m)
    zero = _const(x[0], 0.0)
    for l in range(R):
        a = x[l] if l < n else zero
        if l < m:
            b = -y[l] if negy else y[l]
        else:
            b = zero
        s[l], e[l] = two_sum(a, b)
    leading = s[0]
    for _ in range(R - 2):
        act = False
        for l in range(R - 1):
            if e[l] != 0:
                act = True
                break
        if not act:
            break
        for l in range(R - 1, 0, -1):
            s[l], e[l] = two_sum(s[l], e[l - 1])
        s[0], e[0] = two_sum(s[0], zero)
    for l in range(R - 1, 0, -1):
        out[l] = s[l] + e[l - 1]
    out[0] = s[0] + zero
    y0 = -y[0] if negy else y[0]
    epilogue(out, R, xbad, x[0], ybad, y0, leading)


@njit(**OPTIONS)
def propagate(s, e, R):
    """Twin of ``kernels._propagate``: while an error lane is nonzero (at most R rounds), 2Sum each
    lane with its error, the new errors shifted up one lane with zero entering lane 0.  A lane whose
    error is zero and whose term is finite and nonzero is not computed: 2Sum(s, ±0) = (s, +0) exactly
    (s + ±0 = s; s - s = +0; s - +0 = s; s - s = +0; ±0 - +0 = ±0; +0 + ±0 = +0)."""
    zero = _const(s[0], 0.0)
    for _ in range(R):
        act = False
        for l in range(R):
            if e[l] != 0:
                act = True
                break
        if not act:
            return
        for l in range(R - 1, -1, -1):
            if e[l] == 0 and s[l] != 0 and np.isfinite(s[l]):
                t = zero  # what 2Sum(s, ±0) gives for a finite nonzero s: (s, +0)
            else:
                s[l], t = two_sum(s[l], e[l])
            if l + 1 < R:
                e[l + 1] = t
        e[0] = zero


def _top(like):
    """2**(p-1) of the type of ``like`` (compiled code only)."""
    raise NotImplementedError


@overload(_top)
def _top_impl(like):
    top = 2.0**23 if isinstance(like, types.Float) and like.bitwidth == 32 else 2.0**52
    return lambda like: _const(like, top)


@njit(**OPTIONS)
def breaks_positional(x, n):
    """Whether the n terms of x are all finite but break ``RN(2**(p-1) |x_t|) <= |x_{t-1}|`` (the row
    :func:`positional_copy` renormalizes; twin: ``kernels.positional``)."""
    if not all_finite(x, n):
        return False
    top = _top(x[0])
    for t in range(1, n):
        if not top * abs(x[t]) <= abs(x[t - 1]):
            return True
    return False


@njit(**OPTIONS)
def positional_copy(x, n):
    """A copy of the n terms of x, renormalized to n terms where :func:`breaks_positional` (twin:
    ``kernels.positional``).  Allocates: the row functions call it only for such rows."""
    out = np.empty(n, x.dtype)
    if breaks_positional(x, n):
        cur, srt, e = np.empty(n, x.dtype), np.empty(n, x.dtype), np.empty(n, x.dtype)
        renormalize_row(x, n, n, out, cur, srt, e)
    else:
        for t in range(n):
            out[t] = x[t]
    return out


@njit(**OPTIONS)
def mul_row(x, n, y, m, R, out, s, e, ep):
    """Twin of ``kernels.mul_truncated`` on one row: :func:`mul_row_positional` on the operands made
    positional (copies of those that break the condition, :func:`positional_copy`)."""
    if breaks_positional(x, n) or breaks_positional(y, m):
        mul_row_positional(positional_copy(x, n), n, positional_copy(y, m), m, R, out, s, e, ep)
    else:
        mul_row_positional(x, n, y, m, R, out, s, e, ep)


@njit(**OPTIONS)
def mul_row_positional(x, n, y, m, R, out, s, e, ep):
    """Algorithm 2 of Collange et al. 2016 on one row of positional operands: for each
    term y_i, the lanes 2Prod x_l * y_i and 2Sum the products into the accumulator, whose lane 0 is
    output term i; the accumulator shifts down a lane and both error vectors are propagated; the
    last term is s_0 + x_0 y_{R-1}.  ``out`` must not overlap x or y; s, e, ep: scratch of R lanes."""
    xbad = not all_finite(x, n)
    ybad = not all_finite(y, m)
    zero = _const(x[0], 0.0)
    leading = x[0] * y[0]
    for l in range(R):
        s[l] = zero
    for i in range(R - 1):
        yi = y[i] if i < m else zero
        for l in range(R):
            xl = x[l] if l < n else zero
            p, e[l] = two_prod(xl, yi)
            s[l], ep[l] = two_sum(s[l], p)
        out[i] = s[0]
        for l in range(R - 1):
            s[l] = s[l + 1]
        s[R - 1] = zero
        propagate(s, e, R)
        propagate(s, ep, R)
    yi = y[R - 1] if R - 1 < m else zero
    out[R - 1] = s[0] + x[0] * yi
    epilogue(out, R, xbad, x[0], ybad, y[0], leading)


@njit(**OPTIONS)
def _before(a, b):
    """The twin's sort order (``argsort(-abs(v), kind="stable")``): a strictly before b when |a| > |b|,
    or when b is NaN and a is not (NumPy sorts NaN keys last)."""
    return abs(a) > abs(b) or (np.isnan(b) and not np.isnan(a))


def _ulp_floor(like):
    """(p, smallest subnormal as a float64) of the type of ``like`` (compiled code only)."""
    raise NotImplementedError


@overload(_ulp_floor)
def _ulp_floor_impl(like):
    if isinstance(like, types.Float) and like.bitwidth == 32:
        return lambda like: (24, 2.0**-149)
    return lambda like: (53, 2.0**-1074)


@njit(**OPTIONS)
def _ulp(a):
    """Twin of ``kernels.ulp`` on one finite term: ``2**(e - p + 1)`` for ``2**e <= |a| < 2**(e+1)``, at
    least the smallest subnormal (the smallest subnormal for zero), as a float64: a power of two
    that the terms' type holds, so comparisons give the twin's answers."""
    p, tiny = _ulp_floor(a)
    if a == 0:
        return tiny
    ex = math.frexp(np.float64(a))[1]
    return max(math.ldexp(1.0, ex - p), tiny)


@njit(**OPTIONS)
def _nonoverlapping(r, R):
    """Twin of ``kernels._adjacent_nonoverlapping`` on one row."""
    if not all_finite(r, R):
        return False
    for t in range(1, R):
        if r[t] != 0 and not abs(r[t]) <= _ulp(r[t - 1]):
            return False
    return True


@njit(**OPTIONS)
def renormalize_row(x, n, R, out, cur, srt, e):
    """Twin of ``kernels.renormalize`` on one row (Joldes, Marty, Muller, Popescu, IEEE TC 2016): at
    most R rounds of stable sort by decreasing magnitude, VecSum from the bottom, VecSumErrBranch
    from the top into R terms, until the terms are ulp-nonoverlapping.  ``out`` may be x;
    cur, srt, e: scratch of max(n, R) terms."""
    xbad = not all_finite(x, n)
    x0 = x[0]
    zero = _const(x0, 0.0)
    for t in range(n):
        cur[t] = x[t]
    k = n
    leading = x0
    for rnd in range(R):
        # stable insertion sort of cur[0:k] into srt
        for i in range(k):
            v = cur[i]
            j = i
            while j > 0 and _before(v, srt[j - 1]):
                srt[j] = srt[j - 1]
                j -= 1
            srt[j] = v
        # VecSum, from the bottom
        sv = srt[k - 1]
        for i in range(k - 2, -1, -1):
            sv, e[i + 1] = two_sum(srt[i], sv)
        e[0] = sv
        if rnd == 0:
            leading = sv
        # VecSumErrBranch, from the top, into out[0:R]
        for t in range(R):
            out[t] = zero
        j = 0
        eps = e[0]
        done = False
        for i in range(1, k):
            rj, eps_new = two_sum(eps, e[i])
            out[j] = rj
            if eps_new != 0:
                if j >= R - 1:
                    done = True
                    break
                j += 1
                eps = eps_new
            else:
                eps = rj
        if not done:
            out[j] = eps
        if _nonoverlapping(out, R):
            break
        for t in range(R):
            cur[t] = out[t]
        k = R
    epilogue(out, R, xbad, x0, False, x0, leading)


# ---------------------------------------------------------------------------------------------
# the twins' interface


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only view (no copy; ``a`` itself when it is read-only already).  The engine passes
    every operand read-only to its compiled loops: numba compiles one specialization per array type,
    and a writable and a read-only array are two types, so that a read-only operand (a broadcast view,
    an array over a read-only buffer) would cost a second compilation of the same loop (seconds; the
    fused engine's loop about ten)."""
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def terms_array(x, name="x"):
    """x as a C-contiguous 2-D float64/float32 array with at least one term per row."""
    x = np.ascontiguousarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D (count, terms) array, got shape {x.shape}")
    if x.dtype not in (np.float64, np.float32):
        raise TypeError(f"{name}: terms must be float64 or float32, got {x.dtype}")
    if x.shape[1] < 1:
        raise ValueError(f"{name}: every expansion needs at least one term")
    return x


def operands(x, y):
    """x and y checked (:func:`terms_array`) and matched: same dtype, same number of expansions."""
    x, y = terms_array(x, "x"), terms_array(y, "y")
    if x.dtype != y.dtype:
        raise TypeError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must hold as many expansions, got {x.shape[0]} and {y.shape[0]}")
    return x, y


def negate(x):
    """Every term negated (exact); the bits of ``cpu.kernels.negate``."""
    return -x
